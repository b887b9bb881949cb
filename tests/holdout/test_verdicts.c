/*
 * test_verdicts.c - verdicts from registered rules on crafted run sets:
 * accepted, rejected, unresolved and refuted; runs that do not serve a
 * hypothesis are not seen by its rules; verdict records are appended only
 * when a verdict changes, and evaluating "as of" a verdict's seq gives it
 * back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ledger.h"
#include "report.h"

static char dir[256];

static json_t *rule_median_gt(const char *metric, const char *tag, double v)
{
	return json_pack("{s:{s:{s:s,s:s,s:{s:[s]}},s:s,s:f}}", "cmp", "left", "agg", "median",
			 "metric", metric, "select", "tags", tag, "op", ">", "right", v);
}

static void add_hypothesis(ledger *l, const char *id, json_t *accept, json_t *reject)
{
	json_t *doc = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:{s:f,s:[f,f]},s:o,s:o}", "id", id,
				"title", "t", "statement", "s", "kind", "confirmatory", "metric",
				"wall_s", "unit", "s", "prediction", "value", 10.0, "band95", 5.0,
				20.0, "accept", accept, "reject", reject);
	json_t *p = json_pack("{s:s,s:o}", "id", id, "doc", doc);
	cs_err e;

	assert_int_equal(ledger_append(l, "hypothesis", p, NULL, &e), 0);
	json_decref(p);
}

static void add_run(ledger *l, const char *id, const char *tag, const char *hyp, double wall)
{
	json_t *p = json_pack("{s:s,s:[s],s:[s],s:{s:f},s:s,s:b}", "run_id", id, "tags", tag,
			      "hypotheses", hyp, "metrics", "wall_s", wall, "status", "complete",
			      "holdout", 0);
	cs_err e;

	assert_int_equal(ledger_append(l, "run", p, NULL, &e), 0);
	json_decref(p);
}

static const char *verdict_of(json_t *all, const char *id)
{
	size_t i;
	json_t *v;

	json_array_foreach(all, i, v)
		if (!strcmp(json_string_value(json_object_get(v, "hypothesis")), id))
			return json_string_value(json_object_get(v, "verdict"));
	return "missing";
}

static int count_kind(const ledger_record *r, void *ud)
{
	if (!strcmp(r->kind, "verdict"))
		(*(int *) ud)++;
	return 0;
}

static void test_verdicts(void **state)
{
	ledger *l;
	json_t *all, *again, *v;
	cs_err e;
	int nverdicts = 0;
	int64_t seq_after;
	size_t i;

	(void) state;
	snprintf(dir, sizeof(dir), "/tmp/cs-verdicts-%d", (int) getpid());
	assert_int_equal(ledger_init(dir, &e), 0);
	assert_int_equal(ledger_open(dir, &l, &e), 0);
	/* H1: serial runs slower than 5 s -> accepted. H2: its reject holds -> rejected.
	 * H3: no run of the tag it needs -> unresolved. H4: holds but refuted. */
	add_hypothesis(l, "H1", rule_median_gt("wall_s", "serial", 5), rule_median_gt("wall_s", "serial", 100));
	add_hypothesis(l, "H2", rule_median_gt("wall_s", "serial", 5), rule_median_gt("wall_s", "serial", 7));
	add_hypothesis(l, "H3", rule_median_gt("wall_s", "ssd", 1), rule_median_gt("wall_s", "ssd", 100));
	add_hypothesis(l, "H4", rule_median_gt("wall_s", "serial", 5), rule_median_gt("wall_s", "serial", 100));
	add_run(l, "R1", "serial", "H1", 8);
	add_run(l, "R2", "serial", "H1", 9);
	add_run(l, "R3", "serial", "H2", 8);
	add_run(l, "R4", "serial", "H4", 8);
	add_run(l, "R5", "ssd", "H1", 50); /* serves H1 only: H3 must not see it */
	{
		json_t *p = json_pack("{s:s,s:s,s:s}", "hypothesis", "H4", "because",
				      "the slow runs shared a noisy hour", "access_state", "runs recorded");

		assert_int_equal(ledger_append(l, "refutation", p, NULL, &e), 0);
		json_decref(p);
	}
	assert_int_equal(report_verdicts(l, 0, 1, &all, &e), 0);
	assert_string_equal(verdict_of(all, "H1"), "accepted");
	assert_string_equal(verdict_of(all, "H2"), "rejected");
	assert_string_equal(verdict_of(all, "H3"), "unresolved");
	assert_string_equal(verdict_of(all, "H4"), "refuted");
	json_array_foreach(all, i, v)
		if (!strcmp(json_string_value(json_object_get(v, "hypothesis")), "H1"))
			assert_int_equal(json_array_size(json_object_get(v, "runs")), 3);
	assert_int_equal(ledger_foreach(l, NULL, count_kind, &nverdicts, &e), 0);
	assert_int_equal(nverdicts, 4);
	seq_after = ledger_size(l);
	/* Nothing changed: no new verdict records. */
	assert_int_equal(report_verdicts(l, 0, 1, &again, &e), 0);
	assert_int_equal(ledger_size(l), seq_after);
	json_decref(again);
	/* A new run changes H3; as of the old seq the old verdicts come back. */
	add_run(l, "R6", "ssd", "H3", 3);
	assert_int_equal(report_verdicts(l, 0, 1, &again, &e), 0);
	assert_string_equal(verdict_of(again, "H3"), "accepted");
	json_decref(again);
	assert_int_equal(report_verdicts(l, seq_after, 0, &again, &e), 0);
	assert_string_equal(verdict_of(again, "H3"), "unresolved");
	json_decref(again);
	json_decref(all);
	assert_int_equal(ledger_verify(l, NULL, &e), 0);
	ledger_close(l);
	{
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdicts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
