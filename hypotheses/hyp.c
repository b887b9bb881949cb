/*
 * hyp.c - the hypothesis file: strict load, validation, canonical form
 * and its SHA-256.
 *
 * Phases, in order, each refusing with one line that names the file and
 * where (line:column from the loader, a JSON path from the validator):
 *
 *   1. load     cs_json_load_buf: size cap, UTF-8, no duplicate keys, no
 *               trailing garbage, an object at the top (common/json.c).
 *   2. shape    only the known keys; each of the right type; id "H<n>";
 *               kind from the enum; metric from the vocabulary.
 *   3. numbers  band95 = [low, high] with low <= value <= high.
 *   4. rules    accept and reject through rule_validate (rule.c).
 *   5. hash     the canonical bytes and SHA-256 over them.
 *
 * The document kept in hyp->doc is exactly what was validated; the
 * canonical form and hash are taken over it, so what the ledger freezes
 * is what was checked.
 */
#include "hyp.h"
#include "jsonv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DESIGN.md's measurement vocabulary. New names go here and in the README together. */
static const char *const metrics[] = {
	"wall_s",
	"queries",
	"qps",
	"lat_mean_ms",
	"lat_p50_ms",
	"lat_p99_ms",
	"recall_at_k",
	"engine_reads",
	"engine_read_ms_mean",
	"reads_per_query",
	"bytes_per_read",
	"device_reads",
	"device_read_ms_mean",
	"device_busy",
	"io_over_wall",
	"inflight_median",
	"resident_fraction_before",
	"mem_peak_bytes",
	NULL,
};

static const char *const top_keys[] = {
	"id", "title", "statement", "kind", "metric", "unit", "prediction", "accept", "reject",
	"notes", NULL,
};

static const char *const kinds[] = { "confirmatory", "non-cause", "exploratory", NULL };

static const char *const prediction_keys[] = { "value", "band95", NULL };

#define TITLE_MAX 200
#define UNIT_MAX 96

int hyp_metric_known(const char *name)
{
	return name && jv_in_list(name, metrics);
}

const char *const *hyp_metrics(void)
{
	return metrics;
}

int hyp_id_valid(const char *s)
{
	size_t i;

	if (!s || s[0] != 'H' || s[1] < '1' || s[1] > '9')
		return 0;
	for (i = 2; s[i]; i++)
		if (s[i] < '0' || s[i] > '9' || i > 6)
			return 0;
	return 1;
}

/* A one-line text: no control characters (a title or unit is printed in tables). */
static int one_line(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

/* A non-empty one-line string of at most max bytes at $.key. */
static int check_line(const json_t *doc, const char *key, size_t max, const char *name,
		      cs_err *e)
{
	json_t *v;
	char path[JV_PATH_MAX];

	if (jv_get(doc, key, JV_TEXT, 1, name, "$", &v, e))
		return CS_EXIT_BADINPUT;
	jv_path_key(path, sizeof(path), "$", key);
	if (json_string_length(v) > max)
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: %s: expected at most %zu bytes, got %zu", name, path, max,
				  json_string_length(v));
	if (!one_line(json_string_value(v), json_string_length(v)))
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: %s: expected one line (no control characters)", name, path);
	return 0;
}

/* The shortest %g form of d that reads back as d, for messages. */
static void fmt_num(double d, char out[32])
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(out, 32, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			return;
	}
}

/* Phase 3: prediction {value, band95: [low, high]}, low <= value <= high. */
static int check_prediction(const json_t *doc, const char *name, cs_err *e)
{
	json_t *p, *value, *band, *lo, *hi;
	double v, l, h;
	char vs[32], ls[32], hs[32];

	if (jv_get(doc, "prediction", JV_OBJECT, 1, name, "$", &p, e) ||
	    jv_only_keys(p, prediction_keys, name, "$.prediction", e) ||
	    jv_get(p, "value", JV_NUMBER, 1, name, "$.prediction", &value, e) ||
	    jv_get(p, "band95", JV_ARRAY, 1, name, "$.prediction", &band, e))
		return CS_EXIT_BADINPUT;
	if (json_array_size(band) != 2)
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: $.prediction.band95: expected [low, high], got %zu elements",
				  name, json_array_size(band));
	lo = json_array_get(band, 0);
	hi = json_array_get(band, 1);
	if (jv_expect(lo, JV_NUMBER, name, "$.prediction.band95[0]", e) ||
	    jv_expect(hi, JV_NUMBER, name, "$.prediction.band95[1]", e))
		return CS_EXIT_BADINPUT;
	v = json_number_value(value);
	l = json_number_value(lo);
	h = json_number_value(hi);
	fmt_num(v, vs);
	fmt_num(l, ls);
	fmt_num(h, hs);
	if (l > h)
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: $.prediction.band95: expected low <= high, got [%s, %s]", name,
				  ls, hs);
	if (v < l || v > h)
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: $.prediction.value: %s is outside band95 [%s, %s]", name, vs,
				  ls, hs);
	return 0;
}

/* Phase 2..4 over a loaded document; fills h's id, kind, metric. */
static int validate(const json_t *doc, const char *name, hyp *h, cs_err *e)
{
	json_t *v;
	const char *s;
	char list[256];

	if (jv_only_keys(doc, top_keys, name, "$", e))
		return CS_EXIT_BADINPUT;
	if (jv_get(doc, "id", JV_TEXT, 1, name, "$", &v, e))
		return CS_EXIT_BADINPUT;
	s = json_string_value(v);
	if (!hyp_id_valid(s) || json_string_length(v) != strlen(s))
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: $.id: expected \"H\" and a number (H1, H2, ...), got \"%.16s\"",
				  name, one_line(s, strlen(s)) ? s : "?");
	snprintf(h->id, sizeof(h->id), "%s", s);
	if (check_line(doc, "title", TITLE_MAX, name, e))
		return CS_EXIT_BADINPUT;
	if (jv_get(doc, "statement", JV_TEXT, 1, name, "$", &v, e))
		return CS_EXIT_BADINPUT;
	if (jv_get(doc, "kind", JV_TEXT, 1, name, "$", &v, e))
		return CS_EXIT_BADINPUT;
	s = json_string_value(v);
	if (!jv_in_list(s, kinds)) {
		jv_list_str(kinds, list, sizeof(list));
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.kind: expected one of: %s", name,
				  list);
	}
	snprintf(h->kind, sizeof(h->kind), "%s", s);
	if (jv_get(doc, "metric", JV_TEXT, 1, name, "$", &v, e))
		return CS_EXIT_BADINPUT;
	s = json_string_value(v);
	if (!hyp_metric_known(s))
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: $.metric: unknown metric \"%.48s\" (expected a name from "
				  "the vocabulary: wall_s, qps, lat_mean_ms, ...; see README)",
				  name, one_line(s, strlen(s)) ? s : "?");
	snprintf(h->metric, sizeof(h->metric), "%s", s);
	if (check_line(doc, "unit", UNIT_MAX, name, e))
		return CS_EXIT_BADINPUT;
	if (jv_get(doc, "notes", JV_STRING, 0, name, "$", &v, e))
		return CS_EXIT_BADINPUT;
	if (check_prediction(doc, name, e))
		return CS_EXIT_BADINPUT;
	if (jv_get(doc, "accept", JV_ANY, 1, name, "$", &v, e) ||
	    rule_validate(v, name, "$.accept", e))
		return CS_EXIT_BADINPUT;
	if (jv_get(doc, "reject", JV_ANY, 1, name, "$", &v, e) ||
	    rule_validate(v, name, "$.reject", e))
		return CS_EXIT_BADINPUT;
	return 0;
}

int hyp_parse_buf(const char *buf, size_t len, const char *name, hyp **out, cs_err *e)
{
	hyp *h = NULL;
	json_t *doc = NULL;
	int rc;

	*out = NULL;
	if (len > HYP_FILE_CAP)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %zu bytes, over the cap of %u", name,
				  len, HYP_FILE_CAP);
	rc = cs_json_load_buf(buf, len, name, &doc, e);
	if (rc)
		return rc;
	rc = CS_EXIT_INTERNAL;
	h = calloc(1, sizeof(*h));
	if (!h || !(h->source = strdup(name))) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: out of memory", name);
		goto out;
	}
	cs_sha256_hex(buf, len, h->file_sha256);
	rc = validate(doc, name, h, e);
	if (rc)
		goto out;
	rc = cs_json_canonical(doc, &h->canonical, &h->canonical_len, e);
	if (rc) {
		char why[CS_ERR_MAX];

		snprintf(why, sizeof(why), "%s", e ? e->msg : "");
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $: %s", name, why);
		goto out;
	}
	cs_sha256_hex(h->canonical, h->canonical_len, h->sha256);
	h->doc = doc;
	doc = NULL;
	*out = h;
	h = NULL;
	rc = 0;
out:
	json_decref(doc);
	hyp_free(h);
	return rc;
}

int hyp_parse_file(const char *path, hyp **out, cs_err *e)
{
	char *buf;
	size_t len;
	int rc;

	*out = NULL;
	rc = cs_read_file(path, HYP_FILE_CAP, &buf, &len, e);
	if (rc)
		return rc;
	rc = hyp_parse_buf(buf, len, path, out, e);
	free(buf);
	return rc;
}

void hyp_free(hyp *h)
{
	if (!h)
		return;
	json_decref(h->doc);
	free(h->canonical);
	free(h->source);
	free(h);
}

int hyp_check_unique(hyp *const *hs, size_t n, cs_err *e)
{
	/* n is a handful of files on a command line; quadratic is clearer than a table. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(hs[i]->id, hs[j]->id) == 0)
				return cs_err_set(e, CS_EXIT_BADINPUT,
						  "%s: $.id: duplicate id \"%s\" (also in %s)",
						  hs[i]->source ? hs[i]->source : "?", hs[i]->id,
						  hs[j]->source ? hs[j]->source : "?");
	return 0;
}
