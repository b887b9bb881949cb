/*
 * cmd_ledger.c - the ledger's verbs: init, register, hypotheses (log is
 * cli/cmd_log.c's).
 *
 * register is all-or-nothing across its files (holdout/register.c): every
 * file is validated and checked against what is already registered before
 * anything is written, then frozen and recorded in one transaction.
 */
#include "cmds.h"

#include "args.h"
#include "guard.h"
#include "ledger.h"
#include "register.h"
#include "report.h"
#include "verbs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- init: harness/verbs.c ---- */

int cmd_init(int argc, char **argv)
{
	cs_err e = {0};
	const char *dir = NULL;
	int rc;

	if (cli_wants_help(argc, argv))
		return cli_help("init", stdout, CS_EXIT_OK);
	{
		const cli_opt none[] = {CLI_OPT_END};
		const cli_spec spec = {.verb = "init", .opts = none, .pos = &dir, .maxpos = 1,
				       .extra = "one DIR only"};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!dir)
		return cli_usage("init", "missing DIR");
	return harness_init_verb(dir, stdout, &e) ? cli_fail("init", &e) : CS_EXIT_OK;
}

/* ---- register ---- */

int cmd_register(int argc, char **argv)
{
	const char *dir = NULL, *rationale = NULL, **paths;
	int amend = 0, nfiles = 0, rc = 0;
	cs_err e = {0};

	if (cli_wants_help(argc, argv))
		return cli_help("register", stdout, CS_EXIT_OK);
	paths = calloc((size_t) argc, sizeof(*paths));
	if (!paths)
		return cli_fail("register", &(cs_err){CS_EXIT_INTERNAL, "out of memory"});
	{
		const cli_opt opts[] = {CLI_OPT_FLAG("--amend", NULL, &amend),
					CLI_OPT_STR("--rationale", &rationale), CLI_OPT_END};
		size_t np = 0;
		const cli_spec spec = {.verb = "register", .opts = opts, .pos = paths,
				       .maxpos = (size_t) argc, .npos = &np,
				       .missing = "missing value for '%s'", .eq = 1};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			goto out;
		if (np) {
			dir = paths[0];
			nfiles = (int) np - 1;
			memmove(paths, paths + 1, (size_t) nfiles * sizeof(*paths));
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
	ledger *l = NULL;
	cs_err e = {0};

	if (cli_wants_help(argc, argv))
		return cli_help("hypotheses", stdout, CS_EXIT_OK);
	{
		const cli_opt opts[] = {CLI_OPT_FLAG("--json", NULL, &as_json), CLI_OPT_END};
		const cli_spec spec = {.verb = "hypotheses", .opts = opts, .pos = &dir, .maxpos = 1,
				       .unknown = CLI_UNEXPECTED};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!dir)
		return cli_usage("hypotheses", "missing DIR");
	if ((rc = ledger_open(dir, &l, &e)) || (rc = report_hypotheses_print(l, as_json, stdout, &e)))
		rc = cli_fail("hypotheses", &e);
	ledger_close(l);
	return rc;
}
