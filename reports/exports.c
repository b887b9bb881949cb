/*
 * exports.c - the JSON Schema of each table coldstudy exports:
 *
 *   runs     `coldstudy runs S --csv|--jsonl|--json`, one row a run
 *   queries  `coldstudy run show S RID --queries ...`, one row a query
 *   series   `coldstudy run show S RID --series ...`, one row a sample
 *
 * One table per export lists every column: its JSON types and, where the
 * values are a closed set, the set. The vocabulary's metrics (hyp_metrics)
 * come in with their companions: METRIC_sd / _ci95_lo / _ci95_hi across
 * repeats and a virtual-time run's real-disk figures named by their clock
 * (results.c's clock_name). A row may carry no column the schema does not
 * name (additionalProperties false): a new column is added here and in
 * docs/records.md ("Exports"), which tests/report/exports.sh holds to
 * this table. In CSV a null is an empty cell, a list its items joined by
 * spaces, a boolean true or false.
 *
 * report_front_svg draws `index sweep`'s recall/QPS front with the
 * report's own scatter plot.
 */
#include "report.h"
#include "report_int.h"

#include "hyp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Types: s string, i integer, n number, b boolean, a array, o object, z null. */
typedef struct export_col {
	const char *name;
	const char *types;
	const char *const *vals; /* a closed set of strings, or NULL */
	const char *desc;
} export_col;

static const char *const kinds[] = {"design", "holdout", "sceptic", "exploratory", NULL};
static const char *const statuses[] = {"complete", "not recorded", NULL};
static const char *const clocks[] = {"virtual", "real", NULL};
static const char *const scopes[] = {"whole_base", "whole_base_partial_search", NULL};
static const char *const modes[] = {"serial", "fanout", NULL};
static const char *const device_times[] = {"virtual", "realtime", NULL};
static const char *const vias[] = {"uring", "threads", NULL};
static const char *const series_names[] = {"iostat", "memory", "prometheus", NULL};

static const export_col run_cols[] = {
	{"run_id", "s", NULL, "the run's id (R0001, ...)"},
	{"kind", "s", kinds, "what the run serves: the plan's class, else design (it names hypotheses) or exploratory"},
	{"status", "s", statuses, "complete, or not recorded (started, then stopped or killed)"},
	{"replicate", "iz", NULL, "which of its spec's registered replicates (1..replicates)"},
	{"replicates", "iz", NULL, "the replicates its spec registers (1 without)"},
	{"replicate_group", "sz", NULL, "the run id of its spec's first replicate: the runs of one group share it"},
	{"started", "sz", NULL, "UTC start, RFC 3339"},
	{"spec_file", "sz", NULL, "the run spec's file"},
	{"spec_sha256", "sz", NULL, "SHA-256 of the effective run spec"},
	{"index_kind", "sz", NULL, "the index's kind"},
	{"index_dir", "sz", NULL, "the index directory as the spec named it"},
	{"hypotheses", "az", NULL, "the hypotheses the run serves"},
	{"tags", "az", NULL, "tags derived from the settings, and the spec's own"},
	{"k", "iz", NULL, "results a query asks for"},
	{"clients", "iz", NULL, "closed-loop clients"},
	{"fanout", "iz", NULL, "partitions searched at once by one query"},
	{"mode", "sz", modes, "serial or fanout"},
	{"device", "sz", NULL, "the device profile, null on the real disk alone"},
	{"device_time", "sz", device_times, "virtual (reads replayed on the model's clock) or realtime (its service times slept)"},
	{"strategy", "sz", NULL, "the read strategy: mmap, pread, direct, uring"},
	{"ef_search", "iz", NULL, "HNSW search list"},
	{"search_probe", "iz", NULL, "HFresh postings probed"},
	{"rescore_limit", "iz", NULL, "HFresh candidates rescored"},
	{"partitions", "iz", NULL, "partitions searched"},
	{"query_count", "iz", NULL, "queries asked for"},
	{"cold", "bz", NULL, "the page cache proven cold before the run (always true or false for a recorded run)"},
	{"cold_each_query", "bz", NULL, "evicted and proven cold before each query (always true or false for a recorded run)"},
	{"buffers_bytes", "iz", NULL, "the engine's buffer pool"},
	{"prewarm", "sobz", NULL, "the prewarm setting"},
	{"load_readers", "iz", NULL, "competing readers"},
	{"bulkwrite", "bosz", NULL, "the bulk-write setting"},
	{"client_cpus", "az", NULL, "CPUs the clients were pinned to"},
	{"clock", "sz", clocks, "the clock of the metrics' times: virtual or real"},
	{"repeat", "iz", NULL, "repeats of the load"},
	{"warmup_queries", "iz", NULL, "untimed queries before each repeat"},
	{"lat_samples", "iz", NULL, "latencies each percentile was taken over (per repeat)"},
	{"lat_p99_indicative", "bz", NULL, "true when lat_samples < 100: p99 is indicative only"},
	{"recall_scope", "sz", scopes, "recall against the whole base; _partial_search: the run searched some partitions, so recall is low by construction"},
	{"fanout_via", "sz", vias, "how a fan-out kept its reads in flight"},
	{"inflight_max", "iz", NULL, "most reads in flight at once"},
	{NULL, NULL, NULL, NULL},
};

static const export_col query_cols[] = {
	{"q", "i", NULL, "the query's row in the query set"},
	{"client", "i", NULL, "the client that ran it"},
	{"t_real_ms", "n", NULL, "when it started, from the load's start, real clock"},
	{"lat_real_ms", "n", NULL, "its latency on the real clock"},
	{"lat_virtual_ms", "n", NULL, "its latency on the device model's clock (virtual-time runs)"},
	{"read_real_ms", "n", NULL, "the sum of its reads' times, real clock"},
	{"read_virtual_ms", "n", NULL, "the sum of its reads' times on the model's clock"},
	{"reads", "i", NULL, "engine reads"},
	{"bytes", "i", NULL, "bytes read"},
	{"recall", "nz", NULL, "its recall@k, null without a base"},
	{"recall_scope", "sz", scopes, "as the run's"},
	{"n", "i", NULL, "results returned"},
	{"repeat", "i", NULL, "the repeat it belongs to (runs with repeats)"},
	{"device_reads_virtual", "i", NULL, "reads that reached the modelled device (the rest hit its cache)"},
	{"prewarm_hits", "i", NULL, "reads served by the prewarm's blocks on the model"},
	{"setup_real_ms", "n", NULL, "eviction and prewarm before the query, real clock, outside its latency"},
	{"prewarm_real_ms", "n", NULL, "the prewarm's reads alone, real clock"},
	{"prewarm_virtual_ms", "n", NULL, "the prewarm's reads replayed on the model's clock"},
	{NULL, NULL, NULL, NULL},
};

static const export_col series_cols[] = {
	{"series", "s", series_names, "which sampler"},
	{"t_s", "n", NULL, "seconds since the run's start, real clock (every series is sampled on the real clock)"},
	{"r_s", "nz", NULL, "iostat: reads a second"},
	{"rkB_s", "nz", NULL, "iostat: kB read a second"},
	{"r_await", "nz", NULL, "iostat: mean read time, ms"},
	{"aqu_sz", "nz", NULL, "iostat: mean queue size"},
	{"util", "nz", NULL, "iostat: % of the interval busy"},
	{"reads", "nz", NULL, "iostat: reads in the interval"},
	{"cgroup_bytes", "nz", NULL, "memory: the run's cgroup"},
	{"rss_bytes", "nz", NULL, "memory: the process's resident set"},
	{"source", "sz", NULL, "memory: where the figure came from"},
	{"samples", "iz", NULL, "prometheus: samples a scrape kept"},
	{"skipped", "iz", NULL, "prometheus: lines a scrape skipped"},
	{"error", "sz", NULL, "prometheus: why a scrape failed"},
	{"metric", "s", NULL, "prometheus (--series prometheus): a scraped sample's name"},
	{"value", "nz", NULL, "prometheus (--series prometheus): its value"},
	{NULL, NULL, NULL, NULL},
};

/* {"type": [...], "enum"?: [...], "description": desc} for a column. New. */
static json_t *col_schema(const char *types, const char *const *vals, const char *desc)
{
	static const struct {
		char c;
		const char *name;
	} tn[] = {{'s', "string"}, {'i', "integer"}, {'n', "number"}, {'b', "boolean"},
		  {'a', "array"},  {'o', "object"},  {'z', "null"}};
	json_t *o = json_object(), *t = json_array();

	for (const char *p = types; *p; p++)
		for (size_t i = 0; i < sizeof(tn) / sizeof(tn[0]); i++)
			if (tn[i].c == *p)
				json_array_append_new(t, json_string(tn[i].name));
	json_object_set_new(o, "type", t);
	if (vals) {
		json_t *e = json_array();

		for (size_t i = 0; vals[i]; i++)
			json_array_append_new(e, json_string(vals[i]));
		if (strchr(types, 'z'))
			json_array_append_new(e, json_null());
		json_object_set_new(o, "enum", e);
	}
	json_object_set_new(o, "description", json_string(desc));
	return o;
}

/* A metric's unit for its description ("ms", "queries/s"; "" for counts and ratios). */
static const char *unit_of(const char *m)
{
	const char *u = report_metric_unit(m);

	return *u ? u : "a count or ratio";
}

/* The runs rows' metric columns: the vocabulary, its spread across repeats, its real-disk twin. */
static void add_metrics(json_t *props)
{
	const char *const *names = hyp_metrics();

	for (size_t i = 0; names[i]; i++) {
		char col[96], d[256];
		size_t n = strlen(names[i]);

		snprintf(d, sizeof(d), "vocabulary metric (docs/specs.md), %s; in the run's clock",
			 unit_of(names[i]));
		json_object_set_new(props, names[i], col_schema("nz", NULL, d));
		for (size_t s = 0; s < 3; s++) {
			static const char *const suf[] = {"sd", "ci95_lo", "ci95_hi"};

			snprintf(col, sizeof(col), "%s_%s", names[i], suf[s]);
			snprintf(d, sizeof(d), "%s across repeats: %s", names[i],
				 s ? "95% interval of the mean (Student t)" : "standard deviation (n - 1)");
			json_object_set_new(props, col, col_schema("nz", NULL, d));
		}
		if (!strcmp(names[i], "results_digest") || !strcmp(names[i], "queries"))
			continue;
		if (n > 3 && !strcmp(names[i] + n - 3, "_ms"))
			snprintf(col, sizeof(col), "%.*s_real_ms", (int) (n - 3), names[i]);
		else if (n > 2 && !strcmp(names[i] + n - 2, "_s"))
			snprintf(col, sizeof(col), "%.*s_real_s", (int) (n - 2), names[i]);
		else
			snprintf(col, sizeof(col), "%s_real", names[i]);
		snprintf(d, sizeof(d), "%s of a virtual-time run measured on the real disk (metrics_real)",
			 names[i]);
		json_object_set_new(props, col, col_schema("nz", NULL, d));
	}
}

json_t *report_export_schema(const char *kind)
{
	const export_col *cols = !strcmp(kind, "runs")	     ? run_cols
			  : !strcmp(kind, "queries") ? query_cols
			  : !strcmp(kind, "series")  ? series_cols
						     : NULL;
	json_t *s, *props;
	char title[128];

	if (!cols)
		return NULL;
	props = json_object();
	for (size_t i = 0; cols[i].name; i++)
		json_object_set_new(props, cols[i].name, col_schema(cols[i].types, cols[i].vals, cols[i].desc));
	if (cols == run_cols)
		add_metrics(props);
	snprintf(title, sizeof(title), "coldstudy export: %s (one row)", kind);
	s = json_pack("{s:s, s:s, s:s, s:s, s:o, s:b}", "$schema",
		      "https://json-schema.org/draft/2020-12/schema", "$id",
		      !strcmp(kind, "runs")	 ? "https://coldstudy.invalid/schema/export-runs.json"
		      : !strcmp(kind, "queries") ? "https://coldstudy.invalid/schema/export-queries.json"
						 : "https://coldstudy.invalid/schema/export-series.json",
		      "title", title, "type", "object", "properties", props, "additionalProperties", 0);
	if (s && cols == run_cols)
		json_object_set_new(s, "required", json_pack("[s, s, s]", "run_id", "kind", "status"));
	if (s && cols == query_cols)
		json_object_set_new(s, "required", json_pack("[s, s, s, s, s]", "q", "client", "t_real_ms",
							     "reads", "n"));
	if (s && cols == series_cols)
		json_object_set_new(s, "required", json_pack("[s, s]", "series", "t_s"));
	return s;
}

int report_front_svg(const char *title, const double *recall, const double *qps,
		     const char *const *labels, size_t n, FILE *out, cs_err *e)
{
	static const char *const names[] = {"one setting each"};
	svg_point *pts = calloc(n ? n : 1, sizeof(*pts));
	rbuf b;
	int rc = 0;

	if (!pts)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	for (size_t i = 0; i < n; i++)
		pts[i] = (svg_point){recall[i], qps[i], NAN, NAN, 0, labels ? labels[i] : NULL, 0};
	rb_init(&b, 0);
	/* x recall (linear), y QPS (log), the settings joined in order: ann-benchmarks' front */
	svg_scatter(&b, title, "recall@k", "queries / s, log scale", pts, n, 0, 1, 0, 1, names, 1);
	if (!rb_ok(&b) || fwrite(b.p, 1, b.len, out) != b.len)
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "cannot write the SVG");
	rb_free(&b);
	free(pts);
	return rc;
}
