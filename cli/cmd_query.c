/*
 * cmd_query.c - `coldstudy index query` and `index sweep`: their options
 * parsed (index_args.c), one call each into harness/qcmd.c (the index held,
 * the passes measured, the summary or a row a setting printed), and the
 * exports written through reports/ (--per-query's rows; sweep's --out:
 * PREFIX.csv, PREFIX.jsonl and the recall/QPS front as PREFIX.svg).
 */
#include "cmd_index.h"

#include "guard.h"
#include "report.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* harness_rows_writer: rows as CSV when path ends in .csv, else JSON lines. */
static int write_rows(const json_t *rows, const char *path, const char *option, cs_err *e)
{
	size_t n = strlen(path);
	cs_err we = {0};
	FILE *f = guard_output_fopen(path, "index query", option, e);
	int rc;

	if (!f)
		return e->code ? e->code : CS_EXIT_INTERNAL;
	rc = report_rows_write(rows, n > 4 && !strcmp(path + n - 4, ".csv") ? REPORT_FMT_CSV : REPORT_FMT_JSONL,
			       f, &we);
	if (fclose(f) && !rc)
		rc = cs_err_set(&we, CS_EXIT_INTERNAL, "cannot write");
	return rc ? cs_err_set(e, rc, "%s %s: %s", option, path, we.msg) : 0;
}

int index_query(int argc, char **argv)
{
	qargs a;
	cs_err e = {0};
	int rc;

	if ((rc = index_query_args(argc, argv, &a)))
		return rc;
	rc = harness_index_query(&a, write_rows, stdout, &e);
	free(a.parts);
	return rc ? cli_fail("index", &e) : CS_EXIT_OK;
}

/* sweep's --out: each file asked of the guards, as --trace is. */
static int sweep_files(const char *prefix, const harness_sweep_result *r)
{
	static const char *const ext[] = {".csv", ".jsonl", ".svg"};

	for (int x = 0; x < 3; x++) {
		char path[4200], via[PATH_MAX + 300];
		cs_err e = {0}, we = {0};
		guard_held oh;
		FILE *f;
		int rc;

		snprintf(path, sizeof(path), "%s%s", prefix, ext[x]);
		guard_held_init(&oh);
		if ((rc = guard_output(NULL, NULL, path, 0, "index sweep", "--out", &oh, via, sizeof(via), &e)))
			return cli_fail("index", &e);
		f = guard_output_fopen(via, "index sweep", "--out", &e);
		guard_held_close(&oh);
		if (!f)
			return cli_fail("index", &e);
		rc = x < 2 ? report_rows_write(r->rows, x ? REPORT_FMT_JSONL : REPORT_FMT_CSV, f, &we)
			   : report_front_svg(r->title, r->recalls, r->qps, (const char *const *) r->labels, r->n,
					      f, &we);
		if (fclose(f) && !rc)
			rc = cs_err_set(&we, CS_EXIT_INTERNAL, "cannot write");
		if (rc) {
			fprintf(stderr, "coldstudy index: --out %s: %s\n", path, we.msg);
			return rc;
		}
	}
	return CS_EXIT_OK;
}

/*
 * index sweep DIR --queries SPEC [--gt FILE] --ef-search LIST | --search-probe LIST
 *             [--repeat N] [--warmup W] [--out PREFIX] [--json] [index query's options]
 */
int index_sweep(int argc, char **argv)
{
	harness_sweep_opts w = {0};
	harness_sweep_result r = {0};
	const char *list = NULL;
	char **rest = calloc((size_t) argc + 1, sizeof(char *));
	int nrest = 0, has_repeat = 0, has_warmup = 0, rc;
	uint32_t *vals = NULL;
	qargs a = {0};
	cs_err e = {0};

	if (!rest)
		return CS_EXIT_INTERNAL;
	rest[nrest++] = argv[0];
	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "--ef-search") || !strcmp(argv[i], "--search-probe") ||
		     !strcmp(argv[i], "--out")) && i + 1 < argc) {
			if (!strcmp(argv[i], "--out"))
				w.prefix = argv[++i];
			else if (w.knob) {
				rc = cli_usage("index", "sweep takes one of --ef-search and --search-probe");
				goto out;
			} else {
				w.knob = argv[i];
				list = argv[++i];
			}
			continue;
		}
		has_repeat |= !strcmp(argv[i], "--repeat");
		has_warmup |= !strcmp(argv[i], "--warmup");
		rest[nrest++] = argv[i];
	}
	if ((rc = index_query_args(nrest, rest, &a)))
		goto out;
	if (!w.knob) {
		rc = cli_usage("index", "sweep needs --ef-search LIST or --search-probe LIST");
		goto out;
	}
	if (index_parse_list(list, &vals, &w.nvals) || (!strcmp(w.knob, "--ef-search") && vals[w.nvals - 1] > 1000)) {
		rc = cli_usage("index", "%s wants a list like 10,20,40,80,160, got '%s'", w.knob, list);
		goto out;
	}
	for (size_t i = 0; i < w.nvals; i++)
		if (!vals[i]) {
			rc = cli_usage("index", "%s: 0 is not a setting", w.knob);
			goto out;
		}
	if (a.cold || a.simulate || a.tracefile || a.record || a.per_query) {
		rc = cli_usage("index", "sweep measures warm passes: --cold, --simulate, --trace, "
					"--record-blocks and --per-query are index query's");
		goto out;
	}
	a.repeat = has_repeat ? a.repeat : 5;
	a.warmup = has_warmup ? a.warmup : 1;
	w.vals = vals;
	rc = harness_index_sweep(&a, &w, &r, stdout, &e);
	if (rc == CS_EXIT_USAGE)
		rc = cli_usage("index", "%s", e.msg);
	else if (rc)
		rc = cli_fail("index", &e);
	else if (w.prefix)
		rc = sweep_files(w.prefix, &r);
out:
	harness_sweep_result_free(&r);
	free(vals);
	free(rest);
	free(a.parts);
	return rc;
}
