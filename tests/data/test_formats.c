/*
 * test_formats.c - every dataset format and spec form, and the refusals:
 * truncated files, wrong magic, rows of different dimension, trailing
 * bytes, NaN/Inf, absurd sizes; each refusal names the file and the byte
 * offset where it went wrong. Also: gzip and plain give the same hash,
 * equal data in different formats gives equal hashes, row ranges, and
 * the synth generator's bytes pinned by SHA-256.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "coldvec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char dir[64];

/* Write n bytes to dir/name; returns the path (static, overwritten each call). */
static const char *put(const char *name, const void *p, size_t n)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
	return path;
}

/* Write n bytes gzip-compressed to dir/name. */
static const char *put_gz(const char *name, const void *p, size_t n)
{
	static char path[128];
	gzFile g;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	g = gzopen(path, "wb");
	assert_non_null(g);
	assert_int_equal(gzwrite(g, p, (unsigned) n), (int) n);
	gzclose(g);
	return path;
}

/* Load "prefix:path" and expect rc; with rc != 0, expect the message to hold each of the needles. */
static cv_dataset *load(const char *prefix, const char *path, int rc_want, const char *needle1,
			const char *needle2)
{
	char spec[256];
	cv_dataset *ds = NULL;
	cv_err e = {{0}};
	int rc;

	snprintf(spec, sizeof(spec), "%s%s", prefix, path);
	rc = cv_dataset_load(spec, &ds, &e);
	if (rc != rc_want)
		fail_msg("%s: rc %d, want %d (%s)", spec, rc, rc_want, e.msg);
	if (rc) {
		assert_null(ds);
		if (needle1 && !strstr(e.msg, needle1))
			fail_msg("%s: message '%s' lacks '%s'", spec, e.msg, needle1);
		if (needle2 && !strstr(e.msg, needle2))
			fail_msg("%s: message '%s' lacks '%s'", spec, e.msg, needle2);
	}
	return ds;
}

static void le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char) (v >> (8 * i));
}

static void be32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char) (v >> (24 - 8 * i));
}

/* fvecs of n rows of d: row i, column j = i * 10 + j. Returns the byte count. */
static size_t make_fvecs(unsigned char *buf, size_t n, size_t d)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		le32(buf + o, (uint32_t) d);
		o += 4;
		for (size_t j = 0; j < d; j++) {
			float f = (float) (i * 10 + j);

			memcpy(buf + o, &f, 4);
			o += 4;
		}
	}
	return o;
}

static void test_fvecs(void **state)
{
	unsigned char buf[4096];
	size_t len = make_fvecs(buf, 3, 5);
	cv_dataset *a, *b, *c;
	float nan = NAN, inf = INFINITY;

	a = load("fvecs:", put("a.fvecs", buf, len), 0, NULL, NULL);
	assert_int_equal(a->n, 3);
	assert_int_equal(a->d, 5);
	assert_true(cv_row(a, 2)[4] == 24.0f);
	assert_int_equal((uintptr_t) a->data % 64, 0);
	assert_string_equal(a->spec + strlen(a->spec) - 7, "a.fvecs");
	b = load("fvecs:", put_gz("a.fvecs.gz", buf, len), 0, NULL, NULL);
	assert_memory_equal(a->sha256, b->sha256, 32);
	cv_dataset_free(b);
	/* range suffix */
	{
		char p[160];

		snprintf(p, sizeof(p), "%s/a.fvecs[1:3]", dir);
		c = load("fvecs:", p, 0, NULL, NULL);
		assert_int_equal(c->n, 2);
		assert_true(cv_row(c, 0)[0] == 10.0f);
		cv_dataset_free(c);
		snprintf(p, sizeof(p), "%s/a.fvecs[2:]", dir);
		c = load("fvecs:", p, 0, NULL, NULL);
		assert_int_equal(c->n, 1);
		cv_dataset_free(c);
		snprintf(p, sizeof(p), "%s/a.fvecs[1:9]", dir);
		load("fvecs:", p, -EINVAL, "row range", NULL);
		snprintf(p, sizeof(p), "%s/a.fvecs[x:2]", dir);
		load("fvecs:", p, -EINVAL, "malformed row range", NULL);
	}
	/* slice equals range */
	assert_int_equal(cv_dataset_slice(a, 1, 2, &c), 0);
	assert_int_equal(c->n, 2);
	assert_true(cv_row(c, 1)[0] == 20.0f);
	assert_int_equal(cv_dataset_slice(a, 2, 2, &b) , -EINVAL);
	cv_dataset_free(c);
	cv_dataset_free(a);

	/* truncated: the last row loses 2 bytes; row 2 starts at byte 48 */
	load("fvecs:", put("t.fvecs", buf, len - 2), -EINVAL, "byte 52", "truncated");
	/* truncated inside a row header */
	load("fvecs:", put("t2.fvecs", buf, 24 + 2), -EINVAL, "byte 24", "truncated");
	/* gzip truncated */
	{
		unsigned char gz[4096];
		FILE *f;
		size_t gl;

		put_gz("g.fvecs.gz", buf, len);
		{
			char p[160];

			snprintf(p, sizeof(p), "%s/g.fvecs.gz", dir);
			f = fopen(p, "rb");
			gl = fread(gz, 1, sizeof(gz), f);
			fclose(f);
		}
		load("fvecs:", put("g2.fvecs.gz", gz, gl - 10), -EINVAL, "decompressed byte", NULL);
	}
	/* dimension mismatch: row 1 (byte 24) says 4 */
	memcpy(buf + 1000, buf, len);
	le32(buf + 1000 + 24, 4);
	load("fvecs:", put("m.fvecs", buf + 1000, len), -EINVAL, "byte 24", "row 1 declares dimension 4");
	/* NaN at row 1, column 2: byte 24 + 4 + 8 = 36; Inf at row 2 column 0: byte 52 */
	memcpy(buf + 1000, buf, len);
	memcpy(buf + 1000 + 36, &nan, 4);
	load("fvecs:", put("n.fvecs", buf + 1000, len), -EINVAL, "byte 36", "NaN");
	memcpy(buf + 1000, buf, len);
	memcpy(buf + 1000 + 52, &inf, 4);
	load("fvecs:", put("i.fvecs", buf + 1000, len), -EINVAL, "byte 52", "Inf");
	/* absurd dimension, zero dimension, empty file */
	le32(buf + 1000, 1u << 20);
	load("fvecs:", put("big.fvecs", buf + 1000, 64), -EOVERFLOW, "byte 0", "dimension");
	le32(buf + 1000, 0);
	load("fvecs:", put("zero.fvecs", buf + 1000, 64), -EINVAL, "byte 0", "dimension 0");
	load("fvecs:", put("empty.fvecs", buf, 0), -EINVAL, "empty", NULL);
	/* missing file */
	load("fvecs:", "/nonexistent/x.fvecs", -ENOENT, "/nonexistent/x.fvecs", NULL);
	load("fvecs:", dir, -EINVAL, "not a regular file", NULL);
}

static void test_ivecs_bvecs(void **state)
{
	unsigned char buf[256];
	cv_dataset *a;

	/* ivecs: 2 rows of 3 int32 */
	for (int i = 0; i < 2; i++) {
		le32(buf + i * 16, 3);
		for (int j = 0; j < 3; j++)
			le32(buf + i * 16 + 4 + 4 * j, (uint32_t) (i == 1 && j == 2 ? -7 : i * 100 + j));
	}
	a = load("ivecs:", put("a.ivecs", buf, 32), 0, NULL, NULL);
	assert_int_equal(a->n, 2);
	assert_int_equal(a->d, 3);
	assert_true(cv_row(a, 1)[1] == 101.0f);
	assert_true(cv_row(a, 1)[2] == -7.0f);
	cv_dataset_free(a);
	load("ivecs:", put("t.ivecs", buf, 30), -EINVAL, "byte 20", "truncated");
	/* bvecs: 2 rows of 4 uint8 */
	for (int i = 0; i < 2; i++) {
		le32(buf + i * 8, 4);
		for (int j = 0; j < 4; j++)
			buf[i * 8 + 4 + j] = (unsigned char) (250 + i + j);
	}
	a = load("bvecs:", put("a.bvecs", buf, 16), 0, NULL, NULL);
	assert_int_equal(a->n, 2);
	assert_int_equal(a->d, 4);
	assert_true(cv_row(a, 1)[3] == 254.0f);
	cv_dataset_free(a);
	le32(buf + 8, 5);
	load("bvecs:", put("m.bvecs", buf, 16), -EINVAL, "byte 8", "row 1 declares dimension 5");
}

static void test_idx(void **state)
{
	unsigned char buf[256];
	cv_dataset *a, *b;

	/* u8: 3 images of 2x2 */
	buf[0] = 0, buf[1] = 0, buf[2] = 0x08, buf[3] = 3;
	be32(buf + 4, 3);
	be32(buf + 8, 2);
	be32(buf + 12, 2);
	for (int i = 0; i < 12; i++)
		buf[16 + i] = (unsigned char) (i * 20);
	a = load("idx:", put("a.idx", buf, 28), 0, NULL, NULL);
	assert_int_equal(a->n, 3);
	assert_int_equal(a->d, 4);
	assert_true(cv_row(a, 2)[3] == 220.0f);
	b = load("idx:", put_gz("a.idx.gz", buf, 28), 0, NULL, NULL);
	assert_memory_equal(a->sha256, b->sha256, 32);
	cv_dataset_free(a);
	cv_dataset_free(b);
	load("idx:", put("t.idx", buf, 27), -EINVAL, "byte 16", "truncated");
	load("idx:", put("tr.idx", buf, 29), -EINVAL, "byte 28", "trailing bytes");
	buf[1] = 1;
	load("idx:", put("m.idx", buf, 28), -EINVAL, "byte 0", "wrong magic");
	buf[1] = 0;
	buf[2] = 0x07;
	load("idx:", put("m2.idx", buf, 28), -EINVAL, "byte 0", "wrong magic");
	buf[2] = 0x08;
	/* absurd: 2^31 x 2^16 */
	be32(buf + 4, 1u << 31);
	be32(buf + 8, 256);
	be32(buf + 12, 256);
	load("idx:", put("big.idx", buf, 28), -EOVERFLOW, "exceed", NULL);
	/* within the caps but far beyond the file: refused before allocating, plain or gzip */
	be32(buf + 4, 1000000);
	be32(buf + 8, 28);
	be32(buf + 12, 28);
	load("idx:", put("long.idx", buf, 28), -EINVAL, "byte 16", "needs 784000000 bytes");
	load("idx:", put_gz("long.idx.gz", buf, 28), -EINVAL, "decompressed byte 16", "truncated");
	be32(buf + 8, 0);
	load("idx:", put("z.idx", buf, 28), -EINVAL, "byte 8", "dimension 1 is 0");
	/* f32, big-endian: 2 rows of 2, then a NaN in row 1 col 1 (byte 12 + 3*4 = 24) */
	buf[2] = 0x0D;
	buf[3] = 2;
	be32(buf + 4, 2);
	be32(buf + 8, 2);
	{
		float v[4] = {1.5f, -2.0f, 3.25f, 4.0f};

		for (int i = 0; i < 4; i++) {
			uint32_t u;

			memcpy(&u, &v[i], 4);
			be32(buf + 12 + 4 * i, u);
		}
		a = load("idx:", put("f.idx", buf, 28), 0, NULL, NULL);
		assert_int_equal(a->n, 2);
		assert_int_equal(a->d, 2);
		assert_true(cv_row(a, 1)[0] == 3.25f && cv_row(a, 0)[1] == -2.0f);
		cv_dataset_free(a);
		be32(buf + 24, 0x7fc00000);
		load("idx:", put("fn.idx", buf, 28), -EINVAL, "byte 24", "NaN");
	}
}

/* An npy file: header padded so the data starts at a multiple of 64 (here 128). */
static size_t make_npy(unsigned char *buf, const char *dict, const void *data, size_t dlen, int version)
{
	size_t pre = version == 1 ? 10 : 12, hl = strlen(dict), total = pre + hl + 1;
	size_t pad = (64 - total % 64) % 64;

	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (unsigned char) version;
	buf[7] = 0;
	if (version == 1) {
		buf[8] = (unsigned char) ((hl + pad + 1) & 0xff);
		buf[9] = (unsigned char) ((hl + pad + 1) >> 8);
	} else {
		le32(buf + 8, (uint32_t) (hl + pad + 1));
	}
	memcpy(buf + pre, dict, hl);
	memset(buf + pre + hl, ' ', pad);
	buf[pre + hl + pad] = '\n';
	memcpy(buf + pre + hl + pad + 1, data, dlen);
	return pre + hl + pad + 1 + dlen;
}

static void test_npy(void **state)
{
	unsigned char buf[1024], fv[4096];
	float v[15];
	unsigned char u[6] = {0, 1, 2, 253, 254, 255};
	size_t len, flen;
	cv_dataset *a, *b;

	for (int i = 0; i < 15; i++)
		v[i] = (float) ((i / 5) * 10 + i % 5);
	len = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }", v, sizeof(v), 1);
	a = load("npy:", put("a.npy", buf, len), 0, NULL, NULL);
	assert_int_equal(a->n, 3);
	assert_int_equal(a->d, 5);
	/* the same values as make_fvecs(3, 5): equal content hash across formats */
	flen = make_fvecs(fv, 3, 5);
	b = load("fvecs:", put("same.fvecs", fv, flen), 0, NULL, NULL);
	assert_memory_equal(a->sha256, b->sha256, 32);
	cv_dataset_free(b);
	cv_dataset_free(a);
	len = make_npy(buf, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (3, 5)}", v, sizeof(v), 2);
	a = load("npy:", put("v2.npy", buf, len), 0, NULL, NULL);
	assert_int_equal(a->n, 3);
	cv_dataset_free(a);
	len = make_npy(buf, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", u, 6, 1);
	a = load("npy:", put("u.npy", buf, len), 0, NULL, NULL);
	assert_int_equal(a->n, 2);
	assert_int_equal(a->d, 3);
	assert_true(cv_row(a, 1)[2] == 255.0f);
	cv_dataset_free(a);
	len = make_npy(buf, "{'descr': '|u1', 'fortran_order': False, 'shape': (6,), }", u, 6, 1);
	a = load("npy:", put("u1d.npy", buf, len), 0, NULL, NULL);
	assert_int_equal(a->n, 6);
	assert_int_equal(a->d, 1);
	cv_dataset_free(a);

	/* refusals */
	len = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }", v, sizeof(v), 1);
	load("npy:", put("t.npy", buf, len - 1), -EINVAL, "byte 128", "truncated");
	{
		unsigned char extra[1100];

		memcpy(extra, buf, len);
		extra[len] = 0;
		load("npy:", put("tr2.npy", extra, len + 1), -EINVAL, "byte 188", "trailing");
	}
	buf[1] = 'X';
	load("npy:", put("m.npy", buf, len), -EINVAL, "byte 0", "wrong magic");
	len = make_npy(buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 5), }", v, sizeof(v), 1);
	load("npy:", put("f8.npy", buf, len), -EINVAL, "byte 20", "'<f8' not supported");
	len = make_npy(buf, "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 5), }", v, sizeof(v), 1);
	load("npy:", put("fo.npy", buf, len), -EINVAL, "not in C order", NULL);
	len = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 6), }", v, sizeof(v), 1);
	load("npy:", put("dm.npy", buf, len), -EINVAL, "byte 128", "truncated");
	len = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (3000000000, 5), }", v, sizeof(v), 1);
	load("npy:", put("big.npy", buf, len), -EOVERFLOW, "byte 61", "too large");
	v[7] = NAN;
	len = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }", v, sizeof(v), 1);
	load("npy:", put("nan.npy", buf, len), -EINVAL, "byte 156", "NaN");
}

static void test_synth(void **state)
{
	cv_dataset *a, *b, *c;
	char hex[65];

	a = load("synth:", "n=1000,d=16,clusters=4,seed=7", 0, NULL, NULL);
	b = load("synth:", "seed=7,clusters=4,d=16,n=1000", 0, NULL, NULL);
	c = load("synth:", "n=1000,d=16,clusters=4,seed=8", 0, NULL, NULL);
	assert_int_equal(a->n, 1000);
	assert_int_equal(a->d, 16);
	assert_memory_equal(a->data, b->data, 1000 * 16 * sizeof(float));
	assert_memory_not_equal(a->sha256, c->sha256, 32);
	/* pinned: the same bytes on every machine and compiler (gcc, clang, -march=native) */
	cv_dataset_hash_hex(a, hex);
	assert_string_equal(hex, "5db66d1ef885c4b40782bde2ff982b305624dfb5e137e49821b2c6a285235894");
	cv_dataset_free(a);
	cv_dataset_free(b);
	cv_dataset_free(c);
	a = load("synth:", "n=1000,d=16", 0, NULL, NULL);
	cv_dataset_hash_hex(a, hex);
	assert_string_equal(hex, "6e9659ae744c6603ea445f497d36b7eab4c513052a5ad204c1c95b6b09212e5e");
	/* a mixture: sample mean near 0, per-coordinate variance near 1 + sigma^2 = 1.25 */
	{
		double s = 0, s2 = 0;

		for (size_t i = 0; i < 1000 * 16; i++) {
			s += a->data[i];
			s2 += (double) a->data[i] * a->data[i];
		}
		assert_true(fabs(s / 16000) < 0.5);
		assert_true(s2 / 16000 > 0.3 && s2 / 16000 < 4.0);
	}
	cv_dataset_free(a);
	load("synth:", "n=5", -EINVAL, "needs n>=1 and d>=1", NULL);
	load("synth:", "n=5,d=2,color=3", -EINVAL, "unknown key 'color'", NULL);
	load("synth:", "n=5,d=x", -EINVAL, "bad value for 'd'", NULL);
	load("synth:", "n=5,d", -EINVAL, "expected key=value", NULL);
	load("synth:", "n=100000000000,d=128", -EINVAL, "bad value for 'n'", NULL);
	load("synth:", "n=100000000,d=128", -EOVERFLOW, "exceed", NULL);
	load("", "nosuch:thing", -EINVAL, "unknown dataset spec", NULL);
	load("", "fashion-mnist:validation", -EINVAL, "unknown split", NULL);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/cvdata-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fvecs),
		cmocka_unit_test(test_ivecs_bvecs),
		cmocka_unit_test(test_idx),
		cmocka_unit_test(test_npy),
		cmocka_unit_test(test_synth),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
