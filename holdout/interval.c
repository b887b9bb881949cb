/*
 * interval.c - confidence intervals of positive quantities: the
 * geometric mean of one group of runs, or the ratio of two groups'
 * geometric means, by Student's t (Welch's for two groups) on the logs or
 * by a percentile bootstrap; and the interval of a mean over a run's
 * repeats.
 *
 * Why the log scale: QPS, latency, reads and wall times are positive and
 * spread multiplicatively, so a t interval on the raw values of a few
 * highly variable runs reaches below zero (a run with "repeat": 3 gave a
 * QPS interval of [-8.9, 918.5]). On the logs the interval is
 * exp(mean +- t se): never 0 or less, whatever the spread. A percentile
 * bootstrap of a geometric mean (or of a plain mean of non-negative
 * values) stays within the range of the values resampled, so it cannot
 * go below zero either.
 *
 * The bootstrap draws from splitmix64 seeded by the caller (a registered
 * seed), so the same values and seed give the same interval bit for bit.
 *
 * Error convention: 0, or -1 with out->why saying why no interval (too
 * few values, a value <= 0); never errno. Out of memory is -1 with why.
 */
#include "holdout.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64: the generator behind every bootstrap draw. */
static uint64_t sm_next(uint64_t *s)
{
	uint64_t x = (*s += 0x9e3779b97f4a7c15ull);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* A uniform index below n (rejection, no modulo bias). */
static size_t sm_below(uint64_t *s, size_t n)
{
	uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;

	do
		x = sm_next(s);
	while (x >= lim);
	return (size_t) (x % n);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Mean and sample variance (n - 1) of v[0..n). */
static void mean_var(const double *v, size_t n, double *mean, double *var)
{
	double s = 0, ss = 0;

	for (size_t i = 0; i < n; i++)
		s += v[i];
	*mean = s / (double) n;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - *mean) * (v[i] - *mean);
	*var = n > 1 ? ss / (double) (n - 1) : 0.0;
}

static int fail(holdout_interval *out, const char *why)
{
	snprintf(out->why, sizeof(out->why), "%s", why);
	out->lo = out->hi = NAN;
	return -1;
}

/* The logs of v into l; -1 when a value is not a positive finite number. */
static int logs(const double *v, size_t n, double *l)
{
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(v[i]) || v[i] <= 0)
			return -1;
		l[i] = log(v[i]);
	}
	return 0;
}

const char *holdout_interval_method_name(holdout_iv_method m)
{
	return m == HOLDOUT_IV_BOOTSTRAP ? "bootstrap" : "welch-log";
}

/* Student's t (Welch's with b) on the logs. la, lb: the logs. */
static void t_on_logs(const double *la, size_t na, const double *lb, size_t nb, double level,
		      holdout_interval *out)
{
	double ma, va, mb = 0, vb = 0, d, se2, df, t;

	mean_var(la, na, &ma, &va);
	if (lb) {
		double qa, qb;

		mean_var(lb, nb, &mb, &vb);
		qa = va / (double) na;
		qb = vb / (double) nb;
		se2 = qa + qb;
		/* Welch-Satterthwaite; both spreads 0: every value alike, the interval is a point */
		df = se2 > 0 ? se2 * se2 / (qa * qa / (double) (na - 1) + qb * qb / (double) (nb - 1))
			     : (double) (na + nb - 2);
	} else {
		se2 = va / (double) na;
		df = (double) (na - 1);
	}
	d = ma - mb;
	t = holdout_t_quantile((1 + level) / 2, df);
	out->estimate = exp(d);
	out->lo = exp(d - t * sqrt(se2));
	out->hi = exp(d + t * sqrt(se2));
	out->df = df;
}

/* One resample's mean (of the logs: a geometric mean's log). */
static double resample_mean(uint64_t *s, const double *v, size_t n)
{
	double sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += v[sm_below(s, n)];
	return sum / (double) n;
}

/* Percentile bootstrap on la (and lb): logs, or raw values when arith. */
static int bootstrap(const double *la, size_t na, const double *lb, size_t nb, int arith,
		     const holdout_iv_opts *o, holdout_interval *out)
{
	unsigned nr = o->resamples ? o->resamples : HOLDOUT_IV_RESAMPLES_DEFAULT;
	double *st = malloc(nr * sizeof(*st)), ma, mb = 0, va;
	uint64_t s = o->seed;

	if (!st)
		return fail(out, "out of memory");
	for (unsigned r = 0; r < nr; r++) {
		double x = resample_mean(&s, la, na);

		if (lb)
			x -= resample_mean(&s, lb, nb);
		st[r] = x;
	}
	qsort(st, nr, sizeof(*st), dbl_cmp);
	mean_var(la, na, &ma, &va);
	if (lb)
		mean_var(lb, nb, &mb, &va);
	if (arith) {
		out->estimate = ma;
		out->lo = cs_quantile(st, nr, (1 - o->level) / 2);
		out->hi = cs_quantile(st, nr, (1 + o->level) / 2);
	} else {
		out->estimate = exp(ma - mb);
		out->lo = exp(cs_quantile(st, nr, (1 - o->level) / 2));
		out->hi = exp(cs_quantile(st, nr, (1 + o->level) / 2));
	}
	out->df = NAN;
	free(st);
	return 0;
}

int holdout_interval_compute(const holdout_iv_opts *o, const double *a, size_t na, const double *b,
			     size_t nb, holdout_interval *out)
{
	double *la = NULL, *lb = NULL;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->n_a = na;
	out->n_b = b ? nb : 0;
	out->estimate = out->df = NAN;
	if (!(o->level > 0 && o->level < 1))
		return fail(out, "the level must lie between 0 and 1");
	if (na < 2 || (b && nb < 2))
		return fail(out, b ? "fewer than 2 runs on a side: no spread to estimate"
				   : "fewer than 2 runs: no spread to estimate");
	la = malloc(na * sizeof(*la));
	lb = b ? malloc(nb * sizeof(*lb)) : NULL;
	if (!la || (b && !lb)) {
		rc = fail(out, "out of memory");
		goto out;
	}
	if (logs(a, na, la) || (b && logs(b, nb, lb))) {
		rc = fail(out, "a value is 0 or less (or not finite): the log scale needs positive values");
		goto out;
	}
	if (o->method == HOLDOUT_IV_BOOTSTRAP) {
		rc = bootstrap(la, na, lb, nb, 0, o, out);
	} else {
		t_on_logs(la, na, lb, nb, o->level, out);
		rc = 0;
	}
out:
	free(la);
	free(lb);
	return rc;
}

int holdout_interval_of_mean(const double *v, size_t n, double level, holdout_interval *out)
{
	double *w;
	int rc, positive = 1;

	memset(out, 0, sizeof(*out));
	out->n_a = n;
	out->estimate = out->df = NAN;
	if (n < 2)
		return fail(out, "fewer than 2 values");
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(v[i]))
			return fail(out, "a value is not finite");
		positive &= v[i] > 0;
	}
	if (positive) {
		holdout_iv_opts o = { .method = HOLDOUT_IV_WELCH_LOG, .level = level };

		return holdout_interval_compute(&o, v, n, NULL, 0, out);
	}
	/* Zeros (or signed values): the plain mean, resampled; within [min, max]. */
	w = malloc(n * sizeof(*w));
	if (!w)
		return fail(out, "out of memory");
	memcpy(w, v, n * sizeof(*w));
	{
		holdout_iv_opts o = { .method = HOLDOUT_IV_BOOTSTRAP, .level = level,
				      .seed = HOLDOUT_IV_REPEAT_SEED,
				      .resamples = HOLDOUT_IV_RESAMPLES_DEFAULT };

		rc = bootstrap(w, n, NULL, 0, 1, &o, out);
	}
	free(w);
	return rc;
}

double holdout_interval_power(double effect, double threshold, double sd_log, unsigned n,
			      int two_groups, double level)
{
	double delta, se, df, t, z;

	if (!(effect > 0) || !(threshold > 0) || !(sd_log >= 0) || n < 2)
		return 0.0;
	delta = fabs(log(effect) - log(threshold));
	if (sd_log == 0)
		return delta > 0 ? 1.0 : 0.0;
	se = sd_log * sqrt((two_groups ? 2.0 : 1.0) / (double) n);
	df = two_groups ? 2.0 * (double) (n - 1) : (double) (n - 1);
	t = holdout_t_quantile((1 + level) / 2, df);
	/*
	 * The interval lies wholly beyond the threshold when the estimate is
	 * more than t se from it: with the estimate ~ N(log effect, se), that
	 * happens with probability Phi(delta / se - t). The normal in place of
	 * the noncentral t errs slightly high for very small n.
	 */
	z = delta / se - t;
	return 0.5 * erfc(-z / sqrt(2));
}

unsigned holdout_interval_replicates_for(double effect, double threshold, double sd_log,
					 int two_groups, double level, double power)
{
	for (unsigned n = 2; n <= HOLDOUT_IV_REPLICATES_MAX; n++)
		if (holdout_interval_power(effect, threshold, sd_log, n, two_groups, level) >= power)
			return n;
	return 0;
}
