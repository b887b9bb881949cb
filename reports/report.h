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

/*
 * Compare the verdicts of a study a and its replication b (neither
 * recorded): one row a hypothesis of a {hypothesis, class, verdict_a,
 * verdict_b (absent when b lacks it), agree, interval_a, interval_b} in
 * *rows (new). *disagree = 1 when a confirmatory hypothesis's verdicts
 * differ (or b lacks it). 0 or an exit code.
 */
int report_compare(struct ledger *a, struct ledger *b, json_t **rows, int *disagree, cs_err *e);

/* A string of a rule result: "true", "false", "undetermined". */
const char *report_tri(int result);

/* ---- the published report and the published log (reports/report.c, publish.c) ---- */

#include <stdio.h>

/*
 * Write the study's report into the directory out: report.md,
 * report.html (self-contained), records.jsonl (the export),
 * checkpoint.txt and the plots as *.svg, from the ledger alone. The log
 * is verified first (exit 4, nothing written, if it fails). Files are
 * built in a temporary directory beside out and renamed into place, so
 * out holds a whole report or none; an existing out is replaced only if
 * it holds nothing but report files (else exit 3). title may be NULL.
 * The same ledger gives byte-identical files.
 */
int report_write(struct ledger *l, const char *out, const char *title, cs_err *e);

/*
 * POST the checkpoint (under origin, NULL: the stored one) and the JSONL
 * export to url (http or https) as multipart/form-data, with a timeout of
 * timeout_s seconds; on a 2xx answer append a `note` record {"text",
 * "published", "checkpoint", "status", "tree_size", "origin"} and print
 * one line and the checkpoint to out. HTTP >= 400 or no answer: exit 1,
 * nothing recorded. dry_run prints what would be sent to out instead.
 * The log must verify first (exit 4).
 */
int report_publish(struct ledger *l, const char *url, const char *origin, int dry_run,
		   long timeout_s, FILE *out, cs_err *e);

/*
 * Publish the log as C2SP tlog-tiles to url, a static web server or object
 * store that accepts PUT: GET url/checkpoint; it must be an ancestor of
 * this log (exit 4, nothing sent); PUT the tiles the remote tree lacks and
 * then the signed checkpoint. Resumable and idempotent (publish.c). With
 * witness, ask that C2SP tlog-witness for a cosignature and store the
 * cosigned checkpoint as DIR/checkpoint.witnessed. Transport failures and
 * non-2xx answers: exit 1. One summary line to out.
 */
int report_publish_tiles(struct ledger *l, const char *url, const char *witness, long timeout_s,
			 FILE *out, cs_err *e);

/* ---- runs as tables (reports/results.c) ---- */

/* Output formats of the tables: aligned text, CSV (RFC 4180), JSON lines, one JSON array. */
enum { REPORT_FMT_TEXT = 0, REPORT_FMT_CSV, REPORT_FMT_JSONL, REPORT_FMT_JSON };

/* A percentile from fewer samples than this is flagged as indicative only. */
#define REPORT_PCT_MIN_SAMPLES 100

/*
 * The kind of a run record: the kind it states, else "holdout" for a
 * holdout run, "design" for a run serving hypotheses, else "exploratory".
 * The one place a run's kind is decided for tables.
 */
const char *report_run_kind(const json_t *run);

/*
 * One flat row per run the ledger knows of (run_start order): run_id, kind,
 * status ("not recorded" for a run_start without its run record), spec
 * file and hash, index, settings, then every metric of the vocabulary.
 * *rows is a new array.
 */
int report_runs(struct ledger *l, json_t **rows, cs_err *e);

/*
 * The JSON Schema (draft 2020-12) of one row of an export: kind "runs",
 * "queries" or "series" (exports.c); NULL for another kind. New reference.
 */
json_t *report_export_schema(const char *kind);

/*
 * The recall/QPS front of a sweep as one standalone SVG on out: recall[i]
 * against qps[i] (log), the settings joined in order, labels[i] (may be
 * NULL) on each point. 0 or CS_EXIT_INTERNAL with e set.
 */
int report_front_svg(const char *title, const double *recall, const double *qps,
		     const char *const *labels, size_t n, FILE *out, cs_err *e);

/* Write rows (an array of flat objects) in format (REPORT_FMT_*) to out. */
int report_rows_write(const json_t *rows, int format, FILE *out, cs_err *e);

/* The run record of run_id (new reference); exit 5 naming the id when there is none. */
int report_run_get(struct ledger *l, const char *run_id, json_t **rec, cs_err *e);

/*
 * `coldstudy run show`: the run (text: a summary, settings and every
 * metric; JSON: the record; CSV: its row), or with queries its per-query
 * rows from the raw table.
 */
int report_run_show(struct ledger *l, const char *run_id, int queries, int format, FILE *out,
		    cs_err *e);

/* A few lines saying what a run record measured (what `coldstudy run` prints). */
void report_run_summary(const json_t *rec, FILE *out);

/*
 * The tables `coldstudy` prints for a person (text.c): one line a
 * hypothesis (holdout_hypotheses' list); one line a prediction (an array
 * of prediction payloads); a holdout score (what holdout_score_record
 * made); the verdicts (report_verdicts' array) by
 * group, with the holdout's line from holdout_registered_state's test and
 * state (either may be NULL).
 */
void report_hypotheses_text(const json_t *list, FILE *out);
void report_predictions_text(const json_t *preds, FILE *out);
void report_score_text(const json_t *s, FILE *out);
void report_verdicts_text(const json_t *all, const json_t *test, const json_t *state, FILE *out);
/* `replicate compare`'s table: report_compare's rows, then whether they agree. */
void report_compare_text(const json_t *rows, int disagree, FILE *out);
/* `plan power`'s table: one row a hypothesis of harness_power's results. */
void report_power_text(const json_t *res, FILE *out);

/*
 * What the study's verbs print whole (verbs.c), as text tables or JSON:
 * holdout show; holdout score (the score recorded, *exitc its exit:
 * 0, 6 failed, 7 interim); replicate compare (*disagree as report_compare's);
 * hypotheses (JSON: canonical); runs; a run's summary; verdicts; plan
 * power. 0 or an exit code, e filled.
 */
struct holdout_score_opts;
int report_holdout_show(struct ledger *l, int json, FILE *out, cs_err *e);
int report_holdout_score(struct ledger *l, const struct holdout_score_opts *o, int json, FILE *out, int *exitc,
			 cs_err *e);
/* holdout score (o given) or show, whole: DIR's ledger opened, the above, closed. */
int report_holdout_verb(const char *dir, const struct holdout_score_opts *o, int json, FILE *out,
			int *exitc, cs_err *e);
int report_compare_print(struct ledger *a, struct ledger *b, int json, FILE *out, int *disagree, cs_err *e);
int report_hypotheses_print(struct ledger *l, int json, FILE *out, cs_err *e);
/* runs: every run's row (report_runs) in format (REPORT_FMT_*). */
int report_runs_print(struct ledger *l, int format, FILE *out, cs_err *e);
/* After a run: its summary (report_run_summary) and where its details are, from DIR's ledger. */
int report_run_summary_print(const char *dir, const char *run_id, FILE *out, cs_err *e);
/* After a run with --json: its record (report_run_show's JSON), from DIR's ledger. */
int report_run_json_print(const char *dir, const char *run_id, FILE *out, cs_err *e);
/* verdicts: report_verdicts_text's table, or the verdicts as JSON. */
void report_verdicts_print(const json_t *all, const json_t *test, const json_t *state, int json, FILE *out);
/* plan power: report_power_text's table, or the results as JSON. */
void report_power_print(const json_t *res, int json, FILE *out);

#endif
