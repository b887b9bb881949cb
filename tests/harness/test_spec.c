/*
 * test_spec.c - study.json and run.json validation: good files pass, and
 * each bad one fails with exit 5 naming the file and JSON path; defaults
 * merge under the run; features carry run.json's key names.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *good_study =
	"{\"id\":\"cold-query\",\"production\":{\"paths\":[\"/srv/prod\"],\"hosts\":[\"db1\"]},"
	"\"datasets\":{\"base\":\"synth:n=1000,d=8,clusters=4,seed=1\"},"
	"\"indexes\":{\"p\":{\"kind\":\"phnsw\",\"dataset\":\"base\",\"clone\":\"/x/clone\"}},"
	"\"defaults\":{\"k\":10,\"strategy\":\"pread\"}}";

static const char *good_run =
	"{\"index\":\"/x/clone\",\"queries\":{\"spec\":\"synth:n=10,d=8,clusters=4,seed=2\","
	"\"count\":5},\"cold\":true,\"clients\":2,\"mode\":\"fanout\",\"fanout\":4,"
	"\"partitions\":[0,3],\"tags\":[\"gate\"],\"hypotheses\":[\"H1\"]}";

static int check(const char *text, int run, const char *want)
{
	json_t *doc = NULL;
	cs_err e = {0};
	int rc = cs_json_load_buf(text, strlen(text), "f.json", &doc, &e);

	if (!rc)
		rc = run ? harness_run_validate(doc, "f.json", "$", 0, &e)
			 : harness_study_validate(doc, "f.json", &e);
	json_decref(doc);
	if (want) {
		if (!strstr(e.msg, want))
			print_message("message '%s' lacks '%s'\n", e.msg, want);
		assert_non_null(strstr(e.msg, want));
		assert_non_null(strstr(e.msg, "f.json"));
	}
	return rc;
}

static void test_study(void **state)
{
	(void) state;
	assert_int_equal(check(good_study, 0, NULL), 0);
	assert_int_equal(check("{\"id\":\"s\",\"production\":{\"paths\":[\"/p\"]},\"extra\":1}", 0,
			       "$.extra: unknown key"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"id\":\"s\",\"production\":{}}", 0, "names no production item"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"id\":\"s\"}", 0, "$: missing key \"production\""), CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"id\":\"bad id\",\"production\":{\"paths\":[\"/p\"]}}", 0, "$.id"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"id\":\"s\",\"production\":{\"paths\":[3]}}", 0,
			       "$.production.paths[0]"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"id\":\"s\",\"production\":{\"paths\":[\"/p\"]},"
			       "\"indexes\":{\"a\":{\"kind\":\"btree\",\"clone\":\"/c\"}}}",
			       0, "$.indexes.a.kind"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"id\":\"s\",\"production\":{\"paths\":[\"/p\"]},"
			       "\"defaults\":{\"ef_serch\":4}}",
			       0, "$.defaults.ef_serch: unknown key"),
			 CS_EXIT_BADINPUT);
}

/* The plan section (issue 13): its keys and values checked like the rest. */
static void test_plan(void **state)
{
	static const char *const pre = "{\"id\":\"s\",\"production\":{\"paths\":[\"/p\"]},\"plan\":";
	static const struct {
		const char *plan, *want;
	} bad[] = {
		{"{\"desing\":[]}", "$.plan.desing: unknown key"},
		{"{\"design\":[3]}", "$.plan.design[0]"},
		{"{\"hypotheses\":{\"X1\":{\"runs\":[\"a.json\"]}}}", "$.plan.hypotheses.X1"},
		{"{\"hypotheses\":{\"H1\":{\"runs\":[]}}}", "$.plan.hypotheses.H1.runs"},
		{"{\"hypotheses\":{\"H1\":{\"runs\":[\"a.json\"],\"skeptic\":[]}}}",
		 "$.plan.hypotheses.H1.skeptic: unknown key"},
		{"{\"holdout\":{\"targets\":[\"t.json\"],\"metrics\":[\"wall_s\"]}}",
		 "$.plan.holdout: missing key \"threshold\""},
		{"{\"holdout\":{\"targets\":[\"t.json\"],\"metrics\":[\"wall_s\"],\"threshold\":0}}",
		 "$.plan.holdout.threshold"},
		{"{\"holdout\":{\"targets\":[],\"metrics\":[\"wall_s\"],\"threshold\":0.35}}",
		 "$.plan.holdout.targets"},
		{"{\"holdout\":{\"targets\":[\"t.json\"],\"metrics\":[\"wall_s\"],\"threshold\":0.35,"
		 "\"band_level\":1}}",
		 "$.plan.holdout.band_level"},
		{"{\"holdout\":{\"targets\":[\"t.json\"],\"metrics\":[\"wall_s\"],\"threshold\":0.35,"
		 "\"min_inside\":2}}",
		 "$.plan.holdout.min_inside"},
	};
	char buf[1024];

	(void) state;
	snprintf(buf, sizeof(buf), "%s%s}", pre,
		 "{\"design\":[\"d.json\"],\"hypotheses\":{\"H1\":{\"runs\":[\"d.json\"],"
		 "\"sceptic\":[\"s.json\"]}},\"holdout\":{\"targets\":[\"t.json\"],"
		 "\"metrics\":[\"wall_s\"],\"threshold\":0.35,\"band_level\":0.9,\"min_inside\":1}}");
	assert_int_equal(check(buf, 0, NULL), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(buf, sizeof(buf), "%s%s}", pre, bad[i].plan);
		assert_int_equal(check(buf, 0, bad[i].want), CS_EXIT_BADINPUT);
	}
}

static int has(const json_t *tags, const char *t)
{
	size_t i;
	json_t *v;

	json_array_foreach(tags, i, v)
		if (!strcmp(json_string_value(v), t))
			return 1;
	return 0;
}

/* Tags come from the settings; a tag the settings contradict is exit 5 naming $.tags[i]. */
static void test_tags(void **state)
{
	json_t *defaults = json_pack("{s:i,s:i}", "k", 10, "ef_search", 40);
	json_t *run, *eff = NULL, *tags = NULL;
	cs_err e = {0};

	(void) state;
	run = json_pack("{s:s,s:{s:s},s:b,s:[i],s:s,s:s,s:[s,s,s]}", "index", "/x", "queries", "spec",
			"q", "cold", 1, "partitions", 0, "device", "hdd-pool", "device_time", "virtual",
			"tags", "partition", "hdd", "spread");
	assert_int_equal(harness_run_effective(run, defaults, &eff, &e), 0);
	assert_int_equal(harness_run_tags(eff, defaults, "phnsw", "design", "r.json", &tags, &e), 0);
	for (const char *const *t = (const char *const[]){"cold", "serial", "partition", "hdd",
							   "hdd-pool", "virtual", "ef40",
							   "baseline", "phnsw", "design", "spread",
							   NULL};
	     *t; t++) {
		if (!has(tags, *t))
			print_message("tags lack %s\n", *t);
		assert_true(has(tags, *t));
	}
	json_decref(tags);
	/* the same label on an exploratory run does not count */
	assert_int_equal(harness_run_tags(eff, defaults, "phnsw", "exploratory", "r.json", &tags, &e), 0);
	assert_false(has(tags, "spread"));
	assert_true(has(tags, "exploratory"));
	json_decref(tags);
	json_decref(eff);
	/* ef_search off the study default: no baseline; "baseline" claimed anyway: exit 5 */
	json_object_set_new(run, "ef_search", json_integer(20));
	json_object_set_new(run, "tags", json_pack("[s,s]", "ef20", "baseline"));
	assert_int_equal(harness_run_effective(run, defaults, &eff, &e), 0);
	assert_int_equal(harness_run_tags(eff, defaults, NULL, NULL, "r.json", &tags, &e),
			 CS_EXIT_BADINPUT);
	assert_non_null(strstr(e.msg, "r.json: $.tags[1]: tag \"baseline\" contradicts"));
	json_decref(eff);
	/* warm on a cold run; a device tag without the device */
	json_object_set_new(run, "tags", json_pack("[s]", "warm"));
	assert_int_equal(harness_run_effective(run, defaults, &eff, &e), 0);
	assert_int_equal(harness_run_tags(eff, defaults, NULL, NULL, "r.json", &tags, &e),
			 CS_EXIT_BADINPUT);
	json_decref(eff);
	json_object_del(run, "device");
	json_object_set_new(run, "tags", json_pack("[s,s]", "cold", "nvme"));
	assert_int_equal(harness_run_effective(run, defaults, &eff, &e), 0);
	assert_int_equal(harness_run_tags(eff, defaults, NULL, NULL, "r.json", &tags, &e),
			 CS_EXIT_BADINPUT);
	assert_non_null(strstr(e.msg, "$.tags[1]"));
	json_decref(eff);
	json_decref(run);
	json_decref(defaults);
}

/*
 * A postgres run's pg_prewarm after each cold start is "prewarm", not
 * "cold", and no baseline; a run over shards is "shards"; a spec's
 * "shards" or "prewarm" label the settings do not give is exit 5; each
 * tag stands for its postgres knobs (can-fail's factor).
 */
static void test_pg_treatment_tags(void **state)
{
	json_t *defaults = json_pack("{s:i,s:i}", "k", 10, "ef_search", 40);
	json_t *run, *eff = NULL, *tags = NULL;
	cs_err e = {0};

	(void) state;
	run = json_pack("{s:s,s:s,s:{s:s},s:b,s:b,s:{s:s,s:[s]}}", "target", "postgres", "index",
			"/c", "queries", "spec", "q", "cold", 1, "cold_each_query", 1, "postgres", "sql",
			"SELECT 1", "session", "SET hnsw.ef_search = 40");
	assert_int_equal(harness_run_effective(run, defaults, &eff, &e), 0);
	assert_int_equal(harness_run_tags(eff, defaults, NULL, "design", "r.json", &tags, &e), 0);
	assert_true(has(tags, "cold") && has(tags, "baseline") && has(tags, "ef40"));
	assert_false(has(tags, "prewarm") || has(tags, "shards"));
	json_decref(tags);
	json_decref(eff);
	/* a "shards" label on a one-server run contradicts its settings */
	json_object_set_new(run, "tags", json_pack("[s]", "shards"));
	assert_int_equal(harness_run_effective(run, defaults, &eff, &e), 0);
	assert_int_equal(harness_run_tags(eff, defaults, NULL, "design", "r.json", &tags, &e),
			 CS_EXIT_BADINPUT);
	assert_non_null(strstr(e.msg, "$.tags[0]: tag \"shards\" contradicts"));
	json_decref(eff);
	json_object_del(run, "tags");
	json_object_set_new(json_object_get(run, "postgres"), "prewarm",
			    json_pack("[s]", "all indexes"));
	assert_int_equal(harness_run_effective(run, defaults, &eff, &e), 0);
	assert_int_equal(harness_run_tags(eff, defaults, NULL, "design", "r.json", &tags, &e), 0);
	assert_true(has(tags, "prewarm") && has(tags, "serial") && has(tags, "ef40"));
	assert_false(has(tags, "cold") || has(tags, "warm") || has(tags, "baseline"));
	json_decref(tags);
	json_decref(eff);
	json_object_del(json_object_get(run, "postgres"), "prewarm");
	json_object_set_new(json_object_get(run, "postgres"), "shards",
			    json_pack("{s:{s:s,s:i}}", "shard0", "index", "/s0", "port", 5791));
	assert_int_equal(harness_run_effective(run, defaults, &eff, &e), 0);
	assert_int_equal(harness_run_tags(eff, defaults, NULL, "design", "r.json", &tags, &e), 0);
	assert_true(has(tags, "shards") && has(tags, "cold") && has(tags, "serial"));
	json_decref(tags);
	json_decref(eff);
	assert_true(cs_in_list(harness_tag_knobs("prewarm"), "postgres.prewarm"));
	assert_true(cs_in_list(harness_tag_knobs("prewarm"), "postgres.prewarm_mode"));
	assert_true(cs_in_list(harness_tag_knobs("shards"), "postgres.shards"));
	assert_true(cs_in_list(harness_tag_knobs("shards"), "index"));
	json_decref(run);
	json_decref(defaults);
}

static void test_run(void **state)
{
	(void) state;
	assert_int_equal(check(good_run, 1, NULL), 0);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
			       "\"ef_serch\":4}",
			       1, "$.ef_serch: unknown key"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"queries\":{\"spec\":\"q\"},\"cold\":true}", 1, "$: missing key \"index\""),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"}}", 1, "$: missing key \"cold\""),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\",\"count\":0},"
			       "\"cold\":true}",
			       1, "$.queries.count"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
			       "\"mode\":\"parallel\"}",
			       1, "$.mode"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
			       "\"clients\":0}",
			       1, "$.clients"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
			       "\"query_count\":5,\"duration_s\":2}",
			       1, "not both"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
			       "\"partitions\":[1,1]}",
			       1, "$.partitions[1]"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
			       "\"hypotheses\":[\"H 1\"]}",
			       1, "$.hypotheses[0]"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
			       "\"samplers\":{\"prometheus_url\":\"file:///etc/passwd\"}}",
			       1, "$.samplers.prometheus_url"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":\"yes\"}", 1,
			       "$.cold"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
			       "\"device\":\"floppy\"}",
			       1, "$.device"),
			 CS_EXIT_BADINPUT);
}

/* cold_each_query: a boolean, and only on a cold run with one client. */
static int check_eff(const char *text, const char *want)
{
	json_t *doc = NULL, *eff = NULL;
	cs_err e = {0};
	int rc = cs_json_load_buf(text, strlen(text), "f.json", &doc, &e);

	if (!rc)
		rc = harness_run_validate(doc, "f.json", "$", 0, &e);
	if (!rc)
		rc = harness_run_effective(doc, NULL, &eff, &e);
	if (!rc)
		rc = harness_run_check_treatments(eff, "f.json", &e);
	json_decref(doc);
	json_decref(eff);
	if (want) {
		if (!strstr(e.msg, want))
			print_message("message '%s' lacks '%s'\n", e.msg, want);
		assert_non_null(strstr(e.msg, want));
	}
	return rc;
}

static void test_cold_each_query(void **state)
{
	(void) state;
	assert_int_equal(check_eff("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
				   "\"cold_each_query\":true}",
				   NULL),
			 0);
	assert_int_equal(check_eff("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
				   "\"cold_each_query\":1}",
				   "$.cold_each_query: expected a boolean"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check_eff("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":false,"
				   "\"cold_each_query\":true}",
				   "needs \"cold\": true"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check_eff("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
				   "\"cold_each_query\":true,\"clients\":2}",
				   "needs clients 1"),
			 CS_EXIT_BADINPUT);
}

static void test_effective_and_features(void **state)
{
	json_t *run = NULL, *study = NULL, *eff = NULL, *f = NULL;
	cs_err e = {0};

	(void) state;
	assert_int_equal(cs_json_load_buf(good_run, strlen(good_run), "r", &run, &e), 0);
	assert_int_equal(cs_json_load_buf(good_study, strlen(good_study), "s", &study, &e), 0);
	assert_int_equal(harness_run_effective(run, json_object_get(study, "defaults"), &eff, &e), 0);
	assert_int_equal(json_integer_value(json_object_get(eff, "k")), 10);
	assert_int_equal(json_integer_value(json_object_get(eff, "clients")), 2);
	assert_string_equal(json_string_value(json_object_get(eff, "mode")), "fanout");
	assert_int_equal(json_integer_value(json_object_get(eff, "ef_search")), 40);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(eff, "queries"), "first")),
			 0);
	assert_int_equal(harness_run_validate(eff, "eff", "$", 0, &e), 0);
	assert_int_equal(harness_spec_features(run, &f, &e), 0);
	assert_int_equal(json_integer_value(json_object_get(f, "partitions")), 2);
	assert_int_equal(json_integer_value(json_object_get(f, "fanout")), 4);
	assert_int_equal(json_integer_value(json_object_get(f, "queries")), 5);
	assert_true(json_is_true(json_object_get(f, "cold")));
	assert_non_null(json_object_get(f, "buffers_bytes"));
	assert_true(json_is_null(json_object_get(f, "kind"))); /* no index there */
	json_decref(f);
	json_decref(eff);
	json_decref(study);
	json_decref(run);
}

/* Every committed spec of the demo study validates (and the holdout ones too). */
/* The postgres target: its keys, its required ones, and what it refuses. */
static void test_postgres(void **state)
{
	static const char *pg_run =
		"{\"target\":\"postgres\",\"index\":\"/x/pg\",\"postgres\":{\"port\":5433,"
		"\"sql\":\"SELECT id FROM t ORDER BY v <-> cube($1::float8[]) LIMIT 10\","
		"\"partition_sql\":\"SELECT id, v <-> cube($1::float8[]) FROM t_{p} ORDER BY 2 LIMIT 10\","
		"\"session\":[\"SET enable_seqscan = off\"],\"shared_buffers\":\"16MB\"},"
		"\"queries\":{\"spec\":\"q\"},\"cold\":true}";
	json_t *doc = NULL, *eff = NULL;
	cs_err e = {0};

	(void) state;
	assert_int_equal(check(pg_run, 1, NULL), 0);
	/* The index is the clone's data directory; a postgres object with sql is required. */
	assert_int_equal(check("{\"target\":\"postgres\",\"postgres\":{\"sql\":\"SELECT $1\"},"
			       "\"queries\":{\"spec\":\"q\"},\"cold\":true}",
			       1, "missing key \"index\""),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"target\":\"postgres\",\"index\":\"/x\",\"postgres\":{},"
			       "\"queries\":{\"spec\":\"q\"},\"cold\":true}",
			       1, "missing key \"sql\""),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"target\":\"postgres\",\"index\":\"/x\","
			       "\"queries\":{\"spec\":\"q\"},\"cold\":true}",
			       1, "$.postgres"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"target\":\"postgres\",\"index\":\"/x\",\"postgres\":{"
			       "\"sql\":\"SELECT 1\"},\"queries\":{\"spec\":\"q\"},\"cold\":true}",
			       1, "$.postgres.sql: expected SQL with $1"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"target\":\"postgres\",\"index\":\"/x\",\"postgres\":{"
			       "\"sql\":\"SELECT $1\",\"session\":[\"SET a = 1; DROP TABLE t\"]},"
			       "\"queries\":{\"spec\":\"q\"},\"cold\":true}",
			       1, "$.postgres.session[0]"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"target\":\"postgres\",\"index\":\"/x\",\"postgres\":{"
			       "\"sql\":\"SELECT $1\",\"shared_buffers\":\"lots\"},"
			       "\"queries\":{\"spec\":\"q\"},\"cold\":true}",
			       1, "$.postgres.shared_buffers"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"target\":\"oracle\",\"index\":\"/x\","
			       "\"queries\":{\"spec\":\"q\"},\"cold\":true}",
			       1, "$.target"),
			 CS_EXIT_BADINPUT);
	/* A study names a server's sockets and ports as production; ports are numbers. */
	assert_int_equal(check("{\"id\":\"s\",\"production\":{\"paths\":[\"/p\"],"
			       "\"sockets\":[\"/run/postgresql\"],\"ports\":[5432]},"
			       "\"indexes\":{\"pg\":{\"kind\":\"postgres\",\"clone\":\"/c\"}}}",
			       0, NULL),
			 0);
	assert_int_equal(check("{\"id\":\"s\",\"production\":{\"ports\":[\"5432\"]}}", 0,
			       "$.production.ports[0]"),
			 CS_EXIT_BADINPUT);
	/* On the effective spec: engine knobs and more than one client are refused. */
	assert_int_equal(cs_json_load_buf(pg_run, strlen(pg_run), "f.json", &doc, &e), 0);
	assert_int_equal(harness_run_effective(doc, NULL, &eff, &e), 0);
	assert_int_equal(harness_run_check_treatments(eff, "f.json", &e), 0);
	json_object_set_new(eff, "clients", json_integer(2));
	assert_int_equal(harness_run_check_treatments(eff, "f.json", &e), CS_EXIT_BADINPUT);
	assert_non_null(strstr(e.msg, "$.clients"));
	json_object_set_new(eff, "clients", json_integer(1));
	json_object_set_new(eff, "mode", json_string("fanout"));
	assert_int_equal(harness_run_check_treatments(eff, "f.json", &e), CS_EXIT_BADINPUT);
	assert_non_null(strstr(e.msg, "partition"));
	json_object_set_new(eff, "partitions", json_pack("[i,i]", 0, 1));
	assert_int_equal(harness_run_check_treatments(eff, "f.json", &e), 0);
	json_object_set_new(eff, "device", json_string("nvme"));
	assert_int_equal(harness_run_check_treatments(eff, "f.json", &e), CS_EXIT_BADINPUT);
	json_decref(eff);
	json_decref(doc);
}

/* A run over N servers: shards by foreign server name, each a clone and a port; serial only. */
static void test_postgres_shards(void **state)
{
	static const char *fdw_run =
		"{\"target\":\"postgres\",\"index\":\"/x/coord\",\"postgres\":{\"port\":5912,"
		"\"sql\":\"SELECT id FROM t ORDER BY v <-> $1::vector LIMIT 10\","
		"\"shards\":{\"shard0\":{\"index\":\"/x/s0\",\"port\":5913},"
		"\"shard1\":{\"index\":\"/x/s1\",\"port\":5914,\"shared_buffers\":\"16MB\"}}},"
		"\"queries\":{\"spec\":\"q\"},\"cold\":true}";
	json_t *doc = NULL, *eff = NULL;
	cs_err e = {0};

	(void) state;
	assert_int_equal(check(fdw_run, 1, NULL), 0);
	assert_int_equal(check("{\"target\":\"postgres\",\"index\":\"/x\",\"postgres\":{"
			       "\"sql\":\"SELECT $1\",\"shards\":{\"s0\":{\"index\":\"/x/s0\"}}},"
			       "\"queries\":{\"spec\":\"q\"},\"cold\":true}",
			       1, "missing key \"port\""),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"target\":\"postgres\",\"index\":\"/x\",\"postgres\":{"
			       "\"sql\":\"SELECT $1\",\"shards\":{\"s0\":{\"port\":5913}}},"
			       "\"queries\":{\"spec\":\"q\"},\"cold\":true}",
			       1, "missing key \"index\""),
			 CS_EXIT_BADINPUT);
	/* a name PostgreSQL would fold or need quoted is no foreign server's name here */
	assert_int_equal(check("{\"target\":\"postgres\",\"index\":\"/x\",\"postgres\":{"
			       "\"sql\":\"SELECT $1\",\"shards\":{\"Shard'0\":{\"index\":\"/s\","
			       "\"port\":5913}}},\"queries\":{\"spec\":\"q\"},\"cold\":true}",
			       1, "$.postgres.shards"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"target\":\"postgres\",\"index\":\"/x\",\"postgres\":{"
			       "\"sql\":\"SELECT $1\",\"shards\":{\"s0\":{\"index\":\"/s\","
			       "\"port\":80}}},\"queries\":{\"spec\":\"q\"},\"cold\":true}",
			       1, "$.postgres.shards.s0.port"),
			 CS_EXIT_BADINPUT);
	/* the fan-out is PostgreSQL's: a shards run is one statement (mode serial) */
	assert_int_equal(cs_json_load_buf(fdw_run, strlen(fdw_run), "f.json", &doc, &e), 0);
	assert_int_equal(harness_run_effective(doc, NULL, &eff, &e), 0);
	assert_int_equal(harness_run_check_treatments(eff, "f.json", &e), 0);
	json_object_set_new(eff, "mode", json_string("fanout"));
	json_object_set_new(eff, "partitions", json_pack("[i,i]", 0, 1));
	assert_int_equal(harness_run_check_treatments(eff, "f.json", &e), CS_EXIT_BADINPUT);
	assert_non_null(strstr(e.msg, "$.mode"));
	json_decref(eff);
	json_decref(doc);
}

static void test_committed_specs(void **state)
{
	const char *src = getenv("COLDSTUDY_SRC");
	const char *subs[] = {"", "/holdout"};
	char dir[PATH_MAX], path[PATH_MAX * 2], sha[65];
	json_t *doc = NULL;
	cs_err e = {0};
	int n = 0;

	(void) state;
	if (!src)
		skip();
	snprintf(path, sizeof(path), "%s/studies/cold-query/runs/study.json", src);
	if (harness_study_load(path, &doc, &e))
		fail_msg("%s", e.msg);
	json_decref(doc);
	for (int s = 0; s < 2; s++) {
		DIR *d;
		struct dirent *de;

		snprintf(dir, sizeof(dir), "%s/studies/cold-query/runs%s", src, subs[s]);
		d = opendir(dir);
		assert_non_null(d);
		while ((de = readdir(d))) {
			size_t len = strlen(de->d_name);

			if (len < 6 || strcmp(de->d_name + len - 5, ".json") || !strcmp(de->d_name, "study.json"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (harness_run_load(path, &doc, sha, &e))
				fail_msg("%s", e.msg);
			assert_true(json_array_size(json_object_get(doc, "tags")) > 0);
			json_decref(doc);
			n++;
		}
		closedir(d);
	}
	assert_true(n >= 10);
	/* The PostgreSQL example study's specs validate too. */
	snprintf(path, sizeof(path), "%s/studies/pg-cube/runs/study.json", src);
	if (harness_study_load(path, &doc, &e))
		fail_msg("%s", e.msg);
	json_decref(doc);
	for (int i = 0; i < 3; i++) {
		static const char *const pg_runs[] = {"cold-serial", "cold-fanout", "warm-serial"};

		snprintf(path, sizeof(path), "%s/studies/pg-cube/runs/%s.json", src, pg_runs[i]);
		if (harness_run_load(path, &doc, sha, &e))
			fail_msg("%s", e.msg);
		assert_string_equal(json_string_value(json_object_get(doc, "target")), "postgres");
		json_decref(doc);
	}
}

/* Unknown keys name the nearest valid one; dataset specs have their form. */
static void test_messages(void **state)
{
	(void) state;
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
			       "\"clinets\":2}",
			       1, "$.clinets: unknown key (did you mean \"clients\"? expected one of: index"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\",\"cuont\":3},"
			       "\"cold\":true}",
			       1, "$.queries.cuont: unknown key (did you mean \"count\"?"),
			 CS_EXIT_BADINPUT);
	/* far from every key: no suggestion, the list only */
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
			       "\"zzzzzzzzzz\":2}",
			       1, "$.zzzzzzzzzz: unknown key (expected one of:"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"id\":\"s\",\"production\":{\"paths\":[\"/p\"]},"
			       "\"datasets\":{\"base\":\"fashion-mnst:train\"}}",
			       0, "$.datasets.base: expected a dataset spec"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"id\":\"s\",\"production\":{\"paths\":[\"/p\"]},"
			       "\"datasets\":{\"base\":\"fashion-mnist:test[0:100]\","
			       "\"q\":\"fvecs:/d/q.fvecs\",\"s\":\"synth:n=5,d=2\"}}",
			       0, NULL),
			 0);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
			       "\"load\":{\"readers\":2,\"block_bytes\":1000}}",
			       1, "$.load.block_bytes: expected an integer in [4096, 1048576]"),
			 CS_EXIT_BADINPUT);
	assert_int_equal(check("{\"index\":\"/c\",\"queries\":{\"spec\":\"q\"},\"cold\":true,"
			       "\"load\":{\"readers\":2,\"block_bytes\":6144}}",
			       1, "$.load.block_bytes: expected a multiple of 4096"),
			 CS_EXIT_BADINPUT);
}

/* The schemas: draft 2020-12, every key of the tables with a type and a description. */
static void test_schemas(void **state)
{
	json_t *run = harness_run_schema(), *study = harness_study_schema(), *v;
	const char *k;

	(void) state;
	assert_non_null(run);
	assert_non_null(study);
	assert_string_equal(json_string_value(json_object_get(run, "$schema")),
			    "https://json-schema.org/draft/2020-12/schema");
	assert_true(json_is_false(json_object_get(run, "additionalProperties")));
	assert_true(json_object_size(json_object_get(run, "properties")) >= 34);
	json_object_foreach(json_object_get(run, "properties"), k, v) {
		if (!json_is_string(json_object_get(v, "description")))
			print_message("run key %s has no description\n", k);
		assert_true(json_is_string(json_object_get(v, "description")));
	}
	assert_non_null(json_object_get(json_object_get(study, "$defs"), "run_defaults"));
	/* the defaults' schema requires nothing; the run's requires index, queries, cold */
	assert_null(json_object_get(json_object_get(json_object_get(study, "$defs"), "run_defaults"),
				    "required"));
	assert_int_equal(json_array_size(json_object_get(run, "required")), 3);
	json_decref(run);
	json_decref(study);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_study),
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_tags),
		cmocka_unit_test(test_pg_treatment_tags),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_schemas),
		cmocka_unit_test(test_run),
		cmocka_unit_test(test_cold_each_query),
		cmocka_unit_test(test_effective_and_features),
		cmocka_unit_test(test_postgres),
		cmocka_unit_test(test_postgres_shards),
		cmocka_unit_test(test_committed_specs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
