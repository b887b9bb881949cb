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

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	int amend = 0, nfiles = 0, rc = 0;
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
	{
		const cli_opt opts[] = {CLI_OPT_FLAG("--amend", NULL, &amend),
					CLI_OPT_STR("--rationale", &rationale), CLI_OPT_END};
		size_t np = 0;
		const cli_spec spec = {.verb = "register", .opts = opts, .pos = paths, .maxpos = (size_t) argc,
				       .npos = &np, .unknown = "unknown option '%s'",
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
