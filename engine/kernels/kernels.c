/*
 * kernels.c - the scalar kernels, the cpuid dispatch and the public
 * distance functions.
 *
 * The scalar kernels keep four float accumulators (as the SIMD ones keep
 * four vector accumulators) so the dependency chain of the sum is short;
 * the compiler may not reorder float additions itself.
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

float cvk_l2sq_scalar(const float *a, const float *b, size_t d)
{
	float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	size_t i = 0;

	for (; i + 4 <= d; i += 4) {
		float t0 = a[i] - b[i], t1 = a[i + 1] - b[i + 1];
		float t2 = a[i + 2] - b[i + 2], t3 = a[i + 3] - b[i + 3];

		s0 += t0 * t0;
		s1 += t1 * t1;
		s2 += t2 * t2;
		s3 += t3 * t3;
	}
	for (; i < d; i++) {
		float t = a[i] - b[i];

		s0 += t * t;
	}
	return (s0 + s1) + (s2 + s3);
}

float cvk_dot_scalar(const float *a, const float *b, size_t d)
{
	float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	size_t i = 0;

	for (; i + 4 <= d; i += 4) {
		s0 += a[i] * b[i];
		s1 += a[i + 1] * b[i + 1];
		s2 += a[i + 2] * b[i + 2];
		s3 += a[i + 3] * b[i + 3];
	}
	for (; i < d; i++)
		s0 += a[i] * b[i];
	return (s0 + s1) + (s2 + s3);
}

float cvk_cosine_finish(float dot, float na, float nb)
{
	double den;

	if (na == 0 || nb == 0)
		return 1.0f;
	den = sqrt((double) na * (double) nb);
	return (float) (1.0 - (double) dot / den);
}

float cvk_cosine_scalar(const float *a, const float *b, size_t d)
{
	float ab0 = 0, ab1 = 0, aa0 = 0, aa1 = 0, bb0 = 0, bb1 = 0;
	size_t i = 0;

	for (; i + 2 <= d; i += 2) {
		ab0 += a[i] * b[i];
		ab1 += a[i + 1] * b[i + 1];
		aa0 += a[i] * a[i];
		aa1 += a[i + 1] * a[i + 1];
		bb0 += b[i] * b[i];
		bb1 += b[i + 1] * b[i + 1];
	}
	for (; i < d; i++) {
		ab0 += a[i] * b[i];
		aa0 += a[i] * a[i];
		bb0 += b[i] * b[i];
	}
	return cvk_cosine_finish(ab0 + ab1, aa0 + aa1, bb0 + bb1);
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
