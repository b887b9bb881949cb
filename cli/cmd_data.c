/*
 * cmd_data.c - `coldstudy data`: what a dataset spec loads to, and exact
 * ground truth for a base and a query set (cached by content hash); both
 * computed by harness/datacmd.c.
 */
#include "cmds.h"

#include "args.h"
#include "iocmd.h"

#include <stdio.h>
#include <string.h>

/* data info SPEC [--json]: shape, hash and value range. */
static int data_info(int argc, char **argv)
{
	const char *spec = NULL;
	cs_err e = {0};
	int json = 0, rc;

	{
		const cli_opt opts[] = {CLI_OPT_FLAG("--json", NULL, &json), CLI_OPT_END};
		const cli_spec cs = {.verb = "data", .opts = opts, .pos = &spec, .maxpos = 1,
				     .extra = "info takes one SPEC", .dash_operand = 1};

		if ((rc = cli_args_parse(&cs, argc, argv)))
			return rc;
	}
	if (!spec)
		return cli_usage("data", "info needs a SPEC");
	return harness_data_info(spec, json, stdout, &e) ? cli_fail("data", &e) : CS_EXIT_OK;
}

/* data gt --base --queries --k --metric --out [--threads] [--cache-dir] [-q]. */
static int data_gt(int argc, char **argv)
{
	harness_gt_opts o = {0};
	const char *metric = NULL;
	unsigned threads = 0;
	cs_err e = {0};
	int rc;

	{
		const cli_opt opts[] = {
			CLI_OPT_FLAG("--quiet", "-q", &o.quiet),
			CLI_OPT_STR("--base", &o.base),
			CLI_OPT_STR("--queries", &o.queries),
			CLI_OPT_STR("--out", &o.out),
			CLI_OPT_STR("--metric", &metric),
			CLI_OPT_STR("--cache-dir", &o.cache_dir),
			{.name = "--k", .kind = CLI_SIZE_T, .dst = &o.k, .lo = 1, .hi = 1u << 20,
			 .bad = "--k must be 1..1048576, not '%s'"},
			{.name = "--threads", .kind = CLI_UINT, .dst = &threads, .hi = 256,
			 .bad = "--threads must be 0..256, not '%s'"},
			CLI_OPT_END,
		};
		const cli_spec spec = {.verb = "data", .opts = opts,
				       .missing = "option '%s' needs a value or is unknown",
				       .missing_first = 1, .options_only = 1};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!o.base || !o.queries || !o.out || !metric || !o.k)
		return cli_usage("data", "gt needs --base, --queries, --k, --metric and --out");
	if (cv_metric_parse(metric, &o.metric))
		return cli_usage("data", "--metric must be l2, cosine or ip, not '%s'", metric);
	o.threads = (int) threads;
	return harness_data_gt(&o, stderr, &e) ? cli_fail("data", &e) : CS_EXIT_OK;
}

int cmd_data(int argc, char **argv)
{
	if (argc < 2 || cli_wants_help(argc, argv))
		return cli_help("data", argc < 2 ? stderr : stdout, argc < 2 ? CS_EXIT_USAGE : CS_EXIT_OK);
	if (!strcmp(argv[1], "info"))
		return data_info(argc - 1, argv + 1);
	if (!strcmp(argv[1], "gt"))
		return data_gt(argc - 1, argv + 1);
	return cli_usage("data", "unknown subcommand '%s' (info, gt)", argv[1]);
}
