/*
 * plot_clients.c - queries per second against the number of clients, one
 * line per device and cold/warm state (log axes): does throughput follow
 * the clients, and where does it stop? Drawn only where runs differ in
 * their clients.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
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

int rpt_plot_clients(doc *d, const model *m, cs_err *e)
{
	size_t n = 0, ng = 0, i, k, nruns = json_array_size(m->runs);
	char names[MAX_GROUPS][96];
	const char *np[MAX_GROUPS];
	double c0 = NAN;
	int differ = 0;
	svg_point *pts = calloc(nruns ? nruns : 1, sizeof(*pts));
	json_t *run;
	rbuf svg;

	if (!pts)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	json_array_foreach(m->runs, i, run)
	{
		const json_t *f = json_object_get(rpt_pl(run), "features");
		double cl = rpt_num(f, "clients"), qps = rpt_metric_num(run, "qps");
		char key[96];

		if (!(cl > 0) || !(qps > 0) || !isfinite(qps))
			continue;
		if (isfinite(c0) && cl != c0)
			differ = 1;
		c0 = cl;
		snprintf(key, sizeof(key), "%s, %s", rpt_device(run),
		         json_is_true(json_object_get(f, "cold")) ? "cold" : "warm");
		for (k = 0; k < ng && strcmp(names[k], key); k++)
			;
		if (k == ng) {
			if (ng == MAX_GROUPS)
				continue;
			snprintf(names[ng++], sizeof(names[0]), "%s", key);
		}
		pts[n++] = (svg_point){cl, qps, NAN, NAN, (int) k, rpt_str(rpt_pl(run), "run_id"), 0};
	}
	if (!differ) {
		rpt_p(d,
		      "QPS against clients: every run on record used the same number of clients, "
		      "so there is nothing to plot.");
		free(pts);
		return 0;
	}
	for (k = 0; k < ng; k++)
		np[k] = names[k];
	qsort(pts, n, sizeof(*pts), by_group_x);
	rb_init(&svg, 0);
	svg_scatter(&svg, "Queries per second against clients", "clients, log scale",
	            "queries / s, log scale", pts, n, 1, 1, 0, 1, np, ng);
	free(pts);
	rpt_fig(d, "clients.svg",
	        "Does throughput follow the clients? Queries per second of each run against its "
	        "clients, one line per device and cold/warm state (log axes).",
	        &svg);
	return 0;
}
