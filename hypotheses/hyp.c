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
 *               kind from the enum; metric from the vocabulary (vocab.c).
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

static const char *const kinds[] = { "confirmatory", "non-cause", "exploratory", "descriptive",
				      NULL };

#define TITLE_MAX 200
#define UNIT_MAX 96
/* hyp_id_valid as a pattern: "H" and 1..6 digits, no leading zero. */
#define ID_PATTERN "^H[1-9][0-9]{0,5}$"

/*
 * The keys of a hypothesis file: what the validator checks first and what
 * `coldstudy schema hypothesis` prints (jsonv.h). band95's order and the
 * rules are checked by hand below and in rule.c; their schema is beside
 * the code that checks them.
 */
static const jv_key prediction_keys[] = {
	{ .name = "value", .type = JK_NUMBER, .flags = JK_REQUIRED, .lo = -1.7976931348623157e308,
	  .hi = 1.7976931348623157e308, .desc = "the predicted value of the metric" },
	{ .name = "band95", .type = JK_ANY, .flags = JK_REQUIRED,
	  .schema = "{\"type\": \"array\", \"prefixItems\": [{\"type\": \"number\"}, "
		    "{\"type\": \"number\"}], \"minItems\": 2, \"maxItems\": 2}",
	  .desc = "[low, high]: the 95% band around value, low <= value <= high" },
	{ 0 },
};

static const char *const decisions[] = { "rules", "interval", NULL };
static const char *const iv_methods[] = { "welch-log", "bootstrap", NULL };
static const char *const iv_ops[] = { ">=", "<=", NULL };

/* An interval decision (decision "interval"): the effect, its method and the threshold. */
static const jv_key interval_keys[] = {
	{ .name = "metric", .type = JK_ENUM, .flags = JK_REQUIRED, .vals = hyp_metric_names,
	  .expect = "unknown metric \"%s\" (expected a name from the vocabulary)",
	  .desc = "the metric estimated over the runs, one value a run (a positive quantity)" },
	{ .name = "select", .type = JK_ANY, .flags = JK_REQUIRED,
	  .schema = "{\"$ref\": \"#/$defs/select\"}",
	  .desc = "the runs of the effect's group (with over: the numerator's)" },
	{ .name = "over", .type = JK_ANY, .schema = "{\"$ref\": \"#/$defs/select\"}",
	  .desc = "the denominator's runs: the effect is GM(select) / GM(over); without it, "
		  "GM(select) against the threshold" },
	{ .name = "op", .type = JK_ENUM, .flags = JK_REQUIRED, .vals = iv_ops,
	  .desc = "accepted when every value of the interval is op threshold, rejected when none is" },
	{ .name = "threshold", .type = JK_NUMBER, .flags = JK_REQUIRED | JK_EXCL_LO, .lo = 0,
	  .hi = 1.7976931348623157e308, .desc = "the accept line, on the effect's scale (> 0)" },
	{ .name = "method", .type = JK_ENUM, .flags = JK_REQUIRED, .vals = iv_methods,
	  .desc = "welch-log (Student's t on the logs, Welch's for a ratio) or bootstrap "
		  "(percentile, of the geometric mean or the ratio of geometric means)" },
	{ .name = "level", .type = JK_NUMBER, .lo = 0.5, .hi = 0.999,
	  .desc = "the interval's confidence level (default 0.95)" },
	{ .name = "seed", .type = JK_INT, .lo = 0, .hi = 9007199254740991.0,
	  .desc = "bootstrap: the resampling's random stream (required with bootstrap)" },
	{ .name = "resamples", .type = JK_INT, .lo = 200, .hi = 1000000,
	  .desc = "bootstrap: resamples drawn (required with bootstrap)" },
	{ .name = "sd_log", .type = JK_NUMBER, .lo = 0, .hi = 100,
	  .desc = "the run-to-run standard deviation of the metric's log, from pilot runs or the "
		  "device model's replay ('coldstudy plan power'): what validate's power check uses" },
	/* between keys (check_interval): the bootstrap registers its seed and resample count */
	{ .schema = "{\"if\": {\"required\": [\"method\"], \"properties\": {\"method\": "
		    "{\"const\": \"bootstrap\"}}}, \"then\": {\"required\": [\"seed\", "
		    "\"resamples\"]}}" },
};

static const jv_key hyp_keys[] = {
	{ .name = "id", .type = JK_STRING, .flags = JK_REQUIRED, .max = 16, .pattern = ID_PATTERN,
	  .expect = "\"H\" and a number (H1, H2, ...)",
	  .desc = "H and a number without leading zero (H1, H2, ..., H999999), unique in a study" },
	{ .name = "title", .type = JK_STRING, .flags = JK_REQUIRED | JK_ONELINE, .max = TITLE_MAX,
	  .desc = "one line" },
	{ .name = "statement", .type = JK_STRING, .flags = JK_REQUIRED,
	  .max = HYP_FILE_CAP, .desc = "what is claimed, in words" },
	{ .name = "kind", .type = JK_ENUM, .flags = JK_REQUIRED, .vals = kinds,
	  .desc = "confirmatory, non-cause (the lever does not move the metric), exploratory, or "
		  "descriptive (reports a figure the design cannot fail; never confirmatory)" },
	{ .name = "metric", .type = JK_ENUM, .flags = JK_REQUIRED, .vals = hyp_metric_names,
	  .expect = "unknown metric \"%s\" (expected a name from the vocabulary: wall_s, qps, "
		    "lat_mean_ms, ...; see README)",
	  .desc = "the metric the prediction is about, from the vocabulary (README)" },
	{ .name = "unit", .type = JK_STRING, .flags = JK_REQUIRED | JK_ONELINE, .max = UNIT_MAX,
	  .desc = "the metric's unit, for people" },
	{ .name = "prediction", .type = JK_OBJECT, .flags = JK_REQUIRED, .sub = prediction_keys,
	  .desc = "{value, band95}" },
	{ .name = "accept", .type = JK_ANY, .flags = JK_REQUIRED,
	  .schema = "{\"$ref\": \"#/$defs/rule\"}",
	  .desc = "the rule that accepts the hypothesis (rule language: README)" },
	{ .name = "reject", .type = JK_ANY, .flags = JK_REQUIRED,
	  .schema = "{\"$ref\": \"#/$defs/rule\"}", .desc = "the rule that rejects it" },
	{ .name = "notes", .type = JK_STRING, .flags = JK_EMPTY_OK, .max = HYP_FILE_CAP,
	  .desc = "free text" },
	{ .name = "decision", .type = JK_ENUM, .vals = decisions,
	  .desc = "rules (the default: accept and reject decide) or interval (the effect's "
		  "confidence interval over replicates decides, the rules must agree)" },
	{ .name = "interval", .type = JK_OBJECT, .sub = interval_keys,
	  .desc = "with decision interval: {metric, select, over, op, threshold, method, level, "
		  "seed, resamples, sd_log}" },
	{ .name = "underpowered", .type = JK_BOOL,
	  .desc = "registered as underpowered: validate's power check lets it through, and the "
		  "verdict says so (needs underpowered_rationale)" },
	{ .name = "underpowered_rationale", .type = JK_STRING, .max = HYP_FILE_CAP,
	  .desc = "why the hypothesis is run below power 0.8" },
	/* between keys (check_interval): interval exactly with decision interval; a rationale */
	{ .schema = "{\"allOf\": [{\"if\": {\"required\": [\"decision\"], \"properties\": "
		    "{\"decision\": {\"const\": \"interval\"}}}, \"then\": {\"required\": "
		    "[\"interval\"]}, \"else\": {\"not\": {\"required\": [\"interval\"]}}}, "
		    "{\"if\": {\"required\": [\"underpowered\"], \"properties\": "
		    "{\"underpowered\": {\"const\": true}}}, \"then\": {\"required\": "
		    "[\"underpowered_rationale\"]}}]}" },
};

/* d for messages: exact and readable ("200", not "2e+02"). */
static void fmt_num(double d, char out[CS_NUM_MAX])
{
	cs_num_text(d, out);
}

/* Phase 3: band95 = [low, high] with low <= value <= high (the table checked the types). */
static int check_prediction(const json_t *doc, const char *name, cs_err *e)
{
	json_t *p, *value, *band, *lo, *hi;
	double v, l, h;
	char vs[CS_NUM_MAX], ls[CS_NUM_MAX], hs[CS_NUM_MAX];

	p = json_object_get(doc, "prediction");
	value = json_object_get(p, "value");
	band = json_object_get(p, "band95");
	if (jv_expect(band, JV_ARRAY, name, "$.prediction.band95", e))
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

/* Phase 4: an interval decision's keys agree with each other. */
static int check_interval(const json_t *doc, const char *name, cs_err *e)
{
	const json_t *iv = json_object_get(doc, "interval");
	const char *dec = json_string_value(json_object_get(doc, "decision"));
	int is_iv = dec && !strcmp(dec, "interval");

	if (is_iv && !iv)
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: $.interval: missing (decision \"interval\" needs the effect, "
				  "method and threshold)", name);
	if (!is_iv && iv)
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: $.interval: given without \"decision\": \"interval\"", name);
	if (json_is_true(json_object_get(doc, "underpowered")) &&
	    !json_is_string(json_object_get(doc, "underpowered_rationale")))
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: $.underpowered_rationale: missing (underpowered needs a rationale)",
				  name);
	if (!iv)
		return 0;
	if (rule_select_validate(json_object_get(iv, "select"), name, "$.interval.select", e) ||
	    (json_object_get(iv, "over") &&
	     rule_select_validate(json_object_get(iv, "over"), name, "$.interval.over", e)))
		return CS_EXIT_BADINPUT;
	if (!strcmp(json_string_value(json_object_get(iv, "method")), "bootstrap") &&
	    (!json_object_get(iv, "seed") || !json_object_get(iv, "resamples")))
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: $.interval.%s: missing (the bootstrap registers its seed and "
				  "resample count)", name, json_object_get(iv, "seed") ? "resamples" : "seed");
	return 0;
}

/* Phase 2..4 over a loaded document; fills h's id, kind, metric. */
static int validate(const json_t *doc, const char *name, hyp *h, cs_err *e)
{
	if (jv_keys_check(doc, hyp_keys, 0, name, "$", e))
		return CS_EXIT_BADINPUT;
	snprintf(h->id, sizeof(h->id), "%s", json_string_value(json_object_get(doc, "id")));
	snprintf(h->kind, sizeof(h->kind), "%s", json_string_value(json_object_get(doc, "kind")));
	snprintf(h->metric, sizeof(h->metric), "%s",
		 json_string_value(json_object_get(doc, "metric")));
	if (check_prediction(doc, name, e))
		return CS_EXIT_BADINPUT;
	if (rule_validate(json_object_get(doc, "accept"), name, "$.accept", e) ||
	    rule_validate(json_object_get(doc, "reject"), name, "$.reject", e) ||
	    check_interval(doc, name, e))
		return CS_EXIT_BADINPUT;
	return 0;
}

json_t *hyp_schema(void)
{
	json_t *s = jv_keys_schema(hyp_keys, 0), *doc;

	if (!s)
		return NULL;
	doc = json_pack("{s:s, s:s, s:s, s:s, s:o}", "$schema",
			"https://json-schema.org/draft/2020-12/schema", "$id",
			"https://coldstudy.invalid/schema/hypothesis.json", "title",
			"coldstudy hypothesis file (hyp/H*.json)", "$comment",
			"Generated by 'coldstudy schema hypothesis' from the validator's key tables "
			"(hypotheses/hyp.c, rule.c). The validator also checks what JSON Schema cannot "
			"say: low <= value <= high in prediction, a rule at most 32 levels deep and "
			"1024 nodes, lengths in bytes (the schema counts characters), no NUL in "
			"strings, and no duplicate keys (the loader).",
			"$defs", rule_schema_defs());
	if (doc)
		json_object_update(doc, s);
	json_decref(s);
	return doc;
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
