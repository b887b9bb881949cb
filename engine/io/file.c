/*
 * file.c - opening files for counted reads, aligned memory, strategy
 * names, and the small helpers (clock, PRNG) the rest of engine/io uses.
 *
 * A cv_file opens its path three ways at once so that every strategy can
 * read it without another open on the hot path: a buffered descriptor
 * (pread, and the one read-ahead advice is given on), an O_DIRECT
 * descriptor (direct, uring; -1 where the file system refuses O_DIRECT)
 * and a read-only shared mapping (mmap). Read-ahead is turned off with
 * POSIX_FADV_RANDOM and MADV_RANDOM unless CV_FILE_READAHEAD is given,
 * because an index's reads are random and read-ahead turns a 3 KB read
 * into a 128 KB one. The file is assumed not to change size while open.
 *
 * The auto strategy asks mincore(2) whether a range is resident. Since
 * Linux 5.0 mincore on a shared file mapping tells the truth only to a
 * caller that owns the file or may write it (inode_owner_or_capable, or
 * write permission); anyone else is told every page is resident, which
 * would turn a cold read into page faults at queue depth one. So the open
 * decides once, from the descriptor, whether mincore may be believed
 * (incore_ok), erring toward no: then auto is pread.
 */
#include "io_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_uint next_file_id = 1;

CV_API int cv_io_strategy_parse(const char *s, cv_io_strategy *out)
{
	if (!s)
		return -EINVAL;
	if (!strcmp(s, "mmap"))
		*out = CV_IO_MMAP;
	else if (!strcmp(s, "pread"))
		*out = CV_IO_PREAD;
	else if (!strcmp(s, "direct"))
		*out = CV_IO_DIRECT;
	else if (!strcmp(s, "uring"))
		*out = CV_IO_URING;
	else if (!strcmp(s, "auto"))
		*out = CV_IO_AUTO;
	else
		return -EINVAL;
	return 0;
}

CV_API const char *cv_io_strategy_name(cv_io_strategy s)
{
	switch (s) {
	case CV_IO_MMAP: return "mmap";
	case CV_IO_PREAD: return "pread";
	case CV_IO_DIRECT: return "direct";
	case CV_IO_URING: return "uring";
	case CV_IO_AUTO: return "auto";
	}
	return "?";
}

CV_API void *cv_alloc_aligned(size_t size)
{
	void *p = NULL;

	if (size == 0)
		size = CV_IO_ALIGN;
	if (posix_memalign(&p, CV_IO_ALIGN, size))
		return NULL;
	return p;
}

/*
 * Open path for every strategy; 0 or -errno. *out is new, free with cv_file_close.
 * The O_DIRECT descriptor reopens the file the first one holds (through
 * /proc/self/fd), so both read the same file whatever its name meanwhile.
 */
CV_API int cv_file_open(const char *path, unsigned flags, cv_file **out)
{
	cv_file *f;
	struct stat sb;
	int rc = -ENOMEM;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = -1;
	f->fd_direct = -1;
	f->flags = flags;
	f->path = strdup(path);
	if (!f->path)
		goto out;
	f->fd = open(path, O_RDONLY | O_CLOEXEC | ((flags & CV_FILE_NOFOLLOW) ? O_NOFOLLOW : 0));
	if (f->fd < 0) {
		rc = -errno;
		goto out;
	}
	if (fstat(f->fd, &sb) < 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(sb.st_mode) && !S_ISBLK(sb.st_mode)) {
		rc = -EINVAL;
		goto out;
	}
	f->size = (uint64_t) sb.st_size;
	if (S_ISBLK(sb.st_mode)) {
		off_t end = lseek(f->fd, 0, SEEK_END);

		f->size = end > 0 ? (uint64_t) end : 0;
	}
	{
		char self[64];
		struct stat db;

		snprintf(self, sizeof(self), "/proc/self/fd/%d", f->fd);
		f->fd_direct = open(self, O_RDONLY | O_CLOEXEC | O_DIRECT);
		if (f->fd_direct >= 0 && (fstat(f->fd_direct, &db) < 0 || db.st_dev != sb.st_dev ||
					  db.st_ino != sb.st_ino)) {
			close(f->fd_direct);
			f->fd_direct = -1;
		}
	}
	if (!(flags & CV_FILE_READAHEAD)) {
		posix_fadvise(f->fd, 0, 0, POSIX_FADV_RANDOM);
		if (f->fd_direct >= 0)
			posix_fadvise(f->fd_direct, 0, 0, POSIX_FADV_RANDOM);
	}
	if (f->size > 0) {
		f->map = mmap(NULL, f->size, PROT_READ, MAP_SHARED, f->fd, 0);
		if (f->map == MAP_FAILED) {
			f->map = NULL;
		} else if (!(flags & CV_FILE_READAHEAD)) {
			madvise(f->map, f->size, MADV_RANDOM);
		}
	}
	/* owner, or write permission by the effective ids (EROFS on a read-only mount: no) */
	f->incore_ok = f->map && (sb.st_uid == geteuid() ||
				  faccessat(f->fd, "", W_OK, AT_EMPTY_PATH | AT_EACCESS) == 0);
	f->id = atomic_fetch_add(&next_file_id, 1);
	*out = f;
	f = NULL;
	rc = 0;
out:
	cv_file_close(f);
	return rc;
}

/* Close and free; accepts NULL. */
CV_API void cv_file_close(cv_file *f)
{
	if (!f)
		return;
	if (f->map)
		munmap(f->map, f->size);
	free((void *) atomic_load(&f->seen));
	if (f->fd >= 0)
		close(f->fd);
	if (f->fd_direct >= 0)
		close(f->fd_direct);
	free(f->path);
	free(f);
}

CV_API void cv_file_release_pages(cv_file *f)
{
	_Atomic uint32_t *seen;

	if (!f || !f->map)
		return;
	seen = atomic_load(&f->seen);
	if (seen) /* first: a page no longer mapped is no longer known resident */
		for (uint64_t p = 0; p < (f->size + 4095) / 4096; p++)
			atomic_store_explicit(&seen[p], 0, memory_order_relaxed);
	madvise(f->map, f->size, MADV_DONTNEED); /* shared file pages: only the mappings go */
}

CV_API int cv_file_incore_ok(const cv_file *f)
{
	return f && f->incore_ok;
}

CV_API uint64_t cv_file_size(const cv_file *f)
{
	return f->size;
}

CV_API const char *cv_file_path(const cv_file *f)
{
	return f->path;
}

/* Sleep until CLOCK_MONOTONIC reaches t_ns (absolute, restarts on EINTR). */
void cvio_sleep_until(uint64_t t_ns)
{
	struct timespec ts = { .tv_sec = (time_t) (t_ns / 1000000000ull),
			       .tv_nsec = (long) (t_ns % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* True when off, len and buf all satisfy O_DIRECT's alignment. */
bool cvio_direct_ok(uint64_t off, uint32_t len, const void *buf)
{
	return (off % CV_IO_ALIGN) == 0 && (len % CV_IO_ALIGN) == 0 &&
	       ((uintptr_t) buf % CV_IO_ALIGN) == 0 && len > 0;
}

/* Grow *buf to at least n bytes (aligned); reuses it when big enough. 0 or -ENOMEM. */
int cvio_bounce_reserve(uint8_t **buf, uint32_t *cap, uint32_t n)
{
	uint8_t *p;
	uint32_t want;

	if (*cap >= n && *buf)
		return 0;
	want = *cap ? *cap : 16384u;
	while (want < n)
		want *= 2;
	p = cv_alloc_aligned(want);
	if (!p)
		return -ENOMEM;
	free(*buf);
	*buf = p;
	*cap = want;
	return 0;
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Seed the generator; the same seed gives the same sequence everywhere. */
void cvio_rng_seed(cvio_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* Next 64 random bits (xoshiro256**). */
uint64_t cvio_rng_next(cvio_rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

/* Uniform double in [0, 1). */
double cvio_rng_unit(cvio_rng *r)
{
	return (double) (cvio_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Standard normal by Box-Muller (one of the pair is dropped). */
double cvio_rng_normal(cvio_rng *r)
{
	double u1 = cvio_rng_unit(r), u2 = cvio_rng_unit(r);

	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
