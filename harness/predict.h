/*
 * predict.h - `holdout predict`'s targets (predict.c): the run specs a
 * holdout model predicts, resolved as runs will record them.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 */
#ifndef HARNESS_PREDICT_H
#define HARNESS_PREDICT_H

#include "cs.h"
#include "harness.h"
#include "holdout.h"

struct ledger;

/*
 * Predict and record the holdout targets: those of targets_path (a file
 * {"targets": [{"run": PATH, "metrics": [...], "model": M}]}, paths
 * relative to its folder) or, NULL, the plan's holdout targets and metrics
 * (paths relative to where the plan was registered); model is the default
 * model (auto, io, loglinear). *made (new) is the array of predictions
 * recorded. No plan with holdout targets and no file: exit 2.
 */
int harness_holdout_predict(struct ledger *l, const char *targets_path, const char *model,
			    json_t **made, cs_err *e);

#endif
