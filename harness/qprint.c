/*
 * qprint.c - index query's summary of its timed passes: the settings, recall,
 * QPS (the median pass, best and min), latency percentiles, reads, CPU and
 * the buffer pool per query, the virtual time and the kernel's throttle
 * count, as text lines or one JSON object; and index sweep's rows, one a
 * setting of its knob, as a table or JSON lines.
 */
#include "qmeasure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void harness_qbench_print(const harness_qbench *b, const harness_qbench_shown *a,
                          const harness_qm_result *s, const harness_qm_summary *m, FILE *out)
{
	const cv_index *ix = b->ix;
	size_t ntot = m->samples;
	double nq = (double) (ntot ? ntot : 1);
	double lat_mean = m->lat_mean, p50 = m->p50, p90 = m->p90, p95 = m->p95, p99 = m->p99;
	double p999 = m->p999, qps = m->qps, qps_best = m->qps_best, qps_min = m->qps_min;
	double read_ms = cv_hist_mean(&s->io.lat_ns) / 1e6;
	double bpr = s->st.reads ? (double) s->st.bytes / (double) s->st.reads : 0;

	if (a->json) {
		fprintf(out,
		        "{\"kind\":\"%s\",\"queries\":%zu,\"k\":%zu,\"ef_search\":%u,"
		        "\"mode\":\"%s\",\"fanout\":%u,\"merge\":\"%s\",\"strategy\":\"%s\","
		        "\"cold\":%s,\"buffers_bytes\":%llu,\"partitions\":%u,",
		        cv_index_kind(ix), s->nq, a->qo->k, a->qo->ef_search,
		        a->qo->mode == CV_MODE_FANOUT ? "fanout" : "serial", a->qo->fanout,
		        a->qo->merge == CV_MERGE_SORT ? "sort" : "stream",
		        cv_io_strategy_name(a->strategy), a->cold ? "true" : "false",
		        (unsigned long long) a->buffers,
		        a->nparts ? (unsigned) a->nparts : cv_index_partitions(ix));
		if (cv_fanout_via_name(s->st.fanout_via))
			fprintf(out, "\"fanout_via\":\"%s\",",
			        cv_fanout_via_name(s->st.fanout_via));
		else
			fprintf(out, "\"fanout_via\":null,");
		if (b->pool) {
			cv_pool_counts pc;

			/* the session's reader pool: threads started over every pass, warm-up included */
			cv_pool_stats(b->pool, &pc);
			fprintf(out, "\"reader_threads\":%u,", pc.threads);
		} else {
			fprintf(out, "\"reader_threads\":null,");
		}
		if (s->have_recall)
			fprintf(out, "\"recall_at_k\":%.6f,", s->recall);
		else
			fprintf(out, "\"recall_at_k\":null,");
		fprintf(out,
		        "\"repeat\":%zu,\"warmup\":%llu,\"qps_best\":%.3f,\"qps_min\":%.3f,"
		        "\"qps_max\":%.3f,\"qps_passes\":[",
		        s->passes, (unsigned long long) a->warmup, qps_best, qps_min, qps_best);
		for (size_t i = 0; i < s->passes; i++)
			fprintf(out, "%s%.3f", i ? "," : "", s->pass_qps[i]);
		fprintf(out, "],\"lat_samples\":%zu,", ntot);
		fprintf(out, "\"lat_p90_ms\":%.4f,\"lat_p95_ms\":%.4f,\"lat_p999_ms\":%.4f,", p90,
		        p95, p999);
		fprintf(out,
		        "\"wall_s\":%.6f,\"qps\":%.3f,\"lat_mean_ms\":%.4f,\"lat_p50_ms\":%.4f,"
		        "\"lat_p99_ms\":%.4f,\"engine_reads\":%llu,\"reads_per_query\":%.2f,"
		        "\"bytes_per_read\":%.1f,\"engine_read_ms_mean\":%.5f,\"buffer_hits_per_"
		        "query\":%.2f,"
		        "\"heap_reads_per_query\":%.2f,\"posting_reads_per_query\":%.2f,"
		        "\"rescore_reads_per_query\":%.2f,\"distances_per_query\":%.1f,"
		        "\"inflight_max\":%llu,\"cpu_ms_per_query\":%.3f,\"cpu_us_per_read\":%.2f,"
		        "\"user_us_per_read\":%.2f,\"sys_us_per_read\":%.2f,\"inflight_mean\":%.2f",
		        s->wall_s, qps, lat_mean, p50, p99, (unsigned long long) s->st.reads,
		        (double) s->st.reads / nq, bpr, read_ms, (double) s->st.buffer_hits / nq,
		        (double) s->st.heap_reads / nq, (double) s->st.posting_reads / nq,
		        (double) s->st.rescore_reads / nq, (double) s->st.distances / nq,
		        (unsigned long long) s->io.inflight_max, s->cpu_s * 1e3 / nq,
		        s->st.reads ? s->cpu_s * 1e6 / (double) s->st.reads : 0.0,
		        s->st.reads ? s->user_s * 1e6 / (double) s->st.reads : 0.0,
		        s->st.reads ? s->sys_s * 1e6 / (double) s->st.reads : 0.0,
		        cv_hist_mean(&s->io.inflight));
		if (b->index_rss_kb >= 0)
			fprintf(out, ",\"index_rss_kb\":%ld", b->index_rss_kb);
		else
			fprintf(out, ",\"index_rss_kb\":null");
		if (cv_index_storage(ix))
			fprintf(out, ",\"vector_storage\":\"%s\"", cv_index_storage(ix));
		else
			fprintf(out, ",\"vector_storage\":null");
		if (a->simulate)
			fprintf(out,
			        ",\"simulate\":\"%s\",\"sim_lat_mean_ms\":%.3f,\"sim_read_ms_"
			        "mean\":%.3f,"
			        "\"sim_inflight_mean\":%.3f,\"sim_reads_per_query\":%.2f",
			        a->simulate, s->sim_ms / nq, s->sim_read_ms, s->sim_inflight,
			        (double) s->sim_reads / nq);
		if (b->throttle) {
			char *t = json_dumps(b->throttle, JSON_COMPACT | JSON_SORT_KEYS);

			fprintf(out, ",\"throttle\":%s", t ? t : "null");
			free(t);
		}
		fprintf(out, "}\n");
		return;
	}
	fprintf(out, "kind %s, %zu queries, k=%zu, ef_search=%u, mode %s", cv_index_kind(ix), s->nq,
	        a->qo->k, a->qo->ef_search, a->qo->mode == CV_MODE_FANOUT ? "fanout" : "serial");
	if (a->qo->mode == CV_MODE_FANOUT)
		fprintf(out, ":%u", a->qo->fanout);
	if (cv_fanout_via_name(s->st.fanout_via))
		fprintf(out, " via %s", cv_fanout_via_name(s->st.fanout_via));
	fprintf(out, ", merge %s, strategy %s%s", a->qo->merge == CV_MERGE_SORT ? "sort" : "stream",
	        cv_io_strategy_name(a->strategy), a->cold ? ", cold" : "");
	if (cv_index_storage(ix))
		fprintf(out, ", vectors %s", cv_index_storage(ix));
	fprintf(out, "\n");
	if (s->have_recall)
		fprintf(out, "recall@%zu        %.4f\n", a->qo->k, s->recall);
	else
		fprintf(out, "recall@%zu        n/a (no --gt and no data spec)\n", a->qo->k);
	if (s->passes > 1)
		fprintf(
		    out,
		    "QPS              %.2f median of %zu passes (best %.2f, min %.2f; %llu warm-up "
		    "passes untimed)\n",
		    qps, s->passes, qps_best, qps_min, (unsigned long long) a->warmup);
	else
		fprintf(out, "QPS              %.2f\n", qps);
	fprintf(out,
	        "latency ms       mean %.3f  p50 %.3f  p90 %.3f  p95 %.3f  p99 %.3f  p99.9 %.3f "
	        "(%zu queries)\n",
	        lat_mean, p50, p90, p95, p99, p999, ntot);
	fprintf(
	    out,
	    "reads/query      %.1f (%.0f bytes per read, mean read %.4f ms, max in flight %llu)\n",
	    (double) s->st.reads / nq, bpr, read_ms, (unsigned long long) s->io.inflight_max);
	fprintf(out, "cpu/query        %.3f ms (%.2f us per read: user %.2f, system %.2f)\n",
	        s->cpu_s * 1e3 / nq, s->st.reads ? s->cpu_s * 1e6 / (double) s->st.reads : 0.0,
	        s->st.reads ? s->user_s * 1e6 / (double) s->st.reads : 0.0,
	        s->st.reads ? s->sys_s * 1e6 / (double) s->st.reads : 0.0);
	fprintf(out, "buffer hits/q    %.1f\n", (double) s->st.buffer_hits / nq);
	fprintf(out, "heap reads/q     %.2f\n", (double) s->st.heap_reads / nq);
	fprintf(out, "posting reads/q  %.2f\n", (double) s->st.posting_reads / nq);
	fprintf(out, "rescore reads/q  %.2f\n", (double) s->st.rescore_reads / nq);
	if (a->simulate)
		fprintf(out,
		        "virtual time     %s: %.2f ms per query, read %.3f ms, %.2f in flight\n",
		        a->simulate, s->sim_ms / nq, s->sim_read_ms, s->sim_inflight);
	if (b->throttle)
		fprintf(
		    out,
		    "throttle         %s on %s (%s): the kernel counted %lld reads, the engine "
		    "%llu\n",
		    json_string_value(json_object_get(b->throttle, "cap")),
		    json_string_value(json_object_get(b->throttle, "disk")),
		    json_string_value(json_object_get(b->throttle, "controller")),
		    (long long) json_integer_value(json_object_get(b->throttle, "throttle_reads")),
		    (unsigned long long) s->st.reads);
}

json_t *harness_sweep_row(const harness_sweep_setting *w, const harness_qm_summary *m, double recall,
			  const cv_query_stats *st)
{
	json_t *row = json_pack(
		"{s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", w->kcol,
		(json_int_t) w->value, "k", (json_int_t) w->k, "queries", (json_int_t) w->nq, "repeat",
		(json_int_t) w->repeat, "recall_at_k", recall, "qps", m->qps, "qps_min", m->qps_min,
		"qps_max", m->qps_best, "lat_p50_ms", m->p50, "lat_p90_ms", m->p90, "lat_p95_ms", m->p95,
		"lat_p99_ms", m->p99, "lat_p999_ms", m->p999, "reads_per_query",
		(double) st->reads / (double) (w->nq * w->repeat));

	if (!row)
		return NULL;
	json_object_set_new(row, "build_s", isfinite(w->build_s) ? json_real(w->build_s) : json_null());
	json_object_set_new(row, "index_bytes",
			    w->index_bytes >= 0 ? json_integer(w->index_bytes) : json_null());
	json_object_set_new(row, "kind", json_string(w->kind));
	return row;
}

void harness_sweep_print_head(const char *kcol, FILE *out)
{
	fprintf(out, "%-13s %9s %10s %21s %9s %9s %9s %9s %9s %9s\n", kcol, "recall", "QPS",
		"(min..max)", "p50 ms", "p90 ms", "p95 ms", "p99 ms", "p99.9 ms", "reads/q");
}

static double num(const json_t *row, const char *key)
{
	return json_number_value(json_object_get(row, key));
}

void harness_sweep_print_row(const json_t *row, const char *kcol, int json, FILE *out)
{
	char mm[64];

	if (json) {
		json_dumpf(row, out, JSON_COMPACT | JSON_PRESERVE_ORDER);
		fputc('\n', out);
	} else {
		snprintf(mm, sizeof(mm), "(%.1f..%.1f)", num(row, "qps_min"), num(row, "qps_max"));
		fprintf(out, "%-13u %9.4f %10.1f %21s %9.4f %9.4f %9.4f %9.4f %9.4f %9.1f\n",
			(unsigned) json_integer_value(json_object_get(row, kcol)), num(row, "recall_at_k"),
			num(row, "qps"), mm, num(row, "lat_p50_ms"), num(row, "lat_p90_ms"),
			num(row, "lat_p95_ms"), num(row, "lat_p99_ms"), num(row, "lat_p999_ms"),
			num(row, "reads_per_query"));
	}
	fflush(out);
}

void harness_sweep_print_foot(size_t nq, size_t k, uint64_t repeat, uint64_t warmup, double build_s,
			      long long index_bytes, FILE *out)
{
	char bs[32];

	snprintf(bs, sizeof(bs), isfinite(build_s) ? "%.1f s" : "n/a (no BUILD)", build_s);
	fprintf(out,
		"%zu queries, k=%zu, %llu timed passes a setting after %llu warm-up; build %s, "
		"index %lld bytes\n",
		nq, k, (unsigned long long) repeat, (unsigned long long) warmup, bs, index_bytes);
}
