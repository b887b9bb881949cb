/*
 * synth.c - synth:n=N,d=D[,clusters=C][,seed=S][,sigma=X]: a Gaussian
 * mixture whose bytes are the same on every machine for the same spec.
 *
 * Why it is portable: the only random source is xoshiro256** (seeded by
 * splitmix64 from S), integers to doubles are exact (53 bits times
 * 2^-53), and the normal transform is Marsaglia's polar method with a
 * logarithm of our own (frexp, which is exact, and an atanh series in
 * +, -, *, / only) and sqrt, which IEEE 754 requires to be correctly
 * rounded. No libm transcendental (whose last bit differs between libm
 * versions) is used. This file is built with -ffp-contract=off so no
 * compiler fuses a multiply and an add into an FMA, which would round
 * differently on machines that have one.
 *
 * Order of draws: the C centres (C*d normals, row by row), then for each
 * point its centre (one 64-bit draw, mapped to 0..C-1 by multiply-high)
 * and its d normals. Values are computed in double and rounded once to
 * float32.
 */
#include "data.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

typedef struct prng {
	uint64_t s[4];
	int has_spare;
	double spare;
} prng;

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman & Vigna). */
static uint64_t next64(prng *p)
{
	uint64_t *s = p->s, r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

/* ln(x) for x > 0, in IEEE double arithmetic only (about 1 ulp). */
static double plog(double x)
{
	static const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
	int ex;
	double m = frexp(x, &ex), s, s2, p;

	if (m < 0.70710678118654752440) {
		m *= 2;
		ex--;
	}
	s = (m - 1) / (m + 1);
	s2 = s * s;
	/* 2 atanh(s) = 2 s (1 + s^2/3 + s^4/5 + ...), |s| < 0.1716 so 13 terms reach 1e-19 */
	p = 1.0 / 25;
	for (int k = 11; k >= 0; k--)
		p = p * s2 + 1.0 / (2 * k + 1);
	return ((double) ex * ln2_lo + 2 * s * p) + (double) ex * ln2_hi;
}

/* Uniform in (-1, 1) with 53 bits. */
static double uniform_pm1(prng *p)
{
	return (double) (next64(p) >> 11) * 0x1.0p-52 - 1.0;
}

/* A standard normal (Marsaglia's polar method). */
static double normal(prng *p)
{
	double u, v, s, f;

	if (p->has_spare) {
		p->has_spare = 0;
		return p->spare;
	}
	do {
		u = uniform_pm1(p);
		v = uniform_pm1(p);
		s = u * u + v * v;
	} while (s >= 1.0 || s == 0.0);
	f = sqrt(-2.0 * plog(s) / s);
	p->spare = v * f;
	p->has_spare = 1;
	return u * f;
}

/* Parse one unsigned decimal of at most max into *out. */
static int parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 20)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (UINT64_MAX - (uint64_t) (s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t) (s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

int data_load_synth(const char *body, dsbuf *b, size_t *n, size_t *d, cv_err *e)
{
	uint64_t nn = 0, dd = 0, c = 10, seed = 0, x;
	double sigma = 0.5;
	float *centres = NULL;
	prng p;
	int rc, have_n = 0, have_d = 0;

	for (const char *s = body; *s;) {
		const char *comma = strchr(s, ','), *eq = strchr(s, '=');
		size_t len = comma ? (size_t) (comma - s) : strlen(s), klen, vlen;
		const char *val;

		if (!eq || eq >= s + len)
			return cv_err_set(e, -EINVAL, "synth:%s: character %zu: expected key=value", body,
					  (size_t) (s - body));
		klen = (size_t) (eq - s);
		val = eq + 1;
		vlen = len - klen - 1;
		if (klen == 1 && *s == 'n')
			rc = parse_u64(val, vlen, CV_DATA_MAX_VALUES, &nn), have_n = 1;
		else if (klen == 1 && *s == 'd')
			rc = parse_u64(val, vlen, CV_DATA_MAX_DIM, &dd), have_d = 1;
		else if (klen == 8 && !memcmp(s, "clusters", 8))
			rc = parse_u64(val, vlen, 1u << 20, &c);
		else if (klen == 4 && !memcmp(s, "seed", 4))
			rc = parse_u64(val, vlen, UINT64_MAX, &seed);
		else if (klen == 5 && !memcmp(s, "sigma", 5)) {
			char tmp[32], *end;

			rc = -1;
			if (vlen > 0 && vlen < sizeof(tmp)) {
				memcpy(tmp, val, vlen);
				tmp[vlen] = 0;
				sigma = strtod(tmp, &end);
				rc = (*end || !(sigma >= 0) || sigma > 1e6) ? -1 : 0;
			}
		} else
			return cv_err_set(e, -EINVAL, "synth:%s: character %zu: unknown key '%.*s' (n, d, clusters, seed, sigma)",
					  body, (size_t) (s - body), (int) klen, s);
		if (rc)
			return cv_err_set(e, -EINVAL, "synth:%s: character %zu: bad value for '%.*s'", body,
					  (size_t) (val - body), (int) klen, s);
		s += len + (comma ? 1 : 0);
	}
	if (!have_n || !have_d || nn == 0 || dd == 0 || c == 0)
		return cv_err_set(e, -EINVAL, "synth:%s: needs n>=1 and d>=1 (clusters>=1)", body);
	rc = data_check_size("synth", nn, dd, e);
	if (rc)
		return rc;
	if (c > nn)
		c = nn;
	rc = dsbuf_reserve(b, (size_t) (nn * dd));
	if (rc)
		return rc;
	centres = malloc((size_t) (c * dd) * sizeof(float));
	if (!centres)
		return -ENOMEM;
	x = seed;
	for (int i = 0; i < 4; i++)
		p.s[i] = splitmix64(&x);
	p.has_spare = 0;
	for (size_t i = 0; i < (size_t) (c * dd); i++)
		centres[i] = (float) normal(&p);
	for (size_t i = 0; i < (size_t) nn; i++) {
		uint64_t k = (uint64_t) (((unsigned __int128) next64(&p) * c) >> 64);
		const float *ctr = centres + k * dd;
		float *row = b->data + i * dd;

		for (size_t j = 0; j < (size_t) dd; j++)
			row[j] = (float) ((double) ctr[j] + sigma * normal(&p));
	}
	b->len = (size_t) (nn * dd);
	*n = (size_t) nn;
	*d = (size_t) dd;
	free(centres);
	return 0;
}
