/*
 * cmd_sweep.c - `coldstudy index sweep`, the ann-benchmarks loop: the
 * queries at each setting of --ef-search or --search-probe, warm, measured
 * by harness/qmeasure.h (untimed warm-up passes, then timed ones), a row a
 * setting printed; --out writes the rows as CSV and JSON lines and the
 * recall/QPS front as SVG.
 */
#include "cmd_index.h"

#include "guard.h"
#include "qmeasure.h"
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * index sweep DIR --queries SPEC [--gt FILE] --ef-search LIST | --search-probe LIST
 *             [--repeat N] [--warmup W] [--out PREFIX] [--json] [index query's options]
 * One row a setting: recall@k, QPS (median of the timed passes, their
 * min..max), latency percentiles over every timed query (cs_quantile),
 * reads a query, the build's seconds and the index's bytes. --out writes
 * PREFIX.csv, PREFIX.jsonl and PREFIX.svg (the recall/QPS front).
 */
int index_sweep(int argc, char **argv)
{
	const char *knob = NULL, *list = NULL, *prefix = NULL;
	char **rest = calloc((size_t) argc + 1, sizeof(char *));
	int nrest = 0, has_repeat = 0, has_warmup = 0, rc, exitc = CS_EXIT_OK;
	uint32_t *vals = NULL;
	size_t nvals = 0;
	qargs a;
	guard_held held;
	harness_qbench b;
	cs_err e = {0};
	double *recalls = NULL, *qmeds = NULL, bsecs;
	long long ibytes;
	char **labels = NULL;
	json_t *rows = json_array();
	const char *idir, *kcol;
	cv_index *ix;

	guard_held_init(&held);
	harness_qbench_init(&b);
	memset(&a, 0, sizeof(a));
	if (!rest || !rows) {
		free(rest);
		json_decref(rows);
		return CS_EXIT_INTERNAL;
	}
	rest[nrest++] = argv[0];
	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "--ef-search") || !strcmp(argv[i], "--search-probe") ||
		     !strcmp(argv[i], "--out")) && i + 1 < argc) {
			if (!strcmp(argv[i], "--out"))
				prefix = argv[++i];
			else if (knob) {
				exitc = cli_usage("index", "sweep takes one of --ef-search and --search-probe");
				goto out;
			} else {
				knob = argv[i];
				list = argv[++i];
			}
			continue;
		}
		has_repeat |= !strcmp(argv[i], "--repeat");
		has_warmup |= !strcmp(argv[i], "--warmup");
		rest[nrest++] = argv[i];
	}
	if ((exitc = index_query_args(nrest, rest, &a)))
		goto out;
	if (!knob) {
		exitc = cli_usage("index", "sweep needs --ef-search LIST or --search-probe LIST");
		goto out;
	}
	if (index_parse_list(list, &vals, &nvals) || (!strcmp(knob, "--ef-search") && vals[nvals - 1] > 1000)) {
		exitc = cli_usage("index", "%s wants a list like 10,20,40,80,160, got '%s'", knob, list);
		goto out;
	}
	for (size_t i = 0; i < nvals; i++)
		if (!vals[i]) {
			exitc = cli_usage("index", "%s: 0 is not a setting", knob);
			goto out;
		}
	if (a.cold || a.simulate || a.tracefile || a.record || a.per_query) {
		exitc = cli_usage("index", "sweep measures warm passes: --cold, --simulate, --trace, "
					   "--record-blocks and --per-query are index query's");
		goto out;
	}
	kcol = !strcmp(knob, "--ef-search") ? "ef_search" : "search_probe";
	if (!has_repeat)
		a.repeat = 5;
	if (!has_warmup)
		a.warmup = 1;
	{
		cs_err ge = {0};

		rc = guard_hold(a.dir, AT_FDCWD, &held, &ge);
		if (!rc && !held.exists)
			rc = cs_err_set(&ge, CS_EXIT_BADINPUT, "%s: does not exist", a.dir);
		if (rc) {
			exitc = cli_fail("index", &ge);
			goto out;
		}
		idir = guard_held_via(&held);
	}
	if ((rc = harness_qbench_open(&b, idir, a.buffers, &e))) {
		exitc = cli_fail("index", &e);
		goto out;
	}
	ix = b.ix;
	if (!strcmp(knob, "--search-probe") != !strcmp(cv_index_kind(ix), "hfresh")) {
		exitc = cli_usage("index", "%s: a %s index's knob is %s", knob, cv_index_kind(ix),
				  strcmp(cv_index_kind(ix), "hfresh") ? "--ef-search" : "--search-probe");
		goto out;
	}
	if ((rc = harness_qbench_load(&b, &(harness_qbench_load_opts){.dir = idir, .shown = a.dir,
				      .queries = a.queries, .nq = a.nq, .data = a.data, .gt = a.gt,
				      .need_base = "sweep", .progress = !a.quiet && isatty(2)},
				      &a.qo, &e)) ||
	    (rc = harness_qbench_io(&b, &(harness_qbench_io_opts){.strategy = a.strategy, .dir = idir,
				    .shown = a.dir}, &a.qo, &e))) {
		exitc = cli_fail("index", &e);
		goto out;
	}
	recalls = calloc(nvals, sizeof(*recalls));
	qmeds = calloc(nvals, sizeof(*qmeds));
	labels = calloc(nvals, sizeof(*labels));
	if (!recalls || !qmeds || !labels) {
		exitc = CS_EXIT_INTERNAL;
		goto out;
	}
	bsecs = harness_index_build_seconds(idir);
	ibytes = harness_index_bytes(idir);
	if (!a.json)
		harness_sweep_print_head(kcol, stdout);
	for (size_t v = 0; v < nvals; v++) {
		harness_qm_opts mo = {.warmup = a.warmup, .repeat = a.repeat};
		harness_qm_result r;
		harness_qm_summary m;
		cv_query_stats st;
		json_t *row;

		if (!strcmp(knob, "--ef-search"))
			a.qo.ef_search = vals[v];
		else
			a.qo.search_probe = vals[v];
		rc = harness_qbench_passes(&b, &a.qo, &mo, &r, &e);
		if (!rc && harness_qm_summarise(&r, &m))
			rc = cs_err_set(&e, CS_EXIT_INTERNAL, "out of memory");
		st = r.st;
		harness_qm_result_free(&r);
		if (rc) {
			if (r.query_failed)
				fprintf(stderr, "coldstudy index: %s %u: %s\n", knob + 2, vals[v], e.msg);
			exitc = r.query_failed ? rc : cli_fail("index", &e);
			goto out;
		}
		recalls[v] = r.recall;
		qmeds[v] = m.qps;
		labels[v] = malloc(32);
		if (labels[v])
			snprintf(labels[v], 32, "%u", vals[v]);
		row = harness_sweep_row(&(harness_sweep_setting){.kcol = kcol, .value = vals[v],
					.k = a.qo.k, .nq = b.nq, .repeat = a.repeat, .build_s = bsecs,
					.index_bytes = ibytes, .kind = cv_index_kind(ix)}, &m, r.recall, &st);
		if (!row) {
			exitc = CS_EXIT_INTERNAL;
			goto out;
		}
		harness_sweep_print_row(row, kcol, a.json, stdout);
		json_array_append_new(rows, row);
	}
	if (!a.json)
		harness_sweep_print_foot(b.nq, a.qo.k, a.repeat, a.warmup, bsecs, ibytes, stdout);
	if (prefix) {
		static const char *const ext[] = {".csv", ".jsonl", ".svg"};

		for (int x = 0; x < 3; x++) {
			char path[4200], via[PATH_MAX + 300], title[160];
			cs_err we = {0};
			guard_held oh;
			FILE *f;

			snprintf(path, sizeof(path), "%s%s", prefix, ext[x]);
			/* each file the sweep writes asks the guards first, as --trace does */
			guard_held_init(&oh);
			if ((rc = guard_output(NULL, NULL, path, 0, "index sweep", "--out", &oh, via,
					       sizeof(via), &we))) {
				exitc = cli_fail("index", &we);
				goto out;
			}
			f = guard_output_fopen(via, "index sweep", "--out", &we);
			guard_held_close(&oh);
			if (!f) {
				exitc = cli_fail("index", &we);
				goto out;
			}
			snprintf(title, sizeof(title), "%s: recall against QPS by %s (k=%zu)",
				 cv_index_kind(ix), kcol, a.qo.k);
			rc = x < 2 ? report_rows_write(rows, x ? REPORT_FMT_JSONL : REPORT_FMT_CSV, f, &we)
				   : report_front_svg(title, recalls, qmeds, (const char *const *) labels,
						      nvals, f, &we);
			if (fclose(f) && !rc)
				rc = cs_err_set(&we, CS_EXIT_INTERNAL, "cannot write");
			if (rc) {
				fprintf(stderr, "coldstudy index: --out %s: %s\n", path, we.msg);
				exitc = rc;
				goto out;
			}
		}
	}
out:
	for (size_t v = 0; labels && v < nvals; v++)
		free(labels[v]);
	free(labels);
	free(recalls);
	free(qmeds);
	free(vals);
	free(rest);
	free(a.parts);
	json_decref(rows);
	harness_qbench_close(&b);
	guard_held_close(&held);
	return exitc;
}
