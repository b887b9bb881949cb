/*
 * order.c - the holdout's place in a study's order, read from the log:
 * predictions only before the first holdout run and only for the targets
 * and metrics the plan registers; a score only by the registered rule
 * (threshold, band level, minimum in-band count), only when every target
 * has its run (else --interim, recorded as such), each target observed by
 * its first run alone; the first complete score is the score, later ones
 * are re-scores. Refusals are decided in guards/ (order.c there).
 *
 * Phases of a score (holdout_score_record):
 *   1. the log: plan, design and holdout runs by class, predictions, scores;
 *   2. the rule: threshold (plan, else --threshold, else 0.35), level,
 *      minimum inside; a --threshold that differs from the plan is refused;
 *   3. completeness: a target without a run refuses the score (--interim);
 *   4. rows: each prediction against its target's first run;
 *   5. figures: MdAPE, inside, the two-sided coverage check over rows and
 *      over the independent holdout runs behind them, interval scores per
 *      metric and relative to the observed value;
 *   6. the `score` record, labelled interim / re-score.
 */
#include "holdout.h"

#include "guard.h"
#include "ledger.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- 1. the log ---- */

static int log_cb(const ledger_record *r, void *ud)
{
	holdout_log *v = ud;
	json_t *p = json_loads(r->payload, 0, NULL);

	if (!p)
		return 0;
	if (!strcmp(r->kind, "run_start") && json_is_true(json_object_get(p, "holdout"))) {
		v->holdout_started = 1;
	} else if (!strcmp(r->kind, "run")) {
		const char *st = json_string_value(json_object_get(p, "status"));
		const char *cls = json_string_value(json_object_get(p, "class"));
		int hold = json_is_true(json_object_get(p, "holdout"));

		if (hold && !v->seen_seq)
			v->seen_seq = r->seq;
		if (!hold && json_array_size(json_object_get(p, "holdout_reached"))) {
			size_t i;
			json_t *t;

			/* a non-holdout run read what a target holds out, before the predictions */
			json_array_foreach(json_object_get(p, "holdout_reached"), i, t) {
				json_t *c = json_copy(t);

				json_object_set(c, "run_id", json_object_get(p, "run_id"));
				json_array_append_new(v->reached, c);
			}
		}
		if (!st || !strcmp(st, "complete")) {
			if (hold) {
				const char *sha = json_string_value(json_object_get(p, "spec_sha256"));
				size_t i;
				json_t *h;
				int first = 1;

				json_array_foreach(v->holdout, i, h)
					if (!strcmp(json_string_value(json_object_get(h, "spec_sha256")) ?: "",
						    sha ?: ""))
						first = 0;
				json_array_append(first ? v->holdout : v->repeats, p);
			} else if (json_is_true(json_object_get(p, "beyond_plan"))) {
				/* beyond its spec's registered run count: never fitted on */
			} else if (v->plan.plan ? (cls && !strcmp(cls, "design"))
						: !(cls && !strcmp(cls, "sceptic"))) {
				/* with a plan only its design runs feed the models */
				json_array_append(v->design, p);
			}
		}
	} else if (!strcmp(r->kind, "prediction")) {
		const json_t *t = json_object_get(p, "target");
		char key[256];

		snprintf(key, sizeof(key), "%s|%s",
			 json_string_value(json_object_get(t, "spec_sha256")) ?: "",
			 json_string_value(json_object_get(t, "metric")) ?: "");
		if (!json_object_get(v->predictions, key))
			json_array_append_new(v->pred_order, json_string(key));
		json_object_set_new(p, "seq", json_integer((json_int_t) r->seq));
		json_object_set(v->predictions, key, p);
		v->npred++;
	} else if (!strcmp(r->kind, "deviation")) {
		json_array_append_new(v->devs, json_integer((json_int_t) r->seq));
	} else if (!strcmp(r->kind, "score")) {
		if (!v->seen_seq)
			v->seen_seq = r->seq;
		json_object_set_new(p, "seq", json_integer((json_int_t) r->seq));
		json_array_append(v->scores, p);
	}
	json_decref(p);
	return 0;
}

int holdout_log_load(ledger *l, holdout_log *v, cs_err *e)
{
	int rc;

	memset(v, 0, sizeof(*v));
	v->design = json_array();
	v->holdout = json_array();
	v->repeats = json_array();
	v->predictions = json_object();
	v->pred_order = json_array();
	v->devs = json_array();
	v->scores = json_array();
	v->reached = json_array();
	if (!v->reached || !v->design || !v->holdout || !v->repeats || !v->predictions || !v->pred_order ||
	    !v->devs || !v->scores)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	rc = ledger_plan_load(l, 0, &v->plan, e);
	if (!rc)
		rc = ledger_foreach(l, NULL, log_cb, v, e);
	/* the rule of record: the plan as it stood before the holdout was seen */
	if (!rc)
		rc = ledger_plan_load(l, v->seen_seq ? v->seen_seq - 1 : 0, &v->reg, e);
	return rc;
}

int holdout_amended_after_seen(const holdout_log *v)
{
	return v->seen_seq && v->plan.study_seq > v->seen_seq;
}

void holdout_log_free(holdout_log *v)
{
	if (!v)
		return;
	json_decref(v->design);
	json_decref(v->holdout);
	json_decref(v->repeats);
	json_decref(v->predictions);
	json_decref(v->pred_order);
	json_decref(v->devs);
	json_decref(v->scores);
	json_decref(v->reached);
	ledger_plan_free(&v->plan);
	ledger_plan_free(&v->reg);
	memset(v, 0, sizeof(*v));
}

/*
 * The registered plan's holdout section, or NULL: the plan as it stood
 * before the holdout was seen (until then the latest plan), so that an
 * amendment made after the holdout runs or a score never moves the rule
 * of record.
 */
static const json_t *plan_holdout(const holdout_log *v)
{
	return v->reg.plan ? json_object_get(v->reg.plan, "holdout") : NULL;
}

double holdout_plan_level(const holdout_log *v)
{
	const json_t *b = json_object_get(plan_holdout(v), "band_level");

	return json_is_number(b) ? json_number_value(b) : 0.95;
}

/* ---- predictions ---- */

int holdout_predict_record(ledger *l, const holdout_target *t, size_t n, const char *source,
			   json_t **made, cs_err *e)
{
	holdout_log v;
	holdout_obs *obs = NULL;
	json_t *out = json_array();
	size_t nobs, i;
	double level;
	int rc;

	*made = NULL;
	rc = holdout_log_load(l, &v, e);
	if (rc)
		goto out;
	/* 1. order: predictions close at the first holdout run */
	rc = guard_predictions_open(l, "holdout predict", source, e);
	if (rc)
		goto out;
	/* 2. the plan: only its targets and metrics */
	for (i = 0; i < n; i++) {
		size_t j;
		json_t *m;

		json_array_foreach(t[i].metrics, j, m) {
			rc = guard_prediction_target(l, &v.plan, t[i].sha, t[i].path,
						     json_string_value(m) ?: "", "holdout predict", e);
			if (rc)
				goto out;
		}
	}
	level = holdout_plan_level(&v);
	nobs = json_array_size(v.design);
	obs = calloc(nobs + 1, sizeof(*obs));
	if (!obs || !out) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	for (i = 0; i < nobs; i++) {
		json_t *r = json_array_get(v.design, i);

		obs[i] = (holdout_obs){json_string_value(json_object_get(r, "run_id")),
				       json_object_get(r, "features"), json_object_get(r, "metrics"),
				       json_object_get(r, "spec")};
	}
	/* 3. fit and record, all or nothing */
	rc = ledger_begin(l, e);
	if (rc)
		goto out;
	for (i = 0; i < n && !rc; i++) {
		size_t j;
		json_t *mv;

		json_array_foreach(t[i].metrics, j, mv) {
			const char *metric = json_string_value(mv);
			holdout_pred p;
			json_t *payload;
			char id[32];

			if (!metric) {
				rc = cs_err_set(e, CS_EXIT_BADINPUT,
						"%s: $.targets[%zu].metrics[%zu]: expected a metric name",
						source, i, j);
				break;
			}
			rc = holdout_predict_at(obs, nobs, t[i].features, metric, t[i].model, level, &p, e);
			if (rc) {
				char msg[CS_ERR_MAX];

				memcpy(msg, e->msg, sizeof(msg));
				cs_err_set(e, rc, "%s: $.targets[%zu] (%s): %.900s", source, i, metric,
					   msg);
				break;
			}
			snprintf(id, sizeof(id), "P%lld", (long long) ++v.npred);
			payload = json_pack("{s:s,s:{s:s,s:s,s:s,s:O},s:f,s:[f,f],s:f,s:{s:s,s:O}}",
					    "id", id, "target", "run_spec", t[i].path, "spec_sha256",
					    t[i].sha, "metric", metric, "features", t[i].features,
					    "value", p.value, "band95", p.lo, p.hi, "band_level", level,
					    "model", "name", p.model, "params", p.params);
			json_object_set(payload, "fitted_on", json_object_get(p.params, "fitted_on"));
			rc = ledger_append(l, "prediction", payload, NULL, e);
			if (!rc)
				json_array_append(out, payload);
			json_decref(payload);
			holdout_pred_clear(&p);
			if (rc)
				break;
		}
	}
	if (rc)
		ledger_rollback(l);
	else
		rc = ledger_commit(l, e);
	if (!rc) {
		*made = out;
		out = NULL;
	}
out:
	free(obs);
	json_decref(out);
	holdout_log_free(&v);
	return rc;
}

/* ---- scores ---- */

/* The standard normal's quantile p (bisection on erfc; 0 < p < 1). */
static double normal_quantile(double p)
{
	double lo = -40, hi = 40;

	for (int i = 0; i < 200; i++) {
		double mid = 0.5 * (lo + hi);

		if (0.5 * erfc(-mid / sqrt(2.0)) < p)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

/*
 * A row's standardised error on the log scale: ln(observed / predicted)
 * over the band's own log half-width in standard deviations (the band is
 * predicted x exp(+-q s), q the normal quantile of the level: the t
 * quantile's excess is left in, so z reads a little small at few degrees
 * of freedom). NAN where the band is not on a log scale (a bound <= 0).
 */
static double standardised_error(const holdout_row *r, double level)
{
	double q = normal_quantile(0.5 + level / 2), s;

	if (!(r->lo > 0) || !(r->hi > r->lo) || !(r->value > 0) || !(r->observed > 0))
		return NAN;
	s = log(r->hi / r->lo) / (2 * q);
	return s > 0 ? log(r->observed / r->value) / s : NAN;
}

/*
 * Calibration from the standardised errors z of one metric's independent
 * rows (new): calibrated bands give z with unit variance, so sum z^2 is
 * chi-square with n degrees of freedom; a small lower tail says the bands
 * are too wide, a small upper tail too narrow (each at 0.025). Fewer than
 * two rows: too few to test, and said so.
 */
static json_t *calibration(const json_t *zs)
{
	size_t n = json_array_size(zs), i;
	double ss = 0, lo, hi;
	json_t *z;
	const char *verdict;

	if (n < 2)
		return json_pack("{s:I,s:s}", "n", (json_int_t) n, "verdict",
				 "too few independent rows to test");
	json_array_foreach(zs, i, z)
		ss += json_number_value(z) * json_number_value(z);
	lo = holdout_chi2_cdf(ss, (double) n);
	hi = 1 - lo;
	verdict = lo <= 0.025 ? "bands too wide" : hi <= 0.025 ? "bands too narrow" : "consistent";
	return json_pack("{s:I,s:f,s:f,s:f,s:f,s:s}", "n", (json_int_t) n, "z_rms",
			 sqrt(ss / (double) n), "chi2", ss, "p_too_wide", lo, "p_too_narrow", hi,
			 "verdict", verdict);
}

/*
 * Is the row (value r, same run run_id) a function of a row already in
 * table: both its predicted and its observed value the same multiple, or
 * the same reciprocal multiple, of that row's (reads per query = reads /
 * queries, IOPS = 1000 / per-read ms)? Then its error is that row's and it
 * is not evidence of its own: trow gets "function_of" and "relation".
 */
static int function_of(const json_t *table, const json_t *run_id, const holdout_row *r, json_t *trow)
{
	size_t i;
	json_t *o;

	json_array_foreach(table, i, o) {
		double p = json_number_value(json_object_get(o, "predicted"));
		double y = json_number_value(json_object_get(o, "observed"));
		const char *rel = NULL;

		if (json_object_get(o, "function_of") ||
		    !json_equal(json_array_get(json_object_get(o, "runs"), 0), run_id) || p == 0 || y == 0)
			continue;
		if (fabs(r->value / p - r->observed / y) <= 1e-9 * fabs(r->observed / y))
			rel = "multiple";
		else if (fabs(r->value * p - r->observed * y) <= 1e-9 * fabs(r->observed * y))
			rel = "reciprocal";
		if (rel) {
			json_object_set(trow, "function_of", json_object_get(o, "prediction"));
			json_object_set_new(trow, "relation", json_string(rel));
			return 1;
		}
	}
	return 0;
}

/* Append to per[metric] the row's figures. */
static void per_metric_add(json_t *per, const char *metric, double rel, int inside, double is,
			   double obs, double z)
{
	json_t *m = json_object_get(per, metric), *rels;

	if (!m) {
		m = json_pack("{s:I,s:I,s:f,s:f,s:[],s:[]}", "n", (json_int_t) 0, "inside",
			      (json_int_t) 0, "interval_score_sum", 0.0, "relative_interval_score_sum",
			      0.0, "relative_errors", "z");
		json_object_set_new(per, metric, m);
	}
	if (isfinite(z))
		json_array_append_new(json_object_get(m, "z"), json_real(z));
	json_object_set_new(m, "n", json_integer(json_integer_value(json_object_get(m, "n")) + 1));
	json_object_set_new(m, "inside",
			    json_integer(json_integer_value(json_object_get(m, "inside")) + inside));
	json_object_set_new(m, "interval_score_sum",
			    json_real(json_number_value(json_object_get(m, "interval_score_sum")) + is));
	json_object_set_new(
		m, "relative_interval_score_sum",
		json_real(json_number_value(json_object_get(m, "relative_interval_score_sum")) +
			  is / fabs(obs)));
	rels = json_object_get(m, "relative_errors");
	json_array_append_new(rels, json_real(rel));
}

/* Turn the sums into the per-metric figures. */
static void per_metric_finish(json_t *per, double level)
{
	const char *k;
	json_t *m;

	json_object_foreach(per, k, m) {
		json_t *rels = json_object_get(m, "relative_errors");
		size_t n = json_array_size(rels), i, inside;
		double *v = calloc(n ? n : 1, sizeof(*v));
		json_t *x;

		json_array_foreach(rels, i, x)
			if (v)
				v[i] = json_number_value(x);
		inside = (size_t) json_integer_value(json_object_get(m, "inside"));
		json_object_set_new(m, "mdape", v && n ? json_real(holdout_median(v, n)) : json_null());
		json_object_set_new(m, "mean_interval_score",
				    json_real(json_number_value(json_object_get(m, "interval_score_sum")) /
					      (double) n));
		json_object_set_new(
			m, "mean_relative_interval_score",
			json_real(json_number_value(json_object_get(m, "relative_interval_score_sum")) /
				  (double) n));
		json_object_set_new(m, "coverage_p_two_sided",
				    json_real(holdout_coverage_two_sided(inside, n, level)));
		json_object_del(m, "interval_score_sum");
		json_object_del(m, "relative_interval_score_sum");
		json_object_del(m, "relative_errors");
		json_object_set_new(m, "calibration", calibration(json_object_get(m, "z")));
		json_object_del(m, "z");
		free(v);
	}
}

/* The earliest complete, non-interim score's seq (0: none). */
static int64_t score_of_record(const json_t *scores, const json_t **rec)
{
	size_t i;
	json_t *s;

	json_array_foreach(scores, i, s) {
		if (json_is_true(json_object_get(s, "interim")))
			continue;
		if (rec)
			*rec = s;
		return json_integer_value(json_object_get(s, "seq"));
	}
	return 0;
}

/*
 * The latest plan's rule applied to a score's figures (mdape, inside;
 * threshold0 when the latest plan names no threshold), when the plan was
 * amended after the holdout was seen: shown beside the score of record,
 * labelled, and never deciding "passed" or the exit code (new).
 */
/*
 * The minimum in-band count a rule of min_inside (registered over every
 * row the predictions cover, n_all) asks of the n rows scored once: the
 * same share, rounded up. Rows that are functions of others would count
 * the same evidence twice.
 */
static size_t min_inside_scored(json_int_t min_inside, size_t n, size_t n_all)
{
	if (min_inside <= 0)
		return 0;
	if (!n_all || n >= n_all)
		return (size_t) min_inside;
	return (size_t) ceil((double) min_inside * (double) n / (double) n_all - 1e-9);
}

static json_t *amended_rule(const holdout_log *v, double mdape, size_t inside, size_t n,
			    size_t n_all, double threshold0)
{
	const json_t *ah = v->plan.plan ? json_object_get(v->plan.plan, "holdout") : NULL;
	const json_t *tv = json_object_get(ah, "threshold"), *mi = json_object_get(ah, "min_inside");
	double threshold = json_is_number(tv) ? json_number_value(tv) : threshold0;
	int passed = mdape <= threshold;
	json_t *a;

	if (json_is_integer(mi))
		passed = passed && inside >= min_inside_scored(json_integer_value(mi), n, n_all);
	a = json_pack("{s:s,s:I,s:I,s:f,s:b,s:b}", "label", "amended after the holdout was seen",
		      "study_seq", (json_int_t) v->plan.study_seq, "holdout_seen_seq",
		      (json_int_t) v->seen_seq, "threshold", threshold, "passed", passed,
		      "rule_changed", !json_equal(ah, plan_holdout(v)));
	if (a && json_is_integer(mi))
		json_object_set(a, "min_inside", (json_t *) mi);
	return a;
}

int holdout_score_record(ledger *l, const holdout_score_opts *o, json_t **out, cs_err *e)
{
	holdout_log v;
	holdout_row *rows = NULL;
	holdout_summary s;
	json_t *table = json_array(), *pending = json_array(), *payload = NULL, *key, *targets = NULL;
	json_t *missing = json_array(), *per = json_object(), *runs_seen = json_array();
	json_t *differ = json_array();
	const json_t *ph, *tv;
	const char *source = "default";
	double threshold = 0.35, level;
	size_t i, n = 0, inside_runs, dependent = 0;
	int64_t first_seq;
	int rc;

	*out = NULL;
	memset(&v, 0, sizeof(v));
	/* 1. a score looks before it answers: an edited log or a record appended without
	 * the study's key is exit 4, and nothing is scored */
	rc = ledger_verify(l, NULL, e);
	if (!rc)
		rc = holdout_log_load(l, &v, e);
	if (rc)
		goto out;
	if (!table || !pending || !missing || !per || !runs_seen || !differ) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	/* 2. the registered rule */
	ph = plan_holdout(&v);
	tv = json_object_get(ph, "threshold");
	level = holdout_plan_level(&v);
	if (json_is_number(tv)) {
		threshold = json_number_value(tv);
		source = "plan";
		if (o->have_threshold &&
		    (rc = guard_score_threshold(l, threshold, o->threshold, "holdout score", e)))
			goto out;
	} else if (o->have_threshold) {
		threshold = o->threshold;
		source = "--threshold (no plan registers one)";
	}
	/* 3. every target has its run, or the score is an interim one */
	targets = ledger_plan_targets(&v.reg);
	json_array_foreach(targets, i, key) {
		size_t j;
		json_t *r;
		int ran = 0;

		json_array_foreach(v.holdout, j, r)
			ran |= !strcmp(json_string_value(json_object_get(r, "spec_sha256")) ?: "",
				       json_string_value(key));
		if (!ran)
			json_array_append_new(missing, json_string(ledger_plan_path(&v.reg, json_string_value(key)) ?: json_string_value(key)));
	}
	/* 4. rows: each prediction against its target's first run, if that run has the settings
	 * the prediction was made for (a study spec amended since would change them) */
	rows = calloc(json_array_size(v.pred_order) + 1, sizeof(*rows));
	if (!rows) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	json_array_foreach(v.pred_order, i, key) {
		json_t *p = json_object_get(v.predictions, json_string_value(key));
		const json_t *t = json_object_get(p, "target");
		const char *sha = json_string_value(json_object_get(t, "spec_sha256"));
		const char *metric = json_string_value(json_object_get(t, "metric"));
		const json_t *run = NULL, *mv;
		size_t j, k;
		json_t *r, *seen, *trow;
		double rel, is;
		int in, dup = 0;

		json_array_foreach(v.holdout, j, r)
			if (sha && !strcmp(json_string_value(json_object_get(r, "spec_sha256")) ?: "", sha))
				run = r;
		if (run && json_object_get(t, "features") && json_object_get(run, "features") &&
		    !json_equal(json_object_get(t, "features"), json_object_get(run, "features"))) {
			const char *path = json_string_value(json_object_get(t, "run_spec")) ?: "?";
			int listed = 0;

			json_array_foreach(missing, k, seen)
				listed |= !strcmp(json_string_value(seen), path);
			if (!listed)
				json_array_append_new(missing, json_string(path));
			json_array_append_new(differ, json_pack("{s:O,s:O}", "prediction",
							       json_object_get(p, "id"), "run_id",
							       json_object_get(run, "run_id")));
			json_array_append(pending, json_object_get(p, "id"));
			continue;
		}
		mv = run ? json_object_get(json_object_get(run, "metrics"), metric ?: "") : NULL;
		if (!json_is_number(mv)) {
			json_array_append(pending, json_object_get(p, "id"));
			continue;
		}
		rows[n] = (holdout_row){json_number_value(json_object_get(p, "value")),
					json_number_value(json_array_get(json_object_get(p, "band95"), 0)),
					json_number_value(json_array_get(json_object_get(p, "band95"), 1)),
					json_number_value(mv)};
		if (!(rows[n].observed != 0) || !isfinite(rows[n].observed)) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"prediction %s: observed %s of run %s is %g: no relative error",
					json_string_value(json_object_get(p, "id")), metric,
					json_string_value(json_object_get(run, "run_id")), rows[n].observed);
			goto out;
		}
		rel = holdout_rel_error(rows[n].value, rows[n].observed);
		in = rows[n].observed >= rows[n].lo && rows[n].observed <= rows[n].hi;
		is = holdout_interval_score(rows[n].lo, rows[n].hi, rows[n].observed, 1 - level);
		trow = json_pack("{s:O,s:s,s:O,s:f,s:f,s:f,s:f,s:f,s:b,s:f,s:f,s:[O]}", "prediction",
				 json_object_get(p, "id"), "metric", metric, "run_spec",
				 json_object_get(t, "run_spec"), "predicted", rows[n].value, "lo",
				 rows[n].lo, "hi", rows[n].hi, "observed", rows[n].observed,
				 "relative_error", rel, "inside", in, "interval_score", is,
				 "relative_interval_score", is / fabs(rows[n].observed), "runs",
				 json_object_get(run, "run_id"));
		/* a row that is a function of another row of the same run is scored once */
		if (function_of(table, json_object_get(run, "run_id"), &rows[n], trow)) {
			dependent++;
			json_array_append_new(table, trow);
			continue;
		}
		json_array_append_new(table, trow);
		json_array_foreach(runs_seen, k, seen)
			dup |= json_equal(seen, json_object_get(run, "run_id"));
		if (!dup)
			json_array_append(runs_seen, json_object_get(run, "run_id"));
		per_metric_add(per, metric, rel, in, is, rows[n].observed,
			       standardised_error(&rows[n], level));
		n++;
	}
	rc = guard_score_complete(l, json_array_size(missing), json_array_size(targets), o->interim,
				  "holdout score", e);
	if (rc)
		goto out;
	/* 5. figures */
	rc = holdout_score_at(rows, n, threshold, level, &s, e);
	if (rc)
		goto out;
	per_metric_finish(per, level);
	/* the rows share runs: the check over the independent runs, k scaled to them */
	inside_runs = (size_t) floor((double) s.inside * (double) json_array_size(runs_seen) /
				     (double) s.n + 0.5);
	first_seq = score_of_record(v.scores, NULL);
	payload = json_pack("{s:f,s:s,s:f,s:f,s:f,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:b,s:b,"
			    "s:O,s:O,s:O,s:O,s:O,s:b}",
			    "threshold", threshold, "threshold_source", source, "band_level", level,
			    "mdape", s.mdape, "median_relative_error", s.mdape, "n", (json_int_t) s.n,
			    "inside", (json_int_t) s.inside, "independent_runs",
			    (json_int_t) json_array_size(runs_seen), "coverage_p", s.coverage_p,
			    "coverage_p_high", s.coverage_p_high, "coverage_p_two_sided",
			    s.coverage_p_two_sided, "coverage_p_two_sided_runs",
			    holdout_coverage_two_sided(inside_runs, json_array_size(runs_seen), level),
			    "mean_relative_interval_score", s.mean_rel_interval_score,
			    "mean_relative_band_width", s.mean_rel_band_width, "calibration_rejected",
			    s.calibration_rejected, "passed", 0, "rows", table, "pending", pending,
			    "per_metric", per, "deviations", v.devs, "repeated_runs", v.repeats, "interim",
			    o->interim && json_array_size(missing) > 0);
	if (!payload) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	{
		const json_t *mi = json_object_get(ph, "min_inside");
		int passed = s.passed;

		json_object_set_new(payload, "passed_mdape", json_boolean(s.passed));
		if (json_is_integer(mi)) {
			size_t need = min_inside_scored(json_integer_value(mi), n, n + dependent);
			int enough = s.inside >= need;

			json_object_set_new(payload, "min_inside", json_integer(json_integer_value(mi)));
			json_object_set_new(payload, "min_inside_scored", json_integer((json_int_t) need));
			json_object_set_new(payload, "passed_inside", json_boolean(enough));
			passed = passed && enough;
		}
		json_object_set_new(payload, "passed", json_boolean(passed));
	}
	json_object_set_new(payload, "registered", json_boolean(v.reg.plan != NULL && ph != NULL));
	json_object_set_new(payload, "rows_dependent", json_integer((json_int_t) dependent));
	if (holdout_amended_after_seen(&v))
		json_object_set_new(payload, "amended", amended_rule(&v, s.mdape, s.inside, n,
								     n + dependent, threshold));
	if (json_array_size(missing))
		json_object_set(payload, "targets_without_run", missing);
	if (json_array_size(differ))
		json_object_set(payload, "features_differ", differ);
	if (json_array_size(v.reached))
		json_object_set(payload, "targets_seen_before_predictions", v.reached);
	if (!json_is_true(json_object_get(payload, "interim")) && first_seq) {
		json_object_set_new(payload, "rescore", json_true());
		json_object_set_new(payload, "score_of_record", json_integer((json_int_t) first_seq));
	}
	/* 6. the record */
	rc = ledger_append(l, "score", payload, NULL, e);
	if (rc)
		goto out;
	*out = payload;
	payload = NULL;
out:
	json_decref(payload);
	json_decref(table);
	json_decref(pending);
	json_decref(missing);
	json_decref(differ);
	json_decref(per);
	json_decref(runs_seen);
	json_decref(targets);
	free(rows);
	holdout_log_free(&v);
	return rc;
}

int holdout_score_exit(const json_t *score)
{
	if (!score)
		return CS_EXIT_OK;
	if (json_is_true(json_object_get(score, "interim")))
		return CS_EXIT_UNFINISHED;
	return json_is_true(json_object_get(score, "passed")) ? CS_EXIT_OK : CS_EXIT_FAILED;
}

int holdout_registered_state(ledger *l, json_t **score, json_t **state, cs_err *e)
{
	holdout_log v;
	const json_t *rec = NULL;
	json_t *targets = NULL, *missing = json_array(), *key, *st = NULL;
	size_t i, interim = 0;
	int rc;

	*score = *state = NULL;
	rc = holdout_log_load(l, &v, e);
	if (rc)
		goto out;
	score_of_record(v.scores, &rec);
	targets = ledger_plan_targets(&v.reg);
	json_array_foreach(targets, i, key) {
		size_t j;
		json_t *r;
		int ran = 0;

		json_array_foreach(v.holdout, j, r)
			ran |= !strcmp(json_string_value(json_object_get(r, "spec_sha256")) ?: "",
				       json_string_value(key));
		if (!ran)
			json_array_append_new(missing, json_string(ledger_plan_path(&v.reg, json_string_value(key))
								   ?: json_string_value(key)));
	}
	json_array_foreach(v.scores, i, key)
		interim += json_is_true(json_object_get(key, "interim"));
	st = json_pack("{s:b,s:I,s:O,s:I,s:I,s:b,s:b}", "planned", json_array_size(targets) > 0,
		       "targets", (json_int_t) json_array_size(targets), "targets_without_run", missing,
		       "predictions", (json_int_t) v.npred, "interim_scores", (json_int_t) interim,
		       "unfinished", json_array_size(targets) > 0 && !rec, "amended_after_seen",
		       holdout_amended_after_seen(&v));
	if (!st) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	if (rec && holdout_amended_after_seen(&v))
		json_object_set_new(
			st, "amended",
			amended_rule(&v, json_number_value(json_object_get(rec, "mdape")),
				     (size_t) json_integer_value(json_object_get(rec, "inside")),
				     (size_t) json_integer_value(json_object_get(rec, "n")),
				     (size_t) (json_integer_value(json_object_get(rec, "n")) +
					       json_integer_value(json_object_get(rec, "rows_dependent"))),
				     json_number_value(json_object_get(rec, "threshold"))));
	*state = st;
	st = NULL;
	if (rec)
		*score = json_incref((json_t *) rec);
out:
	json_decref(st);
	json_decref(targets);
	json_decref(missing);
	holdout_log_free(&v);
	return rc;
}

int holdout_state_exit(const json_t *score, const json_t *state)
{
	if (score)
		return holdout_score_exit(score);
	return json_is_true(json_object_get(state, "unfinished")) ? CS_EXIT_UNFINISHED : CS_EXIT_OK;
}

int holdout_registered_test(ledger *l, json_t **score, cs_err *e)
{
	holdout_log v;
	const json_t *rec = NULL;
	int rc;

	*score = NULL;
	rc = holdout_log_load(l, &v, e);
	if (!rc && score_of_record(v.scores, &rec))
		*score = json_incref((json_t *) rec);
	holdout_log_free(&v);
	return rc;
}
