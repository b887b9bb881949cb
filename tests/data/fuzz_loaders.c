/*
 * fuzz_loaders.c - libFuzzer target: the same bytes as an fvecs, ivecs,
 * bvecs, IDX and npy file (plain, through a memfd). A loader may refuse
 * with a message, never crash, leak or read out of bounds; an accepted
 * dataset must be finite for float formats and have the shape it claims.
 */
#include "coldvec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *prefixes[] = {"fvecs:", "ivecs:", "bvecs:", "idx:", "npy:"};
	char spec[64];
	int fd = memfd_create("fuzz", 0);

	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t) size) {
		close(fd);
		return 0;
	}
	for (int i = 0; i < 5; i++) {
		cv_dataset *ds = NULL;
		cv_err e = {{0}};

		snprintf(spec, sizeof(spec), "%s/proc/self/fd/%d", prefixes[i], fd);
		if (cv_dataset_load(spec, &ds, &e) == 0) {
			if (!ds || ds->n == 0 || ds->d == 0 || ds->n * ds->d > size)
				abort();
			for (size_t j = 0; j < ds->n * ds->d; j++)
				if (!isfinite(ds->data[j]))
					abort();
		} else if (!e.msg[0] || ds) {
			abort();
		}
		cv_dataset_free(ds);
	}
	close(fd);
	return 0;
}
