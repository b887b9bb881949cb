/*
 * kernels_avx512.c - AVX-512F kernels (built with -mavx512f, called only
 * when cpuid says the CPU has it).
 *
 * The summation order is the portable reference's (kernels.h): element i
 * goes to lane i mod 64, here accumulator (i / 16) mod 4, lane i mod 16,
 * with one FMA (one rounding) per element, and the 64 lanes are reduced
 * by the fixed tree of cvk_reduce64. So every result equals the scalar
 * kernel's bit for bit. The last 1..63 floats come in 16 at a time through
 * zero-masked loads (which neither read nor fault past the end) and
 * merge-masked FMAs, so lanes past d are left untouched, as in the
 * reference.
 */
#include "kernels.h"

#include <immintrin.h>

/* The mask of the first min(left, 16) lanes. */
static inline __mmask16 chunk_mask(size_t left)
{
	return left >= 16 ? (__mmask16) 0xFFFF : (__mmask16) ((1u << left) - 1u);
}

/* cvk_reduce64 over lanes s0 (0..15), s1 (16..31), s2 (32..47), s3 (48..63). */
static inline float reduce64(__m512 s0, __m512 s1, __m512 s2, __m512 s3)
{
	__m512 m = _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3));
	__m256 n = _mm256_add_ps(_mm512_castps512_ps256(m),
				 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(m), 1)));
	__m128 o = _mm_add_ps(_mm256_castps256_ps128(n), _mm256_extractf128_ps(n, 1));
	__m128 p = _mm_add_ps(o, _mm_movehl_ps(o, o));

	return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}

/* acc lanes += (a - b)^2 over the 16 floats at a, b under mask mk. */
static inline __m512 l2_step(__m512 acc, const float *a, const float *b, __mmask16 mk)
{
	__m512 t = _mm512_sub_ps(_mm512_maskz_loadu_ps(mk, a), _mm512_maskz_loadu_ps(mk, b));

	return _mm512_mask3_fmadd_ps(t, t, acc, mk);
}

/* acc lanes += a * b over the 16 floats at a, b under mask mk. */
static inline __m512 dot_step(__m512 acc, const float *a, const float *b, __mmask16 mk)
{
	return _mm512_mask3_fmadd_ps(_mm512_maskz_loadu_ps(mk, a), _mm512_maskz_loadu_ps(mk, b), acc,
				     mk);
}

float cvk_l2sq_avx512(const float *a, const float *b, size_t d)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	size_t i = 0;

	for (; i + 64 <= d; i += 64) {
		__m512 t0 = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
		__m512 t1 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16));
		__m512 t2 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32));
		__m512 t3 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48));

		s0 = _mm512_fmadd_ps(t0, t0, s0);
		s1 = _mm512_fmadd_ps(t1, t1, s1);
		s2 = _mm512_fmadd_ps(t2, t2, s2);
		s3 = _mm512_fmadd_ps(t3, t3, s3);
	}
	if (i < d) {
		s0 = l2_step(s0, a + i, b + i, chunk_mask(d - i));
		i += 16;
	}
	if (i < d) {
		s1 = l2_step(s1, a + i, b + i, chunk_mask(d - i));
		i += 16;
	}
	if (i < d) {
		s2 = l2_step(s2, a + i, b + i, chunk_mask(d - i));
		i += 16;
	}
	if (i < d)
		s3 = l2_step(s3, a + i, b + i, chunk_mask(d - i));
	return reduce64(s0, s1, s2, s3);
}

float cvk_dot_avx512(const float *a, const float *b, size_t d)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	size_t i = 0;

	for (; i + 64 <= d; i += 64) {
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
		s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
		s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
		s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
	}
	if (i < d) {
		s0 = dot_step(s0, a + i, b + i, chunk_mask(d - i));
		i += 16;
	}
	if (i < d) {
		s1 = dot_step(s1, a + i, b + i, chunk_mask(d - i));
		i += 16;
	}
	if (i < d) {
		s2 = dot_step(s2, a + i, b + i, chunk_mask(d - i));
		i += 16;
	}
	if (i < d)
		s3 = dot_step(s3, a + i, b + i, chunk_mask(d - i));
	return reduce64(s0, s1, s2, s3);
}

/* Three sums of the reference order, each its own dot product (the reference's definition). */
float cvk_cosine_avx512(const float *a, const float *b, size_t d)
{
	return cvk_cosine_finish(cvk_dot_avx512(a, b, d), cvk_dot_avx512(a, a, d),
				 cvk_dot_avx512(b, b, d));
}
