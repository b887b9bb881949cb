/*
 * plot_latency_cdf.c - the query latency distribution as a cumulative
 * curve per device and cold/warm state, from every query's own row in the
 * raw table (log latency axis: cold and warm queries lie decades apart).
 * Each curve is drawn through at most CDF_POINTS quantiles.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS 8
#define CDF_POINTS 60

typedef struct group {
	char name[96];
	double *v;
	size_t n, cap;
} group;

/* Append x to g; 0 or -1 when out of memory. */
static int push(group *g, double x)
{
	if (g->n == g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 256;
		double *nv = realloc(g->v, nc * sizeof(*nv));

		if (!nv)
			return -1;
		g->v = nv;
		g->cap = nc;
	}
	g->v[g->n++] = x;
	return 0;
}

int rpt_plot_latency_cdf(doc *d, const model *m, ledger *l, cs_err *e)
{
	group g[MAX_GROUPS];
	const char *names[MAX_GROUPS];
	size_t ng = 0, i, j, k, n = 0, nq = 0;
	svg_point *pts = NULL;
	json_t *run, *row;
	int rc = 0;
	rbuf svg;

	memset(g, 0, sizeof(g));
	json_array_foreach(m->runs, i, run)
	{
		json_t *rows = rpt_raw_rows(l, run, "queries");
		char key[96];

		if (!rows)
			continue;
		snprintf(
		    key, sizeof(key), "%s, %s", rpt_device(run),
		    json_is_true(json_object_get(json_object_get(rpt_pl(run), "features"), "cold"))
		        ? "cold"
		        : "warm");
		for (k = 0; k < ng && strcmp(g[k].name, key); k++)
			;
		if (k == ng && ng < MAX_GROUPS)
			snprintf(g[ng++].name, sizeof(g[0].name), "%s", key);
		if (k < ng) {
			json_array_foreach(rows, j, row)
			{
				double ms = rpt_num(row, "lat_ms");

				if (ms > 0 && isfinite(ms) && push(&g[k], ms)) {
					json_decref(rows);
					rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
					goto out;
				}
			}
		}
		json_decref(rows);
	}
	pts = calloc(MAX_GROUPS * CDF_POINTS, sizeof(*pts));
	if (!pts) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	for (k = 0; k < ng; k++) {
		size_t np = g[k].n < CDF_POINTS ? g[k].n : CDF_POINTS;

		names[k] = g[k].name;
		nq += g[k].n;
		if (!g[k].n)
			continue;
		qsort(g[k].v, g[k].n, sizeof(double), rpt_dbl_cmp);
		for (j = 0; j < np; j++) {
			/* the point where the fraction (idx + 1) / n of the queries is done */
			size_t idx = np == 1 ? g[k].n - 1 : j * (g[k].n - 1) / (np - 1);

			pts[n++] = (svg_point){g[k].v[idx], (double) (idx + 1) / (double) g[k].n,
			                       NAN,         NAN,
			                       (int) k,     NULL, 0};
		}
	}
	if (!n) {
		rpt_p(d, "Latency distribution: no per-query rows on record.");
		goto out;
	}
	rb_init(&svg, 0);
	svg_scatter(&svg, "Query latency, cumulative", "query latency (ms), log scale",
	            "fraction of queries done", pts, n, 1, 0, 0, 1, names, ng);
	{
		char cap[256];

		snprintf(cap, sizeof(cap),
		         "How long do queries take? The cumulative distribution of %zu queries' "
		         "latency, pooled by device and cold/warm state (log latency axis).",
		         nq);
		rpt_fig(d, "latency-cdf.svg", cap, &svg);
	}
out:
	for (k = 0; k < MAX_GROUPS; k++)
		free(g[k].v);
	free(pts);
	return rc;
}
