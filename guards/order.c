/*
 * order.c - the refusals that keep a study's order (guard.h): the plan
 * and the hypotheses frozen, holdout runs by the plan and not by a flag,
 * predictions before the first holdout run and only for registered
 * targets, scores by the registered rule and only when complete.
 *
 * Each refusal is a `refusal` record (guard_refuse); the changes that are
 * allowed but depart from the plan (a holdout target run again) are
 * `deviation` records with the access state.
 */
#include "guard.h"

#include "ledger.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int guard_registration(struct ledger *l, const char *what, int frozen, int amend,
		       const char *verb, cs_err *e)
{
	if (!frozen || amend)
		return 0;
	return guard_refuse(l, "registered-frozen", verb, what, e,
			    "%s is already registered with other content (access state: %s); "
			    "nothing written. Amend with --amend --rationale TEXT",
			    what, ledger_access_state(l));
}

int guard_run_plan(struct ledger *l, const ledger_plan *p, const char *sha, int flag_holdout,
		   const char *verb, int *holdout, cs_err *e)
{
	const char *cls = ledger_plan_class(p, sha);

	*holdout = !strcmp(cls, "holdout") || flag_holdout;
	if (flag_holdout && p->plan && strcmp(cls, "holdout"))
		return guard_refuse(l, "plan", verb, sha, e,
				    "--holdout on run spec %.12s, which the plan names as %s, not as "
				    "a holdout target",
				    sha, cls);
	return 0;
}

typedef struct repeat_ctx {
	const char *sha;
	char first[32];
} repeat_ctx;

static int repeat_cb(const ledger_record *r, void *ud)
{
	repeat_ctx *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	const char *st = json_string_value(json_object_get(p, "status"));

	if (!strcmp(json_string_value(json_object_get(p, "spec_sha256")) ?: "", c->sha) &&
	    (!st || !strcmp(st, "complete")))
		snprintf(c->first, sizeof(c->first), "%s",
			 json_string_value(json_object_get(p, "run_id")) ?: "?");
	json_decref(p);
	return c->first[0] != '\0';
}

int guard_holdout_repeat(struct ledger *l, const char *sha, const char *run_id, const char *verb,
			 int *repeat, cs_err *e)
{
	repeat_ctx c = {sha, ""};
	cs_err le = {0};
	char why[256];
	int rc;

	(void) verb;
	*repeat = 0;
	if (ledger_foreach(l, "run", repeat_cb, &c, &le))
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
	if (!c.first[0])
		return 0;
	*repeat = 1;
	snprintf(why, sizeof(why),
		 "holdout target %.12s run again as %s; its first run %s stays the observation", sha,
		 run_id, c.first);
	rc = ledger_deviate(l, why, NULL, NULL, NULL, e);
	return rc;
}

typedef struct hold_ctx {
	int started;
} hold_ctx;

static int hold_cb(const ledger_record *r, void *ud)
{
	hold_ctx *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);

	c->started = json_is_true(json_object_get(p, "holdout"));
	json_decref(p);
	return c->started;
}

int guard_predictions_open(struct ledger *l, const char *verb, const char *target, cs_err *e)
{
	hold_ctx c = {0};
	cs_err le = {0};

	if (ledger_foreach(l, "run_start", hold_cb, &c, &le))
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
	if (c.started)
		return guard_refuse(l, "holdout-order", verb, target, e,
				    "predictions are frozen: the first holdout run has started");
	return 0;
}

int guard_prediction_target(struct ledger *l, const ledger_plan *p, const char *sha,
			    const char *path, const char *metric, const char *verb, cs_err *e)
{
	const json_t *ms;
	size_t i;
	json_t *m;
	int found = 0;

	if (!p->plan)
		return 0;
	if (strcmp(ledger_plan_class(p, sha), "holdout"))
		return guard_refuse(l, "plan", verb, path, e,
				    "%s (spec %.12s) is not a holdout target of the registered plan",
				    path, sha);
	ms = json_object_get(json_object_get(p->plan, "holdout"), "metrics");
	json_array_foreach(ms, i, m)
		found |= !strcmp(json_string_value(m) ?: "", metric);
	if (json_is_array(ms) && !found)
		return guard_refuse(l, "plan", verb, path, e,
				    "metric %s is not among the plan's holdout metrics", metric);
	return 0;
}

int guard_score_threshold(struct ledger *l, double registered, double given, const char *verb,
			  cs_err *e)
{
	if (fabs(registered - given) <= 1e-12 * fmax(1.0, fabs(registered)))
		return 0;
	return guard_refuse(l, "scoring-rule", verb, ledger_dir(l), e,
			    "the registered threshold is %g; --threshold %g would change it",
			    registered, given);
}

int guard_score_complete(struct ledger *l, size_t n_missing, size_t n_targets, int interim,
			 const char *verb, cs_err *e)
{
	if (!n_missing || interim)
		return 0;
	return guard_refuse(l, "scoring-rule", verb, ledger_dir(l), e,
			    "%zu of %zu holdout targets have no run yet (or only one whose settings "
			    "differ from those predicted): the score waits for all (--interim records "
			    "an interim score, never the result)",
			    n_missing, n_targets);
}
