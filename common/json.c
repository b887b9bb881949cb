/*
 * json.c - strict JSON loading and the canonical form.
 *
 * Canonical form (the bytes every hash in coldstudy is taken over):
 * object keys sorted by their UTF-8 bytes, no insignificant white space,
 * strings as UTF-8 with only '"', '\\' and control characters escaped,
 * integers in decimal, reals in the shortest %.Ng (N = 1..17) that parses
 * back to the same double. A real that is integral and below 2^53 prints
 * like an integer, so a value hashes the same whether a file wrote 2 or
 * 2.0; canonicalise(parse(canonical)) is therefore a fixed point.
 */
#include "cs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cs_json_load_buf(const char *buf, size_t len, const char *name, json_t **out, cs_err *e)
{
	json_error_t jerr;
	json_t *v;

	*out = NULL;
	if (memchr(buf, '\0', len))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: byte %zu: NUL byte in JSON text", name,
				  (size_t) ((const char *) memchr(buf, '\0', len) - buf));
	v = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!v)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s:%d:%d: %s", name, jerr.line, jerr.column,
				  jerr.text);
	if (!json_is_object(v)) {
		json_decref(v);
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: $: expected a JSON object at the top",
				  name);
	}
	*out = v;
	return 0;
}

int cs_json_load_file(const char *path, size_t cap, json_t **out, cs_err *e)
{
	char *buf;
	size_t len;
	int rc;

	*out = NULL;
	rc = cs_read_file(path, cap, &buf, &len, e);
	if (rc)
		return rc;
	rc = cs_json_load_buf(buf, len, path, out, e);
	free(buf);
	return rc;
}

/* A growable output buffer with a cap (bounded memory, STYLE 7). */
typedef struct {
	char *p;
	size_t len, cap;
	int failed;
} sbuf;

#define CANON_MAX (64u << 20)

static void sb_put(sbuf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap : 256;
		char *np;

		while (nc < b->len + n + 1)
			nc *= 2;
		if (nc > CANON_MAX) {
			b->failed = 1;
			return;
		}
		np = realloc(b->p, nc);
		if (!np) {
			b->failed = 1;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void put_string(sbuf *b, const char *s, size_t n)
{
	sb_put(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char) s[i];
		char esc[8];

		switch (c) {
		case '"': sb_put(b, "\\\"", 2); break;
		case '\\': sb_put(b, "\\\\", 2); break;
		case '\b': sb_put(b, "\\b", 2); break;
		case '\f': sb_put(b, "\\f", 2); break;
		case '\n': sb_put(b, "\\n", 2); break;
		case '\r': sb_put(b, "\\r", 2); break;
		case '\t': sb_put(b, "\\t", 2); break;
		default:
			if (c < 0x20) {
				snprintf(esc, sizeof(esc), "\\u%04x", c);
				sb_put(b, esc, 6);
			} else {
				sb_put(b, (const char *) &s[i], 1);
			}
		}
	}
	sb_put(b, "\"", 1);
}

/* Shortest round-tripping representation of a finite double. */
static void put_real(sbuf *b, double d)
{
	char tmp[40];

	if (d == floor(d) && fabs(d) < 9007199254740992.0) {
		snprintf(tmp, sizeof(tmp), "%.0f", d);
		if (strcmp(tmp, "-0") == 0)
			snprintf(tmp, sizeof(tmp), "0");
		sb_put(b, tmp, strlen(tmp));
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	sb_put(b, tmp, strlen(tmp));
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static void put_value(sbuf *b, const json_t *v, int depth)
{
	char tmp[32];

	if (depth > 64) {
		b->failed = 1;
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		size_t n = json_object_size(v), i = 0;
		const char **keys = n ? malloc(n * sizeof(*keys)) : NULL;
		const char *k;
		json_t *val;

		if (n && !keys) {
			b->failed = 1;
			return;
		}
		json_object_foreach((json_t *) v, k, val)
			keys[i++] = k;
		qsort(keys, n, sizeof(*keys), key_cmp);
		sb_put(b, "{", 1);
		for (i = 0; i < n; i++) {
			if (i)
				sb_put(b, ",", 1);
			put_string(b, keys[i], strlen(keys[i]));
			sb_put(b, ":", 1);
			put_value(b, json_object_get(v, keys[i]), depth + 1);
		}
		sb_put(b, "}", 1);
		free(keys);
		break;
	}
	case JSON_ARRAY:
		sb_put(b, "[", 1);
		for (size_t i = 0; i < json_array_size(v); i++) {
			if (i)
				sb_put(b, ",", 1);
			put_value(b, json_array_get(v, i), depth + 1);
		}
		sb_put(b, "]", 1);
		break;
	case JSON_STRING:
		put_string(b, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		snprintf(tmp, sizeof(tmp), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		sb_put(b, tmp, strlen(tmp));
		break;
	case JSON_REAL:
		if (!isfinite(json_real_value(v))) {
			b->failed = 1;
			return;
		}
		put_real(b, json_real_value(v));
		break;
	case JSON_TRUE: sb_put(b, "true", 4); break;
	case JSON_FALSE: sb_put(b, "false", 5); break;
	case JSON_NULL: sb_put(b, "null", 4); break;
	}
}

int cs_json_canonical(const json_t *v, char **out, size_t *len, cs_err *e)
{
	sbuf b = {0};

	*out = NULL;
	put_value(&b, v, 0);
	if (b.failed || !b.p) {
		free(b.p);
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "canonical form: value too large, too deep or not finite");
	}
	*out = b.p;
	if (len)
		*len = b.len;
	return 0;
}
