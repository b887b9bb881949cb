/*
 * A program that uses libcoldvec as an outside user would, linked against
 * the installed static library, and that defines for itself names the
 * engine uses inside (data_hash, hnsw_search, rd_open, pg_tid, bufpool_new,
 * hfr_build): it links only if the static library exports nothing but its
 * cv_* API. It then checks that the library works: a synthetic dataset,
 * distances through the dispatched kernels, a dataset hash.
 */
#include <stdio.h>
#include <string.h>

#include "coldvec.h"

/* the program's own globals, named like engine internals */
int data_hash(int x);
int hnsw_search(int x);
int rd_open(int x);
int bufpool_new(int x);
int hfr_build(int x);
int pg_tid;

int data_hash(int x) { return x + 1; }
int hnsw_search(int x) { return x + 2; }
int rd_open(int x) { return x + 3; }
int bufpool_new(int x) { return x + 4; }
int hfr_build(int x) { return x + 5; }
int pg_tid = 7;

int main(void)
{
	cv_dataset *ds = NULL;
	cv_err e = {0};
	char hex[65];
	float d;
	int bad = 0;

	if (cv_dataset_load("synth:n=64,d=24,clusters=4,seed=9", &ds, &e)) {
		fprintf(stderr, "FAIL: cv_dataset_load: %s\n", e.msg);
		return 1;
	}
	d = cv_l2sq(ds->data, ds->data + ds->d, ds->d);
	if (!(d > 0.0f)) {
		fprintf(stderr, "FAIL: distance of two rows %g\n", (double) d);
		bad = 1;
	}
	if (cv_l2sq(ds->data, ds->data, ds->d) != 0.0f) {
		fprintf(stderr, "FAIL: distance of a row to itself\n");
		bad = 1;
	}
	cv_dataset_hash_hex(ds, hex);
	if (strlen(hex) != 64) {
		fprintf(stderr, "FAIL: dataset hash '%s'\n", hex);
		bad = 1;
	}
	if (data_hash(1) + hnsw_search(1) + rd_open(1) + bufpool_new(1) + hfr_build(1) + pg_tid != 27) {
		fprintf(stderr, "FAIL: the program's own functions were replaced\n");
		bad = 1;
	}
	printf("%s: simd %s, hash %.16s\n", bad ? "FAIL" : "ok", cv_simd_level(), hex);
	cv_dataset_free(ds);
	return bad;
}
