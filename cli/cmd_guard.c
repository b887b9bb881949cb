/*
 * cmd_guard.c - `coldstudy production list|add|remove`: the machine-wide
 * production registry every verb checks (guards/prodset.c), listed and
 * changed by guards/registry.c. Parsing only.
 */
#include "cmds.h"

#include "args.h"
#include "guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --host NAME, --database NAME: each appended to its list */
static int take_name(const char *val, void *dst)
{
	return json_array_append_new(dst, json_string(val)) ? -1 : 0;
}

static int production_add(int argc, char **argv)
{
	json_t *paths = json_array(), *hosts = json_array(), *dbs = json_array();
	const cli_opt opts[] = {CLI_OPT_FN("--host", hosts, take_name, NULL),
				CLI_OPT_FN("--database", dbs, take_name, NULL), CLI_OPT_END};
	const char **pos = calloc((size_t) argc, sizeof(*pos));
	size_t np = 0;
	const cli_spec spec = {.verb = argv[0], .opts = opts, .first = 2, .pos = pos,
			       .maxpos = (size_t) argc, .npos = &np};
	cs_err e = {0};
	int rc = pos && paths && hosts && dbs ? 0 : CS_EXIT_INTERNAL;

	if (!rc && !(rc = cli_args_parse(&spec, argc, argv))) {
		for (size_t i = 0; i < np; i++)
			json_array_append_new(paths, json_string(pos[i]));
		if (!np && !json_array_size(hosts) && !json_array_size(dbs))
			rc = cli_usage(argv[0], "add needs at least one PATH, --host or --database");
		else if (guard_registry_add_named(paths, hosts, dbs, stdout, &e))
			rc = cli_fail(argv[0], &e);
	}
	free(pos);
	json_decref(paths);
	json_decref(hosts);
	json_decref(dbs);
	return rc;
}

int cmd_production(int argc, char **argv)
{
	cs_err e = {0};

	if (cli_wants_help(argc, argv) || argc < 2)
		return cli_help("production", stdout, cli_wants_help(argc, argv) ? CS_EXIT_OK : CS_EXIT_USAGE);
	if (!strcmp(argv[1], "list")) {
		int as_json = argc == 3 && !strcmp(argv[2], "--json");

		if (argc > 3 || (argc == 3 && !as_json))
			return cli_usage(argv[0], "list takes only --json");
		return guard_registry_print(as_json, stdout, &e) ? cli_fail(argv[0], &e) : CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "add"))
		return production_add(argc, argv);
	if (!strcmp(argv[1], "remove")) {
		if (argc < 3)
			return cli_usage(argv[0], "remove needs a PATH or NAME");
		return guard_registry_remove_all(argv + 2, (size_t) argc - 2, stdout, &e) ? cli_fail(argv[0], &e)
											  : CS_EXIT_OK;
	}
	return cli_usage(argv[0], "unknown subcommand '%s' (list, add, remove)", argv[1]);
}
