/*
 * run_spec.c - phase 0 of a run: the spec file loaded and hashed, the
 * study's defaults applied and the result validated, then the settings the
 * later phases read (the seed, checked against --seed; repeats; warm-up
 * queries; virtual time; client CPUs; the index as spelled). Nothing is
 * held, opened or recorded yet.
 */
#include "run_phase.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The spec: loaded, hashed, the study's defaults applied, validated. */
int harness_phase_spec(harness_run_ctx *R, cs_err *e)
{
	int rc = 0;

	rc = ledger_open(R->dir, &R->l, e);
	if (rc)
		return rc;
	rc = harness_run_load(R->spec_path, &R->raw, R->sha, e);
	if (rc)
		return rc;
	rc = guard_study(R->l, "run", &R->study, e);
	if (rc)
		return rc;
	rc = harness_run_effective(R->raw, json_object_get(R->study, "defaults"), &R->eff, e);
	if (rc)
		return rc;
	rc = harness_run_validate(R->eff, R->spec_path, "$(with study defaults)", 0, e);
	if (rc)
		return rc;
	rc = harness_run_check_treatments(R->eff, R->spec_path, e);
	if (rc)
		return rc;
	return 0;
}

/* 1 if the spec's target is a PostgreSQL clone (pgrun.c runs it). */
int harness_phase_is_postgres(const harness_run_ctx *R)
{
	const json_t *t = json_object_get(R->eff, "target");

	return json_is_string(t) && !strcmp(json_string_value(t), "postgres");
}

/*
 * The run's settings from the spec: the seed (checked against --seed),
 * repeats, warm-up queries, virtual time, client CPUs, the index.
 */
int harness_phase_settings(harness_run_ctx *R, cs_err *e)
{
	int rc = 0;

	R->cli_seed = R->o->has_seed;
	if (json_is_integer(json_object_get(R->eff, "seed"))) {
		uint64_t reg = harness_derived_seed((uint64_t) json_integer_value(json_object_get(R->eff, "seed")),
					    R->study, R->o->replicate);

		if (R->o->has_seed && R->o->seed != reg) {
			rc = cs_err_set(e, CS_EXIT_USAGE,
					"%s: $.seed: the spec registers seed %llu (replicate %u, the study's "
					"seed mixed in: %llu); --seed %llu contradicts it",
					R->spec_path,
					(unsigned long long) json_integer_value(json_object_get(R->eff, "seed")),
					R->o->replicate ? R->o->replicate : 1, (unsigned long long) reg,
					(unsigned long long) R->o->seed);
			return rc;
		}
		R->o->seed = reg;
		R->o->has_seed = 1;
	}
	if (json_is_integer(json_object_get(R->eff, "repeat")))
		R->nrep = (unsigned) json_integer_value(json_object_get(R->eff, "repeat"));
	if (json_is_integer(json_object_get(R->eff, "warmup_queries")))
		R->nwarm = (uint64_t) json_integer_value(json_object_get(R->eff, "warmup_queries"));
	R->virt = json_is_string(json_object_get(R->eff, "device_time")) &&
	       !strcmp(json_string_value(json_object_get(R->eff, "device_time")), "virtual");
	if (json_is_array(json_object_get(R->eff, "client_cpus")) &&
	    (rc = harness_cpuset_check(json_object_get(R->eff, "client_cpus"), e))) {
		char m[CS_ERR_MAX];

		snprintf(m, sizeof(m), "%s", e->msg);
		rc = cs_err_set(e, rc, "%s: %s", R->spec_path, m);
		return rc;
	}
	R->index = json_string_value(json_object_get(R->eff, "index"));
	return 0;
}
