/*
 * clone.c - `coldstudy clone SRC DST`: a copy-on-write clone of an index
 * directory with a clone marker.
 *
 * Every file is cloned with FICLONE (a reflink: the clone shares the
 * source's extents until either is written, as a Ceph or LVM snapshot
 * clone does). Where the file system cannot (ext4, tmpfs, across file
 * systems), the file is copied in full, and the clone's method says so:
 * "reflink" only when every file was reflinked, "copy" otherwise.
 *
 * The marker DST/.coldstudy-clone is written last, atomically:
 * {"format":2, "dev", "ino" (DST's own), "method", "source" (absolute),
 * "source_sha256" (guard_dir_sha256 over the source), "files"
 * [{name, size, ino}], "reflinked", "created", "hmac_sha256"}. Binding it
 * to DST's device and inode makes a marker copied into another directory
 * invalid; the HMAC under the study's clone key (guards/) makes an edited
 * or hand-written marker invalid. Without a study the marker has no HMAC
 * and no study run accepts the clone.
 *
 * DST must not exist, or be an empty directory the caller has just made
 * through a held descriptor (cmd_clone passes "/proc/PID/fd/N", so every
 * file lands in the directory that was checked, whatever is renamed).
 * A failed clone removes what it made; DST never holds a marker over a
 * half-copied tree.
 */
#include "harness.h"

#include "guard.h"
#include "harness_int.h"
#include "ledger.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* snprintf for paths: a name that does not fit is cut (and then not found), never overrun. */
__attribute__((format(printf, 3, 4))) static void pathf(char *out, size_t cap, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(out, cap, f, ap);
	va_end(ap);
}

int harness_dir_sha256(const char *dir, char out[65], cs_err *e)
{
	return guard_dir_sha256(dir, out, e);
}

/* Make every directory of rel (a relative file path) under root. */
static int make_parents(const char *root, const char *rel)
{
	char p[PATH_MAX];
	size_t rl = strlen(root);

	if (rl + 1 + strlen(rel) >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, root, rl);
	p[rl] = '/';
	memcpy(p + rl + 1, rel, strlen(rel) + 1);
	for (char *s = p + rl + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return 0;
}

/* Copy fd in to fd out in full (copy_file_range, read/write fallback). */
static int copy_all(int in, int out, uint64_t size)
{
	uint64_t done = 0;
	char *buf = NULL;

	while (done < size) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, size - done, 0);

		if (n <= 0)
			break;
		done += (uint64_t) n;
	}
	if (done < size) {
		buf = malloc(1u << 20);
		if (!buf)
			return -ENOMEM;
		if (lseek(in, (off_t) done, SEEK_SET) < 0 || lseek(out, (off_t) done, SEEK_SET) < 0) {
			free(buf);
			return -errno;
		}
		while (done < size) {
			ssize_t r = read(in, buf, 1u << 20), w = 0;

			if (r <= 0) {
				free(buf);
				return r < 0 ? -errno : -EIO;
			}
			while (w < r) {
				ssize_t k = write(out, buf + w, (size_t) (r - w));

				if (k < 0) {
					free(buf);
					return -errno;
				}
				w += k;
			}
			done += (uint64_t) r;
		}
		free(buf);
	}
	return fsync(out) < 0 ? -errno : 0;
}

/* Clone or copy one file; *reflinked set when FICLONE worked; keep_owner: the source's uid/gid. */
static int clone_file(const char *src, const char *dst, int keep_owner, int *reflinked,
		      uint64_t *size, cs_err *e)
{
	struct stat st;
	int in = -1, out = -1, rc;

	*reflinked = 0;
	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0 || fstat(in, &st) < 0) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: cannot open: %s", src, strerror(errno));
		goto out;
	}
	*size = (uint64_t) st.st_size;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0777);
	if (out < 0) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot create: %s", dst, strerror(errno));
		goto out;
	}
	if (keep_owner && fchown(out, st.st_uid, st.st_gid) < 0) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot give it the source's owner: %s", dst,
				strerror(errno));
		goto out;
	}
	if (ioctl(out, FICLONE, in) == 0) {
		*reflinked = 1;
		rc = fsync(out) < 0 ? -errno : 0;
	} else {
		rc = copy_all(in, out, (uint64_t) st.st_size);
	}
	if (rc)
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: copy failed: %s", dst, strerror(-rc));
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return rc;
}

/* Remove what a failed clone made (files listed, then the directories, best effort). */
static void undo(const char *dst, char **names, size_t n)
{
	char p[PATH_MAX];

	for (size_t i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/%s", dst, names[i]);
		unlink(p);
	}
	for (size_t i = n; i-- > 0;) {
		char *s;

		snprintf(p, sizeof(p), "%s/%s", dst, names[i]);
		while ((s = strrchr(p, '/')) && s > p + strlen(dst)) {
			*s = '\0';
			rmdir(p);
		}
	}
	rmdir(dst);
}

/*
 * Is src a PostgreSQL data directory (PG_VERSION and global/pg_control)?
 * 1 yes, 0 no.
 */
static int is_pgdata(const char *src)
{
	char p[PATH_MAX];
	struct stat st;

	pathf(p, sizeof(p), "%s/PG_VERSION", src);
	if (lstat(p, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	pathf(p, sizeof(p), "%s/global/pg_control", src);
	return lstat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * Make every directory of the cluster src/rel under dst (empty ones too:
 * PostgreSQL needs pg_notify, pg_snapshots, ...), each with its source's
 * mode and owner (the server refuses a data directory it does not own).
 * A tablespace's link (pg_tblspc/OID) is collected into ts ({oid,
 * source}: its folder, resolved) when ts is given, for the caller to
 * clone; any other symlink (a pg_wal elsewhere) is refused: its target
 * would not be cloned.
 */
static int pg_dirs(const char *src, const char *dst, const char *rel, int depth, json_t *ts,
		   cs_err *e)
{
	char sp[PATH_MAX], dp[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (depth > 32)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s/%s: directories nested too deep", src, rel);
	pathf(sp, sizeof(sp), "%s%s%s", src, *rel ? "/" : "", rel);
	d = opendir(sp);
	if (!d)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: cannot open: %s", sp, strerror(errno));
	while (!rc && (de = readdir(d))) {
		char sub[PATH_MAX], full[PATH_MAX * 2];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		pathf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		pathf(full, sizeof(full), "%s/%s", src, sub);
		if (lstat(full, &st) < 0) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", full, strerror(errno));
			break;
		}
		if (S_ISLNK(st.st_mode) && ts && !strcmp(rel, "pg_tblspc") &&
		    strspn(de->d_name, "0123456789") == strlen(de->d_name)) {
			char target[PATH_MAX];
			struct stat tst;

			if (!realpath(full, target) || stat(target, &tst) < 0 || !S_ISDIR(tst.st_mode)) {
				rc = cs_err_set(e, CS_EXIT_BADINPUT,
						"%s: a tablespace whose folder cannot be found", full);
				break;
			}
			json_array_append_new(ts, json_pack("{s:s, s:s}", "oid", de->d_name,
							    "source", target));
			continue;
		}
		if (S_ISLNK(st.st_mode)) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"%s: a symlink (%s): clusters with storage outside the data "
					"directory are not cloned",
					full, ts ? "a linked pg_wal" : "a tablespace or a linked pg_wal");
			break;
		}
		if (!S_ISDIR(st.st_mode))
			continue;
		pathf(dp, sizeof(dp), "%s/%s", dst, sub);
		if ((mkdir(dp, st.st_mode & 07777) < 0 && errno != EEXIST) ||
		    chown(dp, st.st_uid, st.st_gid) < 0 || chmod(dp, st.st_mode & 07777) < 0) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot create: %s", dp, strerror(errno));
			break;
		}
		rc = pg_dirs(src, dst, sub, depth + 1, ts, e);
	}
	closedir(d);
	return rc;
}

/*
 * Remove everything under dir, deepest first, never following a link: only
 * for a cluster's clone that failed, whose dir this clone made fresh (the
 * server-side copy and pg_wal's second pass are not in the name list).
 */
static void rm_tree(const char *dir, int depth)
{
	struct dirent *de;
	DIR *d;

	if (depth > 32 || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		char sub[PATH_MAX];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		pathf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		if (lstat(sub, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			rm_tree(sub, depth + 1);
			rmdir(sub);
		} else {
			unlink(sub);
		}
	}
	closedir(d);
}

/* Is dir an empty directory? */
static int empty_dir(const char *dir)
{
	char **names = NULL;
	size_t n = 0;
	int empty = guard_dir_files(dir, &names, &n, NULL) == 0 && n == 0;
	char m[PATH_MAX];
	struct stat st;

	guard_dir_files_free(names, n);
	snprintf(m, sizeof(m), "%s/%s", dir, GUARD_CLONE_MARKER);
	return empty && lstat(m, &st) < 0;
}

/*
 * What a cluster's online copy leaves out (PostgreSQL's backup protocol
 * says so): the running server's pid and options files, the contents of
 * directories it rebuilds at start, temporary files and relcache init
 * files. pg_wal is copied after pg_backup_stop, listed afresh.
 */
static int pg_skip_online(const char *name)
{
	static const char *const dirs[] = {"pg_replslot/", "pg_dynshmem/", "pg_notify/",
					   "pg_serial/", "pg_snapshots/", "pg_stat_tmp/",
					   "pg_subtrans/", "pg_wal/", NULL};
	const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;

	if (!strcmp(name, "postmaster.pid") || !strcmp(name, "postmaster.opts") ||
	    !strcmp(name, "backup_label") || !strcmp(name, "tablespace_map") ||
	    strstr(name, "pgsql_tmp") || !strcmp(base, "pg_internal.init"))
		return 1;
	for (size_t i = 0; dirs[i]; i++)
		if (!strncmp(name, dirs[i], strlen(dirs[i])))
			return 1;
	return 0;
}

/* Copy src/name to dst/name (a cluster's file: owner kept) and list it in files. */
static int copy_listed(const char *src, const char *dst, const char *name, int keep_owner,
		       json_t *files, harness_clone_info *info, cs_err *e)
{
	char sp[PATH_MAX * 2], dp[PATH_MAX * 2];
	uint64_t size = 0;
	struct stat fst;
	int rl, rc;

	pathf(sp, sizeof(sp), "%s/%s", src, name);
	pathf(dp, sizeof(dp), "%s/%s", dst, name);
	if (make_parents(dst, name) < 0)
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot create directories", dp);
	rc = clone_file(sp, dp, keep_owner, &rl, &size, e);
	if (rc)
		return rc;
	info->files++;
	info->bytes += size;
	info->reflinked_files += (uint64_t) rl;
	if (lstat(dp, &fst) < 0)
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", dp, strerror(errno));
	json_array_append_new(files, json_pack("{s:s, s:I, s:I}", "name", name, "size",
					       (json_int_t) size, "ino", (json_int_t) fst.st_ino));
	return 0;
}

/* The port a running server registered: line 4 of its postmaster.pid; -1 when none. */
static int pid_file_port(const char *path)
{
	char buf[4096], *line, *end;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), i;
	ssize_t n;
	long v = -1;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* pid, data directory, start time, port: empty lines count, so no strtok */
	for (line = buf, i = 1; line && i < 4; i++) {
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	if (line) {
		v = strtol(line, &end, 10);
		if (end == line || (*end != '\n' && *end != '\0') || v < 1 || v > 65535)
			v = -1;
	}
	return (int) v;
}

/*
 * A running cluster, through the low-level backup API: pg_backup_start
 * (a fast checkpoint) on the server found at sockdir/port, which must run
 * on src itself; every file but pg_wal copied; pg_backup_stop; pg_wal
 * listed afresh and copied (it holds the WAL from the start checkpoint to
 * the backup's end record); the backup_label written into the clone, so
 * the clone's first start replays to a consistent state.
 */
static int clone_online(const char *srcabs, const struct stat *pst, const char *dst,
			const char *sockdir, int port, char **names, size_t n, json_t *files,
			json_t *marker, harness_clone_info *info, cs_err *e)
{
	char **wal = NULL, wdir[PATH_MAX + 8], label_path[PATH_MAX * 2];
	size_t nwal = 0;
	char *label = NULL;
	PGconn *c = NULL;
	int rc, fd;

	rc = harness_pg_backup_start(srcabs, pst, sockdir, port, &c, e);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++)
		if (!pg_skip_online(names[i]))
			rc = copy_listed(srcabs, dst, names[i], 1, files, info, e);
	if (rc) {
		harness_pg_backup_stop(c, NULL, NULL);
		return rc;
	}
	rc = harness_pg_backup_stop(c, &label, e);
	if (rc)
		return rc;
	pathf(wdir, sizeof(wdir), "%s/pg_wal", srcabs);
	rc = guard_dir_files(wdir, &wal, &nwal, e);
	for (size_t i = 0; i < nwal && !rc; i++) {
		char name[PATH_MAX];

		pathf(name, sizeof(name), "pg_wal/%s", wal[i]);
		rc = copy_listed(srcabs, dst, name, 1, files, info, e);
	}
	guard_dir_files_free(wal, nwal);
	if (rc)
		goto out;
	pathf(label_path, sizeof(label_path), "%s/backup_label", dst);
	fd = open(label_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || fchown(fd, pst->st_uid, pst->st_gid) < 0 ||
	    write(fd, label, strlen(label)) != (ssize_t) strlen(label) || fsync(fd) < 0) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot write: %s", label_path,
				strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	{
		struct stat fst;

		if (lstat(label_path, &fst) == 0)
			json_array_append_new(files, json_pack("{s:s, s:I, s:I}", "name", "backup_label",
							       "size", (json_int_t) fst.st_size, "ino",
							       (json_int_t) fst.st_ino));
	}
	json_object_set_new(marker, "backup", json_string("pg_backup_start/pg_backup_stop (online)"));
	info->files++;
out:
	free(label);
	return rc;
}

/*
 * A cluster's tablespaces (ts: pg_dirs's {oid, source}), each cloned beside
 * the clone's data directory: DST.tblspc/OID, its directories made with
 * the source's owner and modes, its files reflinked or copied, the clone's
 * link pg_tblspc/OID repointed there. DST.tblspc is refused (exit 3) when
 * it is, lies in or contains production (the study's with l, and the
 * machine registry's), and must be new. Each entry gains {clone, dev, ino,
 * files, sha256}; *sha gets the source's content hash with the tablespaces'
 * (the data directory's alone when there are none).
 */
static int clone_tablespaces(const char *dst, const char *study_dir, json_t *ts,
			     const char *dir_sha, harness_clone_info *info, char sha[65],
			     char *made_root, size_t rootcap, cs_err *e)
{
	char root[PATH_MAX], dstabs[PATH_MAX], *acc = NULL;
	size_t i, alen = 0, acap;
	struct ledger *l = NULL;
	guard_held h;
	json_t *t;
	int rc = 0;

	made_root[0] = '\0';
	if (!json_array_size(ts)) {
		memcpy(sha, dir_sha, 65);
		return 0;
	}
	guard_held_init(&h);
	if (!realpath(dst, dstabs))
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", dst, strerror(errno));
	pathf(root, sizeof(root), "%s.tblspc", dstabs);
	if (study_dir && (rc = ledger_open(study_dir, &l, e)))
		return rc;
	rc = guard_target(l, NULL, root, AT_FDCWD, "clone", "tablespace clone", &h, e);
	if (!rc && h.exists)
		rc = cs_err_set(e, CS_EXIT_REFUSED,
				"%s: already exists; a clone's tablespaces are cloned fresh", root);
	if (!rc)
		rc = guard_held_mkdirs(&h, e);
	guard_held_close(&h);
	ledger_close(l);
	if (rc)
		return rc;
	pathf(made_root, rootcap, "%s", root);
	acap = 65 + 96 * json_array_size(ts); /* the directory's hash, then "\nOID HASH" each */
	acc = malloc(acap);
	if (!acc)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	memcpy(acc, dir_sha, 64);
	alen = 64;
	json_array_foreach(ts, i, t) {
		const char *oid = json_string_value(json_object_get(t, "oid"));
		const char *src = json_string_value(json_object_get(t, "source"));
		char tdst[PATH_MAX + 32], link[PATH_MAX + 32], tsha[65];
		char **names = NULL;
		size_t n = 0;
		struct stat st;
		json_t *files = json_array();

		pathf(tdst, sizeof(tdst), "%s/%s", root, oid);
		if (stat(src, &st) < 0 || mkdir(tdst, st.st_mode & 07777) < 0 ||
		    chown(tdst, st.st_uid, st.st_gid) < 0 || chmod(tdst, st.st_mode & 07777) < 0) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot make it: %s", tdst,
					strerror(errno));
			json_decref(files);
			break;
		}
		if ((rc = pg_dirs(src, tdst, "", 0, NULL, e)) ||
		    (rc = guard_dir_files(src, &names, &n, e)) || (rc = guard_dir_sha256(src, tsha, e))) {
			guard_dir_files_free(names, n);
			json_decref(files);
			break;
		}
		for (size_t k = 0; k < n && !rc; k++)
			rc = copy_listed(src, tdst, names[k], 1, files, info, e);
		guard_dir_files_free(names, n);
		pathf(link, sizeof(link), "%s/pg_tblspc/%s", dst, oid);
		if (!rc && (symlink(tdst, link) < 0 || lchown(link, st.st_uid, st.st_gid) < 0 ||
			    stat(tdst, &st) < 0))
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot link it to %s: %s", link, tdst,
					strerror(errno));
		if (rc) {
			json_decref(files);
			break;
		}
		json_object_set_new(t, "clone", json_string(tdst));
		json_object_set_new(t, "dev", json_integer((json_int_t) st.st_dev));
		json_object_set_new(t, "ino", json_integer((json_int_t) st.st_ino));
		json_object_set_new(t, "files", files);
		json_object_set_new(t, "sha256", json_string(tsha));
		alen += (size_t) snprintf(acc + alen, acap - alen, "\n%.20s %s", oid, tsha);
	}
	if (!rc)
		cs_sha256_hex(acc, alen, sha);
	free(acc);
	return rc;
}

int harness_clone(const char *src, const char *dst, const char *study_dir,
		  harness_clone_info *info, cs_err *e)
{
	return harness_clone_cluster(src, dst, study_dir, NULL, 0, info, e);
}

int harness_clone_cluster(const char *src, const char *dst, const char *study_dir,
			  const char *sockdir, int port, harness_clone_info *info, cs_err *e)
{
	char **names = NULL, srcabs[PATH_MAX], sha[65], ts[32], mpath[PATH_MAX];
	char tsroot[PATH_MAX] = "", allsha[65];
	size_t n = 0, made = 0;
	json_t *marker = NULL, *files, *tsl = NULL;
	char *canon = NULL;
	struct stat st, pst;
	size_t clen;
	int rc, pg, online = 0;

	memset(info, 0, sizeof(*info));
	if (!realpath(src, srcabs) || stat(srcabs, &st) < 0 || !S_ISDIR(st.st_mode))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: not an index directory", src);
	if (stat(dst, &st) == 0 && !(S_ISDIR(st.st_mode) && empty_dir(dst)))
		return cs_err_set(e, CS_EXIT_REFUSED, "%s: already exists; a clone is made fresh",
				  dst);
	pg = is_pgdata(srcabs);
	if (pg) {
		char pid[PATH_MAX];

		/* A running server changes its files while they are copied: no consistent copy. */
		pathf(pid, sizeof(pid), "%s/postmaster.pid", srcabs);
		online = lstat(pid, &st) == 0;
		if (online && !sockdir)
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "%s: the cluster is running (postmaster.pid): stop it, or name "
					  "its socket directory (--pg-socket DIR [--pg-port N]) to clone it "
					  "through the low-level backup API",
					  src);
		if (stat(srcabs, &pst) < 0)
			return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s", src, strerror(errno));
		/* no --pg-port: the port the running server registered (postmaster.pid), never a guess */
		if (online && port <= 0 && (port = pid_file_port(pid)) <= 0)
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "%s: line 4 of postmaster.pid names no port; name it with "
					  "--pg-port N",
					  src);
	}
	rc = guard_dir_files(srcabs, &names, &n, e);
	if (rc)
		return rc;
	if (!n) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: holds no files", src);
		goto out;
	}
	rc = guard_dir_sha256(srcabs, sha, e);
	if (rc)
		goto out;
	if (mkdir(dst, 0755) < 0 && errno != EEXIST) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot create: %s", dst, strerror(errno));
		goto out;
	}
	if (pg) {
		/* The data directory is its owner's, 0700 (or 0750), as the source's. */
		if (chown(dst, pst.st_uid, pst.st_gid) < 0 || chmod(dst, pst.st_mode & 07777) < 0) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot give it the cluster's owner: %s",
					dst, strerror(errno));
			goto fail;
		}
		tsl = json_array();
		rc = pg_dirs(srcabs, dst, "", 0, tsl, e);
		if (rc)
			goto fail;
		if (online && json_array_size(tsl)) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"%s: a running cluster with tablespaces is not copied through the "
					"backup API here: stop it, then clone it",
					src);
			goto fail;
		}
	}
	files = json_array();
	marker = json_object();
	json_object_set_new(marker, "files", files);
	if (online) {
		rc = clone_online(srcabs, &pst, dst, sockdir, port, names, n, files, marker, info, e);
		if (rc)
			goto fail;
		made = n;
	}
	for (size_t i = 0; i < n && !online; i++) {
		char sp[PATH_MAX * 2], dp[PATH_MAX * 2];
		uint64_t size = 0;
		int rl;

		snprintf(sp, sizeof(sp), "%s/%s", srcabs, names[i]);
		snprintf(dp, sizeof(dp), "%s/%s", dst, names[i]);
		if (make_parents(dst, names[i]) < 0) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot create directories", dp);
			goto fail;
		}
		made = i + 1;
		rc = clone_file(sp, dp, pg, &rl, &size, e);
		if (rc)
			goto fail;
		info->files++;
		info->bytes += size;
		info->reflinked_files += (uint64_t) rl;
		{
			struct stat fst;

			if (lstat(dp, &fst) < 0) {
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", dp, strerror(errno));
				goto fail;
			}
			json_array_append_new(files, json_pack("{s:s, s:I, s:I}", "name", names[i],
							       "size", (json_int_t) size, "ino",
							       (json_int_t) fst.st_ino));
		}
	}
	/* tablespaces beside the data directory, its links repointed; the hash covers them */
	rc = clone_tablespaces(dst, study_dir, tsl, sha, info, allsha, tsroot, sizeof(tsroot), e);
	if (rc)
		goto fail;
	memcpy(sha, allsha, sizeof(sha));
	if (json_array_size(tsl))
		json_object_set(marker, "tablespaces", tsl);
	snprintf(info->method, sizeof(info->method), "%s",
		 info->reflinked_files == info->files ? "reflink" : "copy");
	snprintf(info->source_sha256, sizeof(info->source_sha256), "%s", sha);
	if (stat(dst, &st) < 0) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", dst, strerror(errno));
		goto fail;
	}
	cs_format_rfc3339(cs_now_us(), ts);
	json_object_set_new(marker, "format", json_integer(2));
	json_object_set_new(marker, "dev", json_integer((json_int_t) st.st_dev));
	json_object_set_new(marker, "ino", json_integer((json_int_t) st.st_ino));
	json_object_set_new(marker, "method", json_string(info->method));
	json_object_set_new(marker, "source", json_string(srcabs));
	json_object_set_new(marker, "source_sha256", json_string(sha));
	json_object_set_new(marker, "reflinked", json_integer((json_int_t) info->reflinked_files));
	json_object_set_new(marker, "created", json_string(ts));
	if (pg)
		json_object_set_new(marker, "target", json_string("postgres"));
	if (study_dir) {
		unsigned char key[32];
		char mac[65];

		rc = guard_clone_key(study_dir, 1, key, e);
		if (!rc)
			rc = guard_clone_mac(marker, key, mac, e);
		if (rc)
			goto fail;
		json_object_set_new(marker, "hmac_sha256", json_string(mac));
	}
	rc = cs_json_canonical(marker, &canon, &clen, e);
	if (rc)
		goto fail;
	if ((size_t) snprintf(mpath, sizeof(mpath), "%s/%s", dst, GUARD_CLONE_MARKER) >= sizeof(mpath)) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: path too long", dst);
		goto fail;
	}
	rc = cs_write_file_atomic(mpath, canon, clen, 0444, e);
	if (rc)
		goto fail;
	goto out;
fail:
	undo(dst, names, made);
	if (pg) {
		rm_tree(dst, 0);
		rmdir(dst);
	}
	if (tsroot[0]) {
		rm_tree(tsroot, 0);
		rmdir(tsroot);
	}
out:
	json_decref(tsl);
	free(canon);
	json_decref(marker);
	guard_dir_files_free(names, n);
	return rc;
}

int harness_clone_target(struct ledger *l, const char *dst, guard_held *h, cs_err *e)
{
	int rc = guard_target(l, NULL, dst, AT_FDCWD, "clone", "DST", h, e);

	if (rc)
		return rc;
	if (h->exists) {
		guard_held_close(h);
		return cs_err_set(e, CS_EXIT_REFUSED, "%s: already exists; a clone is made fresh",
				  dst);
	}
	rc = guard_held_mkdirs(h, e);
	if (rc)
		guard_held_close(h);
	return rc;
}
