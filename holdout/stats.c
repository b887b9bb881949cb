/*
 * stats.c - the small statistics the holdout needs: order statistics,
 * the exact binomial CDF, Student's t quantile (through the regularised
 * incomplete beta function, evaluated by its continued fraction with the
 * modified Lentz method), and the scoring of predictions.
 */
#include "holdout.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

double holdout_quantile(double *v, size_t n, double q)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), dbl_cmp);
	return cs_quantile(v, n, q);
}

double holdout_median(double *v, size_t n)
{
	return holdout_quantile(v, n, 0.5);
}

double holdout_binom_cdf(size_t k, size_t n, double p)
{
	double sum = 0;

	if (k >= n)
		return 1.0;
	for (size_t i = 0; i <= k; i++) {
		double lt = lgamma((double) n + 1) - lgamma((double) i + 1) -
			    lgamma((double) (n - i) + 1) + (double) i * log(p) +
			    (double) (n - i) * log1p(-p);
		sum += exp(lt);
	}
	return sum > 1.0 ? 1.0 : sum;
}

/* Continued fraction for the incomplete beta (modified Lentz). */
static double betacf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double qab = a + b, qap = a + 1, qam = a - 1;
	double c = 1, d = 1 - qab * x / qap, h;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 300; m++) {
		double m2 = 2.0 * m, aa, del;

		aa = m * (b - m) * x / ((qam + m2) * (a + m2));
		d = 1 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1 / d;
		h *= d * c;
		aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
		d = 1 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-14)
			break;
	}
	return h;
}

/* Regularised incomplete beta I_x(a, b). */
static double ibeta(double a, double b, double x)
{
	double bt;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	bt = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return bt * betacf(a, b, x) / a;
	return 1 - bt * betacf(b, a, 1 - x) / b;
}

static double t_cdf(double t, double df)
{
	double tail = 0.5 * ibeta(df / 2, 0.5, df / (df + t * t));

	return t >= 0 ? 1 - tail : tail;
}

double holdout_t_quantile(double p, double df)
{
	double lo = -1e4, hi = 1e4;

	if (p <= 0)
		return -INFINITY;
	if (p >= 1)
		return INFINITY;
	for (int i = 0; i < 200; i++) {
		double mid = 0.5 * (lo + hi);

		if (t_cdf(mid, df) < p)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

double holdout_interval_score(double lo, double hi, double y, double alpha)
{
	double s = hi - lo;

	if (y < lo)
		s += (2 / alpha) * (lo - y);
	if (y > hi)
		s += (2 / alpha) * (y - hi);
	return s;
}

double holdout_rel_error(double pred, double obs)
{
	return fabs(pred - obs) / fabs(obs);
}

/* P(X >= k), X ~ Binomial(n, p). */
static double binom_sf(size_t k, size_t n, double p)
{
	return k == 0 ? 1.0 : 1.0 - holdout_binom_cdf(k - 1, n, p);
}

double holdout_coverage_two_sided(size_t inside, size_t n, double level)
{
	double lo = holdout_binom_cdf(inside, n, level), hi = binom_sf(inside, n, level);
	double p = 2 * (lo < hi ? lo : hi);

	return p > 1 ? 1 : p;
}

int holdout_score(const holdout_row *rows, size_t n, double threshold, holdout_summary *out,
		  cs_err *e)
{
	return holdout_score_at(rows, n, threshold, 0.95, out, e);
}

int holdout_score_at(const holdout_row *rows, size_t n, double threshold, double level,
		     holdout_summary *out, cs_err *e)
{
	double *rel;
	double is_sum = 0, ris_sum = 0, w_sum = 0, rw_sum = 0, alpha = 1 - level;

	*out = (holdout_summary){0};
	out->threshold = threshold;
	out->level = level;
	if (n == 0)
		return cs_err_set(e, CS_EXIT_BADINPUT, "no prediction has an observed holdout value yet");
	if (!(level > 0 && level < 1))
		return cs_err_set(e, CS_EXIT_BADINPUT, "band level %g is not in (0, 1)", level);
	rel = malloc(n * sizeof(*rel));
	if (!rel)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const holdout_row *r = &rows[i];
		double is;

		if (!(r->observed != 0) || !isfinite(r->observed)) {
			free(rel);
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "row %zu: observed value %g has no relative error", i + 1,
					  r->observed);
		}
		rel[i] = holdout_rel_error(r->value, r->observed);
		if (r->observed >= r->lo && r->observed <= r->hi)
			out->inside++;
		is = holdout_interval_score(r->lo, r->hi, r->observed, alpha);
		is_sum += is;
		ris_sum += is / fabs(r->observed);
		w_sum += r->hi - r->lo;
		rw_sum += r->value != 0 ? (r->hi - r->lo) / fabs(r->value) : 0;
	}
	out->n = n;
	out->mdape = holdout_median(rel, n);
	out->mean_interval_score = is_sum / (double) n;
	out->mean_rel_interval_score = ris_sum / (double) n;
	out->mean_band_width = w_sum / (double) n;
	out->mean_rel_band_width = rw_sum / (double) n;
	out->coverage_p = holdout_binom_cdf(out->inside, n, level);
	out->coverage_p_high = binom_sf(out->inside, n, level);
	out->coverage_p_two_sided = holdout_coverage_two_sided(out->inside, n, level);
	out->reject_at_or_below = SIZE_MAX;
	for (size_t k = 0; k <= n; k++) {
		if (holdout_binom_cdf(k, n, level) <= alpha / 2)
			out->reject_at_or_below = k;
		else
			break;
	}
	out->calibration_rejected = out->coverage_p_two_sided <= 0.05;
	out->passed = out->mdape <= threshold;
	free(rel);
	return 0;
}

/*
 * Regularised lower incomplete gamma P(a, x): the series for x < a + 1,
 * else 1 - the continued fraction (Numerical Recipes 6.2, Lentz's method).
 */
static double gamma_p(double a, double x)
{
	double gln = lgamma(a);

	if (x <= 0)
		return 0;
	if (x < a + 1) {
		double ap = a, sum = 1.0 / a, del = sum;

		for (int i = 0; i < 500; i++) {
			ap += 1;
			del *= x / ap;
			sum += del;
			if (fabs(del) < fabs(sum) * 1e-15)
				break;
		}
		return sum * exp(-x + a * log(x) - gln);
	} else {
		double b = x + 1 - a, c = 1 / 1e-300, d = 1 / b, h = d;

		for (int i = 1; i < 500; i++) {
			double an = -i * (i - a), del;

			b += 2;
			d = an * d + b;
			if (fabs(d) < 1e-300)
				d = 1e-300;
			c = b + an / c;
			if (fabs(c) < 1e-300)
				c = 1e-300;
			d = 1 / d;
			del = d * c;
			h *= del;
			if (fabs(del - 1) < 1e-15)
				break;
		}
		return 1 - exp(-x + a * log(x) - gln) * h;
	}
}

double holdout_chi2_cdf(double x, double df)
{
	return df > 0 ? gamma_p(df / 2, x / 2) : NAN;
}
