/*
 * plot_series.c - the samplers' series over each run's time (issue 16,
 * finding 7; the blog seed's figures): the block device's reads per second
 * (iostat r/s, from /sys/block every second) and memory (the cgroup's usage
 * where the run had one, else the process's RSS, every 5 s), one line per
 * run that has at least three samples (a line of fewer carries no shape).
 * At most MAX_RUNS runs are drawn; the caption says when more had series.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RUNS 8

/* One figure of series name's column col (scale divides it) against t_s. */
static int series_fig(doc *d, const model *m, ledger *l, const char *name, const char *col,
                      const char *alt, double scale, const char *file, const char *title,
                      const char *ylabel, const char *caption, cs_err *e)
{
	svg_point *pts = NULL;
	const char *names[MAX_RUNS];
	size_t n = 0, cap = 0, ng = 0, more = 0, short_runs = 0, i, j;
	json_t *run, *row;
	rbuf svg;
	int rc = 0;

	json_array_foreach(m->runs, i, run)
	{
		json_t *rows = rpt_raw_rows(l, run, name);
		size_t good = 0;

		json_array_foreach(rows, j, row) good +=
		    isfinite(rpt_num(row, "t_s")) &&
		    (isfinite(rpt_num(row, col)) || (alt && isfinite(rpt_num(row, alt))));
		if (good < 3) {
			short_runs += good > 0;
			json_decref(rows);
			continue;
		}
		if (ng == MAX_RUNS) {
			more++;
			json_decref(rows);
			continue;
		}
		names[ng] = rpt_str(rpt_pl(run), "run_id") ?: "?";
		json_array_foreach(rows, j, row)
		{
			double t = rpt_num(row, "t_s"), y = rpt_num(row, col);

			if (!isfinite(y) && alt)
				y = rpt_num(row, alt);
			if (!isfinite(t) || !isfinite(y))
				continue;
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 256;
				svg_point *np = realloc(pts, nc * sizeof(*np));

				if (!np) {
					json_decref(rows);
					rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
					goto out;
				}
				pts = np;
				cap = nc;
			}
			pts[n++] = (svg_point){t, y / scale, NAN, NAN, (int) ng, NULL, 0};
		}
		ng++;
		json_decref(rows);
	}
	if (!ng) {
		rpt_p(d,
		      "%s: no run on record has this sampler's series with three samples or more "
		      "(%zu runs have one or two: too few to draw a line).",
		      title, short_runs);
		goto out;
	}
	rb_init(&svg, 0);
	svg_scatter(&svg, title, "time since the run started (s)", ylabel, pts, n, 0, 0, 0, 1,
	            names, ng);
	{
		char c[512];

		if (more)
			snprintf(c, sizeof(c),
			         "%s The first %zu runs with a series are drawn; %zu more "
			         "have one (coldstudy run show S RID --series).",
			         caption, ng, more);
		else
			snprintf(c, sizeof(c), "%s", caption);
		rpt_fig(d, file, c, &svg);
	}
out:
	free(pts);
	return rc;
}

int rpt_plot_series(doc *d, const model *m, ledger *l, cs_err *e)
{
	int rc = series_fig(d, m, l, "iostat", "r_s", NULL, 1, "series-device-reads.svg",
	                    "Device reads per second over time", "device reads / s (iostat r/s)",
	                    "The block device's reads per second during each run, sampled every "
	                    "second from its /sys/block counters (iostat -x's r/s), one line per "
	                    "run.",
	                    e);

	if (!rc)
		rc = series_fig(
		    d, m, l, "memory", "cgroup_bytes", "rss_bytes", 1048576.0, "series-memory.svg",
		    "Memory over time", "memory (MiB)",
		    "Memory during each run, sampled every 5 s: the memory cgroup's usage "
		    "where the run had one, else the process's resident set, one line per "
		    "run.",
		    e);
	return rc;
}
