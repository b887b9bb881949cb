/*
 * sec_figures.c - the figures that answer the seeds' questions, one
 * plot_*.c each: does fan-out buy reads per second (cold runs, log axes),
 * does QPS follow clients, what the latency distribution looks like,
 * what recall costs in QPS, per-read latency by device, and the samplers'
 * device reads/s and memory over time. A plot no run answers is left out
 * and said so.
 */
#include "report_doc.h"

int rpt_sec_figures(doc *d, const model *m, ledger *l, cs_err *e)
{
	size_t before = json_array_size(d->fig_order);
	int rc;

	rpt_h(d, 2, "Figures");
	if (!json_array_size(m->runs)) {
		rpt_p(d, "No run is on record yet: nothing to plot.");
		return 0;
	}
	if ((rc = rpt_plot_concurrency(d, m, e)) || (rc = rpt_plot_clients(d, m, e)) ||
	    (rc = rpt_plot_latency_cdf(d, m, l, e)) || (rc = rpt_plot_recall(d, m, e)) ||
	    (rc = rpt_plot_read_latency(d, m, l, e)) || (rc = rpt_plot_series(d, m, l, e)))
		return rc;
	if (json_array_size(d->fig_order) == before)
		rpt_p(d, "No run on record answers any of these plots.");
	return 0;
}
