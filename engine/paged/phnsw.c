/*
 * phnsw.c - the partitioned comparator of the study seed, and the single
 * paged HNSW as its one-partition case: kinds "phnsw" and "paged".
 *
 * A directory holds catalog, heap (every row, id order, PostgreSQL heap
 * pages) and part-NNN (one paged HNSW per partition; rows go to partition
 * hash(id) mod P, in id order, as INSERTs into a hash-partitioned table).
 * "paged" is the same with P = 1: one index over one table.
 *
 * A query is the plan the seed's production ran, Limit -> Merge Append ->
 * P Index Scans, or the fan-out that replaces it:
 *
 *   serial     Merge Append's first call pulls the first tuple of every
 *              child, in order: each child runs its whole HNSW search
 *              (pagedscan.c) and fetches the heap row of its first TID;
 *              one read at a time on one stream, queue depth one.
 *   fanout:C   the same P scans, C of them in flight at once. With the
 *              uring strategy from one driver thread (or a few; see
 *              fanout_threads): each scan is a resumable state machine
 *              whose reads are submitted through its driver's cv_io
 *              (io_uring; stream = its slot, so a trace replays C
 *              dependent chains) and resumed when cv_io_reap returns
 *              them. With pread, direct and mmap, whose reads complete
 *              inside submit, C synchronous readers (a thread and a
 *              cv_io each, stream = the reader) take the scans, as C
 *              database connections would. Same pages, same results;
 *              the query's stats say which (fanout_via). The threads are
 *              the session's pool (cv_query_opts.pool, engine/pool.c) when
 *              the caller gives one, else started for the query.
 *   stream     k-way merge on the executor's distance (double, from the
 *              heap row) trusting each child's order, as Merge Append:
 *              after a row is returned its child is advanced (one more
 *              heap fetch), except after the k-th row, where Limit stops.
 *   sort       every partition's first k rows are fetched and the union
 *              is sorted by the double distance: the true order of what
 *              the partitions returned.
 *
 * Each partition scan returns at most ef_search elements, so a partition
 * can contribute at most ef_search rows (pgvector issue #845).
 * Heap reads are counted apart from index reads.
 */
#include "index_ops.h"
#include "util.h"
#include "paged.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- hash partitioning ---- */

uint32_t phnsw_partition_of(uint32_t id, uint32_t partitions)
{
	/* murmur3's finalizer: a hash of the key, as hash partitioning */
	uint32_t h = id;

	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return partitions ? h % partitions : 0;
}

/* Write every row into the heap file in id order. */
static int write_heap(const cv_dataset *data, const char *dir, uint32_t rpp, uint64_t *pages,
		      cv_err *e)
{
	char path[4096];
	size_t tsz = PHNSW_HEAP_TUPLE_SIZE(data->d);
	uint8_t *page = NULL, *tup = NULL;
	uint32_t blk = 0;
	int fd, rc = -ENOMEM;

	snprintf(path, sizeof(path), "%s/heap", dir);
	page = malloc(PG_BLCKSZ);
	tup = calloc(1, tsz);
	if (!page || !tup)
		goto out_free;
	fd = cv_open_new(path, O_WRONLY, 0644);
	if (fd < 0) {
		rc = cv_err_set(e, -errno, "%s: cannot create", path);
		goto out_free;
	}
	rc = 0;
	for (size_t i = 0; i < data->n || i == 0; i += rpp, blk++) {
		pg_page_init(page, 0);
		for (size_t j = i; j < i + rpp && j < data->n; j++) {
			memset(tup, 0, tsz);
			tup[22] = PHNSW_HEAP_TUPLE_HDR; /* t_hoff */
			pg_put32(tup + 24, (uint32_t) j);
			pg_put32(tup + 28, (uint32_t) ((8 + 4 * data->d) << 2));
			pg_put16(tup + 32, (uint16_t) data->d);
			memcpy(tup + 36, cv_row(data, j), 4 * data->d);
			if (pg_page_add(page, tup, PHNSW_HEAP_TUPLE_HDR + 12 + 4 * data->d) !=
			    j - i + 1) {
				rc = -EFAULT;
				break;
			}
		}
		pg_page_set_checksum(page, blk);
		if (rc || cvu_pwrite_full(fd, page, PG_BLCKSZ, (uint64_t) blk * PG_BLCKSZ)) {
			rc = rc ? rc : -EIO;
			break;
		}
		if (data->n == 0) {
			blk++;
			break;
		}
	}
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (rc)
		cv_err_set(e, rc, "%s: write failed", path);
	*pages = blk;
out_free:
	free(page);
	free(tup);
	return rc;
}

/* ---- build ---- */

typedef struct build_ctx {
	const cv_dataset *data;
	const float *ivecs;       /* index-form vectors */
	const cv_build_opts *o;
	const char *dir;
	uint32_t P, rpp;
	uint32_t **members;
	size_t *nmembers;
	atomic_uint next;
	atomic_size_t done;
	pthread_mutex_t mu;
	int rc;
	cv_err err;
	int last_pct;
	uint64_t t0; /* cv_progress_start() at the build's start */
} build_ctx;

static void progress(build_ctx *b)
{
	size_t done = atomic_load(&b->done);
	int pct = b->data->n ? (int) (100 * done / b->data->n) : 100;

	if (!b->o->progress || pct == b->last_pct)
		return;
	pthread_mutex_lock(&b->mu);
	if (pct != b->last_pct) {
		b->last_pct = pct;
		cv_progress_line("phnsw", done, b->data->n, b->t0);
	}
	pthread_mutex_unlock(&b->mu);
}

/* One worker of the build team: claim partitions until none are left. */
static void build_worker(void *arg, unsigned w)
{
	build_ctx *b = arg;

	(void) w;
	for (;;) {
		unsigned p = atomic_fetch_add(&b->next, 1);
		pb_graph g;
		char path[4096];
		cv_err e = {{0}};
		int rc;

		if (p >= b->P)
			break;
		pthread_mutex_lock(&b->mu);
		rc = b->rc;
		pthread_mutex_unlock(&b->mu);
		if (rc)
			break;
		rc = pb_graph_init(&g, b->data->d, b->o->m, b->o->ef_construction, b->o->metric,
				   b->o->seed * 1000003u + p, b->nmembers[p] + 1);
		for (size_t i = 0; !rc && i < b->nmembers[p]; i++) {
			uint32_t id = b->members[p][i];

			rc = pb_graph_insert(&g, b->ivecs + (size_t) id * b->data->d,
					     phnsw_heap_tid(id, b->rpp));
			if ((i & 63) == 63 || i + 1 == b->nmembers[p]) {
				atomic_fetch_add(&b->done, (i & 63) + 1);
				progress(b);
			}
		}
		if (rc)
			cv_err_set(&e, rc, "partition %u: graph build failed", p);
		snprintf(path, sizeof(path), "%s/part-%03u", b->dir, p);
		if (!rc)
			rc = pb_write_pages(&g, path, NULL, &e);
		pb_graph_free(&g);
		if (rc) {
			pthread_mutex_lock(&b->mu);
			if (!b->rc) {
				b->rc = rc;
				b->err = e;
			}
			pthread_mutex_unlock(&b->mu);
			break;
		}
	}
}

static int build_kind(const char *kind, uint32_t P, const cv_dataset *data,
		      const cv_build_opts *o, const char *dir, cv_err *e)
{
	build_ctx b = {.data = data, .o = o, .dir = dir, .P = P, .last_pct = -1,
		      .t0 = cv_progress_start()};
	phnsw_catalog cat = {0};
	float *norm = NULL;
	unsigned nthreads;
	int rc;

	if (data->d == 0 || data->d > HNSW_MAX_DIM)
		return cv_err_set(e, -EINVAL, "%s: dimension %zu outside 1..%d", data->spec, data->d,
				  HNSW_MAX_DIM);
	if (HNSW_ELEMENT_TUPLE_SIZE(data->d) + HNSW_NEIGHBOR_TUPLE_SIZE(0, o->m) > HNSW_MAX_SIZE &&
	    HNSW_ELEMENT_TUPLE_SIZE(data->d) > HNSW_MAX_SIZE)
		return cv_err_set(e, -EINVAL, "dimension %zu: index tuple too large for 8 KB pages",
				  data->d);
	if (data->n > UINT32_MAX)
		return cv_err_set(e, -EOVERFLOW, "%s: %zu rows, at most 2^32-1", data->spec, data->n);
	if (o->m < HNSW_MIN_M || o->m > HNSW_MAX_M)
		return cv_err_set(e, -EINVAL, "m %u outside %d..%d", o->m, HNSW_MIN_M, HNSW_MAX_M);
	if (o->ef_construction < HNSW_MIN_EF_CONSTRUCTION ||
	    o->ef_construction > HNSW_MAX_EF_CONSTRUCTION)
		return cv_err_set(e, -EINVAL, "ef_construction %u outside %d..%d",
				  o->ef_construction, HNSW_MIN_EF_CONSTRUCTION,
				  HNSW_MAX_EF_CONSTRUCTION);
	if (o->ef_construction < 2 * o->m)
		return cv_err_set(e, -EINVAL, "ef_construction %u must be at least 2 * m (%u)",
				  o->ef_construction, 2 * o->m);
	if (P == 0 || P > 4096)
		return cv_err_set(e, -EINVAL, "partitions %u outside 1..4096", P);
	b.rpp = phnsw_heap_rows_per_page(data->d);
	b.ivecs = data->data;
	if (o->metric == CV_METRIC_COSINE) {
		norm = malloc(data->n * data->d * sizeof(float) + 1);
		if (!norm)
			return -ENOMEM;
		for (size_t i = 0; i < data->n; i++)
			paged_normalize(cv_row(data, i), norm + i * data->d, data->d);
		b.ivecs = norm;
	}
	rc = -ENOMEM;
	b.members = calloc(P, sizeof(*b.members));
	b.nmembers = calloc(P, sizeof(*b.nmembers));
	if (!b.members || !b.nmembers)
		goto out;
	for (size_t i = 0; i < data->n; i++)
		b.nmembers[phnsw_partition_of((uint32_t) i, P)]++;
	for (uint32_t p = 0; p < P; p++) {
		b.members[p] = malloc((b.nmembers[p] + 1) * sizeof(uint32_t));
		if (!b.members[p])
			goto out;
		b.nmembers[p] = 0;
	}
	for (size_t i = 0; i < data->n; i++) {
		uint32_t p = phnsw_partition_of((uint32_t) i, P);

		b.members[p][b.nmembers[p]++] = (uint32_t) i;
	}
	rc = write_heap(data, dir, b.rpp, &cat.heap_pages, e);
	if (rc)
		goto out;
	nthreads = cvu_threads(o->threads);
	if (nthreads > P)
		nthreads = P;
	pthread_mutex_init(&b.mu, NULL);
	cvu_team(nthreads, build_worker, &b);
	pthread_mutex_destroy(&b.mu);
	if (b.rc) {
		rc = b.rc;
		if (e)
			*e = b.err;
		goto out;
	}
	snprintf(cat.kind, sizeof(cat.kind), "%s", kind);
	cat.metric = o->metric;
	cat.dim = (uint32_t) data->d;
	cat.count = data->n;
	cat.partitions = P;
	cat.m = o->m;
	cat.ef_construction = o->ef_construction;
	cat.heap_rows_per_page = b.rpp;
	rc = phnsw_catalog_write(dir, &cat, e);
out:
	if (b.members)
		for (uint32_t p = 0; p < P; p++)
			free(b.members[p]);
	free(b.members);
	free(b.nmembers);
	free(norm);
	return rc;
}

static int build_phnsw(const cv_dataset *data, const cv_build_opts *o, const char *dir, cv_err *e)
{
	return build_kind("phnsw", o->partitions ? o->partitions : 64, data, o, dir, e);
}

static int build_paged(const cv_dataset *data, const cv_build_opts *o, const char *dir, cv_err *e)
{
	return build_kind("paged", 1, data, o, dir, e);
}

/* ---- open ---- */

typedef struct phnsw_state {
	phnsw_catalog cat;
	cv_file **files;     /* P partitions, then the heap */
	uint32_t *listidx;   /* each file's index in cv_index_files(dir) */
	uint64_t *pcount;    /* rows of each partition, by the hash rule (one pass at open) */
	bufpool *bp;
} phnsw_state;

static void phnsw_close(void *st)
{
	phnsw_state *s = st;

	if (!s)
		return;
	if (s->files)
		for (uint32_t i = 0; i <= s->cat.partitions; i++)
			cv_file_close(s->files[i]);
	free(s->files);
	free(s->listidx);
	free(s->pcount);
	bufpool_free(s->bp);
	free(s);
}

static int phnsw_open_kind(const char *kind, const char *dir, const cv_open_opts *o, void **out,
			   cv_err *e)
{
	phnsw_state *s = calloc(1, sizeof(*s));
	char **list = NULL;
	size_t nlist = 0;
	int rc;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	rc = phnsw_catalog_read(dir, &s->cat, e);
	if (rc)
		goto fail;
	if (strcmp(s->cat.kind, kind)) {
		rc = cv_err_set(e, -EBADMSG, "%s/catalog: kind '%s', KIND says '%s'", dir,
				s->cat.kind, kind);
		goto fail;
	}
	rc = -ENOMEM;
	s->files = calloc(s->cat.partitions + 1, sizeof(*s->files));
	s->listidx = calloc(s->cat.partitions + 1, sizeof(*s->listidx));
	if (!s->files || !s->listidx)
		goto fail;
	rc = cv_index_files(dir, &list, &nlist);
	if (rc) {
		cv_err_set(e, rc, "%s: cannot list", dir);
		goto fail;
	}
	for (uint32_t i = 0; i <= s->cat.partitions; i++) {
		char path[4096];

		if (i < s->cat.partitions)
			snprintf(path, sizeof(path), "%s/part-%03u", dir, i);
		else
			snprintf(path, sizeof(path), "%s/heap", dir);
		rc = cv_file_open(path, o->flags | CV_FILE_NOFOLLOW, &s->files[i]);
		if (rc) {
			cv_err_set(e, rc, "%s: cannot open: %s", path,
				   rc == -ELOOP ? "a symlink inside the index (not followed)"
						: strerror(-rc));
			goto fail;
		}
		s->listidx[i] = UINT32_MAX;
		for (size_t j = 0; j < nlist; j++)
			if (!strcmp(list[j], path))
				s->listidx[i] = (uint32_t) j;
		if (cv_file_size(s->files[i]) % PG_BLCKSZ || cv_file_size(s->files[i]) == 0) {
			rc = cv_err_set(e, -EBADMSG, "%s: size %" PRIu64 " is not a whole number of 8 KB pages",
					path, cv_file_size(s->files[i]));
			goto fail;
		}
	}
	rc = bufpool_new((size_t) (o->buffers_bytes / PG_BLCKSZ), &s->bp);
	if (rc) {
		cv_err_set(e, rc, "buffer pool of %" PRIu64 " bytes", o->buffers_bytes);
		goto fail;
	}
	s->pcount = calloc(s->cat.partitions, sizeof(*s->pcount));
	if (!s->pcount) {
		rc = -ENOMEM;
		goto fail;
	}
	for (uint64_t id = 0; id < s->cat.count; id++)
		s->pcount[phnsw_partition_of((uint32_t) id, s->cat.partitions)]++;
	cv_index_files_free(list, nlist);
	*out = s;
	return 0;
fail:
	cv_index_files_free(list, nlist);
	phnsw_close(s);
	return rc;
}

static int open_phnsw(const char *dir, const cv_open_opts *o, void **out, cv_err *e)
{
	return phnsw_open_kind("phnsw", dir, o, out, e);
}

static int open_paged(const char *dir, const cv_open_opts *o, void **out, cv_err *e)
{
	return phnsw_open_kind("paged", dir, o, out, e);
}

static size_t phnsw_dim(const void *st)
{
	return ((const phnsw_state *) st)->cat.dim;
}

static size_t phnsw_count(const void *st)
{
	return ((const phnsw_state *) st)->cat.count;
}

static cv_metric phnsw_metric(const void *st)
{
	return ((const phnsw_state *) st)->cat.metric;
}

static unsigned phnsw_parts(const void *st)
{
	return ((const phnsw_state *) st)->cat.partitions;
}

/* Elements counted at open by the hash rule every row was placed by; pages from the file's size. */
static int phnsw_part_info(const void *st, unsigned p, cv_partition_info *out)
{
	const phnsw_state *s = st;

	out->elements = s->pcount[p];
	out->pages = cv_file_size(s->files[p]) / PG_BLCKSZ;
	return 0;
}

static void phnsw_drop(void *st)
{
	/* a cold start: an empty pool, mapped as a running server's is */
	bufpool_map(((phnsw_state *) st)->bp);
	bufpool_drop(((phnsw_state *) st)->bp);
}

/* ---- query ---- */

static int record_block(cv_block_list *bl, uint32_t file, uint64_t blk)
{
	return cv_block_list_add(bl, file, blk);
}

/* Run one scan to completion, one synchronous read at a time. */
static int run_sync(phnsw_state *st, ps_scan *s, cv_io *io, cv_block_list *bl)
{
	for (;;) {
		int rc = ps_scan_run(s);
		const ps_need *nd;

		if (rc == PS_DONE || rc < 0)
			return rc;
		if (rc == PS_BLOCKED) {
			sched_yield();
			continue;
		}
		nd = ps_scan_need(s);
		rc = cv_io_read(io, st->files[nd->file], (uint64_t) nd->blk * PG_BLCKSZ, PG_BLCKSZ,
				nd->page);
		if (!rc)
			rc = record_block(bl, st->listidx[nd->file], nd->blk);
		rc = ps_scan_io_done(s, rc);
		if (rc)
			return rc;
	}
}

typedef struct slot {
	ps_scan *scan;
	cv_read_req req;
	uint32_t batch;
	bool busy;
	bool resubmit; /* the ring was full: submit req again */
	bool blocked;  /* another thread is reading the block: run again */
} slot;

/* What the fan-out's driver threads share: the scans and who takes the next. */
typedef struct fan_shared {
	phnsw_state *st;
	ps_scan **scans;
	size_t n;
	atomic_size_t next;
	atomic_int stop;         /* an error anywhere: take no more scans */
	cv_block_list *bl;
	pthread_mutex_t bl_mu;   /* the block list is appended from every thread */
	atomic_uint inflight;    /* synchronous readers: reads in flight across the threads */
	atomic_uint inflight_max;
} fan_shared;

/* The next partition scan to start, or NULL when none is left (or after an error). */
static ps_scan *take_scan(fan_shared *sh)
{
	size_t i;

	if (atomic_load(&sh->stop))
		return NULL;
	i = atomic_fetch_add(&sh->next, 1);
	return i < sh->n ? sh->scans[i] : NULL;
}

/* record_block from any driver thread. */
static int record_block_shared(fan_shared *sh, uint32_t file, uint64_t blk)
{
	int rc;

	if (!sh->bl)
		return 0;
	pthread_mutex_lock(&sh->bl_mu);
	rc = record_block(sh->bl, file, blk);
	pthread_mutex_unlock(&sh->bl_mu);
	return rc;
}

/* Advance slot sl's scan until it needs a read (submitted) or finishes. */
static int slot_step(phnsw_state *st, slot *sl, uint32_t stream, cv_io *io, bool *finished)
{
	const ps_need *nd;
	int rc = ps_scan_run(sl->scan);

	*finished = false;
	sl->blocked = sl->resubmit = false;
	if (rc < 0)
		return rc;
	if (rc == PS_DONE) {
		*finished = true;
		return 0;
	}
	if (rc == PS_BLOCKED) {
		sl->blocked = true;
		return 0;
	}
	nd = ps_scan_need(sl->scan);
	sl->req = (cv_read_req){.file = st->files[nd->file],
				.off = (uint64_t) nd->blk * PG_BLCKSZ,
				.len = PG_BLCKSZ,
				.buf = nd->page,
				.stream = stream,
				.batch = sl->batch++,
				.user = sl};
	rc = cv_io_submit(io, &sl->req);
	if (rc == -EBUSY) {
		sl->resubmit = true;
		return 0;
	}
	if (rc < 0) {
		ps_scan_io_done(sl->scan, rc);
		return rc;
	}
	return 0;
}

/*
 * One driver: up to C scans, each with its one read in flight, over
 * cv_io_submit / cv_io_reap on io. A finished scan's slot takes the next
 * partition. Stream ids are stream0 + slot, so a trace holds C chains of
 * dependent reads per driver and no two drivers share an id.
 */
static int run_fanout(fan_shared *sh, unsigned C, uint32_t stream0, cv_io *io, unsigned *maxinfl)
{
	phnsw_state *st = sh->st;
	slot *slots = calloc(C, sizeof(*slots));
	cv_read_req *done[64];
	size_t active = 0;
	bool finished, more = true;
	unsigned unflushed = 0, flush_every = C >= 8 ? C / 4 : 2;
	int rc = 0;

	if (!slots)
		return -ENOMEM;
	for (;;) {
		/* fill free slots */
		for (unsigned i = 0; i < C && more; i++) {
			while (!slots[i].busy) {
				ps_scan *sc = take_scan(sh);

				if (!sc) {
					more = false;
					break;
				}
				slots[i] = (slot){.scan = sc, .busy = true, .batch = slots[i].batch};
				active++;
				if ((rc = slot_step(st, &slots[i], stream0 + i, io, &finished)))
					goto drain;
				if (cv_io_inflight(io) > *maxinfl)
					*maxinfl = cv_io_inflight(io);
				if (finished) {
					slots[i].busy = false;
					active--;
				}
			}
		}
		if (active == 0)
			break;
		/* slots refused by a full ring, or blocked on another thread's read */
		for (unsigned i = 0; i < C; i++) {
			slot *sl = &slots[i];

			if (!sl->busy)
				continue;
			if (sl->resubmit) {
				int r = cv_io_submit(io, &sl->req);

				if (r == 0) {
					sl->resubmit = false;
					if (cv_io_inflight(io) > *maxinfl)
						*maxinfl = cv_io_inflight(io);
				} else if (r != -EBUSY) {
					rc = r;
					goto drain;
				}
			} else if (sl->blocked) {
				if ((rc = slot_step(st, sl, stream0 + i, io, &finished)))
					goto drain;
				if (cv_io_inflight(io) > *maxinfl)
					*maxinfl = cv_io_inflight(io);
				if (finished) {
					sl->busy = false;
					active--;
				}
			}
		}
		if (cv_io_inflight(io) == 0) {
			sched_yield();
			continue;
		}
		rc = cv_io_reap(io, done, sizeof(done) / sizeof(done[0]), 1);
		if (rc < 0)
			goto drain;
		for (int j = 0, nd = rc; j < nd; j++) {
			slot *sl = done[j]->user;
			const ps_need *need = ps_scan_need(sl->scan);
			int r = done[j]->res;

			if (!r)
				r = record_block_shared(sh, st->listidx[need->file], need->blk);
			r = ps_scan_io_done(sl->scan, r);
			if (!r)
				r = slot_step(st, sl, stream0 + (uint32_t) (sl - slots), io, &finished);
			if (r) {
				rc = r;
				goto drain;
			}
			if (cv_io_inflight(io) > *maxinfl)
				*maxinfl = cv_io_inflight(io);
			if (finished) {
				sl->busy = false;
				active--;
			} else if (!sl->resubmit && !sl->blocked && ++unflushed >= flush_every) {
				/*
				 * Send what this batch has prepared so far: a reap can hand
				 * back most of the C reads at once, and holding every new
				 * read until the whole batch is processed leaves the device
				 * with few in flight meanwhile (measured: reads waited
				 * 0.56-1.40 ms against 0.41-0.52 ms with this, and the
				 * query took 1.2-2.6x longer, in 4 alternating pairs).
				 */
				if ((rc = cv_io_flush(io)) < 0)
					goto drain;
				unflushed = 0;
			}
		}
		unflushed = 0; /* the next reap flushes the rest */
		rc = 0;
	}
	free(slots);
	return 0;
drain:
	atomic_store(&sh->stop, 1);
	/* the kernel may still be writing into pool pages: wait for every read */
	while (cv_io_inflight(io) > 0) {
		int r = cv_io_reap(io, done, sizeof(done) / sizeof(done[0]), 1);

		if (r <= 0)
			break;
		for (int j = 0; j < r; j++) {
			slot *sl = done[j]->user;

			ps_scan_io_done(sl->scan, done[j]->res ? done[j]->res : -ECANCELED);
		}
	}
	free(slots);
	return rc;
}

/* A helper driver thread: its own cv_io (same strategy, device, trace), its share of C. */
typedef struct fan_worker {
	fan_shared *sh;
	const cv_io_opts *o;
	unsigned C;
	uint32_t stream0;
	unsigned maxinfl;
	cv_io_stats st;
	int rc;
	pthread_t tid;
} fan_worker;

static void *fan_worker_main(void *arg)
{
	fan_worker *w = arg;
	cv_io_opts o = *w->o;
	cv_io *io = NULL;

	if (o.queue_depth < w->C)
		o.queue_depth = w->C;
	w->rc = cv_io_new(&o, &io);
	if (!w->rc)
		w->rc = run_fanout(w->sh, w->C, w->stream0, io, &w->maxinfl);
	else
		atomic_store(&w->sh->stop, 1);
	if (io)
		cv_io_stats_get(io, &w->st);
	cv_io_free(io);
	return NULL;
}

/* A pooled uring fan-out: driver 0 on the querying thread (its io), helpers on the pool's. */
typedef struct fan_team {
	fan_shared *sh;
	fan_worker *w;   /* helpers 1..T-1 */
	unsigned C0;
	cv_io *io;
	unsigned maxinfl;
	int rc;
} fan_team;

static void fan_team_job(void *ctx, unsigned t)
{
	fan_team *ft = ctx;

	if (t == 0)
		ft->rc = run_fanout(ft->sh, ft->C0, 0, ft->io, &ft->maxinfl);
	else
		fan_worker_main(&ft->w[t - 1]);
}

/*
 * How many threads drive a fan-out of C: one by default (the seed's design:
 * many reads in flight from one thread); COLDSTUDY_FANOUT_THREADS=N splits
 * the C scans among N drivers, each with its own ring. On the 2-vCPU
 * development machine two drivers were no faster: 0.50-0.88 s against
 * 0.65-0.85 s per query at load 10-12, and 0.53-0.71 s against 0.52-0.53 s
 * at load 3-5 (bench/paged/README.md).
 */
static unsigned fanout_threads(unsigned C)
{
	const char *env = getenv("COLDSTUDY_FANOUT_THREADS");

	if (env && *env) {
		char *end;
		unsigned long v = strtoul(env, &end, 10);

		if (!*end && v >= 1 && v <= 64)
			return (unsigned) v < C ? (unsigned) v : C;
	}
	return 1;
}

/*
 * A synchronous reader of a threaded fan-out: one thread with its own
 * cv_io (the caller's strategy, device and trace; stream = its number),
 * taking partition scans one after another and reading each scan's pages
 * one at a time, as one database connection of C would. The fan-out's
 * concurrency is the readers': inflight counts the reads in flight across
 * all of them, sampled here at each read's start.
 */
typedef struct sync_reader {
	fan_shared *sh;
	const cv_io_opts *o;
	uint32_t stream;
	cv_hist inflight;  /* the fan-out's reads in flight, at each of this reader's reads */
	cv_io_stats st;
	int rc;
	pthread_t tid;
} sync_reader;

/* One read of a synchronous reader, counted in the fan-out's reads in flight. */
static int reader_read(sync_reader *r, cv_io *io, cv_file *f, uint64_t off, void *page)
{
	fan_shared *sh = r->sh;
	unsigned n = atomic_fetch_add(&sh->inflight, 1) + 1, m = atomic_load(&sh->inflight_max);
	int rc;

	while (n > m && !atomic_compare_exchange_weak(&sh->inflight_max, &m, n))
		;
	cv_hist_add(&r->inflight, n);
	rc = cv_io_read(io, f, off, PG_BLCKSZ, page);
	atomic_fetch_sub(&sh->inflight, 1);
	return rc;
}

/* Run scan s to completion on reader r, one synchronous read at a time. */
static int reader_scan(sync_reader *r, cv_io *io, ps_scan *s)
{
	phnsw_state *st = r->sh->st;

	for (;;) {
		int rc = ps_scan_run(s);
		const ps_need *nd;

		if (rc == PS_DONE || rc < 0)
			return rc;
		if (rc == PS_BLOCKED) { /* another reader is reading the block */
			sched_yield();
			continue;
		}
		nd = ps_scan_need(s);
		rc = reader_read(r, io, st->files[nd->file], (uint64_t) nd->blk * PG_BLCKSZ, nd->page);
		if (!rc)
			rc = record_block_shared(r->sh, st->listidx[nd->file], nd->blk);
		rc = ps_scan_io_done(s, rc);
		if (rc)
			return rc;
	}
}

static void *sync_reader_main(void *arg)
{
	sync_reader *r = arg;
	cv_io_opts o = *r->o;
	cv_io *io = NULL;
	ps_scan *sc;

	o.queue_depth = 1;
	o.stream = r->stream;
	r->rc = cv_io_new(&o, &io);
	while (!r->rc && (sc = take_scan(r->sh)))
		r->rc = reader_scan(r, io, sc);
	if (r->rc)
		atomic_store(&r->sh->stop, 1);
	if (io)
		cv_io_stats_get(io, &r->st);
	cv_io_free(io);
	return NULL;
}

/* The most synchronous readers one fan-out runs (a thread each). */
#define FANOUT_MAX_READERS 256

/* Reader t of a pooled fan-out (0 on the querying thread, the others on the pool's). */
static void sync_reader_job(void *ctx, unsigned t)
{
	sync_reader_main((sync_reader *) ctx + t);
}

/*
 * fanout:C without io_uring (pread, direct, mmap): C synchronous readers,
 * each a thread with one read in flight, take the scans. Every page is
 * read exactly as in serial mode (the buffer pool is shared; a page
 * another reader is reading is waited for, then a hit), so reads and
 * results are serial's. The readers' counters are folded into io, with
 * the in-flight samples and maximum taken across the readers. With a
 * thread pool (cv_query_opts.pool) the querying thread is reader 0 and
 * the pool's threads the others, started once for the session; without
 * one, every reader is a thread started for this query. -EAGAIN when no
 * reader thread could be started (never a silent serial run).
 */
static int fanout_threads_run(fan_shared *sh, unsigned C, cv_io *io, cv_pool *pool)
{
	unsigned T = C, started = 0;
	sync_reader *r;
	int rc = 0;

	if (T > sh->n)
		T = (unsigned) sh->n;
	if (T > FANOUT_MAX_READERS)
		T = FANOUT_MAX_READERS;
	if (T == 0)
		return 0;
	r = calloc(T, sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (unsigned t = 0; t < T; t++)
		r[t] = (sync_reader){.sh = sh, .o = cv_io_get_opts(io), .stream = t};
	if (pool) {
		/* a failed join (the reader outside the session's cap) ran nothing: fail the query */
		rc = cv_pool_team(pool, T, sync_reader_job, r);
		started = rc == -EAGAIN || rc == -ENOMEM ? 0 : T;
	} else {
		for (unsigned t = 0; t < T; t++) {
			if (pthread_create(&r[t].tid, NULL, sync_reader_main, &r[t]))
				break;
			started++;
		}
	}
	for (unsigned t = 0; t < started; t++) {
		if (!pool)
			pthread_join(r[t].tid, NULL);
		r[t].st.inflight = r[t].inflight;
		cv_io_stats_add(io, &r[t].st, atomic_load(&sh->inflight_max));
		if (!rc && r[t].rc)
			rc = r[t].rc;
	}
	if (!started && !rc)
		rc = -EAGAIN;
	free(r);
	return rc;
}

/*
 * fanout:C: the scans are shared out among T driver threads (this one
 * and T-1 helpers), each holding its share of the C scans in flight on
 * its own io_uring. Every page is read exactly as in serial mode (the
 * pool is shared; a heap page another driver is reading is waited for,
 * then a hit), so reads and results do not depend on T. The helpers'
 * counters are folded into io. With a thread pool (cv_query_opts.pool)
 * the helpers run on the pool's threads instead of threads of their own.
 */
static int fanout(phnsw_state *st, ps_scan **scans, size_t n, unsigned C, cv_io *io,
		  cv_block_list *bl, cv_pool *pool, uint32_t *via)
{
	fan_shared sh = {.st = st, .scans = scans, .n = n, .bl = bl};
	unsigned T = fanout_threads(C), started = 0, base = C / T, extra = C % T;
	fan_worker *w = NULL;
	uint32_t stream0 = 0;
	unsigned maxinfl = 0;
	int rc;

	atomic_init(&sh.next, 0);
	atomic_init(&sh.stop, 0);
	atomic_init(&sh.inflight, 0);
	atomic_init(&sh.inflight_max, 0);
	pthread_mutex_init(&sh.bl_mu, NULL);
	if (cv_io_get_opts(io)->strategy != CV_IO_URING) {
		/* no ring: a synchronous submit completes at once, so C need C threads */
		*via = CV_FANOUT_THREADS;
		rc = fanout_threads_run(&sh, C, io, pool);
		pthread_mutex_destroy(&sh.bl_mu);
		return rc;
	}
	*via = CV_FANOUT_URING;
	if (T > 1) {
		w = calloc(T - 1, sizeof(*w));
		if (!w)
			T = 1;
	}
	/* helpers take slots [base + (extra>0), C); this thread the first share */
	stream0 = base + (extra > 0);
	for (unsigned t = 1; t < T; t++) {
		fan_worker *x = &w[t - 1];

		*x = (fan_worker){.sh = &sh, .o = cv_io_get_opts(io),
				  .C = base + (t < extra), .stream0 = stream0};
		stream0 += x->C;
		if (pool)
			continue;
		if (pthread_create(&x->tid, NULL, fan_worker_main, x))
			break;
		started = t;
	}
	if (pool && T > 1) {
		fan_team ft = {.sh = &sh, .w = w, .C0 = base + (extra > 0), .io = io};
		int prc = cv_pool_team(pool, T, fan_team_job, &ft);

		if (prc == -EAGAIN || prc == -ENOMEM) {
			/* nothing ran: this thread drives every scan, as when no helper starts */
			rc = run_fanout(&sh, base + (extra > 0), 0, io, &maxinfl);
		} else {
			started = T - 1;
			rc = ft.rc ? ft.rc : prc;
			maxinfl = ft.maxinfl;
		}
	} else {
		/* a helper that did not start takes no scans: the running drivers take them all */
		rc = run_fanout(&sh, base + (extra > 0), 0, io, &maxinfl);
	}
	for (unsigned t = 1; t <= started; t++) {
		fan_worker *x = &w[t - 1];

		if (!pool)
			pthread_join(x->tid, NULL);
		/* the drivers' reads were in flight together: their maxima add */
		maxinfl += x->maxinfl;
		cv_io_stats_add(io, &x->st, maxinfl);
		if (!rc && x->rc)
			rc = x->rc;
	}
	pthread_mutex_destroy(&sh.bl_mu);
	free(w);
	return rc;
}

typedef struct mrow {
	uint32_t id;
	double xdist;
	uint32_t part;
} mrow;

static int mrow_cmp(const void *a, const void *b)
{
	const mrow *x = a, *y = b;

	if (x->xdist != y->xdist)
		return x->xdist < y->xdist ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Merge Append's binary heap of children, keyed by their head row's distance. */
typedef struct mhead {
	double xdist;
	uint32_t child;
} mhead;

static bool mh_less(const mhead *a, const mhead *b)
{
	return a->xdist != b->xdist ? a->xdist < b->xdist : a->child < b->child;
}

#define HEAP_PREFIX mh /* the nearest head on top; ties by child, as Merge Append keeps them */
#define HEAP_ELEM mhead
#define HEAP_ABOVE(x, y) mh_less(&(x), &(y))
#include "heap_template.h"

static int phnsw_query(void *state, cv_io *io, const float *q, const cv_query_opts *o,
		       uint32_t *ids, float *dists, size_t *nout, cv_query_stats *stats)
{
	phnsw_state *st = state;
	uint32_t P = st->cat.partitions, np;
	uint32_t *parts = NULL;
	ps_scan **scans = NULL;
	mhead *heads = NULL;
	mrow *all = NULL;
	size_t k = o->k, out = 0, nheads = 0, *cur = NULL;
	bool stream = o->merge == CV_MERGE_STREAM;
	int rc = -ENOMEM;

	*nout = 0;
	if (k == 0)
		return 0;
	if (o->ef_search < HNSW_MIN_EF_SEARCH || o->ef_search > HNSW_MAX_EF_SEARCH)
		return -EINVAL;
	np = o->partitions ? (uint32_t) o->npartitions : P;
	parts = malloc((np ? np : 1) * sizeof(*parts));
	scans = calloc(np ? np : 1, sizeof(*scans));
	cur = calloc(np ? np : 1, sizeof(*cur));
	heads = malloc((np ? np : 1) * sizeof(*heads));
	if (!parts || !scans || !cur || !heads)
		goto out;
	for (uint32_t i = 0; i < np; i++) {
		parts[i] = o->partitions ? o->partitions[i] : i;
		if (parts[i] >= P) {
			rc = -EINVAL;
			goto out;
		}
	}
	for (uint32_t i = 0; i < np; i++) {
		rc = ps_scan_new(st->bp, parts[i], st->cat.dim, st->cat.metric, q, o->ef_search,
				 &scans[i]);
		if (rc)
			goto out;
		/* Merge Append pulls one row per child; the sort merge k per partition */
		ps_scan_set_heap(scans[i], P, stream ? 1 : k, st->cat.heap_rows_per_page);
	}
	if (o->mode == CV_MODE_FANOUT && o->fanout > 1) {
		uint32_t via = CV_FANOUT_NONE;

		rc = fanout(st, scans, np, o->fanout, io, o->blocks, o->pool, &via);
		if (stats)
			stats->fanout_via = via;
		if (rc)
			goto out;
	} else {
		for (uint32_t i = 0; i < np; i++)
			if ((rc = run_sync(st, scans[i], io, o->blocks)))
				goto out;
	}
	if (stream) {
		for (uint32_t i = 0; i < np; i++) {
			size_t n;
			const ps_row *r = ps_scan_rows(scans[i], &n);

			if (n && r[0].fetched)
				mh_push(heads, &nheads, (mhead){r[0].xdist, i});
		}
		while (out < k && nheads) {
			mhead h = mh_pop(heads, &nheads);
			size_t n;
			const ps_row *r = ps_scan_rows(scans[h.child], &n);

			ids[out] = r[cur[h.child]].id;
			dists[out] = (float) r[cur[h.child]].xdist;
			out++;
			cur[h.child]++;
			if (out < k && cur[h.child] < n) {
				/* the child advances: one more heap fetch */
				ps_scan_fetch_more(scans[h.child], cur[h.child] + 1);
				if ((rc = run_sync(st, scans[h.child], io, o->blocks)))
					goto out;
				r = ps_scan_rows(scans[h.child], &n);
				mh_push(heads, &nheads, (mhead){r[cur[h.child]].xdist, h.child});
			}
		}
	} else {
		size_t nall = 0;

		all = malloc((size_t) np * k * sizeof(*all) + 1);
		if (!all)
			goto out;
		for (uint32_t i = 0; i < np; i++) {
			size_t n;
			const ps_row *r = ps_scan_rows(scans[i], &n);

			for (size_t j = 0; j < n && j < k; j++)
				if (r[j].fetched)
					all[nall++] = (mrow){r[j].id, r[j].xdist, i};
		}
		qsort(all, nall, sizeof(*all), mrow_cmp);
		for (; out < k && out < nall; out++) {
			ids[out] = all[out].id;
			dists[out] = (float) all[out].xdist;
		}
	}
	*nout = out;
	rc = 0;
out:
	if (stats && scans) {
		for (uint32_t i = 0; i < np; i++) {
			const ps_counts *c;

			if (!scans[i])
				continue;
			c = ps_scan_counts(scans[i]);
			stats->reads += c->reads + c->heap_reads;
			stats->bytes += (c->reads + c->heap_reads) * PG_BLCKSZ;
			stats->buffer_hits += c->hits + c->heap_hits;
			stats->heap_reads += c->heap_reads;
			stats->distances += c->distances;
		}
	}
	if (scans)
		for (uint32_t i = 0; i < np; i++)
			ps_scan_free(scans[i]);
	free(scans);
	free(parts);
	free(cur);
	free(heads);
	free(all);
	return rc;
}

static int verify_dir(const char *dir, cv_err *e)
{
	return paged_verify_dir(dir, e);
}

const cv_index_ops cv_paged_ops = {
	.kind = "paged",
	.build = build_paged,
	.open = open_paged,
	.close = phnsw_close,
	.dim = phnsw_dim,
	.count = phnsw_count,
	.metric = phnsw_metric,
	.partitions = phnsw_parts,
	.partition_info = phnsw_part_info,
	.drop_buffers = phnsw_drop,
	.query = phnsw_query,
	.verify = verify_dir,
};

const cv_index_ops cv_phnsw_ops = {
	.kind = "phnsw",
	.build = build_phnsw,
	.open = open_phnsw,
	.close = phnsw_close,
	.dim = phnsw_dim,
	.count = phnsw_count,
	.metric = phnsw_metric,
	.partitions = phnsw_parts,
	.partition_info = phnsw_part_info,
	.drop_buffers = phnsw_drop,
	.query = phnsw_query,
	.verify = verify_dir,
};
