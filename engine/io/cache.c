/*
 * cache.c - the page cache: evict a file, prove how much of it is
 * resident, prewarm a block list.
 *
 * Eviction is fdatasync (dirty pages cannot be dropped) then
 * POSIX_FADV_DONTNEED over the whole file. Pages mapped by a running
 * process stay; that is why residency is measured afterwards, never
 * assumed.
 *
 * Residency comes from cachestat(2) (Linux 6.5, syscall 451) where the
 * kernel has it, else from mincore(2) on a shared mapping. mincore on a
 * file the caller may not write reports every page resident on newer
 * kernels (a side-channel fix), so its answer then says nothing: the
 * mincore path demands a descriptor opened for writing and returns
 * -EACCES otherwise. An answer that cannot be trusted is an error, never
 * a pass.
 */
#include "io_int.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct cvio_cachestat_range {
	uint64_t off, len;
};

struct cvio_cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

static uint64_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (uint64_t) p : 4096;
}

/*
 * Open a file to evict, measure or prewarm. A path through a held
 * descriptor ("/proc/PID/fd/N", "/proc/self/fd/N": the guards resolved and
 * checked it) is opened as it is; any other is a name inside a held folder
 * (an index's files) and a symlink there is not followed (-ELOOP): a file
 * swapped for a link to production is never evicted, warmed or measured.
 */
static int open_entry(const char *path, int flags)
{
	const char *p = path;

	if (!strncmp(p, "/proc/", 6)) {
		p += 6;
		if (!strncmp(p, "self", 4))
			p += 4;
		else
			while (*p >= '0' && *p <= '9')
				p++;
		if (!strncmp(p, "/fd/", 4)) {
			p += 4;
			if (*p)
				while (*p >= '0' && *p <= '9')
					p++;
			if (!*p)
				return open(path, flags | O_CLOEXEC);
		}
	}
	return open(path, flags | O_CLOEXEC | O_NOFOLLOW);
}

/*
 * fdatasync + POSIX_FADV_DONTNEED over the whole file. The kernel skips a
 * page it cannot drop at that instant (under writeback, locked, just read
 * on another CPU), so while cachestat on the same descriptor still counts
 * one resident the advice is given again, up to twice, 50 ms apart (seen
 * on the demo: 3 of 120,164 pages left by one pass, none by the next). A
 * page that stays (a mapping holds it) stays: proving the cache cold is
 * the caller's (guard_cold), never this. Without cachestat, one pass.
 */
CV_API int cv_cache_evict(const char *path)
{
	int fd = open_entry(path, O_RDONLY);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fdatasync(fd) < 0 && errno != EINVAL)
		rc = -errno;
	for (int t = 0; !rc && t < 3; t++) {
		cv_residency r;
		int a;

		if (t)
			nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
		a = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		if (a)
			rc = -a;
		else if (cvio_cachestat_fd(fd, &r) || !r.resident)
			break;
	}
	close(fd);
	return rc;
}

/* Residency by cachestat(2); -ENOSYS where the kernel lacks it. */
int cvio_cachestat_fd(int fd, cv_residency *out)
{
	struct cvio_cachestat_range range = { 0, 0 }; /* len 0: to the end of the file */
	struct cvio_cachestat cs = { 0 };
	struct stat sb;
	uint64_t ps = page_size();

	if (fstat(fd, &sb) < 0)
		return -errno;
	if (syscall(__NR_cachestat, fd, &range, &cs, 0) < 0)
		return -errno;
	out->pages = ((uint64_t) sb.st_size + ps - 1) / ps;
	out->resident = cs.nr_cache;
	if (out->resident > out->pages)
		out->resident = out->pages;
	out->method = "cachestat";
	return 0;
}

/* Residency by mincore(2), refused with -EACCES unless fd was opened for writing. */
int cvio_mincore_fd(int fd, cv_residency *out)
{
	struct stat sb;
	uint64_t ps = page_size(), pages, resident = 0;
	int fl = fcntl(fd, F_GETFL);
	unsigned char *vec = NULL;
	void *map;
	int rc = 0;

	if (fl < 0)
		return -errno;
	if ((fl & O_ACCMODE) != O_RDWR && (fl & O_ACCMODE) != O_WRONLY)
		return -EACCES; /* mincore would report every page resident: no answer */
	if (fstat(fd, &sb) < 0)
		return -errno;
	pages = ((uint64_t) sb.st_size + ps - 1) / ps;
	out->pages = pages;
	out->resident = 0;
	out->method = "mincore";
	if (!pages)
		return 0;
	map = mmap(NULL, (size_t) sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	vec = malloc(pages);
	if (!vec) {
		rc = -ENOMEM;
		goto out;
	}
	if (mincore(map, (size_t) sb.st_size, vec) < 0) {
		rc = -errno;
		goto out;
	}
	for (uint64_t i = 0; i < pages; i++)
		resident += vec[i] & 1;
	out->resident = resident;
out:
	free(vec);
	munmap(map, (size_t) sb.st_size);
	return rc;
}

/*
 * Pages of path in the page cache: cachestat(2), else mincore(2) on the
 * file opened for writing; -EACCES when only an untrustworthy answer
 * could be had.
 */
CV_API int cv_cache_residency(const char *path, cv_residency *out)
{
	int fd = open_entry(path, O_RDONLY);
	int rc;

	if (fd < 0)
		return -errno;
	rc = cvio_cachestat_fd(fd, out);
	close(fd);
	if (rc != -ENOSYS && rc != -EPERM)
		return rc;
	/* no cachestat (or it wants write permission): mincore needs a writable descriptor */
	fd = open_entry(path, O_RDWR);
	if (fd < 0)
		return (errno == EACCES || errno == EROFS || errno == EPERM || errno == ETXTBSY) ?
			       -EACCES :
			       -errno;
	if (rc == -EPERM)
		rc = cvio_cachestat_fd(fd, out);
	if (rc)
		rc = cvio_mincore_fd(fd, out);
	close(fd);
	return rc;
}

/* Read the listed blocks of path into the page cache (no read-ahead). 0 or -errno. */
CV_API int cv_cache_prewarm(const char *path, const uint64_t *blocks, size_t n,
			    uint32_t block_size)
{
	int fd;
	uint8_t *buf;
	struct stat sb;
	int rc = 0;

	if (!block_size)
		return -EINVAL;
	fd = open_entry(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	buf = malloc(block_size);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	if (fstat(fd, &sb) < 0) {
		rc = -errno;
		goto out;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	for (size_t i = 0; i < n; i++) {
		uint64_t off = blocks[i] * (uint64_t) block_size;
		ssize_t r;

		if (blocks[i] > UINT64_MAX / block_size || off >= (uint64_t) sb.st_size) {
			rc = -ERANGE;
			goto out;
		}
		r = cvu_pread_full(fd, buf, block_size, off);
		if (r < 0) {
			rc = (int) r;
			goto out;
		}
	}
out:
	free(buf);
	close(fd);
	return rc;
}
