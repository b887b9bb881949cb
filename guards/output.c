/*
 * output.c - where a verb may write: one decision for every output path,
 * scratch directory and cache.
 *
 * Reading production to build something elsewhere is allowed; writing
 * into it never is. Every writer asks here first:
 *   - guard_output: an --out, --trace, --record-blocks, report folder,
 *     study folder, ... The path is resolved once (guard_hold: symlinks
 *     followed by the kernel, magic links such as /proc/self/fd/N and
 *     /proc/self/cwd refused), checked against production as every target
 *     is (is, lies inside, contains, hard-links into, lives on a production
 *     block device), and so is the folder the writer creates in; the
 *     missing folders are made beneath the held ancestor (mkdirat, no
 *     symlink followed), and the writer is handed a path through the held
 *     folder ("/proc/PID/fd/N/NAME"): a folder renamed or swapped for a
 *     symlink after the check changes nothing. The writer creates its file
 *     there with O_EXCL (or a temporary file and a rename), so a symlink
 *     planted at NAME is replaced, never followed.
 *   - guard_cache_dir: the ground-truth cache (--cache-dir, else
 *     COLDSTUDY_CACHE, else $HOME/.cache/coldstudy), checked and held for
 *     the process, and COLDSTUDY_CACHE set to the held folder so that the
 *     engine's own default is the checked one.
 *
 * Error convention: 0 or CS_EXIT_* with e filled (CS_EXIT_REFUSED with a
 * refusal record when l is set), as guard.h.
 */
#include "guard.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
				    "the path goes through a magic link (/proc/self/fd, /dev/fd)");
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
	{
		/* a symlink at the name (dangling too): where it points is checked as a target */
		struct stat ls;
		char to[PATH_MAX];
		ssize_t tl;

		if (!fstatat(h->fd, name, &ls, AT_SYMLINK_NOFOLLOW) && S_ISLNK(ls.st_mode) &&
		    (tl = readlinkat(h->fd, name, to, sizeof(to) - 1)) > 0) {
			guard_held t;

			to[tl] = '\0';
			rc = guard_target(l, ps, to, h->fd, verb, role, &t, e);
			guard_held_close(&t);
			if (rc) {
				guard_held_close(h);
				return rc;
			}
		}
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
	static guard_held held;
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
