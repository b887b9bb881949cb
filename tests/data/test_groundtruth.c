/*
 * test_groundtruth.c - exact ground truth against a naive loop (every
 * metric, several k, 1 and 3 threads, blocks smaller and larger than the
 * base), ties broken by the lower id, the cache (miss, hit, a corrupt
 * cache file ignored), ivecs round trip and refusals, and recall as
 * ann-benchmarks computes it: never below 0 or above 1, and NaN (which no
 * average may take in) for a truth naming rows outside the base, in
 * every metric.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "coldvec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

/* The naive answer: sort all (distance, id) pairs of one query. */
typedef struct pr {
	float d;
	int32_t id;
} pr;

static int cmp_pr(const void *x, const void *y)
{
	const pr *a = x, *b = y;

	if (a->d != b->d)
		return a->d < b->d ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static void naive(const cv_dataset *b, const cv_dataset *q, size_t k, cv_metric m, int32_t *ids)
{
	pr *all = malloc(b->n * sizeof(pr));

	assert_non_null(all);
	for (size_t i = 0; i < q->n; i++) {
		for (size_t j = 0; j < b->n; j++) {
			all[j].d = cv_distance(m, cv_row(q, i), cv_row(b, j), b->d);
			all[j].id = (int32_t) j;
		}
		qsort(all, b->n, sizeof(pr), cmp_pr);
		for (size_t j = 0; j < k; j++)
			ids[i * k + j] = all[j].id;
	}
	free(all);
}

static cv_dataset *must_load(const char *spec)
{
	cv_dataset *ds = NULL;
	cv_err e = {{0}};

	if (cv_dataset_load(spec, &ds, &e))
		fail_msg("%s: %s", spec, e.msg);
	return ds;
}

static void test_vs_naive(void **state)
{
	/* d=300: a base block is 218 rows, so 1000 rows span several blocks */
	const char *specs[][2] = {
		{"synth:n=1000,d=300,clusters=5,seed=1", "synth:n=37,d=300,clusters=5,seed=2"},
		{"synth:n=500,d=7,clusters=3,seed=3", "synth:n=20,d=7,clusters=3,seed=4"},
	};
	size_t ks[] = {1, 10, 100};

	for (int s = 0; s < 2; s++) {
		cv_dataset *b = must_load(specs[s][0]), *q = must_load(specs[s][1]);

		for (int m = 0; m < 3; m++) {
			for (int ki = 0; ki < 3; ki++) {
				size_t k = ks[ki];
				int32_t *want = malloc(q->n * k * 4), *got = malloc(q->n * k * 4);
				float *dist = malloc(q->n * k * 4);

				naive(b, q, k, (cv_metric) m, want);
				for (int th = 1; th <= 3; th += 2) {
					memset(got, 0xff, q->n * k * 4);
					assert_int_equal(cv_groundtruth(b, q, k, (cv_metric) m, th, got, dist), 0);
					assert_memory_equal(got, want, q->n * k * 4);
					for (size_t i = 0; i < q->n; i++)
						assert_true(dist[i * k] == cv_distance((cv_metric) m, cv_row(q, i),
											 cv_row(b, (size_t) got[i * k]), b->d));
				}
				free(want);
				free(got);
				free(dist);
			}
		}
		cv_dataset_free(b);
		cv_dataset_free(q);
	}
}

/* A base where rows 2, 5 and 9 equal the query, and 7 is next: order 2, 5, 9, 7. */
static void test_ties(void **state)
{
	cv_dataset *b = must_load("synth:n=12,d=4,seed=5"), *q = NULL;
	int32_t ids[4];

	for (int j = 0; j < 4; j++) {
		float v = (float) j;

		b->data[9 * 4 + j] = v;
		b->data[2 * 4 + j] = v;
		b->data[5 * 4 + j] = v;
		b->data[7 * 4 + j] = v + (j == 0 ? 0.01f : 0);
	}
	for (size_t i = 0; i < 12; i++)
		if (i != 2 && i != 5 && i != 9 && i != 7)
			for (int j = 0; j < 4; j++)
				b->data[i * 4 + j] = 100.0f + (float) i;
	assert_int_equal(cv_dataset_slice(b, 9, 1, &q), 0);
	assert_int_equal(cv_groundtruth(b, q, 4, CV_METRIC_L2, 1, ids, NULL), 0);
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[1], 5);
	assert_int_equal(ids[2], 9);
	assert_int_equal(ids[3], 7);
	/* recall: 9, 2, 5 and a tie for 7 all count; a repeat does not; an id past the base does not */
	{
		uint32_t got[4] = {9, 5, 2, 7}, dup[4] = {9, 9, 9, 9}, bad[4] = {2, 5, 1000, 9};

		assert_true(cv_recall_at_k(b, cv_row(q, 0), CV_METRIC_L2, ids, 4, got, 4) == 1.0);
		assert_true(cv_recall_at_k(b, cv_row(q, 0), CV_METRIC_L2, ids, 4, dup, 4) == 0.25);
		assert_true(cv_recall_at_k(b, cv_row(q, 0), CV_METRIC_L2, ids, 4, bad, 4) == 0.75);
		assert_true(cv_recall_at_k(b, cv_row(q, 0), CV_METRIC_L2, ids, 4, got, 2) == 0.5);
		/* k=3: 7 is 0.01 farther than the 3rd true (distance 0): outside 1e-3 */
		assert_true(cv_recall_at_k(b, cv_row(q, 0), CV_METRIC_L2, ids, 3, got + 1, 3) == 2.0 / 3);
		/* and within 1e-3 it counts, as in ann-benchmarks */
		b->data[7 * 4] = 0.0005f;
		assert_true(cv_recall_at_k(b, cv_row(q, 0), CV_METRIC_L2, ids, 3, got + 1, 3) == 1.0);
	}
	assert_int_equal(cv_groundtruth(b, q, 13, CV_METRIC_L2, 1, ids, NULL), -EINVAL);
	cv_dataset_free(b);
	cv_dataset_free(q);
}

static void test_cache(void **state)
{
	cv_dataset *b = must_load("synth:n=300,d=16,seed=9"), *q = must_load("synth:n=300,d=16,seed=9[0:25]");
	int32_t *a = NULL, *c = NULL, *want = malloc(25 * 10 * 4);
	float *dist = NULL;
	cv_err e = {{0}};
	int hit = -1;
	char path[256];
	FILE *f;

	naive(b, q, 10, CV_METRIC_COSINE, want);
	assert_int_equal(cv_groundtruth_cached2(b, q, 10, CV_METRIC_COSINE, 2, dir, &a, &dist, &hit, &e), 0);
	assert_int_equal(hit, 0);
	assert_memory_equal(a, want, 25 * 10 * 4);
	assert_int_equal(a[0], 0);
	assert_true(dist[0] < 1e-6f);
	free(dist);
	assert_int_equal(cv_groundtruth_cached2(b, q, 10, CV_METRIC_COSINE, 2, dir, &c, NULL, &hit, &e), 0);
	assert_int_equal(hit, 1);
	assert_memory_equal(c, want, 25 * 10 * 4);
	free(c);
	/* the old entry point agrees, and the environment variable names the directory */
	setenv("COLDSTUDY_CACHE", dir, 1);
	assert_int_equal(cv_groundtruth_cached(b, q, 10, CV_METRIC_COSINE, 1, NULL, &c, &e), 0);
	assert_memory_equal(c, want, 25 * 10 * 4);
	free(c);
	/* a different metric is a different entry */
	assert_int_equal(cv_groundtruth_cached2(b, q, 10, CV_METRIC_L2, 1, dir, &c, NULL, &hit, &e), 0);
	assert_int_equal(hit, 0);
	free(c);
	/* corrupt every cache file: ids past the base; it must be recomputed, not trusted */
	{
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "for f in %s/gt-*.ivecs; do printf '\\001\\000\\000\\000\\377\\377\\377\\177' > \"$f\"; done", dir);
		assert_int_equal(system(cmd), 0);
	}
	assert_int_equal(cv_groundtruth_cached2(b, q, 10, CV_METRIC_COSINE, 1, dir, &c, NULL, &hit, &e), 0);
	assert_int_equal(hit, 0);
	assert_memory_equal(c, want, 25 * 10 * 4);
	free(c);
	/* bad shapes */
	assert_int_equal(cv_groundtruth_cached2(b, q, 301, CV_METRIC_L2, 1, dir, &c, NULL, &hit, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "k=301"));

	/* ivecs round trip and refusals */
	snprintf(path, sizeof(path), "%s/x.ivecs", dir);
	assert_int_equal(cv_ivecs_write(path, a, 25, 10, &e), 0);
	{
		int32_t *r = NULL;
		size_t nq = 0, k = 0;

		assert_int_equal(cv_ivecs_read(path, &r, &nq, &k, &e), 0);
		assert_int_equal(nq, 25);
		assert_int_equal(k, 10);
		assert_memory_equal(r, a, 25 * 10 * 4);
		free(r);
		assert_int_equal(truncate(path, 25 * 44 - 3), 0);
		assert_int_equal(cv_ivecs_read(path, &r, &nq, &k, &e), -EINVAL);
		assert_non_null(strstr(e.msg, "byte 1060"));
		f = fopen(path, "r+b");
		fseek(f, 44, SEEK_SET);
		fputc(9, f);
		fclose(f);
		assert_int_equal(cv_ivecs_read(path, &r, &nq, &k, &e), -EINVAL);
		assert_non_null(strstr(e.msg, "byte 44"));
		assert_non_null(strstr(e.msg, "differs from row 0"));
	}
	free(a);
	free(want);
	cv_dataset_free(b);
	cv_dataset_free(q);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/cvgt-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/*
 * Ground truth of a larger base (ids past this one's rows, at the k-th
 * place or before it): NaN in every metric, never a negative sentinel; a
 * truth of the same base gives a recall within [0, 1].
 */
static void test_recall_other_base(void **state)
{
	cv_dataset *big = must_load("synth:n=400,d=8,seed=3"), *b = NULL, *q = must_load("synth:n=5,d=8,seed=4");
	int32_t ids[5 * 10], own[5 * 10];
	uint32_t got[10];

	(void) state;
	assert_int_equal(cv_dataset_slice(big, 0, 40, &b), 0);
	for (int m = CV_METRIC_L2; m <= CV_METRIC_COSINE; m++) {
		size_t past = 0;

		assert_int_equal(cv_groundtruth(big, q, 10, (cv_metric) m, 1, ids, NULL), 0);
		assert_int_equal(cv_groundtruth(b, q, 10, (cv_metric) m, 1, own, NULL), 0);
		for (size_t i = 0; i < 10; i++)
			got[i] = (uint32_t) i;
		for (size_t i = 0; i < 5; i++) {
			int outside = 0;
			double r;

			for (size_t j = 0; j < 10; j++)
				outside |= ids[i * 10 + j] >= 40;
			past += (size_t) outside;
			r = cv_recall_at_k(b, cv_row(q, i), (cv_metric) m, ids + i * 10, 10, got, 10);
			if (outside)
				assert_true(isnan(r));
			else
				assert_true(r >= 0 && r <= 1);
			r = cv_recall_at_k(b, cv_row(q, i), (cv_metric) m, own + i * 10, 10, got, 10);
			assert_true(r >= 0 && r <= 1);
		}
		/* the big base's truth of 5 queries leaves the first 40 rows somewhere */
		assert_true(past > 0);
		/* a negative id and bad arguments: NaN too */
		own[3] = -1;
		assert_true(isnan(cv_recall_at_k(b, cv_row(q, 0), (cv_metric) m, own, 10, got, 10)));
		assert_true(isnan(cv_recall_at_k(b, cv_row(q, 0), (cv_metric) m, own, 0, got, 10)));
	}
	cv_dataset_free(big);
	cv_dataset_free(b);
	cv_dataset_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vs_naive),
		cmocka_unit_test(test_ties),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_recall_other_base),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
