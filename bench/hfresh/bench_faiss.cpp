// bench_faiss: Debian's faiss IndexIVFFlat on the same data as bench_hfresh:
// train + add time, then recall@10 and warm single-thread QPS per nprobe.
//   bench_faiss BASE QUERIES NQ NLIST [INDEXFILE [NPROBES]]
// INDEXFILE: read the trained index from it when it exists (no build time
// then), else write it there after train + add ("-": neither). NPROBES:
// a comma list (default 1,2,3,4,5,6,8,10,12,14,16,20,24,32). BENCH_CPU=N pins the query
// thread to CPU N after the build (run.sh pins both peers to the same one).
// Output: one JSON object per line.
extern "C" {
#include "coldvec.h"
double cs_quantile(const double *sorted, size_t n, double q);
}
#include <algorithm>
#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/index_io.h>
#include <omp.h>
#include <sched.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static double now()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

/* The process's CPU time (user + system), s. */
static double cpu_now()
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *base_spec = argc > 1 ? argv[1] : "fashion-mnist:train";
	const char *q_spec = argc > 2 ? argv[2] : "fashion-mnist:test";
	size_t nq = argc > 3 ? strtoul(argv[3], nullptr, 10) : 1000;
	size_t nlist = argc > 4 ? strtoul(argv[4], nullptr, 10) : 245;
	cv_dataset *base = nullptr, *qs = nullptr;
	cv_err e;
	int32_t *gt = nullptr;

	if (cv_dataset_load(base_spec, &base, &e) || cv_dataset_load(q_spec, &qs, &e)) {
		fprintf(stderr, "bench_faiss: %s\n", e.msg);
		return 5;
	}
	if (nq > qs->n)
		nq = qs->n;
	{
		cv_dataset *s = nullptr;
		cv_dataset_slice(qs, 0, nq, &s);
		cv_dataset_free(qs);
		qs = s;
	}
	if (cv_groundtruth_cached(base, qs, 10, CV_METRIC_L2, 0, nullptr, &gt, &e)) {
		fprintf(stderr, "bench_faiss: %s\n", e.msg);
		return 1;
	}
	const char *file = argc > 5 && strcmp(argv[5], "-") ? argv[5] : nullptr;
	std::vector<size_t> nprobes = {1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 32};

	if (argc > 6) {
		char *p = argv[6];

		nprobes.clear();
		while (*p) {
			nprobes.push_back(strtoul(p, &p, 10));
			if (*p != ',')
				break;
			p++;
		}
	}
	struct stat sb;
	faiss::IndexIVFFlat *ixp = nullptr;

	omp_set_num_threads(2);
	if (file && stat(file, &sb) == 0) {
		ixp = dynamic_cast<faiss::IndexIVFFlat *>(faiss::read_index(file));
		if (!ixp || ixp->nlist != nlist || ixp->ntotal != (int64_t) base->n) {
			fprintf(stderr, "bench_faiss: %s is not IVFFlat nlist %zu over %zu vectors\n",
				file, nlist, base->n);
			return 1;
		}
		ixp->own_fields = true;
		printf("{\"peer\":\"faiss IndexIVFFlat\",\"nlist\":%zu,\"read_from\":\"%s\"}\n",
		       nlist, file);
	} else {
		faiss::IndexFlatL2 *quant = new faiss::IndexFlatL2(base->d);
		double t0 = now();

		ixp = new faiss::IndexIVFFlat(quant, base->d, nlist, faiss::METRIC_L2);
		ixp->own_fields = true;
		ixp->train(base->n, base->data);
		ixp->add(base->n, base->data);
		double tb = now() - t0;
		printf("{\"peer\":\"faiss IndexIVFFlat\",\"nlist\":%zu,\"train_add_s\":%.2f,"
		       "\"threads\":2}\n", nlist, tb);
		if (file)
			faiss::write_index(ixp, file);
	}
	faiss::IndexIVFFlat &ix = *ixp;
	/* timed passes after the warm-up one: BENCH_REPEAT (default 3); qps is the best, qps_median
	 * the median pass (what `index query --repeat` reports) */
	const int reps = getenv("BENCH_REPEAT") && atoi(getenv("BENCH_REPEAT")) > 0
				 ? atoi(getenv("BENCH_REPEAT"))
				 : 3;
	omp_set_num_threads(1);
	if (getenv("BENCH_CPU")) {
		cpu_set_t cs;

		CPU_ZERO(&cs);
		CPU_SET(atoi(getenv("BENCH_CPU")), &cs);
		if (sched_setaffinity(0, sizeof(cs), &cs))
			perror("bench_faiss: sched_setaffinity");
	}
	std::vector<int64_t> lab(10);
	std::vector<float> dist(10);
	for (size_t np : nprobes) {
		ix.nprobe = np;
		double sum = 0;
		for (size_t i = 0; i < nq; i++) { // warm-up pass, also recall
			ix.search(1, cv_row(qs, i), 10, dist.data(), lab.data());
			uint32_t got[10];
			for (int j = 0; j < 10; j++)
				got[j] = (uint32_t) lab[j];
			sum += cv_recall_at_k(base, cv_row(qs, i), CV_METRIC_L2, gt + i * 10, 10, got, 10);
		}
		double best = 0, cpu = 0;
		std::vector<double> passes;
		for (int rep = 0; rep < reps; rep++) {
			double t1 = now(), c1 = cpu_now();
			for (size_t i = 0; i < nq; i++)
				ix.search(1, cv_row(qs, i), 10, dist.data(), lab.data());
			double q = nq / (now() - t1);
			cpu += cpu_now() - c1;
			passes.push_back(q);
			if (q > best)
				best = q;
		}
		std::sort(passes.begin(), passes.end());
		printf("{\"peer\":\"faiss\",\"nprobe\":%zu,\"recall_at_10\":%.4f,\"qps\":%.1f,"
		       "\"qps_median\":%.1f,\"qps_min\":%.1f,\"passes\":%d,\"cpu_ms_per_query\":%.5f}\n",
		       np, sum / nq, best, cs_quantile(passes.data(), passes.size(), 0.5), passes[0],
		       reps, cpu * 1e3 / ((double) nq * reps));
		fflush(stdout);
	}
	delete ixp;
	free(gt);
	cv_dataset_free(base);
	cv_dataset_free(qs);
	return 0;
}
