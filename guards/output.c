/*
 * output.c - where a verb may write: one decision for every output path,
 * scratch directory and cache.
 *
 * Reading production to build something elsewhere is allowed; writing
 * into it never is. Every writer asks here first:
 *   - guard_output: an --out, --trace, --record-blocks, report folder,
 *     study folder, ... The path is resolved once (guard_hold: symlinks
 *     and magic links such as /proc/self/fd/N and /proc/self/cwd followed
 *     by the kernel), checked against production as every target
 *     is (is, lies inside, contains, hard-links into, lives on a production
 *     block device), and so is the folder the writer creates in; the
 *     missing folders are made beneath the held ancestor (mkdirat, no
 *     symlink followed), and the writer is handed a path through the held
 *     folder ("/proc/PID/fd/N/NAME"): a folder renamed or swapped for a
 *     symlink after the check changes nothing.
 *   - guard_output_fopen: the one way a writer opens that NAME: beneath the
 *     held folder's descriptor, O_CREAT|O_EXCL|O_NOFOLLOW; a symlink at
 *     NAME is replaced, never followed; an existing file is overwritten only
 *     when it is a regular file with one link, checked through the opened
 *     descriptor before it is truncated. (Writers that make a temporary
 *     file and rename it, such as the engine's, do the same with O_EXCL.)
 *   - guard_tmpdir: TMPDIR, checked and held for the process as a folder
 *     children and scratch files use.
 *   - guard_cache_dir: the ground-truth cache (--cache-dir, else
 *     COLDSTUDY_CACHE, else $HOME/.cache/coldstudy), checked and held for
 *     the process, and COLDSTUDY_CACHE set to the held folder so that the
 *     engine's own default is the checked one.
 *
 * Error convention: 0 or CS_EXIT_* with e filled (CS_EXIT_REFUSED with a
 * refusal record when l is set), as guard.h.
 */
#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * A symlink at name beneath dfd (dangling too; of "a/b", the first
 * component: the one still missing) checked where it points, as a target.
 */
static int check_link_at(struct ledger *l, guard_prodset *ps, int dfd, const char *path,
			 const char *verb, const char *role, cs_err *e)
{
	struct stat ls;
	char to[PATH_MAX], name[256];
	ssize_t tl;
	guard_held t;
	int rc;

	if ((size_t) snprintf(name, sizeof(name), "%.*s", (int) strcspn(path, "/"), path) >=
	    sizeof(name))
		return 0;
	if (!*name || fstatat(dfd, name, &ls, AT_SYMLINK_NOFOLLOW) ||
	    !S_ISLNK(ls.st_mode) || (tl = readlinkat(dfd, name, to, sizeof(to) - 1)) <= 0)
		return 0;
	to[tl] = '\0';
	rc = guard_target(l, ps, to, dfd, verb, role, &t, e);
	guard_held_close(&t);
	return rc;
}

int guard_output(struct ledger *l, guard_prodset *ps, const char *path, int is_dir,
		 const char *verb, const char *role, guard_held *h, char *out, size_t cap,
		 cs_err *e)
{
	char dir[PATH_MAX], name[256];
	const char *slash, *base;
	size_t len;
	int rc;

	guard_held_init(h);
	if (!path || !*path)
		return cs_err_set(e, CS_EXIT_USAGE, "%s: an empty path", role);
	len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len >= sizeof(dir))
		return cs_err_set(e, CS_EXIT_USAGE, "%s %.80s...: path too long", role, path);
	if (is_dir) {
		/* the folder itself: held, checked, made */
		rc = guard_target(l, ps, path, AT_FDCWD, verb, role, h, e);
		/* a dangling symlink at its name: where it points is checked first */
		if (!rc && !h->exists && (rc = check_link_at(l, ps, h->fd, h->rest, verb, role, e)))
			guard_held_close(h);
		if (!rc && (rc = guard_held_mkdirs(h, e)))
			guard_held_close(h);
		if (!rc && !S_ISDIR(h->st.st_mode)) {
			guard_held_close(h);
			rc = cs_err_set(e, CS_EXIT_USAGE, "%s %s: not a directory", role, path);
		}
		if (!rc && (size_t) snprintf(out, cap, "%s", guard_held_via(h)) >= cap) {
			guard_held_close(h);
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s %s: path too long", role, path);
		}
		return rc;
	}
	/* a file: the name it will have (a symlink there is followed for the check) ... */
	rc = guard_target(l, ps, path, AT_FDCWD, verb, role, h, e);
	if (rc)
		return rc;
	guard_held_close(h);
	memcpy(dir, path, len);
	dir[len] = '\0';
	slash = strrchr(dir, '/');
	base = slash ? slash + 1 : dir;
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..") || strlen(base) >= sizeof(name))
		return cs_err_set(e, CS_EXIT_USAGE, "%s %s: a file name is expected", role, path);
	snprintf(name, sizeof(name), "%s", base);
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		dir[slash - dir] = '\0';
	/*
	 * ... and the folder it is created in, held, checked and made. Only one
	 * new name is made there: the folder may not be or lie inside production
	 * (it may hold production beside it: a file in /srv beside /srv/pg).
	 */
	rc = guard_hold(dir, AT_FDCWD, h, e);
	if (rc == CS_EXIT_REFUSED)
		return guard_refuse(l, "production", verb, path, e, "%s %s: %s", role, path,
				    "the path cannot be resolved (too many symlinks, or it leads "
				    "to something deleted)");
	if (!rc) {
		guard_held chk = *h;

		chk.exists = 0; /* as a place to create in: is it, or is it inside, production */
		rc = guard_check_held(l, ps, &chk, verb, role, e);
	}
	if (!rc)
		rc = guard_held_mkdirs(h, e);
	if (rc) {
		guard_held_close(h);
		return rc;
	}
	if (!S_ISDIR(h->st.st_mode)) {
		guard_held_close(h);
		return cs_err_set(e, CS_EXIT_USAGE, "%s %s: %s is not a directory", role, path, dir);
	}
	/* a symlink at the name (dangling too): where it points is checked as a target */
	if ((rc = check_link_at(l, ps, h->fd, name, verb, role, e))) {
		guard_held_close(h);
		return rc;
	}
	if ((size_t) snprintf(out, cap, "%s/%s", guard_held_via(h), name) >= cap) {
		guard_held_close(h);
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s %s: path too long", role, path);
	}
	return 0;
}

int guard_cache_dir(struct ledger *l, guard_prodset *ps, const char *dir, const char *verb,
		    const char **via, cs_err *e)
{
	/* held for the process: the engine reads the cache whenever it needs ground truth */
	static guard_held held = {.fd = -1, .made_parent = -1};
	static char held_via[4200];
	const char *env = getenv("COLDSTUDY_CACHE"), *home = getenv("HOME"), *role;
	char path[PATH_MAX];
	guard_held h;
	int rc;

	*via = NULL;
	if (dir && *dir) {
		role = "--cache-dir";
		snprintf(path, sizeof(path), "%s", dir);
	} else if (env && *env) {
		role = "COLDSTUDY_CACHE";
		/* the folder this process checked and set already */
		if (held_via[0] && !strcmp(env, held_via)) {
			*via = held_via;
			return 0;
		}
		snprintf(path, sizeof(path), "%s", env);
	} else if (home && *home) {
		role = "the cache under $HOME";
		if ((size_t) snprintf(path, sizeof(path), "%s/.cache/coldstudy", home) >=
		    sizeof(path))
			return cs_err_set(e, CS_EXIT_USAGE, "$HOME: path too long");
	} else {
		return 0; /* no cache: ground truth is computed and not kept */
	}
	rc = guard_output(l, ps, path, 1, verb, role, &h, path, sizeof(path), e);
	if (rc)
		return rc;
	guard_held_close(&held);
	held = h;
	snprintf(held_via, sizeof(held_via), "%s", guard_held_via(&held));
	/* the engine's default (no dir given) is then this folder, through the hold */
	setenv("COLDSTUDY_CACHE", held_via, 1);
	*via = held_via;
	return 0;
}

/*
 * The folder of out, as a directory descriptor: a hold of this process
 * ("/proc/PID/fd/N") is used as it is, any other folder is held and checked
 * as guard_output's are. *name points into out. -1 with e filled.
 */
static int out_dirfd(const char *out, const char *verb, const char *role, const char **name,
		     cs_err *e)
{
	char dir[PATH_MAX], pre[64];
	const char *slash = strrchr(out, '/');
	size_t plen = (size_t) snprintf(pre, sizeof(pre), "/proc/%d/fd/", (int) getpid());
	guard_held h;
	struct stat st;
	int dfd;

	*name = slash ? slash + 1 : out;
	if (!**name || !strcmp(*name, ".") || !strcmp(*name, "..")) {
		cs_err_set(e, CS_EXIT_USAGE, "%s %s: a file name is expected", role, out);
		return -1;
	}
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == out)
		snprintf(dir, sizeof(dir), "/");
	else if ((size_t) (slash - out) >= sizeof(dir)) {
		cs_err_set(e, CS_EXIT_USAGE, "%s %.80s...: path too long", role, out);
		return -1;
	} else
		snprintf(dir, sizeof(dir), "%.*s", (int) (slash - out), out);
	if (!strncmp(dir, pre, plen) && dir[plen] && strspn(dir + plen, "0123456789") ==
	    strlen(dir + plen)) {
		/* guard_output's held folder: the descriptor itself, never a walk by name */
		long n = strtol(dir + plen, NULL, 10);

		dfd = n >= 0 && n < INT_MAX ? fcntl((int) n, F_DUPFD_CLOEXEC, 0) : -1;
		if (dfd < 0 || fstat(dfd, &st) < 0 || !S_ISDIR(st.st_mode)) {
			if (dfd >= 0)
				close(dfd);
			cs_err_set(e, CS_EXIT_INTERNAL, "%s: the held folder is gone", role);
			return -1;
		}
		return dfd;
	}
	if (guard_target(NULL, NULL, dir, AT_FDCWD, verb, role, &h, e))
		return -1;
	if (!h.exists || !S_ISDIR(h.st.st_mode)) {
		guard_held_close(&h);
		cs_err_set(e, CS_EXIT_USAGE, "%s %s: %s is not a directory", role, out, dir);
		return -1;
	}
	dfd = fcntl(h.fd, F_DUPFD_CLOEXEC, 0);
	guard_held_close(&h);
	if (dfd < 0)
		cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", role, strerror(errno));
	return dfd;
}

FILE *guard_output_fopen(const char *out, const char *verb, const char *role, cs_err *e)
{
	char shown[4200];
	const char *name;
	struct stat ls, st;
	FILE *f;
	int dfd, fd = -1;

	guard_spell(out, 0, shown, sizeof(shown));
	dfd = out_dirfd(out, verb, role, &name, e);
	if (dfd < 0)
		return NULL;
	for (int tries = 0; fd < 0 && tries < 2; tries++) {
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			break;
		if (fstatat(dfd, name, &ls, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone in between: create it again */
		if (S_ISLNK(ls.st_mode)) {
			/* a link at the name is replaced, never followed */
			if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
				break;
			continue;
		}
		if (!S_ISREG(ls.st_mode) || ls.st_nlink != 1) {
			close(dfd);
			cs_err_set(e, CS_EXIT_REFUSED,
				   "refused (output): %s %s: %s is there; only a regular file with one "
				   "link is overwritten",
				   role, shown, S_ISREG(ls.st_mode) ? "a file with other hard links" :
				   "something other than a file");
			return NULL;
		}
		/* overwrite: opened without following or truncating, checked through the descriptor */
		fd = openat(dfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			break;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
		    st.st_ino != ls.st_ino || st.st_dev != ls.st_dev) {
			close(fd);
			close(dfd);
			cs_err_set(e, CS_EXIT_REFUSED,
				   "refused (output): %s %s: changed while being opened", role, shown);
			return NULL;
		}
		{
			guard_held h;

			guard_held_init(&h);
			h.fd = fd;
			h.exists = 1;
			h.st = st;
			if (snprintf(h.shown, sizeof(h.shown), "%s", shown) >= (int) sizeof(h.shown))
				h.shown[sizeof(h.shown) - 2] = '~'; /* shown cut short: for messages only */
			if (guard_check_held(NULL, NULL, &h, verb, role, e)) {
				close(fd);
				close(dfd);
				return NULL;
			}
		}
		if (ftruncate(fd, 0) < 0 || fcntl(fd, F_SETFL, 0) < 0) {
			int err = errno;

			close(fd);
			close(dfd);
			cs_err_set(e, CS_EXIT_INTERNAL, "%s %s: %s", role, shown, strerror(err));
			return NULL;
		}
	}
	if (fd < 0) {
		int err = errno;

		close(dfd);
		cs_err_set(e, err == ELOOP || err == EEXIST ? CS_EXIT_REFUSED : CS_EXIT_BADINPUT,
			   "%s %s: %s", role,
			   shown, err == EEXIST ? "appeared again while being replaced" : strerror(err));
		return NULL;
	}
	close(dfd);
	f = fdopen(fd, "w");
	if (!f) {
		int err = errno;

		close(fd);
		cs_err_set(e, CS_EXIT_INTERNAL, "%s %s: %s", role, shown, strerror(err));
	}
	return f;
}

int guard_tmpdir(struct ledger *l, guard_prodset *ps, const char *verb, cs_err *e)
{
	/* held for the process: children (postgres, fio) and scratch files use it later */
	static guard_held held = {.fd = -1, .made_parent = -1};
	static char held_via[4200];
	const char *env = getenv("TMPDIR");
	char via[PATH_MAX + 300];
	guard_held h;
	int rc;

	if (!env || !*env || (held_via[0] && !strcmp(env, held_via)))
		return 0;
	rc = guard_hold(env, AT_FDCWD, &h, e);
	if (rc == CS_EXIT_REFUSED)
		return guard_refuse(l, "production", verb, env, e, "TMPDIR %s: %s", env,
				    "the path cannot be resolved (too many symlinks, or it leads "
				    "to something deleted)");
	if (rc)
		return rc;
	{
		/*
		 * As a place files are made in: is it, or is it inside, production (on
		 * its storage, an overlay of it). A TMPDIR that merely holds production
		 * somewhere below (/tmp) is not walked: nothing is written down there.
		 */
		guard_held chk = h;

		chk.exists = 0;
		if ((rc = guard_check_held(l, ps, &chk, verb, "TMPDIR", e))) {
			guard_held_close(&h);
			return rc;
		}
	}
	if (!h.exists) {
		/* nothing is made there; a symlink at its name (dangling) is checked where it points */
		rc = check_link_at(l, ps, h.fd, h.rest, verb, "TMPDIR", e);
		guard_held_close(&h);
		return rc;
	}
	if (!S_ISDIR(h.st.st_mode)) {
		guard_held_close(&h);
		return cs_err_set(e, CS_EXIT_BADINPUT, "TMPDIR %s: not a directory", env);
	}
	snprintf(via, sizeof(via), "%s", guard_held_via(&h));
	guard_held_close(&held);
	held = h;
	if (snprintf(held_via, sizeof(held_via), "%s", via) >= (int) sizeof(held_via)) {
		guard_held_close(&held);
		return cs_err_set(e, CS_EXIT_BADINPUT, "TMPDIR %s: its held path is too long", env);
	}
	setenv("TMPDIR", held_via, 1);
	return 0;
}
