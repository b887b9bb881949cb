/*
 * index_args.c - the options of `coldstudy index query` (which `index
 * sweep` takes too) and the number forms they are written in: SIZE
 * (bytes, K/M/G) and LIST (0,3,8-15).
 */
#include "cmd_index.h"

#include "args.h"

#include <stdlib.h>
#include <string.h>

/* LIST: comma-separated numbers and ranges A-B. */
int index_parse_list(const char *s, uint32_t **out, size_t *n)
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

static int take_mode(const char *val, void *dst)
{
	cv_query_opts *qo = dst;
	uint64_t v;

	if (!strcmp(val, "serial")) {
		qo->mode = CV_MODE_SERIAL;
		qo->fanout = 1;
	} else if (!strncmp(val, "fanout:", 7) && !cli_parse_u64(val + 7, &v) && v >= 1 && v <= 4096) {
		qo->mode = CV_MODE_FANOUT;
		qo->fanout = (unsigned) v;
	} else {
		return -1;
	}
	return 0;
}

static int take_merge(const char *val, void *dst)
{
	cv_query_opts *qo = dst;

	if (!strcmp(val, "stream"))
		qo->merge = CV_MERGE_STREAM;
	else if (!strcmp(val, "sort"))
		qo->merge = CV_MERGE_SORT;
	else
		return -1;
	return 0;
}

static int take_io(const char *val, void *dst)
{
	cv_query_opts *qo = dst;
	uint64_t v;

	if (!strcmp(val, "serial")) {
		qo->io_mode = CV_HIO_SERIAL;
	} else if (!strncmp(val, "concurrent:", 11) && !cli_parse_u64(val + 11, &v) && v >= 1 &&
		   v <= 4096) {
		qo->io_mode = CV_HIO_CONCURRENT;
		qo->io_depth = (unsigned) v;
	} else {
		return -1;
	}
	return 0;
}

static int take_strategy(const char *val, void *dst)
{
	return cv_io_strategy_parse(val, dst) ? -1 : 0;
}

static int take_buffers(const char *val, void *dst)
{
	uint64_t *b = dst;

	return cli_parse_size(val, b) || *b < 8192 ? -1 : 0;
}

static int take_parts(const char *val, void *dst)
{
	qargs *a = dst;

	free(a->parts);
	a->parts = NULL;
	return index_parse_list(val, &a->parts, &a->nparts);
}

int index_query_args(int argc, char **argv, qargs *a)
{
	size_t ndir = 0;
	int rc;

	memset(a, 0, sizeof(*a));
	cv_query_opts_default(&a->qo);
	a->strategy = CV_IO_AUTO;
	a->buffers = 128ull << 20;
	a->repeat = 1;
	const cli_opt opts[] = {
		CLI_OPT_FLAG("--cold", NULL, &a->cold),
		CLI_OPT_FLAG("--json", NULL, &a->json),
		CLI_OPT_FLAG("--quiet", "-q", &a->quiet),
		CLI_OPT_STR("--queries", &a->queries),
		CLI_OPT_STR("--data", &a->data),
		CLI_OPT_STR("--gt", &a->gt),
		CLI_OPT_STR("--device", &a->device),
		CLI_OPT_STR("--simulate", &a->simulate),
		CLI_OPT_STR("--throttle", &a->throttle),
		CLI_OPT_STR("--record-blocks", &a->record),
		CLI_OPT_STR("--trace", &a->tracefile),
		CLI_OPT_STR("--per-query", &a->per_query),
		CLI_OPT_NUM("--nq", CLI_U64, &a->nq, 1, UINT32_MAX),
		CLI_OPT_NUM("--repeat", CLI_U64, &a->repeat, 1, 1000),
		CLI_OPT_NUM("--warmup", CLI_U64, &a->warmup, 0, 1000),
		CLI_OPT_NUM("--k", CLI_SIZE_T, &a->qo.k, 1, 10000),
		CLI_OPT_NUM("--ef-search", CLI_UINT, &a->qo.ef_search, 1, 1000),
		CLI_OPT_NUM("--search-probe", CLI_UINT, &a->qo.search_probe, 1, 1u << 20),
		CLI_OPT_NUM("--rescore-limit", CLI_UINT, &a->qo.rescore_limit, 0, 1u << 24),
		CLI_OPT_FN("--mode", &a->qo, take_mode,
			   "--mode wants serial or fanout:C, got '%s'"),
		CLI_OPT_FN("--merge", &a->qo, take_merge,
			   "--merge wants stream or sort, got '%s'"),
		CLI_OPT_FN("--io", &a->qo, take_io,
			   "--io wants serial or concurrent:Q, got '%s'"),
		CLI_OPT_FN("--strategy", &a->strategy, take_strategy,
			   "--strategy wants auto, mmap, pread, direct or uring, got '%s'"),
		CLI_OPT_FN("--buffers", &a->buffers, take_buffers,
			   "--buffers wants a size of at least 8K, got '%s'"),
		CLI_OPT_FN("--partitions", a, take_parts,
			   "--partitions wants a list like 0,3,8-15, got '%s'"),
		CLI_OPT_END,
	};
	const cli_spec spec = {.verb = "index", .opts = opts, .pos = &a->dir, .maxpos = 1, .npos = &ndir,
			       .unknown = "query: unknown option '%s'", .missing = "%s needs a value",
			       .extra = "query takes one DIR", .missing_first = 1};

	if ((rc = cli_args_parse(&spec, argc, argv))) {
		free(a->parts);
		a->parts = NULL;
		return rc;
	}
	rc = 0;
	if (!a->dir || !a->queries)
		rc = cli_usage("index", "query needs DIR and --queries SPEC");
	else if (a->repeat > 1 && a->tracefile)
		rc = cli_usage("index", "--trace writes one pass: it takes --repeat 1");
	else if (a->throttle && !a->cold)
		rc = cli_usage("index", "--throttle caps the disk: it takes --cold (a warm query "
				 "reads the page cache, which no throttle sees)");
	else if (a->throttle && a->device)
		rc = cli_usage("index", "--device (a model) and --throttle (a real cap) exclude each other");
	if (rc) {
		free(a->parts);
		a->parts = NULL;
	}
	return rc;
}

