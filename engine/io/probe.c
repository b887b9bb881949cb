/*
 * probe.c - random reads at a fixed queue depth, the way fio's randread
 * job does it, through the same cv_io every index uses.
 *
 * uring (the default): one context with qd slots over O_DIRECT; qd reads
 * are kept in flight, each completion is replaced by a new read at a
 * uniformly random block (with replacement, as fio's norandommap). The
 * synchronous strategies cannot hold more than one read per thread, so
 * qd threads each issue their share one after another (that is how pread
 * reaches a queue depth). Latency is submission to completion; IOPS and
 * MiB/s are over the wall time of the whole probe.
 */
#include "io_int.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct probe_job {
	cv_file *f;
	const cv_probe_opts *o;
	uint64_t reads;
	uint64_t seed;
	cv_io_stats st;
	int rc;
} probe_job;

/* A random block offset. */
static uint64_t pick(cvio_rng *r, uint64_t nblocks, uint32_t bs)
{
	return (cvio_rng_next(r) % nblocks) * bs;
}

/* One thread's share through a synchronous strategy. */
/* Reader w of the team: its share of the random reads, synchronously. */
static void sync_job(void *arg, unsigned w)
{
	probe_job *j = (probe_job *) arg + w;
	cv_io_opts o;
	cv_io *io = NULL;
	uint8_t *buf = cv_alloc_aligned(j->o->bs);
	uint64_t nblocks = cv_file_size(j->f) / j->o->bs;
	cvio_rng r;

	cvio_rng_seed(&r, j->seed);
	cv_io_opts_default(&o);
	o.strategy = j->o->strategy;
	o.queue_depth = 1;
	o.device = j->o->device;
	j->rc = buf ? cv_io_new(&o, &io) : -ENOMEM;
	for (uint64_t i = 0; !j->rc && i < j->reads; i++)
		j->rc = cv_io_read(io, j->f, pick(&r, nblocks, j->o->bs), j->o->bs, buf);
	if (io)
		cv_io_stats_get(io, &j->st);
	cv_io_free(io);
	free(buf);
}

/* The whole probe through io_uring at depth qd. */
static int uring_probe(cv_file *f, const cv_probe_opts *po, cv_io_stats *st)
{
	cv_io_opts o;
	cv_io *io = NULL;
	unsigned qd = po->qd;
	uint8_t *bufs = NULL;
	cv_read_req *reqs = NULL, **done = NULL;
	uint64_t nblocks = cv_file_size(f) / po->bs, issued = 0, finished = 0;
	cvio_rng r;
	int rc = -ENOMEM;

	cvio_rng_seed(&r, po->seed);
	cv_io_opts_default(&o);
	o.strategy = CV_IO_URING;
	o.queue_depth = qd;
	o.device = po->device;
	bufs = cv_alloc_aligned((size_t) qd * po->bs);
	reqs = calloc(qd, sizeof(*reqs));
	done = calloc(qd, sizeof(*done));
	if (!bufs || !reqs || !done)
		goto out;
	rc = cv_io_new(&o, &io);
	if (rc)
		goto out;
	for (unsigned i = 0; i < qd && issued < po->reads; i++, issued++) {
		reqs[i] = (cv_read_req) { .file = f, .off = pick(&r, nblocks, po->bs), .len = po->bs,
					  .buf = bufs + (size_t) i * po->bs, .stream = i };
		rc = cv_io_submit(io, &reqs[i]);
		if (rc)
			goto out;
	}
	while (finished < po->reads) {
		int n = cv_io_reap(io, done, qd, 1);

		if (n < 0) {
			rc = n;
			goto out;
		}
		for (int k = 0; k < n; k++) {
			cv_read_req *q = done[k];

			finished++;
			if (q->res) {
				rc = q->res;
				goto out;
			}
			if (issued < po->reads) {
				q->off = pick(&r, nblocks, po->bs);
				q->batch++;
				rc = cv_io_submit(io, q);
				if (rc)
					goto out;
				issued++;
			}
		}
	}
	cv_io_stats_get(io, st);
	rc = 0;
out:
	cv_io_free(io);
	free(bufs);
	free(reqs);
	free(done);
	return rc;
}

/* Run the probe on path; 0 or -errno with why in e. */
CV_API int cv_probe(const char *path, const cv_probe_opts *o, cv_probe_result *out, cv_err *e)
{
	cv_file *f = NULL;
	cv_io_stats st;
	uint64_t t0, t1;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&st, 0, sizeof(st));
	if (!o->qd || o->qd > CV_IO_QD_MAX)
		return cv_err_set(e, -EINVAL, "queue depth %u out of range 1..%u", o->qd, CV_IO_QD_MAX);
	if (!o->bs || o->bs % 512)
		return cv_err_set(e, -EINVAL, "block size %u is not a multiple of 512", o->bs);
	if (!o->reads)
		return cv_err_set(e, -EINVAL, "reads must be at least 1");
	rc = cv_file_open(path, 0, &f);
	if (rc)
		return cv_err_set(e, rc, "%s: cannot open: %s", path, strerror(-rc));
	if (cv_file_size(f) < o->bs) {
		rc = cv_err_set(e, -EINVAL, "%s: file is smaller than one block (%u bytes)", path, o->bs);
		goto out;
	}
	if ((o->strategy == CV_IO_URING || o->strategy == CV_IO_DIRECT) && f->fd_direct < 0) {
		rc = cv_err_set(e, -EOPNOTSUPP, "%s: the file system refuses O_DIRECT", path);
		goto out;
	}
	t0 = cvio_now_ns();
	if (o->strategy == CV_IO_URING) {
		rc = uring_probe(f, o, &st);
		if (rc) {
			cv_err_set(e, rc, "%s: io_uring probe failed: %s", path, strerror(-rc));
			goto out;
		}
	} else {
		probe_job *jobs = calloc(o->qd, sizeof(*jobs));
		unsigned ran;

		if (!jobs) {
			rc = cv_err_set(e, -ENOMEM, "out of memory");
			goto out;
		}
		for (unsigned i = 0; i < o->qd; i++)
			jobs[i] = (probe_job) { .f = f, .o = o, .seed = o->seed * 1000003u + i,
						.reads = o->reads / o->qd + (i < o->reads % o->qd) };
		ran = cvu_team(o->qd, sync_job, jobs);
		for (unsigned i = 0; i < ran; i++) {
			cv_io_stats_merge(&st, &jobs[i].st);
			if (jobs[i].rc && !rc)
				rc = jobs[i].rc;
		}
		if (ran < o->qd && !rc)
			rc = -EAGAIN; /* fewer readers than the queue depth asked for */
		free(jobs);
		if (rc) {
			cv_err_set(e, rc, "%s: probe failed: %s", path, strerror(-rc));
			goto out;
		}
	}
	t1 = cvio_now_ns();
	out->reads = st.reads;
	out->wall_s = (double) (t1 - t0) / 1e9;
	out->iops = out->wall_s > 0 ? (double) st.reads / out->wall_s : 0;
	out->mibps = out->wall_s > 0 ? (double) st.bytes / 1048576.0 / out->wall_s : 0;
	out->lat_mean_ms = cv_hist_mean(&st.lat_ns) / 1e6;
	out->lat_p50_ms = cv_hist_quantile(&st.lat_ns, 0.5) / 1e6;
	out->lat_p99_ms = cv_hist_quantile(&st.lat_ns, 0.99) / 1e6;
	out->lat_max_ms = (double) st.lat_ns.max / 1e6;
	rc = 0;
out:
	cv_file_close(f);
	return rc;
}
