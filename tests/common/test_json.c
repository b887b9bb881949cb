/*
 * test_json.c - strict JSON loading and the canonical form (common/json.c).
 *
 * The loader must refuse every malformed input with exit 5 and a one-line
 * message naming the file and line:column (or JSON path); the canonical
 * form must be sorted, compact, raw UTF-8, print numbers that read back
 * to the same double, and be a fixed point of parse-then-canonicalise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cs.h"

/* Load buf (len bytes) named "t.json"; expect exit 5 and every needle in the message. */
static void t_expect_bad(const char *buf, size_t len, const char *n1, const char *n2)
{
	cs_err e = { 0 };
	json_t *v = NULL;
	int rc = cs_json_load_buf(buf, len, "t.json", &v, &e);

	if (rc != CS_EXIT_BADINPUT || !strstr(e.msg, "t.json") || (n1 && !strstr(e.msg, n1)) ||
	    (n2 && !strstr(e.msg, n2)))
		print_error("rc %d, message: %s\n", rc, e.msg);
	assert_int_equal(rc, CS_EXIT_BADINPUT);
	assert_null(v);
	assert_non_null(strstr(e.msg, "t.json"));
	if (n1)
		assert_non_null(strstr(e.msg, n1));
	if (n2)
		assert_non_null(strstr(e.msg, n2));
	for (const char *p = e.msg; *p; p++)
		assert_true((unsigned char) *p >= 0x20 && (unsigned char) *p < 0x7f);
}

/* Load a C string that must be accepted. */
static json_t *t_load(const char *s)
{
	cs_err e = { 0 };
	json_t *v = NULL;
	int rc = cs_json_load_buf(s, strlen(s), "t.json", &v, &e);

	if (rc)
		print_error("unexpected refusal: %s\n", e.msg);
	assert_int_equal(rc, 0);
	assert_non_null(v);
	return v;
}

/* Canonical form of a C string's document. Caller frees. */
static char *t_canon(const char *s)
{
	json_t *v = t_load(s);
	char *out = NULL;
	size_t len = 0;

	assert_int_equal(cs_json_canonical(v, &out, &len, NULL), 0);
	assert_int_equal(strlen(out), len);
	json_decref(v);
	return out;
}

static void test_utf8_rejected(void **state)
{
	(void) state;
	/* a stray byte, an overlong '/', a UTF-16 surrogate, a code point past U+10FFFF, a cut sequence */
	t_expect_bad("{\"a\": \"x\xff\"}", 11, "t.json:1:9", "invalid UTF-8");
	t_expect_bad("{\n\"a\": \"\xc0\xaf\"}", 12, "t.json:2:7", "0xc0");
	t_expect_bad("{\"a\": \"\xed\xa0\x80\"}", 13, "invalid UTF-8", NULL);
	t_expect_bad("{\"a\": \"\xf4\x90\x80\x80\"}", 14, "invalid UTF-8", NULL);
	t_expect_bad("{\"a\": \"\xe2\x82", 9, "invalid UTF-8", NULL);
	/* an escaped lone surrogate is jansson's to refuse */
	t_expect_bad("{\"a\": \"\\ud800\"}", 15, "t.json:1:", NULL);
}

static void test_utf8_accepted(void **state)
{
	char *c;

	(void) state;
	c = t_canon("{\"b\": \"\xc3\xa9\xf0\x9d\x84\x9e\\u00e9\", \"a\": \"\\u2028\"}");
	/* raw UTF-8, never \u-escaped; escapes decoded */
	assert_string_equal(c, "{\"a\":\"\xe2\x80\xa8\",\"b\":\"\xc3\xa9\xf0\x9d\x84\x9e\xc3\xa9\"}");
	free(c);
}

static void test_nul_and_control(void **state)
{
	(void) state;
	t_expect_bad("{\"a\": 1,\n \0}", 12, "t.json:2:2", "NUL");
	t_expect_bad("{\"a\": \"\\u0000\"}", 15, "t.json:1:", NULL);
	/* a raw tab inside a string: refused, and the message stays printable */
	t_expect_bad("{\"a\": \"x\ty\"}", 12, "t.json:1:", "control");
}

static void test_duplicates_and_garbage(void **state)
{
	(void) state;
	t_expect_bad("{\"a\": 1, \"a\": 2}", 16, "t.json:1:", "duplicate");
	t_expect_bad("{\"x\": {\"a\": 1,\n\"a\": 2}}", 23, "t.json:2:", "duplicate");
	t_expect_bad("{\"a\": 1} x", 10, "t.json:1:", NULL);
	t_expect_bad("{\"a\": 1}{}", 10, "t.json:1:", NULL);
	t_expect_bad("", 0, "t.json:", NULL);
	t_expect_bad("[1, 2]", 6, "t.json: $:", "object");
	t_expect_bad("{\"a\": 1e400}", 12, "t.json:1:", NULL);
	t_expect_bad("{\"a\": 99999999999999999999}", 27, "t.json:1:", NULL);
	t_expect_bad("{\"a\": NaN}", 10, "t.json:1:", NULL);
	t_expect_bad("\xef\xbb\xbf{}", 5, "t.json:1:", NULL);
}

static void test_depth(void **state)
{
	char buf[512];
	size_t n = 0;
	json_t *v;

	(void) state;
	/* 64 levels of containers (the top object and 63 arrays) load ... */
	n += (size_t) snprintf(buf + n, sizeof(buf) - n, "{\"a\":");
	for (int i = 0; i < 63; i++)
		buf[n++] = '[';
	for (int i = 0; i < 63; i++)
		buf[n++] = ']';
	buf[n++] = '}';
	buf[n] = '\0';
	v = t_load(buf);
	json_decref(v);
	/* ... 65 do not, and the message names where */
	n = 0;
	n += (size_t) snprintf(buf + n, sizeof(buf) - n, "{\"a\":");
	for (int i = 0; i < 64; i++)
		buf[n++] = '[';
	for (int i = 0; i < 64; i++)
		buf[n++] = ']';
	buf[n++] = '}';
	buf[n] = '\0';
	t_expect_bad(buf, n, "$[\"a\"][0][0]", "deeper than 64");
}

static void test_file_cap(void **state)
{
	char path[] = "/tmp/cs-json-cap-XXXXXX";
	int fd = mkstemp(path);
	cs_err e = { 0 };
	json_t *v = NULL;
	char body[100];

	(void) state;
	assert_true(fd >= 0);
	memset(body, ' ', sizeof(body));
	body[0] = '{';
	body[sizeof(body) - 1] = '}';
	assert_int_equal(write(fd, body, sizeof(body)), (ssize_t) sizeof(body));
	close(fd);
	assert_int_equal(cs_json_load_file(path, 99, &v, &e), CS_EXIT_BADINPUT);
	assert_null(v);
	assert_non_null(strstr(e.msg, path));
	assert_non_null(strstr(e.msg, "cap"));
	assert_int_equal(cs_json_load_file(path, 100, &v, &e), 0);
	json_decref(v);
	unlink(path);
	assert_int_equal(cs_json_load_file("/nonexistent/x.json", 100, &v, &e), CS_EXIT_BADINPUT);
	assert_non_null(strstr(e.msg, "/nonexistent/x.json"));
}

static void test_canonical_shape(void **state)
{
	char *c;

	(void) state;
	c = t_canon("{ \"b\" : 1 ,\n \"a\" : [ true , null , \"x\\n\\\"\\\\\\u0001\" ] ,"
		    " \"A\": {\"z\": 2.0, \"\xc3\xa9\": -0.0, \"e\": 1E2} }");
	assert_string_equal(c, "{\"A\":{\"e\":100,\"z\":2,\"\xc3\xa9\":0},"
			       "\"a\":[true,null,\"x\\n\\\"\\\\\\u0001\"],\"b\":1}");
	free(c);
	c = t_canon("{\"x\": 0.1, \"y\": 1e-7, \"z\": 1e21, \"w\": 123456789.125, \"v\": -2.5e-3}");
	assert_string_equal(c, "{\"v\":-0.0025,\"w\":123456789.125,\"x\":0.1,\"y\":1e-07,"
			       "\"z\":1e+21}");
	free(c);
}

/* A double from 64 random bits (xorshift), finite ones only. */
static double t_random_double(uint64_t *s)
{
	for (;;) {
		uint64_t x = *s;
		double d;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		*s = x;
		memcpy(&d, &x, sizeof(d));
		if (isfinite(d))
			return d;
	}
}

/* canonical(real d) parses back to exactly d (0 for -0), and is a fixed point. */
static void t_roundtrip(double d)
{
	json_t *o = json_object(), *back;
	char *c = NULL, *c2 = NULL;
	double got;

	json_object_set_new(o, "x", json_real(d));
	assert_int_equal(cs_json_canonical(o, &c, NULL, NULL), 0);
	back = t_load(c);
	got = json_number_value(json_object_get(back, "x"));
	if (got != d)
		print_error("%.17g printed as %s read back as %.17g\n", d, c, got);
	assert_true(got == d);
	assert_int_equal(cs_json_canonical(back, &c2, NULL, NULL), 0);
	assert_string_equal(c, c2);
	free(c);
	free(c2);
	json_decref(o);
	json_decref(back);
}

static void test_numbers_roundtrip(void **state)
{
	static const double fixed[] = {
		0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 1e-7, 5e-324, 2.2250738585072014e-308,
		1.7976931348623157e308, -1.7976931348623157e308, 9007199254740992.0,
		9007199254740993.0, 18014398509481984.0, 9223372036854775808.0, 1e17, 1e16,
		123456789.123, -2.5, 0.0, -0.0, 100.0, 1e21, 4.35, 0.000123,
	};
	uint64_t s = 0x9e3779b97f4a7c15ull;

	(void) state;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		t_roundtrip(fixed[i]);
	for (int i = 0; i < 20000; i++)
		t_roundtrip(t_random_double(&s));
}

static void test_numbers_shortest(void **state)
{
	json_t *o = json_object();
	char *c = NULL;

	(void) state;
	json_object_set_new(o, "a", json_real(0.1 + 0.2));
	json_object_set_new(o, "b", json_real(1.5));
	json_object_set_new(o, "c", json_integer(-9223372036854775807ll - 1));
	json_object_set_new(o, "d", json_real(5e-324));
	assert_int_equal(cs_json_canonical(o, &c, NULL, NULL), 0);
	assert_string_equal(c, "{\"a\":0.30000000000000004,\"b\":1.5,"
			       "\"c\":-9223372036854775808,\"d\":5e-324}");
	free(c);
	json_decref(o);
}

/* A random document of bounded size and depth. */
static json_t *t_random_doc(uint64_t *s, int depth)
{
	uint64_t r;
	json_t *v;
	char key[8];

	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	r = *s;
	switch (depth > 4 ? r % 5 : r % 7) {
	case 0: return json_integer((json_int_t) (r >> 8) - (json_int_t) (1ll << 54));
	case 1: return json_real(t_random_double(s));
	case 2: {
		char str[6] = { 'a', (char) ('!' + r % 90), '\xc3', '\xa9', (char) (r % 31 + 1), 0 };
		return json_string(str);
	}
	case 3: return json_boolean(r & 1);
	case 4: return json_null();
	case 5:
		v = json_array();
		for (uint64_t i = 0; i < (r >> 8) % 5; i++)
			json_array_append_new(v, t_random_doc(s, depth + 1));
		return v;
	default:
		v = json_object();
		for (uint64_t i = 0; i < (r >> 8) % 5; i++) {
			snprintf(key, sizeof(key), "k%u", (unsigned) ((r >> (12 + i * 4)) % 16));
			json_object_set_new(v, key, t_random_doc(s, depth + 1));
		}
		return v;
	}
}

static void test_fixed_point(void **state)
{
	uint64_t s = 12345;

	(void) state;
	for (int i = 0; i < 500; i++) {
		json_t *o = json_object(), *back;
		char *c1 = NULL, *c2 = NULL;

		json_object_set_new(o, "doc", t_random_doc(&s, 0));
		assert_int_equal(cs_json_canonical(o, &c1, NULL, NULL), 0);
		back = t_load(c1);
		assert_int_equal(cs_json_canonical(back, &c2, NULL, NULL), 0);
		assert_string_equal(c1, c2);
		free(c1);
		free(c2);
		json_decref(o);
		json_decref(back);
	}
}

static void test_sha256(void **state)
{
	char hex[65];

	(void) state;
	cs_sha256_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	cs_sha256_hex("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/*
 * cs_proc_field: the first line that starts with the key, so a key whose
 * longer sibling comes first ("thp_fault_fallback_charge") is told apart
 * by its separator; no such line, no number after it, or no file: -1.
 */
static void test_proc_field(void **state)
{
	char path[] = "/tmp/cs-proc-XXXXXX";
	int fd = mkstemp(path);
	const char body[] = "thp_fault_fallback_charge 5\nthp_fault_fallback 7\n"
			    "RssAnon:\t  1234 kB\nVmRSS: none\n";

	(void) state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, body, sizeof(body) - 1), (ssize_t) (sizeof(body) - 1));
	close(fd);
	assert_int_equal(cs_proc_field(path, "thp_fault_fallback "), 7);
	assert_int_equal(cs_proc_field(path, "thp_fault_fallback_charge "), 5);
	assert_int_equal(cs_proc_field(path, "RssAnon:"), 1234);
	assert_int_equal(cs_proc_field(path, "VmRSS:"), -1);
	assert_int_equal(cs_proc_field(path, "VmHWM:"), -1);
	unlink(path);
	assert_int_equal(cs_proc_field(path, "RssAnon:"), -1);
	assert_true(cs_proc_field("/proc/self/status", "RssAnon:") > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_rejected),
		cmocka_unit_test(test_utf8_accepted),
		cmocka_unit_test(test_nul_and_control),
		cmocka_unit_test(test_duplicates_and_garbage),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_file_cap),
		cmocka_unit_test(test_canonical_shape),
		cmocka_unit_test(test_numbers_roundtrip),
		cmocka_unit_test(test_numbers_shortest),
		cmocka_unit_test(test_fixed_point),
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_proc_field),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
