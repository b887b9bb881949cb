/*
 * register.h - registration, the first step of a study's order
 * (register.c): hypothesis files frozen and recorded, all or nothing, and
 * the list of what is registered.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 */
#ifndef HOLDOUT_REGISTER_H
#define HOLDOUT_REGISTER_H

#include <stdio.h>
#include "cs.h"

struct ledger;

/*
 * Register the n hypothesis files paths[] in the study at dir, all or
 * none. A bad file is exit 5 and writes nothing; the same content again
 * is a no-op; the same id with new content is refused (exit 3, a refusal
 * record) unless amend, which appends an `amendment` record with
 * rationale and the access state. Prints to out a line for each file
 * already registered with the same content (as it is found), and after
 * the commit a line for each file registered or amended.
 */
int holdout_register(const char *dir, const char *const *paths, size_t n, int amend,
		     const char *rationale, FILE *out, cs_err *e);

/*
 * The registered hypotheses, the latest version of each id, in the order
 * of first registration: {id, title, kind, metric, unit, prediction,
 * band95, sha256, ts, record, seq, versions, frozen} each. *list new.
 */
int holdout_hypotheses(struct ledger *l, json_t **list, cs_err *e);

#endif
