/*
 * replicate.h - `coldstudy replicate` (replicate.c): a study made again
 * from another's registration, with a fresh seed.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 */
#ifndef HARNESS_REPLICATE_H
#define HARNESS_REPLICATE_H

#include <limits.h>
#include <stdio.h>
#include "cs.h"
#include "harness.h"

/* What a replication made. */
typedef struct harness_replica {
	char source[PATH_MAX]; /* S, absolute where it resolves */
	size_t hypotheses;     /* re-registered in S2 */
	json_t *left_out;      /* ids registered or amended after S's first run (new; NULL on failure) */
	int register_failed;   /* the failure was the registration's (e says why, as register would) */
} harness_replica;

/*
 * Make out (S2) a replication of src (S): a new ledger, S's hypotheses as
 * registered before its first run (the lines registration prints go to
 * says), S's study spec with the plan's run specs under specs (NULL: where
 * S registered them) and plan.seed = seed, and a replication_of record
 * naming S's signed checkpoint. S without a hypothesis before its first
 * run: exit 5.
 */
int harness_replicate(const char *src, const char *out, const char *specs, uint64_t seed,
		      FILE *says, harness_replica *r, cs_err *e);

#endif
