/*
 * plot_concurrency.c - reads per second against concurrency (fan-out width
 * times clients), cold runs only, log axes, one line per device: does
 * fanning out buy reads per second on a cold index? Warm runs are left out:
 * served from memory they read ~1000x faster and would flatten the cold
 * runs onto the zero line.
 */
#include "report_doc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS 8

static int by_group_x(const void *a, const void *b)
{
	const svg_point *p = a, *q = b;

	if (p->group != q->group)
		return p->group - q->group;
	return (p->x > q->x) - (p->x < q->x);
}

int rpt_plot_concurrency(doc *d, const model *m, cs_err *e)
{
	size_t n = 0, ng = 0, i, k, nruns = json_array_size(m->runs), warm = 0;
	const char *names[MAX_GROUPS];
	svg_point *pts = calloc(nruns ? nruns : 1, sizeof(*pts));
	json_t *run;
	rbuf svg;

	if (!pts)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	json_array_foreach(m->runs, i, run)
	{
		double rs = rpt_metric_num(run, "engine_reads") / rpt_metric_num(run, "wall_s");
		const char *dev = rpt_device(run);

		if (!json_is_true(
		        json_object_get(json_object_get(rpt_pl(run), "features"), "cold"))) {
			warm++;
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
		pts[n++] = (svg_point){rpt_concurrency(run),          rs, NAN, NAN, (int) k,
		                       rpt_str(rpt_pl(run), "run_id")};
	}
	if (!n) {
		rpt_p(d, "Reads per second against concurrency: no cold run with reads on record.");
		free(pts);
		return 0;
	}
	qsort(pts, n, sizeof(*pts), by_group_x);
	rb_init(&svg, 0);
	svg_scatter(&svg, "Cold runs: engine reads per second against concurrency",
	            "concurrency (fan-out width x clients), log scale",
	            "engine reads / s, log scale", pts, n, 1, 1, 0, 1, names, ng);
	free(pts);
	rpt_fig(d, "concurrency.svg",
	        warm ? "Does concurrency buy reads per second? Engine reads over wall time of each "
	               "cold run, one line per device (log axes; warm runs, served from memory, "
	               "are left out)."
	             : "Does concurrency buy reads per second? Engine reads over wall time of each "
	               "cold run, one line per device (log axes).",
	        &svg);
	return 0;
}
