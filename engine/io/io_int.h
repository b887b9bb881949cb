/*
 * io_int.h - internals of the block-I/O layer shared by engine/io/ (every .c) and
 * its tests: the file and context structs, the device model's parameters
 * and scheduler, and a few helpers. Nothing here is exported.
 *
 * Error convention as in cv_io.h: 0 or -errno, errno never set.
 */
#ifndef CV_IO_INT_H
#define CV_IO_INT_H

#include "cv_io.h"

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#define CV_IO_ALIGN 4096u
#define CV_IO_QD_DEFAULT 64u
#define CV_IO_QD_MAX 4096u

/* CLOCK_MONOTONIC in ns (vDSO, no syscall). */
static inline uint64_t cvio_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* Sleep until CLOCK_MONOTONIC reaches t_ns. */
void cvio_sleep_until(uint64_t t_ns);

/* ---- files ---- */

struct cv_file {
	char *path;
	int fd;          /* buffered, O_RDONLY */
	int fd_direct;   /* O_DIRECT, -1 where the file system refuses it */
	uint64_t size;
	void *map;       /* read-only shared mapping, NULL for an empty file */
	unsigned flags;
	bool incore_ok;  /* mincore on map tells the truth (file.c) */
	/*
	 * auto: per 4 KiB page, when (CLOCK_MONOTONIC ms, | 1) mincore last
	 * found it resident for a view; 0: not known. Made at the first such
	 * view; cleared by cv_file_release_pages.
	 */
	_Atomic(_Atomic uint32_t *) seen;
	uint32_t id;     /* process-unique, for the trace's file table */
};

/* ---- small PRNG (xoshiro256**), seeded by splitmix64 ---- */

typedef struct cvio_rng {
	uint64_t s[4];
} cvio_rng;

void cvio_rng_seed(cvio_rng *r, uint64_t seed);
uint64_t cvio_rng_next(cvio_rng *r);
/* Uniform in [0, 1). */
double cvio_rng_unit(cvio_rng *r);
/* Standard normal (Box-Muller). */
double cvio_rng_normal(cvio_rng *r);

/* ---- device model ---- */

#define CVDEV_COMP_MAX 2

/*
 * A device: servers (disks, flash channels) that each serve one operation
 * at a time, with a service time drawn from a lognormal mixture that does
 * not depend on the queue (no service shortening as the queue deepens).
 * Placement says how an operation finds a server:
 *  - CVDEV_SHARED: one FIFO queue in front of every server (an SSD's
 *    channels: any free one takes the next read), an M/G/c queue;
 *  - CVDEV_PER_SERVER: each operation goes to one server drawn at random
 *    and waits in that server's own FIFO queue (a Ceph pool: a read goes
 *    to its object's primary disk, busy or not), so concurrent readers
 *    collide on disks well below `servers` in flight.
 * A write of len bytes occupies write_copies servers (distinct, drawn at
 * random; the replicas) each for a draw plus len / write_mibps; the
 * operation completes when its last copy does. An IOPS and a MiB/s token
 * bucket (GCRA) sit in front of every operation.
 */
enum { CVDEV_SHARED = 0, CVDEV_PER_SERVER = 1 };

typedef struct cvdev_params {
	char name[64];
	char note[200];
	unsigned servers;
	int placement;                 /* CVDEV_SHARED or CVDEV_PER_SERVER */
	int ncomp;
	double w[CVDEV_COMP_MAX];      /* mixture weights, sum 1 */
	double med_ms[CVDEV_COMP_MAX]; /* lognormal medians */
	double sigma[CVDEV_COMP_MAX];  /* lognormal shape */
	unsigned write_copies;         /* servers a write occupies (0: 1) */
	double write_mibps;            /* a server's write transfer rate (0: no transfer time) */
	double iops;      /* 0: no IOPS cap */
	double mibps;     /* 0: no throughput cap */
	double burst_s;   /* bucket depth, seconds of rate */
	/*
	 * Drift (0 period: none): the last mixture component's weight wanders
	 * between drift_w_lo and drift_w_hi, linearly between knots drift_period_s
	 * apart whose values the stream's seed draws; the other weights scale to
	 * keep the sum 1. w[] holds the long-run average ((lo + hi) / 2).
	 */
	double drift_period_s;
	double drift_w_lo, drift_w_hi;
} cvdev_params;

typedef struct cvdev_state cvdev_state;

struct cv_device {
	cvdev_params p;
	cvdev_state *rt; /* real-time state, shared by every cv_io using the device */
	uint64_t seed;
};

/* Mean and variance of the service-time distribution at queue depth 1, in ms. */
double cvdev_mean_ms(const cvdev_params *p);
double cvdev_var_ms2(const cvdev_params *p);

int cvdev_state_new(const cvdev_params *p, uint64_t seed, cvdev_state **out);
void cvdev_state_free(cvdev_state *s);
/*
 * A read of len bytes arrives at t_ns: returns the modelled completion
 * time. Thread-safe (the state has its own lock). Arrivals must come in
 * nondecreasing time for the queues to be FIFO.
 */
uint64_t cvdev_schedule(cvdev_state *s, uint64_t t_ns, uint32_t len);
/* The same for a write of len bytes (write_copies servers). */
uint64_t cvdev_schedule_write(cvdev_state *s, uint64_t t_ns, uint64_t len);

/* ---- trace ---- */

/* Append one record; file is mapped to its index in the trace's file table. */
void cvio_trace_add(cv_trace *t, const cv_file *f, uint32_t stream, uint32_t batch, uint64_t off,
		    uint32_t len, uint64_t submit_ns, uint64_t complete_ns);

/* Add a path to a (loaded) trace's file table; 0, -ENOSPC or -ENOMEM. */
int cvio_trace_add_path(cv_trace *t, const char *path);
/* Set a loaded trace's dropped count. */
void cvio_trace_set_dropped(cv_trace *t, uint64_t dropped);

/* ---- contexts ---- */

typedef struct cvio_slot {
	cv_read_req *req;
	uint64_t submit_ns, due_ns, real_done_ns;
	uint64_t seq;         /* submission order */
	uint8_t *bounce;      /* aligned buffer, reused */
	uint32_t bounce_cap;
	uint64_t aoff;        /* aligned offset read into the bounce buffer */
	uint32_t alen;
	bool done, via_bounce;
	int res;
	uint32_t batch, stream;
} cvio_slot;

struct cv_io {
	cv_io_opts o;
	unsigned qd;
	cvio_slot *slots;
	uint32_t *free_slots;
	uint32_t *ready;      /* reap's scratch: ready slots in submission order */
	unsigned nfree;
	unsigned inflight;
	bool ring_ok;
	struct io_uring ring;
	cv_io_stats st;
	uint64_t busy_since;
	uint32_t batch_seq;
	uint64_t seq;
	unsigned pending_sqes;
	/* sync bounce buffer for the direct strategy */
	uint8_t *bounce;
	uint32_t bounce_cap;
};

/* Strategy back ends (reader.c calls them). */
int cvio_uring_init(cv_io *io);
void cvio_uring_exit(cv_io *io);
/* Queue the read of a slot; flushed by cvio_uring_flush. */
int cvio_uring_prep(cv_io *io, uint32_t slot);
int cvio_uring_flush(cv_io *io);
/* Collect the completions that have arrived (no waiting); marks slots done. */
int cvio_uring_collect(cv_io *io, bool wait);
/* Flush and wait for one completion, or until deadline_ns (UINT64_MAX: none). */
int cvio_uring_wait(cv_io *io, uint64_t deadline_ns);

/*
 * Work out the aligned range covering [off, off+len) and say whether the
 * caller's buffer can take the read directly (everything aligned).
 */
bool cvio_direct_ok(uint64_t off, uint32_t len, const void *buf);
/* Ensure a slot's bounce buffer holds at least n bytes. 0 or -ENOMEM. */
int cvio_bounce_reserve(uint8_t **buf, uint32_t *cap, uint32_t n);

/* ---- page cache ---- */

/* Residency through mincore(2) on fd, refused (-EACCES) unless fd is writable. */
int cvio_mincore_fd(int fd, cv_residency *out);
/* Residency through cachestat(2); -ENOSYS where the kernel lacks it. */
int cvio_cachestat_fd(int fd, cv_residency *out);

#endif
