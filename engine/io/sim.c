/*
 * sim.c - virtual-time replay of a read trace against a device model.
 *
 * The trace is cut into streams and, within a stream, batches (the reads
 * a stream had in flight together). Replay is a discrete-event
 * simulation over one kind of event, "stream s submits its next batch at
 * time t", kept in a min-heap and taken in time order:
 *
 *  - every read of the batch arrives at t and is scheduled by the same
 *    cvdev_schedule that real-time mode uses (token buckets, FIFO
 *    servers, service-time draw), on a fresh scheduler state of its own;
 *  - the batch completes when its last read does;
 *  - the stream's next batch is submitted after the CPU time the real
 *    run spent between that batch's completion and the next submission
 *    (real submit of batch j minus real completion of batch j-1, never
 *    negative), so compute is kept and only device time is replaced;
 *  - each stream's first batch is submitted at its real offset from the
 *    start of the trace, and streams run concurrently.
 *
 * Competing work (cv_sim_load) is more streams in the same heap, through
 * the same device queues: closed-loop queue-depth-one readers, and a bulk
 * writer whose flushes are batches of writes. They start a warm-up of ten
 * mean service times before the trace (which is shifted by it, and the
 * results shifted back) and stop issuing once the trace's last batch is
 * issued, since nothing later can delay an earlier arrival in a FIFO.
 *
 * Because events are handled in nondecreasing time, arrivals reach the
 * scheduler in time order, which is what makes its queues FIFO. The
 * result is the wall time the device would have taken, computed in
 * milliseconds.
 */
#include "io_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct sim_batch {
	size_t first, n;      /* records [first, first + n) of the sorted copy */
	uint64_t submit, complete; /* real times */
} sim_batch;

typedef struct sim_stream {
	size_t first_batch, nbatch, next;
} sim_stream;

typedef struct sim_ev {
	uint64_t t;
	uint32_t stream;
} sim_ev;

static int cmp_rec(const void *a, const void *b)
{
	const cv_trace_rec *x = a, *y = b;

	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->batch != y->batch)
		return x->batch < y->batch ? -1 : 1;
	if (x->submit_ns != y->submit_ns)
		return x->submit_ns < y->submit_ns ? -1 : 1;
	return 0;
}

static int cmp_batch(const void *a, const void *b)
{
	const sim_batch *x = a, *y = b;

	if (x->submit != y->submit)
		return x->submit < y->submit ? -1 : 1;
	return x->first < y->first ? -1 : (x->first > y->first);
}

#define HEAP_PREFIX ev /* the earliest event on top; ties by stream */
#define HEAP_ELEM sim_ev
#define HEAP_ABOVE(x, y) ((x).t < (y).t || ((x).t == (y).t && (x).stream < (y).stream))
#include "heap_template.h"

/* Replay t on dev in virtual time, load beside it; 0 or -errno (-EINVAL on an empty trace). */
CV_API int cv_device_simulate_load(const cv_device *dev, const cv_trace *t, uint64_t seed,
				   const cv_sim_load *load, cv_sim_result *out)
{
	size_t n = cv_trace_len(t), nb = 0, ns = 0, nev = 0, fg_left;
	cv_trace_rec *recs = NULL;
	sim_batch *batches = NULL;
	sim_stream *streams = NULL;
	sim_ev *evs = NULL;
	cvdev_state *st = NULL;
	uint64_t t0 = UINT64_MAX, end = 0, warm = 0, written = 0, bg_reads = 0;
	unsigned nr = load ? load->readers : 0;
	int writer = load && load->write_chunk > 0;
	uint32_t rbytes = load && load->reader_bytes ? load->reader_bytes : 4096;
	double lat_sum = 0, bg_lat = 0;
	int rc = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!n)
		return -EINVAL;
	if (nr > 1u << 20)
		return -EINVAL;
	recs = malloc(n * sizeof(*recs));
	batches = malloc(n * sizeof(*batches));
	streams = malloc(n * sizeof(*streams));
	evs = malloc((n + nr + 1) * sizeof(*evs));
	if (!recs || !batches || !streams || !evs)
		goto out;
	memcpy(recs, cv_trace_recs(t), n * sizeof(*recs));
	qsort(recs, n, sizeof(*recs), cmp_rec);
	/* batches and streams */
	for (size_t i = 0; i < n; i++) {
		const cv_trace_rec *r = &recs[i];

		if (r->submit_ns < t0)
			t0 = r->submit_ns;
		if (i == 0 || r->stream != recs[i - 1].stream) {
			streams[ns++] = (sim_stream) { .first_batch = nb };
		}
		if (i == 0 || r->stream != recs[i - 1].stream || r->batch != recs[i - 1].batch) {
			batches[nb++] = (sim_batch) { .first = i, .submit = r->submit_ns,
						      .complete = r->complete_ns };
			streams[ns - 1].nbatch++;
		}
		batches[nb - 1].n++;
		if (r->submit_ns < batches[nb - 1].submit)
			batches[nb - 1].submit = r->submit_ns;
		if (r->complete_ns > batches[nb - 1].complete)
			batches[nb - 1].complete = r->complete_ns;
	}
	for (size_t s = 0; s < ns; s++)
		qsort(batches + streams[s].first_batch, streams[s].nbatch, sizeof(*batches), cmp_batch);
	rc = cvdev_state_new(&dev->p, seed, &st);
	if (rc)
		goto out;
	if (nr || writer) {
		/* the competing work runs a while before the trace: its steady state */
		warm = (uint64_t) (10.0 * cvdev_mean_ms(&dev->p) * 1e6);
		for (unsigned r = 0; r < nr; r++)
			ev_push(evs, &nev, (sim_ev) { 0, (uint32_t) (ns + r) });
		if (writer)
			ev_push(evs, &nev, (sim_ev) { 0, (uint32_t) (ns + nr) });
	}
	for (size_t s = 0; s < ns; s++)
		ev_push(evs, &nev,
			(sim_ev) { batches[streams[s].first_batch].submit - t0 + warm, (uint32_t) s });
	fg_left = ns;
	while (nev) {
		sim_ev e = ev_pop(evs, &nev);

		if (e.stream < ns) {
			sim_stream *s = &streams[e.stream];
			const sim_batch *b = &batches[s->first_batch + s->next];
			uint64_t bdone = e.t;

			for (size_t i = 0; i < b->n; i++) {
				const cv_trace_rec *r = &recs[b->first + i];
				uint64_t d = cvdev_schedule(st, e.t, r->len);

				lat_sum += (double) (d - e.t);
				if (d > bdone)
					bdone = d;
			}
			if (bdone > end)
				end = bdone;
			if (++s->next < s->nbatch) {
				const sim_batch *nx = b + 1;
				uint64_t gap = nx->submit > b->complete ? nx->submit - b->complete : 0;

				ev_push(evs, &nev, (sim_ev) { bdone + gap, e.stream });
			} else {
				fg_left--;
			}
		} else if (!fg_left) {
			continue; /* the trace is all issued: the competing work stops */
		} else if (e.stream < ns + nr) {
			uint64_t d = cvdev_schedule(st, e.t, rbytes);

			bg_lat += (double) (d - e.t);
			bg_reads++;
			ev_push(evs, &nev, (sim_ev) { d, e.stream });
		} else {
			uint64_t sync = load->write_sync > load->write_chunk ? load->write_sync
									     : load->write_chunk;
			uint64_t last = e.t;

			for (uint64_t b = 0; b < sync; b += load->write_chunk) {
				uint64_t len = load->write_chunk, d;

				if (load->write_max_bytes && written >= load->write_max_bytes)
					break;
				if (load->write_max_bytes && load->write_max_bytes - written < len)
					len = load->write_max_bytes - written;
				if (sync - b < len)
					len = sync - b;
				d = cvdev_schedule_write(st, e.t, len);
				written += len;
				if (d > last)
					last = d;
			}
			if (last > e.t)
				ev_push(evs, &nev, (sim_ev) { last, e.stream });
		}
	}
	end = end > warm ? end - warm : 0;
	out->reads = n;
	out->wall_ms = (double) end / 1e6;
	out->read_ms_mean = lat_sum / (double) n / 1e6;
	out->inflight_mean = end ? lat_sum / (double) end : 0;
	out->iops = end ? (double) n / ((double) end / 1e9) : 0;
	out->bg_reads = bg_reads;
	out->bg_read_ms_mean = bg_reads ? bg_lat / (double) bg_reads / 1e6 : 0;
	out->bg_write_bytes = written;
	out->bg_write_mibps = end ? (double) written / 1048576.0 / ((double) (end + warm) / 1e9) : 0;
	rc = 0;
out:
	cvdev_state_free(st);
	free(recs);
	free(batches);
	free(streams);
	free(evs);
	return rc;
}

/* Replay t on dev in virtual time; 0 or -errno (-EINVAL on an empty trace). */
CV_API int cv_device_simulate(const cv_device *dev, const cv_trace *t, uint64_t seed,
			      cv_sim_result *out)
{
	return cv_device_simulate_load(dev, t, seed, NULL, out);
}
