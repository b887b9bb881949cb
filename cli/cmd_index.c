/*
 * cmd_index.c - `coldstudy index`: build an index of any kind, query it
 * (warm or cold, serial or fanned out, on any read strategy and device
 * model) with recall and the read counters, verify it, and apply live
 * inserts and deletes where the kind takes them.
 *
 *   index build --kind hnsw|paged|phnsw|hfresh --data SPEC --metric M --out DIR [...]
 *   index query DIR --queries SPEC [...] [--json]
 *   index sweep DIR --queries SPEC --ef-search LIST | --search-probe LIST [...]
 *   index verify DIR
 *   index insert DIR --data SPEC [--first-id N]
 *   index delete DIR --ids FILE | --data SPEC [--first-id N]
 *
 * query is cli/cmd_query.c's and sweep cli/cmd_sweep.c's; how a query is
 * timed is harness/qmeasure.h's. The build writes DIR/DATA (the data
 * spec), so recall can be computed later without naming the data again,
 * and DIR/BUILD (its seconds) for sweep's rows (harness/ixnotes.c).
 */
#include "cmd_index.h"

#include "args.h"
#include "guard.h"
#include "qmeasure.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Print "coldstudy index: " and e's message (else strerror) for an engine -errno; its exit code. */
static int index_fail(int rc, const cv_err *e)
{
	fprintf(stderr, "coldstudy index: %s\n", e && e->msg[0] ? cli_spell(e->msg) : strerror(-rc));
	return cli_exit_from_errno(rc);
}

/* ---- build ---- */

static int take_rng_factor(const char *val, void *dst)
{
	double d;

	if (cli_parse_double(val, &d) || d <= 0 || d > 100)
		return -1;
	*(double *) dst = d;
	return 0;
}

static int index_build(int argc, char **argv)
{
	const char *kind = NULL, *data = NULL, *out = NULL, *metric = NULL;
	char data_abs[sizeof(((cv_dataset *) 0)->spec)];
	guard_held held;
	cv_build_opts o;
	cv_dataset *ds = NULL;
	cv_err e = {{0}};
	cs_err ce = {0};
	double secs;
	int rc, json = 0, quiet = 0;

	cv_build_opts_default(&o);
	const cli_opt opts[] = {
		CLI_OPT_FLAG("--json", NULL, &json),
		CLI_OPT_FLAG("--quiet", "-q", &quiet),
		CLI_OPT_STR("--kind", &kind),
		CLI_OPT_STR("--data", &data),
		CLI_OPT_STR("--out", &out),
		CLI_OPT_STR("--metric", &metric),
		CLI_OPT_NUM("--m", CLI_UINT, &o.m, 2, 100),
		CLI_OPT_NUM("--ef-construction", CLI_UINT, &o.ef_construction, 4, 1000),
		CLI_OPT_NUM("--partitions", CLI_UINT, &o.partitions, 1, 4096),
		CLI_OPT_NUM("--threads", CLI_UINT, &o.threads, 0, 1024),
		CLI_OPT_NUM("--seed", CLI_U64, &o.seed, 0, UINT64_MAX),
		CLI_OPT_NUM("--max-posting-kb", CLI_UINT, &o.max_posting_kb, 8, 1024),
		CLI_OPT_NUM("--code-bits", CLI_UINT, &o.code_bits, 1, 4),
		CLI_OPT_NUM("--replicas", CLI_UINT, &o.replicas, 1, 10),
		CLI_OPT_FN("--rng-factor", &o.rng_factor, take_rng_factor,
			   "--rng-factor wants a number in (0, 100]"),
		CLI_OPT_END,
	};
	const cli_spec spec = {.verb = "index", .opts = opts, .unknown = "build: unknown argument '%s'",
			       .missing = "%s needs a value", .extra = "build: unknown argument '%s'",
			       .missing_first = 1};

	if ((rc = cli_args_parse(&spec, argc, argv)))
		return rc;
	if (!kind || !data || !out || (!metric && strncmp(data, "hdf5:", 5)))
		return cli_usage("index", "build needs --kind, --data, --metric and --out");
	if (strcmp(kind, "hnsw") && strcmp(kind, "paged") && strcmp(kind, "phnsw") &&
	    strcmp(kind, "hfresh"))
		return cli_usage("index", "--kind wants hnsw, paged, phnsw or hfresh, got '%s'", kind);
	if (metric && cv_metric_parse(metric, &o.metric))
		return cli_usage("index", "--metric wants l2, cosine or ip, got '%s'", metric);
	if ((rc = harness_hdf5_metric(data, "--data", metric ? "--metric" : NULL, &o.metric, &ce)))
		return cli_fail("index", &ce);
	/* DATA keeps the spec resolved, so a query from any directory finds the same file */
	if ((rc = cv_dataset_spec_resolve(data, data_abs, sizeof(data_abs), &e)))
		return index_fail(rc, &e);
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
		return index_fail(rc, &e);
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
	rc = harness_index_build(kind, ds, &o, guard_held_via(&held), data_abs, &secs, &ce);
	guard_held_close(&held);
	if (rc) {
		cv_dataset_free(ds);
		return cli_fail("index", &ce);
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

/* ---- verify, insert, delete ---- */

static int index_verify(int argc, char **argv)
{
	cv_err e = {{0}};
	int rc;

	if (argc != 2 || argv[1][0] == '-')
		return cli_usage("index", "verify takes one DIR");
	rc = cv_index_verify(argv[1], &e);
	if (rc)
		return index_fail(rc, &e);
	printf("%s: %s\n", argv[1], e.msg[0] ? e.msg : "ok");
	return CS_EXIT_OK;
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

	cli_opt opts[] = {
		CLI_OPT_STR("--data", &data),
		CLI_OPT_NUM("--first-id", CLI_U64, &first, 0, UINT32_MAX),
		CLI_OPT_STR("--ids", &idfile), /* delete's only */
		CLI_OPT_END,
	};
	char unknown[64], extra[64];
	size_t ndir = 0;
	const cli_spec spec = {.verb = "index", .opts = opts, .pos = &dir, .maxpos = 1, .npos = &ndir,
			       .unknown = unknown, .missing = "%s needs a value", .extra = extra,
			       .missing_first = 1};

	guard_held_init(&held);
	if (insert)
		opts[2] = (cli_opt) CLI_OPT_END;
	snprintf(unknown, sizeof(unknown), "%s: unknown option '%%s'", argv[0]);
	snprintf(extra, sizeof(extra), "%s takes one DIR", argv[0]);
	if ((rc = cli_args_parse(&spec, argc, argv)))
		return rc;
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
			return index_fail(rc, &e);
		}
	}
	if (insert) {
		rc = cv_index_insert(dir, ds, (uint32_t) first, &e);
		n = ds->n;
	} else {
		if (idfile) {
			cs_err ie = {0};

			if ((rc = harness_ids_read(idfile, &ids, &n, &ie))) {
				cv_dataset_free(ds);
				guard_held_close(&held);
				return cli_fail("index", &ie);
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
		return index_fail(rc, &e);
	printf("%s %zu rows %s %s\n", insert ? "inserted" : "deleted", n, insert ? "into" : "from",
	       shown);
	return CS_EXIT_OK;
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
