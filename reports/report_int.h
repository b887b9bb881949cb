/*
 * report_int.h - internals of reports/: a bounded text buffer, number and
 * text formatting for Markdown, HTML and SVG, axis ticks, and the plots.
 *
 * Everything here is deterministic: the same inputs give the same bytes
 * (printf with fixed precisions, no locale, no clock), which is what lets
 * a report be reproduced byte for byte from its ledger.
 *
 * Error convention: the buffer is sticky; a write that would pass its cap
 * or fails to allocate sets b->failed and later writes do nothing, so a
 * caller checks once at the end (rb_ok).
 */
#ifndef REPORT_INT_H
#define REPORT_INT_H

#include <stddef.h>

#include "cs.h"

/* ---- a growable text buffer with a cap (STYLE 7) ---- */

typedef struct rbuf {
	char *p; /* NUL-terminated while not failed */
	size_t len;
	size_t cap;
	size_t max; /* the most bytes it may hold */
	int failed; /* over max or out of memory */
} rbuf;

#define RB_DEFAULT_MAX ((size_t) 256 << 20) /* 256 MiB for one output file */

/* An empty buffer holding at most max bytes (0: RB_DEFAULT_MAX). */
void rb_init(rbuf *b, size_t max);
/* Release the buffer; accepts a zeroed one. */
void rb_free(rbuf *b);
/* 1 while nothing has failed. */
int rb_ok(const rbuf *b);
/* Append n bytes of s. */
void rb_putn(rbuf *b, const char *s, size_t n);
/* Append the string s (NULL appends nothing). */
void rb_put(rbuf *b, const char *s);
/* Append printf-style. */
void rb_printf(rbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s escaped for HTML/XML text and attributes (& < > " '). */
void rb_html(rbuf *b, const char *s);
/*
 * Append s escaped for Markdown inline text: HTML-special characters as
 * entities, Markdown punctuation backslash-escaped, line breaks as spaces
 * (so a table cell or heading stays one line).
 */
void rb_md(rbuf *b, const char *s);

/* ---- numbers ---- */

#define REPORT_NUM_MAX 48

/*
 * x for a reader: "n/a" when not finite; an integer with thousands
 * separators ("57,419"); else four significant digits without trailing
 * zeros ("0.987", "1,912", "34.57"), and "4.47e-7" below 0.001.
 * Returns out.
 */
const char *report_fmt_num(double x, char out[REPORT_NUM_MAX]);

/* A JSON value for a cell: null/absent "n/a", numbers as above, true "yes", false "no". */
const char *report_fmt_json(const json_t *v, char out[REPORT_NUM_MAX]);

/* The unit a vocabulary metric is measured in ("" for counts and ratios; results.c). */
const char *report_metric_unit(const char *metric);

/* ---- axes ---- */

/*
 * Powers of ten from 10^floor(log10 lo) to 10^ceil(log10 hi) (lo, hi > 0;
 * one decade at least) into ticks; returns how many (at most max), 0 on
 * bad input.
 */
size_t report_log_ticks(double lo, double hi, double *ticks, size_t max);

/*
 * "Nice" linear ticks (1, 2 or 5 times a power of ten apart) covering
 * [lo, hi] with about `want` intervals; ticks[0] <= lo and the last >= hi.
 * Returns how many (at most max), 0 on bad input.
 */
size_t report_lin_ticks(double lo, double hi, size_t want, double *ticks, size_t max);

/* ---- plots (reports/svg.c): each appends one standalone SVG document ---- */

typedef struct svg_bar {
	const char *label;
	double value; /* not finite or <= 0 on a log axis: drawn as "n/a" */
	int group;    /* colour index */
} svg_bar;

/* Horizontal bars, one per row, on a log (logx) or linear x axis; legend names groups. */
void svg_hbars(rbuf *b, const char *title, const char *xlabel, const svg_bar *bars, size_t n,
               int logx, const char *const *group_names, size_t ngroups);

typedef struct svg_strip {
	const char *label;
	const double *values; /* borrowed */
	size_t n;
} svg_strip;

/*
 * One row per group: every value as a dot (log x axis), with the median as
 * a bar and the 10th-90th percentile as a line: a distribution by group.
 */
void svg_strips(rbuf *b, const char *title, const char *xlabel, const svg_strip *rows, size_t n);

typedef struct svg_point {
	double x, y;
	double lo, hi; /* a vertical band around y; not finite: none */
	int group;
	const char *label; /* may be NULL */
	int solo;          /* with join: a dot only, not part of its group's line */
} svg_point;

/*
 * Points with optional vertical bands; log or linear axes; diagonal draws
 * y = x (predicted against observed); join links the points of each group
 * in order (a series), leaving out points marked solo.
 */
void svg_scatter(rbuf *b, const char *title, const char *xlabel, const char *ylabel,
                 const svg_point *pts, size_t n, int logx, int logy, int diagonal, int join,
                 const char *const *group_names, size_t ngroups);

/* The same on a small canvas (380 px wide), for one panel among several; no joined series. */
void svg_scatter_small(rbuf *b, const char *title, const char *xlabel, const char *ylabel,
                       const svg_point *pts, size_t n, int logx, int logy, int diagonal,
                       const char *const *group_names, size_t ngroups);

#endif
