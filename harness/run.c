/*
 * run.c - `coldstudy run S run.json`: one study run, as the list of its
 * phases (run_phase.h names the file of each).
 *
 * Phases, in order, each refusing before anything is measured:
 *   0. the spec: loaded, hashed, the study's defaults applied, validated
 *      (run_spec.c); a PostgreSQL target goes to pgrun.c from here;
 *   1. guards: the study is registered, the tree is clean (--enforce-clean),
 *      validate has passed, the hypotheses served are registered, the
 *      index is not production and is a clone with a valid marker, and a
 *      holdout run has frozen predictions and no undeclared overlap with
 *      design runs (run_guard.c); then the inputs (run_inputs.c);
 *   2. a `run_start` record (the first holdout one freezes predictions)
 *      (run_record.c);
 *   3. cold: the buffer pool is dropped, every index file evicted, and the
 *      residency of every file must be 0 pages (guard_cold); warm: one
 *      pass over the queries first, and the resident fraction measured
 *      (run_cold.c);
 *   4. the closed-loop load generator: C client threads, each with its own
 *      cv_io, each sending its next query when the last returns (as
 *      weaviate-benchmarking does), until N queries or T seconds;
 *      samplers run beside it (run_load.c, sample.c); then the held
 *      identities again (run_guard.c);
 *   5. the metrics of DESIGN.md's vocabulary (run_measure.c), and ONE
 *      transaction holding the raw per-query rows and the samplers' series
 *      (ledger_put_raw) and the `run` record whose payload carries their
 *      hashes (run_record.c).
 *
 * SIGINT/SIGTERM stop the clients between queries; the run then records a
 * deviation and no run record, so the ledger stays valid. A kill -9 at any
 * moment leaves either the whole run transaction or none of it.
 *
 * Every run_start ends in a run record or a deviation naming the run: the
 * run writes the deviation itself when it stops early (a signal, an error,
 * a refusal, a fatal sampler: harness_phase_abort); a run killed outright
 * is found by the next command on the study through its liveness marker
 * (live.c).
 *
 * Metrics the machine cannot supply (device counters on a loop or overlay
 * device, recall without a base dataset) are null, never made up.
 * mem_peak_bytes has one definition: the peak of the memory charged to the
 * run's own memory cgroup (coldstudy-PID, made for every run, capped when
 * the spec has mem_cap_bytes), read from the kernel's own peak counter
 * (v2 memory.peak, v1 memory.max_usage_in_bytes); where the kernel has no
 * such counter, the memory sampler's largest reading of that cgroup's
 * usage, and where no cgroup could be made, its largest RSS. The record's
 * "mem_peak" says which ("source"). A mem_cap_bytes below what the run
 * must map (memcap_check) is refused before anything is recorded.
 */
#include "run_phase.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Free everything a run's phases left in R (whatever phase it stopped in). */
static void run_free(harness_run_ctx *R)
{
	harness_samplers_stop(R->smp, NULL, NULL, NULL, NULL, NULL);
	harness_readers_stop(R->readers, NULL);
	harness_writer_stop(R->writer, NULL);
	for (size_t q = 0; R->pw && q < R->npw; q++)
		harness_blockset_free(&R->pw[q]);
	free(R->pw);
	for (unsigned c = 0; R->L.placement && c < R->L.clients; c++)
		json_decref(R->L.placement[c]);
	free(R->L.placement);
	json_decref(R->metrics_real);
	json_decref(R->reps);
	json_decref(R->reps_real);
	json_decref(R->vinfo);
	json_decref(R->treat);
	harness_memcap_release(R->cgdir);
	harness_throttle_end(&R->thr);
	for (unsigned c = 0; R->L.rows && c < R->L.clients; c++)
		free(R->L.rows[c]);
	free(R->L.rows);
	free(R->L.nrows);
	free(R->L.caprows);
	free(R->L.stats);
	free(R->th);
	free(R->ca);
	free(R->parts);
	pthread_mutex_destroy(&R->L.mu);
	cv_index_files_free(R->files, R->nfiles);
	cv_index_close(R->ix);
	guard_held_close(&R->ihold);
	guard_held_close(&R->whold);
	guard_prodset_free(R->prod);
	cv_device_free(R->dev);
	free(R->gt);
	cv_dataset_free(R->base);
	cv_dataset_free(R->queries);
	cv_dataset_free(R->qall);
	json_decref(R->rec);
	json_decref(R->rowsj);
	json_decref(R->ios);
	json_decref(R->mems);
	json_decref(R->proms);
	json_decref(R->metrics);
	json_decref(R->memcap);
	json_decref(R->smp_health);
	json_decref(R->mempeak);
	json_decref(R->host);
	json_decref(R->features);
	json_decref(R->marker);
	json_decref(R->qrows);
	json_decref(R->reached);
	json_decref(R->eff);
	json_decref(R->study);
	json_decref(R->raw);
	json_decref(R->tags);
	ledger_plan_free(&R->plan);
	ledger_close(R->l);
}

int harness_run(const char *dir, const char *spec_path, harness_run_opts *o, cs_err *e)
{
	harness_run_ctx run, *R = &run;
	struct sigaction old_int, old_term;
	int rc;

	memset(R, 0, sizeof(*R));
	R->dir = dir;
	R->spec_path = spec_path;
	R->o = o;
	R->nrep = 1;
	R->cls = "exploratory";
	harness_live_init(&R->live);
	harness_throttle_init(&R->thr);
	guard_held_init(&R->ihold);
	guard_held_init(&R->whold);
	pthread_mutex_init(&R->L.mu, NULL);
	R->tty = o->progress < 0 ? isatty(2) : o->progress;
	/* From here on SIGINT/SIGTERM stop the run cleanly instead of killing it mid-write. */
	harness_run_signals(&old_int, &old_term);

	rc = harness_phase_spec(R, e);
	if (!rc && harness_phase_is_postgres(R)) {
		/* A PostgreSQL clone: its own load (pgrun.c), the same guards and record. */
		rc = harness_pg_run(R, e);
		goto out;
	}
	if (rc || (rc = harness_phase_settings(R, e)) || /* 0. what the run is */
	    (rc = harness_phase_guard(R, e)) ||          /* 1. guards and holds */
	    (rc = harness_phase_inputs(R, e)) ||         /*    what it reads */
	    (rc = harness_phase_start(R, e)) ||          /* 2. run_start */
	    (rc = harness_phase_prewarm(R, e)) ||        /*    prewarm block lists */
	    (rc = harness_phase_cold(R, e)) ||           /* 3. cold or warm */
	    (rc = harness_phase_load(R, e)) ||           /* 4. the load */
	    (rc = harness_phase_outcome(R, e)) ||        /*    stopped: a deviation */
	    (rc = harness_phase_recheck(R, e)) ||        /* 4b. the holds again */
	    (rc = harness_phase_metrics(R, e)) ||        /* 5. metrics */
	    (rc = harness_phase_record(R, e)))           /* 6. the run record */
		goto out;
	rc = 0;
out:
	rc = harness_phase_abort(R, rc, e);
	/* The run's outcome is in the ledger (or the next command will find it dead). */
	harness_live_end(&R->live);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	run_free(R);
	return rc;
}

int harness_run_replicates(const char *dir, const char *spec_path, harness_run_opts *o,
			   void (*each)(const char *run_id, void *ud), void *ud, cs_err *e)
{
	json_t *raw = NULL;
	char sha[65], group[32] = "";
	unsigned n, first, last;
	int has_seed = o->has_seed, rc;
	uint64_t seed = o->seed;

	rc = harness_run_load(spec_path, &raw, sha, e);
	if (rc)
		return rc;
	n = harness_spec_replicates(raw);
	json_decref(raw);
	if (o->replicate > n)
		return cs_err_set(e, CS_EXIT_USAGE,
				  "--replicate %u: %s registers %u replicate%s", o->replicate,
				  spec_path, n, n == 1 ? "" : "s");
	if (has_seed && n > 1 && !o->replicate)
		return cs_err_set(e, CS_EXIT_USAGE,
				  "--seed replays one run's stream: %s registers %u replicates, "
				  "name one with --replicate I",
				  spec_path, n);
	first = o->replicate ? o->replicate : 1;
	last = o->replicate ? o->replicate : n;
	for (unsigned i = first; i <= last; i++) {
		o->replicate = i;
		o->group = group[0] ? group : NULL;
		o->has_seed = has_seed; /* harness_run takes a registered seed into o */
		o->seed = seed;
		rc = harness_run(dir, spec_path, o, e);
		if (rc)
			break;
		if (!group[0])
			snprintf(group, sizeof(group), "%s", o->run_id);
		if (each)
			each(o->run_id, ud);
	}
	o->group = NULL;
	return rc;
}
