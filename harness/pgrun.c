/*
 * pgrun.c - a run whose target is "postgres": the same study run as
 * run.c's, measured on a private PostgreSQL server over a cloned cluster.
 * harness_run hands over after phase 0 (run_spec.c); harness_pg_run reads
 * the same settings (harness_phase_settings: repeat, warmup_queries), runs
 * the same input guards (harness_guard_inputs, run_guard.c) and then the
 * phases below, its own. Replicates are harness_run_replicates', as for
 * every run.
 *
 * Phases, in order, each refusing before anything is measured:
 *   1. guards: the tree is clean (--enforce-clean), validate has passed,
 *      the hypotheses are registered, the clone's data directory (the
 *      run's "index") is held
 *      and is not production (guard_existing: by identity, so a symlink,
 *      a bind mount or a hard link to production's cluster is refused), it
 *      carries this study's clone marker for a cluster, each tablespace's
 *      folder is held and is not production either, the port is not a
 *      production port, the private socket directory is not production;
 *      a holdout run has frozen predictions and no undeclared overlap;
 *   2. a `run_start` record;
 *   3. cold: the server is stopped, every file of the clone is evicted
 *      (through the held directory) and its residency proven 0.0
 *      (guard_cold), then the server started, connected, and each session
 *      set up (auto_explain, the run's SETs, a plan-only EXPLAIN that loads
 *      the catalogs), then postgres.prewarm's pg_prewarm calls (timed
 *      apart: prewarm_s): all of it setup, outside the wall.
 *      cold_each_query repeats this before every query, as the study seed
 *      did. Warm: one untimed pass over the queries first (or
 *      warmup_queries);
 *   4. the load, `repeat` times (each repeat from the run's state again,
 *      after warmup_queries untimed queries: before_repeat), beside the
 *      competing readers and bulk writer of `load` and `bulkwrite`
 *      (treat.c), from this one thread: serial sends one query at a time on
 *      one connection; fan-out sends each partition's query over `fanout`
 *      connections with libpq's non-blocking API (PQsendQueryParams, poll,
 *      PQconsumeInput), a connection taking the next partition when its
 *      last returned, and merges the partitions' rows as the engine's
 *      stream merge does (a k-way merge in returned distance order);
 *   5. measured per query: PostgreSQL's own counters for that execution
 *      (auto_explain's EXPLAIN (ANALYZE, BUFFERS) plan, sent to the client
 *      as a LOG message: shared blocks read and hit, track_io_timing's read
 *      time), and the block device's counters over the query's window;
 *      over the query, pg_statio_all_tables' blocks read, which must equal
 *      the plans' sum for engine_reads to mean what it means for the
 *      engine targets;
 *   6. one transaction: the raw per-query rows and series, and the run
 *      record (run.c's shape, with a "postgres" section).
 *
 * Metric mapping: engine_reads = the plans' shared blocks read,
 * engine_read_ms_mean = their I/O read time / reads, bytes_per_read = the
 * server's block size; device_* are the device's counters over the query
 * windows only (a restart's reads are setup); io_over_wall = I/O read
 * time / wall; inflight_* = the block device's reads in flight, sampled
 * while a query runs (pginfl); mem_peak_bytes = the peak of the server's
 * own memory cgroup (pg.c puts the postmaster there), one for the run.
 * Several repeats: each one's metrics kept, the run's their means
 * (harness_mean_metrics, as run_measure.c).
 */
#include "harness.h"
#include "harness_int.h"
#include "run_phase.h"

#include "coldvec.h"
#include "guard.h"
#include "ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define PG_ROWS_CAP 100000 /* rows a query may return (a LIMIT k query returns k) */
#define PG_VEC_CAP (64u << 20)

/* One connection and what its last statement's plan said. */
typedef struct pgconn {
	PGconn *c;
	int plans;             /* plan messages seen since the last reset */
	int64_t read_blocks;   /* their "Shared Read Blocks" */
	int64_t hit_blocks;    /* "Shared Hit Blocks" */
	double read_ms;        /* "I/O Read Time" */
	int rels;              /* relations its plans scanned (a serial run's partitions) */
	int busy;              /* fan-out: a statement in flight */
	int part;              /* ... for this partition slot */
} pgconn;

/* One query's measurement. */
typedef struct pgrow {
	uint32_t q;
	double t_ms, lat_ms, read_ms, setup_ms;
	int64_t reads, hits;
	int64_t statio; /* pg_statio_all_tables' blocks read over the query */
	uint64_t dev_reads, dev_read_ms, dev_ticks, dev_sectors;
	double recall;
	uint32_t n;
	uint64_t ids_hash; /* the returned ids in rank order (harness_ids_hash) */
	int rels;          /* relations the plans scanned */
} pgrow;

/*
 * The block device's reads in flight, sampled every millisecond while a
 * query runs (the device's inflight file: what the kernel has issued and
 * not completed). A sample with no read in flight is no submission's
 * view and is left out, so the median is the queue depth the reads met,
 * as an engine run's samples at each submission are.
 */
typedef struct pginfl {
	int fd;                 /* /sys/block/.../inflight, or -1: the stat file's in_flight */
	const cv_blkdev *bd;
	pthread_t th;
	int started;
	atomic_int stop, on;
	pthread_mutex_t mu;
	cv_hist h;              /* samples with a read in flight (mu) */
	uint64_t max, samples;  /* the largest; every sample taken in a query window (mu) */
} pginfl;

typedef struct pgrun {
	ledger *l;
	const json_t *eff, *pgspec;
	const char *spec_path;
	harness_pg srv;
	guard_held hold;
	pgconn *conns;
	unsigned nconns;
	const char *db, *user;
	const char *sql, *psql;
	char **partsql; /* fan-out: partition_sql with {p} replaced, one per partition */
	size_t nparts;
	int vec_pgvector;
	uint64_t first; /* the first query row (this replicate's) */
	cv_dataset *queries, *base;
	int32_t *gt;
	size_t k;
	char *vtext;
	size_t vcap;
	int have_dev;
	cv_blkdev bd;
	int64_t block_size;
	unsigned restarts;
	uint64_t t0;
	ledger_plan plan;       /* what the run is comes from the plan, by its spec hash */
	const char *cls;        /* design, holdout, sceptic or exploratory */
	int holdout, repeat;
	int beyond;             /* a planned spec run beyond its registered count */
	char class_why[512];    /* why a planned spec's run is exploratory (its clone's content) */
	json_t *qrows;          /* the digest of each query row this run sends */
	json_t *reached;        /* the holdout targets it reads before the predictions */
	harness_pgfdw *fdw;     /* a run over N servers ($.postgres.shards), else NULL */
	size_t short_queries;   /* queries that returned fewer than k rows */
	size_t fewest_rows;     /* ... the fewest */
	const json_t *prewarm;  /* postgres.prewarm: relations, or ["all indexes"] */
	const char *prewarm_mode;
	double prewarm_ms;      /* this repeat's pg_prewarm calls (setup, outside the wall) */
	int64_t prewarm_blocks; /* the blocks they loaded, over the run */
	pginfl infl;
	guard_held *ts;         /* the clone's tablespaces' folders, held (its marker's) */
	const char **ts_oid;    /* their OIDs, for names (pg_tblspc/OID/...; the marker's) */
	size_t nts;
	harness_throttle thr;   /* $.throttle: the servers' cap (throttle.c), made before they start */
	uint64_t thr_reads, thr_bytes; /* its own counters, read after the load */
} pgrun;

/* ---- the device's reads in flight ---- */

static int infl_read(pginfl *I, uint64_t *v)
{
	char buf[64];
	ssize_t n;

	if (I->fd < 0) {
		cv_blkstat b;

		if (cv_blkdev_stat(I->bd, &b))
			return -1;
		*v = b.in_flight;
		return 0;
	}
	n = pread(I->fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	*v = strtoull(buf, NULL, 10); /* "reads writes": the reads */
	return 0;
}

static void *infl_main(void *arg)
{
	pginfl *I = arg;
	struct timespec ms = {0, 1000000L}, idle = {0, 5000000L};

	while (!atomic_load(&I->stop)) {
		uint64_t v;

		if (!atomic_load(&I->on)) {
			nanosleep(&idle, NULL);
			continue;
		}
		if (infl_read(I, &v) == 0) {
			pthread_mutex_lock(&I->mu);
			I->samples++;
			if (v) {
				cv_hist_add(&I->h, v);
				if (v > I->max)
					I->max = v;
			}
			pthread_mutex_unlock(&I->mu);
		}
		nanosleep(&ms, NULL);
	}
	return NULL;
}

/* Start sampling bd (0, or -1: no sampler, inflight_* then null). */
static int infl_start(pginfl *I, const cv_blkdev *bd)
{
	char p[sizeof(bd->stat_path) + 16], *sl;

	memset(I, 0, sizeof(*I));
	I->fd = -1;
	I->bd = bd;
	snprintf(p, sizeof(p), "%s", bd->stat_path);
	if ((sl = strrchr(p, '/')))
		snprintf(sl + 1, sizeof(p) - (size_t) (sl + 1 - p), "inflight");
	I->fd = open(p, O_RDONLY | O_CLOEXEC);
	pthread_mutex_init(&I->mu, NULL);
	if (pthread_create(&I->th, NULL, infl_main, I)) {
		pthread_mutex_destroy(&I->mu);
		if (I->fd >= 0)
			close(I->fd);
		I->fd = -1;
		return -1;
	}
	I->started = 1;
	return 0;
}

static void infl_stop(pginfl *I)
{
	if (!I->started)
		return;
	atomic_store(&I->stop, 1);
	pthread_join(I->th, NULL);
	pthread_mutex_destroy(&I->mu);
	if (I->fd >= 0)
		close(I->fd);
	I->fd = -1;
	I->started = 0;
}

/* A repeat's samples: inflight_median and inflight_max into m (null without samples); reset. */
static void infl_take(pginfl *I, json_t *m)
{
	json_t *med = json_null(), *mx = json_null();

	if (I->started) {
		pthread_mutex_lock(&I->mu);
		if (I->samples) {
			med = I->h.count ? json_real(cv_hist_quantile(&I->h, 0.5)) : json_integer(0);
			mx = json_integer((json_int_t) I->max);
		}
		memset(&I->h, 0, sizeof(I->h));
		I->max = I->samples = 0;
		pthread_mutex_unlock(&I->mu);
	}
	json_object_set_new(m, "inflight_median", med);
	json_object_set_new(m, "inflight_max", mx);
}

/* ---- plans, from auto_explain's LOG messages ---- */

/* The relations a plan's nodes scan, by name, into set (a partition's index scan names it). */
static void scans(const json_t *node, json_t *set)
{
	const json_t *kids = json_object_get(node, "Plans"), *k;
	const char *rel = json_string_value(json_object_get(node, "Relation Name"));
	size_t i;

	if (rel)
		json_object_set_new(set, rel, json_true());
	json_array_foreach(kids, i, k)
		scans(k, set);
}

/* libpq notice receiver: add a plan's buffer counts to its connection. */
static void on_notice(void *arg, const PGresult *res)
{
	pgconn *pc = arg;
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *plan = msg ? strstr(msg, "plan:") : NULL;
	json_t *j, *p;

	if (!plan)
		return;
	j = json_loads(plan + 5, JSON_DISABLE_EOF_CHECK, NULL);
	p = json_object_get(j, "Plan");
	if (json_is_object(p)) {
		pc->plans++;
		pc->read_blocks += json_integer_value(json_object_get(p, "Shared Read Blocks"));
		pc->hit_blocks += json_integer_value(json_object_get(p, "Shared Hit Blocks"));
		pc->read_ms += json_number_value(json_object_get(p, "I/O Read Time"));
		json_t *set = json_object();

		if (set) {
			scans(p, set);
			pc->rels += (int) json_object_size(set);
		}
		json_decref(set);
	}
	json_decref(j);
}

static void plan_reset(pgconn *pc)
{
	pc->plans = pc->rels = 0;
	pc->read_blocks = pc->hit_blocks = 0;
	pc->read_ms = 0;
}

/* Run one statement to completion; CS_EXIT_BADINPUT naming it when it fails. */
static int exec_ok(pgrun *R, PGconn *c, const char *sql, const char *where, cs_err *e)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType st = PQresultStatus(r);
	int rc = 0;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s: \"%s\" failed: %s", R->spec_path, where,
				sql, PQresultErrorMessage(r));
	PQclear(r);
	return rc;
}

/* The query vector as text: "{a,b,...}" (a float8[] literal) or "[a,b,...]" (pgvector). */
static int vec_text(pgrun *R, const float *v, size_t d)
{
	size_t need = d * 18 + 4, len = 0;

	if (need > PG_VEC_CAP)
		return -EOVERFLOW;
	if (need > R->vcap) {
		char *nb = realloc(R->vtext, need);

		if (!nb)
			return -ENOMEM;
		R->vtext = nb;
		R->vcap = need;
	}
	R->vtext[len++] = R->vec_pgvector ? '[' : '{';
	for (size_t i = 0; i < d; i++)
		len += (size_t) snprintf(R->vtext + len, R->vcap - len, "%s%.9g", i ? "," : "",
					 (double) v[i]);
	R->vtext[len++] = R->vec_pgvector ? ']' : '}';
	R->vtext[len] = '\0';
	return 0;
}

/* ---- the server and its sessions ---- */

static void close_conns(pgrun *R)
{
	for (unsigned i = 0; i < R->nconns; i++) {
		PQfinish(R->conns[i].c);
		R->conns[i].c = NULL;
	}
}

/*
 * Connect every session and set it up: auto_explain's plan of every
 * statement as a LOG message to this client, with buffers and I/O timing;
 * the run's SETs; then a plan-only EXPLAIN of each statement the session
 * will send, so the catalogs are read here and not in the measured query.
 */
static int sessions_up(pgrun *R, cs_err *e)
{
	static const char *const setup[] = {
		"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_analyze = on", "SET auto_explain.log_buffers = on",
		"SET auto_explain.log_timing = off", "SET auto_explain.log_format = 'json'",
		"SET auto_explain.log_nested_statements = off", "SET track_io_timing = on",
		"SET client_min_messages = log", NULL};
	const json_t *sess = json_object_get(R->pgspec, "session");
	int rc;

	if ((rc = vec_text(R, cv_row(R->queries, 0), R->queries->d)))
		return cs_err_set(e, CS_EXIT_INTERNAL, "query vector: %s", strerror(-rc));
	for (unsigned i = 0; i < R->nconns; i++) {
		pgconn *pc = &R->conns[i];
		size_t j;
		json_t *x;

		rc = harness_pg_connect(&R->srv, R->db, R->user, &pc->c, e);
		if (rc)
			return rc;
		PQsetNoticeReceiver(pc->c, on_notice, pc);
		for (j = 0; setup[j]; j++)
			if ((rc = exec_ok(R, pc->c, setup[j], "auto_explain (contrib) setup", e)))
				return rc;
		json_array_foreach(sess, j, x) {
			char w[64];

			snprintf(w, sizeof(w), "$.postgres.session[%zu]", j);
			if ((rc = exec_ok(R, pc->c, json_string_value(x), w, e)))
				return rc;
		}
		/* Plan only (no ANALYZE): catalogs and relcache, never the data's blocks. */
		for (size_t p = 0; p < (R->partsql ? R->nparts : 1); p++) {
			const char *sql = R->partsql ? R->partsql[p] : R->sql;
			char *ex = malloc(strlen(sql) + 16);
			const char *val = R->vtext;
			PGresult *r;

			if (!ex)
				return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			memcpy(ex, "EXPLAIN ", 8);
			memcpy(ex + 8, sql, strlen(sql) + 1);
			r = PQexecParams(pc->c, ex, 1, NULL, &val, NULL, NULL, 0);
			free(ex);
			if (PQresultStatus(r) != PGRES_TUPLES_OK) {
				rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.postgres.%s: %s", R->spec_path,
						R->partsql ? "partition_sql" : "sql",
						PQresultErrorMessage(r));
				PQclear(r);
				return rc;
			}
			PQclear(r);
		}
		plan_reset(pc);
		if (PQsetnonblocking(pc->c, 1))
			return cs_err_set(e, CS_EXIT_INTERNAL, "libpq: cannot go non-blocking");
	}
	return 0;
}

/* Free what clone_paths made. */
static void paths_free(char **paths, size_t n)
{
	for (size_t i = 0; paths && i < n; i++)
		free(paths[i]);
	free(paths);
}

/* Append dir's files (through held folder via) to paths/names under prefix; 0 or CS_EXIT_*. */
static int add_paths(const char *via, const char *prefix, char ***paths, char ***names, size_t *n,
		     cs_err *e)
{
	char **nm = NULL, **np, **nn;
	size_t k = 0;
	int rc = guard_dir_files(via, &nm, &k, e);

	if (rc)
		return rc;
	np = realloc(*paths, (*n + k + 1) * sizeof(*np));
	if (np)
		*paths = np;
	nn = np ? realloc(*names, (*n + k + 1) * sizeof(*nn)) : NULL;
	if (nn)
		*names = nn;
	for (size_t i = 0; nn && i < k; i++) {
		size_t pl = strlen(via) + strlen(nm[i]) + 2, ml = strlen(prefix) + strlen(nm[i]) + 1;
		char *p = malloc(pl), *m = malloc(ml);

		if (!p || !m) {
			free(p);
			free(m);
			nn = NULL;
			break;
		}
		snprintf(p, pl, "%s/%s", via, nm[i]);
		snprintf(m, ml, "%s%s", prefix, nm[i]);
		(*paths)[*n] = p;
		(*names)[(*n)++] = m;
	}
	guard_dir_files_free(nm, k);
	return nn ? 0 : cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
}

/*
 * Every file of the clone, through the held directory, and of its
 * tablespaces, through theirs: *paths (new, free with paths_free) and,
 * when names is not NULL, their names in the clone (a tablespace's as
 * pg_tblspc/OID/...).
 */
static int clone_paths(pgrun *R, char ***paths, char ***names, size_t *n, cs_err *e)
{
	char **ps = NULL, **nm = NULL;
	size_t k = 0;
	int rc = add_paths(guard_held_via(&R->hold), "", &ps, &nm, &k, e);

	for (size_t t = 0; !rc && t < R->nts; t++) {
		char prefix[64];

		snprintf(prefix, sizeof(prefix), "pg_tblspc/%.20s/", R->ts_oid[t]);
		rc = add_paths(guard_held_via(&R->ts[t]), prefix, &ps, &nm, &k, e);
	}
	*paths = NULL;
	*n = 0;
	if (rc) {
		paths_free(ps, k);
		paths_free(nm, k);
		return rc;
	}
	if (names)
		*names = nm;
	else
		paths_free(nm, k);
	*paths = ps;
	*n = k;
	return 0;
}

/* Evict every file of the clone through the held directory and prove residency 0.0. */
static int evict_clone(pgrun *R, double *resident, cs_err *e)
{
	char **names = NULL, **paths = NULL;
	size_t n = 0;
	int rc;

	rc = clone_paths(R, &paths, &names, &n, e);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		int r = cv_cache_evict(paths[i]);

		if (r) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s/%s: eviction failed: %s",
					R->hold.shown, names[i], strerror(-r));
			goto out;
		}
	}
	rc = guard_cold(R->l, paths, n, "run", resident, e);
out:
	paths_free(paths, n);
	paths_free(names, n);
	return rc;
}

/* The resident fraction of the clone's files (its tablespaces' too) now (NaN when unknown). */
static double clone_resident(pgrun *R)
{
	char **paths = NULL;
	size_t n = 0;
	uint64_t pages = 0, res = 0;
	cs_err ce = {0};

	if (clone_paths(R, &paths, NULL, &n, &ce))
		return NAN;
	for (size_t i = 0; i < n; i++) {
		cv_residency r;

		if (cv_cache_residency(paths[i], &r) == 0) {
			pages += r.pages;
			res += r.resident;
		}
	}
	paths_free(paths, n);
	return pages ? (double) res / (double) pages : 0.0;
}

/* One prewarm statement with its parameters on the first session; its blocks added up. */
static int prewarm_exec(pgrun *R, const char *sql, int nparams, const char *const *vals,
			const char *where, cs_err *e)
{
	PGresult *r = PQexecParams(R->conns[0].c, sql, nparams, NULL, vals, NULL, NULL, 0);
	int rc = 0;

	if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s: %s", R->spec_path, where,
				PQresultErrorMessage(r));
	else if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		R->prewarm_blocks += strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return rc;
}

/*
 * postgres.prewarm: pg_prewarm (contrib) on each named relation, or on
 * every index of the database outside the catalogs ("all indexes"), in
 * postgres.prewarm_mode (buffer: into shared_buffers, the default; read:
 * into the page cache). Setup, timed apart: prewarm_s, outside the wall.
 * Relation names go as parameters (::regclass), never as SQL text.
 */
static int prewarm(pgrun *R, cs_err *e)
{
	const char *mode = R->prewarm_mode ? R->prewarm_mode : "buffer";
	uint64_t t0 = cs_mono_ns();
	size_t i;
	json_t *x;
	int rc;

	if (!json_array_size(R->prewarm))
		return 0;
	PQsetnonblocking(R->conns[0].c, 0);
	rc = prewarm_exec(R, "CREATE EXTENSION IF NOT EXISTS pg_prewarm", 0, NULL,
			  "$.postgres.prewarm (contrib's pg_prewarm)", e);
	json_array_foreach(R->prewarm, i, x) {
		const char *rel = json_string_value(x);
		const char *vals[2] = {rel, mode};
		char w[64];

		if (rc)
			break;
		snprintf(w, sizeof(w), "$.postgres.prewarm[%zu]", i);
		if (!strcmp(rel, "all indexes"))
			rc = prewarm_exec(R,
					  "SELECT coalesce(sum(pg_prewarm(c.oid, $1)), 0)::bigint "
					  "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
					  "WHERE c.relkind = 'i' AND n.nspname NOT IN ('pg_catalog', "
					  "'information_schema') AND n.nspname NOT LIKE 'pg_toast%'",
					  1, vals + 1, w, e);
		else
			rc = prewarm_exec(R, "SELECT pg_prewarm($1::regclass, $2)", 2, vals, w, e);
	}
	/* its statistics flushed here, so a query's pg_statio window holds the query alone */
	PQclear(PQexec(R->conns[0].c, "SELECT pg_stat_force_next_flush()"));
	PQsetnonblocking(R->conns[0].c, 1);
	R->prewarm_ms += (double) (cs_mono_ns() - t0) / 1e6;
	return rc;
}

/* Cold: stop, evict, prove 0.0, start, set the sessions up, prewarm when asked. */
static int cold_start(pgrun *R, double *resident, cs_err *e)
{
	int rc;

	close_conns(R);
	if ((rc = harness_pg_stop(&R->srv, e)) || (rc = harness_pgfdw_stop(R->fdw, e)) ||
	    (rc = evict_clone(R, resident, e)) || (rc = harness_pgfdw_evict(R->fdw, R->l, e)) ||
	    (rc = harness_pgfdw_start(R->fdw, e)) || (rc = harness_pg_start(&R->srv, e)) ||
	    (rc = harness_pgfdw_repoint(R->fdw, R->l, &R->srv, R->db, R->user, e)))
		return rc;
	R->restarts++;
	if ((rc = sessions_up(R, e)))
		return rc;
	return prewarm(R, e);
}

/* Every session flushes its statistics now (they are otherwise sent at most once a second). */
static void stats_flush(pgrun *R)
{
	for (unsigned i = 0; i < R->nconns; i++) {
		PGresult *r;

		PQsetnonblocking(R->conns[i].c, 0);
		r = PQexec(R->conns[i].c, "SELECT pg_stat_force_next_flush()");
		PQclear(r);
		PQsetnonblocking(R->conns[i].c, 1);
	}
}

/*
 * The blocks every table and index of the database (catalogs included) was
 * read from disk so far, by pg_statio_all_tables, on the first session.
 */
static int statio_all(pgrun *R, int64_t *out, cs_err *e)
{
	char v[64] = "";
	PGresult *r;

	PQsetnonblocking(R->conns[0].c, 0);
	r = PQexec(R->conns[0].c,
		   "SELECT coalesce(sum(coalesce(heap_blks_read, 0) + coalesce(idx_blks_read, 0) + "
		   "coalesce(toast_blks_read, 0) + coalesce(tidx_blks_read, 0)), 0)::bigint "
		   "FROM pg_statio_all_tables");
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		snprintf(v, sizeof(v), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	PQsetnonblocking(R->conns[0].c, 1);
	if (!v[0])
		return cs_err_set(e, CS_EXIT_INTERNAL, "pg_statio_all_tables could not be read");
	*out = strtoll(v, NULL, 10);
	return 0;
}

/*
 * pg_statio before a query: the sessions' setup flushed, then read twice
 * (the first reading's own catalog reads are counted by the second, which
 * reads nothing: so the window holds the query's reads only).
 */
static int statio_before(pgrun *R, int64_t *out, cs_err *e)
{
	int rc;

	stats_flush(R);
	if ((rc = statio_all(R, out, e)))
		return rc;
	stats_flush(R);
	return statio_all(R, out, e);
}

/* pg_statio after a query: the query's sessions flushed first. */
static int statio_after(pgrun *R, int64_t *out, cs_err *e)
{
	stats_flush(R);
	return statio_all(R, out, e);
}

/* ---- one query ---- */

/* Collect one statement's rows (ids, and distances when want_dist) on a connection. */
static int take_rows(PGresult *r, uint32_t *ids, float *dists, size_t cap, size_t *n,
		     int want_dist, char *why, size_t whycap)
{
	int nt = PQntuples(r);

	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		snprintf(why, whycap, "%s", PQresultErrorMessage(r));
		return -1;
	}
	if (want_dist && PQnfields(r) < 2) {
		snprintf(why, whycap, "partition_sql must return (id, distance) in distance order");
		return -1;
	}
	for (int i = 0; i < nt && *n < cap; i++) {
		ids[*n] = (uint32_t) strtoul(PQgetvalue(r, i, 0), NULL, 10);
		if (dists)
			dists[*n] = want_dist ? strtof(PQgetvalue(r, i, 1), NULL) : 0;
		(*n)++;
	}
	return 0;
}

/* Serial: the one statement on the one session, to completion. */
static int query_serial(pgrun *R, uint32_t *ids, size_t *nout, char *why, size_t whycap)
{
	pgconn *pc = &R->conns[0];
	const char *val = R->vtext;
	PGresult *r;
	int rc = 0;

	*nout = 0;
	PQsetnonblocking(pc->c, 0);
	if (!PQsendQueryParams(pc->c, R->sql, 1, NULL, &val, NULL, NULL, 0)) {
		snprintf(why, whycap, "%s", PQerrorMessage(pc->c));
		return -1;
	}
	while ((r = PQgetResult(pc->c))) {
		if (!rc && take_rows(r, ids, NULL, R->k, nout, 0, why, whycap))
			rc = -1;
		PQclear(r);
	}
	PQsetnonblocking(pc->c, 1);
	return rc;
}

/* Send partition p's statement on connection pc (non-blocking). */
static int send_part(pgrun *R, pgconn *pc, size_t p, char *why, size_t whycap)
{
	const char *val = R->vtext;

	if (!PQsendQueryParams(pc->c, R->partsql[p], 1, NULL, &val, NULL, NULL, 0)) {
		snprintf(why, whycap, "%s", PQerrorMessage(pc->c));
		return -1;
	}
	while (PQflush(pc->c) == 1) {
		struct pollfd pf = {PQsocket(pc->c), POLLOUT, 0};

		poll(&pf, 1, 1000);
	}
	pc->busy = 1;
	pc->part = (int) p;
	return 0;
}

/*
 * Fan-out: every partition's statement over the sessions from this thread;
 * a session takes the next partition when its last returned. Rows land in
 * per-partition runs of prow/pdist (k each), merged afterwards.
 */
static int query_fanout(pgrun *R, uint32_t *prow, float *pdist, size_t *pn, char *why,
			size_t whycap)
{
	size_t next = 0, done = 0;
	struct pollfd *pf = calloc(R->nconns, sizeof(*pf));
	int rc = 0;

	if (!pf) {
		snprintf(why, whycap, "out of memory");
		return -1;
	}
	for (size_t p = 0; p < R->nparts; p++)
		pn[p] = 0;
	for (unsigned i = 0; i < R->nconns && next < R->nparts && !rc; i++)
		rc = send_part(R, &R->conns[i], next++, why, whycap);
	while (!rc && done < R->nparts) {
		for (unsigned i = 0; i < R->nconns; i++) {
			pf[i].fd = R->conns[i].busy ? PQsocket(R->conns[i].c) : -1;
			pf[i].events = POLLIN;
			pf[i].revents = 0;
		}
		if (poll(pf, R->nconns, 60000) < 0 && errno != EINTR) {
			snprintf(why, whycap, "poll: %s", strerror(errno));
			rc = -1;
			break;
		}
		for (unsigned i = 0; i < R->nconns && !rc; i++) {
			pgconn *pc = &R->conns[i];
			PGresult *r;

			if (!pc->busy || !(pf[i].revents & (POLLIN | POLLERR | POLLHUP)))
				continue;
			if (!PQconsumeInput(pc->c)) {
				snprintf(why, whycap, "%s", PQerrorMessage(pc->c));
				rc = -1;
				break;
			}
			while (pc->busy && !PQisBusy(pc->c)) {
				r = PQgetResult(pc->c);
				if (!r) {
					/* This session is free: the partition is done, send the next. */
					pc->busy = 0;
					done++;
					if (next < R->nparts)
						rc = send_part(R, pc, next++, why, whycap);
					break;
				}
				if (take_rows(r, prow + (size_t) pc->part * R->k,
					      pdist + (size_t) pc->part * R->k, R->k, &pn[pc->part], 1,
					      why, whycap))
					rc = -1;
				PQclear(r);
			}
		}
	}
	free(pf);
	if (rc) {
		/* Drain what is still in flight, so the sessions stay usable for the record. */
		for (unsigned i = 0; i < R->nconns; i++) {
			PGresult *r;

			if (!R->conns[i].busy)
				continue;
			PQsetnonblocking(R->conns[i].c, 0);
			while ((r = PQgetResult(R->conns[i].c)))
				PQclear(r);
			PQsetnonblocking(R->conns[i].c, 1);
			R->conns[i].busy = 0;
		}
	}
	return rc;
}

/* The engine's stream merge: a k-way merge of the partitions' runs in distance order. */
static size_t merge_stream(const pgrun *R, const uint32_t *prow, const float *pdist,
			   const size_t *pn, uint32_t *ids)
{
	size_t *at = calloc(R->nparts, sizeof(*at)), n = 0;

	if (!at)
		return 0;
	while (n < R->k) {
		size_t best = R->nparts;

		for (size_t p = 0; p < R->nparts; p++)
			if (at[p] < pn[p] &&
			    (best == R->nparts ||
			     pdist[p * R->k + at[p]] < pdist[best * R->k + at[best]]))
				best = p;
		if (best == R->nparts)
			break;
		ids[n++] = prow[best * R->k + at[best]++];
	}
	free(at);
	return n;
}

/* ---- the load ---- */

static int run_load(pgrun *R, pgrow *rows, size_t nq, int each, char *why, size_t whycap,
		    cs_err *e)
{
	uint32_t *ids = calloc(R->k, sizeof(*ids));
	uint32_t *prow = R->partsql ? calloc(R->nparts * R->k, sizeof(*prow)) : NULL;
	float *pdist = R->partsql ? calloc(R->nparts * R->k, sizeof(*pdist)) : NULL;
	size_t *pn = R->partsql ? calloc(R->nparts, sizeof(*pn)) : NULL;
	uint64_t prev_end = 0;
	int rc = 0;

	if (!ids || (R->partsql && (!prow || !pdist || !pn))) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	for (size_t q = 0; q < nq; q++) {
		pgrow *r = &rows[q];
		cv_blkstat b0, b1;
		uint64_t s0 = cs_mono_ns(), t1, t2;
		int64_t st0 = 0, st1 = 0;
		size_t nout = 0;
		int qr;

		memset(r, 0, sizeof(*r));
		r->q = (uint32_t) q;
		if (harness_run_interrupted()) {
			/* Stopped between queries: a deviation, no run record (as run.c). */
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "interrupted by %s after %zu queries",
					harness_run_interrupted() == SIGINT ? "SIGINT" : "SIGTERM", q);
			goto out;
		}
		if (each && q > 0) {
			double res;

			/* Cold again before this query: setup, outside the wall. */
			if ((rc = cold_start(R, &res, e)))
				goto out;
		}
		if ((qr = vec_text(R, cv_row(R->queries, q % R->queries->n), R->queries->d))) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "query vector: %s", strerror(-qr));
			goto out;
		}
		if ((rc = harness_pgfdw_before(R->fdw, R->conns[0].c, R->sql, R->vtext, e)) ||
		    (rc = statio_before(R, &st0, e)))
			goto out;
		for (unsigned i = 0; i < R->nconns; i++)
			plan_reset(&R->conns[i]);
		if (R->have_dev && cv_blkdev_stat(&R->bd, &b0))
			R->have_dev = 0;
		atomic_store(&R->infl.on, 1);
		t1 = cs_mono_ns();
		if (R->partsql) {
			qr = query_fanout(R, prow, pdist, pn, why, whycap);
			if (!qr)
				nout = merge_stream(R, prow, pdist, pn, ids);
		} else {
			qr = query_serial(R, ids, &nout, why, whycap);
		}
		t2 = cs_mono_ns();
		atomic_store(&R->infl.on, 0);
		if (R->have_dev && cv_blkdev_stat(&R->bd, &b1))
			R->have_dev = 0;
		if (qr) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: query %zu: %s", R->spec_path, q, why);
			goto out;
		}
		/* Everything between two queries (measuring, a cold restart) is setup, not load. */
		r->setup_ms = (double) (t1 - (q ? prev_end : s0)) / 1e6;
		prev_end = t2;
		r->t_ms = (double) (t1 - R->t0) / 1e6;
		r->lat_ms = (double) (t2 - t1) / 1e6;
		for (unsigned i = 0; i < R->nconns; i++) {
			r->reads += R->conns[i].read_blocks;
			r->hits += R->conns[i].hit_blocks;
			r->read_ms += R->conns[i].read_ms;
			r->rels += R->conns[i].rels; /* before statio's own statement adds its plan */
			if (!R->conns[i].plans && (!R->partsql || i < R->nparts)) {
				rc = cs_err_set(e, CS_EXIT_INTERNAL,
						"query %zu: no plan came back from auto_explain on "
						"session %u (is contrib's auto_explain installed?)",
						q, i);
				goto out;
			}
		}
		if (R->have_dev) {
			r->dev_reads = b1.reads - b0.reads;
			r->dev_read_ms = b1.read_ms - b0.read_ms;
			r->dev_sectors = b1.read_sectors - b0.read_sectors;
			r->dev_ticks = b1.io_ticks_ms - b0.io_ticks_ms;
		}
		if ((rc = statio_after(R, &st1, e)))
			goto out;
		r->statio = st1 - st0;
		if (R->fdw) {
			/* the shards' data blocks read and read time: the query's reads are theirs */
			int64_t sd;
			double sms;

			if ((rc = harness_pgfdw_after(R->fdw, R->conns[0].c, &sd, &sms, e)))
				goto out;
			r->reads += sd;
			r->statio += sd;
			r->read_ms += sms;
		}
		r->n = (uint32_t) nout;
		r->ids_hash = harness_ids_hash(ids, nout);
		if (nout < R->k) {
			/* the seed's pitfall: ef_search below k per partition returns short lists */
			if (!R->short_queries)
				fprintf(stderr,
					"coldstudy run: warning: %s: query %zu returned %zu rows, fewer "
					"than k %zu (is hnsw.ef_search below k?)\n",
					R->spec_path, q, nout, R->k);
			R->short_queries++;
			if (nout < R->fewest_rows || R->short_queries == 1)
				R->fewest_rows = nout;
		}
		r->recall = R->gt ? cv_recall_at_k(R->base, cv_row(R->queries, q % R->queries->n),
						   CV_METRIC_L2, R->gt + (q % R->queries->n) * R->k,
						   R->k, ids, nout)
				  : NAN;
		if (R->gt && isnan(r->recall)) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"query %zu: the ground truth names a row outside the recall base "
					"(%zu rows)", q, R->base->n);
			goto out;
		}
	}
out:
	free(ids);
	free(prow);
	free(pdist);
	free(pn);
	return rc;
}


/* DESIGN.md's vocabulary from the rows (new reference). */
static json_t *pg_metrics(pgrun *R, const pgrow *rows, size_t n, double wall_s,
			  double resident_before)
{
	double *lat = malloc((n ? n : 1) * sizeof(*lat)), sl = 0, rms = 0, rec = 0;
	harness_qhash *qh = malloc((n ? n : 1) * sizeof(*qh));
	uint64_t dr = 0, dms = 0, dt = 0, dsec = 0;
	int64_t reads = 0;
	size_t nrec = 0;
	json_t *m = json_object();

	if (!lat || !qh || !m) {
		free(lat);
		free(qh);
		json_decref(m);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		/* the query's row in the dataset, as an engine run's digest keys it */
		qh[i] = (harness_qhash){rows[i].q + R->first, rows[i].ids_hash};
		lat[i] = rows[i].lat_ms;
		sl += rows[i].lat_ms;
		rms += rows[i].read_ms;
		reads += rows[i].reads;
		dr += rows[i].dev_reads;
		dms += rows[i].dev_read_ms;
		dsec += rows[i].dev_sectors;
		dt += rows[i].dev_ticks;
		if (isfinite(rows[i].recall)) {
			rec += rows[i].recall;
			nrec++;
		}
	}
	qsort(lat, n, sizeof(*lat), harness_cmp_double);
	json_object_set_new(m, "wall_s", json_real(wall_s));
	json_object_set_new(m, "queries", json_integer((json_int_t) n));
	json_object_set_new(m, "qps", json_real(wall_s > 0 ? (double) n / wall_s : 0));
	json_object_set_new(m, "lat_mean_ms", harness_num_or_null(n ? sl / (double) n : NAN));
	json_object_set_new(m, "lat_p50_ms", harness_num_or_null(cs_quantile(lat, n, 0.5)));
	json_object_set_new(m, "lat_p90_ms", harness_num_or_null(cs_quantile(lat, n, 0.90)));
	json_object_set_new(m, "lat_p95_ms", harness_num_or_null(cs_quantile(lat, n, 0.95)));
	json_object_set_new(m, "lat_p99_ms", harness_num_or_null(cs_quantile(lat, n, 0.99)));
	json_object_set_new(m, "lat_p999_ms", harness_num_or_null(cs_quantile(lat, n, 0.999)));
	json_object_set_new(m, "recall_at_k", harness_num_or_null(nrec ? rec / (double) nrec : NAN));
	json_object_set_new(m, "results_digest", harness_num_or_null(n ? harness_results_digest(qh, n) : NAN));
	free(qh);
	json_object_set_new(m, "engine_reads", json_integer((json_int_t) reads));
	json_object_set_new(m, "engine_read_ms_mean", harness_num_or_null(reads ? rms / (double) reads : NAN));
	json_object_set_new(m, "engine_iops", harness_num_or_null(wall_s > 0 ? (double) reads / wall_s : NAN));
	json_object_set_new(m, "reads_per_query", harness_num_or_null(n ? (double) reads / (double) n : NAN));
	json_object_set_new(m, "bytes_per_read",
			    reads ? json_real((double) R->block_size) : json_null());
	if (R->have_dev) {
		json_object_set_new(m, "device_reads", json_integer((json_int_t) dr));
		json_object_set_new(m, "device_read_ms_mean",
				    harness_num_or_null(dr ? (double) dms / (double) dr : NAN));
		json_object_set_new(m, "device_bytes_per_read",
				    harness_num_or_null(dr ? (double) dsec * 512.0 / (double) dr : NAN));
		json_object_set_new(m, "device_busy",
				    harness_num_or_null(wall_s > 0 ? (double) dt / 1000.0 / wall_s : NAN));
	} else {
		json_object_set_new(m, "device_reads", json_null());
		json_object_set_new(m, "device_read_ms_mean", json_null());
		json_object_set_new(m, "device_bytes_per_read", json_null());
		json_object_set_new(m, "device_busy", json_null());
	}
	json_object_set_new(m, "io_over_wall",
			    harness_num_or_null(wall_s > 0 ? rms / 1e3 / wall_s : NAN));
	infl_take(&R->infl, m);
	json_object_set_new(m, "fanout_via", R->fdw       ? json_string("postgres_fdw")
					      : R->partsql ? json_string("libpq")
							   : json_null());
	json_object_set_new(m, "resident_fraction_before", harness_num_or_null(resident_before));
	/* the server's cgroup's peak, one for the run: set when the run's server is stopped */
	json_object_set_new(m, "mem_peak_bytes", json_null());
	json_object_set_new(m, "prewarm_s", json_array_size(R->prewarm)
						    ? json_real(R->prewarm_ms / 1e3)
						    : json_null());
	free(lat);
	return m;
}

static int count_cb(const ledger_record *r, void *ud)
{
	(void) r;
	(*(int64_t *) ud)++;
	return 0;
}


/* Replace every "{p}" of t with p (new string). */
static char *part_sql(const char *t, size_t p)
{
	char num[24];
	size_t nl, len = 0, cap;
	char *out;
	const char *s;

	snprintf(num, sizeof(num), "%zu", p);
	nl = strlen(num);
	cap = strlen(t) * (nl > 3 ? nl : 3) + 1;
	out = malloc(cap);
	if (!out)
		return NULL;
	for (s = t; *s;) {
		if (!strncmp(s, "{p}", 3)) {
			memcpy(out + len, num, nl);
			len += nl;
			s += 3;
		} else {
			out[len++] = *s++;
		}
	}
	out[len] = '\0';
	return out;
}

/* 1. guards and inputs: everything refused or loaded before the run_start record. */
static int pg_prepare(pgrun *R, guard_prodset *prod, const json_t *study, harness_run_opts *o,
		      const char *sha, json_t **marker, cs_err *e)
{
	const json_t *eff = R->eff, *pg = R->pgspec;
	const char *pgdata = json_string_value(json_object_get(eff, "index"));
	int port = json_is_integer(json_object_get(pg, "port"))
			   ? (int) json_integer_value(json_object_get(pg, "port"))
			   : 5432;
	cv_err ce = {{0}};
	int rc;

	if (o->enforce_clean) {
		const char *pd = o->project_dir ? o->project_dir : getenv("COLDSTUDY_SRC");

		if ((rc = guard_clean_tree(R->l, pd ? pd : ".", "run", e)))
			return rc;
	}
	if ((rc = guard_validated(R->l, "run", e)) ||
	    (rc = guard_hypotheses(R->l, json_object_get(eff, "hypotheses"), "run", e)))
		return rc;
	/* Names go to libpq as values, never as text: still, none that could read as keywords. */
	if ((R->db && !harness_pg_name_ok(R->db)) || (R->user && !harness_pg_name_ok(R->user)))
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: $.postgres.%s: \"%s\" holds a quote, '=', whitespace or a control "
				  "character (a database or role name is expected)",
				  R->spec_path, R->db && !harness_pg_name_ok(R->db) ? "database" : "user",
				  R->db && !harness_pg_name_ok(R->db) ? R->db : R->user);
	/* The clone's data directory: held once, not production by identity, this study's clone. */
	if ((rc = guard_existing(R->l, prod, pgdata, AT_FDCWD, "run", "index", &R->hold,
				 e)) ||
	    (rc = guard_clone(R->l, ledger_dir(R->l), guard_held_via(&R->hold), "run", 0, marker,
			      e)))
		return rc;
	if (!json_is_string(json_object_get(*marker, "target")) ||
	    strcmp(json_string_value(json_object_get(*marker, "target")), "postgres"))
		return guard_refuse(R->l, "clone", "run", pgdata, e,
				    "index %s: its clone marker is not a cluster's (clone the "
				    "stopped cluster's data directory with coldstudy clone)",
				    pgdata);
	/*
	 * Its tablespaces (guard_clone matched each pg_tblspc link to the folder
	 * the marker names): each folder held and guarded like the data
	 * directory, so a tablespace that is, lies in or contains production is
	 * refused, and the same folder by identity.
	 */
	{
		const json_t *tl = json_object_get(*marker, "tablespaces");
		size_t i;
		json_t *t;

		R->ts = calloc(json_array_size(tl) + 1, sizeof(*R->ts));
		R->ts_oid = calloc(json_array_size(tl) + 1, sizeof(*R->ts_oid));
		if (!R->ts || !R->ts_oid)
			return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		json_array_foreach(tl, i, t) {
			const char *cl = json_string_value(json_object_get(t, "clone"));

			guard_held_init(&R->ts[i]);
			if (!cl)
				return guard_refuse(R->l, "clone", "run", pgdata, e,
						    "%s: its clone marker names a tablespace without "
						    "its clone",
						    pgdata);
			R->ts_oid[i] = json_string_value(json_object_get(t, "oid"));
			if ((rc = guard_existing(R->l, prod, cl, AT_FDCWD, "run", "tablespace",
						 &R->ts[i], e)))
				return rc;
			R->nts = i + 1;
			if ((json_int_t) R->ts[i].st.st_dev != json_integer_value(json_object_get(t, "dev")) ||
			    (json_int_t) R->ts[i].st.st_ino != json_integer_value(json_object_get(t, "ino")))
				return guard_refuse(R->l, "clone", "run", cl, e,
						    "%s: tablespace %s is not the folder the clone "
						    "made (device and inode differ)",
						    cl, R->ts_oid[i]);
		}
	}
	if ((rc = guard_port(R->l, prod, port, "run", "postgres.port", e)))
		return rc;
	/* what the run is comes from the plan, by its spec hash, not from the flag (as run.c) */
	if ((rc = ledger_plan_load(R->l, 0, &R->plan, e)) ||
	    (rc = guard_run_plan(R->l, &R->plan, sha, o->holdout, "run", &R->holdout, e)))
		return rc;
	R->cls = R->plan.plan || !R->holdout ? ledger_plan_class(&R->plan, sha) : "holdout";
	/* evidence bound to the plan (as run.c): no --seed on it, the registered clone's content */
	if (o->has_seed && (rc = guard_plan_seed(R->l, R->cls, 0, R->spec_path, "run", e)))
		return rc;
	if (!strcmp(R->cls, "design") || !strcmp(R->cls, "sceptic")) {
		if ((rc = guard_plan_clone(R->l, R->cls, pgdata,
					   json_string_value(json_object_get(*marker, "source_sha256")),
					   R->class_why, sizeof(R->class_why), e)))
			return rc;
		if (R->class_why[0]) {
			R->cls = "exploratory";
			fprintf(stderr, "coldstudy run: %s\n", R->class_why);
		}
	}
	if (R->holdout) {
		if ((rc = guard_holdout_predictions(R->l, sha, "run", e)) ||
		    (rc = guard_holdout_overlap(R->l, eff, o->declare_overlap, "run", e)))
			return rc;
	}
	/* a run over N servers: every shard held and guarded as the coordinator is */
	if ((rc = harness_pgfdw_prepare(R->l, prod, pg, R->spec_path, &R->fdw, e)))
		return rc;
	rc = harness_pg_init(&R->srv, &R->hold, port,
			     json_string_value(json_object_get(pg, "shared_buffers")), e);
	if (rc)
		return rc;
	{
		/* The clone's own configuration names only the clone (else the server starts elsewhere). */
		char why[PATH_MAX + 256];

		rc = harness_pg_conf(&R->srv, why, sizeof(why), e);
		if (rc == 1)
			return guard_refuse(R->l, "production", "run", pgdata, e, "%s", why);
		if (rc)
			return rc;
	}
	{
		/* The private socket directory goes through the guards like every other target. */
		guard_held sh;

		if ((rc = guard_existing(R->l, prod, R->srv.sockdir, AT_FDCWD, "run",
					 "socket directory", &sh, e)))
			return rc;
		guard_held_close(&sh);
	}
	/* Inputs: queries, base and exact ground truth (cached), each checked as run.c's are. */
	{
		const char *qs = harness_dataset_spec(
			study, json_string_value(json_object_get(json_object_get(eff, "queries"), "spec")));
		const char *bs = json_string_value(json_object_get(eff, "base")), *cache;

		if ((rc = guard_dataset(R->l, prod, qs, "run", "$.queries.spec", e)) ||
		    (bs && (rc = guard_dataset(R->l, prod, harness_dataset_spec(study, bs), "run",
					      "$.base", e))) ||
		    (rc = guard_cache_dir(R->l, prod, NULL, "run", &cache, e)))
			return rc;
	}
	{
		const json_t *q = json_object_get(eff, "queries");
		const char *qspec = harness_dataset_spec(study, json_string_value(json_object_get(q, "spec")));
		const char *b = json_string_value(json_object_get(eff, "base"));
		/* with queries.draw, this replicate's own rows out of the registered range */
		uint64_t first = harness_query_first(eff, study, o->replicate);
		uint64_t count;
		cv_dataset *qall = NULL;

		if (cv_dataset_load(guard_dataset_via(qspec), &qall, &ce))
			return cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.queries.spec: %s", R->spec_path,
					  ce.msg);
		count = json_is_integer(json_object_get(q, "count"))
				? (uint64_t) json_integer_value(json_object_get(q, "count"))
				: (first < qall->n ? qall->n - first : 0);
		if (json_is_integer(json_object_get(eff, "query_count")) &&
		    (uint64_t) json_integer_value(json_object_get(eff, "query_count")) < count)
			count = (uint64_t) json_integer_value(json_object_get(eff, "query_count"));
		if (first >= qall->n || count > qall->n - first || !count) {
			cv_dataset_free(qall);
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "%s: $.queries: rows [%llu, %llu) are outside the queries",
					  R->spec_path, (unsigned long long) first,
					  (unsigned long long) (first + count));
		}
		R->first = first;
		rc = cv_dataset_slice(qall, first, count, &R->queries);
		cv_dataset_free(qall);
		if (rc)
			return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory slicing queries");
		/* holdout targets by what the run reads (its query rows), as an engine run's are */
		R->qrows = harness_query_digests(R->queries);
		rc = harness_holdout_rows(R->l, study, eff, R->qrows, R->holdout, o->declare_overlap,
					  &R->reached, e);
		if (rc)
			return rc;
		if (b) {
			if (cv_dataset_load(guard_dataset_via(harness_dataset_spec(study, b)), &R->base,
					    &ce))
				return cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.base: %s", R->spec_path,
						  ce.msg);
			if (R->base->d != R->queries->d)
				return cs_err_set(e, CS_EXIT_BADINPUT,
						  "%s: $.base: %zu dimensions, queries %zu", R->spec_path,
						  R->base->d, R->queries->d);
			if (cv_groundtruth_cached(R->base, R->queries, R->k, CV_METRIC_L2, 0, NULL,
						  &R->gt, &ce))
				return cs_err_set(e, CS_EXIT_INTERNAL, "ground truth: %s", ce.msg);
		}
	}
	if (R->psql && !strcmp(json_string_value(json_object_get(eff, "mode")), "fanout")) {
		const json_t *parts = json_object_get(eff, "partitions");

		R->nparts = json_array_size(parts);
		R->partsql = calloc(R->nparts, sizeof(*R->partsql));
		if (!R->partsql)
			return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		for (size_t p = 0; p < R->nparts; p++)
			if (!(R->partsql[p] = part_sql(R->psql, (size_t) json_integer_value(
									json_array_get(parts, p)))))
				return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		R->nconns = (unsigned) json_integer_value(json_object_get(eff, "fanout"));
		if (R->nconns > R->nparts)
			R->nconns = (unsigned) R->nparts;
	} else {
		R->nconns = 1;
	}
	R->conns = calloc(R->nconns, sizeof(*R->conns));
	if (!R->conns)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	return 0;
}

/*
 * Before a repeat (or before the first when warm-up queries are asked), as
 * an engine run's (run_cold.c): nwarm untimed queries, then for a cold run
 * cold again (stopped, evicted, proven cold, started, prewarmed when
 * asked); a warm run's resident fraction measured again.
 */
static int before_repeat(pgrun *R, uint64_t nwarm, int cold, double *resident, char *why,
			 size_t whycap, cs_err *e)
{
	if (nwarm) {
		/* a pass over the queries at a time: bounded memory whatever warmup_queries says */
		size_t chunk = nwarm < R->queries->n ? (size_t) nwarm : R->queries->n;
		pgrow *w = calloc(chunk, sizeof(*w));
		int rc = 0;

		if (!w)
			return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		for (uint64_t left = nwarm; left && !rc; left -= left < chunk ? left : chunk)
			rc = run_load(R, w, left < chunk ? (size_t) left : chunk, 0, why, whycap, e);
		free(w);
		if (rc)
			return rc;
	}
	if (!cold) {
		*resident = clone_resident(R);
		return 0;
	}
	R->prewarm_ms = 0; /* this repeat's prewarm is the one that follows */
	return cold_start(R, resident, e);
}

/* The competing load of the engine's knobs, load and bulkwrite, beside the server (treat.c). */
static int competing_start(pgrun *R, const guard_held *whold, harness_readers **rd,
			   harness_writer **wr, cs_err *e)
{
	const json_t *ld = json_object_get(R->eff, "load"), *bw = json_object_get(R->eff, "bulkwrite");
	int rc = 0;

	if (json_is_object(ld)) {
		char **paths = NULL;
		size_t n = 0;

		rc = clone_paths(R, &paths, NULL, &n, e);
		if (!rc)
			rc = harness_readers_start(
				paths, n, (unsigned) json_integer_value(json_object_get(ld, "readers")),
				json_is_integer(json_object_get(ld, "block_bytes"))
					? (uint32_t) json_integer_value(json_object_get(ld, "block_bytes"))
					: HARNESS_BLOCK,
				NULL, rd, e);
		paths_free(paths, n);
		if (rc)
			return rc;
	}
	if (json_is_object(bw))
		rc = harness_writer_start(
			guard_held_via(whold), json_string_value(json_object_get(R->eff, "index")),
			json_is_integer(json_object_get(bw, "max_bytes"))
				? (uint64_t) json_integer_value(json_object_get(bw, "max_bytes"))
				: (uint64_t) 1 << 30,
			json_is_number(json_object_get(bw, "max_s"))
				? json_number_value(json_object_get(bw, "max_s"))
				: 600.0,
			json_is_integer(json_object_get(bw, "chunk_bytes"))
				? (uint64_t) json_integer_value(json_object_get(bw, "chunk_bytes"))
				: (uint64_t) 1 << 20,
			json_is_integer(json_object_get(bw, "sync_bytes"))
				? (uint64_t) json_integer_value(json_object_get(bw, "sync_bytes"))
				: (uint64_t) 8 << 20,
			NULL, wr, e);
	return rc;
}

/* Stop the competing load; what each did into *treat (new object, or NULL when none ran). */
static int competing_stop(harness_readers **rd, harness_writer **wr, json_t **treat, cs_err *e)
{
	cs_err te = {0};
	json_t *rj = *rd ? harness_readers_stop(*rd, &te) : NULL;
	json_t *wj;
	int failed = *rd && !rj;

	*rd = NULL;
	wj = *wr ? harness_writer_stop(*wr, failed ? NULL : &te) : NULL;
	failed |= *wr && !wj;
	*wr = NULL;
	if (rj || wj) {
		*treat = json_object();
		if (rj)
			json_object_set_new(*treat, "load", rj);
		if (wj)
			json_object_set_new(*treat, "bulkwrite", wj);
	}
	return failed ? cs_err_set(e, CS_EXIT_INTERNAL, "competing load: %s", te.msg) : 0;
}

static int pg_run(harness_run_ctx *run, cs_err *e)
{
	struct ledger *l = run->l;
	guard_prodset *prod = run->prod;
	const json_t *study = run->study, *eff = run->eff;
	const char *sha = run->sha, *spec_path = run->spec_path;
	harness_run_opts *o = run->o;
	pgrun R;
	json_t *reps = NULL, *treat = NULL, *mempeak = NULL;
	harness_readers *readers = NULL;
	harness_writer *writer = NULL;
	json_t *marker = NULL, *features = NULL, *host = NULL, *metrics = NULL, *rowsj = NULL;
	json_t *ios = NULL, *mems = NULL, *proms = NULL, *rec = NULL, *tmp, *pgj = NULL, *tags = NULL;
	harness_samplers *smp = NULL;
	pgrow *rows = NULL;
	size_t nq = 0;
	int64_t runs = 0;
	char run_id[32], started[32], ended[32], why[512] = "", ver[64] = "", bs[32] = "";
	double resident_before = 0;
	harness_live live;
	json_t *smp_health = NULL;
	int rc, cold, each, run_started = 0, recorded = 0;

	memset(&R, 0, sizeof(R));
	harness_live_init(&live);
	guard_held_init(&R.hold);
	R.l = l;
	R.eff = eff;
	R.spec_path = spec_path;
	R.pgspec = json_object_get(eff, "postgres");
	R.sql = json_string_value(json_object_get(R.pgspec, "sql"));
	R.psql = json_string_value(json_object_get(R.pgspec, "partition_sql"));
	R.db = json_string_value(json_object_get(R.pgspec, "database"));
	R.user = json_string_value(json_object_get(R.pgspec, "user"));
	R.vec_pgvector = json_is_string(json_object_get(R.pgspec, "vector_text")) &&
			 !strcmp(json_string_value(json_object_get(R.pgspec, "vector_text")), "pgvector");
	R.k = (size_t) json_integer_value(json_object_get(eff, "k"));
	R.prewarm = json_object_get(R.pgspec, "prewarm");
	R.prewarm_mode = json_string_value(json_object_get(R.pgspec, "prewarm_mode"));
	R.infl.fd = -1;
	harness_throttle_init(&R.thr);

	/* 1. guards and inputs */
	rc = pg_prepare(&R, prod, study, o, sha, &marker, e);
	if (rc)
		goto out;
	if (json_is_string(json_object_get(eff, "throttle"))) {
		/*
		 * A real cap on the clone's whole disk, made before any server of the
		 * run starts: every postmaster (the shards' too, in the same cgroup,
		 * pgfdw.c) joins it before exec, so each backend's read passes it.
		 */
		harness_cap cap;

		rc = harness_cap_parse(json_string_value(json_object_get(eff, "throttle")), &cap, e);
		if (!rc)
			rc = harness_throttle_begin(&cap, R.hold.fd, &R.thr, e);
		if (rc) {
			char m[CS_ERR_MAX];

			snprintf(m, sizeof(m), "%s", e->msg);
			rc = cs_err_set(e, rc, "%s: $.throttle: %s", spec_path, m);
			goto out;
		}
		if (R.thr.v2 && R.srv.cgdir[0]) {
			/* v2: a process is in one cgroup; the throttle's wins, the memory peak is lost */
			(void) rmdir(R.srv.cgdir);
			R.srv.cgdir[0] = '\0';
			json_object_set_new(R.srv.cgroup, "why",
					    json_string("cgroup v2 puts a process in one cgroup: the server "
							"is in the throttle's"));
		}
		snprintf(R.srv.thrdir, sizeof(R.srv.thrdir), "%s", R.thr.dir);
		harness_pgfdw_throttle(R.fdw, R.thr.dir);
	}
	nq = R.queries->n;
	rows = calloc(nq * run->nrep, sizeof(*rows));
	reps = json_array();
	if (!reps) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	if (!rows) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	rc = harness_spec_features(eff, &features, e);
	if (!rc)
		rc = harness_run_tags(eff, json_object_get(study, "defaults"), "postgres", R.cls,
				      spec_path, &tags, e);
	if (rc)
		goto out;

	/* 2. run_start */
	if (ledger_foreach(l, "run_start", count_cb, &runs, e)) {
		rc = e->code ? e->code : CS_EXIT_INTERNAL;
		goto out;
	}
	snprintf(run_id, sizeof(run_id), "R%04lld", (long long) runs + 1);
	snprintf(o->run_id, sizeof(o->run_id), "%s", run_id);
	/* a holdout target run again: a deviation; its first run stays the observation */
	if (R.holdout && (rc = guard_holdout_repeat(l, sha, run_id, "run", &R.repeat, e)))
		goto out;
	/* a planned spec run beyond its registered count: a deviation, excluded from decisions */
	if ((rc = guard_plan_runs(l, sha, R.cls, harness_spec_replicates(eff), run_id, "run",
				  &R.beyond, e)))
		goto out;
	/* held until the run record or a deviation is in: a later command knows a live run */
	rc = harness_live_begin(ledger_dir(l), run_id, &live, e);
	if (rc)
		goto out;
	/* a run killed from here on leaves its server and socket directory to the next command */
	harness_live_postgres(&live, R.srv.sockdir, R.srv.port, R.srv.cgdir);
	tmp = json_pack("{s:s, s:s, s:b, s:s}", "run_id", run_id, "spec_sha256", sha, "holdout",
			R.holdout, "class", R.cls);
	rc = ledger_append(l, "run_start", tmp, NULL, e);
	json_decref(tmp);
	if (rc)
		goto out;
	run_started = 1;

	/* 3. cold or warm */
	cold = json_is_true(json_object_get(eff, "cold"));
	each = cold && json_is_true(json_object_get(eff, "cold_each_query"));
	R.have_dev = cv_blkdev_for_path(guard_held_via(&R.hold), &R.bd, NULL) == 0;
	if (cold) {
		rc = cold_start(&R, &resident_before, e);
	} else {
		rc = harness_pgfdw_start(R.fdw, e);
		if (!rc)
			rc = harness_pg_start(&R.srv, e);
		if (!rc)
			rc = harness_pgfdw_repoint(R.fdw, l, &R.srv, R.db, R.user, e);
		if (!rc)
			rc = sessions_up(&R, e);
	}
	if (rc)
		goto out;
	{
		PGresult *r = PQexec(R.conns[0].c, "SELECT current_setting('server_version'), "
						   "current_setting('block_size')");

		if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
			snprintf(ver, sizeof(ver), "%s", PQgetvalue(r, 0, 0));
			snprintf(bs, sizeof(bs), "%s", PQgetvalue(r, 0, 1));
		}
		PQclear(r);
		R.block_size = strtoll(bs, NULL, 10);
	}
	if (!cold && !run->nwarm) {
		/* One untimed pass warms shared_buffers and the page cache (warmup_queries: those). */
		R.t0 = cs_mono_ns();
		rc = run_load(&R, rows, nq, 0, why, sizeof(why), e);
		if (rc)
			goto out;
		resident_before = clone_resident(&R);
	}
	host = harness_host_capture(guard_held_via(&R.hold));

	/* 4. the load */
	{
		harness_sampler_opts so = {
			.dev = R.have_dev ? &R.bd : NULL,
			.iostat_s = json_number_value(json_object_get(json_object_get(eff, "samplers"), "iostat_s")),
			.memory_s = json_number_value(json_object_get(json_object_get(eff, "samplers"), "memory_s")),
		};

		rc = harness_samplers_start(&so, &smp, e);
		if (rc)
			goto out;
	}
	/* competing readers and bulk writes from before the first query to after the last */
	rc = competing_start(&R, &run->whold, &readers, &writer, e);
	if (rc)
		goto out;
	if (R.have_dev)
		(void) infl_start(&R.infl, &R.bd); /* none: inflight_* null */
	cs_format_rfc3339(cs_now_us(), started);
	R.t0 = cs_mono_ns();
	/*
	 * The load, `repeat` times, as an engine run's (run_load.c): each repeat
	 * from the run's state again (cold: stopped, evicted, proven cold,
	 * started, prewarmed), after `warmup_queries` untimed queries, with its
	 * own metrics; the run's are their means (harness_mean_metrics).
	 */
	for (unsigned rep = 0; rep < run->nrep && !rc; rep++) {
		pgrow *rr = rows + (size_t) rep * nq;
		double setup_ms = 0, wall_s;
		json_t *m;

		if ((rep > 0 || run->nwarm) &&
		    (rc = before_repeat(&R, run->nwarm, cold, &resident_before, why, sizeof(why), e)))
			break;
		if ((rc = run_load(&R, rr, nq, each, why, sizeof(why), e)))
			break;
		/* the wall runs from the first query's start to the last one's end, less setup */
		for (size_t i = 1; i < nq; i++)
			setup_ms += rr[i].setup_ms;
		wall_s = (rr[nq - 1].t_ms + rr[nq - 1].lat_ms - rr[0].t_ms - setup_ms) / 1e3;
		m = pg_metrics(&R, rr, nq, wall_s, resident_before);
		if (!m || json_array_append_new(reps, m))
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		R.prewarm_ms = 0;
	}
	cs_format_rfc3339(cs_now_us(), ended);
	infl_stop(&R.infl);
	{
		int crc = competing_stop(&readers, &writer, &treat, rc ? NULL : e);

		if (!rc)
			rc = crc;
	}
	harness_samplers_stop(smp, &ios, &mems, &proms, NULL, &smp_health);
	smp = NULL;
	if (rc)
		goto out;
	{
		char swhy[600];

		if (!smp_health) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
		if (harness_samplers_judge(smp_health, eff, run_id, swhy, sizeof(swhy))) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s; samplers.fatal", swhy);
			goto out;
		}
	}
	close_conns(&R);
	rc = harness_pg_stop(&R.srv, e);
	if (!rc)
		rc = harness_pgfdw_stop(R.fdw, e);
	if (rc)
		goto out;
	if (R.thr.dirfd >= 0 && harness_throttle_counters(&R.thr, &R.thr_reads, &R.thr_bytes) < 0) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: the throttle's counters are unreadable",
				R.thr.dir);
		goto out;
	}

	/* 5. metrics: the repeats' (their means), the server's memory peak over the whole run */
	{
		char which[64] = "";
		int64_t pk = R.srv.cgdir[0] ? harness_cgroup_peak(R.srv.cgdir, which, sizeof(which))
					    : -1;
		size_t i;
		json_t *m;
		char src[160];

		if (pk >= 0)
			snprintf(src, sizeof(src),
				 "cgroup %s of the server (the postmaster and its backends)", which);
		else
			snprintf(src, sizeof(src), "none: %s",
				 json_string_value(json_object_get(R.srv.cgroup, "why"))
					 ? json_string_value(json_object_get(R.srv.cgroup, "why"))
					 : "the server's cgroup has no peak counter");
		mempeak = json_pack("{s:o, s:s, s:O?}", "bytes", pk >= 0 ? json_integer(pk) : json_null(),
				    "source", src, "cgroup", R.srv.cgroup);
		json_array_foreach(reps, i, m)
			json_object_set_new(m, "mem_peak_bytes",
					    pk >= 0 ? json_integer((json_int_t) pk) : json_null());
	}
	metrics = run->nrep > 1 ? harness_mean_metrics(reps) : json_incref(json_array_get(reps, 0));
	rowsj = json_array();
	if (!metrics || !rowsj) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nq * run->nrep && i < ROWS_MAX; i++) { /* rows kept as an engine run's */
		const pgrow *r = &rows[i];
		json_t *row;

		row = json_pack("{s:I, s:I, s:f, s:f, s:I, s:I, s:f, s:o, s:I, s:I, s:I, s:f, s:o}",
					 /* the row read: with queries.draw, this replicate's */
					 "q", (json_int_t) (r->q + R.first),
					 "client", (json_int_t) 0, "t_ms", r->t_ms, "lat_ms", r->lat_ms,
					 "reads", (json_int_t) r->reads, "bytes",
					 (json_int_t) (r->reads * R.block_size), "read_ms", r->read_ms,
					 "recall", harness_num_or_null(r->recall), "n", (json_int_t) r->n,
					 "hit_blocks", (json_int_t) r->hits, "statio_reads",
					 (json_int_t) r->statio, "setup_ms", r->setup_ms,
					 "device_reads",
					 R.have_dev ? json_integer((json_int_t) r->dev_reads) : json_null());
		if (row && run->nrep > 1) /* which repeat, as an engine run's rows say */
			json_object_set_new(row, "repeat", json_integer((json_int_t) (i / nq)));
		if (!row || json_array_append_new(rowsj, row)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
	}
	{
		int64_t plan_reads = 0, hits = 0, statio = 0;

		/* over every repeat: the plans' blocks read against pg_statio's */
		for (size_t i = 0; i < nq * run->nrep; i++) {
			plan_reads += rows[i].reads;
			hits += rows[i].hits;
			statio += rows[i].statio;
		}
		pgj = json_pack("{s:s, s:I, s:I, s:I, s:b, s:I, s:I, s:{s:s, s:s, s:s, s:s}, s:O*, "
				"s:s, s:I, s:s, s:s, s:s}",
				"server_version", ver, "block_size", (json_int_t) R.block_size,
				"plan_blocks_read", (json_int_t) plan_reads, "statio_blocks_read",
				(json_int_t) statio, "statio_agrees", statio == plan_reads,
				"plan_blocks_hit", (json_int_t) hits,
				"restarts", (json_int_t) R.restarts, "server", "shared_buffers",
				R.srv.shared_buffers, "listen_addresses", "", "autovacuum", "off",
				"track_io_timing", "on", "session", json_object_get(R.pgspec, "session"),
				"connections", R.fdw ? "one session on the coordinator: postgres_fdw over "
						       "the shards (PostgreSQL's async Append)"
						 : R.partsql ? "fanout: one thread, libpq non-blocking"
							 : "serial: one session",
				"sessions", (json_int_t) R.nconns, "measured",
				"per query: auto_explain (EXPLAIN ANALYZE, BUFFERS, FORMAT JSON) of the "
				"execution, and pg_statio_all_tables' blocks read over the query (every "
				"session's statistics flushed before and after)",
				"cold",
				each ? "before every query: stop, evict every clone file, residency 0.0, "
				       "start, sessions set up (outside the wall)"
				     : cold ? "once: stop, evict every clone file, residency 0.0, start"
					    : run->nwarm ? "warm: warmup_queries untimed queries first"
							 : "warm: one untimed pass first",
				"owner", R.srv.user);
		if (pgj && R.fdw) {
			json_t *plan;

			json_object_set_new(pgj, "shards", harness_pgfdw_record(R.fdw, &plan));
			json_object_set_new(pgj, "plan", plan);
		}
		/*
		 * a serial run reads the partitions its plans scanned (Merge Append's
		 * children); its features keep the spec's (null), which holdout predicted from
		 */
		int most = 0;

		for (size_t i = 0; i < nq; i++)
			most = rows[i].rels > most ? rows[i].rels : most;
		json_object_set_new(pgj, "partitions_read",
				    R.partsql ? json_integer((json_int_t) R.nparts)
					      : most ? json_integer(most) : json_null());
		json_object_set_new(pgj, "short_queries", json_integer((json_int_t) R.short_queries));
		json_object_set_new(pgj, "fewest_rows", R.short_queries
								? json_integer((json_int_t) R.fewest_rows)
								: json_null());
		if (pgj && json_array_size(R.prewarm))
			json_object_set_new(
				pgj, "prewarm",
				json_pack("{s:O, s:s, s:I, s:s}", "relations", R.prewarm, "mode",
					  R.prewarm_mode ? R.prewarm_mode : "buffer", "blocks",
					  (json_int_t) R.prewarm_blocks, "how",
					  "pg_prewarm (contrib) after every cold start, before the "
					  "queries: setup, timed as prewarm_s, outside the wall"));
		if (pgj && R.nts) {
			json_t *ta = json_array();

			for (size_t t = 0; ta && t < R.nts; t++) {
				char **nm = NULL;
				size_t n = 0;
				cs_err ce = {0};

				if (guard_dir_files(guard_held_via(&R.ts[t]), &nm, &n, &ce) == 0)
					json_array_append_new(ta, json_pack("{s:s, s:s, s:I}", "oid", R.ts_oid[t],
									    "dir", R.ts[t].shown,
									    "files", (json_int_t) n));
				guard_dir_files_free(nm, n);
			}
			json_object_set_new(pgj, "tablespaces", ta);
		}
		if (pgj)
			json_object_set_new(
				pgj, "inflight",
				json_pack("{s:s, s:s}", "source",
					  R.have_dev ? R.bd.part : "none: no block device under the clone",
					  "how",
					  "the block device's reads in flight sampled every 1 ms while "
					  "a query runs; samples with none in flight left out"));
	}

	/* 6. one transaction: the raw series and the run record */
	{
		json_t *ixj, *rawj;

		rc = harness_record_begin(l, rowsj, ios, mems, proms, &rawj, e);
		if (rc)
			goto out;
		ixj = json_pack("{s:s, s:s, s:{s:O, s:O}, s:I, s:I}", "kind", "postgres", "dir",
				json_string_value(json_object_get(eff, "index")), "clone", "method",
				json_object_get(marker, "method"), "source_sha256",
				json_object_get(marker, "source_sha256"), "dev",
				(json_int_t) R.hold.st.st_dev, "ino", (json_int_t) R.hold.st.st_ino);
		rec = json_pack("{s:s, s:O, s:s, s:O, s:O, s:b, s:o, s:O, s:O, s:o,"
				" s:O, s:s, s:s, s:s, s:{s:n, s:b}, s:o, s:n, s:s, s:O}",
				"run_id", run_id, "spec", eff, "spec_sha256", sha, "tags", tags,
				"hypotheses", json_object_get(eff, "hypotheses"), "holdout", R.holdout,
				"index", ixj, "features", features, "metrics", metrics, "raw", rawj,
				"host", host, "started", started, "ended", ended, "status", "complete",
				"mem_cap", "requested_bytes", "applied", 0, "device_stats",
				R.have_dev ? json_pack("{s:b, s:s}", "available", 1, "device", R.bd.part)
					   : json_pack("{s:b}", "available", 0),
				"device_time", "spec_file", spec_path, "postgres", pgj);
		if (!rec) {
			ledger_rollback(l);
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "cannot build the run record");
			goto out;
		}
		json_object_set_new(rec, "class", json_string(R.cls));
		json_object_set(rec, "labels", json_object_get(eff, "tags"));
		json_object_set(rec, "samplers", smp_health);
		if (ledger_plan_path(&R.plan, sha))
			json_object_set_new(rec, "plan_path", json_string(ledger_plan_path(&R.plan, sha)));
		if (R.repeat)
			json_object_set_new(rec, "repeat", json_true());
		/* which of the spec's registered replicates, and its group (as run.c records it) */
		json_object_set_new(rec, "replicate",
				    json_pack("{s:I, s:I, s:s}", "index",
					      (json_int_t) (o->replicate ? o->replicate : 1), "of",
					      (json_int_t) harness_spec_replicates(eff), "group",
					      o->group ? o->group : run_id));
		if (json_is_integer(json_object_get(json_object_get(eff, "queries"), "draw")))
			json_object_set_new(json_object_get(rec, "replicate"), "queries_first",
					    json_integer((json_int_t) R.first));
		if (R.beyond)
			json_object_set_new(rec, "beyond_plan", json_true());
		if (R.class_why[0])
			json_object_set_new(rec, "class_why", json_string(R.class_why));
		json_object_set_new(rec, "versions", harness_versions(NULL));
		/* as an engine run's record: each repeat's metrics, how mem_peak_bytes was had,
		 * what the competing load did */
		if (run->nrep > 1)
			json_object_set(rec, "repeats", reps);
		json_object_set(rec, "mem_peak", mempeak);
		if (treat)
			json_object_set(rec, "treatments", treat);
		if (json_array_size(R.reached))
			json_object_set(rec, "holdout_reached", R.reached);
		if (R.thr.dirfd >= 0) {
			/* the cap, the controller and the kernel's own count beside the servers' */
			json_t *tj = harness_throttle_record(&R.thr, R.thr_reads, R.thr_bytes);
			int64_t statio = json_integer_value(json_object_get(pgj, "statio_blocks_read"));

			json_object_set_new(tj, "scope", json_string("the servers' processes (every "
								    "postmaster joins before exec)"));
			json_object_set(tj, "engine_reads", json_object_get(metrics, "engine_reads"));
			json_object_set_new(tj, "statio_blocks_read", json_integer((json_int_t) statio));
			json_object_set(tj, "engine_iops", json_object_get(metrics, "engine_iops"));
			json_object_set_new(
				tj, "note",
				json_string("throttle counts are the whole run's: every server start "
					    "(catalogs, recovery) and shutdown, each repeat's queries; "
					    "pg_statio's are the queries' alone, the servers' reads of "
					    "the page cache included; competing readers (load) are the "
					    "harness's and not capped"));
			json_object_set_new(rec, "throttle", tj);
		}
		if (R.short_queries) {
			char w[256];

			snprintf(w, sizeof(w),
				 "%zu of %zu queries returned fewer than k %zu rows (fewest %zu): is "
				 "hnsw.ef_search below k?",
				 R.short_queries, nq, R.k, R.fewest_rows);
			json_object_set_new(rec, "warnings", json_pack("[s]", w));
		}
		rc = ledger_append(l, "run", rec, NULL, e);
		if (rc) {
			ledger_rollback(l);
			goto out;
		}
		rc = ledger_commit(l, e);
		recorded = !rc;
	}
out:
	if (rc && run_started && !recorded) {
		json_t *d;
		char because[CS_ERR_MAX + 64];
		cs_err le = {0};

		snprintf(because, sizeof(because), "run %s failed: %s; no run record", run_id, e->msg);
		d = json_pack("{s:s, s:s, s:s}", "because", because, "run_id", run_id, "access_state",
			      ledger_access_state(l));
		if (!d || ledger_append(l, "deviation", d, NULL, &le))
			fprintf(stderr, "coldstudy run: warning: deviation not recorded: %s\n", le.msg);
		json_decref(d);
	}
	harness_live_end(&live);
	json_decref(smp_health);
	harness_samplers_stop(smp, NULL, NULL, NULL, NULL, NULL);
	infl_stop(&R.infl);
	harness_readers_stop(readers, NULL);
	harness_writer_stop(writer, NULL);
	json_decref(reps);
	json_decref(treat);
	json_decref(mempeak);
	close_conns(&R);
	harness_pg_fini(&R.srv);
	harness_pgfdw_free(R.fdw);
	harness_throttle_end(&R.thr); /* after the servers: its cgroup empty, then gone */
	free(R.conns);
	for (size_t p = 0; R.partsql && p < R.nparts; p++)
		free(R.partsql[p]);
	free(R.partsql);
	free(R.vtext);
	free(R.gt);
	cv_dataset_free(R.queries);
	cv_dataset_free(R.base);
	json_decref(R.qrows);
	json_decref(R.reached);
	guard_held_close(&R.hold);
	for (size_t t = 0; t < R.nts; t++)
		guard_held_close(&R.ts[t]);
	free(R.ts);
	free((void *) R.ts_oid);
	free(rows);
	json_decref(marker);
	json_decref(features);
	json_decref(host);
	json_decref(metrics);
	json_decref(rowsj);
	json_decref(ios);
	json_decref(mems);
	json_decref(proms);
	json_decref(rec);
	json_decref(pgj);
	json_decref(tags);
	ledger_plan_free(&R.plan);
	return rc;
}

/*
 * A run whose target is a PostgreSQL clone, after phase 0 (run_spec.c):
 * the same input guards and holds as the engine's path (run_guard.c), then
 * this file's own sessions, cold start, load and record.
 */
int harness_pg_run(harness_run_ctx *run, cs_err *e)
{
	int rc;

	/* bulk writes beside the index need the held clone, which is held later: a folder named */
	if (json_is_object(json_object_get(run->eff, "bulkwrite")) &&
	    !json_object_get(json_object_get(run->eff, "bulkwrite"), "dir") &&
	    !json_is_string(json_object_get(run->study, "scratch_dir")))
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: $.bulkwrite.dir: a postgres run's bulk writes need a folder "
				  "(bulkwrite.dir, or the study's scratch_dir)",
				  run->spec_path);
	/* the settings an engine run reads (repeat, warmup_queries, ...), by the same phase */
	if ((rc = harness_phase_settings(run, e)) ||
	    (rc = guard_prodset_load(run->l, &run->prod, e)) ||
	    (rc = harness_guard_inputs(run->l, run->prod, run->study, run->eff, &run->ihold,
				       &run->whold, e)))
		return rc;
	return pg_run(run, e);
}
