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
 * query and sweep are cli/cmd_query.c's; how a query is
 * timed is harness/qmeasure.h's. The build writes DIR/DATA (the data
 * spec), so recall can be computed later without naming the data again,
 * and DIR/BUILD (its seconds) for sweep's rows (harness/ixnotes.c).
 */
#include "cmd_index.h"

#include "args.h"
#include "qmeasure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	cv_build_opts o;
	cs_err ce = {0};
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
	o.progress = !quiet && isatty(2);
	rc = harness_index_make(&(harness_build_args){.kind = kind, .data = data, .out = out,
				.metric_given = metric != NULL, .json = json}, &o, stdout, &ce);
	return rc ? cli_fail("index", &ce) : CS_EXIT_OK;
}

/* ---- verify, insert, delete ---- */

static int index_verify(int argc, char **argv)
{
	cs_err e = {0};

	if (argc != 2 || argv[1][0] == '-')
		return cli_usage("index", "verify takes one DIR");
	return harness_index_verify_verb(argv[1], stdout, &e) ? cli_fail("index", &e) : CS_EXIT_OK;
}

static int index_update(int argc, char **argv, int insert)
{
	const char *dir = NULL, *data = NULL, *idfile = NULL;
	uint64_t first = 0;
	cs_err ce = {0};
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

	if (insert)
		opts[2] = (cli_opt) CLI_OPT_END;
	snprintf(unknown, sizeof(unknown), "%s: unknown option '%%s'", argv[0]);
	snprintf(extra, sizeof(extra), "%s takes one DIR", argv[0]);
	if ((rc = cli_args_parse(&spec, argc, argv)))
		return rc;
	if (!dir || (insert && !data) || (!insert && !data == !idfile))
		return cli_usage("index", insert ? "insert needs DIR and --data SPEC"
						 : "delete needs DIR and one of --ids FILE or --data SPEC");
	if (harness_index_update(insert, dir, data, idfile, (uint32_t) first, stdout, &ce))
		return cli_fail("index", &ce);
	return CS_EXIT_OK;
}

int cmd_index(int argc, char **argv)
{
	if (argc < 2 || cli_wants_help(argc, argv))
		return cli_help("index", argc < 2 ? stderr : stdout, argc < 2 ? CS_EXIT_USAGE : CS_EXIT_OK);
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
