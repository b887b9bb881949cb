/*
 * holdout.h - models fitted on design runs, predictions with 95% bands,
 * and the scoring of those predictions against holdout runs.
 *
 * The procedure is the study seed's: fit on the runs not tagged holdout,
 * write predictions (value and 95% band) before the first holdout run,
 * then score them: relative error |predicted - observed| / observed (that
 * is MdAPE/100 in Hyndman & Koehler's terms, reported under both names),
 * inside the band or not, the interval score of Winkler / Gneiting &
 * Raftery at alpha = 0.05, coverage with an exact binomial check.
 *
 * Models:
 *  - "io": the seed's I/O model. For a cold run,
 *        wall = reads x per-read latency / effective concurrency + queries x cpu
 *    with reads = queries x partitions x reads per partition query (fitted
 *    per index kind and search knobs), per-read latency and effective
 *    concurrency fitted per (device, concurrency = clients x fanout), and
 *    cpu per query from warm runs. It predicts wall_s, qps, lat_mean_ms,
 *    engine_reads, reads_per_query and engine_read_ms_mean.
 *  - "loglinear": least squares of log(metric) on the logs of the numeric
 *    knobs, the cold flag and one-hot device/mode/strategy/kind.
 *  - "auto": io where it applies, else loglinear.
 * Bands come from the fit's own residual spread: leave-one-out log
 * residuals of the io model (empirical 2.5/97.5% quantiles from 20
 * residuals up, a t interval below that), and for the regression the
 * t interval with leverage, pred x exp(+-t s sqrt(1 + x'(X'X)^-1 x)).
 * For the reads per partition query, design runs that searched the same
 * partitions with the same query rows (holdout_obs.spec) count once: they
 * read the same pages on any device, so their copies are not evidence of
 * spread between partitions and queries.
 *
 * Error convention: 0 or CS_EXIT_* with cs_err filled.
 */
#ifndef HOLDOUT_H
#define HOLDOUT_H

#include "cs.h"

/* One design run as a model sees it (all borrowed). */
typedef struct holdout_obs {
	const char *run_id;
	const json_t *features; /* docs/records.md "features" */
	const json_t *metrics;  /* docs/records.md "metrics" */
	const json_t *spec;     /* the run's canonical run.json, or NULL (then every run counts) */
} holdout_obs;

typedef struct holdout_pred {
	double value, lo, hi;
	char model[16];   /* the model that made it: "io" or "loglinear" */
	json_t *params;   /* new: the model's parameters, the band's basis, the runs used */
} holdout_pred;

/*
 * Predict metric for a run with target features from design runs using
 * model ("io", "loglinear" or "auto"). CS_EXIT_BADINPUT when the design
 * runs cannot support a prediction (too few runs, a category never seen).
 */
int holdout_predict(const holdout_obs *design, size_t n, const json_t *target, const char *metric,
		    const char *model, holdout_pred *out, cs_err *e);
void holdout_pred_clear(holdout_pred *p);

/* One prediction set beside what was observed. */
typedef struct holdout_row {
	double value, lo, hi; /* predicted */
	double observed;
} holdout_row;

typedef struct holdout_summary {
	size_t n, inside;
	double mdape;               /* median |pred - obs| / obs */
	double mean_interval_score; /* Winkler at alpha 0.05 */
	double mean_band_width;     /* mean (hi - lo) */
	double mean_rel_band_width; /* mean (hi - lo) / value */
	double coverage_p;          /* P(X <= inside), X ~ Binomial(n, 0.95) */
	size_t reject_at_or_below;  /* largest k with P(X <= k) <= 0.05 (or -1 as SIZE_MAX) */
	int calibration_rejected;   /* coverage_p <= 0.05 */
	double threshold;
	int passed;                 /* mdape <= threshold */
} holdout_summary;

/* Score n rows against threshold; per-row figures via the helpers below. */
int holdout_score(const holdout_row *rows, size_t n, double threshold, holdout_summary *out,
		  cs_err *e);

/* Winkler / Gneiting-Raftery interval score of [lo, hi] for y at level alpha. */
double holdout_interval_score(double lo, double hi, double y, double alpha);
/* |pred - obs| / obs. */
double holdout_rel_error(double pred, double obs);

/* ---- statistics (exposed for tests) ---- */

double holdout_median(double *v, size_t n);             /* sorts v */
double holdout_quantile(double *v, size_t n, double q); /* sorts v; type 7 */
double holdout_binom_cdf(size_t k, size_t n, double p); /* P(X <= k) */
double holdout_t_quantile(double p, double df);         /* Student t inverse CDF */

#endif
