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

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "4k", "8k", "16k" or a byte count. */
static int parse_bs(const char *s, uint32_t *out)
{
	uint64_t v;
	size_t n = strlen(s);

	if (n > 1 && (s[n - 1] == 'k' || s[n - 1] == 'K')) {
		char tmp[32];

		if (n >= sizeof(tmp))
			return -1;
		memcpy(tmp, s, n - 1);
		tmp[n - 1] = 0;
		if (cli_parse_u64(tmp, &v) || v > (1u << 20))
			return -1;
		v *= 1024;
	} else if (cli_parse_u64(s, &v) || v > (1u << 30)) {
		return -1;
	}
	if (!v || v % 512)
		return -1;
	*out = (uint32_t) v;
	return 0;
}

static int take_bs(const char *val, void *dst)
{
	return parse_bs(val, dst);
}

static int take_strategy(const char *val, void *dst)
{
	return cv_io_strategy_parse(val, dst) ? -1 : 0;
}

int cmd_probe(int argc, char **argv)
{
	const char *file = NULL, *devspec = NULL, *capspec = NULL;
	cv_probe_opts o = { .qd = 1, .bs = 4096, .reads = 1000, .strategy = CV_IO_URING, .seed = 1 };
	harness_throttle thr;
	harness_cap cap;
	uint64_t treads = 0, tbytes = 0;
	cv_probe_result r;
	cv_device *dev = NULL;
	harness_fio fr = { 0 };
	int json = 0, fio = 0, have_fio = 0, rc;
	cv_err e = { { 0 } };
	cs_err ce = {0};
	guard_held held;
	const char *shown = NULL;

	guard_held_init(&held);
	harness_throttle_init(&thr);
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
				   "--strategy wants uring, pread, direct or mmap, got '%s'"),
			CLI_OPT_STR("--device", &devspec),
			CLI_OPT_STR("--throttle", &capspec),
			CLI_OPT_END,
		};
		size_t np = 0;
		const cli_spec spec = {.verb = "probe", .opts = opts, .pos = &file, .maxpos = 1, .npos = &np,
				       .unknown = "unknown option '%s'", .extra = "one FILE only"};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!file)
		return cli_usage("probe", "FILE is required");
	if (devspec && capspec)
		return cli_usage("probe", "--device (a model) and --throttle (a real cap) exclude each other");
	if (capspec) {
		if (harness_cap_parse(capspec, &cap, &ce)) {
			fprintf(stderr, "coldstudy probe: --throttle: %s\n", ce.msg);
			return ce.code;
		}
	}
	{
		cs_err ge = {0};

		/* Load on production (a file or a device) is refused; the probe reads through the hold. */
		if ((rc = guard_existing(NULL, NULL, file, AT_FDCWD, "probe", "file", &held, &ge)))
			return cli_fail("probe", &ge);
		shown = file;
		file = guard_held_via(&held);
	}
	if (devspec) {
		rc = cv_device_new(devspec, o.seed, &dev, &e);
		if (rc) {
			fprintf(stderr, "coldstudy probe: %s\n", e.msg);
			return rc == -EINVAL || rc == -ENOENT ? CS_EXIT_BADINPUT : CS_EXIT_INTERNAL;
		}
		o.device = dev;
	}
	if ((rc = harness_probe(file, &o, capspec ? &cap : NULL, held.fd, shown, &thr, &r, &treads,
				&tbytes, &ce))) {
		fprintf(stderr, "coldstudy probe: %s\n", ce.msg);
		cv_device_free(dev);
		guard_held_close(&held);
		return rc;
	}
	if (fio) {
		if (dev || capspec)
			fprintf(stderr, "coldstudy probe: --fio runs on the real device; the %s applies to coldstudy only\n",
				dev ? "model" : "throttle");
		cs_err fe = {0};

		have_fio = harness_fio_run(file, &o, &fr, &fe) == 0;
		if (!have_fio)
			fprintf(stderr, "coldstudy probe: %s\n", fe.msg);
	}
	rc = harness_probe_print(&(harness_probe_report){.shown = shown, .o = &o, .r = &r,
				 .device = dev ? cv_device_name(dev) : NULL, .cap = capspec ? &cap : NULL,
				 .thr = &thr, .treads = treads, .tbytes = tbytes,
				 .fio = have_fio ? &fr : NULL}, json, stdout);
	if (rc)
		goto oom;
	json_decref(fr.out);
	cv_device_free(dev);
	guard_held_close(&held);
	return CS_EXIT_OK;
oom:
	json_decref(fr.out);
	cv_device_free(dev);
	guard_held_close(&held);
	fprintf(stderr, "coldstudy probe: out of memory\n");
	return CS_EXIT_INTERNAL;
}
