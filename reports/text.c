/*
 * text.c - the tables the cli prints for a person: the hypotheses,
 * predictions, a holdout score, the verdicts, the plan's power, each from the JSON its part records (docs/records.md),
 * so the terminal and the report read the same numbers.
 */
#include "report.h"

#include <stdlib.h>
#include <string.h>

/* A number as the canonical form prints it. */
static void num_text(const json_t *v, char *buf, size_t cap)
{
	char *c = NULL, n[CS_NUM_MAX];

	if (json_is_number(v)) {
		/* Readable and exact: 200 as "200", never the canonical form's "2e+02". */
		snprintf(buf, cap, "%s", cs_num_text(json_number_value(v), n));
	} else if (v && !cs_json_canonical(v, &c, NULL, NULL)) {
		snprintf(buf, cap, "%s", c);
		free(c);
	} else {
		snprintf(buf, cap, "-");
	}
}

void report_hypotheses_text(const json_t *list, FILE *out)
{
	size_t i;
	json_t *s;

	fprintf(out, "%-5s %-12s %-20s %12s %-23s %-12s %-27s %s\n", "ID", "KIND", "METRIC",
		"PREDICTION", "BAND95", "SHA256", "REGISTERED (UTC)", "VERSIONS");
	json_array_foreach(list, i, s) {
		json_t *band = json_object_get(s, "band95");
		char v[32], lo[32], hi[32], bandtxt[80];

		num_text(json_object_get(s, "prediction"), v, sizeof(v));
		num_text(json_array_get(band, 0), lo, sizeof(lo));
		num_text(json_array_get(band, 1), hi, sizeof(hi));
		snprintf(bandtxt, sizeof(bandtxt), "[%s, %s]", lo, hi);
		fprintf(out, "%-5s %-12s %-20s %12s %-23s %-12.12s %-27s %lld\n",
			json_string_value(json_object_get(s, "id")),
			json_string_value(json_object_get(s, "kind")) ?: "-",
			json_string_value(json_object_get(s, "metric")) ?: "-", v, bandtxt,
			json_string_value(json_object_get(s, "sha256")) ?: "-",
			json_string_value(json_object_get(s, "ts")),
			(long long) json_integer_value(json_object_get(s, "versions")));
	}
	if (json_array_size(list) == 0)
		fprintf(out, "(no hypotheses registered)\n");
}

void report_predictions_text(const json_t *preds, FILE *out)
{
	size_t i;
	json_t *p;

	json_array_foreach(preds, i, p) {
		const json_t *t = json_object_get(p, "target");

		fprintf(out, "%-5s %-28s %-20s %12.6g  [%.6g, %.6g]  %s\n",
			json_string_value(json_object_get(p, "id")),
			json_string_value(json_object_get(t, "run_spec")),
			json_string_value(json_object_get(t, "metric")),
			json_number_value(json_object_get(p, "value")),
			json_number_value(json_array_get(json_object_get(p, "band95"), 0)),
			json_number_value(json_array_get(json_object_get(p, "band95"), 1)),
			json_string_value(json_object_get(json_object_get(p, "model"), "name")));
	}
}

void report_score_text(const json_t *s, FILE *out)
{
	json_t *row, *per, *m;
	const char *k;
	size_t i;

	if (json_is_true(json_object_get(s, "interim")))
		fprintf(out, "INTERIM score (targets without a run: %zu); recorded as interim, never the "
		        "result\n",
		        json_array_size(json_object_get(s, "targets_without_run")));
	else if (json_is_true(json_object_get(s, "rescore")))
		fprintf(out, "RE-SCORE: the score of record is seq %lld\n",
		        (long long) json_integer_value(json_object_get(s, "score_of_record")));
	fprintf(out, "%-5s %-20s %12s %12s %12s %12s %8s %8s %s\n", "pred", "metric", "predicted", "lo",
	        "hi", "observed", "rel.err", "rel.IS", "in band");
	json_array_foreach(json_object_get(s, "rows"), i, row)
		fprintf(out, "%-5s %-20s %12.6g %12.6g %12.6g %12.6g %8.3f %8.3f %s\n",
		        json_string_value(json_object_get(row, "prediction")),
		        json_string_value(json_object_get(row, "metric")),
		        json_number_value(json_object_get(row, "predicted")),
		        json_number_value(json_object_get(row, "lo")),
		        json_number_value(json_object_get(row, "hi")),
		        json_number_value(json_object_get(row, "observed")),
		        json_number_value(json_object_get(row, "relative_error")),
		        json_number_value(json_object_get(row, "relative_interval_score")),
		        json_is_true(json_object_get(row, "inside")) ? "yes" : "NO");
	fprintf(out, "median relative error (MdAPE/100) %.3f against the threshold %.3f (%s): %s\n",
	        json_number_value(json_object_get(s, "mdape")),
	        json_number_value(json_object_get(s, "threshold")),
	        json_string_value(json_object_get(s, "threshold_source")),
	        json_is_true(json_object_get(s, "passed_mdape")) ? "met" : "missed");
	if (json_is_integer(json_object_get(s, "min_inside")))
		fprintf(out, "inside their bands: %lld of %lld rows scored once; the plan asks for at least "
		        "%lld of %lld rows, %lld of these: %s\n",
		        (long long) json_integer_value(json_object_get(s, "inside")),
		        (long long) json_integer_value(json_object_get(s, "n")),
		        (long long) json_integer_value(json_object_get(s, "min_inside")),
		        (long long) (json_integer_value(json_object_get(s, "n")) +
				     json_integer_value(json_object_get(s, "rows_dependent"))),
		        (long long) json_integer_value(json_object_get(s, "min_inside_scored")),
		        json_is_true(json_object_get(s, "passed_inside")) ? "met" : "missed");
	fprintf(out, "the registered test: %s%s\n", json_is_true(json_object_get(s, "passed")) ? "PASS" : "FAIL",
	        json_is_true(json_object_get(s, "interim")) ? " (interim: UNFINISHED, exit 7)" : "");
	if (json_is_object(json_object_get(s, "amended"))) {
		const json_t *am = json_object_get(s, "amended");

		fprintf(out, "amended after the holdout was seen (study record seq %lld, holdout seen at "
		        "seq %lld): against %.3f it would %s; the score of record keeps the "
		        "registered rule\n",
		        (long long) json_integer_value(json_object_get(am, "study_seq")),
		        (long long) json_integer_value(json_object_get(am, "holdout_seen_seq")),
		        json_number_value(json_object_get(am, "threshold")),
		        json_is_true(json_object_get(am, "passed")) ? "PASS" : "FAIL");
	}
	fprintf(out, "%lld of %lld inside their %g%% bands; two-sided binomial p = %.3f over the rows, "
	        "%.3f over the %lld independent holdout runs behind them%s\n",
	        (long long) json_integer_value(json_object_get(s, "inside")),
	        (long long) json_integer_value(json_object_get(s, "n")),
	        100 * json_number_value(json_object_get(s, "band_level")),
	        json_number_value(json_object_get(s, "coverage_p_two_sided")),
	        json_number_value(json_object_get(s, "coverage_p_two_sided_runs")),
	        (long long) json_integer_value(json_object_get(s, "independent_runs")),
	        json_is_true(json_object_get(s, "calibration_rejected"))
		        ? " (calibration rejected at 0.05)"
		        : "");
	fprintf(out, "mean relative interval score %.4g (interval score / observed, all rows)\n",
	        json_number_value(json_object_get(s, "mean_relative_interval_score")));
	if (json_integer_value(json_object_get(s, "rows_dependent")))
		fprintf(out, "%lld rows are functions of another row of the same run (a multiple or a "
		        "reciprocal of it): shown, scored once\n",
		        (long long) json_integer_value(json_object_get(s, "rows_dependent")));
	per = json_object_get(s, "per_metric");
	json_object_foreach(per, k, m) {
		const json_t *c = json_object_get(m, "calibration");

		fprintf(out, "  %-20s n %lld, inside %lld, MdAPE %.3f, mean interval score %.6g, relative "
		        "%.4g\n",
		        k, (long long) json_integer_value(json_object_get(m, "n")),
		        (long long) json_integer_value(json_object_get(m, "inside")),
		        json_number_value(json_object_get(m, "mdape")),
		        json_number_value(json_object_get(m, "mean_interval_score")),
		        json_number_value(json_object_get(m, "mean_relative_interval_score")));
		if (json_is_number(json_object_get(c, "z_rms")))
			fprintf(out, "  %-20s calibration: standardised errors RMS %.3f (1 when calibrated), "
			        "chi-square p %.3g too wide, %.3g too narrow: %s\n",
			        "", json_number_value(json_object_get(c, "z_rms")),
			        json_number_value(json_object_get(c, "p_too_wide")),
			        json_number_value(json_object_get(c, "p_too_narrow")),
			        json_string_value(json_object_get(c, "verdict")));
		else if (c)
			fprintf(out, "  %-20s calibration: %s\n", "",
			        json_string_value(json_object_get(c, "verdict")));
	}
	json_array_foreach(json_object_get(s, "targets_seen_before_predictions"), i, row)
		fprintf(out, "target %s SEEN before the predictions: run %s read %s\n",
		        json_string_value(json_object_get(row, "target")),
		        json_string_value(json_object_get(row, "run_id")),
		        json_string_value(json_object_get(row, "why")));
	if (json_array_size(json_object_get(s, "pending")))
		fprintf(out, "%zu predictions have no holdout run yet\n",
		        json_array_size(json_object_get(s, "pending")));
	if (json_array_size(json_object_get(s, "repeated_runs")))
		fprintf(out, "%zu repeated holdout runs not counted (deviations)\n",
		        json_array_size(json_object_get(s, "repeated_runs")));
	if (json_array_size(json_object_get(s, "deviations")))
		fprintf(out, "%zu deviations on record (see the score record)\n",
		        json_array_size(json_object_get(s, "deviations")));
}

/* An interval decision's line under its verdict: estimate, interval, n, threshold, result. */
static void print_interval(const json_t *iv, int underpowered, FILE *out)
{
	const json_t *ci = json_object_get(iv, "interval");
	char n[48];

	if (underpowered)
		fprintf(out, "      registered underpowered (underpowered_rationale in its file)\n");
	if (!iv)
		return;
	if (json_object_get(iv, "n_over"))
		snprintf(n, sizeof(n), "n %lld / %lld",
			 (long long) json_integer_value(json_object_get(iv, "n_select")),
			 (long long) json_integer_value(json_object_get(iv, "n_over")));
	else
		snprintf(n, sizeof(n), "n %lld",
			 (long long) json_integer_value(json_object_get(iv, "n_select")));
	if (json_is_array(ci))
		fprintf(out, "      interval: %s %s %.4g [%.4g, %.4g] (%s, %g%%, %s) against %s %g: %s\n",
		        json_string_value(json_object_get(iv, "metric")),
		        json_object_get(iv, "n_over") ? "ratio" : "geometric mean",
		        json_number_value(json_object_get(iv, "estimate")),
		        json_number_value(json_array_get(ci, 0)),
		        json_number_value(json_array_get(ci, 1)),
		        json_string_value(json_object_get(iv, "method")),
		        100 * json_number_value(json_object_get(iv, "level")), n,
		        json_string_value(json_object_get(iv, "op")),
		        json_number_value(json_object_get(iv, "threshold")),
		        json_string_value(json_object_get(iv, "result")));
	else
		fprintf(out, "      interval: none (%s; %s): unresolved\n",
		        json_string_value(json_object_get(iv, "why")) ?: "?", n);
}

/*
 * Print one group of verdicts (class cls; provisional: 1 only those, 0 all
 * but those, -1 any; model: 1 only model checks, 0 only findings, -1 any).
 */
static size_t print_group(const json_t *all, const char *cls, int provisional, int model,
			  const char *title, FILE *out)
{
	size_t i, n = 0;
	json_t *v;

	json_array_foreach(all, i, v) {
		const char *c = json_string_value(json_object_get(v, "class")) ?: "";
		const char *x = json_string_value(json_object_get(v, "verdict")) ?: "";
		const json_t *sc = json_object_get(v, "sceptic");
		char sct[32] = "-", id[64];

		int mc = !strcmp(json_string_value(json_object_get(v, "evidence")) ?: "", "model check");

		if (strcmp(c, cls) || (provisional >= 0 && provisional != !strcmp(x, "provisional")) ||
		    (model >= 0 && model != mc))
			continue;
		if (!n++)
			fprintf(out, "%s\n%-5s %-13s %-11s %-13s %-13s %5s %-8s %s\n", title, "id", "kind",
			        "verdict", "accept", "reject", "runs", "sceptic",
			        "refutations/deviations");
		if (sc)
			snprintf(sct, sizeof(sct), "%lld/%lld",
				 (long long) json_integer_value(json_object_get(sc, "done")),
				 (long long) json_integer_value(json_object_get(sc, "planned")));
		snprintf(id, sizeof(id), "%s%s", json_string_value(json_object_get(v, "hypothesis")) ?: "?",
			 json_object_get(v, "version") ? "'" : "");
		fprintf(out, "%-5s %-13s %-11s %-13s %-13s %5zu %-8s %zu/%zu%s%s\n", id,
		        json_string_value(json_object_get(v, "kind")) ?: "", x,
		        json_string_value(json_object_get(json_object_get(v, "accept"), "result")),
		        json_string_value(json_object_get(json_object_get(v, "reject"), "result")),
		        json_array_size(json_object_get(v, "runs")), sct,
		        json_array_size(json_object_get(v, "refutations")),
		        json_array_size(json_object_get(v, "deviations")),
		        json_is_true(json_object_get(v, "post_hoc")) ? "  post hoc" : "",
		        json_object_get(v, "version") ? " (the amended version; the registered one keeps "
						        "its verdict above)"
		        : json_object_get(v, "amended_later")
			        ? "  amended later: the amended version is listed as exploratory"
			        : "");
		print_interval(json_object_get(v, "interval"),
			       json_is_true(json_object_get(v, "underpowered")), out);
		if (model == 1) {
			const json_t *cl;
			size_t j;

			json_array_foreach(json_object_get(v, "clauses"), j, cl)
				fprintf(out, "      %s: %s: %s\n",
					json_string_value(json_object_get(cl, "path")) ?: "?",
					json_string_value(json_object_get(cl, "basis")) ?: "?",
					json_string_value(json_object_get(cl, "why")) ?: "");
		}
	}
	return n;
}

/* The holdout line of `verdicts`: the score of record, an amended rule beside it, or unfinished. */
static void print_holdout_state(const json_t *test, const json_t *state, FILE *out)
{
	const json_t *am = json_object_get(test, "amended") ?: json_object_get(state, "amended");

	if (test) {
		fprintf(out, "holdout: the score of record (seq %lld) %s: median relative error "
		        "%.3f against %.3f (the rule registered before the holdout was seen)\n",
		        (long long) json_integer_value(json_object_get(test, "seq")),
		        json_is_true(json_object_get(test, "passed")) ? "PASSED" : "FAILED",
		        json_number_value(json_object_get(test, "mdape")),
		        json_number_value(json_object_get(test, "threshold")));
		if (am)
			fprintf(out, "holdout: amended after the holdout was seen (study record seq %lld): "
			        "against %.3f it would have %s; not the score of record\n",
			        (long long) json_integer_value(json_object_get(am, "study_seq")),
			        json_number_value(json_object_get(am, "threshold")),
			        json_is_true(json_object_get(am, "passed")) ? "passed" : "failed");
	} else if (json_is_true(json_object_get(state, "unfinished"))) {
		fprintf(out, "holdout: UNFINISHED: no score of record (%lld of %lld targets without a "
		        "run, %lld predictions, %lld interim scores); the registered test is not "
		        "decided (exit 7)\n",
		        (long long) json_array_size(json_object_get(state, "targets_without_run")),
		        (long long) json_integer_value(json_object_get(state, "targets")),
		        (long long) json_integer_value(json_object_get(state, "predictions")),
		        (long long) json_integer_value(json_object_get(state, "interim_scores")));
	} else {
		fprintf(out, "holdout: none registered\n");
	}
}

void report_verdicts_text(const json_t *all, const json_t *test, const json_t *state, FILE *out)
{
	if (!print_group(all, "confirmatory", 0, 0,
			 "confirmatory findings (decided by the plan's runs):", out))
		fprintf(out, "no confirmatory finding%s\n",
			json_array_size(all) ? " (no plan maps one, none registered before the first "
					       "run, or all are model checks)" : "");
	print_group(all, "confirmatory", 1, 0,
		    "provisional (accept holds; the sceptic runs are missing or none are planned):",
		    out);
	print_group(all, "confirmatory", -1, 1,
		    "model checks (every comparison of the rules decided by the device model's "
		    "parameters alone; never counted as confirmatory evidence):", out);
	print_group(all, "exploratory", -1, -1,
		    "exploratory (kind exploratory or descriptive, post hoc, or no plan; never "
		    "confirmatory):", out);
	{
		size_t i, nf = 0, nm = 0;
		json_t *v;

		json_array_foreach(all, i, v) {
			if (strcmp(json_string_value(json_object_get(v, "class")) ?: "", "confirmatory"))
				continue;
			if (!strcmp(json_string_value(json_object_get(v, "evidence")) ?: "",
				    "model check"))
				nm++;
			else
				nf++;
		}
		fprintf(out, "confirmatory: %zu findings, %zu model checks\n", nf, nm);
	}
	print_holdout_state(test, state, out);
}

void report_power_text(const json_t *res, FILE *out)
{
	size_t i;
	json_t *r;

	if (!json_array_size(res))
		fprintf(out, "no hypothesis is decided by an interval: nothing to plan\n");
	else
		fprintf(out, "%-7s %-8s %9s %9s %8s %6s %7s %9s  %s\n", "id", "class", "effect",
		        "threshold", "sd_log", "runs", "power", "for 0.9", "status");
	json_array_foreach(res, i, r) {
		const json_t *d = json_object_get(r, "detail");
		char need[16] = "-", pw[16] = "-", sd[16] = "-";

		if (json_is_integer(json_object_get(d, "replicates_for_power_0.9")))
			snprintf(need, sizeof(need), "%lld",
				 (long long) json_integer_value(json_object_get(d, "replicates_for_power_0.9")));
		if (json_is_number(json_object_get(d, "power")))
			snprintf(pw, sizeof(pw), "%.3f", json_number_value(json_object_get(d, "power")));
		if (json_is_number(json_object_get(d, "sd_log")))
			snprintf(sd, sizeof(sd), "%.3g%s", json_number_value(json_object_get(d, "sd_log")),
				 json_object_get(d, "sd_log_pilot") ? "p" : "");
		fprintf(out, "%-7s %-8s %9.4g %9.4g %8s %6lld %7s %9s  %s%s\n",
		        json_string_value(json_object_get(r, "hypothesis")),
		        json_object_get(d, "not_binding") ? "explor." : "confirm.",
		        json_number_value(json_object_get(d, "effect")),
		        json_number_value(json_object_get(d, "threshold")), sd,
		        (long long) json_integer_value(json_object_get(d, "replicates")), pw, need,
		        json_is_true(json_object_get(r, "passed")) ? "ok" : "BELOW 0.8",
		        json_object_get(d, "underpowered") ? " (registered underpowered)" : "");
		if (json_object_get(d, "why"))
			fprintf(out, "        %s\n", json_string_value(json_object_get(d, "why")));
	}
	if (json_array_size(res))
		fprintf(out, "(sd_log: p = from the pilot runs, else registered; runs: a side, as the plan "
		        "registers them)\n");
}

/* "estimate [lo, hi] n N" of an interval decision; buf keeps "-" without an interval. */
static void interval_brief(const json_t *x, char *buf, size_t cap)
{
	const json_t *ci = json_object_get(x, "interval");

	if (json_is_array(ci))
		snprintf(buf, cap, "%.4g [%.4g, %.4g] n %lld",
			 json_number_value(json_object_get(x, "estimate")),
			 json_number_value(json_array_get(ci, 0)), json_number_value(json_array_get(ci, 1)),
			 (long long) json_integer_value(json_object_get(x, "n_select")));
}

void report_compare_text(const json_t *rows, int disagree, FILE *out)
{
	size_t i;
	json_t *r;

	fprintf(out, "%-7s %-13s %-12s %-12s %-5s  %s\n", "id", "class", "in S", "in S2", "agree",
	        "interval in S | in S2");
	json_array_foreach(rows, i, r) {
		char ia[96] = "-", ib[96] = "-";
		const json_t *x = json_object_get(r, "interval_a"), *y = json_object_get(r, "interval_b");

		interval_brief(x, ia, sizeof(ia));
		interval_brief(y, ib, sizeof(ib));
		fprintf(out, "%-7s %-13s %-12s %-12s %-5s  %s | %s\n",
		        json_string_value(json_object_get(r, "hypothesis")),
		        json_string_value(json_object_get(r, "class")),
		        json_string_value(json_object_get(r, "verdict_a")),
		        json_string_value(json_object_get(r, "verdict_b")) ?: "(absent)",
		        json_is_true(json_object_get(r, "agree")) ? "yes" : "NO", ia, ib);
	}
	fprintf(out, "%s\n", disagree ? "a confirmatory verdict differs: the finding did not replicate"
				      : "every confirmatory verdict agrees");
}
