/*
 * results.c - the runs of a study as tables a person or a script can use:
 * `coldstudy runs S` (one row per run), `coldstudy run show S RID` (one
 * run, its per-query rows) and the summary `coldstudy run` prints.
 *
 * A row is flat, so that the CSV, the JSON lines and the JSON array carry
 * the same columns in the same order: the run's identity (id, kind,
 * status, spec file and hash, index), its settings (the features the
 * harness recorded, under their own names; the feature `queries`, the
 * query count asked for, is the column `query_count` so that it does not
 * shadow the metric `queries`), then every metric of the vocabulary
 * (hyp_metrics) in its order. A run_start without its run record (a run
 * stopped or killed) is a row too, status "not recorded", metrics empty:
 * one row per run the ledger knows of.
 *
 * Everything here reads the ledger; nothing is written.
 */
#include "report.h"
#include "report_int.h"

#include "holdout.h"
#include "hyp.h"
#include "ledger.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The settings columns: column name, the feature key it comes from. */
static const char *const setting_cols[][2] = {
	{"clients", "clients"},
	{"fanout", "fanout"},
	{"mode", "mode"},
	{"device", "device"},
	{"device_time", "device_time"},
	{"strategy", "strategy"},
	{"ef_search", "ef_search"},
	{"search_probe", "search_probe"},
	{"rescore_limit", "rescore_limit"},
	{"partitions", "partitions"},
	{"query_count", "queries"},
	{"cold", "cold"},
	{"cold_each_query", "cold_each_query"},
	{"buffers_bytes", "buffers_bytes"},
	{"prewarm", "prewarm"},
	{"load_readers", "load_readers"},
	{"bulkwrite", "bulkwrite"},
	{"client_cpus", "client_cpus"},
};

#define NSETTINGS (sizeof(setting_cols) / sizeof(setting_cols[0]))

/* Units of the vocabulary's metrics, for people (empty: a count or a ratio). */
static const char *const metric_units[][2] = {
	{"wall_s", "s"},          {"qps", "queries/s"},         {"lat_mean_ms", "ms"},
	{"lat_p50_ms", "ms"},     {"lat_p99_ms", "ms"},         {"engine_read_ms_mean", "ms"},
	{"lat_p90_ms", "ms"},     {"lat_p95_ms", "ms"},         {"lat_p999_ms", "ms"},
	{"bytes_per_read", "B"},  {"device_read_ms_mean", "ms"}, {"mem_peak_bytes", "B"},
	{"device_bytes_per_read", "B"},
};

const char *report_metric_unit(const char *metric)
{
	for (size_t i = 0; i < sizeof(metric_units) / sizeof(metric_units[0]); i++)
		if (!strcmp(metric_units[i][0], metric))
			return metric_units[i][1];
	return "";
}

/*
 * A metric across a run's repeats: the number of repeats where it is a
 * number, their mean, standard deviation (n - 1) and the 95% interval
 * (holdout_interval_of_mean: on the log scale when every repeat is
 * positive, so a QPS or latency interval never reaches 0 or below). 0 when
 * fewer than two.
 */
static size_t rep_stats(const json_t *reps, const char *metric, double *mean, double *sd,
			double *lo, double *hi)
{
	double sum = 0, ss = 0, v[1000];
	size_t n = 0, i;
	json_t *r;
	holdout_interval iv;

	json_array_foreach(reps, i, r) {
		const json_t *x = json_object_get(r, metric);

		if (json_is_number(x) && n < sizeof(v) / sizeof(v[0])) {
			v[n] = json_number_value(x);
			sum += v[n++];
		}
	}
	if (n < 2)
		return 0;
	*mean = sum / (double) n;
	for (i = 0; i < n; i++)
		ss += (v[i] - *mean) * (v[i] - *mean);
	*sd = sqrt(ss / (double) (n - 1));
	if (holdout_interval_of_mean(v, n, 0.95, &iv))
		return 0;
	*lo = iv.lo;
	*hi = iv.hi;
	return n;
}

const char *report_run_kind(const json_t *run)
{
	const json_t *k = json_object_get(run, "kind");
	const json_t *h = json_object_get(run, "hypotheses");

	if (!json_is_string(k)) /* the plan's class (docs/records.md), as the harness records it */
		k = json_object_get(run, "class");

	/* A kind the run record states (a plan's classification) wins. */
	if (json_is_string(k))
		return json_string_value(k);
	if (json_is_true(json_object_get(run, "holdout")))
		return "holdout";
	return json_is_array(h) && json_array_size(h) ? "design" : "exploratory";
}

/* Gathering: run records by id, and run_starts in order. */
typedef struct gather {
	json_t *starts; /* [run_start payload] */
	json_t *runs;   /* {run_id: run payload} */
	json_t *order;  /* run ids in ledger order (run_start first seen, else run) */
} gather;

static int gather_cb(const ledger_record *r, void *ud)
{
	gather *g = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	const char *id = json_string_value(json_object_get(p, "run_id"));

	if (!p || !id) {
		json_decref(p);
		return 0;
	}
	if (!strcmp(r->kind, "run_start")) {
		if (!json_object_get(g->starts, id))
			json_array_append_new(g->order, json_string(id));
		json_object_set(g->starts, id, p);
	} else {
		if (!json_object_get(g->starts, id) && !json_object_get(g->runs, id))
			json_array_append_new(g->order, json_string(id));
		json_object_set(g->runs, id, p);
	}
	json_decref(p);
	return 0;
}

static int gather_all(ledger *l, gather *g, cs_err *e)
{
	int rc;

	g->starts = json_object();
	g->runs = json_object();
	g->order = json_array();
	if (!g->starts || !g->runs || !g->order)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	/* Two passes keep each kind's order; ids are unique per study. */
	rc = ledger_foreach(l, "run_start", gather_cb, g, e);
	if (!rc)
		rc = ledger_foreach(l, "run", gather_cb, g, e);
	return rc ? (e->code ? e->code : CS_EXIT_INTERNAL) : 0;
}

static void gather_free(gather *g)
{
	json_decref(g->starts);
	json_decref(g->runs);
	json_decref(g->order);
}

static json_t *copy_or_null(const json_t *v)
{
	return v ? json_deep_copy(v) : json_null();
}

/*
 * The clock of a run's unqualified time columns: "virtual" when its reads
 * were replayed on a device model's clock (device_time "virtual"), else
 * "real" (the real disk, or a model's service times slept in real time).
 */
static const char *run_clock(const json_t *rec)
{
	const char *dt = json_string_value(json_object_get(rec, "device_time"));

	if (!dt)
		dt = json_string_value(json_object_get(json_object_get(rec, "features"), "device_time"));
	return dt && !strcmp(dt, "virtual") ? "virtual" : "real";
}

/*
 * What a run's recall is measured against: always the whole base (exact
 * truth over every row), so a run that searched only some partitions has
 * a recall low by construction: "whole_base_partial_search". null without
 * a recall.
 */
static json_t *recall_scope(const json_t *rec)
{
	if (!json_is_number(json_object_get(json_object_get(rec, "metrics"), "recall_at_k")))
		return json_null();
	return json_string(json_is_array(json_object_get(json_object_get(rec, "spec"), "partitions"))
				   ? "whole_base_partial_search"
				   : "whole_base");
}

/* A metric's name with the clock before its unit: lat_p50_ms -> lat_p50_real_ms, qps -> qps_real. */
static void clock_name(const char *m, const char *clock, char *out, size_t cap)
{
	size_t n = strlen(m);

	if (n > 3 && !strcmp(m + n - 3, "_ms"))
		snprintf(out, cap, "%.*s_%s_ms", (int) (n - 3), m, clock);
	else if (n > 2 && !strcmp(m + n - 2, "_s"))
		snprintf(out, cap, "%.*s_%s_s", (int) (n - 2), m, clock);
	else
		snprintf(out, cap, "%s_%s", m, clock);
}

/* The settings that are yes or no: a run without one said no (never an empty cell). */
static int bool_setting(const char *col)
{
	return !strcmp(col, "cold") || !strcmp(col, "cold_each_query");
}

/* The flat row of one run (rec: the run record, or NULL; start: its run_start). */
static json_t *run_row(const char *id, const json_t *rec, const json_t *start)
{
	const json_t *f = json_object_get(rec, "features");
	const json_t *m = json_object_get(rec, "metrics");
	const json_t *src = rec ? rec : start;
	json_t *row = json_object();
	const char *const *names = hyp_metrics();

	if (!row)
		return NULL;
	json_object_set_new(row, "run_id", json_string(id));
	json_object_set_new(row, "kind", json_string(report_run_kind(src)));
	json_object_set_new(row, "status",
			    rec ? copy_or_null(json_object_get(rec, "status"))
				: json_string("not recorded"));
	json_object_set_new(row, "started", copy_or_null(json_object_get(rec, "started")));
	json_object_set_new(row, "spec_file", copy_or_null(json_object_get(rec, "spec_file")));
	json_object_set_new(row, "spec_sha256", copy_or_null(json_object_get(src, "spec_sha256")));
	{
		/* which replicate of its spec (records before replicates: the one of one) */
		const json_t *rp = json_object_get(rec, "replicate");

		json_object_set_new(row, "replicate",
				    rec ? json_integer(json_is_object(rp) ? json_integer_value(json_object_get(rp, "index")) : 1)
					: json_null());
		json_object_set_new(row, "replicates",
				    rec ? json_integer(json_is_object(rp) ? json_integer_value(json_object_get(rp, "of")) : 1)
					: json_null());
		json_object_set_new(row, "replicate_group",
				    rec ? json_string(json_is_object(rp) && json_is_string(json_object_get(rp, "group"))
							      ? json_string_value(json_object_get(rp, "group"))
							      : id)
					: json_null());
	}
	json_object_set_new(row, "index_kind",
			    copy_or_null(json_object_get(json_object_get(rec, "index"), "kind")));
	json_object_set_new(row, "index_dir",
			    copy_or_null(json_object_get(json_object_get(rec, "index"), "dir")));
	json_object_set_new(row, "hypotheses", copy_or_null(json_object_get(rec, "hypotheses")));
	json_object_set_new(row, "tags", copy_or_null(json_object_get(rec, "tags")));
	json_object_set_new(row, "k",
			    copy_or_null(json_object_get(json_object_get(rec, "spec"), "k")));
	for (size_t i = 0; i < NSETTINGS; i++) {
		const json_t *v = json_object_get(f, setting_cols[i][1]);

		if (!v && !strcmp(setting_cols[i][0], "device_time"))
			v = json_object_get(rec, "device_time");
		/* a serial PostgreSQL run's partitions: what its plans scanned, known only after it ran */
		if (json_is_null(v) && !strcmp(setting_cols[i][0], "partitions") &&
		    json_is_integer(json_object_get(json_object_get(rec, "postgres"), "partitions_read")))
			v = json_object_get(json_object_get(rec, "postgres"), "partitions_read");
		if (rec && bool_setting(setting_cols[i][0]))
			json_object_set_new(row, setting_cols[i][0], json_boolean(json_is_true(v)));
		else
			json_object_set_new(row, setting_cols[i][0], copy_or_null(v));
	}
	json_object_set_new(row, "clock", rec ? json_string(run_clock(rec)) : json_null());
	{
		const json_t *sp = json_object_get(rec, "spec");
		const json_t *rp = json_object_get(sp, "repeat"), *wq = json_object_get(sp, "warmup_queries");
		const json_t *nq = json_object_get(m, "queries");

		json_object_set_new(row, "repeat", rec ? json_integer(json_is_integer(rp) ? json_integer_value(rp) : 1)
						      : json_null());
		json_object_set_new(row, "warmup_queries",
				    rec ? json_integer(json_is_integer(wq) ? json_integer_value(wq) : 0)
					: json_null());
		/* The latencies each percentile was taken over (per repeat), and whether too few. */
		json_object_set_new(row, "lat_samples", copy_or_null(nq));
		json_object_set_new(row, "lat_p99_indicative",
				    json_is_number(nq) ? json_boolean(json_number_value(nq) < REPORT_PCT_MIN_SAMPLES)
						       : json_null());
	}
	for (size_t i = 0; names[i]; i++)
		json_object_set_new(row, names[i], copy_or_null(json_object_get(m, names[i])));
	json_object_set_new(row, "recall_scope", rec ? recall_scope(rec) : json_null());
	/* a virtual-time run's real-disk figures beside them, each named by its clock */
	{
		const json_t *mr = json_object_get(rec, "metrics_real");

		for (size_t i = 0; mr && names[i]; i++) {
			const json_t *v = json_object_get(mr, names[i]);
			char col[96];

			if (!v || !strcmp(names[i], "results_digest") || !strcmp(names[i], "queries"))
				continue;
			clock_name(names[i], "real", col, sizeof(col));
			json_object_set_new(row, col, json_deep_copy(v));
		}
	}
	/* Across repeats: each metric's standard deviation and the 95% interval of its mean. */
	for (size_t i = 0; json_array_size(json_object_get(rec, "repeats")) > 1 && names[i]; i++) {
		double mean, sd, lo, hi;
		char col[64];
		int ok = rep_stats(json_object_get(rec, "repeats"), names[i], &mean, &sd, &lo, &hi) > 0;

		snprintf(col, sizeof(col), "%s_sd", names[i]);
		json_object_set_new(row, col, ok ? json_real(sd) : json_null());
		snprintf(col, sizeof(col), "%s_ci95_lo", names[i]);
		json_object_set_new(row, col, ok ? json_real(lo) : json_null());
		snprintf(col, sizeof(col), "%s_ci95_hi", names[i]);
		json_object_set_new(row, col, ok ? json_real(hi) : json_null());
	}
	/* Diagnostics a run records beside the vocabulary (inflight_max, fanout_via, ...). */
	{
		const char *k;
		json_t *v;

		json_object_foreach((json_t *) m, k, v)
			if (!json_object_get(row, k))
				json_object_set_new(row, k, json_deep_copy(v));
	}
	return row;
}

int report_runs(ledger *l, json_t **rows, cs_err *e)
{
	gather g = {0};
	json_t *out = NULL, *v;
	size_t i;
	int rc;

	*rows = NULL;
	rc = gather_all(l, &g, e);
	if (rc)
		goto out;
	out = json_array();
	if (!out) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	json_array_foreach(g.order, i, v) {
		const char *id = json_string_value(v);
		json_t *row = run_row(id, json_object_get(g.runs, id), json_object_get(g.starts, id));

		if (!row || json_array_append_new(out, row)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
	}
	*rows = out;
	out = NULL;
	rc = 0;
out:
	json_decref(out);
	gather_free(&g);
	return rc;
}

int report_run_get(ledger *l, const char *run_id, json_t **rec, cs_err *e)
{
	gather g = {0};
	json_t *r;
	int rc;

	*rec = NULL;
	rc = gather_all(l, &g, e);
	if (rc)
		goto out;
	r = json_object_get(g.runs, run_id);
	if (!r) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT,
				json_object_get(g.starts, run_id)
					? "%s: the run started but has no run record (stopped or killed; "
					  "see the deviations in 'coldstudy log export')"
					: "%s: no such run in this study (coldstudy runs lists them)",
				run_id);
		goto out;
	}
	*rec = json_incref(r);
	rc = 0;
out:
	gather_free(&g);
	return rc;
}

/* ---- writers ---- */

/* One CSV field (RFC 4180): quoted when it holds a comma, quote or line break. */
static void csv_text(FILE *out, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

/* A JSON value as a CSV field: null empty, arrays joined by spaces, objects as JSON. */
static void csv_value(FILE *out, const json_t *v)
{
	char num[CS_NUM_MAX];

	if (!v || json_is_null(v))
		return;
	if (json_is_integer(v)) {
		fprintf(out, "%lld", (long long) json_integer_value(v));
	} else if (json_is_real(v)) {
		/* Exact and plain: 40, not 4e+01. */
		fputs(cs_num_text(json_real_value(v), num), out);
	} else if (json_is_boolean(v)) {
		fputs(json_is_true(v) ? "true" : "false", out);
	} else if (json_is_string(v)) {
		csv_text(out, json_string_value(v));
	} else if (json_is_array(v)) {
		size_t i, n = json_array_size(v);
		char *s;
		size_t len;
		FILE *m = open_memstream(&s, &len);

		if (!m)
			return;
		for (i = 0; i < n; i++) {
			if (i)
				fputc(' ', m);
			if (json_is_string(json_array_get(v, i)))
				fputs(json_string_value(json_array_get(v, i)), m);
			else
				csv_value(m, json_array_get(v, i));
		}
		fclose(m);
		csv_text(out, s);
		free(s);
	} else {
		char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);

		if (s)
			csv_text(out, s);
		free(s);
	}
}

/* The column names of rows: the first row's keys in order, then any others the later rows add. */
static json_t *columns_of(const json_t *rows)
{
	json_t *cols = json_array(), *seen = json_object(), *row, *v;
	const char *k;
	size_t i;

	if (!cols || !seen) {
		json_decref(cols);
		json_decref(seen);
		return NULL;
	}
	json_array_foreach(rows, i, row) {
		json_object_foreach(row, k, v) {
			if (!json_object_get(seen, k)) {
				json_object_set_new(seen, k, json_true());
				json_array_append_new(cols, json_string(k));
			}
		}
	}
	json_decref(seen);
	return cols;
}

static int write_csv(const json_t *rows, FILE *out, cs_err *e)
{
	json_t *cols = columns_of(rows), *row, *c;
	size_t i, j;

	if (!cols)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	json_array_foreach(cols, j, c) {
		if (j)
			fputc(',', out);
		csv_text(out, json_string_value(c));
	}
	fputc('\n', out);
	json_array_foreach(rows, i, row) {
		json_array_foreach(cols, j, c) {
			if (j)
				fputc(',', out);
			csv_value(out, json_object_get(row, json_string_value(c)));
		}
		fputc('\n', out);
	}
	json_decref(cols);
	return 0;
}

static int write_json(const json_t *v, int lines, FILE *out, cs_err *e)
{
	if (lines) {
		json_t *row;
		size_t i;

		json_array_foreach(v, i, row) {
			if (json_dumpf(row, out, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)))
				return cs_err_set(e, CS_EXIT_INTERNAL, "cannot write JSON");
			fputc('\n', out);
		}
		return 0;
	}
	if (json_dumpf(v, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)))
		return cs_err_set(e, CS_EXIT_INTERNAL, "cannot write JSON");
	fputc('\n', out);
	return 0;
}

/* A value for a person: numbers as report_fmt_num, null "-", lists joined. */
static const char *cell(const json_t *v, char out[REPORT_NUM_MAX])
{
	if (!v || json_is_null(v)) {
		snprintf(out, REPORT_NUM_MAX, "-");
	} else if (json_is_array(v)) {
		size_t i, o = 0;
		json_t *x;

		out[0] = '\0';
		json_array_foreach(v, i, x) {
			char one[REPORT_NUM_MAX];
			int n = snprintf(out + o, REPORT_NUM_MAX - o, "%s%s", i ? "," : "",
					 json_is_string(x) ? json_string_value(x)
							   : report_fmt_json(x, one));

			if (n < 0 || (size_t) n >= REPORT_NUM_MAX - o)
				break;
			o += (size_t) n;
		}
		if (!i)
			snprintf(out, REPORT_NUM_MAX, "-");
	} else {
		report_fmt_json(v, out);
	}
	return out;
}

/* The columns a person sees in `coldstudy runs S` (the CSV has all). */
static const char *const table_cols[] = {
	"run_id", "kind", "status", "replicate", "replicate_group", "clients", "mode", "device", "cold", "query_count",
	"wall_s", "qps", "lat_p50_ms", "lat_p99_ms", "recall_at_k", "reads_per_query",
	NULL,
};

static const char *const table_heads[] = {
	"run", "kind", "status", "rep", "group", "clients", "mode", "device", "cold", "queries",
	"wall s", "qps", "p50 ms", "p99 ms", "recall", "reads/q",
	NULL,
};

static const char table_left[] = {1, 1, 1, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0};

static void write_table(const json_t *rows, FILE *out)
{
	size_t ncol = 0, i, j, width[32] = {0};
	char buf[REPORT_NUM_MAX];
	json_t *row;

	while (table_cols[ncol])
		ncol++;
	for (j = 0; j < ncol; j++)
		width[j] = strlen(table_heads[j]);
	json_array_foreach(rows, i, row)
		for (j = 0; j < ncol; j++) {
			size_t w = strlen(cell(json_object_get(row, table_cols[j]), buf));

			if (w > width[j])
				width[j] = w;
		}
	/* Text columns flush left, numbers flush right. */
	for (j = 0; j < ncol; j++)
		fprintf(out, table_left[j] ? "%-*s%s" : "%*s%s", (int) width[j], table_heads[j],
			j + 1 < ncol ? "  " : "\n");
	json_array_foreach(rows, i, row)
		for (j = 0; j < ncol; j++)
			fprintf(out, table_left[j] ? "%-*s%s" : "%*s%s", (int) width[j],
				cell(json_object_get(row, table_cols[j]), buf), j + 1 < ncol ? "  " : "\n");
	if (!json_array_size(rows))
		fprintf(out, "(no runs yet)\n");
}

int report_rows_write(const json_t *rows, int format, FILE *out, cs_err *e)
{
	switch (format) {
	case REPORT_FMT_CSV: return write_csv(rows, out, e);
	case REPORT_FMT_JSONL: return write_json(rows, 1, out, e);
	case REPORT_FMT_JSON: return write_json(rows, 0, out, e);
	default: write_table(rows, out); return 0;
	}
}

/* ---- one run ---- */

static const char *str_or(const json_t *o, const char *k, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : dflt;
}

static double num_or_nan(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* "12.3 ms" or "n/a". */
static const char *with_unit(double x, const char *unit, char out[REPORT_NUM_MAX + 16])
{
	char n[REPORT_NUM_MAX];

	if (!isfinite(x))
		snprintf(out, REPORT_NUM_MAX + 16, "n/a");
	else
		snprintf(out, REPORT_NUM_MAX + 16, "%s%s%s", report_fmt_num(x, n), *unit ? " " : "",
			 unit);
	return out;
}

/* Bytes for a person: "134 MiB". */
static const char *bytes_text(double x, char out[REPORT_NUM_MAX + 16])
{
	static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	size_t i = 0;

	if (!isfinite(x))
		return with_unit(x, "", out);
	while (x >= 1024 && i + 1 < sizeof(u) / sizeof(u[0])) {
		x /= 1024;
		i++;
	}
	return with_unit(i ? round(x * 10) / 10 : x, u[i], out);
}

void report_run_summary(const json_t *rec, FILE *out)
{
	const json_t *m = json_object_get(rec, "metrics"), *f = json_object_get(rec, "features");
	const json_t *mr = json_object_get(rec, "metrics_real");
	const char *dt = str_or(rec, "device_time", NULL);
	char a[REPORT_NUM_MAX + 16], b[REPORT_NUM_MAX + 16], c[REPORT_NUM_MAX + 16];
	char d[REPORT_NUM_MAX + 16];
	double nq = num_or_nan(m, "queries");

	fprintf(out, "  %s run, %s: %s index, %s client%s, %s, %s%s%s\n", report_run_kind(rec),
		str_or(rec, "status", "?"), str_or(json_object_get(rec, "index"), "kind", "?"),
		with_unit(num_or_nan(f, "clients"), "", a),
		num_or_nan(f, "clients") == 1 ? "" : "s", str_or(f, "mode", "?"),
		json_is_true(json_object_get(f, "cold")) ? "cold" : "warm",
		json_is_string(json_object_get(f, "device")) ? ", device " : "",
		str_or(f, "device", ""));
	if (dt && !strcmp(dt, "virtual"))
		fprintf(out, "  times are the device model's (virtual time); the real disk's are "
			     "beside them in brackets\n");
	fprintf(out, "  %s queries in %s: %s", with_unit(nq, "", a),
		with_unit(num_or_nan(m, "wall_s"), "s", b), with_unit(num_or_nan(m, "qps"), "queries/s", c));
	if (mr)
		fprintf(out, " [real %s]", with_unit(num_or_nan(mr, "qps"), "queries/s", d));
	fputc('\n', out);
	fprintf(out, "  latency mean %s, p50 %s, p99 %s", with_unit(num_or_nan(m, "lat_mean_ms"), "ms", a),
		with_unit(num_or_nan(m, "lat_p50_ms"), "ms", b),
		with_unit(num_or_nan(m, "lat_p99_ms"), "ms", c));
	if (mr)
		fprintf(out, " [real p50 %s]", with_unit(num_or_nan(mr, "lat_p50_ms"), "ms", d));
	if (isfinite(nq))
		fprintf(out, "  (%s samples%s)", with_unit(nq, "", d),
			nq < REPORT_PCT_MIN_SAMPLES ? ", under 100: p99 is indicative only" : "");
	fputc('\n', out);
	{
		static const char *const show[][2] = {{"wall_s", "s"}, {"qps", "queries/s"},
						     {"lat_p99_ms", "ms"}, {"reads_per_query", ""}};
		const json_t *reps = json_object_get(rec, "repeats");
		double mean, sd, lo, hi;

		if (json_array_size(reps) > 1) {
			fprintf(out, "  means of %zu repeats; sd and 95%% interval of the mean:\n",
				json_array_size(reps));
			for (size_t i = 0; i < sizeof(show) / sizeof(show[0]); i++)
				if (rep_stats(reps, show[i][0], &mean, &sd, &lo, &hi))
					fprintf(out, "    %-16s %s, sd %s, [%s, %s]\n", show[i][0],
						with_unit(mean, show[i][1], a), with_unit(sd, "", b),
						with_unit(lo, "", c), with_unit(hi, "", d));
		}
	}
	fprintf(out, "  recall@k %s, %s reads a query of %s, %s a read\n",
		with_unit(num_or_nan(m, "recall_at_k"), "", a),
		with_unit(num_or_nan(m, "reads_per_query"), "", b),
		bytes_text(num_or_nan(m, "bytes_per_read"), c),
		with_unit(num_or_nan(m, "engine_read_ms_mean"), "ms", d));
	fprintf(out, "  device reads %s, device busy %s, io/wall %s, in flight (median) %s\n",
		with_unit(num_or_nan(m, "device_reads"), "", a),
		with_unit(num_or_nan(m, "device_busy"), "", b),
		with_unit(num_or_nan(m, "io_over_wall"), "", c),
		with_unit(num_or_nan(m, "inflight_median"), "", d));
	fprintf(out, "  resident before %s, memory peak %s\n",
		with_unit(num_or_nan(m, "resident_fraction_before"), "", a),
		bytes_text(num_or_nan(m, "mem_peak_bytes"), b));
}

/* The per-query rows of a run (new reference). */
static int query_rows(ledger *l, const json_t *rec, json_t **rows, cs_err *e)
{
	const char *sha = str_or(json_object_get(rec, "raw"), "queries", NULL);

	*rows = NULL;
	if (!sha) {
		*rows = json_array();
		return *rows ? 0 : cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	}
	return ledger_get_raw(l, sha, rows, e);
}

/*
 * A stored per-query column's exported name: every time named by its
 * clock. The stored rows keep their names (the ledger's bytes are hashed);
 * "_ms" columns are in the run's clock, "_ms_real" ones on the real disk,
 * and t_ms (when a query started, since the load began) is always real.
 */
static const char *query_col(const char *k, const char *clock, char *buf, size_t cap)
{
	static const char *const same[] = {"t_ms", "setup_ms", NULL};
	size_t n = strlen(k);

	for (size_t i = 0; same[i]; i++)
		if (!strcmp(k, same[i]))
			return clock_name(k, "real", buf, cap), buf;
	if (n > 8 && !strcmp(k + n - 8, "_ms_real")) {
		snprintf(buf, cap, "%.*s_real_ms", (int) (n - 8), k);
		return buf;
	}
	if (n > 3 && !strcmp(k + n - 3, "_ms"))
		return clock_name(k, clock, buf, cap), buf;
	return k;
}

/*
 * The per-query rows for export: a fixed leading column order (raw rows
 * are stored with sorted keys), each time column named by its clock
 * (query_col), and recall_scope beside recall.
 */
static json_t *ordered_rows(const json_t *rows, const json_t *rec)
{
	static const char *const first[] = {"q", "client", "t_ms", "lat_ms", "read_ms",
					    "reads", "bytes", "recall", "n", NULL};
	const char *clock = run_clock(rec);
	json_t *out = json_array(), *row, *v, *scope = recall_scope(rec);
	const char *k;
	size_t i;

	if (!out || !scope) {
		json_decref(out);
		json_decref(scope);
		return NULL;
	}
	json_array_foreach(rows, i, row) {
		json_t *o = json_object();
		char buf[96];

		for (size_t j = 0; o && first[j]; j++)
			if ((v = json_object_get(row, first[j]))) {
				json_object_set(o, query_col(first[j], clock, buf, sizeof(buf)), v);
				if (!strcmp(first[j], "recall"))
					json_object_set(o, "recall_scope",
							json_is_number(v) ? scope : json_null());
			}
		json_object_foreach(row, k, v) {
			const char *name = query_col(k, clock, buf, sizeof(buf));

			if (o && !json_object_get(o, name))
				json_object_set(o, name, v);
		}
		if (!o || json_array_append_new(out, o)) {
			json_decref(out);
			json_decref(scope);
			return NULL;
		}
	}
	json_decref(scope);
	return out;
}

static void write_run_text(const json_t *rec, FILE *out)
{
	const json_t *m = json_object_get(rec, "metrics"), *mr = json_object_get(rec, "metrics_real");
	const json_t *f = json_object_get(rec, "features"), *v;
	const char *const *names = hyp_metrics();
	char a[REPORT_NUM_MAX], b[REPORT_NUM_MAX];
	const json_t *reps;
	const char *k;

	fprintf(out, "%s\n", str_or(rec, "run_id", "?"));
	report_run_summary(rec, out);
	fprintf(out, "\nspec      %s\n", str_or(rec, "spec_file", "(not recorded)"));
	fprintf(out, "sha256    %s\n", str_or(rec, "spec_sha256", "?"));
	if (json_is_object(json_object_get(rec, "replicate"))) {
		const json_t *rp = json_object_get(rec, "replicate");

		fprintf(out, "replicate %lld of %lld (group %s)\n",
			(long long) json_integer_value(json_object_get(rp, "index")),
			(long long) json_integer_value(json_object_get(rp, "of")),
			str_or(rp, "group", "?"));
	}
	fprintf(out, "index     %s (%s)\n", str_or(json_object_get(rec, "index"), "dir", "?"),
		str_or(json_object_get(rec, "index"), "kind", "?"));
	fprintf(out, "started   %s\nended     %s\n", str_or(rec, "started", "?"),
		str_or(rec, "ended", "?"));
	fprintf(out, "\nsettings\n");
	json_object_foreach((json_t *) f, k, v)
		fprintf(out, "  %-24s %s\n", k, cell(v, a));
	reps = json_object_get(rec, "repeats");
	fprintf(out, "\nmetrics%s%s\n", mr ? "                                     (real disk)" : "",
		json_array_size(reps) > 1 ? "  sd, 95% interval of the mean over the repeats" : "");
	for (size_t i = 0; names[i]; i++) {
		const char *u = report_metric_unit(names[i]);
		const json_t *mv = json_object_get(m, names[i]);
		double mean, sd, lo, hi;

		fprintf(out, "  %-24s %14s %-9s", names[i], cell(mv, a), json_is_number(mv) ? u : "");
		if (mr)
			fprintf(out, " %14s", cell(json_object_get(mr, names[i]), b));
		if (rep_stats(reps, names[i], &mean, &sd, &lo, &hi)) {
			char c1[REPORT_NUM_MAX], c2[REPORT_NUM_MAX];

			fprintf(out, "  sd %s, [%s, %s]", report_fmt_num(sd, b), report_fmt_num(lo, c1),
				report_fmt_num(hi, c2));
		}
		fputc('\n', out);
	}
}

static void write_queries_text(const json_t *rows, const char *clock, FILE *out)
{
	static const char *const cols[] = {"q", "client", "t_ms", "lat_ms", "read_ms", "reads",
					   "bytes", "recall", "n", NULL};
	char a[REPORT_NUM_MAX], buf[96];
	json_t *row;
	size_t i;

	for (size_t j = 0; cols[j]; j++)
		fprintf(out, "%*s", j == 3 || j == 4 ? 16 : 12, query_col(cols[j], clock, buf, sizeof(buf)));
	fputc('\n', out);
	json_array_foreach(rows, i, row) {
		for (size_t j = 0; cols[j]; j++)
			fprintf(out, "%*s", j == 3 || j == 4 ? 16 : 12,
				cell(json_object_get(row, query_col(cols[j], clock, buf, sizeof(buf))), a));
		fputc('\n', out);
	}
}

int report_run_show(ledger *l, const char *run_id, int queries, int format, FILE *out, cs_err *e)
{
	json_t *rec = NULL, *rows = NULL, *ord = NULL;
	int rc;

	rc = report_run_get(l, run_id, &rec, e);
	if (rc)
		goto out;
	if (!queries) {
		if (format == REPORT_FMT_JSON || format == REPORT_FMT_JSONL) {
			rc = json_dumpf(rec, out, format == REPORT_FMT_JSON ? JSON_INDENT(2) | JSON_SORT_KEYS
									    : JSON_COMPACT | JSON_SORT_KEYS)
				     ? cs_err_set(e, CS_EXIT_INTERNAL, "cannot write JSON")
				     : 0;
			fputc('\n', out);
		} else if (format == REPORT_FMT_CSV) {
			json_t *one = json_array(), *r = run_row(run_id, rec, NULL);

			if (!one || !r || json_array_append_new(one, r)) {
				json_decref(one);
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
				goto out;
			}
			rc = write_csv(one, out, e);
			json_decref(one);
		} else {
			write_run_text(rec, out);
		}
		goto out;
	}
	rc = query_rows(l, rec, &rows, e);
	if (rc)
		goto out;
	ord = ordered_rows(rows, rec);
	if (!ord) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	if (format == REPORT_FMT_TEXT)
		write_queries_text(ord, run_clock(rec), out);
	else
		rc = report_rows_write(ord, format, out, e);
out:
	json_decref(ord);
	json_decref(rows);
	json_decref(rec);
	return rc;
}
