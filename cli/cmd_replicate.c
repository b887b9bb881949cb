/*
 * cmd_replicate.c - `coldstudy replicate`: a study made again from another
 * study's registration, with fresh random streams, and the comparison of
 * the two studies' verdicts.
 *
 * replicate S --out S2 is init, register and study register, composed
 * (harness/replicate.c); the comparison (replicate compare) is reports'
 * report_compare, its table report_compare_text.
 */
#include "cmds.h"

#include "args.h"
#include "guard.h"
#include "harness.h"
#include "replicate.h"
#include "verbs.h"
#include "ledger.h"
#include "report.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

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
	uint64_t seed = 0;
	int has_seed = 0, rc;
	harness_replica r = {0};
	cs_err e = {0};
	guard_held outh;
	char outvia[PATH_MAX + 300];

	guard_held_init(&outh);
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

		seed = UINT64_MAX; /* past HARNESS_SEED_MAX: no --seed */
		if ((rc = cli_args_parse(&spec, argc, argv)))
			goto out;
		has_seed = seed != UINT64_MAX;
	}
	if (!src || !out) {
		rc = cli_usage("replicate", "need S and --out S2");
		goto out;
	}
	if (!has_seed) {
		if (getrandom(&seed, sizeof(seed), 0) != (ssize_t) sizeof(seed)) {
			rc = cli_fail("replicate", &(cs_err){CS_EXIT_INTERNAL, "getrandom failed"});
			goto out;
		}
		seed &= HARNESS_SEED_MAX;
	}
	/* S2 held, checked (never inside production) and made, as init's folder */
	if (guard_output(NULL, NULL, out, 1, "replicate", "--out", &outh, outvia, sizeof(outvia), &e)) {
		rc = cli_fail("replicate", &e);
		goto out;
	}
	if (harness_replicate(src, outvia, specs, seed, stdout, &r, &e)) {
		rc = cli_fail(r.register_failed ? "register" : "replicate", &e);
		goto out;
	}
	harness_replica_print(&r, src, cli_spell(out), seed, stdout);
	rc = CS_EXIT_OK;
out:
	guard_held_close(&outh);
	json_decref(r.left_out);
	return rc;
}
