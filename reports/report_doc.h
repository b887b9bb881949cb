/*
 * report_doc.h - the report's seams, private to reports/: what was gathered
 * from the log (the model), the document the sections build (blocks), the
 * sections, the plots and the renderers. A new section or plot is one small
 * file that reads the model and appends blocks through these functions.
 *
 *   report_model.c  gather: one pass over the verified log, and accessors
 *   report_doc.c    the document model: headings, paragraphs, tables, folds, figures
 *   sec_*.c         one section each (sec_glance.c is the first screen)
 *   plot_*.c        one figure each, from the runs or their raw series
 *   render.c        the blocks as Markdown and as self-contained HTML
 *   report.c        report_write: the order of the sections, and publishing
 *
 * Internal names carry the rpt_ prefix. Table and figure numbers, section
 * numbers and anchors are given at render time in document order, so they
 * never skip whatever a section leaves out.
 *
 * Error convention: document builders never fail loudly; an allocation
 * failure marks the document failed (d->failed) and report_write answers
 * exit 1. Functions taking a cs_err return 0 or CS_EXIT_*.
 */
#ifndef REPORT_DOC_H
#define REPORT_DOC_H

#include <stdint.h>

#include "ledger.h"
#include "report.h"
#include "report_int.h"

/* ---- the model: everything a report shows, gathered once ---- */

typedef struct model {
	int64_t size;
	ledger_verify_info vi;
	char *checkpoint;
	char first_ts[32], last_ts[32];
	json_t *kinds; /* kind -> count, in first-seen order */
	json_t *study; /* latest study record or NULL */
	json_t *hyps;  /* hypothesis and amendment records */
	json_t *validations, *refusals, *runs, *run_starts, *predictions, *scores;
	json_t *refutations, *deviations, *notes, *verdict_recs;
	json_t *verdicts; /* evaluated now */
	json_t *holdout_state; /* holdout_registered_state's state (NULL when it could not load) */
	const char *access_state;
} model;

/* Verify the log, then read everything a report shows into m. */
int rpt_model_load(ledger *l, model *m, cs_err *e);
/* Release what rpt_model_load gathered; accepts a partly loaded model. */
void rpt_model_free(model *m);

/* ---- accessors (kept records are {"seq", "ts", "kind", "p": payload}) ---- */

/* o[k] as a string (borrowed), NULL when absent or not a string. */
const char *rpt_str(const json_t *o, const char *k);
/* The payload of a kept record (borrowed). */
json_t *rpt_pl(const json_t *rec);
/* o[k] as a double, NAN when absent or not a number. */
double rpt_num(const json_t *o, const char *k);
/* The strings (or numbers) of a JSON array joined by sep into b. */
void rpt_join(rbuf *b, const json_t *a, const char *sep);
/* The label a run's device is known by ("host device" when none). */
const char *rpt_device(const json_t *run);
/* Concurrency of a run: fan-out width times clients (1 when absent). */
double rpt_concurrency(const json_t *run);
/* A run's metric k (borrowed; NULL when absent). */
const json_t *rpt_metric(const json_t *run, const char *k);
/* A run's metric k as a double, NAN when null or absent. */
double rpt_metric_num(const json_t *run, const char *k);
/* qsort order for doubles. */
int rpt_dbl_cmp(const void *x, const void *y);
/* Quantile q of v[0..n) (sorted in place); NAN when n is 0. */
double rpt_quantile(double *v, size_t n, double q);
/* Latest registered version of each hypothesis (new array of {first, latest, amendments}). */
json_t *rpt_latest_hyps(const model *m);
/* "0.97 [0.9, 1]" of a prediction {value, band95}. */
void rpt_fmt_pred(rbuf *b, const json_t *pred);
/* The score of record: the first complete score that is not interim (NULL: none). */
const json_t *rpt_score_of_record(const model *m);

/* How a run's numbers were made (issue 14): one of these. */
enum { RPT_TIME_VIRTUAL = 1, RPT_TIME_MODEL = 2, RPT_TIME_DISK = 4, RPT_TIME_UNRECORDED = 8 };
#define RPT_TIME_WORDS_MAX 128
/*
 * The basis of a run record (its device_time): virtual time (reads replayed
 * on a device model's clock), real time through a model (the model's
 * service times slept), or the real disk (no device model).
 */
int rpt_time_basis(const json_t *run);
/* Words for a set of RPT_TIME_* bits ("virtual time + real disk"; "n/a" for none), in out. */
const char *rpt_time_words(int bits, char out[RPT_TIME_WORDS_MAX]);
/* The run record (kept) whose run_id is id (borrowed), NULL when none. */
const json_t *rpt_run_by_id(const model *m, const char *id);
/* 1 when a run searched only some of its index's partitions (recall then is whole-set). */
int rpt_partial_search(const json_t *run);
/* A run's raw series name ("queries", "iostat", "memory") read back: new array or NULL. */
json_t *rpt_raw_rows(ledger *l, const json_t *run, const char *name);
/* The time bases (RPT_TIME_* bits) of the runs a verdict saw; 0 when it saw none. */
int rpt_verdict_basis(const model *m, const json_t *verdict);
/*
 * The number a verdict's prediction is about: in its accept trace, the
 * value of the comparison whose threshold lies nearest the registered 95%
 * band band ([lo, hi]; the first comparison with a number when there is no
 * band). NAN when the rule saw no number.
 */
double rpt_verdict_observed(const json_t *verdict, const json_t *band);
/* a[i] as a double, NAN when absent or not a number. */
double rpt_num_at(const json_t *a, size_t i);

/* ---- the document ---- */

typedef struct doc {
	json_t *blocks;
	json_t *figs; /* file name -> svg text */
	json_t *fig_order;
	int failed;
} doc;

/* Append a block (stolen); NULL marks the document failed. */
void rpt_block(doc *d, json_t *blk);
/* A heading of level 2 or 3; level 2 is numbered, anchored and listed in the contents. */
void rpt_h(doc *d, int level, const char *text);
/* A level-2 heading with its own anchor, neither numbered nor listed (the first screen). */
void rpt_h_plain(doc *d, const char *text, const char *anchor);
/* The table of contents: every numbered level-2 heading, with links. */
void rpt_toc(doc *d);
/* A paragraph, printf-style (the text is escaped when rendered). */
void rpt_p(doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Preformatted text, shown as is (escaped for HTML). */
void rpt_pre(doc *d, const char *text);
/* Blocks until rpt_fold_close are folded away under summary (HTML <details>). */
void rpt_fold_open(doc *d, const char *summary);
void rpt_fold_close(doc *d);
/*
 * A table with the given header cells (NULL-terminated); caption without a
 * number (NULL: an unnumbered table). Rows via rpt_row. Returns the table
 * (borrowed: owned by d->blocks).
 */
json_t *rpt_table(doc *d, const char *caption, ...);
/* A new row at the end of table (borrowed). */
json_t *rpt_row(json_t *table);
void rpt_cell_s(json_t *row, const char *s);   /* text (NULL: empty) */
void rpt_cell_n(json_t *row, double x);        /* a number as report_fmt_num prints it */
void rpt_cell_j(json_t *row, const json_t *v); /* any JSON value, lists joined */
void rpt_cell_i(json_t *row, int64_t v);       /* an integer with separators */
/* A figure: svg (taken) saved as file and shown with caption (numbered at render). */
void rpt_fig(doc *d, const char *file, const char *caption, rbuf *svg);
/* The same, drawn as a small panel beside its neighbours. */
void rpt_fig_small(doc *d, const char *file, const char *caption, rbuf *svg);

/* ---- sections, in report order ---- */

void rpt_sec_glance(doc *d, const model *m);
void rpt_sec_verdicts(doc *d, const model *m);
void rpt_sec_holdout(doc *d, const model *m);
int rpt_sec_runs(doc *d, const model *m, ledger *l, cs_err *e);
int rpt_sec_figures(doc *d, const model *m, ledger *l, cs_err *e);
void rpt_sec_hypotheses(doc *d, const model *m);
void rpt_sec_validation(doc *d, const model *m);
void rpt_sec_refutations(doc *d, const model *m);
void rpt_sec_deviations(doc *d, const model *m);
void rpt_sec_notes(doc *d, const model *m);
void rpt_sec_summary(doc *d, const model *m);
void rpt_sec_log(doc *d, const model *m, const char *const *files, size_t nfiles);

/* ---- plots: each adds its figure (or nothing when no run answers it) ---- */

int rpt_plot_concurrency(doc *d, const model *m, cs_err *e);
int rpt_plot_clients(doc *d, const model *m, cs_err *e);
int rpt_plot_latency_cdf(doc *d, const model *m, ledger *l, cs_err *e);
int rpt_plot_recall(doc *d, const model *m, cs_err *e);
int rpt_plot_read_latency(doc *d, const model *m, ledger *l, cs_err *e);
int rpt_plot_series(doc *d, const model *m, ledger *l, cs_err *e);
void rpt_plot_holdout(doc *d, const json_t *score);

/* ---- render ---- */

void rpt_render_html(rbuf *b, const doc *d, const char *title);
void rpt_render_md(rbuf *b, const doc *d, const char *title);

#endif
