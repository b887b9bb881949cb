/*
 * cmd_device.c - `coldstudy device`: the device models (list, show), the
 * block device under a file, and a read trace replayed in virtual time.
 *
 *   coldstudy device list | show PROFILE | under FILE
 *   coldstudy device replay TRACE --device PROFILE [--seed S] [--json]
 *
 * replay loads a cvtrace file (written by `index query --trace`) and runs
 * it through the device model in virtual time: reads of a stream wait for
 * its previous batch, streams run concurrently, the CPU gaps are kept.
 */
#include "cmds.h"

#include "args.h"

#include "coldvec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The real span of a trace: last completion minus first submission, in ms. */
static double trace_real_ms(const cv_trace *t)
{
	const cv_trace_rec *r = cv_trace_recs(t);
	size_t n = cv_trace_len(t);
	uint64_t lo = UINT64_MAX, hi = 0;

	for (size_t i = 0; i < n; i++) {
		if (r[i].submit_ns < lo)
			lo = r[i].submit_ns;
		if (r[i].complete_ns > hi)
			hi = r[i].complete_ns;
	}
	return n ? (double) (hi - lo) / 1e6 : 0.0;
}

static int device_replay(int argc, char **argv)
{
	const char *path = NULL, *profile = NULL;
	uint64_t seed = 1;
	int json = 0, rc, exitc = CS_EXIT_OK;
	cv_trace *t = NULL;
	cv_device *d = NULL;
	cv_sim_result r;
	cv_err e = {{0}};

	{
		const cli_opt opts[] = {
			CLI_OPT_FLAG("--json", NULL, &json),
			CLI_OPT_STR("--device", &profile),
			{.name = "--seed", .kind = CLI_U64, .dst = &seed, .hi = UINT64_MAX,
			 .bad = "--seed wants a number, got '%s'"},
			CLI_OPT_END,
		};
		size_t np = 0;
		const cli_spec spec = {.verb = "device", .opts = opts, .first = 2, .pos = &path, .maxpos = 1,
				       .npos = &np, .unknown = "replay: unexpected '%s'",
				       .extra = "replay: unexpected '%s'"};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!path || !profile)
		return cli_usage("device", "replay needs TRACE and --device PROFILE");
	rc = cv_device_new(profile, seed, &d, &e);
	if (rc) {
		fprintf(stderr, "coldstudy device: %s\n", e.msg);
		return CS_EXIT_BADINPUT;
	}
	rc = cv_trace_load(path, &t, &e);
	if (rc) {
		fprintf(stderr, "coldstudy device: %s\n", e.msg);
		exitc = rc == -EBADMSG ? CS_EXIT_BADINPUT : cli_exit_from_errno(rc);
		goto out;
	}
	rc = cv_device_simulate(d, t, seed, &r);
	if (rc) {
		exitc = cli_fail_errno("device", "simulate", rc);
		goto out;
	}
	if (json) {
		json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:f, s:f, s:f}",
				      "trace", path, "device", cv_device_name(d), "seed",
				      (json_int_t) seed, "records", (json_int_t) cv_trace_len(t),
				      "files", (json_int_t) cv_trace_nfiles(t), "dropped",
				      (json_int_t) cv_trace_dropped(t), "real_ms", trace_real_ms(t),
				      "wall_ms", r.wall_ms, "reads", (json_int_t) r.reads,
				      "read_ms_mean", r.read_ms_mean, "inflight_mean", r.inflight_mean,
				      "iops", r.iops);
		char *txt = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
						 JSON_REAL_PRECISION(10))
			      : NULL;

		if (!txt) {
			json_decref(o);
			fprintf(stderr, "coldstudy device: out of memory\n");
			exitc = CS_EXIT_INTERNAL;
			goto out;
		}
		printf("%s\n", txt);
		free(txt);
		json_decref(o);
	}
	else
		printf("trace          %s (%zu reads, %u files, %llu dropped)\n"
		       "device         %s (virtual time, seed %llu)\n"
		       "real span      %.3f ms\n"
		       "virtual wall   %.3f ms\n"
		       "reads          %llu\n"
		       "read ms mean   %.4f\n"
		       "in flight      %.3f (time-averaged)\n"
		       "IOPS           %.2f\n",
		       path, cv_trace_len(t), cv_trace_nfiles(t),
		       (unsigned long long) cv_trace_dropped(t), cv_device_name(d),
		       (unsigned long long) seed, trace_real_ms(t), r.wall_ms,
		       (unsigned long long) r.reads, r.read_ms_mean, r.inflight_mean, r.iops);
out:
	cv_trace_free(t);
	cv_device_free(d);
	return exitc;
}

int cmd_device(int argc, char **argv)
{
	if (argc < 2 || cli_wants_help(argc, argv)) {
		printf("usage: coldstudy device list [--json]\n"
		       "       coldstudy device show PROFILE    (a name from list, or probe:FILE)\n"
		       "       coldstudy device under FILE      (the block device and its counters)\n"
		       "       coldstudy device replay TRACE --device PROFILE [--seed S] [--json]\n"
		       "                                        (a cvtrace from `index query --trace`,\n"
		       "                                         replayed in virtual time)\n");
		return argc < 2 ? CS_EXIT_USAGE : CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "list")) {
		int json = argc == 3 && !strcmp(argv[2], "--json");
		json_t *arr = json ? json_array() : NULL;

		if (argc > 2 && !json)
			return cli_usage("device", argv[2][0] == '-' ? "unknown option '%s'"
								     : "list takes no argument ('%s')",
					 argv[2]);
		if (argc > 3)
			return cli_usage("device", "list takes only --json ('%s')", argv[3]);
		if (json && !arr)
			return CS_EXIT_INTERNAL;
		for (const char *const *p = cv_device_profiles(); *p; p++) {
			cv_device *d;
			cv_err e;

			if (cv_device_new(*p, 1, &d, &e))
				continue;
			if (json)
				json_array_append_new(arr, json_pack("{s:s, s:f, s:f}", "profile", *p,
								     "mean_ms_qd1", cv_device_mean_ms(d),
								     "iops_serial",
								     1000.0 / cv_device_mean_ms(d)));
			else
				printf("%-14s mean %8.3f ms at queue depth 1 (%.1f IOPS serial)\n", *p,
				       cv_device_mean_ms(d), 1000.0 / cv_device_mean_ms(d));
			cv_device_free(d);
		}
		if (json) {
			int bad = json_dumpf(arr, stdout, JSON_COMPACT) != 0;

			putchar('\n');
			json_decref(arr);
			return bad ? CS_EXIT_INTERNAL : CS_EXIT_OK;
		}
		printf("%-14s from a `coldstudy probe --json` result\n", "probe:FILE");
		return CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "show")) {
		cv_device *d;
		cv_err e = { { 0 } };
		char buf[2048];
		int rc;

		if (argc != 3)
			return cli_usage("device", "show takes one PROFILE");
		rc = cv_device_new(argv[2], 1, &d, &e);
		if (rc) {
			fprintf(stderr, "coldstudy device: %s\n", e.msg);
			return CS_EXIT_BADINPUT;
		}
		fputs(cv_device_describe(d, buf, sizeof(buf)), stdout);
		cv_device_free(d);
		return CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "under")) {
		cv_blkdev b;
		cv_blkstat s;
		cv_err e = { { 0 } };
		int rc;

		if (argc != 3)
			return cli_usage("device", "under takes one FILE");
		rc = cv_blkdev_for_path(argv[2], &b, &e);
		if (rc) {
			fprintf(stderr, "coldstudy device: %s\n", e.msg);
			return rc == -ENODEV ? CS_EXIT_REFUSED : cli_exit_from_errno(rc);
		}
		rc = cv_blkdev_stat(&b, &s);
		if (rc)
			return cli_fail_errno("device", b.stat_path, rc);
		printf("partition     %s\ndisk          %s\nstat          %s\nrotational    %d\n"
		       "read_ahead_kb %d\nscheduler     %s\nmodel         %s\n"
		       "reads         %llu (%llu sectors, %llu ms)\nio_ticks_ms   %llu\n",
		       b.part, b.disk, b.stat_path, b.rotational, b.read_ahead_kb, b.scheduler,
		       b.model[0] ? b.model : "-", (unsigned long long) s.reads,
		       (unsigned long long) s.read_sectors, (unsigned long long) s.read_ms,
		       (unsigned long long) s.io_ticks_ms);
		return CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "replay"))
		return device_replay(argc, argv);
	return cli_usage("device", "unknown subcommand '%s'", argv[1]);
}
