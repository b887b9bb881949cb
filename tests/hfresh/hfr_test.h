/*
 * hfr_test.h - helpers shared by HFresh's tests: generated data, exact
 * neighbours, recall, temporary index directories.
 */
#ifndef HFR_TEST_H
#define HFR_TEST_H

#include "hfresh/hfresh.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A dataset of n rows, d dims, from our own generator (clusters, scaled norms when vary). */
static inline cv_dataset *t_data(size_t n, size_t d, unsigned clusters, uint64_t seed, int vary)
{
	cv_dataset *ds = calloc(1, sizeof(*ds));
	float *cent = malloc(sizeof(float) * clusters * d);
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	ds->n = n;
	ds->d = d;
	ds->data = aligned_alloc(64, (n * d * sizeof(float) + 63) / 64 * 64);
#define T_RNG() (s ^= s << 13, s ^= s >> 7, s ^= s << 17, (double) (s >> 11) / 9007199254740992.0)
	for (size_t i = 0; i < clusters * d; i++)
		cent[i] = (float) (T_RNG() * 2 - 1) * 3.0f;
	for (size_t i = 0; i < n; i++) {
		size_t c = (size_t) (T_RNG() * clusters) % clusters;
		float scale = vary ? (float) (0.3 + 2.7 * T_RNG()) : 1.0f;

		for (size_t j = 0; j < d; j++) {
			double u1 = T_RNG() + 1e-12, u2 = T_RNG();
			double g = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);

			ds->data[i * d + j] = (float) (cent[c * d + j] + g) * scale;
		}
	}
#undef T_RNG
	free(cent);
	snprintf(ds->spec, sizeof(ds->spec), "test:n=%zu,d=%zu", n, d);
	return ds;
}

static inline void t_data_free(cv_dataset *ds)
{
	if (!ds)
		return;
	free(ds->data);
	free(ds);
}

/* Exact k nearest of q in ds under metric m (ties by id). */
static inline void t_exact(const cv_dataset *ds, cv_metric m, const float *q, size_t k,
			   uint32_t *out, const uint8_t *skip)
{
	float *bd = malloc(sizeof(float) * k);
	size_t n = 0;

	for (size_t i = 0; i < ds->n; i++) {
		float d;
		size_t j;

		if (skip && skip[i])
			continue;
		d = cv_distance(m, q, ds->data + i * ds->d, ds->d);
		if (n == k && d >= bd[k - 1])
			continue;
		j = n < k ? n++ : k - 1;
		while (j > 0 && bd[j - 1] > d) {
			bd[j] = bd[j - 1];
			out[j] = out[j - 1];
			j--;
		}
		bd[j] = d;
		out[j] = (uint32_t) i;
	}
	free(bd);
}

/* |truth ∩ got| / k */
static inline double t_recall(const uint32_t *truth, const uint32_t *got, size_t ngot, size_t k)
{
	size_t hit = 0;

	for (size_t i = 0; i < k; i++)
		for (size_t j = 0; j < ngot; j++)
			if (truth[i] == got[j]) {
				hit++;
				break;
			}
	return (double) hit / k;
}

/* A fresh empty directory under TMPDIR; caller frees the string and removes it with t_rmdir. */
static inline char *t_tmpdir(void)
{
	const char *t = getenv("TMPDIR");
	char *p = malloc(4096);

	snprintf(p, 4096, "%s/hfrtest.XXXXXX", t ? t : "/tmp");
	if (!mkdtemp(p)) {
		free(p);
		return NULL;
	}
	return p;
}

static inline void t_rmdir(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

#endif
