/*
 * paged.h - private: HNSW in 8 KB pages laid out as pgvector 0.5.1, the
 * buffer pool it is read through, and the partitioned comparator (phnsw).
 *
 * On-disk format (one file per partition, "part-NNN"; see pgvector
 * src/hnsw.h@v0.5.1):
 *
 *   every page   24-byte header {lsn 8, checksum 2, flags 2, lower 2,
 *                upper 2, special 2, pagesize_version 2, prune_xid 4},
 *                4-byte line pointers {off:15, flags:2, len:15} growing up,
 *                tuples growing down, special space {nextblkno 4,
 *                unused 2, page_id 2 = 0xFF90} in the last 8 bytes.
 *                pd_checksum holds PostgreSQL's page checksum algorithm
 *                (32 FNV-1a lanes over uint32 words, block number mixed
 *                in, folded to 1..65535); every page read from disk is
 *                checked (-EBADMSG).
 *   block 0      meta {magic 0xA953A953, version 1, dimensions, m,
 *                efConstruction, entry blkno, entry offno, entry level,
 *                insertPage} at the page contents, pd_lower after it.
 *   block 1..    element tuples {type 1, level, deleted, unused,
 *                heaptids[10] (6 B each), neighbortid (6 B), unused2,
 *                vector {varlena len 4, dim 2, unused 2, float x[dim]}},
 *                MAXALIGN(80 + 4 dim) bytes; each followed by its
 *                neighbour tuple {type 2, unused, count = (level+2) m,
 *                6-byte tids}, on the same page when the pair fits, else
 *                on the next page; written in insertion (heap) order.
 *
 * The heap file ("heap") holds one row per id in id order, in PostgreSQL
 * heap pages with the same header, line pointers and checksum: a 24-byte
 * tuple header, int4 id, then the vector varlena. Index heap TIDs point
 * at these rows. "catalog" is a small text file (key value lines and a
 * crc line) holding what PostgreSQL keeps in its catalogs: kind, metric,
 * dimension, count, partitions, m, efConstruction.
 *
 * Error convention: 0 or -errno (never errno); -EBADMSG on damage.
 */
#ifndef CV_PAGED_H
#define CV_PAGED_H

#include "coldvec.h"

#include <pthread.h>
#include <stdbool.h>

/* ---- page format ---- */

#define PG_BLCKSZ 8192u
#define PG_MAXALIGN(x) (((size_t) (x) + 7u) & ~(size_t) 7u)
#define PG_PAGE_HEADER 24u
#define PG_ITEMID 4u
#define PG_INVALID_BLOCK 0xFFFFFFFFu

#define HNSW_MAGIC 0xA953A953u
#define HNSW_VERSION 1u
#define HNSW_PAGE_ID 0xFF90u
#define HNSW_HEAP_PAGE_ID 0xFF91u /* our heap pages (PostgreSQL heap pages have no special) */
#define HNSW_METAPAGE_BLKNO 0u
#define HNSW_HEAD_BLKNO 1u
#define HNSW_HEAPTIDS 10
#define HNSW_ELEMENT_TYPE 1
#define HNSW_NEIGHBOR_TYPE 2
#define HNSW_SPECIAL 8u
/* Largest tuple pair that fits one page: BLCKSZ - header - special - one line pointer. */
#define HNSW_MAX_SIZE (PG_BLCKSZ - PG_PAGE_HEADER - HNSW_SPECIAL - PG_ITEMID)

#define HNSW_DEFAULT_M 16
#define HNSW_MIN_M 2
#define HNSW_MAX_M 100
#define HNSW_DEFAULT_EF_CONSTRUCTION 64
#define HNSW_MIN_EF_CONSTRUCTION 4
#define HNSW_MAX_EF_CONSTRUCTION 1000
#define HNSW_MIN_EF_SEARCH 1
#define HNSW_MAX_EF_SEARCH 1000
#define HNSW_MAX_DIM 2000 /* pgvector 0.5.1's HNSW_MAX_DIM */

/* Element tuple: MAXALIGN(80 + 4 dim) bytes. */
#define HNSW_ELEMENT_TUPLE_SIZE(dim) PG_MAXALIGN(80u + 4u * (size_t) (dim))
/* Neighbour tuple of an element at level: MAXALIGN(4 + (level+2) m 6). */
#define HNSW_NEIGHBOR_TUPLE_SIZE(level, m) PG_MAXALIGN(4u + 6u * (size_t) ((level) + 2) * (m))
/* pgvector 0.5.1's HnswGetMaxLevel: the neighbour tuple must fit one page. */
#define HNSW_MAX_LEVEL(m) \
	((int) ((PG_BLCKSZ - PG_PAGE_HEADER - HNSW_SPECIAL - 4u - PG_ITEMID) / 6u / (m)) - 2 > 255 \
		 ? 255 \
		 : (int) ((PG_BLCKSZ - PG_PAGE_HEADER - HNSW_SPECIAL - 4u - PG_ITEMID) / 6u / (m)) - 2)

/* An item pointer (block, offset); offset 0 is invalid. */
typedef struct pg_tid {
	uint32_t blk;
	uint16_t off;
} pg_tid;

/* Little-endian field access on page bytes (pages are byte arrays). */
static inline uint16_t pg_get16(const uint8_t *p)
{
	return (uint16_t) (p[0] | (p[1] << 8));
}
static inline uint32_t pg_get32(const uint8_t *p)
{
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) |
	       ((uint32_t) p[3] << 24);
}
static inline void pg_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t) v;
	p[1] = (uint8_t) (v >> 8);
}
static inline void pg_put32(uint8_t *p, uint32_t v)
{
	pg_put16(p, (uint16_t) v);
	pg_put16(p + 2, (uint16_t) (v >> 16));
}
/* ItemPointerData: bi_hi, bi_lo, ip_posid. */
static inline pg_tid pg_get_tid(const uint8_t *p)
{
	pg_tid t = {((uint32_t) pg_get16(p) << 16) | pg_get16(p + 2), pg_get16(p + 4)};
	return t;
}
static inline void pg_put_tid(uint8_t *p, pg_tid t)
{
	pg_put16(p, (uint16_t) (t.blk >> 16));
	pg_put16(p + 2, (uint16_t) t.blk);
	pg_put16(p + 4, t.off);
}
static inline bool pg_tid_valid(pg_tid t)
{
	return t.blk != PG_INVALID_BLOCK && t.off != 0;
}

/* Header fields. */
#define PGH_CHECKSUM 8
#define PGH_LOWER 12
#define PGH_UPPER 14
#define PGH_SPECIAL 16
#define PGH_SIZEVER 18

/* Initialise page as empty with special bytes of special space. */
void pg_page_init(uint8_t *page, uint32_t special);
/* Free space as PageGetFreeSpace: upper - lower - one line pointer, or 0. */
size_t pg_page_free(const uint8_t *page);
/* Items on the page (PageGetMaxOffsetNumber). */
unsigned pg_page_nitems(const uint8_t *page);
/* Append a tuple (MAXALIGNed); returns its offset number (1-based) or 0 if full. */
unsigned pg_page_add(uint8_t *page, const void *tup, size_t len);
/* Tuple at offset number off (1-based), its length in *len; NULL when out of range. */
const uint8_t *pg_page_item(const uint8_t *page, unsigned off, size_t *len);
/* PostgreSQL's page checksum of page as block blk (1..65535). */
uint16_t pg_page_checksum(const uint8_t *page, uint32_t blk);
/* The same checksum, one lane at a time (the reference the SIMD form is tested against). */
uint16_t pg_page_checksum_scalar(const uint8_t *page, uint32_t blk);
/* Store the checksum in pd_checksum. */
void pg_page_set_checksum(uint8_t *page, uint32_t blk);
/* Check checksum and header sanity: 0 or -EBADMSG. */
int pg_page_check(const uint8_t *page, uint32_t blk);

/* ---- the index distance (float32 inside the index, as 0.5.1) ---- */

/*
 * The distance the index ranks by: L2 squared (float sum), negative inner
 * product; cosine indexes store normalized vectors and rank by negative
 * inner product of normalized vectors (vector_cosine_ops in 0.5.1).
 */
float paged_index_distance(cv_metric m, const float *a, const float *b, size_t d);
/* The executor's distance from a heap row, in double (ORDER BY's float8). */
double paged_exec_distance(cv_metric m, const float *q, const float *row, size_t d);
/* Normalize v (cosine) into out; a zero vector stays zero. */
void paged_normalize(const float *v, float *out, size_t d);

/* ---- buffer pool (shared_buffers): clock sweep, counted hits and reads ---- */

typedef struct bufpool bufpool;

/* A pool of nbuffers 8 KB buffers (>= 16). */
int bufpool_new(size_t nbuffers, bufpool **out);
/* Fault every page of the pool in (once; cv_index_drop_buffers does it). */
void bufpool_map(bufpool *bp);
void bufpool_free(bufpool *bp);
size_t bufpool_size(const bufpool *bp);
/* Forget every unpinned buffer (a cold query starts empty). */
void bufpool_drop(bufpool *bp);

#define BUF_HIT 1
#define BUF_MISS 0
/*
 * Look up (file, blk). BUF_HIT: pinned, *page valid. BUF_MISS: a buffer is
 * reserved and pinned with I/O in progress; the caller reads into *page and
 * then calls bufpool_io_done. -EBUSY: another reader's I/O on that block is
 * in progress. -ENOSPC: every buffer is pinned.
 */
int bufpool_lookup(bufpool *bp, uint32_t file, uint32_t blk, int *buf, uint8_t **page);
/* Finish a reservation: ok keeps the page, else the buffer is freed (and unpinned). */
void bufpool_io_done(bufpool *bp, int buf, bool ok);
void bufpool_release(bufpool *bp, int buf);
/*
 * Synchronous ReadBuffer: hit, or miss -> cv_io_read of 8 KB -> checksum.
 * *hit set. Waits for another thread's read of the same block. Pinned on
 * success; release with bufpool_release.
 */
int bufpool_read(bufpool *bp, cv_io *io, cv_file *f, uint32_t file, uint32_t blk, int *buf,
		 const uint8_t **page, bool *hit);

/* ---- building one partition's pages from a graph ---- */

/* One element of the in-memory build graph (pgvector's HnswElement). */
typedef struct pb_cand {
	uint32_t elem;
	float dist;
	bool closer;
} pb_cand;

typedef struct pb_nbrs {
	pb_cand *items;
	uint16_t len, cap;
	bool closer_set;
} pb_nbrs;

typedef struct pb_elem {
	const float *vec;        /* index-form vector (normalized for cosine) */
	uint32_t heaptid_n;
	pg_tid heaptids[HNSW_HEAPTIDS];
	int level;
	pb_nbrs *nbrs;           /* level+1 layers */
	pg_tid tid, ntid;        /* element and neighbour tuple positions */
} pb_elem;

typedef struct pb_graph {
	size_t dim;
	unsigned m, ef_construction;
	cv_metric metric;
	pb_elem *elems;
	size_t n, cap;
	int64_t entry;           /* element index, -1 when empty */
	uint64_t rng;
	/* search scratch */
	uint32_t *visit;
	uint32_t visit_gen;
	size_t visit_cap;
	uint64_t distances;
} pb_graph;

/* An empty graph; free with pb_graph_free. */
int pb_graph_init(pb_graph *g, size_t dim, unsigned m, unsigned efc, cv_metric metric,
		  uint64_t seed, size_t capacity);
void pb_graph_free(pb_graph *g);
/*
 * Insert one row as pgvector 0.5.1's build does (HnswInsertElement, then
 * HnswFindDuplicate, then HnswUpdateConnection for each new neighbour).
 * vec is borrowed and must outlive the graph.
 */
int pb_graph_insert(pb_graph *g, const float *vec, pg_tid heaptid);
/* Write the graph's pages to path (created): CreateElementPages + neighbours + meta. */
int pb_write_pages(pb_graph *g, const char *path, uint64_t *npages, cv_err *e);

/* ---- scanning one partition (pgvector 0.5.1 GetScanItems) ---- */

typedef struct ps_row {
	pg_tid heaptid;
	float dist;              /* the index's float32 distance */
	bool fetched;            /* heap row read: id and xdist valid */
	uint32_t id;
	double xdist;            /* the executor's distance from the heap row (double) */
} ps_row;

typedef struct ps_scan ps_scan;

/* What a paused scan needs read: file/block into page, buffer buf. */
typedef struct ps_need {
	uint32_t file, blk;
	int buf;
	uint8_t *page;
	bool heap;
} ps_need;

/* Counters a scan adds to. */
typedef struct ps_counts {
	uint64_t reads, hits, heap_reads, heap_hits, distances;
} ps_counts;

/*
 * A resumable scan of one partition file (file index fileno in the pool)
 * for query q (index form), at most ef_search elements. Run it with
 * ps_scan_run: PS_DONE, PS_NEED_IO (read ps_scan_need into its page, then
 * ps_scan_io_done and run again), PS_BLOCKED (another read of that block
 * is in flight: run again later) or -errno.
 */
#define PS_DONE 0
#define PS_NEED_IO 1
#define PS_BLOCKED 2
int ps_scan_new(bufpool *bp, uint32_t fileno, size_t dim, cv_metric metric, const float *q,
		unsigned ef_search, ps_scan **out);
/* Run to completion with synchronous reads (queue depth one); files[fileno] is the file. */
int ps_scan_run_sync(ps_scan *s, cv_io *io, cv_file *const *files);
void ps_scan_free(ps_scan *s);
int ps_scan_run(ps_scan *s);
const ps_need *ps_scan_need(const ps_scan *s);
/* The read finished with res (0 or -errno); the page is checksummed here. */
int ps_scan_io_done(ps_scan *s, int res);
/* Results, nearest first by float32 distance, every heap TID of each element. */
const ps_row *ps_scan_rows(const ps_scan *s, size_t *n);
const ps_counts *ps_scan_counts(const ps_scan *s);

/*
 * Also fetch heap rows: after the index search, the scan reads the heap
 * pages of its first nheap rows (file heap_fileno), as an Index Scan node
 * does for the rows Merge Append pulls. Call before the first run.
 */
void ps_scan_set_heap(ps_scan *s, uint32_t heap_fileno, size_t nheap, uint32_t rows_per_page);
/* Fetch heap rows up to the first nheap (Merge Append pulling the next row); run again. */
void ps_scan_fetch_more(ps_scan *s, size_t nheap);

/* ---- catalog, heap rows, the index kinds ---- */

#define PHNSW_HEAP_TUPLE_HDR 24u
/* Heap tuple size for dim: header, int4 id, varlena header 8, floats. */
#define PHNSW_HEAP_TUPLE_SIZE(dim) PG_MAXALIGN(PHNSW_HEAP_TUPLE_HDR + 4u + 8u + 4u * (size_t) (dim))

/* Rows per heap page for dim (>= 1). */
uint32_t phnsw_heap_rows_per_page(size_t dim);
/* A row's heap TID under that packing (rows in id order). */
pg_tid phnsw_heap_tid(uint32_t id, uint32_t rows_per_page);
/* The partition an id hashes to. */
uint32_t phnsw_partition_of(uint32_t id, uint32_t partitions);

typedef struct phnsw_catalog {
	char kind[16];
	cv_metric metric;
	uint32_t dim;
	uint64_t count;
	uint32_t partitions;
	uint32_t m, ef_construction;
	uint32_t heap_rows_per_page;
	uint64_t heap_pages;
} phnsw_catalog;

/* The catalog file (pagedcatalog.c): written atomically, read with its CRC checked. */
int phnsw_catalog_write(const char *dir, const phnsw_catalog *c, cv_err *e);
int phnsw_catalog_read(const char *dir, phnsw_catalog *c, cv_err *e);

/* Decode a heap tuple into id and vector pointer (unaligned floats copied to out). */
int phnsw_heap_row(const uint8_t *page, uint32_t blk, unsigned off, size_t dim, uint32_t *id,
		   float *out);

/* The verifier (pagedverify.c); on success e holds a one-line summary. */
int paged_verify_dir(const char *dir, cv_err *e);
/* Check one index file's pages (checksums, tuples, links); counts elements and heap TIDs. */
int paged_verify_file(const char *path, size_t dim, uint32_t m, uint64_t *elements,
		      uint64_t *heaptids, uint64_t *unreachable, cv_err *e);

#endif
