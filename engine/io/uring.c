/*
 * uring.c - the io_uring back end of cv_io.
 *
 * One ring per context, sized to its queue depth. A read is prepared
 * into an SQE (user_data = slot index) over the file's O_DIRECT
 * descriptor, or its buffered one where the file system refuses
 * O_DIRECT; unaligned requests read the covering aligned range into the
 * slot's bounce buffer and are copied out on completion. Prepared SQEs
 * reach the kernel in one io_uring_submit per batch: at flush, or folded
 * into the wait (io_uring_submit_and_wait) when the caller reaps.
 */
#include "io_int.h"

#include <errno.h>
#include <string.h>

/*
 * Set up the ring; 0 or -errno (-ENOSYS, -EPERM where io_uring is off).
 * IORING_SETUP_COOP_TASKRUN: completions are posted when this thread next
 * enters the kernel (every reap cycle does) instead of by interrupting it,
 * which saves an inter-processor interrupt per completion; kernels before
 * 5.19 refuse the flag and get a plain ring.
 */
int cvio_uring_init(cv_io *io)
{
	int rc = io_uring_queue_init(io->qd, &io->ring, IORING_SETUP_COOP_TASKRUN);

	if (rc == -EINVAL)
		rc = io_uring_queue_init(io->qd, &io->ring, 0);

	if (rc < 0)
		return rc;
	io->ring_ok = true;
	return 0;
}

void cvio_uring_exit(cv_io *io)
{
	if (io->ring_ok)
		io_uring_queue_exit(&io->ring);
	io->ring_ok = false;
}

/* Prepare the read of slot si; 0 or -errno (the slot then fails at once). */
int cvio_uring_prep(cv_io *io, uint32_t si)
{
	cvio_slot *s = &io->slots[si];
	cv_read_req *r = s->req;
	cv_file *f = r->file;
	struct io_uring_sqe *sqe;
	int fd = f->fd_direct >= 0 ? f->fd_direct : f->fd;
	int rc;

	if (r->off > f->size || r->len > f->size - r->off)
		return -EIO;
	sqe = io_uring_get_sqe(&io->ring);
	if (!sqe) {
		rc = cvio_uring_flush(io);
		if (rc < 0)
			return rc;
		sqe = io_uring_get_sqe(&io->ring);
		if (!sqe)
			return -EBUSY;
	}
	s->via_bounce = f->fd_direct >= 0 && !cvio_direct_ok(r->off, r->len, r->buf);
	if (s->via_bounce) {
		uint64_t aend = (r->off + r->len + CV_IO_ALIGN - 1) & ~(uint64_t) (CV_IO_ALIGN - 1);

		s->aoff = r->off & ~(uint64_t) (CV_IO_ALIGN - 1);
		if (aend - s->aoff > UINT32_MAX)
			return -EINVAL;
		s->alen = (uint32_t) (aend - s->aoff);
		if (s->alen == 0)
			s->alen = CV_IO_ALIGN;
		rc = cvio_bounce_reserve(&s->bounce, &s->bounce_cap, s->alen);
		if (rc)
			return rc;
		io_uring_prep_read(sqe, fd, s->bounce, s->alen, s->aoff);
	} else {
		io_uring_prep_read(sqe, fd, r->buf, r->len, r->off);
	}
	io_uring_sqe_set_data64(sqe, si);
	io->pending_sqes++;
	return 0;
}

/* Submit what is prepared; 0 or -errno. */
int cvio_uring_flush(cv_io *io)
{
	int rc;

	if (!io->pending_sqes)
		return 0;
	rc = io_uring_submit(&io->ring);
	if (rc < 0)
		return rc;
	io->pending_sqes = 0;
	return 0;
}

/* Mark the slot of one CQE done, copying out of the bounce buffer. */
static void complete_cqe(cv_io *io, struct io_uring_cqe *cqe, uint64_t now)
{
	uint64_t si = io_uring_cqe_get_data64(cqe);
	cvio_slot *s;
	cv_read_req *r;

	if (si >= io->qd)
		return;
	s = &io->slots[si];
	r = s->req;
	if (!r || s->done)
		return;
	s->done = true;
	s->real_done_ns = now;
	if (cqe->res < 0) {
		s->res = cqe->res;
	} else if (s->via_bounce) {
		if ((uint64_t) cqe->res < r->off + r->len - s->aoff)
			s->res = -EIO;
		else
			memcpy(r->buf, s->bounce + (r->off - s->aoff), r->len);
	} else if ((uint32_t) cqe->res != r->len) {
		s->res = -EIO;
	}
}

/* Take every CQE that has arrived (no syscall unless wait); count or -errno. */
int cvio_uring_collect(cv_io *io, bool wait)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	uint64_t now;
	int rc;

	if (wait) {
		rc = cvio_uring_flush(io);
		if (rc < 0)
			return rc;
		rc = io_uring_wait_cqe(&io->ring, &cqe);
		if (rc < 0)
			return rc;
	}
	now = cvio_now_ns();
	io_uring_for_each_cqe(&io->ring, head, cqe)
	{
		complete_cqe(io, cqe, now);
		n++;
	}
	io_uring_cq_advance(&io->ring, n);
	return (int) n;
}

/* Submit anything prepared and wait for one CQE, or until deadline_ns. 0 or -errno. */
int cvio_uring_wait(cv_io *io, uint64_t deadline_ns)
{
	struct io_uring_cqe *cqe;
	int rc;

	if (deadline_ns == UINT64_MAX) {
		rc = io_uring_submit_and_wait(&io->ring, 1);
		if (rc < 0 && rc != -EINTR)
			return rc;
		io->pending_sqes = 0;
		return 0;
	} else {
		uint64_t now = cvio_now_ns();
		struct __kernel_timespec ts = { 0, 0 };

		if (deadline_ns > now) {
			ts.tv_sec = (long long) ((deadline_ns - now) / 1000000000ull);
			ts.tv_nsec = (long long) ((deadline_ns - now) % 1000000000ull);
		}
		rc = io_uring_submit_and_wait_timeout(&io->ring, &cqe, 1, &ts, NULL);
		io->pending_sqes = 0;
		if (rc < 0 && rc != -ETIME && rc != -EINTR)
			return rc;
		return 0;
	}
}
