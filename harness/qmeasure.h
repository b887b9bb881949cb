/*
 * qmeasure.h - how a query is timed: one query between two readings of the
 * clocks (wall, and the process's CPU split into user and system), passes
 * over a query set (untimed warm-up passes, then timed ones) and their
 * summary by the project's one percentile (cs_quantile). `index query` and
 * `index sweep` measure through it (qbench.c sets up what they read); a
 * study run's clients can time each query with harness_qm_one, so a warm
 * `index query` and a run time queries the same way.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled (one
 * line, no "coldstudy VERB:" prefix); harness_qm_one and
 * harness_blocks_write return 0 or the engine's -errno.
 */
#ifndef HARNESS_QMEASURE_H
#define HARNESS_QMEASURE_H

#include <stdint.h>
#include <stdio.h>
#include "coldvec.h"
#include "cs.h"
#include "harness.h"

/* ---- one query (qmeasure.c) ---- */

/* What the clocks read around one query. */
typedef struct harness_qm_sample {
	uint64_t t0_ns, t1_ns;            /* CLOCK_MONOTONIC (cs_mono_ns) before and after */
	uint64_t cpu_ns, user_ns, sys_ns; /* the process's CPU over the call (its helper
					     threads count): with cpu only, else 0 */
	size_t nout;                      /* ids returned */
} harness_qm_sample;

/*
 * cv_index_query(ix, io, q, qo, ids, dists, .., st) between two readings of
 * the monotonic clock, and with cpu of the process's CPU clocks as well
 * (getrusage and CLOCK_PROCESS_CPUTIME_ID, read outside the wall
 * readings). st (may be NULL) is added to, as the engine does. 0 or the
 * engine's -errno; *s is filled either way.
 */
int harness_qm_one(cv_index *ix, cv_io *io, const float *q, const cv_query_opts *qo, uint32_t *ids,
		   float *dists, cv_query_stats *st, int cpu, harness_qm_sample *s);

/* The process's anonymous resident memory (RssAnon of /proc/self/status), kB; -1 unknown. */
long harness_rss_anon_kb(void);

/* An engine failure as an exit code and message (ce's, else strerror). Returns the code. */
int harness_cv_fail(cs_err *e, int rc, const cv_err *ce);

/* ---- passes over a query set (qmeasure.c) ---- */

typedef struct harness_qm_opts {
	uint64_t warmup, repeat;  /* untimed passes, then timed ones (repeat >= 1) */
	int cold;                 /* before each query: evict files[], drop the index's buffers */
	char **files;             /* the index's files (cold; borrowed) */
	size_t nfiles;
	int cpu;                  /* read the CPU clocks around each query */
	int rss;                  /* measure what the passes add to RssAnon (rss_passes_kb) */
	const cv_dataset *base;   /* recall@k against gt (k ids a query) in the first timed */
	const int32_t *gt;        /* pass; either NULL: no recall */
	cv_metric metric;         /* the index's, for recall */
	cv_trace *trace;          /* cleared before each query, so it holds that query's reads */
	const char *trace_path;   /* save each timed query's trace there (one query), or to
				     PATH.N (query N of several); NULL: not saved */
	cv_device *simdev;        /* replay each timed query's trace against it in virtual time */
	int per_query;            /* keep each timed query's reads and each query's recall */
	const char *progress;     /* a progress line "querying PROGRESS" on stderr, five times a
				     second at most; NULL: none (the caller checks the terminal) */
} harness_qm_opts;

typedef struct harness_qm_result {
	size_t nq;                /* queries a pass */
	size_t passes;            /* timed passes done */
	double *lat_ms;           /* passes x nq latencies, pass after pass */
	double *pass_qps;         /* each timed pass's QPS: nq / the sum of its latencies */
	uint64_t *q_reads;        /* per_query: each timed query's engine reads (as lat_ms) */
	double *q_recall;         /* per_query: each query's recall, NaN without a truth */
	double wall_s;            /* the timed queries' latencies summed */
	double cpu_s, user_s, sys_s; /* their CPU (cpu) */
	double recall;            /* mean recall@k over the first timed pass (have_recall) */
	int have_recall;
	long rss_passes_kb;       /* rss: RssAnon the passes added; -1 unknown */
	cv_query_stats st;        /* the timed passes' engine counters */
	cv_io_stats io;           /* the reader's counters, reset before the first timed pass */
	double sim_ms, sim_read_ms, sim_inflight; /* simdev: virtual time summed, mean read, */
	uint64_t sim_reads;                       /* time-weighted reads in flight, reads */
	int query_failed;         /* the failure was the engine's on a query (e names it) */
} harness_qm_result;

/*
 * o->warmup untimed passes, then o->repeat timed ones, over the first nq
 * queries of qs, one after another on io. Only the timed passes count:
 * latencies, QPS per pass, read counters (io's are reset before the first
 * timed pass), recall (the first timed pass; later ones return the same
 * ids), traces and virtual time. r is caller-owned (zeroed here); free
 * with harness_qm_result_free, on failure too. 0 or an exit code.
 */
int harness_qm_passes(cv_index *ix, cv_io *io, const cv_dataset *qs, size_t nq,
		      const cv_query_opts *qo, const harness_qm_opts *o, harness_qm_result *r,
		      cs_err *e);
void harness_qm_result_free(harness_qm_result *r);

/* Latency and QPS over the timed passes; every field 0 where there are none. */
typedef struct harness_qm_summary {
	size_t samples;                          /* timed queries */
	double lat_mean, p50, p90, p95, p99, p999; /* ms, over every timed query (cs_quantile) */
	double qps, qps_best, qps_min;           /* the median pass's, the best's, the worst's */
} harness_qm_summary;

/* 0, or -ENOMEM (s untouched). */
int harness_qm_summarise(const harness_qm_result *r, harness_qm_summary *s);

/* ---- what index query and index sweep read (qbench.c) ---- */

typedef struct harness_qbench {
	cv_index *ix;
	cv_dataset *qs;           /* the query set */
	cv_dataset *base;         /* the recall base, or NULL (no --data and no DIR/DATA) */
	int32_t *gt;              /* nq x k ids of the truth, or NULL: no recall */
	size_t nq;                /* queries a pass */
	char **files;             /* the index's files (harness_qbench_io with files) */
	size_t nfiles;
	cv_device *dev;           /* the device model in real time, or NULL */
	cv_device *simdev;        /* the virtual-time replay's, or NULL */
	cv_trace *trace;          /* each query's reads (simulate or a trace file), or NULL */
	cv_io *io;
	long rss_open_kb;         /* RssAnon that opening the index added; -1 unknown */
	long index_rss_kb;        /* with harness_qbench_passes's rss: opening plus the passes */
	harness_throttle thr;     /* a real cap on the disk (harness_qbench_io with a cap) */
	int throttled;
	json_t *throttle;         /* after the passes: the cap and the kernel's counters, or NULL */
	cv_pool *pool;            /* a fan-out's reader threads for every pass, or NULL */
	char data_spec[1024];     /* DIR/DATA when it named the base */
} harness_qbench;

/* Empty; harness_qbench_close accepts it. */
void harness_qbench_init(harness_qbench *b);

/*
 * The reader pool of a session whose queries fan out (qo fanout:C, C > 1;
 * otherwise *out stays NULL): its threads start at the first fan-out and
 * serve every query after it; with thr begun (a real cap) each joins the
 * cap before its first read, wherever it was started. The caller frees it
 * (cv_pool_free) before harness_throttle_end. $COLDSTUDY_FANOUT_POOL=0:
 * no pool, a thread per reader per query (to compare the two). 0 or an
 * exit code (e filled).
 */
int harness_reader_pool(const cv_query_opts *qo, harness_throttle *thr, cv_pool **out, cs_err *e);

/*
 * Open the index at dir (the guards' held spelling) with a buffer pool of
 * buffers bytes, noting what the open added to RssAnon. 0 or an exit code.
 */
int harness_qbench_open(harness_qbench *b, const char *dir, uint64_t buffers, cs_err *e);

/* What the queries are measured against. */
typedef struct harness_qbench_load_opts {
	const char *dir;          /* the index, as held (DIR/DATA is read through it) */
	const char *shown;        /* the index as the user typed it, for messages */
	const char *queries;      /* the query set's spec */
	uint64_t nq;              /* at most so many queries (0: all) */
	const char *data;         /* the recall base's spec; NULL: DIR/DATA's, if any */
	const char *gt;           /* an ivecs or hdf5: truth; NULL: computed and cached */
	const char *need_base;    /* a verb ("sweep") that cannot go without a base, or NULL */
	int progress;             /* a progress line while the truth is computed */
} harness_qbench_load_opts;

/*
 * The query set (its dimension the index's), the partitions of qo (each
 * below the index's count), the recall base and the truth of k = qo->k
 * ids a query (a --gt file cut to k, checked against the base; or the
 * exact one, cached), each hdf5: file's distance against the index's
 * metric. A bad input is exit 5 naming the file and why. 0 or an exit code.
 */
int harness_qbench_load(harness_qbench *b, const harness_qbench_load_opts *o,
			const cv_query_opts *qo, cs_err *e);

/* How the queries read. */
typedef struct harness_qbench_io_opts {
	cv_io_strategy strategy;
	const char *device;       /* a device model's profile, played in real time; NULL: none */
	const char *simulate;     /* a profile to replay each query's reads against; NULL: none */
	int trace;                /* keep each query's reads (a trace file) */
	int files;                /* list the index's files (cold, block lists) */
	const char *dir;          /* the index, as held */
	const char *shown;        /* the index as typed, for messages */
	const harness_cap *cap;   /* a real cap on the disk under held_fd; NULL: none */
	int held_fd;
} harness_qbench_io_opts;

/*
 * The device models, the trace, the throttle (entered: the reader's
 * threads are started inside it) and the reader, its queue as deep as
 * qo's fan-out. A reader the machine lacks (io_uring) is exit 3.
 * 0 or an exit code.
 */
int harness_qbench_io(harness_qbench *b, const harness_qbench_io_opts *o, const cv_query_opts *qo,
		      cs_err *e);

/*
 * harness_qm_passes over b (o's files, truth, trace and device filled
 * from b), then the throttle left and its counters kept (b->throttle),
 * the reader's counters in r->io, and with o->rss the index's resident
 * memory in b->index_rss_kb. 0 or an exit code.
 */
int harness_qbench_passes(harness_qbench *b, const cv_query_opts *qo, harness_qm_opts *o,
			  harness_qm_result *r, cs_err *e);

/* Everything b holds, the throttle's cgroup removed. */
void harness_qbench_close(harness_qbench *b);

/* What index query was asked, as its summary names it. */
typedef struct harness_qbench_shown {
	const cv_query_opts *qo;
	cv_io_strategy strategy;
	int cold, json;
	uint64_t buffers, warmup;
	size_t nparts;       /* --partitions' count; 0: the index's */
	const char *simulate; /* --simulate's profile, or NULL */
} harness_qbench_shown;

/*
 * index query's summary of the passes s over b (m: their percentiles, QPS):
 * text lines, or one JSON object with a->json (qprint.c).
 */
void harness_qbench_print(const harness_qbench *b, const harness_qbench_shown *a,
			  const harness_qm_result *s, const harness_qm_summary *m, FILE *out);

/* One setting of index sweep's knob, with what every row repeats. */
typedef struct harness_sweep_setting {
	const char *kcol;      /* the knob's column: ef_search or search_probe */
	unsigned value;
	size_t k, nq;
	uint64_t repeat;       /* timed passes */
	double build_s;        /* NaN: no BUILD */
	long long index_bytes; /* < 0: unknown */
	const char *kind;
} harness_sweep_setting;

/* The row of a setting (m: its passes' summary; st: their counters); new, or NULL. */
json_t *harness_sweep_row(const harness_sweep_setting *w, const harness_qm_summary *m, double recall,
			  const cv_query_stats *st);
/* sweep's table: its head, a row (or the row as a JSON line with json), the closing line. */
void harness_sweep_print_head(const char *kcol, FILE *out);
void harness_sweep_print_row(const json_t *row, const char *kcol, int json, FILE *out);
void harness_sweep_print_foot(size_t nq, size_t k, uint64_t repeat, uint64_t warmup, double build_s,
			      long long index_bytes, FILE *out);

/*
 * An ann-benchmarks (hdf5:) file's `distance` attribute against the metric
 * *m (metric says whose it is: "--metric", "the index's metric"; NULL:
 * none given, and the file's becomes *m). One that disagrees is exit 5,
 * naming both. spec not hdf5: 0; a file without the attribute: 0 if a
 * metric was given. what names the option ("--data") in messages.
 */
int harness_hdf5_metric(const char *spec, const char *what, const char *metric, cv_metric *m,
			cs_err *e);

/*
 * Write the blocks a query read (bl, recorded through cv_query_opts.blocks)
 * as lists PREFIX.NAME, one a file of files[] that was read, a block
 * number a line, for `coldstudy cache prewarm FILE --blocks @LIST`. prefix
 * is the guards' held spelling of the output. 0 or -errno.
 */
int harness_blocks_write(const char *prefix, const cv_block_list *bl, char **files, size_t nfiles);

/* ---- index query and index sweep whole (qcmd.c) ---- */

/* What index query (and sweep, which takes query's options) was asked. */
typedef struct harness_query_args {
	const char *dir, *queries, *data, *gt, *device, *simulate, *record, *tracefile, *throttle;
	const char *per_query; /* --per-query FILE: one row a timed query (.csv, else JSON lines) */
	uint64_t nq, buffers;
	uint64_t repeat, warmup; /* timed passes over the queries, untimed ones first */
	int cold, json, quiet;
	cv_io_strategy strategy;
	cv_query_opts qo;
	uint32_t *parts; /* --partitions; the caller's */
	size_t nparts;
} harness_query_args;

/*
 * Write rows (an export's: reports/) to path, the guards' held spelling of
 * what option names; the cli's, as the harness does not call reports/.
 * 0 or an exit code, e filled.
 */
typedef int (*harness_rows_writer)(const json_t *rows, const char *path, const char *option,
				   cs_err *e);

/*
 * index query: the index held (a cold query asks the guards: it evicts),
 * the files it writes (--trace, --record-blocks, --per-query, the truth's
 * cache) asked of the guards, the passes measured, --per-query's rows
 * given to write_rows, the summary printed to out (harness_qbench_print),
 * then the block lists written. 0 or an exit code, e filled (one line).
 */
int harness_index_query(const harness_query_args *a, harness_rows_writer write_rows, FILE *out, cs_err *e);

/* What index sweep was asked beside query's options. */
typedef struct harness_sweep_opts {
	const char *knob;      /* "--ef-search" or "--search-probe" */
	const uint32_t *vals;  /* its settings, each above 0 */
	size_t nvals;
	const char *prefix;    /* --out PREFIX: PREFIX.csv, .jsonl, .svg; NULL: none */
} harness_sweep_opts;

/* What a sweep measured, for --out's files: a row, a recall, a QPS and a label a setting. */
typedef struct harness_sweep_result {
	json_t *rows;
	double *recalls, *qps; /* the median pass's QPS */
	char **labels;
	size_t n;
	char title[160]; /* the recall/QPS front's */
} harness_sweep_result;

void harness_sweep_result_free(harness_sweep_result *r);

/*
 * index sweep: the queries at each setting, warm passes measured, a row
 * a setting printed to out; *r filled (caller frees with
 * harness_sweep_result_free). A knob the index's kind does not take is
 * CS_EXIT_USAGE; 0 or an exit code, e filled (one line).
 */
int harness_index_sweep(const harness_query_args *a, const harness_sweep_opts *w, harness_sweep_result *r,
			FILE *out, cs_err *e);

/* ---- index build, insert, delete whole (ixcmd.c) ---- */

/* What index build was asked beside the build options. */
typedef struct harness_build_args {
	const char *kind, *data, *out; /* --out as typed (held through the guards) */
	int metric_given;              /* --metric given (else an hdf5: file's distance) */
	int json;                      /* one JSON object instead of the line */
} harness_build_args;

/*
 * index build: --out resolved once through the guards and never a
 * non-empty index (exit 3), the data loaded, the index built beneath the
 * hold (harness_index_build), one line or one JSON object to out; o->metric
 * becomes an hdf5: file's distance where none was given. 0 or an exit code.
 */
int harness_index_make(const harness_build_args *a, cv_build_opts *o, FILE *out, cs_err *e);
/*
 * index insert (data's rows with ids from first) or delete (the ids of
 * idfile, or data's row count from first): the index held through the
 * guards (a production index refused), one line to out; a kind that takes
 * neither is exit 3. 0 or an exit code.
 */
int harness_index_update(int insert, const char *dir, const char *data, const char *idfile, uint32_t first,
			 FILE *out, cs_err *e);
/* index verify: cv_index_verify's check of dir, its line ("DIR: ok", or what it found) to out. */
int harness_index_verify_verb(const char *dir, FILE *out, cs_err *e);

/* ---- an index's notes, an ids file (ixnotes.c) ---- */

/*
 * cv_index_build into dir (the guards' held spelling, made), timed, then
 * DIR/DATA (data_spec, resolved) and DIR/BUILD (the seconds, kind, rows
 * and dimension; best effort). *secs: the build's. 0 or an exit code.
 */
int harness_index_build(const char *kind, const cv_dataset *ds, const cv_build_opts *o,
			const char *dir, const char *data_spec, double *secs, cs_err *e);
/* DIR/DATA (the spec the index was built from) into buf; 0 or -ENOENT. */
int harness_index_data_spec(const char *dir, char *buf, size_t len);
/* DIR/BUILD's seconds; NAN when missing. */
double harness_index_build_seconds(const char *dir);
/* The bytes of an index's own files (DATA and BUILD left out); -1 unknown. */
long long harness_index_bytes(const char *dir);
/*
 * Ids from path: ivecs (by the extension .ivecs) or whole numbers
 * 0..4294967295 separated by white space (exit 5 at the byte offset of the
 * first that is not). *out new, caller frees. 0 or an exit code.
 */
int harness_ids_read(const char *path, uint32_t **out, size_t *n, cs_err *e);

#endif
