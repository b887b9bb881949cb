/*
 * cmd_probe.c - `coldstudy probe`: random reads at a fixed queue depth
 * (fio-like), on a device model or under a real cap, with --fio beside
 * it; the measurements are harness/probe.h's.
 *
 *   coldstudy probe FILE --qd N --bs 4k|8k|16k --reads M [--strategy S]
 *                   [--device PROFILE | --throttle CAP] [--seed S] [--json] [--fio]
 */
#include "cmds.h"

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
	uint64_t v;
	cv_err e = { { 0 } };
	cs_err ce = {0};
	guard_held held;
	const char *shown = NULL;

	guard_held_init(&held);
	harness_throttle_init(&thr);
	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy probe FILE --qd N --bs 4k|8k|16k --reads M [--strategy uring|pread|direct|mmap]\n"
		       "                       [--device PROFILE | --throttle CAP] [--seed S] [--json] [--fio]\n"
		       "  --device PROFILE  every read through a device model (coldstudy device list)\n"
		       "  --throttle CAP    a real cap: the kernel's block throttle on FILE's whole disk, the\n"
		       "                    probe's readers in a cgroup of their own (gp3-3000, gp3-16000,\n"
		       "                    gp3-80000, io2-80000, uncapped, or riops=N,rbps=SIZE); exit 5\n"
		       "                    where no cgroup controller is writable\n");
		return CS_EXIT_OK;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json"))
			json = 1;
		else if (!strcmp(a, "--fio"))
			fio = 1;
		else if (!strcmp(a, "--qd") && i + 1 < argc) {
			if (cli_parse_u64(argv[++i], &v) || !v || v > 4096)
				return cli_usage("probe", "--qd wants 1..4096, got '%s'", argv[i]);
			o.qd = (unsigned) v;
		} else if (!strcmp(a, "--reads") && i + 1 < argc) {
			if (cli_parse_u64(argv[++i], &v) || !v)
				return cli_usage("probe", "--reads wants a positive count, got '%s'", argv[i]);
			o.reads = v;
		} else if (!strcmp(a, "--seed") && i + 1 < argc) {
			if (cli_parse_u64(argv[++i], &o.seed))
				return cli_usage("probe", "--seed wants a number, got '%s'", argv[i]);
		} else if (!strcmp(a, "--bs") && i + 1 < argc) {
			if (parse_bs(argv[++i], &o.bs))
				return cli_usage("probe", "--bs wants 4k, 8k, 16k or a multiple of 512, got '%s'", argv[i]);
		} else if (!strcmp(a, "--strategy") && i + 1 < argc) {
			if (cv_io_strategy_parse(argv[++i], &o.strategy))
				return cli_usage("probe", "--strategy wants uring, pread, direct or mmap, got '%s'", argv[i]);
		} else if (!strcmp(a, "--device") && i + 1 < argc) {
			devspec = argv[++i];
		} else if (!strcmp(a, "--throttle") && i + 1 < argc) {
			capspec = argv[++i];
		} else if (a[0] == '-') {
			return cli_usage("probe", "unknown option '%s'", a);
		} else if (!file) {
			file = a;
		} else {
			return cli_usage("probe", "one FILE only");
		}
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
	if (json) {
		json_t *o2 = json_object();
		char *txt;

		if (!o2)
			goto oom;
		json_object_set_new(o2, "file", json_string(shown));
		json_object_set_new(o2, "strategy", json_string(cv_io_strategy_name(o.strategy)));
		json_object_set_new(o2, "qd", json_integer(o.qd));
		json_object_set_new(o2, "bs", json_integer(o.bs));
		json_object_set_new(o2, "reads", json_integer((json_int_t) r.reads));
		json_object_set_new(o2, "wall_s", json_real(r.wall_s));
		json_object_set_new(o2, "iops", json_real(r.iops));
		json_object_set_new(o2, "mibps", json_real(r.mibps));
		json_object_set_new(o2, "lat_mean_ms", json_real(r.lat_mean_ms));
		json_object_set_new(o2, "lat_p50_ms", json_real(r.lat_p50_ms));
		json_object_set_new(o2, "lat_p99_ms", json_real(r.lat_p99_ms));
		json_object_set_new(o2, "lat_max_ms", json_real(r.lat_max_ms));
		json_object_set_new(o2, "device", json_string(dev ? cv_device_name(dev) : "real"));
		if (capspec) {
			json_t *tj = harness_throttle_record(&thr, treads, tbytes);

			/* the probe's own count against the kernel's: what validate checks */
			json_object_set_new(tj, "engine_reads", json_integer((json_int_t) r.reads));
			json_object_set_new(tj, "iops_of_cap",
					    cap.riops ? json_real(r.iops / (double) cap.riops) : json_null());
			json_object_set_new(o2, "throttle", tj);
		}
		if (have_fio) {
			json_object_set_new(o2, "fio",
					    json_pack("{s:f, s:f, s:f, s:f, s:f, s:s, s:s, s:f, s:f}", "iops",
						      fr.iops, "mibps", fr.mibps, "lat_mean_ms",
						      fr.lat_mean_ms, "lat_p50_ms", fr.lat_p50_ms,
						      "lat_p99_ms", fr.lat_p99_ms, "latency", HARNESS_FIO_LATENCY,
						      "latency_why", HARNESS_FIO_LATENCY_WHY, "clat_mean_ms",
						      fr.clat_mean_ms, "slat_mean_ms", fr.slat_mean_ms));
			json_object_set_new(o2, "iops_ratio", json_real(fr.iops > 0 ? r.iops / fr.iops : 0));
			/* fio's own output, whole, last (probe:FILE reads the probe's figures above) */
			json_object_set(o2, "fio_output", fr.out);
		}
		txt = json_dumps(o2, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
		json_decref(o2);
		if (!txt)
			goto oom;
		printf("%s\n", txt);
		free(txt);
	} else {
		printf("probe %s: %s, qd %u, bs %u, %llu reads%s%s\n", shown, cv_io_strategy_name(o.strategy),
		       o.qd, o.bs, (unsigned long long) r.reads, dev ? ", device model " : "",
		       dev ? cv_device_name(dev) : "");
		if (capspec) {
			char of[64] = "";

			if (cap.riops)
				snprintf(of, sizeof(of), "; IOPS %.3f of the cap", r.iops / (double) cap.riops);
			printf("throttle %s on %u:%u (%s, %s): %llu reads counted by the kernel's "
			       "throttle%s\n",
			       cap.name, thr.maj, thr.min, thr.disk,
			       thr.v2 ? "cgroup v2 io.max" : "cgroup v1 blkio.throttle",
			       (unsigned long long) treads, of);
		}
		printf("%-12s %12s%s\n", "", "coldstudy", have_fio ? "          fio" : "");
#define ROW(name, a, b, fmt)                                                   \
	do {                                                                   \
		printf("%-12s " fmt, name, a);                                 \
		if (have_fio)                                                  \
			printf(" " fmt, b);                                    \
		printf("\n");                                                  \
	} while (0)
		ROW("IOPS", r.iops, fr.iops, "%12.1f");
		ROW("MiB/s", r.mibps, fr.mibps, "%12.2f");
		ROW("mean ms", r.lat_mean_ms, fr.lat_mean_ms, "%12.4f");
		ROW("p50 ms", r.lat_p50_ms, fr.lat_p50_ms, "%12.4f");
		ROW("p99 ms", r.lat_p99_ms, fr.lat_p99_ms, "%12.4f");
#undef ROW
		if (have_fio && fr.iops > 0)
			printf("%-12s %12.3f\n", "IOPS ratio", r.iops / fr.iops);
		if (have_fio)
			printf("fio's latencies are its %s (%.4f ms mean; clat alone %.4f ms): issue to "
			       "completion, as the probe times a read\n",
			       HARNESS_FIO_LATENCY, fr.lat_mean_ms, fr.clat_mean_ms);
	}
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
