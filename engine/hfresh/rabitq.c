/*
 * rabitq.c - RaBitQ codes (Gao & Long, SIGMOD 2024) for HFresh postings.
 *
 * A vector o in posting c is stored as the sign bits of its rotated,
 * centred residual r = R(o - c) plus three factors. With x0 = <o_bar, u>
 * (u = r/|r|, o_bar = sign(r)/sqrt(D)) the paper's unbiased estimator is
 *
 *     <u, q_r> ~ <o_bar, q_r> / x0,  q_r = R(q - c)
 *     |o - q|^2 = |r|^2 + |q_r|^2 - 2 |r| <u, q_r>
 *
 * so an entry keeps add = |r|^2 and rescale = -2|r|/x0, and the estimate
 * is add + |q_r|^2 + rescale * <o_bar, q_r>. <o_bar, q_r> is computed
 * from the query quantised to B_q = 4 bits per coordinate (lo + delta*u_i)
 * as (2/sqrt D)(lo*popcount(b) + delta * sum_j 2^j popcount(b & plane_j))
 * - sum(q_r)/sqrt D: four AND-popcounts per 64 dimensions.
 *
 * Error bound (the paper's Theorem 3.2, eps0 = 1.9): the estimate of
 * <u, q_r> is within |q_r| sqrt((1 - x0^2)/x0^2) eps0/sqrt(D - 1), so the
 * distance is within err = 2|r| sqrt(1 - x0^2)/x0 eps0/sqrt(D - 1) times
 * |q_r|, plus the query-quantisation error, which we bound at three
 * standard deviations of the rounding noise (delta/sqrt 12 per set bit).
 *
 * Extended codes (code_bits B = 2..4; Gao et al., SIGMOD 2025) replace
 * the sign bits by B-bit levels (ex_encode below), estimated against the
 * query residual quantised to signed bytes: one byte dot product an entry,
 * with an error 8-9x smaller than the 1-bit code's at dp 128 (hfresh-unit).
 *
 * The rotation is not a dense Gaussian matrix but HFR_ROT_ROUNDS rounds
 * of (random signs, random permutation, normalised Walsh-Hadamard on
 * 64-wide blocks): orthogonal, O(D log 64) per vector, as RaBitQ-Library's
 * FHT-based rotator. The permutations carry mass across blocks.
 */
#include "hfresh.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64: the seeded generator for rotations and k-means. */
static uint64_t mix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int hfr_rot_init(hfr_rot *r, uint32_t di, uint64_t seed)
{
	uint64_t s = seed ^ 0x5241424954510001ull;
	uint32_t dp = hfr_dp(di);

	memset(r, 0, sizeof(*r));
	r->di = di;
	r->dp = dp;
	r->sign = malloc(sizeof(float) * HFR_ROT_ROUNDS * dp);
	r->perm = malloc(sizeof(uint32_t) * HFR_ROT_ROUNDS * dp);
	if (!r->sign || !r->perm) {
		hfr_rot_free(r);
		return -ENOMEM;
	}
	for (unsigned k = 0; k < HFR_ROT_ROUNDS; k++) {
		float *sg = r->sign + (size_t) k * dp;
		uint32_t *pm = r->perm + (size_t) k * dp;

		for (uint32_t i = 0; i < dp; i++) {
			sg[i] = (mix64(&s) & 1) ? 1.0f : -1.0f;
			pm[i] = i;
		}
		for (uint32_t i = dp - 1; i > 0; i--) { /* Fisher-Yates */
			uint32_t j = (uint32_t) (mix64(&s) % (i + 1));
			uint32_t t = pm[i];

			pm[i] = pm[j];
			pm[j] = t;
		}
	}
	return 0;
}

void hfr_rot_free(hfr_rot *r)
{
	if (!r)
		return;
	free(r->sign);
	free(r->perm);
	r->sign = NULL;
	r->perm = NULL;
}

/* In-place normalised Walsh-Hadamard transform of 64 floats. */
static void fht64(float *v)
{
	for (unsigned h = 1; h < 64; h <<= 1)
		for (unsigned i = 0; i < 64; i += h << 1)
			for (unsigned j = i; j < i + h; j++) {
				float a = v[j], b = v[j + h];

				v[j] = a + b;
				v[j + h] = a - b;
			}
	for (unsigned i = 0; i < 64; i++)
		v[i] *= 0.125f;
}

void hfr_rot_apply(const hfr_rot *r, const float *x, float *out)
{
	uint32_t dp = r->dp;
	float tmp[dp];

	memcpy(tmp, x, sizeof(float) * r->di);
	memset(tmp + r->di, 0, sizeof(float) * (dp - r->di));
	for (unsigned k = 0; k < HFR_ROT_ROUNDS; k++) {
		const float *sg = r->sign + (size_t) k * dp;
		const uint32_t *pm = r->perm + (size_t) k * dp;
		float *src = (k & 1) ? out : tmp, *dst = (k & 1) ? tmp : out;

		for (uint32_t i = 0; i < dp; i++)
			dst[i] = sg[i] * src[pm[i]];
		for (uint32_t b = 0; b < dp; b += 64)
			fht64(dst + b);
	}
	if (!(HFR_ROT_ROUNDS & 1))
		memcpy(out, tmp, sizeof(float) * dp);
}

/* A min-heap of (threshold, coordinate) for the extended code's scale sweep. */
typedef struct ev {
	float t;
	uint32_t i;
} ev;

#define HEAP_PREFIX evheap /* the lowest threshold on top */
#define HEAP_ELEM ev
#define HEAP_ABOVE(x, y) ((x).t < (y).t)
#include "heap_template.h"

/* Restore the heap below slot i of h[0..n) (i < n, or n == 0). */
static void ev_down(ev *h, size_t n, size_t i)
{
	if (n)
		evheap_sift_down(h, n, i, h[i]);
}

/*
 * The extended code (Gao et al., SIGMOD 2025): y_t = sign(r_t) (2 k_t + 1),
 * k_t in 0..L (L = 2^(bits-1) - 1), chosen to maximise <y, u>/|y| over the
 * codes k_t = min(L, floor(s a_t)) of every scale s (a = |u|). The sweep
 * raises s through each coordinate's thresholds (j / a_t) in order with a
 * heap, keeping <y, u> and |y|^2 incrementally; the best count of steps is
 * then replayed. At most L * dp steps (7 * 128 at dp 128, bits 4).
 */
static void ex_encode(const float *res, uint32_t dp, unsigned bits, double nr, uint8_t *ex,
		      hfr_fac *f)
{
	const uint32_t L = (1u << (bits - 1)) - 1;
	float a[dp];
	uint8_t k[dp];
	ev h[dp];
	size_t nh = 0, steps = 0, best_steps = 0;
	double say = 0, sy2 = dp, best, best_say, best_sy2;

	for (uint32_t t = 0; t < dp; t++) {
		a[t] = (float) (fabs((double) res[t]) / nr);
		k[t] = 0;
		say += a[t];
		if (a[t] > 0)
			h[nh++] = (ev){.t = 1.0f / a[t], .i = t};
	}
	for (size_t i = nh / 2; i-- > 0;)
		ev_down(h, nh, i);
	best = say * say / sy2; /* the square of <y, u>/|y| (say > 0): no root a step */
	best_say = say;
	best_sy2 = sy2;
	for (int pass = 0; pass < 2; pass++) {
		while (nh && (pass == 0 || steps < best_steps)) {
			uint32_t t = h[0].i;
			double c;

			k[t]++;
			say += 2.0 * a[t];
			sy2 += 8.0 * k[t];
			steps++;
			if (k[t] < L) {
				h[0].t = (float) (k[t] + 1) / a[t];
			} else {
				h[0] = h[--nh];
			}
			ev_down(h, nh, 0);
			c = say * say / sy2;
			if (pass == 0 && c > best) {
				best = c;
				best_steps = steps;
				best_say = say;
				best_sy2 = sy2;
			}
		}
		if (pass == 1)
			break;
		/* replay from the start up to the best step count */
		nh = 0;
		steps = 0;
		say = 0;
		sy2 = dp;
		for (uint32_t t = 0; t < dp; t++) {
			k[t] = 0;
			if (a[t] > 0)
				h[nh++] = (ev){.t = 1.0f / a[t], .i = t};
		}
		for (size_t i = nh / 2; i-- > 0;)
			ev_down(h, nh, i);
	}
	memset(ex, 0, hfr_ex_code_bytes(dp, bits));
	for (uint32_t t = 0; t < dp; t++) {
		unsigned x = res[t] > 0 ? k[t] + (1u << (bits - 1)) : (1u << (bits - 1)) - 1u - k[t];
		uint8_t *b = &ex[(t / 64) * 32 + (t % 32)];

		*b |= (t % 64) < 32 ? (uint8_t) x : (uint8_t) (x << 4);
	}
	double x0 = best_say / sqrt(best_sy2);

	if (x0 < 1e-6)
		x0 = 1e-6;
	if (x0 > 1.0)
		x0 = 1.0;
	f->rescale_ex = (float) (-2.0 * nr / best_say);
	f->err_ex = (float) (2.0 * nr * sqrt(fmax(0.0, 1.0 - x0 * x0)) / x0 * HFR_EPS0 /
			     sqrt(dp > 1 ? (double) (dp - 1) : 1.0));
	f->qerr_ex = (float) (2.0 * nr / best_say * sqrt(best_sy2) * 3.0 / sqrt(12.0));
}

void hfr_encode(const float *res, uint32_t dp, unsigned bits, uint64_t *code, uint8_t *ex,
		hfr_fac *f)
{
	double n2 = 0, l1 = 0;
	uint32_t pop = 0;

	memset(code, 0, dp / 8);
	f->rescale_ex = f->err_ex = f->qerr_ex = 0;
	for (uint32_t i = 0; i < dp; i++) {
		n2 += (double) res[i] * res[i];
		l1 += fabs((double) res[i]);
		if (res[i] > 0) {
			code[i >> 6] |= 1ull << (i & 63);
			pop++;
		}
	}
	f->pop = (uint16_t) (pop > 65535 ? 65535 : pop);
	if (n2 <= 0) { /* the vector is its centroid: distance is |q_r|^2 exactly */
		f->add = 0;
		f->rescale = 0;
		f->err = 0;
		if (bits > 1)
			memset(ex, 0, hfr_ex_code_bytes(dp, bits));
		return;
	}
	double nr = sqrt(n2);
	double x0 = l1 / (nr * sqrt((double) dp));

	if (x0 < 1e-6)
		x0 = 1e-6;
	f->add = (float) n2;
	f->rescale = (float) (-2.0 * nr / x0);
	f->err = (float) (2.0 * nr * sqrt(fmax(0.0, 1.0 - x0 * x0)) / x0 * HFR_EPS0 /
			  sqrt(dp > 1 ? (double) (dp - 1) : 1.0));
	if (bits > 1)
		ex_encode(res, dp, bits, nr, ex, f);
}

void hfr_query_quant(const float *qr, uint32_t dp, hfr_qq *q)
{
	float lo = qr[0], hi = qr[0];
	double s = 0, s2 = 0;
	const unsigned levels = (1u << HFR_QUERY_BITS) - 1;

	for (uint32_t i = 0; i < dp; i++) {
		if (qr[i] < lo)
			lo = qr[i];
		if (qr[i] > hi)
			hi = qr[i];
		s += qr[i];
		s2 += (double) qr[i] * qr[i];
	}
	q->dp = dp;
	q->words = dp / 64;
	q->lo = lo;
	q->delta = hi > lo ? (hi - lo) / (float) levels : 0.0f;
	q->sumq = (float) s;
	q->qn2 = (float) s2;
	q->qn = (float) sqrt(s2);
	q->inv_sqrt_d = (float) (1.0 / sqrt((double) dp));
	float inv = q->delta > 0 ? 1.0f / q->delta : 0.0f;
	/*
	 * Round to the nearest level (x + 0.5 truncated: x >= 0) and build each
	 * 64-wide word of the bit planes in registers, branch-free: this runs
	 * once per posting a query reads (64 x dp values at searchProbe 64).
	 */
	for (uint32_t w = 0; w < q->words; w++) {
		uint64_t pl[HFR_QUERY_BITS] = {0};
		const float *x = qr + (size_t) w * 64;

		for (unsigned b = 0; b < 64; b++) {
			unsigned u = (unsigned) ((x[b] - lo) * inv + 0.5f);

			u = u > levels ? levels : u;
			for (unsigned j = 0; j < HFR_QUERY_BITS; j++)
				pl[j] |= (uint64_t) (u >> j & 1u) << b;
		}
		for (unsigned j = 0; j < HFR_QUERY_BITS; j++)
			q->planes[j * q->words + w] = pl[j];
	}
}

/*
 * The estimate from s = sum_j 2^j popcount(b & plane_j), and its bound.
 * Only the popcount sum has per-CPU builds (below); this float arithmetic
 * is compiled once, for the default target, so every CPU path gives the
 * same estimate bit for bit (a target with FMA would otherwise contract
 * these expressions differently).
 */
static inline float est_finish(const hfr_qq *q, uint64_t s, const hfr_fac *f, float *err)
{
	float ipb = 2.0f * q->inv_sqrt_d * (q->lo * (float) f->pop + q->delta * (float) s) -
		    q->sumq * q->inv_sqrt_d;
	float abs_rs = fabsf(f->rescale);
	/* rounding noise: delta/sqrt(12) per set bit, three sigmas, through 2/sqrt(D) */
	float qerr = abs_rs * 2.0f * q->inv_sqrt_d * 3.0f * q->delta *
		     sqrtf((float) f->pop * (1.0f / 12.0f));

	*err = f->err * q->qn + qerr;
	return f->add + q->qn2 + f->rescale * ipb;
}

/* The popcount sum; inlined into a generic and a POPCNT build of it. */
static inline __attribute__((always_inline)) uint64_t ipsum_body(const hfr_qq *q,
								 const uint64_t *code)
{
	uint64_t s = 0;
	uint32_t w = q->words;

	for (unsigned j = 0; j < HFR_QUERY_BITS; j++) {
		const uint64_t *pl = q->planes + (size_t) j * w;
		uint64_t c = 0;

		for (uint32_t i = 0; i < w; i++)
			c += (uint64_t) __builtin_popcountll(code[i] & pl[i]);
		s += c << j;
	}
	return s;
}

static uint64_t ipsum_generic(const hfr_qq *q, const uint64_t *code)
{
	return ipsum_body(q, code);
}

__attribute__((target("popcnt"))) static uint64_t ipsum_popcnt(const hfr_qq *q,
							     const uint64_t *code)
{
	return ipsum_body(q, code);
}

#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 8)
#include <immintrin.h>
#define HFR_HAVE_AVX512_POPCNT 1
/*
 * AVX-512 VPOPCNTDQ: eight code words against eight words of each plane per
 * step (784 dimensions: two steps, the second masked), one horizontal sum
 * at the end; the same integer as ipsum_body.
 */
__attribute__((target("avx512f,avx512vpopcntdq"))) static uint64_t ipsum_avx512(const hfr_qq *q,
										 const uint64_t *code)
{
	uint32_t w = q->words;
	__m512i acc = _mm512_setzero_si512();

	for (uint32_t i = 0; i < w; i += 8) {
		__mmask8 m = w - i >= 8 ? (__mmask8) 0xff : (__mmask8) ((1u << (w - i)) - 1);
		__m512i c = _mm512_maskz_loadu_epi64(m, code + i);

		for (unsigned j = 0; j < HFR_QUERY_BITS; j++) {
			__m512i p = _mm512_maskz_loadu_epi64(m, q->planes + (size_t) j * w + i);
			__m512i n = _mm512_popcnt_epi64(_mm512_and_si512(c, p));

			acc = _mm512_add_epi64(acc, _mm512_sllv_epi64(n, _mm512_set1_epi64((long long) j)));
		}
	}
	return (uint64_t) _mm512_reduce_add_epi64(acc);
}
#endif

/* Chosen once (cpuid): AVX-512 VPOPCNTDQ, else POPCNT, else the portable loop. */
static uint64_t (*ipsum_fn)(const hfr_qq *, const uint64_t *);

float hfr_estimate_ref(const hfr_qq *q, const uint64_t *code, const hfr_fac *f, float *err)
{
	return est_finish(q, ipsum_generic(q, code), f, err);
}

float hfr_estimate(const hfr_qq *q, const uint64_t *code, const hfr_fac *f, float *err)
{
	uint64_t (*fn)(const hfr_qq *, const uint64_t *) = __atomic_load_n(&ipsum_fn, __ATOMIC_RELAXED);

	if (!fn) {
		__builtin_cpu_init();
		fn = __builtin_cpu_supports("popcnt") ? ipsum_popcnt : ipsum_generic;
#ifdef HFR_HAVE_AVX512_POPCNT
		if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq"))
			fn = ipsum_avx512;
#endif
		__atomic_store_n(&ipsum_fn, fn, __ATOMIC_RELAXED);
	}
	return est_finish(q, fn(q, code), f, err);
}

/* ---- extended codes ---- */

/* The nibble order: per 128 dims, the low nibbles' 64 then the high nibbles' 64. */
static void quant_ex_nibble_order(uint32_t dp, hfr_qx *x)
{
	for (uint32_t b = 0; b < dp; b += 128) {
		if (b + 128 <= dp) {
			memcpy(x->q8p + b, x->q8 + b, 32);
			memcpy(x->q8p + b + 32, x->q8 + b + 64, 32);
			memcpy(x->q8p + b + 64, x->q8 + b + 32, 32);
			memcpy(x->q8p + b + 96, x->q8 + b + 96, 32);
		} else {
			memcpy(x->q8p + b, x->q8 + b, 64);
		}
	}
}

/* The norms, dp and step from the largest |qr[t]|, mx; returns the scale 127 / mx (or 0). */
static float quant_ex_scale(const float *qr, uint32_t dp, float mx, hfr_qx *x)
{
	double s2 = 0;

	for (uint32_t t = 0; t < dp; t++) /* one chain, in order */
		s2 += (double) qr[t] * qr[t];
	x->qn2 = (float) s2;
	x->qn = (float) sqrt(s2);
	x->dp = dp;
	x->step = mx > 0 ? mx / 127.0f : 0.0f;
	return mx > 0 ? 127.0f / mx : 0.0f;
}

void hfr_query_quant_ex_ref(const float *qr, uint32_t dp, hfr_qx *x)
{
	float mx = 0, inv;
	int32_t sum = 0;

	/*
	 * Branch-free, so both loops vectorise: the sign of a residual is a coin
	 * toss, and a branch on it mispredicted half the time. The maximum
	 * ignores a NaN as fmaxf does; v + copysign(0.5, v) is the rounding
	 * (half away from zero) that v < 0 ? v - 0.5 : v + 0.5 was, bit for bit.
	 * The double sum stays one chain, in order.
	 */
	for (uint32_t t = 0; t < dp; t++) {
		float a = fabsf(qr[t]);

		mx = a > mx ? a : mx;
	}
	inv = quant_ex_scale(qr, dp, mx, x);
	for (uint32_t t = 0; t < dp; t++) {
		float v = qr[t] * inv;
		int q = (int) (v + copysignf(0.5f, v));

		q = q > 127 ? 127 : q < -127 ? -127 : q;
		x->q8[t] = (int8_t) q;
		sum += q;
	}
	x->sum8 = sum;
	quant_ex_nibble_order(dp, x);
}

#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 8)
#define HFR_HAVE_QUANT_AVX2 1
/*
 * hfr_query_quant_ex_ref on eight lanes, bit for bit (dp a multiple of 32):
 * maxps(a, m) is a > m ? a : m lane by lane, and a maximum of numbers that
 * are never NaN (m starts at +0, a NaN a is dropped) is the same in any
 * order; the rounding is the same multiply, then add of copysign(0.5, v),
 * then truncation (cvttps2dq, as cvttss2si: out of range gives INT_MIN,
 * clamped to -127); the sum is of integers. The double sum of squares is
 * the same one chain, in order. No FMA in the target: a fused multiply-add
 * would round once where the reference rounds twice.
 */
__attribute__((target("avx2"))) static void quant_ex_avx2(const float *qr, uint32_t dp,
							  hfr_qx *x)
{
	const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	const __m256 signm = _mm256_castsi256_ps(_mm256_set1_epi32((int) 0x80000000u));
	const __m256 half = _mm256_set1_ps(0.5f);
	const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
	const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
	__m256 mv = _mm256_setzero_ps(), vinv;
	__m256i sv = _mm256_setzero_si256();
	float lanes[8], mx = 0, inv;
	int32_t sums[8], sum = 0;

	for (uint32_t t = 0; t < dp; t += 8)
		mv = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(qr + t), absm), mv);
	_mm256_storeu_ps(lanes, mv);
	for (int l = 0; l < 8; l++)
		mx = lanes[l] > mx ? lanes[l] : mx;
	inv = quant_ex_scale(qr, dp, mx, x);
	vinv = _mm256_set1_ps(inv);
	for (uint32_t t = 0; t < dp; t += 32) {
		__m256i q[4];

		for (int j = 0; j < 4; j++) {
			__m256 v = _mm256_mul_ps(_mm256_loadu_ps(qr + t + 8 * j), vinv);
			__m256 r = _mm256_add_ps(v, _mm256_or_ps(_mm256_and_ps(v, signm), half));

			q[j] = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvttps_epi32(r), lo), hi);
			sv = _mm256_add_epi32(sv, q[j]);
		}
		/* packs interleave 128-bit lanes: dwords 0,4,1,5,2,6,3,7 put them back */
		_mm256_storeu_si256((void *) (x->q8 + t),
				    _mm256_permutevar8x32_epi32(
					    _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
							       _mm256_packs_epi32(q[2], q[3])),
					    order));
	}
	_mm256_storeu_si256((void *) sums, sv);
	for (int l = 0; l < 8; l++)
		sum += sums[l];
	x->sum8 = sum;
	quant_ex_nibble_order(dp, x);
}
#endif

void hfr_query_quant_ex(const float *qr, uint32_t dp, hfr_qx *x)
{
#ifdef HFR_HAVE_QUANT_AVX2
	static int avx2 = -1;
	int a = __atomic_load_n(&avx2, __ATOMIC_RELAXED);

	if (a < 0) {
		__builtin_cpu_init();
		a = __builtin_cpu_supports("avx2") ? 1 : 0;
		__atomic_store_n(&avx2, a, __ATOMIC_RELAXED);
	}
	if (a && dp % 32 == 0) {
		quant_ex_avx2(qr, dp, x);
		return;
	}
#endif
	hfr_query_quant_ex_ref(qr, dp, x);
}

/* The estimate from ip = sum_t x_t q8_t; compiled once (see est_finish). */
static inline float ex_finish(const hfr_qx *x, int64_t ip, unsigned bits, const hfr_fac *f,
			      float *err)
{
	float yq = x->step * (float) (2 * ip - (int64_t) ((1u << bits) - 1) * x->sum8);

	*err = f->err_ex * x->qn + f->qerr_ex * x->step;
	return f->add + x->qn2 + f->rescale_ex * yq;
}

typedef float (*ex_est_fn)(const hfr_qx *, const uint8_t *, unsigned, const hfr_fac *, float *);

/* Entries idx[0..n) of a posting one at a time through est (dispatched or portable). */
static void ex_entries_each(ex_est_fn est_fn, const hfr_qx *x, const uint8_t *ent0, uint32_t es,
			    const uint32_t *idx, size_t n, unsigned bits, float *est, float *err)
{
	for (size_t i = 0; i < n; i++) {
		const uint8_t *ent = ent0 + (size_t) idx[i] * es;
		uint32_t id, ver;
		hfr_fac f;

		hfr_entry_get(ent, x->dp, bits, &id, &ver, &f);
		est[i] = est_fn(x, hfr_entry_ex(ent), bits, &f, &err[i]);
	}
}

static int64_t ex_ip_generic(const hfr_qx *x, const uint8_t *ex)
{
	int64_t s = 0;

	for (uint32_t t = 0; t < x->dp; t++)
		s += (int64_t) hfr_ex_level(ex, t) * x->q8[t];
	return s;
}

#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 9)
#define HFR_HAVE_AVX512_VNNI 1
#include <immintrin.h>
/*
 * AVX-512 VNNI: 64 code bytes (128 dimensions) a step, low and high nibbles
 * against the query bytes in the same order (q8p), four byte products
 * summed into each 32-bit lane (vpdpbusd); a last 64 dimensions masked.
 */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static inline __m512i ex_acc_vnni(
	const hfr_qx *x, const uint8_t *ex)
{
	__m512i acc = _mm512_setzero_si512(), m4 = _mm512_set1_epi8(15);
	uint32_t b = 0;

	for (; b + 128 <= x->dp; b += 128) {
		__m512i c = _mm512_loadu_si512(ex + b / 2);
		__m512i lo = _mm512_and_si512(c, m4);
		__m512i hi = _mm512_and_si512(_mm512_srli_epi16(c, 4), m4);

		acc = _mm512_dpbusd_epi32(acc, lo, _mm512_loadu_si512(x->q8p + b));
		acc = _mm512_dpbusd_epi32(acc, hi, _mm512_loadu_si512(x->q8p + b + 64));
	}
	if (b < x->dp) { /* 64 dimensions: 32 code bytes, query bytes b..b+63 */
		__m512i c = _mm512_maskz_loadu_epi8(0xffffffffull, ex + b / 2);
		__m512i lo = _mm512_and_si512(c, m4);
		__m512i hi = _mm512_and_si512(_mm512_srli_epi16(c, 4), m4);

		acc = _mm512_dpbusd_epi32(acc, lo, _mm512_maskz_loadu_epi8(0xffffffffull, x->q8p + b));
		acc = _mm512_dpbusd_epi32(acc, hi,
					  _mm512_maskz_loadu_epi8(0xffffffffull, x->q8p + b + 32));
	}
	return acc;
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static int64_t ex_ip_vnni(
	const hfr_qx *x, const uint8_t *ex)
{
	return _mm512_reduce_add_epi32(ex_acc_vnni(x, ex));
}

/*
 * The sums of sixteen registers' lanes, sum i in lane i: adjacent pairs
 * interleaved and added (32-bit, then 64-bit), then across 128-bit lanes.
 * Integer sums: the order does not change them.
 */
__attribute__((target("avx512f"))) static inline __m512i ex_sum16(const __m512i v[16])
{
	__m512i t[8], u[4], w[2];

	for (int j = 0; j < 8; j++) /* lane: v2j 0+2, v2j+1 0+2, v2j 1+3, v2j+1 1+3 */
		t[j] = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2 * j], v[2 * j + 1]),
					_mm512_unpackhi_epi32(v[2 * j], v[2 * j + 1]));
	for (int j = 0; j < 4; j++) /* lane: v4j..v4j+3's lane sums */
		u[j] = _mm512_add_epi32(_mm512_unpacklo_epi64(t[2 * j], t[2 * j + 1]),
					_mm512_unpackhi_epi64(t[2 * j], t[2 * j + 1]));
	for (int j = 0; j < 2; j++) /* lanes 0+1 and 2+3 of u2j, then of u2j+1 */
		w[j] = _mm512_add_epi32(_mm512_shuffle_i32x4(u[2 * j], u[2 * j + 1], 0x88),
					_mm512_shuffle_i32x4(u[2 * j], u[2 * j + 1], 0xdd));
	return _mm512_add_epi32(_mm512_shuffle_i32x4(w[0], w[1], 0x88),
				_mm512_shuffle_i32x4(w[0], w[1], 0xdd));
}

/*
 * Sixteen entries a step: their dot products side by side (sixteen
 * accumulators, summed together by ex_sum16 instead of one reduction
 * each), then ex_finish's arithmetic on sixteen lanes in the same order,
 * the factors gathered from the entries; a last n % 16 one at a time.
 */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void ex_entries_vnni(
	const hfr_qx *x, const uint8_t *ent0, uint32_t es, const uint32_t *idx, size_t n,
	unsigned bits, float *est, float *err)
{
	const __m512 step = _mm512_set1_ps(x->step), qn2 = _mm512_set1_ps(x->qn2),
		     qn = _mm512_set1_ps(x->qn);
	const __m512i sum = _mm512_set1_epi32((int32_t) ((1u << bits) - 1) * x->sum8);
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m512i acc[16], ip;
		__m512 yq, add, rs, ee, qe, r[4], t0, t1, t2, t3;

		for (int j = 0; j < 16; j++)
			acc[j] = ex_acc_vnni(x, hfr_entry_ex(ent0 + (size_t) idx[i + j] * es));
		ip = ex_sum16(acc);
		yq = _mm512_mul_ps(step, _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_add_epi32(ip, ip),
									      sum)));
		/*
		 * The four factors (16 bytes at HFR_ENT_ADD) of sixteen entries,
		 * transposed in registers, not gathered (four 16-lane gathers cost
		 * more than sixteen 128-bit loads): r[p] holds entries p, 4 + p,
		 * 8 + p, 12 + p in its 128-bit lanes, so after the 4 x 4
		 * transposes lane 4L + p of each factor is entry 4L + p's.
		 */
		for (int p = 0; p < 4; p++) {
			const uint8_t *e0 = ent0 + HFR_ENT_ADD;

			r[p] = _mm512_castps128_ps512(
				_mm_loadu_ps((const float *) (const void *) (e0 + (size_t) idx[i + p] * es)));
			r[p] = _mm512_insertf32x4(
				r[p], _mm_loadu_ps((const float *) (const void *) (e0 + (size_t) idx[i + 4 + p] * es)),
				1);
			r[p] = _mm512_insertf32x4(
				r[p], _mm_loadu_ps((const float *) (const void *) (e0 + (size_t) idx[i + 8 + p] * es)),
				2);
			r[p] = _mm512_insertf32x4(
				r[p], _mm_loadu_ps((const float *) (const void *) (e0 + (size_t) idx[i + 12 + p] * es)),
				3);
		}
		t0 = _mm512_unpacklo_ps(r[0], r[1]); /* add0 add1 rs0 rs1 */
		t1 = _mm512_unpackhi_ps(r[0], r[1]); /* ee0 ee1 qe0 qe1 */
		t2 = _mm512_unpacklo_ps(r[2], r[3]);
		t3 = _mm512_unpackhi_ps(r[2], r[3]);
		add = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
		rs = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
		ee = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
		qe = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
		_mm512_storeu_ps(est + i, _mm512_add_ps(_mm512_add_ps(add, qn2), _mm512_mul_ps(rs, yq)));
		_mm512_storeu_ps(err + i, _mm512_add_ps(_mm512_mul_ps(ee, qn), _mm512_mul_ps(qe, step)));
	}
	ex_entries_each(hfr_estimate_ex, x, ent0, es, idx + i, n - i, bits, est + i, err + i);
}
#endif

#if defined(__x86_64__)
#include <immintrin.h>
/*
 * AVX2 (no VNNI): 64 dimensions a step, the 32 code bytes' low nibbles
 * against query bytes t..t+31 and the high ones against t+32..t+63
 * (hfr_ex_level's order, so the plain q8), unsigned-by-signed byte products
 * summed in pairs (vpmaddubsw: at most 2 * 15 * 127 a pair, no saturation),
 * eight steps of pairs added in 16 bits (under 32,767) before they widen.
 * Integer sums: the same ip as ex_ip_generic, so the same estimates.
 */
__attribute__((target("avx2"))) static inline __m256i ex_step_avx2(__m256i s16, const hfr_qx *x,
								    const uint8_t *ex, uint32_t t)
{
	const __m256i m4 = _mm256_set1_epi8(15);
	__m256i c = _mm256_loadu_si256((const __m256i *) (ex + t / 2));
	__m256i lo = _mm256_and_si256(c, m4);
	__m256i hi = _mm256_and_si256(_mm256_srli_epi16(c, 4), m4);

	s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(
					    lo, _mm256_loadu_si256((const __m256i *) (x->q8 + t))));
	return _mm256_add_epi16(s16, _mm256_maddubs_epi16(
					     hi, _mm256_loadu_si256((const __m256i *) (x->q8 + t + 32))));
}

__attribute__((target("avx2"))) static inline __m256i ex_acc_avx2(const hfr_qx *x,
								  const uint8_t *ex)
{
	const __m256i one = _mm256_set1_epi16(1);
	__m256i acc = _mm256_setzero_si256(), s16;
	uint32_t t = 0;

	for (; t + 256 <= x->dp; t += 256) { /* four steps: eight pair sums a 16-bit lane */
		s16 = ex_step_avx2(_mm256_setzero_si256(), x, ex, t);
		s16 = ex_step_avx2(s16, x, ex, t + 64);
		s16 = ex_step_avx2(s16, x, ex, t + 128);
		s16 = ex_step_avx2(s16, x, ex, t + 192);
		acc = _mm256_add_epi32(acc, _mm256_madd_epi16(s16, one));
	}
	s16 = _mm256_setzero_si256();
	for (; t < x->dp; t += 64)
		s16 = ex_step_avx2(s16, x, ex, t);
	return _mm256_add_epi32(acc, _mm256_madd_epi16(s16, one));
}

__attribute__((target("avx2"))) static inline int32_t ex_hsum_avx2(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));

	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
	return _mm_cvtsi128_si32(s);
}

__attribute__((target("avx2"))) static int64_t ex_ip_avx2(const hfr_qx *x, const uint8_t *ex)
{
	return ex_hsum_avx2(ex_acc_avx2(x, ex));
}

/*
 * Eight entries a step: eight accumulators side by side, their lanes
 * summed together (three rounds of vphaddd and a cross-lane add instead of
 * eight reductions), then ex_finish's arithmetic on eight lanes in the
 * same order (2 ip - K sum8 is under 2^31 for dp up to 65,536, so its float is
 * the same); a last n % 8 one at a time.
 */
__attribute__((target("avx2"))) static void ex_entries_avx2(const hfr_qx *x, const uint8_t *ent0,
							     uint32_t es, const uint32_t *idx,
							     size_t n, unsigned bits, float *est,
							     float *err)
{
	const __m256 step = _mm256_set1_ps(x->step), qn2 = _mm256_set1_ps(x->qn2),
		     qn = _mm256_set1_ps(x->qn);
	const __m256i sum = _mm256_set1_epi32((int32_t) ((1u << bits) - 1) * x->sum8);
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256i a[8], h01, h23, h45, h67, h03, h47, ip;
		__m256 r[4], t0, t1, t2, t3, yq;

		for (int j = 0; j < 8; j++)
			a[j] = ex_acc_avx2(x, hfr_entry_ex(ent0 + (size_t) idx[i + j] * es));
		h01 = _mm256_hadd_epi32(a[0], a[1]);
		h23 = _mm256_hadd_epi32(a[2], a[3]);
		h45 = _mm256_hadd_epi32(a[4], a[5]);
		h67 = _mm256_hadd_epi32(a[6], a[7]);
		h03 = _mm256_hadd_epi32(h01, h23); /* per 128-bit half: entries 0..3 */
		h47 = _mm256_hadd_epi32(h45, h67);
		ip = _mm256_add_epi32(_mm256_permute2x128_si256(h03, h47, 0x20),
				      _mm256_permute2x128_si256(h03, h47, 0x31));
		/*
		 * The four factors (add, rescale, err, qerr: 16 bytes at
		 * HFR_ENT_ADD) of entries j and j + 4 in one register, then a 4 x 4
		 * transpose in each half: a factor a register, entry j in lane j.
		 * (Gathered through a float array, the 32 stores stalled the four
		 * vector loads that read them back.)
		 */
		_Static_assert(HFR_ENT_RESCALE_EX == HFR_ENT_ADD + 4 &&
				       HFR_ENT_ERR_EX == HFR_ENT_ADD + 8 &&
				       HFR_ENT_QERR_EX == HFR_ENT_ADD + 12,
			       "the four factors lie side by side");
		for (int j = 0; j < 4; j++) {
			const uint8_t *e = ent0 + (size_t) idx[i + j] * es + HFR_ENT_ADD;
			const uint8_t *e4 = ent0 + (size_t) idx[i + j + 4] * es + HFR_ENT_ADD;

			r[j] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps((const float *) e)),
						    _mm_loadu_ps((const float *) e4), 1);
		}
		t0 = _mm256_unpacklo_ps(r[0], r[1]); /* add0 add1 rs0 rs1 */
		t1 = _mm256_unpackhi_ps(r[0], r[1]); /* err0 err1 qe0 qe1 */
		t2 = _mm256_unpacklo_ps(r[2], r[3]);
		t3 = _mm256_unpackhi_ps(r[2], r[3]);
		/* ex_finish on eight lanes, in its order (no FMA: ISO C does not contract) */
		yq = _mm256_mul_ps(step, _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_add_epi32(ip, ip),
									      sum)));
		_mm256_storeu_ps(est + i, _mm256_add_ps(_mm256_add_ps(_mm256_shuffle_ps(t0, t2, 0x44), qn2),
							 _mm256_mul_ps(_mm256_shuffle_ps(t0, t2, 0xee), yq)));
		_mm256_storeu_ps(err + i, _mm256_add_ps(_mm256_mul_ps(_mm256_shuffle_ps(t1, t3, 0x44), qn),
							 _mm256_mul_ps(_mm256_shuffle_ps(t1, t3, 0xee), step)));
	}
	ex_entries_each(hfr_estimate_ex, x, ent0, es, idx + i, n - i, bits, est + i, err + i);
}

/* Whether the AVX2 paths can run here (64-dimension steps: dp a multiple of 64). */
static int cpu_has_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
}
#define HFR_HAVE_AVX2 1
#endif

static int64_t (*ex_ip_fn)(const hfr_qx *, const uint8_t *);

#ifdef HFR_HAVE_AVX512_VNNI
/* Whether the extended codes' VNNI paths can run here. */
static int cpu_has_vnni(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512vnni");
}
#endif

float hfr_estimate_ex_ref(const hfr_qx *x, const uint8_t *ex, unsigned bits, const hfr_fac *f,
			  float *err)
{
	return ex_finish(x, ex_ip_generic(x, ex), bits, f, err);
}

float hfr_estimate_ex(const hfr_qx *x, const uint8_t *ex, unsigned bits, const hfr_fac *f,
		      float *err)
{
	int64_t (*fn)(const hfr_qx *, const uint8_t *) = __atomic_load_n(&ex_ip_fn, __ATOMIC_RELAXED);

	if (!fn) {
		fn = ex_ip_generic;
#ifdef HFR_HAVE_AVX2
		if (cpu_has_avx2())
			fn = ex_ip_avx2;
#endif
#ifdef HFR_HAVE_AVX512_VNNI
		if (cpu_has_vnni())
			fn = ex_ip_vnni;
#endif
		__atomic_store_n(&ex_ip_fn, fn, __ATOMIC_RELAXED);
	}
	return ex_finish(x, fn(x, ex), bits, f, err);
}

static void ex_entries_generic(const hfr_qx *x, const uint8_t *ent0, uint32_t es,
			       const uint32_t *idx, size_t n, unsigned bits, float *est, float *err)
{
	ex_entries_each(hfr_estimate_ex, x, ent0, es, idx, n, bits, est, err);
}

void hfr_estimate_ex_entries_ref(const hfr_qx *x, const uint8_t *ent0, uint32_t es,
				 const uint32_t *idx, size_t n, unsigned bits, float *est,
				 float *err)
{
	ex_entries_each(hfr_estimate_ex_ref, x, ent0, es, idx, n, bits, est, err);
}

static void (*ex_entries_fn)(const hfr_qx *, const uint8_t *, uint32_t, const uint32_t *, size_t,
			     unsigned, float *, float *);

void hfr_estimate_ex_entries(const hfr_qx *x, const uint8_t *ent0, uint32_t es,
			     const uint32_t *idx, size_t n, unsigned bits, float *est, float *err)
{
	void (*fn)(const hfr_qx *, const uint8_t *, uint32_t, const uint32_t *, size_t, unsigned,
		   float *, float *) = __atomic_load_n(&ex_entries_fn, __ATOMIC_RELAXED);

	if (!fn) {
		fn = ex_entries_generic;
#ifdef HFR_HAVE_AVX2
		if (cpu_has_avx2())
			fn = ex_entries_avx2;
#endif
#ifdef HFR_HAVE_AVX512_VNNI
		if (cpu_has_vnni())
			fn = ex_entries_vnni;
#endif
		__atomic_store_n(&ex_entries_fn, fn, __ATOMIC_RELAXED);
	}
	fn(x, ent0, es, idx, n, bits, est, err);
}
