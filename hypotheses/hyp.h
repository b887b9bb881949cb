/*
 * hyp.h - the hypothesis file: parse, validate, canonicalise, hash; the
 * metric vocabulary; the rule language of accept/reject rules.
 *
 * A hypothesis file is one JSON object: id ("H1", "H2", ...), title,
 * statement, kind (confirmatory | non-cause | exploratory | descriptive:
 * a figure reported that the design could not fail, never confirmatory;
 * harness/canfail.c), metric (from
 * the vocabulary), unit, prediction {value, band95: [low, high]}, accept
 * and reject (rules), optional notes, and optionally decision "interval"
 * with interval {metric, select, over, op, threshold, method, level, seed,
 * resamples, sd_log} (the effect's confidence interval over replicates
 * decides) and underpowered with its rationale. Rules are JSON predicates over run
 * measurements and are never evaluated as code (see rule_eval).
 *
 * Error convention: 0 or CS_EXIT_* with cs_err naming file, line:column or
 * JSON path, and what was expected.
 */
#ifndef HYP_H
#define HYP_H

#include "cs.h"

#define HYP_FILE_CAP (256u * 1024u) /* a hypothesis file is at most 256 KiB */

typedef struct hyp {
	char id[16];
	char kind[16];
	char metric[48];
	json_t *doc;       /* the parsed, validated document (owned) */
	char *canonical;   /* canonical JSON (owned) */
	size_t canonical_len;
	char sha256[65];   /* SHA-256 hex of canonical */
	char *source;      /* the file name messages use (owned) */
	char file_sha256[65]; /* SHA-256 hex of the bytes as read, before parsing */
} hyp;

/* Parse and validate a file (or buffer named name for messages). */
int hyp_parse_file(const char *path, hyp **out, cs_err *e);
int hyp_parse_buf(const char *buf, size_t len, const char *name, hyp **out, cs_err *e);
void hyp_free(hyp *h);

/*
 * Refuse a set of parsed hypotheses that uses an id twice (register takes
 * several files at once): "B.json: $.id: duplicate id \"H3\" (also in
 * A.json)", CS_EXIT_BADINPUT. hs[i] may not be NULL.
 */
int hyp_check_unique(hyp *const *hs, size_t n, cs_err *e);

/* 1 if s is a hypothesis id: "H" and 1..6 digits, no leading zero. */
int hyp_id_valid(const char *s);

/* The metric vocabulary of DESIGN.md (plus those the README adds). */
int hyp_metric_known(const char *name);
/* NULL-terminated list of metric names (vocab.c; the array for static tables). */
const char *const *hyp_metrics(void);
extern const char *const hyp_metric_names[];

/*
 * The JSON Schema (draft 2020-12) of a hypothesis file, built from the
 * validator's own key tables (`coldstudy schema hypothesis`). New reference.
 */
json_t *hyp_schema(void);

/* The rule language as JSON Schema $defs (rule, expr, const_expr, agg, select, tags). New. */
json_t *rule_schema_defs(void);

/*
 * Validate a rule at JSON path `where` (e.g. "$.accept") of file name.
 * Rule forms:
 *   {"all": [rule, ...]}, {"any": [rule, ...]}, {"not": rule}
 *   {"cmp": {"left": EXPR, "op": "<"|"<="|">"|">="|"=="|"!=", "right": EXPR}}
 * EXPR:
 *   number
 *   {"agg": "median"|"min"|"max"|"mean"|"count", "metric": M,
 *    "select": {"tags": [...], "not_tags": [...], "hypothesis": "H1"}}
 *   {"ratio": [EXPR, EXPR]}
 * A selection matches a run that carries every tag in "tags", none in
 * "not_tags" and, if given, "hypothesis" in its hypotheses; {} matches
 * every run. "metric" may be left out only for "count", which counts the
 * matched runs (with "metric": those where the metric is a number).
 * A rule must look at runs: a comparison of two constants is refused.
 * Limits: depth 32, 1024 nodes, 64 tags a selection.
 */
int rule_validate(const json_t *rule, const char *name, const char *where, cs_err *e);

/* Validate a selection ({tags, not_tags, hypothesis}) at where, as rule_validate does. */
int rule_select_validate(const json_t *sel, const char *name, const char *where, cs_err *e);

/* 1 if run ({tags, hypotheses, ...}) matches the selection sel, else 0. */
int rule_select_match(const json_t *run, const json_t *sel);

/*
 * Evaluate a rule over runs: a JSON array of {"id": "...", "tags": [...],
 * "hypotheses": [...], "metrics": {name: number, ...}} (tags, hypotheses
 * and metrics may be absent or null; other members are ignored). *result: 1 true,
 * 0 false, -1 undetermined (a selection was empty or a metric missing).
 * *trace (new reference, may be NULL) records every number the rule saw
 * and the run ids each selection matched.
 *
 * Logic is Kleene's: "all" is false if any part is false, else
 * undetermined if any part is, else true; "any" dually; "not" keeps
 * undetermined. An aggregate is undetermined when its selection matched
 * no run or the metric is a number in none of them (null and absent
 * metrics are skipped, never read as 0); "count" is never undetermined
 * (it is 0 then). A ratio with a zero denominator, or a value that is not
 * finite, is undetermined. A comparison with an undetermined side is
 * undetermined.
 *
 * The trace mirrors the rule: {"all": [..], "result": true|false|null},
 * {"cmp": {"left": T, "op": OP, "right": T}, "result": ..},
 * {"agg": .., "metric": .., "select": .., "runs": [ids matched],
 *  "values": [numbers used], "value": x | null, "why": text (opt)},
 * {"ratio": [T, T], "value": x | null}, a number for a number. It is
 * canonicalisable (finite numbers only).
 *
 * Returns 0, or CS_EXIT_BADINPUT (runs not an array of run objects, or a
 * rule rule_validate refuses) / CS_EXIT_INTERNAL (out of memory).
 */
int rule_eval(const json_t *rule, const json_t *runs, int *result, json_t **trace, cs_err *e);

/*
 * Could rule come out true? fn(cmp, path, ud) is asked about every
 * comparison (cmp: the {"left","op","right"} object; path: its JSON path
 * under where, e.g. "$.reject.any[1].cmp") and answers 1 (it can hold),
 * 0 (it cannot, whatever the runs measure) or -1 (unknown: taken as 1).
 * "all" can hold when each part can (parts taken one at a time: parts that
 * exclude each other are not seen, so the answer errs towards 1), "any"
 * when one part can, "not" always (fn still sees its comparisons). For a
 * rule rule_validate accepted; returns 1 or 0. Used by the can-fail check
 * (harness/canfail.c) to ask whether a reject rule is reachable.
 */
typedef int (*rule_cmp_fn)(const json_t *cmp, const char *path, void *ud);
int rule_can_hold(const json_t *rule, const char *where, rule_cmp_fn fn, void *ud);

#endif
