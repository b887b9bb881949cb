/*
 * hnsw_dist.c - the graph's distance kernels: quant8 and exact bytes at
 * scalar, AVX2 and AVX-512 chosen once from cpuid, and float32 through the
 * engine's kernels.
 *
 * Why not engine/kernels: the search calls a kernel for every neighbour it
 * scores, and the kernels here take a prepared query (hnsw_query) so the
 * metric's constant parts and quant8's per-dimension transform are paid
 * once per query, not per distance. They are compiled with target
 * attributes, so the engine's normal build (no -march) still runs AVX-512
 * where the CPU has it. Several accumulators hide the FMA latency: a
 * single running sum (hnswlib's loop) waits 4 cycles per 16 floats.
 *
 * Query-side transforms (x ~ lo + s * c for a code c):
 *   L2:     |q - x|^2 = cst + sum w_j (a_j - c_j)^2, a_j = (q_j - lo_j) / s_j,
 *           w_j = s_j^2, cst = sum over s_j == 0 of (q_j - lo_j)^2
 *   IP/cos: base - <q, x> = cst + sum a_j c_j, a_j = -q_j s_j,
 *           cst = base - <q, lo>, base = 1 for cosine, 0 for IP
 */
#include "hnsw_int.h"
#include "kernels/kernels.h"

#include <errno.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

/*
 * ---- float32: the engine's kernels (engine/kernels/), one set per process ----
 * The prepared query adds nothing for float32 but the metric's constant, so
 * these wrap cv_l2sq/cv_dot's per-level functions rather than repeat them.
 */

static const cvk_ops *k_f32;

static float l2_f32(const hnsw_query *q, const void *v, size_t d)
{
	return k_f32->l2sq(q->a, (const float *) v, d);
}

static float ip_f32(const hnsw_query *q, const void *v, size_t d)
{
	return q->cst - k_f32->dot(q->a, (const float *) v, d);
}

/*
 * ---- quant8: one summation order at every level ----
 * As engine/kernels (kernels.h): element i is added into lane i mod 64 by
 * one fused multiply-add, lanes past d stay 0, and cvk_reduce64 adds the
 * lanes; so the scalar, AVX2 and AVX-512 kernels return the same bits.
 * L2's term is fma(t*t, w, lane) with t = a - c (t*t rounded first);
 * IP's fma(a, c, lane).
 */

static float l2_q8_scalar(const hnsw_query *q, const void *v, size_t d)
{
	const uint8_t *c = v;
	float lanes[64] = {0};

	for (size_t i = 0; i < d; i++) {
		float t = q->a[i] - (float) c[i];

		lanes[i & 63] = fmaf(t * t, q->w[i], lanes[i & 63]);
	}
	return q->cst + cvk_reduce64(lanes);
}

static float ip_q8_scalar(const hnsw_query *q, const void *v, size_t d)
{
	const uint8_t *c = v;
	float lanes[64] = {0};

	for (size_t i = 0; i < d; i++)
		lanes[i & 63] = fmaf(q->a[i], (float) c[i], lanes[i & 63]);
	return q->cst + cvk_reduce64(lanes);
}

/* Up to n (<= 16) code bytes from c, zero-padded: no read past c + n. */
static inline void copy_tail(uint8_t out[16], const uint8_t *c, size_t n)
{
	memset(out, 0, 16);
	memcpy(out, c, n < 16 ? n : 16);
}

/* ---- AVX2 (lanes: accumulator (i / 8) mod 8, lane i mod 8) ---- */

__attribute__((target("avx2,fma"))) static inline float reduce64_avx2(const __m256 r[8])
{
	__m256 mlo = _mm256_add_ps(_mm256_add_ps(r[0], r[2]), _mm256_add_ps(r[4], r[6]));
	__m256 mhi = _mm256_add_ps(_mm256_add_ps(r[1], r[3]), _mm256_add_ps(r[5], r[7]));
	__m256 n = _mm256_add_ps(mlo, mhi);
	__m128 o = _mm_add_ps(_mm256_castps256_ps128(n), _mm256_extractf128_ps(n, 1));
	__m128 p = _mm_add_ps(o, _mm_movehl_ps(o, o));

	return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}

/* The first min(left, 8) lanes set. */
__attribute__((target("avx2,fma"))) static inline __m256i mask8(size_t left)
{
	static const int32_t m[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

	return _mm256_loadu_si256((const __m256i *) (m + 8 - (left >= 8 ? 8 : left)));
}

/* 8 codes at c (8 bytes readable) as floats. */
__attribute__((target("avx2,fma"))) static inline __m256 codes8(const uint8_t *c)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) c)));
}

/* One q8 step of 8 lanes: L2 (w != NULL) or IP, under mask mk (lanes off kept). */
__attribute__((target("avx2,fma"))) static inline __m256 q8_step_avx2(__m256 acc, const float *a,
								       const float *w, __m256 c,
								       __m256i mk)
{
	__m256 x = _mm256_maskload_ps(a, mk), f;

	if (w) {
		__m256 t = _mm256_sub_ps(x, c);

		f = _mm256_fmadd_ps(_mm256_mul_ps(t, t), _mm256_maskload_ps(w, mk), acc);
	} else {
		f = _mm256_fmadd_ps(x, c, acc);
	}
	return _mm256_blendv_ps(acc, f, _mm256_castsi256_ps(mk));
}

__attribute__((target("avx2,fma"))) static inline float q8_avx2(const hnsw_query *q,
								 const uint8_t *c, size_t d,
								 const float *w)
{
	__m256 r[8];
	__m256i all = mask8(8);
	size_t i = 0;

	for (int k = 0; k < 8; k++)
		r[k] = _mm256_setzero_ps();
	for (; i + 64 <= d; i += 64) {
#pragma GCC unroll 8
		for (int k = 0; k < 8; k++)
			r[k] = q8_step_avx2(r[k], q->a + i + 8 * k, w ? w + i + 8 * k : NULL,
					    codes8(c + i + 8 * k), all);
	}
	for (int k = 0; k < 8 && i < d; k++, i += 8) {
		uint8_t tail[16];

		copy_tail(tail, c + i, d - i);
		r[k] = q8_step_avx2(r[k], q->a + i, w ? w + i : NULL, codes8(tail), mask8(d - i));
	}
	return reduce64_avx2(r);
}

__attribute__((target("avx2,fma"))) static float l2_q8_avx2(const hnsw_query *q, const void *v,
							     size_t d)
{
	return q->cst + q8_avx2(q, v, d, q->w);
}

__attribute__((target("avx2,fma"))) static float ip_q8_avx2(const hnsw_query *q, const void *v,
							     size_t d)
{
	return q->cst + q8_avx2(q, v, d, NULL);
}

/* ---- AVX-512 (lanes: accumulator (i / 16) mod 4, lane i mod 16) ---- */

__attribute__((target("avx512f"))) static inline float reduce64_avx512(__m512 s0, __m512 s1,
									__m512 s2, __m512 s3)
{
	__m512 m = _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3));
	__m256 n = _mm256_add_ps(_mm512_castps512_ps256(m),
				 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(m), 1)));
	__m128 o = _mm_add_ps(_mm256_castps256_ps128(n), _mm256_extractf128_ps(n, 1));
	__m128 p = _mm_add_ps(o, _mm_movehl_ps(o, o));

	return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}

/* The mask of the first min(left, 16) lanes. */
static inline __mmask16 chunk_mask16(size_t left)
{
	return left >= 16 ? (__mmask16) 0xFFFF : (__mmask16) ((1u << left) - 1u);
}

/* 16 codes at c (16 bytes readable) as floats. */
__attribute__((target("avx512f"))) static inline __m512 codes16(const uint8_t *c)
{
	return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) c)));
}

/* One q8 step of 16 lanes: L2 (w != NULL) or IP, under mask mk (lanes off kept). */
__attribute__((target("avx512f"))) static inline __m512 q8_step_avx512(__m512 acc, const float *a,
									const float *w, __m512 c,
									__mmask16 mk)
{
	__m512 x = _mm512_maskz_loadu_ps(mk, a);

	if (w) {
		__m512 t = _mm512_sub_ps(x, c);

		return _mm512_mask3_fmadd_ps(_mm512_mul_ps(t, t), _mm512_maskz_loadu_ps(mk, w), acc,
					     mk);
	}
	return _mm512_mask3_fmadd_ps(x, c, acc, mk);
}

/* The next up-to-16 lanes at i into acc (a partial last chunk through a padded copy). */
__attribute__((target("avx512f"))) static inline __m512 q8_chunk512(__m512 acc,
								     const hnsw_query *q,
								     const uint8_t *c, size_t i,
								     size_t d, const float *w)
{
	size_t left = d - i;
	uint8_t tail[16];

	if (left >= 16)
		return q8_step_avx512(acc, q->a + i, w ? w + i : NULL, codes16(c + i), 0xFFFF);
	copy_tail(tail, c + i, left);
	return q8_step_avx512(acc, q->a + i, w ? w + i : NULL, codes16(tail),
			      (__mmask16) ((1u << left) - 1u));
}

__attribute__((target("avx512f"))) static inline float q8_avx512(const hnsw_query *q,
								  const uint8_t *c, size_t d,
								  const float *w)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	size_t i = 0;

	for (; i + 64 <= d; i += 64) {
		s0 = q8_step_avx512(s0, q->a + i, w ? w + i : NULL, codes16(c + i), 0xFFFF);
		s1 = q8_step_avx512(s1, q->a + i + 16, w ? w + i + 16 : NULL, codes16(c + i + 16),
				    0xFFFF);
		s2 = q8_step_avx512(s2, q->a + i + 32, w ? w + i + 32 : NULL, codes16(c + i + 32),
				    0xFFFF);
		s3 = q8_step_avx512(s3, q->a + i + 48, w ? w + i + 48 : NULL, codes16(c + i + 48),
				    0xFFFF);
	}
	if (i < d) {
		s0 = q8_chunk512(s0, q, c, i, d, w);
		i += 16;
	}
	if (i < d) {
		s1 = q8_chunk512(s1, q, c, i, d, w);
		i += 16;
	}
	if (i < d) {
		s2 = q8_chunk512(s2, q, c, i, d, w);
		i += 16;
	}
	if (i < d)
		s3 = q8_chunk512(s3, q, c, i, d, w);
	return reduce64_avx512(s0, s1, s2, s3);
}

__attribute__((target("avx512f"))) static float l2_q8_avx512(const hnsw_query *q, const void *v,
							      size_t d)
{
	return q->cst + q8_avx512(q, v, d, q->w);
}

__attribute__((target("avx512f"))) static float ip_q8_avx512(const hnsw_query *q, const void *v,
							      size_t d)
{
	return q->cst + q8_avx512(q, v, d, NULL);
}

/*
 * ---- exact bytes: the float32 kernels' arithmetic on converted bytes ----
 * A byte c is converted to the float c exactly, then the sums are the
 * float32 kernels' (kernels.h): L2 lane += t * t with t = a - c in one
 * fused multiply-add, IP lane += a * c, lanes i mod 64, cvk_reduce64. So
 * every level returns what k_f32 returns on the decoded vector, bit for
 * bit (test_exact8_kernels). Node-node: the second vector plays the query.
 */

/* The query side is floats a, or bytes y when a is NULL (node-node), as at every level. */
static float u8_sum_scalar(const float *a, const uint8_t *y, const uint8_t *c, size_t d, int l2)
{
	float lanes[64] = {0};

	for (size_t i = 0; i < d; i++) {
		float x = a ? a[i] : (float) y[i];
		float t = l2 ? x - (float) c[i] : x;

		lanes[i & 63] = fmaf(t, l2 ? t : (float) c[i], lanes[i & 63]);
	}
	return cvk_reduce64(lanes);
}

static float l2_u8_scalar(const hnsw_query *q, const void *v, size_t d)
{
	return u8_sum_scalar(q->a, NULL, v, d, 1);
}

static float ip_u8_scalar(const hnsw_query *q, const void *v, size_t d)
{
	return q->cst - u8_sum_scalar(q->a, NULL, v, d, 0);
}

static float nn_u8_l2(const struct hnsw *h, const void *a, const void *b)
{
	return u8_sum_scalar(NULL, b, a, h->dim, 1);
}

static float nn_u8_ip(const struct hnsw *h, const void *a, const void *b)
{
	return (h->p.metric == CV_METRIC_COSINE ? 1.0f : 0.0f) - u8_sum_scalar(NULL, b, a, h->dim, 0);
}

/* AVX2: accumulator (i / 8) mod 8, lane i mod 8, as kernels_avx2.c. */
__attribute__((target("avx2,fma"))) static inline __m256 u8_step_avx2(__m256 acc, __m256 x,
								       __m256 c, __m256i mk,
								       int l2)
{
	__m256 t = l2 ? _mm256_sub_ps(x, c) : x;
	__m256 f = _mm256_fmadd_ps(t, l2 ? t : c, acc);

	return _mm256_blendv_ps(acc, f, _mm256_castsi256_ps(mk));
}

/* The query side's 8 lanes at i: floats from a, or bytes from y when a is NULL. */
__attribute__((target("avx2,fma"))) static inline __m256 side8(const float *a, const uint8_t *y,
								size_t i, size_t left, __m256i mk)
{
	uint8_t tail[16];

	if (a)
		return _mm256_maskload_ps(a + i, mk);
	if (left >= 8)
		return codes8(y + i);
	copy_tail(tail, y + i, left);
	return codes8(tail);
}

__attribute__((target("avx2,fma"))) static inline float u8_sum_avx2(const float *a,
								     const uint8_t *y,
								     const uint8_t *c, size_t d,
								     int l2)
{
	__m256 r[8];
	__m256i all = mask8(8);
	size_t i = 0;

	for (int k = 0; k < 8; k++)
		r[k] = _mm256_setzero_ps();
	for (; i + 64 <= d; i += 64) {
#pragma GCC unroll 8
		for (int k = 0; k < 8; k++)
			r[k] = u8_step_avx2(r[k], side8(a, y, i + 8 * k, 8, all),
					    codes8(c + i + 8 * k), all, l2);
	}
	for (int k = 0; k < 8 && i < d; k++, i += 8) {
		uint8_t tail[16];
		__m256i mk = mask8(d - i);

		copy_tail(tail, c + i, d - i);
		r[k] = u8_step_avx2(r[k], side8(a, y, i, d - i, mk), codes8(tail), mk, l2);
	}
	return reduce64_avx2(r);
}

__attribute__((target("avx2,fma"))) static float l2_u8_avx2(const hnsw_query *q, const void *v,
							     size_t d)
{
	return u8_sum_avx2(q->a, NULL, v, d, 1);
}

__attribute__((target("avx2,fma"))) static float ip_u8_avx2(const hnsw_query *q, const void *v,
							     size_t d)
{
	return q->cst - u8_sum_avx2(q->a, NULL, v, d, 0);
}

/*
 * AVX-512 (F + BW + VL for the byte-masked tail): accumulator (i / 16) mod
 * 4, lane i mod 16, as kernels_avx512.c. The query side is floats a, or
 * bytes y when a is NULL (node-node); every caller passes one of them as a
 * constant, so the test folds away.
 */
#define U8_512 __attribute__((target("avx512f,avx512bw,avx512vl")))

/* 16 bytes at c under mask mk (bytes off neither read nor faulted) as floats. */
U8_512 static inline __m512 bytes16(const uint8_t *c, __mmask16 mk)
{
	return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mk, c)));
}

U8_512 static inline __m512 u8_lanes512(__m512 acc, const float *a, const uint8_t *y,
					const uint8_t *c, size_t i, __mmask16 mk, int l2)
{
	__m512 x = a ? _mm512_maskz_loadu_ps(mk, a + i) : bytes16(y + i, mk);
	__m512 cv = bytes16(c + i, mk);
	__m512 t = l2 ? _mm512_sub_ps(x, cv) : x;

	return _mm512_mask3_fmadd_ps(t, l2 ? t : cv, acc, mk);
}

U8_512 static inline float u8_sum_avx512(const float *a, const uint8_t *y, const uint8_t *c,
					 size_t d, int l2)
{
	const __mmask16 all = 0xFFFF;
	__m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	size_t i = 0;

	for (; i + 64 <= d; i += 64) {
		s0 = u8_lanes512(s0, a, y, c, i, all, l2);
		s1 = u8_lanes512(s1, a, y, c, i + 16, all, l2);
		s2 = u8_lanes512(s2, a, y, c, i + 32, all, l2);
		s3 = u8_lanes512(s3, a, y, c, i + 48, all, l2);
	}
	if (i < d) {
		s0 = u8_lanes512(s0, a, y, c, i, chunk_mask16(d - i), l2);
		i += 16;
	}
	if (i < d) {
		s1 = u8_lanes512(s1, a, y, c, i, chunk_mask16(d - i), l2);
		i += 16;
	}
	if (i < d) {
		s2 = u8_lanes512(s2, a, y, c, i, chunk_mask16(d - i), l2);
		i += 16;
	}
	if (i < d)
		s3 = u8_lanes512(s3, a, y, c, i, chunk_mask16(d - i), l2);
	return reduce64_avx512(s0, s1, s2, s3);
}

U8_512 static float l2_u8_avx512(const hnsw_query *q, const void *v, size_t d)
{
	return u8_sum_avx512(q->a, NULL, v, d, 1);
}

U8_512 static float ip_u8_avx512(const hnsw_query *q, const void *v, size_t d)
{
	return q->cst - u8_sum_avx512(q->a, NULL, v, d, 0);
}

U8_512 static float nn_u8_l2_avx512(const struct hnsw *h,
								 const void *a, const void *b)
{
	return u8_sum_avx512(NULL, b, a, h->dim, 1);
}

U8_512 static float nn_u8_ip_avx512(const struct hnsw *h,
								 const void *a, const void *b)
{
	return (h->p.metric == CV_METRIC_COSINE ? 1.0f : 0.0f) - u8_sum_avx512(NULL, b, a, h->dim, 0);
}

__attribute__((target("avx2,fma"))) static float nn_u8_l2_avx2(const struct hnsw *h,
								const void *a, const void *b)
{
	return u8_sum_avx2(NULL, b, a, h->dim, 1);
}

__attribute__((target("avx2,fma"))) static float nn_u8_ip_avx2(const struct hnsw *h,
								const void *a, const void *b)
{
	return (h->p.metric == CV_METRIC_COSINE ? 1.0f : 0.0f) - u8_sum_avx2(NULL, b, a, h->dim, 0);
}

/* ---- node-to-node (the heuristic), through the query kernels ---- */

static hnsw_qdist_fn k_l2_f32 = l2_f32, k_ip_f32 = ip_f32;
static pthread_once_t k_once = PTHREAD_ONCE_INIT;

/* Float32 node-node distance: b is the query side, cst from the metric. */
static float nn_f32_l2(const struct hnsw *h, const void *a, const void *b)
{
	hnsw_query q = {.a = b};

	return k_l2_f32(&q, a, h->dim);
}

static float nn_f32_ip(const struct hnsw *h, const void *a, const void *b)
{
	hnsw_query q = {.a = b, .cst = h->p.metric == CV_METRIC_COSINE ? 1.0f : 0.0f};

	return k_ip_f32(&q, a, h->dim);
}

/*
 * quant8 node-node distances (only the heuristic uses these): both sides
 * dequantised, in the reference order above. L2: t = x - y (codes as
 * floats, exact), fma(t*t, w, lane); IP: each side fma(code, scale, lo),
 * then fma(xa, xb, lane). The AVX-512 versions keep the same lanes.
 */
static float nn_q8_l2(const struct hnsw *h, const void *a, const void *b)
{
	const uint8_t *x = a, *y = b;
	float lanes[64] = {0};

	for (size_t i = 0; i < h->dim; i++) {
		float t = (float) x[i] - (float) y[i];

		lanes[i & 63] = fmaf(t * t, h->q_w[i], lanes[i & 63]);
	}
	return cvk_reduce64(lanes);
}

static float nn_q8_ip(const struct hnsw *h, const void *a, const void *b)
{
	const uint8_t *x = a, *y = b;
	float lanes[64] = {0};

	for (size_t i = 0; i < h->dim; i++) {
		float xa = fmaf((float) x[i], h->q_scale[i], h->q_lo[i]);
		float xb = fmaf((float) y[i], h->q_scale[i], h->q_lo[i]);

		lanes[i & 63] = fmaf(xa, xb, lanes[i & 63]);
	}
	return (h->p.metric == CV_METRIC_COSINE ? 1.0f : 0.0f) - cvk_reduce64(lanes);
}

/* One node-node chunk of up to 16 lanes at i (a partial one through padded copies). */
__attribute__((target("avx512f"))) static inline __m512 nn_chunk512(__m512 acc,
								     const struct hnsw *h,
								     const uint8_t *x,
								     const uint8_t *y, size_t i,
								     int l2)
{
	size_t left = h->dim - i;
	__mmask16 mk = left >= 16 ? (__mmask16) 0xFFFF : (__mmask16) ((1u << left) - 1u);
	uint8_t tx[16], ty[16];
	__m512 cx, cy;

	if (left >= 16) {
		cx = codes16(x + i);
		cy = codes16(y + i);
	} else {
		copy_tail(tx, x + i, left);
		copy_tail(ty, y + i, left);
		cx = codes16(tx);
		cy = codes16(ty);
	}
	if (l2) {
		__m512 t = _mm512_sub_ps(cx, cy);

		return _mm512_mask3_fmadd_ps(_mm512_mul_ps(t, t),
					     _mm512_maskz_loadu_ps(mk, h->q_w + i), acc, mk);
	} else {
		__m512 lo = _mm512_maskz_loadu_ps(mk, h->q_lo + i);
		__m512 sc = _mm512_maskz_loadu_ps(mk, h->q_scale + i);

		return _mm512_mask3_fmadd_ps(_mm512_fmadd_ps(cx, sc, lo), _mm512_fmadd_ps(cy, sc, lo),
					     acc, mk);
	}
}

__attribute__((target("avx512f"))) static inline float nn_q8_avx512(const struct hnsw *h,
								     const uint8_t *x,
								     const uint8_t *y, int l2)
{
	__m512 s[4];
	size_t i = 0, d = h->dim;

	for (int k = 0; k < 4; k++)
		s[k] = _mm512_setzero_ps();
	for (; i < d; i += 16)
		s[(i / 16) & 3] = nn_chunk512(s[(i / 16) & 3], h, x, y, i, l2);
	return reduce64_avx512(s[0], s[1], s[2], s[3]);
}

__attribute__((target("avx512f"))) static float nn_q8_l2_avx512(const struct hnsw *h,
								 const void *a, const void *b)
{
	return nn_q8_avx512(h, a, b, 1);
}

__attribute__((target("avx512f"))) static float nn_q8_ip_avx512(const struct hnsw *h,
								 const void *a, const void *b)
{
	return (h->p.metric == CV_METRIC_COSINE ? 1.0f : 0.0f) - nn_q8_avx512(h, a, b, 0);
}

/*
 * ---- the kernel sets: one per storage and SIMD level, chosen once ----
 * A level runs where cpuid says so; the byte kernels' AVX-512 level also
 * needs BW and VL (their tail loads bytes under a mask), so a CPU with
 * AVX-512F alone runs the byte kernels' AVX2 level.
 */

typedef struct kset {
	hnsw_qdist_fn l2, ip;   /* query-node */
	hnsw_ndist_fn nl2, nip; /* node-node */
} kset;

enum { LV_SCALAR, LV_AVX2, LV_AVX512, LV_N };

static const char *const lv_name[LV_N] = {"scalar", "avx2", "avx512"};

static const kset q8_sets[LV_N] = {
	{l2_q8_scalar, ip_q8_scalar, nn_q8_l2, nn_q8_ip},
	{l2_q8_avx2, ip_q8_avx2, nn_q8_l2, nn_q8_ip}, /* no AVX2 node-node kernel: the reference */
	{l2_q8_avx512, ip_q8_avx512, nn_q8_l2_avx512, nn_q8_ip_avx512},
};

static const kset u8_sets[LV_N] = {
	{l2_u8_scalar, ip_u8_scalar, nn_u8_l2, nn_u8_ip},
	{l2_u8_avx2, ip_u8_avx2, nn_u8_l2_avx2, nn_u8_ip_avx2},
	{l2_u8_avx512, ip_u8_avx512, nn_u8_l2_avx512, nn_u8_ip_avx512},
};

static const kset *k_q8 = &q8_sets[LV_SCALAR], *k_u8 = &u8_sets[LV_SCALAR];
static const char *k_name = "scalar";

/* Whether this CPU runs level lv of sets (q8_sets or u8_sets). */
static bool level_runs(const kset *sets, int lv)
{
	__builtin_cpu_init();
	if (lv == LV_AVX2)
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	if (lv == LV_AVX512)
		return __builtin_cpu_supports("avx512f") &&
		       (sets != u8_sets ||
			(__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")));
	return true;
}

/* The highest level of sets this CPU runs. */
static int best_level(const kset *sets)
{
	int lv = LV_N - 1;

	while (lv > LV_SCALAR && !level_runs(sets, lv))
		lv--;
	return lv;
}

/* Pick the kernel sets once from cpuid. */
static void kernels_init(void)
{
	int lv = best_level(q8_sets);

	k_f32 = cvk_active();
	k_q8 = &q8_sets[lv];
	k_u8 = &u8_sets[best_level(u8_sets)];
	k_name = lv_name[lv];
}

void hnsw_kernels_select(struct hnsw *h)
{
	const kset *k;

	pthread_once(&k_once, kernels_init);
	h->skern = hnsw_sketch_kernel(NULL);
	if (h->vtype == HNSW_V_F32) {
		h->qdist = h->p.metric == CV_METRIC_L2 ? k_l2_f32 : k_ip_f32;
		h->ndist = h->p.metric == CV_METRIC_L2 ? nn_f32_l2 : nn_f32_ip;
		return;
	}
	k = h->vtype == HNSW_V_U8 ? k_u8 : k_q8;
	h->qdist = h->p.metric == CV_METRIC_L2 ? k->l2 : k->ip;
	h->ndist = h->p.metric == CV_METRIC_L2 ? k->nl2 : k->nip;
}

const char *hnsw_kernel_name(void)
{
	pthread_once(&k_once, kernels_init);
	return k_name;
}

const char *hnsw_kernels(void)
{
	return hnsw_kernel_name();
}

/* Normalise src into dst (a zero vector stays zero). */
static void normalise(const float *src, float *dst, size_t d)
{
	double n = 0;

	for (size_t i = 0; i < d; i++)
		n += (double) src[i] * src[i];
	n = n > 0 ? 1.0 / sqrt(n) : 0.0;
	for (size_t i = 0; i < d; i++)
		dst[i] = (float) (src[i] * n);
}

void hnsw_prepare_query(const struct hnsw *h, hnsw_ctx *c, const float *q, hnsw_query *out)
{
	size_t d = h->dim;
	float *a = c->qbuf;

	if (h->p.metric == CV_METRIC_COSINE)
		normalise(q, a, d);
	else
		memcpy(a, q, d * sizeof(float));
	out->a = a;
	out->w = h->q_w;
	out->cst = h->p.metric == CV_METRIC_COSINE ? 1.0f : 0.0f;
	out->sa = NULL; /* the sketch is the query search's to prepare (hnsw_sketch_prepare) */
	out->sk_e = 0;
	if (h->vtype != HNSW_V_Q8)
		return;
	if (h->p.metric == CV_METRIC_L2) {
		float cst = 0;

		for (size_t i = 0; i < d; i++) {
			float t = a[i] - h->q_lo[i];

			if (h->q_scale[i] > 0) {
				a[i] = t / h->q_scale[i];
			} else {
				cst += t * t;
				a[i] = 0;
			}
		}
		out->cst = cst;
	} else {
		float cst = out->cst;

		for (size_t i = 0; i < d; i++) {
			cst -= a[i] * h->q_lo[i];
			a[i] = -a[i] * h->q_scale[i];
		}
		out->cst = cst;
	}
}

void hnsw_encode(const struct hnsw *h, const float *vec, void *dst)
{
	if (h->vtype == HNSW_V_F32) {
		memcpy(dst, vec, h->dim * sizeof(float));
		return;
	}
	if (h->vtype == HNSW_V_U8) { /* the caller checked hnsw_fits_u8 */
		uint8_t *c = dst;

		for (size_t i = 0; i < h->dim; i++)
			c[i] = (uint8_t) vec[i];
		return;
	}
	for (size_t i = 0; i < h->dim; i++) {
		float s = h->q_scale[i], t;
		uint8_t *c = dst;

		t = s > 0 ? (vec[i] - h->q_lo[i]) / s : 0.0f;
		t = nearbyintf(t);
		c[i] = t < 0 ? 0 : t > 255 ? 255 : (uint8_t) t;
	}
}

void hnsw_decode_vec(const struct hnsw *h, const void *src, float *buf)
{
	const uint8_t *c = src;

	if (h->vtype == HNSW_V_F32) {
		memcpy(buf, src, h->dim * sizeof(float));
		return;
	}
	if (h->vtype == HNSW_V_U8) {
		for (size_t i = 0; i < h->dim; i++)
			buf[i] = (float) c[i];
		return;
	}
	for (size_t i = 0; i < h->dim; i++)
		buf[i] = h->q_lo[i] + h->q_scale[i] * (float) c[i];
}

void hnsw_normalise(const float *src, float *dst, size_t d)
{
	normalise(src, dst, d);
}

/* How this file was compiled (the bench checks it got its -O3 -march=native copy). */
const char *hnsw_build_info(void)
{
#if defined(__AVX512F__)
	return "with -march AVX-512 (not the shipped build)";
#elif defined(__AVX2__)
	return "with -march AVX2 (not the shipped build)";
#else
	return "for the baseline ISA, as shipped (kernels dispatched at run time)";
#endif
}

/* Level name of sets into the four pointers; -ENOTSUP if unknown or the CPU lacks it. */
static int level_kernels(const kset *sets, const char *level, hnsw_qdist_fn *l2, hnsw_qdist_fn *ip,
			 hnsw_ndist_fn *nl2, hnsw_ndist_fn *nip)
{
	for (int lv = 0; lv < LV_N; lv++) {
		if (strcmp(level, lv_name[lv]))
			continue;
		if (!level_runs(sets, lv))
			return -ENOTSUP;
		*l2 = sets[lv].l2;
		*ip = sets[lv].ip;
		*nl2 = sets[lv].nl2;
		*nip = sets[lv].nip;
		return 0;
	}
	return -ENOTSUP;
}

int hnsw_q8_kernels(const char *level, hnsw_qdist_fn *l2, hnsw_qdist_fn *ip, hnsw_ndist_fn *nl2,
		    hnsw_ndist_fn *nip)
{
	return level_kernels(q8_sets, level, l2, ip, nl2, nip);
}

int hnsw_u8_kernels(const char *level, hnsw_qdist_fn *l2, hnsw_qdist_fn *ip, hnsw_ndist_fn *nl2,
		    hnsw_ndist_fn *nip)
{
	return level_kernels(u8_sets, level, l2, ip, nl2, nip);
}
