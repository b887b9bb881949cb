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

/* A run record as the harness writes it under a plan: class and spec hash. */
static void add_planned_run(ledger *l, const char *id, const char *sha, const char *cls,
			    const char *tags, double wall)
{
	json_t *p = json_pack("{s:s,s:o,s:[s],s:{s:f},s:s,s:b,s:s,s:s}", "run_id", id, "tags",
			      json_loads(tags, 0, NULL), "hypotheses", "H1", "metrics", "wall_s",
			      wall, "status", "complete", "holdout", !strcmp(cls, "holdout"), "class",
			      cls, "spec_sha256", sha);
	json_t *st = json_pack("{s:s,s:s,s:b,s:s}", "run_id", id, "spec_sha256", sha, "holdout",
			       !strcmp(cls, "holdout"), "class", cls);
	cs_err e;

	assert_int_equal(ledger_append(l, "run_start", st, NULL, &e), 0);
	assert_int_equal(ledger_append(l, "run", p, NULL, &e), 0);
	json_decref(st);
	json_decref(p);
}

static json_t *find(json_t *all, const char *id)
{
	size_t i;
	json_t *v;

	json_array_foreach(all, i, v)
		if (!strcmp(json_string_value(json_object_get(v, "hypothesis")), id))
			return v;
	return NULL;
}

/*
 * Under a plan: a confirmatory hypothesis sees only the design runs the
 * plan maps to it (an exploratory run tagged alike and claiming to serve
 * it does not count); accepted needs its sceptic runs done and not
 * refuting (provisional before, refuted when they refute); a hypothesis
 * registered after the first run_start is post hoc and exploratory.
 */
static void test_plan_verdicts(void **state)
{
	/* spec hashes as a run_start record holds them (64 hex digits): verdicts verify the log */
	const char *d = "d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1",
		   *sk = "5151515151515151515151515151515151515151515151515151515151515151",
		   *x = "e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1";
	ledger *l;
	json_t *all, *study;
	cs_err e;

	(void) state;
	snprintf(dir, sizeof(dir), "/tmp/cs-verdicts-plan-%d", (int) getpid());
	assert_int_equal(ledger_init(dir, &e), 0);
	assert_int_equal(ledger_open(dir, &l, &e), 0);
	/* H1: wall > 5 s on serial runs (the design run: 8 s; its sceptic replicate: 9 s) */
	add_hypothesis(l, "H1", rule_median_gt("wall_s", "serial", 5), rule_median_gt("wall_s", "serial", 100));
	/* H2: wall > 7 s, no sceptic run planned: provisional at best */
	add_hypothesis(l, "H2", rule_median_gt("wall_s", "serial", 7), rule_median_gt("wall_s", "serial", 100));
	/* H4: accept wall > 7, reject wall > 8.5: the sceptic replicate (9 s) refutes it */
	add_hypothesis(l, "H4", rule_median_gt("wall_s", "serial", 7), rule_median_gt("wall_s", "serial", 8.5));
	study = json_pack("{s:s,s:{s:{s:{s:{s:[s],s:[s]},s:{s:[s]},s:{s:[s],s:[s]}}}},"
			  "s:[{s:s,s:s,s:s},{s:s,s:s,s:s}]}",
			  "id", "s", "doc", "plan", "hypotheses", "H1", "runs", "d.json", "sceptic",
			  "s.json", "H2", "runs", "d.json", "H4", "runs", "d.json", "sceptic", "s.json",
			  "plan_specs", "path", "d.json", "sha256", d, "class", "design", "path", "s.json",
			  "sha256", sk, "class", "sceptic");
	assert_non_null(study);
	assert_int_equal(ledger_append(l, "study", study, NULL, &e), 0);
	json_decref(study);
	add_planned_run(l, "R0001", d, "design", "[\"serial\",\"design\"]", 8);
	/* an exploratory run, tagged like the design run, that would lift H2's median over 100 */
	add_planned_run(l, "R0002", x, "exploratory", "[\"serial\",\"exploratory\"]", 500);
	add_hypothesis(l, "H3", rule_median_gt("wall_s", "serial", 5), rule_median_gt("wall_s", "serial", 100));
	assert_int_equal(report_verdicts(l, 0, 0, &all, &e), 0);
	assert_string_equal(json_string_value(json_object_get(find(all, "H1"), "verdict")), "provisional");
	assert_string_equal(json_string_value(json_object_get(find(all, "H2"), "verdict")), "provisional");
	assert_int_equal(json_array_size(json_object_get(find(all, "H2"), "runs")), 1);
	assert_string_equal(json_string_value(json_object_get(find(all, "H2"), "class")), "confirmatory");
	/* H3 came after the first run: post hoc, exploratory, and it sees the runs that serve it */
	assert_true(json_is_true(json_object_get(find(all, "H3"), "post_hoc")));
	assert_string_equal(json_string_value(json_object_get(find(all, "H3"), "class")), "exploratory");
	json_decref(all);
	add_planned_run(l, "R0003", sk, "sceptic", "[\"serial\",\"sceptic\"]", 9);
	assert_int_equal(report_verdicts(l, 0, 0, &all, &e), 0);
	assert_string_equal(json_string_value(json_object_get(find(all, "H1"), "verdict")), "accepted");
	assert_string_equal(json_string_value(json_object_get(find(all, "H2"), "verdict")), "provisional");
	assert_string_equal(json_string_value(json_object_get(find(all, "H4"), "verdict")), "refuted");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(find(all, "H1"), "sceptic"), "done")), 1);
	json_decref(all);
	ledger_close(l);
	{
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
}

/* A cold design run with its device: modelled (virtual time under hdd-pool) or the real disk. */
static void add_device_run(ledger *l, const char *id, const char *sha, int modelled, double rpq,
			   double wall, double read_ms)
{
	json_t *p = json_pack("{s:s,s:[s,s],s:{s:f,s:f,s:f},s:s,s:b,s:s,s:s,s:o,s:{s:o,s:b}}",
			      "run_id", id, "tags", "serial", "design", "metrics", "wall_s", wall,
			      "reads_per_query", rpq, "engine_read_ms_mean", read_ms, "status",
			      "complete", "holdout", 0, "class", "design", "spec_sha256", sha,
			      "device_time", modelled ? json_string("virtual") : json_null(), "spec",
			      "device", modelled ? json_string("hdd-pool") : json_null(), "cold", 1);
	json_t *st = json_pack("{s:s,s:s,s:b,s:s}", "run_id", id, "spec_sha256", sha, "holdout", 0,
			       "class", "design");
	cs_err e;

	assert_int_equal(ledger_append(l, "run_start", st, NULL, &e), 0);
	assert_int_equal(ledger_append(l, "run", p, NULL, &e), 0);
	json_decref(st);
	json_decref(p);
}

static const char *evidence_of(json_t *all, const char *id)
{
	return json_string_value(json_object_get(find(all, id), "evidence"));
}

/*
 * Findings and model checks: a hypothesis whose every metric rests on the
 * device model alone (a per-read latency under a model; a wall time of
 * modelled runs that read the same pages a query) is a model check; an
 * engine count, a wall time of modelled runs that read differently, or a
 * real-disk run is a finding.
 */
static void test_model_checks(void **state)
{
	const char *a = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1",
		   *b = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2",
		   *c = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3",
		   *d = "d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4";
	ledger *l;
	json_t *all, *study;
	cs_err e;

	(void) state;
	snprintf(dir, sizeof(dir), "/tmp/cs-verdicts-model-%d", (int) getpid());
	assert_int_equal(ledger_init(dir, &e), 0);
	assert_int_equal(ledger_open(dir, &l, &e), 0);
	add_hypothesis(l, "H1", rule_median_gt("wall_s", "serial", 5), rule_median_gt("wall_s", "serial", 100));
	add_hypothesis(l, "H2", rule_median_gt("wall_s", "serial", 5), rule_median_gt("wall_s", "serial", 100));
	add_hypothesis(l, "H3", rule_median_gt("engine_read_ms_mean", "serial", 5),
		       rule_median_gt("engine_read_ms_mean", "serial", 100));
	add_hypothesis(l, "H4", rule_median_gt("wall_s", "serial", 5), rule_median_gt("wall_s", "serial", 100));
	add_hypothesis(l, "H5", rule_median_gt("reads_per_query", "serial", 5),
		       rule_median_gt("reads_per_query", "serial", 100));
	study = json_pack("{s:s,s:{s:{s:{s:{s:[s,s]},s:{s:[s,s]},s:{s:[s]},s:{s:[s]},s:{s:[s,s]}}}},"
			  "s:[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s}]}",
			  "id", "s", "doc", "plan", "hypotheses", "H1", "runs", "a.json", "b.json",
			  "H2", "runs", "a.json", "c.json", "H3", "runs", "a.json", "H4", "runs",
			  "d.json", "H5", "runs", "a.json", "b.json", "plan_specs", "path", "a.json",
			  "sha256", a, "class", "design", "path", "b.json", "sha256", b, "class", "design",
			  "path", "c.json", "sha256", c, "class", "design", "path", "d.json", "sha256", d,
			  "class", "design");
	assert_non_null(study);
	assert_int_equal(ledger_append(l, "study", study, NULL, &e), 0);
	json_decref(study);
	add_device_run(l, "R0001", a, 1, 10, 8, 39);
	add_device_run(l, "R0002", b, 1, 10, 12, 39); /* same reads, another device setting */
	add_device_run(l, "R0003", c, 1, 20, 16, 39); /* twice the reads */
	add_device_run(l, "R0004", d, 0, 10, 9, 2);   /* the real disk */
	assert_int_equal(report_verdicts(l, 0, 0, &all, &e), 0);
	assert_string_equal(evidence_of(all, "H1"), "model check");
	assert_string_equal(evidence_of(all, "H2"), "finding");
	assert_string_equal(evidence_of(all, "H3"), "model check");
	assert_string_equal(evidence_of(all, "H4"), "finding");
	assert_string_equal(evidence_of(all, "H5"), "finding");
	assert_string_equal(json_string_value(json_object_get(json_object_get(find(all, "H2"), "basis"), "wall_s")),
			    "engine reads and device model");
	assert_string_equal(json_string_value(json_object_get(json_object_get(find(all, "H4"), "basis"), "wall_s")),
			    "device");
	json_decref(all);
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
		cmocka_unit_test(test_plan_verdicts),
		cmocka_unit_test(test_model_checks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
