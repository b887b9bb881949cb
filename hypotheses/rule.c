/*
 * rule.c - the rule language of accept/reject rules: validation and a
 * three-valued evaluator over run records.
 *
 * A rule is data, never code: a tree of all/any/not over comparisons,
 * whose sides are numbers, aggregates over a selection of runs, or ratios
 * of those (grammar in hyp.h). The validator walks the tree once with a
 * depth and node budget, so a hostile file cannot make evaluation deep or
 * slow; rule_eval re-validates before it trusts a tree, because rules
 * reach it from the ledger as well as from files.
 *
 * Evaluation is Kleene's strong three-valued logic (1 true, 0 false,
 * -1 undetermined). Undetermined is not false: a reject rule that cannot
 * be decided because no run of that shape exists yet must not reject. The
 * evaluator builds a trace that mirrors the rule and records every run id
 * a selection matched and every number it used, so a verdict can be
 * re-checked by hand from the ledger.
 */
#include "hyp.h"
#include "jsonv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RULE_DEPTH_MAX 32
#define RULE_NODES_MAX 1024
#define SELECT_TAGS_MAX 64
#define TAG_MAX 64

static const char *const rule_keys[] = { "all", "any", "not", "cmp", NULL };
static const char *const cmp_keys[] = { "left", "op", "right", NULL };
static const char *const agg_keys[] = { "agg", "metric", "select", NULL };
static const char *const ratio_keys[] = { "ratio", NULL };
static const char *const select_keys[] = { "tags", "not_tags", "hypothesis", NULL };
static const char *const aggs[] = { "median", "min", "max", "mean", "count", NULL };
static const char *const ops[] = { "<", "<=", ">", ">=", "==", "!=", NULL };

/* ---- validation ---- */

typedef struct vctx {
	const char *name;
	cs_err *e;
	size_t nodes;
} vctx;

/* Count a node against the budget and the depth against its cap. */
static int budget(vctx *c, const char *path, int depth)
{
	if (++c->nodes > RULE_NODES_MAX)
		return cs_err_set(c->e, CS_EXIT_BADINPUT,
				  "%s: %s: rule too large (more than %d nodes)", c->name, path,
				  RULE_NODES_MAX);
	if (depth > RULE_DEPTH_MAX)
		return cs_err_set(c->e, CS_EXIT_BADINPUT,
				  "%s: %s: rule nested too deep (more than %d levels)", c->name,
				  path, RULE_DEPTH_MAX);
	return 0;
}

/* A tag list at path: an array of at most 64 one-line strings of 1..64 bytes. */
static int v_tags(vctx *c, const json_t *a, const char *path)
{
	char sub[JV_PATH_MAX];
	size_t i;
	json_t *t;

	if (jv_expect(a, JV_ARRAY, c->name, path, c->e))
		return CS_EXIT_BADINPUT;
	if (json_array_size(a) > SELECT_TAGS_MAX)
		return cs_err_set(c->e, CS_EXIT_BADINPUT, "%s: %s: more than %d tags", c->name,
				  path, SELECT_TAGS_MAX);
	json_array_foreach(a, i, t) {
		const char *s;

		jv_path_index(sub, sizeof(sub), path, i);
		if (jv_expect(t, JV_TEXT, c->name, sub, c->e))
			return CS_EXIT_BADINPUT;
		s = json_string_value(t);
		if (json_string_length(t) > TAG_MAX || strlen(s) != json_string_length(t))
			return cs_err_set(c->e, CS_EXIT_BADINPUT,
					  "%s: %s: expected a tag of at most %d bytes", c->name,
					  sub, TAG_MAX);
		for (size_t k = 0; s[k]; k++)
			if ((unsigned char) s[k] <= 0x20 || s[k] == 0x7f)
				return cs_err_set(c->e, CS_EXIT_BADINPUT,
						  "%s: %s: expected a tag without spaces or "
						  "control characters",
						  c->name, sub);
	}
	return 0;
}

static int v_select(vctx *c, const json_t *s, const char *path)
{
	char sub[JV_PATH_MAX];
	json_t *v;

	if (jv_expect(s, JV_OBJECT, c->name, path, c->e) ||
	    jv_only_keys(s, select_keys, c->name, path, c->e))
		return CS_EXIT_BADINPUT;
	if ((v = json_object_get(s, "tags"))) {
		jv_path_key(sub, sizeof(sub), path, "tags");
		if (v_tags(c, v, sub))
			return CS_EXIT_BADINPUT;
	}
	if ((v = json_object_get(s, "not_tags"))) {
		jv_path_key(sub, sizeof(sub), path, "not_tags");
		if (v_tags(c, v, sub))
			return CS_EXIT_BADINPUT;
	}
	if (jv_get(s, "hypothesis", JV_TEXT, 0, c->name, path, &v, c->e))
		return CS_EXIT_BADINPUT;
	if (v && (!hyp_id_valid(json_string_value(v)) ||
		  strlen(json_string_value(v)) != json_string_length(v))) {
		jv_path_key(sub, sizeof(sub), path, "hypothesis");
		return cs_err_set(c->e, CS_EXIT_BADINPUT,
				  "%s: %s: expected a hypothesis id (H1, H2, ...)", c->name, sub);
	}
	return 0;
}

/* An EXPR at path; *looks is set when it reads runs (an aggregate somewhere). */
static int v_expr(vctx *c, const json_t *x, const char *path, int depth, int *looks)
{
	char sub[JV_PATH_MAX], list[128];
	json_t *v;

	*looks = 0;
	if (budget(c, path, depth))
		return CS_EXIT_BADINPUT;
	if (json_is_number(x))
		return 0;
	if (!json_is_object(x))
		return cs_err_set(c->e, CS_EXIT_BADINPUT,
				  "%s: %s: expected a number, {\"agg\": ...} or {\"ratio\": [a, b]}, "
				  "got %s",
				  c->name, path, jv_value_name(x));
	if (json_object_get(x, "ratio")) {
		int l1 = 0, l2 = 0;

		if (jv_only_keys(x, ratio_keys, c->name, path, c->e) ||
		    jv_get(x, "ratio", JV_ARRAY, 1, c->name, path, &v, c->e))
			return CS_EXIT_BADINPUT;
		jv_path_key(sub, sizeof(sub), path, "ratio");
		if (json_array_size(v) != 2)
			return cs_err_set(c->e, CS_EXIT_BADINPUT,
					  "%s: %s: expected [numerator, denominator], got %zu "
					  "elements",
					  c->name, sub, json_array_size(v));
		{
			char p0[JV_PATH_MAX], p1[JV_PATH_MAX];

			jv_path_index(p0, sizeof(p0), sub, 0);
			jv_path_index(p1, sizeof(p1), sub, 1);
			if (v_expr(c, json_array_get(v, 0), p0, depth + 1, &l1) ||
			    v_expr(c, json_array_get(v, 1), p1, depth + 1, &l2))
				return CS_EXIT_BADINPUT;
		}
		*looks = l1 || l2;
		return 0;
	}
	if (!json_object_get(x, "agg"))
		return cs_err_set(c->e, CS_EXIT_BADINPUT,
				  "%s: %s: expected a number, {\"agg\": ...} or {\"ratio\": [a, b]}",
				  c->name, path);
	if (jv_only_keys(x, agg_keys, c->name, path, c->e) ||
	    jv_get(x, "agg", JV_TEXT, 1, c->name, path, &v, c->e))
		return CS_EXIT_BADINPUT;
	if (!jv_in_list(json_string_value(v), aggs)) {
		jv_path_key(sub, sizeof(sub), path, "agg");
		jv_list_str(aggs, list, sizeof(list));
		return cs_err_set(c->e, CS_EXIT_BADINPUT,
				  "%s: %s: unknown aggregate (expected one of: %s)", c->name, sub,
				  list);
	}
	if (jv_get(x, "metric", JV_TEXT, strcmp(json_string_value(v), "count") != 0, c->name,
		   path, &v, c->e))
		return CS_EXIT_BADINPUT;
	if (v && !hyp_metric_known(json_string_value(v))) {
		jv_path_key(sub, sizeof(sub), path, "metric");
		return cs_err_set(c->e, CS_EXIT_BADINPUT,
				  "%s: %s: unknown metric (expected a name from the vocabulary: "
				  "wall_s, qps, lat_mean_ms, ...; see README)",
				  c->name, sub);
	}
	if (jv_get(x, "select", JV_OBJECT, 1, c->name, path, &v, c->e))
		return CS_EXIT_BADINPUT;
	jv_path_key(sub, sizeof(sub), path, "select");
	if (v_select(c, v, sub))
		return CS_EXIT_BADINPUT;
	*looks = 1;
	return 0;
}

static int v_rule(vctx *c, const json_t *r, const char *path, int depth)
{
	char sub[JV_PATH_MAX], list[64];
	const char *key;
	json_t *v;

	if (budget(c, path, depth))
		return CS_EXIT_BADINPUT;
	if (jv_expect(r, JV_OBJECT, c->name, path, c->e) ||
	    jv_only_keys(r, rule_keys, c->name, path, c->e))
		return CS_EXIT_BADINPUT;
	jv_list_str(rule_keys, list, sizeof(list));
	if (json_object_size(r) == 0)
		return cs_err_set(c->e, CS_EXIT_BADINPUT,
				  "%s: %s: empty rule (expected one of: %s)", c->name, path, list);
	if (json_object_size(r) > 1)
		return cs_err_set(c->e, CS_EXIT_BADINPUT,
				  "%s: %s: expected exactly one of: %s, got %zu keys", c->name,
				  path, list, json_object_size(r));
	key = json_object_iter_key(json_object_iter((json_t *) r));
	v = json_object_get(r, key);
	jv_path_key(sub, sizeof(sub), path, key);
	if (strcmp(key, "all") == 0 || strcmp(key, "any") == 0) {
		size_t i;
		json_t *x;

		if (jv_expect(v, JV_ARRAY, c->name, sub, c->e))
			return CS_EXIT_BADINPUT;
		if (json_array_size(v) == 0)
			return cs_err_set(c->e, CS_EXIT_BADINPUT,
					  "%s: %s: empty rule (expected a non-empty array of rules)",
					  c->name, sub);
		json_array_foreach(v, i, x) {
			char el[JV_PATH_MAX];

			jv_path_index(el, sizeof(el), sub, i);
			if (v_rule(c, x, el, depth + 1))
				return CS_EXIT_BADINPUT;
		}
		return 0;
	}
	if (strcmp(key, "not") == 0)
		return v_rule(c, v, sub, depth + 1);
	/* cmp */
	{
		json_t *left, *op, *right;
		char lp[JV_PATH_MAX], rp[JV_PATH_MAX];
		int l1 = 0, l2 = 0;

		if (jv_expect(v, JV_OBJECT, c->name, sub, c->e) ||
		    jv_only_keys(v, cmp_keys, c->name, sub, c->e) ||
		    jv_get(v, "left", JV_ANY, 1, c->name, sub, &left, c->e) ||
		    jv_get(v, "op", JV_TEXT, 1, c->name, sub, &op, c->e) ||
		    jv_get(v, "right", JV_ANY, 1, c->name, sub, &right, c->e))
			return CS_EXIT_BADINPUT;
		if (!jv_in_list(json_string_value(op), ops)) {
			jv_path_key(lp, sizeof(lp), sub, "op");
			jv_list_str(ops, list, sizeof(list));
			return cs_err_set(c->e, CS_EXIT_BADINPUT,
					  "%s: %s: unknown operator (expected one of: %s)", c->name,
					  lp, list);
		}
		jv_path_key(lp, sizeof(lp), sub, "left");
		jv_path_key(rp, sizeof(rp), sub, "right");
		if (v_expr(c, left, lp, depth + 1, &l1) || v_expr(c, right, rp, depth + 1, &l2))
			return CS_EXIT_BADINPUT;
		if (!l1 && !l2)
			return cs_err_set(c->e, CS_EXIT_BADINPUT,
					  "%s: %s: compares two constants (expected an aggregate "
					  "over runs on one side)",
					  c->name, sub);
	}
	return 0;
}

int rule_select_validate(const json_t *sel, const char *name, const char *where, cs_err *e)
{
	vctx c = { .name = name ? name : "select", .e = e, .nodes = 0 };

	return v_select(&c, sel, where ? where : "$");
}

int rule_validate(const json_t *rule, const char *name, const char *where, cs_err *e)
{
	vctx c = { .name = name ? name : "rule", .e = e, .nodes = 0 };

	if (!rule)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s: missing rule", c.name,
				  where ? where : "$");
	return v_rule(&c, rule, where ? where : "$", 0);
}

/* ---- evaluation ---- */

typedef struct ectx {
	const json_t *runs;
	int oom;
} ectx;

/* json_t for a three-valued result. */
static json_t *tv_json(int r)
{
	return r > 0 ? json_true() : r == 0 ? json_false() : json_null();
}

/* Steal v into obj[key]; note a failure (v NULL or no memory). */
static void put(ectx *c, json_t *obj, const char *key, json_t *v)
{
	if (!obj) {
		json_decref(v);
		c->oom = 1;
	} else if (!v || json_object_set_new(obj, key, v)) {
		c->oom = 1;
	}
}

/* Steal v onto arr; note a failure. */
static void push(ectx *c, json_t *arr, json_t *v)
{
	if (!arr) {
		json_decref(v);
		c->oom = 1;
	} else if (!v || json_array_append_new(arr, v)) {
		c->oom = 1;
	}
}

/* Does run match the selection? */
static int selected(const json_t *run, const json_t *sel)
{
	const json_t *tags = json_object_get(run, "tags");
	const json_t *hyps = json_object_get(run, "hypotheses");
	const json_t *h;
	size_t i;
	json_t *t;

	json_array_foreach(json_object_get(sel, "tags"), i, t)
		if (!cs_json_has_string(tags, json_string_value(t)))
			return 0;
	json_array_foreach(json_object_get(sel, "not_tags"), i, t)
		if (cs_json_has_string(tags, json_string_value(t)))
			return 0;
	h = json_object_get(sel, "hypothesis");
	if (h && !cs_json_has_string(hyps, json_string_value(h)))
		return 0;
	return 1;
}

int rule_select_match(const json_t *run, const json_t *sel)
{
	return selected(run, sel);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Aggregate x over the runs; returns 1 and *val when determined, else 0. */
static int e_agg(ectx *c, const json_t *x, double *val, json_t *tr)
{
	const char *agg = json_string_value(json_object_get(x, "agg"));
	const json_t *m = json_object_get(x, "metric");
	const char *metric = m ? json_string_value(m) : NULL;
	const json_t *sel = json_object_get(x, "select");
	json_t *ids = json_array(), *vals = json_array(), *run;
	size_t nruns = json_array_size(c->runs), nmatched = 0, n = 0, i;
	double *v = malloc((nruns ? nruns : 1) * sizeof(*v)), r = 0;
	const char *why = NULL;
	int ok = 0;

	put(c, tr, "agg", json_string(agg));
	if (metric)
		put(c, tr, "metric", json_string(metric));
	put(c, tr, "select", json_deep_copy(sel));
	if (!v || !ids || !vals) {
		c->oom = 1;
		goto out;
	}
	json_array_foreach(c->runs, i, run) {
		const json_t *mv;

		if (!selected(run, sel))
			continue;
		nmatched++;
		push(c, ids, json_string(json_string_value(json_object_get(run, "id"))));
		if (!metric) {
			push(c, vals, json_null());
			continue;
		}
		mv = json_object_get(json_object_get(run, "metrics"), metric);
		if (json_is_number(mv)) {
			v[n++] = json_number_value(mv);
			push(c, vals, json_real(json_number_value(mv)));
		} else {
			push(c, vals, json_null());
		}
	}
	if (strcmp(agg, "count") == 0) {
		r = (double) (metric ? n : nmatched);
		ok = 1;
		goto out;
	}
	if (nmatched == 0) {
		why = "the selection matched no run";
		goto out;
	}
	if (n == 0) {
		why = "the metric is missing in every matched run";
		goto out;
	}
	if (strcmp(agg, "min") == 0 || strcmp(agg, "max") == 0) {
		int mx = agg[1] == 'a';

		r = v[0];
		for (i = 1; i < n; i++)
			if (mx ? v[i] > r : v[i] < r)
				r = v[i];
	} else if (strcmp(agg, "mean") == 0) {
		r = 0;
		for (i = 0; i < n; i++)
			r += v[i];
		r /= (double) n;
		if (!isfinite(r)) {
			/* the sum overflowed; a running mean stays in range */
			r = 0;
			for (i = 0; i < n; i++)
				r += v[i] / (double) n;
		}
	} else { /* median */
		qsort(v, n, sizeof(*v), dbl_cmp);
		r = n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2;
	}
	if (!isfinite(r)) {
		why = "the aggregate is not a finite number";
		goto out;
	}
	ok = 1;
out:
	put(c, tr, "runs", ids);
	put(c, tr, "values", vals);
	put(c, tr, "value", ok ? json_real(r) : json_null());
	if (why)
		put(c, tr, "why", json_string(why));
	free(v);
	*val = r;
	return ok;
}

/* Evaluate EXPR x; 1 and *val when determined, else 0. *tr gets its trace (new). */
static int e_expr(ectx *c, const json_t *x, double *val, json_t **tr)
{
	json_t *ratio;
	int ok;

	*val = 0;
	if (json_is_number(x)) {
		*val = json_number_value(x);
		*tr = json_real(*val);
		if (!*tr)
			c->oom = 1;
		return 1;
	}
	*tr = json_object();
	if (!*tr) {
		c->oom = 1;
		return 0;
	}
	ratio = json_object_get(x, "ratio");
	if (ratio) {
		json_t *pair = json_array(), *t0 = NULL, *t1 = NULL;
		double a, b;
		int ok0 = e_expr(c, json_array_get(ratio, 0), &a, &t0);
		int ok1 = e_expr(c, json_array_get(ratio, 1), &b, &t1);

		push(c, pair, t0);
		push(c, pair, t1);
		put(c, *tr, "ratio", pair);
		ok = ok0 && ok1;
		if (ok && b == 0) {
			put(c, *tr, "why", json_string("division by zero"));
			ok = 0;
		} else if (ok && !isfinite(a / b)) {
			put(c, *tr, "why", json_string("the ratio is not a finite number"));
			ok = 0;
		}
		*val = ok ? a / b : 0;
		put(c, *tr, "value", ok ? json_real(*val) : json_null());
		return ok;
	}
	return e_agg(c, x, val, *tr);
}

/* Evaluate rule r: 1, 0 or -1; *tr gets its trace (new). */
static int e_rule(ectx *c, const json_t *r, json_t **tr)
{
	const char *key = json_object_iter_key(json_object_iter((json_t *) r));
	const json_t *v = json_object_get(r, key);
	int res;

	*tr = json_object();
	if (!*tr) {
		c->oom = 1;
		return -1;
	}
	if (strcmp(key, "all") == 0 || strcmp(key, "any") == 0) {
		int all = key[1] == 'l', any_false = 0, any_true = 0, any_undet = 0;
		json_t *parts = json_array(), *x;
		size_t i;

		json_array_foreach(v, i, x) {
			json_t *t = NULL;
			int rr = e_rule(c, x, &t);

			any_false |= rr == 0;
			any_true |= rr == 1;
			any_undet |= rr < 0;
			push(c, parts, t);
		}
		put(c, *tr, key, parts);
		if (all)
			res = any_false ? 0 : any_undet ? -1 : 1;
		else
			res = any_true ? 1 : any_undet ? -1 : 0;
	} else if (strcmp(key, "not") == 0) {
		json_t *t = NULL;
		int rr = e_rule(c, v, &t);

		put(c, *tr, "not", t);
		res = rr < 0 ? -1 : !rr;
	} else {
		const char *op = json_string_value(json_object_get(v, "op"));
		json_t *cmp = json_object(), *tl = NULL, *trr = NULL;
		double a, b;
		int okl = e_expr(c, json_object_get(v, "left"), &a, &tl);
		int okr = e_expr(c, json_object_get(v, "right"), &b, &trr);

		put(c, cmp, "left", tl);
		put(c, cmp, "op", json_string(op));
		put(c, cmp, "right", trr);
		put(c, *tr, "cmp", cmp);
		if (!okl || !okr)
			res = -1;
		else if (strcmp(op, "<") == 0)
			res = a < b;
		else if (strcmp(op, "<=") == 0)
			res = a <= b;
		else if (strcmp(op, ">") == 0)
			res = a > b;
		else if (strcmp(op, ">=") == 0)
			res = a >= b;
		else if (strcmp(op, "==") == 0)
			res = a == b;
		else
			res = a != b;
	}
	put(c, *tr, "result", tv_json(res));
	return res;
}

/* ---- could a rule hold? ---- */

typedef struct rctx {
	rule_cmp_fn fn;
	void *ud;
	size_t nodes;
} rctx;

/* 1 if r can be true given what fn says of its comparisons, else 0 (see rule_can_hold). */
static int r_can(rctx *c, const json_t *r, char *path, size_t cap, int depth)
{
	const char *key = json_object_iter_key(json_object_iter((json_t *) r));
	const json_t *v = key ? json_object_get(r, key) : NULL;
	size_t len = strlen(path);
	int res;

	if (!key || ++c->nodes > RULE_NODES_MAX || depth > RULE_DEPTH_MAX)
		return 1; /* rule_validate refuses these; never claim what was not looked at */
	if (!strcmp(key, "all") || !strcmp(key, "any")) {
		int all = key[1] == 'l', any_can = 0, all_can = 1;
		const json_t *x;
		size_t i;

		json_array_foreach(v, i, x) {
			int rr;

			snprintf(path + len, cap - len, ".%s[%zu]", key, i);
			rr = r_can(c, x, path, cap, depth + 1);
			any_can |= rr;
			all_can &= rr;
		}
		res = all ? all_can : any_can;
	} else if (!strcmp(key, "not")) {
		snprintf(path + len, cap - len, ".not");
		r_can(c, v, path, cap, depth + 1); /* its comparisons are still shown to fn */
		res = 1; /* what a part must be is not tracked: "not" can always hold */
	} else {
		snprintf(path + len, cap - len, ".cmp");
		res = c->fn(v, path, c->ud) != 0; /* -1, unknown: it can */
	}
	path[len] = '\0';
	return res;
}

int rule_can_hold(const json_t *rule, const char *where, rule_cmp_fn fn, void *ud)
{
	char path[1024];
	rctx c = {fn, ud, 0};

	snprintf(path, sizeof(path), "%s", where ? where : "$");
	if (!json_is_object(rule))
		return 1;
	return r_can(&c, rule, path, sizeof(path), 1);
}

/* Every run an object with a string id, string-array tags/hypotheses, an object of metrics. */
static int check_runs(const json_t *runs, cs_err *e)
{
	char path[JV_PATH_MAX], sub[JV_PATH_MAX];
	size_t i, k;
	json_t *run, *v, *t;

	if (jv_expect(runs, JV_ARRAY, "runs", "$", e))
		return CS_EXIT_BADINPUT;
	json_array_foreach(runs, i, run) {
		jv_path_index(path, sizeof(path), "$", i);
		if (jv_expect(run, JV_OBJECT, "runs", path, e) ||
		    jv_get(run, "id", JV_STRING, 1, "runs", path, &v, e))
			return CS_EXIT_BADINPUT;
		/* null stands for absent (json_pack's "O?" writes it for a missing member) */
		if (!json_is_null(json_object_get(run, "metrics")) &&
		    jv_get(run, "metrics", JV_OBJECT, 0, "runs", path, &v, e))
			return CS_EXIT_BADINPUT;
		for (int f = 0; f < 2; f++) {
			const char *key = f ? "hypotheses" : "tags";

			if (json_is_null(json_object_get(run, key)))
				continue;
			if (jv_get(run, key, JV_ARRAY, 0, "runs", path, &v, e))
				return CS_EXIT_BADINPUT;
			jv_path_key(sub, sizeof(sub), path, key);
			json_array_foreach(v, k, t) {
				char el[JV_PATH_MAX];

				jv_path_index(el, sizeof(el), sub, k);
				if (jv_expect(t, JV_STRING, "runs", el, e))
					return CS_EXIT_BADINPUT;
			}
		}
	}
	return 0;
}

int rule_eval(const json_t *rule, const json_t *runs, int *result, json_t **trace, cs_err *e)
{
	ectx c = { .runs = runs, .oom = 0 };
	json_t *tr = NULL;
	int rc, res;

	*result = -1;
	if (trace)
		*trace = NULL;
	rc = rule_validate(rule, "rule", "$", e);
	if (rc)
		return rc;
	rc = check_runs(runs, e);
	if (rc)
		return rc;
	res = e_rule(&c, rule, &tr);
	if (c.oom) {
		json_decref(tr);
		return cs_err_set(e, CS_EXIT_INTERNAL, "rule evaluation: out of memory");
	}
	*result = res;
	if (trace)
		*trace = tr;
	else
		json_decref(tr);
	return 0;
}

/* ---- the rule language as JSON Schema ---- */

/* A JSON array of the NULL-terminated list (new). */
static json_t *str_array(const char *const *list)
{
	json_t *a = json_array();

	for (size_t i = 0; a && list[i]; i++)
		json_array_append_new(a, json_string(list[i]));
	return a;
}

/* {"type": "object", "additionalProperties": false, "properties": {key: {} for keys}} (new). */
static json_t *closed_object(const char *const *keys)
{
	json_t *props = json_object();

	for (size_t i = 0; props && keys[i]; i++)
		json_object_set_new(props, keys[i], json_object());
	return json_pack("{s:s, s:b, s:o}", "type", "object", "additionalProperties", 0,
			 "properties", props);
}

/* Set properties.key of an object schema to v (stolen). */
static void prop(json_t *obj, const char *key, json_t *v)
{
	json_object_set_new(json_object_get(obj, "properties"), key, v);
}

json_t *rule_schema_defs(void)
{
	json_t *defs = json_object(), *rule, *cmp, *agg, *ratio, *sel, *tags, *cexpr;

	/* rule: exactly one of all / any / not / cmp (rule_keys). */
	rule = closed_object(rule_keys);
	json_object_set_new(rule, "minProperties", json_integer(1));
	json_object_set_new(rule, "maxProperties", json_integer(1));
	prop(rule, "all", json_pack("{s:s, s:i, s:{s:s}}", "type", "array", "minItems", 1, "items",
				    "$ref", "#/$defs/rule"));
	prop(rule, "any", json_pack("{s:s, s:i, s:{s:s}}", "type", "array", "minItems", 1, "items",
				    "$ref", "#/$defs/rule"));
	prop(rule, "not", json_pack("{s:s}", "$ref", "#/$defs/rule"));
	/* cmp: left op right, and not two constants (an aggregate over runs on one side). */
	cmp = closed_object(cmp_keys);
	json_object_set_new(cmp, "required", str_array(cmp_keys));
	prop(cmp, "left", json_pack("{s:s}", "$ref", "#/$defs/expr"));
	prop(cmp, "op", json_pack("{s:o}", "enum", str_array(ops)));
	prop(cmp, "right", json_pack("{s:s}", "$ref", "#/$defs/expr"));
	json_object_set_new(cmp, "not",
			    json_pack("{s:{s:{s:s}, s:{s:s}}}", "properties", "left", "$ref",
				      "#/$defs/const_expr", "right", "$ref", "#/$defs/const_expr"));
	prop(rule, "cmp", cmp);
	json_object_set_new(rule, "description",
			    json_string("exactly one of {all: [rule]}, {any: [rule]}, {not: rule}, "
					"{cmp: {left, op, right}}"));
	/* expr: a number, an aggregate, a ratio. */
	agg = closed_object(agg_keys);
	json_object_set_new(agg, "required", json_pack("[s, s]", "agg", "select"));
	prop(agg, "agg", json_pack("{s:o}", "enum", str_array(aggs)));
	prop(agg, "metric", json_pack("{s:o}", "enum", str_array(hyp_metrics())));
	prop(agg, "select", json_pack("{s:s}", "$ref", "#/$defs/select"));
	json_object_set_new(agg, "if",
			    json_pack("{s:{s:{s:{s:s}}}}", "properties", "agg", "not", "const",
				      "count"));
	json_object_set_new(agg, "then", json_pack("{s:[s]}", "required", "metric"));
	ratio = closed_object(ratio_keys);
	json_object_set_new(ratio, "required", str_array(ratio_keys));
	prop(ratio, "ratio", json_pack("{s:s, s:i, s:i, s:{s:s}}", "type", "array", "minItems", 2,
				       "maxItems", 2, "items", "$ref", "#/$defs/expr"));
	cexpr = json_pack("{s:[{s:s}, {s:s, s:[s], s:{s:{s:s, s:{s:s}}}}]}", "anyOf", "type",
			  "number", "type", "object", "required", "ratio", "properties", "ratio",
			  "type", "array", "items", "$ref", "#/$defs/const_expr");
	/* select: tags, not_tags, hypothesis. */
	sel = closed_object(select_keys);
	prop(sel, "tags", json_pack("{s:s}", "$ref", "#/$defs/tags"));
	prop(sel, "not_tags", json_pack("{s:s}", "$ref", "#/$defs/tags"));
	prop(sel, "hypothesis", json_pack("{s:s, s:s}", "type", "string", "pattern",
					  "^H[1-9][0-9]{0,5}$"));
	tags = json_pack("{s:s, s:i, s:{s:s, s:i, s:i, s:s}}", "type", "array", "maxItems",
			 SELECT_TAGS_MAX, "items", "type", "string", "minLength", 1, "maxLength",
			 TAG_MAX, "pattern", "^[^\\u0000-\\u0020\\u007f]+$");
	json_object_set_new(defs, "rule", rule);
	json_object_set_new(defs, "expr",
			    json_pack("{s:[{s:s}, {s:s}, {s:s}]}", "anyOf", "type", "number", "$ref",
				      "#/$defs/agg", "$ref", "#/$defs/ratio"));
	json_object_set_new(defs, "const_expr", cexpr);
	json_object_set_new(defs, "agg", agg);
	json_object_set_new(defs, "ratio", ratio);
	json_object_set_new(defs, "select", sel);
	json_object_set_new(defs, "tags", tags);
	return defs;
}
