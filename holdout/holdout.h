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
 *    per index kind and search knobs, each design run's figure scaled to
 *    the target's partition size by a size elasticity: d log reads /
 *    d log partition_pages, one slope fitted within knob groups and shrunk
 *    towards 0.5 +- 0.5), per-read latency and effective concurrency
 *    fitted per (device, concurrency = clients x fanout), and cpu per
 *    query from warm runs. A device no design run used takes its latency
 *    from its profile (feature device_mean_ms) times the median ratio
 *    measured / profile over the design's devices, whose spread widens the
 *    band. It predicts wall_s, qps, lat_mean_ms, engine_reads,
 *    reads_per_query, engine_read_ms_mean and engine_iops (reads / wall).
 *  - "loglinear": least squares of log(metric) on the logs of the numeric
 *    knobs, the cold flag and one-hot device/mode/strategy/kind.
 *  - "auto": io where it applies, else loglinear.
 * Bands come from the fit's own residual spread. For the io model, the
 * metric's own leave-one-out log residuals (each design run like the
 * target predicted by the model refitted without it), a t interval on
 * the log scale at their degrees of freedom, a device prior's calibration
 * added; with fewer than HOLDOUT_LOO_MIN of them, a variance that adds the
 * components a metric uses (reads per query scaled to the target's query
 * count, latency, concurrency, the elasticity over the size step, a device
 * prior's calibration) with Welch-Satterthwaite degrees of freedom (the
 * band's "method" says which); for the regression the
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

/* Residuals of a metric itself a band needs before it replaces the parameters' spreads. */
#define HOLDOUT_LOO_MIN 4

/*
 * Predict metric for a run with target features from design runs using
 * model ("io", "loglinear" or "auto"). CS_EXIT_BADINPUT when the design
 * runs cannot support a prediction (too few runs, a category never seen).
 */
int holdout_predict(const holdout_obs *design, size_t n, const json_t *target, const char *metric,
		    const char *model, holdout_pred *out, cs_err *e);
/* The same with bands at coverage level (holdout_predict: 0.95). */
int holdout_predict_at(const holdout_obs *design, size_t n, const json_t *target,
		       const char *metric, const char *model, double level, holdout_pred *out,
		       cs_err *e);
void holdout_pred_clear(holdout_pred *p);

/* One prediction set beside what was observed. */
typedef struct holdout_row {
	double value, lo, hi; /* predicted */
	double observed;
} holdout_row;

typedef struct holdout_summary {
	size_t n, inside;
	double level;               /* the bands' coverage level (0.95) */
	double mdape;               /* median |pred - obs| / obs */
	double mean_interval_score; /* Winkler at alpha = 1 - level; mixes units: per metric only */
	double mean_rel_interval_score; /* mean interval score / |observed|: scale-free */
	double mean_band_width;     /* mean (hi - lo); mixes units: per metric only */
	double mean_rel_band_width; /* mean (hi - lo) / value */
	double coverage_p;          /* P(X <= inside), X ~ Binomial(n, level): too few inside */
	double coverage_p_high;     /* P(X >= inside): too many inside (bands too wide) */
	double coverage_p_two_sided; /* 2 min(low, high), at most 1 */
	size_t reject_at_or_below;  /* largest k with P(X <= k) <= alpha / 2 (or SIZE_MAX) */
	int calibration_rejected;   /* coverage_p_two_sided <= 0.05 */
	double threshold;
	int passed;                 /* mdape <= threshold */
} holdout_summary;

/* Score n rows against threshold with 95% bands; per-row figures via the helpers below. */
int holdout_score(const holdout_row *rows, size_t n, double threshold, holdout_summary *out,
		  cs_err *e);
/* The same for bands at coverage level. */
int holdout_score_at(const holdout_row *rows, size_t n, double threshold, double level,
		     holdout_summary *out, cs_err *e);
/* Two-sided exact binomial check of inside of n at level: 2 min(P(X <= k), P(X >= k)), <= 1. */
double holdout_coverage_two_sided(size_t inside, size_t n, double level);

/* Winkler / Gneiting-Raftery interval score of [lo, hi] for y at level alpha. */
double holdout_interval_score(double lo, double hi, double y, double alpha);
/* |pred - obs| / obs. */
double holdout_rel_error(double pred, double obs);

/* ---- the holdout in the study's order (order.c) ---- */

#include "ledger.h"

/*
 * What the log says for the holdout: the plan, the design runs the models
 * fit on (with a plan: class "design" only; without one: every run not a
 * holdout or sceptic run), the holdout runs (run records with holdout
 * true, which the harness sets from the plan: the first complete run of
 * each target spec; later ones are repeats), the latest prediction per
 * (spec, metric), deviation seqs and score payloads (each with "seq").
 */
typedef struct holdout_log {
	ledger_plan plan;    /* the latest plan, amendments included */
	ledger_plan reg;     /* the plan as registered before the holdout was seen (= plan until then) */
	int64_t seen_seq;    /* the first holdout run record or score: the holdout seen (0: not yet) */
	json_t *design, *holdout, *repeats;
	json_t *predictions; /* "sha|metric" -> payload (with "seq") */
	json_t *pred_order;  /* keys in order */
	json_t *devs, *scores;
	json_t *reached;     /* [{target, spec_sha256, why, run_id}]: targets a run read before predictions */
	int holdout_started;
	int64_t npred;
} holdout_log;

int holdout_log_load(ledger *l, holdout_log *v, cs_err *e);
/* 1 when the plan was amended after the holdout was seen (the score of record keeps reg's rule). */
int holdout_amended_after_seen(const holdout_log *v);
void holdout_log_free(holdout_log *v);
/* The plan's band level (0.95 without one). */
double holdout_plan_level(const holdout_log *v);

/* One prediction target: a run spec (path as given, its hash), its features, metrics, model. */
typedef struct holdout_target {
	const char *path;
	char sha[65];
	const json_t *features; /* harness_spec_features of the effective spec (borrowed) */
	const json_t *metrics;  /* array of metric names (borrowed) */
	const char *model;      /* "auto", "io", "loglinear" */
} holdout_target;

/*
 * Record predictions for n targets (source names the targets file in
 * messages): refused (exit 3, recorded) after the first holdout run or for
 * a target or metric the plan does not register; fitted on the design
 * runs at the plan's band level; all or nothing. *made: the prediction
 * payloads (new).
 */
int holdout_predict_record(ledger *l, const holdout_target *t, size_t n, const char *source,
			   json_t **made, cs_err *e);

typedef struct holdout_score_opts {
	int have_threshold; /* --threshold given */
	double threshold;
	int interim;        /* --interim: score although targets lack runs, labelled interim */
} holdout_score_opts;

/*
 * Score the predictions by the registered rule and append the `score`
 * record (docs/records.md); *out is its payload (new). Refused (exit 3,
 * recorded) when --threshold differs from the plan's, or while a holdout
 * target has no run and not interim.
 */
int holdout_score_record(ledger *l, const holdout_score_opts *o, json_t **out, cs_err *e);

/* The exit a score stands for: CS_EXIT_FAILED for a failed non-interim score, else 0. */
int holdout_score_exit(const json_t *score);

/* The score of record (the first complete, non-interim score; *score NULL when none; new). */
int holdout_registered_test(ledger *l, json_t **score, cs_err *e);

/*
 * The registered test's state: *score the score of record (new, NULL when
 * none), *state (new) {"planned": the registered plan names holdout
 * targets, "targets", "targets_without_run": [paths], "predictions",
 * "interim_scores", "unfinished": planned and no score of record,
 * "amended_after_seen", "amended": the latest plan's rule on the score of
 * record's figures, labelled "amended after the holdout was seen" (only
 * when the plan was amended after the holdout was seen)}.
 */
int holdout_registered_state(ledger *l, json_t **score, json_t **state, cs_err *e);
/* The exit the state stands for: the score of record's, else CS_EXIT_UNFINISHED when unfinished. */
int holdout_state_exit(const json_t *score, const json_t *state);

/* ---- statistics (exposed for tests) ---- */

double holdout_median(double *v, size_t n);             /* sorts v */
double holdout_quantile(double *v, size_t n, double q); /* sorts v; type 7 */
double holdout_binom_cdf(size_t k, size_t n, double p); /* P(X <= k) */
double holdout_t_quantile(double p, double df);         /* Student t inverse CDF */
double holdout_chi2_cdf(double x, double df);           /* P(X <= x), X ~ chi-square(df) */

/* ---- intervals of positive quantities (interval.c) ---- */

typedef enum holdout_iv_method {
	HOLDOUT_IV_WELCH_LOG = 0, /* Student's t on the logs (Welch's for two groups) */
	HOLDOUT_IV_BOOTSTRAP,     /* percentile bootstrap of the geometric mean (ratio) */
} holdout_iv_method;

#define HOLDOUT_IV_RESAMPLES_DEFAULT 2000u
#define HOLDOUT_IV_REPEAT_SEED 20261203u /* the repeats' bootstrap: fixed, so reports reproduce */
#define HOLDOUT_IV_REPLICATES_MAX 1000u  /* as run.json's replicates */

typedef struct holdout_iv_opts {
	holdout_iv_method method;
	double level;       /* e.g. 0.95 */
	uint64_t seed;      /* bootstrap: the registered seed */
	unsigned resamples; /* bootstrap: 0 for HOLDOUT_IV_RESAMPLES_DEFAULT */
} holdout_iv_opts;

typedef struct holdout_interval {
	double estimate; /* geometric mean of a, or GM(a) / GM(b) (of_mean: the mean) */
	double lo, hi;   /* NAN when why is set; else 0 < lo <= hi for positive inputs */
	double df;       /* the t methods' degrees of freedom (NAN for the bootstrap) */
	size_t n_a, n_b; /* values each side (n_b 0: one group) */
	char why[128];   /* empty, or why there is no interval */
} holdout_interval;

/*
 * The interval of the geometric mean of a[0..na) (b NULL) or of the ratio
 * GM(a) / GM(b), at o->level, by o->method. Needs 2 values a side, each
 * positive and finite: else -1 with out->why. The interval never holds a
 * value <= 0.
 */
int holdout_interval_compute(const holdout_iv_opts *o, const double *a, size_t na, const double *b,
			     size_t nb, holdout_interval *out);

/*
 * The interval of a metric over a run's repeats: all positive, the
 * geometric mean's t interval on the logs (estimate: the geometric mean);
 * some 0, the percentile bootstrap of the mean (fixed seed; within the
 * values' range). -1 with why for fewer than 2 values or one not finite.
 */
int holdout_interval_of_mean(const double *v, size_t n, double level, holdout_interval *out);

/* "welch-log" or "bootstrap". */
const char *holdout_interval_method_name(holdout_iv_method m);

/*
 * The power of an interval decision: the chance that the level interval
 * from n runs a side (two_groups: a ratio of two groups of n; else one
 * group against the threshold) lies wholly beyond threshold when the true
 * effect is effect and a run's log metric has standard deviation sd_log
 * (normal approximation on the logs). 0 for n < 2.
 */
double holdout_interval_power(double effect, double threshold, double sd_log, unsigned n,
			      int two_groups, double level);

/* The fewest runs a side (2..HOLDOUT_IV_REPLICATES_MAX) for power; 0 when none suffices. */
unsigned holdout_interval_replicates_for(double effect, double threshold, double sd_log,
					 int two_groups, double level, double power);

#endif
