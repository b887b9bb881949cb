/*
 * run_guard.c - the guards of a run, before and after it (phase 1 and 4b):
 * the study registered, the tree clean (--enforce-clean), validate passed,
 * the hypotheses served registered; the index resolved once, held, not
 * production and a clone with a valid marker; the datasets, the cache and
 * a bulk-write folder checked and held (harness_guard_inputs, which the
 * PostgreSQL path runs too); the run's class from the plan by its spec
 * hash, a holdout run refused without frozen predictions. After the load
 * the held identities are checked again: an index swapped while it was
 * read may have read production, and such a run is a deviation.
 */
#include "run_phase.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The run's other paths, each refused when it touches production: the
 * dataset files of queries and base, the ground-truth cache directory
 * (COLDSTUDY_CACHE, held and handed to the engine through the hold), and
 * the bulk writer's directory (bulkwrite.dir, else the study's scratch_dir,
 * else the index's parent), made beneath its held parent into *wh.
 */
int harness_guard_inputs(struct ledger *l, guard_prodset *prod, const json_t *study,
			    const json_t *eff, const guard_held *ih, guard_held *wh, cs_err *e)
{
	const char *q = harness_dataset_spec(study, json_string_value(json_object_get(json_object_get(eff, "queries"), "spec")));
	const char *b = json_string_value(json_object_get(eff, "base"));
	const char *cache;
	const json_t *bw = json_object_get(eff, "bulkwrite");
	int rc;

	if ((rc = guard_dataset(l, prod, q, "run", "$.queries.spec", e)) ||
	    (b && (rc = guard_dataset(l, prod, harness_dataset_spec(study, b), "run", "$.base", e))))
		return rc;
	/* COLDSTUDY_CACHE, else the $HOME fallback: checked and held, whatever its spelling */
	if ((rc = guard_cache_dir(l, prod, NULL, "run", &cache, e)))
		return rc;
	if (json_is_object(bw)) {
		const char *wd = json_string_value(json_object_get(bw, "dir"));
		guard_held sh;
		int base = AT_FDCWD;

		guard_held_init(&sh);
		if (!wd && json_is_string(json_object_get(study, "scratch_dir"))) {
			/* study.json's paths are the study folder's. */
			wd = json_string_value(json_object_get(study, "scratch_dir"));
			if ((rc = guard_hold(ledger_dir(l), AT_FDCWD, &sh, e)))
				return rc;
			base = sh.fd;
		}
		if (!wd) {
			/* Beside the index, on its file system: the writes compete with its reads. */
			wd = "../.coldstudy-bulkwrite";
			base = ih->fd;
		}
		rc = guard_target(l, prod, wd, base, "run", "bulkwrite.dir", wh, e);
		guard_held_close(&sh);
		if (!rc)
			rc = guard_held_mkdirs(wh, e);
		if (rc)
			return rc;
	}
	return 0;
}

/* Phase 1: the guards; every path held; the run's class from the plan. */
int harness_phase_guard(harness_run_ctx *R, cs_err *e)
{
	int rc = 0;

	if (R->o->enforce_clean) {
		const char *pd = R->o->project_dir ? R->o->project_dir : getenv("COLDSTUDY_SRC");

		rc = guard_clean_tree(R->l, pd ? pd : ".", "run", e);
		if (rc)
			return rc;
	}
	if ((rc = guard_validated(R->l, "run", e)) ||
	    (rc = guard_hypotheses(R->l, json_object_get(R->eff, "hypotheses"), "run", e)))
		return rc;
	/*
	 * Every path the run acts on is resolved once and checked on the held
	 * descriptor; from here on the index is opened, listed, evicted and
	 * measured only through the hold (ihold.via), so swapping a symlink or
	 * renaming a directory after this point changes nothing.
	 */
	if ((rc = guard_prodset_load(R->l, &R->prod, e)) ||
	    (rc = guard_existing(R->l, R->prod, R->index, AT_FDCWD, "run", "index", &R->ihold, e)) ||
	    (rc = guard_clone(R->l, ledger_dir(R->l), guard_held_via(&R->ihold), "run", 0, &R->marker, e)) ||
	    (rc = harness_guard_inputs(R->l, R->prod, R->study, R->eff, &R->ihold, &R->whold, e)))
		return rc;
	R->index_shown = R->index;
	R->index = guard_held_via(&R->ihold);
	/* what the run is comes from the plan, by its spec hash, not from the flag */
	if ((rc = ledger_plan_load(R->l, 0, &R->plan, e)) ||
	    (rc = guard_run_plan(R->l, &R->plan, R->sha, R->o->holdout, "run", &R->holdout, e)))
		return rc;
	R->cls = R->plan.plan || !R->holdout ? ledger_plan_class(&R->plan, R->sha) : "holdout";
	/* evidence bound to the plan: its seed, its clone's content */
	if (R->cli_seed && (rc = guard_plan_seed(R->l, R->cls, json_is_integer(json_object_get(R->eff, "seed")),
					      R->spec_path, "run", e)))
		return rc;
	if (!strcmp(R->cls, "design") || !strcmp(R->cls, "sceptic")) {
		rc = guard_plan_clone(R->l, R->cls, R->index_shown,
				      json_string_value(json_object_get(R->marker, "source_sha256")),
				      R->class_why, sizeof(R->class_why), e);
		if (rc)
			return rc;
		if (R->class_why[0]) {
			R->cls = "exploratory";
			fprintf(stderr, "coldstudy run: %s\n", R->class_why);
		}
	}
	if (R->holdout && (rc = guard_holdout_predictions(R->l, R->sha, "run", e)))
		return rc;
	return 0;
}

/* Phase 4b: after the load, the held index must still be what was checked. */
int harness_phase_recheck(harness_run_ctx *R, cs_err *e)
{
	int rc = 0;

	/*
	 * 4b. the held identities again: a clone whose files were swapped, linked
	 * or replaced while the run read them (a race the hold cannot stop: a name
	 * inside the index exchanged with production's inode) may have read
	 * production. Such a run is a deviation and a refusal, never a run record.
	 */
	{
		cs_err ge = {0};
		char why[1400];

		if (guard_clone(NULL, ledger_dir(R->l), R->index, "run", 0, NULL, &ge) ||
		    guard_check_held(NULL, R->prod, &R->ihold, "run", "index", &ge)) {
			snprintf(why, sizeof(why),
				 "run %s: after the run the index no longer held what was checked (%s); "
				 "it may have read production; no run record",
				 R->run_id, ge.msg);
			harness_record_abort(R->l, R->run_id, why);
			R->recorded = 1;
			rc = guard_refuse(R->l, "production", "run", R->index_shown, e, "%s", why);
			return rc;
		}
	}
	return 0;
}
