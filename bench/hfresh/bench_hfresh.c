/*
 * bench_hfresh.c - HFresh measured for the side-by-side table (run.sh).
 *
 *   bench_hfresh warm BASE QUERIES NQ DIR [KEY=VALUE...]
 *     builds DIR (timed, 2 threads), then recall@10 and warm single-thread
 *     QPS (pread, io serial, page cache warm, best of 3 passes) for
 *     searchProbe x rescoreLimit, reads per query, and the index's
 *     resident memory during search (VmRSS after the queries minus VmRSS
 *     before open; the base vectors kept for recall are outside it).
 *     KEYs: code_bits, max_posting_kb, replicas (build options);
 *     probes=8,16,... and rescores=100,350 (the grid); build=0 queries
 *     an existing DIR without building it; strategy=pread|mmap (pread:
 *     a copy and a system call a read; mmap: views into the mapping).
 *     BENCH_CPU=N pins the query thread to CPU N after the build.
 *   bench_hfresh cold DIR QUERIES NQ STRATEGY IO CLIENTS PROBE RESCORE
 *     evicts the index's files, then CLIENTS threads each with its own
 *     cv_io (STRATEGY, IO serial|concurrent:Q) run NQ queries in all;
 *     prints QPS, engine reads and IOPS, device reads and IOPS when the
 *     block device is visible, and the median read size.
 *   bench_hfresh crc [BYTES] [ROUNDS]
 *     the posting checksum's speed: CRC-32C of one BYTES buffer (65536 by
 *     default, a posting's size; in cache) ROUNDS times on every path this
 *     CPU has (0 table, 1 SSE4.2 three chains, 2 VPCLMULQDQ folding), the
 *     library's own functions; GB/s per path and whether they agree.
 * Output: one JSON object per line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "coldvec.h"
#include "cs.h"
#include "hfresh/hfresh.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* VmRSS of /proc/self/status in KiB: every resident page, mapped file pages too. */
static long rss_kb(void)
{
	return cs_proc_field("/proc/self/status", "VmRSS:");
}

/* RssAnon of /proc/self/status in KiB: the process's own memory. */
static long anon_kb(void)
{
	return cs_proc_field("/proc/self/status", "RssAnon:");
}

static int warm(int argc, char **argv)
{
	cv_dataset *base = NULL, *qs = NULL, *qsl = NULL;
	cv_build_opts bo;
	cv_index *ix = NULL;
	cv_io *io = NULL;
	cv_io_opts ioo;
	cv_err e;
	int32_t *gt = NULL;
	size_t nq;
	double t0, tb;
	long rss0, rss1 = 0, anon0, anon1 = 0;
	unsigned probes[32] = {2, 3, 4, 6, 8, 16, 32, 64, 128};
	unsigned rescores[32] = {20, 50, 100, 350};
	size_t nprobes = 9, nrescores = 4;
	int do_build = 1;
	cv_io_strategy strat = CV_IO_PREAD;

	if (argc < 6)
		return 2;
	cv_build_opts_default(&bo);
	bo.threads = 2;
	for (int i = 6; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		unsigned long v = eq ? strtoul(eq + 1, NULL, 10) : 0;

		if (!eq) {
			fprintf(stderr, "bench_hfresh: '%s' is not KEY=VALUE\n", argv[i]);
			return 2;
		}
		if (!strncmp(argv[i], "code_bits=", 10)) {
			bo.code_bits = (unsigned) v;
		} else if (!strncmp(argv[i], "max_posting_kb=", 15)) {
			bo.max_posting_kb = (unsigned) v;
		} else if (!strncmp(argv[i], "replicas=", 9)) {
			bo.replicas = (unsigned) v;
		} else if (!strncmp(argv[i], "strategy=", 9)) {
			if (cv_io_strategy_parse(eq + 1, &strat)) {
				fprintf(stderr, "bench_hfresh: strategy '%s'\n", eq + 1);
				return 2;
			}
		} else if (!strncmp(argv[i], "build=", 6)) {
			do_build = v != 0;
		} else if (!strncmp(argv[i], "probes=", 7) || !strncmp(argv[i], "rescores=", 9)) {
			unsigned *dst = argv[i][0] == 'p' ? probes : rescores;
			size_t *n = argv[i][0] == 'p' ? &nprobes : &nrescores;
			char *p = (char *) eq + 1;

			*n = 0;
			while (*p && *n < 32) {
				dst[(*n)++] = (unsigned) strtoul(p, &p, 10);
				if (*p == ',')
					p++;
				else
					break;
			}
		} else {
			fprintf(stderr, "bench_hfresh: unknown key in '%s'\n", argv[i]);
			return 2;
		}
	}
	nq = strtoul(argv[4], NULL, 10);
	if (cv_dataset_load(argv[2], &base, &e) || cv_dataset_load(argv[3], &qs, &e)) {
		fprintf(stderr, "bench_hfresh: %s\n", e.msg);
		return 5;
	}
	if (nq > qs->n)
		nq = qs->n;
	cv_dataset_slice(qs, 0, nq, &qsl);
	if (cv_groundtruth_cached(base, qsl, 10, CV_METRIC_L2, 0, NULL, &gt, &e)) {
		fprintf(stderr, "bench_hfresh: %s\n", e.msg);
		return 1;
	}
	t0 = now();
	if (do_build && cv_index_build("hfresh", base, &bo, argv[5], &e)) {
		fprintf(stderr, "bench_hfresh: build: %s\n", e.msg);
		return 1;
	}
	tb = now() - t0;
	if (do_build)
		printf("{\"peer\":\"hfresh\",\"build_s\":%.2f,\"threads\":2,"
		       "\"max_posting_kb\":%u,\"replicas\":%u,\"code_bits\":%u,\"raw_bytes\":%zu}\n",
		       tb, bo.max_posting_kb, bo.replicas, bo.code_bits,
		       base->n * base->d * sizeof(float));
	if (getenv("BENCH_CPU")) {
		cpu_set_t cs;

		CPU_ZERO(&cs);
		CPU_SET(atoi(getenv("BENCH_CPU")), &cs);
		if (sched_setaffinity(0, sizeof(cs), &cs))
			perror("bench_hfresh: sched_setaffinity");
	}
	rss0 = rss_kb();
	anon0 = anon_kb();
	if (cv_index_open(argv[5], NULL, &ix, &e)) {
		fprintf(stderr, "bench_hfresh: open: %s\n", e.msg);
		return 1;
	}
	cv_io_opts_default(&ioo);
	ioo.strategy = strat;
	cv_io_new(&ioo, &io);
	for (size_t a = 0; a < nprobes; a++)
		for (size_t b = 0; b < nrescores; b++) {
			cv_query_opts qo;
			cv_query_stats st = {0};
			double sum = 0, best = 0;

			cv_query_opts_default(&qo);
			qo.search_probe = probes[a];
			qo.rescore_limit = rescores[b];
			for (size_t i = 0; i < nq; i++) {
				uint32_t ids[10];
				float d[10];
				size_t n = 0;

				cv_index_query(ix, io, cv_row(qsl, i), &qo, ids, d, &n, &st);
				sum += cv_recall_at_k(base, cv_row(qsl, i), CV_METRIC_L2, gt + i * 10, 10,
						      ids, n);
			}
			for (int rep = 0; rep < 3; rep++) {
				double t1 = now(), q;

				for (size_t i = 0; i < nq; i++) {
					uint32_t ids[10];
					float d[10];
					size_t n = 0;

					cv_index_query(ix, io, cv_row(qsl, i), &qo, ids, d, &n, NULL);
				}
				q = nq / (now() - t1);
				if (q > best)
					best = q;
			}
			printf("{\"peer\":\"hfresh\",\"search_probe\":%u,\"rescore_limit\":%u,"
			       "\"recall_at_10\":%.4f,\"qps\":%.1f,\"posting_reads_per_query\":%.2f,"
			       "\"rescore_reads_per_query\":%.2f,\"bytes_per_query\":%.0f}\n",
			       probes[a], rescores[b], sum / nq, best, (double) st.posting_reads / nq,
			       (double) st.rescore_reads / nq, (double) st.bytes / nq);
			fflush(stdout);
			{ /* each read once: the peak so far */
				long r = rss_kb(), an = anon_kb();

				if (r > rss1)
					rss1 = r;
				if (an > anon1)
					anon1 = an;
			}
		}
	printf("{\"peer\":\"hfresh\",\"resident_kb_during_search\":%ld,\"raw_kb\":%zu,"
	       "\"fraction_of_raw\":%.4f,\"anon_kb_during_search\":%ld,\"anon_fraction_of_raw\":%.4f,"
	       "\"strategy\":\"%s\"}\n", rss1 - rss0, base->n * base->d * 4 / 1024,
	       (double) (rss1 - rss0) / (base->n * base->d * 4.0 / 1024), anon1 - anon0,
	       (double) (anon1 - anon0) / (base->n * base->d * 4.0 / 1024),
	       cv_io_strategy_name(strat));
	cv_io_free(io);
	cv_index_close(ix);
	free(gt);
	cv_dataset_free(base);
	cv_dataset_free(qs);
	cv_dataset_free(qsl);
	return 0;
}

typedef struct client {
	cv_index *ix;
	const cv_dataset *qs;
	size_t first, n;
	cv_io_opts ioo;
	cv_query_opts qo;
	cv_query_stats st;
	cv_io_stats ios;
	int rc;
} client;

static void *client_run(void *arg)
{
	client *c = arg;
	cv_io *io = NULL;

	c->rc = cv_io_new(&c->ioo, &io);
	if (c->rc)
		return NULL;
	for (size_t i = c->first; i < c->first + c->n && !c->rc; i++) {
		uint32_t ids[10];
		float d[10];
		size_t n;

		c->rc = cv_index_query(c->ix, io, cv_row(c->qs, i % c->qs->n), &c->qo, ids, d, &n,
				       &c->st);
	}
	cv_io_stats_get(io, &c->ios);
	cv_io_free(io);
	return NULL;
}

static int cold(int argc, char **argv)
{
	const char *dir;
	cv_dataset *qs = NULL;
	cv_index *ix = NULL;
	cv_err e;
	char **files = NULL;
	size_t nf = 0, nq, nc;
	cv_io_strategy strat;
	cv_query_opts qo;
	client *cl;
	pthread_t *th;
	cv_blkdev bd;
	cv_blkstat b0 = {0}, b1 = {0};
	int have_dev;
	double t0, wall;
	cv_query_stats tot = {0};
	cv_io_stats ios = {0};
	unsigned q = 1;
	struct rusage ru0, ru1;
	double cpu_s, load1 = 0;

	if (argc < 10)
		return 2;
	dir = argv[2];
	nq = strtoul(argv[4], NULL, 10);
	if (cv_io_strategy_parse(argv[5], &strat))
		return 2;
	cv_query_opts_default(&qo);
	if (!strncmp(argv[6], "concurrent:", 11)) {
		qo.io_mode = CV_HIO_CONCURRENT;
		q = (unsigned) strtoul(argv[6] + 11, NULL, 10);
		qo.io_depth = q;
	}
	nc = strtoul(argv[7], NULL, 10);
	qo.search_probe = (unsigned) strtoul(argv[8], NULL, 10);
	qo.rescore_limit = (unsigned) strtoul(argv[9], NULL, 10);
	if (cv_dataset_load(argv[3], &qs, &e) || cv_index_open(dir, NULL, &ix, &e)) {
		fprintf(stderr, "bench_hfresh: %s\n", e.msg);
		return 5;
	}
	cv_index_files(dir, &files, &nf);
	for (size_t i = 0; i < nf; i++)
		cv_cache_evict(files[i]);
	have_dev = cv_blkdev_for_path(files[nf - 1], &bd, &e) == 0;
	cl = calloc(nc, sizeof(*cl));
	th = calloc(nc, sizeof(*th));
	if (have_dev)
		cv_blkdev_stat(&bd, &b0);
	getrusage(RUSAGE_SELF, &ru0);
	t0 = now();
	for (size_t i = 0; i < nc; i++) {
		cl[i] = (client){.ix = ix, .qs = qs, .first = i * nq / nc,
				 .n = (i + 1) * nq / nc - i * nq / nc, .qo = qo};
		cv_io_opts_default(&cl[i].ioo);
		cl[i].ioo.strategy = strat;
		cl[i].ioo.queue_depth = q;
		pthread_create(&th[i], NULL, client_run, &cl[i]);
	}
	for (size_t i = 0; i < nc; i++) {
		pthread_join(th[i], NULL);
		tot.reads += cl[i].st.reads;
		tot.bytes += cl[i].st.bytes;
		tot.posting_reads += cl[i].st.posting_reads;
		tot.rescore_reads += cl[i].st.rescore_reads;
		cv_io_stats_merge(&ios, &cl[i].ios);
		if (cl[i].rc)
			fprintf(stderr, "bench_hfresh: client %zu: %s\n", i, strerror(-cl[i].rc));
	}
	wall = now() - t0;
	getrusage(RUSAGE_SELF, &ru1);
	cpu_s = (double) (ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec -
			  ru0.ru_stime.tv_sec) +
		(double) (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec -
			  ru0.ru_stime.tv_usec) / 1e6;
	{
		FILE *la = fopen("/proc/loadavg", "r");

		if (la) {
			if (fscanf(la, "%lf", &load1) != 1)
				load1 = 0;
			fclose(la);
		}
	}
	if (have_dev)
		cv_blkdev_stat(&bd, &b1);
	{
		/* median read size: rescoring reads are one 4 KiB block each, postings larger */
		double post_mean = tot.posting_reads ?
			(double) (tot.bytes - tot.rescore_reads * 4096ull) / tot.posting_reads : 0;
		double median = tot.rescore_reads >= tot.posting_reads ? 4096 : post_mean;

		printf("{\"peer\":\"hfresh-cold\",\"strategy\":\"%s\",\"io\":\"%s\",\"clients\":%zu,"
		       "\"search_probe\":%u,\"rescore_limit\":%u,\"queries\":%zu,\"wall_s\":%.3f,"
		       "\"qps\":%.1f,\"reads_per_query\":%.2f,\"engine_iops\":%.0f,"
		       "\"median_read_bytes\":%.0f,\"mean_posting_bytes\":%.0f,"
		       "\"read_ms_mean\":%.3f,\"inflight_max\":%llu,\"device\":\"%s\","
		       "\"device_reads\":%llu,\"device_iops\":%.0f,\"cpu_ms_per_query\":%.3f,"
		       "\"inflight_mean\":%.2f,\"load1\":%.2f,\"engine_mibps\":%.1f,"
		       "\"device_merges\":%llu,\"device_mibps\":%.1f}\n",
		       argv[5], argv[6], nc, qo.search_probe, qo.rescore_limit, nq, wall, nq / wall,
		       (double) tot.reads / nq, tot.reads / wall, median, post_mean,
		       cv_hist_mean(&ios.lat_ns) / 1e6, (unsigned long long) ios.inflight_max,
		       have_dev ? bd.disk : "n/a",
		       (unsigned long long) (b1.reads - b0.reads),
		       have_dev ? (b1.reads - b0.reads) / wall : 0.0, cpu_s * 1e3 / nq,
		       cv_hist_mean(&ios.inflight), load1, (double) tot.bytes / wall / 1048576.0,
		       (unsigned long long) (b1.read_merges - b0.read_merges),
		       have_dev ? (double) (b1.read_sectors - b0.read_sectors) * 512.0 / wall / 1048576.0
				: 0.0);
	}
	free(cl);
	free(th);
	cv_index_files_free(files, nf);
	cv_index_close(ix);
	cv_dataset_free(qs);
	return 0;
}

static int crc_speed(int argc, char **argv)
{
	size_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 65536;
	long rounds = argc > 3 ? strtol(argv[3], NULL, 10) : 20000;
	unsigned np = hfr_crc32c_paths();
	uint8_t *b = malloc(n ? n : 1);
	uint32_t want = 0;

	if (!b || rounds < 1)
		return 2;
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t) (i * 131 + 7);
	for (unsigned p = 0; p < np; p++) {
		long r = p ? rounds : rounds / 50 + 1; /* the table path is ~50x slower */
		uint32_t c = 0;
		double t0 = now(), t;

		for (long i = 0; i < r; i++)
			c ^= hfr_crc32c_path(p, ~(uint32_t) i, b, n);
		t = now() - t0;
		if (!p)
			want = hfr_crc32c_path(0, ~0u, b, n);
		printf("{\"path\":%u,\"bytes\":%zu,\"rounds\":%ld,\"gb_per_s\":%.2f,"
		       "\"agrees\":%s,\"sink\":%u}\n", p, n, r, (double) n * r / t / 1e9,
		       hfr_crc32c_path(p, ~0u, b, n) == want ? "true" : "false", c);
	}
	free(b);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "crc"))
		return crc_speed(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "warm"))
		return warm(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "cold"))
		return cold(argc, argv);
	fprintf(stderr, "usage: bench_hfresh warm BASE QUERIES NQ DIR\n"
			"       bench_hfresh cold DIR QUERIES NQ STRATEGY IO CLIENTS PROBE RESCORE\n"
			"       bench_hfresh crc [BYTES] [ROUNDS]\n");
	return 2;
}
