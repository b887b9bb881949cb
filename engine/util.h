/*
 * util.h: the engine's shared plumbing, once: the read and write loops every
 * file format uses, and the thread team every parallel build and scan runs
 * on. Internal to libcoldvec (hidden; not in the installed headers).
 */
#ifndef CV_UTIL_H
#define CV_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* pread until n bytes or end of file, retrying EINTR: the bytes read, or -errno. */
ssize_t cvu_pread_full(int fd, void *buf, size_t n, uint64_t off);
/* pread exactly n bytes: 0, -EIO at end of file, or -errno. */
int cvu_pread_exact(int fd, void *buf, size_t n, uint64_t off);
/* pwrite all n bytes, retrying EINTR and short writes: 0 or -errno. */
int cvu_pwrite_full(int fd, const void *buf, size_t n, uint64_t off);

/* The threads to use: want, or the CPUs online when want is 0. */
unsigned cvu_threads(unsigned want);
/*
 * Run fn(ctx, w) on a team of threads w = 0 .. threads-1 (0 on the calling
 * thread), and wait for all. A thread that cannot be started is left out:
 * returns how many ran (at least 1).
 */
unsigned cvu_team(unsigned threads, void (*fn)(void *ctx, unsigned w), void *ctx);
/*
 * fn(ctx, i) for every i in [0, n), on cvu_threads(threads) threads (at
 * most 256) that claim chunks of `chunk` indexes in order until none are
 * left; serial when one thread or n <= chunk.
 */
void cvu_parallel_for(size_t n, size_t chunk, unsigned threads, void (*fn)(void *ctx, size_t i),
		      void *ctx);

#endif
