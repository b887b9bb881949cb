/*
 * devices.c - what `coldstudy device` shows: the device models (a line
 * each, or JSON), the block device under a file with its counters, and a
 * read trace replayed in virtual time (reads of a stream wait for its
 * previous batch, streams run concurrently, the CPU gaps are kept).
 * Error convention: 0 or an exit code with e filled (one line).
 */
#include "iocmd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int harness_device_list_print(int json, FILE *out)
{
	json_t *arr = json ? json_array() : NULL;
	int bad;

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
			fprintf(out, "%-14s mean %8.3f ms at queue depth 1 (%.1f IOPS serial)\n",
			        *p, cv_device_mean_ms(d), 1000.0 / cv_device_mean_ms(d));
		cv_device_free(d);
	}
	if (!json) {
		fprintf(out, "%-14s from a `coldstudy probe --json` result\n", "probe:FILE");
		return CS_EXIT_OK;
	}
	bad = json_dumpf(arr, out, JSON_COMPACT) != 0;
	fputc('\n', out);
	json_decref(arr);
	return bad ? CS_EXIT_INTERNAL : CS_EXIT_OK;
}

int harness_device_show(const char *profile, FILE *out, cs_err *e)
{
	cv_device *d;
	cv_err ce = {{0}};
	char buf[2048];

	if (cv_device_new(profile, 1, &d, &ce))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s", ce.msg);
	fputs(cv_device_describe(d, buf, sizeof(buf)), out);
	cv_device_free(d);
	return CS_EXIT_OK;
}

int harness_device_under(const char *path, FILE *out, cs_err *e)
{
	cv_blkdev b;
	cv_blkstat s;
	cv_err ce = {{0}};
	int rc;

	if ((rc = cv_blkdev_for_path(path, &b, &ce)))
		return cs_err_set(e, rc == -ENODEV ? CS_EXIT_REFUSED : cs_exit_from_errno(rc), "%s",
		                  ce.msg);
	if ((rc = cv_blkdev_stat(&b, &s)))
		return cs_err_set(e, cs_exit_from_errno(rc), "%s: %s", b.stat_path, strerror(-rc));
	fprintf(out,
	        "partition     %s\ndisk          %s\nstat          %s\nrotational    %d\n"
	        "read_ahead_kb %d\nscheduler     %s\nmodel         %s\n"
	        "reads         %llu (%llu sectors, %llu ms)\nio_ticks_ms   %llu\n",
	        b.part, b.disk, b.stat_path, b.rotational, b.read_ahead_kb, b.scheduler,
	        b.model[0] ? b.model : "-", (unsigned long long) s.reads,
	        (unsigned long long) s.read_sectors, (unsigned long long) s.read_ms,
	        (unsigned long long) s.io_ticks_ms);
	return CS_EXIT_OK;
}

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

int harness_device_replay(const char *path, const char *profile, uint64_t seed, int json, FILE *out,
                          cs_err *e)
{
	cv_trace *t = NULL;
	cv_device *d = NULL;
	cv_sim_result r;
	cv_err ce = {{0}};
	int rc;

	if (cv_device_new(profile, seed, &d, &ce))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s", ce.msg);
	if ((rc = cv_trace_load(path, &t, &ce))) {
		rc = cs_err_set(e, rc == -EBADMSG ? CS_EXIT_BADINPUT : cs_exit_from_errno(rc), "%s",
		                ce.msg);
		goto out;
	}
	if ((rc = cv_device_simulate(d, t, seed, &r))) {
		rc = cs_err_set(e, cs_exit_from_errno(rc), "simulate: %s", strerror(-rc));
		goto out;
	}
	if (json) {
		json_t *o = json_pack(
		    "{s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:f, s:f, s:f}", "trace", path,
		    "device", cv_device_name(d), "seed", (json_int_t) seed, "records",
		    (json_int_t) cv_trace_len(t), "files", (json_int_t) cv_trace_nfiles(t),
		    "dropped", (json_int_t) cv_trace_dropped(t), "real_ms", trace_real_ms(t),
		    "wall_ms", r.wall_ms, "reads", (json_int_t) r.reads, "read_ms_mean",
		    r.read_ms_mean, "inflight_mean", r.inflight_mean, "iops", r.iops);
		char *txt =
		    o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10))
		      : NULL;

		json_decref(o);
		if (!txt) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
		fprintf(out, "%s\n", txt);
		free(txt);
	} else {
		fprintf(out,
		        "trace          %s (%zu reads, %u files, %llu dropped)\n"
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
	}
	rc = CS_EXIT_OK;
out:
	cv_trace_free(t);
	cv_device_free(d);
	return rc;
}
