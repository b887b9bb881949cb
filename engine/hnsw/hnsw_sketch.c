/*
 * hnsw_sketch.c - a float32 L2 graph's byte sketch: a proven lower bound
 * that rejects most of a search's candidates without reading their float
 * vectors, while every result stays the float32 search's, bit for bit.
 *
 * What it is. Each record holds, beside its float32 vector, one byte per
 * dimension: c_j = round((x_j - lo_j) / s), so that x ~ lo + s c (lo per
 * dimension, one step s for all). A search compares the query against
 * the codes first (a quarter of the bytes: 13 cache lines of fashion-mnist
 * instead of 49, 2 of a 128-d vector instead of 8) and scores the float32
 * vector only when the bound cannot rule the candidate out.
 *
 * Why no result changes. A candidate may be skipped only when the
 * float32 kernel would have rejected it too: the result list is full and
 * its float32 distance d_f would be >= the list's worst, lb. With
 * D = |a - x| (real numbers), R = |a - (lo + s c)| and r >= |x - (lo + s c)|
 * for every node (rmax, measured exactly in double when each node is
 * encoded), the triangle inequality gives D >= R - rmax. The sketch kernel
 * returns S, a float sum of (a'_j - c_j)^2 with a'_j = (a_j - lo_j) / s
 * rounded to float; its rounding is bounded (FMA chains of at most d / 8
 * + 8 steps: relative error under 2^-10 for d <= 65,536), and so is a'
 * (absolute E = 2^-23 |a'|). sketch_threshold() turns lb into the S above
 * which D^2 (1 - 2^-9) >= lb is proven; the float32 kernel's own error (a
 * chain of d / 64 + 6 adds, under 2^-12) then gives d_f >= lb. So a skip
 * is exactly a candidate the float32 search would have dropped, and the
 * heaps see the same pushes in the same order.
 *
 * Where it is off: metrics other than L2 (the bound is L2's), graphs held
 * as exact bytes or quant8 (they read bytes already), graphs grown one
 * add at a time from empty (HFresh's centroids: no range to encode with),
 * vectors or queries with a non-finite value, and
 * COLDSTUDY_HNSW_SKETCH=0 in the environment (records laid out without
 * it, to measure what it buys). It costs round_up(d, 32) bytes a node
 * (a quarter more memory) and is not written to files: a load encodes it
 * again from the vectors (about 0.1 s for fashion-mnist).
 */
#include "hnsw_int.h"

#include <errno.h>
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- kernels: S = sum (a_j - c_j)^2 over nb (a multiple of 32) values ---- */

/* Eight lanes, so its chains are no longer than the SIMD kernels' bound assumes. */
static float sk_l2_scalar(const float *a, const uint8_t *c, size_t nb)
{
	float lanes[8] = {0};

	for (size_t i = 0; i < nb; i++) {
		float t = a[i] - (float) c[i];

		lanes[i & 7] = fmaf(t, t, lanes[i & 7]);
	}
	return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
	       ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

__attribute__((target("avx2,fma"))) static inline __m256 sk_step_avx2(__m256 acc, const float *a,
								       const uint8_t *c)
{
	__m256 x = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) c)));
	__m256 t = _mm256_sub_ps(_mm256_load_ps(a), x);

	return _mm256_fmadd_ps(t, t, acc);
}

__attribute__((target("avx2,fma"))) static float sk_l2_avx2(const float *a, const uint8_t *c,
							     size_t nb)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;

	for (size_t i = 0; i < nb; i += 32) {
		s0 = sk_step_avx2(s0, a + i, c + i);
		s1 = sk_step_avx2(s1, a + i + 8, c + i + 8);
		s2 = sk_step_avx2(s2, a + i + 16, c + i + 16);
		s3 = sk_step_avx2(s3, a + i + 24, c + i + 24);
	}
	__m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
	__m128 o = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
	__m128 p = _mm_add_ps(o, _mm_movehl_ps(o, o));

	return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}

__attribute__((target("avx512f"))) static float sk_l2_avx512(const float *a, const uint8_t *c,
							      size_t nb)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = s0;

	for (size_t i = 0; i < nb; i += 32) {
		__m512 x0 = _mm512_cvtepi32_ps(
			_mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *) (c + i))));
		__m512 x1 = _mm512_cvtepi32_ps(
			_mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *) (c + i + 16))));
		__m512 t0 = _mm512_sub_ps(_mm512_load_ps(a + i), x0);
		__m512 t1 = _mm512_sub_ps(_mm512_load_ps(a + i + 16), x1);

		s0 = _mm512_fmadd_ps(t0, t0, s0);
		s1 = _mm512_fmadd_ps(t1, t1, s1);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

static hnsw_sketch_fn sk_best;
static pthread_once_t sk_once = PTHREAD_ONCE_INIT;

static void sk_init(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		sk_best = sk_l2_avx512;
	else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		sk_best = sk_l2_avx2;
	else
		sk_best = sk_l2_scalar;
}

hnsw_sketch_fn hnsw_sketch_kernel(const char *level)
{
	pthread_once(&sk_once, sk_init);
	if (!level)
		return sk_best;
	if (!strcmp(level, "scalar"))
		return sk_l2_scalar;
	__builtin_cpu_init();
	if (!strcmp(level, "avx2") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return sk_l2_avx2;
	if (!strcmp(level, "avx512") && __builtin_cpu_supports("avx512f"))
		return sk_l2_avx512;
	return NULL;
}

/* ---- parameters and codes ---- */

bool hnsw_sketch_wanted(size_t dim, int metric)
{
	const char *env = getenv("COLDSTUDY_HNSW_SKETCH");

	(void) dim;
	return metric == CV_METRIC_L2 && !(env && !strcmp(env, "0"));
}

/* Raise rmax to r (a CAS loop on the bits: positive doubles order as integers). */
static void raise_rmax(struct hnsw *h, double r)
{
	uint64_t want, cur = __atomic_load_n(&h->sk_rmax, __ATOMIC_RELAXED);

	memcpy(&want, &r, sizeof(want));
	while (want > cur &&
	       !__atomic_compare_exchange_n(&h->sk_rmax, &cur, want, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
}

void hnsw_sketch_encode(struct hnsw *h, const float *x, uint32_t id)
{
	uint8_t *c = (uint8_t *) hnsw_rec(h, id) + h->off_sk;
	const double s = h->sk_s;
	double r2 = 0;

	for (size_t j = 0; j < h->dim; j++) {
		double t = ((double) x[j] - h->sk_lo[j]) / s, e;

		if (!isfinite(t)) { /* a later add's NaN or infinity: no bound from here on */
			c[j] = 0;
			r2 = INFINITY;
			continue;
		}
		t = nearbyint(t);
		c[j] = t < 0 ? 0 : t > 255 ? 255 : (uint8_t) t;
		e = ((double) x[j] - h->sk_lo[j]) - s * c[j];
		r2 += e * e;
	}
	memset(c + h->dim, 0, h->sk_bytes - h->dim);
	/* every double step above is within 2^-50 of exact: pad relatively and absolutely */
	raise_rmax(h, sqrt(r2) * (1 + 0x1p-30) + s * sqrt((double) h->dim) * 0x1p-30);
}

int hnsw_sketch_init(struct hnsw *h, const float *data, size_t n)
{
	const size_t d = h->dim;
	double span = 0;
	float *hi;

	if (!h->off_sk || h->sk_on)
		return 0;
	if (!h->sk_lo) {
		h->sk_lo = malloc(d * sizeof(float));
		if (!h->sk_lo)
			return -ENOMEM;
	}
	hi = malloc(d * sizeof(float));
	if (!hi)
		return -ENOMEM;
	for (size_t j = 0; j < d; j++) {
		h->sk_lo[j] = INFINITY;
		hi[j] = -INFINITY;
	}
	/* the range: of data (a build's batch, before any node) or of the nodes (a load) */
	for (size_t i = 0, rows = data ? n : h->count; i < rows; i++) {
		const float *x = data ? data + i * d : (const float *) hnsw_rec(h, (uint32_t) i);

		for (size_t j = 0; j < d; j++) {
			if (!isfinite(x[j])) {
				free(hi);
				return 0; /* no sketch: the bound needs finite values */
			}
			if (x[j] < h->sk_lo[j])
				h->sk_lo[j] = x[j];
			if (x[j] > hi[j])
				hi[j] = x[j];
		}
	}
	for (size_t j = 0; j < d; j++) {
		if (hi[j] < h->sk_lo[j]) /* no rows */
			h->sk_lo[j] = hi[j] = 0;
		if ((double) hi[j] - h->sk_lo[j] > span)
			span = (double) hi[j] - h->sk_lo[j];
	}
	free(hi);
	/* one step for all dimensions, rounded up to a float so the codes of the range fit */
	h->sk_s = span > 0 && isfinite(span) ? (double) nextafterf((float) (span / 255), INFINITY) : 1.0;
	if (!isfinite(h->sk_s) || h->sk_s < 0x1p-100) /* too small or too wide to bound */
		return 0;
	h->sk_rmax = 0;
	for (uint32_t i = 0; i < h->count; i++)
		hnsw_sketch_encode(h, (const float *) hnsw_rec(h, i), i);
	h->sk_on = 1;
	return 0;
}

/* ---- the query side ---- */

void hnsw_sketch_prepare(const struct hnsw *h, hnsw_ctx *c, hnsw_query *q)
{
	const size_t d = h->dim;
	double n2 = 0;
	float *a = c->sbuf;

	q->sa = NULL;
	if (!h->sk_on || !a)
		return;
	for (size_t j = 0; j < d; j++) {
		double t = ((double) q->a[j] - h->sk_lo[j]) / h->sk_s;

		if (!(fabs(t) < 1e15)) /* non-finite or huge: the float sums could overflow */
			return;
		a[j] = (float) t;
		n2 += (double) a[j] * a[j];
	}
	memset(a + d, 0, (h->sk_bytes - d) * sizeof(float));
	q->sa = a;
	q->sk_e = sqrt(n2) * 0x1p-23 + 0x1p-100;
}

double hnsw_sketch_threshold(const struct hnsw *h, const hnsw_query *q, float lb)
{
	uint64_t bits = __atomic_load_n(&h->sk_rmax, __ATOMIC_ACQUIRE);
	double rmax, r;

	memcpy(&rmax, &bits, sizeof(rmax));
	if (!(lb > 0x1p-100f)) /* tiny (subnormal sums lose the relative bound) or NaN */
		return INFINITY;
	r = (sqrt((double) lb / (1 - 0x1p-9)) + rmax) / h->sk_s + q->sk_e;
	return r * r / (1 - 0x1p-9) * (1 + 0x1p-30);
}
