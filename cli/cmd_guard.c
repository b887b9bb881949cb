/*
 * cmd_guard.c - `coldstudy production list|add|remove`: the machine-wide
 * production registry every verb checks (guards/prodset.c). Parsing only.
 */
#include "cmds.h"

#include "guard.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char production_usage[] =
	"usage: coldstudy production list [--json]\n"
	"       coldstudy production add PATH|/dev/DEVICE... [--host NAME] [--database NAME]\n"
	"       coldstudy production remove PATH|NAME...\n\n"
	"The machine-wide production registry (COLDSTUDY_PRODUCTION_REGISTRY, default\n"
	"/var/lib/coldstudy/production.json). Every `study register` adds its production\n"
	"items; every verb that evicts, writes, creates, runs load on or opens a device\n"
	"refuses (exit 3) a target that is, lies inside, contains, hard-links into or\n"
	"lives on a registered item. Paths are resolved once (from the current directory\n"
	"here) and recorded by identity: device, inode, birth time, and a loop device's\n"
	"backing file, so a second spelling or a second loop device is the same item.\n";

int cmd_production(int argc, char **argv)
{
	cs_err e = {0};
	int rc = 0;

	if (cli_wants_help(argc, argv) || argc < 2) {
		printf("%s", production_usage);
		return argc < 2 && !cli_wants_help(argc, argv) ? CS_EXIT_USAGE : CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "list")) {
		json_t *items = NULL;
		size_t i;
		json_t *v;
		int as_json = argc == 3 && !strcmp(argv[2], "--json");

		if (argc > 3 || (argc == 3 && !as_json))
			return cli_usage(argv[0], "list takes only --json");
		if ((rc = guard_registry_list(&items, &e)))
			return cli_fail(argv[0], &e);
		if (as_json) {
			char *s = json_dumps(items, JSON_INDENT(2) | JSON_SORT_KEYS);

			printf("%s\n", s ? s : "[]");
			free(s);
		} else {
			printf("# %s: %zu item(s)\n", guard_registry_path(), json_array_size(items));
			json_array_foreach(items, i, v) {
				const json_t *id = json_object_get(v, "ident");

				printf("%-12s %s", json_string_value(json_object_get(v, "kind")),
				       json_string_value(json_object_get(v, "path")) ?:
					       json_string_value(json_object_get(v, "name")) ?: "?");
				if (id)
					printf("  (dev %lld:%lld ino %lld)",
					       (long long) json_integer_value(json_object_get(id, "dev_major")),
					       (long long) json_integer_value(json_object_get(id, "dev_minor")),
					       (long long) json_integer_value(json_object_get(id, "ino")));
				printf("  %s\n", json_string_value(json_object_get(v, "owner")) ?: "");
			}
		}
		json_decref(items);
		return CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "add")) {
		json_t *paths = json_array(), *hosts = json_array(), *dbs = json_array(), *doc, *items;

		for (int i = 2; i < argc; i++) {
			if (!strcmp(argv[i], "--host") && i + 1 < argc)
				json_array_append_new(hosts, json_string(argv[++i]));
			else if (!strcmp(argv[i], "--database") && i + 1 < argc)
				json_array_append_new(dbs, json_string(argv[++i]));
			else if (argv[i][0] == '-')
				rc = cli_usage(argv[0], "unknown option '%s'", argv[i]);
			else
				json_array_append_new(paths, json_string(argv[i]));
		}
		doc = json_pack("{s:{s:o, s:o, s:o}}", "production", "paths", paths, "hosts", hosts,
				"databases", dbs);
		if (rc || !doc) {
			json_decref(doc);
			return rc ? rc : CS_EXIT_INTERNAL;
		}
		if (!json_array_size(paths) && !json_array_size(hosts) && !json_array_size(dbs)) {
			json_decref(doc);
			return cli_usage(argv[0], "add needs at least one PATH, --host or --database");
		}
		rc = guard_production_resolve(doc, AT_FDCWD, "production add", &items, &e);
		if (!rc)
			rc = guard_registry_add(items, "production add", &e);
		if (!rc)
			printf("%zu item(s) registered in %s\n", json_array_size(items),
			       guard_registry_path());
		json_decref(items);
		json_decref(doc);
		return rc ? cli_fail(argv[0], &e) : CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "remove")) {
		size_t total = 0;

		if (argc < 3)
			return cli_usage(argv[0], "remove needs a PATH or NAME");
		for (int i = 2; i < argc; i++) {
			size_t n = 0;

			if ((rc = guard_registry_remove(argv[i], &n, &e)))
				return cli_fail(argv[0], &e);
			if (!n) {
				cs_err_set(&e, CS_EXIT_BADINPUT,
					   "%s: no registry item has this path or name (see 'coldstudy "
					   "production list')",
					   argv[i]);
				return cli_fail(argv[0], &e);
			}
			total += n;
		}
		printf("%zu item(s) removed from %s\n", total, guard_registry_path());
		return CS_EXIT_OK;
	}
	return cli_usage(argv[0], "unknown subcommand '%s' (list, add, remove)", argv[1]);
}
