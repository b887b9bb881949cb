/*
 * probe.c - the probe's measurements: cv_probe's random reads, under a
 * real cap where asked (the kernel's block throttle), and fio beside it:
 * the same reads (block size, queue depth, count, strategy) run by fio,
 * its figures read from its JSON.
 *
 * The probe times a read from its submission to its completion
 * (engine/io/probe.c), which is fio's total latency `lat` (slat + clat:
 * from the moment fio issues the I/O to its completion), not `clat` (from
 * the kernel taking it to completion); so the latencies compared are
 * lat_ns's, asked with --lat_percentiles=1.
 */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIO_OUT_MAX (8u << 20)

int harness_probe(const char *file, const cv_probe_opts *o, const harness_cap *cap, int fd,
		  const char *shown, harness_throttle *thr, cv_probe_result *r, uint64_t *treads,
		  uint64_t *tbytes, cs_err *e)
{
	cv_err ce = {{0}};
	int rc;

	*treads = *tbytes = 0;
	if (cap) {
		/* the whole disk under the held file; only the probe's readers join the cgroup */
		if (harness_throttle_begin(cap, fd, thr, e)) {
			char why[CS_ERR_MAX];

			snprintf(why, sizeof(why), "%s", e->msg);
			return cs_err_set(e, e->code, "%s: %s", shown, why);
		}
		if ((rc = harness_throttle_enter(thr))) {
			cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot join the throttle cgroup: %s", thr->dir,
				   strerror(-rc));
			harness_throttle_end(thr);
			return CS_EXIT_INTERNAL;
		}
	}
	rc = cv_probe(file, o, r, &ce);
	if (cap) {
		harness_throttle_leave(thr);
		if (!rc && harness_throttle_counters(thr, treads, tbytes) < 0)
			*treads = *tbytes = 0;
		harness_throttle_end(thr);
	}
	return rc ? cs_err_set(e, cs_exit_from_errno(rc), "%s", ce.msg) : 0;
}

/*
 * Run fio with the probe's settings.
 * With io_uring, fio also gets the probe's batching: every read that is
 * ready goes to the kernel in one io_uring_enter (iodepth_batch_submit =
 * complete_max = qd, complete_min = 1). fio's default submits each read
 * with its own system call (20,008 calls for 20,000 reads against the
 * probe's 625 at qd 32), which on a guest with costly system calls makes
 * fio, not the disk, the bottleneck.
 */
int harness_fio_run(const char *file, const cv_probe_opts *o, harness_fio *r, cs_err *e)
{
	char bs[32], qd[32], io_size[64], jobs[32], bsub[48], bmax[48];
	const char *argv[26];
	int pfd[2], status, argc = 0, rc = CS_EXIT_INTERNAL;
	pid_t pid;
	char *out = NULL;
	size_t len = 0;
	json_t *root = NULL, *rd;
	json_error_t err;
	int uring = o->strategy == CV_IO_URING;
	unsigned nj = uring ? 1 : o->qd;

	snprintf(bs, sizeof(bs), "--bs=%u", o->bs);
	snprintf(qd, sizeof(qd), "--iodepth=%u", uring ? o->qd : 1);
	snprintf(jobs, sizeof(jobs), "--numjobs=%u", nj);
	snprintf(io_size, sizeof(io_size), "--io_size=%llu",
		 (unsigned long long) ((o->reads + nj - 1) / nj) * o->bs);
	argv[argc++] = "fio";
	argv[argc++] = "--name=coldstudy-probe";
	argv[argc++] = "--rw=randread";
	argv[argc++] = bs;
	argv[argc++] = qd;
	argv[argc++] = jobs;
	argv[argc++] = io_size;
	argv[argc++] = uring ? "--ioengine=io_uring" : (o->strategy == CV_IO_MMAP ? "--ioengine=mmap" : "--ioengine=psync");
	argv[argc++] = (uring || o->strategy == CV_IO_DIRECT) ? "--direct=1" : "--direct=0";
	argv[argc++] = "--norandommap";
	argv[argc++] = "--randrepeat=0";
	if (uring) {
		snprintf(bsub, sizeof(bsub), "--iodepth_batch_submit=%u", o->qd);
		snprintf(bmax, sizeof(bmax), "--iodepth_batch_complete_max=%u", o->qd);
		argv[argc++] = bsub;
		argv[argc++] = "--iodepth_batch_complete_min=1";
		argv[argc++] = bmax;
	}
	argv[argc++] = "--group_reporting";
	argv[argc++] = "--lat_percentiles=1"; /* percentiles of lat, the probe's interval */
	argv[argc++] = "--output-format=json";
	argv[argc++] = "--filename";
	argv[argc++] = file;
	argv[argc] = NULL;
	if (pipe(pfd) < 0)
		return cs_err_set(e, cs_exit_from_errno(-errno), "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return cs_err_set(e, cs_exit_from_errno(-errno), "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(pfd[1], 1);
		if (devnull >= 0)
			dup2(devnull, 2);
		close(pfd[0]);
		close(pfd[1]);
		execvp("fio", (char *const *) argv);
		_exit(127);
	}
	close(pfd[1]);
	out = malloc(FIO_OUT_MAX + 1);
	if (out) {
		ssize_t k;

		while (len < FIO_OUT_MAX && (k = read(pfd[0], out + len, FIO_OUT_MAX - len)) != 0) {
			if (k < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			len += (size_t) k;
		}
		out[len] = 0;
	}
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		cs_err_set(e, CS_EXIT_INTERNAL, "fio failed (exit %d)%s",
			   WIFEXITED(status) ? WEXITSTATUS(status) : -1,
			   WIFEXITED(status) && WEXITSTATUS(status) == 127 ? ": not installed" : "");
		goto out;
	}
	if (!out) {
		cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	/* fio may print notes before its JSON */
	{
		char *brace = strchr(out, '{');

		root = brace ? json_loads(brace, JSON_DISABLE_EOF_CHECK, &err) : NULL;
	}
	rd = json_object_get(json_array_get(json_object_get(root, "jobs"), 0), "read");
	if (!rd) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "fio output: no jobs[0].read (line %d: %s)",
				root ? 0 : err.line, root ? "missing" : err.text);
		goto out;
	}
	r->iops = json_number_value(json_object_get(rd, "iops"));
	r->mibps = json_number_value(json_object_get(rd, "bw_bytes")) / 1048576.0;
	{
		json_t *lat = json_object_get(rd, "lat_ns"), *pct = json_object_get(lat, "percentile");

		if (!json_is_number(json_object_get(lat, "mean")) ||
		    !json_is_number(json_object_get(pct, "50.000000"))) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "fio output: no jobs[0].read.lat_ns percentiles");
			goto out;
		}
		r->lat_mean_ms = json_number_value(json_object_get(lat, "mean")) / 1e6;
		r->lat_p50_ms = json_number_value(json_object_get(pct, "50.000000")) / 1e6;
		r->lat_p99_ms = json_number_value(json_object_get(pct, "99.000000")) / 1e6;
		r->clat_mean_ms = json_number_value(json_object_get(json_object_get(rd, "clat_ns"), "mean")) / 1e6;
		r->slat_mean_ms = json_number_value(json_object_get(json_object_get(rd, "slat_ns"), "mean")) / 1e6;
	}
	r->out = json_incref(root);
	rc = 0;
out:
	json_decref(root);
	free(out);
	return rc;
}

