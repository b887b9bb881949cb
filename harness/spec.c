/*
 * spec.c - study.json and run.json: strict validation, defaults, the
 * features a model predicts from, and the `study` record.
 *
 * Validation is as strict as for hypothesis files: every key is known
 * (unknown keys are refused, so a typo like "ef_serch" cannot silently
 * fall back to a default), every value has its type and range, and a
 * failure names the file, the JSON path and what was expected (exit 5).
 *
 * The run document is kept as written for its identity (spec_sha256 over
 * its canonical form); the effective spec merges the study's defaults
 * under it and fills every remaining knob with the engine's default, so
 * a run record shows exactly what ran.
 */
#include "harness.h"
#include "harness_int.h"

#include "coldvec.h"
#include "guard.h"
#include "ledger.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small schema helpers ---- */

static int bad(cs_err *e, const char *name, const char *where, const char *key, const char *why)
{
	return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s%s%s: %s", name, where, key ? "." : "",
			  key ? key : "", why);
}

/* Refuse keys of obj not in allowed (NULL-terminated). */
static int only_keys(const json_t *obj, const char *const *allowed, const char *name,
		     const char *where, cs_err *e)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *) obj, k, v) {
		size_t i;

		for (i = 0; allowed[i]; i++)
			if (!strcmp(allowed[i], k))
				break;
		if (!allowed[i])
			return bad(e, name, where, k, "unknown key");
	}
	return 0;
}

static int want_string(const json_t *obj, const char *key, int required, size_t maxlen,
		       const char *name, const char *where, cs_err *e)
{
	const json_t *v = json_object_get(obj, key);

	if (!v)
		return required ? bad(e, name, where, key, "required string is missing") : 0;
	if (!json_is_string(v))
		return bad(e, name, where, key, "expected a string");
	if (json_string_length(v) == 0 || json_string_length(v) > maxlen)
		return bad(e, name, where, key, "string is empty or too long");
	return 0;
}

static int want_int(const json_t *obj, const char *key, int required, json_int_t lo,
		    json_int_t hi, const char *name, const char *where, cs_err *e)
{
	const json_t *v = json_object_get(obj, key);
	char why[128];

	if (!v)
		return required ? bad(e, name, where, key, "required integer is missing") : 0;
	if (!json_is_integer(v))
		return bad(e, name, where, key, "expected an integer");
	if (json_integer_value(v) < lo || json_integer_value(v) > hi) {
		snprintf(why, sizeof(why), "expected an integer in [%lld, %lld]", (long long) lo,
			 (long long) hi);
		return bad(e, name, where, key, why);
	}
	return 0;
}

static int want_enum(const json_t *obj, const char *key, const char *const *vals,
		     const char *name, const char *where, cs_err *e)
{
	const json_t *v = json_object_get(obj, key);
	char why[256];
	size_t len = 0;

	if (!v)
		return 0;
	if (json_is_string(v))
		for (size_t i = 0; vals[i]; i++)
			if (!strcmp(vals[i], json_string_value(v)))
				return 0;
	len += (size_t) snprintf(why, sizeof(why), "expected one of");
	for (size_t i = 0; vals[i] && len < sizeof(why); i++)
		len += (size_t) snprintf(why + len, sizeof(why) - len, " \"%s\"", vals[i]);
	return bad(e, name, where, key, why);
}

static int want_string_array(const json_t *obj, const char *key, size_t maxn, const char *name,
			     const char *where, cs_err *e)
{
	const json_t *v = json_object_get(obj, key);
	char w[256];
	size_t i;
	json_t *x;

	if (!v)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > maxn)
		return bad(e, name, where, key, "expected an array of strings (bounded)");
	json_array_foreach(v, i, x) {
		if (!json_is_string(x) || !json_string_length(x) || json_string_length(x) > 4096) {
			snprintf(w, sizeof(w), "%s.%s[%zu]", where, key, i);
			return bad(e, name, w, NULL, "expected a non-empty string");
		}
	}
	return 0;
}

static int id_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '-' || s[i] == '_' || s[i] == '.' || (s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return 0;
	return 1;
}

/* ---- the plan (study.json "plan") ---- */

/*
 * The plan's keys, one table per object, so that a schema can be made from
 * them (as from every table in this file):
 *   "plan": {"design": [RUN.json...],
 *            "hypotheses": {"H1": {"runs": [RUN.json...], "sceptic": [RUN.json...]}},
 *            "holdout": {"targets": [RUN.json...], "metrics": [M...], "threshold": 0.35,
 *                        "band_level": 0.95, "min_inside": N},
 *            "notes": TEXT}
 * Paths are relative to the study.json's folder.
 */
static const char *const plan_keys[] = {"design", "hypotheses", "holdout", "notes", NULL};
static const char *const plan_hyp_keys[] = {"runs", "sceptic", NULL};
static const char *const plan_holdout_keys[] = {"targets", "metrics", "threshold", "band_level",
						"min_inside", NULL};

/* "H" and 1..6 digits, no leading zero (hyp_id_valid's rule; harness does not link hypotheses/). */
static int plan_hyp_id(const char *s)
{
	size_t n = strlen(s);

	if (n < 2 || n > 7 || s[0] != 'H' || s[1] == '0')
		return 0;
	for (size_t i = 1; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static int plan_validate(const json_t *plan, const char *name, cs_err *e)
{
	const json_t *h, *hs, *v;
	const char *k;
	json_t *x;
	char w[160];
	size_t cells;
	int rc;

	if (!json_is_object(plan))
		return bad(e, name, "$", "plan", "expected an object {design, hypotheses, holdout}");
	if ((rc = only_keys(plan, plan_keys, name, "$.plan", e)) ||
	    (rc = want_string_array(plan, "design", 4096, name, "$.plan", e)) ||
	    (rc = want_string(plan, "notes", 0, 65536, name, "$.plan", e)))
		return rc;
	hs = json_object_get(plan, "hypotheses");
	if (hs && !json_is_object(hs))
		return bad(e, name, "$.plan", "hypotheses",
			   "expected an object {\"H1\": {\"runs\": [...], \"sceptic\": [...]}}");
	json_object_foreach((json_t *) hs, k, x) {
		snprintf(w, sizeof(w), "$.plan.hypotheses.%.32s", k);
		if (!plan_hyp_id(k))
			return bad(e, name, w, NULL, "expected a hypothesis id like \"H1\"");
		if (!json_is_object(x))
			return bad(e, name, w, NULL, "expected an object {\"runs\", \"sceptic\"}");
		if ((rc = only_keys(x, plan_hyp_keys, name, w, e)) ||
		    (rc = want_string_array(x, "runs", 4096, name, w, e)) ||
		    (rc = want_string_array(x, "sceptic", 4096, name, w, e)))
			return rc;
		if (!json_array_size(json_object_get(x, "runs")))
			return bad(e, name, w, "runs", "expected the run specs that decide it (non-empty)");
	}
	h = json_object_get(plan, "holdout");
	if (!h)
		return 0;
	if (!json_is_object(h))
		return bad(e, name, "$.plan", "holdout",
			   "expected an object {targets, metrics, threshold, band_level, min_inside}");
	if ((rc = only_keys(h, plan_holdout_keys, name, "$.plan.holdout", e)) ||
	    (rc = want_string_array(h, "targets", 4096, name, "$.plan.holdout", e)) ||
	    (rc = want_string_array(h, "metrics", 64, name, "$.plan.holdout", e)) ||
	    (rc = want_int(h, "min_inside", 0, 0, 1 << 30, name, "$.plan.holdout", e)))
		return rc;
	if (!json_array_size(json_object_get(h, "targets")))
		return bad(e, name, "$.plan.holdout", "targets", "expected the holdout run specs (non-empty)");
	if (!json_array_size(json_object_get(h, "metrics")))
		return bad(e, name, "$.plan.holdout", "metrics", "expected the metrics predicted (non-empty)");
	v = json_object_get(h, "threshold");
	if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 100)
		return bad(e, name, "$.plan.holdout", "threshold",
			   "required: the median relative error a pass allows, a number in (0, 100]");
	v = json_object_get(h, "band_level");
	if (v && (!json_is_number(v) || !(json_number_value(v) >= 0.5) ||
		  !(json_number_value(v) < 1.0)))
		return bad(e, name, "$.plan.holdout", "band_level",
			   "expected the bands' coverage level, a number in [0.5, 1)");
	cells = json_array_size(json_object_get(h, "targets")) *
		json_array_size(json_object_get(h, "metrics"));
	v = json_object_get(h, "min_inside");
	if (v && (size_t) json_integer_value(v) > cells)
		return bad(e, name, "$.plan.holdout", "min_inside",
			   "asks for more predictions inside their bands than targets x metrics");
	return 0;
}

/* ---- study.json ---- */

int harness_study_validate(const json_t *doc, const char *name, cs_err *e)
{
	static const char *const top[] = {"id", "title", "production", "datasets", "indexes",
					  "defaults", "scratch_dir", "notes", "plan", NULL};
	static const char *const prod_keys[] = {"paths", "block_devices", "databases", "hosts",
						NULL};
	static const char *const ix_keys[] = {"kind", "dataset", "source", "clone", NULL};
	static const char *const kinds[] = {"hnsw", "paged", "phnsw", "hfresh", NULL};
	const json_t *prod, *ds, *ixs;
	const char *k;
	json_t *v;
	size_t total = 0;
	int rc;

	if ((rc = only_keys(doc, top, name, "$", e)) ||
	    (rc = want_string(doc, "id", 1, 64, name, "$", e)) ||
	    (rc = want_string(doc, "title", 0, 512, name, "$", e)) ||
	    (rc = want_string(doc, "scratch_dir", 0, 4000, name, "$", e)) ||
	    (rc = want_string(doc, "notes", 0, 65536, name, "$", e)))
		return rc;
	if (!id_ok(json_string_value(json_object_get(doc, "id"))))
		return bad(e, name, "$", "id", "expected 1-64 of [A-Za-z0-9._-]");
	prod = json_object_get(doc, "production");
	if (!json_is_object(prod))
		return bad(e, name, "$", "production",
			   "required object {paths, block_devices, databases, hosts} is missing");
	if ((rc = only_keys(prod, prod_keys, name, "$.production", e)))
		return rc;
	for (size_t i = 0; prod_keys[i]; i++) {
		if ((rc = want_string_array(prod, prod_keys[i], 64, name, "$.production", e)))
			return rc;
		total += json_array_size(json_object_get(prod, prod_keys[i]));
	}
	if (!total)
		return bad(e, name, "$", "production",
			   "names no production item: a study must say what it must never touch");
	ds = json_object_get(doc, "datasets");
	if (ds) {
		if (!json_is_object(ds))
			return bad(e, name, "$", "datasets", "expected an object {name: spec}");
		json_object_foreach((json_t *) ds, k, v) {
			if (!json_is_string(v) || !json_string_length(v) || !id_ok(k))
				return cs_err_set(e, CS_EXIT_BADINPUT,
						  "%s: $.datasets.%s: expected a dataset spec string "
						  "under a name of [A-Za-z0-9._-]",
						  name, k);
		}
	}
	ixs = json_object_get(doc, "indexes");
	if (ixs) {
		if (!json_is_object(ixs))
			return bad(e, name, "$", "indexes", "expected an object {name: {...}}");
		json_object_foreach((json_t *) ixs, k, v) {
			char w[128];

			snprintf(w, sizeof(w), "$.indexes.%.64s", k);
			if (!json_is_object(v))
				return bad(e, name, w, NULL, "expected an object");
			if ((rc = only_keys(v, ix_keys, name, w, e)) ||
			    (rc = want_enum(v, "kind", kinds, name, w, e)) ||
			    (rc = want_string(v, "dataset", 0, 4000, name, w, e)) ||
			    (rc = want_string(v, "source", 0, 4000, name, w, e)) ||
			    (rc = want_string(v, "clone", 1, 4000, name, w, e)))
				return rc;
		}
	}
	if (json_object_get(doc, "plan") && (rc = plan_validate(json_object_get(doc, "plan"), name, e)))
		return rc;
	if (json_object_get(doc, "defaults")) {
		if (!json_is_object(json_object_get(doc, "defaults")))
			return bad(e, name, "$", "defaults", "expected an object of run.json keys");
		return harness_run_validate(json_object_get(doc, "defaults"), name, "$.defaults", 1,
					    e);
	}
	return 0;
}

int harness_study_load(const char *path, json_t **doc, cs_err *e)
{
	int rc = cs_json_load_file(path, HARNESS_SPEC_CAP, doc, e);

	if (rc)
		return rc;
	rc = harness_study_validate(*doc, path, e);
	if (rc) {
		json_decref(*doc);
		*doc = NULL;
	}
	return rc;
}

/* ---- run.json ---- */

/*
 * The treatment knobs (docs/records.md "Treatments"): device_time,
 * prewarm, load, bulkwrite, client_cpus. Combinations that would measure
 * nothing (virtual time without a device, competing readers replayed in
 * virtual time, prewarm under a real-time device model) are refused on
 * the effective spec only, since study defaults may supply the device.
 */
static int treatments_validate(const json_t *doc, const char *name, const char *where, cs_err *e)
{
	static const char *const times[] = {"realtime", "virtual", NULL};
	static const char *const ofs[] = {"self", "other", NULL};
	static const char *const pw_keys[] = {"of", "offset", NULL};
	static const char *const ld_keys[] = {"readers", "block_bytes", NULL};
	static const char *const bw_keys[] = {"max_bytes", "max_s", "chunk_bytes", "sync_bytes",
					      "dir", NULL};
	const json_t *v;
	char w[200];
	int rc;

	if ((rc = want_enum(doc, "device_time", times, name, where, e)))
		return rc;
	v = json_object_get(doc, "prewarm");
	if (v && !json_is_null(v)) {
		snprintf(w, sizeof(w), "%s.prewarm", where);
		if (!json_is_object(v))
			return bad(e, name, where, "prewarm",
				   "expected {\"of\": \"self\"|\"other\", \"offset\": N}");
		if ((rc = only_keys(v, pw_keys, name, w, e)) ||
		    (rc = want_enum(v, "of", ofs, name, w, e)) ||
		    (rc = want_int(v, "offset", 0, 1, (json_int_t) 1 << 40, name, w, e)))
			return rc;
		if (!json_object_get(v, "of"))
			return bad(e, name, w, "of", "required: \"self\" or \"other\"");
	}
	v = json_object_get(doc, "load");
	if (v && !json_is_null(v)) {
		snprintf(w, sizeof(w), "%s.load", where);
		if (!json_is_object(v))
			return bad(e, name, where, "load", "expected {\"readers\": N, \"block_bytes\": B}");
		if ((rc = only_keys(v, ld_keys, name, w, e)) ||
		    (rc = want_int(v, "readers", 1, 1, 256, name, w, e)) ||
		    (rc = want_int(v, "block_bytes", 0, 4096, 1 << 20, name, w, e)))
			return rc;
		if (json_integer_value(json_object_get(v, "block_bytes")) % 4096)
			return bad(e, name, w, "block_bytes", "expected a multiple of 4096 (O_DIRECT)");
	}
	v = json_object_get(doc, "bulkwrite");
	if (v && !json_is_null(v)) {
		const json_t *ms;

		snprintf(w, sizeof(w), "%s.bulkwrite", where);
		if (!json_is_object(v))
			return bad(e, name, where, "bulkwrite",
				   "expected {\"max_bytes\", \"max_s\", \"chunk_bytes\", \"sync_bytes\", \"dir\"}");
		if ((rc = only_keys(v, bw_keys, name, w, e)) ||
		    (rc = want_int(v, "max_bytes", 0, 1 << 20, (json_int_t) 1 << 40, name, w, e)) ||
		    (rc = want_int(v, "chunk_bytes", 0, 4096, 64 << 20, name, w, e)) ||
		    (rc = want_int(v, "sync_bytes", 0, 4096, (json_int_t) 1 << 34, name, w, e)) ||
		    (rc = want_string(v, "dir", 0, 4000, name, w, e)))
			return rc;
		ms = json_object_get(v, "max_s");
		if (ms && (!json_is_number(ms) || json_number_value(ms) <= 0 ||
			   json_number_value(ms) > 86400.0))
			return bad(e, name, w, "max_s", "expected a number of seconds in (0, 86400]");
	}
	v = json_object_get(doc, "client_cpus");
	if (v && !json_is_null(v)) {
		size_t i;
		json_t *x;

		if (!json_is_array(v) || !json_array_size(v) || json_array_size(v) > 1024)
			return bad(e, name, where, "client_cpus", "expected a non-empty array of CPU numbers");
		json_array_foreach(v, i, x) {
			if (!json_is_integer(x) || json_integer_value(x) < 0 ||
			    json_integer_value(x) >= 1024) {
				snprintf(w, sizeof(w), "%s.client_cpus[%zu]", where, i);
				return bad(e, name, w, NULL, "expected a CPU number in [0, 1023]");
			}
		}
	}
	return 0;
}

/* The combinations the harness refuses on an effective spec (exit 5). */
int harness_run_check_treatments(const json_t *eff, const char *name, cs_err *e)
{
	const json_t *dev = json_object_get(eff, "device");
	const char *dt = json_string_value(json_object_get(eff, "device_time"));
	int virt = dt && !strcmp(dt, "virtual");
	int has_dev = json_is_string(dev);
	const json_t *pw = json_object_get(eff, "prewarm");
	const json_t *ld = json_object_get(eff, "load");

	if (virt && !has_dev)
		return bad(e, name, "$", "device_time",
			   "\"virtual\" replays reads against a device profile, and none is named");
	if (virt && json_is_object(ld))
		return bad(e, name, "$", "load",
			   "competing readers cannot be replayed in virtual time (the replay models "
			   "one query's reads); use \"device_time\": \"realtime\"");
	if (json_is_object(pw) && has_dev && !virt)
		return bad(e, name, "$", "prewarm",
			   "the real-time device model delays page-cache hits too, so prewarm would "
			   "show nothing; use \"device_time\": \"virtual\" or no device");
	if (json_is_object(pw) && json_integer_value(json_object_get(eff, "clients")) != 1)
		return bad(e, name, "$", "prewarm",
			   "prewarm evicts and loads the cache before each query: needs clients 1");
	if (json_is_true(json_object_get(eff, "cold_each_query")) &&
	    !json_is_true(json_object_get(eff, "cold")))
		return bad(e, name, "$", "cold_each_query", "needs \"cold\": true");
	if (json_is_true(json_object_get(eff, "cold_each_query")) &&
	    json_integer_value(json_object_get(eff, "clients")) != 1)
		return bad(e, name, "$", "cold_each_query",
			   "evicting before each query would evict other clients' pages: needs clients 1");
	if (json_is_object(pw) && !json_is_true(json_object_get(eff, "cold")))
		return bad(e, name, "$", "prewarm", "a prewarm run starts cold: needs \"cold\": true");
	return 0;
}

int harness_run_validate(const json_t *doc, const char *name, const char *where, int partial,
			 cs_err *e)
{
	static const char *const top[] = {
		"index", "queries", "base", "k", "ef_search", "search_probe", "rescore_limit", "mode",
		"fanout", "merge", "io", "io_depth", "strategy", "queue_depth", "buffers_bytes",
		"device", "clients", "query_count", "duration_s", "cold", "partitions", "tags",
		"hypotheses", "samplers", "mem_cap_bytes", "readahead", "metric", "notes",
		"device_time", "prewarm", "load", "bulkwrite", "client_cpus", "cold_each_query", NULL};
	static const char *const q_keys[] = {"spec", "first", "count", NULL};
	static const char *const s_keys[] = {"iostat_s", "memory_s", "prometheus_s",
					     "prometheus_url", NULL};
	static const char *const modes[] = {"serial", "fanout", NULL};
	static const char *const merges[] = {"stream", "sort", NULL};
	static const char *const ios[] = {"serial", "concurrent", NULL};
	static const char *const strategies[] = {"mmap", "pread", "direct", "uring", NULL};
	static const char *const metrics[] = {"l2", "ip", "cosine", NULL};
	const json_t *q, *s, *v;
	char w[160];
	int rc;

	if ((rc = only_keys(doc, top, name, where, e)))
		return rc;
	if ((rc = want_string(doc, "index", !partial, 4000, name, where, e)) ||
	    (rc = want_string(doc, "base", 0, 4000, name, where, e)) ||
	    (rc = want_int(doc, "k", 0, 1, 1000, name, where, e)) ||
	    (rc = want_int(doc, "ef_search", 0, 1, 100000, name, where, e)) ||
	    (rc = want_int(doc, "search_probe", 0, 1, 100000, name, where, e)) ||
	    (rc = want_int(doc, "rescore_limit", 0, 0, 1000000, name, where, e)) ||
	    (rc = want_enum(doc, "mode", modes, name, where, e)) ||
	    (rc = want_int(doc, "fanout", 0, 1, 4096, name, where, e)) ||
	    (rc = want_enum(doc, "merge", merges, name, where, e)) ||
	    (rc = want_enum(doc, "io", ios, name, where, e)) ||
	    (rc = want_int(doc, "io_depth", 0, 1, 4096, name, where, e)) ||
	    (rc = want_enum(doc, "strategy", strategies, name, where, e)) ||
	    (rc = want_int(doc, "queue_depth", 0, 1, 4096, name, where, e)) ||
	    (rc = want_int(doc, "buffers_bytes", 0, 0, (json_int_t) 1 << 46, name, where, e)) ||
	    (rc = want_int(doc, "clients", 0, 1, 1024, name, where, e)) ||
	    (rc = want_int(doc, "query_count", 0, 1, 100000000, name, where, e)) ||
	    (rc = want_int(doc, "mem_cap_bytes", 0, 1 << 20, (json_int_t) 1 << 46, name, where, e)) ||
	    (rc = want_enum(doc, "metric", metrics, name, where, e)) ||
	    (rc = want_string(doc, "notes", 0, 65536, name, where, e)) ||
	    (rc = want_string_array(doc, "tags", 64, name, where, e)) ||
	    (rc = want_string_array(doc, "hypotheses", 64, name, where, e)))
		return rc;
	v = json_object_get(doc, "device");
	if (v && !json_is_null(v)) {
		if ((rc = want_string(doc, "device", 0, 4000, name, where, e)))
			return rc;
	}
	v = json_object_get(doc, "duration_s");
	if (v && (!json_is_number(v) || json_number_value(v) <= 0 ||
		  json_number_value(v) > 7 * 86400.0))
		return bad(e, name, where, "duration_s", "expected a number of seconds in (0, 604800]");
	if (json_object_get(doc, "query_count") && json_object_get(doc, "duration_s"))
		return bad(e, name, where, "duration_s",
			   "give either query_count or duration_s, not both");
	v = json_object_get(doc, "cold");
	if (!v && !partial)
		return bad(e, name, where, "cold", "required boolean is missing (cold or warm?)");
	if (v && !json_is_boolean(v))
		return bad(e, name, where, "cold", "expected true (cold) or false (warm)");
	v = json_object_get(doc, "cold_each_query");
	if (v && !json_is_boolean(v))
		return bad(e, name, where, "cold_each_query",
			   "expected a boolean (true: evict and prove cold before every query)");
	v = json_object_get(doc, "readahead");
	if (v && !json_is_boolean(v))
		return bad(e, name, where, "readahead", "expected a boolean");
	v = json_object_get(doc, "partitions");
	if (v) {
		size_t i;
		json_t *x;

		if (!json_is_array(v) || !json_array_size(v) || json_array_size(v) > 65536)
			return bad(e, name, where, "partitions",
				   "expected a non-empty array of partition numbers");
		json_array_foreach(v, i, x) {
			if (!json_is_integer(x) || json_integer_value(x) < 0 ||
			    json_integer_value(x) > 65535) {
				snprintf(w, sizeof(w), "%s.partitions[%zu]", where, i);
				return bad(e, name, w, NULL, "expected an integer in [0, 65535]");
			}
			for (size_t j = 0; j < i; j++)
				if (json_integer_value(json_array_get(v, j)) == json_integer_value(x)) {
					snprintf(w, sizeof(w), "%s.partitions[%zu]", where, i);
					return bad(e, name, w, NULL, "partition listed twice");
				}
		}
	}
	v = json_object_get(doc, "hypotheses");
	if (v) {
		size_t i;
		json_t *x;

		json_array_foreach(v, i, x) {
			if (!id_ok(json_string_value(x))) {
				snprintf(w, sizeof(w), "%s.hypotheses[%zu]", where, i);
				return bad(e, name, w, NULL, "expected a hypothesis id like \"H1\"");
			}
		}
	}
	q = json_object_get(doc, "queries");
	if (!q && !partial)
		return bad(e, name, where, "queries",
			   "required object {spec, first, count} is missing");
	if (q) {
		snprintf(w, sizeof(w), "%s.queries", where);
		if (!json_is_object(q))
			return bad(e, name, where, "queries", "expected an object {spec, first, count}");
		if ((rc = only_keys(q, q_keys, name, w, e)) ||
		    (rc = want_string(q, "spec", 1, 4000, name, w, e)) ||
		    (rc = want_int(q, "first", 0, 0, (json_int_t) 1 << 40, name, w, e)) ||
		    (rc = want_int(q, "count", 0, 1, (json_int_t) 1 << 40, name, w, e)))
			return rc;
	}
	s = json_object_get(doc, "samplers");
	if (s) {
		snprintf(w, sizeof(w), "%s.samplers", where);
		if (!json_is_object(s))
			return bad(e, name, where, "samplers", "expected an object");
		if ((rc = only_keys(s, s_keys, name, w, e)) ||
		    (rc = want_string(s, "prometheus_url", 0, 2000, name, w, e)))
			return rc;
		for (size_t i = 0; i < 3; i++) {
			v = json_object_get(s, s_keys[i]);
			if (v && (!json_is_number(v) || json_number_value(v) < 0.01 ||
				  json_number_value(v) > 3600))
				return bad(e, name, w, s_keys[i],
					   "expected a period in seconds in [0.01, 3600]");
		}
		v = json_object_get(s, "prometheus_url");
		if (v && strncmp(json_string_value(v), "http://", 7) &&
		    strncmp(json_string_value(v), "https://", 8))
			return bad(e, name, w, "prometheus_url", "expected an http:// or https:// URL");
	}
	if ((rc = treatments_validate(doc, name, where, e)))
		return rc;
	/* Knob values the engine itself can judge. */
	v = json_object_get(doc, "device");
	if (json_is_string(v) && strncmp(json_string_value(v), "probe:", 6)) {
		const char *const *p = cv_device_profiles();
		size_t i;

		for (i = 0; p && p[i]; i++)
			if (!strcmp(p[i], json_string_value(v)))
				break;
		if (p && !p[i])
			return bad(e, name, where, "device",
				   "unknown device profile (see 'coldstudy device list')");
	}
	return 0;
}

int harness_run_load(const char *path, json_t **doc, char sha_out[65], cs_err *e)
{
	char *canon = NULL;
	size_t len;
	int rc;

	rc = cs_json_load_file(path, HARNESS_SPEC_CAP, doc, e);
	if (rc)
		return rc;
	rc = harness_run_validate(*doc, path, "$", 0, e);
	if (!rc)
		rc = cs_json_canonical(*doc, &canon, &len, e);
	if (!rc)
		cs_sha256_hex(canon, len, sha_out);
	free(canon);
	if (rc) {
		json_decref(*doc);
		*doc = NULL;
	}
	return rc;
}

int harness_run_effective(const json_t *run, const json_t *defaults, json_t **out, cs_err *e)
{
	cv_query_opts qo;
	cv_open_opts oo;
	json_t *eff, *q;

	cv_query_opts_default(&qo);
	cv_open_opts_default(&oo);
	eff = json_pack("{s:I, s:I, s:I, s:I, s:s, s:I, s:s, s:s, s:I, s:s, s:I, s:n, s:I, "
			"s:b, s:[], s:[]}",
			"k", (json_int_t) qo.k, "ef_search", (json_int_t) qo.ef_search,
			"search_probe", (json_int_t) qo.search_probe, "rescore_limit",
			(json_int_t) qo.rescore_limit, "mode", "serial", "fanout", (json_int_t) 1,
			"merge", "stream", "io", "serial", "io_depth", (json_int_t) qo.io_depth,
			"strategy", "pread", "buffers_bytes", (json_int_t) oo.buffers_bytes, "device",
			"clients", (json_int_t) 1, "readahead", 0, "tags", "hypotheses");
	if (!eff)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	if (defaults)
		json_object_update(eff, (json_t *) defaults);
	json_object_update(eff, (json_t *) run);
	if (json_is_string(json_object_get(eff, "device")) && !json_object_get(eff, "device_time"))
		json_object_set_new(eff, "device_time", json_string("realtime"));
	/* queries: a copy with first filled in. */
	q = json_deep_copy(json_object_get(eff, "queries"));
	if (q) {
		if (!json_object_get(q, "first"))
			json_object_set_new(q, "first", json_integer(0));
		json_object_set_new(eff, "queries", q);
	}
	*out = eff;
	return 0;
}

/* Read DIR/KIND (the index's kind) into out; "" when absent. */
static void read_kind(const char *dir, char *out, size_t cap)
{
	char path[PATH_MAX], *buf = NULL;
	size_t len;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/KIND", dir);
	if (cs_read_file(path, 64, &buf, &len, NULL))
		return;
	buf[strcspn(buf, "\r\n")] = '\0';
	snprintf(out, cap, "%s", buf);
	free(buf);
}

int harness_spec_features(const json_t *spec, json_t **features, cs_err *e)
{
	json_t *eff = NULL, *f, *parts, *qc, *v;
	const char *dir;
	char kind[64];
	int rc;

	*features = NULL;
	rc = harness_run_effective(spec, NULL, &eff, e);
	if (rc)
		return rc;
	dir = json_string_value(json_object_get(eff, "index"));
	kind[0] = '\0';
	if (dir)
		read_kind(dir, kind, sizeof(kind));
	f = json_object();
	json_object_set(f, "clients", json_object_get(eff, "clients"));
	json_object_set(f, "fanout", json_object_get(eff, "fanout"));
	json_object_set(f, "mode", json_object_get(eff, "mode"));
	json_object_set(f, "device", json_object_get(eff, "device"));
	json_object_set(f, "strategy", json_object_get(eff, "strategy"));
	json_object_set(f, "ef_search", json_object_get(eff, "ef_search"));
	json_object_set(f, "search_probe", json_object_get(eff, "search_probe"));
	json_object_set(f, "rescore_limit", json_object_get(eff, "rescore_limit"));
	json_object_set(f, "cold", json_object_get(eff, "cold") ?: json_false());
	json_object_set(f, "buffers_bytes", json_object_get(eff, "buffers_bytes"));
	json_object_set_new(f, "kind", kind[0] ? json_string(kind) : json_null());
	v = json_object_get(eff, "device_time");
	json_object_set(f, "device_time", v ? v : json_null());
	v = json_object_get(json_object_get(eff, "prewarm"), "of");
	json_object_set(f, "prewarm", v ? v : json_null());
	json_object_set_new(f, "load_readers",
			    json_integer(json_integer_value(
				    json_object_get(json_object_get(eff, "load"), "readers"))));
	json_object_set_new(f, "bulkwrite", json_boolean(json_is_object(json_object_get(eff, "bulkwrite"))));
	v = json_object_get(eff, "client_cpus");
	json_object_set(f, "client_cpus", v ? v : json_null());
	if (json_is_true(json_object_get(eff, "cold")) &&
	    json_is_true(json_object_get(eff, "cold_each_query")))
		json_object_set_new(f, "cold_each_query", json_true()); /* absent: once per run */
	qc = json_object_get(eff, "query_count");
	if (!qc)
		qc = json_object_get(json_object_get(eff, "queries"), "count");
	json_object_set(f, "queries", qc ? qc : json_null());
	parts = json_object_get(eff, "partitions");
	if (json_is_array(parts)) {
		json_object_set_new(f, "partitions", json_integer((json_int_t) json_array_size(parts)));
	} else if (!strcmp(kind, "phnsw")) {
		cv_index *ix = NULL;
		cv_open_opts oo;

		cv_open_opts_default(&oo);
		oo.buffers_bytes = 1u << 20;
		if (cv_index_open(dir, &oo, &ix, NULL) == 0) {
			json_object_set_new(f, "partitions",
					    json_integer((json_int_t) cv_index_partitions(ix)));
			cv_index_close(ix);
		} else {
			json_object_set_new(f, "partitions", json_null());
		}
	} else {
		json_object_set_new(f, "partitions", json_integer(kind[0] ? 1 : 0));
		if (!kind[0])
			json_object_set_new(f, "partitions", json_null());
	}
	json_decref(eff);
	*features = f;
	return 0;
}

/* ---- tags from settings ---- */

/*
 * The tag vocabulary a run's settings decide (docs/records.md "Tags"),
 * besides "fanout<N>" and "ef<N>". A run spec may carry other labels too;
 * a tag of this vocabulary that its settings do not give it is refused.
 */
static const char *const tag_vocab[] = {
	"cold", "warm", "serial", "fanout", "gate", "partition", "hdd", "ssd", "nvme", "gp3",
	"gp3-3000", "gp3-80000", "probe", "virtual", "realtime", "baseline", "prewarm",
	"prewarm-other", "load", "bulkwrite", "client-alt", "memcap", "merge-sort", "design",
	"holdout", "sceptic", "exploratory", NULL};
static const char *const kind_tags[] = {"hnsw", "paged", "phnsw", "hfresh", NULL};
/* Knobs at the study's defaults, and no treatment: a "baseline" run. */
static const char *const baseline_knobs[] = {"k", "ef_search", "search_probe", "rescore_limit",
					     "buffers_bytes", "strategy", "io", "io_depth", "merge",
					     "readahead", "queue_depth", "metric", NULL};
static const char *const treatment_keys[] = {"prewarm", "load", "bulkwrite", "client_cpus",
					     "mem_cap_bytes", NULL};

static int in_list(const char *const *list, const char *s)
{
	for (size_t i = 0; list[i]; i++)
		if (!strcmp(list[i], s))
			return 1;
	return 0;
}

/* "<prefix><digits>" */
static int numbered(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(s, prefix, n) || !s[n])
		return 0;
	for (s += n; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static int has_tag(const json_t *tags, const char *t)
{
	size_t i;
	json_t *v;

	json_array_foreach(tags, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), t))
			return 1;
	return 0;
}

static void add_tag(json_t *tags, const char *t)
{
	if (!has_tag(tags, t))
		json_array_append_new(tags, json_string(t));
}

/* The tags an effective spec's settings give it, with kind (NULL: unknown) and class (NULL: none). */
static json_t *derived_tags(const json_t *eff, const json_t *eff0, const char *kind,
			    const char *cls)
{
	static const struct {
		const char *profile, *tag;
	} dev_tags[] = {{"hdd-pool", "hdd"},   {"sata-ssd", "ssd"},	  {"nvme", "nvme"},
			{"gp3-3000", "gp3"},   {"gp3-80000", "gp3"}, {NULL, NULL}};
	json_t *t = json_array();
	const json_t *dev = json_object_get(eff, "device");
	const char *mode = json_string_value(json_object_get(eff, "mode"));
	const json_t *pw = json_object_get(eff, "prewarm");
	char buf[48];
	int treated = 0;

	/* a prewarm run starts cold but queries a prewarmed cache: not "cold" (studies' vocabulary) */
	if (!json_is_object(pw))
		add_tag(t, json_is_true(json_object_get(eff, "cold")) ? "cold" : "warm");
	if (mode && !strcmp(mode, "fanout")) {
		add_tag(t, "fanout");
		snprintf(buf, sizeof(buf), "fanout%lld",
			 (long long) json_integer_value(json_object_get(eff, "fanout")));
		add_tag(t, buf);
		if (!strcmp(json_string_value(json_object_get(eff, "merge")) ?: "", "sort"))
			add_tag(t, "merge-sort");
	} else {
		add_tag(t, "serial");
	}
	add_tag(t, json_is_array(json_object_get(eff, "partitions")) ? "partition" : "gate");
	if (json_is_string(dev)) {
		const char *d = json_string_value(dev), *dt;

		for (size_t i = 0; dev_tags[i].profile; i++)
			if (!strcmp(d, dev_tags[i].profile))
				add_tag(t, dev_tags[i].tag);
		if (!strncmp(d, "gp3-", 4) || !strcmp(d, "hdd-pool") || !strcmp(d, "sata-ssd") ||
		    !strcmp(d, "nvme"))
			add_tag(t, d);
		if (!strncmp(d, "probe:", 6))
			add_tag(t, "probe");
		dt = json_string_value(json_object_get(eff, "device_time"));
		add_tag(t, dt && !strcmp(dt, "virtual") ? "virtual" : "realtime");
	}
	snprintf(buf, sizeof(buf), "ef%lld",
		 (long long) json_integer_value(json_object_get(eff, "ef_search")));
	add_tag(t, buf);
	if (json_is_object(pw)) {
		const char *of = json_string_value(json_object_get(pw, "of"));

		add_tag(t, of && !strcmp(of, "other") ? "prewarm-other" : "prewarm");
	}
	if (json_is_object(json_object_get(eff, "load")))
		add_tag(t, "load");
	if (json_is_object(json_object_get(eff, "bulkwrite")))
		add_tag(t, "bulkwrite");
	if (json_is_array(json_object_get(eff, "client_cpus")))
		add_tag(t, "client-alt");
	if (json_is_integer(json_object_get(eff, "mem_cap_bytes")))
		add_tag(t, "memcap");
	for (size_t i = 0; treatment_keys[i]; i++) {
		const json_t *v = json_object_get(eff, treatment_keys[i]);

		treated |= v && !json_is_null(v);
	}
	for (size_t i = 0; baseline_knobs[i] && !treated; i++) {
		const json_t *a = json_object_get(eff, baseline_knobs[i]);
		const json_t *b = json_object_get(eff0, baseline_knobs[i]);

		treated = !((!a && !b) || (a && b && json_equal((json_t *) a, (json_t *) b)));
	}
	if (!treated)
		add_tag(t, "baseline");
	if (kind && *kind)
		add_tag(t, kind);
	if (cls)
		add_tag(t, cls);
	return t;
}

int harness_run_tags(const json_t *eff, const json_t *defaults, const char *kind,
		     const char *cls, const char *name, json_t **out, cs_err *e)
{
	json_t *eff0 = NULL, *empty = json_object(), *t = NULL, *v;
	const json_t *own = json_object_get(eff, "tags");
	size_t i;
	int rc;

	*out = NULL;
	if (!empty)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	rc = harness_run_effective(empty, defaults, &eff0, e);
	json_decref(empty);
	if (rc)
		return rc;
	t = derived_tags(eff, eff0, kind, cls);
	json_decref(eff0);
	json_array_foreach(own, i, v) {
		const char *s = json_string_value(v);
		int vocab;

		if (!s)
			continue;
		vocab = in_list(tag_vocab, s) || numbered(s, "fanout") || numbered(s, "ef") ||
			(kind && *kind && in_list(kind_tags, s));
		if (vocab && !has_tag(t, s)) {
			char w[64], *have = json_dumps(t, JSON_COMPACT);

			snprintf(w, sizeof(w), "$.tags[%zu]", i);
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"%s: %s: tag \"%s\" contradicts the run's own settings, which "
					"give %s",
					name, w, s, have ? have : "[]");
			free(have);
			json_decref(t);
			return rc;
		}
		/* a label outside the vocabulary counts only where the plan registered it */
		if (!vocab && cls && strcmp(cls, "exploratory"))
			add_tag(t, s);
	}
	*out = t;
	return 0;
}

static int last_study_cb(const ledger_record *r, void *ud)
{
	json_t **study = ud;
	json_t *p = json_loads(r->payload, 0, NULL);

	if (json_object_get(p, "doc")) {
		json_decref(*study);
		*study = json_incref(json_object_get(p, "doc"));
	}
	json_decref(p);
	return 0;
}

int harness_run_effective_study(struct ledger *l, const json_t *run, json_t **out, cs_err *e)
{
	json_t *study = NULL;
	int rc;

	if (ledger_foreach(l, "study", last_study_cb, &study, e)) {
		json_decref(study);
		return e && e->code ? e->code : CS_EXIT_INTERNAL;
	}
	rc = harness_run_effective(run, json_object_get(study, "defaults"), out, e);
	json_decref(study);
	return rc;
}

/* ---- the study record ---- */

int harness_study_current(struct ledger *l, json_t **doc, cs_err *e)
{
	return guard_study(l, "study", doc, e);
}

/* The folder of path, for the plan's relative paths ("." for a bare name). */
static void folder_of(const char *path, char *out, size_t cap)
{
	const char *sl = strrchr(path, '/');

	if (!sl)
		snprintf(out, cap, ".");
	else if (sl == path)
		snprintf(out, cap, "/");
	else
		snprintf(out, cap, "%.*s", (int) (sl - path), path);
}

/* Add one planned spec (path under base, class cls) to specs; exit 5 on a conflict. */
static int plan_spec_add(json_t *specs, const json_t *doc, const char *base, const char *rel,
			 const char *cls, const char *name, const char *where, cs_err *e)
{
	char full[PATH_MAX], sha[65];
	json_t *run = NULL, *eff = NULL, *tags = NULL, *s;
	size_t i;
	int rc;

	json_array_foreach(specs, i, s) {
		if (strcmp(json_string_value(json_object_get(s, "path")), rel))
			continue;
		if (!strcmp(json_string_value(json_object_get(s, "class")), cls))
			return 0;
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s: %s is planned as %s and as %s", name,
				  where, rel, json_string_value(json_object_get(s, "class")), cls);
	}
	if ((size_t) snprintf(full, sizeof(full), "%s%s%s", rel[0] == '/' ? "" : base,
			      rel[0] == '/' ? "" : "/", rel) >= sizeof(full))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s: path too long", name, where);
	rc = harness_run_load(full, &run, sha, e);
	if (!rc)
		rc = harness_run_effective(run, json_object_get(doc, "defaults"), &eff, e);
	if (!rc) {
		char kind[64];

		read_kind(json_string_value(json_object_get(eff, "index")) ?: "", kind, sizeof(kind));
		rc = harness_run_tags(eff, json_object_get(doc, "defaults"), kind[0] ? kind : NULL,
				      cls, full, &tags, e);
	}
	json_decref(tags);
	json_decref(eff);
	json_decref(run);
	if (rc)
		return rc;
	json_array_foreach(specs, i, s) {
		if (strcmp(json_string_value(json_object_get(s, "sha256")), sha) ||
		    !strcmp(json_string_value(json_object_get(s, "class")), cls))
			continue;
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: %s: %s has the content of %s, planned as %s (one spec, one "
				  "class)",
				  name, where, rel, json_string_value(json_object_get(s, "path")),
				  json_string_value(json_object_get(s, "class")));
	}
	json_array_append_new(specs, json_pack("{s:s, s:s, s:s}", "path", rel, "sha256", sha,
					       "class", cls));
	return 0;
}

static int plan_list_add(json_t *specs, const json_t *doc, const char *base, const json_t *list,
			 const char *cls, const char *name, const char *where, cs_err *e)
{
	size_t i;
	json_t *v;
	int rc;

	json_array_foreach(list, i, v) {
		char w[200];

		snprintf(w, sizeof(w), "%s[%zu]", where, i);
		if ((rc = plan_spec_add(specs, doc, base, json_string_value(v), cls, name, w, e)))
			return rc;
	}
	return 0;
}

int harness_plan_specs(const json_t *doc, const char *path, json_t **out, cs_err *e)
{
	const json_t *plan = json_object_get(doc, "plan"), *hs;
	json_t *specs = json_array(), *h;
	char base[PATH_MAX], w[160];
	const char *k;
	int rc = 0;

	*out = NULL;
	if (!specs)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	folder_of(path, base, sizeof(base));
	hs = json_object_get(plan, "hypotheses");
	/* holdout first: a target listed as a design run too is the conflict to name */
	rc = plan_list_add(specs, doc, base, json_object_get(json_object_get(plan, "holdout"), "targets"),
			   "holdout", path, "$.plan.holdout.targets", e);
	if (!rc)
		rc = plan_list_add(specs, doc, base, json_object_get(plan, "design"), "design", path,
				   "$.plan.design", e);
	json_object_foreach((json_t *) hs, k, h) {
		if (rc)
			break;
		snprintf(w, sizeof(w), "$.plan.hypotheses.%.32s.runs", k);
		rc = plan_list_add(specs, doc, base, json_object_get(h, "runs"), "design", path, w, e);
		if (rc)
			break;
		snprintf(w, sizeof(w), "$.plan.hypotheses.%.32s.sceptic", k);
		rc = plan_list_add(specs, doc, base, json_object_get(h, "sceptic"), "sceptic", path, w,
				   e);
	}
	if (rc) {
		json_decref(specs);
		return rc;
	}
	*out = specs;
	return 0;
}

int harness_study_register(const char *dir, const char *path, int64_t *seq, cs_err *e)
{
	return harness_study_register_amend(dir, path, NULL, seq, e);
}

int harness_study_register_amend(const char *dir, const char *path, const char *rationale,
				 int64_t *seq, cs_err *e)
{
	ledger *l = NULL;
	ledger_plan prev = {0};
	json_t *doc = NULL, *rec = NULL, *specs = NULL;
	char *canon = NULL, sha[65], psha[65] = "";
	size_t len;
	int rc, have_prev = 0;

	*seq = 0;
	rc = harness_study_load(path, &doc, e);
	if (rc)
		return rc;
	rc = cs_json_canonical(doc, &canon, &len, e);
	if (rc)
		goto out;
	cs_sha256_hex(canon, len, sha);
	free(canon);
	canon = NULL;
	if (json_object_get(doc, "plan")) {
		rc = harness_plan_specs(doc, path, &specs, e);
		if (!rc)
			rc = cs_json_canonical(specs, &canon, &len, e);
		if (rc)
			goto out;
		cs_sha256_hex(canon, len, psha);
	}
	rc = ledger_open(dir, &l, e);
	if (!rc)
		rc = ledger_begin(l, e);
	if (!rc)
		rc = ledger_plan_load(l, 0, &prev, e);
	if (rc)
		goto out;
	have_prev = prev.rec != NULL;
	if (have_prev &&
	    !strcmp(json_string_value(json_object_get(prev.rec, "sha256")) ?: "", sha) &&
	    !strcmp(json_string_value(json_object_get(prev.rec, "plan_sha256")) ?: "", psha)) {
		/* the same study and plan again: nothing to do */
		*seq = prev.study_seq;
		rc = 0;
		goto out;
	}
	/* a change: free before the first run, an amendment after (guards/) */
	if (have_prev && (rc = guard_registration(l, "the study spec and its plan",
						  prev.first_run_start != 0, rationale != NULL,
						  "study register", e)))
		goto out;
	rec = json_pack("{s:O, s:s, s:O}", "id", json_object_get(doc, "id"), "sha256", sha, "doc",
			doc);
	if (!rec) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	if (specs) {
		char base[PATH_MAX], real[PATH_MAX];

		folder_of(path, base, sizeof(base));
		json_object_set(rec, "plan_specs", specs);
		json_object_set_new(rec, "plan_sha256", json_string(psha));
		/* where the plan's relative paths were read (holdout predict reads targets there) */
		if (realpath(base, real))
			json_object_set_new(rec, "plan_base", json_string(real));
	}
	if (have_prev && rationale)
		json_object_set_new(
			rec, "amendment",
			json_pack("{s:s, s:s, s:s, s:I}", "rationale", rationale, "access_state",
				  ledger_access_state(l), "replaces",
				  json_string_value(json_object_get(prev.rec, "sha256")) ?: "",
				  "replaces_seq", (json_int_t) prev.study_seq));
	rc = ledger_append(l, "study", rec, seq, e);
	if (!rc)
		rc = ledger_commit(l, e);
out:
	ledger_plan_free(&prev);
	json_decref(specs);
	json_decref(rec);
	json_decref(doc);
	free(canon);
	ledger_close(l);
	return rc;
}
