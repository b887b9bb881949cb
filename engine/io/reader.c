/*
 * reader.c - cv_io: one thread's reads, whatever the strategy, counted.
 *
 * Every read occupies a slot from submission until the caller reaps it;
 * there are queue_depth slots, allocated with their bounce buffers when
 * the context is made and reused, so the hot path allocates nothing (a
 * bounce buffer grows once if a larger unaligned read comes along).
 *
 * Strategies: mmap (memcpy from the file's mapping; a miss is a page
 * fault), pread (the buffered descriptor), direct (O_DIRECT; unaligned
 * requests read the covering aligned range into the slot's bounce buffer
 * and copy out) and uring (io_uring over O_DIRECT, same bouncing; see
 * uring.c). The synchronous strategies do the read inside submit, so the
 * slot is done at once; uring marks slots done as completions arrive.
 *
 * A read is delivered (counted, traced, handed back) when it is done and,
 * with a device model, when the model says the device would have
 * finished it: cvdev_schedule gives that time at submission, and reap
 * sleeps until it. The recorded completion time is max(real completion,
 * modelled completion), so scheduler oversleep of the caller is not
 * charged to the device.
 *
 * Counters: reads and latency at delivery; bytes for reads that
 * succeeded; reads in flight sampled at each submission (for the
 * synchronous strategies without a model that is always 1, because the
 * reads really are one after another); busy time while at least one read
 * is outstanding.
 */
#include "io_int.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

CV_API void cv_io_opts_default(cv_io_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->strategy = CV_IO_AUTO; /* pread, but for views of what the page cache holds */
	o->queue_depth = CV_IO_QD_DEFAULT;
}

/* A new context for o; 0 or -errno (-ENOSYS etc. when io_uring is unavailable). */
CV_API int cv_io_new(const cv_io_opts *o, cv_io **out)
{
	cv_io *io;
	int rc = -ENOMEM;

	*out = NULL;
	if (o->strategy > CV_IO_AUTO)
		return -EINVAL;
	io = calloc(1, sizeof(*io));
	if (!io)
		return -ENOMEM;
	io->o = *o;
	io->qd = o->queue_depth ? o->queue_depth : CV_IO_QD_DEFAULT;
	if (io->qd > CV_IO_QD_MAX)
		io->qd = CV_IO_QD_MAX;
	io->slots = calloc(io->qd, sizeof(*io->slots));
	io->free_slots = calloc(io->qd, sizeof(*io->free_slots));
	io->ready = calloc(io->qd, sizeof(*io->ready));
	if (!io->slots || !io->free_slots || !io->ready)
		goto out;
	for (unsigned i = 0; i < io->qd; i++)
		io->free_slots[i] = io->qd - 1 - i;
	io->nfree = io->qd;
	if (o->strategy == CV_IO_URING || o->strategy == CV_IO_DIRECT) {
		for (unsigned i = 0; i < io->qd; i++)
			if (cvio_bounce_reserve(&io->slots[i].bounce, &io->slots[i].bounce_cap, 16384))
				goto out;
	}
	if (o->strategy == CV_IO_URING) {
		rc = cvio_uring_init(io);
		if (rc)
			goto out;
	}
	*out = io;
	io = NULL;
	rc = 0;
out:
	cv_io_free(io);
	return rc;
}

/* Free; accepts NULL. Reads still in flight are waited for first. */
CV_API void cv_io_free(cv_io *io)
{
	if (!io)
		return;
	if (io->ring_ok) {
		while (io->inflight)
			if (cv_io_reap(io, NULL, io->qd, io->inflight) < 0)
				break;
		cvio_uring_exit(io);
	}
	if (io->slots)
		for (unsigned i = 0; i < io->qd; i++)
			free(io->slots[i].bounce);
	free(io->slots);
	free(io->free_slots);
	free(io->ready);
	free(io->bounce);
	free(io);
}

CV_API const cv_io_opts *cv_io_get_opts(const cv_io *io)
{
	return &io->o;
}

CV_API void cv_io_set_stream(cv_io *io, uint32_t stream)
{
	io->o.stream = stream;
}

CV_API unsigned cv_io_inflight(const cv_io *io)
{
	return io->inflight;
}


/* A view of [off, off + len) of f's mapping: its pages touched here, where a copy would fault. */
static void view_of(cv_read_req *r, const cv_file *f)
{
	const volatile char *p = (const char *) f->map + r->off;
	char sink = 0;

	for (uint64_t o = 0; o < r->len; o += 4096)
		sink ^= p[o];
	sink ^= p[r->len - 1];
	(void) sink;
	r->data = (const char *) f->map + r->off;
}

/*
 * How long a page that mincore found resident, and a view then mapped, is
 * taken as resident without asking again. A mincore call costs about a
 * microsecond here (it takes the mmap lock and a page for its answer):
 * asked before each of a warm 1M query's 22 reads it made auto slower
 * than pread (bench/hfresh/README.md, "auto"). A page this process maps
 * (its views, once read) cannot be evicted by anyone's POSIX_FADV_DONTNEED,
 * only reclaimed; one that leaves the cache within the interval is read by
 * a fault when the caller reads the view: one page, the right bytes.
 * cv_file_release_pages forgets every page.
 */
#define CVIO_SEEN_MS 1000u

/*
 * Whether every page of [off, off + len) is in the page cache: known from
 * f->seen within CVIO_SEEN_MS, else asked of mincore(2) on the mapping (a
 * page this process maps is answered from its page table, the rest from
 * the page cache). Only for a file whose answer is true (incore_ok).
 */
static bool resident(cv_file *f, uint64_t off, uint32_t len, uint64_t now_ns)
{
	uint64_t a = off & ~(uint64_t) 4095, end = off + len;
	uint64_t p0 = off / 4096, p1 = (end + 4095) / 4096;
	uint32_t now = (uint32_t) (now_ns / 1000000u) | 1u;
	_Atomic uint32_t *seen = atomic_load_explicit(&f->seen, memory_order_acquire);
	unsigned char vec[256];
	bool fresh = seen != NULL;

	for (uint64_t p = p0; fresh && p < p1; p++) {
		uint32_t t = atomic_load_explicit(&seen[p], memory_order_relaxed);

		fresh = t && now - t < CVIO_SEEN_MS;
	}
	if (fresh)
		return true;
	while (a < end) {
		uint64_t n = (end - a + 4095) / 4096;

		if (n > sizeof(vec))
			n = sizeof(vec);
		if (mincore((char *) f->map + a, n * 4096, vec))
			return false;
		for (uint64_t i = 0; i < n; i++)
			if (!(vec[i] & 1))
				return false;
		a += n * 4096;
	}
	if (!seen) { /* the first: made once, whichever thread wins */
		_Atomic uint32_t *mine = calloc((f->size + 4095) / 4096, sizeof(*mine)), *none = NULL;

		if (mine && !atomic_compare_exchange_strong(&f->seen, &none, mine))
			free((void *) mine);
		seen = atomic_load_explicit(&f->seen, memory_order_acquire);
	}
	for (uint64_t p = p0; seen && p < p1; p++)
		atomic_store_explicit(&seen[p], now, memory_order_relaxed);
	return true;
}

/* The synchronous strategies: read req into its buffer (or view it); 0 or -errno. */
static int sync_read(cv_io *io, cvio_slot *s)
{
	cv_read_req *r = s->req;
	cv_file *f = r->file;
	ssize_t got;

	if (r->off > f->size || r->len > f->size - r->off)
		return -EIO; /* past the end: a short read */
	switch (io->o.strategy) {
	case CV_IO_MMAP:
		if (!r->len)
			return 0;
		if (!f->map)
			return -EIO;
		if (!r->buf || (r->flags & CV_READ_VIEW)) {
			view_of(r, f);
			return 0;
		}
		memcpy(r->buf, (const char *) f->map + r->off, r->len);
		return 0;
	case CV_IO_AUTO:
		if (r->len && (r->flags & CV_READ_VIEW) && f->incore_ok &&
		    resident(f, r->off, r->len, s->submit_ns)) {
			/*
			 * Resident: nothing to fault in, so no pass over the pages
			 * first (it cost 3% of a warm 1M query in page walks the
			 * scorer takes anyway; bench/hfresh/README.md, "auto").
			 */
			r->data = (const char *) f->map + r->off;
			return 0;
		}
		__attribute__((fallthrough)); /* what the cache lacks: a pread */
	case CV_IO_PREAD:
		got = cvu_pread_full(f->fd, r->buf, r->len, r->off);
		if (got < 0)
			return (int) got;
		return (size_t) got == r->len ? 0 : -EIO;
	case CV_IO_DIRECT: {
		uint64_t aoff, aend;
		uint32_t alen;
		int rc;

		if (f->fd_direct < 0)
			return -EOPNOTSUPP;
		if (!r->len)
			return 0;
		if (cvio_direct_ok(r->off, r->len, r->buf)) {
			got = cvu_pread_full(f->fd_direct, r->buf, r->len, r->off);
			if (got < 0)
				return (int) got;
			return (size_t) got == r->len ? 0 : -EIO;
		}
		aoff = r->off & ~(uint64_t) (CV_IO_ALIGN - 1);
		aend = (r->off + r->len + CV_IO_ALIGN - 1) & ~(uint64_t) (CV_IO_ALIGN - 1);
		if (aend - aoff > UINT32_MAX)
			return -EINVAL;
		alen = (uint32_t) (aend - aoff);
		rc = cvio_bounce_reserve(&s->bounce, &s->bounce_cap, alen);
		if (rc)
			return rc;
		got = cvu_pread_full(f->fd_direct, s->bounce, alen, aoff);
		if (got < 0)
			return (int) got;
		if ((uint64_t) got < r->off + r->len - aoff)
			return -EIO;
		memcpy(r->buf, s->bounce + (r->off - aoff), r->len);
		return 0;
	}
	case CV_IO_URING:
		break;
	}
	return -EINVAL;
}

/* Take a slot for req and start it; 0, -EBUSY or -errno. */
static int start(cv_io *io, cv_read_req *req, uint32_t stream, uint32_t batch)
{
	uint32_t si;
	cvio_slot *s;
	uint64_t now;
	bool sync_plain = io->o.strategy != CV_IO_URING && !io->o.device;
	int rc;

	if (!io->nfree)
		return -EBUSY;
	if (!req->file || (!req->buf && req->len && io->o.strategy != CV_IO_MMAP))
		return -EINVAL;
	req->data = req->buf;
	si = io->free_slots[--io->nfree];
	s = &io->slots[si];
	s->req = req;
	s->stream = stream;
	s->batch = batch;
	s->done = false;
	s->res = 0;
	s->seq = io->seq++;
	now = cvio_now_ns();
	s->submit_ns = now;
	s->due_ns = io->o.device ? cvdev_schedule(io->o.device->rt, now, req->len) : 0;
	io->inflight++;
	cv_hist_add(&io->st.inflight, sync_plain ? 1 : io->inflight);
	if ((sync_plain ? 1 : io->inflight) > io->st.inflight_max)
		io->st.inflight_max = sync_plain ? 1 : io->inflight;
	if (io->inflight == 1)
		io->busy_since = now;
	if (io->o.strategy == CV_IO_URING) {
		rc = cvio_uring_prep(io, si);
		if (rc) {
			s->res = rc;
			s->done = true;
			s->real_done_ns = now;
		}
		return 0;
	}
	s->res = sync_read(io, s);
	s->done = true;
	s->real_done_ns = cvio_now_ns();
	return 0;
}

/* Hand a finished slot back: count, trace, free the slot. */
static void deliver(cv_io *io, uint32_t si)
{
	cvio_slot *s = &io->slots[si];
	cv_read_req *r = s->req;
	uint64_t done_ns = s->real_done_ns > s->due_ns ? s->real_done_ns : s->due_ns;

	r->res = s->res;
	io->st.reads++;
	if (!s->res)
		io->st.bytes += r->len;
	cv_hist_add(&io->st.lat_ns, done_ns - s->submit_ns);
	if (io->o.trace)
		cvio_trace_add(io->o.trace, r->file, s->stream, s->batch, r->off, r->len, s->submit_ns,
			       done_ns);
	io->inflight--;
	if (io->inflight == 0) {
		/* a synchronous read without a device model ended when it returned */
		uint64_t now = io->o.strategy != CV_IO_URING && !io->o.device ? done_ns
									       : cvio_now_ns();

		if (now > io->busy_since)
			io->st.busy_ns += now - io->busy_since;
	}
	s->req = NULL;
	io->free_slots[io->nfree++] = si;
}

/*
 * Deliver finished reads (into done[] when given) until at least min_wait
 * are delivered, max is reached or nothing is in flight. Returns the count
 * or -errno.
 */
static int reap(cv_io *io, cv_read_req **done, size_t max, size_t min_wait)
{
	size_t got = 0;
	int rc;

	if (min_wait > max)
		min_wait = max;
	for (;;) {
		uint64_t now, next_due = UINT64_MAX;
		bool any_pending = false;
		size_t nready = 0;

		if (io->ring_ok) {
			rc = cvio_uring_collect(io, false);
			if (rc < 0)
				return rc;
		}
		/*
		 * Without a device model every due time is 0, so the clock would
		 * decide nothing here (a clock read is 2-3% of a warm HFresh query
		 * at 1M, which reads 20-odd times).
		 */
		now = io->o.device ? cvio_now_ns() : UINT64_MAX;
		/*
		 * One pass over the slots per cycle: the ready ones (done and due)
		 * in submission order by insertion sort (few at a time), and what
		 * to wait for next; then deliver without rescanning.
		 */
		for (uint32_t i = 0; i < io->qd; i++) {
			cvio_slot *s = &io->slots[i];
			size_t j;

			if (!s->req)
				continue;
			if (!s->done) {
				any_pending = true;
				continue;
			}
			if (s->due_ns > now) {
				if (s->due_ns < next_due)
					next_due = s->due_ns;
				continue;
			}
			for (j = nready; j > 0 && io->slots[io->ready[j - 1]].seq > s->seq; j--)
				io->ready[j] = io->ready[j - 1];
			io->ready[j] = i;
			nready++;
		}
		for (size_t j = 0; j < nready && got < max; j++) {
			if (done)
				done[got] = io->slots[io->ready[j]].req;
			deliver(io, io->ready[j]);
			got++;
		}
		if (got >= min_wait || got >= max || io->inflight == 0) {
			/* reads prepared and not yet sent go now (one syscall), not at the next reap */
			if (io->ring_ok && io->pending_sqes) {
				rc = cvio_uring_flush(io);
				if (rc < 0)
					return rc;
			}
			return (int) got;
		}
		if (any_pending && io->ring_ok) {
			rc = cvio_uring_wait(io, next_due);
			if (rc < 0)
				return rc;
		} else if (next_due != UINT64_MAX) {
			cvio_sleep_until(next_due);
		} else {
			return -EIO; /* in flight but neither pending nor due: cannot happen */
		}
	}
}

/* One read, waited for: a batch of one in the current stream. 0 or -errno. */
CV_API int cv_io_read(cv_io *io, cv_file *f, uint64_t off, uint32_t len, void *buf)
{
	cv_read_req r = { .file = f, .off = off, .len = len, .buf = buf };

	return cv_io_read_batch(io, &r, 1);
}

CV_API int cv_io_views(const cv_io *io)
{
	return io->o.strategy == CV_IO_MMAP ? 1 : io->o.strategy == CV_IO_AUTO ? 2 : 0;
}

CV_API int cv_io_view(cv_io *io, cv_file *f, uint64_t off, uint32_t len, const void **data)
{
	cv_read_req r = { .file = f, .off = off, .len = len, .buf = NULL };
	int rc;

	*data = NULL;
	if (cv_io_views(io) != 1)
		return -EINVAL;
	rc = cv_io_read_batch(io, &r, 1);
	if (!rc)
		*data = r.data;
	return rc;
}

CV_API void cv_io_view_prefetch(const cv_io *io, const cv_file *f, uint64_t off, uint32_t len)
{
	const char *p;

	if (!cv_io_views(io) || !f || !f->map || off > f->size || len > f->size - off)
		return;
	p = (const char *) f->map + off;
	for (uint64_t o = 0; o < len; o += 4096)
		__builtin_prefetch(p + o, 0, 2);
}


/* n reads in flight together (queue_depth at a time), all waited for; 0 or the first -errno. */
CV_API int cv_io_read_batch(cv_io *io, cv_read_req *reqs, size_t n)
{
	size_t i = 0, delivered = 0;
	uint32_t batch;
	int rc = 0, first_err = 0;

	if (io->inflight)
		return -EBUSY; /* async reads outstanding: they would be reaped here */
	if (!n)
		return 0;
	batch = io->batch_seq++;
	while (delivered < n) {
		while (i < n && io->nfree) {
			reqs[i].res = 0;
			rc = start(io, &reqs[i], io->o.stream, batch);
			if (rc)
				return rc;
			i++;
		}
		rc = reap(io, NULL, n, 1);
		if (rc < 0)
			return rc;
		delivered += (size_t) rc;
	}
	for (i = 0; i < n; i++)
		if (reqs[i].res && !first_err)
			first_err = reqs[i].res;
	return first_err;
}

/* Start an asynchronous read (uring: queued until flush or reap). 0, -EBUSY or -errno. */
CV_API int cv_io_submit(cv_io *io, cv_read_req *req)
{
	req->res = 0;
	return start(io, req, req->stream, req->batch);
}

/* Send queued submissions to the kernel now. 0 or -errno. */
CV_API int cv_io_flush(cv_io *io)
{
	return io->ring_ok ? cvio_uring_flush(io) : 0;
}

CV_API int cv_io_reap(cv_io *io, cv_read_req **done, size_t max, size_t min_wait)
{
	return reap(io, done, max, min_wait);
}

CV_API void cv_io_stats_get(const cv_io *io, cv_io_stats *out)
{
	*out = io->st;
	if (io->inflight) {
		uint64_t now = cvio_now_ns();

		if (now > io->busy_since)
			out->busy_ns += now - io->busy_since;
	}
}

CV_API void cv_io_stats_reset(cv_io *io)
{
	memset(&io->st, 0, sizeof(io->st));
	io->busy_since = cvio_now_ns();
}

/* Add from's counters into into (histograms merged, max of maxima). */
CV_API void cv_io_stats_merge(cv_io_stats *into, const cv_io_stats *from)
{
	into->reads += from->reads;
	into->bytes += from->bytes;
	cv_hist_merge(&into->lat_ns, &from->lat_ns);
	cv_hist_merge(&into->inflight, &from->inflight);
	if (from->inflight_max > into->inflight_max)
		into->inflight_max = from->inflight_max;
	into->busy_ns += from->busy_ns;
}

/* Fold a helper context's counters into io's; inflight_max raises io's maximum (0: none known). */
CV_API void cv_io_stats_add(cv_io *io, const cv_io_stats *from, uint64_t inflight_max)
{
	cv_io_stats_merge(&io->st, from);
	if (inflight_max > io->st.inflight_max)
		io->st.inflight_max = inflight_max;
}
