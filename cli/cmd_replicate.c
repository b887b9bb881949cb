/*
 * cmd_replicate.c - `coldstudy replicate`: a study made again from another
 * study's registration, with fresh random streams, and the comparison of
 * the two studies' verdicts.
 *
 * replicate S --out S2 is init, register and study register, composed
 * (harness/verbs.c, harness/replicate.c); the comparison (replicate compare) is reports'
 * report_compare, its table report_compare_text.
 */
#include "cmds.h"

#include "args.h"
#include "harness.h"
#include "verbs.h"
#include "ledger.h"
#include "report.h"

#include <stdio.h>
#include <string.h>

static int compare(int argc, char **argv)
{
	const char *a = NULL, *b = NULL;
	int json = 0, disagree = 0, rc;
	ledger *la = NULL, *lb = NULL;
	cs_err e = {0};

	{
		const cli_opt opts[] = {CLI_OPT_FLAG("--json", NULL, &json), CLI_OPT_END};
		const char *pos[2] = {NULL, NULL};
		const cli_spec spec = {.verb = "replicate", .opts = opts, .pos = pos, .maxpos = 2,
				       .extra = "compare takes two studies"};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
		a = pos[0];
		b = pos[1];
	}
	if (!a || !b)
		return cli_usage("replicate", "compare needs S and S2");
	rc = ledger_open(a, &la, &e);
	if (!rc)
		rc = ledger_open(b, &lb, &e);
	if (!rc)
		rc = report_compare_print(la, lb, json, stdout, &disagree, &e);
	ledger_close(la);
	ledger_close(lb);
	if (rc)
		return cli_fail("replicate", &e);
	return disagree ? CS_EXIT_FAILED : CS_EXIT_OK;
}

int cmd_replicate(int argc, char **argv)
{
	const char *src = NULL, *out = NULL, *specs = NULL;
	uint64_t seed = UINT64_MAX; /* past HARNESS_SEED_MAX: no --seed, one drawn */
	int rc, register_failed = 0;
	cs_err e = {0};

	if (cli_wants_help(argc, argv) || argc < 2)
		return cli_help("replicate", stdout, cli_wants_help(argc, argv) ? CS_EXIT_OK : CS_EXIT_USAGE);
	if (!strcmp(argv[1], "compare"))
		return compare(argc - 1, argv + 1);
	{
		const cli_opt opts[] = {
			CLI_OPT_STR("--out", &out),
			CLI_OPT_STR("--specs", &specs),
			{.name = "--seed", .kind = CLI_U64, .dst = &seed, .hi = HARNESS_SEED_MAX,
			 .bad = "--seed '%s': not a number from 0 to 2^53-1"},
			CLI_OPT_END,
		};
		const cli_spec spec = {.verb = "replicate", .opts = opts, .pos = &src, .maxpos = 1,
				       .unknown = CLI_UNEXPECTED};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!src || !out)
		return cli_usage("replicate", "need S and --out S2");
	if (harness_replicate_verb(src, out, specs, seed, stdout, &register_failed, &e))
		return cli_fail(register_failed ? "register" : "replicate", &e);
	return CS_EXIT_OK;
}
