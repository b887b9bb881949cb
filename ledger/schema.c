/*
 * schema.c - what each record kind's payload must hold, checked by
 * `log verify` for every record (docs/records.md is the prose version).
 *
 * Every payload is the canonical JSON of an object: it parses strictly
 * (UTF-8, no duplicate keys, nothing after it) and prints back to exactly
 * the stored bytes. A kind listed below must carry its required members
 * with the types given, and its optional members, when present, must have
 * their types. Members not listed are allowed: the parts that write
 * records add detail over time, and a check that failed every older log
 * would be a false alarm. A kind not listed (one added by a newer part)
 * is held to the canonical-object rule only.
 *
 * Error convention: 0, or -1 with why filled (JSON path and expectation).
 */
#include "ledger_int.h"

#include <stdlib.h>
#include <string.h>

/* Member types: S string, B bool, I integer, N number, O object, H 64 hex digits, T access state, P [lo, hi] numbers. */
typedef struct member {
	const char *name;
	char type;
	int required;
} member;

typedef struct kind_schema {
	const char *kind;
	member m[10];
} kind_schema;

static const kind_schema schemas[] = {
	{"hypothesis",
	 {{"id", 'S', 1}, {"doc", 'O', 1}, {"sha256", 'H', 0}, {"file_sha256", 'H', 0},
	  {"frozen", 'S', 0}, {"file", 'S', 0}}},
	{"amendment",
	 {{"id", 'S', 1}, {"doc", 'O', 1}, {"rationale", 'S', 1}, {"access_state", 'T', 1},
	  {"replaces", 'H', 1}, {"sha256", 'H', 0}, {"file_sha256", 'H', 0}, {"frozen", 'S', 0},
	  {"file", 'S', 0}}},
	{"study", {{"id", 'S', 1}, {"doc", 'O', 1}, {"sha256", 'H', 0}}},
	{"validation", {{"check", 'S', 1}, {"passed", 'B', 1}, {"batch", 'I', 1}}},
	{"refusal",
	 {{"guard", 'S', 1}, {"verb", 'S', 1}, {"why", 'S', 1}, {"target", 'S', 0},
	  {"target_resolved", 'S', 0}}},
	{"run_start", {{"run_id", 'S', 1}, {"spec_sha256", 'H', 1}, {"holdout", 'B', 1}}},
	{"run",
	 {{"run_id", 'S', 1}, {"metrics", 'O', 0}, {"holdout", 'B', 0}, {"raw", 'O', 0},
	  {"samplers", 'O', 0}, {"mem_peak", 'O', 0}}},
	{"prediction", {{"id", 'S', 1}, {"value", 'N', 1}, {"target", 'O', 0}, {"band95", 'P', 0}}},
	{"score", {{"passed", 'B', 1}}},
	{"refutation", {{"hypothesis", 'S', 1}, {"because", 'S', 1}, {"access_state", 'T', 0}}},
	{"verdict", {{"hypothesis", 'S', 1}, {"verdict", 'S', 1}}},
	{"deviation",
	 {{"because", 'S', 1}, {"access_state", 'T', 0}, {"hypothesis", 'S', 0},
	  {"run_id", 'S', 0}, {"cause", 'S', 0}}},
	{"note", {{"text", 'S', 0}}},
	{"replication_of",
	 {{"study", 'S', 1}, {"checkpoint", 'S', 1}, {"checkpoint_sha256", 'H', 1}, {"seed", 'I', 1}}},
};

/* Does v have type t (see member)? */
static int type_ok(const json_t *v, char t)
{
	const char *s;

	switch (t) {
	case 'S':
		return json_is_string(v);
	case 'B':
		return json_is_boolean(v);
	case 'I':
		return json_is_integer(v);
	case 'N':
		return json_is_number(v);
	case 'O':
		return json_is_object(v);
	case 'H':
		if (!json_is_string(v) || json_string_length(v) != 64)
			return 0;
		for (s = json_string_value(v); *s; s++)
			if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
				return 0;
		return 1;
	case 'T':
		s = json_string_value(v);
		/* every state this or an earlier version wrote (ledger_access_state) */
		return s && (!strcmp(s, "none") || !strcmp(s, "runs started") ||
			     !strcmp(s, "results seen") || !strcmp(s, "holdout seen") ||
			     !strcmp(s, "nothing run") || !strcmp(s, "runs recorded") ||
			     !strcmp(s, "unknown"));
	case 'P':
		return json_is_array(v) && json_array_size(v) == 2 &&
		       json_is_number(json_array_get(v, 0)) && json_is_number(json_array_get(v, 1));
	default:
		return 0;
	}
}

static const char *type_name(char t)
{
	switch (t) {
	case 'S':
		return "a string";
	case 'B':
		return "true or false";
	case 'I':
		return "an integer";
	case 'N':
		return "a number";
	case 'O':
		return "an object";
	case 'H':
		return "64 lowercase hex digits";
	case 'T':
		return "an access state (none, runs started, results seen, holdout seen)";
	case 'P':
		return "[lo, hi] numbers";
	default:
		return "?";
	}
}

int lg_payload_check(const char *kind, const char *payload, size_t len, char *why, size_t cap)
{
	json_error_t jerr;
	json_t *doc;
	char *canon = NULL;
	size_t clen = 0;
	int rc = -1;

	doc = json_loadb(payload, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc) {
		snprintf(why, cap, "not JSON: byte %d: %s", jerr.position, jerr.text);
		return -1;
	}
	if (!json_is_object(doc)) {
		snprintf(why, cap, "$: expected a JSON object");
		goto out;
	}
	if (cs_json_canonical(doc, &canon, &clen, NULL) || clen != len ||
	    memcmp(canon, payload, len)) {
		snprintf(why, cap, "not in canonical form (sorted keys, no spaces)");
		goto out;
	}
	for (size_t k = 0; k < sizeof(schemas) / sizeof(schemas[0]); k++) {
		if (strcmp(schemas[k].kind, kind))
			continue;
		for (const member *m = schemas[k].m; m->name; m++) {
			json_t *v = json_object_get(doc, m->name);

			if (!v && m->required) {
				snprintf(why, cap, "$.%s: missing (a %s record needs it)", m->name, kind);
				goto out;
			}
			if (v && !type_ok(v, m->type)) {
				snprintf(why, cap, "$.%s: expected %s", m->name, type_name(m->type));
				goto out;
			}
		}
		break;
	}
	rc = 0;
out:
	free(canon);
	json_decref(doc);
	return rc;
}
