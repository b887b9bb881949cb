/*
 * jsonv.h - small validators for JSON documents that must explain
 * themselves: "expect key K of type T at $.path", "no keys but these",
 * and the JSON-path strings the messages use.
 *
 * Every message has one shape, so a user learns it once:
 *
 *   FILE: $.prediction.band95[1]: expected a number, got a string
 *   FILE: $.prediction: missing key "value" (expected a number)
 *   FILE: $.predction: unknown key (expected one of: id, title, ...)
 *
 * Paths start at "$"; object members are ".key" when the key is a plain
 * identifier and ["key"] (escaped, cut at 64 bytes) otherwise, so a
 * hostile key can never break the one-line message. Array elements are
 * "[i]".
 *
 * Error convention (common/cs.h): 0 or CS_EXIT_BADINPUT, with the
 * caller-owned cs_err filled. Values come back borrowed from the document.
 * Used by hypotheses/ and by anything else that validates a JSON file
 * (study.json, run.json).
 */
#ifndef HYP_JSONV_H
#define HYP_JSONV_H

#include "cs.h"

#define JV_PATH_MAX 512

typedef enum jv_type {
	JV_ANY = 0,
	JV_OBJECT,
	JV_ARRAY,
	JV_STRING,   /* any string, may be empty */
	JV_TEXT,     /* a non-empty string */
	JV_NUMBER,   /* integer or real */
	JV_INTEGER,
	JV_UINT,     /* integer >= 0 */
	JV_BOOL,
} jv_type;

/* What a value of type t is called in messages ("a number", "an object", ...). */
const char *jv_type_name(jv_type t);

/* What v is ("a string", "null", ...), for "got ..." in messages. */
const char *jv_value_name(const json_t *v);

/* 1 if v is of type t, else 0. */
int jv_is(const json_t *v, jv_type t);

/* out = parent + ".key" (or ["key"]); always NUL-terminated, cut with "..." if long. */
void jv_path_key(char *out, size_t n, const char *parent, const char *key);

/* out = parent + "[i]". */
void jv_path_index(char *out, size_t n, const char *parent, size_t i);

/* "NAME: PATH: expected T, got U" unless v is of type t. */
int jv_expect(const json_t *v, jv_type t, const char *name, const char *path, cs_err *e);

/*
 * Member key of object obj (at path) as type t; *out borrowed. A missing
 * required key is an error; a missing optional one leaves *out NULL.
 */
int jv_get(const json_t *obj, const char *key, jv_type t, int required, const char *name,
	   const char *path, json_t **out, cs_err *e);

/* Every key of obj must be in the NULL-terminated list allowed. */
int jv_only_keys(const json_t *obj, const char *const *allowed, const char *name,
		 const char *path, cs_err *e);

/* 1 if s is in the NULL-terminated list. */
int jv_in_list(const char *s, const char *const *list);

/* Write the list as "a, b, c" into out (cut with "..." if long). */
void jv_list_str(const char *const *list, char *out, size_t n);

#endif
