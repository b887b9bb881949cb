/*
 * kernels.h - private: the distance kernels at each SIMD level, and batch
 * helpers for the indexes.
 *
 * Every level computes the same sums (sum (a-b)^2, sum a*b, and for cosine
 * sum a*b, sum a*a, sum b*b) over float32 in one fixed order, so the
 * levels agree bit for bit: element i is added into lane i mod 64 by a
 * fused multiply-add (one rounding), lanes past d stay 0, and the 64
 * lanes are added by cvk_reduce64's tree: m[j] = (l[j] + l[16+j]) +
 * (l[32+j] + l[48+j]) for j < 16, then halves added pairwise (j + 8,
 * j + 4, j + 2, j + 1) down to one. AVX-512 holds the lanes in four
 * registers of 16, AVX2 in eight of 8, the scalar level in an array.
 * No alignment is required at any level; tails are handled with masked
 * loads, so a kernel never reads past a + d or b + d.
 *
 * The level is chosen once, on first use, from cpuid
 * (__builtin_cpu_supports): avx512f -> "avx512", avx2 + fma -> "avx2",
 * else "scalar". $COLDSTUDY_SIMD (scalar|avx2|avx512) lowers it for a
 * whole process (benches, comparisons); cv_simd_force does so for tests.
 *
 * Error convention: none; kernels cannot fail.
 */
#ifndef CV_KERNELS_H
#define CV_KERNELS_H

#include "cv_base.h"

#include <math.h>
#include <stddef.h>

/* One level's kernels. */
typedef struct cvk_ops {
	const char *name;
	float (*l2sq)(const float *a, const float *b, size_t d);
	float (*dot)(const float *a, const float *b, size_t d);
	float (*cosine_dist)(const float *a, const float *b, size_t d);
} cvk_ops;

/* Per-level kernels; the SIMD ones may only be called if the CPU has them. */
float cvk_l2sq_scalar(const float *a, const float *b, size_t d);
float cvk_dot_scalar(const float *a, const float *b, size_t d);
float cvk_cosine_scalar(const float *a, const float *b, size_t d);
float cvk_l2sq_avx2(const float *a, const float *b, size_t d);
float cvk_dot_avx2(const float *a, const float *b, size_t d);
float cvk_cosine_avx2(const float *a, const float *b, size_t d);
float cvk_l2sq_avx512(const float *a, const float *b, size_t d);
float cvk_dot_avx512(const float *a, const float *b, size_t d);
float cvk_cosine_avx512(const float *a, const float *b, size_t d);

/* The reference order's final sum of 64 lanes (see above). */
float cvk_reduce64(const float lanes[64]);

/*
 * 1 - dot / sqrt(na * nb), computed in double; 1 when either norm is 0.
 * Inline, so the SIMD levels need nothing of kernels.c (no FMA can form:
 * a product under a root, a quotient subtracted).
 */
static inline float cvk_cosine_finish(float dot, float na, float nb)
{
	double den;

	if (na == 0 || nb == 0)
		return 1.0f;
	den = sqrt((double) na * (double) nb);
	return (float) (1.0 - (double) dot / den);
}

/* The ops of level name ("scalar", "avx2", "avx512"), or NULL if unknown or
 * the CPU lacks it. Borrowed, static. */
const cvk_ops *cvk_level(const char *name);

/* The ops in use (chosen once by cpuid; cv_simd_force changes it). */
const cvk_ops *cvk_active(void);

/* The best level this CPU supports. */
const cvk_ops *cvk_best(void);

/* Prefetch the bytes [p, p+bytes) into the cache, a line at a time (at most 64 lines). */
static inline void cvk_prefetch(const void *p, size_t bytes)
{
	const char *c = (const char *) p;

	if (bytes > 64 * 64)
		bytes = 64 * 64;
	for (size_t o = 0; o < bytes; o += 64)
		__builtin_prefetch(c + o, 0, 3);
}

/*
 * Distances from q to n rows given by pointer (a neighbour list): out[i] =
 * distance(m, q, rows[i]). Prefetches row i+2 while computing row i.
 */
void cvk_distance_many(cv_metric m, const float *q, const float *const *rows, size_t n, size_t d,
		       float *out);

/* Distances from q to n contiguous rows base[0..n) of dimension d. */
void cvk_distance_rows(cv_metric m, const float *q, const float *base, size_t n, size_t d,
		       float *out);

#endif
