/*
 * sec_runs.c - the runs: what each measured and how, and the device tables.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"

/* Per-query mean read latency (read_ms / reads) of a run's raw rows, appended to *v. */
static int query_read_ms(ledger *l, const json_t *run, double **v, size_t *n, size_t *cap,
                         cs_err *e)
{
	const char *sha = rpt_str(json_object_get(rpt_pl(run), "raw"), "queries");
	json_t *rows = NULL, *row;
	size_t i;
	int rc;

	if (!sha)
		return 0;
	rc = ledger_get_raw(l, sha, &rows, e);
	if (rc)
		return rc;
	json_array_foreach(rows, i, row)
	{
		double reads = rpt_num(row, "reads"), ms = rpt_num(row, "read_ms");

		if (!(reads > 0) || !isfinite(ms))
			continue;
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 256;
			double *nv = realloc(*v, nc * sizeof(**v));

			if (!nv) {
				json_decref(rows);
				return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			}
			*v = nv;
			*cap = nc;
		}
		(*v)[(*n)++] = ms / reads;
	}
	json_decref(rows);
	return 0;
}

/* "lo to hi (median m, n runs)" of the finite values; "n/a" when none. */
static void range_text(rbuf *b, double *v, size_t n)
{
	char lo[REPORT_NUM_MAX], hi[REPORT_NUM_MAX], md[REPORT_NUM_MAX];
	size_t k = 0, i;

	for (i = 0; i < n; i++)
		if (isfinite(v[i]))
			v[k++] = v[i];
	if (!k) {
		rb_put(b, "n/a");
		return;
	}
	md[0] = '\0';
	report_fmt_num(rpt_quantile(v, k, 0.5), md);
	if (k == 1)
		rb_put(b, report_fmt_num(v[0], lo));
	else
		rb_printf(b, "%s to %s (median %s)", report_fmt_num(v[0], lo),
		          report_fmt_num(v[k - 1], hi), md);
}

typedef struct devgroup {
	const char *name;
	double *run_ms, *cold_s, *q_ms;
	size_t nrun, ncold, nq, capq;
} devgroup;

#define MAX_DEVICES 32
#define MAX_GROUPS 48

/* The runs of one group: its key and the indices of its runs in m->runs. */
typedef struct rgroup {
	char key[160];
	const json_t *first;
	size_t *idx, n;
} rgroup;

/* The median of metric over a group's runs (NaN when none has it). */
static double group_median(const model *m, const rgroup *g, const char *metric, double *lo,
                           double *hi)
{
	double *v = malloc((g->n ? g->n : 1) * sizeof(double)), md;
	size_t k = 0;

	*lo = *hi = NAN;
	if (!v)
		return NAN;
	for (size_t i = 0; i < g->n; i++) {
		double x = rpt_metric_num(json_array_get(m->runs, g->idx[i]), metric);

		if (isfinite(x))
			v[k++] = x;
	}
	md = rpt_quantile(v, k, 0.5); /* sorts v */
	if (k) {
		*lo = v[0];
		*hi = v[k - 1];
	}
	free(v);
	return md;
}

/* "median (lo to hi)", or the one value, or n/a. */
static void cell_spread(json_t *r, double md, double lo, double hi)
{
	char a[REPORT_NUM_MAX], b[REPORT_NUM_MAX], c[REPORT_NUM_MAX], s[3 * REPORT_NUM_MAX + 16];

	if (!isfinite(md)) {
		rpt_cell_s(r, "n/a");
		return;
	}
	if (lo == hi)
		snprintf(s, sizeof(s), "%s", report_fmt_num(md, a));
	else
		snprintf(s, sizeof(s), "%s (%s to %s)", report_fmt_num(md, a), report_fmt_num(lo, b),
		         report_fmt_num(hi, c));
	rpt_cell_s(r, s);
}

/*
 * The runs summarised by group (kind, how measured, device, cold or warm,
 * all or some partitions): a reader sees the shape of the evidence in a
 * screen; each run's row is folded below and every column is in runs.csv.
 */
static int group_summary(doc *d, const model *m, cs_err *e)
{
	static const char *const gcols[] = {"qps", "lat_p50_ms", "lat_p99_ms", "reads_per_query",
	                                    "recall_at_k"};
	rgroup g[MAX_GROUPS];
	size_t ng = 0, i, k, other = 0;
	json_t *run, *t, *r;
	int rc = 0;

	memset(g, 0, sizeof(g));
	json_array_foreach(m->runs, i, run)
	{
		const json_t *p = rpt_pl(run), *f = json_object_get(p, "features");
		char key[160], tw[RPT_TIME_WORDS_MAX];

		snprintf(key, sizeof(key), "%s|%s|%s|%s|%s", json_is_object(p) ? report_run_kind(p) : "n/a",
		         rpt_time_words(rpt_time_basis(run), tw), rpt_device(run),
		         json_is_true(json_object_get(f, "cold")) ? "cold" : "warm",
		         rpt_partial_search(run) ? "some partitions" : "all partitions");
		for (k = 0; k < ng && strcmp(g[k].key, key); k++)
			;
		if (k == ng) {
			if (ng == MAX_GROUPS) {
				other++;
				continue;
			}
			snprintf(g[ng].key, sizeof(g[ng].key), "%s", key);
			g[ng].first = run;
			g[ng].idx = calloc(json_array_size(m->runs), sizeof(size_t));
			if (!g[ng].idx) {
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
				goto out;
			}
			ng++;
		}
		g[k].idx[g[k].n++] = i;
	}
	t = rpt_table(d,
	              "The runs by group: kind, how the numbers were made, device, cold or warm, "
	              "and whether every partition was searched; medians with the range over the "
	              "group's runs. Recall of a run over some partitions is against the whole "
	              "set, low by construction.",
	              "Kind", "Measured by", "Device", "Cache", "Search", "Runs", "QPS",
	              "Latency p50 (ms)", "Latency p99 (ms)", "Reads / query", "Recall@k", NULL);
	for (k = 0; k < ng; k++) {
		char parts[5][64], *s = g[k].key;
		double lo, hi, md;

		for (size_t j = 0; j < 5; j++) {
			size_t len = strcspn(s, "|");

			snprintf(parts[j], sizeof(parts[j]), "%.*s", (int) len, s);
			s += len + (s[len] ? 1 : 0);
		}
		r = rpt_row(t);
		for (size_t j = 0; j < 5; j++)
			rpt_cell_s(r, parts[j]);
		rpt_cell_i(r, (int64_t) g[k].n);
		for (size_t j = 0; j < sizeof(gcols) / sizeof(gcols[0]); j++) {
			md = group_median(m, &g[k], gcols[j], &lo, &hi);
			cell_spread(r, md, lo, hi);
		}
	}
	if (other)
		rpt_p(d, "%zu more runs fall in groups past the first %d; each is in the folded table.",
		      other, MAX_GROUPS);
out:
	for (k = 0; k < ng; k++)
		free(g[k].idx);
	return rc;
}

/* Section 4: the runs, where the time goes, serial against fan-out, by device, and the figures. */
int rpt_sec_runs(doc *d, const model *m, ledger *l, cs_err *e)
{
	devgroup g[MAX_DEVICES];
	size_t ng = 0, i, k, nruns = json_array_size(m->runs);
	size_t partial = 0;
	json_t *t, *r, *run;
	int rc = 0, any_fan = 0;

	memset(g, 0, sizeof(g));
	rpt_h(d, 2, "Runs");
	if (!nruns) {
		rpt_p(d, "No run is on record yet.");
		return 0;
	}
	rpt_p(d,
	      "%zu run records. Metrics a device could not supply are shown as "
	      "n/a, never as zero. Names follow the measurement vocabulary: engine reads are "
	      "counted by "
	      "the block-I/O layer, device reads by the block device's counters; I/O / wall is "
	      "engine "
	      "reads times engine per-read latency over wall time; busy is the device's io_ticks "
	      "over "
	      "wall.",
	      nruns);
	rc = group_summary(d, m, e);
	if (rc)
		return rc;
	rpt_fold_open(d, "Every run, one row each (every column: coldstudy runs S --csv)");
	t = rpt_table(d,
	              "The runs: kind (design, sceptic, holdout or exploratory), how the numbers "
	              "were made, the spec file and the settings that differ between runs.",
	              "Run", "Kind", "Measured by", "Spec", "Hypotheses", "Index", "Mode",
	              "Fan-out x clients", "Device", "Cold", "Partitions", "Status", NULL);
	json_array_foreach(m->runs, i, run)
	{
		const json_t *p = rpt_pl(run), *f = json_object_get(p, "features");
		const char *spec = rpt_str(p, "spec_file"), *slash;
		char fc[64], a[REPORT_NUM_MAX], b2[REPORT_NUM_MAX];

		if (spec && (slash = strrchr(spec, '/')) && slash[1])
			spec = slash + 1;
		r = rpt_row(t);
		rpt_cell_s(r, rpt_str(p, "run_id"));
		rpt_cell_s(r, json_is_object(p) ? report_run_kind(p) : "n/a");
		{
			char tw[RPT_TIME_WORDS_MAX];

			rpt_cell_s(r, rpt_time_words(rpt_time_basis(run), tw));
		}
		{
			/* a replicate of a spec that registers several: which, and its group */
			const json_t *rp = json_object_get(p, "replicate");
			char sp[512];

			if (json_integer_value(json_object_get(rp, "of")) > 1)
				snprintf(sp, sizeof(sp), "%s (replicate %lld of %lld, group %s)",
				         spec ? spec : "n/a",
				         (long long) json_integer_value(json_object_get(rp, "index")),
				         (long long) json_integer_value(json_object_get(rp, "of")),
				         rpt_str(rp, "group") ?: "?");
			else
				snprintf(sp, sizeof(sp), "%s", spec ? spec : "n/a");
			rpt_cell_s(r, sp);
		}
		rpt_cell_j(r, json_object_get(p, "hypotheses"));
		rpt_cell_s(r, rpt_str(f, "kind") ?: rpt_str(json_object_get(p, "index"), "kind") ?: "n/a");
		rpt_cell_s(r, rpt_str(f, "mode") ?: "n/a");
		snprintf(fc, sizeof(fc), "%s x %s",
		         report_fmt_json(json_object_get(f, "fanout"), a),
		         report_fmt_json(json_object_get(f, "clients"), b2));
		rpt_cell_s(r, fc);
		rpt_cell_s(r, rpt_device(run));
		rpt_cell_j(r, json_object_get(f, "cold"));
		rpt_cell_j(r, json_object_get(f, "partitions"));
		rpt_cell_s(r, rpt_str(p, "status") ?: "complete");
	}

	t = rpt_table(d, "Where the time goes.", "Run", "Wall (s)", "Queries", "Engine reads",
	              "Device reads", "Device per read (ms)", "Engine per read (ms)", "I/O / wall",
	              "Busy", "Resident before", NULL);
	json_array_foreach(m->runs, i, run)
	{
		r = rpt_row(t);
		rpt_cell_s(r, rpt_str(rpt_pl(run), "run_id"));
		rpt_cell_j(r, rpt_metric(run, "wall_s"));
		rpt_cell_j(r, rpt_metric(run, "queries"));
		rpt_cell_j(r, rpt_metric(run, "engine_reads"));
		rpt_cell_j(r, rpt_metric(run, "device_reads"));
		rpt_cell_j(r, rpt_metric(run, "device_read_ms_mean"));
		rpt_cell_j(r, rpt_metric(run, "engine_read_ms_mean"));
		rpt_cell_j(r, rpt_metric(run, "io_over_wall"));
		rpt_cell_j(r, rpt_metric(run, "device_busy"));
		rpt_cell_j(r, rpt_metric(run, "resident_fraction_before"));
	}

	t = rpt_table(d, "Query latency, recall and memory.", "Run", "QPS", "Mean (ms)", "p50 (ms)",
	              "p99 (ms)", "Recall@k", "Reads / query", "Bytes / read", "In flight (median)",
	              "Peak memory (bytes)", NULL);
	json_array_foreach(m->runs, i, run)
	{
		r = rpt_row(t);
		rpt_cell_s(r, rpt_str(rpt_pl(run), "run_id"));
		rpt_cell_j(r, rpt_metric(run, "qps"));
		rpt_cell_j(r, rpt_metric(run, "lat_mean_ms"));
		rpt_cell_j(r, rpt_metric(run, "lat_p50_ms"));
		rpt_cell_j(r, rpt_metric(run, "lat_p99_ms"));
		if (rpt_partial_search(run) && json_is_number(rpt_metric(run, "recall_at_k"))) {
			char n[REPORT_NUM_MAX], c[REPORT_NUM_MAX + 8];

			snprintf(c, sizeof(c), "%s *",
			         report_fmt_json(rpt_metric(run, "recall_at_k"), n));
			rpt_cell_s(r, c);
			partial++;
		} else {
			rpt_cell_j(r, rpt_metric(run, "recall_at_k"));
		}
		rpt_cell_j(r, rpt_metric(run, "reads_per_query"));
		rpt_cell_j(r, rpt_metric(run, "bytes_per_read"));
		rpt_cell_j(r, rpt_metric(run, "inflight_median"));
		rpt_cell_j(r, rpt_metric(run, "mem_peak_bytes"));
	}
	if (partial)
		rpt_p(
		    d,
		    "* %zu run%s searched only the partitions named in the spec (the Partitions "
		    "column counts them). Recall@k is always measured against the whole data "
		    "set's ground truth, so such a run finds only the true neighbours that lie in "
		    "its partitions: with one partition of many, recall near 0 is the expected "
		    "value, not a failure of the search.",
		    partial, partial == 1 ? "" : "s");
	rpt_fold_close(d);

	json_array_foreach(m->runs, i, run)
	{
		const char *mode = rpt_str(json_object_get(rpt_pl(run), "features"), "mode");

		if (mode && strcmp(mode, "serial"))
			any_fan = 1;
	}
	if (any_fan) {
		rpt_p(d, "Serial against fan-out: reads per second (engine reads over wall) "
		         "compare runs "
		         "better than wall time when the query vectors or the hour differ (the "
		         "figure of reads per second against concurrency draws the cold runs).");
		rpt_fold_open(d, "Serial against fan-out, run by run");
		t = rpt_table(d, "Serial against fan-out.", "Run", "Mode", "Concurrency",
		              "Partitions", "Engine reads", "Wall (s)", "Reads/s", "Mean read (ms)",
		              NULL);
		json_array_foreach(m->runs, i, run)
		{
			const json_t *f = json_object_get(rpt_pl(run), "features");

			r = rpt_row(t);
			rpt_cell_s(r, rpt_str(rpt_pl(run), "run_id"));
			rpt_cell_s(r, rpt_str(f, "mode") ?: "n/a");
			rpt_cell_n(r, rpt_concurrency(run));
			rpt_cell_j(r, json_object_get(f, "partitions"));
			rpt_cell_j(r, rpt_metric(run, "engine_reads"));
			rpt_cell_j(r, rpt_metric(run, "wall_s"));
			rpt_cell_n(r, rpt_metric_num(run, "engine_reads") /
			                  rpt_metric_num(run, "wall_s"));
			rpt_cell_j(r, rpt_metric(run, "engine_read_ms_mean"));
		}
		rpt_fold_close(d);
	}

	/* by device: run-level per-read latency, cold query time, per-query read latency */
	json_array_foreach(m->runs, i, run)
	{
		const char *dev = rpt_device(run);
		devgroup *x = NULL;

		for (k = 0; k < ng; k++)
			if (!strcmp(g[k].name, dev))
				x = &g[k];
		if (!x) {
			if (ng == MAX_DEVICES)
				continue;
			x = &g[ng++];
			x->name = dev;
			x->run_ms = calloc(nruns, sizeof(double));
			x->cold_s = calloc(nruns, sizeof(double));
			if (!x->run_ms || !x->cold_s) {
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
				goto out;
			}
		}
		x->run_ms[x->nrun++] = rpt_metric_num(run, "engine_read_ms_mean");
		if (json_is_true(json_object_get(json_object_get(rpt_pl(run), "features"), "cold")))
			x->cold_s[x->ncold++] = rpt_metric_num(run, "lat_mean_ms") / 1000.0;
		rc = query_read_ms(l, run, &x->q_ms, &x->nq, &x->capq, e);
		if (rc)
			goto out;
	}
	t = rpt_table(d, "Per-read latency and cold query time by device.", "Device", "Runs",
	              "Per-read latency, run means (ms)", "Per-query read latency p50 (ms)",
	              "p99 (ms)", "Queries", "Cold query, mean per run (s)", NULL);
	for (k = 0; k < ng; k++) {
		rbuf b;
		double *tmp = malloc((g[k].nq ? g[k].nq : 1) * sizeof(double));

		if (!tmp) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
		if (g[k].nq)
			memcpy(tmp, g[k].q_ms, g[k].nq * sizeof(double));
		r = rpt_row(t);
		rpt_cell_s(r, g[k].name);
		rpt_cell_i(r, (int64_t) g[k].nrun);
		rb_init(&b, 0);
		range_text(&b, g[k].run_ms, g[k].nrun);
		rpt_cell_s(r, b.p);
		rb_free(&b);
		rpt_cell_n(r, rpt_quantile(tmp, g[k].nq, 0.5));
		rpt_cell_n(r, rpt_quantile(tmp, g[k].nq, 0.99));
		rpt_cell_i(r, (int64_t) g[k].nq);
		rb_init(&b, 0);
		range_text(&b, g[k].cold_s, g[k].ncold);
		rpt_cell_s(r, b.p);
		rb_free(&b);
		free(tmp);
	}

out:
	for (k = 0; k < ng; k++) {
		free(g[k].run_ms);
		free(g[k].cold_s);
		free(g[k].q_ms);
	}
	return rc;
}

/* Section 5: predictions, when they were frozen, and the latest score. */
