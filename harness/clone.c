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

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Clone or copy one file; *reflinked set when FICLONE worked. */
static int clone_file(const char *src, const char *dst, int *reflinked, uint64_t *size,
		      cs_err *e)
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

int harness_clone(const char *src, const char *dst, const char *study_dir,
		  harness_clone_info *info, cs_err *e)
{
	char **names = NULL, srcabs[PATH_MAX], sha[65], ts[32], mpath[PATH_MAX];
	size_t n = 0, made = 0;
	json_t *marker = NULL, *files;
	char *canon = NULL;
	struct stat st;
	size_t clen;
	int rc;

	memset(info, 0, sizeof(*info));
	if (!realpath(src, srcabs) || stat(srcabs, &st) < 0 || !S_ISDIR(st.st_mode))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: not an index directory", src);
	if (stat(dst, &st) == 0 && !(S_ISDIR(st.st_mode) && empty_dir(dst)))
		return cs_err_set(e, CS_EXIT_REFUSED, "%s: already exists; a clone is made fresh",
				  dst);
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
	files = json_array();
	marker = json_object();
	json_object_set_new(marker, "files", files);
	for (size_t i = 0; i < n; i++) {
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
		rc = clone_file(sp, dp, &rl, &size, e);
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
out:
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
