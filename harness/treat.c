/*
 * treat.c - the treatments a run can apply beside its queries, and the
 * virtual-time replay of one query.
 *
 * Competing readers (`load`): N threads, each a cv_io at queue depth one
 * over O_DIRECT, reading random block_bytes blocks of the index's own
 * files (the same files and device as the queries; O_DIRECT so that they
 * never put a page in the page cache the queries read from). Under a
 * device profile in real time they share the run's cv_device, so their
 * reads queue in the same modelled servers as the queries' reads: the
 * load goes through the model. In virtual time no thread runs: each
 * query's replay has the readers beside it in the same device queues
 * (cv_device_simulate_load), and the record sums their modelled reads.
 *
 * Bulk writes (`bulkwrite`): one thread writes a scratch file
 * sequentially in chunk_bytes writes with fdatasync every sync_bytes,
 * until max_bytes or max_s or the end of the run, then drops its pages
 * and removes it. The file lives on the index's file system (study
 * scratch_dir, or the directory holding the index), and the record says
 * whether it shares the index's device. Under a device profile in real
 * time each flush (sync_bytes / chunk_bytes writes) also waits in the
 * model's queues (cv_device_write_wait), so the writes compete with the
 * reads there ("through_model": true). In virtual time no thread runs:
 * each query's replay has a writer beside it in the same queues.
 *
 * Client placement (`client_cpus`): each client thread pins itself with
 * pthread_setaffinity_np before its first query; the set asked for must
 * lie within the process's allowed CPUs.
 *
 * Virtual time: a query's trace (every read it issued, with real submit
 * and completion times) is replayed against the device in virtual time
 * (cv_device_simulate). Reads of blocks a prewarm put in the page cache
 * are page-cache hits on the modelled machine too, so they keep their
 * real latency and are left out of the replay. The query's virtual
 * latency is its real latency with the real span of the replayed reads
 * replaced by the replay's span (the CPU gaps between batches are kept
 * inside the replay, the CPU before the first and after the last read
 * outside it). A prewarm's own cost (the record's prewarm_ms and
 * prewarm_s) is its block list replayed the same way, one read after
 * another (harness_vtime_prewarm): in the model a block read early costs
 * what it costs during the query, there being no locality to gain from
 * the list's sorted order.
 *
 * Error convention: 0 or CS_EXIT_* with cs_err filled (engine -errno
 * translated at this boundary).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "harness_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- competing readers ---- */

typedef struct reader_arg {
	harness_readers *R;
	unsigned i;
} reader_arg;

struct harness_readers {
	unsigned n;
	uint32_t block;
	const cv_device *dev;
	cv_file **files;
	uint64_t *sizes;
	size_t nfiles;
	uint64_t total;
	pthread_t *th;
	unsigned started;
	atomic_int stop;
	cv_io_stats *stats;
	int *err;
	reader_arg *args;
};

/* splitmix64: a cheap, seedable generator for offsets. */
static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* One reader: QD1 random reads until stopped. */
static void *reader(void *p)
{
	reader_arg *a = p;
	harness_readers *R = a->R;
	cv_io_opts o;
	cv_io *io = NULL;
	void *buf = cv_alloc_aligned(R->block);
	uint64_t seed = 0x5eed0000u + a->i;
	int rc;

	cv_io_opts_default(&o);
	o.strategy = CV_IO_DIRECT;
	o.queue_depth = 1;
	o.device = R->dev;
	o.stream = 1000000u + a->i;
	rc = buf ? cv_io_new(&o, &io) : -ENOMEM;
	while (!rc && !atomic_load(&R->stop)) {
		uint64_t pick = mix(&seed) % R->total, off;
		size_t f = 0;

		while (f + 1 < R->nfiles && pick >= R->sizes[f]) {
			pick -= R->sizes[f];
			f++;
		}
		off = (pick / R->block) * R->block;
		if (off + R->block > R->sizes[f])
			continue;
		rc = cv_io_read(io, R->files[f], off, R->block, buf);
	}
	if (io)
		cv_io_stats_get(io, &R->stats[a->i]);
	R->err[a->i] = rc;
	cv_io_free(io);
	free(buf);
	return NULL;
}

int harness_readers_start(char **files, size_t nfiles, unsigned n, uint32_t block,
			  const cv_device *dev, harness_readers **out, cs_err *e)
{
	harness_readers *R = calloc(1, sizeof(*R));

	*out = NULL;
	if (!R)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	R->n = n;
	R->block = block;
	R->dev = dev;
	R->files = calloc(nfiles, sizeof(*R->files));
	R->sizes = calloc(nfiles, sizeof(*R->sizes));
	R->th = calloc(n, sizeof(*R->th));
	R->stats = calloc(n, sizeof(*R->stats));
	R->err = calloc(n, sizeof(*R->err));
	R->args = calloc(n, sizeof(*R->args));
	if (!R->files || !R->sizes || !R->th || !R->stats || !R->err || !R->args) {
		cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < nfiles; i++) {
		cv_file *f = NULL;
		int r = cv_file_open(files[i], 0, &f);

		if (r) {
			cs_err_set(e, CS_EXIT_INTERNAL, "%s: competing reader cannot open: %s", files[i],
				   strerror(-r));
			goto fail;
		}
		if (cv_file_size(f) < block) {
			cv_file_close(f);
			continue;
		}
		R->files[R->nfiles] = f;
		R->sizes[R->nfiles++] = cv_file_size(f);
		R->total += cv_file_size(f);
	}
	if (!R->nfiles) {
		cs_err_set(e, CS_EXIT_BADINPUT, "load: no index file holds a %u-byte block", block);
		goto fail;
	}
	for (unsigned i = 0; i < n; i++) {
		R->args[i].R = R;
		R->args[i].i = i;
		if (pthread_create(&R->th[i], NULL, reader, &R->args[i])) {
			cs_err_set(e, CS_EXIT_INTERNAL, "cannot start competing reader %u", i);
			goto fail;
		}
		R->started++;
	}
	*out = R;
	return 0;
fail:
	harness_readers_stop(R, NULL);
	return e->code ? e->code : CS_EXIT_INTERNAL;
}

json_t *harness_readers_stop(harness_readers *R, cs_err *e)
{
	json_t *j = NULL;
	cv_io_stats all;
	int err = 0;

	if (!R)
		return NULL;
	atomic_store(&R->stop, 1);
	for (unsigned i = 0; i < R->started; i++)
		pthread_join(R->th[i], NULL);
	memset(&all, 0, sizeof(all));
	for (unsigned i = 0; i < R->started; i++) {
		cv_io_stats_merge(&all, &R->stats[i]);
		if (R->err[i] && !err)
			err = R->err[i];
	}
	if (err && e)
		cs_err_set(e, CS_EXIT_INTERNAL,
			   "competing reader failed: %s (O_DIRECT on the index's file system?)",
			   strerror(-err));
	else if (R->started == R->n && e)
		j = json_pack("{s:I, s:I, s:s, s:I, s:I, s:o, s:b}", "readers", (json_int_t) R->n,
			      "block_bytes", (json_int_t) R->block, "strategy", "direct",
			      "queue_depth", (json_int_t) 1, "reads", (json_int_t) all.reads,
			      "read_ms_mean",
			      all.reads ? json_real((double) all.lat_ns.sum / (double) all.reads / 1e6)
					: json_null(),
			      "through_model", R->dev != NULL);
	for (size_t i = 0; i < R->nfiles; i++)
		cv_file_close(R->files[i]);
	free(R->files);
	free(R->sizes);
	free(R->th);
	free(R->stats);
	free(R->err);
	free(R->args);
	free(R);
	return j;
}

/* ---- bulk writes ---- */

struct harness_writer {
	char path[PATH_MAX];
	int fd;
	uint64_t max_bytes, chunk, sync_bytes;
	double max_s;
	pthread_t th;
	int started;
	atomic_int stop;
	uint64_t written, syncs;
	double secs;
	int err;
	int same_dev;
	int made_dir;
	char dir[PATH_MAX];
	const cv_device *dev; /* the model the flushes also pass through, or NULL */
	double model_ms;      /* time the flushes waited in the model */
};

static void *writer(void *p)
{
	harness_writer *W = p;
	char *buf = malloc(W->chunk);
	uint64_t seed = 0xb01c, since = 0, t0 = cs_mono_ns();

	if (!buf) {
		W->err = -ENOMEM;
		return NULL;
	}
	for (uint64_t i = 0; i + 8 <= W->chunk; i += 8) {
		uint64_t r = mix(&seed);

		memcpy(buf + i, &r, 8);
	}
	while (!atomic_load(&W->stop) && W->written < W->max_bytes &&
	       (double) (cs_mono_ns() - t0) / 1e9 < W->max_s) {
		size_t n = (size_t) (W->max_bytes - W->written < W->chunk ? W->max_bytes - W->written
									   : W->chunk);
		ssize_t w = write(W->fd, buf, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			W->err = -errno;
			break;
		}
		W->written += (uint64_t) w;
		since += (uint64_t) w;
		if (since >= W->sync_bytes) {
			if (fdatasync(W->fd)) {
				W->err = -errno;
				break;
			}
			if (W->dev) {
				uint64_t nw = (since + W->chunk - 1) / W->chunk;

				W->model_ms += (double) cv_device_write_wait(W->dev, W->chunk,
									     (unsigned) (nw < 4096 ? nw : 4096)) / 1e6;
			}
			W->syncs++;
			since = 0;
		}
	}
	if (!W->err && since && fdatasync(W->fd) == 0)
		W->syncs++;
	W->secs = (double) (cs_mono_ns() - t0) / 1e9;
	free(buf);
	return NULL;
}

int harness_writer_start(const char *dir, const char *index, uint64_t max_bytes, double max_s,
			 uint64_t chunk, uint64_t sync_bytes, const cv_device *dev,
			 harness_writer **out, cs_err *e)
{
	harness_writer *W = calloc(1, sizeof(*W));
	struct stat a, b;

	*out = NULL;
	if (!W)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	W->fd = -1;
	W->max_bytes = max_bytes;
	W->max_s = max_s;
	W->chunk = chunk;
	W->sync_bytes = sync_bytes;
	W->dev = dev;
	/* The study's scratch directory may not exist yet: make it (one level). */
	if (mkdir(dir, 0700) == 0)
		W->made_dir = 1;
	snprintf(W->dir, sizeof(W->dir), "%s", dir);
	snprintf(W->path, sizeof(W->path), "%s/.coldstudy-bulkwrite.%ld", dir, (long) getpid());
	W->fd = open(W->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (W->fd < 0) {
		int er = errno;

		if (W->made_dir)
			rmdir(W->dir);
		free(W);
		return cs_err_set(e, CS_EXIT_INTERNAL, "bulkwrite: %s/: cannot create a scratch file: %s",
				  dir, strerror(er));
	}
	W->same_dev = stat(index, &a) == 0 && fstat(W->fd, &b) == 0 && a.st_dev == b.st_dev;
	if (pthread_create(&W->th, NULL, writer, W)) {
		close(W->fd);
		unlink(W->path);
		free(W);
		return cs_err_set(e, CS_EXIT_INTERNAL, "bulkwrite: cannot start the writer thread");
	}
	W->started = 1;
	*out = W;
	return 0;
}

json_t *harness_writer_stop(harness_writer *W, cs_err *e)
{
	json_t *j = NULL;

	if (!W)
		return NULL;
	atomic_store(&W->stop, 1);
	if (W->started)
		pthread_join(W->th, NULL);
	if (W->fd >= 0) {
		posix_fadvise(W->fd, 0, 0, POSIX_FADV_DONTNEED);
		close(W->fd);
	}
	unlink(W->path);
	if (W->made_dir)
		rmdir(W->dir);
	if (W->err && e)
		cs_err_set(e, CS_EXIT_INTERNAL, "bulkwrite: %s: %s", W->path, strerror(-W->err));
	else if (e)
		j = json_pack("{s:I, s:I, s:I, s:f, s:I, s:f, s:b, s:b, s:b}", "bytes_written",
			      (json_int_t) W->written, "chunk_bytes", (json_int_t) W->chunk,
			      "sync_bytes", (json_int_t) W->sync_bytes, "seconds", W->secs, "fdatasyncs",
			      (json_int_t) W->syncs, "mib_s",
			      W->secs > 0 ? (double) W->written / 1048576.0 / W->secs : 0.0,
			      "same_device_as_index", W->same_dev, "through_model", W->dev != NULL,
			      "removed", access(W->path, F_OK) != 0);
	if (j && W->dev)
		json_object_set_new(j, "model_wait_ms", json_real(W->model_ms));
	free(W);
	return j;
}

/* ---- client placement ---- */

int harness_cpuset_check(const json_t *cpus, cs_err *e)
{
	cpu_set_t allowed;
	size_t i;
	json_t *x;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return cs_err_set(e, CS_EXIT_INTERNAL, "sched_getaffinity: %s", strerror(errno));
	json_array_foreach(cpus, i, x) {
		json_int_t c = json_integer_value(x);

		if (c < 0 || c >= CPU_SETSIZE || !CPU_ISSET((int) c, &allowed))
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "$.client_cpus[%zu]: CPU %lld is not among this process's "
					  "%d allowed CPUs",
					  i, (long long) c, CPU_COUNT(&allowed));
	}
	return 0;
}

int harness_pin_self(const json_t *cpus)
{
	cpu_set_t set;
	size_t i;
	json_t *x;

	CPU_ZERO(&set);
	json_array_foreach(cpus, i, x)
		CPU_SET((int) json_integer_value(x), &set);
	return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

json_t *harness_affinity_now(void)
{
	cpu_set_t set;
	json_t *a = json_array();

	if (!a || pthread_getaffinity_np(pthread_self(), sizeof(set), &set))
		return a;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			json_array_append_new(a, json_integer(c));
	return a;
}

/* ---- block sets (prewarm) ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* A blockset key: file << 40 | block (blocks below 2^40), and its two halves. */
#define KEY_BLOCK_BITS 40

static inline uint64_t key_of(uint64_t file, uint64_t block)
{
	return (file << KEY_BLOCK_BITS) | (block & ((1ull << KEY_BLOCK_BITS) - 1));
}

static inline uint32_t key_file(uint64_t k)
{
	return (uint32_t) (k >> KEY_BLOCK_BITS);
}

static inline uint64_t key_block(uint64_t k)
{
	return k & ((1ull << KEY_BLOCK_BITS) - 1);
}

int harness_blockset_from(const cv_block_list *bl, harness_blockset *out)
{
	memset(out, 0, sizeof(*out));
	if (!bl->n)
		return 0;
	out->key = malloc(bl->n * sizeof(*out->key));
	if (!out->key)
		return -ENOMEM;
	for (size_t i = 0; i < bl->n; i++)
		out->key[i] = key_of(bl->file[i], bl->block[i]);
	qsort(out->key, bl->n, sizeof(*out->key), cmp_u64);
	for (size_t i = 0; i < bl->n; i++)
		if (!out->n || out->key[out->n - 1] != out->key[i])
			out->key[out->n++] = out->key[i];
	return 0;
}

void harness_blockset_free(harness_blockset *s)
{
	if (s) {
		free(s->key);
		s->key = NULL;
		s->n = 0;
	}
}

int harness_blockset_has(const harness_blockset *s, uint32_t file, uint64_t block)
{
	uint64_t k = key_of(file, block);

	return s && s->n && bsearch(&k, s->key, s->n, sizeof(k), cmp_u64) != NULL;
}

int harness_prewarm(char **files, size_t nfiles, const harness_blockset *s)
{
	uint64_t *blocks = NULL;
	int rc = 0;

	if (!s->n)
		return 0;
	blocks = malloc(s->n * sizeof(*blocks));
	if (!blocks)
		return -ENOMEM;
	for (size_t f = 0; f < nfiles && !rc; f++) {
		size_t n = 0;

		for (size_t i = 0; i < s->n; i++)
			if (key_file(s->key[i]) == f)
				blocks[n++] = key_block(s->key[i]);
		if (n)
			rc = cv_cache_prewarm(files[f], blocks, n, HARNESS_BLOCK);
	}
	free(blocks);
	return rc;
}

/* ---- virtual time ---- */

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* The index-file number of trace file fi (matched by name), or -1. */
static long trace_file_index(const cv_trace *t, uint32_t fi, char **files, size_t nfiles)
{
	const char *p = cv_trace_file_path(t, fi);

	if (!p)
		return -1;
	for (size_t i = 0; i < nfiles; i++)
		if (!strcmp(base_name(files[i]), base_name(p)))
			return (long) i;
	return -1;
}

int harness_vtime_query(const cv_device *dev, const cv_trace *t, uint64_t seed,
			const cv_sim_load *bg, const harness_blockset *hits, char **files,
			size_t nfiles, double real_lat_ms, harness_vq *out)
{
	size_t n = cv_trace_len(t);
	const cv_trace_rec *recs = cv_trace_recs(t);
	cv_trace *dt = NULL;
	const cv_trace *use = t;
	uint64_t lo = UINT64_MAX, hi = 0;
	double hit_ms = 0;
	size_t nd = 0;
	cv_sim_result r;
	int rc;

	memset(out, 0, sizeof(*out));
	out->lat_ms = real_lat_ms;
	if (cv_trace_dropped(t))
		return -ENOSPC;
	if (!n)
		return 0;
	if (hits && hits->n) {
		rc = cv_trace_new(n, &dt);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < n; i++) {
		const cv_trace_rec *x = &recs[i];
		int hit = 0;

		if (dt) {
			long fi = trace_file_index(t, x->file, files, nfiles);

			if (fi >= 0 && x->len) {
				hit = 1;
				for (uint64_t b = x->off / HARNESS_BLOCK;
				     b <= (x->off + x->len - 1) / HARNESS_BLOCK; b++)
					if (!harness_blockset_has(hits, (uint32_t) fi, b)) {
						hit = 0;
						break;
					}
			}
		}
		if (hit) {
			hit_ms += (double) (x->complete_ns - x->submit_ns) / 1e6;
			out->hit_reads++;
			continue;
		}
		if (dt && (rc = cv_trace_append(dt, x))) {
			cv_trace_free(dt);
			return rc;
		}
		nd++;
		if (x->submit_ns < lo)
			lo = x->submit_ns;
		if (x->complete_ns > hi)
			hi = x->complete_ns;
	}
	if (dt)
		use = dt;
	out->device_reads = nd;
	out->read_ms = hit_ms;
	if (nd) {
		double span = (double) (hi - lo) / 1e6;

		rc = cv_device_simulate_load(dev, use, seed, bg, &r);
		if (rc) {
			cv_trace_free(dt);
			return rc;
		}
		out->read_ms += r.read_ms_mean * (double) r.reads;
		out->lat_ms = real_lat_ms - span + r.wall_ms;
		if (out->lat_ms < r.wall_ms)
			out->lat_ms = r.wall_ms;
		out->span_real_ms = span;
		out->span_virtual_ms = r.wall_ms;
		out->sim = r;
	}
	cv_trace_free(dt);
	return 0;
}

int harness_vtime_prewarm(const cv_device *dev, const harness_blockset *s, uint64_t seed,
			  double *ms)
{
	cv_trace *t = NULL;
	cv_sim_result r;
	int rc;

	*ms = 0;
	if (!s || !s->n)
		return 0;
	rc = cv_trace_new(s->n, &t);
	if (rc)
		return rc;
	for (size_t i = 0; i < s->n && !rc; i++) {
		/* back to back: each read submitted when the one before completed */
		cv_trace_rec x = {.stream = 0, .batch = (uint32_t) i,
				  .off = key_block(s->key[i]) * HARNESS_BLOCK,
				  .len = HARNESS_BLOCK, .file = key_file(s->key[i]),
				  .submit_ns = (uint64_t) i * 1000, .complete_ns = (uint64_t) (i + 1) * 1000};

		rc = cv_trace_append(t, &x);
	}
	if (!rc)
		rc = cv_device_simulate(dev, t, seed, &r);
	if (!rc)
		*ms = r.wall_ms;
	cv_trace_free(t);
	return rc;
}
