/*
 * cmd_runs.c - the verbs that get results out: `runs` (one row per run)
 * and `run show` (one run, its per-query rows). Argument parsing only;
 * the tables are built in reports/results.c.
 */
#include "cmds.h"

#include "harness.h"
#include "ledger.h"
#include "report.h"

#include <stdio.h>
#include <string.h>

/* --csv / --jsonl / --json into *fmt; 1 when argument a was one of them, -1 when a second. */
static int format_opt(const char *a, int *fmt)
{
	int f = !strcmp(a, "--csv")     ? REPORT_FMT_CSV
		: !strcmp(a, "--jsonl") ? REPORT_FMT_JSONL
		: !strcmp(a, "--json")  ? REPORT_FMT_JSON
					: -1;

	if (f < 0)
		return 0;
	if (*fmt != REPORT_FMT_TEXT && *fmt != f)
		return -1;
	*fmt = f;
	return 1;
}

int cmd_runs(int argc, char **argv)
{
	const char *dir = NULL;
	int fmt = REPORT_FMT_TEXT, rc;
	ledger *l = NULL;
	cs_err e = {0};

	if (cli_wants_help(argc, argv))
		return cli_help("runs", stdout, CS_EXIT_OK);
	for (int i = 1; i < argc; i++) {
		int f = format_opt(argv[i], &fmt);

		if (f < 0)
			return cli_usage(argv[0], "one output format at most");
		if (f)
			continue;
		if (argv[i][0] == '-')
			return cli_usage(argv[0], "unknown option '%s'", argv[i]);
		if (dir)
			return cli_usage(argv[0], "unexpected argument '%s'", argv[i]);
		dir = argv[i];
	}
	if (!dir)
		return cli_usage(argv[0], "missing study directory");
	rc = ledger_open(dir, &l, &e);
	if (!rc)
		rc = report_runs_print(l, fmt, stdout, &e);
	ledger_close(l);
	return rc ? cli_fail(argv[0], &e) : CS_EXIT_OK;
}

int cmd_run_show(int argc, char **argv)
{
	const char *dir = NULL, *id = NULL, *series = NULL;
	int fmt = REPORT_FMT_TEXT, queries = 0, rc;
	ledger *l = NULL;
	json_t *rows = NULL;
	cs_err e = {0};

	if (cli_wants_help(argc, argv))
		return cli_help("run-show", stdout, CS_EXIT_OK);
	for (int i = 1; i < argc; i++) {
		int f = format_opt(argv[i], &fmt);

		if (f < 0)
			return cli_usage("run show", "one output format at most");
		if (f)
			continue;
		if (!strcmp(argv[i], "--queries"))
			queries = 1;
		else if (!strcmp(argv[i], "--series")) {
			series = "all";
			if (i + 1 < argc && (!strcmp(argv[i + 1], "all") || !strcmp(argv[i + 1], "iostat") ||
					     !strcmp(argv[i + 1], "memory") ||
					     !strcmp(argv[i + 1], "prometheus")))
				series = argv[++i];
		} else if (!strncmp(argv[i], "--series=", 9))
			series = argv[i] + 9;
		else if (argv[i][0] == '-')
			return cli_usage("run show", "unknown option '%s'", argv[i]);
		else if (!dir)
			dir = argv[i];
		else if (!id)
			id = argv[i];
		else
			return cli_usage("run show", "unexpected argument '%s'", argv[i]);
	}
	if (!dir || !id)
		return cli_usage("run show", "need DIR and RUN_ID");
	if (queries && series)
		return cli_usage("run show", "--queries or --series, not both");
	rc = ledger_open(dir, &l, &e);
	if (!rc && series) {
		rc = harness_run_series(l, id, series, &rows, &e);
		if (!rc && fmt == REPORT_FMT_TEXT)
			harness_series_write_text(rows, stdout);
		else if (!rc)
			rc = report_rows_write(rows, fmt, stdout, &e);
	} else if (!rc) {
		rc = report_run_show(l, id, queries, fmt, stdout, &e);
	}
	json_decref(rows);
	ledger_close(l);
	if (rc == CS_EXIT_USAGE)
		return cli_usage("run show", "%s", e.msg);
	return rc ? cli_fail("run show", &e) : CS_EXIT_OK;
}
