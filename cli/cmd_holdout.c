/*
 * cmd_holdout.c - verbs of the holdout and the verdicts: holdout
 * predict|score|show, refute, verdicts, deviate. Parsing and printing
 * only: the order of a study (predictions before the first holdout run,
 * scores by the registered rule) is holdout/order.c's, refusals are
 * guards/', references are checked by ledger/plan.c.
 */
#include "cmds.h"

#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "harness.h"
#include "holdout.h"
#include "ledger.h"
#include "report.h"

#define TARGETS_CAP (1u << 20)

/* ---- holdout predict ---- */

/* One target spec: its hash and the features the run will record (the study's defaults filled in). */
static int target_load(ledger *l, const char *path, holdout_target *t, json_t **spec,
		       json_t **feat, cs_err *e)
{
	json_t *eff = NULL;
	int rc;

	*spec = *feat = NULL;
	rc = harness_run_load(path, spec, t->sha, e);
	if (!rc)
		rc = harness_run_effective_study(l, *spec, &eff, e);
	if (!rc)
		rc = harness_spec_features(eff, feat, e);
	json_decref(eff);
	t->features = *feat;
	return rc;
}

/*
 * The targets: from the targets file (paths relative to its folder), or,
 * without one, the plan's holdout targets (paths relative to where the
 * plan was registered) and metrics.
 */
static int predict(const char *dir, const char *targets_path, const char *model)
{
	ledger *l = NULL;
	ledger_plan plan = {0};
	json_t *targets = NULL, *list, *made = NULL, *keep = json_array(), *pm = NULL, *it;
	holdout_target *t = NULL;
	cs_err e = {0};
	const char *base = ".";
	char tbase[4096];
	size_t i, n = 0;
	int rc;

	rc = ledger_open(dir, &l, &e);
	if (!rc)
		rc = ledger_plan_load(l, 0, &plan, &e);
	if (rc)
		goto out;
	if (targets_path) {
		char tmp[4096];

		rc = cs_json_load_file(targets_path, TARGETS_CAP, &targets, &e);
		if (rc)
			goto out;
		list = json_object_get(targets, "targets");
		if (!json_is_array(list) || json_array_size(list) == 0) {
			rc = cs_err_set(&e, CS_EXIT_BADINPUT, "%s: $.targets: expected a non-empty array",
					targets_path);
			goto out;
		}
		snprintf(tmp, sizeof(tmp), "%s", targets_path);
		snprintf(tbase, sizeof(tbase), "%s", dirname(tmp));
		base = tbase;
	} else {
		const json_t *h = json_object_get(plan.plan, "holdout");

		if (!h) {
			rc = cs_err_set(&e, CS_EXIT_USAGE,
					"no plan registers holdout targets: give --targets FILE");
			goto out;
		}
		base = json_string_value(json_object_get(plan.rec, "plan_base")) ?: ".";
		pm = json_object_get(h, "metrics");
		list = json_array();
		json_array_foreach(json_object_get(h, "targets"), i, it)
			json_array_append_new(list, json_pack("{s:O,s:O}", "run", it, "metrics", pm));
		targets = json_pack("{s:o}", "targets", list);
		targets_path = "the plan";
	}
	t = calloc(json_array_size(list) + 1, sizeof(*t));
	if (!t || !keep) {
		rc = cs_err_set(&e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	json_array_foreach(list, i, it) {
		const char *run = json_string_value(json_object_get(it, "run"));
		json_t *metrics = json_object_get(it, "metrics"), *spec = NULL, *feat = NULL;
		char path[4096];

		if (!run || !json_is_array(metrics) || !json_array_size(metrics)) {
			rc = cs_err_set(&e, CS_EXIT_BADINPUT,
					"%s: $.targets[%zu]: expected {\"run\": PATH, \"metrics\": [...]}",
					targets_path, i);
			break;
		}
		if ((size_t) snprintf(path, sizeof(path), "%s%s%s", run[0] == '/' ? "" : base,
				      run[0] == '/' ? "" : "/", run) >= sizeof(path)) {
			rc = cs_err_set(&e, CS_EXIT_BADINPUT, "%s: $.targets[%zu].run: path too long",
					targets_path, i);
			break;
		}
		t[n].path = run;
		t[n].metrics = metrics;
		t[n].model = json_string_value(json_object_get(it, "model")) ?: model;
		rc = target_load(l, path, &t[n], &spec, &feat, &e);
		json_array_append_new(keep, spec ? spec : json_null());
		json_array_append_new(keep, feat ? feat : json_null());
		if (rc)
			break;
		n++;
	}
	if (!rc)
		rc = holdout_predict_record(l, t, n, targets_path, &made, &e);
	if (rc)
		goto out;
	json_array_foreach(made, i, it) {
		const json_t *tg = json_object_get(it, "target");

		printf("%-5s %-28s %-20s %12.6g  [%.6g, %.6g]  %s\n",
		       json_string_value(json_object_get(it, "id")),
		       json_string_value(json_object_get(tg, "run_spec")),
		       json_string_value(json_object_get(tg, "metric")),
		       json_number_value(json_object_get(it, "value")),
		       json_number_value(json_array_get(json_object_get(it, "band95"), 0)),
		       json_number_value(json_array_get(json_object_get(it, "band95"), 1)),
		       json_string_value(json_object_get(json_object_get(it, "model"), "name")));
	}
	fprintf(stderr, "%zu predictions recorded; frozen at the first holdout run\n",
		json_array_size(made));
out:
	free(t);
	json_decref(made);
	json_decref(keep);
	json_decref(targets);
	ledger_plan_free(&plan);
	ledger_close(l);
	return rc ? cli_fail("holdout", &e) : 0;
}

/* ---- holdout score ---- */

static int score(const char *dir, const holdout_score_opts *o, int as_json)
{
	ledger *l = NULL;
	json_t *s = NULL, *row, *per, *m;
	cs_err e = {0};
	const char *k;
	size_t i;
	int rc;

	rc = ledger_open(dir, &l, &e);
	if (!rc)
		rc = holdout_score_record(l, o, &s, &e);
	ledger_close(l);
	if (rc)
		return cli_fail("holdout", &e);
	if (as_json) {
		char *txt = json_dumps(s, JSON_INDENT(2) | JSON_SORT_KEYS);

		printf("%s\n", txt);
		free(txt);
		rc = holdout_score_exit(s);
		json_decref(s);
		return rc;
	}
	if (json_is_true(json_object_get(s, "interim")))
		printf("INTERIM score (targets without a run: %zu); recorded as interim, never the "
		       "result\n",
		       json_array_size(json_object_get(s, "targets_without_run")));
	else if (json_is_true(json_object_get(s, "rescore")))
		printf("RE-SCORE: the score of record is seq %lld\n",
		       (long long) json_integer_value(json_object_get(s, "score_of_record")));
	printf("%-5s %-20s %12s %12s %12s %12s %8s %8s %s\n", "pred", "metric", "predicted", "lo",
	       "hi", "observed", "rel.err", "rel.IS", "in band");
	json_array_foreach(json_object_get(s, "rows"), i, row)
		printf("%-5s %-20s %12.6g %12.6g %12.6g %12.6g %8.3f %8.3f %s\n",
		       json_string_value(json_object_get(row, "prediction")),
		       json_string_value(json_object_get(row, "metric")),
		       json_number_value(json_object_get(row, "predicted")),
		       json_number_value(json_object_get(row, "lo")),
		       json_number_value(json_object_get(row, "hi")),
		       json_number_value(json_object_get(row, "observed")),
		       json_number_value(json_object_get(row, "relative_error")),
		       json_number_value(json_object_get(row, "relative_interval_score")),
		       json_is_true(json_object_get(row, "inside")) ? "yes" : "NO");
	printf("median relative error (MdAPE/100) %.3f against the threshold %.3f (%s): %s\n",
	       json_number_value(json_object_get(s, "mdape")),
	       json_number_value(json_object_get(s, "threshold")),
	       json_string_value(json_object_get(s, "threshold_source")),
	       json_is_true(json_object_get(s, "passed_mdape")) ? "met" : "missed");
	if (json_is_integer(json_object_get(s, "min_inside")))
		printf("inside their bands: %lld of %lld rows scored once; the plan asks for at least "
		       "%lld of %lld rows, %lld of these: %s\n",
		       (long long) json_integer_value(json_object_get(s, "inside")),
		       (long long) json_integer_value(json_object_get(s, "n")),
		       (long long) json_integer_value(json_object_get(s, "min_inside")),
		       (long long) (json_integer_value(json_object_get(s, "n")) +
				    json_integer_value(json_object_get(s, "rows_dependent"))),
		       (long long) json_integer_value(json_object_get(s, "min_inside_scored")),
		       json_is_true(json_object_get(s, "passed_inside")) ? "met" : "missed");
	printf("the registered test: %s%s\n", json_is_true(json_object_get(s, "passed")) ? "PASS" : "FAIL",
	       json_is_true(json_object_get(s, "interim")) ? " (interim: UNFINISHED, exit 7)" : "");
	if (json_is_object(json_object_get(s, "amended"))) {
		const json_t *am = json_object_get(s, "amended");

		printf("amended after the holdout was seen (study record seq %lld, holdout seen at "
		       "seq %lld): against %.3f it would %s; the score of record keeps the "
		       "registered rule\n",
		       (long long) json_integer_value(json_object_get(am, "study_seq")),
		       (long long) json_integer_value(json_object_get(am, "holdout_seen_seq")),
		       json_number_value(json_object_get(am, "threshold")),
		       json_is_true(json_object_get(am, "passed")) ? "PASS" : "FAIL");
	}
	printf("%lld of %lld inside their %g%% bands; two-sided binomial p = %.3f over the rows, "
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
	printf("mean relative interval score %.4g (interval score / observed, all rows)\n",
	       json_number_value(json_object_get(s, "mean_relative_interval_score")));
	if (json_integer_value(json_object_get(s, "rows_dependent")))
		printf("%lld rows are functions of another row of the same run (a multiple or a "
		       "reciprocal of it): shown, scored once\n",
		       (long long) json_integer_value(json_object_get(s, "rows_dependent")));
	per = json_object_get(s, "per_metric");
	json_object_foreach(per, k, m) {
		const json_t *c = json_object_get(m, "calibration");

		printf("  %-20s n %lld, inside %lld, MdAPE %.3f, mean interval score %.6g, relative "
		       "%.4g\n",
		       k, (long long) json_integer_value(json_object_get(m, "n")),
		       (long long) json_integer_value(json_object_get(m, "inside")),
		       json_number_value(json_object_get(m, "mdape")),
		       json_number_value(json_object_get(m, "mean_interval_score")),
		       json_number_value(json_object_get(m, "mean_relative_interval_score")));
		if (json_is_number(json_object_get(c, "z_rms")))
			printf("  %-20s calibration: standardised errors RMS %.3f (1 when calibrated), "
			       "chi-square p %.3g too wide, %.3g too narrow: %s\n",
			       "", json_number_value(json_object_get(c, "z_rms")),
			       json_number_value(json_object_get(c, "p_too_wide")),
			       json_number_value(json_object_get(c, "p_too_narrow")),
			       json_string_value(json_object_get(c, "verdict")));
		else if (c)
			printf("  %-20s calibration: %s\n", "",
			       json_string_value(json_object_get(c, "verdict")));
	}
	json_array_foreach(json_object_get(s, "targets_seen_before_predictions"), i, row)
		printf("target %s SEEN before the predictions: run %s read %s\n",
		       json_string_value(json_object_get(row, "target")),
		       json_string_value(json_object_get(row, "run_id")),
		       json_string_value(json_object_get(row, "why")));
	if (json_array_size(json_object_get(s, "pending")))
		printf("%zu predictions have no holdout run yet\n",
		       json_array_size(json_object_get(s, "pending")));
	if (json_array_size(json_object_get(s, "repeated_runs")))
		printf("%zu repeated holdout runs not counted (deviations)\n",
		       json_array_size(json_object_get(s, "repeated_runs")));
	if (json_array_size(json_object_get(s, "deviations")))
		printf("%zu deviations on record (see the score record)\n",
		       json_array_size(json_object_get(s, "deviations")));
	rc = holdout_score_exit(s);
	json_decref(s);
	return rc;
}

static int show(const char *dir, int as_json)
{
	ledger *l = NULL;
	holdout_log v;
	cs_err e = {0};
	json_t *key, *all = json_array();
	size_t i;
	int rc, loaded = 0;

	rc = ledger_open(dir, &l, &e);
	if (!rc) {
		rc = holdout_log_load(l, &v, &e);
		loaded = 1;
	}
	if (rc)
		goto out;
	json_array_foreach(v.pred_order, i, key) {
		json_t *p = json_object_get(v.predictions, json_string_value(key));
		const json_t *t = json_object_get(p, "target");

		json_array_append(all, p);
		if (!as_json)
			printf("%-5s %-28s %-20s %12.6g  [%.6g, %.6g]  %s\n",
			       json_string_value(json_object_get(p, "id")),
			       json_string_value(json_object_get(t, "run_spec")),
			       json_string_value(json_object_get(t, "metric")),
			       json_number_value(json_object_get(p, "value")),
			       json_number_value(json_array_get(json_object_get(p, "band95"), 0)),
			       json_number_value(json_array_get(json_object_get(p, "band95"), 1)),
			       json_string_value(json_object_get(json_object_get(p, "model"), "name")));
	}
	if (as_json) {
		char *txt = json_dumps(all, JSON_INDENT(2) | JSON_SORT_KEYS);

		printf("%s\n", txt);
		free(txt);
	} else {
		printf("%s\n", v.holdout_started ? "frozen: a holdout run has started"
						 : "open: no holdout run has started");
	}
out:
	json_decref(all);
	if (loaded)
		holdout_log_free(&v);
	ledger_close(l);
	return rc ? cli_fail("holdout", &e) : 0;
}

static const char holdout_usage[] =
	"usage: coldstudy holdout predict DIR [--targets FILE] [--model auto|io|loglinear]\n"
	"       coldstudy holdout score DIR [--threshold T] [--interim] [--json]\n"
	"       coldstudy holdout show DIR [--json]\n\n"
	"predict fits the models on the plan's design runs and records a prediction (value and\n"
	"band at the plan's band level) for each target run spec and metric: the plan's holdout\n"
	"targets and metrics, or those of a targets file (each must be a target of the plan):\n"
	"  {\"targets\": [{\"run\": \"runs/h1.json\", \"metrics\": [\"wall_s\", \"engine_reads\"],\n"
	"                \"model\": \"auto\"}]}\n"
	"Predictions are refused (exit 3) once the first holdout run has started, and once a\n"
	"first set is on record: the first set is frozen.\n"
	"score compares each prediction with its target's first holdout run: relative error\n"
	"|p - o| / o (MdAPE/100), inside the band, interval score per metric and relative to the\n"
	"observed value, a two-sided binomial coverage check (over the rows and over the\n"
	"independent runs behind them), each metric's calibration (chi-square of standardised\n"
	"log errors), and pass/fail by the plan's rule (threshold, minimum inside). A row that\n"
	"is a multiple or reciprocal of another row of the same run is shown and scored once\n"
	"(the minimum inside asks the same share of the rows scored once).\n"
	"--threshold other than the plan's is refused (exit 3); without a plan it sets\n"
	"the threshold (default 0.35). A score before every target has its run is refused\n"
	"(exit 3) unless --interim, which records it as interim (exit 7: unfinished). The first\n"
	"complete score is the score; later ones are re-scores. The rule is the one registered\n"
	"before the holdout was seen (the first holdout run or score): a plan amended after that\n"
	"is shown beside it, labelled, and never changes the result or the exit. The log is\n"
	"verified first (exit 4). Exit 6 when the registered test failed.\n";

int cmd_holdout(int argc, char **argv)
{
	const char *sub, *dir, *targets = NULL, *model = "auto";
	holdout_score_opts so = {0, 0.35, 0};
	int as_json = 0;

	if (cli_wants_help(argc, argv)) {
		printf(holdout_usage);
		return 0;
	}
	if (argc < 3)
		return cli_usage("holdout", "expected a subcommand and a study directory");
	sub = argv[1];
	dir = argv[2];
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			as_json = 1;
		} else if (!strcmp(argv[i], "--interim")) {
			so.interim = 1;
		} else if (!strcmp(argv[i], "--targets") && i + 1 < argc) {
			targets = argv[++i];
		} else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
			model = argv[++i];
		} else if (!strcmp(argv[i], "--threshold") && i + 1 < argc) {
			if (cli_parse_double(argv[++i], &so.threshold) || so.threshold <= 0)
				return cli_usage("holdout", "--threshold: expected a positive number");
			so.have_threshold = 1;
		} else {
			return cli_usage("holdout", "unexpected argument '%s'", argv[i]);
		}
	}
	if (!strcmp(sub, "predict")) {
		if (strcmp(model, "auto") && strcmp(model, "io") && strcmp(model, "loglinear"))
			return cli_usage("holdout", "--model: expected auto, io or loglinear");
		return predict(dir, targets, model);
	}
	if (!strcmp(sub, "score"))
		return score(dir, &so, as_json);
	if (!strcmp(sub, "show"))
		return show(dir, as_json);
	return cli_usage("holdout", "unknown subcommand '%s' (predict, score, show)", sub);
}

/* ---- refute, deviate ---- */

/* A refutation or deviation; the ledger checks what it names (exit 5, nothing written). */
static int append_text_record(const char *verb, const char *dir, const char *hyp,
			      const char *run, const char *because)
{
	ledger *l = NULL;
	cs_err e = {0};
	int64_t seq = 0;
	int rc;

	rc = ledger_open(dir, &l, &e);
	if (!rc)
		rc = !strcmp(verb, "refute") ? ledger_refute(l, hyp, because, &seq, &e)
					     : ledger_deviate(l, because, hyp, run, &seq, &e);
	if (!rc)
		printf("%s recorded as seq %lld (%s)\n", !strcmp(verb, "refute") ? "refutation" : "deviation",
		       (long long) seq, ledger_access_state(l));
	ledger_close(l);
	return rc ? cli_fail(verb, &e) : 0;
}

int cmd_refute(int argc, char **argv)
{
	const char *because = NULL;

	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy refute DIR H --because TEXT\n\n"
		       "Record the sceptic's refutation of hypothesis H: an accept rule that holds\n"
		       "then gives the verdict 'refuted' instead of 'accepted'.\n");
		return 0;
	}
	if (argc != 5 || strcmp(argv[3], "--because"))
		return cli_usage("refute", "expected DIR H --because TEXT");
	because = argv[4];
	if (!*because)
		return cli_usage("refute", "--because needs a reason");
	return append_text_record("refute", argv[1], argv[2], NULL, because);
}

int cmd_deviate(int argc, char **argv)
{
	const char *dir = NULL, *because = NULL, *hyp = NULL, *run = NULL;

	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy deviate DIR --because TEXT [--hypothesis H] [--run RUN_ID]\n\n"
		       "Record a departure from the plan, with the access state at this moment.\n"
		       "Verdicts and scores list the deviations that touch them.\n");
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--because") && i + 1 < argc)
			because = argv[++i];
		else if (!strcmp(argv[i], "--hypothesis") && i + 1 < argc)
			hyp = argv[++i];
		else if (!strcmp(argv[i], "--run") && i + 1 < argc)
			run = argv[++i];
		else if (!dir && argv[i][0] != '-')
			dir = argv[i];
		else
			return cli_usage("deviate", "unexpected argument '%s'", argv[i]);
	}
	if (!dir || !because || !*because)
		return cli_usage("deviate", "expected DIR --because TEXT");
	return append_text_record("deviate", dir, hyp, run, because);
}

/* ---- verdicts ---- */

/* An interval decision's line under its verdict: estimate, interval, n, threshold, result. */
static void print_interval(const json_t *iv, int underpowered)
{
	const json_t *ci = json_object_get(iv, "interval");
	char n[48];

	if (underpowered)
		printf("      registered underpowered (underpowered_rationale in its file)\n");
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
		printf("      interval: %s %s %.4g [%.4g, %.4g] (%s, %g%%, %s) against %s %g: %s\n",
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
		printf("      interval: none (%s; %s): unresolved\n",
		       json_string_value(json_object_get(iv, "why")) ?: "?", n);
}

/*
 * Print one group of verdicts (class cls; provisional: 1 only those, 0 all
 * but those, -1 any; model: 1 only model checks, 0 only findings, -1 any).
 */
static size_t print_group(const json_t *all, const char *cls, int provisional, int model,
			  const char *title)
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
			printf("%s\n%-5s %-13s %-11s %-13s %-13s %5s %-8s %s\n", title, "id", "kind",
			       "verdict", "accept", "reject", "runs", "sceptic",
			       "refutations/deviations");
		if (sc)
			snprintf(sct, sizeof(sct), "%lld/%lld",
				 (long long) json_integer_value(json_object_get(sc, "done")),
				 (long long) json_integer_value(json_object_get(sc, "planned")));
		snprintf(id, sizeof(id), "%s%s", json_string_value(json_object_get(v, "hypothesis")) ?: "?",
			 json_object_get(v, "version") ? "'" : "");
		printf("%-5s %-13s %-11s %-13s %-13s %5zu %-8s %zu/%zu%s%s\n", id,
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
			       json_is_true(json_object_get(v, "underpowered")));
		if (model == 1) {
			const json_t *cl;
			size_t j;

			json_array_foreach(json_object_get(v, "clauses"), j, cl)
				printf("      %s: %s: %s\n", json_string_value(json_object_get(cl, "path")) ?: "?",
				       json_string_value(json_object_get(cl, "basis")) ?: "?",
				       json_string_value(json_object_get(cl, "why")) ?: "");
		}
	}
	return n;
}

/* The holdout line of `verdicts`: the score of record, an amended rule beside it, or unfinished. */
static void print_holdout_state(const json_t *test, const json_t *state)
{
	const json_t *am = json_object_get(test, "amended") ?: json_object_get(state, "amended");

	if (test) {
		printf("holdout: the score of record (seq %lld) %s: median relative error "
		       "%.3f against %.3f (the rule registered before the holdout was seen)\n",
		       (long long) json_integer_value(json_object_get(test, "seq")),
		       json_is_true(json_object_get(test, "passed")) ? "PASSED" : "FAILED",
		       json_number_value(json_object_get(test, "mdape")),
		       json_number_value(json_object_get(test, "threshold")));
		if (am)
			printf("holdout: amended after the holdout was seen (study record seq %lld): "
			       "against %.3f it would have %s; not the score of record\n",
			       (long long) json_integer_value(json_object_get(am, "study_seq")),
			       json_number_value(json_object_get(am, "threshold")),
			       json_is_true(json_object_get(am, "passed")) ? "passed" : "failed");
	} else if (json_is_true(json_object_get(state, "unfinished"))) {
		printf("holdout: UNFINISHED: no score of record (%lld of %lld targets without a "
		       "run, %lld predictions, %lld interim scores); the registered test is not "
		       "decided (exit 7)\n",
		       (long long) json_array_size(json_object_get(state, "targets_without_run")),
		       (long long) json_integer_value(json_object_get(state, "targets")),
		       (long long) json_integer_value(json_object_get(state, "predictions")),
		       (long long) json_integer_value(json_object_get(state, "interim_scores")));
	} else {
		printf("holdout: none registered\n");
	}
}

int cmd_verdicts(int argc, char **argv)
{
	const char *dir = NULL;
	int as_json = 0, record = 1;
	uint64_t as_of = 0;
	ledger *l = NULL;
	json_t *all = NULL, *test = NULL, *state = NULL;
	cs_err e = {0};
	int rc;

	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy verdicts DIR [--json] [--as-of SEQ] [--no-record]\n\n"
		       "Evaluate each hypothesis's registered accept and reject rules on the runs the\n"
		       "plan maps to it (confirmatory) or that serve it (exploratory: kind\n"
		       "exploratory, registered or amended after the first run, or no plan):\n"
		       "rejected (reject holds), accepted (accept holds, the plan's sceptic runs done\n"
		       "and not refuting, no refutation), provisional (accept holds, sceptic runs\n"
		       "missing or none registered), refuted (a refutation record or the sceptic\n"
		       "runs), unresolved otherwise. Each changed verdict is a ledger record naming\n"
		       "its runs; --as-of SEQ recomputes from the records up to SEQ. A hypothesis\n"
		       "amended after the first run keeps its registered version's verdict in the\n"
		       "confirmatory table; the amended version (H3') is an exploratory entry.\n"
		       "Confirmatory hypotheses that validate classified as model checks (every\n"
		       "comparison of their rules decided by the device model's parameters, its\n"
		       "replay under the engine's unknown reads and CPU never moving the outcome)\n"
		       "are listed apart, each comparison with why, and never counted as evidence.\n"
		       "The log is verified first (exit 4 on an edited log or a record appended\n"
		       "without the study's key). Exit 6 when the registered holdout test (the\n"
		       "score of record, by the rule registered before the holdout was seen)\n"
		       "failed, 7 while the plan's holdout has no score of record.\n\n"
		       "A hypothesis registered with decision \"interval\" is decided by the confidence\n"
		       "interval of its effect over its runs (geometric mean or ratio of two; Welch t\n"
		       "on the logs or a percentile bootstrap): accepted when the whole interval lies\n"
		       "beyond its threshold and the accept rule holds, rejected when it lies wholly on\n"
		       "the other side or the reject rule holds, else unresolved. The estimate, the\n"
		       "interval and n on each side are printed under its row ('interval' in --json).\n");
		return 0;
	}
	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--json"))
			as_json = 1;
		else if (!strcmp(argv[k], "--no-record"))
			record = 0;
		else if (!strcmp(argv[k], "--as-of") && k + 1 < argc) {
			if (cli_parse_u64(argv[++k], &as_of) || as_of == 0)
				return cli_usage("verdicts", "--as-of: expected a record seq");
			record = 0;
		} else if (!dir && argv[k][0] != '-')
			dir = argv[k];
		else
			return cli_usage("verdicts", "unexpected argument '%s'", argv[k]);
	}
	if (!dir)
		return cli_usage("verdicts", "expected a study directory");
	rc = ledger_open(dir, &l, &e);
	if (!rc)
		rc = report_verdicts(l, (int64_t) as_of, record, &all, &e);
	if (rc == CS_EXIT_REFUSED) /* nothing to judge: a refusal, and so a record */
		rc = guard_refuse(l, "registered", "verdicts", dir, &e, "%s", e.msg);
	if (!rc)
		rc = holdout_registered_state(l, &test, &state, &e);
	ledger_close(l);
	if (rc)
		return cli_fail("verdicts", &e);
	if (as_json) {
		char *txt = json_dumps(all, JSON_INDENT(2) | JSON_SORT_KEYS);

		printf("%s\n", txt);
		free(txt);
	} else {
		if (!print_group(all, "confirmatory", 0, 0,
				 "confirmatory findings (decided by the plan's runs):"))
			printf("no confirmatory finding%s\n",
			       json_array_size(all) ? " (no plan maps one, none registered before the first run, or all are model checks)" : "");
		print_group(all, "confirmatory", 1, 0,
			    "provisional (accept holds; the sceptic runs are missing or none are planned):");
		print_group(all, "confirmatory", -1, 1,
			    "model checks (every comparison of the rules decided by the device model's "
			    "parameters; never counted as confirmatory evidence):");
		print_group(all, "exploratory", -1, -1,
			    "exploratory (kind exploratory or descriptive, post hoc, or no plan; never "
			    "confirmatory):");
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
			printf("confirmatory: %zu findings, %zu model checks\n", nf, nm);
		}
		print_holdout_state(test, state);
	}
	rc = holdout_state_exit(test, state);
	json_decref(test);
	json_decref(state);
	json_decref(all);
	return rc;
}
