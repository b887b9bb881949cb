/*
 * blkdev.c - the block device under a file and its kernel counters.
 *
 * stat(path).st_dev gives major:minor; /sys/dev/block/M:m links to the
 * device's sysfs directory. A directory with a "partition" file is a
 * partition and its parent is the whole disk; queue settings (rotational,
 * read_ahead_kb, scheduler) live on the disk, the counters we read on the
 * partition the file lives on. The stat file's fields are those of
 * Documentation/block/stat.rst: reads, merges, sectors (512 bytes),
 * ms reading, the same four for writes, in flight, io_ticks, time in
 * queue.
 *
 * Some file systems have no block device whose counters mean anything
 * for the file: anonymous devices (major 0: tmpfs, overlay, btrfs
 * subvolumes, NFS), loop devices (the reads are counted again on the
 * backing file's device), zram and ram disks, and devices without a
 * stat file. Those give -ENODEV with the reason: "not available", never
 * a wrong number.
 */
#include "io_int.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Read a small sysfs file into buf (trailing newline cut); 0 or -errno. */
static int read_small(const char *path, char *buf, size_t n)
{
	FILE *fp = fopen(path, "r");
	size_t got;

	if (!fp)
		return -errno;
	got = fread(buf, 1, n - 1, fp);
	fclose(fp);
	buf[got] = 0;
	while (got && (buf[got - 1] == '\n' || buf[got - 1] == ' '))
		buf[--got] = 0;
	return 0;
}

static int read_int(const char *path, int *out)
{
	char buf[64], *end;
	long v;

	if (read_small(path, buf, sizeof(buf)))
		return -ENOENT;
	v = strtol(buf, &end, 10);
	if (end == buf)
		return -EINVAL;
	*out = (int) v;
	return 0;
}

/* Copy src into dst[n], cut to fit; returns -ENAMETOOLONG when cut. */
static int copy_name(char *dst, size_t n, const char *src)
{
	size_t l = strlen(src);
	int rc = 0;

	if (l >= n) {
		l = n - 1;
		rc = -ENAMETOOLONG;
	}
	memcpy(dst, src, l);
	dst[l] = 0;
	return rc;
}

/* Find the block device under path; -ENODEV with the reason in e where none counts. */
CV_API int cv_blkdev_for_path(const char *path, cv_blkdev *out, cv_err *e)
{
	struct stat sb;
	char link[128], real[PATH_MAX], diskdir[PATH_MAX], tmp[PATH_MAX + 64], buf[512];
	unsigned maj, min;
	const char *base;
	bool is_part;

	memset(out, 0, sizeof(*out));
	out->rotational = -1;
	out->read_ahead_kb = -1;
	if (stat(path, &sb) < 0)
		return cv_err_set(e, -errno, "%s: cannot stat", path);
	maj = major(sb.st_dev);
	min = minor(sb.st_dev);
	if (maj == 0)
		return cv_err_set(e, -ENODEV,
				  "%s: block-device counters not available: the file system has no block device (device %u:%u: tmpfs, overlay, network or similar)",
				  path, maj, min);
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", maj, min);
	if (!realpath(link, real))
		return cv_err_set(e, -ENODEV,
				  "%s: block-device counters not available: no %s", path, link);
	base = strrchr(real, '/');
	base = base ? base + 1 : real;
	snprintf(tmp, sizeof(tmp), "%s/partition", real);
	is_part = access(tmp, F_OK) == 0;
	snprintf(diskdir, sizeof(diskdir), "%s", real);
	if (is_part) {
		char *slash = strrchr(diskdir, '/');

		if (slash)
			*slash = 0;
	}
	copy_name(out->part, sizeof(out->part), base);
	{
		const char *db = strrchr(diskdir, '/');

		copy_name(out->disk, sizeof(out->disk), db ? db + 1 : diskdir);
	}
	if (!strncmp(out->disk, "loop", 4) || !strncmp(out->disk, "zram", 4) ||
	    !strncmp(out->disk, "ram", 3) || !strncmp(out->disk, "nbd", 3))
		return cv_err_set(e, -ENODEV,
				  "%s: block-device counters not available: %s is a virtual device (its reads are not the medium's)",
				  path, out->disk);
	snprintf(tmp, sizeof(tmp), "%s/stat", real);
	if (copy_name(out->stat_path, sizeof(out->stat_path), tmp))
		return cv_err_set(e, -ENODEV, "%s: block-device counters not available: sysfs path too long",
				  path);
	if (access(out->stat_path, R_OK))
		return cv_err_set(e, -ENODEV,
				  "%s: block-device counters not available: %s has no stat file", path,
				  out->part);
	snprintf(tmp, sizeof(tmp), "%s/queue/rotational", diskdir);
	read_int(tmp, &out->rotational);
	snprintf(tmp, sizeof(tmp), "%s/queue/read_ahead_kb", diskdir);
	read_int(tmp, &out->read_ahead_kb);
	snprintf(tmp, sizeof(tmp), "%s/queue/scheduler", diskdir);
	if (!read_small(tmp, buf, sizeof(buf))) {
		char *l = strchr(buf, '['), *r = l ? strchr(l, ']') : NULL;

		if (l && r) {
			*r = 0;
			copy_name(out->scheduler, sizeof(out->scheduler), l + 1);
		} else {
			copy_name(out->scheduler, sizeof(out->scheduler), buf);
		}
	}
	snprintf(tmp, sizeof(tmp), "%s/device/model", diskdir);
	if (!read_small(tmp, buf, sizeof(buf)))
		copy_name(out->model, sizeof(out->model), buf);
	return 0;
}

/* Read the device's stat counters now. 0 or -errno. */
CV_API int cv_blkdev_stat(const cv_blkdev *dev, cv_blkstat *out)
{
	char buf[512];
	uint64_t v[11] = { 0 };
	int n, rc;

	memset(out, 0, sizeof(*out));
	rc = read_small(dev->stat_path, buf, sizeof(buf));
	if (rc)
		return rc;
	out->t_ns = cvio_now_ns();
	n = sscanf(buf,
		   "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10]);
	if (n != 11)
		return -EINVAL;
	out->reads = v[0];
	out->read_merges = v[1];
	out->read_sectors = v[2];
	out->read_ms = v[3];
	out->writes = v[4];
	out->write_merges = v[5];
	out->write_sectors = v[6];
	out->write_ms = v[7];
	out->in_flight = v[8];
	out->io_ticks_ms = v[9];
	out->time_in_queue_ms = v[10];
	return 0;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* after - before, with mean read latency and the busy fraction. */
CV_API void cv_blkstat_delta(const cv_blkstat *before, const cv_blkstat *after, cv_blkdelta *out)
{
	memset(out, 0, sizeof(*out));
	out->reads = sub0(after->reads, before->reads);
	out->read_sectors = sub0(after->read_sectors, before->read_sectors);
	out->read_ms = sub0(after->read_ms, before->read_ms);
	out->io_ticks_ms = sub0(after->io_ticks_ms, before->io_ticks_ms);
	out->writes = sub0(after->writes, before->writes);
	out->write_sectors = sub0(after->write_sectors, before->write_sectors);
	out->wall_s = (double) sub0(after->t_ns, before->t_ns) / 1e9;
	out->read_ms_mean = out->reads ? (double) out->read_ms / (double) out->reads : 0;
	out->busy = out->wall_s > 0 ? (double) out->io_ticks_ms / 1000.0 / out->wall_s : 0;
	if (out->busy > 1)
		out->busy = 1;
	out->read_bytes = (double) out->read_sectors * 512.0;
}
