/*
 * fuzz_hnsw_file.c - libFuzzer target over the graph file decoder. Each
 * input is decoded twice: with the checksum off (so mutations reach every
 * field check, as a file with a forged checksum would) and on. A graph
 * that decodes is searched and re-encoded, which must not read out of
 * bounds whatever the links said.
 */
#include "hnsw/hnsw_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int sum = 0; sum <= 1; sum++) {
		hnsw *h = NULL;
		cv_err e = {{0}};

		if (hnsw_decode(data, size, sum, &h, &e, "fuzz"))
			continue;
		if (hnsw_dim(h) <= 1024) {
			float q[1024] = {0};
			uint32_t lab[8];
			size_t n;

			for (size_t i = 0; i < hnsw_dim(h); i++)
				q[i] = (float) (i % 7) - 3.0f;
			if (hnsw_search(h, q, 8, 16, lab, NULL, &n) == 0 && n > 8)
				abort();
		}
		hnsw_free(h);
	}
	return 0;
}
