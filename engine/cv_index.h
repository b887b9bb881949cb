/*
 * cv_index.h - one interface over every index kind.
 *
 * Kinds: "hnsw" (in memory, saved to one file), "paged" (HNSW in 8 KB
 * pages laid out as pgvector 0.5.1), "phnsw" (P hash partitions, each a
 * paged HNSW, plus a heap file), "hfresh" (postings of 1-bit RaBitQ codes
 * on disk, centroids in an in-memory HNSW, full vectors in a store).
 * An index lives in a directory; DIR/KIND holds the kind's name, and
 * every other file in DIR belongs to the index (eviction, residency and
 * clones work on all of them).
 *
 * Queries are thread-safe on one cv_index; each thread passes its own
 * cv_io, whose counters then hold that thread's reads.
 */
#ifndef CV_INDEX_H
#define CV_INDEX_H

#include "cv_data.h"
#include "cv_io.h"

typedef struct cv_build_opts {
	cv_metric metric;
	unsigned m;               /* HNSW links per node (layer 0: 2m); 16 */
	unsigned ef_construction; /* 200 (pgvector default is 64) */
	unsigned partitions;      /* phnsw: 64 */
	unsigned threads;         /* 0: all cores */
	uint64_t seed;            /* level draws, k-means init */
	unsigned max_posting_kb;  /* hfresh: 8..1024; 0: from the code bits (96 if > 1, else 48) */
	unsigned replicas;        /* hfresh: 1..10; 0: from the code bits (1 if > 1, else 4) */
	double rng_factor;        /* hfresh: SPFresh RNG rule factor; 1.0 strict */
	int progress;             /* draw a progress bar on stderr (a terminal) */
	unsigned code_bits;       /* hfresh: bits per dimension of a posting's codes; 1
				   * (RaBitQ, as Weaviate), 2..4 add extended-RaBitQ codes;
				   * 0 (default): from the dimension, 4 up to 256, else 1 */
} cv_build_opts;

CV_API void cv_build_opts_default(cv_build_opts *o);

/* Build an index of kind over data into dir (created; must not exist or be empty). */
CV_API int cv_index_build(const char *kind, const cv_dataset *data, const cv_build_opts *o,
			  const char *dir, cv_err *e);

typedef struct cv_open_opts {
	uint64_t buffers_bytes;   /* paged/phnsw buffer pool, like shared_buffers; 128 MiB */
	unsigned flags;           /* CV_FILE_* for the index's files */
} cv_open_opts;

CV_API void cv_open_opts_default(cv_open_opts *o);

typedef struct cv_index cv_index;

CV_API int cv_index_open(const char *dir, const cv_open_opts *o, cv_index **out, cv_err *e);
CV_API void cv_index_close(cv_index *ix);
CV_API const char *cv_index_kind(const cv_index *ix);
CV_API size_t cv_index_dim(const cv_index *ix);
CV_API size_t cv_index_count(const cv_index *ix);
CV_API cv_metric cv_index_metric(const cv_index *ix);
/*
 * How an in-memory index holds its vectors ("float32", "float32+sketch8":
 * float32 with a byte sketch that only skips what the search rejects,
 * "quant8", or "exact8": bytes for whole-number data, lossless); NULL for kinds that
 * read them from disk. Borrowed, static.
 */
CV_API const char *cv_index_storage(const cv_index *ix);
/* Partitions of a phnsw index; 1 for other kinds. */
CV_API unsigned cv_index_partitions(const cv_index *ix);

/*
 * What one partition holds, from the index's own structure (no page is
 * read, so asking leaves a cold index cold): its vectors and its index
 * file's 8 KB pages. For "paged", partition 0 is the whole index.
 */
typedef struct cv_partition_info {
	uint64_t elements; /* vectors the partition indexes */
	uint64_t pages;    /* 8 KB pages of its index file (meta page included) */
} cv_partition_info;

/* Partition p's figures: 0, -ENOTSUP for kinds without pages, -ERANGE past the last. */
CV_API int cv_index_partition_info(const cv_index *ix, unsigned p, cv_partition_info *out);

/*
 * Drop the buffer pool's contents (a cold query starts with an empty pool)
 * and this process's mappings of the index's pages (views under the mmap
 * and auto strategies map them, and a mapped page cannot be evicted):
 * call it before evicting the index's files.
 */
CV_API void cv_index_drop_buffers(cv_index *ix);

typedef enum cv_query_mode {
	CV_MODE_SERIAL = 0, /* Merge Append: every partition, one after another */
	CV_MODE_FANOUT = 1, /* fanout:C partition scans in flight at once */
} cv_query_mode;

typedef enum cv_merge {
	CV_MERGE_STREAM = 0, /* k-way merge trusting each partition's order */
	CV_MERGE_SORT = 1,   /* full sort by distance recomputed in double */
} cv_merge;

typedef enum cv_hio {
	CV_HIO_SERIAL = 0,     /* as Weaviate: one posting, then one candidate, after another */
	CV_HIO_CONCURRENT = 1, /* postings together, then rescoring reads together, up to io_depth */
} cv_hio;

/* A list of (file, block) pairs a query touched, for block-list prewarm. */
typedef struct cv_block_list {
	uint32_t *file;   /* index into cv_index's file list */
	uint64_t *block;
	size_t n, cap;
} cv_block_list;

/* Append (file, block) to bl, growing it; NULL bl: nothing. 0 or -ENOMEM. */
CV_API int cv_block_list_add(cv_block_list *bl, uint32_t file, uint64_t block);

/*
 * A pool of reader threads kept for a session (an `index query`, a run's
 * load), so a fan-out of C readers starts no thread per query once the
 * pool has them (engine/pool.c). Threads start on demand, as many as the
 * teams running on the pool need at once, at most max_threads (0:
 * CV_POOL_MAX_THREADS), and end at cv_pool_free; several callers (a
 * run's clients) may share one pool.
 *
 * A new thread starts in its creator's cgroup. cv_pool_set_join(p, join,
 * ctx) makes every thread of the pool, started before the call or after,
 * run join(ctx) once before its next task (a block throttle's "move this
 * thread into the cap", harness/throttle.c), so none reads outside a cap
 * set after it started; a join that fails runs no task and the team
 * returns its -errno. NULL join: nothing more is joined.
 */
#define CV_POOL_MAX_THREADS 4096
typedef struct cv_pool cv_pool;

/* A new, empty pool (caller frees with cv_pool_free). 0, -EINVAL or -ENOMEM. */
CV_API int cv_pool_new(unsigned max_threads, cv_pool **out);
/* Every thread ended; no team may be running. NULL: nothing. */
CV_API void cv_pool_free(cv_pool *p);
CV_API void cv_pool_set_join(cv_pool *p, int (*join)(void *ctx), void *ctx);
/*
 * fn(ctx, w) for w = 0 .. n-1 together: w = 0 on the calling thread, the
 * others each on a pool thread of its own (started if the pool lacks an
 * idle one); returns once all returned. 0, -ENOMEM, -EAGAIN (no pool
 * thread could be started: nothing ran), or the -errno of a failed join
 * (that task did not run; the others did).
 */
CV_API int cv_pool_team(cv_pool *p, unsigned n, void (*fn)(void *ctx, unsigned w), void *ctx);

typedef struct cv_pool_counts {
	unsigned threads;  /* started over the pool's life (none ends before cv_pool_free) */
	uint64_t teams;    /* cv_pool_team calls that used a pool thread */
	uint64_t tasks;    /* tasks those ran on pool threads */
} cv_pool_counts;

CV_API void cv_pool_stats(cv_pool *p, cv_pool_counts *out);

typedef struct cv_query_opts {
	size_t k;                 /* 10 */
	unsigned ef_search;       /* hnsw/paged/phnsw: 40 */
	cv_query_mode mode;       /* phnsw */
	unsigned fanout;          /* phnsw fanout:C */
	cv_merge merge;           /* phnsw */
	unsigned search_probe;    /* hfresh: 64 */
	unsigned rescore_limit;   /* hfresh: 350 */
	cv_hio io_mode;           /* hfresh */
	unsigned io_depth;        /* hfresh concurrent:Q; 64 */
	const uint32_t *partitions; /* phnsw: only these partitions (NULL: all) */
	size_t npartitions;
	cv_block_list *blocks;    /* optional: record every block read (borrowed) */
	cv_pool *pool;            /* phnsw fanout:C: the session's reader threads (borrowed);
				     NULL: a thread per reader, started for this query */
} cv_query_opts;

CV_API void cv_query_opts_default(cv_query_opts *o);

typedef struct cv_query_stats {
	uint64_t reads;           /* reads issued through the cv_io (index + heap + store) */
	uint64_t bytes;
	uint64_t buffer_hits;     /* paged/phnsw buffer pool hits */
	uint64_t heap_reads;      /* phnsw heap fetches that missed the pool */
	uint64_t posting_reads;   /* hfresh */
	uint64_t rescore_reads;   /* hfresh */
	uint64_t distances;       /* distance computations */
	uint32_t fanout_via;      /* phnsw fanout:C: how its reads overlapped (cv_fanout_via;
				     set by the query, not added) */
} cv_query_stats;

/*
 * How a fan-out kept its reads in flight together: io_uring submissions
 * from one driver thread (strategy uring), or C synchronous readers, a
 * thread each (pread, direct, mmap). Never serial.
 */
typedef enum cv_fanout_via {
	CV_FANOUT_NONE = 0,    /* no fan-out ran */
	CV_FANOUT_URING = 1,
	CV_FANOUT_THREADS = 2,
} cv_fanout_via;

/* "uring", "threads", or NULL for CV_FANOUT_NONE and unknown values. */
CV_API const char *cv_fanout_via_name(uint32_t via);

/*
 * Nearest neighbours of q: up to o->k ids and distances (nearest first for
 * sort-merged and single indexes; in Merge Append order for stream merge).
 * stats (may be NULL) is added to, not reset.
 */
CV_API int cv_index_query(cv_index *ix, cv_io *io, const float *q, const cv_query_opts *o,
			  uint32_t *ids, float *dists, size_t *nout, cv_query_stats *stats);

/* The index's files (for eviction, residency, clones); caller frees with cv_index_files_free. */
CV_API int cv_index_files(const char *dir, char ***paths, size_t *n);
CV_API void cv_index_files_free(char **paths, size_t n);

/* Check checksums, counts, reachability. -EBADMSG (with e) on damage. */
CV_API int cv_index_verify(const char *dir, cv_err *e);

/* Live updates (hfresh; -ENOTSUP elsewhere): ids first_id.. for data's rows. */
CV_API int cv_index_insert(const char *dir, const cv_dataset *data, uint32_t first_id, cv_err *e);
CV_API int cv_index_delete(const char *dir, const uint32_t *ids, size_t n, cv_err *e);

#endif
