/*
 * keys.c - key tables (jsonv.h): one description of a JSON document's
 * keys that both validates a document and writes its JSON Schema.
 *
 * The validator and the schema read the same fields of the same table
 * entry (type, bounds, lengths, enum values, patterns, required), so a
 * key documented by `coldstudy schema` is checked exactly as documented.
 * What a table cannot say (a constraint between two keys) the caller
 * checks by hand, and the table's terminator carries the same constraint
 * as schema text, next to it in the source.
 *
 * Patterns go through POSIX regcomp (REG_EXTENDED | REG_NOSUB) here and
 * through ECMA-262 in a JSON Schema validator; the tables keep to the
 * common subset (anchors, classes, groups, alternation, ?, *, +, {m,n}).
 */
#include "jsonv.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STRING_MAX_DEFAULT 4096
#define ARRAY_MAX_DEFAULT 64

/* Control characters: what JK_ONELINE refuses, as ECMA-262 writes it. */
#define ONELINE_PATTERN "^[^\\u0000-\\u001f\\u007f]*$"

static int bad(cs_err *e, const char *name, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int bad(cs_err *e, const char *name, const char *path, const char *fmt, ...)
{
	char why[CS_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s: %s", name, path, why);
}

/* 1 if s matches the extended regular expression re (a bad pattern never matches). */
static int matches(const char *re, const char *s)
{
	regex_t rx;
	int ok;

	if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB))
		return 0;
	ok = regexec(&rx, s, 0, NULL, 0) == 0;
	regfree(&rx);
	return ok;
}

static int one_line(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

/* A short, one-line quote of a string value for a message. */
static const char *quote(const json_t *v, char out[52])
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v), o = 0;

	for (size_t i = 0; i < n && o < 48; i++)
		out[o++] = ((unsigned char) s[i] < 0x20 || s[i] == 0x7f || s[i] == '"') ? '?' : s[i];
	if (n > 48)
		out[o++] = '.', out[o++] = '.', out[o++] = '.';
	out[o] = '\0';
	return out;
}

/* What a value of key k is called in messages. */
static const char *type_name(const jv_key *k)
{
	switch (k->type) {
	case JK_STRING: return (k->flags & JK_EMPTY_OK) ? "a string" : "a non-empty string";
	case JK_INT: return "an integer";
	case JK_NUMBER: return "a number";
	case JK_BOOL: return "a boolean";
	case JK_ENUM: return "a string";
	case JK_STRINGS: return "an array of strings";
	case JK_INTS: return "an array of integers";
	case JK_OBJECT:
	case JK_MAP:
	case JK_OBJECT_MAP: return "an object";
	case JK_ANY: break;
	}
	return "a value";
}

static const char *const *enum_vals(const jv_key *k)
{
	static const char *const none[] = {NULL};
	const char *const *v = k->vals_fn ? k->vals_fn() : k->vals;

	return v ? v : none;
}

/* A string at path under key k's string rules (max bytes, one line, pattern). */
static int check_string(const jv_key *k, const json_t *v, size_t max, int empty_ok,
			const char *pattern, const char *name, const char *path, cs_err *e)
{
	size_t n = json_string_length(v);
	char q[52];

	if (!json_is_string(v) || (!n && !empty_ok))
		return bad(e, name, path, "expected %s, got %s",
			   empty_ok ? "a string" : "a non-empty string", jv_value_name(v));
	if (n > max)
		return bad(e, name, path, "expected at most %zu bytes, got %zu", max, n);
	if (strlen(json_string_value(v)) != n)
		return bad(e, name, path, "expected a string without NUL characters");
	if ((k->flags & JK_ONELINE) && !one_line(json_string_value(v), n))
		return bad(e, name, path, "expected one line (no control characters)");
	if (pattern && !matches(pattern, json_string_value(v)))
		return bad(e, name, path, "expected %s, got \"%s\"", k->expect ? k->expect : pattern,
			   quote(v, q));
	return 0;
}

static int check_value(const jv_key *k, const json_t *v, const char *name, const char *path,
		       cs_err *e);

static int check_ints(const jv_key *k, const json_t *v, const char *name, const char *path,
		      cs_err *e)
{
	size_t max = k->max ? k->max : ARRAY_MAX_DEFAULT, i;
	char sub[JV_PATH_MAX];
	json_t *x;

	if (!json_is_array(v) || !json_array_size(v))
		return bad(e, name, path, "expected a non-empty array of integers, got %s",
			   json_is_array(v) ? "an empty array" : jv_value_name(v));
	if (json_array_size(v) > max)
		return bad(e, name, path, "expected at most %zu items, got %zu", max,
			   json_array_size(v));
	json_array_foreach(v, i, x) {
		jv_path_index(sub, sizeof(sub), path, i);
		if (!json_is_integer(x) || (double) json_integer_value(x) < k->lo ||
		    (double) json_integer_value(x) > k->hi)
			return bad(e, name, sub, "expected an integer in [%.0f, %.0f]", k->lo, k->hi);
		if (k->flags & JK_UNIQUE)
			for (size_t j = 0; j < i; j++)
				if (json_integer_value(json_array_get(v, j)) == json_integer_value(x))
					return bad(e, name, sub, "listed twice (also at [%zu])", j);
	}
	return 0;
}

static int check_strings(const jv_key *k, const json_t *v, const char *name, const char *path,
			 cs_err *e)
{
	size_t max = k->max ? k->max : ARRAY_MAX_DEFAULT, i;
	char sub[JV_PATH_MAX];
	json_t *x;

	if (!json_is_array(v))
		return bad(e, name, path, "expected an array of strings, got %s", jv_value_name(v));
	if (json_array_size(v) > max)
		return bad(e, name, path, "expected at most %zu items, got %zu", max,
			   json_array_size(v));
	json_array_foreach(v, i, x) {
		jv_path_index(sub, sizeof(sub), path, i);
		if (check_string(k, x, STRING_MAX_DEFAULT, 0, k->pattern, name, sub, e))
			return CS_EXIT_BADINPUT;
		if (k->flags & JK_UNIQUE)
			for (size_t j = 0; j < i; j++)
				if (json_equal(json_array_get(v, j), x))
					return bad(e, name, sub, "listed twice (also at [%zu])", j);
	}
	return 0;
}

static int check_map(const jv_key *k, const json_t *v, const char *name, const char *path,
		     cs_err *e)
{
	char sub[JV_PATH_MAX];
	const char *key;
	json_t *x;

	if (!json_is_object(v))
		return bad(e, name, path, "expected an object {name: string}, got %s",
			   jv_value_name(v));
	json_object_foreach((json_t *) v, key, x) {
		jv_path_key(sub, sizeof(sub), path, key);
		if (k->pattern && !matches(k->pattern, key))
			return bad(e, name, sub, "expected a name of %s", k->pattern);
		if (check_string(k, x, k->max ? k->max : STRING_MAX_DEFAULT, 0, k->vpattern, name,
				 sub, e))
			return CS_EXIT_BADINPUT;
	}
	return 0;
}

static int check_value(const jv_key *k, const json_t *v, const char *name, const char *path,
		       cs_err *e)
{
	switch (k->type) {
	case JK_STRING:
		return check_string(k, v, k->max ? k->max : STRING_MAX_DEFAULT,
				    (k->flags & JK_EMPTY_OK) != 0, k->pattern, name, path, e);
	case JK_INT:
		if (!json_is_integer(v))
			return bad(e, name, path, "expected an integer, got %s", jv_value_name(v));
		if ((double) json_integer_value(v) < k->lo || (double) json_integer_value(v) > k->hi)
			return bad(e, name, path, "expected an integer in [%.0f, %.0f], got %lld", k->lo,
				   k->hi, (long long) json_integer_value(v));
		if (k->multiple && json_integer_value(v) % k->multiple)
			return bad(e, name, path, "expected a multiple of %lld", k->multiple);
		return 0;
	case JK_NUMBER: {
		double x = json_number_value(v);

		if (!json_is_number(v))
			return bad(e, name, path, "expected a number, got %s", jv_value_name(v));
		if (((k->flags & JK_EXCL_LO) ? x <= k->lo : x < k->lo) || x > k->hi)
			return bad(e, name, path, "expected a number in %s%g, %g]",
				   (k->flags & JK_EXCL_LO) ? "(" : "[", k->lo, k->hi);
		return 0;
	}
	case JK_BOOL:
		if (!json_is_boolean(v))
			return bad(e, name, path, "expected a boolean (true or false), got %s",
				   jv_value_name(v));
		return 0;
	case JK_ENUM: {
		const char *const *vals = enum_vals(k);
		char list[640], q[52];

		if (json_is_string(v)) {
			if (jv_in_list(json_string_value(v), vals) &&
			    strlen(json_string_value(v)) == json_string_length(v))
				return 0;
			if (k->pattern && matches(k->pattern, json_string_value(v)))
				return 0;
		}
		if (json_is_string(v) && !json_string_length(v))
			return bad(e, name, path, "expected a non-empty string, got an empty string");
		jv_list_str(vals, list, sizeof(list));
		if (k->expect && json_is_string(v)) {
			/* expect is the message, with the value where it says %s. */
			const char *at = strstr(k->expect, "%s");

			if (at)
				return bad(e, name, path, "%.*s%s%s", (int) (at - k->expect), k->expect,
					   quote(v, q), at + 2);
			return bad(e, name, path, "%s \"%s\" (expected one of: %s)", k->expect,
				   quote(v, q), list);
		}
		if (json_is_string(v))
			return bad(e, name, path, "expected one of: %s, got \"%s\"", list, quote(v, q));
		return bad(e, name, path, "expected one of: %s, got %s", list, jv_value_name(v));
	}
	case JK_STRINGS: return check_strings(k, v, name, path, e);
	case JK_INTS: return check_ints(k, v, name, path, e);
	case JK_OBJECT:
		if (!json_is_object(v))
			return bad(e, name, path, "expected an object, got %s", jv_value_name(v));
		return jv_keys_check(v, k->sub, 0, name, path, e);
	case JK_MAP: return check_map(k, v, name, path, e);
	case JK_OBJECT_MAP: {
		char sub[JV_PATH_MAX];
		const char *key;
		json_t *x;

		if (!json_is_object(v))
			return bad(e, name, path, "expected an object {name: {...}}, got %s",
				   jv_value_name(v));
		json_object_foreach((json_t *) v, key, x) {
			jv_path_key(sub, sizeof(sub), path, key);
			if (k->pattern && !matches(k->pattern, key))
				return bad(e, name, sub, "expected a name of %s", k->pattern);
			if (jv_keys_check(x, k->sub, 0, name, sub, e))
				return CS_EXIT_BADINPUT;
		}
		return 0;
	}
	case JK_ANY: return 0;
	}
	return 0;
}

int jv_keys_check(const json_t *obj, const jv_key *tab, int partial, const char *name,
		  const char *path, cs_err *e)
{
	const char *names[128], *key;
	size_t n = 0;
	json_t *v;

	if (!json_is_object(obj))
		return bad(e, name, path, "expected an object, got %s", jv_value_name(obj));
	for (const jv_key *k = tab; k->name && n + 1 < sizeof(names) / sizeof(names[0]); k++)
		names[n++] = k->name;
	names[n] = NULL;
	json_object_foreach((json_t *) obj, key, v) {
		(void) v;
		if (!jv_in_list(key, names))
			return jv_unknown_key(key, names, name, path, e);
	}
	for (const jv_key *k = tab; k->name; k++) {
		char sub[JV_PATH_MAX];

		v = json_object_get(obj, k->name);
		if (!v || ((k->flags & JK_NULLABLE) && json_is_null(v))) {
			if (!v && (k->flags & JK_REQUIRED) && !partial)
				return bad(e, name, path, "missing key \"%s\" (expected %s%s%s)", k->name,
					   type_name(k), k->desc ? ": " : "", k->desc ? k->desc : "");
			continue;
		}
		jv_path_key(sub, sizeof(sub), path, k->name);
		if (check_value(k, v, name, sub, e))
			return CS_EXIT_BADINPUT;
	}
	return 0;
}

/* ---- the schema ---- */

static json_t *string_schema(const jv_key *k, size_t max, int empty_ok, const char *pattern)
{
	json_t *s = json_pack("{s:s, s:I}", "type", "string", "maxLength", (json_int_t) max);

	if (!empty_ok)
		json_object_set_new(s, "minLength", json_integer(1));
	if (pattern)
		json_object_set_new(s, "pattern", json_string(pattern));
	else if (k->flags & JK_ONELINE)
		json_object_set_new(s, "pattern", json_string(ONELINE_PATTERN));
	return s;
}

static json_t *value_schema(const jv_key *k)
{
	json_t *s = NULL;

	switch (k->type) {
	case JK_STRING:
		s = string_schema(k, k->max ? k->max : STRING_MAX_DEFAULT, (k->flags & JK_EMPTY_OK) != 0,
				  k->pattern);
		break;
	case JK_INT:
		s = json_pack("{s:s, s:f, s:f}", "type", "integer", "minimum", k->lo, "maximum", k->hi);
		/* Integers print as integers: 1 rather than 1.0. */
		json_object_set_new(s, "minimum", json_integer((json_int_t) k->lo));
		json_object_set_new(s, "maximum", json_integer((json_int_t) k->hi));
		if (k->multiple)
			json_object_set_new(s, "multipleOf", json_integer(k->multiple));
		break;
	case JK_NUMBER:
		s = json_pack("{s:s, s:f, s:f}", "type", "number",
			      (k->flags & JK_EXCL_LO) ? "exclusiveMinimum" : "minimum", k->lo, "maximum",
			      k->hi);
		break;
	case JK_BOOL: s = json_pack("{s:s}", "type", "boolean"); break;
	case JK_ENUM: {
		const char *const *vals = enum_vals(k);
		json_t *en = json_array();

		for (size_t i = 0; vals[i]; i++)
			json_array_append_new(en, json_string(vals[i]));
		s = json_pack("{s:s, s:o}", "type", "string", "enum", en);
		if (k->pattern)
			s = json_pack("{s:[o, {s:s, s:s}]}", "anyOf", s, "type", "string", "pattern",
				      k->pattern);
		break;
	}
	case JK_STRINGS:
		s = json_pack("{s:s, s:I, s:o}", "type", "array", "maxItems",
			      (json_int_t) (k->max ? k->max : ARRAY_MAX_DEFAULT), "items",
			      string_schema(k, STRING_MAX_DEFAULT, 0, k->pattern));
		if (k->flags & JK_UNIQUE)
			json_object_set_new(s, "uniqueItems", json_true());
		break;
	case JK_INTS:
		s = json_pack("{s:s, s:i, s:I, s:{s:s, s:I, s:I}}", "type", "array", "minItems", 1,
			      "maxItems", (json_int_t) (k->max ? k->max : ARRAY_MAX_DEFAULT), "items",
			      "type", "integer", "minimum", (json_int_t) k->lo, "maximum",
			      (json_int_t) k->hi);
		if (k->flags & JK_UNIQUE)
			json_object_set_new(s, "uniqueItems", json_true());
		break;
	case JK_OBJECT: s = jv_keys_schema(k->sub, 0); break;
	case JK_MAP:
		s = json_pack("{s:s, s:o}", "type", "object", "additionalProperties",
			      string_schema(k, k->max ? k->max : STRING_MAX_DEFAULT, 0, k->vpattern));
		if (k->pattern)
			json_object_set_new(s, "propertyNames", json_pack("{s:s}", "pattern", k->pattern));
		break;
	case JK_OBJECT_MAP:
		s = json_pack("{s:s, s:o}", "type", "object", "additionalProperties",
			      jv_keys_schema(k->sub, 0));
		if (k->pattern)
			json_object_set_new(s, "propertyNames", json_pack("{s:s}", "pattern", k->pattern));
		break;
	case JK_ANY: s = k->schema ? json_loads(k->schema, 0, NULL) : json_object(); break;
	}
	if (!s)
		return NULL;
	if (k->flags & JK_NULLABLE)
		s = json_pack("{s:[{s:s}, o]}", "anyOf", "type", "null", s);
	if (s && k->desc)
		json_object_set_new(s, "description", json_string(k->desc));
	return s;
}

json_t *jv_keys_schema(const jv_key *tab, int partial)
{
	json_t *props = json_object(), *req = json_array(), *s;
	const jv_key *k;

	if (!props || !req) {
		json_decref(props);
		json_decref(req);
		return NULL;
	}
	for (k = tab; k->name; k++) {
		json_t *v = value_schema(k);

		if (!v) {
			json_decref(props);
			json_decref(req);
			return NULL;
		}
		json_object_set_new(props, k->name, v);
		if ((k->flags & JK_REQUIRED) && !partial)
			json_array_append_new(req, json_string(k->name));
	}
	s = json_pack("{s:s, s:o, s:b}", "type", "object", "properties", props,
		      "additionalProperties", 0);
	if (s && json_array_size(req))
		json_object_set(s, "required", req);
	json_decref(req);
	/* The terminator's schema: constraints between keys. */
	if (s && k->schema) {
		json_t *extra = json_loads(k->schema, 0, NULL);

		if (extra)
			json_object_update(s, extra);
		json_decref(extra);
	}
	return s;
}
