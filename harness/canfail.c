/*
 * canfail.c - the `can-fail:Hn` checks of `coldstudy validate`: could each
 * registered hypothesis have come out against itself?
 *
 * A verdict means something only if the runs the plan gives a hypothesis
 * could have rejected it. validate asks that of every hypothesis before any
 * run, from what is registered alone (the rules, the plan, the plan's run
 * specs as their files are now, checked against the registered hashes):
 *
 *  1. contrasts. A comparison of two aggregates over different selections,
 *     directly (A < B) or as a ratio ({"ratio": [A, B]} op number), is a
 *     contrast: A's selection is the treatment, B's the baseline, and the
 *     tags one selection names and the other does not are the registered
 *     factor. An aggregate against a number is a level, and a ratio of two
 *     aggregates over one selection a spread; neither is a contrast.
 *  2. deciding runs. Each side of a contrast must match a run spec the plan
 *     maps to the hypothesis (tags as harness_run_tags will derive them),
 *     else the rule can never be decided; no spec may be on both sides.
 *  3. like for like. Every (treatment, baseline) pair of specs, among the
 *     plan's runs and among its sceptic runs, has the same query set
 *     (queries, query_count, duration_s) and the same cold mode
 *     (warm / cold once / cold before every query, which prewarm implies;
 *     where the factor is the cache state itself, the cold side is cold
 *     before every query or makes one query), the same metric on both
 *     sides (or seconds against seconds: a prewarm's prewarm_s against
 *     a query's wall_s), and differs in no knob that the factor's tags do
 *     not stand for (harness_tag_knobs; a label outside the vocabulary,
 *     against "baseline", stands for one of the baseline knobs).
 *  4. independent streams. Two modelled specs that register the same seed
 *     draw the same service times.
 *  5. a reachable reject rule. Where the factor cannot reach the metric,
 *     the contrast is 1 up to the streams' noise: read counts, bytes a read
 *     and recall depend on the read trace only (not on the device, its
 *     timing, a seed, competing readers or writers, client placement), and
 *     in virtual time a per-read latency depends on the trace, the profile,
 *     the modelled load and the stream only (not on client placement,
 *     read-ahead or a memory cap). Such a contrast is exactly 1 for trace
 *     metrics and for a shared stream, and otherwise lies within the band
 *     measured by replaying a queue-depth-one trace of NOISE_READS reads on
 *     the profile under NOISE_SEEDS seeds (NOISE_SD standard deviations of
 *     the ratio of two independent means). The reject rule is then asked
 *     (rule_can_hold) whether it can hold with those contrasts so bounded;
 *     every other comparison is taken as able to hold.
 *
 * A confirmatory or non-cause hypothesis with a finding cannot fail
 * honestly: validate refuses (exit 3, a refusal record). A descriptive or
 * exploratory one is checked and recorded the same way and passes, since
 * its verdict is never confirmatory; so does every hypothesis of a study
 * without a plan (verdicts treats them all as exploratory), and one
 * registered after the first run (post hoc).
 *
 * The check errs towards passing: it refuses what the registered documents
 * fix by construction, and cannot see an effect the engine or the model
 * happens not to have (docs/device-model.md, "What the can-fail check
 * cannot see").
 */
#include "harness.h"
#include "harness_int.h"

#include "coldvec.h"
#include "holdout.h"
#include "hyp.h"
#include "ledger.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOISE_READS 1000 /* about one three-query cold partition run of the demo */
#define NOISE_SEEDS 32
#define NOISE_SD 4.0

typedef struct cfctx {
	const char *id;
	const json_t *specs;   /* the plan's runs for id: [{path, eff, tags}] */
	const json_t *sceptic; /* its sceptic runs, the same */
	json_t *findings;      /* [text] */
	json_t *contrasts;     /* [{treatment, baseline, metric, factor, value}] */
	json_t *noise;         /* profile -> {cv, band} (shared by every hypothesis) */
} cfctx;

/* Append text to a findings array once. */
static void finding(json_t *f, const char *text)
{
	size_t i;
	json_t *v;

	json_array_foreach(f, i, v)
		if (!strcmp(json_string_value(v), text))
			return;
	json_array_append_new(f, json_string(text));
}

/* Does a spec's tag set match a rule's selection (rule.c's semantics)? */
static int matches(const json_t *spec, const json_t *sel, const char *id)
{
	const json_t *tags = json_object_get(spec, "tags"), *v;
	const char *h = json_string_value(json_object_get(sel, "hypothesis"));
	size_t i;

	json_array_foreach(json_object_get(sel, "tags"), i, v)
		if (!cs_json_has_string(tags, json_string_value(v)))
			return 0;
	json_array_foreach(json_object_get(sel, "not_tags"), i, v)
		if (cs_json_has_string(tags, json_string_value(v)))
			return 0;
	/* the plan maps the spec to id; a selection naming another hypothesis sees what serves it */
	if (h && strcmp(h, id) &&
	    !cs_json_has_string(json_object_get(json_object_get(spec, "eff"), "hypotheses"), h))
		return 0;
	return 1;
}

/* The specs of list a selection matches (new array of borrowed specs). */
static json_t *select_specs(const json_t *list, const json_t *sel, const char *id)
{
	json_t *out = json_array(), *s;
	size_t i;

	json_array_foreach(list, i, s)
		if (matches(s, sel, id))
			json_array_append(out, s);
	return out;
}

/* "warm", "once" (cold, evicted before the run) or "each" (cold before every query). */
static const char *cold_mode(const json_t *eff)
{
	if (!json_is_true(json_object_get(eff, "cold")))
		return "warm";
	if (json_is_true(json_object_get(eff, "cold_each_query")) ||
	    json_is_object(json_object_get(eff, "prewarm")))
		return "each";
	return "once";
}

/* Equal as run.json values, absent and null and false alike. */
static int same_value(const json_t *a, const json_t *b)
{
	int na = !a || json_is_null(a) || json_is_false(a);
	int nb = !b || json_is_null(b) || json_is_false(b);

	if (na || nb)
		return na && nb;
	return json_equal((json_t *) a, (json_t *) b);
}

/* The query set of an effective spec, with absent members made explicit (new). */
static json_t *query_set(const json_t *eff)
{
	const json_t *q = json_object_get(eff, "queries");
	json_int_t first = json_integer_value(json_object_get(q, "first"));

	return json_pack("{s:O?, s:I, s:O?, s:O?, s:O?, s:O?}", "spec", json_object_get(q, "spec"),
			 "first", first, "count", json_object_get(q, "count"), "draw",
			 json_object_get(q, "draw"), "query_count", json_object_get(eff, "query_count"),
			 "duration_s", json_object_get(eff, "duration_s"));
}

/* Knobs compared elsewhere (query set, seed) or that are not knobs (labels, notes). */
static const char *const not_knobs[] = {"tags", "hypotheses", "notes", "samplers", "seed", "replicates",
					"queries", "query_count", "duration_s", "cold",
					"cold_each_query", NULL}; /* the last two: the cold mode */

/*
 * A postgres run's "postgres" object as knobs, each its own factor: the
 * session's SETs one by one ("postgres.session:hnsw.ef_search"),
 * "postgres.shared_buffers" in kB (the default made explicit), and the
 * other members by name; the port only names the private server's socket
 * file and is no knob (new object).
 */
static json_t *pg_knobs(const json_t *pg)
{
	json_t *out = json_object(), *set = harness_pg_settings(pg), *v;
	const char *k;
	char name[160];

	json_object_foreach((json_t *) pg, k, v)
		if (strcmp(k, "session") && strcmp(k, "shared_buffers") && strcmp(k, "port")) {
			snprintf(name, sizeof(name), "postgres.%s", k);
			json_object_set(out, name, v);
		}
	json_object_foreach(set, k, v) {
		snprintf(name, sizeof(name), "postgres.session:%s", k);
		json_object_set(out, name, v);
	}
	json_object_set_new(out, "postgres.shared_buffers",
			    json_integer(harness_pg_shared_buffers_kb(pg)));
	json_decref(set);
	return out;
}

/* The knobs in which two effective specs differ (new array of names). */
static json_t *knob_diff(const json_t *a, const json_t *b)
{
	json_t *out = json_array();
	const char *k;
	json_t *v;
	const json_t *pa = json_object_get(a, "postgres"), *pb = json_object_get(b, "postgres");

	/* two postgres runs: their server's settings one by one, not the whole object */
	if (json_is_object(pa) && json_is_object(pb)) {
		json_t *ka = pg_knobs(pa), *kb = pg_knobs(pb), *sa = json_deep_copy(a), *sb = json_deep_copy(b);

		json_object_del(sa, "postgres");
		json_object_del(sb, "postgres");
		json_object_update(sa, ka);
		json_object_update(sb, kb);
		json_decref(out);
		out = knob_diff(sa, sb);
		json_decref(ka);
		json_decref(kb);
		json_decref(sa);
		json_decref(sb);
		return out;
	}

	/* a device's timing means nothing without a device: the device difference says it */
	int timed = json_is_string(json_object_get(a, "device")) &&
		    json_is_string(json_object_get(b, "device"));

	json_object_foreach((json_t *) a, k, v)
		if (!cs_in_list(not_knobs, k) && (timed || strcmp(k, "device_time")) &&
		    !same_value(v, json_object_get(b, k)))
			json_array_append_new(out, json_string(k));
	json_object_foreach((json_t *) b, k, v)
		if (!cs_in_list(not_knobs, k) && (timed || strcmp(k, "device_time")) &&
		    !json_object_get(a, k) && !same_value(NULL, v))
			json_array_append_new(out, json_string(k));
	return out;
}

/*
 * Is knob k one the factor's tags stand for? labels: the factor's tags
 * outside the vocabulary. pg_whole: a postgres pair of which one side is
 * serial over the whole table (its SQL, no "partitions") and the other a
 * fan-out: the fan-out's "partitions" are how it spells that table, the
 * mode's own knob.
 */
static int explained(const json_t *factor, const char *k, int pg_whole, int *label_used)
{
	size_t i;
	json_t *t;
	int label = 0;

	if (pg_whole && !strcmp(k, "partitions"))
		json_array_foreach(factor, i, t)
			if (cs_in_list(harness_tag_knobs(json_string_value(t)), "mode"))
				return 1;

	json_array_foreach(factor, i, t) {
		const char *s = json_string_value(t);

		if (strcmp(s, "baseline") && cs_in_list(harness_tag_knobs(s), k))
			return 1;
		label |= strcmp(s, "baseline") && !harness_tag_knobs(s);
	}
	/* "buffers-tiny" against "baseline": one baseline knob, the one the label names */
	if (label && cs_json_has_string(factor, "baseline") && cs_in_list(harness_tag_knobs("baseline"), k) &&
	    !*label_used) {
		*label_used = 1;
		return 1;
	}
	return 0;
}

/*
 * Do metrics a and b have one unit? The same name, or two seconds of a
 * run's work: a prewarm run's prewarms (prewarm_s) against a cold run's
 * queries (wall_s), the cost of a prewarm beside the query it replaces.
 */
static int like_units(const char *a, const char *b)
{
	static const char *const seconds[] = {"wall_s", "prewarm_s", NULL};

	return !strcmp(a, b) || (cs_in_list(seconds, a) && cs_in_list(seconds, b));
}

/* Metrics of the read trace alone: the same reads give the same figure whatever the device. */
static int trace_metric(const char *m)
{
	static const char *const t[] = {"engine_reads", "reads_per_query", "bytes_per_read",
					"recall_at_k", "results_digest", "queries", NULL};

	return cs_in_list(t, m);
}

/* Knobs that cannot reach metric m when both specs run as eff a and b. */
static int no_path(const char *m, const char *k, const json_t *a, const json_t *b)
{
	static const char *const trace_blind[] = {"device", "device_time", "load", "bulkwrite",
						  "client_cpus", NULL};
	static const char *const model_blind[] = {"client_cpus", "readahead", "mem_cap_bytes", NULL};
	const char *ta = json_string_value(json_object_get(a, "device_time"));
	const char *tb = json_string_value(json_object_get(b, "device_time"));
	int virt = json_is_string(json_object_get(a, "device")) &&
		   json_is_string(json_object_get(b, "device")) && ta && tb &&
		   !strcmp(ta, "virtual") && !strcmp(tb, "virtual");

	if (trace_metric(m))
		return cs_in_list(trace_blind, k);
	if (!strcmp(m, "engine_read_ms_mean") && virt)
		return cs_in_list(model_blind, k);
	return 0;
}

/*
 * The noise of a per-read mean on profile dev: NOISE_SEEDS replays of a
 * queue-depth-one trace of NOISE_READS reads; {cv, band} cached in c->noise.
 * band: NOISE_SD standard deviations of the ratio of two independent means.
 */
static const json_t *noise_of(cfctx *c, const char *dev)
{
	json_t *n = json_object_get(c->noise, dev);
	cv_device *d = NULL;
	cv_trace *t = NULL;
	cv_err ce = {{0}};
	double sum = 0, sq = 0;
	int ok = 1;

	if (n)
		return n;
	if (cv_device_new(dev, 1, &d, &ce) || cv_trace_new(NOISE_READS, &t)) {
		n = json_pack("{s:s}", "error", ce.msg[0] ? ce.msg : "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < NOISE_READS; i++) {
		cv_trace_rec r = {.stream = 0, .batch = i, .off = (uint64_t) i * 8192, .len = 8192,
				  .file = 0, .submit_ns = (uint64_t) i * 2000,
				  .complete_ns = (uint64_t) i * 2000 + 1000};

		cv_trace_append(t, &r);
	}
	for (uint64_t s = 0; s < NOISE_SEEDS && ok; s++) {
		cv_sim_result res;

		ok = cv_device_simulate(d, t, 0x5eed0000u + s * 7919u, &res) == 0;
		sum += res.read_ms_mean;
		sq += res.read_ms_mean * res.read_ms_mean;
	}
	if (ok && sum > 0) {
		double mean = sum / NOISE_SEEDS;
		double var = (sq - NOISE_SEEDS * mean * mean) / (NOISE_SEEDS - 1);
		double cv = var > 0 ? sqrt(var) / mean : 0;

		n = json_pack("{s:i, s:i, s:f, s:f, s:f}", "reads", NOISE_READS, "seeds", NOISE_SEEDS,
			      "mean_ms", mean, "cv", cv, "band", NOISE_SD * cv * sqrt(2.0));
	} else {
		n = json_pack("{s:s}", "error", "the replay failed");
	}
out:
	cv_trace_free(t);
	cv_device_free(d);
	json_object_set_new(c->noise, dev, n);
	return n;
}

/*
 * Check one (treatment, baseline) pair like for like; findings go to c.
 * *blind: 1 if no knob in which they differ can reach metric m.
 */
static void check_pair(cfctx *c, const json_t *ts, const json_t *bs, const json_t *factor,
		       const char *m, const char *role, int *blind, int *shared)
{
	const json_t *a = json_object_get(ts, "eff"), *b = json_object_get(bs, "eff");
	const char *pa = json_string_value(json_object_get(ts, "path"));
	const char *pb = json_string_value(json_object_get(bs, "path"));
	const char *ma = cold_mode(a), *mb = cold_mode(b);
	json_t *qa = query_set(a), *qb = query_set(b), *d = knob_diff(a, b), *v;
	int cache_factor = cs_json_has_string(factor, "warm"); /* cold against warm: the cache state is the factor */
	int label_used = 0;
	const char *mda = json_string_value(json_object_get(a, "mode")) ?: "";
	const char *mdb = json_string_value(json_object_get(b, "mode")) ?: "";
	int pg_whole = json_is_object(json_object_get(a, "postgres")) &&
		       json_is_object(json_object_get(b, "postgres")) && strcmp(mda, mdb) &&
		       !json_is_array(json_object_get(!strcmp(mda, "serial") ? a : b, "partitions"));
	char f[1024];
	size_t i;

	if (!json_equal(qa, qb)) {
		snprintf(f, sizeof(f), "%s runs %s and %s run different query sets", role, pa, pb);
		finding(c->findings, f);
	}
	if (cache_factor) {
		const json_t *cold = strcmp(ma, "warm") ? a : b;
		const json_t *q = json_object_get(cold, "queries");

		if (!strcmp(cold_mode(cold), "once") && !(json_integer_value(json_object_get(q, "count")) == 1 &&
							  !json_object_get(cold, "query_count"))) {
			snprintf(f, sizeof(f),
				 "%s run %s is cold once over several queries against a warm run: "
				 "later queries find pages the earlier ones read (cold before every "
				 "query, or one query)",
				 role, strcmp(ma, "warm") ? pa : pb);
			finding(c->findings, f);
		}
	} else if (strcmp(ma, mb)) {
		snprintf(f, sizeof(f), "%s runs %s (%s) and %s (%s): not like for like", role, pa,
			 !strcmp(ma, "each") ? "cold before every query" : !strcmp(ma, "once") ? "cold once" : ma,
			 pb, !strcmp(mb, "each") ? "cold before every query" : !strcmp(mb, "once") ? "cold once" : mb);
		finding(c->findings, f);
	}
	*blind = 1;
	json_array_foreach(d, i, v) {
		const char *k = json_string_value(v);

		if (cache_factor && !strcmp(k, "prewarm"))
			; /* the cache state is the factor */
		else if (!explained(factor, k, pg_whole, &label_used)) {
			char *fs = json_dumps(factor, JSON_COMPACT);

			snprintf(f, sizeof(f), "%s runs %s and %s differ in %s, which the factor %s does not name",
				 role, pa, pb, k, fs ? fs : "?");
			free(fs);
			finding(c->findings, f);
		}
		if (!no_path(m, k, a, b))
			*blind = 0;
	}
	if (json_is_string(json_object_get(a, "device")) && json_is_string(json_object_get(b, "device")) &&
	    json_is_integer(json_object_get(a, "seed")) &&
	    json_equal(json_object_get(a, "seed"), json_object_get(b, "seed"))) {
		snprintf(f, sizeof(f),
			 "%s runs %s and %s register the same seed %lld: they share the device "
			 "model's random stream",
			 role, pa, pb, (long long) json_integer_value(json_object_get(a, "seed")));
		finding(c->findings, f);
		*shared = 1;
	}
	json_decref(qa);
	json_decref(qb);
	json_decref(d);
}

/* The tags one selection names and the other does not (new). */
static json_t *factor_of(const json_t *sa, const json_t *sb)
{
	json_t *f = json_array(), *v;
	const json_t *ta = json_object_get(sa, "tags"), *tb = json_object_get(sb, "tags");
	size_t i;

	json_array_foreach(ta, i, v)
		if (!cs_json_has_string(tb, json_string_value(v)))
			json_array_append(f, v);
	json_array_foreach(tb, i, v)
		if (!cs_json_has_string(ta, json_string_value(v)))
			json_array_append(f, v);
	return f;
}

static json_t *paths_of(const json_t *specs)
{
	json_t *out = json_array(), *s;
	size_t i;

	json_array_foreach(specs, i, s)
		json_array_append(out, json_object_get(s, "path"));
	return out;
}

/*
 * Analyse the contrast A / B once (cached in c->contrasts by its selections
 * and metric). *lo, *hi: the range it is bounded to, or lo > hi: free.
 */
static void contrast(cfctx *c, const json_t *A, const json_t *B, double *lo, double *hi)
{
	const json_t *sa = json_object_get(A, "select"), *sb = json_object_get(B, "select");
	const char *m = json_string_value(json_object_get(A, "metric")) ?: "";
	const char *mb = json_string_value(json_object_get(B, "metric")) ?: "";
	json_t *key = json_pack("{s:O, s:O, s:s, s:s}", "treatment", sa, "baseline", sb, "metric", m,
				"metric_b", mb);
	json_t *ts = NULL, *bs = NULL, *tss = NULL, *bss = NULL, *factor = NULL, *x, *y;
	int blind = 1, shared = 0, pairs = 0;
	char f[1024];
	size_t i, j;

	*lo = 1;
	*hi = 0;
	json_array_foreach(c->contrasts, i, x)
		if (json_equal(json_object_get(x, "treatment"), (json_t *) sa) &&
		    json_equal(json_object_get(x, "baseline"), (json_t *) sb) &&
		    !strcmp(json_string_value(json_object_get(x, "metric")) ?: "", m) &&
		    !strcmp(json_string_value(json_object_get(x, "metric_b")) ?: "", mb)) {
			const json_t *r = json_object_get(x, "range");

			if (json_is_array(r)) {
				*lo = json_real_value(json_array_get(r, 0));
				*hi = json_real_value(json_array_get(r, 1));
			}
			json_decref(key);
			return;
		}
	factor = factor_of(sa, sb);
	if (!like_units(m, mb)) {
		snprintf(f, sizeof(f), "a contrast of %s against %s: not like units", m, mb);
		finding(c->findings, f);
	}
	ts = select_specs(c->specs, sa, c->id);
	bs = select_specs(c->specs, sb, c->id);
	for (int side = 0; side < 2; side++) {
		if (!json_array_size(side ? bs : ts)) {
			char *sel = json_dumps(side ? sb : sa, JSON_COMPACT);

			snprintf(f, sizeof(f),
				 "the selection %s matches none of the plan's runs for %s: the rule "
				 "can never be decided",
				 sel ? sel : "?", c->id);
			free(sel);
			finding(c->findings, f);
		}
	}
	json_array_foreach(ts, i, x)
		json_array_foreach(bs, j, y)
			if (x == y) {
				snprintf(f, sizeof(f), "%s is on both sides of a contrast of %s",
					 json_string_value(json_object_get(x, "path")), m);
				finding(c->findings, f);
			} else {
				int bl = 1;

				check_pair(c, x, y, factor, m, "design", &bl, &shared);
				blind &= bl;
				pairs++;
			}
	tss = select_specs(c->sceptic, sa, c->id);
	bss = select_specs(c->sceptic, sb, c->id);
	json_array_foreach(tss, i, x)
		json_array_foreach(bss, j, y)
			if (x != y) {
				int bl = 1;

				check_pair(c, x, y, factor, m, "sceptic", &bl, &shared);
			}
	if (pairs && blind) {
		const char *dev = json_string_value(json_object_get(json_object_get(json_array_get(ts, 0), "eff"),
								    "device"));
		double band = 0;

		if (trace_metric(m) || shared) {
			band = 0;
		} else {
			const json_t *n = dev ? noise_of(c, dev) : NULL;

			band = json_number_value(json_object_get(n, "band"));
			if (!n || json_object_get(n, "error"))
				band = -1; /* unmeasured: free */
			else
				json_object_set(key, "noise", (json_t *) n);
		}
		if (band >= 0) {
			*lo = 1 - band;
			*hi = 1 + band;
		}
	}
	json_object_set_new(key, "treatment_runs", paths_of(ts));
	json_object_set_new(key, "baseline_runs", paths_of(bs));
	json_object_set(key, "factor", factor);
	json_object_set_new(key, "reaches_metric", json_boolean(!(pairs && blind)));
	if (*lo <= *hi) {
		json_object_set_new(key, "range", json_pack("[f, f]", *lo, *hi));
		json_object_set_new(key, "why",
				    json_string(shared ? "a shared random stream: the ratio is exactly 1"
						: trace_metric(m)
							? "the factor does not change the read trace: exactly 1"
							: "the factor does not enter the model: 1 up to the "
							  "streams' noise"));
	}
	json_array_append_new(c->contrasts, key);
	json_decref(ts);
	json_decref(bs);
	json_decref(tss);
	json_decref(bss);
	json_decref(factor);
}

static int is_agg(const json_t *x)
{
	return json_is_object(x) && json_is_string(json_object_get(x, "agg")) &&
	       strcmp(json_string_value(json_object_get(x, "agg")), "count");
}

/* x op y over a range [lo, hi] of x: can it hold? */
static int range_can(double lo, double hi, const char *op, double y)
{
	if (!strcmp(op, "<"))
		return lo < y;
	if (!strcmp(op, "<="))
		return lo <= y;
	if (!strcmp(op, ">"))
		return hi > y;
	if (!strcmp(op, ">="))
		return hi >= y;
	if (!strcmp(op, "=="))
		return lo <= y && y <= hi;
	return !(lo == hi && lo == y);
}

static const char *flip(const char *op)
{
	return !strcmp(op, "<") ? ">" : !strcmp(op, "<=") ? ">=" : !strcmp(op, ">") ? "<"
		: !strcmp(op, ">=") ? "<=" : op;
}

/* rule_can_hold's question for one comparison: 1, 0 or -1 (unknown). */
static int cmp_can(const json_t *cmp, const char *path, void *ud)
{
	cfctx *c = ud;
	const json_t *l = json_object_get(cmp, "left"), *r = json_object_get(cmp, "right");
	const char *op = json_string_value(json_object_get(cmp, "op")) ?: "";
	const json_t *A = NULL, *B = NULL;
	double y = 1, lo, hi;

	(void) path;
	if (json_is_number(l) && !json_is_number(r)) {
		const json_t *t = l;

		l = r;
		r = t;
		op = flip(op);
	}
	if (json_is_object(l) && json_is_array(json_object_get(l, "ratio")) && json_is_number(r)) {
		A = json_array_get(json_object_get(l, "ratio"), 0);
		B = json_array_get(json_object_get(l, "ratio"), 1);
		y = json_number_value(r);
	} else if (is_agg(l) && is_agg(r)) {
		A = l;
		B = r;
		y = 1; /* A op B, both of non-negative metrics: A / B op 1 */
	}
	if (!is_agg(A) || !is_agg(B) ||
	    json_equal(json_object_get(A, "select"), json_object_get(B, "select")))
		return -1; /* a level or a spread */
	contrast(c, A, B, &lo, &hi);
	if (lo > hi)
		return -1;
	return range_can(lo, hi, op, y);
}

/* Does rule_can_hold's walk find nothing to answer? (collects contrasts of the accept rule) */
static int cmp_collect(const json_t *cmp, const char *path, void *ud)
{
	cmp_can(cmp, path, ud);
	return -1;
}

/* Why a reject rule cannot hold: each bounded contrast and its range (a static buffer's text). */
static const char *unreachable(const cfctx *c)
{
	static char f[1024];
	size_t len, i;
	json_t *x;

	snprintf(f, sizeof(f), "the reject rule cannot hold:");
	json_array_foreach(c->contrasts, i, x) {
		const json_t *r = json_object_get(x, "range");
		char *t, *b;

		if (!json_is_array(r))
			continue;
		t = json_dumps(json_object_get(json_object_get(x, "treatment"), "tags"), JSON_COMPACT);
		b = json_dumps(json_object_get(json_object_get(x, "baseline"), "tags"), JSON_COMPACT);
		len = strlen(f);
		snprintf(f + len, sizeof(f) - len, " %s %s / %s stays within [%.3g, %.3g] (%s);",
			 json_string_value(json_object_get(x, "metric")), t ? t : "?", b ? b : "?",
			 json_real_value(json_array_get(r, 0)), json_real_value(json_array_get(r, 1)),
			 json_string_value(json_object_get(x, "why")));
		free(t);
		free(b);
	}
	len = strlen(f);
	snprintf(f + len, sizeof(f) - len, " every way to a rejection needs it outside");
	return f;
}

/* ---- loading what the plan registered ---- */

typedef struct hyp_rec {
	json_t *docs; /* id -> {"doc", "seq"} */
	json_t *order;
} hyp_rec;

static int hyp_cb(const ledger_record *r, void *ud)
{
	hyp_rec *h = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	const char *id = json_string_value(json_object_get(p, "id"));

	if (id && json_is_object(json_object_get(p, "doc"))) {
		if (!json_object_get(h->docs, id))
			json_array_append_new(h->order, json_string(id));
		json_object_set_new(h->docs, id,
				    json_pack("{s:O, s:I}", "doc", json_object_get(p, "doc"), "seq",
					      (json_int_t) r->seq));
	}
	json_decref(p);
	return 0;
}

/* The plan's specs for id in role, each {path, eff, tags} (new); findings on what will not load. */
static json_t *load_specs(const ledger_plan *plan, const json_t *study, const char *id,
			  const char *role, json_t *findings)
{
	return harness_hyp_plan_specs(plan, study, id, role, findings);
}

json_t *harness_hyp_plan_specs(const ledger_plan *plan, const json_t *study, const char *id,
			   const char *role, json_t *findings)
{
	json_t *out = json_array(), *shas = ledger_plan_hyp_specs(plan, id, role), *v;
	const char *base = json_string_value(json_object_get(plan->rec, "plan_base")) ?: ".";
	const json_t *defaults = json_object_get(study, "defaults");
	size_t i;

	json_array_foreach(shas, i, v) {
		const char *sha = json_string_value(v), *rel = ledger_plan_path(plan, sha);
		char path[PATH_MAX * 2], now[65], f[1200];
		json_t *raw = NULL, *eff = NULL, *feat = NULL, *tags = NULL;
		cs_err e = {0};

		if (!rel)
			continue;
		snprintf(path, sizeof(path), "%s%s%s", rel[0] == '/' ? "" : base, rel[0] == '/' ? "" : "/",
			 rel);
		if (harness_run_load(path, &raw, now, &e) || harness_run_effective(raw, defaults, &eff, &e) ||
		    harness_spec_features(eff, &feat, &e) ||
		    harness_run_tags(eff, defaults, json_string_value(json_object_get(feat, "kind")),
				     !strcmp(role, "runs") ? "design" : "sceptic", rel, &tags, &e)) {
			snprintf(f, sizeof(f), "%s: %s", rel, e.msg);
			finding(findings, f);
		} else if (strcmp(now, sha)) {
			snprintf(f, sizeof(f),
				 "%s changed since the plan was registered: its runs would not be %s's",
				 rel, id);
			finding(findings, f);
		} else {
			json_array_append_new(out, json_pack("{s:s, s:O, s:O}", "path", rel, "eff", eff,
							     "tags", tags));
		}
		json_decref(raw);
		json_decref(eff);
		json_decref(feat);
		json_decref(tags);
	}
	json_decref(shas);
	return out;
}

int harness_registered_hyps(struct ledger *l, json_t **docs, json_t **order, cs_err *e)
{
	hyp_rec h = {json_object(), json_array()};
	int rc = 0;

	if (ledger_foreach(l, "hypothesis", hyp_cb, &h, e) ||
	    ledger_foreach(l, "amendment", hyp_cb, &h, e))
		rc = e->code ? e->code : CS_EXIT_INTERNAL;
	if (rc) {
		json_decref(h.docs);
		json_decref(h.order);
		h.docs = h.order = NULL;
	}
	*docs = h.docs;
	*order = h.order;
	return rc;
}

int harness_can_fail(struct ledger *l, const json_t *study, json_t *out, int *refuse, cs_err *e)
{
	hyp_rec h = {json_object(), json_array()};
	ledger_plan plan = {0};
	json_t *noise = json_object(), *idv;
	size_t i;
	int rc;

	(void) study;
	*refuse = 0;
	rc = ledger_plan_load(l, 0, &plan, e);
	if (!rc && ledger_foreach(l, "hypothesis", hyp_cb, &h, e))
		rc = e->code ? e->code : CS_EXIT_INTERNAL;
	if (!rc && ledger_foreach(l, "amendment", hyp_cb, &h, e))
		rc = e->code ? e->code : CS_EXIT_INTERNAL;
	if (rc)
		goto out;
	json_array_foreach(h.order, i, idv) {
		const char *id = json_string_value(idv);
		const json_t *hr = json_object_get(h.docs, id), *doc = json_object_get(hr, "doc");
		const char *kind = json_string_value(json_object_get(doc, "kind")) ?: "";
		int64_t seq = json_integer_value(json_object_get(hr, "seq"));
		int post_hoc = plan.first_run_start && seq > plan.first_run_start;
		int binding = !strcmp(kind, "confirmatory") || !strcmp(kind, "non-cause");
		cfctx c = {.id = id, .findings = json_array(), .contrasts = json_array(), .noise = noise};
		json_t *specs = NULL, *sceptic = NULL, *d;
		char name[40];
		int passed;

		snprintf(name, sizeof(name), "can-fail:%s", id);
		d = json_pack("{s:s}", "kind", kind);
		if (!plan.plan) {
			json_object_set_new(d, "not_checked",
					    json_string("no plan: every verdict is exploratory"));
			binding = 0;
		} else if (post_hoc) {
			json_object_set_new(d, "not_checked",
					    json_string("registered after the first run: post hoc, "
							"exploratory"));
			binding = 0;
		} else if (!ledger_plan_maps(&plan, id)) {
			finding(c.findings, "the plan maps no run to it: its rules can never see a run");
		} else {
			specs = load_specs(&plan, study, id, "runs", c.findings);
			sceptic = load_specs(&plan, study, id, "sceptic", c.findings);
			c.specs = specs;
			c.sceptic = sceptic;
			rule_can_hold(json_object_get(doc, "accept"), "$.accept", cmp_collect, &c);
			if (!rule_can_hold(json_object_get(doc, "reject"), "$.reject", cmp_can, &c))
				finding(c.findings, unreachable(&c));
		}
		passed = !binding || json_array_size(c.findings) == 0;
		json_object_set_new(d, "findings", c.findings);
		json_object_set_new(d, "contrasts", c.contrasts);
		if (!passed)
			*refuse = 1;
		else if (json_array_size(c.findings))
			json_object_set_new(d, "allowed",
					    json_string("descriptive or exploratory: never confirmatory"));
		json_array_append_new(out, json_pack("{s:s, s:s, s:b, s:o}", "check", name, "hypothesis",
						     id, "passed", passed, "detail", d));
		json_decref(specs);
		json_decref(sceptic);
	}
out:
	json_decref(h.docs);
	json_decref(h.order);
	json_decref(noise);
	ledger_plan_free(&plan);
	return rc;
}

/* ---- power (power:Hn, `coldstudy plan power`) ---- */

/*
 * A hypothesis decided by an interval (decision "interval") is only as
 * good as the runs behind it: with one run a side there is no interval at
 * all, and with a few noisy ones it straddles the threshold whatever the
 * truth. Its power is the chance that the registered interval lies wholly
 * beyond the threshold when the effect is the one predicted (the seed's),
 * given the run-to-run spread of the metric's log (sd_log) and the runs a
 * side the plan registers (the replicates of the planned specs whose tags
 * the interval's selections match). holdout_interval_power gives it on the
 * log scale (normal approximation); a binding hypothesis below
 * HARNESS_POWER_MIN is refused unless registered underpowered with a
 * rationale. sd_log comes from the hypothesis file (registered) or, for
 * `plan power`, from disclosed pilot runs: exploratory runs named by id,
 * their logs' spread pooled over the two groups.
 */

/* The runs a side the plan registers: replicates of the planned specs sel matches. */
static unsigned planned_n(const json_t *specs, const json_t *sel)
{
	unsigned n = 0;
	size_t i;
	json_t *s;

	json_array_foreach(specs, i, s) {
		json_t *probe = json_pack("{s:O}", "tags", json_object_get(s, "tags"));

		if (probe && rule_select_match(probe, sel))
			n += harness_spec_replicates(json_object_get(s, "eff"));
		json_decref(probe);
	}
	return n;
}

/* Log spread of metric over the pilots sel matches: adds to *ss, *df; returns the count. */
static size_t pilot_spread(const json_t *pilots, const json_t *sel, const char *metric, double *ss,
			   double *df)
{
	double v[1024], m = 0;
	size_t n = 0, i;
	json_t *r;

	json_array_foreach(pilots, i, r) {
		const json_t *x = json_object_get(json_object_get(r, "metrics"), metric);

		if (n < 1024 && rule_select_match(r, sel) && json_is_number(x) &&
		    json_number_value(x) > 0)
			v[n++] = log(json_number_value(x));
	}
	if (n < 2)
		return n;
	for (i = 0; i < n; i++)
		m += v[i] / (double) n;
	for (i = 0; i < n; i++)
		*ss += (v[i] - m) * (v[i] - m);
	*df += (double) (n - 1);
	return n;
}

/* One power detail for an interval hypothesis (new); *pw: the power, -1 when unknown. */
static json_t *power_of(const json_t *doc, const json_t *specs, const json_t *pilots, double *pw)
{
	const json_t *iv = json_object_get(doc, "interval"), *over = json_object_get(iv, "over");
	const char *metric = json_string_value(json_object_get(iv, "metric"));
	double effect = json_number_value(json_object_get(json_object_get(doc, "prediction"), "value"));
	double thr = json_number_value(json_object_get(iv, "threshold"));
	double level = json_is_number(json_object_get(iv, "level"))
			       ? json_number_value(json_object_get(iv, "level"))
			       : 0.95;
	double sd = -1, ss = 0, df = 0;
	unsigned na = planned_n(specs, json_object_get(iv, "select"));
	unsigned nb = over ? planned_n(specs, over) : na, n = na < nb ? na : nb, need;
	json_t *d = json_pack("{s:f, s:f, s:s, s:f, s:b, s:I}", "effect", effect, "threshold", thr,
			      "op", json_string_value(json_object_get(iv, "op")), "level", level,
			      "ratio", over != NULL, "replicates", (json_int_t) n);

	*pw = -1;
	if (json_is_array(pilots)) {
		size_t pa = pilot_spread(pilots, json_object_get(iv, "select"), metric, &ss, &df);
		size_t pb = over ? pilot_spread(pilots, over, metric, &ss, &df) : 0;

		json_object_set_new(d, "pilot_n", over ? json_pack("[I, I]", (json_int_t) pa, (json_int_t) pb)
						       : json_pack("[I]", (json_int_t) pa));
		if (df > 0) {
			sd = sqrt(ss / df);
			json_object_set_new(d, "sd_log_pilot", json_real(sd));
		}
	}
	if (json_is_number(json_object_get(iv, "sd_log"))) {
		json_object_set_new(d, "sd_log_registered", json_real(json_number_value(json_object_get(iv, "sd_log"))));
		if (sd < 0)
			sd = json_number_value(json_object_get(iv, "sd_log"));
	}
	if (sd < 0) {
		json_object_set_new(d, "why",
				    json_string("no spread to plan with: register interval.sd_log (from "
						"'coldstudy plan power S --pilot RUN...')"));
		return d;
	}
	json_object_set_new(d, "sd_log", json_real(sd));
	*pw = holdout_interval_power(effect, thr, sd, n, over != NULL, level);
	json_object_set_new(d, "power", json_real(*pw));
	need = holdout_interval_replicates_for(effect, thr, sd, over != NULL, level, 0.9);
	json_object_set_new(d, "replicates_for_power_0.9", need ? json_integer(need) : json_null());
	if (!need)
		json_object_set_new(d, "why",
				    json_string("no replicate count up to 1000 reaches power 0.9: the "
						"predicted effect sits too close to the threshold"));
	return d;
}

int harness_power(struct ledger *l, const json_t *study, const json_t *pilots, json_t *out,
		  int *refuse, cs_err *e)
{
	hyp_rec h = {json_object(), json_array()};
	ledger_plan plan = {0};
	json_t *idv;
	size_t i;
	int rc;

	*refuse = 0;
	rc = ledger_plan_load(l, 0, &plan, e);
	if (!rc && ledger_foreach(l, "hypothesis", hyp_cb, &h, e))
		rc = e->code ? e->code : CS_EXIT_INTERNAL;
	if (!rc && ledger_foreach(l, "amendment", hyp_cb, &h, e))
		rc = e->code ? e->code : CS_EXIT_INTERNAL;
	if (rc)
		goto out;
	json_array_foreach(h.order, i, idv) {
		const char *id = json_string_value(idv);
		const json_t *hr = json_object_get(h.docs, id), *doc = json_object_get(hr, "doc");
		const char *kind = json_string_value(json_object_get(doc, "kind")) ?: "";
		const char *dec = json_string_value(json_object_get(doc, "decision"));
		int64_t seq = json_integer_value(json_object_get(hr, "seq"));
		int post_hoc = plan.first_run_start && seq > plan.first_run_start;
		int binding = plan.plan && !post_hoc &&
			      (!strcmp(kind, "confirmatory") || !strcmp(kind, "non-cause"));
		int under = json_is_true(json_object_get(doc, "underpowered"));
		json_t *specs, *findings = json_array(), *d;
		double pw;
		char name[40];
		int passed;

		if (!dec || strcmp(dec, "interval")) {
			json_decref(findings);
			continue; /* decided by its rules: no interval, no power to plan */
		}
		specs = load_specs(&plan, study, id, "runs", findings);
		d = power_of(doc, specs, pilots, &pw);
		json_object_set_new(d, "kind", json_string(kind));
		json_object_set_new(d, "findings", findings);
		passed = !binding || under || pw >= HARNESS_POWER_MIN;
		if (under)
			json_object_set_new(d, "underpowered",
					    json_pack("{s:O?}", "rationale",
						      json_object_get(doc, "underpowered_rationale")));
		if (!binding)
			json_object_set_new(d, "not_binding",
					    json_string("exploratory, descriptive, post hoc or no plan"));
		if (!passed)
			*refuse = 1;
		snprintf(name, sizeof(name), "power:%s", id);
		json_array_append_new(out, json_pack("{s:s, s:s, s:b, s:o}", "check", name, "hypothesis",
						     id, "passed", passed, "detail", d));
		json_decref(specs);
	}
out:
	json_decref(h.docs);
	json_decref(h.order);
	ledger_plan_free(&plan);
	return rc;
}

typedef struct pilot_ctx {
	const json_t *ids; /* wanted run ids */
	json_t *found;     /* id -> run payload */
} pilot_ctx;

static int pilot_cb(const ledger_record *r, void *ud)
{
	pilot_ctx *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	const char *id = json_string_value(json_object_get(p, "run_id"));

	if (id && cs_json_has_string(c->ids, id))
		json_object_set(c->found, id, p);
	json_decref(p);
	return 0;
}

int harness_pilots(struct ledger *l, const json_t *ids, json_t **out, cs_err *e)
{
	pilot_ctx c = {ids, json_object()};
	json_t *v, *arr = json_array();
	size_t i;
	int rc = 0;

	*out = NULL;
	if (ledger_foreach(l, "run", pilot_cb, &c, e))
		rc = e->code ? e->code : CS_EXIT_INTERNAL;
	json_array_foreach(ids, i, v) {
		const json_t *r = json_object_get(c.found, json_string_value(v));
		const char *cls = json_string_value(json_object_get(r, "class")) ?: "exploratory";

		if (rc)
			break;
		if (!r) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "--pilot %s: no complete run of that id in this study",
					json_string_value(v));
		} else if (strcmp(cls, "exploratory")) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"--pilot %s: a %s run; pilots are exploratory runs (a spec the "
					"plan does not name), disclosed as such",
					json_string_value(v), cls);
		} else {
			json_array_append_new(arr, json_pack("{s:O, s:O?, s:O?}", "id", v, "tags",
							     json_object_get(r, "tags"), "metrics",
							     json_object_get(r, "metrics")));
		}
	}
	json_decref(c.found);
	if (rc)
		json_decref(arr);
	else
		*out = arr;
	return rc;
}
