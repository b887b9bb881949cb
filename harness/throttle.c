/*
 * throttle.c - a real storage tier: the kernel's block throttle as a
 * device of known shape.
 *
 * A provisioned-IOPS volume is a token bucket in front of a disk, and the
 * kernel's block-throttle cgroup is one in front of ours: cgroup v2
 * `io.max` ("M:m riops=N rbps=N"), cgroup v1 `blkio.throttle.read_iops_device`
 * and `read_bps_device`. A cap ("throttle" in run.json, `--throttle` of
 * probe and `index query --cold`) is a named profile (harness_cap_profiles)
 * or "riops=N,rbps=SIZE"; "uncapped" makes the same cgroup with no limit,
 * so an uncapped cell is counted the same way as a capped one.
 *
 * Phases, each its own function:
 *   begin  resolve the whole disk under the held clone descriptor (fstat
 *          st_dev; a loop device followed to its backing file's device
 *          through LOOP_GET_STATUS64; a partition to its disk), pick the
 *          controller (v2 with "io" enabled where present, else a writable
 *          v1 blkio), make coldstudy-throttle-PID-START at the hierarchy's
 *          root, write the cap. Exit 5 with the reason where there is no
 *          block device or no writable controller.
 *   enter  the calling thread joins the cgroup (v1 `tasks` takes a thread
 *          id); threads it starts then inherit it, so a caller enters,
 *          starts its reader threads and leaves, and only the readers stay
 *          capped. A reader pool's threads may have started before
 *          (engine/pool.c): harness_throttle_join is the pool's join, which
 *          each of them runs before its next read. v2's io controller is not threaded: there the whole
 *          process joins (the harness's own reads, few and mostly cached,
 *          are capped too; said in the record's "scope").
 *   count  the throttle's own counters for the disk: v1
 *          blkio.throttle.io_serviced / io_service_bytes ("M:m Read N"),
 *          v2 io.stat (rios, rbytes).
 *   end    every thread still in it goes back where it came from, and the
 *          directory is removed; also on failure.
 *   reap   a process killed with -9 leaves its empty cgroup behind: every
 *          command (cli/main.c) removes those whose PID is gone or whose
 *          start time differs (a reused PID).
 *
 * A buffered read that hits the page cache never reaches the throttle: the
 * harness proves the cache cold before it measures.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled; the
 * enter/leave/count calls return 0 or -errno.
 */
#include "harness.h"
#include "harness_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#define CG_V1 "/sys/fs/cgroup/blkio"
#define CG_PREFIX "coldstudy-throttle-"

/* ---- caps ---- */

static const harness_cap profiles[] = {
	/* the blog seed's gp3 default: 3,000 IOPS and 125 MiB/s at no charge */
	{"gp3-3000", 3000, 125ull << 20},
	/* gp3's ceiling before September 2025: 16,000 IOPS, 1,000 MiB/s */
	{"gp3-16000", 16000, 1000ull << 20},
	/* the blog seed's gp3 maximum: 80,000 IOPS, 2,000 MiB/s */
	{"gp3-80000", 80000, 2000ull << 20},
	/* io2 Block Express at 80,000 IOPS, its 4,000 MiB/s throughput ceiling */
	{"io2-80000", 80000, 4000ull << 20},
	/* the same cgroup and counters, no limit */
	{"uncapped", 0, 0},
};

const char *const *harness_cap_profiles(void)
{
	static const char *names[sizeof(profiles) / sizeof(profiles[0]) + 1];

	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		names[i] = profiles[i].name;
	return names;
}

/* A size with an optional K, M or G (binary): 0 or -EINVAL. */
static int parse_size(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0, mul = 1;
	size_t i = 0;

	if (!n)
		return -EINVAL;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t) (s[i] - '0');
	}
	if (!i)
		return -EINVAL;
	if (i < n) {
		if (i + 1 != n)
			return -EINVAL;
		switch (s[i]) {
		case 'K': mul = 1ull << 10; break;
		case 'M': mul = 1ull << 20; break;
		case 'G': mul = 1ull << 30; break;
		default: return -EINVAL;
		}
	}
	if (v && mul > UINT64_MAX / v)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

int harness_cap_parse(const char *s, harness_cap *c, cs_err *e)
{
	const char *p = s;

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (!strcmp(s, profiles[i].name)) {
			*c = profiles[i];
			return 0;
		}
	snprintf(c->name, sizeof(c->name), "custom");
	while (*p) {
		size_t n = strcspn(p, ",");
		const char *eq = memchr(p, '=', n);
		uint64_t *dst = NULL;

		if (eq && (size_t) (eq - p) == 5 && !strncmp(p, "riops", 5))
			dst = &c->riops;
		else if (eq && (size_t) (eq - p) == 4 && !strncmp(p, "rbps", 4))
			dst = &c->rbps;
		if (!dst || *dst || parse_size(eq + 1, n - (size_t) (eq + 1 - p), dst) || !*dst)
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "throttle '%s': want a profile (gp3-3000, gp3-16000, gp3-80000, "
					  "io2-80000, uncapped) or riops=N,rbps=SIZE (K/M/G), each once and "
					  "above 0; at '%.*s'",
					  s, (int) n, p);
		p += n;
		if (*p == ',' && *++p == '\0')
			return cs_err_set(e, CS_EXIT_BADINPUT, "throttle '%s': ends with ','", s);
	}
	if (!c->riops && !c->rbps)
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "throttle '%s': empty (\"uncapped\" measures without a cap)", s);
	return 0;
}

/* ---- the whole disk under a descriptor ---- */


/* DEVNAME= of a sysfs uevent file into name; 0 or -ENOENT. */
static int uevent_name(const char *path, char *name, size_t cap)
{
	char ue[1024];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, ue, sizeof(ue) - 1) : -1;
	const char *s;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -ENOENT;
	ue[n] = '\0';
	s = strstr(ue, "DEVNAME=");
	if (!s)
		return -ENOENT;
	s += 8;
	snprintf(name, cap, "%.*s", (int) strcspn(s, "\n"), s);
	return 0;
}

/* A loop device's backing file's device (LOOP_GET_STATUS64 on its node, checked by st_rdev). */
static int loop_backing(dev_t dev, dev_t *out, char *name, size_t cap)
{
	char p[96], node[128];
	struct loop_info64 li;
	struct stat st;
	int fd, rc = -ENOENT;

	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/uevent", major(dev), minor(dev));
	if (uevent_name(p, name, cap))
		return -ENOENT;
	snprintf(node, sizeof(node), "/dev/%s", name);
	fd = open(node, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && S_ISBLK(st.st_mode) && st.st_rdev == dev &&
	    ioctl(fd, LOOP_GET_STATUS64, &li) == 0) {
		*out = (dev_t) li.lo_device;
		rc = 0;
	}
	close(fd);
	return rc;
}

/*
 * The whole disk the reads of a file on device dev reach: loop devices
 * followed to their backing file's device, partitions to their disk.
 * via gets the steps ("loop0 -> 254:1 -> vda").
 */
static int whole_disk(dev_t dev, unsigned *maj, unsigned *min, char *disk, size_t dcap, char *via,
		      size_t vcap, cs_err *e)
{
	size_t o = 0;

	via[0] = '\0';
	for (int depth = 0; depth < 8; depth++) {
		char p[128], buf[64], name[64];
		dev_t next;
		unsigned a, b;

		o += (size_t) snprintf(via + o, o < vcap ? vcap - o : 0, "%s%u:%u", o ? " -> " : "",
				       major(dev), minor(dev));
		if (o >= vcap)
			o = vcap - 1;
		if (major(dev) == 0)
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "no block device to throttle: the file lives on device %u:%u "
					  "(tmpfs, overlay, a btrfs subvolume or a network file system)",
					  major(dev), minor(dev));
		if (major(dev) == 7 && loop_backing(dev, &next, name, sizeof(name)) == 0) {
			o += (size_t) snprintf(via + o, o < vcap ? vcap - o : 0, " (%s, backing file)",
					       name);
			if (o >= vcap)
				o = vcap - 1;
			dev = next;
			continue;
		}
		snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/partition", major(dev), minor(dev));
		if (cs_read_line(p, buf, sizeof(buf)) == 0) {
			snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/../dev", major(dev), minor(dev));
			if (cs_read_line(p, buf, sizeof(buf)) || sscanf(buf, "%u:%u", &a, &b) != 2)
				return cs_err_set(e, CS_EXIT_INTERNAL,
						  "partition %u:%u: its disk is not in sysfs",
						  major(dev), minor(dev));
			dev = makedev(a, b);
			continue;
		}
		snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/uevent", major(dev), minor(dev));
		if (uevent_name(p, disk, dcap))
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "no block device to throttle: %u:%u is not in /sys/dev/block",
					  major(dev), minor(dev));
		if (major(dev) == 7)
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "no block device to throttle: loop device %s has no backing "
					  "file",
					  disk);
		*maj = major(dev);
		*min = minor(dev);
		o += (size_t) snprintf(via + o, o < vcap ? vcap - o : 0, " (%s)", disk);
		return 0;
	}
	return cs_err_set(e, CS_EXIT_BADINPUT, "no block device to throttle: %s goes too deep", via);
}

/* ---- the cgroup ---- */

/* Write s to dirfd/name (a cgroup file); 0 or -errno. */
static int cg_write(int dirfd, const char *name, const char *s)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
	size_t n = strlen(s);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, n) != (ssize_t) n)
		rc = -errno;
	close(fd);
	return rc;
}

/* Field 22 of /proc/PID/stat (start time in clock ticks); 0 when the process is gone. */
static unsigned long long start_time(long pid)
{
	char p[64], buf[1024], *s;
	unsigned long long v = 0;

	snprintf(p, sizeof(p), "/proc/%ld/stat", pid);
	if (cs_read_line(p, buf, sizeof(buf)))
		return 0;
	s = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
	if (!s)
		return 0;
	/* after ") " come fields 3.. ; the start time is field 22 */
	if (sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
			  "%*d %*d %llu",
		   &v) != 1)
		return 0;
	return v;
}

/* "io" in a cgroup2 directory's cgroup.controllers. */
static int v2_has_io(const char *root)
{
	char p[256], buf[512];

	snprintf(p, sizeof(p), "%s/cgroup.controllers", root);
	if (cs_read_line(p, buf, sizeof(buf)))
		return 0;
	for (char *t = strtok(buf, " "); t; t = strtok(NULL, " "))
		if (!strcmp(t, "io"))
			return 1;
	return 0;
}

/* The calling thread's cgroup path in controller (v1 "blkio") or v2 (""); 0 or -errno. */
static int own_cgroup(const char *controller, char *out, size_t cap)
{
	char line[1024];
	FILE *f = fopen("/proc/thread-self/cgroup", "re");
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = '\0';
		line[strcspn(line, "\n")] = '\0';
		c2[1 + strcspn(c2 + 1, "\n")] = '\0';
		if (controller[0] ? !!strstr(c1 + 1, controller) : (c1[1] == '\0')) {
			snprintf(out, cap, "%s", c2 + 1);
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

/* Find a writable controller; root gets its hierarchy's root, *v2 which. */
static int pick_controller(char *root, size_t cap, int *v2, cs_err *e)
{
	static const char *const v2roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified", NULL};
	char why[512] = "";
	size_t o = 0;

	for (size_t i = 0; v2roots[i]; i++) {
		char p[256];

		snprintf(p, sizeof(p), "%s/cgroup.subtree_control", v2roots[i]);
		if (access(p, F_OK))
			continue;
		if (v2_has_io(v2roots[i]) && access(p, W_OK) == 0) {
			snprintf(root, cap, "%s", v2roots[i]);
			*v2 = 1;
			return 0;
		}
		o += (size_t) snprintf(why + o, sizeof(why) - o, "%s: no io controller; ", v2roots[i]);
		if (o >= sizeof(why))
			o = sizeof(why) - 1;
	}
	if (access(CG_V1 "/blkio.throttle.read_iops_device", W_OK) == 0 &&
	    access(CG_V1, W_OK) == 0) {
		snprintf(root, cap, "%s", CG_V1);
		*v2 = 0;
		return 0;
	}
	return cs_err_set(e, CS_EXIT_BADINPUT,
			  "no writable block-throttle controller: %s%s/blkio.throttle.read_iops_device: "
			  "%s (cgroup v2 io.max or v1 blkio, as root)",
			  why, CG_V1, strerror(errno));
}

void harness_throttle_init(harness_throttle *t)
{
	memset(t, 0, sizeof(*t));
	t->dirfd = -1;
	t->rootfd = -1;
}

/* Write the cap: v2 io.max, v1 the two read files (0: no cap there). */
static int write_cap(harness_throttle *t, cs_err *e)
{
	char line[128];
	int rc;

	if (!t->cap.riops && !t->cap.rbps)
		return 0;
	if (t->v2) {
		snprintf(line, sizeof(line), "%u:%u", t->maj, t->min);
		if (t->cap.riops)
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " riops=%" PRIu64,
				 t->cap.riops);
		if (t->cap.rbps)
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " rbps=%" PRIu64,
				 t->cap.rbps);
		rc = cg_write(t->dirfd, "io.max", line);
		if (rc)
			return cs_err_set(e, CS_EXIT_BADINPUT, "%s/io.max: cannot write '%s': %s",
					  t->dir, line, strerror(-rc));
		return 0;
	}
	if (t->cap.riops) {
		snprintf(line, sizeof(line), "%u:%u %" PRIu64, t->maj, t->min, t->cap.riops);
		rc = cg_write(t->dirfd, "blkio.throttle.read_iops_device", line);
		if (rc)
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "%s/blkio.throttle.read_iops_device: cannot write '%s': %s",
					  t->dir, line, strerror(-rc));
	}
	if (t->cap.rbps) {
		snprintf(line, sizeof(line), "%u:%u %" PRIu64, t->maj, t->min, t->cap.rbps);
		rc = cg_write(t->dirfd, "blkio.throttle.read_bps_device", line);
		if (rc)
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "%s/blkio.throttle.read_bps_device: cannot write '%s': %s",
					  t->dir, line, strerror(-rc));
	}
	return 0;
}

int harness_throttle_begin(const harness_cap *cap, int fd, harness_throttle *t, cs_err *e)
{
	struct stat st;
	char root[256], own[512], home[1024], name[96];
	int rc;

	harness_throttle_init(t);
	t->cap = *cap;
	if (fstat(fd, &st) < 0)
		return cs_err_set(e, CS_EXIT_INTERNAL, "throttle: fstat: %s", strerror(errno));
	rc = whole_disk(S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev, &t->maj, &t->min, t->disk,
			sizeof(t->disk), t->via, sizeof(t->via), e);
	if (rc)
		return rc;
	harness_throttle_reap();
	rc = pick_controller(root, sizeof(root), &t->v2, e);
	if (rc)
		return rc;
	if (own_cgroup(t->v2 ? "" : "blkio", own, sizeof(own)))
		snprintf(own, sizeof(own), "/");
	snprintf(home, sizeof(home), "%s%s", root, strcmp(own, "/") ? own : "");
	snprintf(t->home, sizeof(t->home), "%s", home);
	snprintf(t->root, sizeof(t->root), "%s", root);
	t->rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->rootfd < 0)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s", root, strerror(errno));
	if (t->v2) {
		/* the root cgroup may hold processes and still give its children io */
		rc = cg_write(t->rootfd, "cgroup.subtree_control", "+io");
		if (rc) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"%s/cgroup.subtree_control: cannot enable io: %s", root,
					strerror(-rc));
			goto fail;
		}
	}
	snprintf(name, sizeof(name), CG_PREFIX "%ld-%llu", (long) getpid(),
		 start_time((long) getpid()));
	snprintf(t->dir, sizeof(t->dir), "%s/%s", root, name);
	if (mkdirat(t->rootfd, name, 0755) < 0 && errno != EEXIST) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: cannot make the cgroup: %s", t->dir,
				strerror(errno));
		goto fail;
	}
	t->made = 1;
	t->dirfd = openat(t->rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (t->dirfd < 0) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s", t->dir, strerror(errno));
		goto fail;
	}
	rc = write_cap(t, e);
	if (rc)
		goto fail;
	return 0;
fail:
	harness_throttle_end(t);
	return rc;
}

/* Move the calling thread (v1) or process (v2) into the cgroup at dir. */
static int move_to(const harness_throttle *t, const char *dir, int dirfd)
{
	char id[32];
	int fd = dirfd, rc;

	if (fd < 0) {
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	snprintf(id, sizeof(id), "%ld", t->v2 ? (long) getpid() : (long) gettid());
	rc = cg_write(fd, t->v2 ? "cgroup.procs" : "tasks", id);
	if (fd != dirfd)
		close(fd);
	return rc;
}

int harness_throttle_enter(harness_throttle *t)
{
	char own[512];
	int rc;

	if (!t || t->dirfd < 0)
		return 0;
	/* where the caller is now (a memory cgroup made since begin, say) is where it goes back */
	if (!t->entered && own_cgroup(t->v2 ? "" : "blkio", own, sizeof(own)) == 0)
		snprintf(t->home, sizeof(t->home), "%s%s", t->root, strcmp(own, "/") ? own : "");
	rc = move_to(t, t->dir, t->dirfd);
	if (!rc)
		t->entered++;
	return rc;
}

int harness_throttle_join(void *ctx)
{
	const harness_throttle *t = ctx;

	if (!t || t->dirfd < 0)
		return -EBADF;
	return move_to(t, t->dir, t->dirfd);
}

int harness_throttle_leave(harness_throttle *t)
{
	if (!t || t->dirfd < 0 || !t->entered)
		return 0;
	t->entered--;
	return move_to(t, t->home, -1);
}

int harness_throttle_counters(const harness_throttle *t, uint64_t *reads, uint64_t *bytes)
{
	const char *files[2] = {"blkio.throttle.io_serviced", "blkio.throttle.io_service_bytes"};
	uint64_t *outs[2] = {reads, bytes};

	*reads = *bytes = 0;
	if (!t || t->dirfd < 0)
		return -EBADF;
	for (int i = 0; i < (t->v2 ? 1 : 2); i++) {
		int fd = openat(t->dirfd, t->v2 ? "io.stat" : files[i], O_RDONLY | O_CLOEXEC);
		char buf[8192], *line, *save = NULL;
		ssize_t n;

		if (fd < 0)
			return -errno;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n < 0)
			return -EIO;
		buf[n] = '\0';
		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			unsigned a, b;
			unsigned long long v;
			int at = 0;

			if (sscanf(line, "%u:%u %n", &a, &b, &at) != 2 || a != t->maj || b != t->min)
				continue;
			if (t->v2) {
				const char *r = strstr(line, "rios="), *y = strstr(line, "rbytes=");

				if (r)
					*reads = strtoull(r + 5, NULL, 10);
				if (y)
					*bytes = strtoull(y + 7, NULL, 10);
			} else if (sscanf(line + at, "Read %llu", &v) == 1) {
				*outs[i] = v;
			}
		}
	}
	return 0;
}

json_t *harness_throttle_record(const harness_throttle *t, uint64_t reads, uint64_t bytes)
{
	json_t *r = json_object();
	char dev[32];

	snprintf(dev, sizeof(dev), "%u:%u", t->maj, t->min);
	json_object_set_new(r, "cap", json_string(t->cap.name));
	json_object_set_new(r, "riops", t->cap.riops ? json_integer((json_int_t) t->cap.riops)
						     : json_null());
	json_object_set_new(r, "rbps", t->cap.rbps ? json_integer((json_int_t) t->cap.rbps)
						   : json_null());
	json_object_set_new(r, "controller", json_string(t->v2 ? "v2 io.max" : "v1 blkio.throttle"));
	json_object_set_new(r, "cgroup", json_string(t->dir));
	json_object_set_new(r, "scope", json_string(t->v2 ? "process" : "reader threads"));
	json_object_set_new(r, "device", json_string(dev));
	json_object_set_new(r, "disk", json_string(t->disk));
	json_object_set_new(r, "resolved", json_string(t->via));
	json_object_set_new(r, "throttle_reads", json_integer((json_int_t) reads));
	json_object_set_new(r, "throttle_bytes", json_integer((json_int_t) bytes));
	json_object_set_new(r, "counters", json_string(t->v2 ? "io.stat rios, rbytes"
							      : "blkio.throttle.io_serviced, "
								"io_service_bytes (Read)"));
	return r;
}

/* Every task of the cgroup at dirfd back to home (threads that outlived their caller). */
static void evacuate(const harness_throttle *t)
{
	int fd = openat(t->dirfd, t->v2 ? "cgroup.procs" : "tasks", O_RDONLY | O_CLOEXEC);
	int hfd = open(t->home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char buf[16384];
	ssize_t n;

	if (fd < 0 || hfd < 0)
		goto out;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		goto out;
	buf[n] = '\0';
	for (char *s = strtok(buf, "\n"); s; s = strtok(NULL, "\n"))
		(void) cg_write(hfd, t->v2 ? "cgroup.procs" : "tasks", s);
out:
	if (fd >= 0)
		close(fd);
	if (hfd >= 0)
		close(hfd);
}

void harness_throttle_end(harness_throttle *t)
{
	const char *base;

	if (!t)
		return;
	while (t->entered)
		harness_throttle_leave(t);
	if (t->dirfd >= 0) {
		evacuate(t);
		close(t->dirfd);
		t->dirfd = -1;
	}
	if (t->made && t->rootfd >= 0 && (base = strrchr(t->dir, '/')))
		(void) unlinkat(t->rootfd, base + 1, AT_REMOVEDIR);
	t->made = 0;
	if (t->rootfd >= 0)
		close(t->rootfd);
	t->rootfd = -1;
}

/* Remove the dead processes' cgroups under one hierarchy root. */
static void reap_root(const char *root)
{
	int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), dfd;
	DIR *d;
	struct dirent *de;

	if (rfd < 0)
		return;
	dfd = dup(rfd);
	d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		close(rfd);
		return;
	}
	while ((de = readdir(d))) {
		char *end;
		long pid;
		unsigned long long st;

		if (strncmp(de->d_name, CG_PREFIX, strlen(CG_PREFIX)))
			continue;
		errno = 0;
		pid = strtol(de->d_name + strlen(CG_PREFIX), &end, 10);
		if (errno || pid <= 0 || *end != '-')
			continue;
		st = strtoull(end + 1, &end, 10);
		if (*end)
			continue;
		if (start_time(pid) == st && pid != (long) getpid())
			continue; /* its process lives */
		if (pid == (long) getpid())
			continue; /* ours: harness_throttle_end removes it */
		(void) unlinkat(rfd, de->d_name, AT_REMOVEDIR); /* empty once its process is gone */
	}
	closedir(d);
	close(rfd);
}

void harness_throttle_reap(void)
{
	reap_root(CG_V1);
	reap_root("/sys/fs/cgroup");
	reap_root("/sys/fs/cgroup/unified");
}
