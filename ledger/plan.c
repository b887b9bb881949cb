/*
 * plan.c - the study plan as the log holds it, and the records whose
 * references the log itself can check (refutations, deviations).
 *
 * The plan is the `plan` section of the latest `study` record's document
 * plus the record's `plan_specs`: every run spec the plan names, with the
 * SHA-256 of its canonical form (the spec_sha256 a run records) and its
 * class, "design", "holdout" or "sceptic". The plan is frozen at the first
 * `run_start` record: a later study record must carry an `amendment`
 * (rationale, access state, the hash it replaces), which the harness
 * refuses to write without --amend (guards/).
 *
 * A run's class is its spec hash looked up in the plan: a spec the plan
 * does not name (or a study without a plan) is "exploratory". Nothing here
 * trusts a flag or a tag a run gave itself.
 */
#include "ledger.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct plan_ctx {
	int64_t as_of;
	ledger_plan *p;
} plan_ctx;

static int plan_cb(const ledger_record *r, void *ud)
{
	plan_ctx *c = ud;
	json_t *pl;

	if (c->as_of && r->seq > c->as_of)
		return 1;
	if (!strcmp(r->kind, "run_start")) {
		if (!c->p->first_run_start)
			c->p->first_run_start = r->seq;
		return 0;
	}
	if (strcmp(r->kind, "study"))
		return 0;
	pl = json_loads(r->payload, 0, NULL);
	if (!pl || !json_is_object(json_object_get(pl, "doc"))) {
		json_decref(pl);
		return 0;
	}
	json_decref(c->p->rec);
	c->p->rec = pl;
	c->p->study_seq = r->seq;
	return 0;
}

int ledger_plan_load(ledger *l, int64_t as_of, ledger_plan *p, cs_err *e)
{
	plan_ctx c = {as_of, p};
	json_t *doc, *specs;
	int rc;

	memset(p, 0, sizeof(*p));
	rc = ledger_foreach(l, NULL, plan_cb, &c, e);
	if (rc) {
		ledger_plan_free(p);
		return rc;
	}
	if (!p->rec)
		return 0;
	doc = json_object_get(p->rec, "doc");
	p->doc = doc;
	p->plan = json_is_object(json_object_get(doc, "plan")) ? json_object_get(doc, "plan") : NULL;
	specs = json_object_get(p->rec, "plan_specs");
	p->specs = p->plan && json_is_array(specs) ? specs : NULL;
	return 0;
}

void ledger_plan_free(ledger_plan *p)
{
	if (!p)
		return;
	json_decref(p->rec);
	memset(p, 0, sizeof(*p));
}

/* The plan_specs entry of sha, or NULL. */
static const json_t *spec_of(const ledger_plan *p, const char *sha)
{
	size_t i;
	json_t *s;

	if (!p->specs || !sha)
		return NULL;
	json_array_foreach(p->specs, i, s)
		if (!strcmp(json_string_value(json_object_get(s, "sha256")) ?: "", sha))
			return s;
	return NULL;
}

const char *ledger_plan_class(const ledger_plan *p, const char *sha)
{
	const json_t *s = spec_of(p, sha);
	const char *c = s ? json_string_value(json_object_get(s, "class")) : NULL;

	return c ? c : "exploratory";
}

const char *ledger_plan_path(const ledger_plan *p, const char *sha)
{
	const json_t *s = spec_of(p, sha);

	return s ? json_string_value(json_object_get(s, "path")) : NULL;
}

/* sha of a planned path, or NULL. */
static const char *sha_of_path(const ledger_plan *p, const char *path)
{
	size_t i;
	json_t *s;

	json_array_foreach(p->specs, i, s)
		if (!strcmp(json_string_value(json_object_get(s, "path")) ?: "", path))
			return json_string_value(json_object_get(s, "sha256"));
	return NULL;
}

/* Append the hashes of the paths in list (a JSON array of paths) to out, once each. */
static void add_hashes(const ledger_plan *p, const json_t *list, json_t *out)
{
	size_t i, j;
	json_t *v, *w;

	json_array_foreach(list, i, v) {
		const char *sha = sha_of_path(p, json_string_value(v) ?: "");
		int dup = 0;

		if (!sha)
			continue;
		json_array_foreach(out, j, w)
			dup |= !strcmp(json_string_value(w), sha);
		if (!dup)
			json_array_append_new(out, json_string(sha));
	}
}

json_t *ledger_plan_hyp_specs(const ledger_plan *p, const char *id, const char *role)
{
	json_t *out = json_array();
	const json_t *h;

	if (!p->plan || !p->specs)
		return out;
	h = json_object_get(json_object_get(p->plan, "hypotheses"), id);
	add_hashes(p, json_object_get(h, role), out);
	return out;
}

int ledger_plan_maps(const ledger_plan *p, const char *id)
{
	return p->plan && json_is_object(json_object_get(json_object_get(p->plan, "hypotheses"), id));
}

json_t *ledger_plan_targets(const ledger_plan *p)
{
	json_t *out = json_array();

	if (p->plan && p->specs)
		add_hashes(p, json_object_get(json_object_get(p->plan, "holdout"), "targets"), out);
	return out;
}

void ledger_mark_post_hoc(ledger *l, json_t *payload)
{
	const char *st = ledger_access_state(l);

	if (!strcmp(st, "none"))
		return;
	json_object_set_new(payload, "post_hoc", json_true());
	json_object_set_new(payload, "access_state", json_string(st));
}

/* ---- references ---- */

int ledger_hyp_registered(ledger *l, const char *id, cs_err *e)
{
	ledger_record r;
	int f = ledger_find(l, "hypothesis", id, &r, e);

	if (f == 1) {
		ledger_record_free(&r);
		return 1;
	}
	if (f < 0)
		return -1;
	f = ledger_find(l, "amendment", id, &r, e);
	if (f == 1)
		ledger_record_free(&r);
	return f;
}

typedef struct run_ctx {
	const char *id;
	int found;
} run_ctx;

static int run_cb(const ledger_record *r, void *ud)
{
	run_ctx *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);

	c->found = !strcmp(json_string_value(json_object_get(p, "run_id")) ?: "", c->id);
	json_decref(p);
	return c->found;
}

int ledger_run_exists(ledger *l, const char *run_id, cs_err *e)
{
	run_ctx c = {run_id, 0};

	if (ledger_foreach(l, "run_start", run_cb, &c, e))
		return -1;
	return c.found;
}

/* Append kind with payload p (stolen) after checking hyp and run exist. */
static int append_checked(ledger *l, const char *kind, json_t *p, const char *hyp,
			  const char *run_id, int64_t *seq, cs_err *e)
{
	int f, rc;

	if (!p)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	if (hyp) {
		f = ledger_hyp_registered(l, hyp, e);
		if (f <= 0) {
			json_decref(p);
			return f < 0 ? CS_EXIT_INTERNAL
				     : cs_err_set(e, CS_EXIT_BADINPUT,
						  "hypothesis %s is not registered in %s; nothing written",
						  hyp, ledger_dir(l));
		}
	}
	if (run_id) {
		f = ledger_run_exists(l, run_id, e);
		if (f <= 0) {
			json_decref(p);
			return f < 0 ? CS_EXIT_INTERNAL
				     : cs_err_set(e, CS_EXIT_BADINPUT,
						  "run %s is not in the log of %s; nothing written", run_id,
						  ledger_dir(l));
		}
	}
	json_object_set_new(p, "access_state", json_string(ledger_access_state(l)));
	rc = ledger_append(l, kind, p, seq, e);
	json_decref(p);
	return rc;
}

int ledger_refute(ledger *l, const char *hyp, const char *because, int64_t *seq, cs_err *e)
{
	return append_checked(l, "refutation",
			      json_pack("{s:s,s:s}", "hypothesis", hyp, "because", because), hyp,
			      NULL, seq, e);
}

int ledger_deviate(ledger *l, const char *because, const char *hyp, const char *run_id,
		   int64_t *seq, cs_err *e)
{
	json_t *p = json_pack("{s:s}", "because", because);

	if (p && hyp)
		json_object_set_new(p, "hypothesis", json_string(hyp));
	if (p && run_id)
		json_object_set_new(p, "run_id", json_string(run_id));
	return append_checked(l, "deviation", p, hyp, run_id, seq, e);
}

int ledger_text_record_verb(const char *dir, int refute, const char *hyp, const char *run_id,
			    const char *because, FILE *out, cs_err *e)
{
	ledger *l = NULL;
	int64_t seq = 0;
	int rc = ledger_open(dir, &l, e);

	if (!rc)
		rc = refute ? ledger_refute(l, hyp, because, &seq, e)
			    : ledger_deviate(l, because, hyp, run_id, &seq, e);
	if (!rc)
		fprintf(out, "%s recorded as seq %lld (%s)\n", refute ? "refutation" : "deviation",
			(long long) seq, ledger_access_state(l));
	ledger_close(l);
	return rc;
}
