/*
 * cmd_schema.c - `coldstudy schema KIND [--check FILE...]`: the JSON
 * Schema of hypothesis files, study.json and run.json, built from the
 * validators' key tables (--check runs the validator itself on files),
 * and of one row of each export (runs, queries, series). Argument
 * parsing only: the tables are in hypotheses/, harness/ and reports/.
 */
#include "cmds.h"

#include "harness.h"
#include "hyp.h"
#include "report.h"
#include "verbs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kinds[] = {"hypothesis", "study", "run", "runs", "queries", "series", NULL};

int cmd_schema(int argc, char **argv)
{
	const char *kind = NULL;
	int check = 0, rc = CS_EXIT_OK, nfiles = 0;
	json_t *s;

	if (cli_wants_help(argc, argv))
		return cli_help("schema", stdout, CS_EXIT_OK);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--check")) {
			check = 1;
		} else if (argv[i][0] == '-') {
			return cli_usage(argv[0], "unknown option '%s'", argv[i]);
		} else if (!kind) {
			for (size_t k = 0; kinds[k]; k++)
				if (!strcmp(argv[i], kinds[k]))
					kind = kinds[k];
			if (!kind)
				return cli_usage(argv[0],
						 "unknown kind '%s' (hypothesis, study, run, runs, queries, "
						 "series)",
						 argv[i]);
		} else if (check) {
			cs_err e = {0};

			nfiles++;
			if (harness_schema_check(kind, argv[i], &e)) {
				fprintf(stderr, "%s\n", e.msg);
				rc = e.code ? e.code : CS_EXIT_INTERNAL;
			} else {
				printf("%s: ok\n", argv[i]);
			}
		} else {
			return cli_usage(argv[0], "unexpected argument '%s'", argv[i]);
		}
	}
	if (!kind)
		return cli_usage(argv[0], "which schema: hypothesis, study, run, runs, queries or series");
	if (check && (!strcmp(kind, "runs") || !strcmp(kind, "queries") || !strcmp(kind, "series")))
		return cli_usage(argv[0], "--check takes hypothesis, study or run files");
	if (check) {
		if (!nfiles)
			return cli_usage(argv[0], "--check needs files");
		return rc;
	}
	s = !strcmp(kind, "hypothesis") ? hyp_schema()
	    : !strcmp(kind, "study")    ? harness_study_schema()
	    : !strcmp(kind, "run")      ? harness_run_schema()
					: report_export_schema(kind);
	if (!s || json_dumpf(s, stdout, JSON_INDENT(2))) {
		json_decref(s);
		fprintf(stderr, "coldstudy schema: out of memory\n");
		return CS_EXIT_INTERNAL;
	}
	putchar('\n');
	json_decref(s);
	return CS_EXIT_OK;
}
