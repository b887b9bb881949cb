/*
 * qmeasure.c - timing queries: one query between the clocks, passes over a
 * query set, their summary.
 *
 * A pass runs the queries one after another on one reader. Before each
 * query a cold pass evicts every file of the index from the page cache and
 * empties the buffer pool (as the seed's cold runs did), and a trace is
 * cleared, so it holds that query's reads only. The wall clock is read
 * right around the engine's call; the CPU clocks, when asked, outside it,
 * so their cost is not in the latency. Untimed warm-up passes come first
 * and count nothing (their counters go to a scratch struct).
 */
#include "qmeasure.h"

#include "harness_int.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* User and system CPU of the process so far, in ns each. */
static void cpu_split(uint64_t *user, uint64_t *sys)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*user = (uint64_t) ru.ru_utime.tv_sec * 1000000000ull + (uint64_t) ru.ru_utime.tv_usec * 1000u;
	*sys = (uint64_t) ru.ru_stime.tv_sec * 1000000000ull + (uint64_t) ru.ru_stime.tv_usec * 1000u;
}

/* CPU time (user + system) of the process in ns (a query's helper threads count): robust to load. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

int harness_cv_fail(cs_err *e, int rc, const cv_err *ce)
{
	return cs_err_set(e, cs_exit_from_errno(rc), "%s", ce && ce->msg[0] ? ce->msg : strerror(-rc));
}

long harness_rss_anon_kb(void)
{
	return cs_proc_field("/proc/self/status", "RssAnon:");
}

int harness_qm_one(cv_index *ix, cv_io *io, const float *q, const cv_query_opts *qo, uint32_t *ids,
		   float *dists, cv_query_stats *st, int cpu, harness_qm_sample *s)
{
	uint64_t c0 = 0, c1 = 0, u0 = 0, u1 = 0, k0 = 0, k1 = 0;
	int rc;

	s->nout = 0;
	if (cpu) {
		cpu_split(&u0, &k0);
		c0 = cpu_ns();
	}
	s->t0_ns = cs_mono_ns();
	rc = cv_index_query(ix, io, q, qo, ids, dists, &s->nout, st);
	s->t1_ns = cs_mono_ns();
	if (cpu) {
		c1 = cpu_ns();
		cpu_split(&u1, &k1);
	}
	s->cpu_ns = c1 - c0;
	s->user_ns = u1 - u0;
	s->sys_ns = k1 - k0;
	return rc;
}

void harness_qm_result_free(harness_qm_result *r)
{
	if (!r)
		return;
	free(r->lat_ms);
	free(r->pass_qps);
	free(r->q_reads);
	free(r->q_recall);
	r->lat_ms = r->pass_qps = r->q_recall = NULL;
	r->q_reads = NULL;
}

/*
 * Before a query of a cold pass: the buffer pool empty and no page of the
 * index mapped here (a mapped page is not evicted), then every file evicted.
 */
static int make_cold(cv_index *ix, const harness_qm_opts *o, cs_err *e)
{
	cv_index_drop_buffers(ix);
	for (size_t f = 0; f < o->nfiles; f++) {
		int rc = cv_cache_evict(o->files[f]);

		if (rc)
			return cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot evict: %s", o->files[f],
					  strerror(-rc));
	}
	return 0;
}

/* After a timed query: its trace saved (PATH, or PATH.N of several), its reads replayed. */
static int after_query(const harness_qm_opts *o, size_t nq, size_t i, harness_qm_result *r,
		       double *sim_read_sum, double *sim_infl_sum, cs_err *e)
{
	int rc;

	if (o->trace_path) {
		char tpath[4200];
		cv_err ce = {{0}};

		if (nq == 1)
			snprintf(tpath, sizeof(tpath), "%s", o->trace_path);
		else
			snprintf(tpath, sizeof(tpath), "%s.%zu", o->trace_path, i);
		if ((rc = cv_trace_save(o->trace, tpath, &ce)))
			return harness_cv_fail(e, rc, &ce);
	}
	if (o->simdev) {
		cv_sim_result s;

		if ((rc = cv_device_simulate(o->simdev, o->trace, i + 1, &s)))
			return cs_err_set(e, CS_EXIT_INTERNAL, "simulate: %s", strerror(-rc));
		r->sim_ms += s.wall_ms;
		r->sim_reads += s.reads;
		*sim_read_sum += s.read_ms_mean * (double) s.reads;
		*sim_infl_sum += s.inflight_mean * s.wall_ms;
	}
	return 0;
}

int harness_qm_passes(cv_index *ix, cv_io *io, const cv_dataset *qs, size_t nq,
		      const cv_query_opts *qo, const harness_qm_opts *o, harness_qm_result *r,
		      cs_err *e)
{
	size_t ntot = nq && o->repeat ? nq * o->repeat : 1;
	uint32_t *ids = calloc(qo->k, sizeof(*ids));
	float *dists = calloc(qo->k, sizeof(*dists));
	double sim_read_sum = 0, sim_infl_sum = 0;
	uint64_t prog_t0, prog_last;
	long rss2 = -1, rss3;
	int rc = CS_EXIT_INTERNAL;

	memset(r, 0, sizeof(*r));
	r->nq = nq;
	r->rss_passes_kb = -1;
	r->lat_ms = calloc(ntot, sizeof(double));
	r->pass_qps = calloc(o->repeat ? o->repeat : 1, sizeof(double));
	if (o->per_query) {
		r->q_recall = malloc((nq ? nq : 1) * sizeof(*r->q_recall));
		r->q_reads = calloc(ntot, sizeof(*r->q_reads));
		for (size_t i = 0; r->q_recall && i < nq; i++)
			r->q_recall[i] = NAN;
	}
	if (!ids || !dists || !r->lat_ms || !r->pass_qps || (o->per_query && (!r->q_recall || !r->q_reads))) {
		cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	/*
	 * What the passes add to the resident memory (scratch, buffer pools):
	 * malloc_trim first returns freed heap pages (a ground truth's), so the
	 * passes cannot reuse resident pages unseen. Anonymous pages only: the
	 * page cache a pread or mmap index is read from is the kernel's.
	 */
	if (o->rss) {
		malloc_trim(0);
		rss2 = harness_rss_anon_kb();
	}
	prog_t0 = prog_last = cv_progress_start();
	for (uint64_t pass = 0; pass < o->warmup + o->repeat; pass++) {
		int timed = pass >= o->warmup, first = pass == o->warmup;
		double *lat = timed ? r->lat_ms + (pass - o->warmup) * nq : NULL;
		double pass_s = 0;
		cv_query_stats wst = {0};

		if (first)
			cv_io_stats_reset(io);
		for (size_t i = 0; i < nq; i++) {
			harness_qm_sample s;
			uint64_t reads0 = r->st.reads;

			if (o->cold && (rc = make_cold(ix, o, e)))
				goto out;
			if (o->trace)
				cv_trace_clear(o->trace);
			rc = harness_qm_one(ix, io, cv_row(qs, i), qo, ids, dists, timed ? &r->st : &wst,
					    o->cpu, &s);
			if (rc) {
				r->query_failed = 1;
				rc = cs_err_set(e, cs_exit_from_errno(rc), "query %zu: %s", i, strerror(-rc));
				goto out;
			}
			if (o->progress && s.t1_ns - prog_last > 200000000u) {
				prog_last = s.t1_ns;
				cv_progress("querying", o->progress, pass * nq + i + 1,
					    (o->warmup + o->repeat) * nq, prog_t0);
			}
			if (!timed)
				continue;
			lat[i] = (double) (s.t1_ns - s.t0_ns) / 1e6;
			if (r->q_reads)
				r->q_reads[(pass - o->warmup) * nq + i] = r->st.reads - reads0;
			pass_s += (double) (s.t1_ns - s.t0_ns) / 1e9;
			r->cpu_s += (double) s.cpu_ns / 1e9;
			r->user_s += (double) s.user_ns / 1e9;
			r->sys_s += (double) s.sys_ns / 1e9;
			if (first && o->gt && o->base) {
				double rec = cv_recall_at_k(o->base, cv_row(qs, i), o->metric,
							    o->gt + i * qo->k, qo->k, ids, s.nout);

				/* NaN: the truth left the base (checked at load; never averaged in) */
				if (isnan(rec)) {
					rc = cs_err_set(e, CS_EXIT_BADINPUT, "query %zu: the ground truth names a "
							"row outside the base (%zu rows)", i, o->base->n);
					goto out;
				}
				r->recall += rec;
				r->have_recall = 1;
				if (r->q_recall)
					r->q_recall[i] = rec;
			}
			if ((rc = after_query(o, nq, i, r, &sim_read_sum, &sim_infl_sum, e)))
				goto out;
		}
		if (timed) {
			r->wall_s += pass_s;
			r->pass_qps[r->passes++] = pass_s > 0 ? (double) nq / pass_s : 0;
		}
	}
	if (o->progress && prog_last != prog_t0)
		cv_progress("querying", o->progress, (o->warmup + o->repeat) * nq,
			    (o->warmup + o->repeat) * nq, prog_t0);
	if (o->rss) {
		rss3 = harness_rss_anon_kb();
		if (rss2 >= 0 && rss3 >= 0)
			r->rss_passes_kb = rss3 > rss2 ? rss3 - rss2 : 0;
	}
	if (r->have_recall)
		r->recall /= (double) nq;
	if (r->sim_reads)
		r->sim_read_ms = sim_read_sum / (double) r->sim_reads;
	if (r->sim_ms > 0)
		r->sim_inflight = sim_infl_sum / r->sim_ms;
	cv_io_stats_get(io, &r->io);
	rc = 0;
out:
	free(ids);
	free(dists);
	return rc;
}

int harness_qm_summarise(const harness_qm_result *r, harness_qm_summary *s)
{
	size_t ntot = r->nq * r->passes;
	double *sorted = malloc((ntot ? ntot : 1) * sizeof(double));
	double *qsorted = malloc((r->passes ? r->passes : 1) * sizeof(double));

	if (!sorted || !qsorted) {
		free(sorted);
		free(qsorted);
		return -ENOMEM;
	}
	memset(s, 0, sizeof(*s));
	s->samples = ntot;
	for (size_t i = 0; i < ntot; i++) {
		s->lat_mean += r->lat_ms[i];
		sorted[i] = r->lat_ms[i];
	}
	s->lat_mean /= (double) (ntot ? ntot : 1);
	qsort(sorted, ntot, sizeof(double), harness_cmp_double);
	if (ntot) {
		s->p50 = cs_quantile(sorted, ntot, 0.5);
		s->p90 = cs_quantile(sorted, ntot, 0.90);
		s->p95 = cs_quantile(sorted, ntot, 0.95);
		s->p99 = cs_quantile(sorted, ntot, 0.99);
		s->p999 = cs_quantile(sorted, ntot, 0.999);
	}
	/* QPS: the median pass's, the best pass's and the spread (min to max = best) */
	memcpy(qsorted, r->pass_qps, r->passes * sizeof(double));
	qsort(qsorted, r->passes, sizeof(double), harness_cmp_double);
	if (r->passes) {
		s->qps = cs_quantile(qsorted, r->passes, 0.5);
		s->qps_best = qsorted[r->passes - 1];
		s->qps_min = qsorted[0];
	}
	free(sorted);
	free(qsorted);
	return 0;
}
