/*
 * kernels_avx2.c - AVX2 + FMA kernels (built with -mavx2 -mfma, called only
 * when cpuid says the CPU has both).
 *
 * The summation order is the portable reference's (kernels.h): element i
 * goes to lane i mod 64, here accumulator (i / 8) mod 8, lane i mod 8, with
 * one FMA (one rounding) per element, and the 64 lanes are reduced by the
 * fixed tree of cvk_reduce64; so every result equals the scalar kernel's
 * bit for bit. Eight accumulators also hide the FMA latency. The last
 * 1..63 floats come in 8 at a time through masked loads (which neither
 * read nor fault past the end); a blend keeps lanes past d untouched, as
 * in the reference.
 */
#include "kernels.h"

#include <immintrin.h>

/* A mask whose first min(left, 8) lanes are set. */
static inline __m256i chunk_mask(size_t left)
{
	static const int32_t m[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

	return _mm256_loadu_si256((const __m256i *) (m + 8 - (left >= 8 ? 8 : left)));
}

/* cvk_reduce64 over lanes r0 (0..7), r1 (8..15), ..., r7 (56..63). */
static inline float reduce64(__m256 r0, __m256 r1, __m256 r2, __m256 r3, __m256 r4, __m256 r5,
			     __m256 r6, __m256 r7)
{
	__m256 mlo = _mm256_add_ps(_mm256_add_ps(r0, r2), _mm256_add_ps(r4, r6));
	__m256 mhi = _mm256_add_ps(_mm256_add_ps(r1, r3), _mm256_add_ps(r5, r7));
	__m256 n = _mm256_add_ps(mlo, mhi);
	__m128 o = _mm_add_ps(_mm256_castps256_ps128(n), _mm256_extractf128_ps(n, 1));
	__m128 p = _mm_add_ps(o, _mm_movehl_ps(o, o));

	return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}

/* acc lanes += (a - b)^2 over the first min(left, 8) floats; the other lanes kept. */
static inline __m256 l2_chunk(__m256 acc, const float *a, const float *b, size_t left)
{
	__m256i mk = chunk_mask(left);
	__m256 t = _mm256_sub_ps(_mm256_maskload_ps(a, mk), _mm256_maskload_ps(b, mk));

	return _mm256_blendv_ps(acc, _mm256_fmadd_ps(t, t, acc), _mm256_castsi256_ps(mk));
}

/* acc lanes += a * b over the first min(left, 8) floats; the other lanes kept. */
static inline __m256 dot_chunk(__m256 acc, const float *a, const float *b, size_t left)
{
	__m256i mk = chunk_mask(left);
	__m256 f = _mm256_fmadd_ps(_mm256_maskload_ps(a, mk), _mm256_maskload_ps(b, mk), acc);

	return _mm256_blendv_ps(acc, f, _mm256_castsi256_ps(mk));
}

/* The last d - i (< 64) floats, 8 at a time into r0, r1, ... in turn, with STEP. */
#define TAIL(STEP)                                                      \
	do {                                                            \
		__m256 *acc_[8] = {&r0, &r1, &r2, &r3, &r4, &r5, &r6, &r7}; \
		for (int k_ = 0; k_ < 8 && i < d; k_++, i += 8)         \
			*acc_[k_] = STEP(*acc_[k_], a + i, b + i, d - i); \
	} while (0)

float cvk_l2sq_avx2(const float *a, const float *b, size_t d)
{
	__m256 r0 = _mm256_setzero_ps(), r1 = r0, r2 = r0, r3 = r0, r4 = r0, r5 = r0, r6 = r0,
	       r7 = r0;
	size_t i = 0;

	for (; i + 64 <= d; i += 64) {
		__m256 t0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
		__m256 t1 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
		__m256 t2 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16));
		__m256 t3 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24));
		__m256 t4 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 32), _mm256_loadu_ps(b + i + 32));
		__m256 t5 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 40), _mm256_loadu_ps(b + i + 40));
		__m256 t6 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 48), _mm256_loadu_ps(b + i + 48));
		__m256 t7 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 56), _mm256_loadu_ps(b + i + 56));

		r0 = _mm256_fmadd_ps(t0, t0, r0);
		r1 = _mm256_fmadd_ps(t1, t1, r1);
		r2 = _mm256_fmadd_ps(t2, t2, r2);
		r3 = _mm256_fmadd_ps(t3, t3, r3);
		r4 = _mm256_fmadd_ps(t4, t4, r4);
		r5 = _mm256_fmadd_ps(t5, t5, r5);
		r6 = _mm256_fmadd_ps(t6, t6, r6);
		r7 = _mm256_fmadd_ps(t7, t7, r7);
	}
	if (i < d)
		TAIL(l2_chunk);
	return reduce64(r0, r1, r2, r3, r4, r5, r6, r7);
}

float cvk_dot_avx2(const float *a, const float *b, size_t d)
{
	__m256 r0 = _mm256_setzero_ps(), r1 = r0, r2 = r0, r3 = r0, r4 = r0, r5 = r0, r6 = r0,
	       r7 = r0;
	size_t i = 0;

	for (; i + 64 <= d; i += 64) {
		r0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), r0);
		r1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), r1);
		r2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), r2);
		r3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), r3);
		r4 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 32), _mm256_loadu_ps(b + i + 32), r4);
		r5 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 40), _mm256_loadu_ps(b + i + 40), r5);
		r6 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 48), _mm256_loadu_ps(b + i + 48), r6);
		r7 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 56), _mm256_loadu_ps(b + i + 56), r7);
	}
	if (i < d)
		TAIL(dot_chunk);
	return reduce64(r0, r1, r2, r3, r4, r5, r6, r7);
}

/* Three sums of the reference order, each its own dot product (the reference's definition). */
float cvk_cosine_avx2(const float *a, const float *b, size_t d)
{
	return cvk_cosine_finish(cvk_dot_avx2(a, b, d), cvk_dot_avx2(a, a, d), cvk_dot_avx2(b, b, d));
}
