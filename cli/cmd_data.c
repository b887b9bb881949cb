/*
 * cmd_data.c - `coldstudy data`: what a dataset spec loads to, and exact
 * ground truth for a base and a query set (cached by content hash).
 */
#include "cmds.h"

#include "args.h"
#include "coldvec.h"
#include "guard.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: coldstudy data info SPEC [--json]\n"
	"       coldstudy data gt --base SPEC --queries SPEC --k K --metric l2|cosine|ip\n"
	"                         --out FILE.ivecs [--threads N] [--cache-dir DIR] [-q]\n\n"
	"SPEC: fashion-mnist[:train|:test], fvecs:PATH, ivecs:PATH, bvecs:PATH, idx:PATH,\n"
	"      npy:PATH, hdf5:PATH[:train|:test|:neighbors|:distances] (an ann-benchmarks\n"
	"      file), synth:n=N,d=D[,clusters=C][,seed=S][,sigma=X], each with an\n"
	"      optional row range [A:B] (e.g. fashion-mnist:test[0:100]).\n"
	"gt writes the exact K nearest base ids of every query (ties to the lower id)\n"
	"as ivecs; results are cached in DIR, $COLDSTUDY_CACHE or ~/.cache/coldstudy.\n"
	"On a terminal a progress line fitted to its width shows the queries done and an\n"
	"estimate of the time left (-q: none).\n"
	"--out and the cache folder are checked first: inside production they are refused.\n";

/* Print the loader's message and map rc to an exit code. */
static int data_fail(int rc, const cv_err *e)
{
	fprintf(stderr, "coldstudy data: %s\n", e->msg[0] ? e->msg : strerror(-rc));
	return cli_exit_from_errno(rc);
}

/* data info SPEC [--json]: shape, hash and value range. */
static int data_info(int argc, char **argv)
{
	const char *spec = NULL;
	cv_dataset *ds = NULL;
	cv_err e = {{0}};
	char hex[65];
	double mn = INFINITY, mx = -INFINITY, norms = 0;
	int json = 0, rc;

	{
		const cli_opt opts[] = {CLI_OPT_FLAG("--json", NULL, &json), CLI_OPT_END};
		size_t np = 0;
		const cli_spec cs = {.verb = "data", .opts = opts, .pos = &spec, .maxpos = 1, .npos = &np,
				     .unknown = "unknown option '%s'", .extra = "info takes one SPEC",
				     .dash_operand = 1};

		if ((rc = cli_args_parse(&cs, argc, argv)))
			return rc;
	}
	if (!spec)
		return cli_usage("data", "info needs a SPEC");
	rc = cv_dataset_load(spec, &ds, &e);
	if (rc)
		return data_fail(rc, &e);
	for (size_t i = 0; i < ds->n; i++) {
		const float *r = cv_row(ds, i);
		double s = 0;

		for (size_t j = 0; j < ds->d; j++) {
			mn = r[j] < mn ? r[j] : mn;
			mx = r[j] > mx ? r[j] : mx;
			s += (double) r[j] * r[j];
		}
		norms += sqrt(s);
	}
	cv_dataset_hash_hex(ds, hex);
	if (json) {
		json_t *o = json_pack("{s:s, s:I, s:I, s:s, s:f, s:f, s:f, s:s}", "spec", spec,
				      "n", (json_int_t) ds->n, "d", (json_int_t) ds->d, "sha256", hex,
				      "min", mn, "max", mx, "mean_norm", norms / (double) ds->n,
				      "dtype", "float32");
		char *s = o ? json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT) : NULL;

		if (!s) {
			json_decref(o);
			cv_dataset_free(ds);
			fprintf(stderr, "coldstudy data: out of memory\n");
			return CS_EXIT_INTERNAL;
		}
		printf("%s\n", s);
		free(s);
		json_decref(o);
	} else {
		/* The same names as --json's keys, so a reader of one can read the other. */
		printf("spec       %s\nn          %zu (rows)\nd          %zu (dimensions)\ndtype      float32\n"
		       "min        %g\nmax        %g\nmean_norm  %g\nsha256     %s\n",
		       spec, ds->n, ds->d, mn, mx, norms / (double) ds->n, hex);
	}
	cv_dataset_free(ds);
	return CS_EXIT_OK;
}

/* data gt --base --queries --k --metric --out [--threads] [--cache-dir]. */
static int data_gt(int argc, char **argv)
{
	const char *bspec = NULL, *qspec = NULL, *out = NULL, *metric = NULL, *cdir = NULL;
	uint64_t k = 0, threads = 0;
	cv_dataset *base = NULL, *q = NULL;
	cv_metric m;
	cv_err e = {{0}};
	int32_t *ids = NULL;
	int rc, hit = 0, ex, quiet = 0;
	uint64_t t0;
	guard_held outh;
	char outvia[PATH_MAX + 300];

	guard_held_init(&outh);
	for (int i = 1; i < argc; i += 2) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "-q") || !strcmp(o, "--quiet")) {
			quiet = 1;
			i--;
			continue;
		}
		if (!v)
			return cli_usage("data", "option '%s' needs a value or is unknown", o);
		if (!strcmp(o, "--base"))
			bspec = v;
		else if (!strcmp(o, "--queries"))
			qspec = v;
		else if (!strcmp(o, "--out"))
			out = v;
		else if (!strcmp(o, "--metric"))
			metric = v;
		else if (!strcmp(o, "--cache-dir"))
			cdir = v;
		else if (!strcmp(o, "--k")) {
			if (cli_parse_u64(v, &k) || k == 0 || k > (1u << 20))
				return cli_usage("data", "--k must be 1..1048576, not '%s'", v);
		} else if (!strcmp(o, "--threads")) {
			if (cli_parse_u64(v, &threads) || threads > 256)
				return cli_usage("data", "--threads must be 0..256, not '%s'", v);
		} else
			return cli_usage("data", "unknown option '%s'", o);
	}
	if (!bspec || !qspec || !out || !metric || !k)
		return cli_usage("data", "gt needs --base, --queries, --k, --metric and --out");
	if (cv_metric_parse(metric, &m))
		return cli_usage("data", "--metric must be l2, cosine or ip, not '%s'", metric);
	{
		/* --out and the cache (--cache-dir, COLDSTUDY_CACHE, ~/.cache): never inside production */
		cs_err ge = {0};
		const char *cvia;

		if ((ex = guard_output(NULL, NULL, out, 0, "data gt", "--out", &outh, outvia,
				       sizeof(outvia), &ge)) ||
		    (ex = guard_cache_dir(NULL, NULL, cdir, "data gt", &cvia, &ge))) {
			guard_held_close(&outh);
			return cli_fail("data", &ge);
		}
		cdir = cvia;
	}
	rc = cv_dataset_load(bspec, &base, &e);
	if (!rc)
		rc = cv_dataset_load(qspec, &q, &e);
	if (rc) {
		ex = data_fail(rc, &e);
		goto out;
	}
	if (base->d != q->d || k > base->n) {
		fprintf(stderr, "coldstudy data: %s has dimension %zu and %zu rows; %s has dimension %zu; k=%llu\n",
			bspec, base->d, base->n, qspec, q->d, (unsigned long long) k);
		ex = CS_EXIT_BADINPUT;
		goto out;
	}
	t0 = cs_mono_ns();
	/* a progress line on a terminal while it computes (-q: none) */
	cv_groundtruth_progress(!quiet && isatty(2));
	rc = cv_groundtruth_cached2(base, q, (size_t) k, m, (int) threads, cdir, &ids, NULL, &hit, &e);
	cv_groundtruth_progress(0);
	if (!rc)
		rc = cv_ivecs_write(outvia, ids, q->n, (size_t) k, &e);
	if (rc) {
		ex = data_fail(rc, &e);
		goto out;
	}
	fprintf(stderr, "ground truth: %zu queries x k=%llu (%s, %s kernels) %s in %.2f s -> %s\n",
		q->n, (unsigned long long) k, cv_metric_name(m), cv_simd_level(),
		hit ? "from cache" : "computed", (double) (cs_mono_ns() - t0) / 1e9, out);
	ex = CS_EXIT_OK;
out:
	guard_held_close(&outh);
	free(ids);
	cv_dataset_free(base);
	cv_dataset_free(q);
	return ex;
}

int cmd_data(int argc, char **argv)
{
	if (argc < 2 || cli_wants_help(argc, argv)) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? CS_EXIT_USAGE : CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "info"))
		return data_info(argc - 1, argv + 1);
	if (!strcmp(argv[1], "gt"))
		return data_gt(argc - 1, argv + 1);
	return cli_usage("data", "unknown subcommand '%s' (info, gt)", argv[1]);
}
