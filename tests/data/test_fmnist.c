/*
 * test_fmnist.c - fashion-mnist from the Debian package loads with the
 * ann-benchmarks shape (60,000 x 784 train, 10,000 x 784 test, values
 * 0..255) and the known content hash. Exits 77 (skip) without the package.
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

static void test_shapes(void **state)
{
	cv_dataset *tr = NULL, *te = NULL, *r = NULL;
	cv_err e = {{0}};
	char hex[65];
	float mn = 1e9f, mx = -1e9f;

	assert_int_equal(cv_dataset_load("fashion-mnist", &tr, &e), 0);
	assert_int_equal(tr->n, 60000);
	assert_int_equal(tr->d, 784);
	assert_int_equal(cv_dataset_load("fashion-mnist:test", &te, &e), 0);
	assert_int_equal(te->n, 10000);
	assert_int_equal(te->d, 784);
	for (size_t i = 0; i < te->n * te->d; i++) {
		mn = te->data[i] < mn ? te->data[i] : mn;
		mx = te->data[i] > mx ? te->data[i] : mx;
	}
	assert_true(mn == 0.0f && mx == 255.0f);
	cv_dataset_hash_hex(te, hex);
	assert_string_equal(hex, "1af9e566205b019d2f25846a3fa8f6bcabe5f9daca9000506b9e23bf11a0cf6b");
	cv_dataset_hash_hex(tr, hex);
	assert_string_equal(hex, "ca2f91b005da861c7a3626a34b53ddf86ddfdec9e5d5e00464bd3a75b74b41f5");
	assert_int_equal(cv_dataset_load("fashion-mnist:test[100:200]", &r, &e), 0);
	assert_int_equal(r->n, 100);
	assert_memory_equal(r->data, cv_row(te, 100), 100 * 784 * sizeof(float));
	cv_dataset_free(r);
	cv_dataset_free(tr);
	cv_dataset_free(te);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shapes),
	};

	if (access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", R_OK) ||
	    access("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", R_OK)) {
		printf("skip: dataset-fashion-mnist is not installed\n");
		return 77;
	}
	unsetenv("COLDSTUDY_FASHION_MNIST");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
