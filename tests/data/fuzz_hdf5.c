/*
 * fuzz_hdf5.c - libFuzzer target: the bytes as an ann-benchmarks HDF5
 * file (hdf5:FILE:train through a memfd). coldstudy's loader may refuse
 * with a message, never crash, leak or accept a non-finite value; what
 * libhdf5 itself makes of hostile bytes is fuzzed with it.
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
	char spec[64];
	int fd = memfd_create("fuzz", 0);
	cv_dataset *ds = NULL;
	cv_err e = {{0}};

	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t) size) {
		close(fd);
		return 0;
	}
	snprintf(spec, sizeof(spec), "hdf5:/proc/self/fd/%d", fd);
	if (cv_dataset_load(spec, &ds, &e) == 0) {
		if (!ds || ds->n == 0 || ds->d == 0)
			abort();
		for (size_t j = 0; j < ds->n * ds->d; j++)
			if (!isfinite(ds->data[j]))
				abort();
	} else if (!e.msg[0] || ds) {
		abort();
	}
	cv_dataset_free(ds);
	close(fd);
	return 0;
}
