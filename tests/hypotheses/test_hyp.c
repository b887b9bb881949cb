/*
 * test_hyp.c - the hypothesis file: every rejection class refuses with
 * exit 5 and a one-line message that names the file and the place
 * (line:column or JSON path); a valid file canonicalises to a fixed point
 * whose hash does not depend on formatting; every file of the example
 * study parses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hyp.h"
#include "jsonv.h"

static const char *base_json =
	"{\"id\": \"H3\", \"title\": \"t\", \"statement\": \"s\", \"kind\": \"non-cause\","
	" \"metric\": \"reads_per_query\", \"unit\": \"x\","
	" \"prediction\": {\"value\": 1.5, \"band95\": [1.2, 2.0]},"
	" \"accept\": {\"cmp\": {\"left\": {\"agg\": \"median\", \"metric\": \"wall_s\","
	"   \"select\": {\"tags\": [\"gate\", \"cold\"]}}, \"op\": \">=\", \"right\": 1}},"
	" \"reject\": {\"not\": {\"cmp\": {\"left\": 2, \"op\": \"<\", \"right\": {\"ratio\": ["
	"   {\"agg\": \"max\", \"metric\": \"qps\", \"select\": {}},"
	"   {\"agg\": \"count\", \"select\": {\"hypothesis\": \"H3\", \"not_tags\": [\"warm\"]}}]}}}},"
	" \"notes\": \"n\"}";

/* The base document with the value at JSON pointer-ish dotted path replaced by repl (JSON text, or NULL to delete). */
static char *t_mutate(const char *path, const char *repl)
{
	json_t *doc = json_loads(base_json, 0, NULL), *parent = doc;
	char buf[256], *save = NULL, *tok, *last = NULL;
	char *out;

	assert_non_null(doc);
	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok; tok = strtok_r(NULL, ".", &save)) {
		if (last)
			parent = json_is_array(parent) ? json_array_get(parent, (size_t) strtoul(last, NULL, 10))
						       : json_object_get(parent, last);
		assert_non_null(parent);
		last = tok;
	}
	if (json_is_array(parent)) {
		json_array_set_new(parent, (size_t) strtoul(last, NULL, 10), json_loads(repl, JSON_DECODE_ANY, NULL));
	} else if (repl) {
		json_t *v = json_loads(repl, JSON_DECODE_ANY, NULL);

		assert_non_null(v);
		json_object_set_new(parent, last, v);
	} else {
		json_object_del(parent, last);
	}
	out = json_dumps(doc, 0);
	json_decref(doc);
	return out;
}

/* Parse buf as name; expect exit 5, a one-line message with the name and each needle. */
static void t_bad_buf(const char *buf, size_t len, const char *name, const char *n1, const char *n2)
{
	cs_err e = { 0 };
	hyp *h = NULL;
	int rc = hyp_parse_buf(buf, len, name, &h, &e);

	if (rc != CS_EXIT_BADINPUT || !strstr(e.msg, name) || (n1 && !strstr(e.msg, n1)) ||
	    (n2 && !strstr(e.msg, n2)))
		print_error("rc %d, message: %s\n", rc, e.msg);
	assert_int_equal(rc, CS_EXIT_BADINPUT);
	assert_int_equal(e.code, CS_EXIT_BADINPUT);
	assert_null(h);
	assert_non_null(strstr(e.msg, name));
	if (n1)
		assert_non_null(strstr(e.msg, n1));
	if (n2)
		assert_non_null(strstr(e.msg, n2));
	assert_null(strchr(e.msg, '\n'));
}

/* Mutate the base at path to repl and expect a refusal naming each needle. */
static void t_bad(const char *path, const char *repl, const char *n1, const char *n2)
{
	char *s = t_mutate(path, repl);

	t_bad_buf(s, strlen(s), "h.json", n1, n2);
	free(s);
}

static hyp *t_good(const char *s)
{
	cs_err e = { 0 };
	hyp *h = NULL;
	int rc = hyp_parse_buf(s, strlen(s), "h.json", &h, &e);

	if (rc)
		print_error("refused: %s\n", e.msg);
	assert_int_equal(rc, 0);
	assert_non_null(h);
	return h;
}

static void test_base_valid(void **state)
{
	hyp *h = t_good(base_json);
	char hex[65];

	(void) state;
	assert_string_equal(h->id, "H3");
	assert_string_equal(h->kind, "non-cause");
	assert_string_equal(h->metric, "reads_per_query");
	assert_string_equal(h->source, "h.json");
	cs_sha256_hex(h->canonical, h->canonical_len, hex);
	assert_string_equal(hex, h->sha256);
	assert_int_equal(strlen(h->canonical), h->canonical_len);
	/* the file's own hash is over the bytes as given, not the canonical form */
	cs_sha256_hex(base_json, strlen(base_json), hex);
	assert_string_equal(hex, h->file_sha256);
	assert_string_not_equal(h->file_sha256, h->sha256);
	hyp_free(h);
	hyp_free(NULL);
}

static void test_unknown_keys(void **state)
{
	(void) state;
	t_bad("colour", "\"red\"", "h.json: $.colour: unknown key", "expected one of: id, title");
	t_bad("prediction.mean", "1", "$.prediction.mean: unknown key", "value, band95");
	t_bad("accept.cmp.left.select.tag", "[\"x\"]", "$.accept.cmp.left.select.tag: unknown key",
	      "tags, not_tags, hypothesis");
	t_bad("accept.cmp.extra", "1", "$.accept.cmp.extra: unknown key", NULL);
	/* a hostile key stays on one line and is escaped */
	t_bad("a\nb", "1", "$[\"a\\u000ab\"]: unknown key", NULL);
}

static void test_unknown_metric(void **state)
{
	(void) state;
	t_bad("metric", "\"wall_time\"", "$.metric: unknown metric \"wall_time\"", "vocabulary");
	t_bad("accept.cmp.left.metric", "\"latency\"", "$.accept.cmp.left.metric: unknown metric",
	      NULL);
	t_bad("metric", "\"\"", "$.metric: expected a non-empty string", NULL);
}

static void test_band(void **state)
{
	(void) state;
	t_bad("prediction.value", "2.5", "$.prediction.value: 2.5 is outside band95", "[1.2, 2]");
	t_bad("prediction.value", "1.1", "$.prediction.value", "outside");
	t_bad("prediction.band95", "[2.0, 1.2]", "$.prediction.band95: expected low <= high", NULL);
	t_bad("prediction.band95", "[1.2]", "$.prediction.band95: expected [low, high]", NULL);
	t_bad("prediction.band95", "[1, 2, 3]", "$.prediction.band95", "3 elements");
	t_bad("prediction.band95", "[1, \"2\"]", "$.prediction.band95[1]: expected a number",
	      "got a string");
	t_bad("prediction.value", NULL, "$.prediction: missing key \"value\"", "a number");
	/* edges are inside */
	{
		char *s = t_mutate("prediction.value", "2.0");
		hyp *h = t_good(s);

		hyp_free(h);
		free(s);
	}
}

static void test_empty_and_bad_rules(void **state)
{
	(void) state;
	t_bad("accept", "{}", "$.accept: empty rule", "all, any, not, cmp");
	t_bad("accept", "{\"all\": []}", "$.accept.all: empty rule", NULL);
	t_bad("reject", "{\"any\": [{\"all\": [{}]}]}", "$.reject.any[0].all[0]: empty rule", NULL);
	t_bad("accept", "{\"all\": [], \"any\": []}", "$.accept: expected exactly one of", "2 keys");
	t_bad("accept", "[]", "$.accept: expected an object, got an array", NULL);
	t_bad("accept", "{\"or\": []}", "$.accept.or: unknown key", NULL);
	t_bad("accept.cmp.left.agg", "\"p95\"", "$.accept.cmp.left.agg: unknown aggregate",
	      "median, min, max, mean, count");
	t_bad("accept.cmp.op", "\"=~\"", "$.accept.cmp.op: unknown operator", NULL);
	t_bad("accept.cmp.left", "2", "$.accept.cmp: compares two constants", NULL);
	t_bad("accept.cmp.left", "\"wall_s\"", "$.accept.cmp.left: expected a number", "a string");
	t_bad("accept.cmp.left", "{\"metric\": \"wall_s\"}", "$.accept.cmp.left: expected a number",
	      NULL);
	t_bad("accept.cmp.left.metric", NULL, "$.accept.cmp.left: missing key \"metric\"", NULL);
	t_bad("accept.cmp.left.select", NULL, "$.accept.cmp.left: missing key \"select\"", NULL);
	t_bad("accept.cmp.left.select.tags", "[\"a b\"]", "$.accept.cmp.left.select.tags[0]",
	      "without spaces");
	t_bad("accept.cmp.left.select.tags", "[1]", "$.accept.cmp.left.select.tags[0]: expected",
	      NULL);
	t_bad("accept.cmp.left.select.tags", "\"gate\"", "$.accept.cmp.left.select.tags: expected an array",
	      NULL);
	t_bad("accept.cmp.left.select.hypothesis", "\"X1\"",
	      "$.accept.cmp.left.select.hypothesis: expected a hypothesis id", NULL);
	t_bad("reject.not.cmp.right.ratio", "[1]", "$.reject.not.cmp.right.ratio: expected [numerator",
	      NULL);
	t_bad("reject.not.cmp.right", "{\"ratio\": [1, 2]}", "$.reject.not.cmp: compares two constants",
	      NULL);
	t_bad("accept", NULL, "h.json: $: missing key \"accept\"", NULL);
}

static void test_rule_limits(void **state)
{
	char *buf = malloc(8192), *s;
	size_t n = 0;

	(void) state;
	/* 40 nested "not": deeper than the cap of 32 */
	for (int i = 0; i < 40; i++)
		n += (size_t) snprintf(buf + n, 8192 - n, "{\"not\": ");
	n += (size_t) snprintf(buf + n, 8192 - n, "{\"cmp\": {\"left\": {\"agg\": \"count\", "
						    "\"select\": {}}, \"op\": \">\", \"right\": 0}}");
	for (int i = 0; i < 40; i++)
		buf[n++] = '}';
	buf[n] = '\0';
	s = t_mutate("accept", buf);
	t_bad_buf(s, strlen(s), "h.json", "$.accept.not.not.not", "nested too deep");
	free(s);
	free(buf);
}

static void test_wrong_types(void **state)
{
	(void) state;
	t_bad("id", "3", "$.id: expected a non-empty string, got an integer", NULL);
	t_bad("title", "[\"t\"]", "$.title: expected a non-empty string, got an array", NULL);
	t_bad("title", "\"two\\nlines\"", "$.title: expected one line", NULL);
	t_bad("statement", "null", "$.statement: expected a non-empty string, got null", NULL);
	t_bad("notes", "7", "$.notes: expected a string", NULL);
	t_bad("prediction", "15", "$.prediction: expected an object, got an integer", NULL);
	t_bad("prediction", "1.25", "$.prediction: expected an object, got a real number", NULL);
	t_bad("prediction.value", "\"1.5\"", "$.prediction.value: expected a number", NULL);
	t_bad("unit", NULL, "$: missing key \"unit\"", NULL);
	t_bad_buf("[]", 2, "h.json", "h.json: $: expected a JSON object", NULL);
}

static void test_id_and_kind(void **state)
{
	(void) state;
	t_bad("id", "\"h1\"", "$.id: expected \"H\" and a number", "\"h1\"");
	t_bad("id", "\"H01\"", "$.id", "H1, H2");
	t_bad("id", "\"H\"", "$.id", NULL);
	t_bad("id", "\"H1a\"", "$.id", NULL);
	t_bad("id", "\"H12345678\"", "$.id", NULL);
	t_bad("kind", "\"causal\"",
	      "$.kind: expected one of: confirmatory, non-cause, exploratory, descriptive",
	      NULL);
	assert_true(hyp_id_valid("H1"));
	assert_true(hyp_id_valid("H999999"));
	assert_false(hyp_id_valid("H0"));
	assert_false(hyp_id_valid("H1234567"));
	assert_false(hyp_id_valid(NULL));
}

static void test_text_level(void **state)
{
	char *s = strdup(base_json), *p;
	char big[64];

	(void) state;
	/* non-UTF-8 in the title: line:column */
	p = strstr(s, "\"t\"");
	p[1] = (char) 0xfe;
	t_bad_buf(s, strlen(s), "h.json", "h.json:1:", "invalid UTF-8");
	free(s);
	/* trailing garbage */
	s = malloc(strlen(base_json) + 8);
	snprintf(s, strlen(base_json) + 8, "%s\n{}", base_json);
	t_bad_buf(s, strlen(s), "h.json", "h.json:2:", NULL);
	free(s);
	/* duplicate key */
	t_bad_buf("{\"id\": \"H1\", \"id\": \"H2\"}", 24, "h.json", "h.json:1:", "duplicate");
	/* over the cap, as a buffer and as a file */
	s = malloc(HYP_FILE_CAP + 2);
	memset(s, ' ', HYP_FILE_CAP + 1);
	s[0] = '{';
	s[HYP_FILE_CAP] = '}';
	s[HYP_FILE_CAP + 1] = '\0';
	t_bad_buf(s, HYP_FILE_CAP + 1, "h.json", "over the cap", NULL);
	{
		char path[] = "/tmp/hyp-cap-XXXXXX";
		int fd = mkstemp(path);
		cs_err e = { 0 };
		hyp *h = NULL;

		assert_true(fd >= 0);
		assert_int_equal(write(fd, s, HYP_FILE_CAP + 1), (ssize_t) HYP_FILE_CAP + 1);
		close(fd);
		assert_int_equal(hyp_parse_file(path, &h, &e), CS_EXIT_BADINPUT);
		assert_non_null(strstr(e.msg, path));
		assert_non_null(strstr(e.msg, "over the cap"));
		assert_null(h);
		unlink(path);
		assert_int_equal(hyp_parse_file("/nonexistent/H1.json", &h, &e), CS_EXIT_BADINPUT);
		assert_non_null(strstr(e.msg, "/nonexistent/H1.json"));
	}
	free(s);
	snprintf(big, sizeof(big), "%s", "{\"id\": \"H1\"");
	t_bad_buf(big, strlen(big), "h.json", "h.json:1:", NULL);
}

static void test_duplicate_ids(void **state)
{
	hyp *hs[3] = { 0 };
	cs_err e = { 0 };
	char *s = t_mutate("id", "\"H4\"");

	(void) state;
	assert_int_equal(hyp_parse_buf(base_json, strlen(base_json), "A.json", &hs[0], &e), 0);
	assert_int_equal(hyp_parse_buf(s, strlen(s), "B.json", &hs[1], &e), 0);
	assert_int_equal(hyp_check_unique(hs, 2, &e), 0);
	assert_int_equal(hyp_parse_buf(base_json, strlen(base_json), "C.json", &hs[2], &e), 0);
	assert_int_equal(hyp_check_unique(hs, 3, &e), CS_EXIT_BADINPUT);
	assert_non_null(strstr(e.msg, "C.json: $.id: duplicate id \"H3\" (also in A.json)"));
	for (int i = 0; i < 3; i++)
		hyp_free(hs[i]);
	free(s);
}

static void test_canonical_hash(void **state)
{
	/* the same document reordered, re-spaced, 2.0 written as 2 and 1.5 as 15e-1 */
	const char *other =
		"{\"notes\":\"n\",\"reject\":{\"not\":{\"cmp\":{\"right\":{\"ratio\":[{\"select\":{},"
		"\"metric\":\"qps\",\"agg\":\"max\"},{\"select\":{\"not_tags\":[\"warm\"],"
		"\"hypothesis\":\"H3\"},\"agg\":\"count\"}]},\"op\":\"<\",\"left\":2}}},"
		"\"accept\":{\"cmp\":{\"right\":1,\"op\":\">=\",\"left\":{\"select\":{\"tags\":[\"gate\","
		"\"cold\"]},\"metric\":\"wall_s\",\"agg\":\"median\"}}},\"prediction\":{\"band95\":"
		"[1.2,2],\"value\":15e-1},\"unit\":\"x\",\"metric\":\"reads_per_query\",\"kind\":"
		"\"non-cause\",\"statement\":\"s\",\"title\":\"t\",\"id\":\"H3\"}";
	hyp *a = t_good(base_json), *b = t_good(other), *c;

	(void) state;
	assert_string_equal(a->canonical, b->canonical);
	assert_string_equal(a->sha256, b->sha256);
	/* fixed point: the canonical text parses to the same canonical text */
	c = t_good(a->canonical);
	assert_string_equal(c->canonical, a->canonical);
	assert_string_equal(c->sha256, a->sha256);
	assert_non_null(strstr(a->canonical, "\"band95\":[1.2,2]"));
	assert_null(strchr(a->canonical, ' '));
	hyp_free(a);
	hyp_free(b);
	hyp_free(c);
	/* a different value, a different hash */
	{
		char *s = t_mutate("prediction.value", "1.6");

		a = t_good(base_json);
		b = t_good(s);
		assert_string_not_equal(a->sha256, b->sha256);
		hyp_free(a);
		hyp_free(b);
		free(s);
	}
}

static void test_metric_list(void **state)
{
	const char *const *m = hyp_metrics();
	size_t n = 0;

	(void) state;
	while (m[n])
		assert_true(hyp_metric_known(m[n++]));
	assert_int_equal(n, 25);
	assert_true(hyp_metric_known("lat_p90_ms"));
	assert_true(hyp_metric_known("lat_p95_ms"));
	assert_true(hyp_metric_known("lat_p999_ms"));
	assert_true(hyp_metric_known("device_bytes_per_read"));
	assert_true(hyp_metric_known("prewarm_s"));
	assert_true(hyp_metric_known("engine_iops"));
	assert_true(hyp_metric_known("results_digest"));
	assert_true(hyp_metric_known("mem_peak_bytes"));
	assert_false(hyp_metric_known("heap_reads"));
	assert_false(hyp_metric_known(NULL));
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static void test_example_study(void **state)
{
	const char *src = getenv("COLDSTUDY_SRC");
	char dir[1024], path[1200], *names[64];
	hyp *hs[64];
	size_t n = 0;
	struct dirent *d;
	DIR *dh;
	cs_err e = { 0 };
	/* H1-H10 restate the seed's hypotheses, H12-H18 its findings, H19-H20
	 * H7 and H10 on the real disk (issue 14), H21-H22 H8 on a real cap and on
	 * the uncapped disk (issue 26); H11 is the demo's post-hoc one, in post-hoc/ */
	int seen[23] = { 0 };

	(void) state;
	snprintf(dir, sizeof(dir), "%s/studies/cold-query/hypotheses", src ? src : SRC_DIR);
	dh = opendir(dir);
	assert_non_null(dh);
	while ((d = readdir(dh)) && n < 64)
		if (d->d_name[0] == 'H' && strstr(d->d_name, ".json"))
			names[n++] = strdup(d->d_name);
	closedir(dh);
	qsort(names, n, sizeof(*names), name_cmp);
	assert_int_equal(n, 21);
	for (size_t i = 0; i < n; i++) {
		char want[32];
		int num;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (hyp_parse_file(path, &hs[i], &e))
			print_error("%s\n", e.msg);
		assert_non_null(hs[i]);
		snprintf(want, sizeof(want), "%s.json", hs[i]->id);
		assert_string_equal(want, names[i]);
		num = (int) strtol(hs[i]->id + 1, NULL, 10);
		assert_true(num >= 1 && num <= 22 && num != 11);
		seen[num]++;
	}
	for (int i = 1; i <= 22; i++)
		assert_int_equal(seen[i], i == 11 ? 0 : 1);
	assert_int_equal(hyp_check_unique(hs, n, &e), 0);
	for (size_t i = 0; i < n; i++) {
		hyp_free(hs[i]);
		free(names[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base_valid),
		cmocka_unit_test(test_unknown_keys),
		cmocka_unit_test(test_unknown_metric),
		cmocka_unit_test(test_band),
		cmocka_unit_test(test_empty_and_bad_rules),
		cmocka_unit_test(test_rule_limits),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_id_and_kind),
		cmocka_unit_test(test_text_level),
		cmocka_unit_test(test_duplicate_ids),
		cmocka_unit_test(test_canonical_hash),
		cmocka_unit_test(test_metric_list),
		cmocka_unit_test(test_example_study),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
