/*
 * verbs.h - study verbs run whole below the cli (verbs.c): init, clone
 * (the target held, the copy made, the clone noted in the study), study
 * show, schema --check (a file through the validator its kind names),
 * plan power's checks and replicate (the seed, S2 held, its closing lines).
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled (one
 * line, no "coldstudy VERB:" prefix).
 */
#ifndef HARNESS_VERBS_H
#define HARNESS_VERBS_H

#include <stdio.h>

#include "cs.h"
#include "replicate.h"

/* What clone was asked. */
typedef struct harness_clone_args {
	const char *src, *dst; /* as typed */
	const char *study;     /* --study DIR: the marker keyed, the clone noted; NULL: none */
	const char *pg_socket; /* a running cluster's socket folder; NULL: none */
	int pg_port;
} harness_clone_args;

/*
 * Clone SRC into DST (held, refused where production; made beneath its
 * held parent and removed again when the copy fails), one line to out,
 * and with a study a note in its ledger.
 */
int harness_clone_verb(const harness_clone_args *a, FILE *out, cs_err *e);
/* The study spec in force in DIR's ledger, as indented JSON with sorted keys. */
int harness_study_print(const char *dir, FILE *out, cs_err *e);
/*
 * validate DIR (harness_validate with o); with json the batch's validation
 * records as a JSON array on out, also when a check failed (the exit says so).
 */
struct harness_validate_opts;
int harness_validate_verb(const char *dir, struct harness_validate_opts *o, int json, FILE *out,
                          cs_err *e);
/* log tiles: out_dir held (never inside production), the log's tiles written, its line said. */
int harness_tiles_verb(const char *dir, const char *out_dir, FILE *out, cs_err *e);
/* Validate path as a hypothesis file, study.json or run.json (kind) with the C validator. */
int harness_schema_check(const char *kind, const char *path, cs_err *e);
/*
 * init: DIR held (never inside production), the study made in it
 * (ledger_init), what was made and the verifier key said on out.
 */
int harness_init_verb(const char *dir, FILE *out, cs_err *e);
/* replicate's closing lines: S2 (as shown) made from S with seed, what was left out, what next. */
void harness_replica_print(const harness_replica *r, const char *src, const char *shown,
                           uint64_t seed, FILE *out);
/*
 * plan power DIR: harness_power's checks of DIR's study appended to res,
 * with the spread of the pilot runs ids names (harness_pilots; empty: none).
 */
int harness_power_verb(const char *dir, const json_t *ids, json_t *res, cs_err *e);
/*
 * replicate S --out S2 whole: seed past HARNESS_SEED_MAX drawn from
 * getrandom, S2 held (never inside production) and made, harness_replicate,
 * the closing lines on says. *register_failed: the failure was the
 * registration's (register's verb names it).
 */
int harness_replicate_verb(const char *src, const char *out, const char *specs, uint64_t seed,
                           FILE *says, int *register_failed, cs_err *e);

#endif
