/*
 * plot_concurrency.c - reads per second against concurrency (fan-out width
 * times clients), cold runs only, log axes: does fanning out buy reads per
 * second on a cold index? Each run is a dot; each device's line joins the
 * medians at each concurrency. Warm runs and runs prewarmed with their own
 * blocks are left out: served from memory they read ~1000x faster and
 * would flatten the cold runs onto the floor of the plot.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS 8

/* Group, then x, then y: the order medians are taken and lines drawn in. */
static int by_group_x(const void *a, const void *b)
{
	const svg_point *p = a, *q = b;

	if (p->group != q->group)
		return p->group - q->group;
	if (p->x != q->x)
		return (p->x > q->x) - (p->x < q->x);
	return (p->y > q->y) - (p->y < q->y);
}

/* A cold run whose own blocks were not loaded before it (prewarm "other" keeps it cold). */
static int truly_cold(const json_t *run)
{
	const json_t *f = json_object_get(rpt_pl(run), "features");
	const json_t *pw = json_object_get(f, "prewarm");

	if (!json_is_true(json_object_get(f, "cold")))
		return 0;
	if (json_is_string(pw) && strcmp(json_string_value(pw), "other") &&
	    strcmp(json_string_value(pw), "none"))
		return 0;
	return !json_is_true(pw);
}

int rpt_plot_concurrency(doc *d, const model *m, cs_err *e)
{
	size_t n = 0, ng = 0, i, j, k, nruns = json_array_size(m->runs), left_out = 0, nm = 0;
	const char *names[MAX_GROUPS];
	svg_point *pts = calloc(2 * nruns + 1, sizeof(*pts));
	json_t *run;
	char cap[512];
	rbuf svg;

	if (!pts)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	json_array_foreach(m->runs, i, run)
	{
		double rs = rpt_metric_num(run, "engine_reads") / rpt_metric_num(run, "wall_s");
		const char *dev = rpt_device(run);

		if (!truly_cold(run)) {
			left_out++;
			continue;
		}
		if (!(rs > 0) || !isfinite(rs))
			continue;
		for (k = 0; k < ng && strcmp(names[k], dev); k++)
			;
		if (k == ng) {
			if (ng == MAX_GROUPS)
				continue;
			names[ng++] = dev;
		}
		pts[n++] = (svg_point){rpt_concurrency(run), rs, NAN, NAN, (int) k,
		                       rpt_str(rpt_pl(run), "run_id"), 1};
	}
	if (!n) {
		rpt_p(d, "Reads per second against concurrency: no cold run with reads on record.");
		free(pts);
		return 0;
	}
	qsort(pts, n, sizeof(*pts), by_group_x);
	/* a figure must carry information: two concurrencies at least */
	{
		size_t nx = 0;

		for (i = 0; i < n && nx < 2; i++)
			nx += i == 0 || pts[i].x != pts[0].x;
		if (nx < 2) {
			char a[REPORT_NUM_MAX], b[REPORT_NUM_MAX];

			rpt_p(d,
			      "Reads per second against concurrency: every one of the %zu cold runs "
			      "ran at concurrency %s (median %s engine reads/s), so there is no curve "
			      "to draw.",
			      n, report_fmt_num(pts[0].x, a), report_fmt_num(pts[n / 2].y, b));
			free(pts);
			return 0;
		}
	}
	/* the median of each (device, concurrency) run of points, joined per device */
	for (i = 0; i < n; i = j) {
		for (j = i; j < n && pts[j].group == pts[i].group && pts[j].x == pts[i].x; j++)
			;
		pts[n + nm++] = (svg_point){pts[i].x,
		                            (j - i) % 2 ? pts[i + (j - i) / 2].y
		                                        : (pts[i + (j - i) / 2 - 1].y +
		                                           pts[i + (j - i) / 2].y) / 2,
		                            NAN,
		                            NAN,
		                            pts[i].group,
		                            "median",
		                            0};
	}
	rb_init(&svg, 0);
	svg_scatter(&svg, "Cold runs: engine reads per second against concurrency",
	            "concurrency (fan-out width x clients), log scale",
	            "engine reads / s, log scale", pts, n + nm, 1, 1, 0, 1, names, ng);
	free(pts);
	snprintf(cap, sizeof(cap),
	         "Does concurrency buy reads per second? Engine reads over wall time of %zu cold "
	         "runs (dots), each device's line through the medians at each concurrency (log "
	         "axes). %zu warm or self-prewarmed runs, served from memory, are left out.",
	         n, left_out);
	rpt_fig(d, "concurrency.svg", cap, &svg);
	return 0;
}
