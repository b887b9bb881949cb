/*
 * fuzz_hyp.c - libFuzzer target over the hypothesis parser, validator,
 * canonicaliser and rule evaluator.
 *
 * For every input:
 *   - hyp_parse_buf either refuses with exit 5 (or 1) and a one-line
 *     message, or accepts; an accepted file's canonical text must parse
 *     again to the same canonical text and hash (the fixed point the
 *     ledger's hashes rely on), and its accept/reject rules must evaluate
 *     over a small fixed run set without crashing, giving 1, 0 or -1 and a
 *     canonicalisable trace;
 *   - any JSON object the strict loader accepts must canonicalise to a
 *     fixed point too, and if it happens to be a valid rule, evaluate.
 * Built with -fsanitize=fuzzer it runs under libFuzzer; otherwise
 * tests/fuzz_replay.c runs it over the committed corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hyp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char runs_text[] =
	"[{\"id\": \"R1\", \"tags\": [\"gate\", \"cold\", \"serial\", \"hdd\", \"baseline\"],"
	"  \"hypotheses\": [\"H1\"], \"metrics\": {\"wall_s\": 300, \"io_over_wall\": 0.98,"
	"  \"reads_per_query\": 9000, \"engine_read_ms_mean\": 30, \"recall_at_k\": 0.95,"
	"  \"bytes_per_read\": 8192, \"device_reads\": null}},"
	" {\"id\": \"R2\", \"tags\": [\"gate\", \"warm\", \"serial\", \"baseline\"], \"hypotheses\": [],"
	"  \"metrics\": {\"wall_s\": 0.02, \"reads_per_query\": 0, \"recall_at_k\": 0.95}},"
	" {\"id\": \"R3\", \"tags\": [\"partition\", \"cold\", \"serial\", \"ssd\", \"baseline\"],"
	"  \"hypotheses\": [\"H5\"], \"metrics\": {\"wall_s\": 0.2, \"engine_read_ms_mean\": 1e-300,"
	"  \"qps\": 1.7976931348623157e308, \"lat_p99_ms\": -1.7976931348623157e308}},"
	" {\"id\": \"R4\", \"tags\": [\"gate\", \"cold\", \"fanout16\", \"hdd\"], \"hypotheses\": [\"H8\"],"
	"  \"metrics\": {\"wall_s\": 30, \"qps\": 1.7976931348623157e308}}]";

static json_t *runs;

/* Die loudly: libFuzzer records the input. */
static void fail(const char *what)
{
	(void) what;
	abort();
}

/* A message must be one non-empty line. */
static void check_msg(const cs_err *e)
{
	if (!e->msg[0] || strchr(e->msg, '\n'))
		fail("message not one line");
}

/* Evaluate rule (borrowed) and check the outcome's shape. */
static void eval_rule(const json_t *rule)
{
	cs_err e = { 0 };
	json_t *tr = NULL;
	int res = 9;
	char *canon = NULL;

	if (rule_eval(rule, runs, &res, &tr, &e)) {
		check_msg(&e);
		return;
	}
	if (res != 1 && res != 0 && res != -1)
		fail("result not three-valued");
	if (!tr || cs_json_canonical(tr, &canon, NULL, &e))
		fail("trace not canonicalisable");
	free(canon);
	json_decref(tr);
}

/* canonical(parse(canonical(v))) == canonical(v). */
static void check_fixed_point(const json_t *v)
{
	cs_err e = { 0 };
	char *c1 = NULL, *c2 = NULL;
	size_t l1 = 0, l2 = 0;
	json_t *back = NULL;

	if (cs_json_canonical(v, &c1, &l1, &e))
		fail("loaded document not canonicalisable");
	if (cs_json_load_buf(c1, l1, "canonical", &back, &e))
		fail("canonical text refused by the loader");
	if (cs_json_canonical(back, &c2, &l2, &e))
		fail("reloaded document not canonicalisable");
	if (l1 != l2 || memcmp(c1, c2, l1) != 0)
		fail("canonical form is not a fixed point");
	json_decref(back);
	free(c1);
	free(c2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cs_err e = { 0 };
	hyp *h = NULL, *h2 = NULL;
	json_t *doc = NULL;
	int rc;

	if (!runs) {
		runs = json_loads(runs_text, 0, NULL);
		if (!runs)
			fail("fixed run set");
	}
	rc = hyp_parse_buf((const char *) data, size, "fuzz.json", &h, &e);
	if (rc) {
		if (rc != CS_EXIT_BADINPUT && rc != CS_EXIT_INTERNAL)
			fail("unexpected exit code");
		if (h)
			fail("refusal returned a hypothesis");
		check_msg(&e);
	} else {
		if (hyp_parse_buf(h->canonical, h->canonical_len, "canonical", &h2, &e))
			fail("canonical hypothesis refused");
		if (h2->canonical_len != h->canonical_len ||
		    memcmp(h2->canonical, h->canonical, h->canonical_len) != 0 ||
		    strcmp(h2->sha256, h->sha256) != 0)
			fail("hypothesis canonical form is not a fixed point");
		eval_rule(json_object_get(h->doc, "accept"));
		eval_rule(json_object_get(h->doc, "reject"));
		hyp_free(h2);
		hyp_free(h);
	}
	/* the loader and canonicaliser on any object, and the evaluator on any valid rule */
	if (cs_json_load_buf((const char *) data, size, "fuzz.json", &doc, &e) == 0) {
		check_fixed_point(doc);
		if (rule_validate(doc, "fuzz.json", "$", &e) == 0)
			eval_rule(doc);
		else
			check_msg(&e);
		json_decref(doc);
	} else {
		check_msg(&e);
	}
	return 0;
}
