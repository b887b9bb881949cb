/*
 * reach.c - which holdout targets a run reads, decided on what it reads
 * rather than how its spec spells it.
 *
 * A query set is known by the SHA-256 of each resolved row (the float32
 * vector, 16 hex digits kept a row): `queries: {"spec": "queries", ...}`
 * and `synth:...[100:103]` that resolve to the same vectors are the same
 * queries. A run reaches a holdout target of the plan when it would read
 * what the target's run will: the same device (a device model's profile,
 * or none), partition sets that intersect (absent: every partition), and
 * query rows in common; and when the target's device is one no design run
 * used, any run on that device reaches it (the device is what the target
 * holds out). A non-holdout run that reaches a target before the first
 * prediction marks that target seen; the score says so.
 *
 * Error convention: 0 or CS_EXIT_* with cs_err filled.
 */
#include "harness.h"

#include "cv_data.h"
#include "harness_int.h"
#include "guard.h"
#include "ledger.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIGEST_ROWS_MAX 65536 /* a query set past this is known by its spelling alone */

json_t *harness_query_digests(const cv_dataset *q)
{
	json_t *out;
	char hex[65];

	if (!q || q->n > DIGEST_ROWS_MAX)
		return NULL;
	out = json_array();
	for (size_t i = 0; out && i < q->n; i++) {
		cs_sha256_hex(q->data + i * q->d, q->d * sizeof(float), hex);
		hex[16] = '\0';
		json_array_append_new(out, json_string(hex));
	}
	return out;
}

/* Do two digest arrays share a row? */
static int rows_meet(const json_t *a, const json_t *b)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
		if (cs_json_has_string(b, json_string_value(v)))
			return 1;
	return 0;
}

/* Do two partition sets intersect? Absent (or null) means every partition. */
static int parts_meet(const json_t *a, const json_t *b)
{
	size_t i, j;
	json_t *x, *y;

	if (!json_is_array(a) || !json_is_array(b))
		return 1;
	json_array_foreach(a, i, x)
		json_array_foreach(b, j, y)
			if (json_integer_value(x) == json_integer_value(y))
				return 1;
	return 0;
}

static const char *device_of(const json_t *eff)
{
	return json_string_value(json_object_get(eff, "device")) ?: "";
}

/* Does a design spec of the plan use device? (Loaded from the plan's paths; one that will not load is skipped.) */
static int design_uses(struct ledger *l, const ledger_plan *plan, const char *base, const char *device)
{
	size_t i;
	json_t *s;

	json_array_foreach(plan->specs, i, s) {
		const char *rel = json_string_value(json_object_get(s, "path"));
		char path[PATH_MAX * 2], now[65];
		json_t *raw = NULL, *eff = NULL;
		cs_err le = {0};
		int uses = 0;

		if (!rel || strcmp(json_string_value(json_object_get(s, "class")) ?: "", "design"))
			continue;
		snprintf(path, sizeof(path), "%s%s%s", rel[0] == '/' ? "" : base,
			 rel[0] == '/' ? "" : "/", rel);
		if (!harness_run_load(path, &raw, now, &le) &&
		    !harness_run_effective_study(l, raw, &eff, &le))
			uses = !strcmp(device_of(eff), device);
		json_decref(raw);
		json_decref(eff);
		if (uses)
			return 1;
	}
	return 0;
}

/* The last query set a call loaded: targets mostly share one (owned; released by the caller). */
typedef struct qcache {
	char spec[512];
	cv_dataset *all;
} qcache;

/* The rows of a target's effective spec (new digests), NULL when they cannot be resolved. */
static json_t *target_rows(const json_t *study, const json_t *teff, qcache *qc)
{
	const json_t *q = json_object_get(teff, "queries");
	const char *qspec = harness_dataset_spec(study, json_string_value(json_object_get(q, "spec")));
	uint64_t first = harness_query_first(teff, study, 1); /* a target is observed once */
	cv_dataset *sl = NULL;
	json_t *rows = NULL;
	cv_err ce;
	uint64_t count;

	if (!qspec)
		return NULL;
	if (!qc->all || strcmp(qc->spec, qspec)) {
		cv_dataset_free(qc->all);
		qc->all = NULL;
		if (cv_dataset_load(qspec, &qc->all, &ce))
			return NULL;
		snprintf(qc->spec, sizeof(qc->spec), "%s", qspec);
	}
	count = json_is_integer(json_object_get(q, "count"))
			? (uint64_t) json_integer_value(json_object_get(q, "count"))
			: (first < qc->all->n ? qc->all->n - first : 0);
	if (first < qc->all->n && count && count <= qc->all->n - first &&
	    !cv_dataset_slice(qc->all, first, count, &sl))
		rows = harness_query_digests(sl);
	cv_dataset_free(sl);
	return rows;
}

static int first_pred_cb(const ledger_record *r, void *ud)
{
	(void) r;
	*(int *) ud = 1;
	return 1;
}

/* Has a prediction been recorded? (0 on error too: then reach is checked, the safe side.) */
static int predictions_made(struct ledger *l)
{
	cs_err le = {0};
	int made = 0;

	if (ledger_foreach(l, "prediction", first_pred_cb, &made, &le))
		return 0;
	return made;
}

int harness_holdout_reached(struct ledger *l, const json_t *study, const json_t *eff,
			    const json_t *digests, json_t **reached, cs_err *e)
{
	ledger_plan plan = {0};
	qcache qc = {"", NULL};
	json_t *targets = NULL, *out = json_array(), *sha;
	const char *base;
	size_t i;
	int rc;

	*reached = NULL;
	if (!out)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	rc = ledger_plan_load(l, 0, &plan, e);
	if (rc)
		goto out;
	targets = ledger_plan_targets(&plan);
	base = json_string_value(json_object_get(plan.rec, "plan_base")) ?: ".";
	json_array_foreach(targets, i, sha) {
		const char *rel = ledger_plan_path(&plan, json_string_value(sha));
		char path[PATH_MAX * 2], now[65];
		json_t *raw = NULL, *teff = NULL, *rows = NULL;
		const char *why = NULL;
		cs_err le = {0};

		if (!rel)
			continue;
		snprintf(path, sizeof(path), "%s%s%s", rel[0] == '/' ? "" : base,
			 rel[0] == '/' ? "" : "/", rel);
		/* a target that will not load (or changed) is not one a run can be matched to */
		if (!harness_run_load(path, &raw, now, &le) && !strcmp(now, json_string_value(sha)) &&
		    !harness_run_effective_study(l, raw, &teff, &le) &&
		    !strcmp(device_of(teff), device_of(eff))) {
			if (*device_of(teff) && !design_uses(l, &plan, base, device_of(teff))) {
				why = "its device, which no design run used";
			} else if (parts_meet(json_object_get(teff, "partitions"),
					      json_object_get(eff, "partitions")) &&
				   (rows = target_rows(study, teff, &qc)) && rows_meet(rows, digests)) {
				why = "query rows it holds out, on the same partitions and device";
			}
		}
		if (why)
			json_array_append_new(out, json_pack("{s:s,s:O,s:s}", "target", rel, "spec_sha256",
							     sha, "why", why));
		json_decref(raw);
		json_decref(teff);
		json_decref(rows);
	}
	*reached = out;
	out = NULL;
out:
	json_decref(out);
	json_decref(targets);
	cv_dataset_free(qc.all);
	ledger_plan_free(&plan);
	return rc;
}

int harness_holdout_rows(struct ledger *l, const json_t *study, const json_t *eff,
			 const json_t *digests, int holdout, const char *declare_overlap, json_t **reached,
			 cs_err *e)
{
	int rc;

	*reached = NULL;
	if (holdout) {
		json_t *ov = json_copy((json_t *) eff);

		if (ov && digests)
			json_object_set(ov, "query_rows", (json_t *) digests);
		rc = ov ? guard_holdout_overlap(l, ov, declare_overlap, "run", e)
			: cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		json_decref(ov);
		return rc;
	}
	if (!digests || predictions_made(l))
		return 0;
	/* a run that reads what a holdout target holds out, before the predictions */
	rc = harness_holdout_reached(l, study, eff, digests, reached, e);
	if (!rc && json_array_size(*reached))
		fprintf(stderr, "coldstudy run: this run reads what %zu holdout target(s) hold "
			"out (first: %s, %s): they are marked seen before the predictions\n",
			json_array_size(*reached),
			json_string_value(json_object_get(json_array_get(*reached, 0), "target")),
			json_string_value(json_object_get(json_array_get(*reached, 0), "why")));
	return rc;
}
