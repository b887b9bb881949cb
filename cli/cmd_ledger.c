/*
 * cmd_ledger.c - the ledger's verbs: init, register, hypotheses, log.
 *
 * register is all-or-nothing across its files: every file is validated
 * (hyp_parse_file) and checked against what is already registered before
 * anything is written; then, inside one IMMEDIATE transaction, each file is
 * frozen (ledger_freeze: DIR/frozen/<id>-<SHA-256 of the file>.json, mode
 * 0444) and its record appended, with SIGINT/SIGTERM held until the commit
 * or rollback. A refusal or a bad file changes nothing. Frozen copies are
 * named by the file's bytes, so one left behind by a killed register can
 * never pass for another file's copy, and the next register sweeps it.
 */
#include "cmds.h"
#include "guard.h"
#include "hyp.h"
#include "ledger.h"
#include "register.h"
#include "report.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECKPOINT_CAP (64u * 1024u)
#define PROOF_CAP (64u * 1024u)

/* Value of option name at argv[*i] ("--name V" or "--name=V"); NULL if argv[*i] is not it. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, int *missing)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n))
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		*missing = 1;
		return NULL;
	}
	return argv[++*i];
}

/* ---- init ---- */

/* Print DIR's verifier key as "key: VKEY" (init) ; exit code. */
static int log_print_key(const char *dir)
{
	char vk[512];
	ledger *l = NULL;
	cs_err e = {0};
	int rc;

	if ((rc = ledger_open(dir, &l, &e)) || (rc = ledger_key(l, vk, sizeof(vk), &e)))
		rc = cli_fail("init", &e);
	else
		printf("verifier key: %s\n", vk);
	ledger_close(l);
	return rc;
}

int cmd_init(int argc, char **argv)
{
	cs_err e = {0};
	const char *dir = NULL;

	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy init DIR\n\n"
		       "Create a study: DIR/ledger.db (the append-only, hash-chained experiment log),\n"
		       "DIR/frozen/ (frozen copies of registered files), an Ed25519 key for the\n"
		       "study's unique origin (DIR/signing.key, mode 0600) and DIR/checkpoint, the\n"
		       "latest signed checkpoint, which every command that appends renews. Prints the\n"
		       "verifier key: keep it elsewhere. Refuses (exit 3) if DIR already holds a ledger.\n");
		return CS_EXIT_OK;
	}
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-')
			return cli_usage("init", "unknown option '%s'", argv[i]);
		if (dir)
			return cli_usage("init", "one DIR only");
		dir = argv[i];
	}
	if (!dir)
		return cli_usage("init", "missing DIR");
	{
		/* the study folder: held, checked (never inside production), made */
		guard_held h;
		char via[PATH_MAX + 300];
		int rc;

		rc = guard_output(NULL, NULL, dir, 1, "init", "DIR", &h, via, sizeof(via), &e);
		if (!rc)
			rc = ledger_init(via, &e);
		guard_held_close(&h);
		if (rc)
			return cli_fail("init", &e);
	}
	printf("created %s/ledger.db, %s/frozen/, %s/signing.key (keep it private) and "
	       "%s/checkpoint\n",
	       dir, dir, dir, dir);
	return log_print_key(dir);
}

/* ---- register ---- */

int cmd_register(int argc, char **argv)
{
	const char *dir = NULL, *rationale = NULL, **paths;
	int amend = 0, nfiles = 0, rc = 0, missing = 0;
	cs_err e = {0};

	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy register DIR FILE... [--amend --rationale TEXT]\n\n"
		       "Validate each hypothesis file, canonicalise and hash it (SHA-256), freeze a\n"
		       "copy as DIR/frozen/<id>-<SHA-256 of the file>.json (mode 0444) and append a 'hypothesis'\n"
		       "record with the UTC time. All files or none: a bad file (exit 5) registers\n"
		       "nothing and writes nothing; a refusal (exit 3) registers nothing and writes\n"
		       "only its own refusal record. The same content again is a no-op (exit 0).\n"
		       "The same id with new content is refused (exit 3, a refusal record) unless\n"
		       "--amend --rationale TEXT, which appends an 'amendment' record with the access\n"
		       "state at that moment. A hypothesis registered or amended after the first run\n"
		       "has started carries post_hoc: true and is listed as exploratory.\n");
		return CS_EXIT_OK;
	}
	paths = calloc((size_t) argc, sizeof(*paths));
	if (!paths)
		return cli_fail("register", &(cs_err){CS_EXIT_INTERNAL, "out of memory"});
	for (int i = 1; i < argc; i++) {
		const char *v;

		if (!strcmp(argv[i], "--amend")) {
			amend = 1;
		} else if ((v = opt_value(argc, argv, &i, "--rationale", &missing))) {
			rationale = v;
		} else if (missing || argv[i][0] == '-') {
			rc = cli_usage("register", "%s '%s'",
				       missing ? "missing value for" : "unknown option", argv[i]);
			goto out;
		} else if (!dir) {
			dir = argv[i];
		} else {
			paths[nfiles++] = argv[i];
		}
	}
	if (!dir || nfiles == 0) {
		rc = cli_usage("register", "expected DIR and at least one FILE");
		goto out;
	}
	if (amend && (!rationale || !*rationale)) {
		rc = cli_usage("register", "--amend needs --rationale TEXT (why the change)");
		goto out;
	}
	if (rationale && !amend) {
		rc = cli_usage("register", "--rationale goes with --amend");
		goto out;
	}
	/* validate every file, freeze and record them, all or nothing (holdout/register.c) */
	if ((rc = holdout_register(dir, paths, (size_t) nfiles, amend, rationale, stdout, &e)))
		rc = cli_fail("register", &e);
out:
	free(paths);
	return rc;
}

/* ---- hypotheses ---- */

int cmd_hypotheses(int argc, char **argv)
{
	const char *dir = NULL;
	int as_json = 0, rc;
	json_t *list = NULL;
	ledger *l = NULL;
	cs_err e = {0};

	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy hypotheses DIR [--json]\n\n"
		       "List the registered hypotheses, latest version of each id: id, kind,\n"
		       "metric, predicted value, 95%% band, SHA-256 of the canonical file and the\n"
		       "registration time (UTC).\n");
		rc = CS_EXIT_OK;
		goto out;
	}
	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--json"))
			as_json = 1;
		else if (argv[k][0] == '-' || dir) {
			rc = cli_usage("hypotheses", "unexpected argument '%s'", argv[k]);
			goto out;
		} else
			dir = argv[k];
	}
	if (!dir) {
		rc = cli_usage("hypotheses", "missing DIR");
		goto out;
	}
	if ((rc = ledger_open(dir, &l, &e)) || (rc = holdout_hypotheses(l, &list, &e))) {
		rc = cli_fail("hypotheses", &e);
		goto out;
	}
	if (as_json) {
		char *txt = NULL;

		if (cs_json_canonical(list, &txt, NULL, &e)) {
			rc = cli_fail("hypotheses", &e);
			goto out;
		}
		printf("%s\n", txt);
		free(txt);
	} else {
		report_hypotheses_text(list, stdout);
	}
	rc = CS_EXIT_OK;
out:
	ledger_close(l);
	json_decref(list);
	return rc;
}

/* ---- log ---- */

static void log_help(FILE *f)
{
	fprintf(f,
		"usage: coldstudy log SUBCOMMAND ...\n\n"
		"  log verify DIR [--checkpoint FILE] [--key VKEY] [--json]\n"
		"      recompute every record hash, the chain, the RFC 6962 root, every raw\n"
		"      blob and each payload against its kind's schema; check that a checkpoint\n"
		"      signed by the study's key (or VKEY) covers every record and that the log\n"
		"      was not rewritten below a signed size; with a saved checkpoint, check the\n"
		"      log still extends it (exit 4 naming the first bad seq or checkpoint)\n"
		"  log key DIR\n"
		"      print the study's verifier key (C2SP signed-note format NAME+HASH+BASE64)\n"
		"  log checkpoint DIR [--origin NAME] [--json]\n"
		"      print the signed C2SP tlog-checkpoint (origin, size, base64 root,\n"
		"      signature) after recomputing it; with --origin, an unsigned body\n"
		"  log prove DIR SEQ [--size N]\n"
		"      inclusion proof of record SEQ (JSON: leaf index, tree size, hashes)\n"
		"  log prove DIR --old-size N [--size N]\n"
		"      consistency proof from tree size N to the current (or given) size\n"
		"  log verify-proof FILE|- (--checkpoint FILE [--key VKEY] | --root HEX)\n"
		"                   [--old-checkpoint FILE]\n"
		"      check a proof offline against a tree head you trust: a saved checkpoint\n"
		"      or its root (without one, exit 2: a proof alone only agrees with itself);\n"
		"      --key: the checkpoint must carry that verifier key's signature (exit 4)\n"
		"  log tiles DIR --out OUTDIR\n"
		"      write the log as C2SP tlog-tiles (checkpoint, tile/<L>/<N>, tile/entries/<N>)\n"
		"      for any static web server; unchanged tiles are left, others refused\n"
		"  log export DIR\n"
		"      JSONL, one record a line, byte-identical for the same ledger\n"
		"  log publish DIR --to URL [--witness URL]\n"
		"      PUT the new tiles and the signed checkpoint to a static web server,\n"
		"      refusing (exit 4) if its checkpoint is not an ancestor of this log;\n"
		"      resumable; --witness asks a C2SP tlog-witness to cosign\n"
		"  log publish DIR --url URL [--origin NAME] [--dry-run]\n"
		"      (older) POST the checkpoint and the export to an endpoint\n");
}

/* Read a checkpoint file into *text (caller frees). */
static int read_checkpoint(const char *path, char **text, ledger_tree_head *th, cs_err *e)
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

static int log_verify(int argc, char **argv)
{
	const char *dir = NULL, *cpf = NULL, *vkey = NULL, *v;
	int as_json = 0, missing = 0, rc;
	char *cp = NULL, root[65];
	ledger_tree_head th;
	ledger_verify_info info;
	ledger *l = NULL;
	cs_err e = {0};

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			as_json = 1;
		else if ((v = opt_value(argc, argv, &i, "--checkpoint", &missing)))
			cpf = v;
		else if ((v = opt_value(argc, argv, &i, "--key", &missing)))
			vkey = v;
		else if (missing || argv[i][0] == '-' || dir)
			return cli_usage("log verify", "unexpected argument '%s'", argv[i]);
		else
			dir = argv[i];
	}
	if (!dir)
		return cli_usage("log verify", "missing DIR");
	if (cpf && (rc = read_checkpoint(cpf, &cp, &th, &e)))
		return cli_fail("log verify", &e);
	if ((rc = ledger_open(dir, &l, &e)) || (rc = ledger_verify_pinned(l, cp, vkey, &info, &e))) {
		rc = cli_fail("log verify", &e);
		goto out;
	}
	cs_hex(info.root, 32, root);
	if (as_json)
		printf("{\"checkpoint_size\":%lld,\"ok\":true,\"raw_blobs\":%lld,\"root\":\"%s\","
		       "\"signed\":%s,\"signed_size\":%lld,\"size\":%lld}\n",
		       (long long) info.checkpoint_size, (long long) info.raw_blobs, root,
		       info.keyed ? "true" : "false", (long long) info.signed_size,
		       (long long) info.size);
	else {
		printf("ok: %lld records, %lld raw blobs, root %s\n", (long long) info.size,
		       (long long) info.raw_blobs, root);
		if (info.keyed)
			printf("ok: signed by %s%s at size %lld, covering every record\n",
			       ledger_origin(l), vkey ? " (the key given)" : " (the study's own key; "
			       "pin it with --key)", (long long) info.signed_size);
		else
			printf("unsigned: this study was made before studies had keys; records "
			       "appended without the study (or a rewritten log) are caught only "
			       "against a checkpoint saved elsewhere (--checkpoint)\n");
		if (cpf)
			printf("ok: extends checkpoint '%s' at size %lld (%s)\n", th.origin,
			       (long long) th.size, cpf);
	}
	rc = CS_EXIT_OK;
out:
	ledger_close(l);
	free(cp);
	return rc;
}

static int log_checkpoint(int argc, char **argv)
{
	const char *dir = NULL, *origin = NULL, *v;
	int missing = 0, rc, json = 0;
	char *text = NULL;
	ledger *l = NULL;
	cs_err e = {0};

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if ((v = opt_value(argc, argv, &i, "--origin", &missing)))
			origin = v;
		else if (missing || argv[i][0] == '-' || dir)
			return cli_usage("log checkpoint", "unexpected argument '%s'", argv[i]);
		else
			dir = argv[i];
	}
	if (!dir)
		return cli_usage("log checkpoint", "missing DIR");
	if ((rc = ledger_open(dir, &l, &e)) ||
	    (rc = origin || !ledger_signed(l) ? ledger_checkpoint_origin(l, origin, &text, &e)
						   : ledger_checkpoint_signed(l, &text, &e)))
		rc = cli_fail("log checkpoint", &e);
	else if (!json)
		fputs(text, stdout);
	else {
		/* the same note, parsed back: origin, size, root (hex), and the note's text */
		ledger_tree_head th;
		char root[65];
		json_t *j;

		if ((rc = ledger_checkpoint_parse(text, strlen(text), "checkpoint", &th, &e))) {
			rc = cli_fail("log checkpoint", &e);
		} else {
			for (int i = 0; i < 32; i++)
				snprintf(root + 2 * i, 3, "%02x", th.root[i]);
			j = json_pack("{s:s, s:I, s:s, s:b, s:s}", "origin", th.origin, "size",
				      (json_int_t) th.size, "root_hex", root, "signed",
				      !origin && ledger_signed(l), "note", text);
			if (!j || json_dumpf(j, stdout, JSON_COMPACT | JSON_SORT_KEYS))
				rc = CS_EXIT_INTERNAL;
			putchar('\n');
			json_decref(j);
		}
	}
	free(text);
	ledger_close(l);
	return rc;
}

/* Parse a positive size/seq argument; -1 on bad input. */
static int parse_size(const char *s, int64_t *out)
{
	uint64_t v;

	if (cli_parse_u64(s, &v) || v > (uint64_t) INT64_MAX)
		return -1;
	*out = (int64_t) v;
	return 0;
}

static int log_prove(int argc, char **argv)
{
	const char *dir = NULL, *seqs = NULL, *v;
	int64_t seq = 0, old = -1, size = 0;
	int missing = 0, rc;
	ledger_proof p = {0};
	char *txt = NULL;
	ledger *l = NULL;
	cs_err e = {0};

	for (int i = 1; i < argc; i++) {
		if ((v = opt_value(argc, argv, &i, "--old-size", &missing))) {
			if (parse_size(v, &old))
				return cli_usage("log prove", "--old-size: expected a number, got '%s'",
						 v);
		} else if ((v = opt_value(argc, argv, &i, "--size", &missing))) {
			if (parse_size(v, &size) || size == 0)
				return cli_usage("log prove", "--size: expected a number > 0, got '%s'",
						 v);
		} else if (missing || argv[i][0] == '-') {
			return cli_usage("log prove", "unexpected argument '%s'", argv[i]);
		} else if (!dir) {
			dir = argv[i];
		} else if (!seqs) {
			seqs = argv[i];
		} else {
			return cli_usage("log prove", "unexpected argument '%s'", argv[i]);
		}
	}
	if (!dir || (!seqs) == (old < 0))
		return cli_usage("log prove", "expected DIR and either SEQ or --old-size N");
	if (seqs && (parse_size(seqs, &seq) || seq == 0))
		return cli_usage("log prove", "SEQ: expected a record number >= 1, got '%s'", seqs);
	if ((rc = ledger_open(dir, &l, &e)) ||
	    (rc = seqs ? ledger_prove_inclusion(l, seq, size, &p, &e)
		       : ledger_prove_consistency(l, old, size, &p, &e)) ||
	    (rc = ledger_proof_to_json(&p, &txt, &e)))
		rc = cli_fail("log prove", &e);
	else
		printf("%s\n", txt);
	free(txt);
	ledger_proof_free(&p);
	ledger_close(l);
	return rc;
}

static int log_verify_proof(int argc, char **argv)
{
	const char *file = NULL, *cpf = NULL, *oldf = NULL, *roots = NULL, *vkey = NULL, *v;
	char *buf = NULL, *cp = NULL, *ocp = NULL, root[65];
	unsigned char anchor[32];
	ledger_tree_head th, oth;
	ledger_proof p = {0};
	size_t len = 0;
	int missing = 0, rc;
	cs_err e = {0};

	for (int i = 1; i < argc; i++) {
		if ((v = opt_value(argc, argv, &i, "--checkpoint", &missing)))
			cpf = v;
		else if ((v = opt_value(argc, argv, &i, "--old-checkpoint", &missing)))
			oldf = v;
		else if ((v = opt_value(argc, argv, &i, "--root", &missing)))
			roots = v;
		else if ((v = opt_value(argc, argv, &i, "--key", &missing)))
			vkey = v;
		else if (missing || (argv[i][0] == '-' && argv[i][1]) || file)
			return cli_usage("log verify-proof", "unexpected argument '%s'", argv[i]);
		else
			file = argv[i];
	}
	if (!file)
		return cli_usage("log verify-proof", "missing the proof FILE (or - for stdin)");
	if (!cpf && !roots)
		return cli_usage("log verify-proof",
				 "no trust anchor: a proof checked only against the root it carries "
				 "proves nothing; give --checkpoint FILE or --root HEX of a tree head "
				 "you trust");
	if (vkey && !cpf)
		return cli_usage("log verify-proof", "--key checks a checkpoint's signature: give "
				 "--checkpoint FILE too");
	if (roots && ledger_root_parse(roots, anchor))
		return cli_usage("log verify-proof",
				 "--root: expected 64 hex digits or 44 characters of base64, got '%s'",
				 roots);
	if (!strcmp(file, "-")) {
		size_t cap = 4096;

		buf = malloc(cap);
		while (buf) {
			size_t r = fread(buf + len, 1, cap - len - 1, stdin);

			len += r;
			if (r == 0)
				break;
			if (len + 1 >= cap) {
				char *nb = cap >= PROOF_CAP ? NULL : realloc(buf, cap * 2);

				if (!nb) {
					free(buf);
					buf = NULL;
					cs_err_set(&e, CS_EXIT_BADINPUT, "stdin: proof over %u bytes",
						   PROOF_CAP);
					return cli_fail("log verify-proof", &e);
				}
				buf = nb;
				cap *= 2;
			}
		}
		if (!buf)
			return cli_fail("log verify-proof", &(cs_err){CS_EXIT_INTERNAL, "out of memory"});
		buf[len] = '\0';
		file = "stdin";
	} else if ((rc = cs_read_file(file, PROOF_CAP, &buf, &len, &e))) {
		return cli_fail("log verify-proof", &e);
	}
	if ((rc = ledger_proof_parse(buf, len, file, &p, &e)) ||
	    (cpf && (rc = read_checkpoint(cpf, &cp, &th, &e))) ||
	    (vkey && (rc = ledger_checkpoint_check_key(cp, strlen(cp), vkey, cpf, &e))) ||
	    (oldf && (rc = read_checkpoint(oldf, &ocp, &oth, &e)))) {
		rc = cli_fail("log verify-proof", &e);
		goto out;
	}
	if (cpf && (th.size != p.tree_size || memcmp(th.root, p.root, 32))) {
		cs_err_set(&e, CS_EXIT_VERIFY,
			   "%s: the proof is for size %lld with another root than checkpoint %s "
			   "(size %lld)",
			   file, (long long) p.tree_size, cpf, (long long) th.size);
		rc = cli_fail("log verify-proof", &e);
		goto out;
	}
	if (roots && memcmp(anchor, p.root, 32)) {
		cs_err_set(&e, CS_EXIT_VERIFY, "%s: the proof leads to another root than --root %s",
			   file, roots);
		rc = cli_fail("log verify-proof", &e);
		goto out;
	}
	if (oldf && (p.type != LEDGER_PROOF_CONSISTENCY || oth.size != p.old_size ||
		     memcmp(oth.root, p.old_root, 32))) {
		cs_err_set(&e, CS_EXIT_VERIFY,
			   "%s: the proof does not start at old checkpoint %s (size %lld)", file, oldf,
			   (long long) oth.size);
		rc = cli_fail("log verify-proof", &e);
		goto out;
	}
	if ((rc = ledger_proof_verify(&p, &e))) {
		rc = cli_fail("log verify-proof", &e);
		goto out;
	}
	cs_hex(p.root, 32, root);
	if (p.type == LEDGER_PROOF_INCLUSION)
		printf("ok: seq %lld is in the tree of %lld records with root %s\n",
		       (long long) p.leaf_index + 1, (long long) p.tree_size, root);
	else
		printf("ok: the tree of %lld records with root %s extends the tree of %lld\n",
		       (long long) p.tree_size, root, (long long) p.old_size);
	rc = CS_EXIT_OK;
out:
	ledger_proof_free(&p);
	free(buf);
	free(cp);
	free(ocp);
	return rc;
}

static int log_key(int argc, char **argv)
{
	const char *dir = NULL;
	char vk[512];
	ledger *l = NULL;
	cs_err e = {0};
	int rc;

	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-' || dir)
			return cli_usage("log key", "unexpected argument '%s'", argv[i]);
		dir = argv[i];
	}
	if (!dir)
		return cli_usage("log key", "missing DIR");
	if ((rc = ledger_open(dir, &l, &e)) || (rc = ledger_key(l, vk, sizeof(vk), &e)))
		rc = cli_fail("log key", &e);
	else
		printf("%s\n", vk);
	ledger_close(l);
	return rc;
}

static int log_tiles(int argc, char **argv)
{
	const char *dir = NULL, *out = NULL, *v;
	int64_t written = 0, same = 0;
	int missing = 0, rc;
	char *note = NULL, outvia[PATH_MAX + 300];
	ledger *l = NULL;
	cs_err e = {0};
	guard_held outh;

	guard_held_init(&outh);
	for (int i = 1; i < argc; i++) {
		if ((v = opt_value(argc, argv, &i, "--out", &missing)))
			out = v;
		else if (missing || argv[i][0] == '-' || dir)
			return cli_usage("log tiles", "unexpected argument '%s'", argv[i]);
		else
			dir = argv[i];
	}
	if (!dir || !out)
		return cli_usage("log tiles", "expected DIR --out OUTDIR");
	if ((rc = guard_output(NULL, NULL, out, 1, "log tiles", "--out", &outh, outvia,
			       sizeof(outvia), &e)) ||
	    (rc = ledger_open(dir, &l, &e)) ||
	    (rc = ledger_tiles_write(l, outvia, &written, &same, &note, &e)))
		rc = cli_fail("log tiles", &e);
	else
		printf("%s: %lld tiles written, %lld already there; checkpoint:\n%s", out,
		       (long long) written, (long long) same, note);
	free(note);
	ledger_close(l);
	guard_held_close(&outh);
	return rc;
}

static int log_export(int argc, char **argv)
{
	const char *dir = NULL;
	ledger *l = NULL;
	cs_err e = {0};
	int rc;

	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-' || dir)
			return cli_usage("log export", "unexpected argument '%s'", argv[i]);
		dir = argv[i];
	}
	if (!dir)
		return cli_usage("log export", "missing DIR");
	if ((rc = ledger_open(dir, &l, &e)) || (rc = ledger_export(l, stdout, &e)))
		rc = cli_fail("log export", &e);
	ledger_close(l);
	return rc;
}

int cmd_log(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} subs[] = {
		{"verify", log_verify},         {"checkpoint", log_checkpoint},
		{"prove", log_prove},           {"verify-proof", log_verify_proof},
		{"export", log_export},         {"publish", cmd_log_publish},
		{"key", log_key},               {"tiles", log_tiles},
	};

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		log_help(argc < 2 ? stderr : stdout);
		return argc < 2 ? CS_EXIT_USAGE : CS_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		if (!strcmp(argv[1], subs[i].name)) {
			if (cli_wants_help(argc - 1, argv + 1)) {
				log_help(stdout);
				return CS_EXIT_OK;
			}
			return subs[i].fn(argc - 1, argv + 1);
		}
	}
	return cli_usage("log", "unknown subcommand '%s'", argv[1]);
}
