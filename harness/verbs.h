/*
 * verbs.h - study verbs run whole below the cli (verbs.c): init, clone
 * (the target held, the copy made, the clone noted in the study), study
 * show, schema --check (a file through the validator its kind names) and
 * replicate's closing lines.
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

#endif
