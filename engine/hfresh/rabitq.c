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

void hfr_encode(const float *res, uint32_t dp, uint64_t *code, hfr_fac *f)
{
	double n2 = 0, l1 = 0;
	uint32_t pop = 0;

	memset(code, 0, dp / 8);
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
