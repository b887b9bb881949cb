// bench_hnsw.cpp - coldstudy's in-memory HNSW beside hnswlib, in one run.
//
// Both sides: fashion-mnist train as the base (60,000 x 784), test as the
// queries, k = 10, M = 16, ef_construction = 200, L2. Build with T threads
// (default 2; hnswlib as its Python binding does it: the first point
// alone, then a parallel loop over the rest), then one query thread at ef
// 10, 20, 40, 80. Recall@10 is ann-benchmarks' (cv_recall_at_k); QPS is
// ann-benchmarks' too: the best of R passes over the queries. Passes
// alternate between the two sides so a busy machine hurts both alike, and
// the ratios printed are coldstudy / hnswlib.
//
// usage: bench_hnsw [--runs R] [--build-runs B] [--threads T] [--nq N] [--n N] [--cache DIR]
//        bench_hnsw --hnswlib-only CACHE --ef E [--warmup W] [--runs N] [--nq N]  (pairs.sh)
//                   [--base SPEC] [--queries SPEC]  (any dataset spec; fashion-mnist by default)
// --cache DIR loads both graphs from DIR when present (search-only runs,
// no build figures) and saves them there after a build.
#include <hnswlib/hnswlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

extern "C" {
#include "hnsw/hnsw.h"
double cs_quantile(const double *sorted, size_t n, double q);
const char *hnsw_build_info(void);
}

static double now_s()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

/* The process's CPU time (user + system), s: what a query costs whatever the machine's load. */
static double cpu_now_s()
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static cv_dataset *load(const char *spec)
{
	cv_dataset *ds = nullptr;
	cv_err e{};

	if (cv_dataset_load(spec, &ds, &e)) {
		fprintf(stderr, "bench_hnsw: %s\n", e.msg);
		exit(1);
	}
	return ds;
}

/*
 * --hnswlib-only: hnswlib alone, for pairs.sh to alternate with
 * `coldstudy index query --repeat N --warmup W` on the same machine. The
 * graph is read from CACHE/hnswlib.bin (built and saved there when
 * missing). At ef: W untimed passes over the queries, then N timed ones;
 * each query timed alone, as index query does; a pass's QPS is its
 * queries over the sum of their times. Prints one JSON line: the median
 * pass's QPS, the best, the min, recall@10 (first timed pass).
 */
static int hnswlib_only(const char *cache, unsigned ef, int warmup, int repeat, unsigned threads,
			size_t nq, const char *base_spec, const char *query_spec)
{
	const unsigned M = 16, EFC = 200, K = 10;
	cv_dataset *base = load(base_spec), *qs = load(query_spec);
	const size_t n = base->n, d = base->d;
	hnswlib::L2Space space(d);
	hnswlib::HierarchicalNSW<float> *hl;
	std::string path = std::string(cache) + "/hnswlib.bin";
	int32_t *gt = nullptr;
	cv_err e{};
	std::vector<double> qps;
	std::vector<uint32_t> got(nq * K);
	double rec = 0, build_s = 0;

	if (nq > qs->n)
		nq = qs->n;
	{
		cv_dataset *q2 = nullptr;
		cv_dataset_slice(qs, 0, nq, &q2);
		cv_dataset_free(qs);
		qs = q2;
	}
	if (cv_groundtruth_cached(base, qs, K, CV_METRIC_L2, 2, nullptr, &gt, &e)) {
		fprintf(stderr, "bench_hnsw: ground truth: %s\n", e.msg);
		return 1;
	}
	if (access(path.c_str(), R_OK) == 0) {
		hl = new hnswlib::HierarchicalNSW<float>(&space, path, false, n);
	} else {
		double t0 = now_s();
		hl = new hnswlib::HierarchicalNSW<float>(&space, n, M, EFC, 100);
		hl->addPoint(cv_row(base, 0), 0);
		std::atomic<size_t> next(1);
		std::vector<std::thread> ts;
		for (unsigned t = 0; t < threads; t++)
			ts.emplace_back([&]() {
				for (size_t i; (i = next++) < n;)
					hl->addPoint(cv_row(base, i), i);
			});
		for (auto &t : ts)
			t.join();
		build_s = now_s() - t0;
		hl->saveIndex(path);
	}
	hl->setEf(ef);
	double cpu_s = 0;
	for (int p = 0; p < warmup + repeat; p++) {
		double sum = 0, c0 = cpu_now_s();

		for (size_t i = 0; i < nq; i++) {
			double t0 = now_s();
			auto res = hl->searchKnn(cv_row(qs, i), K);
			size_t j = res.size();
			while (!res.empty()) {
				got[i * K + --j] = (uint32_t) res.top().second;
				res.pop();
			}
			sum += now_s() - t0;
		}
		if (p < warmup)
			continue;
		cpu_s += cpu_now_s() - c0;
		qps.push_back((double) nq / sum);
		if (p == warmup)
			for (size_t i = 0; i < nq; i++)
				rec += cv_recall_at_k(base, cv_row(qs, i), CV_METRIC_L2, gt + i * K, K,
						      &got[i * K], K);
	}
	std::vector<double> sorted = qps;
	std::sort(sorted.begin(), sorted.end());
	printf("{\"peer\":\"hnswlib\",\"ef_search\":%u,\"queries\":%zu,\"repeat\":%d,"
	       "\"warmup\":%d,\"qps\":%.3f,\"qps_best\":%.3f,\"qps_min\":%.3f,"
	       "\"recall_at_k\":%.6f,\"cpu_ms_per_query\":%.5f,\"build_s\":%.3f}\n",
	       ef, nq, repeat, warmup, cs_quantile(sorted.data(), sorted.size(), 0.5), sorted.back(),
	       sorted.front(), rec / (double) nq, cpu_s * 1e3 / ((double) nq * repeat), build_s);
	delete hl;
	free(gt);
	cv_dataset_free(base);
	cv_dataset_free(qs);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = 3, build_runs = 1;
	unsigned threads = 2;
	size_t nq = 10000, nbase = 0;
	const char *cache = nullptr;
	const unsigned M = 16, EFC = 200, K = 10;
	const unsigned efs[] = {10, 20, 40, 80};

	const char *only = nullptr, *base_spec = "fashion-mnist:train", *query_spec = "fashion-mnist:test";
	unsigned only_ef = 10;
	int warmup = 1;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--hnswlib-only"))
			only = argv[i + 1];
		else if (!strcmp(argv[i], "--base"))
			base_spec = argv[i + 1];
		else if (!strcmp(argv[i], "--queries"))
			query_spec = argv[i + 1];
		else if (!strcmp(argv[i], "--ef"))
			only_ef = (unsigned) strtoul(argv[i + 1], nullptr, 10);
		else if (!strcmp(argv[i], "--warmup"))
			warmup = (int) strtol(argv[i + 1], nullptr, 10);
		else if (!strcmp(argv[i], "--runs"))
			runs = (int) strtol(argv[i + 1], nullptr, 10);
		else if (!strcmp(argv[i], "--build-runs"))
			build_runs = (int) strtol(argv[i + 1], nullptr, 10);
		else if (!strcmp(argv[i], "--threads"))
			threads = (unsigned) strtoul(argv[i + 1], nullptr, 10);
		else if (!strcmp(argv[i], "--nq"))
			nq = strtoul(argv[i + 1], nullptr, 10);
		else if (!strcmp(argv[i], "--cache"))
			cache = argv[i + 1];
		else if (!strcmp(argv[i], "--n"))
			nbase = strtoul(argv[i + 1], nullptr, 10);
		else {
			fprintf(stderr, "usage: %s [--runs R] [--build-runs B] [--threads T] [--nq N] [--n N]\n",
				argv[0]);
			return 2;
		}
	}
	if (only)
		return hnswlib_only(only, only_ef, warmup, runs, threads, nq, base_spec, query_spec);
	cv_dataset *base = load("fashion-mnist:train"), *qs = load("fashion-mnist:test");
	if (nbase && nbase < base->n) {
		cv_dataset *s = nullptr;
		cv_dataset_slice(base, 0, nbase, &s);
		cv_dataset_free(base);
		base = s;
	}
	if (nq > qs->n)
		nq = qs->n;
	const size_t n = base->n, d = base->d;
	int32_t *gt = nullptr;
	cv_err e{};
	{
		cv_dataset *q2 = nullptr;
		cv_dataset_slice(qs, 0, nq, &q2);
		cv_dataset_free(qs);
		qs = q2;
	}
	if (cv_groundtruth_cached(base, qs, K, CV_METRIC_L2, 2, nullptr, &gt, &e)) {
		fprintf(stderr, "bench_hnsw: ground truth: %s\n", e.msg);
		return 1;
	}
	printf("fashion-mnist: base %zu x %zu, queries %zu, k %u, M %u, efC %u, build threads %u\n",
	       n, d, nq, K, M, EFC, threads);
	printf("coldstudy kernels %s, engine compiled %s\n", hnsw_kernels(), hnsw_build_info());

	hnswlib::L2Space space(d);
	hnswlib::HierarchicalNSW<float> *hl = nullptr;
	hnsw *cs = nullptr;
	double t_hl = 1e30, t_cs = 1e30;

	std::string hl_path, cs_path;
	if (cache) {
		hl_path = std::string(cache) + "/hnswlib.bin";
		cs_path = std::string(cache) + "/coldstudy.bin";
		if (access(hl_path.c_str(), R_OK) == 0 && hnsw_load(cs_path.c_str(), &cs, &e) == 0) {
			hl = new hnswlib::HierarchicalNSW<float>(&space, hl_path, false, n);
			build_runs = 0;
			printf("graphs loaded from %s (no build figures)\n", cache);
		}
	}
	for (int r = 0; r < build_runs; r++) {
		delete hl;
		hnsw_free(cs);
		cs = nullptr;
		double t0 = now_s();
		hl = new hnswlib::HierarchicalNSW<float>(&space, n, M, EFC, 100);
		hl->addPoint(cv_row(base, 0), 0);
		std::atomic<size_t> next(1);
		std::vector<std::thread> ts;
		for (unsigned t = 0; t < threads; t++)
			ts.emplace_back([&]() {
				for (size_t i; (i = next++) < n;)
					hl->addPoint(cv_row(base, i), i);
			});
		for (auto &t : ts)
			t.join();
		double t1 = now_s();
		hnsw_params p{};
		p.m = M;
		p.ef_construction = EFC;
		p.metric = CV_METRIC_L2;
		p.seed = 100;
		if (hnsw_new(d, &p, n, &cs) || hnsw_build(cs, base->data, n, threads, nullptr, nullptr)) {
			fprintf(stderr, "bench_hnsw: coldstudy build failed\n");
			return 1;
		}
		double t2 = now_s();
		t_hl = std::min(t_hl, t1 - t0);
		t_cs = std::min(t_cs, t2 - t1);
		printf("build run %d: hnswlib %.2f s, coldstudy %.2f s (%u threads inserted)\n", r + 1,
		       t1 - t0, t2 - t1, hnsw_build_threads(cs));
	}
	if (cache && build_runs) {
		hl->saveIndex(hl_path);
		hnsw_save(cs, cs_path.c_str());
	}
	if (build_runs)
		printf("build (best of %d): hnswlib %.2f s, coldstudy %.2f s, ratio coldstudy/hnswlib %.3f\n",
	       build_runs, t_hl, t_cs, t_cs / t_hl);

	printf("\n%4s  %14s %10s  %14s %10s  %9s %9s\n", "ef", "hnswlib recall", "QPS",
	       "coldstudy rec.", "QPS", "QPS ratio", "rec. diff");
	std::vector<uint32_t> got(nq * K);
	for (unsigned ef : efs) {
		double best_hl = 1e30, best_cs = 1e30, rec_hl = 0, rec_cs = 0;

		hl->setEf(ef);
		for (int r = 0; r < runs; r++) {
			double t0 = now_s();
			for (size_t i = 0; i < nq; i++) {
				auto res = hl->searchKnn(cv_row(qs, i), K);
				size_t j = res.size();
				while (!res.empty()) {
					got[i * K + --j] = (uint32_t) res.top().second;
					res.pop();
				}
			}
			double t1 = now_s();
			if (r == 0)
				for (size_t i = 0; i < nq; i++)
					rec_hl += cv_recall_at_k(base, cv_row(qs, i), CV_METRIC_L2, gt + i * K, K,
								 &got[i * K], K);
			double t2 = now_s();
			for (size_t i = 0; i < nq; i++) {
				size_t nout;
				hnsw_search(cs, cv_row(qs, i), K, ef, &got[i * K], nullptr, &nout);
			}
			double t3 = now_s();
			if (r == 0)
				for (size_t i = 0; i < nq; i++)
					rec_cs += cv_recall_at_k(base, cv_row(qs, i), CV_METRIC_L2, gt + i * K, K,
								 &got[i * K], K);
			best_hl = std::min(best_hl, t1 - t0);
			best_cs = std::min(best_cs, t3 - t2);
		}
		rec_hl /= (double) nq;
		rec_cs /= (double) nq;
		double q_hl = (double) nq / best_hl, q_cs = (double) nq / best_cs;
		printf("%4u  %14.4f %10.0f  %14.4f %10.0f  %9.3f %+9.4f\n", ef, rec_hl, q_hl, rec_cs,
		       q_cs, q_cs / q_hl, rec_cs - rec_hl);
		fflush(stdout);
	}
	delete hl;
	hnsw_free(cs);
	free(gt);
	cv_dataset_free(base);
	cv_dataset_free(qs);
	return 0;
}
