/*
 * run_phase.h - one study run's phases and the state they hand on.
 *
 * harness_run (run.c) is the list of phases; each is one function over a
 * harness_run_ctx that the run owns (init and free in run.c), in one file
 * a phase:
 *
 *   run_spec.c     0. the spec: loaded, hashed, defaults applied, validated;
 *                     the run's settings
 *   run_guard.c    1. guards and holds; the run's class from the plan
 *   run_inputs.c      the inputs: queries, index, base and ground truth,
 *                     device, throttle, load settings, features, tags
 *   run_record.c   2. the run_start record
 *   run_cold.c        prewarm block lists; 3. cold (evicted, proven cold)
 *                     or warm
 *   run_load.c     4. samplers, competing load, the closed-loop clients
 *   run_record.c      the load's outcome (a deviation when it stopped)
 *   run_guard.c   4b. the held identities again
 *   run_measure.c  5. metrics
 *   run_record.c   6. one transaction: raw series and the run record;
 *                     or the deviation that ends a stopped run
 *
 * run_util.c, below them all, holds the stop signal, the seeds and small
 * helpers. The PostgreSQL path (pgrun.c) runs phase 0 and the input guards
 * (harness_guard_inputs) as the engine's path does, then its own load.
 *
 * Error convention: a phase returns 0 or CS_EXIT_* with e filled; it
 * leaves what it made in the context, which run.c frees whatever happened.
 */
#ifndef HARNESS_RUN_PHASE_H
#define HARNESS_RUN_PHASE_H

#include "harness.h"
#include "harness_int.h"

#include "coldvec.h"
#include "guard.h"
#include "ledger.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#define ROWS_MAX 1000000 /* per-query rows kept in the ledger; later ones are counted */
#define MEM_HEADROOM (16u << 20) /* the harness's own under a cap: I/O buffers, rings, samplers */
#define MEM_ROW_BYTES 1024u      /* a per-query row as kept (its JSON object), about */
/* A run record keeps its query rows' digests up to this many rows (reach.c). */
#define QUERY_ROWS_RECORDED 4096

/* One query's row, as a client measured it. */
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

/* The load generator's state, shared by the clients (run_load.c). */
typedef struct load {
	cv_index *ix;
	const cv_dataset *queries;
	const cv_dataset *base;
	const int32_t *gt;
	size_t k;
	cv_metric metric;
	cv_query_opts qo;
	cv_io_opts io;
	harness_throttle *thr; /* the run's cap while the clients run, or NULL: their readers join it */
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

/* run_start records counted: the next run's id. */
typedef struct count_ctx {
	int64_t n;
} count_ctx;

/* Everything one run holds between its phases; run.c owns and frees it. */
typedef struct harness_run_ctx {
	/* asked */
	const char *dir, *spec_path;
	harness_run_opts *o;
	/* phase 0: the spec */
	struct ledger *l;
	json_t *raw, *study, *eff;
	char sha[65];
	unsigned nrep;
	uint64_t nwarm;
	int virt, cli_seed;
	const char *index, *index_shown, *bspec;
	/* phase 1: guards and holds */
	guard_prodset *prod;
	guard_held ihold, whold;
	json_t *marker;
	ledger_plan plan;
	const char *cls;
	char class_why[512];
	int holdout, repeat, beyond;
	/* inputs */
	cv_dataset *qall, *queries, *base;
	int32_t *gt;
	cv_index *ix;
	cv_device *dev;
	char **files;
	size_t nfiles;
	uint32_t *parts;
	json_t *features, *tags, *qrows, *reached;
	harness_throttle thr;
	load L;
	/* phase 2: run_start */
	count_ctx cc;
	char run_id[32];
	harness_live live;
	int run_started;
	/* prewarm and phase 3 */
	harness_blockset *pw;
	size_t npw;
	json_t *treat, *memcap, *host;
	char cgdir[1024];
	int cold;
	double resident_before;
	/* phase 4: the load */
	int tty, have_dev, started_load;
	cv_blkdev bd;
	cv_blkstat bs0, bs1;
	harness_samplers *smp;
	harness_readers *readers;
	harness_writer *writer;
	pthread_t *th;
	client_arg *ca;
	char started[32], ended[32];
	uint64_t t_end, vd, vh, thr_reads, thr_bytes;
	json_t *rowsj, *reps, *reps_real, *ios, *mems, *proms, *smp_health;
	harness_mem_peak mp;
	/* phase 5 and 6 */
	uint64_t mem_peak;
	json_t *mempeak, *metrics, *metrics_real, *vinfo, *rec;
	int recorded; /* the run record or a deviation names the run */
} harness_run_ctx;

/* The phases, in harness_run's order (each: 0 or CS_EXIT_* with e filled). */
int harness_phase_spec(harness_run_ctx *R, cs_err *e);
int harness_phase_is_postgres(const harness_run_ctx *R);
int harness_phase_settings(harness_run_ctx *R, cs_err *e);
int harness_phase_guard(harness_run_ctx *R, cs_err *e);
int harness_phase_inputs(harness_run_ctx *R, cs_err *e);
int harness_phase_start(harness_run_ctx *R, cs_err *e);
int harness_phase_prewarm(harness_run_ctx *R, cs_err *e);
int harness_phase_cold(harness_run_ctx *R, cs_err *e);
int harness_phase_load(harness_run_ctx *R, cs_err *e);
int harness_phase_outcome(harness_run_ctx *R, cs_err *e);
int harness_phase_recheck(harness_run_ctx *R, cs_err *e);
int harness_phase_metrics(harness_run_ctx *R, cs_err *e);
int harness_phase_record(harness_run_ctx *R, cs_err *e);
/* The deviation that ends a run stopped with rc (or interrupted); returns the exit. */
int harness_phase_abort(harness_run_ctx *R, int rc, cs_err *e);

/*
 * The datasets, the cache folder and a bulk-write folder of a run, checked
 * and held (run_guard.c); the PostgreSQL path runs it too.
 */
int harness_guard_inputs(struct ledger *l, guard_prodset *prod, const json_t *study,
			 const json_t *eff, const guard_held *ih, guard_held *wh, cs_err *e);
/* A run's deviation naming it, in its own transaction; failures are only printed (run_record.c). */
void harness_record_abort(struct ledger *l, const char *run_id, const char *because);
/* Back to the run's starting state, then nwarm untimed queries (run_cold.c). */
int harness_before_repeat(struct ledger *l, load *L, cv_index *ix, const cv_dataset *queries,
			  char **files, size_t n, uint64_t nwarm, int cold, double *resident,
			  cs_err *e);
/* One repeat's metrics (and in virtual time the real ones) from the clients' rows (run_measure.c). */
int harness_repeat_metrics(const load *L, uint64_t t_end, int virt, int have_dev,
			   const cv_blkstat *bs0, const cv_blkstat *bs1, double resident_before,
			   int several, json_t *reps, json_t *reps_real, json_t *rowsj, uint64_t *vd,
			   uint64_t *vh, cs_err *e);

/* Several repeats' metrics as one: each metric's mean where it is a number (run_measure.c). */
json_t *harness_mean_metrics(const json_t *reps);

/* run_util.c: stop signals, exit codes, seeds. */
void harness_run_signals(struct sigaction *old_int, struct sigaction *old_term);
int harness_errno_exit(int rc);
uint64_t harness_query_seed(uint64_t run_seed, uint64_t i);
uint64_t harness_run_seed(const char *run_id, const char *spec_sha);
uint64_t harness_derived_seed(uint64_t base, const json_t *study, unsigned replicate);

#endif
