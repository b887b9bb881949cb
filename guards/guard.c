/*
 * guard.c - every refusal in one place (guard.h).
 *
 * Production identity lives in held.c (a path resolved once, held, and
 * identified by file system, inode and birth time) and prodset.c (the
 * machine registry and the study's registered items, and the checks a held
 * target must pass). guard_production here is the one-call form for a
 * path string, plus the names of production databases and hosts.
 *
 * The clone marker (written by harness/clone.c) binds a clone to its own
 * directory's device and inode: a marker copied into another directory
 * names a dev/ino that is not that directory's, so it is invalid.
 *
 * Refusals are recorded before the guard returns, so the ledger shows
 * every time a verb was told no.
 */
#include "guard.h"
#include "guard_int.h"

#include "cv_io.h"
#include "ledger.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#define GUARD_WALK_MAX 100000 /* files examined inside one target directory */
#define GUARD_WALK_DEPTH 8

/* snprintf that truncates silently (messages and paths checked elsewhere); returns the length wanted. */
__attribute__((format(printf, 3, 4))) static int fmt(char *out, size_t cap, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(out, cap, f, ap);
	va_end(ap);
	return n;
}

/* Does target name a production database or host (a DSN or URL)? */
static int names_prod_service(const json_t *study, const char *target, char *why, size_t cap)
{
	static const char *const keys[] = {"databases", "hosts"};
	const json_t *prod = json_object_get(study, "production");

	for (size_t k = 0; k < 2; k++) {
		size_t i;
		json_t *v;

		json_array_foreach(json_object_get(prod, keys[k]), i, v) {
			const char *name = json_string_value(v);
			char pat[3][300];

			if (!name || !*name)
				continue;
			fmt(pat[0], sizeof(pat[0]), "//%s", name);
			fmt(pat[1], sizeof(pat[1]), "@%s", name);
			fmt(pat[2], sizeof(pat[2]), "%s=%s", k ? "host" : "dbname", name);
			if (!strcmp(target, name) || strstr(target, pat[0]) || strstr(target, pat[1]) ||
			    strstr(target, pat[2])) {
				fmt(why, cap, "target names production %s '%s'",
					 k ? "host" : "database", name);
				return 1;
			}
		}
	}
	return 0;
}

int guard_production(struct ledger *l, const json_t *study, const char *target, const char *verb,
		     cs_err *e)
{
	char why[CS_ERR_MAX];
	guard_held h;
	int rc;

	if (names_prod_service(study, target, why, sizeof(why)))
		return guard_refuse(l, "production", verb, target, e, "%s", why);
	rc = guard_target(l, NULL, target, AT_FDCWD, verb, "target", &h, e);
	guard_held_close(&h);
	return rc;
}

/* ---- index directory contents ---- */

typedef struct name_list {
	char **v;
	size_t n, cap;
} name_list;

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* A tablespace's link of a PostgreSQL cluster: pg_tblspc/OID (the name digits only). */
static int tablespace_link(const char *rel, const char *name)
{
	if (strcmp(rel, "pg_tblspc") || !*name)
		return 0;
	for (const char *c = name; *c; c++)
		if (*c < '0' || *c > '9')
			return 0;
	return 1;
}

/*
 * Collect regular files under root/rel (bounded depth and count). In a
 * cluster (pg) the tablespaces' links pg_tblspc/OID are not files of the
 * directory and are left out; their folders are the caller's to list
 * (guard_clone checks them against the clone marker).
 */
static int list_rec(const char *root, const char *rel, int depth, int pg, name_list *nl, cs_err *e)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	fmt(path, sizeof(path), "%s%s%s", root, *rel ? "/" : "", rel);
	if (depth > GUARD_WALK_DEPTH)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: directories nested too deep", path);
	d = opendir(path);
	if (!d)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: cannot open: %s", path, strerror(errno));
	while (!rc && (de = readdir(d))) {
		char sub[PATH_MAX], full[PATH_MAX];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!*rel && !strcmp(de->d_name, GUARD_CLONE_MARKER))
			continue;
		fmt(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		fmt(full, sizeof(full), "%s/%s", root, sub);
		if (lstat(full, &st) < 0) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", full, strerror(errno));
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			rc = list_rec(root, sub, depth + 1, pg, nl, e);
			continue;
		}
		if (pg && S_ISLNK(st.st_mode) && tablespace_link(rel, de->d_name))
			continue;
		if (!S_ISREG(st.st_mode)) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"%s: not a regular file (links do not belong in an index)", full);
			break;
		}
		if (nl->n == nl->cap) {
			size_t nc = nl->cap ? nl->cap * 2 : 16;
			char **nv;

			if (nc > GUARD_WALK_MAX) {
				rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: too many files", root);
				break;
			}
			nv = realloc(nl->v, nc * sizeof(*nv));
			if (!nv) {
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
				break;
			}
			nl->v = nv;
			nl->cap = nc;
		}
		nl->v[nl->n] = strdup(sub);
		if (!nl->v[nl->n]) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			break;
		}
		nl->n++;
	}
	closedir(d);
	return rc;
}

int guard_dir_files(const char *dir, char ***names, size_t *n, cs_err *e)
{
	name_list nl = {0};
	int rc;

	char pv[PATH_MAX];
	struct stat st;
	int pg;

	*names = NULL;
	*n = 0;
	/* a PostgreSQL cluster (PG_VERSION and global/pg_control): its tablespace links are not files */
	fmt(pv, sizeof(pv), "%s/PG_VERSION", dir);
	pg = lstat(pv, &st) == 0 && S_ISREG(st.st_mode);
	fmt(pv, sizeof(pv), "%s/global/pg_control", dir);
	pg = pg && lstat(pv, &st) == 0 && S_ISREG(st.st_mode);
	rc = list_rec(dir, "", 0, pg, &nl, e);
	if (rc) {
		guard_dir_files_free(nl.v, nl.n);
		return rc;
	}
	if (nl.n)
		qsort(nl.v, nl.n, sizeof(*nl.v), cmp_names);
	*names = nl.v;
	*n = nl.n;
	return 0;
}

void guard_dir_files_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int guard_dir_sha256(const char *dir, char out[65], cs_err *e)
{
	EVP_MD_CTX *ctx = NULL;
	unsigned char md[32], *buf = NULL;
	char **names = NULL;
	size_t n = 0;
	int rc;

	rc = guard_dir_files(dir, &names, &n, e);
	if (rc)
		return rc;
	rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	buf = malloc(1u << 20);
	ctx = EVP_MD_CTX_new();
	if (!buf || !ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
		goto out;
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX];
		unsigned char le[8];
		struct stat st;
		ssize_t r;
		int fd;

		fmt(path, sizeof(path), "%s/%s", dir, names[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || fstat(fd, &st) < 0) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", path, strerror(errno));
			if (fd >= 0)
				close(fd);
			goto out;
		}
		for (int b = 0; b < 8; b++)
			le[b] = (unsigned char) ((uint64_t) st.st_size >> (8 * b));
		EVP_DigestUpdate(ctx, names[i], strlen(names[i]) + 1);
		EVP_DigestUpdate(ctx, le, 8);
		while ((r = read(fd, buf, 1u << 20)) > 0)
			EVP_DigestUpdate(ctx, buf, (size_t) r);
		close(fd);
		if (r < 0) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: read failed", path);
			goto out;
		}
	}
	EVP_DigestFinal_ex(ctx, md, NULL);
	cs_hex(md, 32, out);
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	free(buf);
	guard_dir_files_free(names, n);
	return rc;
}

/* ---- clone marker ---- */

/*
 * A cluster's clone with tablespaces: every link pg_tblspc/OID leads to
 * the folder its (HMAC'd) marker names for that OID, by device and inode,
 * and every file in it has one link. Anything else is refused: a link to
 * a folder the clone did not make could be production's tablespace.
 */
static int clone_tablespaces(struct ledger *l, const char *dir, const json_t *m,
			     const char *verb, cs_err *e)
{
	const json_t *ts = json_object_get(m, "tablespaces");
	char p[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	fmt(p, sizeof(p), "%s/pg_tblspc", dir);
	if (!(d = opendir(p)))
		return 0; /* no pg_tblspc: no tablespaces (the server says what is missing) */
	while (!rc && (de = readdir(d))) {
		const json_t *t = NULL, *x;
		char lp[PATH_MAX * 2];
		struct stat lst, st;
		char **names = NULL;
		size_t n = 0, i;
		cs_err le = {0};

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		json_array_foreach(ts, i, x) {
			const char *oid = json_string_value(json_object_get(x, "oid"));

			if (oid && !strcmp(oid, de->d_name))
				t = x;
		}
		fmt(lp, sizeof(lp), "%s/%s", p, de->d_name);
		if (lstat(lp, &lst) < 0 || !S_ISLNK(lst.st_mode) || stat(lp, &st) < 0 ||
		    !S_ISDIR(st.st_mode) || !t ||
		    (json_int_t) st.st_dev != json_integer_value(json_object_get(t, "dev")) ||
		    (json_int_t) st.st_ino != json_integer_value(json_object_get(t, "ino"))) {
			rc = guard_refuse(l, "clone", verb, dir, e,
					  "%s: tablespace %s does not lead to the folder its clone marker "
					  "names (a tablespace of a clone is cloned with it)",
					  dir, de->d_name);
			break;
		}
		if (guard_dir_files(lp, &names, &n, &le)) {
			rc = guard_refuse(l, "clone", verb, dir, e, "%s: %s", lp, le.msg);
			break;
		}
		for (i = 0; i < n && !rc; i++) {
			char fp[PATH_MAX * 3];
			struct stat fst;

			fmt(fp, sizeof(fp), "%s/%s", lp, names[i]);
			if (lstat(fp, &fst) == 0 && fst.st_nlink > 1)
				rc = guard_refuse(l, "clone", verb, dir, e,
						  "%s: tablespace %s's file %s has %lu links: a clone's "
						  "files are its own",
						  dir, de->d_name, names[i], (unsigned long) fst.st_nlink);
		}
		guard_dir_files_free(names, n);
	}
	closedir(d);
	return rc;
}

#define CLONE_KEY_FILE "clone.key"

int guard_clone_key(const char *study_dir, int create, unsigned char key[32], cs_err *e)
{
	guard_held h;
	char hex[65];
	ssize_t n;
	int fd, rc;

	rc = guard_hold(study_dir, AT_FDCWD, &h, e);
	if (rc)
		return rc;
	if (!h.exists || !S_ISDIR(h.st.st_mode)) {
		guard_held_close(&h);
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: not a study folder", study_dir);
	}
	fd = openat(h.fd, CLONE_KEY_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		unsigned char raw[32];

		if (RAND_bytes(raw, sizeof(raw)) != 1) {
			guard_held_close(&h);
			return cs_err_set(e, CS_EXIT_INTERNAL, "no random bytes for the clone key");
		}
		cs_hex(raw, 32, hex);
		/* O_EXCL: two first clones race to one key; the loser reads the winner's. */
		fd = openat(h.fd, CLONE_KEY_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		if (fd >= 0) {
			int ok = write(fd, hex, 64) == 64 && fsync(fd) == 0;

			close(fd);
			if (!ok) {
				unlinkat(h.fd, CLONE_KEY_FILE, 0);
				guard_held_close(&h);
				return cs_err_set(e, CS_EXIT_INTERNAL, "%s/%s: cannot write the clone key",
						  study_dir, CLONE_KEY_FILE);
			}
		}
		fd = openat(h.fd, CLONE_KEY_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	}
	guard_held_close(&h);
	if (fd < 0)
		return cs_err_set(e, errno == ENOENT ? CS_EXIT_REFUSED : CS_EXIT_INTERNAL,
				  "%s/%s: %s", study_dir, CLONE_KEY_FILE,
				  errno == ENOENT ? "the study has no clone key (clone with --study)"
						  : strerror(errno));
	n = read(fd, hex, 64);
	close(fd);
	hex[n > 0 ? n : 0] = '\0';
	if (n != 64)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s/%s: not a 64-digit hex key", study_dir,
				  CLONE_KEY_FILE);
	for (int i = 0; i < 32; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return cs_err_set(e, CS_EXIT_BADINPUT, "%s/%s: not a hex key", study_dir,
					  CLONE_KEY_FILE);
		key[i] = (unsigned char) v;
	}
	return 0;
}

int guard_clone_mac(const json_t *marker, const unsigned char key[32], char out[65], cs_err *e)
{
	json_t *m = json_deep_copy(marker);
	unsigned char md[32];
	unsigned int mdlen = 0;
	char *canon = NULL;
	size_t len;
	int rc;

	if (!m)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	json_object_del(m, "hmac_sha256");
	rc = cs_json_canonical(m, &canon, &len, e);
	json_decref(m);
	if (rc)
		return rc;
	if (!HMAC(EVP_sha256(), key, 32, (const unsigned char *) canon, len, md, &mdlen) ||
	    mdlen != 32) {
		free(canon);
		return cs_err_set(e, CS_EXIT_INTERNAL, "HMAC-SHA-256 failed");
	}
	free(canon);
	cs_hex(md, 32, out);
	return 0;
}

int guard_clone(struct ledger *l, const char *study_dir, const char *dir, const char *verb,
		int check_hash, json_t **marker, cs_err *e)
{
	char mpath[PATH_MAX], mac[65];
	unsigned char key[32];
	struct stat st;
	json_t *m = NULL, *files;
	cs_err le = {0};
	json_int_t dev, ino;
	char **names = NULL;
	size_t nnames = 0, i;
	json_t *f;
	int rc;

	if (marker)
		*marker = NULL;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return guard_refuse(l, "clone", verb, dir, e, "%s is not a directory", dir);
	fmt(mpath, sizeof(mpath), "%s/%s", dir, GUARD_CLONE_MARKER);
	if (cs_json_load_file(mpath, 1u << 20, &m, &le))
		return guard_refuse(l, "clone", verb, dir, e, "%s has no valid clone marker (%s)",
				    dir, le.msg);
	dev = json_integer_value(json_object_get(m, "dev"));
	ino = json_integer_value(json_object_get(m, "ino"));
	files = json_object_get(m, "files");
	if (json_integer_value(json_object_get(m, "format")) != 2 || !json_is_array(files) ||
	    !json_is_string(json_object_get(m, "source_sha256")) ||
	    !json_is_string(json_object_get(m, "method"))) {
		rc = guard_refuse(l, "clone", verb, dir, e,
				  "%s: clone marker is malformed or of an old format (clone again)",
				  mpath);
		goto out;
	}
	/* The marker is the study's word that this is its clone: HMAC under the study's key. */
	if (!study_dir || guard_clone_key(study_dir, 0, key, &le) ||
	    guard_clone_mac(m, key, mac, &le) ||
	    !json_is_string(json_object_get(m, "hmac_sha256")) ||
	    CRYPTO_memcmp(mac, json_string_value(json_object_get(m, "hmac_sha256")), 64)) {
		rc = guard_refuse(l, "clone", verb, dir, e,
				  "%s: clone marker is not authenticated by this study's key%s%s%s",
				  mpath, le.msg[0] ? " (" : "", le.msg, le.msg[0] ? ")" : "");
		goto out;
	}
	if ((uint64_t) dev != (uint64_t) st.st_dev || (uint64_t) ino != (uint64_t) st.st_ino) {
		rc = guard_refuse(l, "clone", verb, dir, e,
				  "%s: clone marker belongs to device %lld inode %lld, this directory is "
				  "%llu/%llu (a copied marker)",
				  mpath, (long long) dev, (long long) ino,
				  (unsigned long long) st.st_dev, (unsigned long long) st.st_ino);
		goto out;
	}
	/*
	 * A PostgreSQL cluster's clone is written by the server it is run under
	 * (WAL, pg_control, statistics, hint bits): its marker binds the
	 * directory and the key, not the bytes. Every file in it must still be
	 * its own (one link); whether any is production's is guard_check_held's
	 * walk.
	 */
	if (json_is_string(json_object_get(m, "target")) &&
	    !strcmp(json_string_value(json_object_get(m, "target")), "postgres")) {
		if (guard_dir_files(dir, &names, &nnames, &le)) {
			rc = guard_refuse(l, "clone", verb, dir, e, "%s: %s", dir, le.msg);
			goto out;
		}
		for (i = 0; i < nnames; i++) {
			char fp[PATH_MAX];
			struct stat fst;

			fmt(fp, sizeof(fp), "%s/%s", dir, names[i]);
			if (lstat(fp, &fst) == 0 && fst.st_nlink > 1) {
				rc = guard_refuse(l, "clone", verb, dir, e,
						  "%s: file %s has %lu links: a clone's files are its own",
						  dir, names[i], (unsigned long) fst.st_nlink);
				goto out;
			}
		}
		if ((rc = clone_tablespaces(l, dir, m, verb, e)))
			goto out;
		goto valid;
	}
	json_array_foreach(files, i, f) {
		const char *name = json_string_value(json_object_get(f, "name"));
		json_int_t size = json_integer_value(json_object_get(f, "size"));
		json_int_t fino = json_integer_value(json_object_get(f, "ino"));
		char fp[PATH_MAX];
		struct stat fst;

		if (!name || !*name || name[0] == '/' || strstr(name, "..")) {
			rc = guard_refuse(l, "clone", verb, dir, e, "%s: bad file entry %zu", mpath, i);
			goto out;
		}
		fmt(fp, sizeof(fp), "%s/%s", dir, name);
		if (lstat(fp, &fst) < 0 || !S_ISREG(fst.st_mode) || (json_int_t) fst.st_size != size ||
		    (uint64_t) fst.st_ino != (uint64_t) fino) {
			rc = guard_refuse(l, "clone", verb, dir, e,
					  "%s: file %s is missing, replaced or changed size since the "
					  "clone",
					  mpath, name);
			goto out;
		}
		/* A second link is another name for these bytes, maybe production's. */
		if (fst.st_nlink > 1) {
			rc = guard_refuse(l, "clone", verb, dir, e,
					  "%s: file %s has %lu links: a clone's files are its own",
					  dir, name, (unsigned long) fst.st_nlink);
			goto out;
		}
	}
	/* Every file of the directory is one the marker names. */
	if (guard_dir_files(dir, &names, &nnames, &le)) {
		rc = guard_refuse(l, "clone", verb, dir, e, "%s: %s", dir, le.msg);
		goto out;
	}
	if (nnames != json_array_size(files)) {
		rc = guard_refuse(l, "clone", verb, dir, e,
				  "%s: holds %zu files, its clone marker names %zu", dir, nnames,
				  json_array_size(files));
		goto out;
	}
	if (check_hash) {
		char sha[65];

		if (guard_dir_sha256(dir, sha, &le)) {
			rc = guard_refuse(l, "clone", verb, dir, e, "%s: cannot hash clone: %s", dir,
					  le.msg);
			goto out;
		}
		if (strcmp(sha, json_string_value(json_object_get(m, "source_sha256")))) {
			rc = guard_refuse(l, "clone", verb, dir, e,
					  "%s: content hash %.12s differs from the source's %.12s", dir,
					  sha, json_string_value(json_object_get(m, "source_sha256")));
			goto out;
		}
	}
valid:
	rc = 0;
	if (marker) {
		*marker = m;
		m = NULL;
	}
out:
	guard_dir_files_free(names, nnames);
	json_decref(m);
	return rc;
}

/* ---- registration, validation ---- */

int guard_hypotheses(struct ledger *l, const json_t *ids, const char *verb, cs_err *e)
{
	size_t i;
	json_t *v;

	json_array_foreach(ids, i, v) {
		ledger_record r;
		cs_err le = {0};
		const char *id = json_string_value(v);
		int found;

		if (!id)
			continue;
		found = ledger_find(l, "hypothesis", id, &r, &le);
		if (found < 0)
			return cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
		if (found) {
			ledger_record_free(&r);
			continue;
		}
		found = ledger_find(l, "amendment", id, &r, &le);
		if (found < 0)
			return cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
		if (found) {
			ledger_record_free(&r);
			continue;
		}
		return guard_refuse(l, "registered", verb, id, e,
				    "hypothesis %s is not registered in this study", id);
	}
	return 0;
}

typedef struct valid_ctx {
	json_int_t max_batch, all_batch;
	int all_passed;
} valid_ctx;

/* Where the latest "all" validation record and the last registration before any run lie. */
typedef struct order_ctx {
	int64_t all_seq, first_run, last_reg;
	char what[32];
} order_ctx;

static int order_cb(const ledger_record *r, void *ud)
{
	order_ctx *c = ud;

	if (!strcmp(r->kind, "run_start")) {
		if (!c->first_run)
			c->first_run = r->seq;
	} else if (!strcmp(r->kind, "validation")) {
		if (strstr(r->payload, "\"check\":\"all\""))
			c->all_seq = r->seq;
	} else if (!c->first_run && (!strcmp(r->kind, "hypothesis") || !strcmp(r->kind, "amendment") ||
				     !strcmp(r->kind, "study"))) {
		c->last_reg = r->seq;
		snprintf(c->what, sizeof(c->what), "%s", r->kind);
	}
	return 0;
}

static int valid_cb(const ledger_record *r, void *ud)
{
	valid_ctx *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	json_int_t b;

	if (!p)
		return 0;
	b = json_integer_value(json_object_get(p, "batch"));
	if (b > c->max_batch)
		c->max_batch = b;
	if (!strcmp(json_string_value(json_object_get(p, "check")) ?: "", "all") &&
	    b >= c->all_batch) {
		c->all_batch = b;
		c->all_passed = json_is_true(json_object_get(p, "passed"));
	}
	json_decref(p);
	return 0;
}

int guard_validated(struct ledger *l, const char *verb, cs_err *e)
{
	valid_ctx c = {0, 0, 0};
	cs_err le = {0};

	if (ledger_foreach(l, "validation", valid_cb, &c, &le))
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
	if (!c.all_batch)
		return guard_refuse(l, "validated", verb, ledger_dir(l), e,
				    "no validation has passed yet (run 'coldstudy validate %s')",
				    ledger_dir(l));
	if (c.max_batch > c.all_batch)
		return guard_refuse(l, "validated", verb, ledger_dir(l), e,
				    "validation batch %lld did not finish", (long long) c.max_batch);
	if (!c.all_passed)
		return guard_refuse(l, "validated", verb, ledger_dir(l), e,
				    "the latest validation (batch %lld) failed", (long long) c.all_batch);
	/*
	 * validate checks the hypotheses and plan on record (can-fail:Hn): one
	 * registered after it and before the first run was never checked.
	 * Registrations after the first run are post hoc and exploratory.
	 */
	{
		order_ctx o = {0, 0, 0, ""};

		if (ledger_foreach(l, NULL, order_cb, &o, &le))
			return cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
		if (o.last_reg > o.all_seq)
			return guard_refuse(l, "validated", verb, ledger_dir(l), e,
					    "a %s record (seq %lld) came after the latest validation "
					    "(seq %lld): validate again, so that every hypothesis is "
					    "checked before the first run",
					    o.what, (long long) o.last_reg, (long long) o.all_seq);
	}
	return 0;
}

/* ---- cold cache ---- */

int guard_cold(struct ledger *l, char **paths, size_t n, const char *verb, double *fraction,
	       cs_err *e)
{
	uint64_t pages = 0, resident = 0;
	const char *bad = NULL;
	int rc;

	if (fraction)
		*fraction = 0.0;
	for (size_t i = 0; i < n; i++) {
		cv_residency r;

		rc = cv_cache_residency(paths[i], &r);
		if (rc == -EACCES)
			return guard_refuse(l, "cold", verb, paths[i], e,
					    "%s: residency cannot be measured trustworthily "
					    "(no cachestat, no write access for mincore)",
					    paths[i]);
		if (rc)
			return guard_refuse(l, "cold", verb, paths[i], e,
					    "%s: residency unknown: %s", paths[i], strerror(-rc));
		pages += r.pages;
		resident += r.resident;
		if (r.resident && !bad)
			bad = paths[i];
	}
	if (fraction)
		*fraction = pages ? (double) resident / (double) pages : 0.0;
	if (resident)
		return guard_refuse(l, "cold", verb, bad, e,
				    "cache not cold after eviction: %llu of %llu pages resident "
				    "(fraction %.6f; first %s)",
				    (unsigned long long) resident, (unsigned long long) pages,
				    (double) resident / (double) pages, bad);
	return 0;
}

/* ---- clean project tree ---- */

int guard_clean_tree(struct ledger *l, const char *project_dir, const char *verb, cs_err *e)
{
	char *argv[] = {"git", "-C", (char *) project_dir, "status", "--porcelain", NULL};
	posix_spawn_file_actions_t fa;
	int pfd[2], status = 0;
	char buf[4096];
	size_t got = 0;
	ssize_t r;
	pid_t pid;
	extern char **environ;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return cs_err_set(e, CS_EXIT_INTERNAL, "pipe: %s", strerror(errno));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, "git", &fa, NULL, argv, environ)) {
		posix_spawn_file_actions_destroy(&fa);
		close(pfd[0]);
		close(pfd[1]);
		return guard_refuse(l, "clean-tree", verb, project_dir, e,
				    "cannot run git to check the project tree");
	}
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	while ((r = read(pfd[0], buf + got, sizeof(buf) - 1 - got)) > 0) {
		got += (size_t) r;
		if (got >= sizeof(buf) - 1)
			got = sizeof(buf) - 2; /* keep reading, keep the first lines */
	}
	buf[got] = '\0';
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return guard_refuse(l, "clean-tree", verb, project_dir, e,
				    "%s is not a git work tree (git status failed)", project_dir);
	if (got) {
		buf[strcspn(buf, "\n")] = '\0';
		return guard_refuse(l, "clean-tree", verb, project_dir, e,
				    "project tree %s is dirty (first: '%s')", project_dir, buf);
	}
	return 0;
}

/* ---- holdout ---- */

typedef struct pred_ctx {
	const char *sha;
	int found;
} pred_ctx;

static int pred_cb(const ledger_record *r, void *ud)
{
	pred_ctx *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	const char *s = json_string_value(json_object_get(json_object_get(p, "target"),
							  "spec_sha256"));

	if (s && !strcmp(s, c->sha))
		c->found = 1;
	json_decref(p);
	return c->found;
}

int guard_holdout_predictions(struct ledger *l, const char *spec_sha256, const char *verb,
			      cs_err *e)
{
	pred_ctx c = {spec_sha256, 0};
	cs_err le = {0};

	if (ledger_foreach(l, "prediction", pred_cb, &c, &le))
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
	if (!c.found)
		return guard_refuse(l, "holdout-predictions", verb, spec_sha256, e,
				    "no prediction targets run spec %.12s: predict before a holdout run",
				    spec_sha256);
	return 0;
}

/* Do two partition sets intersect? Absent means every partition. */
static int parts_overlap(const json_t *a, const json_t *b)
{
	size_t i, j;
	json_t *x, *y;

	if (!json_is_array(a) || !json_is_array(b))
		return 1;
	json_array_foreach(a, i, x)
		json_array_foreach(b, j, y)
			if (json_integer_value(x) == json_integer_value(y))
				return 1;
	return 0;
}

/* Do two query selections ({spec, first, count}) share a query? */
static int queries_overlap(const json_t *a, const json_t *b)
{
	const char *sa = json_string_value(json_object_get(a, "spec"));
	const char *sb = json_string_value(json_object_get(b, "spec"));
	json_int_t fa = json_integer_value(json_object_get(a, "first"));
	json_int_t fb = json_integer_value(json_object_get(b, "first"));
	json_t *ca = json_object_get(a, "count"), *cb = json_object_get(b, "count");
	json_int_t ea = json_is_integer(ca) ? fa + json_integer_value(ca) : INT64_MAX;
	json_int_t eb = json_is_integer(cb) ? fb + json_integer_value(cb) : INT64_MAX;

	if (!sa || !sb || strcmp(sa, sb))
		return 0;
	return fa < eb && fb < ea;
}

/* Do two arrays of query row digests share a row? */
static int rows_overlap(const json_t *a, const json_t *b)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
		if (cs_json_has_string(b, json_string_value(v)))
			return 1;
	return 0;
}

typedef struct overlap_ctx {
	const json_t *spec;
	char why[512];
} overlap_ctx;

static int overlap_cb(const ledger_record *r, void *ud)
{
	overlap_ctx *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	const json_t *ds;
	int po, qo;

	if (!p || json_is_true(json_object_get(p, "holdout"))) {
		json_decref(p);
		return 0;
	}
	ds = json_object_get(p, "spec");
	po = parts_overlap(json_object_get(c->spec, "partitions"), json_object_get(ds, "partitions"));
	/* by the rows both resolved to where both are known, else by their spelling */
	if (json_is_array(json_object_get(c->spec, "query_rows")) &&
	    json_is_array(json_object_get(p, "query_rows")))
		qo = rows_overlap(json_object_get(c->spec, "query_rows"), json_object_get(p, "query_rows"));
	else
		qo = queries_overlap(json_object_get(c->spec, "queries"), json_object_get(ds, "queries"));
	/*
	 * A holdout run is new evidence when no design run measured the same
	 * queries on the same partitions: the seed's holdout gate (all
	 * partitions, a query no design run used) is allowed.
	 */
	if (po && qo)
		fmt(c->why, sizeof(c->why), "design run %s used the same partitions and queries",
		    json_string_value(json_object_get(p, "run_id")) ?: "?");
	json_decref(p);
	return c->why[0] != '\0';
}

int guard_holdout_overlap(struct ledger *l, const json_t *spec, const char *declare_overlap,
			  const char *verb, cs_err *e)
{
	overlap_ctx c = {.spec = spec};
	cs_err le = {0};
	json_t *dev;
	int rc;

	if (ledger_foreach(l, "run", overlap_cb, &c, &le))
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
	if (!c.why[0])
		return 0;
	if (!declare_overlap)
		return guard_refuse(l, "holdout-overlap", verb, "holdout run", e,
				    "%s (declare it with --declare-overlap TEXT)", c.why);
	dev = json_pack("{s:s, s:s, s:s}", "because", declare_overlap, "overlap", c.why,
			"access_state", ledger_access_state(l));
	if (!dev)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	rc = ledger_append(l, "deviation", dev, NULL, e);
	json_decref(dev);
	return rc;
}

/* ---- study ---- */

typedef struct study_ctx {
	json_t *doc;
} study_ctx;

static int study_cb(const ledger_record *r, void *ud)
{
	study_ctx *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	json_t *d = json_object_get(p, "doc");

	if (d) {
		json_decref(c->doc);
		c->doc = json_incref(d);
	}
	json_decref(p);
	return 0;
}

int guard_study(struct ledger *l, const char *verb, json_t **study, cs_err *e)
{
	study_ctx c = {NULL};
	cs_err le = {0};

	*study = NULL;
	if (ledger_foreach(l, "study", study_cb, &c, &le))
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
	if (!c.doc)
		return guard_refuse(l, "study", verb, ledger_dir(l), e,
				    "no study spec registered (run 'coldstudy study register %s "
				    "study.json')",
				    ledger_dir(l));
	*study = c.doc;
	return 0;
}
