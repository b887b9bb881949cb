/*
 * hnsw_sketch.c - a float32 L2 graph's byte sketch: a proven lower bound
 * that rejects most of a search's candidates without reading their float
 * vectors, while every result stays the float32 search's, bit for bit.
 *
 * What it is. Each record holds, beside its float32 vector, one byte per
 * dimension: c_k = round((x_j - lo_j) / s) for j = perm[k], so that
 * x ~ lo + s c (lo per dimension, one step s for all, the dimensions in
 * order of falling variance). A search compares the query against the
 * codes first (a quarter of the bytes: 13 cache lines of fashion-mnist
 * instead of 49, 2 of a 128-d vector instead of 8, and most candidates
 * are ruled out within the first 128 codes) and scores the float32 vector
 * only when the bound cannot rule the candidate out.
 *
 * Why no result changes. A candidate may be skipped only when the
 * float32 kernel would have rejected it too: the result list is full and
 * its float32 distance d_f would be >= the list's worst, lb. In real
 * numbers, with D = |a - x| and rmax >= |x - (lo + s c)| for every node
 * (measured in double as each node is encoded, padded for its rounding),
 * the triangle inequality gives D >= |a - (lo + s c)| - rmax. The query
 * side a' = (a - lo) / s is clamped to -255..510 (which moves it no
 * further from codes in 0..255) and rounded to quarter steps q; E bounds
 * |a' - q|, measured per query. The kernel's sum S = sum (4 q_k - 4 c_k)^2
 * is an exact integer, so |a - x| >= s (sqrt(S) / 4 - E) - rmax with no
 * rounding of the kernel's own. hnsw_sketch_threshold() turns lb into the
 * S at or above which D^2 (1 - 2^-9) >= lb is proven; the float32
 * kernel's error (a chain of d / 64 + 6 adds of terms >= 0: under 2^-12
 * relative) then gives d_f >= lb. So a skip is exactly a candidate the
 * float32 search would have dropped, and the heaps see the same pushes in
 * the same order (tests hnsw-unit test_sketch_bound, test_sketch_graph).
 *
 * Where it is off: metrics other than L2 (the bound is L2's), more than
 * 8,192 dimensions (the kernels' 32-bit lanes), graphs held as exact
 * bytes or quant8 (they read bytes already), graphs grown one add at a
 * time from empty (HFresh's centroids: no range to encode with), vectors
 * with a non-finite value (a later add with one turns the bound off),
 * queries with one, and COLDSTUDY_HNSW_SKETCH=0 in the environment
 * (records laid out without it, to measure what it buys). It costs
 * round_up(d, 32) bytes a node (a quarter more memory) and is not written
 * to files: a load encodes it again from the vectors (about 0.2 s for
 * fashion-mnist).
 */
#include "hnsw_int.h"

#include <errno.h>
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * ---- kernels: S = sum (a_j - 4 c_j)^2 over nb (a multiple of 32) values ----
 * Integers throughout, so S is exact and every level returns the same
 * value: a_j is the query's 4 a'_j rounded, with a' clamped to -255..510
 * (hnsw_sketch_prepare), so a term is at most 2040^2 and a 32-bit lane of
 * the SIMD kernels adds at most nb / 32 pairs of them: under 2^31 for
 * nb <= 8,192 (hnsw_sketch_wanted). Every term is >= 0, so a partial
 * sum that reaches limit proves the whole one does: the kernels stop at
 * the first SK_BLOCK boundary where it has (the codes are stored in order
 * of falling variance, so that comes early), and return a value >= limit
 * exactly when the whole sum is.
 */
#define SK_BLOCK 128

static uint64_t sk_l2_scalar(const int16_t *a, const uint8_t *c, size_t nb, uint64_t limit)
{
	uint64_t s = 0;

	for (size_t i = 0; i < nb; i++) {
		int32_t t = (int32_t) a[i] - 4 * (int32_t) c[i];

		s += (uint64_t) (t * t);
		if ((i & (SK_BLOCK - 1)) == SK_BLOCK - 1 && s >= limit)
			break;
	}
	return s;
}

__attribute__((target("avx2"))) static inline __m256i sk_step_avx2(__m256i acc, const int16_t *a,
								    const uint8_t *c)
{
	__m256i x = _mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_load_si128((const __m128i *) c)), 2);
	__m256i t = _mm256_sub_epi16(_mm256_load_si256((const __m256i *) a), x);

	return _mm256_add_epi32(acc, _mm256_madd_epi16(t, t));
}

/* The sum of s's 32-bit lanes, each under 2^31. */
__attribute__((target("avx2"))) static inline uint64_t sk_sum_avx2(__m256i s)
{
	__m256i w = _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(s)),
				     _mm256_cvtepu32_epi64(_mm256_extracti128_si256(s, 1)));
	__m128i v = _mm_add_epi64(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));

	return (uint64_t) _mm_cvtsi128_si64(v) + (uint64_t) _mm_extract_epi64(v, 1);
}

__attribute__((target("avx2"))) static uint64_t sk_l2_avx2(const int16_t *a, const uint8_t *c,
							    size_t nb, uint64_t limit)
{
	__m256i s0 = _mm256_setzero_si256(), s1 = s0;

	for (size_t i = 0; i < nb; i += 32) {
		s0 = sk_step_avx2(s0, a + i, c + i);
		s1 = sk_step_avx2(s1, a + i + 16, c + i + 16);
		if (((i + 32) & (SK_BLOCK - 1)) == 0 && i + 32 < nb) {
			uint64_t v = sk_sum_avx2(_mm256_add_epi32(s0, s1));

			if (v >= limit)
				return v;
		}
	}
	return sk_sum_avx2(_mm256_add_epi32(s0, s1));
}

/* The sum of s's 32-bit lanes, each under 2^31. */
__attribute__((target("avx512f,avx512bw"))) static inline uint64_t sk_sum_avx512(__m512i s)
{
	return (uint64_t) _mm512_reduce_add_epi64(
		_mm512_add_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(s)),
				 _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(s, 1))));
}

__attribute__((target("avx512f,avx512bw"))) static uint64_t sk_l2_avx512(const int16_t *a,
									    const uint8_t *c,
									    size_t nb,
									    uint64_t limit)
{
	__m512i s0 = _mm512_setzero_si512();

	for (size_t i = 0; i < nb; i += 32) {
		__m512i x = _mm512_slli_epi16(
			_mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i *) (c + i))), 2);
		__m512i t = _mm512_sub_epi16(_mm512_load_si512((const void *) (a + i)), x);

		s0 = _mm512_add_epi32(s0, _mm512_madd_epi16(t, t));
		if (((i + 32) & (SK_BLOCK - 1)) == 0 && i + 32 < nb) {
			uint64_t v = sk_sum_avx512(s0);

			if (v >= limit)
				return v;
		}
	}
	return sk_sum_avx512(s0);
}

/* The levels, best last, and whether this CPU runs each. */
static const struct {
	const char *name;
	hnsw_sketch_fn fn;
} sk_levels[] = {{"scalar", sk_l2_scalar}, {"avx2", sk_l2_avx2}, {"avx512", sk_l2_avx512}};

static bool sk_runs(size_t lv)
{
	__builtin_cpu_init();
	if (lv == 1)
		return __builtin_cpu_supports("avx2");
	if (lv == 2)
		return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
	return true;
}

hnsw_sketch_fn hnsw_sketch_kernel(const char *level)
{
	for (size_t lv = sizeof(sk_levels) / sizeof(sk_levels[0]); lv-- > 0;)
		if ((!level || !strcmp(level, sk_levels[lv].name)) && sk_runs(lv))
			return sk_levels[lv].fn;
	return NULL;
}

/* ---- parameters and codes ---- */

bool hnsw_sketch_wanted(size_t dim, int metric)
{
	const char *env = getenv("COLDSTUDY_HNSW_SKETCH");

	return metric == CV_METRIC_L2 && dim <= 8192 && !(env && !strcmp(env, "0"));
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

void hnsw_sketch_encode(struct hnsw *h, uint32_t id)
{
	char *rec = hnsw_rec(h, id);
	const float *x = (const float *) rec;
	uint8_t *c = (uint8_t *) rec + h->off_sk;
	const double s = h->sk_s;
	double r2 = 0;

	for (size_t k = 0; k < h->dim; k++) {
		const uint32_t j = h->sk_perm[k];
		const double v = (double) x[j] - h->sk_lo[j];
		double t = v / s;

		if (!isfinite(t)) { /* a later add's NaN or infinity: no bound from here on */
			c[k] = 0;
			r2 = INFINITY;
			continue;
		}
		t = nearbyint(t);
		c[k] = t < 0 ? 0 : t > 255 ? 255 : (uint8_t) t;
		r2 += (v - s * c[k]) * (v - s * c[k]);
	}
	memset(c + h->dim, 0, h->sk_bytes - h->dim);
	/* every double step above is within 2^-50 of exact: pad relatively and absolutely */
	raise_rmax(h, sqrt(r2) * (1 + 0x1p-30) + s * sqrt((double) h->dim) * 0x1p-30);
}

/* A dimension and its spread, for ordering the codes. */
typedef struct dim_var {
	double v;
	uint32_t j;
} dim_var;

/* qsort's order: higher spread first, then lower index. */
static int by_variance(const void *x, const void *y)
{
	const dim_var *a = x, *b = y;

	if (a->v != b->v)
		return a->v > b->v ? -1 : 1;
	return a->j < b->j ? -1 : a->j > b->j;
}

int hnsw_sketch_init(struct hnsw *h, const float *data, size_t n)
{
	const size_t d = h->dim, rows = data ? n : h->count;
	double span = 0, *sum;
	dim_var *ord;
	float *hi;

	if (!h->off_sk || h->sk_on)
		return 0;
	if (!h->sk_lo) {
		h->sk_lo = malloc(d * sizeof(float));
		h->sk_perm = malloc(d * sizeof(uint32_t));
		if (!h->sk_lo || !h->sk_perm)
			return -ENOMEM; /* hnsw_free frees them */
	}
	hi = malloc(d * sizeof(float));
	sum = calloc(d, sizeof(double));
	ord = calloc(d, sizeof(dim_var));
	if (!hi || !sum || !ord) {
		free(hi);
		free(sum);
		free(ord);
		return -ENOMEM;
	}
	for (size_t j = 0; j < d; j++) {
		h->sk_lo[j] = INFINITY;
		hi[j] = -INFINITY;
	}
	/* the range: of data (a build's batch, before any node) or of the nodes (a load) */
	for (size_t i = 0; i < rows; i++) {
		const float *x = data ? data + i * d : (const float *) hnsw_rec(h, (uint32_t) i);

		for (size_t j = 0; j < d; j++) {
			if (!isfinite(x[j])) {
				free(hi);
				free(sum);
				free(ord);
				return 0; /* no sketch: the bound needs finite values */
			}
			sum[j] += x[j];
			ord[j].v += (double) x[j] * x[j];
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
		/* n times the variance: only the order matters */
		ord[j].v -= rows ? sum[j] * sum[j] / (double) rows : 0;
		ord[j].j = (uint32_t) j;
	}
	qsort(ord, d, sizeof(*ord), by_variance);
	for (size_t k = 0; k < d; k++)
		h->sk_perm[k] = ord[k].j;
	free(hi);
	free(sum);
	free(ord);
	/* one step for all dimensions, rounded up to a float so the codes of the range fit */
	h->sk_s = span > 0 ? (double) nextafterf((float) (span / 255), INFINITY) : 1.0;
	if (!isfinite(h->sk_s) || h->sk_s < 0x1p-100) /* too small or too wide to bound */
		return 0;
	h->sk_rmax = 0;
	for (uint32_t i = 0; i < h->count; i++)
		hnsw_sketch_encode(h, i);
	h->sk_on = 1;
	return 0;
}

/* ---- the query side ---- */

/*
 * Codes k0..d-1 of the query qa into a[], their rounding's squares into
 * *e2 and t's into *n2; false on a value that is not finite.
 */
static bool prep_scalar(const struct hnsw *h, const float *qa, int16_t *a, size_t k0, double *e2,
			double *n2)
{
	for (size_t k = k0; k < h->dim; k++) {
		const uint32_t j = h->sk_perm[k];
		double t = ((double) qa[j] - h->sk_lo[j]) / h->sk_s, r;

		if (!isfinite(t))
			return false;
		/*
		 * The codes lie in 0..255, so clamping t to a wider range moves
		 * it no further from any of them (the kernels' sums stay in
		 * range); then to a quarter step.
		 */
		t = t < -255 ? -255 : t > 510 ? 510 : t;
		r = nearbyint(4 * t);
		a[k] = (int16_t) r;
		*e2 += (t - r / 4) * (t - r / 4);
		*n2 += t * t;
	}
	return true;
}

/* Eight dimensions of prep_avx512: the codes as int32, e2 and n2 added to, finiteness and-ed. */
__attribute__((target("avx512f"))) static inline __m256i prep8_avx512(__m256 x, __m256 l, __m512d s,
								      __m512d *ev, __m512d *nv,
								      __mmask8 *fin)
{
	__m512d t = _mm512_div_pd(_mm512_sub_pd(_mm512_cvtps_pd(x), _mm512_cvtps_pd(l)), s), r, e;

	/* finite: t - t is 0 (NaN for a NaN or an infinity) */
	*fin &= _mm512_cmp_pd_mask(_mm512_sub_pd(t, t), _mm512_setzero_pd(), _CMP_EQ_OQ);
	t = _mm512_min_pd(_mm512_max_pd(t, _mm512_set1_pd(-255)), _mm512_set1_pd(510));
	r = _mm512_roundscale_pd(_mm512_mul_pd(t, _mm512_set1_pd(4)),
				 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	e = _mm512_sub_pd(t, _mm512_mul_pd(r, _mm512_set1_pd(0.25)));
	*ev = _mm512_add_pd(*ev, _mm512_mul_pd(e, e));
	*nv = _mm512_add_pd(*nv, _mm512_mul_pd(t, t));
	return _mm512_cvtpd_epi32(r);
}

/*
 * prep_scalar sixteen codes at a time: each code is the scalar loop's (the
 * same double operations, division included, and round-to-nearest-even
 * as nearbyint in the default mode), and only e2 and n2 are summed in
 * another order, which sk_e's padding covers by far (2^-30 relative,
 * against 784 adds' 2^-43). The rest (d mod 16) goes to prep_scalar. It
 * was 7% of a fashion-mnist query at ef 10 as a scalar loop (a gather and
 * a division a dimension).
 */
__attribute__((target("avx512f"))) static bool prep_avx512(const struct hnsw *h, const float *qa,
							   int16_t *a, double *e2, double *n2)
{
	const size_t d = h->dim, d16 = d / 16 * 16;
	const __m512d s = _mm512_set1_pd(h->sk_s);
	__m512d ev = _mm512_setzero_pd(), nv = ev;
	__mmask8 fin = 0xff;

	for (size_t k = 0; k < d16; k += 16) {
		const __m512i idx = _mm512_loadu_si512((const void *) (h->sk_perm + k));
		const __m512 x = _mm512_i32gather_ps(idx, qa, 4), l = _mm512_i32gather_ps(idx, h->sk_lo, 4);
		__m256i c0 = prep8_avx512(_mm512_castps512_ps256(x), _mm512_castps512_ps256(l), s, &ev,
					  &nv, &fin);
		__m256i c1 = prep8_avx512(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)),
					  _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(l), 1)),
					  s, &ev, &nv, &fin);

		_mm256_storeu_si256((__m256i *) (a + k),
				    _mm512_cvtepi32_epi16(_mm512_inserti64x4(_mm512_castsi256_si512(c0), c1, 1)));
	}
	if (fin != 0xff)
		return false;
	*e2 = _mm512_reduce_add_pd(ev);
	*n2 = _mm512_reduce_add_pd(nv);
	return prep_scalar(h, qa, a, d16, e2, n2);
}

void hnsw_sketch_prepare_at(const struct hnsw *h, hnsw_ctx *c, hnsw_query *q, bool vector)
{
	const size_t d = h->dim;
	double e2 = 0, n2 = 0;
	int16_t *a = c->sbuf;
	bool ok;

	q->sa = NULL;
	if (!h->sk_on || !a)
		return;
	if (vector)
		ok = prep_avx512(h, q->a, a, &e2, &n2);
	else
		ok = prep_scalar(h, q->a, a, 0, &e2, &n2);
	if (!ok)
		return;
	memset(a + d, 0, (h->sk_bytes - d) * sizeof(int16_t));
	q->sa = a;
	/* |clamped a' - a/4|, its double rounding padded */
	q->sk_e = sqrt(e2) * (1 + 0x1p-30) + sqrt(n2) * 0x1p-40;
}

void hnsw_sketch_prepare(const struct hnsw *h, hnsw_ctx *c, hnsw_query *q)
{
	/* the graph's kernel is the AVX-512 one only where the CPU runs it */
	hnsw_sketch_prepare_at(h, c, q, h->skern == sk_l2_avx512);
}

double hnsw_sketch_threshold(const struct hnsw *h, const hnsw_query *q, float lb)
{
	uint64_t bits = __atomic_load_n(&h->sk_rmax, __ATOMIC_ACQUIRE);
	double rmax, r;

	memcpy(&rmax, &bits, sizeof(rmax));
	if (!(lb > 0x1p-100f)) /* tiny (subnormal sums lose the relative bound) or NaN */
		return INFINITY;
	r = (sqrt((double) lb / (1 - 0x1p-9)) + rmax) / h->sk_s + q->sk_e;
	return 16 * r * r * (1 + 0x1p-30);
}
