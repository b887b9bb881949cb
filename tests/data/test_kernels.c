/*
 * test_kernels.c - every kernel level the CPU has against a double
 * precision reference, on dimensions 1..257, 784 and 1536, at unaligned
 * addresses, with each vector ending right before an unmapped page (so a
 * kernel that reads past its last float crashes the test).
 *
 * Every SIMD level must return the scalar level's bits (one summation
 * order, kernels.h). Against double precision the tolerance is the proven
 * bound for float summation in any order,
 * |err| <= (d + 1) u sum |terms| with u = 2^-24 (Higham, Thm. 3.1); a
 * wrong kernel is off by whole terms, far outside it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "coldvec.h"
#include "kernels/kernels.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define U 0x1.0p-24

static const char *levels[] = {"scalar", "avx2", "avx512"};

/* A region whose end is followed by a PROT_NONE page. */
typedef struct guarded {
	unsigned char *base;
	size_t len, usable;
} guarded;

static void guarded_new(guarded *g, size_t bytes)
{
	size_t pg = (size_t) sysconf(_SC_PAGESIZE);

	g->usable = (bytes + pg - 1) / pg * pg;
	g->len = g->usable + pg;
	g->base = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(g->base != MAP_FAILED);
	assert_int_equal(mprotect(g->base + g->usable, pg, PROT_NONE), 0);
}

/* d floats ending exactly at the guard page (the address is 4-byte aligned only). */
static float *guarded_tail(guarded *g, size_t d)
{
	return (float *) (void *) (g->base + g->usable - d * sizeof(float));
}

static uint64_t rng = 0x1234567;

static float frand(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (float) ((double) (rng >> 40) / (double) (1ull << 24) * 2.0 - 1.0);
}

static void check_level(const cvk_ops *o, size_t d, const float *a, const float *b)
{
	double l2 = 0, l2abs = 0, dot = 0, dotabs = 0, na = 0, nb = 0, cosr, tol;
	float gl2 = o->l2sq(a, b, d), gdot = o->dot(a, b, d), gcos = o->cosine_dist(a, b, d);

	for (size_t i = 0; i < d; i++) {
		double t = (double) a[i] - b[i];

		l2 += t * t;
		dot += (double) a[i] * b[i];
		dotabs += fabs((double) a[i] * b[i]);
		na += (double) a[i] * a[i];
		nb += (double) b[i] * b[i];
	}
	l2abs = l2;
	cosr = 1.0 - dot / sqrt(na * nb);
	/* l2: each term (a-b)^2 carries 3u of its own; the sum (d+1)u */
	tol = ((double) d + 4) * U * l2abs + 1e-30;
	if (fabs(gl2 - l2) > tol)
		fail_msg("%s l2sq d=%zu: %.9g vs %.9g (tol %.3g)", o->name, d, gl2, l2, tol);
	tol = ((double) d + 2) * U * dotabs + 1e-30;
	if (fabs(gdot - dot) > tol)
		fail_msg("%s dot d=%zu: %.9g vs %.9g (tol %.3g)", o->name, d, gdot, dot, tol);
	/* cosine: three sums each within (d+2)u relative to sqrt(na nb) by Cauchy-Schwarz */
	tol = 3.0 * ((double) d + 4) * U + 1e-7;
	if (fabs(gcos - cosr) > tol)
		fail_msg("%s cosine d=%zu: %.9g vs %.9g (tol %.3g)", o->name, d, gcos, cosr, tol);
}

static void test_levels_vs_reference(void **state)
{
	size_t dims[260], nd = 0;
	guarded ga, gb;
	int tested = 0;

	for (size_t d = 1; d <= 257; d++)
		dims[nd++] = d;
	dims[nd++] = 784;
	dims[nd++] = 1536;
	guarded_new(&ga, 1600 * 4 + 64);
	guarded_new(&gb, 1600 * 4 + 64);
	for (int l = 0; l < 3; l++) {
		const cvk_ops *o = cvk_level(levels[l]);

		if (!o)
			continue;
		tested++;
		for (size_t i = 0; i < nd; i++) {
			size_t d = dims[i];
			float *a = guarded_tail(&ga, d), *b = guarded_tail(&gb, d);

			for (size_t j = 0; j < d; j++) {
				a[j] = frand();
				b[j] = frand() * 3.0f;
			}
			check_level(o, d, a, b);
			/* the same data one float lower: a different misalignment */
			memmove(a - 1, a, d * sizeof(float));
			memmove(b - 3, b, d * sizeof(float));
			check_level(o, d, a - 1, b - 3);
		}
	}
	assert_true(tested >= 1);
	munmap(ga.base, ga.len);
	munmap(gb.base, gb.len);
}

/* The bits of f. */
static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* A sequential sum (one lane): the order the reference does not use. */
static float dot_sequential(const float *a, const float *b, size_t d)
{
	float s = 0;

	for (size_t i = 0; i < d; i++)
		s = fmaf(a[i], b[i], s);
	return s;
}

/*
 * Every level the CPU has returns the portable (scalar) level's bits, on
 * dimensions 1..257, 784 and 1536, at two misalignments, with values over
 * six orders of magnitude so that any other summation order rounds
 * differently (checked: a sequential sum differs from the reference on
 * most dimensions, so equal bits are not an accident of exact sums).
 */
static void test_levels_bit_equal(void **state)
{
	size_t dims[260], nd = 0, order_matters = 0, compared = 0;
	const cvk_ops *ref = cvk_level("scalar");
	guarded ga, gb;

	(void) state;
	assert_non_null(ref);
	for (size_t d = 1; d <= 257; d++)
		dims[nd++] = d;
	dims[nd++] = 784;
	dims[nd++] = 1536;
	guarded_new(&ga, 1600 * 4 + 64);
	guarded_new(&gb, 1600 * 4 + 64);
	for (size_t i = 0; i < nd; i++) {
		size_t d = dims[i];
		float *a = guarded_tail(&ga, d), *b = guarded_tail(&gb, d);

		for (size_t j = 0; j < d; j++) {
			a[j] = frand() * ldexpf(1.0f, (int) (j % 20) - 10);
			b[j] = frand() * 255.0f;
		}
		for (int shift = 0; shift < 2; shift++) {
			float *x = a - shift, *y = b - 3 * shift, rl2, rdot, rcos;

			if (shift) { /* the same data lower: another misalignment */
				memmove(x, a, d * sizeof(float));
				memmove(y, b, d * sizeof(float));
			}
			rl2 = ref->l2sq(x, y, d);
			rdot = ref->dot(x, y, d);
			rcos = ref->cosine_dist(x, y, d);
			if (bits(dot_sequential(x, y, d)) != bits(rdot))
				order_matters++;
			for (int l = 1; l < 3; l++) {
				const cvk_ops *o = cvk_level(levels[l]);

				if (!o)
					continue;
				compared++;
				if (bits(o->l2sq(x, y, d)) != bits(rl2) || bits(o->dot(x, y, d)) != bits(rdot) ||
				    bits(o->cosine_dist(x, y, d)) != bits(rcos))
					fail_msg("%s d=%zu shift %d: l2 %a/%a dot %a/%a cos %a/%a", o->name, d,
						 shift, (double) o->l2sq(x, y, d), (double) rl2,
						 (double) o->dot(x, y, d), (double) rdot,
						 (double) o->cosine_dist(x, y, d), (double) rcos);
			}
		}
	}
	/* the sums are order-sensitive on this data */
	assert_true(order_matters > nd / 2);
	munmap(ga.base, ga.len);
	munmap(gb.base, gb.len);
	if (!compared)
		skip(); /* no SIMD level on this CPU: nothing to compare */
}

static void test_dispatch(void **state)
{
	const cvk_ops *best = cvk_best();
	float a[3] = {1, 2, 3}, b[3] = {3, 2, 1}, z[3] = {0, 0, 0};

	assert_non_null(best);
	assert_int_equal(cv_simd_force("sse9"), -ENOTSUP);
	assert_null(cvk_level("nope"));
	for (int l = 0; l < 3; l++) {
		if (!cvk_level(levels[l])) {
			assert_int_equal(cv_simd_force(levels[l]), -ENOTSUP);
			continue;
		}
		assert_int_equal(cv_simd_force(levels[l]), 0);
		assert_string_equal(cv_simd_level(), levels[l]);
		assert_true(cvk_active() == cvk_level(levels[l]));
		assert_true(cv_l2sq(a, b, 3) == 8.0f);
		assert_true(cv_dot(a, b, 3) == 10.0f);
		assert_true(cv_distance(CV_METRIC_IP, a, b, 3) == -10.0f);
		assert_true(cv_distance(CV_METRIC_L2, a, b, 3) == 8.0f);
		assert_true(fabsf(cv_distance(CV_METRIC_COSINE, a, b, 3) - (1.0f - 10.0f / 14.0f)) < 1e-6f);
		assert_true(cv_cosine_dist(a, z, 3) == 1.0f);
		assert_true(cv_cosine_dist(a, a, 3) < 1e-6f);
	}
	assert_int_equal(cv_simd_force(best->name), 0);
	/* the machine this project targets has AVX-512; say so if a CPU that has it is not using it */
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		assert_string_equal(best->name, "avx512");
}

static void test_batch_helpers(void **state)
{
	float base[7 * 33], q[33], out1[7], out2[7];
	const float *rows[7];

	for (int i = 0; i < 7 * 33; i++)
		base[i] = frand();
	for (int i = 0; i < 33; i++)
		q[i] = frand();
	for (int m = 0; m < 3; m++) {
		for (int i = 0; i < 7; i++)
			rows[i] = base + (6 - i) * 33;
		cvk_distance_rows((cv_metric) m, q, base, 7, 33, out1);
		cvk_distance_many((cv_metric) m, q, rows, 7, 33, out2);
		for (int i = 0; i < 7; i++) {
			assert_true(out1[i] == cv_distance((cv_metric) m, q, base + i * 33, 33));
			assert_true(out2[i] == out1[6 - i]);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_levels_vs_reference),
		cmocka_unit_test(test_levels_bit_equal),
		cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_batch_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
