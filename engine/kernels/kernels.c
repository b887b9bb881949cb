/*
 * kernels.c - the scalar kernels, the cpuid dispatch and the public
 * distance functions.
 *
 * The scalar kernels are the portable reference: 64 lanes of fused
 * multiply-adds and one fixed reduction tree (below), which the SIMD levels
 * reproduce exactly, so all levels agree bit for bit.
 *
 * Dispatch: a pointer to the active cvk_ops, set once on first use from
 * __builtin_cpu_supports and read with relaxed atomics afterwards (a
 * racing first use picks the same answer twice). cv_simd_force swaps it.
 */
#include "kernels.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * The portable reference. Element i of a sum goes to lane i mod 64 with
 * one fused multiply-add (fmaf: one rounding, as the vector FMA), lanes
 * past d stay 0, and the lanes are added by cvk_reduce64's fixed tree. The
 * SIMD levels keep exactly these lanes in their registers, so every level
 * returns the same bits. On a CPU without FMA, fmaf is libm's exact
 * software fma: slow, but such a CPU has no SIMD level here either.
 */
float cvk_reduce64(const float lanes[64])
{
	float m[16], n[8], o[4], p0, p1;

	for (int j = 0; j < 16; j++)
		m[j] = (lanes[j] + lanes[16 + j]) + (lanes[32 + j] + lanes[48 + j]);
	for (int j = 0; j < 8; j++)
		n[j] = m[j] + m[8 + j];
	for (int j = 0; j < 4; j++)
		o[j] = n[j] + n[4 + j];
	p0 = o[0] + o[2];
	p1 = o[1] + o[3];
	return p0 + p1;
}

float cvk_l2sq_scalar(const float *a, const float *b, size_t d)
{
	float lanes[64] = {0};

	for (size_t i = 0; i < d; i++) {
		float t = a[i] - b[i];

		lanes[i & 63] = fmaf(t, t, lanes[i & 63]);
	}
	return cvk_reduce64(lanes);
}

float cvk_dot_scalar(const float *a, const float *b, size_t d)
{
	float lanes[64] = {0};

	for (size_t i = 0; i < d; i++)
		lanes[i & 63] = fmaf(a[i], b[i], lanes[i & 63]);
	return cvk_reduce64(lanes);
}

/* Three reference sums: a.b, a.a and b.b, each as cvk_dot_scalar adds it. */
float cvk_cosine_scalar(const float *a, const float *b, size_t d)
{
	return cvk_cosine_finish(cvk_dot_scalar(a, b, d), cvk_dot_scalar(a, a, d),
				 cvk_dot_scalar(b, b, d));
}

static const cvk_ops ops_scalar = {"scalar", cvk_l2sq_scalar, cvk_dot_scalar, cvk_cosine_scalar};
static const cvk_ops ops_avx2 = {"avx2", cvk_l2sq_avx2, cvk_dot_avx2, cvk_cosine_avx2};
static const cvk_ops ops_avx512 = {"avx512", cvk_l2sq_avx512, cvk_dot_avx512, cvk_cosine_avx512};

static const cvk_ops *active;

const cvk_ops *cvk_best(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		return &ops_avx512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return &ops_avx2;
	return &ops_scalar;
}

/* The rank of a level: 0 scalar, 1 avx2, 2 avx512. */
static int rank(const cvk_ops *o)
{
	return o == &ops_avx512 ? 2 : o == &ops_avx2 ? 1 : 0;
}

const cvk_ops *cvk_level(const char *name)
{
	const cvk_ops *best = cvk_best(), *o;

	if (!name)
		return NULL;
	if (!strcmp(name, "scalar"))
		o = &ops_scalar;
	else if (!strcmp(name, "avx2"))
		o = &ops_avx2;
	else if (!strcmp(name, "avx512"))
		o = &ops_avx512;
	else
		return NULL;
	return rank(o) <= rank(best) ? o : NULL;
}

/* Choose the level once: the best the CPU has, lowered by $COLDSTUDY_SIMD. */
static const cvk_ops *choose(void)
{
	const char *env = getenv("COLDSTUDY_SIMD");
	const cvk_ops *o = env ? cvk_level(env) : NULL;

	return o ? o : cvk_best();
}

const cvk_ops *cvk_active(void)
{
	const cvk_ops *o = __atomic_load_n(&active, __ATOMIC_ACQUIRE);

	if (__builtin_expect(!o, 0)) {
		o = choose();
		__atomic_store_n(&active, o, __ATOMIC_RELEASE);
	}
	return o;
}

void cvk_distance_many(cv_metric m, const float *q, const float *const *rows, size_t n, size_t d,
		       float *out)
{
	const cvk_ops *o = cvk_active();

	if (n > 0)
		cvk_prefetch(rows[0], d * sizeof(float));
	if (n > 1)
		cvk_prefetch(rows[1], d * sizeof(float));
	for (size_t i = 0; i < n; i++) {
		if (i + 2 < n)
			cvk_prefetch(rows[i + 2], d * sizeof(float));
		switch (m) {
		case CV_METRIC_IP: out[i] = -o->dot(q, rows[i], d); break;
		case CV_METRIC_COSINE: out[i] = o->cosine_dist(q, rows[i], d); break;
		default: out[i] = o->l2sq(q, rows[i], d); break;
		}
	}
}

void cvk_distance_rows(cv_metric m, const float *q, const float *base, size_t n, size_t d,
		       float *out)
{
	const cvk_ops *o = cvk_active();

	for (size_t i = 0; i < n; i++) {
		const float *r = base + i * d;

		switch (m) {
		case CV_METRIC_IP: out[i] = -o->dot(q, r, d); break;
		case CV_METRIC_COSINE: out[i] = o->cosine_dist(q, r, d); break;
		default: out[i] = o->l2sq(q, r, d); break;
		}
	}
}

/* Squared Euclidean distance at the active level. */
CV_API float cv_l2sq(const float *a, const float *b, size_t d)
{
	return cvk_active()->l2sq(a, b, d);
}

/* Inner product at the active level. */
CV_API float cv_dot(const float *a, const float *b, size_t d)
{
	return cvk_active()->dot(a, b, d);
}

/* 1 - cosine similarity at the active level; 1 when either vector is zero. */
CV_API float cv_cosine_dist(const float *a, const float *b, size_t d)
{
	return cvk_active()->cosine_dist(a, b, d);
}

/* The metric's distance (smaller is nearer); IP is the negated dot product. */
CV_API float cv_distance(cv_metric m, const float *a, const float *b, size_t d)
{
	switch (m) {
	case CV_METRIC_L2: return cv_l2sq(a, b, d);
	case CV_METRIC_IP: return -cv_dot(a, b, d);
	case CV_METRIC_COSINE: return cv_cosine_dist(a, b, d);
	}
	return 0;
}

/* The name of the active level. */
CV_API const char *cv_simd_level(void)
{
	return cvk_active()->name;
}

/* Make level the active one; -ENOTSUP if unknown or the CPU lacks it. */
CV_API int cv_simd_force(const char *level)
{
	const cvk_ops *o = cvk_level(level);

	if (!o)
		return -ENOTSUP;
	__atomic_store_n(&active, o, __ATOMIC_RELEASE);
	return 0;
}
