/*
 * index_args.c - the options of `coldstudy index query` (which `index
 * sweep` takes too) and the number forms they are written in: SIZE
 * (bytes, K/M/G) and LIST (0,3,8-15).
 */
#include "cmd_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Parse an unsigned option into *out within [lo, hi]; 0 or a usage exit. */
int index_opt_uint(const char *name, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (cli_parse_u64(s, out) || *out < lo || *out > hi)
		return cli_usage("index", "%s wants a whole number in %llu..%llu, got '%s'", name,
				 (unsigned long long) lo, (unsigned long long) hi, s);
	return 0;
}

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

int index_query_args(int argc, char **argv, qargs *a)
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
			if ((rc = index_opt_uint(o, val, 1, UINT32_MAX, &a->nq)))
				return rc;
		} else if (!strcmp(o, "--repeat")) {
			if ((rc = index_opt_uint(o, val, 1, 1000, &a->repeat)))
				return rc;
		} else if (!strcmp(o, "--warmup")) {
			if ((rc = index_opt_uint(o, val, 0, 1000, &a->warmup)))
				return rc;
		} else if (!strcmp(o, "--k")) {
			if ((rc = index_opt_uint(o, val, 1, 10000, &v)))
				return rc;
			a->qo.k = v;
		} else if (!strcmp(o, "--ef-search")) {
			if ((rc = index_opt_uint(o, val, 1, 1000, &v)))
				return rc;
			a->qo.ef_search = (unsigned) v;
		} else if (!strcmp(o, "--search-probe")) {
			if ((rc = index_opt_uint(o, val, 1, 1u << 20, &v)))
				return rc;
			a->qo.search_probe = (unsigned) v;
		} else if (!strcmp(o, "--rescore-limit")) {
			if ((rc = index_opt_uint(o, val, 0, 1u << 24, &v)))
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
			if (index_parse_list(val, &a->parts, &a->nparts))
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

