/*
 * run_measure.c - the measurements (phase 5): each repeat's metrics in
 * DESIGN.md's vocabulary from the clients' per-query rows (latency
 * percentiles, recall, reads, the results digest; in virtual time as the
 * modelled device gives them, with the real figures beside), several
 * repeats' means, and the one definition of mem_peak_bytes. Metrics the
 * machine cannot supply are null, never made up.
 */
#include "run_phase.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

typedef harness_qhash qhash;

static int cmp_qhash(const void *a, const void *b)
{
	const qhash *x = a, *y = b;

	if (x->q != y->q)
		return x->q < y->q ? -1 : 1;
	return x->h < y->h ? -1 : x->h > y->h;
}

uint64_t harness_ids_hash(const uint32_t *ids, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		for (unsigned b = 0; b < 4; b++) {
			h ^= (ids[i] >> (8 * b)) & 0xffu;
			h *= 0x100000001b3ull;
		}
	return h;
}

/*
 * results_digest: every distinct (query row, returned ids) pair, in query
 * order, folded by FNV-1a and kept to 52 bits so a JSON number holds it
 * exactly. Two runs over the same queries have equal digests exactly when
 * every query returned the same ids in the same order (up to a collision).
 */
double harness_results_digest(qhash *v, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	qsort(v, n, sizeof(*v), cmp_qhash);
	for (size_t i = 0; i < n; i++) {
		if (i && v[i].q == v[i - 1].q && v[i].h == v[i - 1].h)
			continue; /* a repeat or another client's run of the same query */
		for (unsigned b = 0; b < 16; b++) {
			h ^= ((b < 8 ? v[i].q : v[i].h) >> (8 * (b % 8))) & 0xffu;
			h *= 0x100000001b3ull;
		}
	}
	return (double) (h & ((UINT64_C(1) << 52) - 1));
}

/*
 * The run's metrics (DESIGN.md's vocabulary). virt: latencies, wall and
 * read times as the modelled device gives them (the rows' virtual
 * fields), with no block-device figures (the model has no counters);
 * else the real measurements. New reference, NULL when out of memory.
 */
static json_t *make_metrics(const load *L, const cv_io_stats *all, double wall_s, int virt,
			    int have_dev, const cv_blkstat *bs0, const cv_blkstat *bs1,
			    double resident_before, uint64_t mem_peak)
{
	size_t n = 0, k = 0, nrec = 0;
	double *lat, sum_lat = 0, sum_rec = 0, read_ms = 0, prewarm_ms = 0;
	qhash *qh;
	json_t *m;

	for (unsigned c = 0; c < L->clients; c++)
		n += L->nrows[c];
	lat = malloc((n ? n : 1) * sizeof(*lat));
	qh = malloc((n ? n : 1) * sizeof(*qh));
	m = json_object();
	if (!lat || !qh || !m) {
		free(lat);
		free(qh);
		json_decref(m);
		return NULL;
	}
	for (unsigned c = 0; c < L->clients; c++) {
		for (size_t i = 0; i < L->nrows[c]; i++) {
			const qrow *r = &L->rows[c][i];
			double v = virt ? r->vlat_ms : r->lat_ms;

			qh[k] = (qhash){r->q, r->ids_hash};
			lat[k++] = v;
			sum_lat += v;
			read_ms += r->vread_ms;
			prewarm_ms += virt ? r->prewarm_ms : r->prewarm_ms_real;
			if (isfinite(r->recall)) {
				sum_rec += r->recall;
				nrec++;
			}
		}
	}
	if (!virt)
		read_ms = (double) all->lat_ns.sum / 1e6;
	qsort(lat, n, sizeof(*lat), harness_cmp_double);
	json_object_set_new(m, "wall_s", json_real(wall_s));
	json_object_set_new(m, "queries", json_integer((json_int_t) n));
	json_object_set_new(m, "qps", json_real(wall_s > 0 ? (double) n / wall_s : 0));
	json_object_set_new(m, "lat_mean_ms", harness_num_or_null(n ? sum_lat / (double) n : NAN));
	json_object_set_new(m, "lat_p50_ms", harness_num_or_null(cs_quantile(lat, n, 0.5)));
	json_object_set_new(m, "lat_p90_ms", harness_num_or_null(cs_quantile(lat, n, 0.90)));
	json_object_set_new(m, "lat_p95_ms", harness_num_or_null(cs_quantile(lat, n, 0.95)));
	json_object_set_new(m, "lat_p99_ms", harness_num_or_null(cs_quantile(lat, n, 0.99)));
	json_object_set_new(m, "lat_p999_ms", harness_num_or_null(cs_quantile(lat, n, 0.999)));
	json_object_set_new(m, "recall_at_k", harness_num_or_null(nrec ? sum_rec / (double) nrec : NAN));
	json_object_set_new(m, "results_digest", harness_num_or_null(n ? harness_results_digest(qh, n) : NAN));
	free(qh);
	json_object_set_new(m, "engine_reads", json_integer((json_int_t) all->reads));
	json_object_set_new(m, "engine_read_ms_mean",
			    harness_num_or_null(all->reads ? read_ms / (double) all->reads : NAN));
	json_object_set_new(m, "engine_iops",
			    harness_num_or_null(wall_s > 0 ? (double) all->reads / wall_s : NAN));
	json_object_set_new(m, "reads_per_query",
			    harness_num_or_null(n ? (double) all->reads / (double) n : NAN));
	json_object_set_new(m, "bytes_per_read",
			    harness_num_or_null(all->reads ? (double) all->bytes / (double) all->reads : NAN));
	/* the prewarms' reads before the queries, outside wall_s (a run without prewarm: null) */
	json_object_set_new(m, "prewarm_s", harness_num_or_null(L->pw ? prewarm_ms / 1e3 : NAN));
	if (have_dev && !virt) {
		uint64_t dr = bs1->reads - bs0->reads;

		json_object_set_new(m, "device_reads", json_integer((json_int_t) dr));
		json_object_set_new(m, "device_read_ms_mean",
				    harness_num_or_null(dr ? (double) (bs1->read_ms - bs0->read_ms) / (double) dr
						   : NAN));
		json_object_set_new(m, "device_bytes_per_read",
				    harness_num_or_null(dr ? (double) (bs1->read_sectors - bs0->read_sectors) *
								     512.0 / (double) dr
							   : NAN));
		json_object_set_new(m, "device_busy",
				    harness_num_or_null(wall_s > 0 ? (double) (bs1->io_ticks_ms - bs0->io_ticks_ms) /
								     1000.0 / wall_s
							   : NAN));
	} else {
		json_object_set_new(m, "device_reads", json_null());
		json_object_set_new(m, "device_read_ms_mean", json_null());
		json_object_set_new(m, "device_bytes_per_read", json_null());
		json_object_set_new(m, "device_busy", json_null());
	}
	json_object_set_new(m, "io_over_wall",
			    harness_num_or_null(wall_s > 0 && all->reads ? read_ms / 1e3 / wall_s
								 : (all->reads ? NAN : 0.0)));
	json_object_set_new(m, "inflight_median",
			    all->inflight.count ? json_real(cv_hist_quantile(&all->inflight, 0.5))
						: json_integer(0));
	json_object_set_new(m, "inflight_max", json_integer((json_int_t) all->inflight_max));
	{
		const char *via = cv_fanout_via_name(atomic_load(&L->fanout_via));

		/* a fan-out's concurrency, and how it was had: "uring" or "threads" */
		json_object_set_new(m, "fanout_via", via ? json_string(via) : json_null());
	}
	json_object_set_new(m, "resident_fraction_before", harness_num_or_null(resident_before));
	json_object_set_new(m, "mem_peak_bytes", json_integer((json_int_t) mem_peak));
	free(lat);
	return m;
}

/*
 * The virtual wall: each client's queries back to back in virtual time,
 * with the real gaps between them (prewarm setup left out); the longest
 * client's timeline from the run's start.
 */
static double virtual_wall_s(const load *L, uint64_t start_ns)
{
	double wall = 0;

	for (unsigned c = 0; c < L->clients; c++) {
		double t = 0;

		for (size_t i = 0; i < L->nrows[c]; i++) {
			const qrow *r = &L->rows[c][i];

			if (i == 0) {
				t = r->t_ms - (double) (start_ns - L->t0) / 1e6;
			} else {
				const qrow *p = &L->rows[c][i - 1];
				double gap = r->t_ms - (p->t_ms + p->lat_ms) - r->setup_ms;

				t += gap > 0 ? gap : 0;
			}
			if (t < 0)
				t = 0;
			t += r->vlat_ms;
		}
		if (t > wall)
			wall = t;
	}
	return wall / 1e3;
}

/*
 * One repeat's metrics from the clients' rows and counters (appended to
 * reps; a virtual-time run's real-disk figures to reps_real), and its rows
 * appended to rowsj (with "repeat" when tag). mem_peak_bytes is set for the
 * whole run afterwards.
 */
int harness_repeat_metrics(const load *L, uint64_t t_end, int virt, int have_dev,
			  const cv_blkstat *bs0, const cv_blkstat *bs1, double resident_before, int tag,
			  json_t *reps, json_t *reps_real, json_t *rowsj, uint64_t *vd, uint64_t *vh,
			  cs_err *e)
{
	cv_io_stats all;
	uint64_t start = atomic_load(&L->start_ns) ? atomic_load(&L->start_ns) : L->t0;
	double setup_ms = 0, wall_s;
	json_t *m, *mr = NULL;

	memset(&all, 0, sizeof(all));
	for (unsigned c = 0; c < L->clients; c++)
		cv_io_stats_merge(&all, &L->stats[c]);
	/* The wall runs from the first query's submission to the last one's completion
	 * (client threads' start-up is not part of the load); per-query eviction and
	 * prewarm are setup, not load (such runs have one client). */
	for (unsigned c = 0; c < L->clients; c++)
		for (size_t i = 1; i < L->nrows[c]; i++)
			setup_ms += L->rows[c][i].setup_ms;
	wall_s = (double) (t_end - start) / 1e9 - setup_ms / 1e3;
	m = make_metrics(L, &all, wall_s, 0, have_dev, bs0, bs1, resident_before, 0);
	if (m && virt) {
		mr = m;
		m = make_metrics(L, &all, virtual_wall_s(L, start), 1, have_dev, bs0, bs1,
				 resident_before, 0);
		for (unsigned c = 0; c < L->clients; c++)
			for (size_t i = 0; i < L->nrows[c]; i++) {
				*vd += L->rows[c][i].vdev_reads;
				*vh += L->rows[c][i].vhits;
			}
	}
	if (!m || json_array_append_new(reps, m) || (virt && json_array_append_new(reps_real, mr))) {
		json_decref(mr);
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	}
	for (unsigned c = 0; c < L->clients; c++) {
		for (size_t i = 0; i < L->nrows[c] && json_array_size(rowsj) < ROWS_MAX; i++) {
			const qrow *r = &L->rows[c][i];
			json_t *row = json_pack(
				"{s:I, s:I, s:f, s:f, s:I, s:I, s:f, s:o, s:I}", "q", (json_int_t) r->q,
				"client", (json_int_t) r->client, "t_ms", r->t_ms, "lat_ms",
				virt ? r->vlat_ms : r->lat_ms, "reads", (json_int_t) r->reads, "bytes",
				(json_int_t) r->bytes, "read_ms", virt ? r->vread_ms : r->read_ms, "recall",
				harness_num_or_null(r->recall), "n", (json_int_t) r->n);

			if (row && virt) {
				json_object_set_new(row, "lat_ms_real", json_real(r->lat_ms));
				json_object_set_new(row, "read_ms_real", json_real(r->read_ms));
				json_object_set_new(row, "device_reads_virtual",
						    json_integer((json_int_t) r->vdev_reads));
				json_object_set_new(row, "prewarm_hits", json_integer((json_int_t) r->vhits));
			}
			if (row && L->pw) {
				json_object_set_new(row, "setup_ms", json_real(r->setup_ms));
				json_object_set_new(row, "prewarm_ms", json_real(virt ? r->prewarm_ms : r->prewarm_ms_real));
				if (virt)
					json_object_set_new(row, "prewarm_ms_real", json_real(r->prewarm_ms_real));
			}
			if (row && tag)
				json_object_set_new(row, "repeat", json_integer((json_int_t) L->rep));
			if (!row || json_array_append_new(rowsj, row))
				return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		}
	}
	return 0;
}

/* Set key to v in every object of arr. */
static void set_all(json_t *arr, const char *key, json_int_t v)
{
	size_t i;
	json_t *o;

	json_array_foreach(arr, i, o)
		json_object_set_new(o, key, json_integer(v));
}

/*
 * The repeats' metrics as one: each metric's mean over the repeats where
 * it is a number (null when it is a number in none); the spread is
 * reported from the repeats themselves (reports/results.c). New reference.
 * The PostgreSQL path's repeats are averaged here too (pgrun.c).
 */
json_t *harness_mean_metrics(const json_t *reps)
{
	json_t *out = json_object(), *first = json_array_get(reps, 0), *v;
	const char *k;

	if (!out || !first) {
		json_decref(out);
		return NULL;
	}
	json_object_foreach(first, k, v) {
		double sum = 0;
		size_t n = 0, i;
		json_t *r;

		json_array_foreach(reps, i, r) {
			const json_t *x = json_object_get(r, k);

			if (json_is_number(x)) {
				sum += json_number_value(x);
				n++;
			}
		}
		if (n)
			json_object_set_new(out, k, json_real(sum / (double) n));
		else
			json_object_set(out, k, v); /* null, or a label such as fanout_via */
	}
	return out;
}

/*
 * mem_peak_bytes (see the top of this file): the run's own cgroup's peak
 * counter, else the sampler's largest reading; a new {"bytes", "source",
 * "samples"} for the record, *bytes the figure.
 */
static json_t *mem_peak_of(const json_t *memcap, const char *cgdir, const harness_mem_peak *mp,
			   uint64_t *bytes)
{
	int own = json_is_true(json_object_get(memcap, "own_cgroup"));
	char which[64] = "", src[96];
	int64_t pk = own ? harness_cgroup_peak(cgdir, which, sizeof(which)) : -1;

	if (pk >= 0) {
		*bytes = (uint64_t) pk;
		snprintf(src, sizeof(src), "cgroup %s", which);
	} else if (own && mp->cgroup_max) {
		*bytes = mp->cgroup_max;
		snprintf(src, sizeof(src), "sampler: largest usage of the run's own cgroup");
	} else if (mp->rss_max) {
		*bytes = mp->rss_max;
		snprintf(src, sizeof(src), "sampler: largest RSS (no memory cgroup of its own)");
	} else {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		*bytes = (uint64_t) ru.ru_maxrss * 1024u;
		snprintf(src, sizeof(src), "getrusage ru_maxrss (no sample)");
	}
	return json_pack("{s:I, s:s, s:I, s:O}", "bytes", (json_int_t) *bytes, "source", src,
			 "samples", (json_int_t) mp->samples, "cgroup",
			 own ? json_object_get(memcap, "path") : json_null());
}

/*
 * Phase 5: one repeat's metrics as they are, several repeats' means; the
 * virtual-time description.
 */
int harness_phase_metrics(harness_run_ctx *R, cs_err *e)
{
	int rc = 0;

	{
		R->mempeak = mem_peak_of(R->memcap, R->cgdir, &R->mp, &R->mem_peak);
		/* One peak for the whole run: the repeats share the process. */
		set_all(R->reps, "mem_peak_bytes", (json_int_t) R->mem_peak);
		set_all(R->reps_real, "mem_peak_bytes", (json_int_t) R->mem_peak);
		R->metrics = R->nrep > 1 ? harness_mean_metrics(R->reps) : json_incref(json_array_get(R->reps, 0));
		if (R->virt)
			R->metrics_real = R->nrep > 1 ? harness_mean_metrics(R->reps_real)
						: json_incref(json_array_get(R->reps_real, 0));
		if (!R->metrics || (R->virt && !R->metrics_real)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			return rc;
		}
		if (R->virt) {
			char desc[1024];

			R->vinfo = json_pack("{s:s, s:s, s:I, s:I, s:s}", "device",
					  cv_device_name(R->dev), "model",
					  cv_device_describe(R->dev, desc, sizeof(desc)), "device_reads",
					  (json_int_t) R->vd, "prewarm_hit_reads", (json_int_t) R->vh,
					  "replay",
					  R->L.has_bg
						  ? "each query's read trace replayed on the device model with the "
						    "run's competing readers and bulk writes in the same queues "
						    "(cv_device_simulate_load); a client's queries back to back "
						    "with their real gaps; clients do not contend with each other"
						  : "each query's read trace replayed alone on the device model "
						    "(cv_device_simulate); a client's queries back to back with "
						    "their real gaps; clients do not contend with each other");
		}
	}
	return 0;
}
