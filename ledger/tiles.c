/*
 * tiles.c - the log as C2SP tlog-tiles: a static layout any web server or
 * object store can serve, which transparency-log clients read.
 *
 * Layout under a root (https://c2sp.org/tlog-tiles; tile height 8):
 *   checkpoint                       the signed checkpoint (signed note)
 *   tile/<L>/<N>[.p/<W>]             level-L tile N: W (1..256) hashes of 32
 *                                    bytes, the nodes at tree level 8L with
 *                                    indices 256N .. 256N+W-1 (level 0: the
 *                                    leaf hashes); a full tile has W = 256
 *                                    and no .p/ suffix
 *   tile/entries/<N>[.p/<W>]         entry bundle N: W entries, each a
 *                                    big-endian uint16 length and the entry
 *   <N> is written in groups of three digits, all but the last with an x:
 *   1234067 is x001/x234/067.
 *
 * Only complete nodes are stored: a level holds floor(size / 2^level)
 * nodes, so the partial tile at the right edge of each level grows as the
 * log grows, and full tiles never change. The entry of record seq is the
 * leaf's data, the 32 bytes of the record's hash (ledger_int.h), so a
 * client's RecordHash(entry) = SHA-256(0x00 || entry) is the leaf hash in
 * tile 0; the records themselves are what `log export` prints, each line
 * carrying the hash its entry holds.
 *
 * What changes between tree sizes m < n (ledger_tiles_foreach with old =
 * m): the tiles and bundles holding a node or entry that size m did not
 * have. A publisher uploads those, then the checkpoint.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 */
#include "ledger_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TILE_H 8
#define TILE_W 256

/* "x001/x234/067" for n = 1234067 into out (at least 64 bytes). */
static void enc_index(uint64_t n, char *out, size_t cap)
{
	unsigned groups[8];
	int k = 0;
	size_t o = 0;

	do {
		groups[k++] = (unsigned) (n % 1000);
		n /= 1000;
	} while (n && k < 8);
	while (k-- > 0)
		o += (size_t) snprintf(out + o, cap - o, k ? "x%03u/" : "%03u", groups[k]);
}

int ledger_tile_path(int level, uint64_t n, unsigned w, char *out, size_t cap)
{
	char idx[64], lv[16];

	enc_index(n, idx, sizeof(idx));
	if (level < 0)
		snprintf(lv, sizeof(lv), "entries");
	else
		snprintf(lv, sizeof(lv), "%d", level);
	if (w == TILE_W)
		return snprintf(out, cap, "tile/%s/%s", lv, idx) >= (int) cap ? -1 : 0;
	return snprintf(out, cap, "tile/%s/%s.p/%u", lv, idx, w) >= (int) cap ? -1 : 0;
}

int ledger_tiles_foreach(ledger *l, const char *note, int64_t old_size,
			 int (*cb)(const char *path, const void *data, size_t len, void *ud),
			 void *ud, int64_t *count, cs_err *e)
{
	ledger_tree_head th;
	lg_walk w = {0};
	unsigned char(*rec)[32] = NULL, (*cur)[32] = NULL, root[32];
	unsigned char *buf = NULL;
	char path[128];
	uint64_t n, c, old;
	int s, rc = 0, t;
	size_t tl = 0;
	char why[200];

	*count = 0;
	/* the tree the checkpoint names: its body, signed or not */
	if (lg_note_open(note, strlen(note), NULL, &tl, why, sizeof(why)) != 1)
		tl = strlen(note);
	if ((rc = ledger_checkpoint_parse(note, tl, "checkpoint", &th, e)))
		return rc;
	if (old_size < 0 || old_size > th.size)
		return cs_err_set(e, CS_EXIT_VERIFY,
				  "the published tree has %lld records, more than the %lld being "
				  "published",
				  (long long) old_size, (long long) th.size);
	n = (uint64_t) th.size;
	old = (uint64_t) old_size;
	rec = malloc((size_t) (n ? n : 1) * 32);
	cur = malloc((size_t) (n ? n : 1) * 32);
	buf = malloc(TILE_W * 34);
	if (!rec || !cur || !buf) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory for %llu records",
				(unsigned long long) n);
		goto out;
	}
	/* every record's hash recomputed; the root must be the checkpoint's */
	if ((rc = lg_walk_begin(l, &w, (int64_t) n, e)))
		goto out;
	for (c = 0; c < n && (s = lg_walk_next(l, &w, e)) == 1; c++) {
		memcpy(rec[c], w.hash, 32);
		lg_leaf(&l->sha, w.hash, cur[c]);
	}
	if (c < n) {
		rc = s < 0 ? e->code
			   : cs_err_set(e, CS_EXIT_BADINPUT, "%s: the log has %llu records, not %llu",
					l->dir, (unsigned long long) c, (unsigned long long) n);
		goto out;
	}
	merkle_root((const unsigned char(*)[32]) cur, (size_t) n, root);
	if (memcmp(root, th.root, 32)) {
		rc = cs_err_set(e, CS_EXIT_VERIFY,
				"%s: the checkpoint's root is not the log's root at size %llu", l->dir,
				(unsigned long long) n);
		goto out;
	}
	/* entry bundles */
	for (uint64_t tn = 0; tn * TILE_W < n; tn++) {
		unsigned width = (unsigned) (n - tn * TILE_W < TILE_W ? n - tn * TILE_W : TILE_W);
		size_t len = 0;

		if (tn * TILE_W + width <= old)
			continue; /* this bundle was complete at the old size */
		for (unsigned i = 0; i < width; i++) {
			buf[len++] = 0;
			buf[len++] = 32;
			memcpy(buf + len, rec[tn * TILE_W + i], 32);
			len += 32;
		}
		ledger_tile_path(-1, tn, width, path, sizeof(path));
		if ((rc = cb(path, buf, len, ud)))
			goto out;
		(*count)++;
	}
	/* hash tiles, level by level: c complete nodes at tree level t */
	for (t = 0, c = n; c > 0; t++) {
		if (t % TILE_H == 0) {
			uint64_t oc = old >> t;

			for (uint64_t tn = 0; tn * TILE_W < c; tn++) {
				unsigned width =
					(unsigned) (c - tn * TILE_W < TILE_W ? c - tn * TILE_W : TILE_W);

				if (tn * TILE_W + width <= oc)
					continue;
				ledger_tile_path(t / TILE_H, tn, width, path, sizeof(path));
				if ((rc = cb(path, cur[tn * TILE_W], (size_t) width * 32, ud)))
					goto out;
				(*count)++;
			}
		}
		for (uint64_t i = 0; i < c / 2; i++)
			lg_node(&l->sha, cur[2 * i], cur[2 * i + 1], cur[i]);
		c /= 2;
	}
out:
	lg_walk_end(&w);
	free(rec);
	free(cur);
	free(buf);
	return rc;
}

typedef struct dir_out {
	const char *root;
	int rootfd; /* the output folder: every tile is made beneath it, no symlink followed */
	int64_t written, same;
	cs_err *e;
} dir_out;

/*
 * The folder of rel (a tile's path below the root) as a descriptor, its
 * folders made beneath rootfd with mkdirat and entered with O_NOFOLLOW (a
 * symlink there is refused, never followed); *last points at rel's file
 * name. -1 with e filled.
 */
static int tile_dir(int rootfd, const char *root, const char *rel, const char **last, cs_err *e)
{
	char buf[4096], *comp, *p;
	const char *slash = strrchr(rel, '/');
	int cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);

	*last = slash ? slash + 1 : rel;
	if (cur < 0) {
		cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", root, strerror(errno));
		return -1;
	}
	snprintf(buf, sizeof(buf), "%.*s", slash ? (int) (slash - rel) : 0, rel);
	for (p = buf; (comp = strsep(&p, "/"));) {
		int next;

		if (!*comp)
			continue;
		if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
			cs_err_set(e, CS_EXIT_BADINPUT, "%s/%s: cannot create directory %s: %s", root,
				   rel, comp, strerror(errno));
			close(cur);
			return -1;
		}
		/* a folder already there must be one: a symlink would lead the tiles elsewhere */
		next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(cur);
		if (next < 0) {
			cs_err_set(e, CS_EXIT_REFUSED, "%s/%s: %s is not a directory (a symlink is not followed)",
				   root, rel, comp);
			return -1;
		}
		cur = next;
	}
	return cur;
}

/* Read name beneath dfd (no symlink followed) into *buf; 0, -ENOENT, or -errno. */
static int read_at(int dfd, const char *name, size_t cap, char **buf, size_t *len)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	size_t n = 0;

	*buf = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t) st.st_size > cap ||
	    !(*buf = malloc((size_t) st.st_size + 1))) {
		close(fd);
		return -EINVAL;
	}
	while (n < (size_t) st.st_size) {
		ssize_t r = read(fd, *buf + n, (size_t) st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t) r;
	}
	close(fd);
	*len = n;
	return 0;
}

/* Write one tile under the output root: unchanged files are left, other content refused. */
static int write_tile(const char *path, const void *data, size_t len, void *ud)
{
	dir_out *o = ud;
	char full[4096], *have = NULL;
	const char *name;
	size_t hl = 0;
	int rc, dfd;

	snprintf(full, sizeof(full), "%s/%s", o->root, path);
	dfd = tile_dir(o->rootfd, o->root, path, &name, o->e);
	if (dfd < 0)
		return o->e->code;
	rc = read_at(dfd, name, 1u << 20, &have, &hl);
	if (!rc) {
		int same = hl == len && !memcmp(have, data, len);

		free(have);
		close(dfd);
		if (same) {
			o->same++;
			return 0;
		}
		return cs_err_set(o->e, CS_EXIT_VERIFY,
				  "%s holds other hashes: a tile of another log, or of a rewritten "
				  "one; nothing there is replaced",
				  full);
	}
	if (rc != -ENOENT) {
		close(dfd);
		return cs_err_set(o->e, CS_EXIT_REFUSED,
				  "%s: not a regular file (a symlink is not followed); nothing there "
				  "is replaced",
				  full);
	}
	rc = cs_write_file_atomic_at(dfd, name, full, data, len, 0644, o->e);
	close(dfd);
	if (rc)
		return rc;
	o->written++;
	return 0;
}

int ledger_check_ancestor(ledger *l, const char *note, size_t len, const char *src,
			  int64_t size, int64_t *old_size, cs_err *e)
{
	ledger_tree_head th;
	unsigned char root[32];
	char why[200];
	size_t tl = 0;
	int r, rc;

	*old_size = 0;
	/* signed by this study's key (when it has one), for this study's origin */
	r = lg_note_open(note, len, l->keyed ? &l->vkey : NULL, &tl, why, sizeof(why));
	if (l->keyed && r != 1)
		return cs_err_set(e, CS_EXIT_VERIFY, "%s: %s", src, why);
	if (r != 1)
		tl = len;
	if ((rc = ledger_checkpoint_parse(note, tl, src, &th, e)))
		return rc == CS_EXIT_BADINPUT ? CS_EXIT_VERIFY : rc;
	if (strcmp(th.origin, l->origin))
		return cs_err_set(e, CS_EXIT_VERIFY,
				  "%s: the checkpoint there is of another log ('%s', not '%s')", src,
				  th.origin, l->origin);
	if (th.size > size)
		return cs_err_set(e, CS_EXIT_VERIFY,
				  "%s: the tree there has %lld records, more than the %lld here: this "
				  "log is not its extension",
				  src, (long long) th.size, (long long) size);
	if ((rc = ledger_root(l, th.size, root, e)))
		return rc;
	if (memcmp(root, th.root, 32))
		return cs_err_set(e, CS_EXIT_VERIFY,
				  "%s: the tree there (size %lld) is not an ancestor of this log: the "
				  "roots at that size differ",
				  src, (long long) th.size);
	*old_size = th.size;
	return 0;
}

int ledger_tiles_write(ledger *l, const char *outdir, int64_t *written, int64_t *same,
		       char **note_out, cs_err *e)
{
	dir_out o = {outdir, -1, 0, 0, e};
	char *note = NULL, path[4096];
	int64_t count;
	int rc;

	*note_out = NULL;
	if (mkdir(outdir, 0755) < 0 && errno != EEXIST)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: cannot create directory: %s", outdir,
				  strerror(errno));
	/*
	 * held from here on (the CLI hands in the folder the guards checked and
	 * hold): every tile and the checkpoint are made beneath this descriptor
	 */
	o.rootfd = open(outdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o.rootfd < 0)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: cannot open directory: %s", outdir,
				  strerror(errno));
	rc = l->keyed ? ledger_checkpoint_signed(l, &note, e) : ledger_checkpoint(l, &note, e);
	if (rc) {
		close(o.rootfd);
		return rc;
	}
	/* a directory that already holds a log must hold an ancestor of this one */
	snprintf(path, sizeof(path), "%s/checkpoint", outdir);
	{
		char *have = NULL;
		size_t hl = 0;
		int64_t old = 0;
		ledger_tree_head th;

		if (!read_at(o.rootfd, "checkpoint", LG_NOTE_MAX, &have, &hl)) {
			rc = ledger_checkpoint_parse(note, strlen(note), "checkpoint", &th, e);
			if (!rc)
				rc = ledger_check_ancestor(l, have, hl, path, th.size, &old, e);
			free(have);
			if (rc)
				goto out;
		}
	}
	/* every tile (unchanged ones are left): a directory an earlier run left half-written is completed */
	if ((rc = ledger_tiles_foreach(l, note, 0, write_tile, &o, &count, e)))
		goto out;
	/* the checkpoint last: a reader never sees a tree whose tiles are not there yet */
	if ((rc = cs_write_file_atomic_at(o.rootfd, "checkpoint", path, note, strlen(note), 0644, e)))
		goto out;
	*written = o.written;
	*same = o.same;
	*note_out = note;
	note = NULL;
out:
	close(o.rootfd);
	free(note);
	return rc;
}
