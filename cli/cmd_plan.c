/*
 * cmd_plan.c - `coldstudy plan power`: the power of each interval-decided
 * hypothesis and the replicates it needs (harness_power_verb), printed as a
 * table (reports/text.c) or JSON. Writes nothing.
 */
#include "cmds.h"

#include "args.h"
#include "verbs.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --pilot RUN...: each run id appended; an option in its place reads as missing */
static int take_pilot(const char *val, void *dst)
{
	if (val[0] == '-')
		return -2;
	return json_array_append_new(dst, json_string(val)) ? -1 : 0;
}

/* coldstudy plan power DIR [--pilot RUN...] [--json] */
int cmd_plan(int argc, char **argv)
{
	const char *dir = NULL;
	int json = 0, rc;
	json_t *ids = NULL, *res = NULL;
	cs_err e = {0};

	if (cli_wants_help(argc, argv) || argc < 2)
		return cli_help("plan", stdout, cli_wants_help(argc, argv) ? CS_EXIT_OK : CS_EXIT_USAGE);
	if (strcmp(argv[1], "power"))
		return cli_usage(argv[0], "unknown subcommand '%s' (power)", argv[1]);
	ids = json_array();
	{
		const cli_opt opts[] = {CLI_OPT_FLAG("--json", NULL, &json),
					{.name = "--pilot", .kind = CLI_FN, .dst = ids, .fn = take_pilot,
					 .missing = "--pilot needs run ids", .more = 1},
					CLI_OPT_END};
		const cli_spec spec = {.verb = argv[0], .opts = opts, .first = 2, .pos = &dir,
				       .maxpos = 1, .unknown = CLI_UNEXPECTED};

		if ((rc = cli_args_parse(&spec, argc, argv))) {
			json_decref(ids);
			return rc;
		}
	}
	if (!dir) {
		json_decref(ids);
		return cli_usage(argv[0], "power needs DIR");
	}
	res = json_array();
	if (!(rc = harness_power_verb(dir, ids, res, &e))) /* harness/verbs.c */
		report_power_print(res, json, stdout);
	json_decref(ids);
	json_decref(res);
	return rc ? cli_fail(argv[0], &e) : CS_EXIT_OK;
}
