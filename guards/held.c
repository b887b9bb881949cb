/*
 * held.c - resolve a path once, hold what it names, and say what it is.
 *
 * Resolution. A user's path is walked by the kernel exactly once, with
 * openat2 from the base directory (the current directory, or a study
 * folder for study.json's paths): ordinary symlinks are followed as the
 * kernel follows them ("link/../x" is the link's parent's x, not "x"), and
 * so are the magic links of procfs (/proc/self/fd/N, /proc/self/cwd,
 * /proc/PID/root, /dev/fd/N): what they lead to is held and checked like
 * any other target, by identity. Only what cannot be resolved is refused:
 * a magic link to a file or folder that has been deleted (no name left to
 * say where it lies). Where openat2 is missing (Linux < 5.6) the walk is
 * done one component at a time with O_PATH|O_NOFOLLOW, symlinks spliced in
 * by hand (at most 40) and a symlink on procfs followed by the kernel
 * (openat without O_NOFOLLOW), which is the same contract.
 *
 * A target that does not exist yet is held through its nearest existing
 * ancestor; the missing components (no "." or "..", no slashes left) are
 * kept as `rest` and created beneath the held directory with mkdirat, so
 * nothing that appears at that name in between (a symlink to production)
 * is followed.
 *
 * Acting through the hold. Every later open is relative to the held
 * descriptor: directly with *at calls, or, for the engine (whose API takes
 * paths) and for a child such as fio, through guard_held_via's
 * "/proc/PID/fd/N[/rest]", which the kernel resolves to the held inode
 * without re-walking the user's spelling.
 * The engine opens every index file with O_NOFOLLOW.
 *
 * Spelling. "/proc/PID/fd/N" means nothing to the user who typed the path
 * and nothing once the process is gone, so it never reaches a message or
 * a record: each live hold's descriptor is remembered with the user's
 * spelling of what it holds (the nearest existing ancestor's, for a target
 * still to be made), and guard_spell rewrites a text's held paths back to
 * those words, or, for a record's resolved identity, to the path the
 * kernel holds (readlink of the descriptor).
 *
 * Identity. A file is its file system and inode, and the inode's birth
 * time (statx btime) so that an inode number reused after production was
 * deleted is not taken for production. A file system on a loop device is
 * named by the loop device's backing file (device, inode, offset), so the
 * same image attached through a second loop device is the same file
 * system. A block device's "set" adds its device-mapper slaves (each
 * resolved the same way) and, for a partition, its whole disk.
 */
#include "guard_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* snprintf that truncates quietly (messages and paths are bounded on purpose). */
__attribute__((format(printf, 3, 4))) static int say(char *out, size_t cap, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(out, cap, f, ap);
	va_end(ap);
	return n;
}

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

static int sys_openat2(int dirfd, const char *path, int flags, uint64_t resolve)
{
	struct open_how how = {.flags = (uint64_t) flags, .mode = 0, .resolve = resolve};

	return (int) syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* Is fd on procfs (a magic link the fallback hands to the kernel)? */
static int on_procfs(int fd)
{
	struct statfs sf;

	return fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

/*
 * The fallback walk: path from dirfd, one component at a time, O_NOFOLLOW,
 * symlinks spliced by hand. Returns an O_PATH fd or -errno.
 */
static int walk_nofollow(int dirfd, const char *path)
{
	char buf[PATH_MAX * 2], link[PATH_MAX];
	char *p, *comp;
	int cur, links = 0;

	if (strlen(path) >= sizeof(buf) / 2)
		return -ENAMETOOLONG;
	say(buf, sizeof(buf), "%s", path);
	cur = openat(path[0] == '/' ? AT_FDCWD : dirfd, path[0] == '/' ? "/" : ".",
		     O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	p = buf;
	for (;;) {
		struct stat st;
		int next;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		comp = p;
		p += strcspn(p, "/");
		if (*p)
			*p++ = '\0';
		next = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			int err = -errno;

			close(cur);
			return err;
		}
		if (fstat(next, &st) < 0) {
			close(next);
			close(cur);
			return -ELOOP;
		}
		if (S_ISLNK(st.st_mode) && on_procfs(next)) {
			/* a magic link: only the kernel knows where it leads */
			close(next);
			next = openat(cur, comp, O_PATH | O_CLOEXEC);
			close(cur);
			if (next < 0)
				return -errno;
			cur = next;
			continue;
		}
		if (S_ISLNK(st.st_mode)) {
			ssize_t n = readlinkat(cur, comp, link, sizeof(link) - 1);
			char rest[PATH_MAX * 2];

			close(next);
			if (n < 0 || ++links > 40) {
				close(cur);
				return n < 0 ? -errno : -ELOOP;
			}
			link[n] = '\0';
			say(rest, sizeof(rest), "%s/%s", link, p);
			say(buf, sizeof(buf), "%s", rest);
			p = buf;
			if (link[0] == '/') {
				close(cur);
				cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (cur < 0)
					return -errno;
			}
			continue;
		}
		close(cur);
		cur = next;
	}
	return cur;
}

/* Resolve path from dirfd once: an O_PATH fd, or -errno (-ELOOP: too many symlinks). */
static int resolve_once(int dirfd, const char *path)
{
	static int no_openat2;
	int fd;

	if (!no_openat2) {
		fd = sys_openat2(dirfd, path, O_PATH | O_CLOEXEC, 0);
		if (fd >= 0)
			return fd;
		if (errno != ENOSYS)
			return -errno;
		no_openat2 = 1;
	}
	return walk_nofollow(dirfd, path);
}

/* ---- spelling: each live hold's descriptor and the user's words for it ---- */

#define SPELL_MAX 64

static pthread_mutex_t spell_mu = PTHREAD_MUTEX_INITIALIZER;
static struct spell {
	int fd;          /* -1: free */
	char *shown;     /* the user's spelling of the target (new, freed at drop) */
	char *anc;       /* the user's spelling of what fd holds (the target, or its ancestor) */
	char *rest;      /* the components beneath fd still to make ("" when it exists) */
} spells[SPELL_MAX];
static int spells_ready;

/* Remember fd as held for shown (anc spells fd itself, rest lies beneath); quietly skipped when full. */
static void spell_set(int fd, const char *shown, const char *anc, const char *rest)
{
	pthread_mutex_lock(&spell_mu);
	if (!spells_ready) {
		for (size_t i = 0; i < SPELL_MAX; i++)
			spells[i].fd = -1;
		spells_ready = 1;
	}
	for (size_t i = 0; i < SPELL_MAX; i++)
		if (spells[i].fd < 0) {
			spells[i].shown = strdup(shown);
			spells[i].anc = strdup(anc);
			spells[i].rest = strdup(rest);
			if (spells[i].shown && spells[i].anc && spells[i].rest) {
				spells[i].fd = fd;
			} else {
				free(spells[i].shown);
				free(spells[i].anc);
				free(spells[i].rest);
			}
			break;
		}
	pthread_mutex_unlock(&spell_mu);
}

static void spell_drop(int fd)
{
	pthread_mutex_lock(&spell_mu);
	for (size_t i = 0; spells_ready && i < SPELL_MAX; i++)
		if (spells[i].fd == fd) {
			free(spells[i].shown);
			free(spells[i].anc);
			free(spells[i].rest);
			spells[i].fd = -1;
			spells[i].shown = spells[i].anc = spells[i].rest = NULL;
		}
	pthread_mutex_unlock(&spell_mu);
}

/* Append n bytes of s to out[*len] within cap (truncating quietly). */
static void put(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
	if (*len + 1 >= cap)
		return;
	if (n > cap - 1 - *len)
		n = cap - 1 - *len;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = '\0';
}

size_t guard_spell(const char *text, int resolved, char *out, size_t cap)
{
	char pre[64];
	size_t len = 0, plen;

	if (!cap)
		return 0;
	out[0] = '\0';
	plen = (size_t) say(pre, sizeof(pre), "/proc/%d/fd/", (int) getpid());
	pthread_mutex_lock(&spell_mu);
	while (text && *text) {
		const char *hit = strstr(text, pre), *p, *after;
		struct spell *sp = NULL;
		long fd = 0;

		if (!hit) {
			put(out, cap, &len, text, strlen(text));
			break;
		}
		put(out, cap, &len, text, (size_t) (hit - text));
		for (p = hit + plen; *p >= '0' && *p <= '9' && fd < 1000000; p++)
			fd = fd * 10 + (*p - '0');
		for (size_t i = 0; spells_ready && p > hit + plen && i < SPELL_MAX; i++)
			if (spells[i].fd == fd)
				sp = &spells[i];
		if (!sp) {
			put(out, cap, &len, hit, (size_t) (p - hit));
			text = p;
			continue;
		}
		after = p;
		if (resolved) {
			char link[80], real[PATH_MAX];
			ssize_t n;

			say(link, sizeof(link), "/proc/self/fd/%ld", fd);
			n = readlink(link, real, sizeof(real) - 1);
			if (n > 0)
				put(out, cap, &len, real, (size_t) n);
			else
				put(out, cap, &len, hit, (size_t) (p - hit));
		} else if (sp->rest[0] && *p == '/' && !strncmp(p + 1, sp->rest, strlen(sp->rest)) &&
			   !(p[1 + strlen(sp->rest)] && p[1 + strlen(sp->rest)] != '/' &&
			     p[1 + strlen(sp->rest)] != ':' && p[1 + strlen(sp->rest)] != ' ')) {
			/* the whole held target, as typed */
			put(out, cap, &len, sp->shown, strlen(sp->shown));
			after = p + 1 + strlen(sp->rest);
		} else {
			put(out, cap, &len, sp->anc, strlen(sp->anc));
		}
		text = after;
	}
	pthread_mutex_unlock(&spell_mu);
	return len;
}

void guard_held_init(guard_held *h)
{
	memset(h, 0, sizeof(*h));
	h->fd = -1;
	h->made_parent = -1;
}

void guard_held_close(guard_held *h)
{
	if (!h)
		return;
	if (h->fd >= 0) {
		spell_drop(h->fd);
		close(h->fd);
	}
	if (h->made_parent >= 0)
		close(h->made_parent);
	h->fd = -1;
	h->made_parent = -1;
}

void guard_held_rmdir(guard_held *h)
{
	if (h->made_parent >= 0 && h->made_name[0])
		unlinkat(h->made_parent, h->made_name, AT_REMOVEDIR);
}

int guard_hold(const char *path, int base_fd, guard_held *h, cs_err *e)
{
	char buf[PATH_MAX];
	size_t len;
	int fd;

	guard_held_init(h);
	if (!path || !*path)
		return cs_err_set(e, CS_EXIT_BADINPUT, "empty path");
	len = strlen(path);
	if (len >= sizeof(buf) || len >= sizeof(h->shown))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%.80s...: path too long", path);
	say(h->shown, sizeof(h->shown), "%s", path);
	say(buf, sizeof(buf), "%s", path);
	/* Drop trailing slashes: "dir/" names dir. */
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	for (;;) {
		char *slash;

		fd = resolve_once(base_fd, buf);
		if (fd >= 0)
			break;
		if (fd == -ELOOP)
			return cs_err_set(e, CS_EXIT_REFUSED,
					  "%s: refused: the path cannot be resolved (too many symlinks)",
					  path);
		if (fd != -ENOENT)
			return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s", path, strerror(-fd));
		/* Peel the last component into rest; its parent must exist. */
		slash = strrchr(buf, '/');
		{
			const char *last = slash ? slash + 1 : buf;
			char nrest[PATH_MAX];

			if (!strcmp(last, "..") || !strcmp(last, ".") || !*last)
				return cs_err_set(e, CS_EXIT_BADINPUT,
						  "%s: a path that does not exist yet may not end in "
						  "'.' or '..' below the missing part",
						  path);
			if ((size_t) say(nrest, sizeof(nrest), "%s%s%s", last,
					      h->rest[0] ? "/" : "", h->rest) >= sizeof(nrest))
				return cs_err_set(e, CS_EXIT_BADINPUT, "%s: path too long", path);
			memcpy(h->rest, nrest, sizeof(h->rest));
		}
		if (!slash) {
			say(buf, sizeof(buf), ".");
		} else if (slash == buf) {
			buf[1] = '\0';
		} else {
			*slash = '\0';
			while (slash > buf && slash[-1] == '/')
				*--slash = '\0';
		}
	}
	h->fd = fd;
	h->exists = h->rest[0] == '\0';
	if (fstat(fd, &h->st) < 0) {
		int err = errno;

		guard_held_close(h);
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", path, strerror(err));
	}
	if (!h->exists && !S_ISDIR(h->st.st_mode)) {
		guard_held_close(h);
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: a parent is not a directory", path);
	}
	if (h->st.st_nlink == 0 && (S_ISREG(h->st.st_mode) || S_ISDIR(h->st.st_mode))) {
		/* reached through a magic link to something deleted: nowhere to say where it lies */
		guard_held_close(h);
		return cs_err_set(e, CS_EXIT_REFUSED,
				  "%s: refused: the path cannot be resolved (it leads to a deleted %s)",
				  path, S_ISDIR(h->st.st_mode) ? "folder" : "file");
	}
	say(h->via, sizeof(h->via), "/proc/%d/fd/%d%s%s", (int) getpid(), fd, h->exists ? "" : "/",
	    h->rest);
	/* what fd holds is spelled by buf: the path less the peeled components */
	spell_set(fd, h->shown, buf, h->rest);
	return 0;
}

const char *guard_held_via(const guard_held *h)
{
	return h->via;
}

int guard_held_mkdirs(guard_held *h, cs_err *e)
{
	char rest[PATH_MAX], *p, *comp;
	int cur;

	if (h->exists)
		return S_ISDIR(h->st.st_mode)
			       ? 0
			       : cs_err_set(e, CS_EXIT_BADINPUT, "%s: not a directory", h->shown);
	say(rest, sizeof(rest), "%s", h->rest);
	cur = dup(h->fd);
	if (cur < 0)
		return cs_err_set(e, CS_EXIT_INTERNAL, "dup: %s", strerror(errno));
	for (p = rest; (comp = strsep(&p, "/"));) {
		int next;

		if (!*comp)
			continue;
		/*
		 * Each component was missing when the path was held and was checked
		 * as such: one that exists now (a mount, a directory made meanwhile)
		 * was never checked, so it is refused rather than entered.
		 */
		if (mkdirat(cur, comp, 0755) < 0) {
			int err = errno;

			close(cur);
			return cs_err_set(e, err == EEXIST ? CS_EXIT_REFUSED : CS_EXIT_INTERNAL,
					  "%s: cannot create %s: %s%s", h->shown, comp, strerror(err),
					  err == EEXIST ? " (it appeared after the path was checked)"
							: "");
		}
		/* O_NOFOLLOW: a symlink planted at comp in between is not followed. */
		next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		{
			int err = errno;

			if (next < 0) {
				close(cur);
				return cs_err_set(e, CS_EXIT_REFUSED,
						  "%s: refused: %s changed while being created (%s)",
						  h->shown, comp, strerror(err));
			}
		}
		if (h->made_parent >= 0)
			close(h->made_parent);
		h->made_parent = cur;
		say(h->made_name, sizeof(h->made_name), "%s", comp);
		cur = next;
	}
	spell_drop(h->fd);
	close(h->fd);
	h->fd = cur;
	h->exists = 1;
	h->rest[0] = '\0';
	fstat(cur, &h->st);
	say(h->via, sizeof(h->via), "/proc/%d/fd/%d", (int) getpid(), cur);
	spell_set(cur, h->shown, h->shown, "");
	return 0;
}

/* ---- identity ---- */


/* The loop device dev's backing file identity; 0 when dev is a loop device with a backing file. */
static int loop_backing(dev_t dev, guard_fskey *k)
{
	char p[128], name[64], node[128];
	struct loop_info64 li;
	struct stat st;
	int fd;

	if (major(dev) != 7) /* LOOP_MAJOR */
		return -ENOENT;
	say(p, sizeof(p), "/sys/dev/block/%u:%u/uevent", major(dev), minor(dev));
	{
		char ue[1024], *s;
		ssize_t n;

		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -ENOENT;
		n = read(fd, ue, sizeof(ue) - 1);
		close(fd);
		if (n <= 0)
			return -ENOENT;
		ue[n] = '\0';
		s = strstr(ue, "DEVNAME=");
		if (!s)
			return -ENOENT;
		s += 8;
		say(name, sizeof(name), "%.*s", (int) strcspn(s, "\n"), s);
	}
	say(node, sizeof(node), "/dev/%s", name);
	fd = open(node, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) < 0 || !S_ISBLK(st.st_mode) || st.st_rdev != dev ||
	    ioctl(fd, LOOP_GET_STATUS64, &li) < 0) {
		close(fd);
		return -ENOENT;
	}
	close(fd);
	k->kind = GUARD_FS_LOOP;
	k->a = li.lo_device;
	k->b = li.lo_inode;
	k->c = li.lo_offset;
	{
		/*
		 * Loop over loop: a backing "file" that is itself a loop device is
		 * followed down to the bottom (the file the lowest one reads), so a
		 * loop device stacked on production's is production's storage. The
		 * node named in sysfs must be the very inode the kernel reports.
		 */
		static int depth;
		char bf[PATH_MAX];

		say(p, sizeof(p), "/sys/dev/block/%u:%u/loop/backing_file", major(dev), minor(dev));
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = read(fd, bf, sizeof(bf) - 1);

			close(fd);
			bf[n > 0 ? n : 0] = '\0';
			bf[strcspn(bf, "\n")] = '\0';
			if (bf[0] == '/' && stat(bf, &st) == 0 && S_ISBLK(st.st_mode) &&
			    (uint64_t) st.st_dev == li.lo_device && (uint64_t) st.st_ino == li.lo_inode &&
			    major(st.st_rdev) == 7 && depth < 8) {
				guard_fskey low;
				int rc;

				depth++;
				rc = loop_backing(st.st_rdev, &low);
				depth--;
				if (rc == 0) {
					*k = low;
					k->c += li.lo_offset;
				}
			}
		}
	}
	return 0;
}

void guard_fskey_of(dev_t dev, guard_fskey *k)
{
	/* A walk stats thousands of files on one or two devices: remember the last few. */
	static struct {
		dev_t dev;
		guard_fskey k;
		int used;
	} memo[8];
	static unsigned next;

	for (size_t i = 0; i < 8; i++)
		if (memo[i].used && memo[i].dev == dev) {
			*k = memo[i].k;
			return;
		}
	memset(k, 0, sizeof(*k));
	if (loop_backing(dev, k) != 0) {
		memset(k, 0, sizeof(*k));
		k->kind = GUARD_FS_DEV;
		k->a = major(dev);
		k->b = minor(dev);
	}
	memo[next % 8].dev = dev;
	memo[next % 8].k = *k;
	memo[next % 8].used = 1;
	next++;
}

int guard_fskey_eq(const guard_fskey *x, const guard_fskey *y)
{
	return x->kind == y->kind && x->a == y->a && x->b == y->b && x->c == y->c;
}

static void devset_add(guard_devset *s, const guard_fskey *k)
{
	for (size_t i = 0; i < s->n; i++)
		if (guard_fskey_eq(&s->v[i], k))
			return;
	if (s->n < GUARD_DEVSET_MAX)
		s->v[s->n++] = *k;
}

/* Parse "M:m" into dev. */
static int parse_devnum(const char *s, dev_t *dev)
{
	unsigned ma, mi;

	if (sscanf(s, "%u:%u", &ma, &mi) != 2)
		return -EINVAL;
	*dev = makedev(ma, mi);
	return 0;
}

static void devset_walk(guard_devset *s, dev_t dev, int depth, int with_parent, int with_children)
{
	char p[256], buf[64];
	guard_fskey k;
	DIR *d;
	struct dirent *de;

	if (depth > 8)
		return;
	guard_fskey_of(dev, &k);
	devset_add(s, &k);
	if (major(dev) == 0)
		return; /* anonymous (tmpfs, overlay, btrfs subvolume): no block device behind */
	/* device-mapper / md slaves */
	say(p, sizeof(p), "/sys/dev/block/%u:%u/slaves", major(dev), minor(dev));
	if ((d = opendir(p))) {
		while ((de = readdir(d))) {
			char q[512];
			dev_t sd;

			if (de->d_name[0] == '.')
				continue;
			say(q, sizeof(q), "/sys/class/block/%s/dev", de->d_name);
			if (cs_read_line(q, buf, sizeof(buf)) == 0 && parse_devnum(buf, &sd) == 0)
				devset_walk(s, sd, depth + 1, 1, 0);
		}
		closedir(d);
	}
	/* a partition: its whole disk */
	say(p, sizeof(p), "/sys/dev/block/%u:%u/partition", major(dev), minor(dev));
	if (with_parent && cs_read_line(p, buf, sizeof(buf)) == 0) {
		char q[256];
		dev_t pd;

		say(q, sizeof(q), "/sys/dev/block/%u:%u/../dev", major(dev), minor(dev));
		if (cs_read_line(q, buf, sizeof(buf)) == 0 && parse_devnum(buf, &pd) == 0 && pd != dev) {
			guard_fskey_of(pd, &k);
			devset_add(s, &k);
		}
	}
	/* a whole disk: its partitions */
	say(p, sizeof(p), "/sys/dev/block/%u:%u", major(dev), minor(dev));
	if (with_children && (d = opendir(p))) {
		while ((de = readdir(d))) {
			char q[600];
			dev_t cd;

			if (de->d_name[0] == '.')
				continue;
			say(q, sizeof(q), "%s/%s/partition", p, de->d_name);
			if (cs_read_line(q, buf, sizeof(buf)) < 0)
				continue;
			say(q, sizeof(q), "%s/%s/dev", p, de->d_name);
			if (cs_read_line(q, buf, sizeof(buf)) == 0 && parse_devnum(buf, &cd) == 0) {
				guard_fskey_of(cd, &k);
				devset_add(s, &k);
			}
		}
		closedir(d);
	}
}

void guard_devset_of(dev_t dev, int is_blockdev_item, guard_devset *s)
{
	memset(s, 0, sizeof(*s));
	/* A block-device item covers its partitions; a file's device reaches its disk. */
	devset_walk(s, dev, 0, !is_blockdev_item, is_blockdev_item);
}

int guard_devset_meet(const guard_devset *x, const guard_devset *y)
{
	for (size_t i = 0; i < x->n; i++)
		for (size_t j = 0; j < y->n; j++)
			if (guard_fskey_eq(&x->v[i], &y->v[j]))
				return 1;
	return 0;
}

int guard_ident_fd(int fd, guard_ident *id)
{
	struct statx sx;

	memset(id, 0, sizeof(*id));
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_BASIC_STATS | STATX_BTIME,
		  &sx) < 0)
		return -errno;
	id->dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	id->ino = sx.stx_ino;
	id->mode = sx.stx_mode;
	id->nlink = sx.stx_nlink;
	id->rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor);
	if (sx.stx_mask & STATX_BTIME)
		id->btime_ns = (int64_t) sx.stx_btime.tv_sec * 1000000000 + sx.stx_btime.tv_nsec;
	guard_fskey_of(id->dev, &id->fs);
	return 0;
}

int guard_ident_at(int dirfd, const char *name, guard_ident *id)
{
	int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = guard_ident_fd(fd, id);
	close(fd);
	return rc;
}

int guard_ident_same(const guard_ident *x, const guard_ident *y)
{
	if (x->ino != y->ino || !guard_fskey_eq(&x->fs, &y->fs))
		return 0;
	/* An inode number reused after production was deleted has another birth time. */
	return !x->btime_ns || !y->btime_ns || x->btime_ns == y->btime_ns;
}

/* ---- overlay mounts: their layers are part of what they are ---- */

#ifndef OVERLAYFS_SUPER_MAGIC
#define OVERLAYFS_SUPER_MAGIC 0x794c7630
#endif

/* Undo mountinfo's octal escapes (\040 a space, \011, \012, \134) in place. */
static void unescape_mnt(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char) ((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Add one layer path (escapes undone) to layers; quietly full past max. */
static void layer_add(const char *s, size_t n, char (*layers)[PATH_MAX], size_t max, size_t *count)
{
	if (!n || *count >= max || n >= PATH_MAX)
		return;
	memcpy(layers[*count], s, n);
	layers[*count][n] = '\0';
	unescape_mnt(layers[*count]);
	(*count)++;
}

int guard_overlay_layers(int fd, char (*layers)[PATH_MAX], size_t max, size_t *n)
{
	struct statfs sf;
	struct statx sx;
	char line[8192];
	FILE *f;
	int found = 0;

	*n = 0;
	if (fstatfs(fd, &sf) < 0 || sf.f_type != OVERLAYFS_SUPER_MAGIC)
		return 0;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0)
		return -errno;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long id;
		unsigned ma, mi;
		char *sep, *opt;

		if (sscanf(line, "%llu %*u %u:%u", &id, &ma, &mi) != 3)
			continue;
		/* the mount the descriptor is on: by mount id, or by device where statx has none */
		if ((sx.stx_mask & STATX_MNT_ID) ? id != sx.stx_mnt_id
						 : (ma != sx.stx_dev_major || mi != sx.stx_dev_minor))
			continue;
		found = 1;
		/* "... - overlay SOURCE SUPER_OPTIONS" */
		sep = strstr(line, " - ");
		if (!sep || !(sep = strchr(sep + 3, ' ')) || !(sep = strchr(sep + 1, ' ')))
			break;
		sep[strcspn(sep, "\n")] = '\0';
		for (opt = sep + 1; *opt;) {
			size_t len = strcspn(opt, ",");

			if (!strncmp(opt, "lowerdir=", 9)) {
				/* lower layers are separated by ':' (a literal one is escaped as "\:") */
				const char *p = opt + 9, *end = opt + len;

				while (p < end) {
					const char *q = p;

					while (q < end && !(*q == ':' && (q == p || q[-1] != '\\')))
						q++;
					layer_add(p, (size_t) (q - p), layers, max, n);
					p = q + 1;
				}
			} else if (!strncmp(opt, "lowerdir+=", 10) || !strncmp(opt, "datadir+=", 9)) {
				/* one layer an option (the mount API's lowerdir+ and datadir+) */
				size_t k = opt[0] == 'l' ? 10 : 9;

				layer_add(opt + k, len - k, layers, max, n);
			} else if (!strncmp(opt, "upperdir=", 9)) {
				layer_add(opt + 9, len - 9, layers, max, n);
			} else if (!strncmp(opt, "workdir=", 8)) {
				layer_add(opt + 8, len - 8, layers, max, n);
			}
			opt += len;
			if (*opt == ',')
				opt++;
		}
	}
	fclose(f);
	return found ? 1 : -ENOENT;
}
