/*
 * run_record.c - what a run writes to the ledger: the run_start record
 * (phase 2: its id, its liveness marker, its seed), then either ONE
 * transaction holding the raw per-query rows, the samplers' series and the
 * run record that carries their hashes (phase 6), or a deviation naming the
 * run (interrupted, failed, refused after the load, or stopped by an
 * error), so every run_start ends in one of the two.
 */
#include "run_phase.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int count_cb(const ledger_record *r, void *ud)
{
	(void) r;
	((count_ctx *) ud)->n++;
	return 0;
}

/* Record that the run did not complete (a deviation), keeping the ledger valid. */
void harness_record_abort(ledger *l, const char *run_id, const char *because)
{
	json_t *d = json_pack("{s:s, s:s, s:s}", "because", because, "run_id", run_id,
			      "access_state", ledger_access_state(l));
	cs_err le = {0};

	if (!d || ledger_append(l, "deviation", d, NULL, &le))
		fprintf(stderr, "coldstudy run: warning: deviation not recorded: %s\n", le.msg);
	json_decref(d);
}

/* Phase 2: the run's id, its liveness marker and its run_start record; its random stream. */
int harness_phase_start(harness_run_ctx *R, cs_err *e)
{
	int rc = 0;
	json_t *tmp;

	if (ledger_foreach(R->l, "run_start", count_cb, &R->cc, e)) {
		rc = e->code ? e->code : CS_EXIT_INTERNAL;
		return rc;
	}
	snprintf(R->run_id, sizeof(R->run_id), "R%04lld", (long long) R->cc.n + 1);
	snprintf(R->o->run_id, sizeof(R->o->run_id), "%s", R->run_id);
	/* a holdout target run again: a deviation; its first run stays the observation */
	if (R->holdout && (rc = guard_holdout_repeat(R->l, R->sha, R->run_id, "run", &R->repeat, e)))
		return rc;
	/* a planned spec run beyond its registered count: a deviation, excluded from decisions */
	if ((rc = guard_plan_runs(R->l, R->sha, R->cls, harness_spec_replicates(R->eff), R->run_id, "run",
				  &R->beyond, e)))
		return rc;
	if (R->beyond)
		fprintf(stderr, "coldstudy run: %s is run beyond the plan's %u registered run(s) of "
			"this spec: recorded as a deviation, excluded from verdicts and models\n",
			R->run_id, harness_spec_replicates(R->eff));
	/* held until the run record or a deviation is in: a later command knows a live run */
	rc = harness_live_begin(ledger_dir(R->l), R->run_id, &R->live, e);
	if (rc)
		return rc;
	tmp = json_pack("{s:s, s:s, s:b, s:s}", "run_id", R->run_id, "spec_sha256", R->sha, "holdout",
			R->holdout, "class", R->cls);
	rc = ledger_append(R->l, "run_start", tmp, NULL, e);
	json_decref(tmp);
	if (rc)
		return rc;
	R->run_started = 1;
	/* The run's random stream: its own, the spec's, or the one asked for to replay a run. */
	R->L.seed = R->o->has_seed ? R->o->seed : harness_derived_seed(harness_run_seed(R->run_id, R->sha), R->study, 0);
	R->o->seed_used = R->L.seed;
	if (R->dev && cv_device_reseed(R->dev, R->L.seed)) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory seeding the device model");
		return rc;
	}
	return 0;
}

/*
 * After the load: an interrupted or failed load, or samplers judged fatal,
 * is a deviation and no run record.
 */
int harness_phase_outcome(harness_run_ctx *R, cs_err *e)
{
	int rc = 0;

	if (harness_run_interrupted()) {
		char why[256];

		snprintf(why, sizeof(why), "run %s interrupted by %s after %llu queries; no run record",
			 R->run_id, harness_run_interrupted() == SIGINT ? "SIGINT" : "SIGTERM",
			 (unsigned long long) atomic_load(&R->L.done));
		harness_record_abort(R->l, R->run_id, why);
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s", why);
		return rc;
	}
	if (atomic_load(&R->L.failed)) {
		char why[400];

		snprintf(why, sizeof(why), "run %s failed: %s; no run record", R->run_id, R->L.fail_msg);
		harness_record_abort(R->l, R->run_id, why);
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s", why);
		return rc;
	}
	{
		char swhy[600], why[700];

		if (!R->smp_health) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			return rc;
		}
		if (harness_samplers_judge(R->smp_health, R->eff, R->run_id, swhy, sizeof(swhy))) {
			snprintf(why, sizeof(why), "run %s failed: %s; samplers.fatal; no run record",
				 R->run_id, swhy);
			harness_record_abort(R->l, R->run_id, why);
			R->recorded = 1;
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s", why);
			return rc;
		}
	}
	return 0;
}

/* Phase 6: one transaction, the raw series and the run record. */
int harness_phase_record(harness_run_ctx *R, cs_err *e)
{
	int rc = 0;

	{
		json_t *ixj, *rawj;

		rc = harness_record_begin(R->l, R->rowsj, R->ios, R->mems, R->proms, &rawj, e);
		if (rc)
			return rc;
		/* What was read: the held directory's identity, whatever its spelling resolved to later. */
		ixj = json_pack("{s:s, s:s, s:{s:O, s:O}, s:I, s:I}", "kind", cv_index_kind(R->ix), "dir",
				R->index_shown, "clone", "method", json_object_get(R->marker, "method"),
				"source_sha256", json_object_get(R->marker, "source_sha256"), "dev",
				(json_int_t) R->ihold.st.st_dev, "ino", (json_int_t) R->ihold.st.st_ino);
		R->rec = json_pack("{s:s, s:O, s:s, s:O, s:O, s:b, s:o, s:O, s:O, s:o,"
				" s:O, s:s, s:s, s:s, s:O, s:o}",
				"run_id", R->run_id, "spec", R->eff, "spec_sha256", R->sha, "tags", R->tags,
				"hypotheses", json_object_get(R->eff, "hypotheses"), "holdout", R->holdout,
				"index", ixj, "features", R->features, "metrics", R->metrics, "raw", rawj,
				"host", R->host, "started", R->started, "ended", R->ended, "status", "complete",
				"mem_cap", R->memcap, "device_stats",
				R->have_dev ? json_pack("{s:b, s:s}", "available", 1, "device", R->bd.part)
					 : json_pack("{s:b}", "available", 0));
		if (!R->rec) {
			ledger_rollback(R->l);
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "cannot build the run record");
			return rc;
		}
		json_object_set_new(R->rec, "device_time",
				    R->dev ? json_string(R->virt ? "virtual" : "realtime") : json_null());
		/* the model's random stream: `run --seed` with it replays the run's draws */
		json_object_set_new(R->rec, "device_seed",
				    R->dev ? json_integer((json_int_t) R->L.seed) : json_null());
		json_object_set_new(R->rec, "class", json_string(R->cls));
		json_object_set(R->rec, "labels", json_object_get(R->eff, "tags"));
		/* each sampler's tries and failures; how mem_peak_bytes was had */
		json_object_set(R->rec, "samplers", R->smp_health);
		json_object_set(R->rec, "mem_peak", R->mempeak);
		if (ledger_plan_path(&R->plan, R->sha))
			json_object_set_new(R->rec, "plan_path", json_string(ledger_plan_path(&R->plan, R->sha)));
		if (R->repeat)
			json_object_set_new(R->rec, "holdout_repeat", json_true());
		if (R->thr.dirfd >= 0) {
			/* the cap, the controller and the kernel's own count beside the engine's */
			json_t *tj = harness_throttle_record(&R->thr, R->thr_reads, R->thr_bytes);
			json_t *er = json_object_get(R->metrics, "engine_reads");

			json_object_set(tj, "engine_reads", er ? er : json_null());
			json_object_set(tj, "device_reads", json_object_get(R->metrics, "device_reads") ?: json_null());
			json_object_set_new(tj, "note",
					    json_string(R->nrep > 1 ? "throttle counts are the whole run's (all repeats"
								   " and competing readers); engine and device "
								   "reads are the repeats' means"
								 : "throttle counts include competing readers "
								   "(load), if any"));
			json_object_set_new(R->rec, "throttle", tj);
		}
		/* which of the spec's registered replicates, and its group (the first's run id) */
		json_object_set_new(R->rec, "replicate",
				    json_pack("{s:I, s:I, s:s}", "index",
					      (json_int_t) (R->o->replicate ? R->o->replicate : 1), "of",
					      (json_int_t) harness_spec_replicates(R->raw), "group",
					      R->o->group ? R->o->group : R->run_id));
		if (json_is_integer(json_object_get(json_object_get(R->eff, "queries"), "draw")))
			json_object_set_new(json_object_get(R->rec, "replicate"), "queries_first",
					    json_integer((json_int_t) R->L.first_id));
		if (R->beyond)
			json_object_set_new(R->rec, "beyond_plan", json_true());
		if (R->class_why[0])
			json_object_set_new(R->rec, "class_why", json_string(R->class_why));
		json_object_set_new(R->rec, "versions", harness_versions(R->dev));
		if (R->qrows && json_array_size(R->qrows) <= QUERY_ROWS_RECORDED)
			json_object_set(R->rec, "query_rows", R->qrows);
		if (json_array_size(R->reached))
			json_object_set(R->rec, "holdout_reached", R->reached);
		/* The file the run was asked with, as given (runs tables name it). */
		json_object_set_new(R->rec, "spec_file", json_string(R->spec_path));
		if (R->virt) {
			json_object_set(R->rec, "metrics_real", R->metrics_real);
			json_object_set(R->rec, "virtual", R->vinfo);
		}
		if (R->treat)
			json_object_set(R->rec, "treatments", R->treat);
		if (R->nrep > 1) {
			/* Each repeat's metrics; `metrics` holds their means. */
			json_object_set(R->rec, "repeats", R->reps);
			if (R->virt)
				json_object_set(R->rec, "repeats_real", R->reps_real);
		}
		if (R->L.cpus) {
			json_t *pl = json_array();

			for (unsigned c = 0; c < R->L.clients; c++)
				json_array_append(pl, R->L.placement[c] ? R->L.placement[c] : json_null());
			json_object_set_new(R->rec, "client_placement",
					    json_pack("{s:O, s:o, s:o}", "asked", R->L.cpus, "clients", pl,
						      "harness", harness_affinity_now()));
		}
		rc = ledger_append(R->l, "run", R->rec, NULL, e);
		if (rc) {
			ledger_rollback(R->l);
			return rc;
		}
		rc = ledger_commit(R->l, e);
		if (rc)
			return rc;
		R->recorded = 1;
	}
	return 0;
}

/*
 * The end of every run, whatever stopped it: a run_start that no run record
 * or deviation names yet gets its deviation here (interrupted before the
 * load, stopped before it, or stopped after it, e.g. by the record's own
 * transaction). Returns rc, or the interruption's exit when rc was 0.
 */
int harness_phase_abort(harness_run_ctx *R, int rc, cs_err *e)
{
	if (R->run_started && harness_run_interrupted() && !R->started_load) {
		char why[256];

		snprintf(why, sizeof(why), "run %s interrupted by %s before its load; no run record",
			 R->run_id, harness_run_interrupted() == SIGINT ? "SIGINT" : "SIGTERM");
		harness_record_abort(R->l, R->run_id, why);
		if (!rc)
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s", why);
	} else if (rc && R->run_started && !R->recorded && !R->started_load) {
		char why[CS_ERR_MAX + 64];

		snprintf(why, sizeof(why), "run %s stopped before its load: %s", R->run_id, e->msg);
		harness_record_abort(R->l, R->run_id, why);
	} else if (rc && R->run_started && !R->recorded && !harness_run_interrupted() &&
		   !atomic_load(&R->L.failed)) {
		char why[CS_ERR_MAX + 64];

		/* after the load, when not said above: e.g. the record's transaction failed */
		snprintf(why, sizeof(why), "run %s stopped: %s; no run record", R->run_id, e->msg);
		harness_record_abort(R->l, R->run_id, why);
	}
	return rc;
}
