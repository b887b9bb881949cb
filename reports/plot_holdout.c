/*
 * plot_holdout.c - holdout predictions against what was observed, one
 * small panel per metric so that no axis mixes units: observed on x,
 * predicted with its 95% band on y, the dashed line exact agreement. An
 * axis is logarithmic when its values are positive and span more than a
 * factor of 20.
 */
#include "report_doc.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_METRICS 24

void rpt_plot_holdout(doc *d, const json_t *score)
{
	static const char *const gn[] = {"inside band", "outside band"};
	const json_t *rows = json_object_get(rpt_pl(score), "rows");
	const char *metrics[MAX_METRICS];
	size_t nm = 0, i, k, n = json_array_size(rows);
	svg_point *pts;
	json_t *rec;

	if (!n)
		return;
	json_array_foreach(rows, i, rec)
	{
		const char *mk = rpt_str(rec, "metric") ?: "?";

		for (k = 0; k < nm && strcmp(metrics[k], mk); k++)
			;
		if (k == nm && nm < MAX_METRICS)
			metrics[nm++] = mk;
	}
	pts = calloc(n, sizeof(*pts));
	if (!pts) {
		d->failed = 1;
		return;
	}
	for (k = 0; k < nm; k++) {
		const char *unit = report_metric_unit(metrics[k]);
		double lo = INFINITY, hi = -INFINITY;
		size_t np = 0, c;
		char file[128], xl[160], yl[160], ttl[160], cap[256];
		rbuf svg;
		int lg;

		json_array_foreach(rows, i, rec)
		{
			const char *mk = rpt_str(rec, "metric") ?: "?";
			double v[4];

			if (strcmp(mk, metrics[k]))
				continue;
			pts[np] = (svg_point){rpt_num(rec, "observed"),
			                      rpt_num(rec, "predicted"),
			                      rpt_num(rec, "lo"),
			                      rpt_num(rec, "hi"),
			                      json_is_true(json_object_get(rec, "inside")) ? 0 : 1,
			                      rpt_str(rec, "prediction"), 0};
			v[0] = pts[np].x;
			v[1] = pts[np].y;
			v[2] = pts[np].lo;
			v[3] = pts[np].hi;
			for (c = 0; c < 4; c++)
				if (isfinite(v[c])) {
					lo = fmin(lo, v[c]);
					hi = fmax(hi, v[c]);
				}
			np++;
		}
		lg = lo > 0 && hi / lo > 20;
		/* a file name of the metric's letters, digits and underscores */
		snprintf(file, sizeof(file), "holdout-");
		for (c = 0; metrics[k][c] && strlen(file) < sizeof(file) - 6; c++) {
			unsigned char ch = (unsigned char) metrics[k][c];
			size_t fl = strlen(file);

			file[fl] = isalnum(ch) || ch == '_' ? (char) ch : '-';
			file[fl + 1] = '\0';
		}
		strncat(file, ".svg", sizeof(file) - strlen(file) - 1);
		snprintf(ttl, sizeof(ttl), "%s", metrics[k]);
		snprintf(xl, sizeof(xl), "observed%s%s%s%s", *unit ? " (" : "", unit,
		         *unit ? ")" : "", lg ? ", log" : "");
		snprintf(yl, sizeof(yl), "predicted%s%s%s, 95%% band", *unit ? " (" : "", unit,
		         *unit ? ")" : "");
		rb_init(&svg, 0);
		svg_scatter_small(&svg, ttl, xl, yl, pts, np, lg, lg, 1, gn, 2);
		snprintf(cap, sizeof(cap),
		         "Holdout, %s: %zu prediction%s with %s 95%% band%s against what was "
		         "observed; the dashed line is exact agreement.",
		         metrics[k], np, np == 1 ? "" : "s", np == 1 ? "its" : "their",
		         np == 1 ? "" : "s");
		rpt_fig_small(d, file, cap, &svg);
	}
	free(pts);
}
