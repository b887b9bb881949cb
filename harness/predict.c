/*
 * predict.c - the holdout's targets as a run will record them: each target
 * run spec loaded and hashed, the study's defaults filled in, its features
 * taken (what a holdout model predicts from), then the predictions made and
 * recorded by holdout/ (holdout_predict_record). Here because a target is a
 * run spec, which only the harness reads.
 */
#include "predict.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"

#define TARGETS_CAP (1u << 20)

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
int harness_holdout_predict(struct ledger *l, const char *targets_path, const char *model,
			    json_t **made, cs_err *e)
{
	ledger_plan plan = {0};
	json_t *targets = NULL, *list, *keep = json_array(), *pm = NULL, *it;
	holdout_target *t = NULL;
	const char *base = ".";
	char tbase[4096];
	size_t i, n = 0;
	int rc;

	*made = NULL;
	if ((rc = ledger_plan_load(l, 0, &plan, e)))
		goto out;
	if (targets_path) {
		char tmp[4096];

		rc = cs_json_load_file(targets_path, TARGETS_CAP, &targets, e);
		if (rc)
			goto out;
		list = json_object_get(targets, "targets");
		if (!json_is_array(list) || json_array_size(list) == 0) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.targets: expected a non-empty array",
					targets_path);
			goto out;
		}
		snprintf(tmp, sizeof(tmp), "%s", targets_path);
		snprintf(tbase, sizeof(tbase), "%s", dirname(tmp));
		base = tbase;
	} else {
		const json_t *h = json_object_get(plan.plan, "holdout");

		if (!h) {
			rc = cs_err_set(e, CS_EXIT_USAGE,
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
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	json_array_foreach(list, i, it) {
		const char *run = json_string_value(json_object_get(it, "run"));
		json_t *metrics = json_object_get(it, "metrics"), *spec = NULL, *feat = NULL;
		char path[4096];

		if (!run || !json_is_array(metrics) || !json_array_size(metrics)) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"%s: $.targets[%zu]: expected {\"run\": PATH, \"metrics\": [...]}",
					targets_path, i);
			break;
		}
		if ((size_t) snprintf(path, sizeof(path), "%s%s%s", run[0] == '/' ? "" : base,
				      run[0] == '/' ? "" : "/", run) >= sizeof(path)) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.targets[%zu].run: path too long",
					targets_path, i);
			break;
		}
		t[n].path = run;
		t[n].metrics = metrics;
		t[n].model = json_string_value(json_object_get(it, "model")) ?: model;
		rc = target_load(l, path, &t[n], &spec, &feat, e);
		json_array_append_new(keep, spec ? spec : json_null());
		json_array_append_new(keep, feat ? feat : json_null());
		if (rc)
			break;
		n++;
	}
	if (!rc)
		rc = holdout_predict_record(l, t, n, targets_path, made, e);
out:
	free(t);
	json_decref(keep);
	json_decref(targets);
	ledger_plan_free(&plan);
	return rc;
}

