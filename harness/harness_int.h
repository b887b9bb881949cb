/*
 * harness_int.h - private to harness/ and its tests: the samplers and
 * the pure computations behind them (iostat -x arithmetic, Prometheus
 * text parsing, cgroup memory lookup), so the tests can check them
 * without a device or a server.
 */
#ifndef HARNESS_INT_H
#define HARNESS_INT_H

#include <stdint.h>
#include "cs.h"
#include "cv_io.h"

/* ---- samplers (sample.c) ---- */

typedef struct harness_sampler_opts {
	const cv_blkdev *dev;      /* NULL: no iostat series */
	double iostat_s;           /* 1 */
	double memory_s;           /* 5 */
	double prometheus_s;       /* 10 */
	const char *prometheus_url; /* NULL: no Prometheus series */
	/* Called from the sampler's thread on each failed sample (may be NULL): samplers.fatal. */
	void (*on_fail)(void *ud, const char *series, const char *why);
	void *on_fail_ud;
} harness_sampler_opts;

typedef struct harness_samplers harness_samplers;

/* Start one thread per series; each takes a first sample at once. */
int harness_samplers_start(const harness_sampler_opts *o, harness_samplers **out, cs_err *e);

/* The largest memory figures the memory sampler saw (0: none). */
typedef struct harness_mem_peak {
	uint64_t cgroup_max; /* the usage of the cgroup this process is in */
	uint64_t rss_max;    /* this process's RSS */
	uint64_t samples;
} harness_mem_peak;

/*
 * Stop, take a last sample of each series, and hand the series over (new
 * references, arrays of rows; any out may be NULL). peak: the memory
 * sampler's maxima. health (new): per series that ran {"tries", "failed",
 * "rows", "dropped", "last_error" (when failed)} and "failed" in all; a
 * sample fails when it yields nothing usable (a device stat unread, an
 * HTTP error or refused connection, a 200 with no Prometheus sample in
 * it). Frees s.
 */
void harness_samplers_stop(harness_samplers *s, json_t **iostat, json_t **memory,
			   json_t **prometheus, harness_mem_peak *peak, json_t **health);

/*
 * After the run: any failed sample is said on stderr (why gets the text);
 * health gains "fatal" (the spec's samplers.fatal). Returns 1 when the
 * run must not be recorded (failures and samplers.fatal), else 0.
 */
int harness_samplers_judge(json_t *health, const json_t *eff, const char *run_id, char *why,
			   size_t cap);

/*
 * One iostat -x row between two block-device stat readings:
 * {"t_s", "r_s", "rkB_s", "r_await", "aqu_sz", "util"} with r_await in ms
 * (null when no reads completed) and util in percent.
 */
json_t *harness_iostat_row(const cv_blkstat *a, const cv_blkstat *b, double t_s);

/*
 * Parse Prometheus text exposition format: every sample line
 * `name{labels} value [timestamp]` into obj[name{labels}] = value (at
 * most cap samples). Comment lines and malformed lines are skipped and
 * counted in *skipped (may be NULL). Returns the number of samples.
 */
size_t harness_prom_parse(const char *text, size_t len, json_t *obj, size_t cap,
			  size_t *skipped);

/* This process's memory cgroup usage in bytes (v2 memory.current, else v1); -1 if none. */
int64_t harness_cgroup_memory(char *which, size_t cap);

/* Resident set size of this process in bytes; -1 on failure. */
int64_t harness_rss(void);

/*
 * Put this process in a new memory cgroup (coldstudy-PID beside its own)
 * capped at bytes (v2 memory.max or v1 memory.limit_in_bytes; 0: no cap,
 * the cgroup only gives the run its own peak counter). Returns a JSON
 * object {"requested_bytes" (null: 0), "applied" (the cap), "own_cgroup",
 * "cgroup" (v1|v2), "path", "why" (when not)} (new reference);
 * *cleanup_path gets the cgroup directory to remove afterwards ("" if none).
 */
json_t *harness_memcap_apply(uint64_t bytes, char *cleanup_path, size_t cap);
void harness_memcap_release(const char *cleanup_path);
/*
 * A memory cgroup for a server the run starts (coldstudy-PID beside this
 * process's own; no cap, this process left where it is): the server's
 * postmaster joins it itself, its backends follow. Returns the object
 * harness_memcap_apply returns (new); dir gets the cgroup's directory,
 * "" when none could be made (the object says why).
 */
json_t *harness_server_cgroup(char *dir, size_t cap);

/*
 * The peak of a cgroup's own memory counter (v2 memory.peak, v1
 * memory.max_usage_in_bytes); -1 where the kernel has none. which gets the
 * file's name.
 */
int64_t harness_cgroup_peak(const char *cgdir, char *which, size_t cap);

/* The oom_kill count of a cgroup (v2 memory.events, v1 memory.oom_control); -1: none. */
int64_t harness_cgroup_oom_kills(const char *cgdir);

/* ---- runs that did not finish (live.c) ---- */

/* A run's liveness marker, DIR/running/RID, locked for the run's life. */
typedef struct harness_live {
	int fd, dirfd;
	char run_id[32];
} harness_live;

void harness_live_init(harness_live *lv);
/* Create and lock the marker before the run_start record (dir: the study). */
int harness_live_begin(const char *dir, const char *run_id, harness_live *lv, cs_err *e);
/* Note the run's memory cgroup (harness_memcap_apply's object) in the marker. */
void harness_live_cgroup(harness_live *lv, const json_t *memcap);
/* Note a PostgreSQL run's private socket directory, port and server cgroup in the marker. */
void harness_live_postgres(harness_live *lv, const char *sockdir, int port, const char *cgdir);
/* Remove and unlock (once the run record or a deviation is committed); accepts an unused one. */
void harness_live_end(harness_live *lv);

/* ---- treatments and virtual time (treat.c) ---- */

#include "cv_index.h"

#define HARNESS_BLOCK 8192u /* the paged kinds' block: prewarm and hit detection */

/* Competing readers: n threads of QD1 O_DIRECT random reads over files. */
typedef struct harness_readers harness_readers;
/* Start them; dev (may be NULL) delays their reads in real time, shared with the queries. */
int harness_readers_start(char **files, size_t nfiles, unsigned n, uint32_t block,
			  const cv_device *dev, harness_readers **out, cs_err *e);
/* Stop and free (accepts NULL); a new summary object, or NULL with e filled on failure. */
json_t *harness_readers_stop(harness_readers *R, cs_err *e);

/*
 * Bulk sequential writes with fdatasync to a scratch file in dir (removed
 * at stop); dev (may be NULL): each flush also passes through the device
 * model in real time (its writes wait in the same queues as the reads).
 */
typedef struct harness_writer harness_writer;
int harness_writer_start(const char *dir, const char *index, uint64_t max_bytes, double max_s,
			 uint64_t chunk, uint64_t sync_bytes, const cv_device *dev,
			 harness_writer **out, cs_err *e);
/* Stop, remove the file, free (accepts NULL); a new summary, or NULL with e filled. */
json_t *harness_writer_stop(harness_writer *W, cs_err *e);

/* Exit 5 unless every CPU of cpus (a JSON array) is in this process's allowed set. */
int harness_cpuset_check(const json_t *cpus, cs_err *e);
/* Pin the calling thread to cpus; 0 or -errno. */
int harness_pin_self(const json_t *cpus);
/* The calling thread's CPU set as a JSON array (new). */
json_t *harness_affinity_now(void);

/* A sorted set of (index file, block) pairs: the blocks a prewarm loaded. */
typedef struct harness_blockset {
	uint64_t *key; /* file << 40 | block, sorted, unique */
	size_t n;
} harness_blockset;
int harness_blockset_from(const cv_block_list *bl, harness_blockset *out);
void harness_blockset_free(harness_blockset *s);
int harness_blockset_has(const harness_blockset *s, uint32_t file, uint64_t block);
/* Read the set's blocks of files[] into the page cache. 0 or -errno. */
int harness_prewarm(char **files, size_t nfiles, const harness_blockset *s);

/* One query in virtual time. */
typedef struct harness_vq {
	double lat_ms;          /* virtual latency */
	double read_ms;         /* sum of read latencies: replayed + page-cache hits */
	uint64_t device_reads;  /* reads replayed against the device */
	uint64_t hit_reads;     /* reads of prewarmed blocks (kept at their real latency) */
	double span_real_ms, span_virtual_ms;
	cv_sim_result sim;      /* the replay (competing work's figures included) */
} harness_vq;

/*
 * Replay query trace t against dev in virtual time (seeded), leaving out
 * reads wholly within hits (files[] maps the trace's files to block-set
 * file numbers by name), with the run's competing work (bg, may be NULL)
 * in the same device queues. -ENOSPC when the trace dropped reads.
 */
int harness_vtime_query(const cv_device *dev, const cv_trace *t, uint64_t seed,
			const cv_sim_load *bg, const harness_blockset *hits, char **files,
			size_t nfiles, double real_lat_ms, harness_vq *out);

/*
 * The modelled cost of a prewarm (virtual time): the set's blocks read one
 * after another at queue depth one with no CPU between them, in the set's
 * (sorted) order, as harness_prewarm reads them, replayed against dev from
 * seed. *ms: the replay's wall; 0 for an empty set. 0 or -errno.
 */
int harness_vtime_prewarm(const cv_device *dev, const harness_blockset *s, uint64_t seed,
			  double *ms);

/* ---- what the plan registered (canfail.c), shared with modelcheck.c ---- */

struct ledger;
struct ledger_plan;
/*
 * The registered hypotheses: *docs id -> {"doc", "seq"} (the latest version,
 * amendments included), *order the ids in first-registration order (both
 * new). 0 or an exit code (then both NULL).
 */
int harness_registered_hyps(struct ledger *l, json_t **docs, json_t **order, cs_err *e);
/*
 * The plan's specs for hypothesis id in role ("runs" or "sceptic"), each
 * {path, eff, tags} as the harness will run them (new); what will not load,
 * or changed since the plan was registered, is a line in findings.
 */
json_t *harness_hyp_plan_specs(const struct ledger_plan *plan, const json_t *study, const char *id,
			   const char *role, json_t *findings);

/* ---- PostgreSQL: a private server on a cloned cluster (pg.c) ---- */

#include <limits.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "harness.h"

struct guard_held;
typedef struct pg_conn PGconn;

typedef struct harness_pg {
	const struct guard_held *pgdata; /* the clone's data directory, held (borrowed) */
	pid_t pid;                       /* the postmaster this run started; 0: none */
	int port;                        /* names the socket file in sockdir */
	uid_t uid;                       /* the data directory's owner: the server runs as it */
	gid_t gid;
	char user[64];                   /* its name: the role connected as by default */
	char shared_buffers[32];
	char bindir[PATH_MAX];
	char sockdir[PATH_MAX];          /* private, 0700, the owner's; removed by fini */
	char log[PATH_MAX + 32];         /* the server's stderr */
	char cgdir[1024];                /* its memory cgroup (the postmaster joins it); "" none */
	json_t *cgroup;                  /* harness_server_cgroup's object (owned) */
	char thrdir[512];                /* a block-throttle cgroup the postmaster joins too; "" none */
} harness_pg;

/* The server binaries: COLDSTUDY_PG_BINDIR, pg_config --bindir, Debian's; exit 5 when none. */
int harness_pg_bindir(char *out, size_t cap, cs_err *e);
/* Make the private socket directory and its files; nothing is started. */
int harness_pg_init(harness_pg *s, const struct guard_held *pgdata, int port,
		    const char *shared_buffers, cs_err *e);
/*
 * The clone's configuration (postgresql.conf with its includes,
 * postgresql.auto.conf) checked to name only the clone (its tablespaces'
 * links are guard_clone's and the run's to check): 0 and
 * the checked copy written to the private directory (the server's
 * config_file), 1 with why filled when it points outside the clone (the
 * caller refuses), or CS_EXIT_* when it cannot be read.
 */
int harness_pg_conf(harness_pg *s, char *why, size_t cap, cs_err *e);
/* A database or role name that may be sent: no quote, '=', whitespace or control character. */
int harness_pg_name_ok(const char *name);
/* Start the postmaster on the held clone (no-op when running); returns once it accepts. */
int harness_pg_start(harness_pg *s, cs_err *e);
/* Fast shutdown and wait (e may be NULL). */
int harness_pg_stop(harness_pg *s, cs_err *e);
/* Stop the server if running and remove the private directory and its cgroup. */
void harness_pg_fini(harness_pg *s);
/*
 * What a run killed (kill -9) left, removed by the next command (live.c):
 * the processes still in its server's cgroup cgdir (may be NULL; only
 * coldstudy-OWNER, owner the dead run's pid, and only when that process is
 * gone) killed after a grace of 2 s for the fast shutdown the run's death
 * sent, the cgroup removed, then its private socket directory's files and
 * the directory. Only a
 * directory that is what harness_pg_init makes (/tmp/coldstudy-pg-XXXXXX,
 * not a link) is touched, only the names the server and init put there.
 * 0, or -errno of the last step that failed.
 */
int harness_pg_leftovers(const char *sockdir, int port, const char *cgdir, pid_t owner);
/*
 * Connect to the run's own server (its socket only) and check it is the
 * one on the held clone; CS_EXIT_REFUSED when not. Caller PQfinish()es.
 */
int harness_pg_connect(const harness_pg *s, const char *db, const char *user, PGconn **out,
		       cs_err *e);

/*
 * The low-level backup API on a running cluster (clone.c's online copy):
 * connect to the server at sockdir/port as the data directory's owner,
 * check it runs on pgdata (st: pgdata's stat) and call pg_backup_start
 * (fast); *out is the session that must stay open until the stop.
 */
int harness_pg_backup_start(const char *pgdata, const struct stat *st, const char *sockdir,
			    int port, PGconn **out, cs_err *e);
/* pg_backup_stop on that session and close it; *label (new, may be NULL) gets backup_label's text. */
int harness_pg_backup_stop(PGconn *c, char **label, cs_err *e);

/*
 * Step 6 of every run (engine or PostgreSQL): a ledger transaction begun
 * and the run's four raw series stored in it; *raw = {"queries", "iostat",
 * "memory", "prometheus"} their hashes, for the record. On failure the
 * transaction is rolled back and *raw is NULL.
 */
int harness_record_begin(struct ledger *l, json_t *rows, json_t *ios, json_t *mems, json_t *proms,
			 json_t **raw, cs_err *e);

/* Shared by the run's phases and pgrun.c (run_util.c): qsort order for doubles; a finite number or JSON null (new); a study dataset name's spec, else s (borrowed). */
int harness_cmp_double(const void *a, const void *b);
json_t *harness_num_or_null(double v);
const char *harness_dataset_spec(const json_t *study, const char *s);

/*
 * A postgres run's settings (spec.c), read from its "postgres" object: the
 * session's SETs as {name: value} (names lowercased, "SET [SESSION|LOCAL]
 * name = value" or "TO value", a quoted value unquoted; new, NULL when out
 * of memory); shared_buffers in kB (the server's 128MB when absent, a bare
 * number as 8 kB buffers; -1 when unreadable); hnsw.ef_search as the
 * session sets it (-1 when it does not, or not to a positive integer).
 */
json_t *harness_pg_settings(const json_t *pg);
int64_t harness_pg_shared_buffers_kb(const json_t *pg);
int64_t harness_pg_ef_search(const json_t *pg);

/*
 * The results digest (run_measure.c), one definition for every target: a
 * query's returned ids hashed in rank order (FNV-1a), and the digest of a
 * run's (query row, ids hash) pairs, kept to 52 bits so JSON holds it.
 */
typedef struct harness_qhash {
	uint64_t q, h;
} harness_qhash;
uint64_t harness_ids_hash(const uint32_t *ids, size_t n);
double harness_results_digest(harness_qhash *v, size_t n);

/* The signal (SIGINT, SIGTERM) that asked the running `run` to stop, or 0 (run_util.c). */
int harness_run_interrupted(void);

/* A run whose target is "postgres" (pgrun.c): harness_run hands over after phase 0 (run_phase.h). */
struct harness_run_ctx;
int harness_pg_run(struct harness_run_ctx *run, cs_err *e);

/*
 * A run over N servers (pgfdw.c): a coordinator whose foreign servers are
 * repointed at the shards' private servers, each shard a guarded clone,
 * evicted and proven cold on its own. NULL (no $.postgres.shards): every
 * call below does nothing.
 */
typedef struct harness_pgfdw harness_pgfdw;
struct guard_prodset;
/* Phase 1: hold and guard every shard of $.postgres.shards; *out (free with _free). */
int harness_pgfdw_prepare(struct ledger *l, struct guard_prodset *prod, const json_t *pgspec,
			  const char *spec_path, harness_pgfdw **out, cs_err *e);
/* Stop every shard server (e may be NULL). */
int harness_pgfdw_stop(harness_pgfdw *f, cs_err *e);
/* Evict every shard's files and prove each shard cold. */
int harness_pgfdw_evict(harness_pgfdw *f, struct ledger *l, cs_err *e);
/* Start every shard server. */
int harness_pgfdw_start(harness_pgfdw *f, cs_err *e);
/*
 * On the started coordinator, before any other statement: check every foreign
 * server (refused, recorded, when one is not a named shard), repoint each at
 * its shard's private socket and port, read back and check again.
 */
int harness_pgfdw_repoint(harness_pgfdw *f, struct ledger *l, const harness_pg *coord,
			  const char *db, const char *user, cs_err *e);
/* Before a query (setup): remote sessions closed, opened again, shards' counts taken. */
int harness_pgfdw_before(harness_pgfdw *f, PGconn *coord, const char *sql, const char *vtext,
			 cs_err *e);
/* After it: remote sessions closed; *data the shards' data blocks read, *ms their read time. */
int harness_pgfdw_after(harness_pgfdw *f, PGconn *coord, int64_t *data, double *ms, cs_err *e);
/* The record's "shards" and *plan {async_foreign_scans, text} (new references; NULL for f NULL). */
json_t *harness_pgfdw_record(const harness_pgfdw *f, json_t **plan);
/* Every shard's server joins the block-throttle cgroup dir at its next start (all in one). */
void harness_pgfdw_throttle(harness_pgfdw *f, const char *dir);
void harness_pgfdw_free(harness_pgfdw *f);

#endif
