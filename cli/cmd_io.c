/*
 * cmd_io.c - `coldstudy cache`: the page cache of the block-I/O layer
 * (evict, residency, prewarm), each done by harness/cachecmd.c through
 * the guards. probe is cli/cmd_probe.c's, device cli/cmd_device.c's.
 *
 *   coldstudy cache evict FILE...
 *   coldstudy cache residency FILE... [--json]
 *   coldstudy cache prewarm FILE --blocks LIST|@FILE [--block-size 8192]
 */
#include "cmds.h"

#include "args.h"
#include "iocmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cache_evict(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage("cache", "evict needs at least one FILE");
	for (int i = 1; i < argc; i++) {
		cs_err e = {0};

		if (harness_cache_evict(argv[i], &e))
			return cli_fail("cache", &e);
	}
	return CS_EXIT_OK;
}

static int cache_residency(int argc, char **argv)
{
	const char **files = calloc((size_t) argc, sizeof(*files));
	int json = 0, rc;
	size_t n = 0;
	cs_err e = {0};

	if (!files)
		return CS_EXIT_INTERNAL;
	{
		const cli_opt opts[] = {CLI_OPT_FLAG("--json", NULL, &json), CLI_OPT_END};
		const cli_spec spec = {.verb = "cache", .opts = opts, .pos = files,
				       .maxpos = (size_t) argc, .npos = &n, .dash_operand = 1};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			goto out;
	}
	if (!n)
		rc = cli_usage("cache", "residency needs at least one FILE");
	else if ((rc = harness_cache_residency((char *const *) files, n, json, stdout, &e)))
		rc = cli_fail("cache", &e);
out:
	free(files);
	return rc;
}

static int cache_prewarm(int argc, char **argv)
{
	const char *file = NULL, *blocks = NULL;
	uint64_t bs = 8192;
	cs_err e = {0};
	int rc;

	{
		const cli_opt opts[] = {
			CLI_OPT_STR("--blocks", &blocks),
			{.name = "--block-size", .kind = CLI_U64, .dst = &bs, .lo = 1, .hi = 1u << 30,
			 .bad = "--block-size wants a byte count, got '%s'"},
			CLI_OPT_END,
		};
		const cli_spec spec = {.verb = "cache", .opts = opts, .pos = &file, .maxpos = 1,
				       .extra = "prewarm takes one FILE"};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!file || !blocks)
		return cli_usage("cache", "prewarm needs FILE and --blocks LIST");
	if (harness_cache_prewarm(file, blocks, (uint32_t) bs, stdout, &e))
		return cli_fail("cache", &e);
	return CS_EXIT_OK;
}

int cmd_cache(int argc, char **argv)
{
	if (argc < 2 || cli_wants_help(argc, argv))
		return cli_help("cache", stdout, argc < 2 ? CS_EXIT_USAGE : CS_EXIT_OK);
	if (!strcmp(argv[1], "evict"))
		return cache_evict(argc - 1, argv + 1);
	if (!strcmp(argv[1], "residency"))
		return cache_residency(argc - 1, argv + 1);
	if (!strcmp(argv[1], "prewarm"))
		return cache_prewarm(argc - 1, argv + 1);
	return cli_usage("cache", "unknown subcommand '%s'", argv[1]);
}
