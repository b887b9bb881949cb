/*
 * anchor.c - a proof checked away from the study, against a tree head the
 * checker trusts: a saved checkpoint (signed by the study's key, when one
 * is given) or a root written down elsewhere. A proof alone only agrees
 * with the root it carries, so one of the two is required; a consistency
 * proof may also be pinned to the old checkpoint it must start from.
 * `log verify` whole, pinned to a checkpoint file the same way.
 */
#include "ledger.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECKPOINT_CAP (64u * 1024u)
#define PROOF_CAP (64u * 1024u)

int ledger_checkpoint_read(const char *path, char **text, ledger_tree_head *th, cs_err *e)
{
	size_t len;
	int rc = cs_read_file(path, CHECKPOINT_CAP, text, &len, e);

	if (rc)
		return rc;
	rc = ledger_checkpoint_parse(*text, len, path, th, e);
	if (rc) {
		free(*text);
		*text = NULL;
	}
	return rc;
}

/* All of stdin, at most PROOF_CAP bytes, NUL-terminated, into *buf. */
static int read_stdin(char **buf, size_t *len, cs_err *e)
{
	size_t cap = 4096;
	char *b = malloc(cap);

	*len = 0;
	while (b) {
		size_t r = fread(b + *len, 1, cap - *len - 1, stdin);

		*len += r;
		if (r == 0)
			break;
		if (*len + 1 >= cap) {
			char *nb = cap >= PROOF_CAP ? NULL : realloc(b, cap * 2);

			if (!nb) {
				free(b);
				return cs_err_set(e, CS_EXIT_BADINPUT, "stdin: proof over %u bytes",
						  PROOF_CAP);
			}
			b = nb;
			cap *= 2;
		}
	}
	if (!b)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	b[*len] = '\0';
	*buf = b;
	return 0;
}

int ledger_proof_check(const char *file, const char *cpf, const char *vkey,
		       const unsigned char *anchor, const char *roots, const char *oldf,
		       ledger_proof *p, cs_err *e)
{
	char *buf = NULL, *cp = NULL, *ocp = NULL;
	ledger_tree_head th, oth;
	size_t len = 0;
	int rc;

	memset(p, 0, sizeof(*p));
	if (!strcmp(file, "-")) {
		if ((rc = read_stdin(&buf, &len, e)))
			return rc;
		file = "stdin";
	} else if ((rc = cs_read_file(file, PROOF_CAP, &buf, &len, e))) {
		return rc;
	}
	if ((rc = ledger_proof_parse(buf, len, file, p, e)) ||
	    (cpf && (rc = ledger_checkpoint_read(cpf, &cp, &th, e))) ||
	    (vkey && (rc = ledger_checkpoint_check_key(cp, strlen(cp), vkey, cpf, e))) ||
	    (oldf && (rc = ledger_checkpoint_read(oldf, &ocp, &oth, e))))
		goto out;
	if (cpf && (th.size != p->tree_size || memcmp(th.root, p->root, 32)))
		rc = cs_err_set(e, CS_EXIT_VERIFY,
				"%s: the proof is for size %lld with another root than checkpoint %s "
				"(size %lld)",
				file, (long long) p->tree_size, cpf, (long long) th.size);
	else if (anchor && memcmp(anchor, p->root, 32))
		rc = cs_err_set(e, CS_EXIT_VERIFY, "%s: the proof leads to another root than --root %s",
				file, roots);
	else if (oldf && (p->type != LEDGER_PROOF_CONSISTENCY || oth.size != p->old_size ||
			  memcmp(oth.root, p->old_root, 32)))
		rc = cs_err_set(e, CS_EXIT_VERIFY,
				"%s: the proof does not start at old checkpoint %s (size %lld)", file,
				oldf, (long long) oth.size);
	else
		rc = ledger_proof_verify(p, e);
out:
	if (rc)
		ledger_proof_free(p);
	free(buf);
	free(cp);
	free(ocp);
	return rc;
}

void ledger_verify_print(const ledger_verify_info *info, const char *origin, int pinned,
                         const ledger_tree_head *th, const char *cpf, int json, FILE *out)
{
	char root[65];

	cs_hex(info->root, 32, root);
	if (json)
		fprintf(out,
		        "{\"checkpoint_size\":%lld,\"ok\":true,\"raw_blobs\":%lld,\"root\":\"%s\","
		        "\"signed\":%s,\"signed_size\":%lld,\"size\":%lld}\n",
		        (long long) info->checkpoint_size, (long long) info->raw_blobs, root,
		        info->keyed ? "true" : "false", (long long) info->signed_size,
		        (long long) info->size);
	else {
		fprintf(out, "ok: %lld records, %lld raw blobs, root %s\n", (long long) info->size,
		        (long long) info->raw_blobs, root);
		if (info->keyed)
			fprintf(out, "ok: signed by %s%s at size %lld, covering every record\n",
			        origin,
			        pinned ? " (the key given)"
			               : " (the study's own key; "
			                 "pin it with --key)",
			        (long long) info->signed_size);
		else
			fprintf(out,
			        "unsigned: this study was made before studies had keys; records "
			        "appended without the study (or a rewritten log) are caught only "
			        "against a checkpoint saved elsewhere (--checkpoint)\n");
		if (th)
			fprintf(out, "ok: extends checkpoint '%s' at size %lld (%s)\n", th->origin,
			        (long long) th->size, cpf);
	}
}

int ledger_verify_verb(const char *dir, const char *cpf, const char *vkey, int json, FILE *out,
		       cs_err *e)
{
	char *cp = NULL;
	ledger_tree_head th;
	ledger_verify_info info;
	ledger *l = NULL;
	int rc = cpf ? ledger_checkpoint_read(cpf, &cp, &th, e) : 0;

	if (!rc && !(rc = ledger_open(dir, &l, e)) &&
	    !(rc = ledger_verify_pinned(l, cp, vkey, &info, e)))
		ledger_verify_print(&info, ledger_origin(l), vkey != NULL, cpf ? &th : NULL, cpf, json,
				    out);
	ledger_close(l);
	free(cp);
	return rc;
}
