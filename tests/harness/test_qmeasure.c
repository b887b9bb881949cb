/*
 * test_qmeasure.c - how a query is timed (harness/qmeasure.c): the summary
 * of known latencies and pass QPS (the one percentile, the median pass),
 * and passes over an in-memory HNSW index of synthetic data: warm-up
 * passes count nothing, every timed query has a latency and its reads,
 * recall against the exact truth, the CPU clocks when asked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "qmeasure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_summary(void **state)
{
	double lat[] = {4, 1, 3, 2, 10, 6}; /* 2 passes of 3 queries */
	double qps[] = {30, 10};
	harness_qm_result r = {.nq = 3, .passes = 2, .lat_ms = lat, .pass_qps = qps};
	harness_qm_summary s;

	(void) state;
	assert_int_equal(harness_qm_summarise(&r, &s), 0);
	assert_int_equal(s.samples, 6);
	assert_true(fabs(s.lat_mean - 26.0 / 6) < 1e-12);
	/* sorted 1 2 3 4 6 10: type 7, pos = q (n - 1) */
	assert_true(fabs(s.p50 - 3.5) < 1e-12);
	assert_true(fabs(s.p90 - 8.0) < 1e-12);
	assert_true(fabs(s.p99 - 9.8) < 1e-12);
	assert_true(fabs(s.qps - 20) < 1e-12);
	assert_true(s.qps_best == 30 && s.qps_min == 10);
	/* the inputs are left as they were (sorted copies) */
	assert_true(lat[0] == 4 && qps[0] == 30);
	r.passes = 0;
	assert_int_equal(harness_qm_summarise(&r, &s), 0);
	assert_true(s.samples == 0 && s.p50 == 0 && s.qps == 0);
}

static void test_passes(void **state)
{
	char dir[] = "/tmp/cs-qmeasure-XXXXXX", cmd[128];
	cv_dataset *base = NULL, *qs = NULL;
	cv_build_opts bo;
	cv_open_opts oo;
	cv_io_opts io_o;
	cv_query_opts qo;
	cv_index *ix = NULL;
	cv_io *io = NULL;
	cv_err ce = {{0}};
	int32_t *gt = NULL;
	harness_qm_opts o = {0};
	harness_qm_result r;
	cs_err e = {0};

	(void) state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(cv_dataset_load("synth:n=500,d=8,clusters=5,seed=1", &base, &ce), 0);
	assert_int_equal(cv_dataset_load("synth:n=12,d=8,clusters=5,seed=2", &qs, &ce), 0);
	cv_build_opts_default(&bo);
	bo.metric = CV_METRIC_L2;
	assert_int_equal(cv_index_build("hnsw", base, &bo, dir, &ce), 0);
	cv_open_opts_default(&oo);
	assert_int_equal(cv_index_open(dir, &oo, &ix, &ce), 0);
	cv_io_opts_default(&io_o);
	assert_int_equal(cv_io_new(&io_o, &io), 0);
	cv_query_opts_default(&qo);
	qo.k = 5;
	qo.ef_search = 200;
	gt = malloc(qs->n * qo.k * sizeof(*gt));
	assert_non_null(gt);
	assert_int_equal(cv_groundtruth(base, qs, qo.k, CV_METRIC_L2, 0, gt, NULL), 0);

	o.warmup = 2;
	o.repeat = 3;
	o.cpu = 1;
	o.per_query = 1;
	o.base = base;
	o.gt = gt;
	o.metric = CV_METRIC_L2;
	assert_int_equal(harness_qm_passes(ix, io, qs, 10, &qo, &o, &r, &e), 0);
	assert_int_equal(r.nq, 10);
	assert_int_equal(r.passes, 3); /* the warm-up passes are not counted */
	assert_true(r.have_recall);
	assert_true(r.recall > 0.95 && r.recall <= 1.0); /* ef 200 over 500 rows: near exact */
	for (size_t i = 0; i < 30; i++)
		assert_true(r.lat_ms[i] > 0);
	for (size_t i = 0; i < 10; i++)
		assert_true(isfinite(r.q_recall[i]));
	assert_true(r.wall_s > 0 && r.cpu_s > 0);
	for (size_t p = 0; p < 3; p++)
		assert_true(r.pass_qps[p] > 0);
	assert_int_equal(r.query_failed, 0);
	harness_qm_result_free(&r);

	/* without a truth: no recall, NaN per query */
	o.gt = NULL;
	o.warmup = 0;
	o.repeat = 1;
	assert_int_equal(harness_qm_passes(ix, io, qs, 4, &qo, &o, &r, &e), 0);
	assert_false(r.have_recall);
	assert_true(isnan(r.q_recall[0]));
	harness_qm_result_free(&r);

	free(gt);
	cv_io_free(io);
	cv_index_close(ix);
	cv_dataset_free(base);
	cv_dataset_free(qs);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_passes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
