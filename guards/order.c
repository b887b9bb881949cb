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

static int first_cb(const ledger_record *r, void *ud)
{
	*(int64_t *) ud = r->seq;
	return 1;
}

/* 1 and *seq the first record of kind, 0 when none, -1 with e on error. */
static int first_of_kind(struct ledger *l, const char *kind, int64_t *seq, cs_err *e)
{
	*seq = 0;
	if (ledger_foreach(l, kind, first_cb, seq, e))
		return -1;
	return *seq > 0;
}

int guard_predictions_open(struct ledger *l, const char *verb, const char *target, cs_err *e)
{
	hold_ctx c = {0};
	cs_err le = {0};
	int64_t first = 0;
	int f;

	if (ledger_foreach(l, "run_start", hold_cb, &c, &le))
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
	if (c.started)
		return guard_refuse(l, "holdout-order", verb, target, e,
				    "predictions are frozen: the first holdout run has started");
	/* the first prediction set freezes them: a second set would let the latest win */
	f = first_of_kind(l, "prediction", &first, &le);
	if (f < 0)
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
	if (f)
		return guard_refuse(l, "predictions-frozen", verb, target, e,
				    "predictions are frozen: the first set is on record from seq %lld "
				    "(one set a study; a later one would replace it)",
				    (long long) first);
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

/* ---- evidence bound to the plan ---- */

int guard_plan_seed(struct ledger *l, const char *cls, int registered, const char *spec_path,
		    const char *verb, cs_err *e)
{
	if (registered || !strcmp(cls, "exploratory"))
		return 0;
	return guard_refuse(l, "plan-seed", verb, spec_path, e,
			    "%s: --seed on a %s spec of the plan, which registers no seed: its runs "
			    "draw from their own streams (give the seed in the spec before the "
			    "first run, or run an exploratory copy)",
			    spec_path, cls);
}

typedef struct count_ctx {
	const char *sha;
	unsigned n;
} count_ctx;

static int count_cb(const ledger_record *r, void *ud)
{
	count_ctx *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	const char *st = json_string_value(json_object_get(p, "status"));

	/* only the runs that counted: complete, within the plan's count */
	if (!strcmp(json_string_value(json_object_get(p, "spec_sha256")) ?: "", c->sha) &&
	    (!st || !strcmp(st, "complete")) && !json_is_true(json_object_get(p, "beyond_plan")) &&
	    strcmp(json_string_value(json_object_get(p, "class")) ?: "", "exploratory"))
		c->n++;
	json_decref(p);
	return 0;
}

int guard_plan_runs(struct ledger *l, const char *sha, const char *cls, unsigned registered,
		    const char *run_id, const char *verb, int *beyond, cs_err *e)
{
	count_ctx c = {sha, 0};
	cs_err le = {0};
	char why[320];

	(void) verb;
	*beyond = 0;
	if (strcmp(cls, "design") && strcmp(cls, "sceptic"))
		return 0;
	if (ledger_foreach(l, "run", count_cb, &c, &le))
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
	if (c.n < registered)
		return 0;
	*beyond = 1;
	snprintf(why, sizeof(why),
		 "%s spec %.12s run again as %s beyond its registered %u run%s: shown, and "
		 "excluded from every decision",
		 cls, sha, run_id, registered, registered == 1 ? "" : "s");
	return ledger_deviate(l, why, NULL, NULL, NULL, e);
}

typedef struct clone_ctx {
	const char *index;
	char source[65];
	char run_id[32];
} clone_ctx;

static int clone_cb(const ledger_record *r, void *ud)
{
	clone_ctx *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	const json_t *ix = json_object_get(p, "index");
	const char *src = json_string_value(json_object_get(json_object_get(ix, "clone"), "source_sha256"));
	const char *cls = json_string_value(json_object_get(p, "class")) ?: "exploratory";

	if (strcmp(cls, "exploratory") && src &&
	    !strcmp(json_string_value(json_object_get(ix, "dir")) ?: "", c->index)) {
		snprintf(c->source, sizeof(c->source), "%s", src);
		snprintf(c->run_id, sizeof(c->run_id), "%s",
			 json_string_value(json_object_get(p, "run_id")) ?: "?");
	}
	json_decref(p);
	return c->source[0] != '\0';
}

int guard_plan_clone(struct ledger *l, const char *cls, const char *index,
		     const char *source_sha256, char *why, size_t cap, cs_err *e)
{
	clone_ctx c = {index, "", ""};
	cs_err le = {0};

	why[0] = '\0';
	if (!strcmp(cls, "exploratory") || !index)
		return 0;
	if (ledger_foreach(l, "run", clone_cb, &c, &le))
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
	if (!c.source[0] || !strcmp(c.source, source_sha256 ? source_sha256 : ""))
		return 0;
	snprintf(why, cap,
		 "the clone %s holds source content %.12s, not %.12s, the content the plan's "
		 "runs were bound to by %s: this run is exploratory",
		 index, source_sha256 ? source_sha256 : "(none)", c.source, c.run_id);
	return 0;
}
