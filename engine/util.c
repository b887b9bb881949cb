/*
 * util.c: the read/write loops and the thread team (util.h).
 */
#include "util.h"
#include "cv_io.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

ssize_t cvu_pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, (char *) buf + got, n - got, (off_t) (off + got));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		got += (size_t) r;
	}
	return (ssize_t) got;
}

int cvu_pread_exact(int fd, void *buf, size_t n, uint64_t off)
{
	ssize_t r = cvu_pread_full(fd, buf, n, off);

	if (r < 0)
		return (int) r;
	return (size_t) r == n ? 0 : -EIO;
}

int cvu_pwrite_full(int fd, const void *buf, size_t n, uint64_t off)
{
	const char *p = buf;

	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t) off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t) w;
		off += (uint64_t) w;
	}
	return 0;
}

unsigned cvu_threads(unsigned want)
{
	long n;

	if (want)
		return want;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned) n : 1;
}

typedef struct team_arg {
	void (*fn)(void *, unsigned);
	void *ctx;
	unsigned w;
} team_arg;

static void *team_main(void *p)
{
	team_arg *a = p;

	a->fn(a->ctx, a->w);
	return NULL;
}

unsigned cvu_team(unsigned threads, void (*fn)(void *ctx, unsigned w), void *ctx)
{
	pthread_t *tid;
	team_arg *arg;
	unsigned started = 0;

	if (threads <= 1 || !(tid = calloc(threads, sizeof(*tid))))
		goto alone;
	if (!(arg = calloc(threads, sizeof(*arg)))) {
		free(tid);
		goto alone;
	}
	for (unsigned t = 1; t < threads; t++) {
		arg[t] = (team_arg){.fn = fn, .ctx = ctx, .w = t};
		if (pthread_create(&tid[t], NULL, team_main, &arg[t]))
			break;
		started++;
	}
	fn(ctx, 0);
	for (unsigned t = 1; t <= started; t++)
		pthread_join(tid[t], NULL);
	free(arg);
	free(tid);
	return started + 1;
alone:
	fn(ctx, 0);
	return 1;
}

typedef struct pfor {
	void (*fn)(void *, size_t);
	void *ctx;
	size_t n, chunk;
	atomic_size_t next;
} pfor;

static void pfor_worker(void *p, unsigned w)
{
	pfor *f = p;

	(void) w;
	for (;;) {
		size_t lo = atomic_fetch_add_explicit(&f->next, f->chunk, memory_order_relaxed), hi;

		if (lo >= f->n)
			break;
		hi = f->n - lo < f->chunk ? f->n : lo + f->chunk;
		for (size_t i = lo; i < hi; i++)
			f->fn(f->ctx, i);
	}
}

void cvu_parallel_for(size_t n, size_t chunk, unsigned threads, void (*fn)(void *ctx, size_t i),
		      void *ctx)
{
	pfor f = {.fn = fn, .ctx = ctx, .n = n, .chunk = chunk ? chunk : 1};
	unsigned t = cvu_threads(threads);

	atomic_init(&f.next, 0);
	if (t > 256)
		t = 256;
	if ((size_t) t > (n + f.chunk - 1) / f.chunk)
		t = (unsigned) ((n + f.chunk - 1) / f.chunk);
	if (t <= 1) {
		for (size_t i = 0; i < n; i++)
			fn(ctx, i);
		return;
	}
	cvu_team(t, pfor_worker, &f);
}

/* Declared in cv_io.h: a new file at path, never written through what had its name. */
CV_API int cv_open_new(const char *path, int flags, unsigned mode)
{
	if (unlink(path) < 0 && errno != ENOENT)
		return -1;
	return open(path, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t) mode);
}
