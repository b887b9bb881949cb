/*
 * cmd_holdout.c - verbs of the holdout and the verdicts: holdout
 * predict|score|show, refute, verdicts, deviate.
 *
 * Order is enforced here, from the log: predictions are refused once the
 * first holdout run has started (a run_start record with holdout true);
 * the harness refuses a holdout run until predictions for its spec exist.
 */
#include "cmds.h"

#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "holdout.h"
#include "ledger.h"
#include "report.h"

#define TARGETS_CAP (1u << 20)

/* ---- reading the log ---- */

typedef struct {
	json_t *design;      /* run payloads not holdout */
	json_t *holdout;     /* run payloads that are holdout */
	json_t *predictions; /* latest per target: key "sha|metric" -> payload (with seq) */
	json_t *pred_order;  /* keys in order */
	json_t *devs;        /* deviation seqs */
	json_t *study;       /* latest study doc (borrowed into here) */
	int holdout_started;
	int64_t npred;
} logview;

static int has_tag(const json_t *p, const char *tag)
{
	size_t i;
	json_t *v;

	json_array_foreach(json_object_get(p, "tags"), i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), tag))
			return 1;
	return 0;
}

static int view_cb(const ledger_record *r, void *ud)
{
	logview *v = ud;
	json_t *p = json_loads(r->payload, 0, NULL);

	if (!p)
		return 0;
	if (!strcmp(r->kind, "run_start") && json_is_true(json_object_get(p, "holdout"))) {
		v->holdout_started = 1;
	} else if (!strcmp(r->kind, "run")) {
		const char *st = json_string_value(json_object_get(p, "status"));

		if (!st || !strcmp(st, "complete")) {
			if (json_is_true(json_object_get(p, "holdout")) || has_tag(p, "holdout"))
				json_array_append(v->holdout, p);
			else
				json_array_append(v->design, p);
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
	} else if (!strcmp(r->kind, "study")) {
		json_decref(v->study);
		v->study = json_incref(json_object_get(p, "doc"));
	}
	json_decref(p);
	return 0;
}

static int view_load(ledger *l, logview *v, cs_err *e)
{
	memset(v, 0, sizeof(*v));
	v->design = json_array();
	v->holdout = json_array();
	v->predictions = json_object();
	v->pred_order = json_array();
	v->devs = json_array();
	return ledger_foreach(l, NULL, view_cb, v, e);
}

static void view_free(logview *v)
{
	json_decref(v->design);
	json_decref(v->holdout);
	json_decref(v->predictions);
	json_decref(v->pred_order);
	json_decref(v->devs);
	json_decref(v->study);
}

/* Append a refusal record (best effort) and report exit 3. */
static int refuse(ledger *l, const char *verb, const char *target, cs_err *e)
{
	json_t *p = json_pack("{s:s,s:s,s:s,s:s}", "guard", "holdout-order", "verb", verb, "target",
			      target, "why", e->msg);
	cs_err e2;

	ledger_append(l, "refusal", p, NULL, &e2);
	json_decref(p);
	e->code = CS_EXIT_REFUSED;
	return CS_EXIT_REFUSED;
}

/* ---- holdout predict ---- */

static int predict(const char *dir, const char *targets_path, const char *model)
{
	ledger *l = NULL;
	logview v;
	json_t *targets = NULL, *list, *t;
	holdout_obs *obs = NULL;
	cs_err e = {0};
	int rc, view = 0;
	size_t i, nobs;
	char base[4096];

	rc = ledger_open(dir, &l, &e);
	if (rc)
		return cli_fail("holdout", &e);
	rc = view_load(l, &v, &e);
	view = 1;
	if (rc)
		goto fail;
	if (v.holdout_started) {
		cs_err_set(&e, CS_EXIT_REFUSED,
			   "predictions are frozen: the first holdout run has started");
		rc = refuse(l, "holdout predict", targets_path, &e);
		goto fail;
	}
	rc = cs_json_load_file(targets_path, TARGETS_CAP, &targets, &e);
	if (rc)
		goto fail;
	list = json_object_get(targets, "targets");
	if (!json_is_array(list) || json_array_size(list) == 0) {
		rc = cs_err_set(&e, CS_EXIT_BADINPUT, "%s: $.targets: expected a non-empty array",
				targets_path);
		goto fail;
	}
	nobs = json_array_size(v.design);
	obs = calloc(nobs + 1, sizeof(*obs));
	if (!obs) {
		rc = cs_err_set(&e, CS_EXIT_INTERNAL, "out of memory");
		goto fail;
	}
	for (i = 0; i < nobs; i++) {
		json_t *r = json_array_get(v.design, i);

		obs[i] = (holdout_obs){json_string_value(json_object_get(r, "run_id")),
				       json_object_get(r, "features"), json_object_get(r, "metrics"),
				       json_object_get(r, "spec")};
	}
	/* run paths are relative to the targets file's folder ("." for a bare name) */
	{
		char tmp[4096];

		snprintf(tmp, sizeof(tmp), "%s", targets_path);
		snprintf(base, sizeof(base), "%s", dirname(tmp));
	}
	rc = ledger_begin(l, &e);
	if (rc)
		goto fail;
	json_array_foreach(list, i, t) {
		const char *run = json_string_value(json_object_get(t, "run"));
		const char *m = json_string_value(json_object_get(t, "model")) ?: model;
		json_t *metrics = json_object_get(t, "metrics"), *spec = NULL, *feat = NULL, *mv;
		char path[4096], sha[65];
		size_t j;

		if (!run || !json_is_array(metrics) || !json_array_size(metrics)) {
			rc = cs_err_set(&e, CS_EXIT_BADINPUT,
					"%s: $.targets[%zu]: expected {\"run\": PATH, \"metrics\": [...]}",
					targets_path, i);
			break;
		}
		if ((size_t) snprintf(path, sizeof(path), "%s%s%s", run[0] == '/' ? "" : base,
				      run[0] == '/' ? "" : "/", run) >= sizeof(path))
			rc = cs_err_set(&e, CS_EXIT_BADINPUT, "%s: $.targets[%zu].run: path too long",
					targets_path, i);
		else
			rc = harness_run_load(path, &spec, sha, &e);
		if (!rc) {
			/* the features the run will record: the study's defaults filled in */
			json_t *eff = NULL;

			rc = harness_run_effective_study(l, spec, &eff, &e);
			if (!rc)
				rc = harness_spec_features(eff, &feat, &e);
			json_decref(eff);
		}
		json_array_foreach(metrics, j, mv) {
			const char *metric = json_string_value(mv);
			holdout_pred p;
			json_t *payload;
			char id[32];

			if (rc)
				break;
			if (!metric) {
				rc = cs_err_set(&e, CS_EXIT_BADINPUT,
						"%s: $.targets[%zu].metrics[%zu]: expected a metric name",
						targets_path, i, j);
				break;
			}
			rc = holdout_predict(obs, nobs, feat, metric, m, &p, &e);
			if (rc) {
				char msg[CS_ERR_MAX];

				memcpy(msg, e.msg, sizeof(msg));
				cs_err_set(&e, rc, "%s: $.targets[%zu] (%s): %.900s", targets_path, i,
					   metric, msg);
				break;
			}
			snprintf(id, sizeof(id), "P%lld", (long long) ++v.npred);
			payload = json_pack("{s:s,s:{s:s,s:s,s:s,s:O},s:f,s:[f,f],s:{s:s,s:O}}", "id", id,
					    "target", "run_spec", run, "spec_sha256", sha, "metric",
					    metric, "features", feat, "value", p.value, "band95", p.lo,
					    p.hi, "model", "name", p.model, "params", p.params);
			json_object_set(payload, "fitted_on",
					json_object_get(p.params, "fitted_on"));
			rc = ledger_append(l, "prediction", payload, NULL, &e);
			if (!rc)
				printf("%-5s %-28s %-20s %12.6g  [%.6g, %.6g]  %s\n", id, run, metric,
				       p.value, p.lo, p.hi, p.model);
			json_decref(payload);
			holdout_pred_clear(&p);
		}
		json_decref(spec);
		json_decref(feat);
		if (rc)
			break;
	}
	if (rc) {
		ledger_rollback(l);
		goto fail;
	}
	rc = ledger_commit(l, &e);
	if (rc)
		goto fail;
	fprintf(stderr, "predictions recorded from %zu design runs; frozen at the first holdout run\n",
		nobs);
	free(obs);
	json_decref(targets);
	view_free(&v);
	ledger_close(l);
	return 0;
fail:
	free(obs);
	json_decref(targets);
	if (view)
		view_free(&v);
	ledger_close(l);
	return cli_fail("holdout", &e);
}

/* ---- holdout score ---- */

/* The registered threshold, if the study spec states one. */
static int registered_threshold(const json_t *study, double *out)
{
	const json_t *h = json_object_get(study, "holdout");
	const json_t *t = json_is_object(h) ? json_object_get(h, "threshold") : NULL;

	if (!json_is_number(t))
		return -1;
	*out = json_number_value(t);
	return 0;
}

static int score(const char *dir, int have_threshold, double threshold, int as_json)
{
	ledger *l = NULL;
	logview v;
	holdout_row *rows = NULL;
	holdout_summary s;
	json_t *table = json_array(), *pending = json_array(), *payload = NULL, *key;
	cs_err e = {0};
	double reg;
	size_t i, n = 0;
	int rc, view = 0;

	rc = ledger_open(dir, &l, &e);
	if (rc)
		goto fail;
	rc = view_load(l, &v, &e);
	view = 1;
	if (rc)
		goto fail;
	if (!registered_threshold(v.study, &reg)) {
		if (have_threshold && fabs(reg - threshold) > 1e-12) {
			cs_err_set(&e, CS_EXIT_REFUSED,
				   "the registered threshold is %g; --threshold %g would change it", reg,
				   threshold);
			rc = refuse(l, "holdout score", dir, &e);
			goto fail;
		}
		threshold = reg;
	}
	rows = calloc(json_array_size(v.pred_order) + 1, sizeof(*rows));
	if (!rows) {
		rc = cs_err_set(&e, CS_EXIT_INTERNAL, "out of memory");
		goto fail;
	}
	json_array_foreach(v.pred_order, i, key) {
		json_t *p = json_object_get(v.predictions, json_string_value(key));
		const json_t *t = json_object_get(p, "target");
		const char *sha = json_string_value(json_object_get(t, "spec_sha256"));
		const char *metric = json_string_value(json_object_get(t, "metric"));
		double obs[64];
		size_t no = 0, j;
		json_t *r, *runs = json_array();

		json_array_foreach(v.holdout, j, r) {
			const json_t *mv = json_object_get(json_object_get(r, "metrics"), metric);

			if (sha && !strcmp(json_string_value(json_object_get(r, "spec_sha256")) ?: "", sha) &&
			    json_is_number(mv) && no < 64) {
				obs[no++] = json_number_value(mv);
				json_array_append(runs, json_object_get(r, "run_id"));
			}
		}
		if (!no) {
			json_array_append(pending, json_object_get(p, "id"));
			json_decref(runs);
			continue;
		}
		rows[n] = (holdout_row){json_number_value(json_object_get(p, "value")),
					json_number_value(json_array_get(json_object_get(p, "band95"), 0)),
					json_number_value(json_array_get(json_object_get(p, "band95"), 1)),
					holdout_median(obs, no)};
		json_array_append_new(
			table,
			json_pack("{s:O,s:s,s:O,s:f,s:f,s:f,s:f,s:f,s:b,s:f,s:o}", "prediction",
				  json_object_get(p, "id"), "metric", metric, "run_spec",
				  json_object_get(t, "run_spec"), "predicted", rows[n].value, "lo",
				  rows[n].lo, "hi", rows[n].hi, "observed", rows[n].observed,
				  "relative_error", holdout_rel_error(rows[n].value, rows[n].observed),
				  "inside", rows[n].observed >= rows[n].lo && rows[n].observed <= rows[n].hi,
				  "interval_score",
				  holdout_interval_score(rows[n].lo, rows[n].hi, rows[n].observed, 0.05),
				  "runs", runs));
		n++;
	}
	rc = holdout_score(rows, n, threshold, &s, &e);
	if (rc)
		goto fail;
	payload = json_pack("{s:f,s:f,s:f,s:I,s:I,s:f,s:f,s:f,s:f,s:b,s:b,s:O,s:O,s:O}", "threshold",
			    threshold, "mdape", s.mdape, "median_relative_error", s.mdape, "n",
			    (json_int_t) s.n, "inside", (json_int_t) s.inside, "coverage_p",
			    s.coverage_p, "mean_interval_score", s.mean_interval_score,
			    "mean_band_width", s.mean_band_width, "mean_relative_band_width",
			    s.mean_rel_band_width, "calibration_rejected", s.calibration_rejected,
			    "passed", s.passed, "rows", table, "pending", pending, "deviations", v.devs);
	/* payload now holds table and pending; drop ours so they die with it */
	json_decref(table);
	json_decref(pending);
	if (s.reject_at_or_below != SIZE_MAX)
		json_object_set_new(payload, "reject_calibration_if_inside_at_most",
				    json_integer((json_int_t) s.reject_at_or_below));
	rc = ledger_append(l, "score", payload, NULL, &e);
	if (rc)
		goto fail;
	if (as_json) {
		char *txt = json_dumps(payload, JSON_INDENT(2) | JSON_SORT_KEYS);

		printf("%s\n", txt);
		free(txt);
	} else {
		json_t *row;

		printf("%-5s %-20s %12s %12s %12s %12s %8s %s\n", "pred", "metric", "predicted", "lo",
		       "hi", "observed", "rel.err", "in band");
		json_array_foreach(table, i, row)
			printf("%-5s %-20s %12.6g %12.6g %12.6g %12.6g %8.3f %s\n",
			       json_string_value(json_object_get(row, "prediction")),
			       json_string_value(json_object_get(row, "metric")),
			       json_number_value(json_object_get(row, "predicted")),
			       json_number_value(json_object_get(row, "lo")),
			       json_number_value(json_object_get(row, "hi")),
			       json_number_value(json_object_get(row, "observed")),
			       json_number_value(json_object_get(row, "relative_error")),
			       json_is_true(json_object_get(row, "inside")) ? "yes" : "NO");
		printf("median relative error (MdAPE/100) %.3f against %.3f: %s\n", s.mdape, threshold,
		       s.passed ? "PASS" : "FAIL");
		printf("%zu of %zu inside their 95%% bands; P(X <= %zu | n=%zu, p=0.95) = %.3f%s\n",
		       s.inside, s.n, s.inside, s.n, s.coverage_p,
		       s.calibration_rejected ? " (calibration rejected at 0.05)" : "");
		printf("mean interval score %.6g, mean band width %.6g (%.2f of the prediction)\n",
		       s.mean_interval_score, s.mean_band_width, s.mean_rel_band_width);
		if (json_array_size(pending))
			printf("%zu predictions have no holdout run yet\n", json_array_size(pending));
		if (json_array_size(v.devs))
			printf("%zu deviations on record (see the score record)\n",
			       json_array_size(v.devs));
	}
	json_decref(payload);
	free(rows);
	view_free(&v);
	ledger_close(l);
	return s.passed ? 0 : 0;
fail:
	json_decref(payload);
	if (!payload) {
		json_decref(table);
		json_decref(pending);
	}
	free(rows);
	if (view)
		view_free(&v);
	ledger_close(l);
	return cli_fail("holdout", &e);
}

static int show(const char *dir, int as_json)
{
	ledger *l = NULL;
	logview v;
	cs_err e = {0};
	json_t *key, *all = json_array();
	size_t i;
	int rc;

	rc = ledger_open(dir, &l, &e);
	if (rc)
		return cli_fail("holdout", &e);
	rc = view_load(l, &v, &e);
	if (rc) {
		view_free(&v);
		ledger_close(l);
		json_decref(all);
		return cli_fail("holdout", &e);
	}
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
	json_decref(all);
	view_free(&v);
	ledger_close(l);
	return 0;
}

static const char holdout_usage[] =
	"usage: coldstudy holdout predict DIR --targets FILE [--model auto|io|loglinear]\n"
	"       coldstudy holdout score DIR [--threshold 0.35] [--json]\n"
	"       coldstudy holdout show DIR [--json]\n\n"
	"predict fits the models on the design runs (runs not tagged holdout) and records a\n"
	"prediction (value and 95%% band) for each target run spec and metric. The targets file:\n"
	"  {\"targets\": [{\"run\": \"runs/h1.json\", \"metrics\": [\"wall_s\", \"engine_reads\"],\n"
	"                \"model\": \"auto\"}]}\n"
	"Predictions are refused (exit 3) once the first holdout run has started.\n"
	"score compares each prediction with its holdout runs: relative error |p - o| / o (MdAPE/100),\n"
	"inside the band, interval score (alpha 0.05), coverage with an exact binomial check, and\n"
	"pass/fail against the registered threshold (the study spec's holdout.threshold, else\n"
	"--threshold, default 0.35). The score is a ledger record.\n";

int cmd_holdout(int argc, char **argv)
{
	const char *sub, *dir, *targets = NULL, *model = "auto";
	double threshold = 0.35;
	int as_json = 0, have_threshold = 0;

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
		} else if (!strcmp(argv[i], "--targets") && i + 1 < argc) {
			targets = argv[++i];
		} else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
			model = argv[++i];
		} else if (!strcmp(argv[i], "--threshold") && i + 1 < argc) {
			if (cli_parse_double(argv[++i], &threshold) || threshold <= 0)
				return cli_usage("holdout", "--threshold: expected a positive number");
			have_threshold = 1;
		} else {
			return cli_usage("holdout", "unexpected argument '%s'", argv[i]);
		}
	}
	if (!strcmp(sub, "predict")) {
		if (!targets)
			return cli_usage("holdout", "predict needs --targets FILE");
		if (strcmp(model, "auto") && strcmp(model, "io") && strcmp(model, "loglinear"))
			return cli_usage("holdout", "--model: expected auto, io or loglinear");
		return predict(dir, targets, model);
	}
	if (!strcmp(sub, "score"))
		return score(dir, have_threshold, threshold, as_json);
	if (!strcmp(sub, "show"))
		return show(dir, as_json);
	return cli_usage("holdout", "unknown subcommand '%s' (predict, score, show)", sub);
}

/* ---- refute, deviate ---- */

/* Is hypothesis id registered in l? */
static int registered(ledger *l, const char *id, cs_err *e)
{
	ledger_record r;
	int found = ledger_find(l, "hypothesis", id, &r, e);

	if (found == 1)
		ledger_record_free(&r);
	return found;
}

static int append_text_record(const char *verb, const char *kind, const char *dir,
			      const char *hyp, const char *run, const char *because)
{
	ledger *l = NULL;
	cs_err e = {0};
	json_t *p;
	int64_t seq;
	int rc;

	rc = ledger_open(dir, &l, &e);
	if (rc)
		return cli_fail(verb, &e);
	if (hyp) {
		int found = registered(l, hyp, &e);

		if (found < 0) {
			ledger_close(l);
			return cli_fail(verb, &e);
		}
		if (!found) {
			cs_err_set(&e, CS_EXIT_REFUSED, "hypothesis %s is not registered in %s", hyp,
				   dir);
			ledger_close(l);
			return cli_fail(verb, &e);
		}
	}
	if (!strcmp(kind, "refutation"))
		p = json_pack("{s:s,s:s,s:s}", "hypothesis", hyp, "because", because, "access_state",
			      ledger_access_state(l));
	else
		p = json_pack("{s:s,s:s}", "because", because, "access_state", ledger_access_state(l));
	if (hyp && strcmp(kind, "refutation"))
		json_object_set_new(p, "hypothesis", json_string(hyp));
	if (run)
		json_object_set_new(p, "run_id", json_string(run));
	rc = ledger_append(l, kind, p, &seq, &e);
	json_decref(p);
	if (rc) {
		ledger_close(l);
		return cli_fail(verb, &e);
	}
	printf("%s recorded as seq %lld (%s)\n", kind, (long long) seq, ledger_access_state(l));
	ledger_close(l);
	return 0;
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
	return append_text_record("refute", "refutation", argv[1], argv[2], NULL, because);
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
	return append_text_record("deviate", "deviation", dir, hyp, run, because);
}

/* ---- verdicts ---- */

int cmd_verdicts(int argc, char **argv)
{
	const char *dir = NULL;
	int as_json = 0, record = 1;
	uint64_t as_of = 0;
	ledger *l = NULL;
	json_t *all = NULL, *v;
	cs_err e = {0};
	size_t i;
	int rc;

	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy verdicts DIR [--json] [--as-of SEQ] [--no-record]\n\n"
		       "Evaluate each hypothesis's registered accept and reject rules on the runs that\n"
		       "serve it: accepted (accept holds, no refutation), rejected (reject holds),\n"
		       "refuted (accept holds but the sceptic refuted it), unresolved otherwise.\n"
		       "Each changed verdict is a ledger record naming its runs; --as-of SEQ\n"
		       "recomputes from the records up to SEQ (what a verdict record was computed from).\n");
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
	if (rc) {
		ledger_close(l);
		return cli_fail("verdicts", &e);
	}
	if (as_json) {
		char *txt = json_dumps(all, JSON_INDENT(2) | JSON_SORT_KEYS);

		printf("%s\n", txt);
		free(txt);
	} else {
		printf("%-5s %-13s %-11s %-13s %-13s %5s %s\n", "id", "kind", "verdict", "accept",
		       "reject", "runs", "refutations/deviations");
		json_array_foreach(all, i, v)
			printf("%-5s %-13s %-11s %-13s %-13s %5zu %zu/%zu\n",
			       json_string_value(json_object_get(v, "hypothesis")),
			       json_string_value(json_object_get(v, "kind")) ?: "",
			       json_string_value(json_object_get(v, "verdict")),
			       json_string_value(json_object_get(json_object_get(v, "accept"), "result")),
			       json_string_value(json_object_get(json_object_get(v, "reject"), "result")),
			       json_array_size(json_object_get(v, "runs")),
			       json_array_size(json_object_get(v, "refutations")),
			       json_array_size(json_object_get(v, "deviations")));
	}
	json_decref(all);
	ledger_close(l);
	return 0;
}
