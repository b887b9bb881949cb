/*
 * test_paged.c - the paged HNSW's page format, buffer pool, build, scan
 * and the phnsw query modes, on small synthetic data (suite 'unit'):
 *
 *   page        add/item/free-space and checksum round trip; a flipped
 *               byte or a page moved to another block fails the check
 *   bufpool     hits, misses, clock sweep with pins, drop
 *   layout      element and neighbour tuple sizes as pgvector 0.5.1's
 *               formulas; meta page fields; neighbour tuple on the same
 *               page when the pair fits
 *   modes       serial and fanout:C with stream merge return identical
 *               ids and read counts; sort returns ascending true distance
 *   near-tie    a partition returning a slightly farther row first (float32
 *               index order against double executor order): the stream
 *               merge keeps that order, the sort merge fixes it
 *   pool        a fan-out on a session's reader pool returns what the
 *               thread-per-reader fan-out returns, bit for bit (ids,
 *               distances, every counter), on every strategy, alone and
 *               from two querying threads at once, and starts its readers
 *               once for the session; a pool thread runs the session's
 *               join once before its next task, and a failed join fails
 *               the query
 *   corrupt     a damaged page gives -EBADMSG on query and on verify
 *   cap         one scan returns at most ef_search elements
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "paged/paged.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ---- */

static void rm_index(const char *dir)
{
	char **paths = NULL, *parent, *slash;
	size_t n = 0;

	if (cv_index_files(dir, &paths, &n) == 0) {
		for (size_t i = 0; i < n; i++)
			unlink(paths[i]);
		cv_index_files_free(paths, n);
	}
	rmdir(dir);
	/* build() puts the index at MKDTEMP/ix: the temporary parent goes too */
	parent = strdup(dir);
	slash = parent ? strrchr(parent, '/') : NULL;
	if (slash && !strcmp(slash, "/ix")) {
		*slash = '\0';
		rmdir(parent);
	}
	free(parent);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static char *tmpdir_new(void)
{
	char tmpl[] = "/tmp/cvpagedXXXXXX";
	char *d = mkdtemp(tmpl);

	assert_non_null(d);
	return strdup(d);
}

static cv_io *new_io(cv_io_strategy s)
{
	cv_io_opts o;
	cv_io *io = NULL;

	cv_io_opts_default(&o);
	o.strategy = s;
	if (cv_io_new(&o, &io) != 0) {
		cv_io_opts_default(&o);
		assert_int_equal(cv_io_new(&o, &io), 0);
	}
	return io;
}

/* Build kind over synth data into a fresh directory (caller frees dir). */
static char *build(const char *kind, const cv_dataset *d, unsigned parts, cv_metric m)
{
	cv_build_opts o;
	cv_err e = {{0}};
	char *dir = tmpdir_new();
	char sub[512];

	snprintf(sub, sizeof(sub), "%s/ix", dir);
	free(dir);
	cv_build_opts_default(&o);
	o.metric = m;
	o.m = 8;
	o.ef_construction = 32;
	o.partitions = parts;
	o.threads = 2;
	if (cv_index_build(kind, d, &o, sub, &e) != 0)
		fail_msg("build: %s", e.msg);
	return strdup(sub);
}

/* ---- page ---- */

static void test_page(void **state)
{
	uint8_t page[PG_BLCKSZ], tup[100];
	size_t len;
	const uint8_t *t;

	(void) state;
	pg_page_init(page, HNSW_SPECIAL);
	assert_int_equal(pg_page_free(page), PG_BLCKSZ - PG_PAGE_HEADER - HNSW_SPECIAL - PG_ITEMID);
	memset(tup, 7, sizeof(tup));
	assert_int_equal(pg_page_add(page, tup, 100), 1);
	assert_int_equal(pg_page_add(page, tup, 13), 2);
	assert_int_equal(pg_page_nitems(page), 2);
	t = pg_page_item(page, 1, &len);
	assert_non_null(t);
	assert_int_equal(len, 100);
	assert_memory_equal(t, tup, 100);
	/* tuples are MAXALIGNed: the second starts 16 bytes below the first */
	assert_int_equal(pg_page_item(page, 2, &len) - page, t - page - 16);
	assert_null(pg_page_item(page, 3, &len));
	pg_page_set_checksum(page, 5);
	assert_int_equal(pg_page_check(page, 5), 0);
	assert_int_equal(pg_page_check(page, 6), -EBADMSG);
	page[4000] ^= 1;
	assert_int_equal(pg_page_check(page, 5), -EBADMSG);
	page[4000] ^= 1;
	assert_int_equal(pg_page_check(page, 5), 0);
	/* a full page refuses */
	while (pg_page_add(page, tup, 100))
		;
	assert_true(pg_page_free(page) < 104);
}

/* The SIMD checksum equals the scalar one, and both keep the on-disk values. */
static void test_checksum_simd(void **state)
{
	static uint8_t page[PG_BLCKSZ];
	uint32_t x = 12345;

	(void) state;
	for (size_t i = 0; i < sizeof(page); i++) {
		x = x * 1103515245u + 12345u;
		page[i] = (uint8_t) (x >> 16);
	}
	/* values of the format as first written (pages on disk must keep verifying) */
	assert_int_equal(pg_page_checksum(page, 0), 37245);
	assert_int_equal(pg_page_checksum(page, 7), 37242);
	assert_int_equal(pg_page_checksum(page, 123456), 46012);
	for (int round = 0; round < 200; round++) {
		uint32_t blk = x;

		for (size_t i = 0; i < sizeof(page); i += 4) {
			x = x * 1103515245u + 12345u;
			memcpy(page + i, &x, 4);
		}
		assert_int_equal(pg_page_checksum(page, blk), pg_page_checksum_scalar(page, blk));
		/* pd_checksum itself does not count */
		page[PGH_CHECKSUM] ^= 0xFF;
		assert_int_equal(pg_page_checksum(page, blk), pg_page_checksum_scalar(page, blk));
	}
	memset(page, 0, sizeof(page));
	assert_int_equal(pg_page_checksum(page, 1), 48251);
	assert_int_equal(pg_page_checksum_scalar(page, 1), 48251);
}

static void test_sizes(void **state)
{
	(void) state;
	/* pgvector 0.5.1: element MAXALIGN(80 + 4 dim), neighbours MAXALIGN(4 + (l+2) m 6) */
	assert_int_equal(HNSW_ELEMENT_TUPLE_SIZE(128), 592);
	assert_int_equal(HNSW_ELEMENT_TUPLE_SIZE(784), 3216);
	assert_int_equal(HNSW_NEIGHBOR_TUPLE_SIZE(0, 16), 200);
	assert_int_equal(HNSW_NEIGHBOR_TUPLE_SIZE(1, 16), 296);
	assert_int_equal(HNSW_MAX_LEVEL(16), 82);
	assert_int_equal(HNSW_MAX_SIZE, 8156);
}

/* ---- buffer pool ---- */

static void test_bufpool(void **state)
{
	bufpool *bp;
	uint8_t *p;
	int b, b2;

	(void) state;
	assert_int_equal(bufpool_new(16, &bp), 0);
	assert_int_equal(bufpool_size(bp), 16);
	assert_int_equal(bufpool_lookup(bp, 0, 7, &b, &p), BUF_MISS);
	/* a second reader of a block in flight is told to wait */
	assert_int_equal(bufpool_lookup(bp, 0, 7, &b2, &p), -EBUSY);
	memset(p, 0xAB, PG_BLCKSZ);
	bufpool_io_done(bp, b, true);
	bufpool_release(bp, b);
	assert_int_equal(bufpool_lookup(bp, 0, 7, &b2, &p), BUF_HIT);
	assert_int_equal(b2, b);
	assert_int_equal(p[100], 0xAB);
	/* keep block 7 pinned; cycle 40 other blocks through the other 15 buffers */
	for (uint32_t i = 100; i < 140; i++) {
		int bb;
		uint8_t *pp;

		assert_int_equal(bufpool_lookup(bp, 1, i, &bb, &pp), BUF_MISS);
		assert_int_not_equal(bb, b);
		bufpool_io_done(bp, bb, true);
		bufpool_release(bp, bb);
	}
	bufpool_release(bp, b2);
	/* pinned survived the sweep; the oldest of the others did not */
	assert_int_equal(bufpool_lookup(bp, 0, 7, &b2, &p), BUF_HIT);
	bufpool_release(bp, b2);
	assert_int_equal(bufpool_lookup(bp, 1, 100, &b2, &p), BUF_MISS);
	bufpool_io_done(bp, b2, false);
	/* a failed read frees its buffer: the block is a miss again */
	assert_int_equal(bufpool_lookup(bp, 1, 100, &b2, &p), BUF_MISS);
	bufpool_io_done(bp, b2, true);
	bufpool_release(bp, b2);
	bufpool_drop(bp);
	assert_int_equal(bufpool_lookup(bp, 0, 7, &b2, &p), BUF_MISS);
	bufpool_io_done(bp, b2, true);
	bufpool_release(bp, b2);
	/* every buffer pinned: no victim */
	{
		int pins[16];

		for (int i = 0; i < 16; i++) {
			int rc = bufpool_lookup(bp, 2, (uint32_t) i, &pins[i], &p);

			assert_true(rc == BUF_MISS);
			bufpool_io_done(bp, pins[i], true);
		}
		assert_int_equal(bufpool_lookup(bp, 3, 0, &b, &p), -ENOSPC);
		for (int i = 0; i < 16; i++)
			bufpool_release(bp, pins[i]);
	}
	bufpool_free(bp);
}

/* ---- layout of a built file ---- */

static void test_layout(void **state)
{
	cv_dataset *d = NULL;
	cv_err e = {{0}};
	char *dir, path[600];
	uint8_t page[PG_BLCKSZ];
	size_t len;
	const uint8_t *t, *mp;
	int fd;

	(void) state;
	assert_int_equal(cv_dataset_load("synth:n=300,d=100,clusters=4,seed=3", &d, &e), 0);
	dir = build("paged", d, 1, CV_METRIC_L2);
	snprintf(path, sizeof(path), "%s/part-000", dir);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, page, PG_BLCKSZ, 0), PG_BLCKSZ);
	assert_int_equal(pg_page_check(page, 0), 0);
	mp = page + PG_PAGE_HEADER;
	assert_int_equal(pg_get32(mp), HNSW_MAGIC);
	assert_int_equal(pg_get32(mp + 4), 1);
	assert_int_equal(pg_get32(mp + 8), 100);
	assert_int_equal(pg_get16(mp + 12), 8);
	assert_int_equal(pg_get16(mp + 14), 32);
	assert_int_equal(pg_get16(page + PG_BLCKSZ - 2), HNSW_PAGE_ID);
	/* block 1: first element (id 0, heap (0,1)), its neighbour tuple next to it */
	assert_int_equal(pread(fd, page, PG_BLCKSZ, PG_BLCKSZ), PG_BLCKSZ);
	assert_int_equal(pg_page_check(page, 1), 0);
	t = pg_page_item(page, 1, &len);
	assert_non_null(t);
	assert_int_equal(t[0], HNSW_ELEMENT_TYPE);
	assert_int_equal(len, 80 + 400);
	assert_int_equal(pg_get_tid(t + 4).blk, 0);
	assert_int_equal(pg_get_tid(t + 4).off, 1);
	assert_false(pg_tid_valid(pg_get_tid(t + 10)));
	assert_int_equal(pg_get_tid(t + 64).blk, 1);
	assert_int_equal(pg_get_tid(t + 64).off, 2);
	assert_memory_equal(t + 80, cv_row(d, 0), 400);
	t = pg_page_item(page, 2, &len);
	assert_non_null(t);
	assert_int_equal(t[0], HNSW_NEIGHBOR_TYPE);
	assert_int_equal(pg_get16(t + 2), (size_t) (pg_page_item(page, 1, &len)[1] + 2) * 8);
	/* element pages chain through nextblkno */
	assert_int_equal(pg_get32(page + PG_BLCKSZ - 8), 2);
	close(fd);
	assert_int_equal(cv_index_verify(dir, &e), 0);
	assert_non_null(strstr(e.msg, "300 rows"));
	rm_index(dir);
	free(dir);
	cv_dataset_free(d);
}

/* ---- query modes ---- */

typedef struct res {
	uint32_t ids[10];
	float d[10];
	size_t n;
	cv_query_stats st;
} res;

static void query(cv_index *ix, cv_io *io, const float *q, cv_query_mode mode, unsigned fan,
		  cv_merge merge, unsigned ef, res *r)
{
	cv_query_opts qo;

	cv_query_opts_default(&qo);
	qo.k = 10;
	qo.ef_search = ef;
	qo.mode = mode;
	qo.fanout = fan;
	qo.merge = merge;
	memset(r, 0, sizeof(*r));
	cv_index_drop_buffers(ix);
	assert_int_equal(cv_index_query(ix, io, q, &qo, r->ids, r->d, &r->n, &r->st), 0);
}

static void test_modes(void **state)
{
	cv_dataset *all = NULL, *base = NULL;
	cv_err e = {{0}};
	cv_index *ix = NULL;
	cv_io *io = new_io(CV_IO_URING), *io2 = new_io(CV_IO_PREAD);
	char *dir;

	(void) state;
	assert_int_equal(cv_dataset_load("synth:n=3020,d=24,clusters=16,seed=5", &all, &e), 0);
	assert_int_equal(cv_dataset_slice(all, 0, 3000, &base), 0);
	dir = build("phnsw", base, 8, CV_METRIC_L2);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	assert_int_equal(cv_index_partitions(ix), 8);
	{
		/* each partition's vectors and pages: the vectors add up, the pages are the file's */
		uint64_t sum = 0;
		cv_partition_info pi;

		for (unsigned p = 0; p < 8; p++) {
			char path[600];
			struct stat sb;

			assert_int_equal(cv_index_partition_info(ix, p, &pi), 0);
			snprintf(path, sizeof(path), "%s/part-%03u", dir, p);
			assert_int_equal(stat(path, &sb), 0);
			assert_true(pi.elements > 0);
			assert_int_equal(pi.pages * 8192, (uint64_t) sb.st_size);
			sum += pi.elements;
		}
		assert_int_equal(sum, 3000);
		assert_int_equal(cv_index_partition_info(ix, 8, &pi), -ERANGE);
	}
	for (size_t qi = 3000; qi < 3020; qi++) {
		const float *q = cv_row(all, qi);
		res s, f, f2, f3, so;
		cv_io_stats b, a;

		query(ix, io2, q, CV_MODE_SERIAL, 1, CV_MERGE_STREAM, 40, &s);
		query(ix, io, q, CV_MODE_FANOUT, 4, CV_MERGE_STREAM, 40, &f);
		query(ix, io2, q, CV_MODE_FANOUT, 8, CV_MERGE_STREAM, 40, &f2);
		/* three driver threads, each with its own ring; counters folded into io */
		cv_io_stats_get(io, &b);
		setenv("COLDSTUDY_FANOUT_THREADS", "3", 1);
		query(ix, io, q, CV_MODE_FANOUT, 8, CV_MERGE_STREAM, 40, &f3);
		unsetenv("COLDSTUDY_FANOUT_THREADS");
		cv_io_stats_get(io, &a);
		assert_memory_equal(s.ids, f3.ids, sizeof(s.ids));
		assert_int_equal(s.st.reads, f3.st.reads);
		assert_int_equal(a.reads - b.reads, f3.st.reads);
		/* the drivers' in-flight maxima add up to at most the fan-out */
		assert_true(a.inflight_max >= 2 && a.inflight_max <= 8);
		query(ix, io, q, CV_MODE_FANOUT, 4, CV_MERGE_SORT, 40, &so);
		assert_int_equal(s.n, 10);
		assert_int_equal(f.n, 10);
		assert_memory_equal(s.ids, f.ids, sizeof(s.ids));
		assert_memory_equal(s.ids, f2.ids, sizeof(s.ids));
		/* the same pages, only overlapped */
		assert_int_equal(s.st.reads, f.st.reads);
		assert_int_equal(s.st.reads, f2.st.reads);
		/* Merge Append: one heap row per partition, then one per further row */
		assert_true(s.st.heap_reads <= 8 + 9);
		assert_true(s.st.heap_reads >= 1);
		assert_true(s.st.reads > 8 * 3);
		/* sort returns ascending distance, and every id's true distance */
		for (size_t j = 0; j < so.n; j++) {
			double t = paged_exec_distance(CV_METRIC_L2, q, cv_row(base, so.ids[j]), 24);

			assert_float_equal(so.d[j], (float) t, 1e-3 * (1 + t));
			if (j)
				assert_true(so.d[j - 1] <= so.d[j]);
		}
	}
	cv_index_close(ix);
	cv_io_free(io);
	cv_io_free(io2);
	rm_index(dir);
	free(dir);
	cv_dataset_free(base);
	cv_dataset_free(all);
}

/*
 * Fan-out without io_uring: pread, direct and mmap complete a read inside
 * submit, so the fan-out runs C synchronous readers (threads). Under a
 * device model that delays every read in real time, the readers' reads
 * must overlap (inflight_max >= 2), the query must say it ran on threads,
 * and its answers and reads must be serial's.
 */
static void test_fanout_threads(void **state)
{
	static const cv_io_strategy strats[] = {CV_IO_PREAD, CV_IO_DIRECT, CV_IO_MMAP};
	cv_dataset *all = NULL, *base = NULL;
	cv_device *dev = NULL;
	cv_err e = {{0}};
	cv_index *ix = NULL;
	char *dir;

	(void) state;
	assert_int_equal(cv_dataset_load("synth:n=2010,d=16,clusters=8,seed=9", &all, &e), 0);
	assert_int_equal(cv_dataset_slice(all, 0, 2000, &base), 0);
	dir = build("phnsw", base, 8, CV_METRIC_L2);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	assert_int_equal(cv_device_new("nvme", 7, &dev, &e), 0);
	for (size_t si = 0; si < sizeof(strats) / sizeof(strats[0]); si++) {
		cv_io_opts o;
		cv_io *io = NULL;
		uint64_t t_serial = 0, t_fan = 0;

		cv_io_opts_default(&o);
		o.strategy = strats[si];
		o.device = dev;
		assert_int_equal(cv_io_new(&o, &io), 0);
		for (size_t qi = 2000; qi < 2004; qi++) {
			const float *q = cv_row(all, qi);
			cv_io_stats a;
			uint64_t t0, t1, t2;
			res s, f;

			t0 = now_ns();
			query(ix, io, q, CV_MODE_SERIAL, 1, CV_MERGE_STREAM, 40, &s);
			t1 = now_ns();
			cv_io_stats_reset(io);
			query(ix, io, q, CV_MODE_FANOUT, 8, CV_MERGE_STREAM, 40, &f);
			t2 = now_ns();
			cv_io_stats_get(io, &a);
			assert_int_equal(s.st.fanout_via, CV_FANOUT_NONE);
			assert_int_equal(f.st.fanout_via, CV_FANOUT_THREADS);
			assert_string_equal(cv_fanout_via_name(f.st.fanout_via), "threads");
			assert_int_equal(s.n, f.n);
			assert_memory_equal(s.ids, f.ids, sizeof(s.ids));
			assert_memory_equal(s.d, f.d, sizeof(s.d));
			assert_int_equal(s.st.reads, f.st.reads);
			/* the readers' counters are folded into the caller's context */
			assert_int_equal(a.reads, f.st.reads);
			/* concurrent, and never more than the fan-out */
			assert_true(a.inflight_max >= 2);
			assert_true(a.inflight_max <= 8);
			assert_true(cv_hist_mean(&a.inflight) > 1.0);
			t_serial += t1 - t0;
			t_fan += t2 - t1;
		}
		/* 8 chains of modelled reads overlap: faster than serial over the queries */
		assert_true(t_fan < t_serial);
		cv_io_free(io);
	}
	cv_device_free(dev);
	cv_index_close(ix);
	rm_index(dir);
	free(dir);
	cv_dataset_free(base);
	cv_dataset_free(all);
}

/* ---- a session's reader pool ---- */

typedef struct team_seen {
	pthread_t who[6];
	atomic_int ran;
	atomic_int arrived;   /* members that reached the meeting point */
	atomic_int together;  /* members that saw all 6 there at once */
} team_seen;

/* A member notes its thread and waits (up to 10 s) until all 6 are running at once. */
static void team_note(void *ctx, unsigned w)
{
	team_seen *t = ctx;
	uint64_t t0 = now_ns();

	t->who[w] = pthread_self();
	atomic_fetch_add(&t->ran, 1);
	atomic_fetch_add(&t->arrived, 1);
	while (atomic_load(&t->arrived) < 6 && now_ns() - t0 < 10000000000ull)
		sched_yield();
	if (atomic_load(&t->arrived) >= 6)
		atomic_fetch_add(&t->together, 1);
}

/* cv_pool_team: w = 0 on the caller, every other on a thread of its own, kept for the next team. */
static void test_pool_team(void **state)
{
	team_seen a = {0}, b = {0};
	cv_pool_counts pc;
	cv_pool *p = NULL;

	(void) state;
	assert_int_equal(cv_pool_new(CV_POOL_MAX_THREADS + 1, &p), -EINVAL);
	assert_null(p);
	assert_int_equal(cv_pool_new(0, &p), 0);
	atomic_init(&a.ran, 0);
	atomic_init(&b.ran, 0);
	atomic_init(&a.arrived, 0);
	atomic_init(&b.arrived, 0);
	atomic_init(&a.together, 0);
	atomic_init(&b.together, 0);
	assert_int_equal(cv_pool_team(p, 6, team_note, &a), 0);
	assert_int_equal(atomic_load(&a.ran), 6);
	/* the members ran together (a fan-out's readers overlap), so on 6 threads */
	assert_int_equal(atomic_load(&a.together), 6);
	assert_true(pthread_equal(a.who[0], pthread_self()));
	for (int i = 1; i < 6; i++)
		for (int j = 0; j < i; j++)
			assert_false(pthread_equal(a.who[i], a.who[j]));
	assert_int_equal(cv_pool_team(p, 6, team_note, &b), 0);
	assert_int_equal(atomic_load(&b.together), 6);
	cv_pool_stats(p, &pc);
	/* the second team ran on the first one's threads: none started for it */
	assert_int_equal(pc.threads, 5);
	assert_int_equal(pc.teams, 2);
	assert_int_equal(pc.tasks, 10);
	for (int i = 1; i < 6; i++) {
		int found = 0;

		for (int j = 1; j < 6; j++)
			found |= pthread_equal(b.who[i], a.who[j]);
		assert_true(found);
	}
	/* a team of one runs on the caller alone */
	atomic_store(&b.arrived, 5);
	assert_int_equal(cv_pool_team(p, 1, team_note, &b), 0);
	assert_true(pthread_equal(b.who[0], pthread_self()));
	cv_pool_stats(p, &pc);
	assert_int_equal(pc.teams, 2);
	cv_pool_free(p);
	cv_pool_free(NULL);
}

static void query_on(cv_index *ix, cv_io *io, const float *q, unsigned fan, cv_pool *pool, int want,
		     res *r)
{
	cv_query_opts qo;

	cv_query_opts_default(&qo);
	qo.k = 10;
	qo.ef_search = 40;
	qo.mode = CV_MODE_FANOUT;
	qo.fanout = fan;
	qo.pool = pool;
	memset(r, 0, sizeof(*r));
	cv_index_drop_buffers(ix);
	assert_int_equal(cv_index_query(ix, io, q, &qo, r->ids, r->d, &r->n, &r->st), want);
}

static void assert_same(const res *a, const res *b)
{
	assert_int_equal(a->n, b->n);
	assert_memory_equal(a->ids, b->ids, sizeof(a->ids));
	assert_memory_equal(a->d, b->d, sizeof(a->d));
	assert_int_equal(a->st.reads, b->st.reads);
	assert_int_equal(a->st.bytes, b->st.bytes);
	assert_int_equal(a->st.buffer_hits, b->st.buffer_hits);
	assert_int_equal(a->st.heap_reads, b->st.heap_reads);
	assert_int_equal(a->st.distances, b->st.distances);
	assert_int_equal(a->st.fanout_via, b->st.fanout_via);
}

typedef struct joins {
	atomic_int calls;
	int rc;
} joins;

static int join_count(void *ctx)
{
	joins *j = ctx;

	atomic_fetch_add(&j->calls, 1);
	return j->rc;
}

typedef struct pool_client {
	cv_index *ix;
	cv_pool *pool;
	const cv_dataset *all;
	const res *want;   /* the thread-per-reader answers, query by query */
	size_t q0, nq;
	int bad;
} pool_client;

/* A querying thread of its own (a run's client): its answers against the thread-per-reader ones. */
static void *pool_client_main(void *arg)
{
	pool_client *c = arg;
	cv_io_opts o;
	cv_io *io = NULL;
	cv_query_opts qo;

	cv_io_opts_default(&o);
	o.strategy = CV_IO_PREAD;
	if (cv_io_new(&o, &io)) {
		c->bad = 1;
		return NULL;
	}
	cv_query_opts_default(&qo);
	qo.k = 10;
	qo.ef_search = 40;
	qo.mode = CV_MODE_FANOUT;
	qo.fanout = 8;
	qo.pool = c->pool;
	for (size_t i = 0; i < c->nq; i++) {
		res r = {0};

		/* the buffer pool is shared and not dropped: answers (not counters) are compared */
		if (cv_index_query(c->ix, io, cv_row(c->all, c->q0 + i), &qo, r.ids, r.d, &r.n, &r.st) ||
		    r.n != c->want[i].n || memcmp(r.ids, c->want[i].ids, sizeof(r.ids)) ||
		    memcmp(r.d, c->want[i].d, sizeof(r.d)))
			c->bad = 1;
	}
	cv_io_free(io);
	return NULL;
}

static void test_fanout_pool(void **state)
{
	static const cv_io_strategy strats[] = {CV_IO_PREAD, CV_IO_DIRECT, CV_IO_MMAP, CV_IO_URING};
	enum { NQ = 12 };
	cv_dataset *all = NULL, *base = NULL;
	cv_err e = {{0}};
	cv_index *ix = NULL;
	cv_pool *pool = NULL;
	cv_pool_counts pc;
	res want[NQ];
	uint64_t teams = 0;
	joins j;
	char *dir;

	(void) state;
	assert_int_equal(cv_dataset_load("synth:n=2030,d=16,clusters=8,seed=11", &all, &e), 0);
	assert_int_equal(cv_dataset_slice(all, 0, 2000, &base), 0);
	dir = build("phnsw", base, 8, CV_METRIC_L2);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	assert_int_equal(cv_pool_new(0, &pool), 0);
	for (size_t si = 0; si < sizeof(strats) / sizeof(strats[0]); si++) {
		cv_io *io = new_io(strats[si]);

		/* uring: three drivers, two of them helpers on the pool */
		if (strats[si] == CV_IO_URING)
			setenv("COLDSTUDY_FANOUT_THREADS", "3", 1);
		for (size_t qi = 0; qi < NQ; qi++) {
			const float *q = cv_row(all, 2000 + qi);
			res t, p;
			cv_io_stats b, a;

			query_on(ix, io, q, 8, NULL, 0, &t);
			cv_io_stats_get(io, &b);
			query_on(ix, io, q, 8, pool, 0, &p);
			cv_io_stats_get(io, &a);
			assert_same(&t, &p);
			/* every pooled reader's reads are folded into the caller's context */
			assert_int_equal(a.reads - b.reads, p.st.reads);
			assert_true(p.st.reads > 8);
			teams++;
			want[qi] = t;
		}
		unsetenv("COLDSTUDY_FANOUT_THREADS");
		cv_io_free(io);
	}
	cv_pool_stats(pool, &pc);
	/* 4 x 12 fan-outs of 8 readers (uring: 3 drivers): 7 threads for the session, not 7 a query */
	assert_int_equal(pc.threads, 7);
	assert_int_equal(pc.teams, teams);

	/* two querying threads at once on the one pool: each team still has threads of its own */
	{
		pool_client c[2] = {{.ix = ix, .pool = pool, .all = all, .want = want, .q0 = 2000, .nq = NQ},
				    {.ix = ix, .pool = pool, .all = all, .want = want, .q0 = 2000, .nq = NQ}};
		pthread_t th[2];

		cv_index_drop_buffers(ix);
		for (int i = 0; i < 2; i++)
			assert_int_equal(pthread_create(&th[i], NULL, pool_client_main, &c[i]), 0);
		for (int i = 0; i < 2; i++) {
			pthread_join(th[i], NULL);
			assert_int_equal(c[i].bad, 0);
		}
		cv_pool_stats(pool, &pc);
		assert_true(pc.threads >= 7 && pc.threads <= 14);
	}

	/* the join: once a thread, before its next task, whenever the thread started */
	{
		cv_io *io = new_io(CV_IO_PREAD);
		unsigned before;
		res r;

		atomic_init(&j.calls, 0);
		j.rc = 0;
		cv_pool_stats(pool, &pc);
		before = pc.threads;
		cv_pool_set_join(pool, join_count, &j);
		assert_int_equal(atomic_load(&j.calls), 0);
		query_on(ix, io, cv_row(all, 2000), 8, pool, 0, &r);
		assert_true(atomic_load(&j.calls) >= 1 && atomic_load(&j.calls) <= 7);
		for (int k = 0; k < 20; k++)
			query_on(ix, io, cv_row(all, 2001 + k % 20), 8, pool, 0, &r);
		cv_pool_stats(pool, &pc);
		assert_int_equal(pc.threads, before);
		/* every thread that took a task joined exactly once, however many tasks it took */
		assert_true(atomic_load(&j.calls) <= (int) before);
		/* a join that fails: the task does not run and the query fails with it */
		j.rc = -EPERM;
		cv_pool_set_join(pool, join_count, &j);
		query_on(ix, io, cv_row(all, 2000), 8, pool, -EPERM, &r);
		/* no join: queries run again */
		cv_pool_set_join(pool, NULL, NULL);
		query_on(ix, io, cv_row(all, 2000), 8, pool, 0, &r);
		assert_memory_equal(r.ids, want[0].ids, sizeof(r.ids));
		cv_io_free(io);
	}
	cv_pool_free(pool);
	cv_index_close(ix);
	rm_index(dir);
	free(dir);
	cv_dataset_free(base);
	cv_dataset_free(all);
}

/* ---- at most ef_search elements per scan ---- */

static void test_ef_cap(void **state)
{
	cv_dataset *d = NULL;
	cv_err e = {{0}};
	cv_index *ix = NULL;
	cv_io *io = new_io(CV_IO_PREAD);
	cv_query_opts qo;
	uint32_t ids[100];
	float dd[100];
	size_t n = 0;
	char *dir;

	(void) state;
	assert_int_equal(cv_dataset_load("synth:n=1000,d=8,clusters=4,seed=9", &d, &e), 0);
	dir = build("paged", d, 1, CV_METRIC_L2);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	cv_query_opts_default(&qo);
	qo.k = 100;
	qo.ef_search = 20;
	assert_int_equal(cv_index_query(ix, io, cv_row(d, 3), &qo, ids, dd, &n, NULL), 0);
	assert_int_equal(n, 20);
	assert_int_equal(ids[0], 3);
	qo.ef_search = 0;
	assert_int_equal(cv_index_query(ix, io, cv_row(d, 3), &qo, ids, dd, &n, NULL), -EINVAL);
	cv_index_close(ix);
	cv_io_free(io);
	rm_index(dir);
	free(dir);
	cv_dataset_free(d);
}

/* ---- near-tie ---- */

/*
 * Find q, a, b (dim 64) where the index's float32 distance says a < b but
 * the executor's double distance says b < a. Cosine makes it natural: the
 * index ranks normalized float vectors by a float dot product.
 */
static void find_tie(float *q, float *a, float *b, size_t d)
{
	uint64_t s = 12345;

	for (int tries = 0; tries < 200000; tries++) {
		float qn[64], an[64], bn[64];

		for (size_t i = 0; i < d; i++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			q[i] = (float) ((s >> 33) % 1000) / 1000.0f;
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			a[i] = (float) ((s >> 33) % 1000) / 1000.0f;
			b[i] = a[i];
		}
		/* b: a with two coordinates nudged so the distances nearly tie */
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		b[(s >> 33) % d] += 1e-6f;
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		b[(s >> 33) % d] -= 1e-6f;
		paged_normalize(q, qn, d);
		paged_normalize(a, an, d);
		paged_normalize(b, bn, d);
		if (paged_index_distance(CV_METRIC_COSINE, qn, an, d) <
			    paged_index_distance(CV_METRIC_COSINE, qn, bn, d) &&
		    paged_exec_distance(CV_METRIC_COSINE, q, b, d) <
			    paged_exec_distance(CV_METRIC_COSINE, q, a, d))
			return;
	}
	fail_msg("no near-tie found");
}

static void test_near_tie(void **state)
{
	enum { D = 64, N = 400, P = 4 };
	cv_dataset *ds = NULL;
	cv_err e = {{0}};
	cv_index *ix = NULL;
	cv_io *io = new_io(CV_IO_PREAD);
	float q[D], a[D], b[D];
	uint32_t ia = UINT32_MAX, ib = UINT32_MAX;
	uint64_t s = 99;
	res st, so;
	char *dir;
	size_t pa = SIZE_MAX, pb = SIZE_MAX;

	(void) state;
	find_tie(q, a, b, D);
	/* a and b go to rows that hash to the same partition; the rest are far away */
	for (uint32_t i = 0; i < N && ib == UINT32_MAX; i++)
		for (uint32_t j = i + 1; j < N; j++)
			if (phnsw_partition_of(i, P) == phnsw_partition_of(j, P)) {
				ia = i;
				ib = j;
				break;
			}
	assert_int_equal(cv_dataset_load("synth:n=400,d=64,clusters=4,seed=3", &ds, &e), 0);
	for (size_t i = 0; i < N; i++)
		for (size_t k = 0; k < D; k++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			ds->data[i * D + k] = (float) ((s >> 33) % 1000) / 1000.0f - (k % 2 ? 0.9f : 0.0f);
		}
	memcpy(ds->data + (size_t) ia * D, a, sizeof(a));
	memcpy(ds->data + (size_t) ib * D, b, sizeof(b));
	dir = build("phnsw", ds, P, CV_METRIC_COSINE);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	query(ix, io, q, CV_MODE_SERIAL, 1, CV_MERGE_STREAM, 40, &st);
	query(ix, io, q, CV_MODE_SERIAL, 1, CV_MERGE_SORT, 40, &so);
	for (size_t j = 0; j < st.n; j++) {
		if (st.ids[j] == ia && pa == SIZE_MAX)
			pa = j;
		if (st.ids[j] == ib && pb == SIZE_MAX)
			pb = j;
	}
	/* stream: the partition's order (a first, though b is nearer in double) */
	assert_true(pa < st.n && pb < st.n);
	assert_true(pa < pb);
	assert_true(st.d[pa] >= st.d[pb]);
	/* sort: the true order, b before a */
	pa = pb = SIZE_MAX;
	for (size_t j = 0; j < so.n; j++) {
		if (so.ids[j] == ia)
			pa = j;
		if (so.ids[j] == ib)
			pb = j;
	}
	assert_true(pa < so.n && pb < so.n);
	assert_true(pb < pa);
	cv_index_close(ix);
	cv_io_free(io);
	rm_index(dir);
	free(dir);
	cv_dataset_free(ds);
}

/* ---- corruption ---- */

static void test_corrupt(void **state)
{
	cv_dataset *d = NULL;
	cv_err e = {{0}};
	cv_index *ix = NULL;
	cv_io *io = new_io(CV_IO_PREAD);
	char *dir, path[600];
	uint32_t ids[10];
	float dd[10];
	size_t n;
	uint8_t byte;
	int fd;

	(void) state;
	assert_int_equal(cv_dataset_load("synth:n=500,d=16,clusters=4,seed=2", &d, &e), 0);
	dir = build("paged", d, 1, CV_METRIC_L2);
	assert_int_equal(cv_index_verify(dir, &e), 0);
	/* damage the meta page, which every query reads */
	snprintf(path, sizeof(path), "%s/part-000", dir);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &byte, 1, 100), 1);
	byte ^= 0x40;
	assert_int_equal(pwrite(fd, &byte, 1, 100), 1);
	close(fd);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	assert_int_equal(cv_index_query(ix, io, cv_row(d, 0), NULL, ids, dd, &n, NULL), -EBADMSG);
	cv_index_close(ix);
	assert_int_equal(cv_index_verify(dir, &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "block 0"));
	/* repair, then damage a heap page */
	fd = open(path, O_RDWR);
	byte ^= 0x40;
	assert_int_equal(pwrite(fd, &byte, 1, 100), 1);
	close(fd);
	assert_int_equal(cv_index_verify(dir, &e), 0);
	snprintf(path, sizeof(path), "%s/heap", dir);
	fd = open(path, O_RDWR);
	assert_int_equal(pwrite(fd, "X", 1, 5000), 1);
	close(fd);
	assert_int_equal(cv_index_verify(dir, &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "heap"));
	cv_io_free(io);
	rm_index(dir);
	free(dir);
	cv_dataset_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page),      cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_checksum_simd),
		cmocka_unit_test(test_bufpool),   cmocka_unit_test(test_layout),
		cmocka_unit_test(test_modes),     cmocka_unit_test(test_fanout_threads),
		cmocka_unit_test(test_pool_team), cmocka_unit_test(test_fanout_pool),
		cmocka_unit_test(test_ef_cap),
		cmocka_unit_test(test_near_tie),  cmocka_unit_test(test_corrupt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
