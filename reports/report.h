/*
 * report.h - verdicts from the registered rules, and what a study
 * publishes from its log.
 *
 * A hypothesis is accepted only if its accept rule holds on the runs that
 * serve it AND no refutation of it is on record; rejected if its reject
 * rule holds; refuted if the accept rule holds but the sceptic explained
 * it away; unresolved otherwise (a rule could not be decided, or neither
 * held). A reject rule that holds wins over everything else.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 */
#ifndef REPORT_H
#define REPORT_H

#include <stdint.h>
#include "cs.h"

struct ledger;

/*
 * Evaluate every registered hypothesis over the records with seq <= as_of
 * (0: all). *out (new) is an array of verdict payloads as in
 * docs/records.md. When record is set, each verdict that differs from the
 * latest verdict record for its hypothesis is appended as a `verdict`
 * record.
 */
int report_verdicts(struct ledger *l, int64_t as_of, int record, json_t **out, cs_err *e);

/* A string of a rule result: "true", "false", "undetermined". */
const char *report_tri(int result);

#endif
