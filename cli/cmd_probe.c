/*
 * cmd_probe.c - `coldstudy probe`: random reads at a fixed queue depth
 * (fio-like), on a device model or under a real cap, with --fio beside
 * it; the measurements are harness/probe.h's.
 *
 *   coldstudy probe FILE --qd N --bs 4k|8k|16k --reads M [--strategy S]
 *                   [--device PROFILE | --throttle CAP] [--seed S] [--json] [--fio]
 */
#include "cmds.h"

#include "args.h"

#include "coldvec.h"
#include "guard.h"
#include "harness.h"
#include "probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "4k", "8k", "16k" or a byte count (args.c's SIZE): a multiple of 512 up to 1 GiB. */
static int take_bs(const char *val, void *dst)
{
	uint64_t v;

	if (cli_parse_size(val, &v) || !v || v % 512 || v > (1u << 30))
		return -1;
	*(uint32_t *) dst = (uint32_t) v;
	return 0;
}

static int take_strategy(const char *val, void *dst)
{
	return cv_io_strategy_parse(val, dst) ? -1 : 0;
}

int cmd_probe(int argc, char **argv)
{
	const char *file = NULL, *devspec = NULL, *capspec = NULL;
	cv_probe_opts o = { .qd = 1, .bs = 4096, .reads = 1000, .strategy = CV_IO_URING, .seed = 1 };
	int json = 0, fio = 0, rc;
	cs_err e = {0};
	if (cli_wants_help(argc, argv))
		return cli_help("probe", stdout, CS_EXIT_OK);
	{
		const cli_opt opts[] = {
			CLI_OPT_FLAG("--json", NULL, &json),
			CLI_OPT_FLAG("--fio", NULL, &fio),
			{.name = "--qd", .kind = CLI_UINT, .dst = &o.qd, .lo = 1, .hi = 4096,
			 .bad = "--qd wants 1..4096, got '%s'"},
			{.name = "--reads", .kind = CLI_U64, .dst = &o.reads, .lo = 1, .hi = UINT64_MAX,
			 .bad = "--reads wants a positive count, got '%s'"},
			{.name = "--seed", .kind = CLI_U64, .dst = &o.seed, .hi = UINT64_MAX,
			 .bad = "--seed wants a number, got '%s'"},
			CLI_OPT_FN("--bs", &o.bs, take_bs, "--bs wants 4k, 8k, 16k or a multiple of 512, got '%s'"),
			CLI_OPT_FN("--strategy", &o.strategy, take_strategy,
				   "--strategy wants uring, pread, direct, mmap or auto, got '%s'"),
			CLI_OPT_STR("--device", &devspec),
			CLI_OPT_STR("--throttle", &capspec),
			CLI_OPT_END,
		};
		const cli_spec spec = {.verb = "probe", .opts = opts, .pos = &file, .maxpos = 1,
				       .extra = "one FILE only"};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!file)
		return cli_usage("probe", "FILE is required");
	if (devspec && capspec)
		return cli_usage("probe", "--device (a model) and --throttle (a real cap) exclude each other");
	rc = harness_probe_verb(file, &(harness_probe_args){.device = devspec, .cap = capspec, .json = json,
				.fio = fio}, &o, stdout, stderr, &e);
	return rc ? cli_fail("probe", &e) : CS_EXIT_OK;
}
