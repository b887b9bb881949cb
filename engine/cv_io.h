/*
 * cv_io.h - the block-I/O layer every index reads through.
 *
 * A cv_file is an open file, shareable between threads. A cv_io is one
 * thread's I/O context: an access strategy, an io_uring when the strategy
 * is "uring", counters, an optional device model that delays completions
 * in real time, and an optional trace. Every read an index issues goes
 * through a cv_io and is counted there: reads, bytes, a latency histogram
 * (log-linear buckets, 1 us to 10 s), reads in flight.
 *
 * Strategies: mmap (a read is a memcpy from a mapping, so a miss is a page
 * fault), pread, direct (O_DIRECT, aligned bounce buffers when the caller's
 * are not), uring (io_uring over O_DIRECT; batches submitted together),
 * auto (pread, except that a read which welcomes a view and whose pages
 * the page cache holds, by mincore(2), is a view of the mapping: no system
 * call, no copy; a read of what the cache lacks is a pread, so a cold
 * query makes the same reads as with pread and never faults at queue
 * depth one).
 * Read-ahead is off (POSIX_FADV_RANDOM / MADV_RANDOM) unless the file is
 * opened with CV_FILE_READAHEAD.
 *
 * Batches and streams: a stream is one chain of dependent reads (one
 * query, or one partition scan); a batch is the set of reads a stream has
 * in flight together. cv_io_read is a batch of one; cv_io_read_batch one
 * batch; async submissions carry their stream and batch in the request.
 * The trace keeps (stream, batch, offset, length, submit ns, complete ns)
 * per read, which is what virtual-time replay needs: reads of a stream
 * wait for its previous batch, streams run concurrently, and the CPU time
 * between a batch's completion and the next submission is kept.
 */
#ifndef CV_IO_H
#define CV_IO_H

#include "cv_base.h"

typedef enum cv_io_strategy {
	CV_IO_MMAP = 0,
	CV_IO_PREAD = 1,
	CV_IO_DIRECT = 2,
	CV_IO_URING = 3,
	CV_IO_AUTO = 4,
} cv_io_strategy;

/* "mmap", "pread", "direct", "uring", "auto"; 0 or -EINVAL. */
CV_API int cv_io_strategy_parse(const char *s, cv_io_strategy *out);
CV_API const char *cv_io_strategy_name(cv_io_strategy s);

/* Memory aligned for O_DIRECT (4096); free with free(). NULL on failure. */
CV_API void *cv_alloc_aligned(size_t size);

/* ---- files ---- */

#define CV_FILE_READAHEAD 1u /* keep the kernel's read-ahead (sequential use) */
#define CV_FILE_NOFOLLOW 2u  /* a file inside an index: a symlink at its name is refused (-ELOOP) */

typedef struct cv_file cv_file;

CV_API int cv_file_open(const char *path, unsigned flags, cv_file **out);
/*
 * Create path as a new file, as open(2) with O_CREAT | O_EXCL | O_NOFOLLOW
 * (flags: O_WRONLY or O_RDWR, more allowed): whatever had its name (a
 * file, a hard link to another's bytes, a symlink) is unlinked first, never
 * written through, and a name planted in between makes it fail (EEXIST).
 * Returns the descriptor, or -1 with errno set.
 */
CV_API int cv_open_new(const char *path, int flags, unsigned mode);
CV_API void cv_file_close(cv_file *f);
CV_API uint64_t cv_file_size(const cv_file *f);
CV_API const char *cv_file_path(const cv_file *f);
/*
 * Drop this process's page-table entries for f's mapping (the pages stay
 * in the page cache): a page a mapping holds cannot be evicted, so a
 * caller that gave views (mmap, auto) calls this before cv_cache_evict.
 * Accepts NULL.
 */
CV_API void cv_file_release_pages(cv_file *f);
/*
 * Whether f's residency can be read by mincore(2) (the caller owns f or
 * may write it; otherwise the kernel reports every page resident): the
 * auto strategy gives views of f only then.
 */
CV_API int cv_file_incore_ok(const cv_file *f);

/* ---- latency histogram: log-linear buckets from 1 us to 10 s ---- */

#define CV_HIST_BUCKETS 256

typedef struct cv_hist {
	uint64_t count;
	uint64_t sum;     /* in the histogram's unit (ns for latency) */
	uint64_t max;
	uint64_t bucket[CV_HIST_BUCKETS];
} cv_hist;

CV_API void cv_hist_add(cv_hist *h, uint64_t v);
CV_API void cv_hist_merge(cv_hist *into, const cv_hist *from);
/* Quantile q in [0,1] (bucket midpoint, clamped to max); 0 when empty. */
CV_API double cv_hist_quantile(const cv_hist *h, double q);
CV_API double cv_hist_mean(const cv_hist *h);

/* ---- device model ---- */

typedef struct cv_device cv_device;

/*
 * Profiles: hdd-pool, sata-ssd, nvme, gp3-3000, gp3-16000, gp3-80000, probe:FILE
 * (a probe result written by `coldstudy probe --json`). Thread-safe to
 * share between cv_io contexts (token buckets and servers are shared).
 */
CV_API int cv_device_new(const char *profile, uint64_t seed, cv_device **out, cv_err *e);
CV_API void cv_device_free(cv_device *dev);
/*
 * Restart the device's real-time state (every queue empty) on a new
 * random stream; 0 or -ENOMEM (the old state is kept then). Not while
 * a cv_io uses the device.
 */
CV_API int cv_device_reseed(cv_device *dev, uint64_t seed);
/*
 * Real time: n writes of len bytes arrive at the device's queues now (a
 * writer's flush); sleeps until the last completes and returns the ns
 * waited. A bulk writer calls it so that its writes pass through the model.
 */
CV_API uint64_t cv_device_write_wait(const cv_device *dev, uint64_t len, unsigned n);
CV_API const char *cv_device_name(const cv_device *dev);
/* NULL-terminated list of built-in profile names. */
CV_API const char *const *cv_device_profiles(void);

/* ---- trace ---- */

typedef struct cv_trace_rec {
	uint32_t stream, batch;
	uint64_t off;
	uint32_t len;
	uint32_t file;     /* index of the file in the trace's file table */
	uint64_t submit_ns, complete_ns; /* CLOCK_MONOTONIC */
} cv_trace_rec;

typedef struct cv_trace cv_trace;

/* A trace of at most cap records (further reads are counted as dropped). */
CV_API int cv_trace_new(size_t cap, cv_trace **out);
CV_API void cv_trace_free(cv_trace *t);
CV_API size_t cv_trace_len(const cv_trace *t);
CV_API const cv_trace_rec *cv_trace_recs(const cv_trace *t);
CV_API void cv_trace_clear(cv_trace *t);

typedef struct cv_sim_result {
	double wall_ms;        /* what the device would have taken */
	uint64_t reads;
	double read_ms_mean;   /* simulated per-read latency */
	double inflight_mean;  /* time-averaged reads in flight */
	double iops;
	/* the competing work (cv_sim_load) over the same span */
	uint64_t bg_reads;
	double bg_read_ms_mean;
	uint64_t bg_write_bytes;
	double bg_write_mibps;
} cv_sim_result;

/*
 * Competing work replayed beside a trace through the same device queues:
 * `readers` closed-loop queue-depth-one readers of reader_bytes (a run's
 * `load`), and a bulk writer that writes write_sync bytes as
 * write_sync / write_chunk writes at once, waits for them all (its
 * fdatasync) and starts the next flush, until write_max_bytes (0: no
 * limit) (a run's `bulkwrite`). Both start before the trace (a warm-up of
 * ten mean service times, so the trace meets them in their steady state)
 * and stop issuing when the trace's last read is issued.
 */
typedef struct cv_sim_load {
	unsigned readers;
	uint32_t reader_bytes;    /* 0: 4096 */
	uint64_t write_chunk;     /* 0: no writer */
	uint64_t write_sync;      /* 0: write_chunk */
	uint64_t write_max_bytes; /* 0: no limit */
} cv_sim_load;

/* Replay a trace against a device in virtual time (discrete events). */
CV_API int cv_device_simulate(const cv_device *dev, const cv_trace *t, uint64_t seed,
			      cv_sim_result *out);
/* The same with competing work beside it (load NULL: none). */
CV_API int cv_device_simulate_load(const cv_device *dev, const cv_trace *t, uint64_t seed,
				   const cv_sim_load *load, cv_sim_result *out);

/* ---- I/O contexts ---- */

typedef struct cv_io_opts {
	cv_io_strategy strategy;
	unsigned queue_depth;     /* ring size / most reads in flight; 0: 64 */
	const cv_device *device;  /* NULL: the real device only; else delayed in real time */
	cv_trace *trace;          /* NULL: no trace (borrowed, must outlive the io) */
	uint32_t stream;          /* stream id for synchronous reads */
} cv_io_opts;

typedef struct cv_io cv_io;

CV_API void cv_io_opts_default(cv_io_opts *o);
CV_API int cv_io_new(const cv_io_opts *o, cv_io **out);
CV_API void cv_io_free(cv_io *io);
CV_API const cv_io_opts *cv_io_get_opts(const cv_io *io);
CV_API void cv_io_set_stream(cv_io *io, uint32_t stream);

typedef struct cv_read_req {
	cv_file *file;
	uint64_t off;
	uint32_t len;
	void *buf;              /* NULL with the mmap strategy: a view, see data */
	uint32_t stream, batch; /* for async submissions; ignored by read/read_batch */
	unsigned flags;         /* CV_READ_VIEW */
	int res;                /* on completion: 0 or -errno (a short read is -EIO) */
	void *user;             /* the caller's tag, untouched */
	const void *data;       /* on completion: the bytes (buf, or the mapping for a view) */
} cv_read_req;

/*
 * The caller takes data, not buf: the auto strategy may then hand back a
 * view of the mapping where the page cache holds the bytes (buf is still
 * required, for the reads it does not). mmap gives views either way.
 */
#define CV_READ_VIEW 1u

/* One read, waited for: a batch of one. 0 or -errno. */
CV_API int cv_io_read(cv_io *io, cv_file *f, uint64_t off, uint32_t len, void *buf);

/*
 * Views: with the mmap strategy a read may name no buffer; it is then
 * counted, timed, traced and delayed by a device model like any read,
 * and req.data points into the file's mapping instead of a copy; mmap
 * touches its pages (so a miss faults inside the read, as a copy would),
 * auto's are resident and are not touched first. Valid
 * while the file is open. cv_io_views says whether io gives them: 1
 * (mmap: every read, no buffer needed), 2 (auto: reads flagged
 * CV_READ_VIEW whose pages are resident; each still names a buffer for
 * the rest), 0 (none). cv_io_view is one read with no buffer, waited for;
 * strategies other than mmap: -EINVAL.
 */
CV_API int cv_io_views(const cv_io *io);
CV_API int cv_io_view(cv_io *io, cv_file *f, uint64_t off, uint32_t len, const void **data);

/*
 * A hint for the view to come: with views, the CPU is asked to bring the
 * first cache line of each 4 KiB page of bytes [off, off + len) of f's
 * mapping toward its caches (and so their translations), so that scoring
 * one posting hides part of the memory latency of the next. (A prefetch of
 * every line was measured: no faster, the burst of them stalls.)
 * A prefetch never faults: a page not in memory is skipped, no read is made,
 * counted or timed, and the later view reads it as it would have. mmap and
 * auto (whose resident pages a view may take); other
 * strategies, or a range past the end: nothing.
 */
CV_API void cv_io_view_prefetch(const cv_io *io, const cv_file *f, uint64_t off, uint32_t len);

/* n reads in flight together (up to queue_depth at a time), all waited for. */
CV_API int cv_io_read_batch(cv_io *io, cv_read_req *reqs, size_t n);

/*
 * Asynchronous reads (uring; other strategies complete at once, in
 * submission order). submit returns 0, -EBUSY when queue_depth reads are
 * in flight, or -errno. reap returns the number of completed requests put
 * in done[] (at least min_wait unless none are in flight), or -errno.
 */
CV_API int cv_io_submit(cv_io *io, cv_read_req *req);
CV_API int cv_io_reap(cv_io *io, cv_read_req **done, size_t max, size_t min_wait);
CV_API unsigned cv_io_inflight(const cv_io *io);

typedef struct cv_io_stats {
	uint64_t reads, bytes;
	cv_hist lat_ns;          /* per-read latency, submission to completion */
	cv_hist inflight;        /* reads in flight, sampled at each submission */
	uint64_t inflight_max;
	uint64_t busy_ns;        /* time with at least one read in flight */
} cv_io_stats;

CV_API void cv_io_stats_get(const cv_io *io, cv_io_stats *out);
CV_API void cv_io_stats_reset(cv_io *io);
CV_API void cv_io_stats_merge(cv_io_stats *into, const cv_io_stats *from);

/* ---- page cache ---- */

/*
 * fdatasync + POSIX_FADV_DONTNEED over the whole file, given again (up to
 * twice, 50 ms apart) while cachestat still counts a resident page. It
 * proves nothing: cv_cache_residency does. 0 or -errno.
 */
CV_API int cv_cache_evict(const char *path);

typedef struct cv_residency {
	uint64_t pages, resident;
	const char *method; /* "cachestat" or "mincore" */
} cv_residency;

/*
 * Pages resident in the page cache: cachestat(2) where the kernel has
 * it, else mincore(2) on a mapping of the file opened for writing.
 * -EACCES when only an untrustworthy answer could be had (never a pass).
 */
CV_API int cv_cache_residency(const char *path, cv_residency *out);

/* Read the listed blocks (block_size each) into the page cache. */
CV_API int cv_cache_prewarm(const char *path, const uint64_t *blocks, size_t n,
			    uint32_t block_size);

/* ---- probe: random reads at a fixed queue depth (fio-like) ---- */

typedef struct cv_probe_opts {
	unsigned qd;              /* queue depth */
	uint32_t bs;              /* block size in bytes */
	uint64_t reads;           /* how many reads */
	cv_io_strategy strategy;  /* default uring */
	uint64_t seed;
	const cv_device *device;  /* optional, real-time delay */
} cv_probe_opts;

typedef struct cv_probe_result {
	uint64_t reads;
	double wall_s, iops, mibps;
	double lat_mean_ms, lat_p50_ms, lat_p99_ms, lat_max_ms;
} cv_probe_result;

CV_API int cv_probe(const char *path, const cv_probe_opts *o, cv_probe_result *out, cv_err *e);

/* ---- block-device counters (/sys/block/.../stat) ---- */

typedef struct cv_blkdev {
	char part[64];       /* the partition (or whole disk) the file lives on */
	char disk[64];       /* the whole disk */
	char stat_path[300]; /* the stat file read */
	int rotational;      /* -1 unknown */
	int read_ahead_kb;   /* -1 unknown */
	char scheduler[64];
	char model[128];
} cv_blkdev;

typedef struct cv_blkstat {
	uint64_t reads, read_merges, read_sectors, read_ms;
	uint64_t writes, write_merges, write_sectors, write_ms;
	uint64_t in_flight, io_ticks_ms, time_in_queue_ms;
	uint64_t t_ns; /* CLOCK_MONOTONIC when read */
} cv_blkstat;

/*
 * Find the block device under path (st_dev -> /sys/dev/block/M:m).
 * -ENODEV (with why in e) for virtual, loop, overlay or stat-less
 * devices: "not available", never a wrong number.
 */
CV_API int cv_blkdev_for_path(const char *path, cv_blkdev *out, cv_err *e);
CV_API int cv_blkdev_stat(const cv_blkdev *dev, cv_blkstat *out);


/* ---- additions (appended; the declarations above are the contract) ---- */

/* Reads that did not fit in the trace's capacity. */
CV_API uint64_t cv_trace_dropped(const cv_trace *t);
/* The trace's file table: cv_trace_rec.file indexes it. Borrowed strings. */
CV_API uint32_t cv_trace_nfiles(const cv_trace *t);
CV_API const char *cv_trace_file_path(const cv_trace *t, uint32_t idx);
/* Append a record made by hand (a synthetic or reloaded trace); 0 or -ENOSPC. */
CV_API int cv_trace_append(cv_trace *t, const cv_trace_rec *r);

/* The device's mean service time at queue depth 1, in ms. */
CV_API double cv_device_mean_ms(const cv_device *dev);
/* A human description of the model (servers, distribution, caps) into buf; returns buf. */
CV_API const char *cv_device_describe(const cv_device *dev, char *buf, size_t n);

/* Flush queued uring submissions to the kernel without waiting (no-op for others). */
CV_API int cv_io_flush(cv_io *io);


/* The change between two blkstat readings, with the derived figures. */
typedef struct cv_blkdelta {
	uint64_t reads, read_sectors, read_ms, io_ticks_ms;
	uint64_t writes, write_sectors;
	double wall_s;        /* between the two readings */
	double read_ms_mean;  /* read_ms / reads (0 when no reads) */
	double busy;          /* io_ticks / wall, 0..1 */
	double read_bytes;    /* read_sectors * 512 */
} cv_blkdelta;

CV_API void cv_blkstat_delta(const cv_blkstat *before, const cv_blkstat *after, cv_blkdelta *out);

/*
 * Trace files ("cvtrace" v1, little-endian: header, file table, 40-byte
 * records, CRC-32 trailer; see engine/io/tracefile.c). Save writes whole
 * (temporary file, fsync, rename); load and decode refuse damage with
 * -EBADMSG and the byte offset in e. A loaded trace replays with
 * cv_device_simulate like a captured one.
 */
CV_API int cv_trace_encode(const cv_trace *t, uint8_t **out, size_t *n);
CV_API int cv_trace_save(const cv_trace *t, const char *path, cv_err *e);
CV_API int cv_trace_decode(const uint8_t *buf, size_t n, cv_trace **out, cv_err *e);
CV_API int cv_trace_load(const char *path, cv_trace **out, cv_err *e);

/*
 * Add another context's counters into io's (a query that drove reads from
 * helper threads, each with its own context, reports them in the caller's):
 * reads, bytes, histograms and busy time add; io's inflight_max becomes
 * the larger of its own and inflight_max (the most reads the caller knows
 * were in flight across the contexts together; 0 when unknown). The
 * in-flight histogram stays per context (samples are each ring's count).
 */
CV_API void cv_io_stats_add(cv_io *io, const cv_io_stats *from, uint64_t inflight_max);

#endif
