/*
 * readamp.c - read amplification of small random reads, with and without
 * read-ahead, counted on the block device.
 *
 * For each (strategy, read-ahead) case: evict the file, read the block
 * device's stat, issue N reads of BS bytes at random BS-aligned offsets
 * through a cv_io, read the stat again. Amplification is device bytes
 * read (sectors x 512) over bytes requested; the engine's own count of
 * reads sits beside the device's. The device is shared with everything
 * else on the machine, so each case is run REPEAT times and the median
 * is printed, and a last row shows what the device reads, with no reads of
 * ours, in as long as the first case took (per the same number of requested bytes).
 *
 *   readamp FILE [--reads N] [--bs BYTES] [--repeat R]
 */
#include "coldvec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double first_case_wall_s = 0.4; /* the pread/off run's wall time, for the background row */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* One run: amplification and device reads per engine read. */
static int run(const char *path, const cv_blkdev *bd, cv_io_strategy st, unsigned flags,
	       unsigned reads, uint32_t bs, uint64_t seed, double *amp, double *dev_per_read)
{
	cv_file *f = NULL;
	cv_io *io = NULL;
	cv_io_opts o;
	cv_blkstat s0, s1;
	cv_blkdelta d;
	uint8_t *buf = cv_alloc_aligned(bs);
	uint64_t nblocks, x = seed * 2654435761u + 1;
	int rc;

	if (!buf)
		return -ENOMEM;
	if (flags == UINT32_MAX) {
		/* background: what the shared device reads while we read nothing, for as long */
		struct timespec ts = { (time_t) first_case_wall_s,
				       (long) ((first_case_wall_s - (double) (time_t) first_case_wall_s) * 1e9) };

		rc = cv_blkdev_stat(bd, &s0);
		nanosleep(&ts, NULL);
		if (!rc)
			rc = cv_blkdev_stat(bd, &s1);
		if (!rc) {
			cv_blkstat_delta(&s0, &s1, &d);
			*amp = d.read_bytes / ((double) reads * bs);
			*dev_per_read = (double) d.reads / reads;
		}
		goto out;
	}
	rc = cv_cache_evict(path);
	if (!rc)
		rc = cv_file_open(path, flags, &f);
	if (rc)
		goto out;
	cv_io_opts_default(&o);
	o.strategy = st;
	rc = cv_io_new(&o, &io);
	if (rc)
		goto out;
	nblocks = cv_file_size(f) / bs;
	rc = cv_blkdev_stat(bd, &s0);
	for (unsigned i = 0; !rc && i < reads; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		rc = cv_io_read(io, f, (x % nblocks) * bs, bs, buf);
	}
	if (!rc)
		rc = cv_blkdev_stat(bd, &s1);
	if (rc)
		goto out;
	cv_blkstat_delta(&s0, &s1, &d);
	*amp = d.read_bytes / ((double) reads * bs);
	*dev_per_read = (double) d.reads / reads;
	if (st == CV_IO_PREAD && flags == 0)
		first_case_wall_s = d.wall_s;
out:
	cv_io_free(io);
	cv_file_close(f);
	free(buf);
	return rc;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	unsigned reads = 2000, repeat = 3;
	uint32_t bs = 4096;
	cv_blkdev bd;
	cv_err e = { { 0 } };
	const struct {
		cv_io_strategy st;
		unsigned flags;
		const char *name;
	} cases[] = {
		{ CV_IO_PREAD, 0, "pread, read-ahead off (POSIX_FADV_RANDOM)" },
		{ CV_IO_PREAD, CV_FILE_READAHEAD, "pread, read-ahead on (kernel default)" },
		{ CV_IO_MMAP, 0, "mmap, read-ahead off (MADV_RANDOM)" },
		{ CV_IO_MMAP, CV_FILE_READAHEAD, "mmap, read-ahead on (kernel default)" },
		{ CV_IO_PREAD, UINT32_MAX, "background: idle as long as case 1 (shared)" },
	};

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reads") && i + 1 < argc)
			reads = (unsigned) strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--bs") && i + 1 < argc)
			bs = (uint32_t) strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			repeat = (unsigned) strtoul(argv[++i], NULL, 10);
		else
			path = argv[i];
	}
	if (!path || !reads || !bs || !repeat || repeat > 99) {
		fprintf(stderr, "usage: readamp FILE [--reads N] [--bs BYTES] [--repeat R]\n");
		return 2;
	}
	if (cv_blkdev_for_path(path, &bd, &e)) {
		fprintf(stderr, "readamp: %s\n", e.msg);
		return 3;
	}
	printf("device %s (disk %s), read_ahead_kb %d, scheduler %s, rotational %d\n", bd.part,
	       bd.disk, bd.read_ahead_kb, bd.scheduler, bd.rotational);
	printf("%u random reads of %u bytes per run, median of %u runs, after eviction\n\n", reads, bs,
	       repeat);
	printf("%-44s %14s %18s\n", "case", "amplification", "device reads/read");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		double amp[99], dpr[99];

		for (unsigned r = 0; r < repeat; r++) {
			int rc = run(path, &bd, cases[c].st, cases[c].flags, reads, bs, r + 1, &amp[r],
				     &dpr[r]);

			if (rc) {
				fprintf(stderr, "readamp: %s: %s\n", cases[c].name, strerror(-rc));
				return 1;
			}
		}
		qsort(amp, repeat, sizeof(double), cmp_d);
		qsort(dpr, repeat, sizeof(double), cmp_d);
		printf("%-44s %13.2fx %18.2f\n", cases[c].name, amp[repeat / 2], dpr[repeat / 2]);
	}
	return 0;
}
