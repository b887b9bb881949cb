/*
 * cmd_report.c - `coldstudy report DIR --out R [--title TEXT]` and
 * `coldstudy log publish DIR --to URL [--witness URL] [--timeout S]` (C2SP
 * tlog-tiles over PUT) and the older `coldstudy log publish DIR --url URL
 * [--origin NAME] [--timeout S] [--dry-run]`: argument parsing only; the
 * work is in reports/.
 */
#include "cmds.h"

#include "args.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "guard.h"
#include "ledger.h"
#include "report.h"

#define PUBLISH_TIMEOUT_DEFAULT 60 /* cli/help/log-publish.txt says so */
#define PUBLISH_TIMEOUT_MAX     3600

int cmd_report(int argc, char **argv)
{
	const char *dir = NULL, *out = NULL, *title = NULL;
	ledger *l = NULL;
	cs_err e = {0};
	int rc;
	guard_held outh;
	char outvia[PATH_MAX + 300];

	if (cli_wants_help(argc, argv))
		return cli_help("report", stdout, CS_EXIT_OK);
	{
		const cli_opt opts[] = {CLI_OPT_STR("--out", &out), CLI_OPT_STR("--title", &title), CLI_OPT_END};
		const cli_spec spec = {.verb = "report", .opts = opts, .pos = &dir, .maxpos = 1,
				       .unknown = "unknown or incomplete option '%s'"};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!dir || !out)
		return cli_usage("report", "expected DIR --out R");
	if (!out[0])
		return cli_usage("report", "--out needs a directory");
	/* R is made beside its name and moved in: its folder is held and checked first */
	rc = guard_output(NULL, NULL, out, 0, "report", "--out", &outh, outvia, sizeof(outvia), &e);
	if (!rc)
		rc = ledger_open(dir, &l, &e);
	if (!rc)
		rc = report_write(l, outvia, title, &e);
	ledger_close(l);
	guard_held_close(&outh);
	if (rc)
		return cli_fail("report", &e);
	fprintf(stderr, "report written to %s/report.md and %s/report.html\n", out, out);
	return CS_EXIT_OK;
}

int cmd_log_publish(int argc, char **argv)
{
	const char *dir = NULL, *url = NULL, *origin = NULL, *to = NULL, *witness = NULL;
	uint64_t timeout = PUBLISH_TIMEOUT_DEFAULT;
	ledger *l = NULL;
	cs_err e = {0};
	int rc, dry = 0;

	if (cli_wants_help(argc, argv))
		return cli_help("log-publish", stdout, CS_EXIT_OK);
	{
		char tbad[80];
		const cli_opt opts[] = {
			CLI_OPT_STR("--url", &url),
			CLI_OPT_STR("--to", &to),
			CLI_OPT_STR("--witness", &witness),
			CLI_OPT_STR("--origin", &origin),
			{.name = "--timeout", .kind = CLI_U64, .dst = &timeout, .lo = 1, .hi = PUBLISH_TIMEOUT_MAX,
			 .bad = tbad},
			CLI_OPT_FLAG("--dry-run", NULL, &dry),
			CLI_OPT_END,
		};
		const cli_spec spec = {.verb = "log publish", .opts = opts, .pos = &dir,
				       .maxpos = 1, .unknown = "unknown or incomplete option '%s'"};

		snprintf(tbad, sizeof(tbad), "--timeout: expected 1 to %d seconds, got '%%s'",
			 PUBLISH_TIMEOUT_MAX);
		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!dir || !url == !to)
		return cli_usage("log publish", "expected DIR and one of --to URL or --url URL");
	if (witness && !to)
		return cli_usage("log publish", "--witness goes with --to");
	if (to && (dry || origin))
		return cli_usage("log publish", "--dry-run and --origin go with --url");
	if (origin && (!origin[0] || strchr(origin, '\n')))
		return cli_usage("log publish", "--origin: expected a non-empty one-line name");
	rc = ledger_open(dir, &l, &e);
	if (!rc)
		rc = to ? report_publish_tiles(l, to, witness, (long) timeout, stdout, &e)
			: report_publish(l, url, origin, dry, (long) timeout, stdout, &e);
	ledger_close(l);
	return rc ? cli_fail("log publish", &e) : CS_EXIT_OK;
}
