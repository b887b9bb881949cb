/*
 * test_reader.c - every strategy returns the same bytes for the same
 * reads (aligned and not), counts exactly the reads issued, and the
 * histogram's quantiles are right on known inputs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io_int.h"

#define FILE_SIZE (2u * 1024 * 1024 + 1234) /* not a multiple of 4096 on purpose */

static char path[64];

static uint8_t pattern(uint64_t off)
{
	return (uint8_t) ((off * 2654435761u) >> 13);
}

static void remove_file(void)
{
	if (path[0])
		unlink(path);
}

static int make_file(void **state)
{
	int fd;
	uint8_t *buf = malloc(FILE_SIZE);

	(void) state;
	snprintf(path, sizeof(path), "/tmp/cvio-reader-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || !buf)
		return -1;
	atexit(remove_file);
	for (uint64_t i = 0; i < FILE_SIZE; i++)
		buf[i] = pattern(i);
	if (write(fd, buf, FILE_SIZE) != FILE_SIZE)
		return -1;
	fsync(fd);
	close(fd);
	free(buf);
	return 0;
}

static int drop_file(void **state)
{
	(void) state;
	remove_file();
	path[0] = 0;
	return 0;
}

static const struct {
	uint64_t off;
	uint32_t len;
} cases[] = {
	{ 0, 4096 },        { 8192, 8192 },   { 1, 1 },          { 4095, 2 },
	{ 12345, 3000 },    { 65536 - 7, 9000 }, { 1000000, 16384 }, { 77, 4096 },
	{ FILE_SIZE - 10, 10 }, { FILE_SIZE - 5000, 5000 }, { 4096 * 100, 4096 * 3 },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static int check_bytes(const uint8_t *b, uint64_t off, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (b[i] != pattern(off + i))
			return -1;
	return 0;
}

/* Open an io or skip when the machine lacks the strategy. */
static cv_io *open_io(cv_io_strategy st, unsigned qd, cv_file *f)
{
	cv_io_opts o;
	cv_io *io = NULL;
	int rc;

	if ((st == CV_IO_DIRECT || st == CV_IO_URING) && f->fd_direct < 0)
		return NULL;
	cv_io_opts_default(&o);
	o.strategy = st;
	o.queue_depth = qd;
	rc = cv_io_new(&o, &io);
	if (rc)
		return NULL;
	return io;
}

static void strategy_reads(cv_io_strategy st)
{
	cv_file *f;
	cv_io *io;
	cv_io_stats s;
	uint64_t bytes = 0;
	uint8_t *buf = malloc(65536 + 1);

	assert_non_null(buf);
	assert_int_equal(cv_file_open(path, 0, &f), 0);
	assert_int_equal(cv_file_size(f), FILE_SIZE);
	io = open_io(st, 8, f);
	if (!io) {
		cv_file_close(f);
		free(buf);
		skip();
	}
	for (size_t i = 0; i < NCASES; i++) {
		/* an unaligned destination too */
		uint8_t *dst = buf + (i & 1);

		memset(dst, 0xee, cases[i].len);
		assert_int_equal(cv_io_read(io, f, cases[i].off, cases[i].len, dst), 0);
		assert_int_equal(check_bytes(dst, cases[i].off, cases[i].len), 0);
		bytes += cases[i].len;
	}
	/* past the end is a short read: -EIO, counted as a read, no bytes */
	assert_int_equal(cv_io_read(io, f, FILE_SIZE - 10, 20, buf), -EIO);
	cv_io_stats_get(io, &s);
	assert_int_equal(s.reads, NCASES + 1);
	assert_int_equal(s.bytes, bytes);
	assert_int_equal(s.lat_ns.count, NCASES + 1);
	assert_true(s.inflight_max >= 1);
	cv_io_free(io);
	cv_file_close(f);
	free(buf);
}

/*
 * Views (mmap, no buffer): the same bytes as a copy, without one (the
 * pointer is into the mapping), counted and timed as reads; in a batch
 * too; past the end -EIO; and refused by a strategy that must copy.
 * Prefetch hints are not reads, whatever their range or strategy.
 */
static void test_views(void **state)
{
	cv_file *f;
	cv_io *io, *io2;
	cv_io_stats s;
	uint64_t bytes = 0;
	const void *d;
	cv_read_req r[3];
	uint8_t buf[16];

	(void) state;
	assert_int_equal(cv_file_open(path, 0, &f), 0);
	io = open_io(CV_IO_MMAP, 8, f);
	assert_non_null(io);
	assert_true(cv_io_views(io));
	for (size_t i = 0; i < NCASES; i++) {
		assert_int_equal(cv_io_view(io, f, cases[i].off, cases[i].len, &d), 0);
		assert_non_null(d);
		assert_int_equal(check_bytes(d, cases[i].off, cases[i].len), 0);
		bytes += cases[i].len;
	}
	for (int i = 0; i < 3; i++)
		r[i] = (cv_read_req){.file = f, .off = 4096u * (uint64_t) (7 + 5 * i) + (uint64_t) i,
				     .len = 5000, .buf = NULL};
	assert_int_equal(cv_io_read_batch(io, r, 3), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(r[i].res, 0);
		assert_int_equal(check_bytes(r[i].data, r[i].off, r[i].len), 0);
		bytes += r[i].len;
	}
	/* a read with a buffer still copies, and data names the buffer */
	r[0].buf = buf;
	r[0].len = sizeof(buf);
	assert_int_equal(cv_io_read_batch(io, r, 1), 0);
	assert_ptr_equal(r[0].data, buf);
	assert_int_equal(check_bytes(buf, r[0].off, sizeof(buf)), 0);
	bytes += sizeof(buf);
	assert_int_equal(cv_io_view(io, f, FILE_SIZE - 10, 20, &d), -EIO);
	assert_null(d);
	/* prefetch hints, in range and past the end, are no reads */
	cv_io_view_prefetch(io, f, 0, FILE_SIZE);
	cv_io_view_prefetch(io, f, FILE_SIZE - 10, 20);
	cv_io_view_prefetch(io, f, UINT64_MAX - 5, 100);
	cv_io_stats_get(io, &s);
	assert_int_equal(s.reads, NCASES + 3 + 1 + 1);
	assert_int_equal(s.bytes, bytes);
	io2 = open_io(CV_IO_PREAD, 8, f);
	assert_non_null(io2);
	assert_false(cv_io_views(io2));
	assert_int_equal(cv_io_view(io2, f, 0, 10, &d), -EINVAL);
	cv_io_view_prefetch(io2, f, 0, FILE_SIZE);
	cv_io_stats_get(io2, &s);
	assert_int_equal(s.reads, 0);
	r[0].buf = NULL;
	assert_int_equal(cv_io_read_batch(io2, r, 1), -EINVAL);
	cv_io_free(io2);
	cv_io_free(io);
	cv_file_close(f);
}

/* Whether every page of [off, off + len) of f is resident: cachestat, else mincore on the mapping. */
static int all_resident(cv_file *f, uint64_t off, uint32_t len)
{
	unsigned char vec[8];
	uint64_t a = off & ~(uint64_t) 4095, n = (off + len - a + 4095) / 4096;

	assert_true(n <= sizeof(vec));
	assert_int_equal(mincore((char *) f->map + a, n * 4096, vec), 0);
	for (uint64_t i = 0; i < n; i++)
		if (!(vec[i] & 1))
			return 0;
	return 1;
}

/* One read flagged CV_READ_VIEW with a buffer; 1 when it came back as a view, 0 as a copy. */
static int auto_read(cv_io *io, cv_file *f, uint64_t off, uint32_t len, uint8_t *buf)
{
	cv_read_req r = {.file = f, .off = off, .len = len, .buf = buf, .flags = CV_READ_VIEW};

	memset(buf, 0xee, len);
	assert_int_equal(cv_io_read_batch(io, &r, 1), 0);
	assert_int_equal(check_bytes(r.data, off, len), 0);
	if (r.data == buf)
		return 0;
	assert_ptr_equal(r.data, (const char *) f->map + off);
	assert_int_equal(buf[0], 0xee); /* a view copies nothing */
	return 1;
}

/*
 * auto: a flagged read of resident pages is a view, of pages the cache
 * lacks a pread into the buffer (so a cold read is one read, not page
 * faults); an unflagged read always a copy; every one counted. After
 * cv_file_release_pages the file can be evicted whole (no page left
 * mapped) and auto forgets what it had seen: the next read is a pread
 * again. A caller mincore would lie to (not the owner, no write
 * permission) never gets a view.
 */
static void test_auto(void **state)
{
	cv_file *f;
	cv_io *io;
	cv_io_stats s;
	cv_residency res;
	uint8_t *buf = malloc(3 * 4096 + 100);
	const uint64_t off = 4096 * 40 + 123;
	const uint32_t len = 2 * 4096 + 50; /* three pages */
	int views = 0;

	(void) state;
	assert_non_null(buf);
	assert_int_equal(cv_file_open(path, 0, &f), 0);
	io = open_io(CV_IO_AUTO, 8, f);
	assert_non_null(io);
	assert_int_equal(cv_io_views(io), 2);
	assert_true(cv_file_incore_ok(f)); /* the test made the file: its owner */
	{
		const void *d;

		assert_int_equal(cv_io_view(io, f, 0, 10, &d), -EINVAL); /* no buffer: not auto */
	}
	cv_file_release_pages(f);
	if (cv_cache_evict(path) || cv_cache_residency(path, &res) || res.resident) {
		cv_io_free(io);
		cv_file_close(f);
		free(buf);
		skip(); /* a file system whose pages cannot be evicted (tmpfs) */
	}
	assert_false(all_resident(f, off, len));
	views += auto_read(io, f, off, len, buf);
	assert_int_equal(views, 0); /* cold: a pread into the buffer */
	assert_true(all_resident(f, off, len));
	views += auto_read(io, f, off, len, buf);
	assert_int_equal(views, 1); /* now resident: a view */
	views += auto_read(io, f, off + 1, len - 1, buf);
	assert_int_equal(views, 2); /* known resident (seen): a view without asking */
	{
		cv_read_req r = {.file = f, .off = off, .len = len, .buf = buf};

		assert_int_equal(cv_io_read_batch(io, &r, 1), 0);
		assert_ptr_equal(r.data, buf); /* not flagged: a copy */
	}
	/* released, evicted, cold: every page can go, and the next read is a pread */
	cv_file_release_pages(f);
	assert_int_equal(cv_cache_evict(path), 0);
	assert_int_equal(cv_cache_residency(path, &res), 0);
	assert_int_equal(res.resident, 0);
	views += auto_read(io, f, off, len, buf);
	assert_int_equal(views, 2);
	/* a page with a mapping is not evicted: release_pages is what frees it */
	views += auto_read(io, f, off, len, buf);
	assert_int_equal(views, 3);
	assert_int_equal(cv_cache_evict(path), 0);
	assert_true(all_resident(f, off, len));
	cv_io_stats_get(io, &s);
	assert_int_equal(s.reads, 6);
	assert_int_equal(s.bytes, 6 * (uint64_t) len - 1);
	cv_io_free(io);
	cv_file_close(f);

	/* a caller the kernel hides residency from: no view, ever */
	if (geteuid() == 0 && chmod(path, 0644) == 0) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			cv_file *g;
			cv_io *jo;
			int bad = 0;

			if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
				_exit(77);
			if (cv_file_open(path, 0, &g))
				_exit(3);
			jo = open_io(CV_IO_AUTO, 8, g);
			bad |= !jo || cv_file_incore_ok(g);
			for (int i = 0; jo && i < 3; i++) {
				cv_read_req r = {.file = g, .off = off, .len = len, .buf = buf,
						 .flags = CV_READ_VIEW};

				bad |= cv_io_read_batch(jo, &r, 1) || r.data != buf ||
				       check_bytes(buf, off, len);
			}
			cv_io_free(jo);
			cv_file_close(g);
			_exit(bad ? 1 : 0);
		} else {
			int st = 0;

			assert_int_equal(waitpid(pid, &st, 0), pid);
			assert_true(WIFEXITED(st));
			assert_true(WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 77);
		}
	}
	free(buf);
}

static void test_mmap(void **state) { (void) state; strategy_reads(CV_IO_MMAP); }
static void test_auto_plain(void **state) { (void) state; strategy_reads(CV_IO_AUTO); }
static void test_pread(void **state) { (void) state; strategy_reads(CV_IO_PREAD); }
static void test_direct(void **state) { (void) state; strategy_reads(CV_IO_DIRECT); }
static void test_uring(void **state) { (void) state; strategy_reads(CV_IO_URING); }

/* A batch in flight together: all bytes right, counters exact, in-flight > 1 for uring. */
static void batch_reads(cv_io_strategy st)
{
	cv_file *f;
	cv_io *io;
	cv_io_stats s;
	cv_read_req reqs[NCASES * 2];
	uint8_t *bufs[NCASES * 2];
	uint64_t bytes = 0;

	assert_int_equal(cv_file_open(path, 0, &f), 0);
	io = open_io(st, 4, f); /* fewer slots than reads: refills */
	if (!io) {
		cv_file_close(f);
		skip();
	}
	for (size_t i = 0; i < NCASES * 2; i++) {
		size_t c = i % NCASES;

		bufs[i] = malloc(cases[c].len + 1);
		assert_non_null(bufs[i]);
		reqs[i] = (cv_read_req) { .file = f, .off = cases[c].off, .len = cases[c].len,
					  .buf = bufs[i] + (i & 1) };
		bytes += cases[c].len;
	}
	assert_int_equal(cv_io_read_batch(io, reqs, NCASES * 2), 0);
	for (size_t i = 0; i < NCASES * 2; i++) {
		assert_int_equal(reqs[i].res, 0);
		assert_int_equal(check_bytes(reqs[i].buf, reqs[i].off, reqs[i].len), 0);
		free(bufs[i]);
	}
	cv_io_stats_get(io, &s);
	assert_int_equal(s.reads, NCASES * 2);
	assert_int_equal(s.bytes, bytes);
	assert_int_equal(s.inflight.count, NCASES * 2);
	if (st == CV_IO_URING) {
		assert_true(s.inflight_max > 1);
		assert_true(s.inflight_max <= 4);
	} else {
		assert_int_equal(s.inflight_max, 1);
	}
	cv_io_free(io);
	cv_file_close(f);
}

static void test_batch_pread(void **state) { (void) state; batch_reads(CV_IO_PREAD); }
static void test_batch_uring(void **state) { (void) state; batch_reads(CV_IO_URING); }

/* Asynchronous submit/reap with a trace: every read traced with its stream and batch. */
static void test_async_trace(void **state)
{
	cv_file *f;
	cv_io *io;
	cv_trace *t;
	cv_io_opts o;
	cv_read_req reqs[16], *done[16];
	uint8_t *buf;
	size_t got = 0;

	(void) state;
	assert_int_equal(cv_file_open(path, 0, &f), 0);
	if (f->fd_direct < 0) {
		cv_file_close(f);
		skip();
	}
	assert_int_equal(cv_trace_new(100, &t), 0);
	cv_io_opts_default(&o);
	o.strategy = CV_IO_URING;
	o.queue_depth = 16;
	o.trace = t;
	if (cv_io_new(&o, &io)) {
		cv_trace_free(t);
		cv_file_close(f);
		skip();
	}
	buf = cv_alloc_aligned(16 * 8192);
	assert_non_null(buf);
	for (int i = 0; i < 16; i++) {
		reqs[i] = (cv_read_req) { .file = f, .off = (uint64_t) i * 8192 * 7, .len = 8192,
					  .buf = buf + i * 8192, .stream = (uint32_t) (i % 4),
					  .batch = (uint32_t) (i / 4) };
		assert_int_equal(cv_io_submit(io, &reqs[i]), 0);
	}
	assert_int_equal(cv_io_inflight(io), 16);
	while (got < 16) {
		int n = cv_io_reap(io, done, 16, 1);

		assert_true(n >= 1);
		got += (size_t) n;
	}
	for (int i = 0; i < 16; i++) {
		assert_int_equal(reqs[i].res, 0);
		assert_int_equal(check_bytes(reqs[i].buf, reqs[i].off, 8192), 0);
	}
	assert_int_equal(cv_trace_len(t), 16);
	assert_int_equal(cv_trace_nfiles(t), 1);
	assert_string_equal(cv_trace_file_path(t, 0), path);
	for (size_t i = 0; i < 16; i++) {
		const cv_trace_rec *r = &cv_trace_recs(t)[i];

		assert_int_equal(r->stream, (r->off / (8192 * 7)) % 4);
		assert_int_equal(r->batch, (r->off / (8192 * 7)) / 4);
		assert_true(r->complete_ns >= r->submit_ns);
		assert_int_equal(r->file, 0);
	}
	cv_io_free(io);
	cv_trace_free(t);
	cv_file_close(f);
	free(buf);
}

/* Quantiles on known inputs: within the 6.25% the bucket layout promises. */
static void test_hist(void **state)
{
	cv_hist h;

	(void) state;
	memset(&h, 0, sizeof(h));
	assert_true(cv_hist_quantile(&h, 0.5) == 0);
	/* 1..1000 us uniformly: p50 500 us, p99 990 us, mean 500.5 us */
	for (uint64_t v = 1; v <= 1000; v++)
		cv_hist_add(&h, v * 1000);
	assert_true(cv_hist_mean(&h) == 500500.0);
	assert_true(h.max == 1000000);
	assert_true(cv_hist_quantile(&h, 0.5) > 500000 * 0.9375 &&
		    cv_hist_quantile(&h, 0.5) < 500000 * 1.0625);
	assert_true(cv_hist_quantile(&h, 0.99) > 990000 * 0.9375 &&
		    cv_hist_quantile(&h, 0.99) <= 1000000);
	assert_true(cv_hist_quantile(&h, 1.0) == 1000000);
	/* small integers are exact (reads in flight) */
	memset(&h, 0, sizeof(h));
	for (int i = 0; i < 10; i++)
		cv_hist_add(&h, 3);
	for (int i = 0; i < 11; i++)
		cv_hist_add(&h, 7);
	assert_true(cv_hist_quantile(&h, 0.5) == 7);
	assert_true(cv_hist_quantile(&h, 0.4) == 3);
	/* 10 s lands in range; 100 s is clamped to max */
	memset(&h, 0, sizeof(h));
	cv_hist_add(&h, 10000000000ull);
	assert_true(fabs(cv_hist_quantile(&h, 0.5) - 1e10) < 1e10 * 0.0625);
	cv_hist_add(&h, 100000000000ull);
	assert_true(cv_hist_quantile(&h, 1.0) == 1e11);
	/* merge adds */
	{
		cv_hist a, b;

		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		cv_hist_add(&a, 5000);
		cv_hist_add(&b, 7000);
		cv_hist_merge(&a, &b);
		assert_int_equal(a.count, 2);
		assert_int_equal(a.sum, 12000);
		assert_int_equal(a.max, 7000);
	}
}

static void test_strategy_names(void **state)
{
	cv_io_strategy s;

	(void) state;
	for (int i = 0; i <= CV_IO_AUTO; i++) {
		assert_int_equal(cv_io_strategy_parse(cv_io_strategy_name((cv_io_strategy) i), &s), 0);
		assert_int_equal((int) s, i);
	}
	assert_int_equal(cv_io_strategy_parse("mmapx", &s), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mmap),        cmocka_unit_test(test_pread),
		cmocka_unit_test(test_direct),      cmocka_unit_test(test_uring),
		cmocka_unit_test(test_batch_pread), cmocka_unit_test(test_batch_uring),
		cmocka_unit_test(test_async_trace), cmocka_unit_test(test_hist),
		cmocka_unit_test(test_strategy_names), cmocka_unit_test(test_views),
		cmocka_unit_test(test_auto),        cmocka_unit_test(test_auto_plain),
	};

	return cmocka_run_group_tests(tests, make_file, drop_file);
}
