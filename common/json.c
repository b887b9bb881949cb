/*
 * json.c - strict JSON loading and the canonical form.
 *
 * Strict loading refuses, with "FILE:LINE:COL: why" (or a JSON path):
 * bytes that are not UTF-8 (overlong forms and surrogates included) or
 * NUL, anything jansson refuses (syntax, duplicate keys, trailing
 * garbage, integers beyond int64, reals that overflow), a top level that
 * is not an object, and nesting deeper than 64 levels. The size cap is
 * the caller's (cs_read_file). Error text from jansson is escaped so a
 * message stays one printable line whatever the input held.
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

/* Nesting the loader accepts; the canonical writer refuses deeper trees too. */
#define JSON_DEPTH_MAX 64

/*
 * Length of the valid UTF-8 sequence at p (at most n bytes), or 0 if it is
 * not one: no overlong forms, no surrogates, nothing above U+10FFFF
 * (RFC 3629 section 4).
 */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	size_t len, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/*
 * The first invalid UTF-8 byte or NUL in buf, as a message naming line and
 * column (1-based, columns in bytes); 0 if the text is clean.
 */
static int check_text(const char *buf, size_t len, const char *name, cs_err *e)
{
	const unsigned char *p = (const unsigned char *) buf;
	size_t i = 0, line = 1, col = 1;

	while (i < len) {
		size_t n;

		if (p[i] == '\0')
			return cs_err_set(e, CS_EXIT_BADINPUT, "%s:%zu:%zu: NUL byte (byte %zu)",
					  name, line, col, i);
		n = utf8_seq(p + i, len - i);
		if (!n)
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "%s:%zu:%zu: invalid UTF-8 (byte 0x%02x at offset %zu)",
					  name, line, col, p[i], i);
		if (p[i] == '\n') {
			line++;
			col = 1;
		} else {
			col += n;
		}
		i += n;
	}
	return 0;
}

/* Copy jansson's error text, escaping what would break a one-line message. */
static void clean_text(const char *in, char *out, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; in[i] && o + 5 < n; i++) {
		unsigned char c = (unsigned char) in[i];

		if (c < 0x20 || c >= 0x7f) {
			snprintf(out + o, n - o, "\\x%02x", c);
			o += 4;
		} else {
			out[o++] = (char) c;
		}
	}
	out[o] = '\0';
}

/* Refuse nesting deeper than JSON_DEPTH_MAX, naming the path where it starts. */
static int check_depth(const json_t *v, int depth, char *path, size_t cap, const char *name,
		       cs_err *e)
{
	size_t plen = strlen(path);
	int rc = 0;

	if (!json_is_object(v) && !json_is_array(v))
		return 0;
	if (depth >= JSON_DEPTH_MAX)
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: %s: nested deeper than %d levels", name, path,
				  JSON_DEPTH_MAX);
	if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v) && !rc; i++) {
			snprintf(path + plen, cap - plen, "[%zu]", i);
			rc = check_depth(json_array_get(v, i), depth + 1, path, cap, name, e);
		}
	} else {
		const char *k;
		json_t *x;

		json_object_foreach((json_t *) v, k, x) {
			char kb[32];

			clean_text(k, kb, sizeof(kb));
			snprintf(path + plen, cap - plen, "[\"%s\"]", kb);
			rc = check_depth(x, depth + 1, path, cap, name, e);
			if (rc)
				break;
		}
	}
	path[plen] = '\0';
	return rc;
}

int cs_json_load_buf(const char *buf, size_t len, const char *name, json_t **out, cs_err *e)
{
	json_error_t jerr;
	char text[JSON_ERROR_TEXT_LENGTH * 4 + 8];
	char path[JSON_DEPTH_MAX * 40 + 8] = "$";
	json_t *v;
	int rc;

	*out = NULL;
	rc = check_text(buf, len, name, e);
	if (rc)
		return rc;
	/* jansson rejects duplicate keys (flag) and trailing garbage (no JSON_DISABLE_EOF_CHECK). */
	v = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!v) {
		clean_text(jerr.text, text, sizeof(text));
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s:%d:%d: %s", name, jerr.line, jerr.column,
				  text);
	}
	if (!json_is_object(v)) {
		json_decref(v);
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: $: expected a JSON object at the top",
				  name);
	}
	rc = check_depth(v, 0, path, sizeof(path), name, e);
	if (rc) {
		json_decref(v);
		return rc;
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

	if (depth > JSON_DEPTH_MAX) {
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
		if (n) /* qsort(NULL, 0, ...) is undefined */
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

int cs_json_has_string(const json_t *a, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), s))
			return 1;
	return 0;
}

int cs_in_list(const char *const *list, const char *s)
{
	for (size_t i = 0; list && list[i]; i++)
		if (!strcmp(list[i], s))
			return 1;
	return 0;
}
