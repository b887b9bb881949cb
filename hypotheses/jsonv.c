/*
 * jsonv.c - "expect key K of type T at $.path" for JSON files that must
 * explain themselves. See jsonv.h for the message shapes.
 *
 * Paths are built into fixed buffers and cut rather than grown: a path
 * only ever names a place for a human, so a truncated one ("...") is
 * still useful and memory stays bounded whatever the document's depth.
 */
#include "jsonv.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

const char *jv_type_name(jv_type t)
{
	switch (t) {
	case JV_ANY: return "a value";
	case JV_OBJECT: return "an object";
	case JV_ARRAY: return "an array";
	case JV_STRING: return "a string";
	case JV_TEXT: return "a non-empty string";
	case JV_NUMBER: return "a number";
	case JV_INTEGER: return "an integer";
	case JV_UINT: return "a non-negative integer";
	case JV_BOOL: return "true or false";
	}
	return "a value";
}

const char *jv_value_name(const json_t *v)
{
	if (!v)
		return "nothing";
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return json_string_length(v) ? "a string" : "an empty string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE: return "true";
	case JSON_FALSE: return "false";
	case JSON_NULL: return "null";
	}
	return "a value";
}

int jv_is(const json_t *v, jv_type t)
{
	if (!v)
		return 0;
	switch (t) {
	case JV_ANY: return 1;
	case JV_OBJECT: return json_is_object(v);
	case JV_ARRAY: return json_is_array(v);
	case JV_STRING: return json_is_string(v);
	case JV_TEXT: return json_is_string(v) && json_string_length(v) > 0;
	case JV_NUMBER: return json_is_number(v);
	case JV_INTEGER: return json_is_integer(v);
	case JV_UINT: return json_is_integer(v) && json_integer_value(v) >= 0;
	case JV_BOOL: return json_is_boolean(v);
	}
	return 0;
}

/* Append s to out (capacity n, current length *len), cutting with "..." when full. */
static void append(char *out, size_t n, size_t *len, const char *s, size_t sl)
{
	if (*len + sl + 1 <= n) {
		memcpy(out + *len, s, sl);
		*len += sl;
		out[*len] = '\0';
		return;
	}
	if (n >= 4) {
		*len = n - 4;
		memcpy(out + *len, "...", 4);
		*len = n - 1;
	}
}

/* A key that can be written after a dot: [A-Za-z_][A-Za-z0-9_]*, at most 64 bytes. */
static int plain_key(const char *k)
{
	size_t i;

	if (!((k[0] >= 'A' && k[0] <= 'Z') || (k[0] >= 'a' && k[0] <= 'z') || k[0] == '_'))
		return 0;
	for (i = 1; k[i]; i++) {
		char c = k[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return 0;
		if (i >= 64)
			return 0;
	}
	return 1;
}

void jv_path_key(char *out, size_t n, const char *parent, const char *key)
{
	size_t len = 0;

	if (!n)
		return;
	out[0] = '\0';
	append(out, n, &len, parent, strlen(parent));
	if (plain_key(key)) {
		append(out, n, &len, ".", 1);
		append(out, n, &len, key, strlen(key));
		return;
	}
	append(out, n, &len, "[\"", 2);
	for (size_t i = 0; key[i] && i < 64; i++) {
		unsigned char c = (unsigned char) key[i];
		char esc[8];

		if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			append(out, n, &len, esc, 6);
		} else if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char) c;
			append(out, n, &len, esc, 2);
		} else {
			append(out, n, &len, (const char *) &key[i], 1);
		}
		if (i == 63 && key[i + 1])
			append(out, n, &len, "...", 3);
	}
	append(out, n, &len, "\"]", 2);
}

void jv_path_index(char *out, size_t n, const char *parent, size_t i)
{
	char tmp[32];
	size_t len = 0;

	if (!n)
		return;
	out[0] = '\0';
	append(out, n, &len, parent, strlen(parent));
	snprintf(tmp, sizeof(tmp), "[%zu]", i);
	append(out, n, &len, tmp, strlen(tmp));
}

int jv_expect(const json_t *v, jv_type t, const char *name, const char *path, cs_err *e)
{
	if (jv_is(v, t))
		return 0;
	return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s: expected %s, got %s", name, path,
			  jv_type_name(t), jv_value_name(v));
}

int jv_get(const json_t *obj, const char *key, jv_type t, int required, const char *name,
	   const char *path, json_t **out, cs_err *e)
{
	char sub[JV_PATH_MAX];
	json_t *v;

	*out = NULL;
	if (!json_is_object(obj))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s: expected an object, got %s", name,
				  path, jv_value_name(obj));
	v = json_object_get(obj, key);
	if (!v) {
		if (!required)
			return 0;
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s: missing key \"%s\" (expected %s)",
				  name, path, key, jv_type_name(t));
	}
	jv_path_key(sub, sizeof(sub), path, key);
	if (jv_expect(v, t, name, sub, e))
		return CS_EXIT_BADINPUT;
	*out = v;
	return 0;
}

int jv_in_list(const char *s, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(s, list[i]) == 0)
			return 1;
	return 0;
}

void jv_list_str(const char *const *list, char *out, size_t n)
{
	size_t len = 0;

	if (!n)
		return;
	out[0] = '\0';
	for (size_t i = 0; list[i]; i++) {
		if (i)
			append(out, n, &len, ", ", 2);
		append(out, n, &len, list[i], strlen(list[i]));
	}
}

int jv_only_keys(const json_t *obj, const char *const *allowed, const char *name,
		 const char *path, cs_err *e)
{
	const char *k;
	json_t *v;

	if (!json_is_object(obj))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s: expected an object, got %s", name,
				  path, jv_value_name(obj));
	json_object_foreach((json_t *) obj, k, v) {
		(void) v;
		if (jv_in_list(k, allowed))
			continue;
		return jv_unknown_key(k, allowed, name, path, e);
	}
	return 0;
}

/* Levenshtein distance of a and b, capped (either longer than 64: the cap). */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[65];

	if (la > 64 || lb > 64)
		return 64;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

const char *jv_nearest(const char *key, const char *const *names)
{
	const char *best = NULL;
	size_t bd = SIZE_MAX, len = strlen(key);

	for (size_t i = 0; names[i]; i++) {
		size_t d = edit_distance(key, names[i]);

		if (d < bd) {
			bd = d;
			best = names[i];
		}
	}
	/* Near: at most 2 edits, or a third of the key (a typo, not another word). */
	return best && bd > 0 && (bd <= 2 || bd <= len / 3) ? best : NULL;
}

int jv_unknown_key(const char *key, const char *const *names, const char *name, const char *path,
		   cs_err *e)
{
	char sub[JV_PATH_MAX], list[640];
	const char *near = jv_nearest(key, names);

	jv_path_key(sub, sizeof(sub), path, key);
	jv_list_str(names, list, sizeof(list));
	if (near)
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: %s: unknown key (did you mean \"%s\"? expected one of: %s)", name,
				  sub, near, list);
	return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s: unknown key (expected one of: %s)", name,
			  sub, list);
}
