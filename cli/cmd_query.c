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

static void print_summary(const qargs *a, const cv_index *ix, const harness_qbench *b,
			  const harness_qm_result *s, const harness_qm_summary *m)
{
	size_t ntot = m->samples;
	double nq = (double) (ntot ? ntot : 1);
	double lat_mean = m->lat_mean, p50 = m->p50, p90 = m->p90, p95 = m->p95, p99 = m->p99;
	double p999 = m->p999, qps = m->qps, qps_best = m->qps_best, qps_min = m->qps_min;
	double read_ms = cv_hist_mean(&s->io.lat_ns) / 1e6;
	double bpr = s->st.reads ? (double) s->st.bytes / (double) s->st.reads : 0;

	if (a->json) {
		printf("{\"kind\":\"%s\",\"queries\":%zu,\"k\":%zu,\"ef_search\":%u,"
		       "\"mode\":\"%s\",\"fanout\":%u,\"merge\":\"%s\",\"strategy\":\"%s\","
		       "\"cold\":%s,\"buffers_bytes\":%llu,\"partitions\":%u,",
		       cv_index_kind(ix), s->nq, a->qo.k, a->qo.ef_search,
		       a->qo.mode == CV_MODE_FANOUT ? "fanout" : "serial", a->qo.fanout,
		       a->qo.merge == CV_MERGE_SORT ? "sort" : "stream", cv_io_strategy_name(a->strategy),
		       a->cold ? "true" : "false", (unsigned long long) a->buffers,
		       a->nparts ? (unsigned) a->nparts : cv_index_partitions(ix));
		if (cv_fanout_via_name(s->st.fanout_via))
			printf("\"fanout_via\":\"%s\",", cv_fanout_via_name(s->st.fanout_via));
		else
			printf("\"fanout_via\":null,");
		if (s->have_recall)
			printf("\"recall_at_k\":%.6f,", s->recall);
		else
			printf("\"recall_at_k\":null,");
		printf("\"repeat\":%zu,\"warmup\":%llu,\"qps_best\":%.3f,\"qps_min\":%.3f,"
		       "\"qps_max\":%.3f,\"qps_passes\":[",
		       s->passes, (unsigned long long) a->warmup, qps_best, qps_min, qps_best);
		for (size_t i = 0; i < s->passes; i++)
			printf("%s%.3f", i ? "," : "", s->pass_qps[i]);
		printf("],\"lat_samples\":%zu,", ntot);
		printf("\"lat_p90_ms\":%.4f,\"lat_p95_ms\":%.4f,\"lat_p999_ms\":%.4f,", p90, p95, p999);
		printf("\"wall_s\":%.6f,\"qps\":%.3f,\"lat_mean_ms\":%.4f,\"lat_p50_ms\":%.4f,"
		       "\"lat_p99_ms\":%.4f,\"engine_reads\":%llu,\"reads_per_query\":%.2f,"
		       "\"bytes_per_read\":%.1f,\"engine_read_ms_mean\":%.5f,\"buffer_hits_per_query\":%.2f,"
		       "\"heap_reads_per_query\":%.2f,\"posting_reads_per_query\":%.2f,"
		       "\"rescore_reads_per_query\":%.2f,\"distances_per_query\":%.1f,"
		       "\"inflight_max\":%llu,\"cpu_ms_per_query\":%.3f,\"cpu_us_per_read\":%.2f,"
		       "\"user_us_per_read\":%.2f,\"sys_us_per_read\":%.2f,\"inflight_mean\":%.2f",
		       s->wall_s, qps, lat_mean, p50, p99,
		       (unsigned long long) s->st.reads, (double) s->st.reads / nq, bpr, read_ms,
		       (double) s->st.buffer_hits / nq, (double) s->st.heap_reads / nq,
		       (double) s->st.posting_reads / nq, (double) s->st.rescore_reads / nq,
		       (double) s->st.distances / nq, (unsigned long long) s->io.inflight_max,
		       s->cpu_s * 1e3 / nq, s->st.reads ? s->cpu_s * 1e6 / (double) s->st.reads : 0.0,
		       s->st.reads ? s->user_s * 1e6 / (double) s->st.reads : 0.0,
		       s->st.reads ? s->sys_s * 1e6 / (double) s->st.reads : 0.0,
		       cv_hist_mean(&s->io.inflight));
		if (b->index_rss_kb >= 0)
			printf(",\"index_rss_kb\":%ld", b->index_rss_kb);
		else
			printf(",\"index_rss_kb\":null");
		if (cv_index_storage(ix))
			printf(",\"vector_storage\":\"%s\"", cv_index_storage(ix));
		else
			printf(",\"vector_storage\":null");
		if (a->simulate)
			printf(",\"simulate\":\"%s\",\"sim_lat_mean_ms\":%.3f,\"sim_read_ms_mean\":%.3f,"
			       "\"sim_inflight_mean\":%.3f,\"sim_reads_per_query\":%.2f",
			       a->simulate, s->sim_ms / nq, s->sim_read_ms, s->sim_inflight,
			       (double) s->sim_reads / nq);
		if (b->throttle) {
			char *t = json_dumps(b->throttle, JSON_COMPACT | JSON_SORT_KEYS);

			printf(",\"throttle\":%s", t ? t : "null");
			free(t);
		}
		printf("}\n");
		return;
	}
	printf("kind %s, %zu queries, k=%zu, ef_search=%u, mode %s", cv_index_kind(ix), s->nq,
	       a->qo.k, a->qo.ef_search, a->qo.mode == CV_MODE_FANOUT ? "fanout" : "serial");
	if (a->qo.mode == CV_MODE_FANOUT)
		printf(":%u", a->qo.fanout);
	if (cv_fanout_via_name(s->st.fanout_via))
		printf(" via %s", cv_fanout_via_name(s->st.fanout_via));
	printf(", merge %s, strategy %s%s", a->qo.merge == CV_MERGE_SORT ? "sort" : "stream",
	       cv_io_strategy_name(a->strategy), a->cold ? ", cold" : "");
	if (cv_index_storage(ix))
		printf(", vectors %s", cv_index_storage(ix));
	printf("\n");
	if (s->have_recall)
		printf("recall@%zu        %.4f\n", a->qo.k, s->recall);
	else
		printf("recall@%zu        n/a (no --gt and no data spec)\n", a->qo.k);
	if (s->passes > 1)
		printf("QPS              %.2f median of %zu passes (best %.2f, min %.2f; %llu warm-up "
		       "passes untimed)\n",
		       qps, s->passes, qps_best, qps_min, (unsigned long long) a->warmup);
	else
		printf("QPS              %.2f\n", qps);
	printf("latency ms       mean %.3f  p50 %.3f  p90 %.3f  p95 %.3f  p99 %.3f  p99.9 %.3f "
	       "(%zu queries)\n",
	       lat_mean, p50, p90, p95, p99, p999, ntot);
	printf("reads/query      %.1f (%.0f bytes per read, mean read %.4f ms, max in flight %llu)\n",
	       (double) s->st.reads / nq, bpr, read_ms, (unsigned long long) s->io.inflight_max);
	printf("cpu/query        %.3f ms (%.2f us per read: user %.2f, system %.2f)\n",
	       s->cpu_s * 1e3 / nq, s->st.reads ? s->cpu_s * 1e6 / (double) s->st.reads : 0.0,
	       s->st.reads ? s->user_s * 1e6 / (double) s->st.reads : 0.0,
	       s->st.reads ? s->sys_s * 1e6 / (double) s->st.reads : 0.0);
	printf("buffer hits/q    %.1f\n", (double) s->st.buffer_hits / nq);
	printf("heap reads/q     %.2f\n", (double) s->st.heap_reads / nq);
	printf("posting reads/q  %.2f\n", (double) s->st.posting_reads / nq);
	printf("rescore reads/q  %.2f\n", (double) s->st.rescore_reads / nq);
	if (a->simulate)
		printf("virtual time     %s: %.2f ms per query, read %.3f ms, %.2f in flight\n",
		       a->simulate, s->sim_ms / nq, s->sim_read_ms, s->sim_inflight);
	if (b->throttle)
		printf("throttle         %s on %s (%s): the kernel counted %lld reads, the engine %llu\n",
		       json_string_value(json_object_get(b->throttle, "cap")),
		       json_string_value(json_object_get(b->throttle, "disk")),
		       json_string_value(json_object_get(b->throttle, "controller")),
		       (long long) json_integer_value(json_object_get(b->throttle, "throttle_reads")),
		       (unsigned long long) s->st.reads);
}

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
	print_summary(&a, b.ix, &b, &s, &m);
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
