/*
 * show.c - what `coldstudy log checkpoint`, `log prove` and `log
 * verify-proof` print: the checkpoint note (or its parts as JSON), a proof
 * as JSON, a checked proof's line.
 */
#include "ledger.h"

#include <stdlib.h>
#include <string.h>

int ledger_checkpoint_print(ledger *l, const char *origin, int json, FILE *out, cs_err *e)
{
	ledger_tree_head th;
	char *text = NULL, root[65];
	json_t *j;
	int rc;

	if ((rc = origin || !ledger_signed(l) ? ledger_checkpoint_origin(l, origin, &text, e)
	                                      : ledger_checkpoint_signed(l, &text, e)))
		return rc;
	if (!json) {
		fputs(text, out);
		free(text);
		return 0;
	}
	/* the same note, parsed back: origin, size, root (hex), and the note's text */
	if ((rc = ledger_checkpoint_parse(text, strlen(text), "checkpoint", &th, e))) {
		free(text);
		return rc;
	}
	cs_hex(th.root, 32, root);
	j = json_pack("{s:s, s:I, s:s, s:b, s:s}", "origin", th.origin, "size",
	              (json_int_t) th.size, "root_hex", root, "signed", !origin && ledger_signed(l),
	              "note", text);
	if (!j || json_dumpf(j, out, JSON_COMPACT | JSON_SORT_KEYS))
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	fputc('\n', out);
	json_decref(j);
	free(text);
	return rc;
}

int ledger_prove_print(ledger *l, int64_t seq, int64_t old_size, int64_t size, FILE *out, cs_err *e)
{
	ledger_proof p = {0};
	char *txt = NULL;
	int rc;

	if (!(rc = seq ? ledger_prove_inclusion(l, seq, size, &p, e)
	               : ledger_prove_consistency(l, old_size, size, &p, e)) &&
	    !(rc = ledger_proof_to_json(&p, &txt, e)))
		fprintf(out, "%s\n", txt);
	free(txt);
	ledger_proof_free(&p);
	return rc;
}

void ledger_proof_print(const ledger_proof *p, FILE *out)
{
	char root[65];

	cs_hex(p->root, 32, root);
	if (p->type == LEDGER_PROOF_INCLUSION)
		fprintf(out, "ok: seq %lld is in the tree of %lld records with root %s\n",
		        (long long) p->leaf_index + 1, (long long) p->tree_size, root);
	else
		fprintf(out, "ok: the tree of %lld records with root %s extends the tree of %lld\n",
		        (long long) p->tree_size, root, (long long) p->old_size);
}
