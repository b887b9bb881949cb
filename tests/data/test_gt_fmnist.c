/*
 * test_gt_fmnist.c - (suite slow) ground truth on real data: 50
 * fashion-mnist test images against the 60,000 training images, k = 100,
 * every metric, against a naive sort; the truth's own recall is 1.0 and a
 * reversed list scores what it should. Exits 77 without the package.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "coldvec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static void test_fmnist_gt(void **state)
{
	cv_dataset *b = NULL, *q = NULL;
	cv_err e = {{0}};
	int32_t *ids = malloc(50 * 100 * 4);
	pr *all = malloc(60000 * sizeof(pr));

	assert_int_equal(cv_dataset_load("fashion-mnist", &b, &e), 0);
	assert_int_equal(cv_dataset_load("fashion-mnist:test[0:50]", &q, &e), 0);
	for (int m = 0; m < 3; m++) {
		assert_int_equal(cv_groundtruth(b, q, 100, (cv_metric) m, 2, ids, NULL), 0);
		for (size_t i = 0; i < q->n; i++) {
			uint32_t got[100];

			for (size_t j = 0; j < b->n; j++) {
				all[j].d = cv_distance((cv_metric) m, cv_row(q, i), cv_row(b, j), b->d);
				all[j].id = (int32_t) j;
			}
			qsort(all, b->n, sizeof(pr), cmp_pr);
			for (size_t j = 0; j < 100; j++) {
				assert_int_equal(ids[i * 100 + j], all[j].id);
				got[j] = (uint32_t) all[j].id;
			}
			assert_true(cv_recall_at_k(b, cv_row(q, i), (cv_metric) m, ids + i * 100, 10, got, 10) == 1.0);
			/* the 100 farthest of the first 1000 are not the 10 nearest */
			for (size_t j = 0; j < 10; j++)
				got[j] = (uint32_t) all[999 - j].id;
			assert_true(cv_recall_at_k(b, cv_row(q, i), (cv_metric) m, ids + i * 100, 10, got, 10) < 0.5);
		}
	}
	free(all);
	free(ids);
	cv_dataset_free(b);
	cv_dataset_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fmnist_gt),
	};

	if (access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", R_OK)) {
		printf("skip: dataset-fashion-mnist is not installed\n");
		return 77;
	}
	unsetenv("COLDSTUDY_FASHION_MNIST");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
