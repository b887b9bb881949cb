/*
 * plot_read_latency.c - per-read latency by device: each query's read time
 * over its reads, from the raw per-query rows, one strip per device (log
 * axis): what a read costs on each device, tails included.
 */
#include "report_doc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 32

int rpt_plot_read_latency(doc *d, const model *m, ledger *l, cs_err *e)
{
	svg_strip rows[MAX_DEVICES];
	double *v[MAX_DEVICES];
	size_t cap[MAX_DEVICES], n[MAX_DEVICES], ng = 0, i, j, k, any = 0;
	json_t *run, *row;
	int rc = 0;
	rbuf svg;

	memset(v, 0, sizeof(v));
	json_array_foreach(m->runs, i, run)
	{
		const char *dev = rpt_device(run);
		json_t *qr;

		for (k = 0; k < ng && strcmp(rows[k].label, dev); k++)
			;
		if (k == ng) {
			if (ng == MAX_DEVICES)
				continue;
			rows[ng] = (svg_strip){dev, NULL, 0};
			cap[ng] = n[ng] = 0;
			ng++;
		}
		if (!(qr = rpt_raw_rows(l, run, "queries")))
			continue;
		json_array_foreach(qr, j, row)
		{
			double reads = rpt_num(row, "reads"), ms = rpt_num(row, "read_ms");

			if (!(reads > 0) || !isfinite(ms))
				continue;
			if (n[k] == cap[k]) {
				size_t nc = cap[k] ? cap[k] * 2 : 256;
				double *nv = realloc(v[k], nc * sizeof(double));

				if (!nv) {
					json_decref(qr);
					rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
					goto out;
				}
				v[k] = nv;
				cap[k] = nc;
			}
			v[k][n[k]++] = ms / reads;
			any++;
		}
		json_decref(qr);
	}
	if (!any) {
		rpt_p(d, "Per-read latency by device: no per-query rows with reads on record.");
		goto out;
	}
	for (k = 0; k < ng; k++) {
		rows[k].values = v[k];
		rows[k].n = n[k];
	}
	rb_init(&svg, 0);
	svg_strips(&svg, "Per-read latency by device (each query's mean)",
	           "read latency per query (ms), log scale", rows, ng);
	rpt_fig(d, "read-latency.svg",
	        "What does a read cost on each device? Each dot is one query's read time over its "
	        "reads, from the raw per-query rows (log axis).",
	        &svg);
out:
	for (k = 0; k < ng; k++)
		free(v[k]);
	return rc;
}
