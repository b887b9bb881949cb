/*
 * test_cache.c - eviction really empties the page cache (residency 0.0 on
 * a real file) and reading fills it (> 0); mincore without write
 * permission is refused, never a pass; prewarm brings in exactly its
 * blocks; the block device under a file is found, and a virtual one is
 * "not available"; the probe reads what it says.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_int.h"

#define SIZE (4u << 20)

static char path[64];

static void remove_file(void)
{
	if (path[0])
		unlink(path);
}

/* A real file on a disk-backed file system (the build dir's /tmp here is ext4). */
static int setup(void **state)
{
	static uint8_t buf[SIZE];
	int fd;

	(void) state;
	snprintf(path, sizeof(path), "/tmp/cvio-cache-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	atexit(remove_file);
	for (size_t i = 0; i < SIZE; i++)
		buf[i] = (uint8_t) (i * 31);
	if (write(fd, buf, SIZE) != (ssize_t) SIZE)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void) state;
	remove_file();
	path[0] = 0;
	return 0;
}

static int on_tmpfs(void)
{
	cv_blkdev b;

	return cv_blkdev_for_path(path, &b, NULL) == -ENODEV;
}

static void test_evict_then_read(void **state)
{
	cv_residency r;
	cv_file *f;
	cv_io *io;
	cv_io_opts o;
	uint8_t buf[8192];

	(void) state;
	if (on_tmpfs())
		skip(); /* tmpfs pages cannot be evicted */
	assert_int_equal(cv_cache_evict(path), 0);
	assert_int_equal(cv_cache_residency(path, &r), 0);
	assert_int_equal(r.pages, SIZE / 4096);
	assert_int_equal(r.resident, 0);
	assert_string_equal(r.method, "cachestat");
	/* read through pread: pages become resident */
	assert_int_equal(cv_file_open(path, 0, &f), 0);
	cv_io_opts_default(&o);
	assert_int_equal(cv_io_new(&o, &io), 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(cv_io_read(io, f, (uint64_t) i * 65536, 8192, buf), 0);
	assert_int_equal(cv_cache_residency(path, &r), 0);
	assert_true(r.resident > 0);
	/* read-ahead is off: 64 reads of 2 pages should not pull in the whole file */
	assert_true(r.resident < r.pages);
	cv_io_free(io);
	cv_file_close(f);
	assert_int_equal(cv_cache_evict(path), 0);
	assert_int_equal(cv_cache_residency(path, &r), 0);
	assert_int_equal(r.resident, 0);
}

static void test_mincore(void **state)
{
	cv_residency r;
	int fd;

	(void) state;
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(cvio_mincore_fd(fd, &r), -EACCES);
	close(fd);
	if (on_tmpfs())
		skip();
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(cv_cache_evict(path), 0);
	assert_int_equal(cvio_mincore_fd(fd, &r), 0);
	assert_int_equal(r.resident, 0);
	assert_string_equal(r.method, "mincore");
	{
		uint8_t b[4096];

		assert_int_equal(pread(fd, b, sizeof(b), 8192), (ssize_t) sizeof(b));
	}
	assert_int_equal(cvio_mincore_fd(fd, &r), 0);
	assert_true(r.resident >= 1);
	close(fd);
}

static void test_prewarm(void **state)
{
	const uint64_t blocks[] = { 3, 17, 100, 255 };
	cv_residency r;

	(void) state;
	if (on_tmpfs())
		skip();
	assert_int_equal(cv_cache_evict(path), 0);
	assert_int_equal(cv_cache_prewarm(path, blocks, 4, 8192), 0);
	assert_int_equal(cv_cache_residency(path, &r), 0);
	assert_int_equal(r.resident, 8); /* 4 blocks of 2 pages, no read-ahead */
	{
		const uint64_t bad[] = { 512 };

		assert_int_equal(cv_cache_prewarm(path, bad, 1, 8192), -ERANGE);
	}
	assert_int_equal(cv_cache_residency("/nonexistent/file", &r), -ENOENT);
}

static void test_blkdev(void **state)
{
	cv_blkdev b;
	cv_blkstat s0, s1;
	cv_blkdelta d;
	cv_err e;
	int rc;

	(void) state;
	assert_int_equal(cv_blkdev_for_path("/dev/shm", &b, &e), -ENODEV);
	assert_non_null(strstr(e.msg, "not available"));
	assert_int_equal(cv_blkdev_for_path("/proc/self/stat", &b, &e), -ENODEV);
	rc = cv_blkdev_for_path(path, &b, &e);
	if (rc == -ENODEV)
		skip();
	assert_int_equal(rc, 0);
	assert_true(b.disk[0] != 0);
	assert_int_equal(cv_blkdev_stat(&b, &s0), 0);
	/* a cold read shows up on the device */
	assert_int_equal(cv_cache_evict(path), 0);
	{
		int fd = open(path, O_RDONLY);
		uint8_t buf[4096];

		assert_true(fd >= 0);
		posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
		for (int i = 0; i < 16; i++)
			assert_int_equal(pread(fd, buf, 4096, (off_t) i * 200000), 4096);
		close(fd);
	}
	assert_int_equal(cv_blkdev_stat(&b, &s1), 0);
	cv_blkstat_delta(&s0, &s1, &d);
	assert_true(d.reads >= 1);
	assert_true(d.read_sectors >= 8);
	assert_true(d.busy >= 0 && d.busy <= 1);
}

static void test_probe(void **state)
{
	cv_probe_opts o = { .qd = 4, .bs = 4096, .reads = 500, .strategy = CV_IO_URING, .seed = 3 };
	cv_probe_result r;
	cv_err e;
	cv_file *f;
	int direct;

	(void) state;
	assert_int_equal(cv_file_open(path, 0, &f), 0);
	direct = f->fd_direct >= 0;
	cv_file_close(f);
	o.strategy = CV_IO_PREAD;
	assert_int_equal(cv_probe(path, &o, &r, &e), 0);
	assert_int_equal(r.reads, 500);
	assert_true(r.iops > 0 && r.lat_p50_ms <= r.lat_p99_ms && r.lat_p99_ms <= r.lat_max_ms);
	if (!direct)
		skip();
	o.strategy = CV_IO_URING;
	assert_int_equal(cv_probe(path, &o, &r, &e), 0);
	assert_int_equal(r.reads, 500);
	o.bs = 100;
	assert_int_equal(cv_probe(path, &o, &r, &e), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evict_then_read), cmocka_unit_test(test_mincore),
		cmocka_unit_test(test_prewarm),         cmocka_unit_test(test_blkdev),
		cmocka_unit_test(test_probe),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
