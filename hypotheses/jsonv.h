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

/* ---- key tables: one description of a JSON document's keys, for the validator and the schema ---- */

/*
 * A validator's keys are a table of jv_key, terminated by an entry whose
 * name is NULL (that entry's schema, if any, is JSON Schema text for the
 * whole object: constraints between keys, which the validator checks by
 * hand beside the table). jv_keys_check validates a document against a
 * table; jv_keys_schema builds the JSON Schema (draft 2020-12) of the
 * same table, so the documented schema and the validator cannot drift.
 * Patterns are POSIX extended regular expressions written in the subset
 * that ECMA-262 (JSON Schema's dialect) reads the same way.
 */
typedef enum jv_ktype {
	JK_STRING,  /* a string: 1..max bytes (JK_EMPTY_OK: 0..max) */
	JK_INT,     /* an integer in [lo, hi] (a multiple of `multiple` if set) */
	JK_NUMBER,  /* a number in [lo, hi] ((lo, hi] with JK_EXCL_LO) */
	JK_BOOL,    /* true or false */
	JK_ENUM,    /* one of vals (or of vals_fn()); or, with pattern, a string matching it */
	JK_STRINGS, /* an array of at most max strings of 1..4096 bytes (each matching pattern) */
	JK_INTS,    /* a non-empty array of at most max integers in [lo, hi] */
	JK_OBJECT,  /* an object of the keys in sub */
	JK_MAP,     /* an object of names matching pattern to non-empty strings matching vpattern */
	JK_OBJECT_MAP, /* an object of names matching pattern to objects of the keys in sub */
	JK_ANY,     /* checked by hand; schema is its JSON Schema text */
} jv_ktype;

enum {
	JK_REQUIRED = 1u << 0, /* must be present (not in a partial document) */
	JK_NULLABLE = 1u << 1, /* null means absent */
	JK_EMPTY_OK = 1u << 2, /* a string may be empty */
	JK_ONELINE = 1u << 3,  /* a string without control characters */
	JK_UNIQUE = 1u << 4,   /* array items differ */
	JK_EXCL_LO = 1u << 5,  /* a number's lower bound is exclusive */
};

typedef struct jv_key {
	const char *name;
	jv_ktype type;
	unsigned flags;
	const char *desc;                  /* one line for people (the schema's description) */
	double lo, hi;                     /* JK_INT, JK_NUMBER, JK_INTS items */
	size_t max;                        /* string bytes, array items (0: 4096 / 64) */
	const char *const *vals;           /* JK_ENUM */
	const char *const *(*vals_fn)(void); /* JK_ENUM, when the values are known at run time */
	const struct jv_key *sub;          /* JK_OBJECT */
	const char *pattern;               /* strings, items, map names */
	const char *vpattern;              /* JK_MAP values */
	const char *expect;                /* what a pattern means, for messages */
	long long multiple;                /* JK_INT */
	const char *schema;                /* JK_ANY, or the terminator: extra schema text */
} jv_key;

/*
 * Validate obj (at path) against tab: unknown keys first (the message
 * lists the valid keys and suggests the nearest), then each key in table
 * order. partial: required keys may be missing (a study's run defaults);
 * nested objects are checked whole. 0 or CS_EXIT_BADINPUT with e filled.
 */
int jv_keys_check(const json_t *obj, const jv_key *tab, int partial, const char *name,
		  const char *path, cs_err *e);

/* The JSON Schema of tab as an object schema (new reference; NULL: out of memory). */
json_t *jv_keys_schema(const jv_key *tab, int partial);

/* The known key nearest to key by edit distance, or NULL when none is near. */
const char *jv_nearest(const char *key, const char *const *names);

/* "FILE: PATH: unknown key (expected one of: ...; did you mean \"x\"?)" for key under path. */
int jv_unknown_key(const char *key, const char *const *names, const char *name, const char *path,
		   cs_err *e);

#endif
