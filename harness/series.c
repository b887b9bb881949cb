/*
 * series.c - the samplers' series of a run, out of the ledger as flat
 * rows (`coldstudy run show S RID --series [NAME]`).
 *
 * A run record names each series' raw blob by hash ("raw": {"iostat",
 * "memory", "prometheus"}); the rows are the samplers' own (sample.c), a
 * "series" column first. A Prometheus scrape holds hundreds of samples, so
 * alone (--series prometheus) it is one row per sample {t_s, metric,
 * value} (a failed scrape: one row with its error), and among the others
 * one row per scrape {t_s, samples, skipped, error}.
 */
#include "harness.h"
#include "harness_int.h"

#include "ledger.h"

#include <string.h>

static const char *const series_names[] = {"iostat", "memory", "prometheus", NULL};

/* The columns of each series, in order (the text table's, and the CSV's first). */
static const char *const iostat_cols[] = {"t_s", "r_s", "rkB_s", "r_await", "aqu_sz", "util",
					  "reads", NULL};
static const char *const memory_cols[] = {"t_s", "cgroup_bytes", "rss_bytes", "source", NULL};
static const char *const scrape_cols[] = {"t_s", "samples", "skipped", "error", NULL};
static const char *const sample_cols[] = {"t_s", "metric", "value", "error", NULL};

typedef struct find_ctx {
	const char *id;
	json_t *rec;
} find_ctx;

static int find_cb(const ledger_record *r, void *ud)
{
	find_ctx *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	const char *id = json_string_value(json_object_get(p, "run_id"));

	if (id && !strcmp(id, c->id)) {
		json_decref(c->rec);
		c->rec = p;
		return 0;
	}
	json_decref(p);
	return 0;
}

/* One flat row {"series": name, cols...} from a sampler row. New. */
static json_t *flat(const char *name, const json_t *row, const char *const *cols)
{
	json_t *o = json_object();

	json_object_set_new(o, "series", json_string(name));
	for (size_t i = 0; cols[i]; i++) {
		const json_t *v = json_object_get(row, cols[i]);

		if (v || strcmp(cols[i], "error"))
			json_object_set_new(o, cols[i], v ? json_incref((json_t *) v) : json_null());
	}
	return o;
}

/* Append series name's rows (blob: the sampler's rows) to out. */
static void add_series(const char *name, const json_t *blob, int alone, json_t *out)
{
	const char *const *cols = !strcmp(name, "iostat")   ? iostat_cols
				  : !strcmp(name, "memory") ? memory_cols
							    : scrape_cols;
	json_t *row;
	size_t i;

	json_array_foreach(blob, i, row) {
		if (!strcmp(name, "prometheus") && alone) {
			const json_t *m = json_object_get(row, "metrics"), *v;
			const char *k;

			if (json_object_get(row, "error") || !json_object_size(m)) {
				json_array_append_new(out, flat(name, row, sample_cols));
				continue;
			}
			json_object_foreach((json_t *) m, k, v) {
				json_t *o = json_pack("{s:s, s:O, s:s, s:O}", "series", name, "t_s",
						      json_object_get(row, "t_s"), "metric", k,
						      "value", v);

				json_array_append_new(out, o);
			}
			continue;
		}
		json_array_append_new(out, flat(name, row, cols));
	}
}

int harness_run_series(ledger *l, const char *run_id, const char *which, json_t **rows, cs_err *e)
{
	find_ctx c = {run_id, NULL};
	const json_t *raw;
	json_t *out = NULL;
	int rc = 0, all = !which || !strcmp(which, "all"), known = all;

	*rows = NULL;
	for (size_t i = 0; !known && series_names[i]; i++)
		known = !strcmp(which, series_names[i]);
	if (!known)
		return cs_err_set(e, CS_EXIT_USAGE,
				  "--series: unknown series '%s' (iostat, memory, prometheus or all)",
				  which);
	if (ledger_foreach(l, "run", find_cb, &c, e))
		return e->code ? e->code : CS_EXIT_INTERNAL;
	if (!c.rec) {
		int started = ledger_run_exists(l, run_id, e);

		return cs_err_set(e, CS_EXIT_BADINPUT,
				  started == 1 ? "%s: run %s has no run record (it did not finish; "
						 "see its deviation in 'coldstudy log export')"
					       : "%s: no run %s in this study (coldstudy runs %s lists them)",
				  ledger_dir(l), run_id, ledger_dir(l));
	}
	raw = json_object_get(c.rec, "raw");
	out = json_array();
	for (size_t i = 0; !rc && series_names[i]; i++) {
		const char *sha = json_string_value(json_object_get(raw, series_names[i]));
		json_t *blob = NULL;

		if (!all && strcmp(which, series_names[i]))
			continue;
		if (!sha)
			continue; /* a run from before this series was kept */
		rc = ledger_get_raw(l, sha, &blob, e);
		if (!rc)
			add_series(series_names[i], blob, !all, out);
		json_decref(blob);
	}
	json_decref(c.rec);
	if (rc) {
		json_decref(out);
		return rc;
	}
	*rows = out;
	return 0;
}

/* A cell for a person: numbers short, null "-", strings as they are. */
static void cell(const json_t *v, char *buf, size_t cap)
{
	if (json_is_integer(v))
		snprintf(buf, cap, "%lld", (long long) json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, cap, "%.6g", json_real_value(v));
	else if (json_is_string(v))
		snprintf(buf, cap, "%s", json_string_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
	else
		snprintf(buf, cap, "-");
}

void harness_series_write_text(const json_t *rows, FILE *out)
{
	const char *cur = NULL;
	size_t i, shown = 0;
	int scrapes = 0;
	json_t *row;

	json_array_foreach(rows, i, row) {
		const char *name = json_string_value(json_object_get(row, "series"));
		int per_sample = json_object_get(row, "metric") != NULL ||
				 (name && !strcmp(name, "prometheus") && !json_object_get(row, "samples") &&
				  json_object_get(row, "error"));
		const char *const *cols = !name ? iostat_cols
					  : !strcmp(name, "iostat") ? iostat_cols
					  : !strcmp(name, "memory") ? memory_cols
					  : per_sample ? sample_cols : scrape_cols;

		if (!name)
			continue;
		scrapes |= json_object_get(row, "samples") != NULL;
		if (!cur || strcmp(cur, name)) {
			size_t n = 0;

			for (size_t j = i; j < json_array_size(rows); j++) {
				const char *nj = json_string_value(json_object_get(json_array_get(rows, j), "series"));

				if (!nj || strcmp(nj, name))
					break;
				n++;
			}
			fprintf(out, "%s%s: %zu row%s\n", cur ? "\n" : "", name, n, n == 1 ? "" : "s");
			for (size_t j = 0; cols[j]; j++)
				fprintf(out, !strcmp(cols[j], "metric") || !strcmp(cols[j], "error") ||
							     !strcmp(cols[j], "source")
						     ? "  %-s"
						     : " %12s",
					cols[j]);
			fputc('\n', out);
			cur = name;
		}
		for (size_t j = 0; cols[j]; j++) {
			char buf[512];
			const json_t *v = json_object_get(row, cols[j]);
			int text = !strcmp(cols[j], "metric") || !strcmp(cols[j], "error") ||
				   !strcmp(cols[j], "source");

			if (text && !v)
				continue;
			cell(v, buf, sizeof(buf));
			fprintf(out, text ? "  %-s" : " %12s", buf);
		}
		fputc('\n', out);
		shown++;
	}
	if (!shown)
		fprintf(out, "(no samples kept for this run)\n");
	else if (scrapes)
		fprintf(out, "(one row a scrape; --series prometheus: every scraped sample, one a row)\n");
}

int harness_record_begin(struct ledger *l, json_t *rows, json_t *ios, json_t *mems, json_t *proms,
			 json_t **raw, cs_err *e)
{
	char qsha[65], isha[65], msha[65], psha[65];
	int rc;

	*raw = NULL;
	rc = ledger_begin(l, e);
	if (rc)
		return rc;
	if ((rc = ledger_put_raw(l, "queries", rows, qsha, e)) ||
	    (rc = ledger_put_raw(l, "iostat", ios, isha, e)) ||
	    (rc = ledger_put_raw(l, "memory", mems, msha, e)) ||
	    (rc = ledger_put_raw(l, "prometheus", proms, psha, e))) {
		ledger_rollback(l);
		return rc;
	}
	*raw = json_pack("{s:s, s:s, s:s, s:s}", "queries", qsha, "iostat", isha, "memory", msha,
			 "prometheus", psha);
	if (!*raw) {
		ledger_rollback(l);
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	}
	return 0;
}
