/*
 * cmd_io.c - `coldstudy cache`: the page cache of the block-I/O layer
 * (evict, residency, prewarm). probe is cli/cmd_probe.c's, device
 * cli/cmd_device.c's.
 *
 *   coldstudy cache evict FILE...
 *   coldstudy cache residency FILE... [--json]
 *   coldstudy cache prewarm FILE --blocks LIST|@FILE [--block-size 8192]
 */
#include "cmds.h"

#include "args.h"

#include "coldvec.h"
#include "guard.h"
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCKS_MAX (1u << 24)

static int cache_evict(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage("cache", "evict needs at least one FILE");
	for (int i = 1; i < argc; i++) {
		guard_held h;
		cs_err e = {0};
		int rc;

		/* Production's cache is never evicted: resolve once, check, evict through the hold. */
		if ((rc = guard_existing(NULL, NULL, argv[i], AT_FDCWD, "cache evict", "file", &h, &e)))
			return cli_fail("cache", &e);
		rc = cv_cache_evict(guard_held_via(&h));
		guard_held_close(&h);
		if (rc)
			return cli_fail_errno("cache", argv[i], rc);
	}
	return CS_EXIT_OK;
}

static int cache_residency(int argc, char **argv)
{
	int json = 0, nfiles = 0, rc = CS_EXIT_OK;
	json_t *arr = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (argv[i][0] == '-' && argv[i][1])
			return cli_usage("cache", "unknown option '%s'", argv[i]);
		else
			nfiles++;
	}
	if (!nfiles)
		return cli_usage("cache", "residency needs at least one FILE");
	if (json) {
		arr = json_array();
		if (!arr)
			return CS_EXIT_INTERNAL;
	} else {
		printf("%10s %10s %9s %-9s %s\n", "RES", "PAGES", "FRACTION", "METHOD", "FILE");
	}
	for (int i = 1; i < argc; i++) {
		cv_residency r;
		double frac;
		int e;

		if (!strcmp(argv[i], "--json"))
			continue;
		{
			/* the file a user names, symlinks followed once; measured through the hold */
			guard_held h;
			cs_err ge = {0};

			if ((e = guard_hold(argv[i], AT_FDCWD, &h, &ge))) {
				rc = cli_fail("cache", &ge);
				goto out;
			}
			e = h.exists ? cv_cache_residency(guard_held_via(&h), &r) : -ENOENT;
			guard_held_close(&h);
		}
		if (e) {
			if (e == -EACCES)
				fprintf(stderr,
					"coldstudy cache: %s: residency refused: no cachestat and the file cannot be opened for writing, so mincore would report every page resident\n",
					argv[i]);
			else
				fprintf(stderr, "coldstudy cache: %s: %s\n", argv[i], strerror(-e));
			rc = cli_exit_from_errno(e);
			goto out;
		}
		frac = r.pages ? (double) r.resident / (double) r.pages : 0.0;
		if (json) {
			json_t *o = json_pack("{s:s, s:I, s:I, s:f, s:s}", "file", argv[i], "pages",
					      (json_int_t) r.pages, "resident", (json_int_t) r.resident,
					      "fraction", frac, "method", r.method);

			if (!o || json_array_append_new(arr, o)) {
				rc = CS_EXIT_INTERNAL;
				goto out;
			}
		} else {
			printf("%10llu %10llu %9.4f %-9s %s\n", (unsigned long long) r.resident,
			       (unsigned long long) r.pages, frac, r.method, argv[i]);
		}
	}
	if (json) {
		char *s = json_dumps(arr, JSON_INDENT(2));

		if (!s) {
			rc = CS_EXIT_INTERNAL;
			goto out;
		}
		printf("%s\n", s);
		free(s);
	}
out:
	json_decref(arr);
	return rc;
}

/* Parse "1,2,3" or "@FILE" (numbers separated by commas or white space). */
static int parse_blocks(const char *spec, uint64_t **out, size_t *n)
{
	char *text = NULL;
	const char *p;
	uint64_t *v = NULL;
	size_t cap = 0, len = 0;
	int rc = CS_EXIT_BADINPUT;

	*out = NULL;
	*n = 0;
	if (spec[0] == '@') {
		cs_err e;
		size_t tl;

		if (cs_read_file(spec + 1, 64u << 20, &text, &tl, &e))
			return cli_fail("cache", &e);
		p = text;
	} else {
		p = spec;
	}
	while (*p) {
		char *end;
		unsigned long long x;

		while (*p == ',' || *p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
			p++;
		if (!*p)
			break;
		if (*p < '0' || *p > '9') {
			fprintf(stderr, "coldstudy cache: %s: byte %zu: expected a block number\n",
				spec[0] == '@' ? spec + 1 : "--blocks",
				(size_t) (p - (spec[0] == '@' ? text : spec)));
			goto out;
		}
		errno = 0;
		x = strtoull(p, &end, 10);
		if (errno) {
			fprintf(stderr, "coldstudy cache: block number out of range\n");
			goto out;
		}
		if (len == cap) {
			uint64_t *nv;

			if (cap >= BLOCKS_MAX) {
				fprintf(stderr, "coldstudy cache: more than %u blocks\n", BLOCKS_MAX);
				goto out;
			}
			cap = cap ? cap * 2 : 256;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = CS_EXIT_INTERNAL;
				goto out;
			}
			v = nv;
		}
		v[len++] = x;
		p = end;
	}
	*out = v;
	*n = len;
	v = NULL;
	rc = 0;
out:
	free(v);
	free(text);
	return rc;
}

static int cache_prewarm(int argc, char **argv)
{
	const char *file = NULL, *blocks = NULL;
	uint64_t bs = 8192, *list = NULL;
	size_t n = 0;
	int rc;

	{
		const cli_opt opts[] = {
			CLI_OPT_STR("--blocks", &blocks),
			{.name = "--block-size", .kind = CLI_U64, .dst = &bs, .lo = 1, .hi = 1u << 30,
			 .bad = "--block-size wants a byte count, got '%s'"},
			CLI_OPT_END,
		};
		size_t np = 0;
		const cli_spec spec = {.verb = "cache", .opts = opts, .pos = &file, .maxpos = 1, .npos = &np,
				       .unknown = "unknown option '%s'", .extra = "prewarm takes one FILE"};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!file || !blocks)
		return cli_usage("cache", "prewarm needs FILE and --blocks LIST");
	rc = parse_blocks(blocks, &list, &n);
	if (rc)
		return rc;
	{
		guard_held h;
		cs_err e = {0};

		if ((rc = guard_existing(NULL, NULL, file, AT_FDCWD, "cache prewarm", "file", &h, &e))) {
			free(list);
			return cli_fail("cache", &e);
		}
		rc = cv_cache_prewarm(guard_held_via(&h), list, n, (uint32_t) bs);
		guard_held_close(&h);
	}
	free(list);
	if (rc == -ERANGE) {
		fprintf(stderr, "coldstudy cache: %s: a block in the list lies past the end of the file\n", file);
		return CS_EXIT_BADINPUT;
	}
	if (rc)
		return cli_fail_errno("cache", file, rc);
	printf("prewarmed %zu blocks of %llu bytes from %s\n", n, (unsigned long long) bs, file);
	return CS_EXIT_OK;
}

int cmd_cache(int argc, char **argv)
{
	if (argc < 2 || cli_wants_help(argc, argv)) {
		printf("usage: coldstudy cache evict FILE...\n"
		       "       coldstudy cache residency FILE... [--json]\n"
		       "       coldstudy cache prewarm FILE --blocks LIST|@FILE [--block-size 8192]\n");
		return argc < 2 ? CS_EXIT_USAGE : CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "evict"))
		return cache_evict(argc - 1, argv + 1);
	if (!strcmp(argv[1], "residency"))
		return cache_residency(argc - 1, argv + 1);
	if (!strcmp(argv[1], "prewarm"))
		return cache_prewarm(argc - 1, argv + 1);
	return cli_usage("cache", "unknown subcommand '%s'", argv[1]);
}
