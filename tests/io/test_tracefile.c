/*
 * test_tracefile.c - the cvtrace file format: a captured trace saved and
 * loaded back has the same records, files and dropped count and replays
 * to the same virtual time; damage (magic, version, checksum, truncation,
 * a record claiming a file past the table, a completion before its
 * submission, absurd counts) is refused with -EBADMSG and a byte offset;
 * saving over an unwritable path leaves nothing behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "io_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* A trace of 4 streams x 25 batches x 2 reads over 2 files, built by hand. */
static cv_trace *make_trace(void)
{
	cv_trace *t = NULL;
	uint64_t now = 1000000;

	assert_int_equal(cv_trace_new(1000, &t), 0);
	assert_int_equal(cvio_trace_add_path(t, "/data/part-000"), 0);
	assert_int_equal(cvio_trace_add_path(t, "/data/heap"), 0);
	for (uint32_t b = 0; b < 25; b++)
		for (uint32_t s = 0; s < 4; s++)
			for (uint32_t k = 0; k < 2; k++) {
				cv_trace_rec r = {.stream = s, .batch = b, .off = 8192ull * (b * 7 + s + k),
						  .len = 8192, .file = k, .submit_ns = now,
						  .complete_ns = now + 300000 + 1000 * s};

				assert_int_equal(cv_trace_append(t, &r), 0);
				now += 5000;
			}
	cvio_trace_set_dropped(t, 3);
	return t;
}

/* Recompute the CRC trailer after editing an image. */
static void reseal(uint8_t *buf, size_t n)
{
	uint32_t c = (uint32_t) crc32(0L, buf, (uInt) (n - 4));

	for (int i = 0; i < 4; i++)
		buf[n - 4 + i] = (uint8_t) (c >> (8 * i));
}

static void test_roundtrip(void **state)
{
	cv_trace *t = make_trace(), *u = NULL;
	cv_device *d = NULL;
	cv_sim_result a, b;
	cv_err e = {{0}};
	char path[] = "/tmp/cvtraceXXXXXX";
	int fd = mkstemp(path);

	(void) state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(cv_trace_save(t, path, &e), 0);
	assert_int_equal(cv_trace_load(path, &u, &e), 0);
	assert_int_equal(cv_trace_len(u), cv_trace_len(t));
	assert_int_equal(cv_trace_len(u), 200);
	assert_memory_equal(cv_trace_recs(u), cv_trace_recs(t), 200 * sizeof(cv_trace_rec));
	assert_int_equal(cv_trace_nfiles(u), 2);
	assert_string_equal(cv_trace_file_path(u, 1), "/data/heap");
	assert_int_equal(cv_trace_dropped(u), 3);
	assert_int_equal(cv_device_new("hdd-pool", 1, &d, &e), 0);
	assert_int_equal(cv_device_simulate(d, t, 9, &a), 0);
	assert_int_equal(cv_device_simulate(d, u, 9, &b), 0);
	assert_int_equal(a.reads, 200);
	assert_true(a.wall_ms > 0 && a.wall_ms == b.wall_ms);
	assert_true(a.read_ms_mean == b.read_ms_mean);
	unlink(path);
	cv_device_free(d);
	cv_trace_free(t);
	cv_trace_free(u);
}

/* decode must refuse img (n bytes) with -EBADMSG and name a byte. */
static void refused(const uint8_t *img, size_t n)
{
	cv_trace *u = NULL;
	cv_err e = {{0}};

	assert_int_equal(cv_trace_decode(img, n, &u, &e), -EBADMSG);
	assert_null(u);
	assert_non_null(strstr(e.msg, "byte "));
}

static void test_damage(void **state)
{
	cv_trace *t = make_trace(), *u = NULL;
	uint8_t *img = NULL, *c;
	size_t n = 0, rec0;
	cv_err e = {{0}};

	(void) state;
	assert_int_equal(cv_trace_encode(t, &img, &n), 0);
	assert_int_equal(cv_trace_decode(img, n, &u, &e), 0);
	cv_trace_free(u);
	c = malloc(n);
	assert_non_null(c);
	rec0 = 32 + 2 + 14 + 2 + 10;
	assert_int_equal(n, rec0 + 200 * 40 + 4);
	/* every truncation */
	for (size_t k = 0; k < n; k += (k < 64 ? 1 : 37))
		refused(img, k);
	/* any flipped bit: the checksum */
	memcpy(c, img, n);
	c[rec0 + 100] ^= 4;
	refused(c, n);
	/* bad magic, version (resealed so the field check is what refuses) */
	memcpy(c, img, n);
	c[0] = 'X';
	reseal(c, n);
	refused(c, n);
	memcpy(c, img, n);
	c[8] = 2;
	reseal(c, n);
	refused(c, n);
	/* absurd counts: files and records */
	memcpy(c, img, n);
	c[14] = 0xFF;
	reseal(c, n);
	refused(c, n);
	memcpy(c, img, n);
	c[23] = 0x40;
	reseal(c, n);
	refused(c, n);
	memcpy(c, img, n);
	c[16] = 199;
	reseal(c, n);
	refused(c, n);
	/* a record naming file 7 of 2; one completing before it is submitted */
	memcpy(c, img, n);
	c[rec0 + 20] = 7;
	reseal(c, n);
	refused(c, n);
	memcpy(c, img, n);
	c[rec0 + 39] = 0;
	c[rec0 + 32] = 0;
	c[rec0 + 33] = 0;
	c[rec0 + 34] = 0;
	reseal(c, n);
	refused(c, n);
	/* a NUL inside a path */
	memcpy(c, img, n);
	c[32 + 2 + 3] = 0;
	reseal(c, n);
	refused(c, n);
	/* a zero path length in the file table */
	memcpy(c, img, n);
	c[32] = 0;
	c[33] = 0;
	reseal(c, n);
	refused(c, n);
	free(c);
	free(img);
	cv_trace_free(t);
}

static void test_save_refused(void **state)
{
	cv_trace *t = make_trace(), *u = NULL;
	cv_err e = {{0}};

	(void) state;
	assert_true(cv_trace_save(t, "/nonexistent-dir/x.cvtrace", &e) < 0);
	assert_non_null(strstr(e.msg, "/nonexistent-dir/x.cvtrace"));
	assert_int_equal(cv_trace_load("/nonexistent-dir/x.cvtrace", &u, &e), -ENOENT);
	assert_int_equal(cv_trace_load("/tmp", &u, &e), -EBADMSG);
	assert_null(u);
	cv_trace_free(t);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_damage),
		cmocka_unit_test(test_save_refused),
	};

	/* `test-io-tracefile --corpus DIR` writes the fuzz seeds */
	if (argc == 3 && !strcmp(argv[1], "--corpus")) {
		cv_trace *t = make_trace();
		uint8_t *img = NULL;
		size_t n = 0;
		char p[4096];
		FILE *f;

		if (cv_trace_encode(t, &img, &n))
			return 1;
		snprintf(p, sizeof(p), "%s/trace-200", argv[2]);
		f = fopen(p, "wb");
		if (!f || fwrite(img, 1, n, f) != n || fclose(f))
			return 1;
		snprintf(p, sizeof(p), "%s/trace-trunc", argv[2]);
		f = fopen(p, "wb");
		if (!f || fwrite(img, 1, 300, f) != 300 || fclose(f))
			return 1;
		free(img);
		cv_trace_free(t);
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
