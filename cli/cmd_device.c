/*
 * cmd_device.c - `coldstudy device`: the device models (list, show), the
 * block device under a file, and a read trace (written by `index query
 * --trace`) replayed in virtual time; what each shows is harness/devices.c's.
 *
 *   coldstudy device list | show PROFILE | under FILE
 *   coldstudy device replay TRACE --device PROFILE [--seed S] [--json]
 */
#include "cmds.h"

#include "args.h"

#include "iocmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int device_replay(int argc, char **argv)
{
	const char *path = NULL, *profile = NULL;
	uint64_t seed = 1;
	int json = 0, rc;
	cs_err e = {0};

	{
		const cli_opt opts[] = {
			CLI_OPT_FLAG("--json", NULL, &json),
			CLI_OPT_STR("--device", &profile),
			{.name = "--seed", .kind = CLI_U64, .dst = &seed, .hi = UINT64_MAX,
			 .bad = "--seed wants a number, got '%s'"},
			CLI_OPT_END,
		};
		const cli_spec spec = {.verb = "device", .opts = opts, .first = 2, .pos = &path,
				       .maxpos = 1, .unknown = "replay: unexpected '%s'",
				       .extra = "replay: unexpected '%s'"};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!path || !profile)
		return cli_usage("device", "replay needs TRACE and --device PROFILE");
	if ((rc = harness_device_replay(path, profile, seed, json, stdout, &e)))
		return cli_fail("device", &e);
	return CS_EXIT_OK;
}

int cmd_device(int argc, char **argv)
{
	if (argc < 2 || cli_wants_help(argc, argv))
		return cli_help("device", stdout, argc < 2 ? CS_EXIT_USAGE : CS_EXIT_OK);
	if (!strcmp(argv[1], "list")) {
		int json = argc == 3 && !strcmp(argv[2], "--json");

		if (argc > 2 && !json)
			return cli_usage("device", argv[2][0] == '-' ? "unknown option '%s'"
								     : "list takes no argument ('%s')",
					 argv[2]);
		if (argc > 3)
			return cli_usage("device", "list takes only --json ('%s')", argv[3]);
		return harness_device_list_print(json, stdout);
	}
	if (!strcmp(argv[1], "show") || !strcmp(argv[1], "under")) {
		cs_err e = {0};
		int show = !strcmp(argv[1], "show");

		if (argc != 3)
			return cli_usage("device", show ? "show takes one PROFILE" : "under takes one FILE");
		if (show ? harness_device_show(argv[2], stdout, &e) : harness_device_under(argv[2], stdout, &e))
			return cli_fail("device", &e);
		return CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "replay"))
		return device_replay(argc, argv);
	return cli_usage("device", "unknown subcommand '%s'", argv[1]);
}
