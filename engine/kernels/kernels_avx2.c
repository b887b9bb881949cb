/*
 * kernels_avx2.c - AVX2 + FMA kernels (built with -mavx2 -mfma, called only
 * when cpuid says the CPU has both).
 *
 * Four 8-lane accumulators (32 floats per step) hide the FMA latency;
 * then 8-lane steps; the last 1..7 floats come in through a masked load,
 * which neither reads nor faults past the end.
 */
#include "kernels.h"

#include <immintrin.h>

/* A mask whose first r (0..8) lanes are set. */
static inline __m256i tail_mask(size_t r)
{
	static const int32_t m[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

	return _mm256_loadu_si256((const __m256i *) (m + 8 - r));
}

/* The sum of the 8 lanes. */
static inline float hsum(__m256 v)
{
	__m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);

	lo = _mm_add_ps(lo, hi);
	lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
	lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
	return _mm_cvtss_f32(lo);
}

float cvk_l2sq_avx2(const float *a, const float *b, size_t d)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	size_t i = 0;

	for (; i + 32 <= d; i += 32) {
		__m256 t0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
		__m256 t1 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
		__m256 t2 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16));
		__m256 t3 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24));

		s0 = _mm256_fmadd_ps(t0, t0, s0);
		s1 = _mm256_fmadd_ps(t1, t1, s1);
		s2 = _mm256_fmadd_ps(t2, t2, s2);
		s3 = _mm256_fmadd_ps(t3, t3, s3);
	}
	for (; i + 8 <= d; i += 8) {
		__m256 t = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));

		s0 = _mm256_fmadd_ps(t, t, s0);
	}
	if (i < d) {
		__m256i mk = tail_mask(d - i);
		__m256 t = _mm256_sub_ps(_mm256_maskload_ps(a + i, mk), _mm256_maskload_ps(b + i, mk));

		s1 = _mm256_fmadd_ps(t, t, s1);
	}
	return hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

float cvk_dot_avx2(const float *a, const float *b, size_t d)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	size_t i = 0;

	for (; i + 32 <= d; i += 32) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
		s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
		s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
	}
	for (; i + 8 <= d; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
	if (i < d) {
		__m256i mk = tail_mask(d - i);

		s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, mk), _mm256_maskload_ps(b + i, mk), s1);
	}
	return hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

float cvk_cosine_avx2(const float *a, const float *b, size_t d)
{
	__m256 ab0 = _mm256_setzero_ps(), ab1 = ab0, aa0 = ab0, aa1 = ab0, bb0 = ab0, bb1 = ab0;
	size_t i = 0;

	for (; i + 16 <= d; i += 16) {
		__m256 x0 = _mm256_loadu_ps(a + i), y0 = _mm256_loadu_ps(b + i);
		__m256 x1 = _mm256_loadu_ps(a + i + 8), y1 = _mm256_loadu_ps(b + i + 8);

		ab0 = _mm256_fmadd_ps(x0, y0, ab0);
		aa0 = _mm256_fmadd_ps(x0, x0, aa0);
		bb0 = _mm256_fmadd_ps(y0, y0, bb0);
		ab1 = _mm256_fmadd_ps(x1, y1, ab1);
		aa1 = _mm256_fmadd_ps(x1, x1, aa1);
		bb1 = _mm256_fmadd_ps(y1, y1, bb1);
	}
	for (; i + 8 <= d; i += 8) {
		__m256 x = _mm256_loadu_ps(a + i), y = _mm256_loadu_ps(b + i);

		ab0 = _mm256_fmadd_ps(x, y, ab0);
		aa0 = _mm256_fmadd_ps(x, x, aa0);
		bb0 = _mm256_fmadd_ps(y, y, bb0);
	}
	if (i < d) {
		__m256i mk = tail_mask(d - i);
		__m256 x = _mm256_maskload_ps(a + i, mk), y = _mm256_maskload_ps(b + i, mk);

		ab1 = _mm256_fmadd_ps(x, y, ab1);
		aa1 = _mm256_fmadd_ps(x, x, aa1);
		bb1 = _mm256_fmadd_ps(y, y, bb1);
	}
	return cvk_cosine_finish(hsum(_mm256_add_ps(ab0, ab1)), hsum(_mm256_add_ps(aa0, aa1)),
				 hsum(_mm256_add_ps(bb0, bb1)));
}
