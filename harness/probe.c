/*
 * probe.c - the probe's measurements: cv_probe's random reads, under a
 * real cap where asked (the kernel's block throttle), and fio beside it:
 * the same reads (block size, queue depth, count, strategy) run by fio,
 * its figures read from its JSON; and the probe's output, the two side by
 * side (harness_probe_print).
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

/* The probe's figures beside fio's: text rows, or one JSON object. */
int harness_probe_print(const harness_probe_report *p, int json, FILE *out)
{
	const harness_fio *fio = p->fio;

	if (json) {
		json_t *o2 = json_object();
		char *txt;

		if (!o2)
			return -ENOMEM;
		json_object_set_new(o2, "file", json_string(p->shown));
		json_object_set_new(o2, "strategy", json_string(cv_io_strategy_name(p->o->strategy)));
		json_object_set_new(o2, "qd", json_integer(p->o->qd));
		json_object_set_new(o2, "bs", json_integer(p->o->bs));
		json_object_set_new(o2, "reads", json_integer((json_int_t) p->r->reads));
		json_object_set_new(o2, "wall_s", json_real(p->r->wall_s));
		json_object_set_new(o2, "iops", json_real(p->r->iops));
		json_object_set_new(o2, "mibps", json_real(p->r->mibps));
		json_object_set_new(o2, "lat_mean_ms", json_real(p->r->lat_mean_ms));
		json_object_set_new(o2, "lat_p50_ms", json_real(p->r->lat_p50_ms));
		json_object_set_new(o2, "lat_p99_ms", json_real(p->r->lat_p99_ms));
		json_object_set_new(o2, "lat_max_ms", json_real(p->r->lat_max_ms));
		json_object_set_new(o2, "device", json_string(p->device ? p->device : "real"));
		if (p->cap) {
			json_t *tj = harness_throttle_record(p->thr, p->treads, p->tbytes);

			/* the probe's own count against the kernel's: what validate checks */
			json_object_set_new(tj, "engine_reads", json_integer((json_int_t) p->r->reads));
			json_object_set_new(tj, "iops_of_cap",
					    p->cap->riops ? json_real(p->r->iops / (double) p->cap->riops) : json_null());
			json_object_set_new(o2, "throttle", tj);
		}
		if (fio) {
			json_object_set_new(o2, "fio",
					    json_pack("{s:f, s:f, s:f, s:f, s:f, s:s, s:s, s:f, s:f}", "iops",
						      fio->iops, "mibps", fio->mibps, "lat_mean_ms",
						      fio->lat_mean_ms, "lat_p50_ms", fio->lat_p50_ms,
						      "lat_p99_ms", fio->lat_p99_ms, "latency", HARNESS_FIO_LATENCY,
						      "latency_why", HARNESS_FIO_LATENCY_WHY, "clat_mean_ms",
						      fio->clat_mean_ms, "slat_mean_ms", fio->slat_mean_ms));
			json_object_set_new(o2, "iops_ratio", json_real(fio->iops > 0 ? p->r->iops / fio->iops : 0));
			/* fio's own output, whole, last (probe:FILE reads the probe's figures above) */
			json_object_set(o2, "fio_output", fio->out);
		}
		txt = json_dumps(o2, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
		json_decref(o2);
		if (!txt)
			return -ENOMEM;
		fprintf(out, "%s\n", txt);
		free(txt);
	} else {
		fprintf(out, "probe %s: %s, qd %u, bs %u, %llu reads%s%s\n", p->shown, cv_io_strategy_name(p->o->strategy),
		       p->o->qd, p->o->bs, (unsigned long long) p->r->reads, p->device ? ", device model " : "",
		       p->device ? p->device : "");
		if (p->cap) {
			char of[64] = "";

			if (p->cap->riops)
				snprintf(of, sizeof(of), "; IOPS %.3f of the cap", p->r->iops / (double) p->cap->riops);
			fprintf(out, "throttle %s on %u:%u (%s, %s): %llu reads counted by the kernel's "
			       "throttle%s\n",
			       p->cap->name, p->thr->maj, p->thr->min, p->thr->disk,
			       p->thr->v2 ? "cgroup v2 io.max" : "cgroup v1 blkio.throttle",
			       (unsigned long long) p->treads, of);
		}
		fprintf(out, "%-12s %12s%s\n", "", "coldstudy", fio ? "          fio" : "");
#define ROW(name, a, b, fmt)                                                   \
	do {                                                                   \
		fprintf(out, "%-12s " fmt, name, a);                                 \
		if (fio)                                                  \
			fprintf(out, " " fmt, b);                                    \
		fputc('\n', out);                                                  \
	} while (0)
		ROW("IOPS", p->r->iops, fio->iops, "%12.1f");
		ROW("MiB/s", p->r->mibps, fio->mibps, "%12.2f");
		ROW("mean ms", p->r->lat_mean_ms, fio->lat_mean_ms, "%12.4f");
		ROW("p50 ms", p->r->lat_p50_ms, fio->lat_p50_ms, "%12.4f");
		ROW("p99 ms", p->r->lat_p99_ms, fio->lat_p99_ms, "%12.4f");
#undef ROW
		if (fio && fio->iops > 0)
			fprintf(out, "%-12s %12.3f\n", "IOPS ratio", p->r->iops / fio->iops);
		if (fio)
			fprintf(out, "fio's latencies are its %s (%.4f ms mean; clat alone %.4f ms): issue to "
			       "completion, as the probe times a read\n",
			       HARNESS_FIO_LATENCY, fio->lat_mean_ms, fio->clat_mean_ms);
	}
	return 0;
}
