/*
 * test_sample.c - the samplers' arithmetic and threads: iostat -x from two
 * stat readings, Prometheus text parsing (labels, comments, junk), the
 * memory readers, and the sampler threads against a Prometheus URL when
 * PROM_URL is set (prometheus.sh serves a metrics file on 127.0.0.1).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static void test_iostat(void **state)
{
	cv_blkstat a = {0}, b = {0};
	json_t *r;

	(void) state;
	a.t_ns = 1000000000ull;
	b.t_ns = 3000000000ull; /* 2 s */
	a.reads = 100;
	b.reads = 300;           /* 100 r/s */
	b.read_sectors = 1600;   /* 800 KiB over 2 s: 400 kB/s */
	b.read_ms = 1000;        /* 5 ms per read */
	b.time_in_queue_ms = 3000; /* aqu-sz 1.5 */
	b.io_ticks_ms = 1000;    /* 50 % */
	r = harness_iostat_row(&a, &b, 2.0);
	assert_float_equal(json_real_value(json_object_get(r, "r_s")), 100.0, 1e-9);
	assert_float_equal(json_real_value(json_object_get(r, "rkB_s")), 400.0, 1e-9);
	assert_float_equal(json_real_value(json_object_get(r, "r_await")), 5.0, 1e-9);
	assert_float_equal(json_real_value(json_object_get(r, "aqu_sz")), 1.5, 1e-9);
	assert_float_equal(json_real_value(json_object_get(r, "util")), 50.0, 1e-9);
	json_decref(r);
	b.reads = a.reads; /* no reads: r_await is null, not 0 */
	r = harness_iostat_row(&a, &b, 2.0);
	assert_true(json_is_null(json_object_get(r, "r_await")));
	json_decref(r);
}

static void test_prom_parse(void **state)
{
	const char *t = "# HELP x y\n# TYPE go_goroutines gauge\ngo_goroutines 42\n"
			"http_requests_total{code=\"200\",path=\"/a b\"} 1027 1395066363000\n"
			"weird line without value\n\nnan_metric NaN\r\nlast 1.5e3";
	json_t *o = json_object();
	size_t skipped = 0, n;

	(void) state;
	n = harness_prom_parse(t, strlen(t), o, 100, &skipped);
	assert_int_equal(n, 4);
	assert_int_equal(skipped, 1);
	assert_float_equal(json_real_value(json_object_get(o, "go_goroutines")), 42, 0);
	assert_float_equal(json_real_value(json_object_get(
				   o, "http_requests_total{code=\"200\",path=\"/a b\"}")),
			   1027, 0);
	assert_true(json_is_null(json_object_get(o, "nan_metric")));
	assert_float_equal(json_real_value(json_object_get(o, "last")), 1500, 0);
	json_decref(o);
	o = json_object();
	assert_int_equal(harness_prom_parse(t, strlen(t), o, 2, &skipped), 2); /* the cap holds */
	json_decref(o);
}

static void test_memory(void **state)
{
	char which[64] = "";
	int64_t cg = harness_cgroup_memory(which, sizeof(which));

	(void) state;
	assert_true(harness_rss() > 0);
	if (cg >= 0)
		assert_true(which[0] != '\0');
}

static void test_samplers(void **state)
{
	const char *url = getenv("PROM_URL");
	harness_sampler_opts o = {.memory_s = 0.05, .prometheus_s = 0.05,
				  .prometheus_url = url ? url : "http://127.0.0.1:9/metrics"};
	harness_samplers *s = NULL;
	json_t *io = NULL, *mem = NULL, *prom = NULL, *row;
	struct timespec ts = {0, 300 * 1000 * 1000};
	harness_mem_peak peak = {0};
	json_t *health = NULL, *ph;
	cs_err e = {0};

	(void) state;
	assert_int_equal(harness_samplers_start(&o, &s, &e), 0);
	nanosleep(&ts, NULL);
	harness_samplers_stop(s, &io, &mem, &prom, &peak, &health);
	assert_int_equal(json_array_size(io), 0); /* no device given */
	assert_true(json_array_size(mem) >= 3);   /* first, periodic, last */
	assert_true(json_array_size(prom) >= 2);
	assert_true(peak.rss_max > 0);
	assert_true(peak.samples >= 3);
	/* every scrape is counted, and a failed one said */
	ph = json_object_get(health, "prometheus");
	assert_int_equal(json_integer_value(json_object_get(ph, "tries")), json_array_size(prom));
	assert_null(json_object_get(health, "iostat")); /* it did not run */
	row = json_array_get(prom, 0);
	if (url) {
		assert_int_equal(json_integer_value(json_object_get(ph, "failed")), 0);
		assert_int_equal(json_integer_value(json_object_get(health, "failed")), 0);
		assert_null(json_object_get(row, "error"));
		assert_float_equal(json_real_value(json_object_get(json_object_get(row, "metrics"),
								   "coldstudy_test_gauge")),
				   7, 0);
	} else {
		assert_non_null(json_object_get(row, "error")); /* nothing listens on port 9 */
		assert_int_equal(json_integer_value(json_object_get(ph, "failed")), json_array_size(prom));
		assert_non_null(json_object_get(ph, "last_error"));
		assert_true(json_integer_value(json_object_get(health, "failed")) >= 2);
	}
	json_decref(health);
	json_decref(io);
	json_decref(mem);
	json_decref(prom);
}

/* Write text to dir/name. */
static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The OOM-kill count and the peak counter, as cgroup v2 and v1 write them. */
static void test_cgroup_files(void **state)
{
	char v2[] = "/tmp/cs-cg2-XXXXXX", v1[] = "/tmp/cs-cg1-XXXXXX", none[] = "/tmp/cs-cg0-XXXXXX";
	char which[64] = "";

	(void) state;
	assert_non_null(mkdtemp(v2));
	assert_non_null(mkdtemp(v1));
	assert_non_null(mkdtemp(none));
	put(v2, "memory.events", "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n");
	put(v2, "memory.peak", "73400320\n");
	put(v1, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
	put(v1, "memory.max_usage_in_bytes", "52428800\n");
	assert_int_equal(harness_cgroup_oom_kills(v2), 2);
	assert_int_equal(harness_cgroup_oom_kills(v1), 1);
	assert_int_equal(harness_cgroup_oom_kills(none), -1);
	assert_int_equal(harness_cgroup_peak(v2, which, sizeof(which)), 73400320);
	assert_string_equal(which, "memory.peak");
	assert_int_equal(harness_cgroup_peak(v1, which, sizeof(which)), 52428800);
	assert_string_equal(which, "memory.max_usage_in_bytes");
	assert_int_equal(harness_cgroup_peak(none, NULL, 0), -1);
	for (int i = 0; i < 3; i++) {
		const char *d = i == 0 ? v2 : i == 1 ? v1 : none;
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_iostat),
		cmocka_unit_test(test_prom_parse),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_samplers),
		cmocka_unit_test(test_cgroup_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
