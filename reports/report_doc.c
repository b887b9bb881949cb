/*
 * report_doc.c - the document model: a JSON array of blocks (headings,
 * paragraphs, tables, preformatted text, folds, figures) that render.c
 * turns into Markdown and HTML.
 */
#include "report_doc.h"

#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Append a block (stolen); a NULL block marks the document failed. */
void rpt_block(doc *d, json_t *blk)
{
	if (!blk || json_array_append_new(d->blocks, blk))
		d->failed = 1;
}

/* A heading of level 2 or 3 (the title is level 1); render.c numbers level 2. */
void rpt_h(doc *d, int level, const char *text)
{
	rpt_block(d, json_pack("{s:s,s:i,s:s}", "t", "h", "level", level, "text", text));
}

/* An unnumbered level-2 heading with a fixed anchor. */
void rpt_h_plain(doc *d, const char *text, const char *anchor)
{
	rpt_block(d, json_pack("{s:s,s:i,s:s,s:s}", "t", "h", "level", 2, "text", text, "anchor",
	                       anchor));
}

/* The contents: render.c lists the numbered headings here. */
void rpt_toc(doc *d)
{
	rpt_block(d, json_pack("{s:s}", "t", "toc"));
}

/* Open a fold: what follows until rpt_fold_close is behind summary. */
void rpt_fold_open(doc *d, const char *summary)
{
	rpt_block(d, json_pack("{s:s,s:s}", "t", "fold", "summary", summary));
}

/* Close the innermost fold. */
void rpt_fold_close(doc *d)
{
	rpt_block(d, json_pack("{s:s}", "t", "endfold"));
}

/* A paragraph, printf-style (the text is escaped when rendered). */
void rpt_p(doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rpt_p(doc *d, const char *fmt, ...)
{
	rbuf b;
	va_list ap;
	int n;

	rb_init(&b, 0);
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n >= 0) {
		char *s = malloc((size_t) n + 1);

		if (s) {
			va_start(ap, fmt);
			vsnprintf(s, (size_t) n + 1, fmt, ap);
			va_end(ap);
			rpt_block(d, json_pack("{s:s,s:s}", "t", "p", "text", s));
			free(s);
			return;
		}
	}
	d->failed = 1;
}

/* Preformatted text, shown as is (escaped for HTML). */
void rpt_pre(doc *d, const char *text)
{
	rpt_block(d, json_pack("{s:s,s:s}", "t", "pre", "text", text));
}

/* A table with the given header cells (NULL-terminated); rows via row_new. */
json_t *rpt_table(doc *d, const char *caption, ...)
{
	json_t *head = json_array(), *t;
	va_list ap;
	const char *c;

	va_start(ap, caption);
	while ((c = va_arg(ap, const char *)))
		json_array_append_new(head, json_string(c));
	va_end(ap);
	t = json_pack("{s:s,s:o,s:[],s:s?}", "t", "table", "head", head, "rows", "caption",
	              caption);
	rpt_block(d, t);
	return t; /* borrowed: owned by d->blocks */
}

/* A new row at the end of table (borrowed). */
json_t *rpt_row(json_t *table)
{
	json_t *r = json_array();

	json_array_append_new(json_object_get(table, "rows"), r);
	return r; /* borrowed */
}

/* A text cell (NULL: empty). */
void rpt_cell_s(json_t *row, const char *s)
{
	json_array_append_new(row, json_string(s ? s : ""));
}

/* A number cell as report_fmt_num prints it. */
void rpt_cell_n(json_t *row, double x)
{
	char n[REPORT_NUM_MAX];

	rpt_cell_s(row, report_fmt_num(x, n));
}

/* A cell for any JSON value: lists joined, objects as canonical JSON, null as n/a. */
void rpt_cell_j(json_t *row, const json_t *v)
{
	char n[REPORT_NUM_MAX];

	if (json_is_array(v) && !json_array_size(v)) {
		rpt_cell_s(row, "none");
	} else if (json_is_array(v)) {
		rbuf b;

		rb_init(&b, 0);
		rpt_join(&b, v, ", ");
		rpt_cell_s(row, rb_ok(&b) && b.p ? b.p : "");
		rb_free(&b);
	} else if (json_is_object(v)) {
		char *c = NULL;

		cs_json_canonical(v, &c, NULL, NULL);
		rpt_cell_s(row, c ? c : "");
		free(c);
	} else {
		rpt_cell_s(row, report_fmt_json(v, n));
	}
}

/* An integer cell with thousands separators. */
void rpt_cell_i(json_t *row, int64_t v)
{
	char n[REPORT_NUM_MAX];

	rpt_cell_s(row, report_fmt_num((double) v, n));
}

/* Register a figure: svg (taken) saved as file, shown with caption; small: a panel. */
static void fig_add(doc *d, const char *file, const char *caption, rbuf *svg, int small)
{
	if (!rb_ok(svg) || !svg->p) {
		d->failed = 1;
		rb_free(svg);
		return;
	}
	json_object_set_new(d->figs, file, json_string(svg->p));
	json_array_append_new(d->fig_order, json_string(file));
	rpt_block(d, json_pack("{s:s,s:s,s:s,s:b}", "t", "fig", "file", file, "caption", caption,
	                       "small", small));
	rb_free(svg);
}

void rpt_fig(doc *d, const char *file, const char *caption, rbuf *svg)
{
	fig_add(d, file, caption, svg, 0);
}

void rpt_fig_small(doc *d, const char *file, const char *caption, rbuf *svg)
{
	fig_add(d, file, caption, svg, 1);
}
