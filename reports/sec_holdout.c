/*
 * sec_holdout.c - predictions, when they were frozen, and the score.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rpt_sec_holdout(doc *d, const model *m)
{
	json_t *t, *r, *rec, *first_hold = NULL;
	const json_t *score;
	size_t i, np = json_array_size(m->predictions);
	char a[REPORT_NUM_MAX], b[REPORT_NUM_MAX];

	rpt_h(d, 2, "The holdout");
	json_array_foreach(m->run_starts, i,
	                   rec) if (json_is_true(json_object_get(rpt_pl(rec), "holdout")))
	{
		first_hold = rec;
		break;
	}
	if (!np) {
		rpt_p(d, "No prediction is on record.%s",
		      first_hold ? " A holdout run started without predictions." : "");
	} else {
		const json_t *p0 = json_array_get(m->predictions, 0),
		             *pl_ = json_array_get(m->predictions, np - 1);

		if (first_hold)
			rpt_p(d,
			      "%zu predictions (value and 95%% band) were written from %s to %s "
			      "(seq %lld "
			      "to %lld); the first holdout run started at %s (seq %lld), %s.",
			      np, rpt_str(p0, "ts"), rpt_str(pl_, "ts"),
			      (long long) json_integer_value(json_object_get(p0, "seq")),
			      (long long) json_integer_value(json_object_get(pl_, "seq")),
			      rpt_str(first_hold, "ts"),
			      (long long) json_integer_value(json_object_get(first_hold, "seq")),
			      json_integer_value(json_object_get(first_hold, "seq")) >
			              json_integer_value(json_object_get(pl_, "seq"))
			          ? "after the last prediction: the predictions were frozen before "
			            "any "
			            "holdout result existed"
			          : "BEFORE the last prediction: some predictions postdate a "
			            "holdout run");
		else
			rpt_p(
			    d,
			    "%zu predictions (value and 95%% band) were written from %s to %s; no "
			    "holdout run has started, so they are not yet frozen.",
			    np, rpt_str(p0, "ts"), rpt_str(pl_, "ts"));
		rpt_fold_open(d, "The predictions as written (model, fitted runs)");
		t = rpt_table(d, "Predictions.", "ID", "Seq", "Run spec", "Metric", "Predicted",
		              "95% band", "Model", "Fitted on (runs)", NULL);
		json_array_foreach(m->predictions, i, rec)
		{
			const json_t *p = rpt_pl(rec), *band = json_object_get(p, "band95");
			char bt[2 * REPORT_NUM_MAX + 8];

			r = rpt_row(t);
			rpt_cell_s(r, rpt_str(p, "id"));
			rpt_cell_j(r, json_object_get(rec, "seq"));
			rpt_cell_s(r, rpt_str(json_object_get(p, "target"), "run_spec"));
			rpt_cell_s(r, rpt_str(json_object_get(p, "target"), "metric"));
			rpt_cell_j(r, json_object_get(p, "value"));
			snprintf(bt, sizeof(bt), "%s to %s",
			         report_fmt_json(json_array_get(band, 0), a),
			         report_fmt_json(json_array_get(band, 1), b));
			rpt_cell_s(r, bt);
			rpt_cell_s(r, rpt_str(json_object_get(p, "model"), "name"));
			rpt_cell_i(r, (int64_t) json_array_size(json_object_get(p, "fitted_on")));
		}
		rpt_fold_close(d);
	}
	if (!json_array_size(m->scores)) {
		rpt_p(d, "No score is on record.");
		return;
	}
	score = rpt_score_of_record(m);
	if (!score) /* only interim scores: show the latest, labelled so */
		score = json_array_get(m->scores, json_array_size(m->scores) - 1);
	{
		const json_t *s = rpt_pl(score), *per = json_object_get(s, "per_metric"), *pm;
		const char *mk;
		char f[9][REPORT_NUM_MAX];

		rpt_p(
		    d,
		    "%s (seq %lld, %s): median relative error %s against the threshold %s (%s): "
		    "%s. %s of %s predictions inside their bands (level %s); two-sided binomial "
		    "p = %s over the rows, %s over the %s independent holdout runs behind them%s. "
		    "Mean relative interval score (interval score / observed) %s.",
		    json_is_true(json_object_get(s, "interim")) ? "An INTERIM score, not the result"
		                                                : "The score of record",
		    (long long) json_integer_value(json_object_get(score, "seq")),
		    rpt_str(score, "ts"), report_fmt_json(json_object_get(s, "mdape"), f[0]),
		    report_fmt_json(json_object_get(s, "threshold"), f[1]),
		    rpt_str(s, "threshold_source") ?: "unstated",
		    json_is_true(json_object_get(s, "passed")) ? "PASS" : "FAIL",
		    report_fmt_json(json_object_get(s, "inside"), f[2]),
		    report_fmt_json(json_object_get(s, "n"), f[3]),
		    report_fmt_json(json_object_get(s, "band_level"), f[4]),
		    report_fmt_json(json_object_get(s, "coverage_p_two_sided"), f[5]),
		    report_fmt_json(json_object_get(s, "coverage_p_two_sided_runs"), f[6]),
		    report_fmt_json(json_object_get(s, "independent_runs"), f[7]),
		    json_is_true(json_object_get(s, "calibration_rejected"))
		        ? " (calibration rejected at 0.05)"
		        : "",
		    report_fmt_json(json_object_get(s, "mean_relative_interval_score"), f[8]));
		if (json_object_size(per)) {
			t = rpt_table(d,
			              "The score per metric (interval scores in the metric's "
			              "own unit, and relative to the observed value).",
			              "Metric", "Rows", "Inside", "MdAPE", "Mean interval score",
			              "Mean relative interval score", "Two-sided p", NULL);
			json_object_foreach((json_t *) per, mk, pm)
			{
				r = rpt_row(t);
				rpt_cell_s(r, mk);
				rpt_cell_j(r, json_object_get(pm, "n"));
				rpt_cell_j(r, json_object_get(pm, "inside"));
				rpt_cell_j(r, json_object_get(pm, "mdape"));
				rpt_cell_j(r, json_object_get(pm, "mean_interval_score"));
				rpt_cell_j(r, json_object_get(pm, "mean_relative_interval_score"));
				rpt_cell_j(r, json_object_get(pm, "coverage_p_two_sided"));
			}
		}
		t = rpt_table(d, "The score, row by row.", "Prediction", "Metric", "Unit",
		              "Predicted", "95% band", "Observed", "Relative error", "Inside",
		              "Interval score", "Runs", "Measured by", NULL);
		json_array_foreach(json_object_get(s, "rows"), i, rec)
		{
			char bt[2 * REPORT_NUM_MAX + 8];

			r = rpt_row(t);
			rpt_cell_s(r, rpt_str(rec, "prediction"));
			rpt_cell_s(r, rpt_str(rec, "metric"));
			rpt_cell_s(r, report_metric_unit(rpt_str(rec, "metric") ?: ""));
			rpt_cell_j(r, json_object_get(rec, "predicted"));
			snprintf(bt, sizeof(bt), "%s to %s",
			         report_fmt_json(json_object_get(rec, "lo"), a),
			         report_fmt_json(json_object_get(rec, "hi"), b));
			rpt_cell_s(r, bt);
			rpt_cell_j(r, json_object_get(rec, "observed"));
			rpt_cell_j(r, json_object_get(rec, "relative_error"));
			rpt_cell_j(r, json_object_get(rec, "inside"));
			rpt_cell_j(r, json_object_get(rec, "interval_score"));
			rpt_cell_j(r, json_object_get(rec, "runs"));
			{
				const json_t *ids = json_object_get(rec, "runs"), *id;
				char tw[RPT_TIME_WORDS_MAX];
				size_t q;
				int bits = 0;

				if (json_is_string(ids)) {
					const json_t *run = rpt_run_by_id(m, json_string_value(ids));

					bits = run ? rpt_time_basis(run) : 0;
				}
				json_array_foreach(ids, q, id)
				{
					const json_t *run = rpt_run_by_id(m, json_string_value(id));

					if (run)
						bits |= rpt_time_basis(run);
				}
				rpt_cell_s(r, rpt_time_words(bits, tw));
			}
		}
		if (json_array_size(json_object_get(s, "pending")))
			rpt_p(d, "%zu predictions had no holdout run when scored.",
			      json_array_size(json_object_get(s, "pending")));
		if (json_array_size(m->scores) > 1)
			rpt_p(d,
			      "%zu other scores are on record (interim scores and re-scores); the "
			      "score of record is shown.",
			      json_array_size(m->scores) - 1);
		rpt_plot_holdout(d, score);
	}
}
