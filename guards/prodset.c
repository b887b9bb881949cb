/*
 * prodset.c - what production is, and whether a held target touches it.
 *
 * Two sources make the production set: the machine-wide registry
 * (one JSON file, COLDSTUDY_PRODUCTION_REGISTRY or
 * /var/lib/coldstudy/production.json, filled by every `study register` and
 * by `coldstudy production add`; where the variable names another file,
 * the machine's is read too), checked by every verb that evicts,
 * writes, creates, runs load on or opens a device, with or without a
 * study; and, when a verb works inside a study, every production item the
 * study ever registered (the union over its `study` records; an amended
 * record starts the union afresh).
 *
 * Items are identities recorded when they were registered (guard_ident:
 * file system, inode, birth time; a block device's storage set), never
 * spellings: a relative path is resolved once, against the study folder,
 * and from then on it is the inode it named.
 *
 * A target is refused when
 *   1. it is a production item (same identity: symlinks, bind mounts, hard
 *      links, a second loop device over the same image all land here);
 *   2. an ancestor of it is (walked through "..", from the held descriptor,
 *      so a spelling cannot lie about where it is);
 *   3. it contains one (each item's ancestors are walked up and compared
 *      with the target, and the target is walked down, bounded);
 *   4. it, or a file inside it, is a hard link to a file inside a
 *      production directory (production directories are walked, bounded);
 *   5. it lives on a production block device, or is one (storage sets meet);
 *   6. it lies on an overlay mount one of whose layers (lower, upper, work)
 *      is, lies inside, contains or lives on production: the mount's
 *      identity includes its layers (/proc/self/mountinfo).
 * A walk that reaches its limit refuses the target and names the limit
 * (COLDSTUDY_GUARD_WALK_MAX entries, COLDSTUDY_GUARD_WALK_DEPTH levels):
 * an unexamined corner is not a pass.
 */
#include "prodset.h"
#include "guard_int.h"
#include "refuse.h"

#include "ledger.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
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

#define REGISTRY_DEFAULT "/var/lib/coldstudy/production.json"
#define REGISTRY_CAP (16u << 20)

typedef struct prod_item {
	char kind[16]; /* path, block_device, host, database */
	char path[PATH_MAX];
	char owner[128];
	guard_ident id;
	guard_devset devs; /* block_device items */
	int present;       /* still at its path with its identity */
	uint64_t *tree;    /* ino, btime_ns pairs: the folder's files when registered */
	size_t ntree;
} prod_item;

typedef struct inner_ref {
	guard_ident id;
	const prod_item *item;
} inner_ref;

struct guard_prodset {
	prod_item *v;
	size_t n, cap;
	inner_ref *in; /* inodes inside production directories */
	size_t nin, capin;
	int inner_built;
	char inner_err[512]; /* a production walk past its limits */
};

size_t guard_walk_max(void)
{
	const char *s = getenv("COLDSTUDY_GUARD_WALK_MAX");
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return 100000;
	v = strtoull(s, &end, 10);
	return (*end || !v) ? 100000 : (size_t) v;
}

int guard_walk_depth(void)
{
	const char *s = getenv("COLDSTUDY_GUARD_WALK_DEPTH");
	char *end;
	long v;

	if (!s || !*s)
		return 32;
	v = strtol(s, &end, 10);
	return (*end || v < 1 || v > 4096) ? 32 : (int) v;
}

const char *guard_registry_path(void)
{
	const char *s = getenv("COLDSTUDY_PRODUCTION_REGISTRY");

	return s && *s ? s : REGISTRY_DEFAULT;
}

/* ---- identities as JSON ---- */

json_t *guard_ident_json(const guard_ident *id)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:{s:i, s:I, s:I, s:I}, s:I, s:I}", "dev_major",
			 (json_int_t) major(id->dev), "dev_minor", (json_int_t) minor(id->dev), "ino",
			 (json_int_t) id->ino, "mode", (json_int_t) id->mode, "btime_ns",
			 (json_int_t) id->btime_ns, "fs", "kind", id->fs.kind, "a",
			 (json_int_t) id->fs.a, "b", (json_int_t) id->fs.b, "c",
			 (json_int_t) id->fs.c, "rdev_major", (json_int_t) major(id->rdev),
			 "rdev_minor", (json_int_t) minor(id->rdev));
}

static json_int_t jint(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

int guard_ident_from_json(const json_t *j, guard_ident *id)
{
	const json_t *fs = json_object_get(j, "fs");

	memset(id, 0, sizeof(*id));
	if (!json_is_object(j) || !json_is_object(fs) || !json_is_integer(json_object_get(j, "ino")))
		return -EINVAL;
	id->dev = makedev((unsigned) jint(j, "dev_major"), (unsigned) jint(j, "dev_minor"));
	id->ino = (uint64_t) jint(j, "ino");
	id->mode = (unsigned) jint(j, "mode");
	id->btime_ns = (int64_t) jint(j, "btime_ns");
	id->rdev = makedev((unsigned) jint(j, "rdev_major"), (unsigned) jint(j, "rdev_minor"));
	id->fs.kind = (int) jint(fs, "kind");
	id->fs.a = (uint64_t) jint(fs, "a");
	id->fs.b = (uint64_t) jint(fs, "b");
	id->fs.c = (uint64_t) jint(fs, "c");
	return 0;
}

json_t *guard_devset_json(const guard_devset *s)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < s->n; i++)
		json_array_append_new(a, json_pack("{s:i, s:I, s:I, s:I}", "kind", s->v[i].kind, "a",
						   (json_int_t) s->v[i].a, "b",
						   (json_int_t) s->v[i].b, "c",
						   (json_int_t) s->v[i].c));
	return a;
}

void guard_devset_from_json(const json_t *j, guard_devset *s)
{
	size_t i;
	json_t *v;

	memset(s, 0, sizeof(*s));
	json_array_foreach(j, i, v) {
		if (s->n >= GUARD_DEVSET_MAX)
			break;
		s->v[s->n++] = (guard_fskey){(int) jint(v, "kind"), (uint64_t) jint(v, "a"),
					     (uint64_t) jint(v, "b"), (uint64_t) jint(v, "c")};
	}
}

/* ---- the set ---- */

static int set_push(guard_prodset *ps, const json_t *item, const char *owner)
{
	const char *kind = json_string_value(json_object_get(item, "kind"));
	const char *path = json_string_value(json_object_get(item, "path"));
	const char *name = json_string_value(json_object_get(item, "name"));
	prod_item *it;

	if (!kind)
		return 0;
	if (ps->n == ps->cap) {
		size_t nc = ps->cap ? ps->cap * 2 : 16;
		prod_item *nv = realloc(ps->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		ps->v = nv;
		ps->cap = nc;
	}
	it = &ps->v[ps->n];
	memset(it, 0, sizeof(*it));
	say(it->kind, sizeof(it->kind), "%s", kind);
	say(it->path, sizeof(it->path), "%s", path ? path : name ? name : "");
	say(it->owner, sizeof(it->owner), "%s", owner ? owner : "");
	if (!strcmp(kind, "path") || !strcmp(kind, "block_device")) {
		const json_t *tree = json_object_get(item, "tree");

		if (guard_ident_from_json(json_object_get(item, "ident"), &it->id))
			return 0; /* malformed entry: nothing to compare with */
		guard_devset_from_json(json_object_get(item, "devices"), &it->devs);
		if (json_array_size(tree) >= 2) {
			it->tree = malloc(json_array_size(tree) * sizeof(*it->tree));
			if (!it->tree)
				return -ENOMEM;
			for (size_t k = 0; k + 1 < json_array_size(tree); k += 2) {
				it->tree[k] = (uint64_t) json_integer_value(json_array_get(tree, k));
				it->tree[k + 1] = (uint64_t) json_integer_value(json_array_get(tree, k + 1));
			}
			it->ntree = json_array_size(tree) / 2;
		}
	}
	ps->n++;
	return 0;
}

/* Items of a study record (its production_items), with amendments restarting the union. */
static int study_cb(const ledger_record *r, void *ud)
{
	guard_prodset *ps = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	const json_t *items = json_object_get(p, "production_items");
	const char *owner = json_string_value(json_object_get(p, "id"));
	size_t i;
	json_t *v;

	if (!p)
		return 0;
	if (json_is_true(json_object_get(p, "production_amended"))) {
		/* Drop what earlier study records of this study protected. */
		size_t keep = 0;

		for (size_t k = 0; k < ps->n; k++) {
			if (strncmp(ps->v[k].owner, "study:", 6))
				ps->v[keep++] = ps->v[k];
			else
				free(ps->v[k].tree);
		}
		ps->n = keep;
	}
	json_array_foreach(items, i, v) {
		char o[160];

		say(o, sizeof(o), "study:%s", owner ? owner : "?");
		if (set_push(ps, v, o)) {
			json_decref(p);
			return -ENOMEM;
		}
	}
	json_decref(p);
	return 0;
}

/*
 * The registry's sentinel, beside it ("<registry>.seen"): how many items the
 * registry held when coldstudy last wrote it. A registry deleted, emptied or
 * shrunk by anything but `coldstudy production remove` then fails closed
 * instead of protecting nothing.
 */
static void sentinel_path(const char *path, char *out, size_t cap)
{
	say(out, cap, "%s.seen", path);
}

/* The sentinel's count (-1: no sentinel); exit 5 when it cannot be read as one. */
static int sentinel_read(const char *path, long long *n, cs_err *e)
{
	char sp[PATH_MAX];
	json_t *d = NULL;
	int rc;

	*n = -1;
	sentinel_path(path, sp, sizeof(sp));
	if (access(sp, F_OK) < 0 && errno == ENOENT)
		return 0;
	rc = cs_json_load_file(sp, 4096, &d, e);
	if (rc)
		return rc;
	if (!json_is_integer(json_object_get(d, "items")) || json_integer_value(json_object_get(d, "items")) < 0) {
		json_decref(d);
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.items: a count of registry items is expected",
				  sp);
	}
	*n = (long long) json_integer_value(json_object_get(d, "items"));
	json_decref(d);
	return 0;
}

static int sentinel_write(size_t n, cs_err *e)
{
	char sp[PATH_MAX], text[160], ts[32];

	sentinel_path(guard_registry_path(), sp, sizeof(sp));
	cs_format_rfc3339(cs_now_us(), ts);
	say(text, sizeof(text), "{\"items\": %zu, \"written\": \"%s\"}\n", n, ts);
	return cs_write_file_atomic(sp, text, strlen(text), 0644, e);
}

/* Every item must be one the guards can compare: refuse (exit 5, its JSON path) one they cannot. */
static int registry_items_check(const char *path, const json_t *items, cs_err *e)
{
	static const char *const kinds[] = {"path", "block_device", "database", "host", "port", NULL};
	size_t i;
	json_t *v;

	json_array_foreach(items, i, v) {
		const char *kind = json_string_value(json_object_get(v, "kind"));
		guard_ident id;
		size_t k;

		for (k = 0; kind && kinds[k] && strcmp(kinds[k], kind); k++)
			;
		if (!kind || !kinds[k])
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "%s: $.items[%zu].kind: path, block_device, database, host or "
					  "port expected; an item the guards cannot read protects nothing",
					  path, i);
		if (k >= 2) {
			if (!json_is_string(json_object_get(v, "name")))
				return cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.items[%zu].name: a string is expected",
						  path, i);
		} else if (guard_ident_from_json(json_object_get(v, "ident"), &id)) {
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "%s: $.items[%zu].ident: an identity {dev_major, dev_minor, ino (an "
					  "integer), fs, ...} is expected",
					  path, i);
		}
	}
	return 0;
}

/*
 * Load the registry's JSON ({"format":1,"items":[...]}). An absent file is
 * empty only where no sentinel says it held items; fewer items than the
 * sentinel counts, or an item that cannot be read, is exit 5 naming it.
 */
static int registry_load_at(const char *path, json_t **doc, cs_err *e)
{
	json_t *d = NULL;
	long long seen;
	int rc;

	*doc = NULL;
	if ((rc = sentinel_read(path, &seen, e)))
		return rc;
	if (access(path, F_OK) < 0 && errno == ENOENT) {
		if (seen > 0)
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "%s: the production registry is missing, yet it held %lld "
					  "item%s (%s.seen): restore it (production is never assumed "
					  "away), or remove the sentinel to start an empty registry",
					  path, seen, seen == 1 ? "" : "s", path);
		*doc = json_pack("{s:i, s:[]}", "format", 1, "items");
		return *doc ? 0 : cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	}
	rc = cs_json_load_file(path, REGISTRY_CAP, &d, e);
	if (rc)
		return rc;
	if (!json_is_array(json_object_get(d, "items"))) {
		json_decref(d);
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: $.items: the production registry has no item array", path);
	}
	if ((rc = registry_items_check(path, json_object_get(d, "items"), e))) {
		json_decref(d);
		return rc;
	}
	if (seen >= 0 && (long long) json_array_size(json_object_get(d, "items")) < seen) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT,
				"%s: $.items: %zu item%s, fewer than the %lld it held (%s.seen): items "
				"leave only through `coldstudy production remove`; restore it",
				path, json_array_size(json_object_get(d, "items")),
				json_array_size(json_object_get(d, "items")) == 1 ? "" : "s", seen, path);
		json_decref(d);
		return rc;
	}
	*doc = d;
	return 0;
}

/* The registry verbs write: COLDSTUDY_PRODUCTION_REGISTRY, or the machine's. */
static int registry_load(json_t **doc, cs_err *e)
{
	return registry_load_at(guard_registry_path(), doc, e);
}

/*
 * A second registry named by COLDSTUDY_PRODUCTION_REGISTRY (a study's own,
 * a test's) never hides the machine's: the machine's registry is read
 * too, under the same fail-closed rules. *doc NULL when it is the same file.
 */
static int registry_load_machine(json_t **doc, cs_err *e)
{
	const char *own = guard_registry_path();
	struct stat a, b;

	*doc = NULL;
	if (!strcmp(own, REGISTRY_DEFAULT) ||
	    (stat(own, &a) == 0 && stat(REGISTRY_DEFAULT, &b) == 0 && a.st_dev == b.st_dev &&
	     a.st_ino == b.st_ino))
		return 0;
	return registry_load_at(REGISTRY_DEFAULT, doc, e);
}

/* Is the item still where it was registered, as the same inode? */
static void item_presence(prod_item *it)
{
	guard_held h;
	guard_ident now;
	cs_err e = {0};

	it->present = 0;
	if (strcmp(it->kind, "path") || !it->path[0])
		return;
	if (guard_hold(it->path, AT_FDCWD, &h, &e))
		return;
	if (h.exists && guard_ident_fd(h.fd, &now) == 0 && guard_ident_same(&now, &it->id))
		it->present = 1;
	guard_held_close(&h);
}

int guard_prodset_load(struct ledger *l, guard_prodset **out, cs_err *e)
{
	guard_prodset *ps = calloc(1, sizeof(*ps));
	json_t *reg = NULL, *mreg = NULL;
	size_t i;
	json_t *v;
	int rc;

	*out = NULL;
	if (!ps)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	rc = registry_load(&reg, e);
	if (!rc)
		rc = registry_load_machine(&mreg, e);
	if (rc)
		goto fail;
	json_array_foreach(json_object_get(reg, "items"), i, v) {
		if (set_push(ps, v, json_string_value(json_object_get(v, "owner")))) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto fail;
		}
	}
	json_array_foreach(json_object_get(mreg, "items"), i, v) {
		if (set_push(ps, v, json_string_value(json_object_get(v, "owner")))) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto fail;
		}
	}
	if (l) {
		cs_err le = {0};

		if (ledger_foreach(l, "study", study_cb, ps, &le)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
			goto fail;
		}
	}
	for (size_t k = 0; k < ps->n; k++)
		item_presence(&ps->v[k]);
	json_decref(reg);
	json_decref(mreg);
	*out = ps;
	return 0;
fail:
	json_decref(reg);
	json_decref(mreg);
	guard_prodset_free(ps);
	return rc;
}

int guard_prodset_add(guard_prodset *ps, const char *path, int base_fd, const char *owner,
		      cs_err *e)
{
	json_t *doc = json_pack("{s:{s:[s]}}", "production", "paths", path), *items = NULL;
	int rc;

	if (!doc)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	rc = guard_production_resolve(doc, base_fd, owner, &items, e);
	if (!rc && set_push(ps, json_array_get(items, 0), owner))
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	if (!rc) {
		item_presence(&ps->v[ps->n - 1]);
		ps->inner_built = 0; /* the new item's contents count from the next check */
		ps->nin = 0;
		ps->inner_err[0] = '\0';
	}
	json_decref(items);
	json_decref(doc);
	return rc;
}

int guard_prodset_add_items(guard_prodset *ps, const json_t *items, const char *owner, cs_err *e)
{
	size_t i, n0 = ps->n;
	json_t *v;

	json_array_foreach(items, i, v) {
		if (set_push(ps, v, owner))
			return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	}
	for (size_t k = n0; k < ps->n; k++)
		item_presence(&ps->v[k]);
	ps->inner_built = 0; /* the new items' contents count from the next check */
	ps->nin = 0;
	ps->inner_err[0] = '\0';
	return 0;
}

void guard_prodset_free(guard_prodset *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < ps->n; i++)
		free(ps->v[i].tree);
	free(ps->v);
	free(ps->in);
	free(ps);
}

/* ---- walks ---- */

typedef struct walk {
	size_t seen, max;
	int depth_max;
	char over[512]; /* set when a limit was reached */
} walk;

static int inner_add(guard_prodset *ps, const guard_ident *id, const prod_item *it)
{
	if (ps->nin == ps->capin) {
		size_t nc = ps->capin ? ps->capin * 2 : 256;
		inner_ref *nv = realloc(ps->in, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		ps->in = nv;
		ps->capin = nc;
	}
	ps->in[ps->nin++] = (inner_ref){*id, it};
	return 0;
}

/* Every inode under dirfd (not following symlinks) into the inner set. */
static int inner_walk(guard_prodset *ps, int dfd, const prod_item *it, int depth, walk *w)
{
	DIR *d;
	struct dirent *de;
	int fd, rc = 0;

	if (depth > w->depth_max) {
		say(w->over, sizeof(w->over),
			 "production item %s is nested deeper than %d levels (raise "
			 "COLDSTUDY_GUARD_WALK_DEPTH)",
			 it->path, w->depth_max);
		return 1;
	}
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while (!rc && (de = readdir(d))) {
		guard_ident id;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++w->seen > w->max) {
			say(w->over, sizeof(w->over),
				 "production item %s holds more than %zu entries (raise "
				 "COLDSTUDY_GUARD_WALK_MAX)",
				 it->path, w->max);
			rc = 1;
			break;
		}
		if (guard_ident_at(dirfd(d), de->d_name, &id))
			continue;
		if (inner_add(ps, &id, it)) {
			rc = -ENOMEM;
			break;
		}
		if (S_ISDIR(id.mode)) {
			int sub = openat(dirfd(d), de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0) {
				rc = inner_walk(ps, sub, it, depth + 1, w);
				close(sub);
			}
		}
	}
	closedir(d);
	return rc;
}

/* Build the set of inodes inside production directories (once). */
static int inner_build(guard_prodset *ps)
{
	walk w = {0, guard_walk_max(), guard_walk_depth(), ""};

	if (ps->inner_built)
		return ps->inner_err[0] ? 1 : 0;
	ps->inner_built = 1;
	for (size_t i = 0; i < ps->n; i++) {
		prod_item *it = &ps->v[i];
		guard_held h;
		cs_err e = {0};
		int fd, rc;

		if (!it->present && it->ntree) {
			/*
			 * Moved or renamed: its files are still production by identity (the
			 * tree recorded when it was registered), wherever they are reached.
			 */
			for (size_t k = 0; k < it->ntree; k++) {
				guard_ident fid = it->id;

				fid.ino = it->tree[2 * k];
				fid.btime_ns = (int64_t) it->tree[2 * k + 1];
				if (inner_add(ps, &fid, it))
					return -ENOMEM;
			}
			continue;
		}
		if (!it->present || !S_ISDIR(it->id.mode))
			continue;
		if (guard_hold(it->path, AT_FDCWD, &h, &e))
			continue;
		fd = openat(h.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		guard_held_close(&h);
		if (fd < 0)
			continue;
		rc = inner_walk(ps, fd, it, 0, &w);
		close(fd);
		if (rc < 0) {
			say(ps->inner_err, sizeof(ps->inner_err), "out of memory walking %s",
				 it->path);
			return 1;
		}
		if (rc > 0) {
			say(ps->inner_err, sizeof(ps->inner_err), "%s", w.over);
			return 1;
		}
	}
	return 0;
}

/* The production item id is (or is inside), or NULL. */
static const prod_item *match(const guard_prodset *ps, const guard_ident *id, int *inner)
{
	*inner = 0;
	for (size_t i = 0; i < ps->n; i++)
		if (!strcmp(ps->v[i].kind, "path") && guard_ident_same(&ps->v[i].id, id))
			return &ps->v[i];
	for (size_t i = 0; i < ps->nin; i++)
		if (guard_ident_same(&ps->in[i].id, id)) {
			*inner = 1;
			return ps->in[i].item;
		}
	return NULL;
}

typedef struct hit {
	char why[1024];
} hit;

/* Walk a target directory down (bounded), comparing every entry with production. */
static int target_walk(const guard_prodset *ps, int dfd, const char *rel, int depth, walk *w,
		       hit *h)
{
	DIR *d;
	struct dirent *de;
	int fd, rc = 0;

	if (depth > w->depth_max) {
		say(w->over, sizeof(w->over),
			 "%s is nested deeper than %d levels (raise COLDSTUDY_GUARD_WALK_DEPTH)",
			 rel[0] ? rel : ".", w->depth_max);
		return 1;
	}
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		say(w->over, sizeof(w->over), "cannot read directory %s", rel[0] ? rel : ".");
		return 1;
	}
	while (!rc && (de = readdir(d))) {
		guard_ident id, tid;
		const prod_item *m;
		char sub[PATH_MAX];
		int inner;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++w->seen > w->max) {
			say(w->over, sizeof(w->over),
				 "the target holds more than %zu entries (raise COLDSTUDY_GUARD_WALK_MAX)",
				 w->max);
			rc = 1;
			break;
		}
		say(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
		if (guard_ident_at(dirfd(d), de->d_name, &id))
			continue;
		m = match(ps, &id, &inner);
		/* A symlink inside is compared by what it points at too (it is never followed in). */
		if (!m && S_ISLNK(id.mode)) {
			int lfd = openat(dirfd(d), de->d_name, O_PATH | O_CLOEXEC);

			if (lfd >= 0 && guard_ident_fd(lfd, &tid) == 0)
				m = match(ps, &tid, &inner);
			if (lfd >= 0)
				close(lfd);
		}
		if (m) {
			say(h->why, sizeof(h->why), "%s inside the target is %s production item %s",
				 sub, inner ? "a file of" : "", m->path);
			rc = 2;
			break;
		}
		if (S_ISDIR(id.mode)) {
			int s = openat(dirfd(d), de->d_name,
				       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (s >= 0) {
				rc = target_walk(ps, s, sub, depth + 1, w, h);
				close(s);
			}
		}
	}
	closedir(d);
	return rc;
}

/*
 * A file has no "..": its folder is found through the name the kernel has
 * for the descriptor now (/proc/self/fd), and accepted only when the entry
 * there is still this file (a renamed production folder's files are then
 * seen inside it). -1 when it cannot be found.
 */
static int file_parent(int fd, const guard_ident *id)
{
	char link[64], path[PATH_MAX], *slash;
	guard_ident there;
	ssize_t n;
	int dfd;

	say(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || path[0] != '/')
		return -1;
	path[n] = '\0';
	slash = strrchr(path, '/');
	if (!slash || !slash[1])
		return -1;
	*slash = '\0';
	dfd = open(path[0] ? path : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	if (guard_ident_at(dfd, slash + 1, &there) || there.ino != id->ino ||
	    !guard_fskey_eq(&there.fs, &id->fs)) {
		close(dfd);
		return -1;
	}
	return dfd;
}

/* Walk from fd up through ".." to the root; 1 with why when an ancestor (or fd itself) is production. */
static int ancestors(const guard_prodset *ps, int fd, int self, hit *h)
{
	int cur = dup(fd), hops = 0;
	guard_ident prev = {0};

	if (cur < 0)
		return 0;
	for (;;) {
		guard_ident id;
		const prod_item *m;
		int inner, up;

		if (guard_ident_fd(cur, &id))
			break;
		if (hops && id.ino == prev.ino && id.dev == prev.dev)
			break; /* "/" is its own parent */
		if (hops || self) {
			m = match(ps, &id, &inner);
			if (m && !inner) {
				say(h->why, sizeof(h->why), "%s production item %s",
					 hops ? "it lies inside" : "it is", m->path);
				close(cur);
				return 1;
			}
		}
		prev = id;
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0 && errno == ENOTDIR)
			up = file_parent(cur, &id);
		close(cur);
		if (up < 0 || ++hops > 4096)
			return 0;
		cur = up;
	}
	close(cur);
	return 0;
}

/* Does production item it lie inside the directory tid? (walk the item's ancestors up) */
static int item_inside(const prod_item *it, const guard_ident *tid)
{
	guard_held h;
	cs_err e = {0};
	int cur, hops = 0, found = 0;
	guard_ident prev = {0};

	if (!it->present || guard_hold(it->path, AT_FDCWD, &h, &e))
		return 0;
	cur = dup(h.fd);
	guard_held_close(&h);
	while (cur >= 0 && hops < 4096) {
		guard_ident id;
		int up;

		if (guard_ident_fd(cur, &id) || (hops && id.ino == prev.ino && id.dev == prev.dev))
			break;
		if (hops && guard_ident_same(&id, tid)) {
			found = 1;
			break;
		}
		prev = id;
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(cur);
		cur = up;
		hops++;
	}
	if (cur >= 0)
		close(cur);
	return found;
}

#define OVERLAY_LAYERS_MAX 64

/*
 * 6: an overlay mount is its layers too. A target on an overlay whose
 * lower, upper or work layer is, lies inside or contains a production item,
 * or lives on a production block device, is production (layers on an
 * overlay are followed down, at most 4 deep). A layer this process cannot
 * resolve (a path of another mount namespace) is passed over; an overlay
 * whose mount cannot be found is refused. 0, 1 or 2 as touches.
 */
static int overlay_touches(const guard_prodset *ps, int fd, int depth, hit *out)
{
	char(*layers)[PATH_MAX] = NULL;
	size_t n = 0;
	int rc = 0, r;

	if (depth > 4) {
		say(out->why, sizeof(out->why), "overlay mounts are stacked deeper than 4");
		return 2;
	}
	layers = malloc(OVERLAY_LAYERS_MAX * sizeof(*layers));
	if (!layers) {
		say(out->why, sizeof(out->why), "out of memory");
		return 2;
	}
	r = guard_overlay_layers(fd, layers, OVERLAY_LAYERS_MAX, &n);
	if (r < 0) {
		say(out->why, sizeof(out->why),
		    "it is on an overlay mount whose layers cannot be read (%s)", strerror(-r));
		free(layers);
		return 2;
	}
	for (size_t i = 0; !rc && i < n; i++) {
		guard_held lh;
		guard_ident lid;
		guard_devset ls;
		cs_err le = {0};
		hit sub = {""};

		if (guard_hold(layers[i], AT_FDCWD, &lh, &le) || !lh.exists ||
		    guard_ident_fd(lh.fd, &lid)) {
			guard_held_close(&lh);
			continue;
		}
		if (ancestors(ps, lh.fd, 1, &sub)) {
			say(out->why, sizeof(out->why), "it is on an overlay mount whose layer %s: %s",
			    layers[i], sub.why);
			rc = 1;
		}
		for (size_t k = 0; !rc && k < ps->n; k++)
			if (!strcmp(ps->v[k].kind, "path") && item_inside(&ps->v[k], &lid)) {
				say(out->why, sizeof(out->why),
				    "it is on an overlay mount whose layer %s contains production item %s",
				    layers[i], ps->v[k].path);
				rc = 1;
			}
		if (!rc) {
			guard_devset_of(lid.dev, 0, &ls);
			for (size_t k = 0; !rc && k < ps->n; k++)
				if (!strcmp(ps->v[k].kind, "block_device") &&
				    guard_devset_meet(&ls, &ps->v[k].devs)) {
					say(out->why, sizeof(out->why),
					    "it is on an overlay mount whose layer %s lives on production "
					    "block device %s",
					    layers[i], ps->v[k].path);
					rc = 1;
				}
		}
		if (!rc)
			rc = overlay_touches(ps, lh.fd, depth + 1, out);
		guard_held_close(&lh);
	}
	free(layers);
	return rc;
}

/* The six checks of the file comment; 0 (no), 1 (refuse, why), 2 (a limit: refuse, why). */
static int touches(guard_prodset *ps, const guard_held *h, hit *out)
{
	guard_ident tid;
	guard_devset tset;
	int inner;

	if (guard_ident_fd(h->fd, &tid)) {
		say(out->why, sizeof(out->why), "cannot identify it: %s", strerror(errno));
		return 2;
	}
	/* 1, 2: the target (or, not existing yet, its nearest ancestor) and every ancestor. */
	if (ancestors(ps, h->fd, 1, out)) {
		if (!h->exists) {
			char w[1024];

			say(w, sizeof(w), "%s", out->why);
			say(out->why, sizeof(out->why), "it would be created inside: %s", w);
		}
		return 1;
	}
	/* 5: block devices. */
	if (S_ISBLK(tid.mode))
		guard_devset_of(tid.rdev, 1, &tset);
	else
		guard_devset_of(tid.dev, 0, &tset);
	for (size_t i = 0; i < ps->n; i++) {
		const prod_item *it = &ps->v[i];

		if (!strcmp(it->kind, "block_device") && guard_devset_meet(&tset, &it->devs)) {
			say(out->why, sizeof(out->why), "%s production block device %s",
				 S_ISBLK(tid.mode) ? "it is (or shares storage with)" : "it lives on",
				 it->path);
			return 1;
		}
	}
	/* 6: an overlay's layers. */
	{
		int r = overlay_touches(ps, h->fd, 0, out);

		if (r)
			return r;
	}
	if (!h->exists)
		return 0;
	/* 4: inodes inside production directories (hard links). */
	if (inner_build(ps)) {
		say(out->why, sizeof(out->why), "%s", ps->inner_err);
		return 2;
	}
	if (match(ps, &tid, &inner)) {
		say(out->why, sizeof(out->why), "it is a file of production item %s",
			 match(ps, &tid, &inner)->path);
		return 1;
	}
	if (!S_ISDIR(tid.mode))
		return 0;
	/* 3: production inside the target. */
	for (size_t i = 0; i < ps->n; i++) {
		if (!strcmp(ps->v[i].kind, "path") && item_inside(&ps->v[i], &tid)) {
			say(out->why, sizeof(out->why), "it contains production item %s",
				 ps->v[i].path);
			return 1;
		}
	}
	{
		walk w = {0, guard_walk_max(), guard_walk_depth(), ""};
		int fd = openat(h->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

		if (fd < 0) {
			say(out->why, sizeof(out->why), "cannot read it: %s", strerror(errno));
			return 2;
		}
		rc = target_walk(ps, fd, "", 0, &w, out);
		close(fd);
		if (rc == 2)
			return 1;
		if (rc == 1) {
			say(out->why, sizeof(out->why), "not examined whole: %s", w.over);
			return 2;
		}
	}
	return 0;
}

int guard_check_held(struct ledger *l, guard_prodset *ps, const guard_held *h, const char *verb,
		     const char *role, cs_err *e)
{
	guard_prodset *own = NULL;
	hit why = {""};
	int rc;

	if (!ps) {
		rc = guard_prodset_load(l, &own, e);
		if (rc)
			return rc;
		ps = own;
	}
	rc = touches(ps, h, &why);
	guard_prodset_free(own);
	if (!rc)
		return 0;
	return guard_refuse(l, "production", verb, h->shown, e, "%s %s: %s%s", role, h->shown,
			    why.why, rc == 2 ? " (a target that cannot be examined whole is refused)" : "");
}

int guard_target(struct ledger *l, guard_prodset *ps, const char *path, int base_fd,
		 const char *verb, const char *role, guard_held *h, cs_err *e)
{
	int rc = guard_hold(path, base_fd, h, e);

	if (rc == CS_EXIT_REFUSED)
		return guard_refuse(l, "production", verb, path, e, "%s %s: %s", role, path,
				    "the path cannot be resolved (too many symlinks, or it leads "
				    "to something deleted)");
	if (rc)
		return rc;
	rc = guard_check_held(l, ps, h, verb, role, e);
	if (rc)
		guard_held_close(h);
	return rc;
}

int guard_existing(struct ledger *l, guard_prodset *ps, const char *path, int base_fd,
		   const char *verb, const char *role, guard_held *h, cs_err *e)
{
	int rc = guard_target(l, ps, path, base_fd, verb, role, h, e);

	if (rc || h->exists)
		return rc;
	guard_held_close(h);
	/* Never hand out a path with unresolved components: they would be walked again by name. */
	return cs_err_set(e, CS_EXIT_BADINPUT, "%s %s: does not exist", role, path);
}

int guard_port(struct ledger *l, guard_prodset *ps, int port, const char *verb, const char *role,
	       cs_err *e)
{
	guard_prodset *own = NULL;
	char num[32];
	int rc = 0;

	if (!ps) {
		rc = guard_prodset_load(l, &own, e);
		if (rc)
			return rc;
		ps = own;
	}
	say(num, sizeof(num), "%d", port);
	for (size_t i = 0; i < ps->n; i++) {
		if (strcmp(ps->v[i].kind, "port") || strcmp(ps->v[i].path, num))
			continue;
		rc = guard_refuse(l, "production", verb, num, e,
				  "%s %d: it is production's port (registered by %s): a run's "
				  "server is never reachable where production's is",
				  role, port, ps->v[i].owner[0] ? ps->v[i].owner : "the registry");
		break;
	}
	guard_prodset_free(own);
	return rc;
}

/*
 * The dataset files checked in this process, held open: a loader reads the
 * file the check saw, through its descriptor, whatever its name points at
 * later (a query file swapped for a symlink to production mid-run is never
 * read). A verb checks a handful; past the table's size a file is refused.
 */
#define HELD_DATASETS 16
static struct {
	char *spec;     /* as the run named it */
	char *via;      /* the same spec through the held descriptor */
	guard_held h;
} held_ds[HELD_DATASETS];
static size_t n_held_ds;

const char *guard_dataset_via(const char *spec)
{
	for (size_t i = 0; spec && i < n_held_ds; i++)
		if (!strcmp(held_ds[i].spec, spec))
			return held_ds[i].via;
	return spec;
}

int guard_dataset(struct ledger *l, guard_prodset *ps, const char *spec, const char *verb,
		  const char *role, cs_err *e)
{
	static const char *const pre[] = {"fvecs:", "ivecs:", "bvecs:", "idx:", "npy:", "hdf5:",
					  NULL};
	char path[PATH_MAX], via[PATH_MAX + 64];
	guard_held h;
	size_t len;
	int rc;

	if (!spec)
		return 0;
	for (size_t i = 0; pre[i]; i++) {
		if (strncmp(spec, pre[i], strlen(pre[i])))
			continue;
		if (guard_dataset_via(spec) != spec)
			return 0; /* held already in this process */
		say(path, sizeof(path), "%s", spec + strlen(pre[i]));
		len = strlen(path);
		/* A trailing [A:B] row range is not part of the path. */
		if (len && path[len - 1] == ']' && strrchr(path, '['))
			*strrchr(path, '[') = '\0';
		/* hdf5:PATH:train - the part after the file's name is not the path either */
		if (!strcmp(pre[i], "hdf5:")) {
			char *c = strrchr(path, ':');

			if (c && (!strcmp(c, ":train") || !strcmp(c, ":test") ||
				  !strcmp(c, ":neighbors") || !strcmp(c, ":distances")))
				*c = '\0';
		}
		rc = guard_target(l, ps, path, AT_FDCWD, verb, role, &h, e);
		if (rc)
			return rc;
		if (!h.exists) {
			guard_held_close(&h);
			return 0; /* the loader says it is missing */
		}
		if (n_held_ds == HELD_DATASETS) {
			guard_held_close(&h);
			return cs_err_set(e, CS_EXIT_INTERNAL, "%s: more than %d dataset files in one verb",
					  spec, HELD_DATASETS);
		}
		/* the held file, then what followed its name (":train", "[A:B]") */
		say(via, sizeof(via), "%s%s%s", pre[i], guard_held_via(&h),
		    spec + strlen(pre[i]) + strlen(path));
		held_ds[n_held_ds].spec = strdup(spec);
		held_ds[n_held_ds].via = strdup(via);
		if (!held_ds[n_held_ds].spec || !held_ds[n_held_ds].via) {
			free(held_ds[n_held_ds].spec);
			free(held_ds[n_held_ds].via);
			guard_held_close(&h);
			return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		}
		held_ds[n_held_ds++].h = h;
		return 0;
	}
	return 0;
}

/* ---- registration ---- */

/*
 * The identities (ino, btime_ns pairs) of everything under dfd on the
 * item's file system, bounded by the walk limits (what lies past them is
 * still walked live while the item is in place).
 */
static void tree_walk(int dfd, const guard_ident *item, json_t *tree, int depth, size_t *count)
{
	DIR *d;
	struct dirent *de;

	if (depth > guard_walk_depth() || !(d = fdopendir(dup(dfd))))
		return;
	while ((de = readdir(d)) && *count < guard_walk_max()) {
		guard_ident id;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    guard_ident_at(dirfd(d), de->d_name, &id) || !guard_fskey_eq(&id.fs, &item->fs))
			continue;
		(*count)++;
		json_array_append_new(tree, json_integer((json_int_t) id.ino));
		json_array_append_new(tree, json_integer((json_int_t) id.btime_ns));
		if (S_ISDIR(id.mode)) {
			int sub = openat(dirfd(d), de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0) {
				tree_walk(sub, item, tree, depth + 1, count);
				close(sub);
			}
		}
	}
	closedir(d);
}

/* One path or device item, resolved against dirfd; must exist. */
static int resolve_item(const char *spelling, int dirfd, const char *kind, const char *where,
			json_t **out, cs_err *e)
{
	guard_held h;
	guard_ident id;
	guard_devset ds;
	char real[PATH_MAX], link[64];
	json_t *tree = NULL;
	ssize_t n;
	int rc;

	*out = NULL;
	rc = guard_hold(spelling, dirfd, &h, e);
	if (rc)
		return rc == CS_EXIT_REFUSED ? CS_EXIT_BADINPUT : rc;
	if (!h.exists) {
		guard_held_close(&h);
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: production item '%s' does not exist (resolved against the study "
				  "folder): protect what is there, by what it is",
				  where, spelling);
	}
	if (guard_ident_fd(h.fd, &id)) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s: %s", where, spelling, strerror(errno));
		guard_held_close(&h);
		return rc;
	}
	say(link, sizeof(link), "/proc/self/fd/%d", h.fd);
	n = readlink(link, real, sizeof(real) - 1);
	real[n > 0 ? n : 0] = '\0';
	if (S_ISDIR(id.mode)) {
		/* the folder's files by identity: still production after a rename or move */
		size_t count = 0;
		int dfd = openat(h.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		tree = json_array();
		if (dfd >= 0 && tree)
			tree_walk(dfd, &id, tree, 0, &count);
		if (dfd >= 0)
			close(dfd);
	}
	guard_held_close(&h);
	if (!strcmp(kind, "block_device") && !S_ISBLK(id.mode)) {
		json_decref(tree);
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: '%s' is not a block device", where,
				  spelling);
	}
	if (S_ISBLK(id.mode)) {
		kind = "block_device";
		guard_devset_of(id.rdev, 1, &ds);
	} else {
		memset(&ds, 0, sizeof(ds));
	}
	*out = json_pack("{s:s, s:s, s:s, s:o, s:o}", "kind", kind, "spelled", spelling, "path",
			 real[0] ? real : spelling, "ident", guard_ident_json(&id), "devices",
			 guard_devset_json(&ds));
	if (*out && tree)
		json_object_set_new(*out, "tree", tree);
	else
		json_decref(tree);
	return *out ? 0 : cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
}

int guard_production_resolve(const json_t *study, int study_fd, const char *study_name,
			     json_t **items, cs_err *e)
{
	/*
	 * A server's socket directories are identities like paths (kind
	 * "path", role "socket"): a run's private socket directory is compared
	 * with them by inode. Its ports are named items (kind "port").
	 */
	static const char *const keys[] = {"paths", "block_devices", "databases", "hosts",
					   "sockets", "ports"};
	static const char *const kinds[] = {"path", "block_device", "database", "host", "path",
					    "port"};
	const json_t *prod = json_object_get(study, "production");
	json_t *arr = json_array();
	int rc = 0;

	*items = NULL;
	if (!arr)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	for (size_t k = 0; k < 6 && !rc; k++) {
		size_t i;
		json_t *v;

		json_array_foreach(json_object_get(prod, keys[k]), i, v) {
			char where[600], num[32];
			const char *s = json_string_value(v);
			json_t *it = NULL;

			say(where, sizeof(where), "%s: $.production.%s[%zu]", study_name, keys[k], i);
			if (k == 5 && json_is_integer(v)) {
				say(num, sizeof(num), "%lld", (long long) json_integer_value(v));
				s = num;
			}
			if (!s)
				continue;
			if (k == 2 || k == 3 || k == 5) {
				it = json_pack("{s:s, s:s}", "kind", kinds[k], "name", s);
			} else {
				char dev[PATH_MAX];

				/* A block device may be named "sdb" for /dev/sdb. */
				if (k == 1 && !strchr(s, '/'))
					say(dev, sizeof(dev), "/dev/%s", s);
				else
					say(dev, sizeof(dev), "%s", s);
				rc = resolve_item(dev, study_fd, kinds[k], where, &it, e);
				if (rc)
					break;
				if (k == 4)
					json_object_set_new(it, "role", json_string("socket"));
			}
			if (!it || json_array_append_new(arr, it)) {
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
				break;
			}
		}
	}
	if (rc) {
		json_decref(arr);
		return rc;
	}
	*items = arr;
	return 0;
}

/* Run fn on the registry under its lock, writing the result back atomically when fn changed it. */
static int registry_update(int (*fn)(json_t *doc, void *ud, cs_err *e), void *ud, cs_err *e)
{
	const char *path = guard_registry_path();
	char lockp[PATH_MAX], dir[PATH_MAX], *slash;
	json_t *doc = NULL;
	char *text = NULL;
	int lfd = -1, rc;

	say(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		/* mkdir -p of the registry's folder (e.g. /var/lib/coldstudy). */
		for (char *s = dir + 1; (s = strchr(s, '/')); s++) {
			*s = '\0';
			mkdir(dir, 0755);
			*s = '/';
		}
		mkdir(dir, 0755);
	}
	say(lockp, sizeof(lockp), "%s.lock", path);
	lfd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (lfd < 0)
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot open the registry lock: %s", lockp,
				  strerror(errno));
	if (flock(lfd, LOCK_EX) < 0) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", lockp, strerror(errno));
		goto out;
	}
	rc = registry_load(&doc, e);
	if (rc)
		goto out;
	rc = fn(doc, ud, e);
	if (rc < 0) {
		rc = 0; /* nothing changed */
		goto out;
	}
	if (rc)
		goto out;
	text = json_dumps(doc, JSON_INDENT(1) | JSON_SORT_KEYS);
	if (!text) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	rc = cs_write_file_atomic(path, text, strlen(text), 0644, e);
	if (!rc)
		rc = sentinel_write(json_array_size(json_object_get(doc, "items")), e);
out:
	free(text);
	json_decref(doc);
	close(lfd);
	return rc;
}

typedef struct add_ctx {
	const json_t *items;
	const char *owner;
} add_ctx;

static int same_item(const json_t *a, const json_t *b)
{
	guard_ident x, y;

	if (strcmp(json_string_value(json_object_get(a, "kind")) ?: "",
		   json_string_value(json_object_get(b, "kind")) ?: ""))
		return 0;
	if (json_object_get(a, "name"))
		return json_equal(json_object_get(a, "name"), json_object_get(b, "name"));
	if (guard_ident_from_json(json_object_get(a, "ident"), &x) ||
	    guard_ident_from_json(json_object_get(b, "ident"), &y))
		return 0;
	return guard_ident_same(&x, &y);
}

static int add_fn(json_t *doc, void *ud, cs_err *e)
{
	add_ctx *c = ud;
	json_t *arr = json_object_get(doc, "items");
	char ts[32];
	size_t i, j, added = 0;
	json_t *v, *w;

	cs_format_rfc3339(cs_now_us(), ts);
	json_array_foreach(c->items, i, v) {
		int dup = 0;

		json_array_foreach(arr, j, w)
			if (same_item(v, w))
				dup = 1;
		if (dup)
			continue;
		w = json_deep_copy(v);
		if (!w)
			return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		json_object_set_new(w, "owner", json_string(c->owner));
		json_object_set_new(w, "added", json_string(ts));
		json_array_append_new(arr, w);
		added++;
	}
	return added ? 0 : -1;
}

int guard_registry_add(const json_t *items, const char *owner, cs_err *e)
{
	add_ctx c = {items, owner};

	return registry_update(add_fn, &c, e);
}

typedef struct rm_ctx {
	const char *name;
	size_t removed;
} rm_ctx;

static int rm_fn(json_t *doc, void *ud, cs_err *e)
{
	rm_ctx *c = ud;
	json_t *arr = json_object_get(doc, "items");

	for (size_t i = json_array_size(arr); i-- > 0;) {
		const json_t *v = json_array_get(arr, i);
		const char *p = json_string_value(json_object_get(v, "path"));
		const char *n = json_string_value(json_object_get(v, "name"));
		const char *s = json_string_value(json_object_get(v, "spelled"));

		if ((p && !strcmp(p, c->name)) || (n && !strcmp(n, c->name)) ||
		    (s && !strcmp(s, c->name))) {
			json_array_remove(arr, i);
			c->removed++;
		}
	}
	(void) e;
	return c->removed ? 0 : -1;
}

int guard_registry_remove(const char *name, size_t *removed, cs_err *e)
{
	rm_ctx c = {name, 0};
	int rc = registry_update(rm_fn, &c, e);

	*removed = c.removed;
	return rc;
}

int guard_registry_list(json_t **items, cs_err *e)
{
	json_t *doc = NULL;
	int rc = registry_load(&doc, e);

	*items = NULL;
	if (rc)
		return rc;
	*items = json_incref(json_object_get(doc, "items"));
	json_decref(doc);
	return 0;
}

/* ---- re-registration: the protected set only grows, unless amended ---- */

typedef struct union_ctx {
	json_t *items; /* the study's protected items so far */
} union_ctx;

static int union_cb(const ledger_record *r, void *ud)
{
	union_ctx *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	size_t i, j;
	json_t *v, *w;

	if (!p)
		return 0;
	if (json_is_true(json_object_get(p, "production_amended")))
		json_array_clear(c->items);
	json_array_foreach(json_object_get(p, "production_items"), i, v) {
		int have = 0;

		json_array_foreach(c->items, j, w)
			if (same_item(v, w))
				have = 1;
		if (!have)
			json_array_append(c->items, v);
	}
	json_decref(p);
	return 0;
}

int guard_production_keep(struct ledger *l, const json_t *items, int amend, const char *verb,
			  json_t **removed, cs_err *e)
{
	union_ctx c = {json_array()};
	cs_err le = {0};
	size_t i, j;
	json_t *v, *w, *gone = json_array();
	int rc = 0;

	*removed = NULL;
	if (!c.items || !gone) {
		json_decref(c.items);
		json_decref(gone);
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	}
	if (ledger_foreach(l, "study", union_cb, &c, &le)) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s", le.msg);
		goto out;
	}
	json_array_foreach(c.items, i, v) {
		int kept = 0;

		json_array_foreach(items, j, w)
			if (same_item(v, w))
				kept = 1;
		if (!kept)
			json_array_append(gone, v);
	}
	if (json_array_size(gone) && !amend) {
		const json_t *g = json_array_get(gone, 0);

		rc = guard_refuse(l, "production-removal", verb,
				  json_string_value(json_object_get(g, "path")) ?:
					  json_string_value(json_object_get(g, "name")),
				  e,
				  "this spec no longer protects %zu registered production item(s), "
				  "first %s; protection only grows (add --amend --rationale TEXT to "
				  "remove items on the record)",
				  json_array_size(gone),
				  json_string_value(json_object_get(g, "path")) ?:
					  json_string_value(json_object_get(g, "name")) ?: "?");
		goto out;
	}
	*removed = gone;
	gone = NULL;
out:
	json_decref(gone);
	json_decref(c.items);
	return rc;
}
