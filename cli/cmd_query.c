/*
 * cmd_query.c - `coldstudy index query DIR --queries SPEC [...]`: the
 * index and its outputs resolved through the guards, the passes measured
 * by harness/qmeasure.h (warm or cold, serial or fanned out, on any read
 * strategy and device model, under a real cap), then the summary printed:
 * recall, QPS, latency percentiles, reads and CPU per query, as text or
 * one JSON object; --per-query and --record-blocks write their files.
 */
#include "cmd_index.h"

#include "guard.h"
#include "qmeasure.h"
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * --per-query FILE: one row a timed query: pass, q (its row in the query
 * set), lat_real_ms, reads, recall (null without a truth). CSV when FILE
 * ends in .csv, else JSON lines. 0 or an exit code (message printed).
 */
static int write_per_query(const char *path, const harness_qm_result *s)
{
	size_t n = strlen(path);
	json_t *rows = json_array();
	cs_err e = {0};
	FILE *f;
	int rc;

	if (!rows)
		return CS_EXIT_INTERNAL;
	for (size_t p = 0; p < s->passes; p++)
		for (size_t i = 0; i < s->nq; i++)
			json_array_append_new(rows, json_pack("{s:I, s:I, s:f, s:I, s:o}", "pass", (json_int_t) p,
							      "q", (json_int_t) i, "lat_real_ms",
							      s->lat_ms[p * s->nq + i], "reads",
							      (json_int_t) s->q_reads[p * s->nq + i], "recall",
							      isfinite(s->q_recall[i]) ? json_real(s->q_recall[i])
										  : json_null()));
	f = guard_output_fopen(path, "index query", "--per-query", &e);
	if (!f) {
		json_decref(rows);
		return cli_fail("index", &e);
	}
	rc = report_rows_write(rows, n > 4 && !strcmp(path + n - 4, ".csv") ? REPORT_FMT_CSV
									 : REPORT_FMT_JSONL,
			       f, &e);
	if (fclose(f) && !rc)
		rc = cs_err_set(&e, CS_EXIT_INTERNAL, "cannot write");
	json_decref(rows);
	if (rc)
		fprintf(stderr, "coldstudy index: --per-query %s: %s\n", path, e.msg);
	return rc;
}

/*
 * The index is resolved once and read through the hold. A cold query
 * evicts, so a production index is refused there; warm reads are allowed.
 * What the query writes (--trace, --record-blocks, --per-query, the ground
 * truth's cache) asks the guards first; the paths become the held ones.
 */
static int hold_paths(qargs *a, guard_held *held, guard_held outs[3], char via[3][PATH_MAX + 300])
{
	cs_err ge = {0};
	const char *cvia;
	int rc;

	rc = a->cold ? guard_existing(NULL, NULL, a->dir, AT_FDCWD, "index query --cold", "index", held,
				      &ge)
		     : guard_hold(a->dir, AT_FDCWD, held, &ge);
	if (!rc && !held->exists) {
		guard_held_close(held);
		rc = cs_err_set(&ge, CS_EXIT_BADINPUT, "%s: does not exist", a->dir);
	}
	if (rc)
		return cli_fail("index", &ge);
	if ((a->tracefile &&
	     (rc = guard_output(NULL, NULL, a->tracefile, 0, "index query", "--trace", &outs[0], via[0],
				sizeof(via[0]), &ge))) ||
	    (a->record &&
	     (rc = guard_output(NULL, NULL, a->record, 0, "index query", "--record-blocks", &outs[1],
				via[1], sizeof(via[1]), &ge))) ||
	    (a->per_query &&
	     (rc = guard_output(NULL, NULL, a->per_query, 0, "index query", "--per-query", &outs[2],
				via[2], sizeof(via[2]), &ge))) ||
	    (!a->gt && (rc = guard_cache_dir(NULL, NULL, NULL, "index query", &cvia, &ge)))) {
		guard_held_close(held);
		return cli_fail("index", &ge);
	}
	if (a->tracefile)
		a->tracefile = via[0];
	if (a->record)
		a->record = via[1];
	if (a->per_query)
		a->per_query = via[2];
	return 0;
}

int index_query(int argc, char **argv)
{
	qargs a;
	harness_qbench b;
	harness_qm_result s = {0};
	harness_qm_summary m;
	harness_qm_opts mo = {0};
	harness_cap cap;
	cv_block_list bl = {0};
	guard_held held, outs[3];
	char via[3][PATH_MAX + 300];
	const char *idir;
	cs_err e = {0};
	int rc, exitc = CS_EXIT_OK;

	harness_qbench_init(&b);
	for (int i = 0; i < 3; i++)
		guard_held_init(&outs[i]);
	if ((rc = index_query_args(argc, argv, &a)))
		return rc;
	if (a.throttle && harness_cap_parse(a.throttle, &cap, &e)) {
		free(a.parts);
		fprintf(stderr, "coldstudy index: --throttle: %s\n", e.msg);
		return e.code;
	}
	if ((rc = hold_paths(&a, &held, outs, via))) {
		for (int i = 0; i < 3; i++)
			guard_held_close(&outs[i]);
		free(a.parts);
		return rc;
	}
	idir = guard_held_via(&held);
	a.qo.partitions = a.parts;
	a.qo.npartitions = a.nparts;
	a.qo.blocks = a.record ? &bl : NULL;
	mo.warmup = a.warmup;
	mo.repeat = a.repeat;
	mo.cold = a.cold;
	mo.cpu = mo.rss = 1;
	mo.trace_path = a.tracefile;
	mo.per_query = a.per_query != NULL;
	mo.progress = !a.quiet && isatty(2) ? a.dir : NULL;
	if ((rc = harness_qbench_open(&b, idir, a.buffers, &e)) ||
	    (rc = harness_qbench_load(&b, &(harness_qbench_load_opts){.dir = idir, .shown = a.dir,
				      .queries = a.queries, .nq = a.nq, .data = a.data, .gt = a.gt,
				      .progress = !a.quiet && isatty(2)}, &a.qo, &e)) ||
	    (rc = harness_qbench_io(&b, &(harness_qbench_io_opts){.strategy = a.strategy,
				    .device = a.device, .simulate = a.simulate, .trace = !!a.tracefile,
				    .files = a.cold || a.record, .dir = idir, .shown = a.dir,
				    .cap = a.throttle ? &cap : NULL, .held_fd = held.fd}, &a.qo, &e)) ||
	    (rc = harness_qbench_passes(&b, &a.qo, &mo, &s, &e)) ||
	    (rc = harness_qm_summarise(&s, &m) ? cs_err_set(&e, CS_EXIT_INTERNAL, "out of memory") : 0)) {
		exitc = cli_fail("index", &e);
		goto out;
	}
	if (a.per_query && (rc = write_per_query(a.per_query, &s))) {
		exitc = rc;
		goto out;
	}
	harness_qbench_print(&b, &(harness_qbench_shown){.qo = &a.qo, .strategy = a.strategy,
			     .cold = a.cold, .json = a.json, .buffers = a.buffers, .warmup = a.warmup,
			     .nparts = a.nparts, .simulate = a.simulate}, &s, &m, stdout);
	if (a.record && (rc = harness_blocks_write(a.record, &bl, b.files, b.nfiles))) {
		fprintf(stderr, "coldstudy index: %s: cannot write block lists: %s\n",
			cli_spell(a.record), strerror(-rc));
		exitc = rc == -EPERM ? CS_EXIT_REFUSED : CS_EXIT_INTERNAL;
	}
out:
	free(bl.file);
	free(bl.block);
	free(a.parts);
	harness_qm_result_free(&s);
	harness_qbench_close(&b);
	guard_held_close(&held);
	for (int i = 0; i < 3; i++)
		guard_held_close(&outs[i]);
	return exitc;
}
