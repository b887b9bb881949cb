/*
 * test_hfresh_unit.c - HFresh's pieces: rotation, RaBitQ estimator and
 * its error bound, posting codec, RNG placement rule, balanced k-means,
 * verify on corrupt indexes (bit flips, truncation, bad manifest),
 * checksums on the query path, block-list recording.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hfr_test.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <zlib.h>

/* The rotation is orthogonal: norms and inner products survive it. */
static void test_rotation(void **st)
{
	hfr_rot r;
	float a[100], b[100], ra[128], rb[128];
	uint64_t s = 7;

	(void) st;
	assert_int_equal(hfr_rot_init(&r, 100, 42), 0);
	assert_int_equal(r.dp, 128);
	for (int i = 0; i < 100; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		a[i] = (float) ((s >> 33) % 1000) / 500.0f - 1.0f;
		b[i] = (float) ((s >> 13) % 1000) / 500.0f - 1.0f;
	}
	hfr_rot_apply(&r, a, ra);
	hfr_rot_apply(&r, b, rb);
	assert_float_equal(cv_dot(a, a, 100), cv_dot(ra, ra, 128), 1e-3);
	assert_float_equal(cv_dot(a, b, 100), cv_dot(ra, rb, 128), 1e-3);
	/* it mixes: a basis vector spreads over many coordinates */
	memset(a, 0, sizeof(a));
	a[3] = 1;
	hfr_rot_apply(&r, a, ra);
	{
		int nz = 0;

		for (int i = 0; i < 128; i++)
			nz += fabsf(ra[i]) > 1e-4f;
		assert_true(nz >= 64);
	}
	hfr_rot_free(&r);
}

/* The estimator tests' data: c the mean of ds (128-d), q near row 5, qr = q - c. */
static void est_setup(const cv_dataset *ds, float *c, float *q, float *qr)
{
	const uint32_t d = 128;

	for (size_t i = 0; i < ds->n; i++)
		for (uint32_t j = 0; j < d; j++)
			c[j] += ds->data[i * d + j] / (float) ds->n;
	for (uint32_t j = 0; j < d; j++)
		q[j] = ds->data[5 * d + j] + 0.5f;
	for (uint32_t j = 0; j < d; j++)
		qr[j] = q[j] - c[j];
}

/* The estimator tracks true distances and its bound holds nearly always. */
static void test_estimator(void **st)
{
	const uint32_t d = 128;
	cv_dataset *ds = t_data(2000, d, 4, 3, 0);
	float c[128] = {0}, res[128], q[128], qr[128];
	uint64_t code[2], planes[HFR_QUERY_BITS * 2];
	hfr_qq qq = {.planes = planes};
	double sq = 0, se = 0;
	int inside = 0;
	hfr_fac f;

	(void) st;
	est_setup(ds, c, q, qr);
	hfr_query_quant(qr, d, &qq);
	/* identity rotation is fine for the estimator's algebra; residuals are dense */
	for (size_t i = 0; i < ds->n; i++) {
		float err, est, tru;

		for (uint32_t j = 0; j < d; j++)
			res[j] = ds->data[i * d + j] - c[j];
		hfr_encode(res, d, 1, code, NULL, &f);
		est = hfr_estimate(&qq, code, &f, &err);
		tru = cv_l2sq(ds->data + i * d, q, d);
		sq += (double) (est - tru) * (est - tru);
		se += tru;
		inside += fabsf(est - tru) <= err;
	}
	/* rms error under 20% of the mean distance; bound holds for >= 97% */
	assert_true(sqrt(sq / ds->n) < 0.2 * se / ds->n);
	assert_true(inside >= (int) (0.97 * ds->n));
	t_data_free(ds);
}

/*
 * The CPU's estimator path (AVX-512 VPOPCNTDQ or POPCNT here) gives exactly
 * the portable loop's estimate and bound, at every word count from 1 to 20
 * (so the masked tail of the vector path is covered), on random codes.
 */
static void test_estimator_paths_agree(void **st)
{
	uint64_t seed = 12345;
	uint64_t code[20], planes[HFR_QUERY_BITS * 20];

	(void) st;
	for (uint32_t words = 1; words <= 20; words++) {
		for (int rep = 0; rep < 50; rep++) {
			hfr_qq qq = {.dp = words * 64, .words = words, .planes = planes,
				     .lo = -0.7f, .delta = 0.11f, .sumq = 1.5f, .qn2 = 4.0f,
				     .qn = 2.0f, .inv_sqrt_d = 1.0f / sqrtf((float) words * 64)};
			hfr_fac f = {.add = 3.0f, .rescale = -1.25f, .err = 0.2f};
			float e1, e2, b1, b2;
			unsigned pop = 0;

			for (uint32_t i = 0; i < words; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				code[i] = seed ^ (seed >> 29);
				pop += (unsigned) __builtin_popcountll(code[i]);
			}
			for (uint32_t i = 0; i < HFR_QUERY_BITS * words; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				planes[i] = seed ^ (seed >> 31);
			}
			f.pop = (uint16_t) pop;
			e1 = hfr_estimate(&qq, code, &f, &b1);
			e2 = hfr_estimate_ref(&qq, code, &f, &b2);
			assert_true(e1 == e2);
			assert_true(b1 == b2);
		}
	}
}

/*
 * Extended codes (4 bits a dimension) on the estimator test's data: the
 * estimate's rms error is under a third of the 1-bit code's, and its
 * bound holds for at least 97% of the vectors.
 */
static void test_ex_estimator(void **st)
{
	const uint32_t d = 128;
	cv_dataset *ds = t_data(2000, d, 4, 3, 0);
	float c[128] = {0}, res[128], q[128], qr[128];
	uint64_t code[2], planes[HFR_QUERY_BITS * 2];
	uint8_t ex[64];
	int8_t q8[128], q8p[128];
	hfr_qq qq = {.planes = planes};
	hfr_qx qx = {.q8 = q8, .q8p = q8p};
	double s1 = 0, s4 = 0;
	int inside = 0;
	hfr_fac f;

	(void) st;
	est_setup(ds, c, q, qr);
	hfr_query_quant(qr, d, &qq);
	hfr_query_quant_ex(qr, d, &qx);
	for (size_t i = 0; i < ds->n; i++) {
		float e1, e4, est1, est4, tru;

		for (uint32_t j = 0; j < d; j++)
			res[j] = ds->data[i * d + j] - c[j];
		hfr_encode(res, d, 4, code, ex, &f);
		est1 = hfr_estimate(&qq, code, &f, &e1);
		est4 = hfr_estimate_ex(&qx, ex, 4, &f, &e4);
		tru = cv_l2sq(ds->data + i * d, q, d);
		s1 += (double) (est1 - tru) * (est1 - tru);
		s4 += (double) (est4 - tru) * (est4 - tru);
		inside += fabsf(est4 - tru) <= e4;
		assert_true(e4 < e1); /* the finer code's bound is the tighter one */
		/* the sign bits of the extended code are the 1-bit code */
		for (uint32_t j = 0; j < d; j++)
			assert_int_equal(hfr_ex_level(ex, j) >= 8, (code[j / 64] >> (j % 64)) & 1);
	}
	printf("# rms error: 1-bit %.4f, 4-bit %.4f; 4-bit bound held for %d of %zu\n",
	       sqrt(s1 / ds->n), sqrt(s4 / ds->n), inside, ds->n);
	assert_true(sqrt(s4 / ds->n) < sqrt(s1 / ds->n) / 3);
	assert_true(inside >= (int) (0.97 * ds->n));
	t_data_free(ds);
}

/*
 * The extended estimator's CPU path (AVX-512 VNNI here) gives exactly the
 * portable loop's estimate and bound at every dimension count from 64 to
 * 1280 (odd counts of 64 cover the masked tail), on random codes and
 * byte queries over the whole range.
 */
static void test_ex_paths_agree(void **st)
{
	uint64_t seed = 777;
	uint8_t ex[640];
	int8_t q8[1280], q8p[1280];
	float qr[1280];

	(void) st;
	for (uint32_t dp = 64; dp <= 1280; dp += 64) {
		for (int rep = 0; rep < 20; rep++) {
			hfr_qx qx = {.q8 = q8, .q8p = q8p};
			hfr_fac f = {.add = 3.0f, .rescale_ex = -1.25f, .err_ex = 0.2f, .qerr_ex = 0.1f};
			float e1, e2, b1, b2;

			for (uint32_t i = 0; i < dp / 2; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				ex[i] = (uint8_t) (seed >> 40);
			}
			for (uint32_t i = 0; i < dp; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				qr[i] = (float) ((int) (seed >> 56) - 128) / 17.0f;
			}
			hfr_query_quant_ex(qr, dp, &qx);
			e1 = hfr_estimate_ex(&qx, ex, 4, &f, &b1);
			e2 = hfr_estimate_ex_ref(&qx, ex, 4, &f, &b2);
			assert_true(e1 == e2);
			assert_true(b1 == b2);
			/* a perturbed code byte changes the estimate on both paths alike */
			ex[dp / 2 - 1] ^= 0x11;
			e1 = hfr_estimate_ex(&qx, ex, 4, &f, &b1);
			e2 = hfr_estimate_ex_ref(&qx, ex, 4, &f, &b2);
			assert_true(e1 == e2);
		}
	}
}

/*
 * A posting's entries estimated together (hfr_estimate_ex_entries: sixteen
 * a step on AVX-512 VNNI, the rest one at a time) give each entry's
 * hfr_estimate_ex_ref estimate and bound bit for bit, for every count of
 * chosen entries from 0 to 50 (whole steps and tails), in any order, with
 * random factors, at 64 to 448 dimensions.
 */
static void test_ex_entries_agree(void **st)
{
	uint64_t seed = 4242;
	const uint32_t count = 64;
	int8_t q8[448], q8p[448];
	float qr[448], est[64], err[64], est2[64], err2[64];
	uint32_t idx[64];

	(void) st;
	for (uint32_t dp = 64; dp <= 448; dp += 64) {
		uint32_t es = hfr_entry_size(dp, 4);
		uint8_t *ents = malloc((size_t) count * es);
		hfr_qx qx = {.q8 = q8, .q8p = q8p};

		assert_non_null(ents);
		for (size_t i = 0; i < (size_t) count * es; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			ents[i] = (uint8_t) (seed >> 40);
		}
		for (uint32_t i = 0; i < count; i++) { /* finite factors */
			hfr_fac f = {.add = (float) (i % 7) + 0.5f, .rescale_ex = -1.0f - (float) i / 9,
				     .err_ex = 0.01f * (float) i, .qerr_ex = 0.25f + (float) i / 64};
			uint8_t *ent = ents + (size_t) i * es;

			memcpy(ent + HFR_ENT_ADD, &f.add, 4);
			memcpy(ent + HFR_ENT_RESCALE_EX, &f.rescale_ex, 4);
			memcpy(ent + HFR_ENT_ERR_EX, &f.err_ex, 4);
			memcpy(ent + HFR_ENT_QERR_EX, &f.qerr_ex, 4);
		}
		for (uint32_t i = 0; i < dp; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			qr[i] = (float) ((int) (seed >> 56) - 128) / 13.0f;
		}
		hfr_query_quant_ex(qr, dp, &qx);
		for (uint32_t n = 0; n <= 50; n++) {
			for (uint32_t j = 0; j < n; j++) { /* n entries in scattered order (repeats allowed) */
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				idx[j] = (j * 37 + (uint32_t) (seed >> 60)) % count;
			}
			hfr_estimate_ex_entries(&qx, ents, es, idx, n, 4, est, err);
			hfr_estimate_ex_entries_ref(&qx, ents, es, idx, n, 4, est2, err2);
			for (uint32_t j = 0; j < n; j++) {
				const uint8_t *ent = ents + (size_t) idx[j] * es;
				hfr_fac f;
				uint32_t id, ver;
				float b;

				assert_true(est[j] == est2[j]);
				assert_true(err[j] == err2[j]);
				hfr_entry_get(ent, dp, 4, &id, &ver, &f);
				assert_true(est[j] == hfr_estimate_ex(&qx, hfr_entry_ex(ent), 4, &f, &b));
				assert_true(err[j] == b);
			}
		}
		free(ents);
	}
}

/* A posting of extended codes round-trips; read as the wrong kind it is refused. */
static void test_ex_posting_codec(void **st)
{
	const uint32_t dp = 128;
	const unsigned bits = 4;
	uint32_t n = 9, es = hfr_entry_size(dp, bits), len = (uint32_t) hfr_post_disk_len(n, dp, bits);
	uint8_t *rec = calloc(1, len), ex[64];
	uint64_t code[2] = {0x0123456789abcdefull, 0xfedcba9876543210ull};
	hfr_fac f = {.add = 1, .rescale = -2, .err = 0.5f, .pop = 64, .rescale_ex = -2.5f,
		     .err_ex = 0.125f, .qerr_ex = 0.25f};
	hfr_post_hdr h;
	cv_err e;

	(void) st;
	assert_int_equal(es, HFR_ENTRY_HDR + 64);
	for (uint32_t i = 0; i < 64; i++)
		ex[i] = (uint8_t) (i * 37);
	for (uint32_t i = 0; i < n; i++)
		hfr_entry_put(hfr_entry_at(rec, es, i), dp, bits, i + 100, 2, &f, code, ex);
	hfr_post_seal(rec, 5, n, dp, bits);
	assert_int_equal(hfr_post_check(rec, len, dp, bits, 5, n, 1, &h, &e), 0);
	assert_int_equal(h.version, HFR_POST_VERSION_EX);
	assert_int_equal(h.code_bits, bits);
	{
		uint32_t id, ver;
		hfr_fac g;
		const uint8_t *ent = hfr_entry_at(rec, es, 7);

		hfr_entry_get(ent, dp, bits, &id, &ver, &g);
		assert_int_equal(id, 107);
		assert_int_equal(ver, 2);
		assert_true(g.rescale_ex == -2.5f && g.err_ex == 0.125f && g.qerr_ex == 0.25f);
		assert_true(g.add == 1);
		assert_memory_equal(hfr_entry_ex(ent), ex, 64);
	}
	/* an index of 1-bit codes does not take it, nor one of 3-bit codes */
	assert_int_equal(hfr_post_check(rec, len, dp, 1, 5, n, 1, NULL, &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "version"));
	assert_int_equal(hfr_post_check(rec, len, dp, 3, 5, n, 1, NULL, &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "code bits"));
	rec[HFR_POST_HDR + 7 * es + HFR_ENTRY_HDR + 3] ^= 0x04;
	assert_int_equal(hfr_post_check(rec, len, dp, bits, 5, n, 1, NULL, &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "checksum"));
	free(rec);
}

/* A sealed posting round-trips; a flipped bit or a cut record is -EBADMSG. */
static void test_posting_codec(void **st)
{
	const uint32_t dp = 64;
	uint32_t n = 10, len = (uint32_t) hfr_post_disk_len(n, dp, 1);
	uint8_t *rec = calloc(1, len);
	uint64_t code[1] = {0x0123456789abcdefull};
	hfr_fac f = {.add = 1, .rescale = -2, .err = 0.5f, .pop = 32};
	hfr_post_hdr h;
	cv_err e;

	(void) st;
	for (uint32_t i = 0; i < n; i++)
		hfr_entry_put(hfr_entry_at(rec, hfr_entry_size(dp, 1), i), dp, 1, i * 3, 1, &f, code, NULL);
	hfr_post_seal(rec, 7, n, dp, 1);
	assert_int_equal(hfr_post_check(rec, len, dp, 1, 7, n, 1, &h, &e), 0);
	assert_int_equal(h.count, n);
	{
		uint32_t id, ver;
		hfr_fac g;

		hfr_entry_get(hfr_entry_at(rec, hfr_entry_size(dp, 1), 4), dp, 1, &id, &ver, &g);
		assert_int_equal(id, 12);
		assert_int_equal(ver, 1);
		assert_float_equal(g.rescale, -2, 0);
		assert_memory_equal(hfr_entry_code(hfr_entry_at(rec, hfr_entry_size(dp, 1), 4)), code, 8);
	}
	assert_int_equal(hfr_post_check(rec, len, dp, 1, 8, n, 1, NULL, &e), -EBADMSG);
	assert_int_equal(hfr_post_check(rec, 100, dp, 1, 7, n, 1, NULL, &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "truncated"));
	rec[HFR_POST_HDR + 50] ^= 0x10;
	assert_int_equal(hfr_post_check(rec, len, dp, 1, 7, n, 1, NULL, &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "checksum"));
	rec[HFR_POST_HDR + 50] ^= 0x10;
	rec[0] ^= 1;
	assert_int_equal(hfr_post_check(rec, len, dp, 1, 7, n, 1, NULL, &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "magic"));
	free(rec);
}

/*
 * Every CRC-32C path this CPU has (table, SSE4.2, folding 256 or 512 bits) against the
 * table, bit for bit: from a raw state other than ~0 (a posting's body
 * continues its header's), at every length to 1,100 bytes (the folding
 * paths' 256- and 128-byte steps, their 64- and 32-byte steps and tails) and offset 0-3,
 * and at lengths of whole postings up to 100 KB.
 */
static void test_crc32c_paths(void)
{
	size_t cap = 100 * 1024 + 8;
	uint8_t *big = malloc(cap);
	uint64_t s = 0x9e3779b97f4a7c15ull;
	unsigned np = hfr_crc32c_paths();
	static const size_t lens[] = {2048, 4096, 4095, 4097, 48 * 1024 + 96, 63652, 65536 + 31,
				      100 * 1024};

	assert_non_null(big);
	assert_true(np >= 1 && np <= 4);
	for (size_t i = 0; i < cap; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		big[i] = (uint8_t) (s >> 24);
	}
	for (unsigned path = 0; path < np; path++) {
		for (size_t k = 0; k <= 1100; k++) {
			size_t off = k & 3;
			uint32_t st = 0xA5A5F00Du ^ (uint32_t) (k * 2654435761u);
			uint32_t want = hfr_crc32c_path(0, st, big + off, k);

			assert_int_equal(hfr_crc32c_path(path, st, big + off, k), want);
		}
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			uint32_t want = hfr_crc32c_path(0, ~0u, big + 3, lens[i]);

			assert_int_equal(hfr_crc32c_path(path, ~0u, big + 3, lens[i]), want);
			assert_int_equal(~want, hfr_crc32c_sw(big + 3, lens[i]));
		}
	}
	/* the dispatched one-shot is the best path's */
	assert_int_equal(hfr_crc32c(big, 65536), ~hfr_crc32c_path(np - 1, ~0u, big, 65536));
	free(big);
}

/*
 * zlib's CRC-32 on every path equals zlib's crc32 itself, continued from a
 * value other than 0, at every length to 1,100 bytes (the fold's 64- and
 * 16-byte steps and tails under 16) and offset 0-3, at lengths of vector
 * slots and manifests, and for the standard check value; the dispatched one
 * is the best path's.
 */
static void test_crc32z(void **st)
{
	size_t cap = 300 * 1024 + 8;
	uint8_t *big = malloc(cap);
	uint64_t s = 0x2545f4914f6cdd1dull;
	unsigned np = hfr_crc32z_paths();
	static const size_t lens[] = {516, 3076, 4096, 65536 + 17, 300 * 1024};

	(void) st;
	assert_non_null(big);
	assert_true(np >= 1 && np <= 2);
	for (size_t i = 0; i < cap; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		big[i] = (uint8_t) (s >> 24);
	}
	for (unsigned path = 0; path < np; path++) {
		assert_int_equal(hfr_crc32z_path(path, 0, "123456789", 9), 0xCBF43926u);
		for (size_t k = 0; k <= 1100; k++) {
			size_t off = k & 3;
			uint32_t c0 = 0x5A5A0FF0u ^ (uint32_t) (k * 2654435761u);

			assert_int_equal(hfr_crc32z_path(path, c0, big + off, k),
					 (uint32_t) crc32(c0, big + off, (uInt) k));
		}
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
			assert_int_equal(hfr_crc32z_path(path, 0, big + 1, lens[i]),
					 (uint32_t) crc32(0L, big + 1, (uInt) lens[i]));
	}
	assert_int_equal(hfr_crc32z(0, big, 4096), hfr_crc32z_path(np - 1, 0, big, 4096));
	free(big);
}

/*
 * The query quantiser's CPU path equals the portable loop field for field:
 * random residuals at dp 64-512, values on the rounding's half-way points
 * (x.5 after scaling, both signs), a zero vector and one huge lane.
 */
static void test_quant_ex_paths(void **st)
{
	enum { DP = 512 };
	float qr[DP];
	int8_t a8[DP], a8p[DP], b8[DP], b8p[DP];
	uint64_t s = 0x9e3779b97f4a7c15ull;

	(void) st;
	for (int round = 0; round < 400; round++) {
		uint32_t dp = 64u * (1u + (uint32_t) round % 8);
		hfr_qx a = {.q8 = a8, .q8p = a8p}, b = {.q8 = b8, .q8p = b8p};

		for (uint32_t t = 0; t < dp; t++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			qr[t] = (float) ((double) (int64_t) s / 9.2e18) * (round % 3 ? 1.0f : 1e-3f);
		}
		if (round % 5 == 1) /* half-way points: mx = 127 makes the scale 1 */
			for (uint32_t t = 0; t < dp; t++)
				qr[t] = t == 0 ? 127.0f : (float) ((int) (t % 200) - 100) + (t & 1 ? 0.5f : -0.5f);
		if (round % 7 == 2)
			memset(qr, 0, sizeof(float) * dp);
		if (round % 11 == 3)
			qr[round % dp] = 3e38f;
		memset(a8, 0x55, sizeof(a8)), memset(b8, 0x55, sizeof(b8));
		memset(a8p, 0x55, sizeof(a8p)), memset(b8p, 0x55, sizeof(b8p));
		hfr_query_quant_ex(qr, dp, &a);
		hfr_query_quant_ex_ref(qr, dp, &b);
		assert_memory_equal(a8, b8, dp);
		assert_memory_equal(a8p, b8p, dp);
		assert_int_equal(a.sum8, b.sum8);
		assert_int_equal(a.dp, b.dp);
		assert_memory_equal(&a.step, &b.step, sizeof(float));
		assert_memory_equal(&a.qn2, &b.qn2, sizeof(float));
		assert_memory_equal(&a.qn, &b.qn, sizeof(float));
	}
}

/* CRC-32C: the standard check value, SSE4.2 and table paths agree; version-1 (zlib) records still read. */
static void test_crc32c(void **st)
{
	const uint32_t dp = 64;
	uint32_t n = 5, len = (uint32_t) hfr_post_disk_len(n, dp, 1), c;
	uint8_t buf[2000], *rec = calloc(1, len);
	uint64_t code[1] = {0xfedcba9876543210ull};
	hfr_fac f = {.add = 2, .rescale = -1, .err = 0.25f, .pop = 32};
	hfr_post_hdr h;
	cv_err e;

	(void) st;
	assert_int_equal(hfr_crc32c("123456789", 9), 0xE3069283u);
	assert_int_equal(hfr_crc32c_sw("123456789", 9), 0xE3069283u);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t) (i * 37 + 11);
	/* every length up to 1999 bytes: the three-chain stretches (768 bytes) and the tails */
	for (size_t k = 0; k < sizeof(buf) - 1; k++)
		assert_int_equal(hfr_crc32c(buf + 1, k), hfr_crc32c_sw(buf + 1, k));
	test_crc32c_paths();
	for (uint32_t i = 0; i < n; i++)
		hfr_entry_put(hfr_entry_at(rec, hfr_entry_size(dp, 1), i), dp, 1, i, 1, &f, code, NULL);
	hfr_post_seal(rec, 3, n, dp, 1);
	memcpy(&h, rec, sizeof(h));
	assert_int_equal(h.version, HFR_POST_VERSION);
	assert_int_equal(hfr_post_check(rec, len, dp, 1, 3, n, 1, NULL, &e), 0);
	/* the same record as version 1 wrote it: zlib CRC-32 over header (crc 0) and entries */
	h.version = HFR_POST_VERSION_ZLIB;
	h.crc = 0;
	memcpy(rec, &h, sizeof(h));
	c = (uint32_t) crc32(0L, rec, (uInt) (HFR_POST_HDR + n * hfr_entry_size(dp, 1)));
	h.crc = c;
	memcpy(rec, &h, sizeof(h));
	assert_int_equal(hfr_post_check(rec, len, dp, 1, 3, n, 1, NULL, &e), 0);
	rec[HFR_POST_HDR + 30] ^= 4;
	assert_int_equal(hfr_post_check(rec, len, dp, 1, 3, n, 1, NULL, &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "checksum"));
	rec[HFR_POST_HDR + 30] ^= 4;
	h.version = 3;
	memcpy(rec, &h, sizeof(h));
	assert_int_equal(hfr_post_check(rec, len, dp, 1, 3, n, 1, NULL, &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "version"));
	free(rec);
}

/*
 * SPFresh's RNG rule: with centroids on a line at 0, 1, 10 and x at 0.4,
 * candidate 1 (d(x,c)=0.36) is skipped because d(c1, c0)=1 > 0.36 is
 * false... we construct the cases explicitly below.
 */
static void test_rng_rule(void **st)
{
	/* centroids in 1-D: c0 = 0, c1 = 0.5, c2 = -3 */
	float cent[3] = {0.0f, 0.5f, -3.0f};
	uint32_t cand[3] = {0, 1, 2}, out[3];
	/* x = 0.2: d(x,c0)=0.04, d(x,c1)=0.09, d(x,c2)=10.24 */
	float dist[3] = {0.04f, 0.09f, 10.24f};
	size_t got;

	(void) st;
	/* strict (factor 1): c1 skipped since d(c1,c0)=0.25 > 0.09 -> kept! */
	got = hfr_rng_select(cent, 1, NULL, 3, cand, dist, 3, 1.0, 3, out);
	assert_int_equal(got, 2);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 1);
	/* c2: d(c2,c0)=9 <= 10.24, so the strict rule skips it */
	/* factor 0.1: c1 skipped because 0.1 * 0.25 <= 0.09 */
	got = hfr_rng_select(cent, 1, NULL, 3, cand, dist, 3, 0.1, 3, out);
	assert_int_equal(got, 1);
	/* Weaviate's relaxed 10: d(c2,c0)*10 = 90 > 10.24, kept */
	got = hfr_rng_select(cent, 1, NULL, 3, cand, dist, 3, 10.0, 3, out);
	assert_int_equal(got, 3);
	/* want caps the picks */
	got = hfr_rng_select(cent, 1, NULL, 3, cand, dist, 3, 10.0, 2, out);
	assert_int_equal(got, 2);
}

/* Balanced k-means: every cluster non-empty, none above twice the mean. */
static void test_kmeans_balance(void **st)
{
	cv_dataset *ds = t_data(4000, 16, 3, 9, 0); /* 3 blobs into 8 clusters */
	uint32_t *rows = malloc(sizeof(uint32_t) * ds->n), *as = malloc(sizeof(uint32_t) * ds->n);
	float cent[8 * 16];
	size_t cnt[8] = {0};

	(void) st;
	for (size_t i = 0; i < ds->n; i++)
		rows[i] = (uint32_t) i;
	assert_int_equal(hfr_kmeans(ds->data, rows, ds->n, 16, 8, 2, 1, cent, as), 0);
	for (size_t i = 0; i < ds->n; i++)
		cnt[as[i]]++;
	for (int j = 0; j < 8; j++) {
		assert_true(cnt[j] > 0);
		assert_true(cnt[j] <= 2 * ds->n / 8);
	}
	free(rows);
	free(as);
	t_data_free(ds);
}

/* Build a small index into a new directory. */
static char *small_index(cv_dataset **dsp, cv_metric m, unsigned replicas)
{
	cv_dataset *ds = t_data(3000, 24, 10, 5, m == CV_METRIC_IP);
	cv_build_opts o;
	char *dir = t_tmpdir();
	cv_err e = {{0}};

	cv_build_opts_default(&o);
	o.metric = m;
	o.max_posting_kb = 8;
	o.replicas = replicas;
	o.threads = 2;
	assert_int_equal(cv_index_build("hfresh", ds, &o, dir, &e), 0);
	*dsp = ds;
	return dir;
}

/* Placement: every posting within maxPostingSizeKB, replicas within the cap, RNG spread. */
static void test_build_placement(void **st)
{
	cv_dataset *ds;
	char *dir = small_index(&ds, CV_METRIC_L2, 4);
	hfr_meta m;
	cv_err e;
	uint64_t entries = 0;

	(void) st;
	assert_int_equal(hfr_meta_read(dir, &m, &e), 0);
	assert_true(m.nposts > 10);
	for (uint32_t p = 0; p < m.nposts; p++) {
		assert_true(m.posts[p].count <= m.max_entries);
		assert_true(HFR_POST_HDR + (uint64_t) m.posts[p].count * hfr_entry_size(m.dp, m.code_bits) <=
			    8 * 1024);
		entries += m.posts[p].count;
	}
	/* each vector at least once, at most 4 times; some replication happened */
	assert_true(entries >= ds->n);
	assert_true(entries <= 4 * ds->n);
	assert_true(entries > ds->n + ds->n / 10);
	assert_int_equal(cv_index_verify(dir, &e), 0);
	hfr_meta_free(&m);
	t_rmdir(dir);
	free(dir);
	t_data_free(ds);
}

/* Flip one byte at off of DIR/name. */
static void flip(const char *dir, const char *name, off_t off)
{
	char p[4200];
	unsigned char b;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, off), 1);
	b ^= 0x40;
	assert_int_equal(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

/* Corrupt postings, vectors, manifest: verify says -EBADMSG with a reason; queries never crash. */
static void test_corruption(void **st)
{
	cv_dataset *ds;
	char *dir = small_index(&ds, CV_METRIC_L2, 2);
	char p[4200];
	cv_err e;
	hfr_meta m;
	cv_index *ix;
	cv_query_opts qo;
	uint32_t ids[10];
	float dd[10];
	size_t n;
	int rc;

	(void) st;
	assert_int_equal(cv_index_verify(dir, &e), 0);
	assert_int_equal(hfr_meta_read(dir, &m, &e), 0);
	/* a bit flip inside posting 1's entries */
	flip(dir, "postings.0.dat", (off_t) m.posts[1].off + HFR_POST_HDR + 40);
	rc = cv_index_verify(dir, &e);
	assert_int_equal(rc, -EBADMSG);
	assert_non_null(strstr(e.msg, "checksum"));
	flip(dir, "postings.0.dat", (off_t) m.posts[1].off + HFR_POST_HDR + 40);
	assert_int_equal(cv_index_verify(dir, &e), 0);
	/* a flip in a posting header: the query path refuses it too */
	flip(dir, "postings.0.dat", (off_t) m.posts[0].off);
	assert_int_equal(cv_index_verify(dir, &e), -EBADMSG);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	cv_query_opts_default(&qo);
	qo.search_probe = m.nposts;
	rc = cv_index_query(ix, NULL, ds->data, &qo, ids, dd, &n, NULL);
	assert_int_equal(rc, -EBADMSG);
	cv_index_close(ix);
	flip(dir, "postings.0.dat", (off_t) m.posts[0].off);
	/* a vector slot */
	flip(dir, "vectors.dat", 8);
	assert_int_equal(cv_index_verify(dir, &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "vectors.dat"));
	flip(dir, "vectors.dat", 8);
	/* the manifest */
	flip(dir, "hfresh.meta", 200);
	assert_int_equal(cv_index_verify(dir, &e), -EBADMSG);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), -EBADMSG);
	flip(dir, "hfresh.meta", 200);
	assert_int_equal(cv_index_verify(dir, &e), 0);
	/* truncation of the postings file */
	snprintf(p, sizeof(p), "%s/postings.0.dat", dir);
	assert_int_equal(truncate(p, (off_t) m.postings_end - 4096), 0);
	rc = cv_index_verify(dir, &e);
	assert_int_equal(rc, -EBADMSG);
	assert_non_null(strstr(e.msg, "truncated"));
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), -EBADMSG);
	/* truncated manifest */
	snprintf(p, sizeof(p), "%s/hfresh.meta", dir);
	assert_int_equal(truncate(p, 100), 0);
	assert_int_equal(cv_index_verify(dir, &e), -EBADMSG);
	hfr_meta_free(&m);
	t_rmdir(dir);
	free(dir);
	t_data_free(ds);
}

/* Query q through a fresh cv_io (use_io 1 pread, 2 auto, 3 mmap; concurrent:8) or NULL io (0); the query's rc. */
static int query_io(cv_index *ix, const float *q, unsigned probe, int use_io, cv_block_list *bl,
		    cv_query_stats *qs)
{
	cv_query_opts qo;
	cv_io_opts io_o;
	cv_io *io = NULL;
	uint32_t ids[10];
	float dd[10];
	size_t n;
	int rc;

	cv_query_opts_default(&qo);
	qo.search_probe = probe;
	qo.rescore_limit = 50;
	qo.io_mode = CV_HIO_CONCURRENT;
	qo.io_depth = 8;
	qo.blocks = bl;
	if (use_io) {
		cv_io_opts_default(&io_o);
		io_o.strategy = use_io == 3 ? CV_IO_MMAP : use_io == 2 ? CV_IO_AUTO : CV_IO_PREAD;
		assert_int_equal(cv_io_new(&io_o, &io), 0);
	}
	rc = cv_index_query(ix, io, q, &qo, ids, dd, &n, qs);
	cv_io_free(io);
	return rc;
}

/* Every file of dir evicted; the resident pages left over all of them. */
static uint64_t evict_all(const char *dir)
{
	char **paths;
	size_t n;
	uint64_t left = 0;

	assert_int_equal(cv_index_files(dir, &paths, &n), 0);
	for (size_t i = 0; i < n; i++) {
		cv_residency r;

		assert_int_equal(cv_cache_evict(paths[i]), 0);
		assert_int_equal(cv_cache_residency(paths[i], &r), 0);
		left += r.resident;
	}
	cv_index_files_free(paths, n);
	return left;
}

/*
 * The auto strategy (views of resident postings and vectors, pread of the
 * rest) answers every query as pread and mmap do, bit for bit, serial and
 * concurrent; warm, it reads what pread reads and counts it the same; and
 * after cv_index_drop_buffers the index's files can be evicted whole (the
 * views' pages are no longer mapped), so a cold pass is cold: the first
 * query reads from the disk as pread does.
 */
static void test_auto_strategy(void **st)
{
	cv_dataset *ds;
	char *dir = small_index(&ds, CV_METRIC_L2, 2);
	static const cv_io_strategy strat[3] = {CV_IO_PREAD, CV_IO_AUTO, CV_IO_MMAP};
	cv_io *io[3];
	cv_index *ix;
	cv_err e;
	enum { NQ = 40 };
	uint32_t ids[3][NQ][10];
	float dd[3][NQ][10];
	size_t n[3][NQ];
	cv_io_stats s[3];

	(void) st;
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	for (int k = 0; k < 3; k++) {
		cv_io_opts io_o;

		cv_io_opts_default(&io_o);
		io_o.strategy = strat[k];
		assert_int_equal(cv_io_new(&io_o, &io[k]), 0);
	}
	for (int conc = 0; conc < 2; conc++) {
		cv_query_opts qo;

		cv_query_opts_default(&qo);
		qo.search_probe = 6;
		qo.rescore_limit = 30;
		qo.io_mode = conc ? CV_HIO_CONCURRENT : CV_HIO_SERIAL;
		memset(ids, 0, sizeof(ids));
		memset(dd, 0, sizeof(dd));
		for (int pass = 0; pass < 2; pass++) /* the second warm: auto's views */
			for (int k = 0; k < 3; k++) {
				cv_io_stats_reset(io[k]);
				for (size_t q = 0; q < NQ; q++)
					assert_int_equal(cv_index_query(ix, io[k], ds->data + (q * 37 % ds->n) * ds->d,
									&qo, ids[k][q], dd[k][q], &n[k][q], NULL), 0);
				cv_io_stats_get(io[k], &s[k]);
			}
		for (int k = 1; k < 3; k++) {
			assert_memory_equal(ids[0], ids[k], sizeof(ids[0]));
			assert_memory_equal(dd[0], dd[k], sizeof(dd[0]));
			assert_memory_equal(n[0], n[k], sizeof(n[0]));
			assert_int_equal(s[0].reads, s[k].reads);
			assert_int_equal(s[0].bytes, s[k].bytes);
		}
	}
	/* cold: every page of the index can go once the buffers (and mappings) are dropped */
	cv_index_drop_buffers(ix);
	if (evict_all(dir)) {
		cv_residency r;
		char **paths;
		size_t np;

		/* only where the file system cannot evict at all (tmpfs) is this a skip */
		assert_int_equal(cv_index_files(dir, &paths, &np), 0);
		assert_int_equal(cv_cache_residency(paths[0], &r), 0);
		cv_index_files_free(paths, np);
		assert_true(r.resident > 0 && r.resident == r.pages);
	} else {
		uint32_t i1[10];
		float d1[10];
		size_t n1;
		cv_query_opts qo;

		cv_query_opts_default(&qo);
		qo.search_probe = 6;
		qo.rescore_limit = 30;
		cv_io_stats_reset(io[1]);
		for (int t = 0; t < 2; t++) /* cold, read by pread; then warm, by views */
			assert_int_equal(cv_index_query(ix, io[1], ds->data, &qo, i1, d1, &n1, NULL), 0);
		cv_io_stats_get(io[1], &s[1]);
		assert_true(s[1].reads > 0);
		assert_true(evict_all(dir) > 0); /* auto's views map pages: they stay ... */
		cv_index_drop_buffers(ix);
		assert_int_equal(evict_all(dir), 0); /* ... until the buffers are dropped */
	}
	for (int k = 0; k < 3; k++)
		cv_io_free(io[k]);
	cv_index_close(ix);
	t_rmdir(dir);
	free(dir);
	t_data_free(ds);
}

/* Queries check posting and vector-slot checksums: a flipped body bit is -EBADMSG, not an answer. */
static void test_query_integrity(void **st)
{
	cv_dataset *ds;
	char *dir = small_index(&ds, CV_METRIC_L2, 2);
	cv_err e;
	hfr_meta m;
	cv_index *ix;
	uint64_t voff;

	(void) st;
	assert_int_equal(hfr_meta_read(dir, &m, &e), 0);
	/* a bit deep in posting 1's entries (the header stays valid) */
	flip(dir, "postings.0.dat", (off_t) m.posts[1].off + HFR_POST_HDR +
	     (off_t) (m.posts[1].count / 2) * hfr_entry_size(m.dp, m.code_bits) + 30);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	for (int use_io = 0; use_io < 4; use_io++)
		assert_int_equal(query_io(ix, ds->data, m.nposts, use_io, NULL, NULL), -EBADMSG);
	cv_index_close(ix);
	flip(dir, "postings.0.dat", (off_t) m.posts[1].off + HFR_POST_HDR +
	     (off_t) (m.posts[1].count / 2) * hfr_entry_size(m.dp, m.code_bits) + 30);
	/* a bit in vector 7's slot: querying vector 7 itself rescores it */
	voff = hfr_vec_off(&m, 7) + 4 * 5;
	flip(dir, "vectors.dat", (off_t) voff);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	for (int use_io = 0; use_io < 4; use_io++)
		assert_int_equal(query_io(ix, ds->data + 7 * ds->d, 8, use_io, NULL, NULL), -EBADMSG);
	cv_index_close(ix);
	flip(dir, "vectors.dat", (off_t) voff);
	/* repaired: the same queries answer */
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	for (int use_io = 0; use_io < 4; use_io++) {
		assert_int_equal(query_io(ix, ds->data, m.nposts, use_io, NULL, NULL), 0);
		assert_int_equal(query_io(ix, ds->data + 7 * ds->d, 8, use_io, NULL, NULL), 0);
	}
	cv_index_close(ix);
	hfr_meta_free(&m);
	t_rmdir(dir);
	free(dir);
	t_data_free(ds);
}

/*
 * An entry whose version is not current is not scored, on the query path
 * for extended codes and one replica with no update seen (no version map
 * to consult: score_posting lists every entry and drops the dead ones only
 * when one is there). The entry of vector 7, its version set to 2 and its
 * posting resealed (verify calls that damage): querying vector 7 itself no
 * longer finds it.
 */
/*
 * The exact centroid scan's bf16 prescan changes nothing: for each metric,
 * handles opened with it off (COLDSTUDY_CENTROID_PRESCAN=0), on (the CPU's
 * kernel) and on with the portable sum ("ref") answer every query with the
 * same ids, the same distances bit for bit and the same reads (so the same
 * postings), at probes 1-12, for the data's rows, rows pushed 40% of the
 * way out of their cluster, and far-away queries; and the prescan did rule
 * centroids out (it is not a no-op that agrees trivially).
 */
static void test_centroid_prescan(void **st)
{
	static const cv_metric metrics[] = {CV_METRIC_L2, CV_METRIC_COSINE, CV_METRIC_IP};
	static const char *const modes[] = {"0", NULL, "ref"};
	const char *saved = getenv("COLDSTUDY_CENTROID_PRESCAN");
	uint64_t pruned0 = hfr_centroid_prescan_pruned();

	(void) st;
	for (size_t mi = 0; mi < 3; mi++) {
		cv_dataset *ds;
		char *dir = small_index(&ds, metrics[mi], 1);
		cv_index *ix[3];
		cv_err e;
		float *q = malloc(sizeof(float) * ds->d);

		assert_non_null(q);
		for (int h = 0; h < 3; h++) {
			if (modes[h])
				setenv("COLDSTUDY_CENTROID_PRESCAN", modes[h], 1);
			else
				unsetenv("COLDSTUDY_CENTROID_PRESCAN");
			assert_int_equal(cv_index_open(dir, NULL, &ix[h], &e), 0);
		}
		for (size_t i = 0; i < 300; i++) {
			const float *x = ds->data + (i * 7 % ds->n) * ds->d;
			const float *y = ds->data + ((i * 13 + 1) % ds->n) * ds->d;

			for (size_t t = 0; t < ds->d; t++) /* near a row, between two, far off */
				q[t] = i % 3 == 0 ? x[t] : i % 3 == 1 ? 0.6f * x[t] + 0.4f * y[t] : 25.0f * x[t] - 3.0f;
			for (size_t probe = 1; probe <= 12; probe += 1 + probe / 4) {
				cv_query_opts qo;
				uint32_t ids[3][10];
				float dd[3][10];
				size_t n[3];
				cv_query_stats qs[3];

				cv_query_opts_default(&qo);
				qo.k = 10;
				qo.search_probe = probe;
				for (int h = 0; h < 3; h++) {
					memset(&qs[h], 0, sizeof(qs[h]));
					assert_int_equal(cv_index_query(ix[h], NULL, q, &qo, ids[h], dd[h], &n[h], &qs[h]),
							 0);
				}
				for (int h = 1; h < 3; h++) {
					assert_int_equal(n[h], n[0]);
					assert_memory_equal(ids[h], ids[0], n[0] * sizeof(uint32_t));
					assert_memory_equal(dd[h], dd[0], n[0] * sizeof(float));
					assert_int_equal(qs[h].reads, qs[0].reads);
					assert_int_equal(qs[h].bytes, qs[0].bytes);
				}
			}
		}
		for (int h = 0; h < 3; h++)
			cv_index_close(ix[h]);
		free(q);
		t_rmdir(dir);
		free(dir);
		t_data_free(ds);
	}
	if (saved)
		setenv("COLDSTUDY_CENTROID_PRESCAN", saved, 1);
	else
		unsetenv("COLDSTUDY_CENTROID_PRESCAN");
	print_message("prescan ruled out %llu centroids\n",
		      (unsigned long long) (hfr_centroid_prescan_pruned() - pruned0));
	assert_true(hfr_centroid_prescan_pruned() > pruned0);
}

static void test_dead_entry(void **st)
{
	cv_dataset *ds;
	char *dir = small_index(&ds, CV_METRIC_L2, 1);
	char path[4200];
	cv_err e;
	hfr_meta m;
	cv_index *ix;
	cv_query_opts qo;
	uint32_t ids[10], es, found = UINT32_MAX, fp = 0;
	float dd[10];
	size_t n;
	uint8_t *buf = NULL;
	int fd;

	(void) st;
	assert_int_equal(hfr_meta_read(dir, &m, &e), 0);
	assert_true(m.code_bits > 1);
	assert_int_equal(m.replicas, 1);
	es = hfr_entry_size(m.dp, m.code_bits);
	cv_query_opts_default(&qo);
	qo.k = 10;
	qo.search_probe = m.nposts;
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	assert_int_equal(cv_index_query(ix, NULL, ds->data + 7 * ds->d, &qo, ids, dd, &n, NULL), 0);
	assert_int_equal(n, 10);
	assert_int_equal(ids[0], 7);
	cv_index_close(ix);
	hfr_postings_path(dir, m.postings_gen, path, sizeof(path));
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	for (uint32_t p = 0; p < m.nposts && found == UINT32_MAX; p++) {
		if (!m.posts[p].alive || !m.posts[p].count)
			continue;
		free(buf);
		buf = malloc(m.posts[p].len);
		assert_non_null(buf);
		assert_int_equal(pread(fd, buf, m.posts[p].len, (off_t) m.posts[p].off),
				 (ssize_t) m.posts[p].len);
		for (uint32_t i = 0; i < m.posts[p].count; i++) {
			uint32_t id;

			memcpy(&id, hfr_entry_at(buf, es, i), 4);
			if (id == 7) {
				found = i;
				fp = p;
				break;
			}
		}
	}
	assert_true(found != UINT32_MAX);
	memcpy(hfr_entry_at(buf, es, found) + 4, &(uint32_t){2}, 4);
	hfr_post_seal(buf, fp, m.posts[fp].count, m.dp, m.code_bits);
	assert_int_equal(pwrite(fd, buf, m.posts[fp].len, (off_t) m.posts[fp].off),
			 (ssize_t) m.posts[fp].len);
	close(fd);
	/* a version newer than the map's is damage to verify; a query only drops the entry */
	assert_int_equal(cv_index_verify(dir, &e), -EBADMSG);
	assert_non_null(strstr(e.msg, "not in the version map"));
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	assert_int_equal(cv_index_query(ix, NULL, ds->data + 7 * ds->d, &qo, ids, dd, &n, NULL), 0);
	assert_int_equal(n, 10);
	for (size_t i = 0; i < n; i++)
		assert_int_not_equal(ids[i], 7);
	/* vector 8's entry is live still */
	assert_int_equal(cv_index_query(ix, NULL, ds->data + 8 * ds->d, &qo, ids, dd, &n, NULL), 0);
	assert_int_equal(ids[0], 8);
	cv_index_close(ix);
	free(buf);
	hfr_meta_free(&m);
	t_rmdir(dir);
	free(dir);
	t_data_free(ds);
}

/* cv_query_opts.blocks records every 4 KiB block of the postings and slots a query read. */
static void test_block_list(void **st)
{
	cv_dataset *ds;
	char *dir = small_index(&ds, CV_METRIC_L2, 2);
	cv_block_list bl = {0};
	cv_query_stats qs = {0};
	char **files = NULL;
	size_t nf = 0, npost = 0, nvec = 0;
	cv_index *ix;
	cv_err e;
	hfr_meta m;
	uint32_t fp = UINT32_MAX, fv = UINT32_MAX;

	(void) st;
	assert_int_equal(hfr_meta_read(dir, &m, &e), 0);
	assert_int_equal(cv_index_files(dir, &files, &nf), 0);
	for (size_t i = 0; i < nf; i++) {
		if (strstr(files[i], "/postings.0.dat"))
			fp = (uint32_t) i;
		if (strstr(files[i], "/vectors.dat"))
			fv = (uint32_t) i;
	}
	assert_true(fp != UINT32_MAX && fv != UINT32_MAX);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	assert_int_equal(query_io(ix, ds->data + 3 * ds->d, 6, 1, &bl, &qs), 0);
	for (size_t i = 0; i < bl.n; i++) {
		assert_true(bl.file[i] == fp || bl.file[i] == fv);
		if (bl.file[i] == fp) {
			assert_true(bl.block[i] * HFR_BLOCK < m.postings_end);
			npost++;
		} else {
			assert_true(bl.block[i] <= hfr_vec_off(&m, m.nids - 1) / HFR_BLOCK);
			nvec++;
		}
	}
	/* one block per 4 KiB of each posting read, one per rescoring read */
	assert_int_equal(npost * HFR_BLOCK, qs.bytes - qs.rescore_reads * hfr_vec_read_len(&m));
	assert_int_equal(qs.posting_reads, 6);
	assert_int_equal(nvec, qs.rescore_reads);
	assert_true(nvec > 0);
	/* vector 3's own slot was read (it is its own nearest neighbour) */
	{
		int found = 0;

		for (size_t i = 0; i < bl.n; i++)
			found |= bl.file[i] == fv && bl.block[i] == hfr_vec_off(&m, 3) / HFR_BLOCK;
		assert_true(found);
	}
	cv_index_close(ix);
	free(bl.file);
	free(bl.block);
	cv_index_files_free(files, nf);
	hfr_meta_free(&m);
	t_rmdir(dir);
	free(dir);
	t_data_free(ds);
}

/* Bad build options are refused with a message. */
static void test_bad_opts(void **st)
{
	cv_dataset *ds = t_data(100, 8, 2, 1, 0);
	cv_build_opts o;
	char *dir = t_tmpdir();
	cv_err e;

	(void) st;
	cv_build_opts_default(&o);
	o.max_posting_kb = 4;
	assert_int_equal(cv_index_build("hfresh", ds, &o, dir, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "max-posting-kb"));
	cv_build_opts_default(&o);
	o.replicas = 11;
	assert_int_equal(cv_index_build("hfresh", ds, &o, dir, &e), -EINVAL);
	cv_build_opts_default(&o);
	o.code_bits = 5;
	assert_int_equal(cv_index_build("hfresh", ds, &o, dir, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "code-bits"));
	t_rmdir(dir);
	free(dir);
	t_data_free(ds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rotation),
		cmocka_unit_test(test_estimator),
		cmocka_unit_test(test_estimator_paths_agree),
		cmocka_unit_test(test_posting_codec),
		cmocka_unit_test(test_ex_estimator),
		cmocka_unit_test(test_ex_paths_agree),
		cmocka_unit_test(test_ex_posting_codec),
		cmocka_unit_test(test_crc32c),
		cmocka_unit_test(test_crc32z),
		cmocka_unit_test(test_quant_ex_paths),
		cmocka_unit_test(test_centroid_prescan),
		cmocka_unit_test(test_ex_entries_agree),
		cmocka_unit_test(test_rng_rule),
		cmocka_unit_test(test_kmeans_balance),
		cmocka_unit_test(test_build_placement),
		cmocka_unit_test(test_corruption),
		cmocka_unit_test(test_query_integrity),
		cmocka_unit_test(test_auto_strategy),
		cmocka_unit_test(test_dead_entry),
		cmocka_unit_test(test_block_list),
		cmocka_unit_test(test_bad_opts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
