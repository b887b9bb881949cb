/*
 * kernels_avx512.c - AVX-512F kernels (built with -mavx512f, called only
 * when cpuid says the CPU has it).
 *
 * Four 16-lane accumulators (64 floats per step), then 16-lane steps; the
 * last 1..15 floats come in through a zero-masked load, which neither
 * reads nor faults past the end.
 */
#include "kernels.h"

#include <immintrin.h>

/* The mask of the first r (0..15) lanes. */
static inline __mmask16 tail_mask(size_t r)
{
	return (__mmask16) ((1u << r) - 1u);
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
	for (; i + 16 <= d; i += 16) {
		__m512 t = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));

		s0 = _mm512_fmadd_ps(t, t, s0);
	}
	if (i < d) {
		__mmask16 mk = tail_mask(d - i);
		__m512 t = _mm512_sub_ps(_mm512_maskz_loadu_ps(mk, a + i), _mm512_maskz_loadu_ps(mk, b + i));

		s1 = _mm512_fmadd_ps(t, t, s1);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
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
	for (; i + 16 <= d; i += 16)
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
	if (i < d) {
		__mmask16 mk = tail_mask(d - i);

		s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, a + i), _mm512_maskz_loadu_ps(mk, b + i), s1);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

float cvk_cosine_avx512(const float *a, const float *b, size_t d)
{
	__m512 ab0 = _mm512_setzero_ps(), ab1 = ab0, aa0 = ab0, aa1 = ab0, bb0 = ab0, bb1 = ab0;
	size_t i = 0;

	for (; i + 32 <= d; i += 32) {
		__m512 x0 = _mm512_loadu_ps(a + i), y0 = _mm512_loadu_ps(b + i);
		__m512 x1 = _mm512_loadu_ps(a + i + 16), y1 = _mm512_loadu_ps(b + i + 16);

		ab0 = _mm512_fmadd_ps(x0, y0, ab0);
		aa0 = _mm512_fmadd_ps(x0, x0, aa0);
		bb0 = _mm512_fmadd_ps(y0, y0, bb0);
		ab1 = _mm512_fmadd_ps(x1, y1, ab1);
		aa1 = _mm512_fmadd_ps(x1, x1, aa1);
		bb1 = _mm512_fmadd_ps(y1, y1, bb1);
	}
	for (; i + 16 <= d; i += 16) {
		__m512 x = _mm512_loadu_ps(a + i), y = _mm512_loadu_ps(b + i);

		ab0 = _mm512_fmadd_ps(x, y, ab0);
		aa0 = _mm512_fmadd_ps(x, x, aa0);
		bb0 = _mm512_fmadd_ps(y, y, bb0);
	}
	if (i < d) {
		__mmask16 mk = tail_mask(d - i);
		__m512 x = _mm512_maskz_loadu_ps(mk, a + i), y = _mm512_maskz_loadu_ps(mk, b + i);

		ab1 = _mm512_fmadd_ps(x, y, ab1);
		aa1 = _mm512_fmadd_ps(x, x, aa1);
		bb1 = _mm512_fmadd_ps(y, y, bb1);
	}
	return cvk_cosine_finish(_mm512_reduce_add_ps(_mm512_add_ps(ab0, ab1)),
				 _mm512_reduce_add_ps(_mm512_add_ps(aa0, aa1)),
				 _mm512_reduce_add_ps(_mm512_add_ps(bb0, bb1)));
}
