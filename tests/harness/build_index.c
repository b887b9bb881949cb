/*
 * build_index.c - a test helper: build a small index of KIND over a
 * dataset spec into DIR through the engine's public interface, for tests
 * that must not wait on the index verb. Usage: build_index KIND SPEC DIR [PARTITIONS]
 */
#include "coldvec.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	cv_build_opts o;
	cv_dataset *ds = NULL;
	cv_err e = {{0}};
	int rc;

	if (argc < 4)
		return 2;
	cv_build_opts_default(&o);
	o.m = 8;
	o.ef_construction = 40;
	o.threads = 2;
	if (argc > 4)
		o.partitions = (unsigned) strtoul(argv[4], NULL, 10);
	rc = cv_dataset_load(argv[2], &ds, &e);
	if (!rc)
		rc = cv_index_build(argv[1], ds, &o, argv[3], &e);
	cv_dataset_free(ds);
	if (rc) {
		fprintf(stderr, "build_index: %s (%d)\n", e.msg, rc);
		return rc == -95 ? 77 : 1; /* -EOPNOTSUPP: the kind is not built yet */
	}
	return 0;
}
