/*
 * run_load.c - the load generator (phase 4): C client threads, each with
 * its own cv_io, each sending its next query when the last returns (as
 * weaviate-benchmarking does), until N queries or T seconds; the samplers
 * (sample.c) and any competing readers and bulk writes beside them (in
 * virtual time, modelled in the same device queues instead); `repeat`
 * times, each repeat from the run's starting state. SIGINT/SIGTERM and a
 * failed client or fatal sampler stop the clients between queries.
 */
#include "qmeasure.h"
#include "run_phase.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void fail(load *L, const char *msg, int rc)
{
	pthread_mutex_lock(&L->mu);
	/* the first failure is the one told; a long message is cut at the field's end */
	if (!atomic_load(&L->failed) &&
	    snprintf(L->fail_msg, sizeof(L->fail_msg), "%s: %s", msg, strerror(-rc)) < 0)
		L->fail_msg[0] = '\0';
	atomic_store(&L->failed, 1);
	pthread_mutex_unlock(&L->mu);
}

/* samplers.fatal: the first failed sample stops the load (called from a sampler's thread). */
static void sampler_failed(void *ud, const char *series, const char *why)
{
	load *L = ud;

	pthread_mutex_lock(&L->mu);
	if (!atomic_load(&L->failed))
		snprintf(L->fail_msg, sizeof(L->fail_msg), "sampler %s: %s (samplers.fatal)", series,
			 why);
	atomic_store(&L->failed, 1);
	pthread_mutex_unlock(&L->mu);
}

/* One client: closed loop, the next query only when the last returned. */
static void *client(void *p)
{
	client_arg *a = p;
	load *L = a->L;
	unsigned c = a->c;
	cv_io_opts io = L->io;
	cv_query_opts qo = L->qo;
	cv_io *ctx = NULL;
	cv_pool *pool = NULL;
	uint32_t *ids = NULL;
	float *dists = NULL;
	cv_trace *trace = NULL;
	cs_err pe = {0};
	int rc;

	io.stream = c;
	if (L->cpus && (rc = harness_pin_self(L->cpus))) {
		fail(L, "cannot pin the client to client_cpus", rc);
		goto out;
	}
	/*
	 * A fan-out's readers: this client's pool for its whole loop, started
	 * here, after the pin (they run where the client runs) and inside the
	 * cap; each also joins the cap before its first read.
	 */
	if (harness_reader_pool(&L->qo, L->thr, &pool, &pe)) {
		fail(L, "cannot make the client's reader pool", -ENOMEM);
		goto out;
	}
	qo.pool = pool;
	json_decref(L->placement[c]); /* a later repeat's client: where it runs now */
	L->placement[c] = harness_affinity_now();
	if (L->vdev) {
		rc = cv_trace_new(1u << 19, &trace);
		if (rc) {
			fail(L, "cannot allocate the query trace", rc);
			goto out;
		}
		io.trace = trace;
	}
	rc = cv_io_new(&io, &ctx);
	ids = calloc(L->k ? L->k : 1, sizeof(*ids));
	dists = calloc(L->k ? L->k : 1, sizeof(*dists));
	if (rc || !ids || !dists) {
		fail(L, "cannot start a client", rc ? rc : -ENOMEM);
		goto out;
	}
	while (!harness_run_interrupted() && !atomic_load(&L->failed)) {
		uint64_t i = atomic_fetch_add(&L->next, 1), t1, t2;
		cv_query_stats qs = {0};
		harness_qm_sample sm;
		cv_io_stats before, after;
		double setup_ms, prewarm_ms;
		size_t nout = 0, q;
		qrow *r;

		if (L->query_count && i >= L->query_count)
			break;
		if (L->deadline_ns && cs_mono_ns() >= L->deadline_ns)
			break;
		q = (size_t) (i % L->queries->n);
		setup_ms = 0;
		prewarm_ms = 0;
		if (L->pw || L->each) {
			/* Cold again before this query (buffers and page cache, residency
			 * proven 0), then, for prewarm, this query's list. */
			uint64_t s0 = cs_mono_ns();
			double res;

			cv_index_drop_buffers(L->ix);
			for (size_t f = 0; f < L->nfiles && !rc; f++)
				rc = cv_cache_evict(L->files[f]);
			/* The cold proof is the guard's (guard_cold), as at the start of the run. */
			if (!rc) {
				cs_err ge = {0};

				if (guard_cold(NULL, L->files, L->nfiles, "run", &res, &ge)) {
					fail(L, "page cache not cold after eviction before the query", -EBUSY);
					break;
				}
			}
			if (!rc && L->pw) {
				uint64_t p0 = cs_mono_ns();

				rc = harness_prewarm(L->files, L->nfiles, &L->pw[q]);
				prewarm_ms = (double) (cs_mono_ns() - p0) / 1e6;
			}
			if (rc) {
				fail(L, L->pw ? "prewarm failed" : "eviction before the query failed", rc);
				break;
			}
			setup_ms = (double) (cs_mono_ns() - s0) / 1e6;
		}
		if (trace)
			cv_trace_clear(trace);
		cv_io_stats_get(ctx, &before);
		/* timed as index query times a query (qmeasure.c); CPU clocks are the
		 * process's, so with several clients they are not read */
		rc = harness_qm_one(L->ix, ctx, cv_row(L->queries, q), &qo, ids, dists, &qs, 0, &sm);
		t1 = sm.t0_ns;
		t2 = sm.t1_ns;
		nout = sm.nout;
		if (rc) {
			fail(L, "query failed", rc);
			break;
		}
		cv_io_stats_get(ctx, &after);
		if (qs.fanout_via)
			atomic_store(&L->fanout_via, qs.fanout_via);
		if (L->nrows[c] == L->caprows[c]) {
			size_t nc = L->caprows[c] ? L->caprows[c] * 2 : 256;
			qrow *nr = realloc(L->rows[c], nc * sizeof(*nr));

			if (!nr) {
				fail(L, "out of memory for rows", -ENOMEM);
				break;
			}
			L->rows[c] = nr;
			L->caprows[c] = nc;
		}
		r = &L->rows[c][L->nrows[c]++];
		r->q = (uint32_t) (L->first_id + q);
		r->client = c;
		r->t_ms = (double) (t1 - L->t0) / 1e6;
		r->lat_ms = (double) (t2 - t1) / 1e6;
		r->reads = after.reads - before.reads;
		r->bytes = after.bytes - before.bytes;
		r->read_ms = (double) (after.lat_ns.sum - before.lat_ns.sum) / 1e6;
		r->n = (uint32_t) nout;
		r->ids_hash = harness_ids_hash(ids, nout);
		r->recall = NAN;
		r->setup_ms = setup_ms;
		r->prewarm_ms = r->prewarm_ms_real = prewarm_ms;
		r->vlat_ms = r->lat_ms;
		r->vread_ms = r->read_ms;
		r->vdev_reads = r->reads;
		r->vhits = 0;
		r->rep = L->rep;
		if (trace) {
			/* each repeat its own streams: query i of repeat r */
			const uint64_t qseed = harness_query_seed(L->seed, ((uint64_t) L->rep << 40) + i);
			harness_vq vq;

			rc = harness_vtime_query(L->vdev, trace, qseed,
						 L->has_bg ? &L->bg : NULL, L->pw ? &L->pw[q] : NULL,
						 L->files, L->nfiles, r->lat_ms, &vq);
			if (rc) {
				fail(L, rc == -ENOSPC ? "a query's read trace overflowed (over 524288 reads)"
						      : "virtual-time replay failed",
				     rc);
				L->nrows[c]--;
				break;
			}
			if (L->has_bg) {
				pthread_mutex_lock(&L->mu);
				L->bg_reads += vq.sim.bg_reads;
				L->bg_read_ms += vq.sim.bg_read_ms_mean * (double) vq.sim.bg_reads;
				L->bg_written += vq.sim.bg_write_bytes;
				pthread_mutex_unlock(&L->mu);
			}
			/* the prewarm's own reads, modelled as the query's are (a stream of its own) */
			if (L->pw && (rc = harness_vtime_prewarm(L->vdev, &L->pw[q],
								 qseed ^ 0x7072657761726dull,
								 &r->prewarm_ms))) {
				fail(L, "virtual-time replay of the prewarm failed", rc);
				L->nrows[c]--;
				break;
			}
			r->vlat_ms = vq.lat_ms;
			r->vread_ms = vq.read_ms;
			atomic_fetch_add(&L->vlat_ns, (uint_fast64_t) (vq.lat_ms * 1e6));
			r->vdev_reads = vq.device_reads;
			r->vhits = vq.hit_reads;
		}
		if (L->gt) {
			r->recall = cv_recall_at_k(L->base, cv_row(L->queries, q), L->metric,
						   L->gt + q * L->k, L->k, ids, nout);
			/* NaN: the truth names a row outside the base; no average may skip it */
			if (isnan(r->recall)) {
				fail(L, "the ground truth names a row outside the recall base", -EINVAL);
				L->nrows[c]--;
				break;
			}
		}
		{
			uint64_t first = atomic_load(&L->start_ns);

			while ((first == 0 || t1 < first) &&
			       !atomic_compare_exchange_weak(&L->start_ns, &first, t1))
				;
		}
		{
			uint64_t prev = atomic_load(&L->end_ns);

			while (t2 > prev && !atomic_compare_exchange_weak(&L->end_ns, &prev, t2))
				;
		}
		atomic_fetch_add(&L->done, 1);
	}
	cv_io_stats_get(ctx, &L->stats[c]);
out:
	cv_pool_free(pool);
	cv_io_free(ctx);
	cv_trace_free(trace);
	free(ids);
	free(dists);
	return NULL;
}

/*
 * The load's progress line on stderr. A virtual-time run shows the QPS the
 * device model gives (what its record will say) beside the real disk's;
 * the time left is "estimating" until a query has returned.
 */
static void progress(const load *L, uint64_t total, int final)
{
	double el = (double) (cs_mono_ns() - L->t0) / 1e9;
	uint64_t done = atomic_load(&L->done);
	double qps = el > 0 ? (double) done / el : 0, left;
	char rate[96], lefts[48];

	if (L->deadline_ns)
		left = (double) (L->deadline_ns > cs_mono_ns() ? L->deadline_ns - cs_mono_ns() : 0) / 1e9;
	else
		left = qps > 0 ? (double) (total - (done < total ? done : total)) / qps : NAN;
	if (L->vdev) {
		/* Clients run side by side in virtual time: each one's share of the modelled time. */
		double vs = (double) atomic_load(&L->vlat_ns) / 1e9 / (L->clients ? L->clients : 1);

		snprintf(rate, sizeof(rate), "%.2f qps modelled (%.2f real)",
			 vs > 0 ? (double) done / vs : 0.0, qps);
	} else {
		snprintf(rate, sizeof(rate), "%.2f qps", qps);
	}
	if (final)
		snprintf(lefts, sizeof(lefts), "done");
	else if (isfinite(left))
		snprintf(lefts, sizeof(lefts), "%.0f s left", left);
	else
		snprintf(lefts, sizeof(lefts), "estimating");
	fprintf(stderr, "\r  queries %llu%s%llu  %s  %.0f s elapsed, %s   %s",
		(unsigned long long) done, total ? "/" : "", (unsigned long long) total, rate, el,
		lefts, final ? "\n" : "");
	fflush(stderr);
}

/* Phase 4: the samplers, the competing load, and the closed-loop clients, `repeat` times. */
int harness_phase_load(harness_run_ctx *R, cs_err *e)
{
	int rc = 0;

	R->have_dev = cv_blkdev_for_path(R->index, &R->bd, NULL) == 0 && cv_blkdev_stat(&R->bd, &R->bs0) == 0;
	{
		const json_t *s = json_object_get(R->eff, "samplers");
		harness_sampler_opts so = {
			.dev = R->have_dev ? &R->bd : NULL,
			.iostat_s = json_number_value(json_object_get(s, "iostat_s")),
			.memory_s = json_number_value(json_object_get(s, "memory_s")),
			.prometheus_s = json_number_value(json_object_get(s, "prometheus_s")),
			.prometheus_url = json_string_value(json_object_get(s, "prometheus_url")),
			/* fatal: stop the load at the first failed sample, not after it */
			.on_fail = json_is_true(json_object_get(s, "fatal")) ? sampler_failed : NULL,
			.on_fail_ud = &R->L,
		};

		rc = harness_samplers_start(&so, &R->smp, e);
		if (rc)
			return rc;
	}
	R->L.rows = calloc(R->L.clients, sizeof(*R->L.rows));
	R->L.nrows = calloc(R->L.clients, sizeof(*R->L.nrows));
	R->L.caprows = calloc(R->L.clients, sizeof(*R->L.caprows));
	R->L.stats = calloc(R->L.clients, sizeof(*R->L.stats));
	R->L.placement = calloc(R->L.clients, sizeof(*R->L.placement));
	R->th = calloc(R->L.clients, sizeof(*R->th));
	R->ca = calloc(R->L.clients, sizeof(*R->ca));
	if (!R->L.rows || !R->L.nrows || !R->L.caprows || !R->L.stats || !R->L.placement || !R->th || !R->ca) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		return rc;
	}
	/* each client's fan-out readers join the cap (client(); the warm-up's start their own) */
	R->L.thr = R->thr.dirfd >= 0 ? &R->thr : NULL;
	/*
	 * Competing load starts before the first query and stops after the
	 * last; in virtual time it is modelled beside each query's replay, in
	 * the same device queues, and no thread runs.
	 */
	if (R->virt) {
		const json_t *ld = json_object_get(R->eff, "load"), *bw = json_object_get(R->eff, "bulkwrite");

		if (json_is_object(ld)) {
			R->L.bg.readers = (unsigned) json_integer_value(json_object_get(ld, "readers"));
			R->L.bg.reader_bytes = json_is_integer(json_object_get(ld, "block_bytes"))
						    ? (uint32_t) json_integer_value(json_object_get(ld, "block_bytes"))
						    : HARNESS_BLOCK;
		}
		if (json_is_object(bw)) {
			R->L.bg.write_chunk = json_is_integer(json_object_get(bw, "chunk_bytes"))
						   ? (uint64_t) json_integer_value(json_object_get(bw, "chunk_bytes"))
						   : (uint64_t) 1 << 20;
			R->L.bg.write_sync = json_is_integer(json_object_get(bw, "sync_bytes"))
						  ? (uint64_t) json_integer_value(json_object_get(bw, "sync_bytes"))
						  : (uint64_t) 8 << 20;
		}
		R->L.has_bg = R->L.bg.readers > 0 || R->L.bg.write_chunk > 0;
	}
	if (!R->virt && json_is_object(json_object_get(R->eff, "load"))) {
		const json_t *ld = json_object_get(R->eff, "load");
		uint32_t blk = json_is_integer(json_object_get(ld, "block_bytes"))
				       ? (uint32_t) json_integer_value(json_object_get(ld, "block_bytes"))
				       : HARNESS_BLOCK;

		/* under a throttle the competing readers are capped with the queries */
		if ((rc = harness_throttle_enter(&R->thr))) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot join: %s", R->thr.dir, strerror(-rc));
			return rc;
		}
		rc = harness_readers_start(R->files, R->nfiles,
					   (unsigned) json_integer_value(json_object_get(ld, "readers")),
					   blk, R->L.io.device, &R->readers, e);
		if (!R->thr.v2) /* v1: the readers stay, this thread goes; v2: the process stays for the load */
			harness_throttle_leave(&R->thr);
		if (rc)
			return rc;
	}
	if (!R->virt && json_is_object(json_object_get(R->eff, "bulkwrite"))) {
		const json_t *bw = json_object_get(R->eff, "bulkwrite");
		const char *wd = guard_held_via(&R->whold); /* checked and made by run_guard_inputs */
		rc = harness_writer_start(
			wd, R->index,
			json_is_integer(json_object_get(bw, "max_bytes"))
				? (uint64_t) json_integer_value(json_object_get(bw, "max_bytes"))
				: (uint64_t) 1 << 30,
			json_is_number(json_object_get(bw, "max_s")) ? json_number_value(json_object_get(bw, "max_s"))
								    : 600.0,
			json_is_integer(json_object_get(bw, "chunk_bytes"))
				? (uint64_t) json_integer_value(json_object_get(bw, "chunk_bytes"))
				: (uint64_t) 1 << 20,
			json_is_integer(json_object_get(bw, "sync_bytes"))
				? (uint64_t) json_integer_value(json_object_get(bw, "sync_bytes"))
				: (uint64_t) 8 << 20,
			R->dev, &R->writer, e);
		if (rc)
			return rc;
	}
	cs_format_rfc3339(cs_now_us(), R->started);
	R->L.t0 = cs_mono_ns();
	R->rowsj = json_array();
	R->reps = json_array();
	R->reps_real = json_array();
	if (!R->rowsj || !R->reps || !R->reps_real) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		return rc;
	}
	/*
	 * The load, `repeat` times: each repeat starts from the run's state
	 * (cold: evicted and proven cold again; warm: as the last left it),
	 * after `warmup_queries` untimed queries, and gives its own metrics;
	 * its per-query rows are taken out of the clients' buffers into rowsj.
	 */
	for (unsigned rep = 0; rep < R->nrep; rep++) {
		if (rep > 0 || R->nwarm > 0) {
			rc = harness_before_repeat(R->l, &R->L, R->ix, R->queries, R->files, R->nfiles, R->nwarm, R->cold,
					   &R->resident_before, e);
			if (rc)
				return rc;
		}
		if (R->have_dev && cv_blkdev_stat(&R->bd, &R->bs0))
			R->have_dev = 0;
		atomic_store(&R->L.next, 0);
		atomic_store(&R->L.done, 0);
		atomic_store(&R->L.start_ns, 0);
		atomic_store(&R->L.end_ns, 0);
		atomic_store(&R->L.vlat_ns, 0);
		R->L.rep = rep;
		R->L.deadline_ns = 0;
		if (json_is_number(json_object_get(R->eff, "duration_s")))
			R->L.deadline_ns = cs_mono_ns() +
					(uint64_t) (json_number_value(json_object_get(R->eff, "duration_s")) * 1e9);
		/*
		 * Under a throttle this thread joins the cgroup only while it starts
		 * the clients: they (and the readers they start) stay capped, the
		 * harness does not.
		 */
		if (R->thr.dirfd >= 0 && (rc = harness_throttle_enter(&R->thr))) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot join: %s", R->thr.dir, strerror(-rc));
			return rc;
		}
		for (unsigned c = 0; c < R->L.clients; c++) {
			R->L.nrows[c] = 0;
			R->ca[c].L = &R->L;
			R->ca[c].c = c;
			if (pthread_create(&R->th[c], NULL, client, &R->ca[c])) {
				fail(&R->L, "cannot start client thread", -EAGAIN);
				R->L.clients = c;
				break;
			}
		}
		if (!R->thr.v2) /* v1: the clients stay, this thread goes; v2: the process stays for the load */
			harness_throttle_leave(&R->thr);
		R->started_load = 1;
		for (;;) {
			struct timespec ts = {0, 50 * 1000 * 1000};
			uint64_t d = atomic_load(&R->L.done);
			int finished = (R->L.query_count && d >= R->L.query_count) ||
				       (R->L.deadline_ns && cs_mono_ns() >= R->L.deadline_ns) ||
				       atomic_load(&R->L.failed) || harness_run_interrupted();

			if (finished)
				break;
			if (R->tty)
				progress(&R->L, R->L.query_count, 0);
			nanosleep(&ts, NULL);
		}
		for (unsigned c = 0; c < R->L.clients; c++)
			pthread_join(R->th[c], NULL);
		while (R->thr.v2 && R->thr.entered) /* the load is over: the process goes back */
			harness_throttle_leave(&R->thr);
		/* Wall ends when the last query returned, not when this thread noticed. */
		R->t_end = atomic_load(&R->L.end_ns) ? atomic_load(&R->L.end_ns) : cs_mono_ns();
		if (R->tty)
			progress(&R->L, R->L.query_count, 1);
		if (R->have_dev && cv_blkdev_stat(&R->bd, &R->bs1))
			R->have_dev = 0;
		if (harness_run_interrupted() || atomic_load(&R->L.failed))
			break;
		if (R->thr.dirfd >= 0 && harness_throttle_counters(&R->thr, &R->thr_reads, &R->thr_bytes) < 0)
			R->thr_reads = R->thr_bytes = 0;
		rc = harness_repeat_metrics(&R->L, R->t_end, R->virt, R->have_dev, &R->bs0, &R->bs1, R->resident_before, R->nrep > 1,
				    R->reps, R->reps_real, R->rowsj, &R->vd, &R->vh, e);
		if (rc)
			return rc;
	}
	if (R->readers || R->writer) {
		cs_err te = {0};
		json_t *rj = R->readers ? harness_readers_stop(R->readers, &te) : NULL;
		json_t *wj = NULL;

		if (R->readers && !rj) {
			R->readers = NULL;
			harness_writer_stop(R->writer, NULL);
			R->writer = NULL;
			fail(&R->L, te.msg, -EIO);
		} else {
			R->readers = NULL;
			wj = R->writer ? harness_writer_stop(R->writer, &te) : NULL;
			if (R->writer && !wj)
				fail(&R->L, te.msg, -EIO);
			R->writer = NULL;
		}
		if (!R->treat)
			R->treat = json_object();
		if (rj)
			json_object_set_new(R->treat, "load", rj);
		if (wj)
			json_object_set_new(R->treat, "bulkwrite", wj);
	}
	if (R->L.has_bg) {
		/* the competing work as the model ran it beside the replays */
		if (!R->treat)
			R->treat = json_object();
		if (R->L.bg.readers)
			json_object_set_new(
				R->treat, "load",
				json_pack("{s:I, s:I, s:s, s:I, s:I, s:o, s:b, s:s}", "readers",
					  (json_int_t) R->L.bg.readers, "block_bytes",
					  (json_int_t) R->L.bg.reader_bytes, "strategy", "model",
					  "queue_depth", (json_int_t) 1, "reads", (json_int_t) R->L.bg_reads,
					  "read_ms_mean",
					  R->L.bg_reads ? json_real(R->L.bg_read_ms / (double) R->L.bg_reads)
						     : json_null(),
					  "through_model", 1, "device_time", "virtual"));
		if (R->L.bg.write_chunk)
			json_object_set_new(
				R->treat, "bulkwrite",
				json_pack("{s:I, s:I, s:I, s:b, s:s, s:s}", "bytes_written",
					  (json_int_t) R->L.bg_written, "chunk_bytes",
					  (json_int_t) R->L.bg.write_chunk, "sync_bytes",
					  (json_int_t) R->L.bg.write_sync, "through_model", 1,
					  "device_time", "virtual", "method",
					  "modelled beside each query's replay, from its steady state; "
					  "no bytes written to the real disk; max_bytes and max_s do "
					  "not apply"));
	}
	cs_format_rfc3339(cs_now_us(), R->ended);
	harness_samplers_stop(R->smp, &R->ios, &R->mems, &R->proms, &R->mp, &R->smp_health);
	R->smp = NULL;
	return 0;
}
