/*
 * run_util.c - what every phase of a run (run_*.c) and the PostgreSQL path
 * (pgrun.c) share, below all of them: the signal that asks a run to stop,
 * an engine -errno as an exit code, the run's random streams, and small
 * JSON and dataset helpers. It calls no phase.
 */
#include "run_phase.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t got_signal;

/* An engine -errno as an exit code: damage 4, bad input 5, else 1. */
int harness_errno_exit(int rc)
{
	switch (-rc) {
	case EBADMSG: return CS_EXIT_VERIFY;
	case EINVAL:
	case EOVERFLOW:
	case ENOENT:
	case ENOTDIR: return CS_EXIT_BADINPUT;
	default: return CS_EXIT_INTERNAL;
	}
}

static void on_signal(int sig)
{
	got_signal = sig;
}

int harness_run_interrupted(void)
{
	return got_signal;
}

void harness_run_signals(struct sigaction *old_int, struct sigaction *old_term)
{
	struct sigaction sa;

	got_signal = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, old_int);
	sigaction(SIGTERM, &sa, old_term);
}

/* splitmix64's finaliser: a well-mixed 64-bit value of x. */
static uint64_t seed_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * The stream of query i of a run seeded run_seed: mixed, so that the
 * streams of two runs never overlap shifted by a few queries (as
 * seed + i would for runs seeded s and s + 1).
 */
uint64_t harness_query_seed(uint64_t run_seed, uint64_t i)
{
	return seed_mix(run_seed ^ seed_mix(i + 1));
}

/*
 * A run's own seed when none is given: a hash of its run id and spec
 * hash (two runs of one spec draw different streams), below 2^53.
 */
uint64_t harness_run_seed(const char *run_id, const char *spec_sha)
{
	char buf[128];
	unsigned char h[32];
	uint64_t v = 0;
	int n = snprintf(buf, sizeof(buf), "device-seed\n%s\n%s", run_id, spec_sha);

	if (n < 0 || (size_t) n >= sizeof(buf))
		n = 0; /* cannot happen: an id of < 32 and a hash of 64 characters */
	cs_sha256(buf, (size_t) n, h);
	for (int i = 0; i < 8; i++)
		v = (v << 8) | h[i];
	return v & HARNESS_SEED_MAX;
}

/*
 * A run's seed from its base (a registered seed, or run_seed's): the
 * study's seed (plan.seed, registered with the plan) mixed in when there
 * is one, so a replication of the study draws afresh from the same specs;
 * then replicate i > 1's index, so the replicates of a spec that registers
 * its seed draw independent streams (replicate 1 keeps the base: a spec of
 * one replicate draws what it always drew). Below 2^53.
 */
uint64_t harness_derived_seed(uint64_t base, const json_t *study, unsigned replicate)
{
	const json_t *ps = json_object_get(json_object_get(study, "plan"), "seed");
	uint64_t s = base;

	if (json_is_integer(ps))
		s = seed_mix(s ^ seed_mix((uint64_t) json_integer_value(ps) ^ 0x706c616eull));
	if (replicate > 1)
		s = seed_mix(s ^ seed_mix((uint64_t) replicate ^ 0x7265706cull));
	return s & HARNESS_SEED_MAX;
}

uint64_t harness_query_first(const json_t *eff, const json_t *study, unsigned replicate)
{
	const json_t *q = json_object_get(eff, "queries");
	const json_t *ps = json_object_get(json_object_get(study, "plan"), "seed");
	uint64_t first = (uint64_t) json_integer_value(json_object_get(q, "first"));
	uint64_t draw = (uint64_t) json_integer_value(json_object_get(q, "draw"));
	uint64_t count = (uint64_t) json_integer_value(json_object_get(q, "count"));
	uint64_t s;

	if (!json_is_integer(json_object_get(q, "draw")) || !json_is_integer(json_object_get(q, "count")) ||
	    count >= draw)
		return first;
	/* the replicate index alone (and the study's seed): never the spec, so every spec with
	 * this range reads the same rows at the same index */
	s = seed_mix((uint64_t) (replicate ? replicate : 1) ^ 0x71756572ull);
	if (json_is_integer(ps))
		s = seed_mix(s ^ seed_mix((uint64_t) json_integer_value(ps) ^ 0x706c616eull));
	return first + s % (draw - count + 1);
}

int harness_cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

json_t *harness_num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* Resolve a dataset name of study.datasets to its spec; else the string itself. */
const char *harness_dataset_spec(const json_t *study, const char *s)
{
	const json_t *v = json_object_get(json_object_get(study, "datasets"), s);

	return json_is_string(v) ? json_string_value(v) : s;
}
