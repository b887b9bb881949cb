/*
 * verdict.c - verdicts from the registered accept and reject rules.
 *
 * Everything a verdict depends on comes from the ledger: the latest
 * registered version of each hypothesis (hypothesis or amendment
 * records), the plan (ledger_plan), the run records, the refutations and
 * the deviations. A verdict record names the runs (seq and hash) and the
 * as-of seq it was computed from, so evaluating again "as of" that seq
 * reproduces it exactly; the rules never run as code (hypotheses/hyp.h).
 *
 * Which runs a rule sees:
 *  - a confirmatory hypothesis (kind confirmatory or non-cause, registered
 *    and last amended before the first run_start, in a study with a plan):
 *    the complete runs of class "design" whose spec the plan maps to it.
 *    Exploratory runs (specs the plan does not name) and holdout runs never
 *    count, whatever they are tagged or say they serve.
 *  - an exploratory one (kind exploratory, post hoc, or no plan): the
 *    complete non-holdout runs that serve it. Its verdict is listed apart.
 * A run's tags are those its own settings give it (harness_run_tags), plus
 * labels only where the plan registered the spec.
 *
 * The sceptic step: an accept rule that holds makes a confirmatory
 * hypothesis "accepted" only when the plan's sceptic runs for it are all
 * done and do not refute it: the rules are evaluated again with each
 * sceptic run in place of the design runs with its tags (its replicate
 * under other partitions, queries or conditions), and must still accept
 * and not reject. Sceptic runs missing or none registered: "provisional".
 * Refuting: "refuted", as a sceptic's refutation record makes it.
 */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "holdout.h"
#include "hyp.h"
#include "ledger.h"

#include <math.h>

typedef struct {
	int64_t as_of;
	ledger_plan plan;
	json_t *hyps;   /* id -> {"doc", "seq", "access_state"}: the latest version */
	json_t *reg;    /* id -> {"doc", "seq"}: the latest version before the first run_start */
	json_t *order;  /* ids in first-registration order */
	json_t *runs;   /* array of {id, tags, hypotheses, metrics, seq, hash} */
	json_t *refute; /* id -> [seq...] */
	json_t *devs;   /* array of {seq, hypothesis|null} */
	json_t *last;   /* id -> latest verdict payload */
	json_t *mchk;   /* id -> [{seq, detail}]: validate's model-check:Hn records */
} gather;

/* The key of an entry's latest verdict: its id, "|amended" for an amended version's entry. */
static void last_key(const char *id, int amended, char *key, size_t cap)
{
	snprintf(key, cap, "%s%s", id, amended ? "|amended" : "");
}

static int collect(const ledger_record *r, void *ud)
{
	gather *g = ud;
	json_t *p;

	if (g->as_of && r->seq > g->as_of)
		return 1;
	p = json_loads(r->payload, 0, NULL);
	if (!p)
		return 0;
	if (!strcmp(r->kind, "hypothesis") || !strcmp(r->kind, "amendment")) {
		const char *id = json_string_value(json_object_get(p, "id"));
		json_t *doc = json_object_get(p, "doc");

		if (id && doc) {
			if (!json_object_get(g->hyps, id))
				json_array_append_new(g->order, json_string(id));
			json_object_set_new(g->hyps, id,
					    json_pack("{s:O,s:I,s:O?}", "doc", doc, "seq", (json_int_t) r->seq,
						      "access_state", json_object_get(p, "access_state")));
			/* the version the plan froze: registered (or amended) before the first run */
			if (!g->plan.first_run_start || r->seq < g->plan.first_run_start)
				json_object_set_new(g->reg, id, json_pack("{s:O,s:I}", "doc", doc, "seq",
									  (json_int_t) r->seq));
		}
	} else if (!strcmp(r->kind, "run")) {
		const char *status = json_string_value(json_object_get(p, "status"));

		if (!status || !strcmp(status, "complete"))
			json_array_append_new(
				g->runs,
				json_pack("{s:O?,s:O?,s:O?,s:O?,s:I,s:s,s:s,s:s,s:b,s:b,s:b,s:b}", "id",
					  json_object_get(p, "run_id"), "tags", json_object_get(p, "tags"),
					  "hypotheses", json_object_get(p, "hypotheses"), "metrics",
					  json_object_get(p, "metrics"), "seq", (json_int_t) r->seq,
					  "hash", r->hash, "class",
					  json_string_value(json_object_get(p, "class")) ?: "exploratory",
					  "spec_sha256",
					  json_string_value(json_object_get(p, "spec_sha256")) ?: "",
					  "holdout", json_is_true(json_object_get(p, "holdout")),
					  "beyond_plan", json_is_true(json_object_get(p, "beyond_plan")),
					  "modelled",
					  json_is_string(json_object_get(p, "device_time")) &&
						  json_is_string(json_object_get(
							  json_object_get(p, "spec"), "device")),
					  "cold", json_is_true(json_object_get(json_object_get(p, "spec"), "cold"))));
	} else if (!strcmp(r->kind, "validation")) {
		const char *c = json_string_value(json_object_get(p, "check"));

		if (c && !strncmp(c, "model-check:", 12)) {
			json_t *a = json_object_get(g->mchk, c + 12);

			if (!a) {
				a = json_array();
				json_object_set_new(g->mchk, c + 12, a);
			}
			json_array_append_new(a, json_pack("{s:I,s:O?}", "seq", (json_int_t) r->seq,
							   "detail", json_object_get(p, "detail")));
		}
	} else if (!strcmp(r->kind, "refutation")) {
		const char *h = json_string_value(json_object_get(p, "hypothesis"));

		if (h) {
			json_t *a = json_object_get(g->refute, h);

			if (!a) {
				a = json_array();
				json_object_set_new(g->refute, h, a);
			}
			json_array_append_new(a, json_integer((json_int_t) r->seq));
		}
	} else if (!strcmp(r->kind, "deviation")) {
		json_array_append_new(g->devs,
				      json_pack("{s:I,s:O?}", "seq", (json_int_t) r->seq, "hypothesis",
						json_object_get(p, "hypothesis")));
	} else if (!strcmp(r->kind, "verdict")) {
		const char *h = json_string_value(json_object_get(p, "hypothesis"));
		char key[128];

		if (h) {
			last_key(h, json_is_string(json_object_get(p, "version")), key, sizeof(key));
			json_object_set(g->last, key, p);
		}
	}
	json_decref(p);
	return 0;
}

const char *report_tri(int result)
{
	return result == 1 ? "true" : result == 0 ? "false" : "undetermined";
}

/* Does run r serve hypothesis id? */
static int serves(const json_t *r, const char *id)
{
	return cs_json_has_string(json_object_get(r, "hypotheses"), id);
}

static int is_class_tag(const char *t)
{
	return !strcmp(t, "design") || !strcmp(t, "sceptic") || !strcmp(t, "holdout") ||
	       !strcmp(t, "exploratory");
}

/* Same tags, class tags aside? */
static int same_tags(const json_t *a, const json_t *b)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
		if (json_is_string(v) && !is_class_tag(json_string_value(v)) &&
		    !cs_json_has_string(b, json_string_value(v)))
			return 0;
	json_array_foreach(b, i, v)
		if (json_is_string(v) && !is_class_tag(json_string_value(v)) &&
		    !cs_json_has_string(a, json_string_value(v)))
			return 0;
	return 1;
}

/* The runs with the sceptic runs in place of the design runs of the same tags (new). */
static json_t *sceptic_view(const json_t *runs, const json_t *sruns)
{
	json_t *view = json_array(), *r, *s;
	size_t i, j;

	json_array_foreach(runs, i, r) {
		int replaced = 0;

		json_array_foreach(sruns, j, s)
			replaced |= same_tags(json_object_get(r, "tags"), json_object_get(s, "tags"));
		if (!replaced)
			json_array_append(view, r);
	}
	json_array_foreach(sruns, j, s)
		json_array_append(view, s);
	return view;
}

static json_t *run_names(const json_t *runs)
{
	json_t *names = json_array(), *r;
	size_t i;

	json_array_foreach(runs, i, r)
		json_array_append_new(names, json_pack("{s:O,s:O,s:O}", "run_id", json_object_get(r, "id"),
						       "seq", json_object_get(r, "seq"), "hash",
						       json_object_get(r, "hash")));
	return names;
}

/* Evaluate accept and reject on runs, naming hypothesis id on failure. */
static int eval_both(const json_t *doc, const json_t *runs, const char *id, int *acc,
		     json_t **acc_trace, int *rej, json_t **rej_trace, cs_err *e)
{
	int rc = rule_eval(json_object_get(doc, "accept"), runs, acc, acc_trace, e);

	if (!rc)
		rc = rule_eval(json_object_get(doc, "reject"), runs, rej, rej_trace, e);
	if (rc && e) {
		char msg[CS_ERR_MAX];

		/* name the hypothesis whose registered rule could not be evaluated */
		memcpy(msg, e->msg, sizeof(msg));
		cs_err_set(e, rc, "%s: %.960s", id, msg);
	}
	return rc;
}

/* ---- findings and model checks ---- */

/* Metrics the engine counts: no device model can move them. */
static const char *const engine_metrics[] = {
	"queries", "recall_at_k", "results_digest", "engine_reads", "reads_per_query",
	"bytes_per_read", "resident_fraction_before", "mem_peak_bytes", NULL,
};
/* Metrics that are the device's per-read figures alone: under a model, the model's. */
static const char *const per_read_metrics[] = {
	"engine_read_ms_mean", "device_read_ms_mean", "io_over_wall", "device_busy",
	"inflight_median", NULL,
};

static int in_list(const char *const *l, const char *s)
{
	for (; *l; l++)
		if (!strcmp(*l, s))
			return 1;
	return 0;
}

/* Every "metric" a rule names, once each, into out. */
static void rule_metrics(const json_t *x, json_t *out)
{
	const char *k;
	size_t i;
	json_t *v;

	if (json_is_array(x)) {
		json_array_foreach(x, i, v)
			rule_metrics(v, out);
	} else if (json_is_object(x)) {
		json_object_foreach((json_t *) x, k, v) {
			if (!strcmp(k, "metric") && json_is_string(v)) {
				if (!cs_json_has_string(out, json_string_value(v)))
					json_array_append(out, v);
			} else {
				rule_metrics(v, out);
			}
		}
	}
}

/*
 * What decides a hypothesis's rules on its runs (new), for a version that
 * validate did not classify (harness/modelcheck.c classifies each
 * comparison before any run, and its record is what counts): each metric's
 * basis, and "finding" or "model check". A metric the engine counts is
 * the engine's; with a cold run on the real disk, the device's; with
 * modelled runs (and warm ones, whose times are CPU alone), a per-read
 * figure is the model's own, and a time (wall, latency, QPS) is the
 * model's when the modelled runs read the same number of pages a query
 * (within 1%), so that nothing measured differs between them, else the
 * engine's reads times the model's latency. A hypothesis all of whose metrics rest
 * on the model alone is a model check: its outcome is fixed by the
 * model's parameters, and it is never counted as confirmatory evidence.
 * What this cannot see: a rule whose threshold the model's parameters
 * would cross under other reads (docs/device-model.md).
 */
static json_t *evidence(const json_t *doc, const json_t *runs)
{
	json_t *metrics = json_array(), *basis = json_object(), *m, *r;
	double lo = 0, hi = 0;
	size_t i, j;
	int real = 0, model_only = 1, rpq = 0, nmod = 0;

	rule_metrics(json_object_get(doc, "accept"), metrics);
	rule_metrics(json_object_get(doc, "reject"), metrics);
	json_array_foreach(runs, i, r) {
		double x = json_number_value(
			json_object_get(json_object_get(r, "metrics"), "reads_per_query"));

		/* a warm run without a model reads nothing from a device: its times are CPU */
		if (!json_is_true(json_object_get(r, "modelled"))) {
			real |= json_is_true(json_object_get(r, "cold"));
			continue;
		}
		nmod++;
		if (x > 0) {
			lo = rpq ? (x < lo ? x : lo) : x;
			hi = rpq ? (x > hi ? x : hi) : x;
			rpq = 1;
		}
	}
	json_array_foreach(metrics, j, m) {
		const char *name = json_string_value(m), *b;

		if (in_list(engine_metrics, name))
			b = "engine";
		else if (!json_array_size(runs))
			b = "no runs";
		else if (real || !nmod)
			b = real ? "device" : "engine";
		else if (in_list(per_read_metrics, name) || (rpq && hi <= lo * 1.01))
			b = "device model";
		else
			b = "engine reads and device model";
		model_only &= !strcmp(b, "device model");
		json_object_set_new(basis, name, json_string(b));
	}
	json_decref(metrics);
	return json_pack("{s:s,s:o}", "evidence",
			 json_object_size(basis) && model_only ? "model check" : "finding", "basis",
			 basis);
}

/*
 * The classification validate recorded for version seq of hypothesis id
 * under the plan in force (its plan_sha256), the latest such (borrowed),
 * or NULL: validated before the classification, or amended since.
 */
static const json_t *classified(const gather *g, const char *id, int64_t seq)
{
	const json_t *psha = json_object_get(g->plan.rec, "plan_sha256"), *found = NULL, *x;
	size_t i;

	json_array_foreach(json_object_get(g->mchk, id), i, x) {
		const json_t *d = json_object_get(x, "detail");

		if (json_integer_value(json_object_get(d, "hypothesis_seq")) == seq &&
		    json_is_string(json_object_get(d, "evidence")) && psha &&
		    json_equal(json_object_get(d, "plan_sha256"), (json_t *) psha))
			found = x;
	}
	return found;
}

/*
 * The verdict's evidence from validate's record mc (new): "evidence", each
 * comparison's basis ("clauses"), and each metric's ("basis": "device
 * model" only where every comparison of it is the model's).
 */
static json_t *evidence_recorded(const json_t *mc)
{
	const json_t *d = json_object_get(mc, "detail"), *cl, *m;
	json_t *basis = json_object(), *clauses = json_array();
	size_t i, j;

	json_array_foreach(json_object_get(d, "clauses"), i, cl) {
		const char *b = json_string_value(json_object_get(cl, "basis")) ?: "?";

		json_array_append_new(clauses, json_pack("{s:O?,s:s,s:O?,s:O?,s:O?}", "path",
							 json_object_get(cl, "path"), "basis", b,
							 "metrics", json_object_get(cl, "metrics"),
							 "outcome", json_object_get(cl, "outcome"),
							 "why", json_object_get(cl, "why")));
		json_array_foreach(json_object_get(cl, "metrics"), j, m) {
			const char *was = json_string_value(json_object_get(basis, json_string_value(m)));

			if (!was || !strcmp(was, "device model"))
				json_object_set_new(basis, json_string_value(m), json_string(b));
		}
	}
	return json_pack("{s:O?,s:o,s:o,s:{s:s,s:O}}", "evidence", json_object_get(d, "evidence"),
			 "basis", basis, "clauses", clauses, "classified", "by", "validate", "seq",
			 json_object_get(mc, "seq"));
}

/* The values of metric in the runs sel matches (new arrays: values, run ids). */
static size_t group_values(const json_t *runs, const json_t *sel, const char *metric, double **v,
			   json_t *ids)
{
	size_t n = 0, i;
	json_t *r;

	*v = calloc(json_array_size(runs) + 1, sizeof(**v));
	if (!*v)
		return 0;
	json_array_foreach(runs, i, r) {
		const json_t *x = json_object_get(json_object_get(r, "metrics"), metric);

		if (!rule_select_match(r, sel) || !json_is_number(x))
			continue;
		(*v)[n++] = json_number_value(x);
		json_array_append(ids, json_object_get(r, "id"));
	}
	return n;
}

/*
 * An interval decision (decision "interval") over runs: 1 accept (the
 * whole interval beyond the threshold), 0 reject (wholly on the other
 * side), -1 unresolved (straddling, or no interval). *out: what was seen
 * (new): the method, the estimate, the interval, n on each side, the runs.
 * plan_seed: the plan's seed (or NULL), mixed into a bootstrap's.
 */
static int interval_decide(const json_t *doc, const json_t *runs, const json_t *plan_seed,
			   json_t **out)
{
	const json_t *iv = json_object_get(doc, "interval");
	const char *metric = json_string_value(json_object_get(iv, "metric"));
	const char *op = json_string_value(json_object_get(iv, "op"));
	const json_t *over = json_object_get(iv, "over");
	double thr = json_number_value(json_object_get(iv, "threshold")), *a = NULL, *b = NULL;
	json_t *ida = json_array(), *idb = json_array();
	holdout_iv_opts o = {0};
	holdout_interval res;
	size_t na, nb = 0;
	int ge = !strcmp(op, ">="), result = -1;

	o.method = !strcmp(json_string_value(json_object_get(iv, "method")), "bootstrap")
			   ? HOLDOUT_IV_BOOTSTRAP
			   : HOLDOUT_IV_WELCH_LOG;
	o.level = json_is_number(json_object_get(iv, "level"))
			  ? json_number_value(json_object_get(iv, "level"))
			  : 0.95;
	o.seed = (uint64_t) json_integer_value(json_object_get(iv, "seed"));
	/* a replication (plan.seed) resamples afresh from the same registered seed */
	if (json_is_integer(plan_seed))
		o.seed ^= (uint64_t) json_integer_value(plan_seed) * 0x9e3779b97f4a7c15ull;
	o.resamples = (unsigned) json_integer_value(json_object_get(iv, "resamples"));
	na = group_values(runs, json_object_get(iv, "select"), metric, &a, ida);
	if (over)
		nb = group_values(runs, over, metric, &b, idb);
	if (!a || (over && !b)) {
		memset(&res, 0, sizeof(res));
		snprintf(res.why, sizeof(res.why), "out of memory");
	} else if (!holdout_interval_compute(&o, a, na, over ? b : NULL, nb, &res)) {
		if (ge ? res.lo >= thr : res.hi <= thr)
			result = 1;
		else if (ge ? res.hi < thr : res.lo > thr)
			result = 0;
	}
	*out = json_pack("{s:s,s:s,s:f,s:s,s:f,s:s,s:I,s:I,s:o,s:o}", "method",
			 holdout_interval_method_name(o.method), "metric", metric, "level", o.level,
			 "op", op, "threshold", thr, "result",
			 result == 1 ? "accept" : result == 0 ? "reject" : "unresolved", "n_select",
			 (json_int_t) na, "n_over", (json_int_t) nb, "runs_select", ida, "runs_over",
			 idb);
	if (*out && res.why[0]) {
		json_object_set_new(*out, "why", json_string(res.why));
	} else if (*out) {
		json_object_set_new(*out, "estimate", json_real(res.estimate));
		json_object_set_new(*out, "interval", json_pack("[f,f]", res.lo, res.hi));
		if (isfinite(res.df))
			json_object_set_new(*out, "df", json_real(res.df));
	}
	if (*out && !over)
		json_object_del(*out, "n_over");
	free(a);
	free(b);
	return result;
}

/* Does the hypothesis decide by an interval? */
static int by_interval(const json_t *doc)
{
	const char *d = json_string_value(json_object_get(doc, "decision"));

	return d && !strcmp(d, "interval");
}

/*
 * The rules and an interval decision together: rejected when either
 * rejects; accepted only when the interval accepts and the accept rule
 * holds. *acc and *rej come in as the rules' and leave as the verdict's.
 */
static void combine_interval(int ivd, int *acc, int *rej)
{
	if (ivd == 0)
		*rej = 1;
	if (*acc == 1 && ivd != 1)
		*acc = -1;
}

/*
 * The verdict payload for one version h ({"doc", "seq"}) of hypothesis id;
 * amended: h is the version amended after the first run, judged as an
 * exploratory entry apart from the registered one.
 */
static int judge(gather *g, const char *id, const json_t *h, int amended, json_t **out, cs_err *e)
{
	json_t *doc = json_object_get(h, "doc");
	json_t *runs = json_array(), *devs = json_array(), *decide = NULL, *sceptic = NULL;
	json_t *sruns = json_array(), *sc = NULL, *beyond = json_array(), *ivj = NULL;
	json_t *acc_trace = NULL, *rej_trace = NULL, *ref = json_object_get(g->refute, id);
	const char *kind = json_string_value(json_object_get(doc, "kind")) ?: "";
	int64_t hseq = json_integer_value(json_object_get(h, "seq"));
	int post_hoc = amended || (g->plan.first_run_start && hseq > g->plan.first_run_start);
	int exploratory = post_hoc || !strcmp(kind, "exploratory") || !strcmp(kind, "descriptive") ||
			  !g->plan.plan; /* descriptive: could not fail by design (harness/canfail.c) */
	int acc = -1, rej = -1, rc;
	const char *verdict;
	size_t i;
	json_t *r;

	*out = NULL;
	if (!exploratory) {
		decide = ledger_plan_hyp_specs(&g->plan, id, "runs");
		sceptic = ledger_plan_hyp_specs(&g->plan, id, "sceptic");
	}
	json_array_foreach(g->runs, i, r) {
		const char *cls = json_string_value(json_object_get(r, "class"));
		const char *sha = json_string_value(json_object_get(r, "spec_sha256"));

		if (exploratory) {
			if (!json_is_true(json_object_get(r, "holdout")) && serves(r, id))
				json_array_append(runs, r);
		} else if (json_is_true(json_object_get(r, "beyond_plan"))) {
			/* beyond the spec's registered run count: a deviation, never deciding */
			json_array_append(beyond, r);
		} else if (!strcmp(cls, "design") && cs_json_has_string(decide, sha)) {
			json_array_append(runs, r);
		} else if (!strcmp(cls, "sceptic") && cs_json_has_string(sceptic, sha)) {
			json_array_append(sruns, r);
		}
	}
	rc = eval_both(doc, runs, id, &acc, &acc_trace, &rej, &rej_trace, e);
	if (rc)
		goto out;
	if (by_interval(doc))
		combine_interval(interval_decide(doc, runs, json_object_get(g->plan.plan, "seed"), &ivj), &acc, &rej);
	if (rej == 1)
		verdict = "rejected";
	else if (acc == 1 && json_array_size(ref) > 0)
		verdict = "refuted";
	else if (acc == 1)
		verdict = "accepted";
	else
		verdict = "unresolved";
	if (!exploratory && !strcmp(verdict, "accepted")) {
		size_t done = 0, j;
		json_t *sha, *view = NULL, *t1 = NULL, *t2 = NULL;
		int sacc = -1, srej = -1;

		json_array_foreach(sceptic, i, sha) {
			int ran = 0;

			json_array_foreach(sruns, j, r)
				ran |= !strcmp(json_string_value(json_object_get(r, "spec_sha256")),
					       json_string_value(sha));
			done += ran;
		}
		sc = json_pack("{s:I,s:I,s:o}", "planned", (json_int_t) json_array_size(sceptic), "done",
			       (json_int_t) done, "runs", run_names(sruns));
		if (!json_array_size(sceptic)) {
			verdict = "provisional";
			json_object_set_new(sc, "why", json_string("the plan names no sceptic run"));
		} else if (done < json_array_size(sceptic)) {
			verdict = "provisional";
			json_object_set_new(sc, "why", json_string("sceptic runs not all done"));
		} else {
			view = sceptic_view(runs, sruns);
			rc = eval_both(doc, view, id, &sacc, &t1, &srej, &t2, e);
			if (!rc && by_interval(doc)) {
				json_t *siv = NULL;

				combine_interval(interval_decide(doc, view, json_object_get(g->plan.plan, "seed"), &siv), &sacc, &srej);
				json_object_set_new(sc, "interval", siv ? siv : json_null());
			}
			json_decref(view);
			if (rc) {
				json_decref(t1);
				json_decref(t2);
				goto out;
			}
			json_object_set_new(sc, "accept", json_pack("{s:s,s:o*}", "result",
								    report_tri(sacc), "trace", t1));
			json_object_set_new(sc, "reject", json_pack("{s:s,s:o*}", "result",
								    report_tri(srej), "trace", t2));
			if (sacc != 1 || srej == 1) {
				verdict = "refuted";
				json_object_set_new(sc, "why", json_string("the sceptic runs refute it"));
			}
		}
	}
	json_array_foreach(g->devs, i, r) {
		const json_t *dh = json_object_get(r, "hypothesis");

		if (!json_is_string(dh) || !strcmp(json_string_value(dh), id))
			json_array_append(devs, json_object_get(r, "seq"));
	}
	*out = json_pack("{s:s,s:O?,s:s,s:s,s:b,s:{s:s,s:o*},s:{s:s,s:o*},s:o,s:o,s:o,s:I}",
			 "hypothesis", id, "kind", json_object_get(doc, "kind"), "verdict", verdict,
			 "class", exploratory ? "exploratory" : "confirmatory", "post_hoc", post_hoc,
			 "accept", "result", report_tri(acc), "trace", acc_trace, "reject", "result",
			 report_tri(rej), "trace", rej_trace, "runs", run_names(runs), "refutations",
			 ref ? json_incref(ref) : json_array(), "deviations", devs, "as_of",
			 (json_int_t) g->as_of);
	acc_trace = rej_trace = NULL;
	devs = NULL;
	if (*out && sc)
		json_object_set(*out, "sceptic", sc);
	if (*out && ivj)
		json_object_set(*out, "interval", ivj);
	if (*out && json_is_true(json_object_get(doc, "underpowered")))
		json_object_set_new(*out, "underpowered", json_true());
	if (*out) {
		/* validate's classification of this version under this plan; else from the runs */
		const json_t *mc = classified(g, id, hseq);
		json_t *ev = mc ? evidence_recorded(mc) : evidence(doc, runs);

		if (ev && !mc)
			json_object_set_new(ev, "classified",
					    json_pack("{s:s,s:s}", "by", "verdicts", "why",
						      "no model-check record for this version under "
						      "this plan (validated before the classification, "
						      "or amended since): from its runs"));
		json_object_update(*out, ev);
		json_decref(ev);
	}
	if (*out && json_array_size(beyond)) {
		json_t *mine = json_array(), *b;
		size_t k;

		/* shown: the planned specs' runs beyond their registered count, left out */
		json_array_foreach(beyond, k, b)
			if (cs_json_has_string(decide, json_string_value(json_object_get(b, "spec_sha256"))) ||
			    cs_json_has_string(sceptic, json_string_value(json_object_get(b, "spec_sha256"))))
				json_array_append(mine, b);
		if (json_array_size(mine))
			json_object_set_new(*out, "beyond_plan", run_names(mine));
		json_decref(mine);
	}
	if (*out && !exploratory && !ledger_plan_maps(&g->plan, id))
		json_object_set_new(*out, "unplanned", json_true());
out:
	json_decref(ivj);
	json_decref(acc_trace);
	json_decref(rej_trace);
	json_decref(runs);
	json_decref(sruns);
	json_decref(beyond);
	json_decref(devs);
	json_decref(decide);
	json_decref(sceptic);
	json_decref(sc);
	return rc;
}

/*
 * Same verdict as last time, on the same runs? (as_of aside). Compared in
 * canonical form: a payload read back from the ledger has 8 where the fresh
 * one has 8.0, and both print as 8.
 */
static int same_as_last(const json_t *last, const json_t *v)
{
	json_t *a, *b;
	char *ca = NULL, *cb = NULL;
	int same = 0;

	if (!last)
		return 0;
	a = json_deep_copy(last);
	b = json_deep_copy(v);
	json_object_del(a, "as_of");
	json_object_del(b, "as_of");
	if (!cs_json_canonical(a, &ca, NULL, NULL) && !cs_json_canonical(b, &cb, NULL, NULL))
		same = strcmp(ca, cb) == 0;
	free(ca);
	free(cb);
	json_decref(a);
	json_decref(b);
	return same;
}

int report_verdicts(struct ledger *l, int64_t as_of, int record, json_t **out, cs_err *e)
{
	gather g = {0};
	json_t *all = json_array(), *id;
	int rc;
	size_t i;

	*out = NULL;
	g.as_of = as_of ? as_of : ledger_size(l);
	g.hyps = json_object();
	g.reg = json_object();
	g.order = json_array();
	g.runs = json_array();
	g.refute = json_object();
	g.devs = json_array();
	g.last = json_object();
	g.mchk = json_object();
	/* verdicts look before they answer: an edited log, or a record appended without
	 * the study's key, is exit 4 and judges nothing */
	rc = ledger_verify(l, NULL, e);
	if (!rc)
		rc = ledger_plan_load(l, g.as_of, &g.plan, e);
	if (!rc)
		rc = ledger_foreach(l, NULL, collect, &g, e);
	if (rc)
		goto out;
	if (json_array_size(g.order) == 0) {
		rc = cs_err_set(e, CS_EXIT_REFUSED, "no hypothesis is registered in this study");
		goto out;
	}
	if (record && (rc = ledger_begin(l, e)))
		goto out;
	json_array_foreach(g.order, i, id) {
		const char *hid = json_string_value(id);
		const json_t *latest = json_object_get(g.hyps, hid), *reg = json_object_get(g.reg, hid);
		/* amended after the first run: the registered version keeps its verdict */
		int amended = reg && json_integer_value(json_object_get(reg, "seq")) !=
					     json_integer_value(json_object_get(latest, "seq"));

		for (int k = 0; k <= amended && !rc; k++) {
			json_t *v = NULL;
			char key[128];

			rc = judge(&g, hid, k ? latest : (amended ? reg : latest), k, &v, e);
			if (rc)
				break;
			json_object_set(v, "doc_seq", json_object_get(k || !amended ? latest : reg, "seq"));
			if (amended && !k)
				json_object_set_new(v, "amended_later",
						    json_pack("{s:O,s:O?}", "seq", json_object_get(latest, "seq"),
							      "access_state",
							      json_object_get(latest, "access_state")));
			if (k) {
				json_object_set_new(v, "version", json_string("amended"));
				json_object_set_new(v, "amends",
						    json_pack("{s:O}", "seq", json_object_get(reg, "seq")));
				json_object_set(v, "amended_access_state",
						json_object_get(latest, "access_state"));
			}
			last_key(hid, k, key, sizeof(key));
			if (record && !same_as_last(json_object_get(g.last, key), v))
				rc = ledger_append(l, "verdict", v, NULL, e);
			json_array_append_new(all, v);
		}
		if (rc)
			break;
	}
	if (record) {
		if (rc)
			ledger_rollback(l);
		else
			rc = ledger_commit(l, e);
	}
	if (!rc) {
		*out = all;
		all = NULL;
	}
out:
	json_decref(all);
	json_decref(g.hyps);
	json_decref(g.reg);
	json_decref(g.order);
	json_decref(g.runs);
	json_decref(g.refute);
	json_decref(g.devs);
	json_decref(g.last);
	json_decref(g.mchk);
	ledger_plan_free(&g.plan);
	return rc;
}

/* The verdict of id in all (borrowed), or NULL. */
static const json_t *verdict_of(const json_t *all, const char *id)
{
	size_t i;
	json_t *v;

	json_array_foreach(all, i, v)
		if (!strcmp(json_string_value(json_object_get(v, "hypothesis")) ?: "", id))
			return v;
	return NULL;
}

int report_compare(struct ledger *a, struct ledger *b, json_t **rows, int *disagree, cs_err *e)
{
	json_t *va = NULL, *vb = NULL, *out = json_array(), *v;
	size_t i;
	int rc;

	*rows = NULL;
	*disagree = 0;
	rc = report_verdicts(a, 0, 0, &va, e);
	if (!rc)
		rc = report_verdicts(b, 0, 0, &vb, e);
	if (rc)
		goto out;
	json_array_foreach(va, i, v) {
		const char *id = json_string_value(json_object_get(v, "hypothesis"));
		const json_t *w = verdict_of(vb, id);
		const char *x = json_string_value(json_object_get(v, "verdict"));
		const char *y = w ? json_string_value(json_object_get(w, "verdict")) : NULL;
		int conf = !strcmp(json_string_value(json_object_get(v, "class")) ?: "", "confirmatory");
		int agree = y && !strcmp(x, y);

		if (conf && !agree)
			*disagree = 1;
		json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s?, s:b, s:O?, s:O?}", "hypothesis",
						     id, "class", conf ? "confirmatory" : "exploratory",
						     "verdict_a", x, "verdict_b", y, "agree", agree,
						     "interval_a", json_object_get(v, "interval"),
						     "interval_b", w ? json_object_get(w, "interval") : NULL));
	}
	*rows = out;
	out = NULL;
out:
	json_decref(out);
	json_decref(va);
	json_decref(vb);
	return rc;
}
