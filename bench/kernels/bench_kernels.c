/*
 * bench_kernels.c - distance kernel throughput at each SIMD level the CPU
 * has, d = 128, 768, 784, 1536, side by side with the scalar level.
 *
 * One query against a block of rows that stays in cache (32 KiB .. 384 KiB,
 * so L1/L2 bandwidth and the FMA units are what is measured, not DRAM).
 * The levels are timed in turn, 15 rounds of about 0.03 s each, and each
 * keeps its best round: on a shared machine the best round is the one
 * least disturbed, and interleaving gives every level the same chances,
 * so the ratios stay fair even when the absolute figures wobble. FLOP counts per pair: l2sq 3d (sub,
 * mul, add), dot 2d, cosine 6d (three dot products). Prints one line per
 * (kernel, d, level): ns per distance, GFLOP/s, and the ratio to scalar.
 *
 * usage: bench_kernels [seconds-per-round]
 */
#include "coldvec.h"
#include "kernels/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

typedef float (*kfn)(const float *, const float *, size_t);

static volatile float sink;

/* Seconds per call of f over rows of dimension d, cycled for about secs. */
static double time_kernel(kfn f, const float *q, const float *rows, size_t nrows, size_t d, double secs)
{
	size_t calls = 0;
	double t0 = now(), t;
	float acc = 0;

	do {
		for (size_t i = 0; i < nrows; i++)
			acc += f(q, rows + i * d, d);
		calls += nrows;
		t = now() - t0;
	} while (t < secs);
	sink = acc;
	return t / (double) calls;
}

int main(int argc, char **argv)
{
	static const size_t dims[] = {128, 768, 784, 1536};
	static const char *levels[] = {"scalar", "avx2", "avx512"};
	static const char *names[] = {"l2sq", "dot", "cosine"};
	static const double flops[] = {3, 2, 6};
	double secs = argc > 1 ? strtod(argv[1], NULL) : 0.03;
	float *q, *rows;

	q = aligned_alloc(64, 1536 * sizeof(float));
	rows = aligned_alloc(64, 64 * 1536 * sizeof(float));
	if (!q || !rows)
		return 1;
	for (size_t i = 0; i < 1536; i++)
		q[i] = (float) rand() / (float) RAND_MAX;
	for (size_t i = 0; i < 64 * 1536; i++)
		rows[i] = (float) rand() / (float) RAND_MAX;
	printf("# best level on this CPU: %s\n", cvk_best()->name);
	printf("%-7s %5s %-7s %10s %9s %9s\n", "kernel", "d", "level", "ns/dist", "GFLOP/s", "x scalar");
	for (int k = 0; k < 3; k++) {
		for (int di = 0; di < 4; di++) {
			size_t d = dims[di];
			double best[3] = {1e30, 1e30, 1e30};

			for (int round = 0; round < 15; round++) {
				for (int l = 0; l < 3; l++) {
					const cvk_ops *o = cvk_level(levels[l]);
					kfn f;
					double t;

					if (!o)
						continue;
					f = k == 0 ? o->l2sq : k == 1 ? o->dot : o->cosine_dist;
					t = time_kernel(f, q, rows, 64, d, secs);
					best[l] = t < best[l] ? t : best[l];
				}
			}
			for (int l = 0; l < 3; l++)
				if (cvk_level(levels[l]))
					printf("%-7s %5zu %-7s %10.1f %9.2f %9.2f\n", names[k], d, levels[l],
					       best[l] * 1e9, flops[k] * (double) d / best[l] * 1e-9,
					       best[0] / best[l]);
		}
	}
	free(q);
	free(rows);
	return 0;
}
