/*
 * plot_recall.c - recall@k against queries per second, one point per run:
 * what recall costs in throughput. Runs that searched only some partitions
 * are their own group: their recall is against the whole set's ground
 * truth, so it is low by construction (sec_runs.c says so beside the
 * table). A trade-off needs two recall values among the runs over every
 * partition; with fewer the figure is a sentence saying what the runs found.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int rpt_plot_recall(doc *d, const model *m, cs_err *e)
{
	static const char *const names[] = {"all partitions searched",
	                                    "some partitions (whole-set recall)"};
	size_t n = 0, i, nruns = json_array_size(m->runs);
	svg_point *pts = calloc(nruns ? nruns : 1, sizeof(*pts));
	json_t *run;
	rbuf svg;

	if (!pts)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	json_array_foreach(m->runs, i, run)
	{
		double qps = rpt_metric_num(run, "qps"), rec = rpt_metric_num(run, "recall_at_k");

		if (!(qps > 0) || !isfinite(qps) || !isfinite(rec))
			continue;
		pts[n++] = (svg_point){
		    qps, rec, NAN, NAN, rpt_partial_search(run), rpt_str(rpt_pl(run), "run_id"), 0};
	}
	if (!n) {
		rpt_p(d, "Recall against QPS: no run on record measured recall.");
		free(pts);
		return 0;
	}
	{
		size_t nfull = 0, npart = 0, nrec = 0;
		double r0 = NAN, qlo = INFINITY, qhi = 0;

		for (i = 0; i < n; i++) {
			if (pts[i].group) {
				npart++;
				continue;
			}
			if (!nfull++)
				r0 = pts[i].y;
			else if (pts[i].y != r0)
				nrec = 2;
			qlo = fmin(qlo, pts[i].x);
			qhi = fmax(qhi, pts[i].x);
		}
		if (nrec < 2) {
			char a[REPORT_NUM_MAX], b[REPORT_NUM_MAX], c[REPORT_NUM_MAX];

			if (nfull)
				rpt_p(d,
				      "Recall against QPS: the %zu runs over every partition all found "
				      "recall@k %s (QPS %s to %s), so they draw no trade-off%s.",
				      nfull, report_fmt_num(r0, a), report_fmt_num(qlo, b),
				      report_fmt_num(qhi, c),
				      npart ? "; the runs over some partitions have whole-set recall, "
				              "low by construction, and are not a recall figure"
				            : "");
			else
				rpt_p(d,
				      "Recall against QPS: only runs over some partitions measured "
				      "recall, and theirs is against the whole set, low by construction: "
				      "not a recall figure.");
			free(pts);
			return 0;
		}
	}
	rb_init(&svg, 0);
	svg_scatter(&svg, "Recall against queries per second", "queries / s, log scale", "recall@k",
	            pts, n, 1, 0, 0, 0, names, 2);
	free(pts);
	rpt_fig(d, "recall-qps.svg",
	        "What does recall cost in throughput? Recall@k against queries per second, one "
	        "point per run (log QPS axis). A run over some partitions only is measured "
	        "against the whole set's ground truth, so its recall is low by construction.",
	        &svg);
	return 0;
}
