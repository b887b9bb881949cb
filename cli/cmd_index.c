/*
 * cmd_index.c - `coldstudy index`: build an index of any kind, query it
 * (warm or cold, serial or fanned out, on any read strategy and device
 * model) with recall and the read counters, verify it, and apply live
 * inserts and deletes where the kind takes them.
 *
 *   index build --kind hnsw|paged|phnsw|hfresh --data SPEC --metric M --out DIR [...]
 *   index query DIR --queries SPEC [...] [--json]
 *   index verify DIR
 *   index insert DIR --data SPEC [--first-id N]
 *   index delete DIR --ids FILE | --data SPEC [--first-id N]
 *
 * A query run opens one cv_io (the strategy, the device model in real
 * time) and runs the queries one after another; --cold evicts every file
 * of the index from the page cache and empties the buffer pool before each
 * query, as the seed's cold runs did. --simulate PROFILE also keeps a
 * trace per query and replays it against that device in virtual time.
 * The build writes DIR/DATA (the data spec), so recall can be computed
 * later without naming the data again.
 */
#include "cmds.h"

#include "guard.h"
#include "harness.h"
#include "report.h"

#include <fcntl.h>
#include "coldvec.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: coldstudy index build --kind hnsw|paged|phnsw|hfresh --data SPEC\n"
	"                             [--metric l2|cosine|ip] --out DIR [--m N]\n"
	"                             [--ef-construction N] [--partitions N] [--threads N]\n"
	"                             [--seed N] [--max-posting-kb N] [--replicas N]\n"
	"                             [--rng-factor X] [--code-bits 1..4] [-q] [--json]\n"
	"       coldstudy index query DIR --queries SPEC [--nq N] [--data SPEC] [--gt FILE]\n"
	"                             [--k 10] [--ef-search N] [--mode serial|fanout:C]\n"
	"                             [--merge stream|sort] [--strategy mmap|pread|direct|uring]\n"
	"                             [--device PROFILE] [--simulate PROFILE] [--cold]\n"
	"                             [--throttle CAP]\n"
	"                             [--buffers SIZE] [--search-probe N] [--rescore-limit N]\n"
	"                             [--io serial|concurrent:Q] [--partitions LIST]\n"
	"                             [--record-blocks PREFIX] [--trace FILE] [--json]\n"
	"                             [--repeat N] [--warmup W] [--per-query FILE] [-q]\n"
	"       coldstudy index sweep DIR --queries SPEC [--gt FILE] --ef-search LIST\n"
	"                             | --search-probe LIST [--repeat 5] [--warmup 1]\n"
	"                             [--out PREFIX] [--json] [query's --k --nq --strategy ...]\n"
	"       coldstudy index verify DIR\n"
	"       coldstudy index insert DIR --data SPEC [--first-id N]\n"
	"       coldstudy index delete DIR --ids FILE | --data SPEC [--first-id N]\n\n"
	"build writes DIR (a progress bar with elapsed time and an estimate of the time\n"
	"left on a terminal; -q: none); --json prints what was built as one object.\n"
	"DIR/DATA keeps --data with its path made absolute, so a query from any directory\n"
	"finds the same file. An hdf5: file's 'distance' attribute (euclidean: l2,\n"
	"angular: cosine, dot: ip) is the metric when --metric is left out; a --metric,\n"
	"--queries or --gt file that disagrees with it is refused (exit 5).\n"
	"query prints recall@k\n"
	"(ann-benchmarks' definition; only against a truth of the same base: --gt ids past\n"
	"the base, or an hdf5: truth whose 'train' has other rows, are exit 5), QPS, latency\n"
	"mean/p50/p90/p95/p99/p99.9 (cs_quantile), reads per query,\n"
	"bytes per read, mean read latency, buffer hits, heap/posting/rescore reads.\n"
	"--cold evicts the index's files and empties the buffer pool before each query.\n"
	"--warmup W runs the queries W times untimed, then --repeat N times timed (the\n"
	"query loop only: loading, ground truth and parsing are outside); QPS is the\n"
	"median pass's, with the best and the min..max spread; percentiles over every\n"
	"timed query (linear interpolation).\n"
	"On a terminal, query draws a progress line fitted to its width for the ground\n"
	"truth it computes and for the query passes (-q: none).\n"
	"--per-query FILE writes one row a timed query (pass, q, lat_real_ms, reads,\n"
	"recall): CSV when FILE ends in .csv, else JSON lines.\n"
	"sweep runs the queries at each setting of LIST (HNSW kinds: --ef-search;\n"
	"hfresh: --search-probe), warm, --warmup untimed and --repeat timed passes each,\n"
	"and prints a row a setting: recall@k, QPS (median pass, min..max), latency\n"
	"p50/p90/p95/p99/p99.9, reads a query, the build's seconds (DIR/BUILD, written by\n"
	"build) and the index's bytes; --out writes PREFIX.csv, PREFIX.jsonl and\n"
	"PREFIX.svg (the recall/QPS front).\n"
	"--simulate replays each query's reads against PROFILE in virtual time.\n"
	"--throttle CAP (with --cold) caps the index's whole disk with the kernel's block\n"
	"throttle, the query loop's readers in a cgroup of their own: gp3-3000, gp3-16000,\n"
	"gp3-80000, io2-80000, uncapped, or riops=N,rbps=SIZE; --json adds \"throttle\"\n"
	"(the kernel's count of reads beside the engine's); exit 5 where no cgroup\n"
	"controller is writable.\n"
	"--trace writes each query's reads (cvtrace format: FILE, or FILE.N for several\n"
	"queries) for `coldstudy device replay FILE --device PROFILE`.\n"
	"--record-blocks writes PREFIX.NAME per index file: the blocks read, for\n"
	"`coldstudy cache prewarm DIR/NAME --blocks @PREFIX.NAME`.\n"
	"SIZE: bytes with an optional K, M or G suffix. LIST: 0,3,8-15.\n";

static int fail(int rc, const cv_err *e)
{
	fprintf(stderr, "coldstudy index: %s\n", e && e->msg[0] ? cli_spell(e->msg) : strerror(-rc));
	return cli_exit_from_errno(rc);
}

/* Parse an unsigned option into *out within [lo, hi]; 0 or a usage exit. */
static int opt_uint(const char *name, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (cli_parse_u64(s, out) || *out < lo || *out > hi)
		return cli_usage("index", "%s wants a whole number in %llu..%llu, got '%s'", name,
				 (unsigned long long) lo, (unsigned long long) hi, s);
	return 0;
}

/* SIZE: digits with an optional K/M/G suffix. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end == 'k' || *end == 'K')
		mul = 1ull << 10;
	else if (*end == 'm' || *end == 'M')
		mul = 1ull << 20;
	else if (*end == 'g' || *end == 'G')
		mul = 1ull << 30;
	else if (*end)
		return -1;
	if (*end && (end[1] && strcmp(end + 1, "B") && strcmp(end + 1, "iB")))
		return -1;
	if (v > UINT64_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

/* LIST: comma-separated numbers and ranges A-B. */
static int parse_list(const char *s, uint32_t **out, size_t *n)
{
	uint32_t *v = NULL;
	size_t len = 0, cap = 0;
	const char *p = s;

	while (*p) {
		char *end;
		unsigned long a, b;

		if (*p < '0' || *p > '9')
			goto bad;
		a = strtoul(p, &end, 10);
		b = a;
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				goto bad;
			b = strtoul(end + 1, &end, 10);
		}
		if (b < a || b > 65535)
			goto bad;
		for (unsigned long x = a; x <= b; x++) {
			if (len == cap) {
				uint32_t *nv;

				cap = cap ? cap * 2 : 16;
				nv = realloc(v, cap * sizeof(*v));
				if (!nv)
					goto bad;
				v = nv;
			}
			v[len++] = (uint32_t) x;
		}
		p = end;
		if (*p == ',')
			p++;
		else if (*p)
			goto bad;
	}
	if (!len)
		goto bad;
	*out = v;
	*n = len;
	return 0;
bad:
	free(v);
	return -1;
}

/* ---- build ---- */

/*
 * An ann-benchmarks file's `distance` attribute against the metric *m
 * (metric says whose it is: "--metric", "the index's metric"; NULL: none given,
 * and the file's becomes *m). One that disagrees is refused (exit 5,
 * naming both). spec not hdf5:: 0; a file without the attribute: 0 if a
 * metric was given.
 */
static int hdf5_metric(const char *spec, const char *what, const char *metric, cv_metric *m)
{
	cv_hdf5_info hi;
	cv_err e = {{0}};
	int rc;

	if (strncmp(spec, "hdf5:", 5))
		return 0;
	rc = cv_hdf5_describe(spec, &hi, &e);
	if (rc)
		return fail(rc, &e);
	if (!hi.has_metric) {
		if (metric)
			return 0;
		if (hi.distance[0])
			fprintf(stderr, "coldstudy index: %s %s: distance '%s' is none of euclidean, angular, "
				"dot: give --metric\n", what, spec, hi.distance);
		else
			fprintf(stderr, "coldstudy index: %s %s: no 'distance' attribute: give --metric\n",
				what, spec);
		return CS_EXIT_BADINPUT;
	}
	if (metric && hi.metric != *m) {
		fprintf(stderr, "coldstudy index: %s %s: the file's distance is '%s' (%s), %s is %s\n",
			what, spec, hi.distance, cv_metric_name(hi.metric), metric, cv_metric_name(*m));
		return CS_EXIT_BADINPUT;
	}
	*m = hi.metric;
	return 0;
}

static int write_data_spec(const char *dir, const char *spec)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/DATA", dir);
	f = guard_output_fopen(path, "index build", "--out", &(cs_err){0});
	if (!f)
		return errno ? -errno : -EIO;
	fprintf(f, "%s\n", spec);
	return fclose(f) ? -EIO : 0;
}

static int index_build(int argc, char **argv)
{
	const char *kind = NULL, *data = NULL, *out = NULL, *metric = NULL;
	char data_abs[sizeof(((cv_dataset *) 0)->spec)];
	guard_held held;
	cv_build_opts o;
	cv_dataset *ds = NULL;
	cv_err e = {{0}};
	uint64_t v, t0;
	double secs;
	int rc, json = 0, quiet = 0;

	cv_build_opts_default(&o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--json")) {
			json = 1;
			continue;
		}
		if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = 1;
			continue;
		}
		if (a[0] == '-' && !val)
			return cli_usage("index", "%s needs a value", a);
		if (!strcmp(a, "--kind"))
			kind = argv[++i];
		else if (!strcmp(a, "--data"))
			data = argv[++i];
		else if (!strcmp(a, "--out"))
			out = argv[++i];
		else if (!strcmp(a, "--metric"))
			metric = argv[++i];
		else if (!strcmp(a, "--m")) {
			if ((rc = opt_uint(a, argv[++i], 2, 100, &v)))
				return rc;
			o.m = (unsigned) v;
		} else if (!strcmp(a, "--ef-construction")) {
			if ((rc = opt_uint(a, argv[++i], 4, 1000, &v)))
				return rc;
			o.ef_construction = (unsigned) v;
		} else if (!strcmp(a, "--partitions")) {
			if ((rc = opt_uint(a, argv[++i], 1, 4096, &v)))
				return rc;
			o.partitions = (unsigned) v;
		} else if (!strcmp(a, "--threads")) {
			if ((rc = opt_uint(a, argv[++i], 0, 1024, &v)))
				return rc;
			o.threads = (unsigned) v;
		} else if (!strcmp(a, "--seed")) {
			if ((rc = opt_uint(a, argv[++i], 0, UINT64_MAX, &v)))
				return rc;
			o.seed = v;
		} else if (!strcmp(a, "--max-posting-kb")) {
			if ((rc = opt_uint(a, argv[++i], 8, 1024, &v)))
				return rc;
			o.max_posting_kb = (unsigned) v;
		} else if (!strcmp(a, "--code-bits")) {
			if ((rc = opt_uint(a, argv[++i], 1, 4, &v)))
				return rc;
			o.code_bits = (unsigned) v;
		} else if (!strcmp(a, "--replicas")) {
			if ((rc = opt_uint(a, argv[++i], 1, 10, &v)))
				return rc;
			o.replicas = (unsigned) v;
		} else if (!strcmp(a, "--rng-factor")) {
			double d;

			if (cli_parse_double(argv[++i], &d) || d <= 0 || d > 100)
				return cli_usage("index", "--rng-factor wants a number in (0, 100]");
			o.rng_factor = d;
		} else {
			return cli_usage("index", "build: unknown argument '%s'", a);
		}
	}
	if (!kind || !data || !out || (!metric && strncmp(data, "hdf5:", 5)))
		return cli_usage("index", "build needs --kind, --data, --metric and --out");
	if (strcmp(kind, "hnsw") && strcmp(kind, "paged") && strcmp(kind, "phnsw") &&
	    strcmp(kind, "hfresh"))
		return cli_usage("index", "--kind wants hnsw, paged, phnsw or hfresh, got '%s'", kind);
	if (metric && cv_metric_parse(metric, &o.metric))
		return cli_usage("index", "--metric wants l2, cosine or ip, got '%s'", metric);
	if ((rc = hdf5_metric(data, "--data", metric ? "--metric" : NULL, &o.metric)))
		return rc;
	/* DATA keeps the spec resolved, so a query from any directory finds the same file */
	if ((rc = cv_dataset_spec_resolve(data, data_abs, sizeof(data_abs), &e)))
		return fail(rc, &e);
	{
		cs_err ge = {0};
		char **files = NULL;
		size_t n = 0;

		/* --out is resolved once: checked, created beneath its held parent, written through the hold. */
		if ((rc = guard_target(NULL, NULL, out, AT_FDCWD, "index build", "--out", &held, &ge)))
			return cli_fail("index", &ge);
		if (held.exists && cv_index_files(guard_held_via(&held), &files, &n) == 0 && n > 0) {
			cv_index_files_free(files, n);
			guard_held_close(&held);
			fprintf(stderr, "coldstudy index: %s: exists and is not empty (refusing to overwrite)\n", out);
			return CS_EXIT_REFUSED;
		}
		cv_index_files_free(files, n);
	}
	rc = cv_dataset_load(data, &ds, &e);
	if (rc) {
		guard_held_close(&held);
		return fail(rc, &e);
	}
	o.progress = !quiet && isatty(2);
	{
		cs_err ge = {0};

		if ((rc = guard_held_mkdirs(&held, &ge))) {
			cv_dataset_free(ds);
			guard_held_close(&held);
			return cli_fail("index", &ge);
		}
	}
	t0 = cs_mono_ns();
	rc = cv_index_build(kind, ds, &o, guard_held_via(&held), &e);
	if (!rc)
		rc = write_data_spec(guard_held_via(&held), data_abs);
	guard_held_close(&held);
	if (rc) {
		cv_dataset_free(ds);
		return fail(rc, &e);
	}
	secs = (double) (cs_mono_ns() - t0) / 1e9;
	/* DIR/BUILD: how long the build took, for `index sweep`'s rows (a missing one is null there) */
	if (!rc) {
		char bpath[4300];
		FILE *bf;

		if (guard_hold(out, AT_FDCWD, &held, &(cs_err){0}) == 0) {
			snprintf(bpath, sizeof(bpath), "%s/BUILD", guard_held_via(&held));
			if ((bf = guard_output_fopen(bpath, "index build", "--out", &(cs_err){0}))) {
				fprintf(bf, "{\"seconds\":%.3f,\"kind\":\"%s\",\"n\":%zu,\"d\":%zu}\n", secs,
					kind, ds->n, ds->d);
				fclose(bf);
			}
			guard_held_close(&held);
		}
	}
	if (json) {
		json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:s, s:f}", "kind", kind, "dir", out,
				      "data", data, "n", (json_int_t) ds->n, "d", (json_int_t) ds->d,
				      "metric", cv_metric_name(o.metric), "seconds", secs);

		if (j)
			json_dumpf(j, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(j);
	} else
		printf("built %s index of %zu rows x %zu dims in %s (%.1f s)\n", kind, ds->n, ds->d,
		       out, secs);
	cv_dataset_free(ds);
	return CS_EXIT_OK;
}

/* ---- query ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* User and system CPU of the process so far, in ns each. */
static void cpu_split(uint64_t *user, uint64_t *sys)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*user = (uint64_t) ru.ru_utime.tv_sec * 1000000000ull + (uint64_t) ru.ru_utime.tv_usec * 1000u;
	*sys = (uint64_t) ru.ru_stime.tv_sec * 1000000000ull + (uint64_t) ru.ru_stime.tv_usec * 1000u;
}

/* CPU time (user + system) of the process in ns (a query's helper threads count): robust to load. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* The process's anonymous resident memory (RssAnon of /proc/self/status), kB; -1 unknown. */
static long rss_anon_kb(void)
{
	return cs_proc_field("/proc/self/status", "RssAnon:");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* Read DIR/DATA (the spec the index was built from) into buf; 0 or -ENOENT. */
static int read_data_spec(const char *dir, char *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/DATA", dir);
	f = fopen(path, "r");
	if (!f)
		return -ENOENT;
	if (!fgets(buf, (int) len, f)) {
		fclose(f);
		return -ENOENT;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Write the recorded blocks as PREFIX.NAME lists, one per index file. */
static int write_blocks(const char *prefix, const cv_block_list *bl, char **files, size_t nfiles)
{
	for (size_t f = 0; f < nfiles; f++) {
		const char *base = strrchr(files[f], '/');
		char path[4096];
		FILE *o = NULL;

		base = base ? base + 1 : files[f];
		for (size_t i = 0; i < bl->n; i++) {
			if (bl->file[i] != f)
				continue;
			if (!o) {
				cs_err we = {0};

				snprintf(path, sizeof(path), "%s.%s", prefix, base);
				/* beneath the held folder: a link at its name is replaced, never followed */
				o = guard_output_fopen(path, "index query", "--record-blocks", &we);
				if (!o) {
					fprintf(stderr, "coldstudy index: %s\n", cli_spell(we.msg));
					return we.code == CS_EXIT_REFUSED ? -EPERM : -EIO;
				}
			}
			fprintf(o, "%llu\n", (unsigned long long) bl->block[i]);
		}
		if (o && fclose(o))
			return -EIO;
	}
	return 0;
}

typedef struct qargs {
	const char *dir, *queries, *data, *gt, *device, *simulate, *record, *tracefile, *throttle;
	const char *per_query; /* --per-query FILE: one row a timed query (.csv, else JSON lines) */
	uint64_t nq, buffers;
	uint64_t repeat, warmup; /* timed passes over the queries, untimed ones first */
	int cold, json, quiet;
	cv_io_strategy strategy;
	cv_query_opts qo;
	uint32_t *parts;
	size_t nparts;
} qargs;

static int parse_query_args(int argc, char **argv, qargs *a)
{
	uint64_t v;
	int rc;

	memset(a, 0, sizeof(*a));
	cv_query_opts_default(&a->qo);
	a->strategy = CV_IO_PREAD;
	a->buffers = 128ull << 20;
	a->repeat = 1;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--cold")) {
			a->cold = 1;
			continue;
		}
		if (!strcmp(o, "--json")) {
			a->json = 1;
			continue;
		}
		if (!strcmp(o, "-q") || !strcmp(o, "--quiet")) {
			a->quiet = 1;
			continue;
		}
		if (o[0] != '-') {
			if (a->dir)
				return cli_usage("index", "query takes one DIR");
			a->dir = o;
			continue;
		}
		if (!val)
			return cli_usage("index", "%s needs a value", o);
		i++;
		if (!strcmp(o, "--queries"))
			a->queries = val;
		else if (!strcmp(o, "--data"))
			a->data = val;
		else if (!strcmp(o, "--gt"))
			a->gt = val;
		else if (!strcmp(o, "--device"))
			a->device = val;
		else if (!strcmp(o, "--simulate"))
			a->simulate = val;
		else if (!strcmp(o, "--throttle"))
			a->throttle = val;
		else if (!strcmp(o, "--record-blocks"))
			a->record = val;
		else if (!strcmp(o, "--trace"))
			a->tracefile = val;
		else if (!strcmp(o, "--per-query"))
			a->per_query = val;
		else if (!strcmp(o, "--nq")) {
			if ((rc = opt_uint(o, val, 1, UINT32_MAX, &a->nq)))
				return rc;
		} else if (!strcmp(o, "--repeat")) {
			if ((rc = opt_uint(o, val, 1, 1000, &a->repeat)))
				return rc;
		} else if (!strcmp(o, "--warmup")) {
			if ((rc = opt_uint(o, val, 0, 1000, &a->warmup)))
				return rc;
		} else if (!strcmp(o, "--k")) {
			if ((rc = opt_uint(o, val, 1, 10000, &v)))
				return rc;
			a->qo.k = v;
		} else if (!strcmp(o, "--ef-search")) {
			if ((rc = opt_uint(o, val, 1, 1000, &v)))
				return rc;
			a->qo.ef_search = (unsigned) v;
		} else if (!strcmp(o, "--search-probe")) {
			if ((rc = opt_uint(o, val, 1, 1u << 20, &v)))
				return rc;
			a->qo.search_probe = (unsigned) v;
		} else if (!strcmp(o, "--rescore-limit")) {
			if ((rc = opt_uint(o, val, 0, 1u << 24, &v)))
				return rc;
			a->qo.rescore_limit = (unsigned) v;
		} else if (!strcmp(o, "--mode")) {
			if (!strcmp(val, "serial")) {
				a->qo.mode = CV_MODE_SERIAL;
				a->qo.fanout = 1;
			} else if (!strncmp(val, "fanout:", 7) && !cli_parse_u64(val + 7, &v) && v >= 1 &&
				   v <= 4096) {
				a->qo.mode = CV_MODE_FANOUT;
				a->qo.fanout = (unsigned) v;
			} else {
				return cli_usage("index", "--mode wants serial or fanout:C, got '%s'", val);
			}
		} else if (!strcmp(o, "--merge")) {
			if (!strcmp(val, "stream"))
				a->qo.merge = CV_MERGE_STREAM;
			else if (!strcmp(val, "sort"))
				a->qo.merge = CV_MERGE_SORT;
			else
				return cli_usage("index", "--merge wants stream or sort, got '%s'", val);
		} else if (!strcmp(o, "--io")) {
			if (!strcmp(val, "serial")) {
				a->qo.io_mode = CV_HIO_SERIAL;
			} else if (!strncmp(val, "concurrent:", 11) && !cli_parse_u64(val + 11, &v) &&
				   v >= 1 && v <= 4096) {
				a->qo.io_mode = CV_HIO_CONCURRENT;
				a->qo.io_depth = (unsigned) v;
			} else {
				return cli_usage("index", "--io wants serial or concurrent:Q, got '%s'", val);
			}
		} else if (!strcmp(o, "--strategy")) {
			if (cv_io_strategy_parse(val, &a->strategy))
				return cli_usage("index", "--strategy wants mmap, pread, direct or uring, got '%s'",
						 val);
		} else if (!strcmp(o, "--buffers")) {
			if (parse_size(val, &a->buffers) || a->buffers < 8192)
				return cli_usage("index", "--buffers wants a size of at least 8K, got '%s'", val);
		} else if (!strcmp(o, "--partitions")) {
			if (parse_list(val, &a->parts, &a->nparts))
				return cli_usage("index", "--partitions wants a list like 0,3,8-15, got '%s'",
						 val);
		} else {
			return cli_usage("index", "query: unknown option '%s'", o);
		}
	}
	if (!a->dir || !a->queries)
		return cli_usage("index", "query needs DIR and --queries SPEC");
	if (a->repeat > 1 && a->tracefile)
		return cli_usage("index", "--trace writes one pass: it takes --repeat 1");
	if (a->throttle && !a->cold)
		return cli_usage("index", "--throttle caps the disk: it takes --cold (a warm query "
				 "reads the page cache, which no throttle sees)");
	if (a->throttle && a->device)
		return cli_usage("index", "--device (a model) and --throttle (a real cap) exclude each other");
	return 0;
}

/*
 * Recall is computed only against the base the ground truth was made of:
 * an hdf5: truth's `train` must have the base's rows, and no id of the
 * nq rows used may reach past the base. Otherwise exit 5 naming both sizes.
 */
static int gt_matches_base(const qargs *a, const cv_dataset *base, const int32_t *gt, size_t nq)
{
	int32_t top = -1;

	if (!strncmp(a->gt, "hdf5:", 5)) {
		cv_hdf5_info hi;
		cv_err e = {{0}};
		int rc = cv_hdf5_describe(a->gt, &hi, &e);

		if (rc)
			return fail(rc, &e);
		if (hi.train_rows && hi.train_rows != base->n) {
			fprintf(stderr, "coldstudy index: --gt %s: its neighbours are of a base of %zu rows "
				"('train'), the base %s has %zu: recall needs the truth of the same base\n",
				a->gt, hi.train_rows, base->spec, base->n);
			return CS_EXIT_BADINPUT;
		}
	}
	for (size_t i = 0; i < nq * a->qo.k; i++)
		if (gt[i] > top)
			top = gt[i];
	if (top >= 0 && (size_t) top >= base->n) {
		fprintf(stderr, "coldstudy index: --gt %s: ids reach %d, so its base has at least %lld rows; "
			"the base %s has %zu: recall needs the truth of the same base\n",
			a->gt, top, (long long) top + 1, base->spec, base->n);
		return CS_EXIT_BADINPUT;
	}
	return 0;
}

typedef struct qsum {
	size_t nq;           /* queries per pass */
	size_t passes;       /* timed passes done */
	double *pass_qps;    /* each timed pass's QPS (queries / the sum of their latencies) */
	double wall_s, cpu_s, user_s, sys_s, recall;
	int have_recall;
	long index_rss_kb;   /* the index's own resident memory (see cmd_query); -1 unknown */
	double *lat_ms;
	cv_query_stats st;
	cv_io_stats io;
	double sim_ms, sim_read_ms, sim_inflight;
	uint64_t sim_reads;
	json_t *throttle;    /* the cap and the kernel's counters (--throttle), or NULL */
} qsum;

static void print_summary(const qargs *a, const cv_index *ix, const qsum *s)
{
	size_t ntot = s->nq * s->passes;
	double nq = (double) (ntot ? ntot : 1);
	double lat_mean = 0, p50, p90, p95, p99, p999, qps, qps_best, qps_min;
	double *sorted = malloc((ntot ? ntot : 1) * sizeof(double));
	double *qsorted = malloc((s->passes ? s->passes : 1) * sizeof(double));
	double read_ms = cv_hist_mean(&s->io.lat_ns) / 1e6;
	double bpr = s->st.reads ? (double) s->st.bytes / (double) s->st.reads : 0;

	if (!sorted || !qsorted) {
		free(sorted);
		free(qsorted);
		return;
	}
	for (size_t i = 0; i < ntot; i++) {
		lat_mean += s->lat_ms[i];
		sorted[i] = s->lat_ms[i];
	}
	lat_mean /= nq;
	qsort(sorted, ntot, sizeof(double), cmp_double);
	p50 = ntot ? cs_quantile(sorted, ntot, 0.5) : 0;
	p90 = ntot ? cs_quantile(sorted, ntot, 0.90) : 0;
	p95 = ntot ? cs_quantile(sorted, ntot, 0.95) : 0;
	p99 = ntot ? cs_quantile(sorted, ntot, 0.99) : 0;
	p999 = ntot ? cs_quantile(sorted, ntot, 0.999) : 0;
	free(sorted);
	/* QPS: the median pass's, the best pass's and the spread (min to max = best) */
	memcpy(qsorted, s->pass_qps, s->passes * sizeof(double));
	qsort(qsorted, s->passes, sizeof(double), cmp_double);
	qps = s->passes ? cs_quantile(qsorted, s->passes, 0.5) : 0;
	qps_best = s->passes ? qsorted[s->passes - 1] : 0;
	qps_min = s->passes ? qsorted[0] : 0;
	if (a->json) {
		printf("{\"kind\":\"%s\",\"queries\":%zu,\"k\":%zu,\"ef_search\":%u,"
		       "\"mode\":\"%s\",\"fanout\":%u,\"merge\":\"%s\",\"strategy\":\"%s\","
		       "\"cold\":%s,\"buffers_bytes\":%llu,\"partitions\":%u,",
		       cv_index_kind(ix), s->nq, a->qo.k, a->qo.ef_search,
		       a->qo.mode == CV_MODE_FANOUT ? "fanout" : "serial", a->qo.fanout,
		       a->qo.merge == CV_MERGE_SORT ? "sort" : "stream", cv_io_strategy_name(a->strategy),
		       a->cold ? "true" : "false", (unsigned long long) a->buffers,
		       a->nparts ? (unsigned) a->nparts : cv_index_partitions(ix));
		if (cv_fanout_via_name(s->st.fanout_via))
			printf("\"fanout_via\":\"%s\",", cv_fanout_via_name(s->st.fanout_via));
		else
			printf("\"fanout_via\":null,");
		if (s->have_recall)
			printf("\"recall_at_k\":%.6f,", s->recall);
		else
			printf("\"recall_at_k\":null,");
		printf("\"repeat\":%zu,\"warmup\":%llu,\"qps_best\":%.3f,\"qps_min\":%.3f,"
		       "\"qps_max\":%.3f,\"qps_passes\":[",
		       s->passes, (unsigned long long) a->warmup, qps_best, qps_min, qps_best);
		for (size_t i = 0; i < s->passes; i++)
			printf("%s%.3f", i ? "," : "", s->pass_qps[i]);
		printf("],\"lat_samples\":%zu,", ntot);
		printf("\"lat_p90_ms\":%.4f,\"lat_p95_ms\":%.4f,\"lat_p999_ms\":%.4f,", p90, p95, p999);
		printf("\"wall_s\":%.6f,\"qps\":%.3f,\"lat_mean_ms\":%.4f,\"lat_p50_ms\":%.4f,"
		       "\"lat_p99_ms\":%.4f,\"engine_reads\":%llu,\"reads_per_query\":%.2f,"
		       "\"bytes_per_read\":%.1f,\"engine_read_ms_mean\":%.5f,\"buffer_hits_per_query\":%.2f,"
		       "\"heap_reads_per_query\":%.2f,\"posting_reads_per_query\":%.2f,"
		       "\"rescore_reads_per_query\":%.2f,\"distances_per_query\":%.1f,"
		       "\"inflight_max\":%llu,\"cpu_ms_per_query\":%.3f,\"cpu_us_per_read\":%.2f,"
		       "\"user_us_per_read\":%.2f,\"sys_us_per_read\":%.2f,\"inflight_mean\":%.2f",
		       s->wall_s, qps, lat_mean, p50, p99,
		       (unsigned long long) s->st.reads, (double) s->st.reads / nq, bpr, read_ms,
		       (double) s->st.buffer_hits / nq, (double) s->st.heap_reads / nq,
		       (double) s->st.posting_reads / nq, (double) s->st.rescore_reads / nq,
		       (double) s->st.distances / nq, (unsigned long long) s->io.inflight_max,
		       s->cpu_s * 1e3 / nq, s->st.reads ? s->cpu_s * 1e6 / (double) s->st.reads : 0.0,
		       s->st.reads ? s->user_s * 1e6 / (double) s->st.reads : 0.0,
		       s->st.reads ? s->sys_s * 1e6 / (double) s->st.reads : 0.0,
		       cv_hist_mean(&s->io.inflight));
		if (s->index_rss_kb >= 0)
			printf(",\"index_rss_kb\":%ld", s->index_rss_kb);
		else
			printf(",\"index_rss_kb\":null");
		if (cv_index_storage(ix))
			printf(",\"vector_storage\":\"%s\"", cv_index_storage(ix));
		else
			printf(",\"vector_storage\":null");
		if (a->simulate)
			printf(",\"simulate\":\"%s\",\"sim_lat_mean_ms\":%.3f,\"sim_read_ms_mean\":%.3f,"
			       "\"sim_inflight_mean\":%.3f,\"sim_reads_per_query\":%.2f",
			       a->simulate, s->sim_ms / nq, s->sim_read_ms, s->sim_inflight,
			       (double) s->sim_reads / nq);
		if (s->throttle) {
			char *t = json_dumps(s->throttle, JSON_COMPACT | JSON_SORT_KEYS);

			printf(",\"throttle\":%s", t ? t : "null");
			free(t);
		}
		printf("}\n");
		free(qsorted);
		return;
	}
	printf("kind %s, %zu queries, k=%zu, ef_search=%u, mode %s", cv_index_kind(ix), s->nq,
	       a->qo.k, a->qo.ef_search, a->qo.mode == CV_MODE_FANOUT ? "fanout" : "serial");
	if (a->qo.mode == CV_MODE_FANOUT)
		printf(":%u", a->qo.fanout);
	if (cv_fanout_via_name(s->st.fanout_via))
		printf(" via %s", cv_fanout_via_name(s->st.fanout_via));
	printf(", merge %s, strategy %s%s", a->qo.merge == CV_MERGE_SORT ? "sort" : "stream",
	       cv_io_strategy_name(a->strategy), a->cold ? ", cold" : "");
	if (cv_index_storage(ix))
		printf(", vectors %s", cv_index_storage(ix));
	printf("\n");
	if (s->have_recall)
		printf("recall@%zu        %.4f\n", a->qo.k, s->recall);
	else
		printf("recall@%zu        n/a (no --gt and no data spec)\n", a->qo.k);
	if (s->passes > 1)
		printf("QPS              %.2f median of %zu passes (best %.2f, min %.2f; %llu warm-up "
		       "passes untimed)\n",
		       qps, s->passes, qps_best, qps_min, (unsigned long long) a->warmup);
	else
		printf("QPS              %.2f\n", qps);
	printf("latency ms       mean %.3f  p50 %.3f  p90 %.3f  p95 %.3f  p99 %.3f  p99.9 %.3f "
	       "(%zu queries)\n",
	       lat_mean, p50, p90, p95, p99, p999, ntot);
	printf("reads/query      %.1f (%.0f bytes per read, mean read %.4f ms, max in flight %llu)\n",
	       (double) s->st.reads / nq, bpr, read_ms, (unsigned long long) s->io.inflight_max);
	printf("cpu/query        %.3f ms (%.2f us per read: user %.2f, system %.2f)\n",
	       s->cpu_s * 1e3 / nq, s->st.reads ? s->cpu_s * 1e6 / (double) s->st.reads : 0.0,
	       s->st.reads ? s->user_s * 1e6 / (double) s->st.reads : 0.0,
	       s->st.reads ? s->sys_s * 1e6 / (double) s->st.reads : 0.0);
	printf("buffer hits/q    %.1f\n", (double) s->st.buffer_hits / nq);
	printf("heap reads/q     %.2f\n", (double) s->st.heap_reads / nq);
	printf("posting reads/q  %.2f\n", (double) s->st.posting_reads / nq);
	printf("rescore reads/q  %.2f\n", (double) s->st.rescore_reads / nq);
	if (a->simulate)
		printf("virtual time     %s: %.2f ms per query, read %.3f ms, %.2f in flight\n",
		       a->simulate, s->sim_ms / nq, s->sim_read_ms, s->sim_inflight);
	if (s->throttle)
		printf("throttle         %s on %s (%s): the kernel counted %lld reads, the engine %llu\n",
		       json_string_value(json_object_get(s->throttle, "cap")),
		       json_string_value(json_object_get(s->throttle, "disk")),
		       json_string_value(json_object_get(s->throttle, "controller")),
		       (long long) json_integer_value(json_object_get(s->throttle, "throttle_reads")),
		       (unsigned long long) s->st.reads);
	free(qsorted);
}

/*
 * --per-query FILE: one row a timed query: pass, q (its row in the query
 * set), lat_real_ms, reads, recall (null without a truth). CSV when FILE
 * ends in .csv, else JSON lines. 0 or an exit code (message printed).
 */
static int write_per_query(const char *path, const qsum *s, const uint64_t *reads,
			   const double *recall)
{
	size_t n = strlen(path);
	json_t *rows = json_array();
	cs_err e = {0};
	FILE *f;
	int rc;

	if (!rows)
		return CS_EXIT_INTERNAL;
	for (size_t p = 0; p < s->passes; p++)
		for (size_t i = 0; i < s->nq; i++)
			json_array_append_new(rows, json_pack("{s:I, s:I, s:f, s:I, s:o}", "pass", (json_int_t) p,
							      "q", (json_int_t) i, "lat_real_ms",
							      s->lat_ms[p * s->nq + i], "reads",
							      (json_int_t) reads[p * s->nq + i], "recall",
							      isfinite(recall[i]) ? json_real(recall[i])
										  : json_null()));
	f = guard_output_fopen(path, "index query", "--per-query", &e);
	if (!f) {
		json_decref(rows);
		return cli_fail("index", &e);
	}
	rc = report_rows_write(rows, n > 4 && !strcmp(path + n - 4, ".csv") ? REPORT_FMT_CSV
									 : REPORT_FMT_JSONL,
			       f, &e);
	if (fclose(f) && !rc)
		rc = cs_err_set(&e, CS_EXIT_INTERNAL, "cannot write");
	json_decref(rows);
	if (rc)
		fprintf(stderr, "coldstudy index: --per-query %s: %s\n", path, e.msg);
	return rc;
}

static int index_query(int argc, char **argv)
{
	qargs a;
	qsum s = {0};
	cv_open_opts oo;
	cv_io_opts io_o;
	cv_index *ix = NULL;
	cv_io *io = NULL;
	cv_device *dev = NULL, *simdev = NULL;
	cv_trace *trace = NULL;
	cv_dataset *qs = NULL, *base = NULL;
	cv_block_list bl = {0};
	cv_err e = {{0}};
	char **files = NULL, spec[1024];
	size_t nfiles = 0;
	int32_t *gt = NULL;
	uint32_t *ids = NULL;
	float *dists = NULL;
	double sim_read_sum = 0, sim_infl_sum = 0;
	double *q_recall = NULL; /* --per-query: each query's recall (the first timed pass) */
	uint64_t *q_reads = NULL; /* --per-query: each timed query's engine reads */
	long rss0, rss1, rss2, rss3;
	uint64_t prog_t0 = 0, prog_last = 0;
	int rc, exitc = CS_EXIT_OK;
	guard_held held, traceh, recordh, pqh;
	const char *idir, *cvia, *data_from_index = NULL;
	char tracevia[PATH_MAX + 300], recordvia[PATH_MAX + 300], pqvia[PATH_MAX + 300];
	harness_cap cap;
	harness_throttle thr;

	harness_throttle_init(&thr);
	guard_held_init(&traceh);
	guard_held_init(&recordh);
	guard_held_init(&pqh);
	rc = parse_query_args(argc, argv, &a);
	if (rc)
		return rc;
	if (a.throttle) {
		cs_err ce = {0};

		if (harness_cap_parse(a.throttle, &cap, &ce)) {
			free(a.parts);
			fprintf(stderr, "coldstudy index: --throttle: %s\n", ce.msg);
			return ce.code;
		}
	}
	/*
	 * The index is resolved once and read through the hold. A cold query
	 * evicts, so a production index is refused there; warm reads are allowed.
	 */
	{
		cs_err ge = {0};

		rc = a.cold ? guard_existing(NULL, NULL, a.dir, AT_FDCWD, "index query --cold", "index",
					   &held, &ge)
			    : guard_hold(a.dir, AT_FDCWD, &held, &ge);
		if (!rc && !held.exists) {
			guard_held_close(&held);
			rc = cs_err_set(&ge, CS_EXIT_BADINPUT, "%s: does not exist", a.dir);
		}
		if (rc) {
			free(a.parts);
			return cli_fail("index", &ge);
		}
		idir = guard_held_via(&held);
		/* what the query writes: --trace, --record-blocks, the ground-truth cache */
		if ((a.tracefile &&
		     (rc = guard_output(NULL, NULL, a.tracefile, 0, "index query", "--trace", &traceh,
					tracevia, sizeof(tracevia), &ge))) ||
		    (a.record &&
		     (rc = guard_output(NULL, NULL, a.record, 0, "index query", "--record-blocks",
					&recordh, recordvia, sizeof(recordvia), &ge))) ||
		    (a.per_query &&
		     (rc = guard_output(NULL, NULL, a.per_query, 0, "index query", "--per-query", &pqh,
					pqvia, sizeof(pqvia), &ge))) ||
		    (!a.gt && (rc = guard_cache_dir(NULL, NULL, NULL, "index query", &cvia, &ge)))) {
			guard_held_close(&held);
			guard_held_close(&traceh);
			guard_held_close(&recordh);
			guard_held_close(&pqh);
			free(a.parts);
			return cli_fail("index", &ge);
		}
		if (a.tracefile)
			a.tracefile = tracevia;
		if (a.record)
			a.record = recordvia;
		if (a.per_query)
			a.per_query = pqvia;
	}
	cv_open_opts_default(&oo);
	oo.buffers_bytes = a.buffers;
	rss0 = rss_anon_kb();
	rc = cv_index_open(idir, &oo, &ix, &e);
	if (rc) {
		exitc = fail(rc, &e);
		goto out;
	}
	rss1 = rss_anon_kb();
	rc = cv_dataset_load(a.queries, &qs, &e);
	if (rc) {
		exitc = fail(rc, &e);
		goto out;
	}
	if (qs->d != cv_index_dim(ix)) {
		fprintf(stderr, "coldstudy index: %s: %zu dimensions, the index has %zu\n", a.queries,
			qs->d, cv_index_dim(ix));
		exitc = CS_EXIT_BADINPUT;
		goto out;
	}
	s.nq = a.nq && a.nq < qs->n ? a.nq : qs->n;
	a.qo.partitions = a.parts;
	a.qo.npartitions = a.nparts;
	for (size_t i = 0; i < a.nparts; i++)
		if (a.parts[i] >= cv_index_partitions(ix)) {
			fprintf(stderr, "coldstudy index: --partitions: %u is past the last partition (%u)\n",
				a.parts[i], cv_index_partitions(ix) - 1);
			exitc = CS_EXIT_BADINPUT;
			goto out;
		}
	/* ground truth: --gt, or computed (and cached) against the data spec */
	if (!a.data && read_data_spec(idir, spec, sizeof(spec)) == 0)
		data_from_index = a.data = spec;
	if (a.data) {
		rc = cv_dataset_load(a.data, &base, &e);
		if (rc) {
			if (data_from_index)
				fprintf(stderr, "coldstudy index: %s/DATA names the index's data as %s: %s "
					"(give --data SPEC)\n", a.dir, a.data, e.msg[0] ? e.msg : strerror(-rc));
			exitc = data_from_index ? CS_EXIT_BADINPUT : fail(rc, &e);
			goto out;
		}
	}
	{
		cv_metric im = cv_index_metric(ix);

		if ((exitc = hdf5_metric(a.queries, "--queries", "the index's metric", &im)) ||
		    (a.gt && (exitc = hdf5_metric(a.gt, "--gt", "the index's metric", &im))))
			goto out;
	}
	if (a.gt && base) {
		size_t gnq, gk;

		rc = cv_ivecs_read(a.gt, &gt, &gnq, &gk, &e);
		if (rc) {
			exitc = fail(rc, &e);
			goto out;
		}
		if (gnq < s.nq || gk < a.qo.k) {
			fprintf(stderr, "coldstudy index: %s: %zu rows of %zu ids, need %zu of %zu\n", a.gt,
				gnq, gk, s.nq, a.qo.k);
			exitc = CS_EXIT_BADINPUT;
			goto out;
		}
		if (gk != a.qo.k) {
			/* keep the first k of each row */
			for (size_t i = 0; i < s.nq; i++)
				memmove(gt + i * a.qo.k, gt + i * gk, a.qo.k * sizeof(*gt));
		}
		if ((exitc = gt_matches_base(&a, base, gt, s.nq)))
			goto out;
	} else if (base) {
		cv_dataset *sub = NULL;

		rc = cv_dataset_slice(qs, 0, s.nq, &sub);
		cv_groundtruth_progress(!a.quiet && isatty(2));
		if (!rc)
			rc = cv_groundtruth_cached(base, sub, a.qo.k, cv_index_metric(ix), 0, NULL, &gt, &e);
		cv_groundtruth_progress(0);
		cv_dataset_free(sub);
		if (rc) {
			exitc = fail(rc, &e);
			goto out;
		}
	}
	if (a.device) {
		rc = cv_device_new(a.device, 1, &dev, &e);
		if (rc) {
			exitc = fail(rc, &e);
			goto out;
		}
	}
	if (a.simulate) {
		rc = cv_device_new(a.simulate, 1, &simdev, &e);
		if (rc) {
			exitc = fail(rc, &e);
			goto out;
		}
	}
	if (a.simulate || a.tracefile) {
		rc = cv_trace_new(1u << 22, &trace);
		if (rc) {
			exitc = fail(rc, &e);
			goto out;
		}
	}
	if (a.throttle) {
		cs_err ce = {0};

		/* the whole disk under the held index; the query loop's thread (and its readers) join */
		if (harness_throttle_begin(&cap, held.fd, &thr, &ce)) {
			fprintf(stderr, "coldstudy index: %s: %s\n", a.dir, ce.msg);
			exitc = ce.code;
			goto out;
		}
		if ((rc = harness_throttle_enter(&thr))) {
			fprintf(stderr, "coldstudy index: %s: cannot join: %s\n", thr.dir, strerror(-rc));
			exitc = CS_EXIT_INTERNAL;
			goto out;
		}
	}
	cv_io_opts_default(&io_o);
	io_o.strategy = a.strategy;
	io_o.device = dev;
	io_o.trace = trace;
	if (a.qo.mode == CV_MODE_FANOUT && a.qo.fanout > io_o.queue_depth)
		io_o.queue_depth = a.qo.fanout;
	rc = cv_io_new(&io_o, &io);
	if (rc) {
		fprintf(stderr, "coldstudy index: cannot start the %s reader: %s\n",
			cv_io_strategy_name(a.strategy), strerror(-rc));
		exitc = rc == -ENOSYS || rc == -EPERM ? CS_EXIT_REFUSED : CS_EXIT_INTERNAL;
		goto out;
	}
	if (a.cold || a.record) {
		rc = cv_index_files(idir, &files, &nfiles);
		if (rc) {
			exitc = fail(rc, NULL);
			goto out;
		}
	}
	a.qo.blocks = a.record ? &bl : NULL;
	ids = calloc(a.qo.k, sizeof(*ids));
	dists = calloc(a.qo.k, sizeof(*dists));
	s.lat_ms = calloc(s.nq && a.repeat ? s.nq * a.repeat : 1, sizeof(double));
	s.pass_qps = calloc(a.repeat, sizeof(double));
	if (a.per_query) {
		q_recall = malloc((s.nq ? s.nq : 1) * sizeof(*q_recall));
		q_reads = calloc(s.nq && a.repeat ? s.nq * a.repeat : 1, sizeof(*q_reads));
		for (size_t i = 0; q_recall && i < s.nq; i++)
			q_recall[i] = NAN;
	}
	if (!ids || !dists || !s.lat_ms || !s.pass_qps || (a.per_query && (!q_recall || !q_reads))) {
		exitc = CS_EXIT_INTERNAL;
		goto out;
	}
	/*
	 * The index's own resident memory: what opening it added, plus what the
	 * passes add (scratch, buffer pools). The queries, base and ground truth
	 * are loaded between the two, so they are not counted; malloc_trim first
	 * returns freed heap pages (the ground truth's), so the passes cannot
	 * reuse resident pages unseen. Anonymous pages only: the page cache a
	 * pread or mmap index is read from is the kernel's, not the process's.
	 */
	malloc_trim(0);
	rss2 = rss_anon_kb();
	prog_t0 = prog_last = cv_progress_start();
	/*
	 * warmup untimed passes, then repeat timed ones, over the same queries.
	 * Only the timed passes count: latencies, QPS per pass, read counters
	 * (the context's are reset after the warm-up), recall (the first timed
	 * pass; later ones return the same ids), traces and virtual time.
	 */
	for (uint64_t pass = 0; pass < a.warmup + a.repeat; pass++) {
		int timed = pass >= a.warmup, first = pass == a.warmup;
		double *lat = timed ? s.lat_ms + (pass - a.warmup) * s.nq : NULL;
		double pass_s = 0;
		cv_query_stats wst = {0};

		if (first)
			cv_io_stats_reset(io);
		for (size_t i = 0; i < s.nq; i++) {
			size_t nout = 0;
			uint64_t t0, t1, c0, c1, u0, u1, k0, k1, reads0 = s.st.reads;

			if (a.cold) {
				for (size_t f = 0; f < nfiles; f++)
					if ((rc = cv_cache_evict(files[f]))) {
						fprintf(stderr, "coldstudy index: %s: cannot evict: %s\n",
							cli_spell(files[f]), strerror(-rc));
						exitc = CS_EXIT_INTERNAL;
						goto out;
					}
				cv_index_drop_buffers(ix);
			}
			if (trace)
				cv_trace_clear(trace);
			cpu_split(&u0, &k0);
			c0 = cpu_ns();
			t0 = now_ns();
			rc = cv_index_query(ix, io, cv_row(qs, i), &a.qo, ids, dists, &nout,
					    timed ? &s.st : &wst);
			t1 = now_ns();
			c1 = cpu_ns();
			cpu_split(&u1, &k1);
			if (rc) {
				fprintf(stderr, "coldstudy index: query %zu: %s\n", i, strerror(-rc));
				exitc = cli_exit_from_errno(rc);
				goto out;
			}
			/* a progress line on a terminal, five times a second at most (-q: none) */
			if (!a.quiet && isatty(2) && t1 - prog_last > 200000000u) {
				prog_last = t1;
				cv_progress("querying", a.dir, pass * s.nq + i + 1,
					    (a.warmup + a.repeat) * s.nq, prog_t0);
			}
			if (!timed)
				continue;
			lat[i] = (double) (t1 - t0) / 1e6;
			if (q_reads)
				q_reads[(pass - a.warmup) * s.nq + i] = s.st.reads - reads0;
			pass_s += (double) (t1 - t0) / 1e9;
			s.cpu_s += (double) (c1 - c0) / 1e9;
			s.user_s += (double) (u1 - u0) / 1e9;
			s.sys_s += (double) (k1 - k0) / 1e9;
			if (first && gt && base) {
				double r = cv_recall_at_k(base, cv_row(qs, i), cv_index_metric(ix),
							  gt + i * a.qo.k, a.qo.k, ids, nout);

				/* NaN: the truth left the base (checked above; never averaged in) */
				if (isnan(r)) {
					fprintf(stderr, "coldstudy index: query %zu: the ground truth names a row "
						"outside the base (%zu rows)\n", i, base->n);
					exitc = CS_EXIT_BADINPUT;
					goto out;
				}
				s.recall += r;
				s.have_recall = 1;
				if (q_recall)
					q_recall[i] = r;
			}
			if (a.tracefile) {
				char tpath[4200];

				/* one file per query: FILE for a single query, FILE.N otherwise */
				if (s.nq == 1)
					snprintf(tpath, sizeof(tpath), "%s", a.tracefile);
				else
					snprintf(tpath, sizeof(tpath), "%s.%zu", a.tracefile, i);
				rc = cv_trace_save(trace, tpath, &e);
				if (rc) {
					exitc = fail(rc, &e);
					goto out;
				}
			}
			if (simdev) {
				cv_sim_result r;

				rc = cv_device_simulate(simdev, trace, i + 1, &r);
				if (rc) {
					fprintf(stderr, "coldstudy index: simulate: %s\n", strerror(-rc));
					exitc = CS_EXIT_INTERNAL;
					goto out;
				}
				s.sim_ms += r.wall_ms;
				s.sim_reads += r.reads;
				sim_read_sum += r.read_ms_mean * (double) r.reads;
				sim_infl_sum += r.inflight_mean * r.wall_ms;
			}
		}
		if (timed) {
			s.wall_s += pass_s;
			s.pass_qps[s.passes++] = pass_s > 0 ? (double) s.nq / pass_s : 0;
		}
	}
	if (a.throttle) {
		uint64_t tr = 0, tb = 0;

		harness_throttle_leave(&thr);
		if (harness_throttle_counters(&thr, &tr, &tb) == 0)
			s.throttle = harness_throttle_record(&thr, tr, tb);
	}
	if (!a.quiet && isatty(2) && prog_last != prog_t0)
		cv_progress("querying", a.dir, (a.warmup + a.repeat) * s.nq, (a.warmup + a.repeat) * s.nq,
			    prog_t0);
	rss3 = rss_anon_kb();
	s.index_rss_kb = rss0 < 0 || rss1 < 0 || rss2 < 0 || rss3 < 0
				 ? -1
				 : (rss1 > rss0 ? rss1 - rss0 : 0) + (rss3 > rss2 ? rss3 - rss2 : 0);
	if (s.have_recall)
		s.recall /= (double) s.nq;
	if (s.sim_reads)
		s.sim_read_ms = sim_read_sum / (double) s.sim_reads;
	if (s.sim_ms > 0)
		s.sim_inflight = sim_infl_sum / s.sim_ms;
	cv_io_stats_get(io, &s.io);
	if (a.per_query && (rc = write_per_query(a.per_query, &s, q_reads, q_recall))) {
		exitc = rc;
		goto out;
	}
	print_summary(&a, ix, &s);
	if (a.record && (rc = write_blocks(a.record, &bl, files, nfiles))) {
		fprintf(stderr, "coldstudy index: %s: cannot write block lists: %s\n",
			cli_spell(a.record), strerror(-rc));
		exitc = rc == -EPERM ? CS_EXIT_REFUSED : CS_EXIT_INTERNAL;
	}
out:
	free(q_recall);
	free(q_reads);
	free(bl.file);
	free(bl.block);
	free(ids);
	free(dists);
	free(s.lat_ms);
	free(s.pass_qps);
	free(gt);
	free(a.parts);
	cv_index_files_free(files, nfiles);
	cv_io_free(io);
	cv_trace_free(trace);
	cv_device_free(dev);
	cv_device_free(simdev);
	cv_dataset_free(qs);
	cv_dataset_free(base);
	cv_index_close(ix);
	harness_throttle_end(&thr);
	json_decref(s.throttle);
	guard_held_close(&held);
	guard_held_close(&traceh);
	guard_held_close(&recordh);
	guard_held_close(&pqh);
	return exitc;
}

/* ---- verify, insert, delete ---- */

static int index_verify(int argc, char **argv)
{
	cv_err e = {{0}};
	int rc;

	if (argc != 2 || argv[1][0] == '-')
		return cli_usage("index", "verify takes one DIR");
	rc = cv_index_verify(argv[1], &e);
	if (rc)
		return fail(rc, &e);
	printf("%s: %s\n", argv[1], e.msg[0] ? e.msg : "ok");
	return CS_EXIT_OK;
}

/* Read ids from FILE: ivecs (by extension) or numbers separated by white space. */
static int read_ids(const char *path, uint32_t **out, size_t *n)
{
	size_t len = strlen(path), cap = 0, cnt = 0;
	uint32_t *v = NULL;
	FILE *f;
	unsigned long long x;
	int c;

	if (len > 6 && !strcmp(path + len - 6, ".ivecs")) {
		int32_t *ids = NULL;
		size_t nq, k;
		cv_err e = {{0}};
		int rc = cv_ivecs_read(path, &ids, &nq, &k, &e);

		if (rc)
			return fail(rc, &e);
		*out = (uint32_t *) ids;
		*n = nq * k;
		return 0;
	}
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "coldstudy index: %s: cannot open: %s\n", path, strerror(errno));
		return CS_EXIT_BADINPUT;
	}
	while ((c = fscanf(f, "%llu", &x)) == 1) {
		if (x > UINT32_MAX)
			break;
		if (cnt == cap) {
			uint32_t *nv;

			cap = cap ? cap * 2 : 1024;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				fclose(f);
				free(v);
				return CS_EXIT_INTERNAL;
			}
			v = nv;
		}
		v[cnt++] = (uint32_t) x;
	}
	if (!feof(f) || c == 1) {
		fprintf(stderr, "coldstudy index: %s: byte %ld: expected an id (0..4294967295)\n", path,
			ftell(f));
		fclose(f);
		free(v);
		return CS_EXIT_BADINPUT;
	}
	fclose(f);
	*out = v;
	*n = cnt;
	return 0;
}

static int index_update(int argc, char **argv, int insert)
{
	const char *dir = NULL, *data = NULL, *idfile = NULL, *shown = NULL;
	guard_held held;
	uint64_t first = 0;
	cv_dataset *ds = NULL;
	cv_err e = {{0}};
	uint32_t *ids = NULL;
	size_t n = 0;
	int rc;

	guard_held_init(&held);
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];

		if (o[0] != '-') {
			if (dir)
				return cli_usage("index", "%s takes one DIR", argv[0]);
			dir = o;
		} else if (i + 1 >= argc) {
			return cli_usage("index", "%s needs a value", o);
		} else if (!strcmp(o, "--data")) {
			data = argv[++i];
		} else if (!strcmp(o, "--ids") && !insert) {
			idfile = argv[++i];
		} else if (!strcmp(o, "--first-id")) {
			if ((rc = opt_uint(o, argv[++i], 0, UINT32_MAX, &first)))
				return rc;
		} else {
			return cli_usage("index", "%s: unknown option '%s'", argv[0], o);
		}
	}
	if (!dir || (insert && !data) || (!insert && !data == !idfile))
		return cli_usage("index", insert ? "insert needs DIR and --data SPEC"
						 : "delete needs DIR and one of --ids FILE or --data SPEC");
	{
		cs_err ge = {0};

		/* A production index is never changed: resolve once, check, update through the hold. */
		if ((rc = guard_existing(NULL, NULL, dir, AT_FDCWD, insert ? "index insert" : "index delete",
				       "index", &held, &ge)))
			return cli_fail("index", &ge);
		shown = dir;
		dir = guard_held_via(&held);
	}
	if (data) {
		rc = cv_dataset_load(data, &ds, &e);
		if (rc) {
			guard_held_close(&held);
			return fail(rc, &e);
		}
	}
	if (insert) {
		rc = cv_index_insert(dir, ds, (uint32_t) first, &e);
		n = ds->n;
	} else {
		if (idfile) {
			rc = read_ids(idfile, &ids, &n);
			if (rc) {
				cv_dataset_free(ds);
				guard_held_close(&held);
				return rc;
			}
		} else {
			n = ds->n;
			ids = malloc((n ? n : 1) * sizeof(*ids));
			if (!ids) {
				cv_dataset_free(ds);
				guard_held_close(&held);
				return CS_EXIT_INTERNAL;
			}
			for (size_t i = 0; i < n; i++)
				ids[i] = (uint32_t) (first + i);
		}
		rc = cv_index_delete(dir, ids, n, &e);
	}
	free(ids);
	cv_dataset_free(ds);
	guard_held_close(&held);
	if (rc == -ENOTSUP) {
		fprintf(stderr, "coldstudy index: %s\n", e.msg[0] ? e.msg : "not supported");
		return CS_EXIT_REFUSED;
	}
	if (rc)
		return fail(rc, &e);
	printf("%s %zu rows %s %s\n", insert ? "inserted" : "deleted", n, insert ? "into" : "from",
	       shown);
	return CS_EXIT_OK;
}


/* ---- sweep: the ann-benchmarks loop ---- */

/* The bytes of an index's own files (DATA and BUILD left out); -1 unknown. */
static long long index_bytes(const char *dir)
{
	char **files = NULL;
	size_t n = 0;
	long long sum = 0;

	if (cv_index_files(dir, &files, &n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *b = strrchr(files[i], '/');
		struct stat st;

		b = b ? b + 1 : files[i];
		if (!strcmp(b, "DATA") || !strcmp(b, "BUILD"))
			continue;
		if (stat(files[i], &st) == 0)
			sum += (long long) st.st_size;
	}
	cv_index_files_free(files, n);
	return sum;
}

/* DIR/BUILD's seconds (index build writes it); NAN when missing. */
static double build_seconds(const char *dir)
{
	char path[4300];
	json_t *j;
	double v;

	snprintf(path, sizeof(path), "%s/BUILD", dir);
	j = json_load_file(path, 0, NULL);
	v = json_is_number(json_object_get(j, "seconds")) ? json_number_value(json_object_get(j, "seconds"))
							   : NAN;
	json_decref(j);
	return v;
}

/*
 * index sweep DIR --queries SPEC [--gt FILE] --ef-search LIST | --search-probe LIST
 *             [--repeat N] [--warmup W] [--out PREFIX] [--json] [index query's options]
 * One row a setting: recall@k, QPS (median of the timed passes, their
 * min..max), latency percentiles over every timed query (cs_quantile),
 * reads a query, the build's seconds and the index's bytes. --out writes
 * PREFIX.csv, PREFIX.jsonl and PREFIX.svg (the recall/QPS front).
 */
static int index_sweep(int argc, char **argv)
{
	const char *knob = NULL, *list = NULL, *prefix = NULL;
	char **rest = calloc((size_t) argc + 1, sizeof(char *));
	int nrest = 0, has_repeat = 0, has_warmup = 0, rc, exitc = CS_EXIT_OK;
	uint32_t *vals = NULL;
	size_t nvals = 0, nq;
	qargs a;
	guard_held held;
	cv_open_opts oo;
	cv_io_opts io_o;
	cv_index *ix = NULL;
	cv_io *io = NULL;
	cv_dataset *qs = NULL, *base = NULL;
	cv_err e = {{0}};
	int32_t *gt = NULL;
	uint32_t *ids = NULL;
	float *dists = NULL;
	double *lat = NULL, *qps = NULL, *recalls = NULL, *qmeds = NULL, bsecs;
	long long ibytes;
	char spec[1024], **labels = NULL;
	json_t *rows = json_array();
	const char *idir, *data_from_index = NULL, *kcol;

	guard_held_init(&held);
	memset(&a, 0, sizeof(a));
	if (!rest || !rows) {
		free(rest);
		json_decref(rows);
		return CS_EXIT_INTERNAL;
	}
	rest[nrest++] = argv[0];
	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "--ef-search") || !strcmp(argv[i], "--search-probe") ||
		     !strcmp(argv[i], "--out")) && i + 1 < argc) {
			if (!strcmp(argv[i], "--out"))
				prefix = argv[++i];
			else if (knob) {
				exitc = cli_usage("index", "sweep takes one of --ef-search and --search-probe");
				goto out;
			} else {
				knob = argv[i];
				list = argv[++i];
			}
			continue;
		}
		has_repeat |= !strcmp(argv[i], "--repeat");
		has_warmup |= !strcmp(argv[i], "--warmup");
		rest[nrest++] = argv[i];
	}
	if ((exitc = parse_query_args(nrest, rest, &a)))
		goto out;
	if (!knob) {
		exitc = cli_usage("index", "sweep needs --ef-search LIST or --search-probe LIST");
		goto out;
	}
	if (parse_list(list, &vals, &nvals) || (!strcmp(knob, "--ef-search") && vals[nvals - 1] > 1000)) {
		exitc = cli_usage("index", "%s wants a list like 10,20,40,80,160, got '%s'", knob, list);
		goto out;
	}
	for (size_t i = 0; i < nvals; i++)
		if (!vals[i]) {
			exitc = cli_usage("index", "%s: 0 is not a setting", knob);
			goto out;
		}
	if (a.cold || a.simulate || a.tracefile || a.record || a.per_query) {
		exitc = cli_usage("index", "sweep measures warm passes: --cold, --simulate, --trace, "
					   "--record-blocks and --per-query are index query's");
		goto out;
	}
	kcol = !strcmp(knob, "--ef-search") ? "ef_search" : "search_probe";
	if (!has_repeat)
		a.repeat = 5;
	if (!has_warmup)
		a.warmup = 1;
	{
		cs_err ge = {0};

		rc = guard_hold(a.dir, AT_FDCWD, &held, &ge);
		if (!rc && !held.exists)
			rc = cs_err_set(&ge, CS_EXIT_BADINPUT, "%s: does not exist", a.dir);
		if (rc) {
			exitc = cli_fail("index", &ge);
			goto out;
		}
		idir = guard_held_via(&held);
	}
	cv_open_opts_default(&oo);
	oo.buffers_bytes = a.buffers;
	if ((rc = cv_index_open(idir, &oo, &ix, &e))) {
		exitc = fail(rc, &e);
		goto out;
	}
	if (!strcmp(knob, "--search-probe") != !strcmp(cv_index_kind(ix), "hfresh")) {
		exitc = cli_usage("index", "%s: a %s index's knob is %s", knob, cv_index_kind(ix),
				  strcmp(cv_index_kind(ix), "hfresh") ? "--ef-search" : "--search-probe");
		goto out;
	}
	if ((rc = cv_dataset_load(a.queries, &qs, &e))) {
		exitc = fail(rc, &e);
		goto out;
	}
	if (qs->d != cv_index_dim(ix)) {
		fprintf(stderr, "coldstudy index: %s: %zu dimensions, the index has %zu\n", a.queries,
			qs->d, cv_index_dim(ix));
		exitc = CS_EXIT_BADINPUT;
		goto out;
	}
	nq = a.nq && a.nq < qs->n ? a.nq : qs->n;
	if (!a.data && read_data_spec(idir, spec, sizeof(spec)) == 0)
		data_from_index = a.data = spec;
	if (!a.data) {
		fprintf(stderr, "coldstudy index: sweep needs the base for recall: %s/DATA or --data\n",
			a.dir);
		exitc = CS_EXIT_BADINPUT;
		goto out;
	}
	if ((rc = cv_dataset_load(a.data, &base, &e))) {
		if (data_from_index)
			fprintf(stderr, "coldstudy index: %s/DATA names the index's data as %s: %s "
				"(give --data SPEC)\n", a.dir, a.data, e.msg[0] ? cli_spell(e.msg) : strerror(-rc));
		exitc = data_from_index ? CS_EXIT_BADINPUT : fail(rc, &e);
		goto out;
	}
	{
		cv_metric im = cv_index_metric(ix);

		if ((exitc = hdf5_metric(a.queries, "--queries", "the index's metric", &im)) ||
		    (a.gt && (exitc = hdf5_metric(a.gt, "--gt", "the index's metric", &im))))
			goto out;
	}
	if (a.gt) {
		size_t gnq, gk;

		if ((rc = cv_ivecs_read(a.gt, &gt, &gnq, &gk, &e))) {
			exitc = fail(rc, &e);
			goto out;
		}
		if (gnq < nq || gk < a.qo.k) {
			fprintf(stderr, "coldstudy index: %s: %zu rows of %zu ids, need %zu of %zu\n", a.gt,
				gnq, gk, nq, a.qo.k);
			exitc = CS_EXIT_BADINPUT;
			goto out;
		}
		for (size_t i = 0; gk != a.qo.k && i < nq; i++)
			memmove(gt + i * a.qo.k, gt + i * gk, a.qo.k * sizeof(*gt));
		if ((exitc = gt_matches_base(&a, base, gt, nq)))
			goto out;
	} else {
		cv_dataset *sub = NULL;

		rc = cv_dataset_slice(qs, 0, nq, &sub);
		cv_groundtruth_progress(!a.quiet && isatty(2));
		if (!rc)
			rc = cv_groundtruth_cached(base, sub, a.qo.k, cv_index_metric(ix), 0, NULL, &gt, &e);
		cv_groundtruth_progress(0);
		cv_dataset_free(sub);
		if (rc) {
			exitc = fail(rc, &e);
			goto out;
		}
	}
	cv_io_opts_default(&io_o);
	io_o.strategy = a.strategy;
	if ((rc = cv_io_new(&io_o, &io))) {
		fprintf(stderr, "coldstudy index: cannot start the %s reader: %s\n",
			cv_io_strategy_name(a.strategy), strerror(-rc));
		exitc = rc == -ENOSYS || rc == -EPERM ? CS_EXIT_REFUSED : CS_EXIT_INTERNAL;
		goto out;
	}
	ids = calloc(a.qo.k, sizeof(*ids));
	dists = calloc(a.qo.k, sizeof(*dists));
	lat = calloc(nq * a.repeat + 1, sizeof(*lat));
	qps = calloc(a.repeat + 1, sizeof(*qps));
	recalls = calloc(nvals, sizeof(*recalls));
	qmeds = calloc(nvals, sizeof(*qmeds));
	labels = calloc(nvals, sizeof(*labels));
	if (!ids || !dists || !lat || !qps || !recalls || !qmeds || !labels) {
		exitc = CS_EXIT_INTERNAL;
		goto out;
	}
	bsecs = build_seconds(idir);
	ibytes = index_bytes(idir);
	if (!a.json)
		printf("%-13s %9s %10s %21s %9s %9s %9s %9s %9s %9s\n",
		       kcol, "recall", "QPS", "(min..max)", "p50 ms", "p90 ms", "p95 ms", "p99 ms",
		       "p99.9 ms", "reads/q");
	for (size_t v = 0; v < nvals; v++) {
		double rsum = 0, pct[5], qmin, qmax, qmed;
		static const double qv[5] = {0.5, 0.9, 0.95, 0.99, 0.999};
		cv_query_stats st = {0}, wst = {0};
		size_t nl = 0;
		json_t *row;

		if (!strcmp(knob, "--ef-search"))
			a.qo.ef_search = vals[v];
		else
			a.qo.search_probe = vals[v];
		for (uint64_t pass = 0; pass < a.warmup + a.repeat; pass++) {
			int timed = pass >= a.warmup, first = pass == a.warmup;
			double pass_s = 0;

			for (size_t i = 0; i < nq; i++) {
				size_t nout = 0;
				uint64_t t0 = now_ns(), t1;

				rc = cv_index_query(ix, io, cv_row(qs, i), &a.qo, ids, dists, &nout,
						    timed ? &st : &wst);
				t1 = now_ns();
				if (rc) {
					fprintf(stderr, "coldstudy index: %s %u: query %zu: %s\n", knob + 2,
						vals[v], i, strerror(-rc));
					exitc = cli_exit_from_errno(rc);
					goto out;
				}
				if (!timed)
					continue;
				lat[nl++] = (double) (t1 - t0) / 1e6;
				pass_s += (double) (t1 - t0) / 1e9;
				if (first) {
					double r = cv_recall_at_k(base, cv_row(qs, i), cv_index_metric(ix),
								  gt + i * a.qo.k, a.qo.k, ids, nout);

					if (isnan(r)) {
						fprintf(stderr, "coldstudy index: query %zu: the ground truth names a "
							"row outside the base (%zu rows)\n", i, base->n);
						exitc = CS_EXIT_BADINPUT;
						goto out;
					}
					rsum += r;
				}
			}
			if (timed)
				qps[pass - a.warmup] = pass_s > 0 ? (double) nq / pass_s : 0;
		}
		qsort(lat, nl, sizeof(double), cmp_double);
		for (int k = 0; k < 5; k++)
			pct[k] = cs_quantile(lat, nl, qv[k]);
		qsort(qps, a.repeat, sizeof(double), cmp_double);
		qmed = cs_quantile(qps, a.repeat, 0.5);
		qmin = qps[0];
		qmax = qps[a.repeat - 1];
		recalls[v] = rsum / (double) nq;
		qmeds[v] = qmed;
		labels[v] = malloc(32);
		if (labels[v])
			snprintf(labels[v], 32, "%u", vals[v]);
		row = json_pack("{s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
				kcol, (json_int_t) vals[v], "k", (json_int_t) a.qo.k, "queries",
				(json_int_t) nq, "repeat", (json_int_t) a.repeat, "recall_at_k", recalls[v],
				"qps", qmed, "qps_min", qmin, "qps_max", qmax, "lat_p50_ms", pct[0],
				"lat_p90_ms", pct[1], "lat_p95_ms", pct[2], "lat_p99_ms", pct[3],
				"lat_p999_ms", pct[4], "reads_per_query",
				(double) st.reads / (double) (nq * a.repeat));
		if (!row) {
			exitc = CS_EXIT_INTERNAL;
			goto out;
		}
		json_object_set_new(row, "build_s", isfinite(bsecs) ? json_real(bsecs) : json_null());
		json_object_set_new(row, "index_bytes", ibytes >= 0 ? json_integer(ibytes) : json_null());
		json_object_set_new(row, "kind", json_string(cv_index_kind(ix)));
		if (a.json) {
			json_dumpf(row, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
			putchar('\n');
		} else {
			char mm[64];

			snprintf(mm, sizeof(mm), "(%.1f..%.1f)", qmin, qmax);
			printf("%-13u %9.4f %10.1f %21s %9.4f %9.4f %9.4f %9.4f %9.4f %9.1f\n", vals[v],
			       recalls[v], qmed, mm, pct[0], pct[1], pct[2], pct[3], pct[4],
			       (double) st.reads / (double) (nq * a.repeat));
		}
		json_array_append_new(rows, row);
		fflush(stdout);
	}
	if (!a.json) {
		char bs[32];

		snprintf(bs, sizeof(bs), isfinite(bsecs) ? "%.1f s" : "n/a (no BUILD)", bsecs);
		printf("%zu queries, k=%zu, %llu timed passes a setting after %llu warm-up; build %s, "
		       "index %lld bytes\n",
		       nq, a.qo.k, (unsigned long long) a.repeat, (unsigned long long) a.warmup, bs,
		       ibytes);
	}
	if (prefix) {
		static const char *const ext[] = {".csv", ".jsonl", ".svg"};

		for (int x = 0; x < 3; x++) {
			char path[4200], via[PATH_MAX + 300], title[160];
			cs_err we = {0};
			guard_held oh;
			FILE *f;

			snprintf(path, sizeof(path), "%s%s", prefix, ext[x]);
			/* each file the sweep writes asks the guards first, as --trace does */
			guard_held_init(&oh);
			if ((rc = guard_output(NULL, NULL, path, 0, "index sweep", "--out", &oh, via,
					       sizeof(via), &we))) {
				exitc = cli_fail("index", &we);
				goto out;
			}
			f = guard_output_fopen(via, "index sweep", "--out", &we);
			guard_held_close(&oh);
			if (!f) {
				exitc = cli_fail("index", &we);
				goto out;
			}
			snprintf(title, sizeof(title), "%s: recall against QPS by %s (k=%zu)",
				 cv_index_kind(ix), kcol, a.qo.k);
			rc = x < 2 ? report_rows_write(rows, x ? REPORT_FMT_JSONL : REPORT_FMT_CSV, f, &we)
				   : report_front_svg(title, recalls, qmeds, (const char *const *) labels,
						      nvals, f, &we);
			if (fclose(f) && !rc)
				rc = cs_err_set(&we, CS_EXIT_INTERNAL, "cannot write");
			if (rc) {
				fprintf(stderr, "coldstudy index: --out %s: %s\n", path, we.msg);
				exitc = rc;
				goto out;
			}
		}
	}
out:
	for (size_t v = 0; labels && v < nvals; v++)
		free(labels[v]);
	free(labels);
	free(recalls);
	free(qmeds);
	free(lat);
	free(qps);
	free(ids);
	free(dists);
	free(gt);
	free(vals);
	free(rest);
	free(a.parts);
	json_decref(rows);
	cv_io_free(io);
	cv_dataset_free(qs);
	cv_dataset_free(base);
	cv_index_close(ix);
	guard_held_close(&held);
	return exitc;
}

int cmd_index(int argc, char **argv)
{
	if (argc < 2 || cli_wants_help(argc, argv)) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? CS_EXIT_USAGE : CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "build"))
		return index_build(argc - 1, argv + 1);
	if (!strcmp(argv[1], "query"))
		return index_query(argc - 1, argv + 1);
	if (!strcmp(argv[1], "sweep"))
		return index_sweep(argc - 1, argv + 1);
	if (!strcmp(argv[1], "verify"))
		return index_verify(argc - 1, argv + 1);
	if (!strcmp(argv[1], "insert"))
		return index_update(argc - 1, argv + 1, 1);
	if (!strcmp(argv[1], "delete"))
		return index_update(argc - 1, argv + 1, 0);
	return cli_usage("index", "unknown subcommand '%s' (build, query, sweep, verify, insert, delete)",
			 argv[1]);
}
