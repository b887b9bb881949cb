/*
 * cmd_log.c - `coldstudy log`: verify, key, checkpoint, prove,
 * verify-proof, tiles, export (publish is cli/cmd_report.c's). Each parses
 * its options, makes its one call into ledger/ and prints.
 */
#include "cmds.h"

#include "args.h"
#include "guard.h"
#include "ledger.h"
#include "verbs.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* ---- log ---- */

static int log_verify(int argc, char **argv)
{
	const char *dir = NULL, *cpf = NULL, *vkey = NULL;
	int as_json = 0, rc;
	cs_err e = {0};

	{
		const cli_opt opts[] = {CLI_OPT_FLAG("--json", NULL, &as_json), CLI_OPT_STR("--checkpoint", &cpf),
					CLI_OPT_STR("--key", &vkey), CLI_OPT_END};
		const cli_spec spec = {.verb = "log verify", .opts = opts, .pos = &dir, .maxpos = 1,
				       .unknown = CLI_UNEXPECTED, .eq = 1};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!dir)
		return cli_usage("log verify", "missing DIR");
	if (ledger_verify_verb(dir, cpf, vkey, as_json, stdout, &e)) /* ledger/anchor.c */
		return cli_fail("log verify", &e);
	return CS_EXIT_OK;
}

static int log_checkpoint(int argc, char **argv)
{
	const char *dir = NULL, *origin = NULL;
	int rc, json = 0;
	ledger *l = NULL;
	cs_err e = {0};

	{
		const cli_opt opts[] = {CLI_OPT_FLAG("--json", NULL, &json), CLI_OPT_STR("--origin", &origin),
					CLI_OPT_END};
		const cli_spec spec = {.verb = "log checkpoint", .opts = opts, .pos = &dir,
				       .maxpos = 1, .unknown = CLI_UNEXPECTED, .eq = 1};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!dir)
		return cli_usage("log checkpoint", "missing DIR");
	if ((rc = ledger_open(dir, &l, &e)) || (rc = ledger_checkpoint_print(l, origin, json, stdout, &e)))
		rc = cli_fail("log checkpoint", &e);
	ledger_close(l);
	return rc;
}

static int log_prove(int argc, char **argv)
{
	const char *dir = NULL, *seqs = NULL;
	uint64_t seq = 0, old = UINT64_MAX, size = 0; /* old past INT64_MAX: no --old-size */
	int rc;
	ledger *l = NULL;
	cs_err e = {0};

	{
		const cli_opt opts[] = {
			{.name = "--old-size", .kind = CLI_U64, .dst = &old, .hi = INT64_MAX,
			 .bad = "--old-size: expected a number, got '%s'"},
			{.name = "--size", .kind = CLI_U64, .dst = &size, .lo = 1, .hi = INT64_MAX,
			 .bad = "--size: expected a number > 0, got '%s'"},
			CLI_OPT_END,
		};
		const char *pos[2] = {NULL, NULL};
		const cli_spec spec = {.verb = "log prove", .opts = opts, .pos = pos, .maxpos = 2,
				       .unknown = CLI_UNEXPECTED, .eq = 1};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
		dir = pos[0];
		seqs = pos[1];
	}
	if (!dir || (!seqs) == (old > INT64_MAX))
		return cli_usage("log prove", "expected DIR and either SEQ or --old-size N");
	if (seqs && (cli_parse_u64(seqs, &seq) || seq == 0 || seq > INT64_MAX))
		return cli_usage("log prove", "SEQ: expected a record number >= 1, got '%s'", seqs);
	if ((rc = ledger_open(dir, &l, &e)) ||
	    (rc = ledger_prove_print(l, (int64_t) seq, old > INT64_MAX ? -1 : (int64_t) old, (int64_t) size,
				     stdout, &e)))
		rc = cli_fail("log prove", &e);
	ledger_close(l);
	return rc;
}

static int log_verify_proof(int argc, char **argv)
{
	const char *file = NULL, *cpf = NULL, *oldf = NULL, *roots = NULL, *vkey = NULL;
	unsigned char anchor[32];
	ledger_proof p = {0};
	cs_err e = {0};

	{
		const cli_opt opts[] = {CLI_OPT_STR("--checkpoint", &cpf), CLI_OPT_STR("--old-checkpoint", &oldf),
					CLI_OPT_STR("--root", &roots), CLI_OPT_STR("--key", &vkey), CLI_OPT_END};
		const cli_spec spec = {.verb = "log verify-proof", .opts = opts, .pos = &file,
				       .maxpos = 1, .unknown = CLI_UNEXPECTED, .eq = 1,
				       .dash_operand = 1};
		int rc;

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
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
	if (ledger_proof_check(file, cpf, vkey, roots ? anchor : NULL, roots, oldf, &p, &e))
		return cli_fail("log verify-proof", &e);
	ledger_proof_print(&p, stdout);
	ledger_proof_free(&p);
	return CS_EXIT_OK;
}

/* A verb that takes DIR alone (log key, log export); 0 or the usage exit. */
static int dir_only(const char *verb, int argc, char **argv, const char **dir)
{
	const cli_opt none[] = {CLI_OPT_END};
	const cli_spec spec = {.verb = verb, .opts = none, .pos = dir, .maxpos = 1,
			       .unknown = CLI_UNEXPECTED};
	int rc = cli_args_parse(&spec, argc, argv);

	return rc ? rc : !*dir ? cli_usage(verb, "missing DIR") : 0;
}

static int log_key(int argc, char **argv)
{
	const char *dir = NULL;
	char vk[512];
	ledger *l = NULL;
	cs_err e = {0};
	int rc;

	if ((rc = dir_only("log key", argc, argv, &dir)))
		return rc;
	if ((rc = ledger_open(dir, &l, &e)) || (rc = ledger_key(l, vk, sizeof(vk), &e)))
		rc = cli_fail("log key", &e);
	else
		printf("%s\n", vk);
	ledger_close(l);
	return rc;
}

static int log_tiles(int argc, char **argv)
{
	const char *dir = NULL, *out = NULL;
	cs_err e = {0};
	int rc;

	{
		const cli_opt opts[] = {CLI_OPT_STR("--out", &out), CLI_OPT_END};
		const cli_spec spec = {.verb = "log tiles", .opts = opts, .pos = &dir, .maxpos = 1,
				       .unknown = CLI_UNEXPECTED, .eq = 1};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!dir || !out)
		return cli_usage("log tiles", "expected DIR --out OUTDIR");
	return harness_tiles_verb(dir, out, stdout, &e) ? cli_fail("log tiles", &e) : CS_EXIT_OK;
}

static int log_export(int argc, char **argv)
{
	const char *dir = NULL;
	ledger *l = NULL;
	cs_err e = {0};
	int rc;

	if ((rc = dir_only("log export", argc, argv, &dir)))
		return rc;
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
	    !strcmp(argv[1], "help"))
		return cli_help("log", argc < 2 ? stderr : stdout, argc < 2 ? CS_EXIT_USAGE : CS_EXIT_OK);
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		if (!strcmp(argv[1], subs[i].name)) {
			if (cli_wants_help(argc - 1, argv + 1))
				return cli_help("log", stdout, CS_EXIT_OK);
			return subs[i].fn(argc - 1, argv + 1);
		}
	}
	return cli_usage("log", "unknown subcommand '%s'", argv[1]);
}
