/*
 * svg.c - the report's plots as hand-written SVG: horizontal bars, a
 * distribution strip per group, and a scatter with bands.
 *
 * Each function appends one standalone <svg> document (no XML prolog, so
 * the same bytes can be written to R/NAME.svg and inlined into the HTML
 * report). All text goes through rb_html; coordinates print at one
 * decimal, so output is byte-stable. Wall times and latencies span
 * decades (50 ms warm, 30 minutes cold), so the bars and strips use log
 * axes; a value a log axis cannot show (zero, negative, missing) is
 * written as "n/a" instead of being dropped silently.
 */
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W         760.0
#define MAX_TICKS 24
#define MAX_DOTS  2000 /* dots drawn per strip; quantiles use every value */

static const char *const palette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                      "#CC79A7", "#56B4E9", "#8C6D00", "#000000"};

/* The colour of group g. */
static const char *colour(int g)
{
	return palette[(g < 0 ? 0 : (size_t) g) % (sizeof(palette) / sizeof(palette[0]))];
}

/* An axis: data range mapped onto pixels [p0, p1]. */
typedef struct axis {
	int log;
	double lo, hi; /* data range (log: > 0) */
	double p0, p1;
	double ticks[MAX_TICKS];
	size_t nticks;
} axis;

/* Fit an axis to [lo, hi] (finite; for log, lo > 0). */
static void axis_fit(axis *a, int logx, double lo, double hi, double p0, double p1)
{
	a->log = logx;
	a->p0 = p0;
	a->p1 = p1;
	if (logx) {
		if (!(lo > 0) || !isfinite(lo)) {
			lo = 1;
			hi = 10;
		}
		a->nticks = report_log_ticks(lo, hi, a->ticks, MAX_TICKS);
	} else {
		if (!isfinite(lo) || !isfinite(hi)) {
			lo = 0;
			hi = 1;
		}
		a->nticks = report_lin_ticks(lo, hi, 5, a->ticks, MAX_TICKS);
	}
	if (a->nticks < 2) {
		a->ticks[0] = logx ? 1 : 0;
		a->ticks[1] = logx ? 10 : 1;
		a->nticks = 2;
	}
	a->lo = a->ticks[0];
	a->hi = a->ticks[a->nticks - 1];
}

/* Pixel position of v on a (v valid for the axis). */
static double axis_px(const axis *a, double v)
{
	double f;

	if (a->log)
		f = (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
	else
		f = (v - a->lo) / (a->hi - a->lo);
	return a->p0 + f * (a->p1 - a->p0);
}

/* Can v be drawn on a? */
static int axis_ok(const axis *a, double v)
{
	return isfinite(v) && (!a->log || v > 0);
}

/* Open an SVG document of height h with a white background and a title. */
static void svg_open_w(rbuf *b, double w, double h, const char *title)
{
	rb_printf(b,
	          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
	          "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
	          w, h, w, h);
	rb_put(b, "<title>");
	rb_html(b, title);
	rb_put(b, "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n");
	rb_put(b, "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">");
	rb_html(b, title);
	rb_put(b, "</text>\n");
}

/* An SVG document of the standard width. */
static void svg_open(rbuf *b, double h, const char *title)
{
	svg_open_w(b, W, h, title);
}

/* Text at (x, y), anchored, escaped. */
static void text_at(rbuf *b, double x, double y, const char *anchor, const char *s)
{
	rb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", x, y, anchor);
	rb_html(b, s);
	rb_put(b, "</text>\n");
}

/* A horizontal axis at pixel row y with grid lines up to y_top. */
static void draw_xaxis(rbuf *b, const axis *a, double y, double y_top, const char *label)
{
	char num[REPORT_NUM_MAX];
	size_t i;

	rb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>\n",
	          a->p0, y, a->p1, y);
	for (i = 0; i < a->nticks; i++) {
		double x = axis_px(a, a->ticks[i]);

		rb_printf(
		    b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
		    x, y_top, x, y);
		text_at(b, x, y + 14, "middle", report_fmt_num(a->ticks[i], num));
	}
	text_at(b, (a->p0 + a->p1) / 2, y + 32, "middle", label);
}

/* A vertical axis at pixel column x with grid lines across to x_right. */
static void draw_yaxis(rbuf *b, const axis *a, double x, double x_right, const char *label)
{
	char num[REPORT_NUM_MAX];
	size_t i;

	rb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>\n", x,
	          a->p0, x, a->p1);
	for (i = 0; i < a->nticks; i++) {
		double y = axis_px(a, a->ticks[i]);

		rb_printf(
		    b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
		    x, y, x_right, y);
		text_at(b, x - 4, y + 4, "end", report_fmt_num(a->ticks[i], num));
	}
	rb_printf(
	    b,
	    "<text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">",
	    (a->p0 + a->p1) / 2, (a->p0 + a->p1) / 2);
	rb_html(b, label);
	rb_put(b, "</text>\n");
}

/* A legend row of coloured squares at y. */
static void draw_legend(rbuf *b, double x, double y, const char *const *names, size_t n)
{
	size_t g;

	for (g = 0; g < n; g++) {
		rb_printf(b,
		          "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>\n",
		          x, y - 9, colour((int) g));
		text_at(b, x + 14, y, "start", names[g]);
		x += 24 + 7.0 * (double) strlen(names[g]);
	}
}

void svg_hbars(rbuf *b, const char *title, const char *xlabel, const svg_bar *bars, size_t n,
               int logx, const char *const *group_names, size_t ngroups)
{
	const double left = 190, right = W - 60, top = 40, row = 18;
	double lo = INFINITY, hi = -INFINITY, h, y_axis;
	char num[REPORT_NUM_MAX];
	axis a;
	size_t i;

	for (i = 0; i < n; i++) {
		double v = bars[i].value;

		if (!isfinite(v) || (logx && v <= 0))
			continue;
		lo = fmin(lo, v);
		hi = fmax(hi, v);
	}
	if (!logx)
		lo = fmin(lo, 0);
	if (!isfinite(lo))
		lo = logx ? 1 : 0, hi = logx ? 10 : 1;
	axis_fit(&a, logx, lo, hi, left, right);
	y_axis = top + row * (double) n + 6;
	h = y_axis + 46 + (ngroups ? 20 : 0);
	svg_open(b, h, title);
	draw_xaxis(b, &a, y_axis, top, xlabel);
	for (i = 0; i < n; i++) {
		double y = top + row * (double) i, v = bars[i].value;
		const char *label = bars[i].label ? bars[i].label : "";

		rb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", left - 6, y + 12);
		rb_html(b, label);
		rb_put(b, "</text>\n");
		if (!axis_ok(&a, v) || (logx && v < a.lo)) {
			text_at(b, left + 4, y + 12, "start", "n/a");
			continue;
		}
		rb_printf(b,
		          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		          "fill=\"%s\"><title>",
		          left, y + 2, fmax(axis_px(&a, v) - left, 1), row - 4,
		          colour(bars[i].group));
		rb_html(b, label);
		rb_printf(b, ": %s</title></rect>\n", report_fmt_num(v, num));
		text_at(b, axis_px(&a, v) + 4, y + 12, "start", report_fmt_num(v, num));
	}
	if (ngroups)
		draw_legend(b, left, h - 8, group_names, ngroups);
	rb_put(b, "</svg>\n");
}

/* qsort order for doubles. */
static int dbl_cmp(const void *x, const void *y)
{
	double a = *(const double *) x, c = *(const double *) y;

	return (a > c) - (a < c);
}

/* Quantile q of sorted v[0..n) (n > 0): the project's definition. */
static double quantile(const double *v, size_t n, double q)
{
	return cs_quantile(v, n, q);
}

void svg_strips(rbuf *b, const char *title, const char *xlabel, const svg_strip *rows, size_t n)
{
	const double left = 190, right = W - 40, top = 40, row = 44;
	double lo = INFINITY, hi = -INFINITY, h, y_axis;
	char num[REPORT_NUM_MAX];
	axis a;
	size_t i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < rows[i].n; j++) {
			double v = rows[i].values[j];

			if (isfinite(v) && v > 0) {
				lo = fmin(lo, v);
				hi = fmax(hi, v);
			}
		}
	if (!isfinite(lo))
		lo = 1, hi = 10;
	axis_fit(&a, 1, lo, hi, left, right);
	y_axis = top + row * (double) n + 4;
	h = y_axis + 46;
	svg_open(b, h, title);
	draw_xaxis(b, &a, y_axis, top, xlabel);
	for (i = 0; i < n; i++) {
		double y = top + row * (double) i + row / 2, *v;
		size_t k = 0, stride;

		v = malloc((rows[i].n ? rows[i].n : 1) * sizeof(*v));
		if (!v) {
			b->failed = 1;
			return;
		}
		for (j = 0; j < rows[i].n; j++)
			if (isfinite(rows[i].values[j]) && rows[i].values[j] > 0)
				v[k++] = rows[i].values[j];
		rb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", left - 6, y + 4);
		rb_html(b, rows[i].label);
		rb_printf(b, " (n=%zu)</text>\n", k);
		if (!k) {
			text_at(b, left + 4, y + 4, "start", "n/a");
			free(v);
			continue;
		}
		/* dots in recorded order, jittered by index so the picture is reproducible */
		stride = k > MAX_DOTS ? (k + MAX_DOTS - 1) / MAX_DOTS : 1;
		for (j = 0; j < k; j += stride)
			rb_printf(b,
			          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"%s\" "
			          "fill-opacity=\"0.35\"/>\n",
			          axis_px(&a, v[j]), y - 12 + (double) ((j * 7919) % 25),
			          colour((int) i));
		qsort(v, k, sizeof(*v), dbl_cmp);
		rb_printf(b,
		          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
		          "stroke-width=\"1.5\"/>\n",
		          axis_px(&a, quantile(v, k, 0.1)), y, axis_px(&a, quantile(v, k, 0.9)), y);
		rb_printf(b,
		          "<rect x=\"%.1f\" y=\"%.1f\" width=\"3\" height=\"22\" "
		          "fill=\"#000\"><title>median ",
		          axis_px(&a, quantile(v, k, 0.5)) - 1.5, y - 11);
		rb_put(b, report_fmt_num(quantile(v, k, 0.5), num));
		rb_put(b, "</title></rect>\n");
		free(v);
	}
	text_at(b, W - 40, 20, "end", "dots: values; bar: median; line: 10th to 90th percentile");
	rb_put(b, "</svg>\n");
}

/* The scatter of svg_scatter on a canvas w wide with the plot area down to bottom. */
static void scatter(rbuf *b, double w, double bottom, const char *title, const char *xlabel,
                    const char *ylabel, const svg_point *pts, size_t n, int logx, int logy,
                    int diagonal, int join, const char *const *group_names, size_t ngroups)
{
	const double left = 80, right = w - 30, top = 40;
	double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY, h;
	char num[REPORT_NUM_MAX];
	axis ax, ay;
	size_t i;
	int g;

#define GROW(lo_, hi_, v_, lg_)                                                                    \
	do {                                                                                       \
		if (isfinite(v_) && (!(lg_) || (v_) > 0)) {                                        \
			lo_ = fmin(lo_, v_);                                                       \
			hi_ = fmax(hi_, v_);                                                       \
		}                                                                                  \
	} while (0)
	for (i = 0; i < n; i++) {
		GROW(xlo, xhi, pts[i].x, logx);
		GROW(ylo, yhi, pts[i].y, logy);
		GROW(ylo, yhi, pts[i].lo, logy);
		GROW(ylo, yhi, pts[i].hi, logy);
	}
#undef GROW
	if (diagonal && isfinite(xlo) && isfinite(ylo)) {
		xlo = ylo = fmin(xlo, ylo);
		xhi = yhi = fmax(xhi, yhi);
	}
	if (!logx && isfinite(xlo))
		xlo = fmin(xlo, 0);
	if (!logy && isfinite(ylo))
		ylo = fmin(ylo, 0);
	axis_fit(&ax, logx, xlo, xhi, left, right);
	axis_fit(&ay, logy, ylo, yhi, bottom, top);
	h = bottom + 46 + (ngroups ? 20 : 0);
	svg_open_w(b, w, h, title);
	draw_xaxis(b, &ax, bottom, top, xlabel);
	draw_yaxis(b, &ay, left, right, ylabel);
	if (diagonal) {
		double d0 = fmax(ax.lo, ay.lo), d1 = fmin(ax.hi, ay.hi);

		if (d1 > d0)
			rb_printf(
			    b,
			    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" "
			    "stroke-dasharray=\"4 3\"/>\n",
			    axis_px(&ax, d0), axis_px(&ay, d0), axis_px(&ax, d1), axis_px(&ay, d1));
	}
	if (join) {
		for (g = 0; g < (int) (ngroups ? ngroups : 1); g++) {
			int started = 0;

			for (i = 0; i < n; i++) {
				if (pts[i].group != g || pts[i].solo || !axis_ok(&ax, pts[i].x) ||
				    !axis_ok(&ay, pts[i].y))
					continue;
				if (!started)
					rb_printf(b,
					          "<polyline fill=\"none\" stroke=\"%s\" points=\"",
					          colour(g));
				rb_printf(b, "%s%.1f,%.1f", started ? " " : "",
				          axis_px(&ax, pts[i].x), axis_px(&ay, pts[i].y));
				started = 1;
			}
			if (started)
				rb_put(b, "\"/>\n");
		}
	}
	for (i = 0; i < n; i++) {
		const svg_point *p = &pts[i];
		double x, y;

		if (!axis_ok(&ax, p->x) || !axis_ok(&ay, p->y))
			continue;
		x = axis_px(&ax, p->x);
		y = axis_px(&ay, p->y);
		if (axis_ok(&ay, p->lo) && axis_ok(&ay, p->hi)) {
			double y0 = axis_px(&ay, p->lo), y1 = axis_px(&ay, p->hi);

			rb_printf(b,
			          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			          "stroke=\"%s\"/>\n"
			          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			          "stroke=\"%s\"/>\n"
			          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			          "stroke=\"%s\"/>\n",
			          x, y0, x, y1, colour(p->group), x - 4, y0, x + 4, y0,
			          colour(p->group), x - 4, y1, x + 4, y1, colour(p->group));
		}
		rb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>", x, y,
		          colour(p->group));
		if (p->label) {
			rb_html(b, p->label);
			rb_put(b, ": ");
		}
		rb_put(b, report_fmt_num(p->x, num));
		rb_put(b, ", ");
		rb_put(b, report_fmt_num(p->y, num));
		rb_put(b, "</title></circle>\n");
		/* names beside points only where few points and no lines: else they overprint */
		if (p->label && n <= 12 && !join && w >= W)
			text_at(b, x + 6, y - 6, "start", p->label);
	}
	if (ngroups)
		draw_legend(b, left, h - 8, group_names, ngroups);
	rb_put(b, "</svg>\n");
}

void svg_scatter(rbuf *b, const char *title, const char *xlabel, const char *ylabel,
                 const svg_point *pts, size_t n, int logx, int logy, int diagonal, int join,
                 const char *const *group_names, size_t ngroups)
{
	scatter(b, W, 400, title, xlabel, ylabel, pts, n, logx, logy, diagonal, join, group_names,
	        ngroups);
}

void svg_scatter_small(rbuf *b, const char *title, const char *xlabel, const char *ylabel,
                       const svg_point *pts, size_t n, int logx, int logy, int diagonal,
                       const char *const *group_names, size_t ngroups)
{
	scatter(b, 380, 300, title, xlabel, ylabel, pts, n, logx, logy, diagonal, 0, group_names,
	        ngroups);
}
