/*
 * run.c - `coldstudy run S run.json`: one study run.
 *
 * Phases, in order, each refusing before anything is measured:
 *   1. guards: the study is registered, the tree is clean (--enforce-clean),
 *      validate has passed, the hypotheses served are registered, the
 *      index is not production and is a clone with a valid marker, and a
 *      holdout run has frozen predictions and no undeclared overlap with
 *      design runs;
 *   2. a `run_start` record (the first holdout one freezes predictions);
 *   3. cold: the buffer pool is dropped, every index file evicted, and the
 *      residency of every file must be 0 pages (guard_cold); warm: one
 *      pass over the queries first, and the resident fraction measured;
 *   4. the closed-loop load generator: C client threads, each with its own
 *      cv_io, each sending its next query when the last returns (as
 *      weaviate-benchmarking does), until N queries or T seconds;
 *      samplers run beside it (sample.c);
 *   5. the metrics of DESIGN.md's vocabulary, and ONE transaction holding
 *      the raw per-query rows and the samplers' series (ledger_put_raw)
 *      and the `run` record whose payload carries their hashes.
 *
 * SIGINT/SIGTERM stop the clients between queries; the run then records a
 * deviation and no run record, so the ledger stays valid. A kill -9 at any
 * moment leaves either the whole run transaction or none of it.
 *
 * Every run_start ends in a run record or a deviation naming the run: the
 * run writes the deviation itself when it stops early (a signal, an error,
 * a refusal, a fatal sampler); a run killed outright is found by the next
 * command on the study through its liveness marker (live.c).
 *
 * Metrics the machine cannot supply (device counters on a loop or overlay
 * device, recall without a base dataset) are null, never made up.
 * mem_peak_bytes has one definition: the peak of the memory charged to the
 * run's own memory cgroup (coldstudy-PID, made for every run, capped when
 * the spec has mem_cap_bytes), read from the kernel's own peak counter
 * (v2 memory.peak, v1 memory.max_usage_in_bytes); where the kernel has no
 * such counter, the memory sampler's largest reading of that cgroup's
 * usage, and where no cgroup could be made, its largest RSS. The record's
 * "mem_peak" says which ("source"). A mem_cap_bytes below what the run
 * must map (memcap_check) is refused before anything is recorded.
 */
#include "harness.h"
#include "harness_int.h"

#include "coldvec.h"
#include "guard.h"
#include "ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define ROWS_MAX 1000000 /* per-query rows kept in the ledger; later ones are counted */
#define MEM_HEADROOM (16u << 20) /* the harness's own under a cap: I/O buffers, rings, samplers */
#define MEM_ROW_BYTES 1024u      /* a per-query row as kept (its JSON object), about */

static volatile sig_atomic_t got_signal;

/* An engine -errno as an exit code: damage 4, bad input 5, else 1. */
static int errno_exit(int rc)
{
	switch (-rc) {
	case EBADMSG: return CS_EXIT_VERIFY;
	case EINVAL:
	case EOVERFLOW:
	case ENOENT:
	case ENOTDIR: return CS_EXIT_BADINPUT;
	default: return CS_EXIT_INTERNAL;
	}
}

static void on_signal(int sig)
{
	got_signal = sig;
}

int harness_run_interrupted(void)
{
	return got_signal;
}

typedef struct qrow {
	uint32_t q, client;
	double t_ms, lat_ms, read_ms;
	uint64_t reads, bytes;
	double recall; /* NaN: none */
	uint32_t n;
	double setup_ms;          /* prewarm before the query (outside its latency) */
	double prewarm_ms;        /* of setup_ms, the prewarm's reads (virtual time: modelled) */
	double prewarm_ms_real;   /* the prewarm's reads on the real disk */
	double vlat_ms, vread_ms; /* virtual time: latency and read time as the device gives them */
	uint64_t vdev_reads, vhits;
	uint32_t rep;             /* the repeat it belongs to */
	uint64_t ids_hash;        /* the returned ids in rank order (ids_hash) */
} qrow;

/* FNV-1a over a query's returned ids in rank order: what results_digest folds. */
static uint64_t ids_hash(const uint32_t *ids, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		for (unsigned b = 0; b < 4; b++) {
			h ^= (ids[i] >> (8 * b)) & 0xffu;
			h *= 0x100000001b3ull;
		}
	return h;
}

typedef struct qhash {
	uint64_t q, h;
} qhash;

static int cmp_qhash(const void *a, const void *b)
{
	const qhash *x = a, *y = b;

	if (x->q != y->q)
		return x->q < y->q ? -1 : 1;
	return x->h < y->h ? -1 : x->h > y->h;
}

/*
 * results_digest: every distinct (query row, returned ids) pair, in query
 * order, folded by FNV-1a and kept to 52 bits so a JSON number holds it
 * exactly. Two runs over the same queries have equal digests exactly when
 * every query returned the same ids in the same order (up to a collision).
 */
static double results_digest(qhash *v, size_t n)
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

typedef struct load {
	cv_index *ix;
	const cv_dataset *queries;
	const cv_dataset *base;
	const int32_t *gt;
	size_t k;
	cv_metric metric;
	cv_query_opts qo;
	cv_io_opts io;
	uint64_t query_count;  /* 0: until the deadline */
	uint64_t deadline_ns;  /* 0: none */
	uint64_t t0;
	uint64_t first_id;
	atomic_uint_fast64_t next, done;
	atomic_uint_fast64_t end_ns;  /* the latest query completion: the end of the wall */
	atomic_uint_fast64_t start_ns; /* the first query's submission: the start of the wall */
	atomic_uint_fast64_t vlat_ns;  /* virtual time: the modelled latencies so far (progress) */
	unsigned rep;                  /* the repeat running (run.json "repeat") */
	atomic_int failed;
	atomic_uint fanout_via;       /* how a fan-out overlapped its reads (cv_fanout_via) */
	char fail_msg[256];
	pthread_mutex_t mu;
	/* per client */
	unsigned clients;
	qrow **rows;
	size_t *nrows, *caprows;
	cv_io_stats *stats;
	/* treatments */
	const cv_device *vdev;        /* virtual time: replay each query against this device */
	uint64_t seed;
	char **files;                 /* the index files (prewarm, hit detection) */
	size_t nfiles;
	harness_blockset *pw;         /* per query row: the blocks to prewarm, or NULL */
	int each;                     /* cold_each_query: cold again before every query */
	const json_t *cpus;           /* client placement, or NULL */
	cv_sim_load bg;               /* virtual time: competing work beside each query's replay */
	int has_bg;
	uint64_t bg_reads, bg_written; /* its modelled figures, summed over the replays (mu) */
	double bg_read_ms;
	json_t **placement;           /* per client: the CPU set it ran on */
} load;

typedef struct client_arg {
	load *L;
	unsigned c;
} client_arg;

static void fail(load *L, const char *msg, int rc)
{
	pthread_mutex_lock(&L->mu);
	if (!atomic_load(&L->failed))
		snprintf(L->fail_msg, sizeof(L->fail_msg), "%s: %s", msg, strerror(-rc));
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

/* splitmix64's finaliser: a well-mixed 64-bit value of x. */
static uint64_t seed_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * The stream of query i of a run seeded run_seed: mixed, so that the
 * streams of two runs never overlap shifted by a few queries (as
 * seed + i would for runs seeded s and s + 1).
 */
static uint64_t query_seed(uint64_t run_seed, uint64_t i)
{
	return seed_mix(run_seed ^ seed_mix(i + 1));
}

/* A run record keeps its query rows' digests up to this many rows (reach.c). */
#define QUERY_ROWS_RECORDED 4096

static int first_pred_cb(const ledger_record *r, void *ud)
{
	(void) r;
	*(int *) ud = 1;
	return 1;
}

/* Has a prediction been recorded? (0 on error too: then reach is checked, the safe side.) */
static int predictions_made(ledger *l)
{
	cs_err le = {0};
	int made = 0;

	if (ledger_foreach(l, "prediction", first_pred_cb, &made, &le))
		return 0;
	return made;
}

/*
 * A run's own seed when none is given: a hash of its run id and spec
 * hash (two runs of one spec draw different streams), below 2^53.
 */
static uint64_t run_seed(const char *run_id, const char *spec_sha)
{
	char buf[128];
	unsigned char h[32];
	uint64_t v = 0;
	int n = snprintf(buf, sizeof(buf), "device-seed\n%s\n%s", run_id, spec_sha);

	if (n < 0 || (size_t) n >= sizeof(buf))
		n = 0; /* cannot happen: an id of < 32 and a hash of 64 characters */
	cs_sha256(buf, (size_t) n, h);
	for (int i = 0; i < 8; i++)
		v = (v << 8) | h[i];
	return v & HARNESS_SEED_MAX;
}

/*
 * A run's seed from its base (a registered seed, or run_seed's): the
 * study's seed (plan.seed, registered with the plan) mixed in when there
 * is one, so a replication of the study draws afresh from the same specs;
 * then replicate i > 1's index, so the replicates of a spec that registers
 * its seed draw independent streams (replicate 1 keeps the base: a spec of
 * one replicate draws what it always drew). Below 2^53.
 */
static uint64_t derived_seed(uint64_t base, const json_t *study, unsigned replicate)
{
	const json_t *ps = json_object_get(json_object_get(study, "plan"), "seed");
	uint64_t s = base;

	if (json_is_integer(ps))
		s = seed_mix(s ^ seed_mix((uint64_t) json_integer_value(ps) ^ 0x706c616eull));
	if (replicate > 1)
		s = seed_mix(s ^ seed_mix((uint64_t) replicate ^ 0x7265706cull));
	return s & HARNESS_SEED_MAX;
}

uint64_t harness_query_first(const json_t *eff, const json_t *study, unsigned replicate)
{
	const json_t *q = json_object_get(eff, "queries");
	const json_t *ps = json_object_get(json_object_get(study, "plan"), "seed");
	uint64_t first = (uint64_t) json_integer_value(json_object_get(q, "first"));
	uint64_t draw = (uint64_t) json_integer_value(json_object_get(q, "draw"));
	uint64_t count = (uint64_t) json_integer_value(json_object_get(q, "count"));
	uint64_t s;

	if (!json_is_integer(json_object_get(q, "draw")) || !json_is_integer(json_object_get(q, "count")) ||
	    count >= draw)
		return first;
	/* the replicate index alone (and the study's seed): never the spec, so every spec with
	 * this range reads the same rows at the same index */
	s = seed_mix((uint64_t) (replicate ? replicate : 1) ^ 0x71756572ull);
	if (json_is_integer(ps))
		s = seed_mix(s ^ seed_mix((uint64_t) json_integer_value(ps) ^ 0x706c616eull));
	return first + s % (draw - count + 1);
}

/* One client: closed loop, the next query only when the last returned. */
static void *client(void *p)
{
	client_arg *a = p;
	load *L = a->L;
	unsigned c = a->c;
	cv_io_opts io = L->io;
	cv_io *ctx = NULL;
	uint32_t *ids = NULL;
	float *dists = NULL;
	cv_trace *trace = NULL;
	int rc;

	io.stream = c;
	if (L->cpus && (rc = harness_pin_self(L->cpus))) {
		fail(L, "cannot pin the client to client_cpus", rc);
		goto out;
	}
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
	while (!got_signal && !atomic_load(&L->failed)) {
		uint64_t i = atomic_fetch_add(&L->next, 1), t1, t2;
		cv_query_stats qs = {0};
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
		t1 = cs_mono_ns();
		rc = cv_index_query(L->ix, ctx, cv_row(L->queries, q), &L->qo, ids, dists, &nout, &qs);
		t2 = cs_mono_ns();
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
		r->ids_hash = ids_hash(ids, nout);
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
			const uint64_t qseed = query_seed(L->seed, ((uint64_t) L->rep << 40) + i);
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
	cv_io_free(ctx);
	cv_trace_free(trace);
	free(ids);
	free(dists);
	return NULL;
}

int harness_cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

json_t *harness_num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* Resolve a dataset name of study.datasets to its spec; else the string itself. */
const char *harness_dataset_spec(const json_t *study, const char *s)
{
	const json_t *v = json_object_get(json_object_get(study, "datasets"), s);

	return json_is_string(v) ? json_string_value(v) : s;
}

/*
 * The base dataset for recall: run.base, else the study index whose clone
 * is this index (the clone resolved against the study folder, compared by
 * device and inode with the held index).
 */
static const char *base_spec(struct ledger *l, const json_t *study, const json_t *eff,
			     const char *index)
{
	const char *b = json_string_value(json_object_get(eff, "base"));
	struct stat ist;
	guard_held sh;
	const char *k, *found = NULL;
	json_t *v;
	cs_err e = {0};

	if (b)
		return harness_dataset_spec(study, b);
	if (stat(index, &ist) < 0 || guard_hold(ledger_dir(l), AT_FDCWD, &sh, &e))
		return NULL;
	json_object_foreach(json_object_get(study, "indexes"), k, v) {
		const char *c = json_string_value(json_object_get(v, "clone"));
		const char *d = json_string_value(json_object_get(v, "dataset"));
		guard_held ch;

		if (!c || !d || found || guard_hold(c, sh.fd, &ch, &e))
			continue;
		if (ch.exists && ch.st.st_dev == ist.st_dev && ch.st.st_ino == ist.st_ino)
			found = harness_dataset_spec(study, d);
		guard_held_close(&ch);
	}
	guard_held_close(&sh);
	return found;
}

/*
 * The run's other paths, each refused when it touches production: the
 * dataset files of queries and base, the ground-truth cache directory
 * (COLDSTUDY_CACHE, held and handed to the engine through the hold), and
 * the bulk writer's directory (bulkwrite.dir, else the study's scratch_dir,
 * else the index's parent), made beneath its held parent into *wh.
 */
static int run_guard_inputs(struct ledger *l, guard_prodset *prod, const json_t *study,
			    const json_t *eff, const guard_held *ih, guard_held *wh, cs_err *e)
{
	const char *q = harness_dataset_spec(study, json_string_value(json_object_get(json_object_get(eff, "queries"), "spec")));
	const char *b = json_string_value(json_object_get(eff, "base"));
	const char *cache;
	const json_t *bw = json_object_get(eff, "bulkwrite");
	int rc;

	if ((rc = guard_dataset(l, prod, q, "run", "$.queries.spec", e)) ||
	    (b && (rc = guard_dataset(l, prod, harness_dataset_spec(study, b), "run", "$.base", e))))
		return rc;
	/* COLDSTUDY_CACHE, else the $HOME fallback: checked and held, whatever its spelling */
	if ((rc = guard_cache_dir(l, prod, NULL, "run", &cache, e)))
		return rc;
	if (json_is_object(bw)) {
		const char *wd = json_string_value(json_object_get(bw, "dir"));
		guard_held sh;
		int base = AT_FDCWD;

		guard_held_init(&sh);
		if (!wd && json_is_string(json_object_get(study, "scratch_dir"))) {
			/* study.json's paths are the study folder's. */
			wd = json_string_value(json_object_get(study, "scratch_dir"));
			if ((rc = guard_hold(ledger_dir(l), AT_FDCWD, &sh, e)))
				return rc;
			base = sh.fd;
		}
		if (!wd) {
			/* Beside the index, on its file system: the writes compete with its reads. */
			wd = "../.coldstudy-bulkwrite";
			base = ih->fd;
		}
		rc = guard_target(l, prod, wd, base, "run", "bulkwrite.dir", wh, e);
		guard_held_close(&sh);
		if (!rc)
			rc = guard_held_mkdirs(wh, e);
		if (rc)
			return rc;
	}
	return 0;
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
	json_object_set_new(m, "results_digest", harness_num_or_null(n ? results_digest(qh, n) : NAN));
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

typedef struct count_ctx {
	int64_t n;
} count_ctx;

static int count_cb(const ledger_record *r, void *ud)
{
	(void) r;
	((count_ctx *) ud)->n++;
	return 0;
}

/* Map the effective spec onto the engine's query options. */
static void query_opts(const json_t *eff, cv_query_opts *qo, uint32_t **parts)
{
	const json_t *p = json_object_get(eff, "partitions");

	cv_query_opts_default(qo);
	qo->k = (size_t) json_integer_value(json_object_get(eff, "k"));
	qo->ef_search = (unsigned) json_integer_value(json_object_get(eff, "ef_search"));
	qo->search_probe = (unsigned) json_integer_value(json_object_get(eff, "search_probe"));
	qo->rescore_limit = (unsigned) json_integer_value(json_object_get(eff, "rescore_limit"));
	qo->mode = strcmp(json_string_value(json_object_get(eff, "mode")), "fanout")
			   ? CV_MODE_SERIAL
			   : CV_MODE_FANOUT;
	qo->fanout = (unsigned) json_integer_value(json_object_get(eff, "fanout"));
	qo->merge = strcmp(json_string_value(json_object_get(eff, "merge")), "sort")
			    ? CV_MERGE_STREAM
			    : CV_MERGE_SORT;
	qo->io_mode = strcmp(json_string_value(json_object_get(eff, "io")), "concurrent")
			      ? CV_HIO_SERIAL
			      : CV_HIO_CONCURRENT;
	qo->io_depth = (unsigned) json_integer_value(json_object_get(eff, "io_depth"));
	*parts = NULL;
	if (json_is_array(p)) {
		size_t i;
		json_t *x;

		*parts = calloc(json_array_size(p), sizeof(**parts));
		if (*parts) {
			json_array_foreach(p, i, x)
				(*parts)[i] = (uint32_t) json_integer_value(x);
			qo->partitions = *parts;
			qo->npartitions = json_array_size(p);
		}
	}
}

/* Evict every file and measure the resident fraction (no refusal). */
static int evict_all(char **files, size_t n, cs_err *e)
{
	for (size_t i = 0; i < n; i++) {
		int rc = cv_cache_evict(files[i]);

		if (rc)
			return cs_err_set(e, CS_EXIT_INTERNAL, "%s: eviction failed: %s", files[i],
					  strerror(-rc));
	}
	return 0;
}

static double resident_fraction(char **files, size_t n)
{
	uint64_t pages = 0, res = 0;

	for (size_t i = 0; i < n; i++) {
		cv_residency r;

		if (cv_cache_residency(files[i], &r))
			return NAN;
		pages += r.pages;
		res += r.resident;
	}
	return pages ? (double) res / (double) pages : 0.0;
}

/*
 * A memory cap must hold what the run cannot do without, or the kernel
 * kills the run before it measures anything: the paged kinds' buffer pool
 * (the queries fill all of it; at least 16 blocks, as the engine's pool),
 * the per-query rows the run keeps (queries x repeats, about MEM_ROW_BYTES
 * each, at most ROWS_MAX a repeat) and MEM_HEADROOM for the harness. A cap
 * below that is bad input: exit 5 naming $.mem_cap_bytes and the figure.
 */
static int memcap_check(const json_t *eff, const cv_index *ix, uint64_t nq, unsigned nrep,
			const char *spec_path, cs_err *e)
{
	const json_t *c = json_object_get(eff, "mem_cap_bytes");
	uint64_t cap, pool = 0, rows, need;
	const char *kind = cv_index_kind(ix);

	if (!json_is_integer(c))
		return 0;
	cap = (uint64_t) json_integer_value(c);
	if (!strcmp(kind, "paged") || !strcmp(kind, "phnsw")) {
		uint64_t nb = (uint64_t) json_integer_value(json_object_get(eff, "buffers_bytes")) /
			      HARNESS_BLOCK;

		pool = (nb < 16 ? 16 : nb) * HARNESS_BLOCK;
	}
	rows = (nq < ROWS_MAX ? nq : ROWS_MAX) * (uint64_t) nrep * MEM_ROW_BYTES;
	need = pool + rows + MEM_HEADROOM;
	if (cap >= need)
		return 0;
	return cs_err_set(e, CS_EXIT_BADINPUT,
			  "%s: $.mem_cap_bytes: %llu bytes is below what the run must map, %llu "
			  "bytes (buffer pool %llu + per-query rows %llu + harness %llu); raise it "
			  "to at least %llu or lower buffers_bytes",
			  spec_path, (unsigned long long) cap, (unsigned long long) need,
			  (unsigned long long) pool, (unsigned long long) rows,
			  (unsigned long long) MEM_HEADROOM, (unsigned long long) need);
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

/* Record that the run did not complete (a deviation), keeping the ledger valid. */
static void record_abort(ledger *l, const char *run_id, const char *because)
{
	json_t *d = json_pack("{s:s, s:s, s:s}", "because", because, "run_id", run_id,
			      "access_state", ledger_access_state(l));
	cs_err le = {0};

	if (!d || ledger_append(l, "deviation", d, NULL, &le))
		fprintf(stderr, "coldstudy run: warning: deviation not recorded: %s\n", le.msg);
	json_decref(d);
}

/*
 * Before a repeat (or before the first when warm-up queries are asked):
 * nwarm untimed queries with one client, then, for a cold run, cold again
 * (buffers dropped, every file evicted, residency proven 0). A warm run's
 * resident fraction is measured again.
 */
static int before_repeat(ledger *l, load *L, cv_index *ix, const cv_dataset *queries, char **files,
			 size_t nfiles, uint64_t nwarm, int cold, double *resident_before, cs_err *e)
{
	cv_io *w = NULL;
	uint32_t *ids = NULL;
	float *d = NULL;
	int r = 0, rc;

	if (nwarm) {
		ids = calloc(L->k ? L->k : 1, sizeof(*ids));
		d = calloc(L->k ? L->k : 1, sizeof(*d));
		r = ids && d ? cv_io_new(&L->io, &w) : -ENOMEM;
		for (uint64_t i = 0; !r && i < nwarm && !got_signal; i++) {
			size_t nout;

			r = cv_index_query(ix, w, cv_row(queries, (size_t) (i % queries->n)), &L->qo, ids, d,
					   &nout, NULL);
		}
		cv_io_free(w);
		free(ids);
		free(d);
		if (r)
			return cs_err_set(e, CS_EXIT_INTERNAL, "warm-up query failed: %s", strerror(-r));
	}
	if (!cold) {
		*resident_before = resident_fraction(files, nfiles);
		return 0;
	}
	cv_index_drop_buffers(ix);
	rc = evict_all(files, nfiles, e);
	if (!rc)
		rc = guard_cold(l, files, nfiles, "run", resident_before, e);
	return rc;
}

/*
 * One repeat's metrics from the clients' rows and counters (appended to
 * reps; a virtual-time run's real-disk figures to reps_real), and its rows
 * appended to rowsj (with "repeat" when tag). mem_peak_bytes is set for the
 * whole run afterwards.
 */
static int repeat_metrics(const load *L, uint64_t t_end, int virt, int have_dev,
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
 */
static json_t *mean_metrics(const json_t *reps)
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

int harness_run(const char *dir, const char *spec_path, harness_run_opts *o, cs_err *e)
{
	ledger *l = NULL;
	json_t *raw = NULL, *study = NULL, *eff = NULL, *features = NULL, *marker = NULL;
	json_t *host = NULL, *memcap = NULL, *ios = NULL, *mems = NULL, *proms = NULL, *rowsj = NULL;
	json_t *rec = NULL, *metrics = NULL, *tmp;
	json_t *metrics_real = NULL, *vinfo = NULL, *treat = NULL, *reps = NULL, *reps_real = NULL;
	unsigned nrep = 1;
	uint64_t nwarm = 0, vd = 0, vh = 0;
	harness_readers *readers = NULL;
	harness_writer *writer = NULL;
	harness_blockset *pw = NULL;
	size_t npw = 0;
	int virt = 0;
	cv_dataset *qall = NULL, *queries = NULL, *base = NULL;
	int32_t *gt = NULL;
	cv_index *ix = NULL;
	cv_device *dev = NULL;
	harness_samplers *smp = NULL;
	char **files = NULL;
	size_t nfiles = 0;
	uint32_t *parts = NULL;
	pthread_t *th = NULL;
	client_arg *ca = NULL;
	load L;
	char sha[65], run_id[32], started[32], ended[32], cgdir[1024] = "";
	const char *index, *bspec, *index_shown = NULL;
	guard_prodset *prod = NULL;
	guard_held ihold, whold;
	cv_err ce = {{0}};
	cs_err le = {0};
	cv_blkdev bd;
	cv_blkstat bs0, bs1;
	int have_dev = 0, rc, cold, started_load = 0, run_started = 0, tty;
	double resident_before = 0.0;
	struct sigaction sa, old_int, old_term;
	uint64_t t_end, mem_peak = 0;
	harness_live live;
	harness_throttle thr;
	uint64_t thr_reads = 0, thr_bytes = 0;
	harness_mem_peak mp = {0};
	json_t *smp_health = NULL, *mempeak = NULL;
	int recorded = 0; /* the run record or a deviation names the run */
	count_ctx cc = {0};
	ledger_plan plan = {0};
	json_t *tags = NULL;
	const char *cls = "exploratory";
	char class_why[512] = "";
	json_t *qrows = NULL, *reached = NULL;
	int cli_seed = 0, beyond = 0;
	int holdout = 0, repeat = 0;

	memset(&L, 0, sizeof(L));
	harness_live_init(&live);
	harness_throttle_init(&thr);
	guard_held_init(&ihold);
	guard_held_init(&whold);
	pthread_mutex_init(&L.mu, NULL);
	got_signal = 0;
	tty = o->progress < 0 ? isatty(2) : o->progress;
	/* From here on SIGINT/SIGTERM stop the run cleanly instead of killing it mid-write. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);

	rc = ledger_open(dir, &l, e);
	if (rc)
		goto out;
	rc = harness_run_load(spec_path, &raw, sha, e);
	if (rc)
		goto out;
	rc = guard_study(l, "run", &study, e);
	if (rc)
		goto out;
	rc = harness_run_effective(raw, json_object_get(study, "defaults"), &eff, e);
	if (rc)
		goto out;
	rc = harness_run_validate(eff, spec_path, "$(with study defaults)", 0, e);
	if (rc)
		goto out;
	rc = harness_run_check_treatments(eff, spec_path, e);
	if (rc)
		goto out;
	if (json_is_string(json_object_get(eff, "target")) &&
	    !strcmp(json_string_value(json_object_get(eff, "target")), "postgres")) {
		/* A PostgreSQL clone: its own phases (pgrun.c), the same guards and record. */
		if ((rc = guard_prodset_load(l, &prod, e)) ||
		    (rc = run_guard_inputs(l, prod, study, eff, &ihold, &whold, e)))
			goto out;
		rc = harness_pg_run(l, prod, study, eff, sha, spec_path, o, e);
		goto out;
	}
	cli_seed = o->has_seed;
	if (json_is_integer(json_object_get(eff, "seed"))) {
		uint64_t reg = derived_seed((uint64_t) json_integer_value(json_object_get(eff, "seed")),
					    study, o->replicate);

		if (o->has_seed && o->seed != reg) {
			rc = cs_err_set(e, CS_EXIT_USAGE,
					"%s: $.seed: the spec registers seed %llu (replicate %u, the study's "
					"seed mixed in: %llu); --seed %llu contradicts it",
					spec_path,
					(unsigned long long) json_integer_value(json_object_get(eff, "seed")),
					o->replicate ? o->replicate : 1, (unsigned long long) reg,
					(unsigned long long) o->seed);
			goto out;
		}
		o->seed = reg;
		o->has_seed = 1;
	}
	if (json_is_integer(json_object_get(eff, "repeat")))
		nrep = (unsigned) json_integer_value(json_object_get(eff, "repeat"));
	if (json_is_integer(json_object_get(eff, "warmup_queries")))
		nwarm = (uint64_t) json_integer_value(json_object_get(eff, "warmup_queries"));
	virt = json_is_string(json_object_get(eff, "device_time")) &&
	       !strcmp(json_string_value(json_object_get(eff, "device_time")), "virtual");
	if (json_is_array(json_object_get(eff, "client_cpus")) &&
	    (rc = harness_cpuset_check(json_object_get(eff, "client_cpus"), e))) {
		char m[CS_ERR_MAX];

		snprintf(m, sizeof(m), "%s", e->msg);
		rc = cs_err_set(e, rc, "%s: %s", spec_path, m);
		goto out;
	}
	index = json_string_value(json_object_get(eff, "index"));

	/* 1. guards */
	if (o->enforce_clean) {
		const char *pd = o->project_dir ? o->project_dir : getenv("COLDSTUDY_SRC");

		rc = guard_clean_tree(l, pd ? pd : ".", "run", e);
		if (rc)
			goto out;
	}
	if ((rc = guard_validated(l, "run", e)) ||
	    (rc = guard_hypotheses(l, json_object_get(eff, "hypotheses"), "run", e)))
		goto out;
	/*
	 * Every path the run acts on is resolved once and checked on the held
	 * descriptor; from here on the index is opened, listed, evicted and
	 * measured only through the hold (ihold.via), so swapping a symlink or
	 * renaming a directory after this point changes nothing.
	 */
	if ((rc = guard_prodset_load(l, &prod, e)) ||
	    (rc = guard_existing(l, prod, index, AT_FDCWD, "run", "index", &ihold, e)) ||
	    (rc = guard_clone(l, ledger_dir(l), guard_held_via(&ihold), "run", 0, &marker, e)) ||
	    (rc = run_guard_inputs(l, prod, study, eff, &ihold, &whold, e)))
		goto out;
	index_shown = index;
	index = guard_held_via(&ihold);
	/* what the run is comes from the plan, by its spec hash, not from the flag */
	if ((rc = ledger_plan_load(l, 0, &plan, e)) ||
	    (rc = guard_run_plan(l, &plan, sha, o->holdout, "run", &holdout, e)))
		goto out;
	cls = plan.plan || !holdout ? ledger_plan_class(&plan, sha) : "holdout";
	/* evidence bound to the plan: its seed, its clone's content */
	if (cli_seed && (rc = guard_plan_seed(l, cls, json_is_integer(json_object_get(eff, "seed")),
					      spec_path, "run", e)))
		goto out;
	if (!strcmp(cls, "design") || !strcmp(cls, "sceptic")) {
		rc = guard_plan_clone(l, cls, index_shown,
				      json_string_value(json_object_get(marker, "source_sha256")),
				      class_why, sizeof(class_why), e);
		if (rc)
			goto out;
		if (class_why[0]) {
			cls = "exploratory";
			fprintf(stderr, "coldstudy run: %s\n", class_why);
		}
	}
	if (holdout && (rc = guard_holdout_predictions(l, sha, "run", e)))
		goto out;

	/* Inputs: queries, base and exact ground truth (cached), the index, the device. */
	{
		const json_t *q = json_object_get(eff, "queries");
		const char *qspec = harness_dataset_spec(study, json_string_value(json_object_get(q, "spec")));
		/* with queries.draw, this replicate's own rows out of the registered range */
		uint64_t first = harness_query_first(eff, study, o->replicate);
		uint64_t count;
		int r;

		r = cv_dataset_load(guard_dataset_via(qspec), &qall, &ce);
		if (r) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.queries.spec: %s", spec_path, ce.msg);
			goto out;
		}
		count = json_is_integer(json_object_get(q, "count"))
				? (uint64_t) json_integer_value(json_object_get(q, "count"))
				: (first < qall->n ? qall->n - first : 0);
		if (first >= qall->n || count > qall->n - first || !count) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"%s: $.queries: rows [%llu, %llu) are outside the %zu queries of %s",
					spec_path, (unsigned long long) first,
					(unsigned long long) (first + count), qall->n, qspec);
			goto out;
		}
		if (cv_dataset_slice(qall, first, count, &queries)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory slicing queries");
			goto out;
		}
		L.first_id = first;
	}
	/* what the run reads, by the rows it resolves to, not by how its spec spells them */
	qrows = harness_query_digests(queries);
	if (holdout) {
		json_t *ov = json_copy(eff);

		if (ov && qrows)
			json_object_set(ov, "query_rows", qrows);
		rc = ov ? guard_holdout_overlap(l, ov, o->declare_overlap, "run", e)
			: cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		json_decref(ov);
		if (rc)
			goto out;
	} else if (qrows && !predictions_made(l)) {
		/* a run that reads what a holdout target holds out, before the predictions */
		rc = harness_holdout_reached(l, study, eff, qrows, &reached, e);
		if (rc)
			goto out;
		if (json_array_size(reached))
			fprintf(stderr, "coldstudy run: this run reads what %zu holdout target(s) hold "
				"out (first: %s, %s): they are marked seen before the predictions\n",
				json_array_size(reached),
				json_string_value(json_object_get(json_array_get(reached, 0), "target")),
				json_string_value(json_object_get(json_array_get(reached, 0), "why")));
	}
	{
		cv_open_opts oo;
		int r;

		cv_open_opts_default(&oo);
		oo.buffers_bytes = (uint64_t) json_integer_value(json_object_get(eff, "buffers_bytes"));
		oo.flags = json_is_true(json_object_get(eff, "readahead")) ? CV_FILE_READAHEAD : 0;
		r = cv_index_open(index, &oo, &ix, &ce);
		if (r) {
			rc = cs_err_set(e, errno_exit(r), "%s: %s", index_shown, ce.msg);
			goto out;
		}
		if (cv_index_dim(ix) != queries->d) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"%s: $.queries: queries have %zu dimensions, the index %zu",
					spec_path, queries->d, cv_index_dim(ix));
			goto out;
		}
		/* Partitions the index does not have: bad input, named, before anything runs. */
		{
			const json_t *pj = json_object_get(eff, "partitions"), *x;
			unsigned np = cv_index_partitions(ix);
			size_t i;

			json_array_foreach(pj, i, x) {
				if (json_integer_value(x) >= (json_int_t) np) {
					rc = cs_err_set(e, CS_EXIT_BADINPUT,
							"%s: $.partitions[%zu]: partition %lld is out of "
							"range: %s has %u partition%s (0..%u)",
							spec_path, i, (long long) json_integer_value(x),
							index, np, np == 1 ? "" : "s", np ? np - 1 : 0);
					goto out;
				}
			}
		}
	}
	L.k = (size_t) json_integer_value(json_object_get(eff, "k"));
	L.metric = cv_index_metric(ix);
	if (json_is_string(json_object_get(eff, "metric")))
		cv_metric_parse(json_string_value(json_object_get(eff, "metric")), &L.metric);
	bspec = base_spec(l, study, eff, index);
	/* a base found through the study (no $.base) is checked as $.base is */
	if (bspec && (rc = guard_dataset(l, prod, bspec, "run", "the study's base dataset", e)))
		goto out;
	if (bspec) {
		int r = cv_dataset_load(guard_dataset_via(bspec), &base, &ce);

		if (r) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.base: %s", spec_path, ce.msg);
			goto out;
		}
		if (base->d != queries->d) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.base: %zu dimensions, queries %zu",
					spec_path, base->d, queries->d);
			goto out;
		}
		r = cv_groundtruth_cached(base, queries, L.k, L.metric, 0, NULL, &gt, &ce);
		if (r) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "ground truth: %s", ce.msg);
			goto out;
		}
	}
	if (json_is_string(json_object_get(eff, "device"))) {
		int r = cv_device_new(json_string_value(json_object_get(eff, "device")), 42, &dev, &ce);

		if (r) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.device: %s", spec_path, ce.msg);
			goto out;
		}
	}
	if (json_is_string(json_object_get(eff, "throttle"))) {
		harness_cap cap;
		int r;

		/* a real cap on the held clone's whole disk; its readers join it below */
		r = harness_cap_parse(json_string_value(json_object_get(eff, "throttle")), &cap, e);
		if (!r)
			r = harness_throttle_begin(&cap, ihold.fd, &thr, e);
		/* v2: one process, one cgroup; the memory cap's cgroup and the throttle's exclude each other */
		if (!r && thr.v2 && json_is_integer(json_object_get(eff, "mem_cap_bytes")))
			r = cs_err_set(e, CS_EXIT_BADINPUT,
				       "cgroup v2 puts the whole process in one cgroup: a throttle and "
				       "mem_cap_bytes cannot both apply (drop one)");
		if (r) {
			char m[CS_ERR_MAX];

			snprintf(m, sizeof(m), "%s", e->msg);
			rc = cs_err_set(e, r, "%s: $.throttle: %s", spec_path, m);
			goto out;
		}
	}
	query_opts(eff, &L.qo, &parts);
	L.qo.k = L.k;
	cv_io_opts_default(&L.io);
	cv_io_strategy_parse(json_string_value(json_object_get(eff, "strategy")), &L.io.strategy);
	if (json_is_integer(json_object_get(eff, "queue_depth")))
		L.io.queue_depth = (unsigned) json_integer_value(json_object_get(eff, "queue_depth"));
	L.io.device = virt ? NULL : dev; /* virtual: real reads, replayed afterwards */
	L.vdev = virt ? dev : NULL;
	L.cpus = json_is_array(json_object_get(eff, "client_cpus")) ? json_object_get(eff, "client_cpus")
								    : NULL;
	if (L.qo.mode == CV_MODE_FANOUT && L.qo.fanout > (L.io.queue_depth ? L.io.queue_depth : 64))
		L.io.queue_depth = L.qo.fanout;
	L.ix = ix;
	L.queries = queries;
	L.base = base;
	L.gt = gt;
	L.clients = (unsigned) json_integer_value(json_object_get(eff, "clients"));
	if (json_is_integer(json_object_get(eff, "query_count")))
		L.query_count = (uint64_t) json_integer_value(json_object_get(eff, "query_count"));
	else if (!json_is_number(json_object_get(eff, "duration_s")))
		L.query_count = queries->n;
	if (cv_index_files(index, &files, &nfiles) || !nfiles) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot list the index files", index_shown);
		goto out;
	}
	L.files = files;
	L.nfiles = nfiles;
	{
		/* the index's figures through the held directory, never its spelling again */
		json_t *held = json_copy(eff);

		if (!held) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		} else {
			json_object_set_new(held, "index", json_string(index));
			rc = harness_spec_features(held, &features, e);
			json_decref(held);
		}
	}
	if (rc)
		goto out;
	if (json_is_null(json_object_get(features, "partitions")))
		json_object_set_new(features, "partitions",
				    json_integer((json_int_t) (parts ? json_array_size(json_object_get(eff, "partitions"))
								     : cv_index_partitions(ix))));

	rc = harness_run_tags(eff, json_object_get(study, "defaults"),
			      json_string_value(json_object_get(features, "kind")), cls, spec_path,
			      &tags, e);
	if (rc)
		goto out;

	rc = memcap_check(eff, ix, L.query_count, nrep, spec_path, e);
	if (rc)
		goto out;

	if (got_signal) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "interrupted before the run started; nothing recorded");
		goto out;
	}

	/* 2. run_start */
	if (ledger_foreach(l, "run_start", count_cb, &cc, e)) {
		rc = e->code ? e->code : CS_EXIT_INTERNAL;
		goto out;
	}
	snprintf(run_id, sizeof(run_id), "R%04lld", (long long) cc.n + 1);
	snprintf(o->run_id, sizeof(o->run_id), "%s", run_id);
	/* a holdout target run again: a deviation; its first run stays the observation */
	if (holdout && (rc = guard_holdout_repeat(l, sha, run_id, "run", &repeat, e)))
		goto out;
	/* a planned spec run beyond its registered count: a deviation, excluded from decisions */
	if ((rc = guard_plan_runs(l, sha, cls, harness_spec_replicates(eff), run_id, "run",
				  &beyond, e)))
		goto out;
	if (beyond)
		fprintf(stderr, "coldstudy run: %s is run beyond the plan's %u registered run(s) of "
			"this spec: recorded as a deviation, excluded from verdicts and models\n",
			run_id, harness_spec_replicates(eff));
	/* held until the run record or a deviation is in: a later command knows a live run */
	rc = harness_live_begin(ledger_dir(l), run_id, &live, e);
	if (rc)
		goto out;
	tmp = json_pack("{s:s, s:s, s:b, s:s}", "run_id", run_id, "spec_sha256", sha, "holdout",
			holdout, "class", cls);
	rc = ledger_append(l, "run_start", tmp, NULL, e);
	json_decref(tmp);
	if (rc)
		goto out;
	run_started = 1;
	/* The run's random stream: its own, the spec's, or the one asked for to replay a run. */
	L.seed = o->has_seed ? o->seed : derived_seed(run_seed(run_id, sha), study, 0);
	o->seed_used = L.seed;
	if (dev && cv_device_reseed(dev, L.seed)) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory seeding the device model");
		goto out;
	}

	/* Prewarm: record the blocks each query (or another query) reads, before the cold state. */
	if (json_is_object(json_object_get(eff, "prewarm"))) {
		const json_t *p = json_object_get(eff, "prewarm");
		int other = !strcmp(json_string_value(json_object_get(p, "of")), "other");
		uint64_t off = json_is_integer(json_object_get(p, "offset"))
				       ? (uint64_t) json_integer_value(json_object_get(p, "offset"))
				       : queries->n;
		cv_io *w = NULL;
		uint32_t *ids = calloc(L.k, sizeof(*ids));
		float *d = calloc(L.k, sizeof(*d));
		cv_io_opts wo = L.io;
		int r;

		wo.device = NULL;
		wo.trace = NULL;
		npw = queries->n;
		pw = calloc(npw, sizeof(*pw));
		r = (!ids || !d || !pw) ? -ENOMEM : cv_io_new(&wo, &w);
		for (size_t q = 0; !r && q < npw; q++) {
			cv_block_list bl = {0};
			cv_query_opts qo = L.qo;
			size_t nout;
			const float *v = other ? cv_row(qall, (L.first_id + q + off) % qall->n)
					       : cv_row(queries, q);

			qo.blocks = &bl;
			cv_index_drop_buffers(ix); /* every block the query needs, not only pool misses */
			r = cv_index_query(ix, w, v, &qo, ids, d, &nout, NULL);
			if (!r)
				r = harness_blockset_from(&bl, &pw[q]);
			free(bl.file);
			free(bl.block);
		}
		cv_io_free(w);
		free(ids);
		free(d);
		if (r) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "recording the prewarm block lists: %s",
					strerror(-r));
			goto out;
		}
		L.pw = pw;
		treat = json_object();
		{
			uint64_t nb = 0;

			for (size_t q = 0; q < npw; q++)
				nb += pw[q].n;
			json_object_set_new(treat, "prewarm",
					    json_pack("{s:s, s:I, s:f, s:s}", "of",
						      other ? "other" : "self", "offset",
						      (json_int_t) (other ? off : 0), "blocks_mean",
						      npw ? (double) nb / (double) npw : 0.0,
						      "method",
						      "block list recorded by a query pass (cv_block_list), "
						      "then per query: drop buffers, evict, residency 0, "
						      "cv_cache_prewarm"));
		}
	}

	/* 3. cold or warm */
	cold = json_is_true(json_object_get(eff, "cold"));
	L.each = cold && json_is_true(json_object_get(eff, "cold_each_query"));
	/* A cgroup of its own for every run (capped or not): one peak-memory counter. */
	memcap = harness_memcap_apply(json_is_integer(json_object_get(eff, "mem_cap_bytes"))
					      ? (uint64_t) json_integer_value(json_object_get(eff, "mem_cap_bytes"))
					      : 0,
				      cgdir, sizeof(cgdir));
	harness_live_cgroup(&live, memcap);
	if (cold) {
		cv_index_drop_buffers(ix);
		rc = evict_all(files, nfiles, e);
		if (rc)
			goto out;
		rc = guard_cold(l, files, nfiles, "run", &resident_before, e);
		if (rc)
			goto out;
	} else {
		/* One pass over the queries with one client warms cache and buffers. */
		cv_io *w = NULL;
		uint32_t *ids = calloc(L.k, sizeof(*ids));
		float *d = calloc(L.k, sizeof(*d));
		int r = cv_io_new(&L.io, &w);

		for (size_t q = 0; !r && ids && d && q < queries->n && !got_signal; q++) {
			size_t nout;

			r = cv_index_query(ix, w, cv_row(queries, q), &L.qo, ids, d, &nout, NULL);
		}
		cv_io_free(w);
		free(ids);
		free(d);
		if (r) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "warm-up query failed: %s", strerror(-r));
			goto out;
		}
		resident_before = resident_fraction(files, nfiles);
	}
	host = harness_host_capture(index);

	/* 4. the load */
	have_dev = cv_blkdev_for_path(index, &bd, NULL) == 0 && cv_blkdev_stat(&bd, &bs0) == 0;
	{
		const json_t *s = json_object_get(eff, "samplers");
		harness_sampler_opts so = {
			.dev = have_dev ? &bd : NULL,
			.iostat_s = json_number_value(json_object_get(s, "iostat_s")),
			.memory_s = json_number_value(json_object_get(s, "memory_s")),
			.prometheus_s = json_number_value(json_object_get(s, "prometheus_s")),
			.prometheus_url = json_string_value(json_object_get(s, "prometheus_url")),
			/* fatal: stop the load at the first failed sample, not after it */
			.on_fail = json_is_true(json_object_get(s, "fatal")) ? sampler_failed : NULL,
			.on_fail_ud = &L,
		};

		rc = harness_samplers_start(&so, &smp, e);
		if (rc)
			goto out;
	}
	L.rows = calloc(L.clients, sizeof(*L.rows));
	L.nrows = calloc(L.clients, sizeof(*L.nrows));
	L.caprows = calloc(L.clients, sizeof(*L.caprows));
	L.stats = calloc(L.clients, sizeof(*L.stats));
	L.placement = calloc(L.clients, sizeof(*L.placement));
	th = calloc(L.clients, sizeof(*th));
	ca = calloc(L.clients, sizeof(*ca));
	if (!L.rows || !L.nrows || !L.caprows || !L.stats || !L.placement || !th || !ca) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	/*
	 * Competing load starts before the first query and stops after the
	 * last; in virtual time it is modelled beside each query's replay, in
	 * the same device queues, and no thread runs.
	 */
	if (virt) {
		const json_t *ld = json_object_get(eff, "load"), *bw = json_object_get(eff, "bulkwrite");

		if (json_is_object(ld)) {
			L.bg.readers = (unsigned) json_integer_value(json_object_get(ld, "readers"));
			L.bg.reader_bytes = json_is_integer(json_object_get(ld, "block_bytes"))
						    ? (uint32_t) json_integer_value(json_object_get(ld, "block_bytes"))
						    : HARNESS_BLOCK;
		}
		if (json_is_object(bw)) {
			L.bg.write_chunk = json_is_integer(json_object_get(bw, "chunk_bytes"))
						   ? (uint64_t) json_integer_value(json_object_get(bw, "chunk_bytes"))
						   : (uint64_t) 1 << 20;
			L.bg.write_sync = json_is_integer(json_object_get(bw, "sync_bytes"))
						  ? (uint64_t) json_integer_value(json_object_get(bw, "sync_bytes"))
						  : (uint64_t) 8 << 20;
		}
		L.has_bg = L.bg.readers > 0 || L.bg.write_chunk > 0;
	}
	if (!virt && json_is_object(json_object_get(eff, "load"))) {
		const json_t *ld = json_object_get(eff, "load");
		uint32_t blk = json_is_integer(json_object_get(ld, "block_bytes"))
				       ? (uint32_t) json_integer_value(json_object_get(ld, "block_bytes"))
				       : HARNESS_BLOCK;

		/* under a throttle the competing readers are capped with the queries */
		if ((rc = harness_throttle_enter(&thr))) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot join: %s", thr.dir, strerror(-rc));
			goto out;
		}
		rc = harness_readers_start(files, nfiles,
					   (unsigned) json_integer_value(json_object_get(ld, "readers")),
					   blk, L.io.device, &readers, e);
		if (!thr.v2) /* v1: the readers stay, this thread goes; v2: the process stays for the load */
			harness_throttle_leave(&thr);
		if (rc)
			goto out;
	}
	if (!virt && json_is_object(json_object_get(eff, "bulkwrite"))) {
		const json_t *bw = json_object_get(eff, "bulkwrite");
		const char *wd = guard_held_via(&whold); /* checked and made by run_guard_inputs */
		rc = harness_writer_start(
			wd, index,
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
			dev, &writer, e);
		if (rc)
			goto out;
	}
	cs_format_rfc3339(cs_now_us(), started);
	L.t0 = cs_mono_ns();
	rowsj = json_array();
	reps = json_array();
	reps_real = json_array();
	if (!rowsj || !reps || !reps_real) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	/*
	 * The load, `repeat` times: each repeat starts from the run's state
	 * (cold: evicted and proven cold again; warm: as the last left it),
	 * after `warmup_queries` untimed queries, and gives its own metrics;
	 * its per-query rows are taken out of the clients' buffers into rowsj.
	 */
	for (unsigned rep = 0; rep < nrep; rep++) {
		if (rep > 0 || nwarm > 0) {
			rc = before_repeat(l, &L, ix, queries, files, nfiles, nwarm, cold,
					   &resident_before, e);
			if (rc)
				goto out;
		}
		if (have_dev && cv_blkdev_stat(&bd, &bs0))
			have_dev = 0;
		atomic_store(&L.next, 0);
		atomic_store(&L.done, 0);
		atomic_store(&L.start_ns, 0);
		atomic_store(&L.end_ns, 0);
		atomic_store(&L.vlat_ns, 0);
		L.rep = rep;
		L.deadline_ns = 0;
		if (json_is_number(json_object_get(eff, "duration_s")))
			L.deadline_ns = cs_mono_ns() +
					(uint64_t) (json_number_value(json_object_get(eff, "duration_s")) * 1e9);
		/*
		 * Under a throttle this thread joins the cgroup only while it starts
		 * the clients: they (and the readers they start) stay capped, the
		 * harness does not.
		 */
		if (thr.dirfd >= 0 && (rc = harness_throttle_enter(&thr))) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot join: %s", thr.dir, strerror(-rc));
			goto out;
		}
		for (unsigned c = 0; c < L.clients; c++) {
			L.nrows[c] = 0;
			ca[c].L = &L;
			ca[c].c = c;
			if (pthread_create(&th[c], NULL, client, &ca[c])) {
				fail(&L, "cannot start client thread", -EAGAIN);
				L.clients = c;
				break;
			}
		}
		if (!thr.v2) /* v1: the clients stay, this thread goes; v2: the process stays for the load */
			harness_throttle_leave(&thr);
		started_load = 1;
		for (;;) {
			struct timespec ts = {0, 50 * 1000 * 1000};
			uint64_t d = atomic_load(&L.done);
			int finished = (L.query_count && d >= L.query_count) ||
				       (L.deadline_ns && cs_mono_ns() >= L.deadline_ns) ||
				       atomic_load(&L.failed) || got_signal;

			if (finished)
				break;
			if (tty)
				progress(&L, L.query_count, 0);
			nanosleep(&ts, NULL);
		}
		for (unsigned c = 0; c < L.clients; c++)
			pthread_join(th[c], NULL);
		while (thr.v2 && thr.entered) /* the load is over: the process goes back */
			harness_throttle_leave(&thr);
		/* Wall ends when the last query returned, not when this thread noticed. */
		t_end = atomic_load(&L.end_ns) ? atomic_load(&L.end_ns) : cs_mono_ns();
		if (tty)
			progress(&L, L.query_count, 1);
		if (have_dev && cv_blkdev_stat(&bd, &bs1))
			have_dev = 0;
		if (got_signal || atomic_load(&L.failed))
			break;
		if (thr.dirfd >= 0 && harness_throttle_counters(&thr, &thr_reads, &thr_bytes) < 0)
			thr_reads = thr_bytes = 0;
		rc = repeat_metrics(&L, t_end, virt, have_dev, &bs0, &bs1, resident_before, nrep > 1,
				    reps, reps_real, rowsj, &vd, &vh, e);
		if (rc)
			goto out;
	}
	if (readers || writer) {
		cs_err te = {0};
		json_t *rj = readers ? harness_readers_stop(readers, &te) : NULL;
		json_t *wj = NULL;

		if (readers && !rj) {
			readers = NULL;
			harness_writer_stop(writer, NULL);
			writer = NULL;
			fail(&L, te.msg, -EIO);
		} else {
			readers = NULL;
			wj = writer ? harness_writer_stop(writer, &te) : NULL;
			if (writer && !wj)
				fail(&L, te.msg, -EIO);
			writer = NULL;
		}
		if (!treat)
			treat = json_object();
		if (rj)
			json_object_set_new(treat, "load", rj);
		if (wj)
			json_object_set_new(treat, "bulkwrite", wj);
	}
	if (L.has_bg) {
		/* the competing work as the model ran it beside the replays */
		if (!treat)
			treat = json_object();
		if (L.bg.readers)
			json_object_set_new(
				treat, "load",
				json_pack("{s:I, s:I, s:s, s:I, s:I, s:o, s:b, s:s}", "readers",
					  (json_int_t) L.bg.readers, "block_bytes",
					  (json_int_t) L.bg.reader_bytes, "strategy", "model",
					  "queue_depth", (json_int_t) 1, "reads", (json_int_t) L.bg_reads,
					  "read_ms_mean",
					  L.bg_reads ? json_real(L.bg_read_ms / (double) L.bg_reads)
						     : json_null(),
					  "through_model", 1, "device_time", "virtual"));
		if (L.bg.write_chunk)
			json_object_set_new(
				treat, "bulkwrite",
				json_pack("{s:I, s:I, s:I, s:b, s:s, s:s}", "bytes_written",
					  (json_int_t) L.bg_written, "chunk_bytes",
					  (json_int_t) L.bg.write_chunk, "sync_bytes",
					  (json_int_t) L.bg.write_sync, "through_model", 1,
					  "device_time", "virtual", "method",
					  "modelled beside each query's replay, from its steady state; "
					  "no bytes written to the real disk; max_bytes and max_s do "
					  "not apply"));
	}
	cs_format_rfc3339(cs_now_us(), ended);
	harness_samplers_stop(smp, &ios, &mems, &proms, &mp, &smp_health);
	smp = NULL;
	if (got_signal) {
		char why[256];

		snprintf(why, sizeof(why), "run %s interrupted by %s after %llu queries; no run record",
			 run_id, got_signal == SIGINT ? "SIGINT" : "SIGTERM",
			 (unsigned long long) atomic_load(&L.done));
		record_abort(l, run_id, why);
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s", why);
		goto out;
	}
	if (atomic_load(&L.failed)) {
		char why[400];

		snprintf(why, sizeof(why), "run %s failed: %s; no run record", run_id, L.fail_msg);
		record_abort(l, run_id, why);
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s", why);
		goto out;
	}
	{
		char swhy[600], why[700];

		if (!smp_health) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
		if (harness_samplers_judge(smp_health, eff, run_id, swhy, sizeof(swhy))) {
			snprintf(why, sizeof(why), "run %s failed: %s; samplers.fatal; no run record",
				 run_id, swhy);
			record_abort(l, run_id, why);
			recorded = 1;
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s", why);
			goto out;
		}
	}

	/*
	 * 4b. the held identities again: a clone whose files were swapped, linked
	 * or replaced while the run read them (a race the hold cannot stop: a name
	 * inside the index exchanged with production's inode) may have read
	 * production. Such a run is a deviation and a refusal, never a run record.
	 */
	{
		cs_err ge = {0};
		char why[1400];

		if (guard_clone(NULL, ledger_dir(l), index, "run", 0, NULL, &ge) ||
		    guard_check_held(NULL, prod, &ihold, "run", "index", &ge)) {
			snprintf(why, sizeof(why),
				 "run %s: after the run the index no longer held what was checked (%s); "
				 "it may have read production; no run record",
				 run_id, ge.msg);
			record_abort(l, run_id, why);
			recorded = 1;
			rc = guard_refuse(l, "production", "run", index_shown, e, "%s", why);
			goto out;
		}
	}

	/* 5. metrics: one repeat's as they are; several repeats' means (the spread in reports) */
	{
		mempeak = mem_peak_of(memcap, cgdir, &mp, &mem_peak);
		/* One peak for the whole run: the repeats share the process. */
		set_all(reps, "mem_peak_bytes", (json_int_t) mem_peak);
		set_all(reps_real, "mem_peak_bytes", (json_int_t) mem_peak);
		metrics = nrep > 1 ? mean_metrics(reps) : json_incref(json_array_get(reps, 0));
		if (virt)
			metrics_real = nrep > 1 ? mean_metrics(reps_real)
						: json_incref(json_array_get(reps_real, 0));
		if (!metrics || (virt && !metrics_real)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
		if (virt) {
			char desc[1024];

			vinfo = json_pack("{s:s, s:s, s:I, s:I, s:s}", "device",
					  cv_device_name(dev), "model",
					  cv_device_describe(dev, desc, sizeof(desc)), "device_reads",
					  (json_int_t) vd, "prewarm_hit_reads", (json_int_t) vh,
					  "replay",
					  L.has_bg
						  ? "each query's read trace replayed on the device model with the "
						    "run's competing readers and bulk writes in the same queues "
						    "(cv_device_simulate_load); a client's queries back to back "
						    "with their real gaps; clients do not contend with each other"
						  : "each query's read trace replayed alone on the device model "
						    "(cv_device_simulate); a client's queries back to back with "
						    "their real gaps; clients do not contend with each other");
		}
	}

	/* 6. one transaction: the raw series and the run record */
	{
		json_t *ixj, *rawj;

		rc = harness_record_begin(l, rowsj, ios, mems, proms, &rawj, e);
		if (rc)
			goto out;
		/* What was read: the held directory's identity, whatever its spelling resolved to later. */
		ixj = json_pack("{s:s, s:s, s:{s:O, s:O}, s:I, s:I}", "kind", cv_index_kind(ix), "dir",
				index_shown, "clone", "method", json_object_get(marker, "method"),
				"source_sha256", json_object_get(marker, "source_sha256"), "dev",
				(json_int_t) ihold.st.st_dev, "ino", (json_int_t) ihold.st.st_ino);
		rec = json_pack("{s:s, s:O, s:s, s:O, s:O, s:b, s:o, s:O, s:O, s:o,"
				" s:O, s:s, s:s, s:s, s:O, s:o}",
				"run_id", run_id, "spec", eff, "spec_sha256", sha, "tags", tags,
				"hypotheses", json_object_get(eff, "hypotheses"), "holdout", holdout,
				"index", ixj, "features", features, "metrics", metrics, "raw", rawj,
				"host", host, "started", started, "ended", ended, "status", "complete",
				"mem_cap", memcap, "device_stats",
				have_dev ? json_pack("{s:b, s:s}", "available", 1, "device", bd.part)
					 : json_pack("{s:b}", "available", 0));
		if (!rec) {
			ledger_rollback(l);
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "cannot build the run record");
			goto out;
		}
		json_object_set_new(rec, "device_time",
				    dev ? json_string(virt ? "virtual" : "realtime") : json_null());
		/* the model's random stream: `run --seed` with it replays the run's draws */
		json_object_set_new(rec, "device_seed",
				    dev ? json_integer((json_int_t) L.seed) : json_null());
		json_object_set_new(rec, "class", json_string(cls));
		json_object_set(rec, "labels", json_object_get(eff, "tags"));
		/* each sampler's tries and failures; how mem_peak_bytes was had */
		json_object_set(rec, "samplers", smp_health);
		json_object_set(rec, "mem_peak", mempeak);
		if (ledger_plan_path(&plan, sha))
			json_object_set_new(rec, "plan_path", json_string(ledger_plan_path(&plan, sha)));
		if (repeat)
			json_object_set_new(rec, "holdout_repeat", json_true());
		if (thr.dirfd >= 0) {
			/* the cap, the controller and the kernel's own count beside the engine's */
			json_t *tj = harness_throttle_record(&thr, thr_reads, thr_bytes);
			json_t *er = json_object_get(metrics, "engine_reads");

			json_object_set(tj, "engine_reads", er ? er : json_null());
			json_object_set(tj, "device_reads", json_object_get(metrics, "device_reads") ?: json_null());
			json_object_set_new(tj, "note",
					    json_string(nrep > 1 ? "throttle counts are the whole run's (all repeats"
								   " and competing readers); engine and device "
								   "reads are the repeats' means"
								 : "throttle counts include competing readers "
								   "(load), if any"));
			json_object_set_new(rec, "throttle", tj);
		}
		/* which of the spec's registered replicates, and its group (the first's run id) */
		json_object_set_new(rec, "replicate",
				    json_pack("{s:I, s:I, s:s}", "index",
					      (json_int_t) (o->replicate ? o->replicate : 1), "of",
					      (json_int_t) harness_spec_replicates(raw), "group",
					      o->group ? o->group : run_id));
		if (json_is_integer(json_object_get(json_object_get(eff, "queries"), "draw")))
			json_object_set_new(json_object_get(rec, "replicate"), "queries_first",
					    json_integer((json_int_t) L.first_id));
		if (beyond)
			json_object_set_new(rec, "beyond_plan", json_true());
		if (class_why[0])
			json_object_set_new(rec, "class_why", json_string(class_why));
		json_object_set_new(rec, "versions", harness_versions(dev));
		if (qrows && json_array_size(qrows) <= QUERY_ROWS_RECORDED)
			json_object_set(rec, "query_rows", qrows);
		if (json_array_size(reached))
			json_object_set(rec, "holdout_reached", reached);
		/* The file the run was asked with, as given (runs tables name it). */
		json_object_set_new(rec, "spec_file", json_string(spec_path));
		if (virt) {
			json_object_set(rec, "metrics_real", metrics_real);
			json_object_set(rec, "virtual", vinfo);
		}
		if (treat)
			json_object_set(rec, "treatments", treat);
		if (nrep > 1) {
			/* Each repeat's metrics; `metrics` holds their means. */
			json_object_set(rec, "repeats", reps);
			if (virt)
				json_object_set(rec, "repeats_real", reps_real);
		}
		if (L.cpus) {
			json_t *pl = json_array();

			for (unsigned c = 0; c < L.clients; c++)
				json_array_append(pl, L.placement[c] ? L.placement[c] : json_null());
			json_object_set_new(rec, "client_placement",
					    json_pack("{s:O, s:o, s:o}", "asked", L.cpus, "clients", pl,
						      "harness", harness_affinity_now()));
		}
		rc = ledger_append(l, "run", rec, NULL, e);
		if (rc) {
			ledger_rollback(l);
			goto out;
		}
		rc = ledger_commit(l, e);
		if (rc)
			goto out;
		recorded = 1;
	}
	rc = 0;
out:
	if (run_started && got_signal && !started_load) {
		char why[256];

		snprintf(why, sizeof(why), "run %s interrupted by %s before its load; no run record",
			 run_id, got_signal == SIGINT ? "SIGINT" : "SIGTERM");
		record_abort(l, run_id, why);
		if (!rc)
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s", why);
	} else if (rc && run_started && !recorded && !started_load) {
		char why[CS_ERR_MAX + 64];

		snprintf(why, sizeof(why), "run %s stopped before its load: %s", run_id, e->msg);
		record_abort(l, run_id, why);
	} else if (rc && run_started && !recorded && !got_signal && !atomic_load(&L.failed)) {
		char why[CS_ERR_MAX + 64];

		/* after the load, when not said above: e.g. the record's transaction failed */
		snprintf(why, sizeof(why), "run %s stopped: %s; no run record", run_id, e->msg);
		record_abort(l, run_id, why);
	}
	/* The run's outcome is in the ledger (or the next command will find it dead). */
	harness_live_end(&live);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	harness_samplers_stop(smp, NULL, NULL, NULL, NULL, NULL);
	harness_readers_stop(readers, NULL);
	harness_writer_stop(writer, NULL);
	for (size_t q = 0; pw && q < npw; q++)
		harness_blockset_free(&pw[q]);
	free(pw);
	for (unsigned c = 0; L.placement && c < L.clients; c++)
		json_decref(L.placement[c]);
	free(L.placement);
	json_decref(metrics_real);
	json_decref(reps);
	json_decref(reps_real);
	json_decref(vinfo);
	json_decref(treat);
	harness_memcap_release(cgdir);
	harness_throttle_end(&thr);
	for (unsigned c = 0; L.rows && c < L.clients; c++)
		free(L.rows[c]);
	free(L.rows);
	free(L.nrows);
	free(L.caprows);
	free(L.stats);
	free(th);
	free(ca);
	free(parts);
	pthread_mutex_destroy(&L.mu);
	cv_index_files_free(files, nfiles);
	cv_index_close(ix);
	guard_held_close(&ihold);
	guard_held_close(&whold);
	guard_prodset_free(prod);
	cv_device_free(dev);
	free(gt);
	cv_dataset_free(base);
	cv_dataset_free(queries);
	cv_dataset_free(qall);
	json_decref(rec);
	json_decref(rowsj);
	json_decref(ios);
	json_decref(mems);
	json_decref(proms);
	json_decref(metrics);
	json_decref(memcap);
	json_decref(smp_health);
	json_decref(mempeak);
	json_decref(host);
	json_decref(features);
	json_decref(marker);
	json_decref(qrows);
	json_decref(reached);
	json_decref(eff);
	json_decref(study);
	json_decref(raw);
	json_decref(tags);
	ledger_plan_free(&plan);
	ledger_close(l);
	(void) le;
	return rc;
}

int harness_run_replicates(const char *dir, const char *spec_path, harness_run_opts *o,
			   void (*each)(const char *run_id, void *ud), void *ud, cs_err *e)
{
	json_t *raw = NULL;
	char sha[65], group[32] = "";
	unsigned n, first, last;
	int has_seed = o->has_seed, rc;
	uint64_t seed = o->seed;

	rc = harness_run_load(spec_path, &raw, sha, e);
	if (rc)
		return rc;
	n = harness_spec_replicates(raw);
	json_decref(raw);
	if (o->replicate > n)
		return cs_err_set(e, CS_EXIT_USAGE,
				  "--replicate %u: %s registers %u replicate%s", o->replicate,
				  spec_path, n, n == 1 ? "" : "s");
	if (has_seed && n > 1 && !o->replicate)
		return cs_err_set(e, CS_EXIT_USAGE,
				  "--seed replays one run's stream: %s registers %u replicates, "
				  "name one with --replicate I",
				  spec_path, n);
	first = o->replicate ? o->replicate : 1;
	last = o->replicate ? o->replicate : n;
	for (unsigned i = first; i <= last; i++) {
		o->replicate = i;
		o->group = group[0] ? group : NULL;
		o->has_seed = has_seed; /* harness_run takes a registered seed into o */
		o->seed = seed;
		rc = harness_run(dir, spec_path, o, e);
		if (rc)
			break;
		if (!group[0])
			snprintf(group, sizeof(group), "%s", o->run_id);
		if (each)
			each(o->run_id, ud);
	}
	o->group = NULL;
	return rc;
}
