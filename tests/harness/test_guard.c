/*
 * test_guard.c - every guard case refused (and recorded), and its
 * control allowed: production through a symlink, "..", a trailing slash,
 * a bind mount, a hard link, /proc/self/fd/N and the same inode; a target
 * inside or containing production, existing or not yet; a relative path
 * from another directory; a walk past its limit; a production block device
 * and host; re-registration that drops an item; a missing, copied, edited
 * (unauthenticated) or hard-linked clone; an unregistered hypothesis; runs before
 * validation passed; a warm cache; a dirty tree; holdout without
 * predictions and with undeclared overlap.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation" /* test paths are short */
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "coldvec.h"
#include "guard.h"
#include "harness.h"
#include "ledger.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static char root[PATH_MAX];

static void pathf(char *out, const char *fmt, const char *a)
{
	snprintf(out, PATH_MAX, fmt, root, a);
}

static void touch(const char *p, size_t size)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char buf[4096];

	assert_true(fd >= 0);
	memset(buf, 'x', sizeof(buf));
	for (size_t i = 0; i < size; i += sizeof(buf))
		assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t) sizeof(buf));
	fsync(fd);
	close(fd);
}

typedef struct cnt {
	int n;
	char last_guard[64];
} cnt;

static int count_cb(const ledger_record *r, void *ud)
{
	cnt *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);

	c->n++;
	snprintf(c->last_guard, sizeof(c->last_guard), "%s",
		 json_string_value(json_object_get(p, "guard")) ?: "");
	json_decref(p);
	return 0;
}

static int refusals(ledger *l, char *last)
{
	cnt c = {0};

	assert_int_equal(ledger_foreach(l, "refusal", count_cb, &c, NULL), 0);
	if (last)
		snprintf(last, 64, "%s", c.last_guard);
	return c.n;
}

static ledger *new_study(const char *name)
{
	char d[PATH_MAX];
	ledger *l = NULL;
	cs_err e = {0};

	pathf(d, "%s/%s", name);
	assert_int_equal(ledger_init(d, &e), 0);
	assert_int_equal(ledger_open(d, &l, &e), 0);
	return l;
}

/*
 * Register a study whose production is root/prod (and a host), as `study
 * register` does: resolved, recorded by identity in a study record.
 */
static json_t *study_doc(ledger *l, const char *extra_blockdev)
{
	char prod[PATH_MAX];
	json_t *doc, *items = NULL, *rec;
	cs_err e = {0};

	pathf(prod, "%s/%s", "prod");
	doc = json_pack("{s:s, s:{s:[s], s:[], s:[s]}}", "id", "t", "production", "paths", prod,
			"block_devices", "hosts", "pg-prod-1");
	if (extra_blockdev)
		json_array_append_new(json_object_get(json_object_get(doc, "production"),
						      "block_devices"),
				      json_string(extra_blockdev));
	assert_int_equal(guard_production_resolve(doc, AT_FDCWD, "study.json", &items, &e), 0);
	rec = json_pack("{s:s, s:O, s:o}", "id", "t", "doc", doc, "production_items", items);
	assert_int_equal(ledger_append(l, "study", rec, NULL, &e), 0);
	json_decref(rec);
	return doc;
}

/* Expect a refusal that is recorded, with the guard named. */
static void expect_refused(ledger *l, const json_t *st, const char *target)
{
	cs_err e = {0};
	char last[64];
	int before = refusals(l, NULL);

	assert_int_equal(guard_production(l, st, target, "run", &e), CS_EXIT_REFUSED);
	assert_non_null(strstr(e.msg, "refused (production)"));
	assert_int_equal(refusals(l, last), before + 1);
	assert_string_equal(last, "production");
}

static void test_production(void **state)
{
	ledger *l = new_study("s-prod");
	json_t *st;
	char prod[PATH_MAX], data[PATH_MAX], t[PATH_MAX * 2], clone[PATH_MAX], hl[PATH_MAX],
		lnk[PATH_MAX], mnt[PATH_MAX];
	cs_err e = {0};
	int fd, before;

	(void) state;
	pathf(prod, "%s/%s", "prod");
	pathf(data, "%s/%s", "prod/index.dat");
	pathf(clone, "%s/%s", "clone");
	pathf(lnk, "%s/%s", "link");
	pathf(mnt, "%s/%s", "mnt");
	mkdir(prod, 0755);
	mkdir(clone, 0755);
	mkdir(mnt, 0755);
	touch(data, 4096);
	st = study_doc(l, NULL);

	/* control: a directory that is not production is allowed */
	assert_int_equal(guard_production(l, st, clone, "run", &e), 0);
	assert_int_equal(refusals(l, NULL), 0);

	expect_refused(l, st, prod);                      /* same path, same inode */
	assert_int_equal(symlink(prod, lnk), 0);
	expect_refused(l, st, lnk);                       /* symlink */
	snprintf(t, sizeof(t), "%s/../prod", clone);
	expect_refused(l, st, t);                         /* .. */
	snprintf(t, sizeof(t), "%s/", prod);
	expect_refused(l, st, t);                         /* trailing slash */
	expect_refused(l, st, data);                      /* inside production */
	snprintf(t, sizeof(t), "%s/link/index.dat", root);
	expect_refused(l, st, t);                         /* inside, through a symlink */
	snprintf(t, sizeof(t), "%s/link/new/deeper", root);
	expect_refused(l, st, t);                         /* not there yet, through a symlink */
	pathf(t, "%s/%s", "prod/not-yet-there/x");
	expect_refused(l, st, t);                         /* not there yet, inside */
	fd = open(prod, O_RDONLY | O_DIRECTORY);
	snprintf(t, sizeof(t), "/proc/self/fd/%d", fd);
	expect_refused(l, st, t);                         /* /proc/self/fd/N: a magic link */
	snprintf(t, sizeof(t), "/dev/fd/%d/new", fd);
	expect_refused(l, st, t);                         /* /dev/fd/N/new */
	close(fd);
	snprintf(hl, sizeof(hl), "%s/hl.dat", clone);
	assert_int_equal(link(data, hl), 0);
	expect_refused(l, st, hl);                        /* hard link: a file of production */
	expect_refused(l, st, clone);                     /* hard link inside the target */
	unlink(hl);
	assert_int_equal(guard_production(l, st, clone, "run", &e), 0);
	expect_refused(l, st, root);                      /* target contains production */
	expect_refused(l, st, "postgres://app@pg-prod-1/db"); /* production host */
	if (mount(prod, mnt, NULL, MS_BIND, NULL) == 0) {
		expect_refused(l, st, mnt);               /* bind mount */
		snprintf(t, sizeof(t), "%s/new", mnt);
		expect_refused(l, st, t);                 /* bind mount, not there yet */
		umount2(mnt, MNT_DETACH);
	} else {
		print_message("bind mount not tested here (mount failed)\n");
	}
	/* A relative spelling resolved from elsewhere names what it names there, not here. */
	{
		char cwd[PATH_MAX];

		assert_non_null(getcwd(cwd, sizeof(cwd)));
		assert_int_equal(chdir(clone), 0);
		expect_refused(l, st, "../prod/x");
		assert_int_equal(guard_production(l, st, "prod", "run", &e), 0); /* clone/prod: not there */
		assert_int_equal(chdir(cwd), 0);
	}
	/* Fail closed: a walk past its limit refuses. */
	{
		char a[PATH_MAX];

		pathf(a, "%s/%s", "clone/a");
		mkdir(a, 0755);
		pathf(a, "%s/%s", "clone/b");
		mkdir(a, 0755);
		setenv("COLDSTUDY_GUARD_WALK_MAX", "1", 1);
		before = refusals(l, NULL);
		assert_int_equal(guard_production(l, st, clone, "run", &e), CS_EXIT_REFUSED);
		assert_non_null(strstr(e.msg, "COLDSTUDY_GUARD_WALK_MAX"));
		assert_int_equal(refusals(l, NULL), before + 1);
		unsetenv("COLDSTUDY_GUARD_WALK_MAX");
		assert_int_equal(guard_production(l, st, clone, "run", &e), 0);
	}
	json_decref(st);
	/* production block device: the device the test files live on */
	{
		struct stat sb;
		char dev[64];
		ledger *l2 = new_study("s-prod-blk");

		assert_int_equal(stat(clone, &sb), 0);
		snprintf(dev, sizeof(dev), "/tmp/cs-fake-blk-%d", (int) getpid());
		unlink(dev);
		if (mknod(dev, S_IFBLK | 0600, sb.st_dev) == 0) {
			st = study_doc(l2, dev);
			expect_refused(l2, st, clone);
			json_decref(st);
			unlink(dev);
		}
		ledger_close(l2);
	}
	unlink(lnk);
	ledger_close(l);
}

/* Re-registering may add production items; dropping one needs an amendment. */
static void test_production_keep(void **state)
{
	ledger *l = new_study("s-keep");
	char prod[PATH_MAX], other[PATH_MAX];
	json_t *doc, *items = NULL, *removed = NULL, *rec;
	cs_err e = {0};

	(void) state;
	pathf(prod, "%s/%s", "prod");
	pathf(other, "%s/%s", "prod2");
	mkdir(prod, 0755);
	mkdir(other, 0755);
	doc = json_pack("{s:{s:[s, s]}}", "production", "paths", prod, other);
	assert_int_equal(guard_production_resolve(doc, AT_FDCWD, "s.json", &items, &e), 0);
	assert_int_equal(guard_production_keep(l, items, 0, "study register", &removed, &e), 0);
	rec = json_pack("{s:s, s:O}", "id", "t", "production_items", items);
	assert_int_equal(ledger_append(l, "study", rec, NULL, &e), 0);
	json_decref(rec);
	json_decref(items);
	json_decref(removed);
	json_decref(doc);
	/* a spec that protects only prod: refused, recorded */
	doc = json_pack("{s:{s:[s]}}", "production", "paths", prod);
	assert_int_equal(guard_production_resolve(doc, AT_FDCWD, "s.json", &items, &e), 0);
	assert_int_equal(guard_production_keep(l, items, 0, "study register", &removed, &e),
			 CS_EXIT_REFUSED);
	assert_non_null(strstr(e.msg, "prod2"));
	assert_int_equal(refusals(l, NULL), 1);
	/* amended: allowed, and it says what it drops */
	assert_int_equal(guard_production_keep(l, items, 1, "study register", &removed, &e), 0);
	assert_int_equal(json_array_size(removed), 1);
	json_decref(removed);
	json_decref(items);
	json_decref(doc);
	/* a production path that does not exist is bad input */
	doc = json_pack("{s:{s:[s]}}", "production", "paths", "/nonexistent/cs-prod");
	assert_int_equal(guard_production_resolve(doc, AT_FDCWD, "s.json", &items, &e),
			 CS_EXIT_BADINPUT);
	assert_non_null(strstr(e.msg, "$.production.paths[0]"));
	json_decref(doc);
	ledger_close(l);
}

static void test_clone_marker(void **state)
{
	ledger *l = new_study("s-clone");
	char src[PATH_MAX], dst[PATH_MAX], cp[PATH_MAX], f[PATH_MAX * 2], m1[PATH_MAX * 2],
		m2[PATH_MAX * 2], *buf, sd[PATH_MAX];
	harness_clone_info info;
	json_t *marker = NULL;
	cs_err e = {0};
	size_t len;

	(void) state;
	pathf(sd, "%s/%s", "s-clone");
	pathf(src, "%s/%s", "csrc");
	pathf(dst, "%s/%s", "cdst");
	pathf(cp, "%s/%s", "ccopy");
	mkdir(src, 0755);
	snprintf(f, sizeof(f), "%s/KIND", src);
	touch(f, 4096);
	snprintf(f, sizeof(f), "%s/sub", src);
	mkdir(f, 0755);
	snprintf(f, sizeof(f), "%s/sub/part.dat", src);
	touch(f, 3 * 4096);

	/* no marker: refused */
	assert_int_equal(guard_clone(l, sd, src, "run", 0, NULL, &e), CS_EXIT_REFUSED);
	assert_int_equal(refusals(l, NULL), 1);

	assert_int_equal(harness_clone(src, dst, sd, &info, &e), 0);
	assert_int_equal(info.files, 2);
	assert_true(!strcmp(info.method, "reflink") || !strcmp(info.method, "copy"));
	assert_int_equal(guard_clone(l, sd, dst, "run", 1, &marker, &e), 0);
	assert_string_equal(json_string_value(json_object_get(marker, "source_sha256")),
			    info.source_sha256);
	json_decref(marker);
	/* the key is the study's own, 0600 */
	{
		char kp[PATH_MAX * 2];
		struct stat ks;

		snprintf(kp, sizeof(kp), "%s/clone.key", sd);
		assert_int_equal(stat(kp, &ks), 0);
		assert_int_equal(ks.st_mode & 0777, 0600);
	}
	/* another study's key does not authenticate it */
	{
		ledger *l2 = new_study("s-clone-other");
		char sd2[PATH_MAX];

		pathf(sd2, "%s/%s", "s-clone-other");
		assert_int_equal(harness_clone(src, cp, sd2, &info, &e), 0); /* makes sd2's key */
		assert_int_equal(guard_clone(l2, sd2, dst, "run", 0, NULL, &e), CS_EXIT_REFUSED);
		assert_non_null(strstr(e.msg, "not authenticated"));
		ledger_close(l2);
		snprintf(f, sizeof(f), "rm -rf '%s'", cp);
		assert_int_equal(system(f), 0);
	}
	/* cloning onto an existing path is refused */
	assert_int_equal(harness_clone(src, dst, sd, &info, &e), CS_EXIT_REFUSED);

	/* a marker copied elsewhere (with the files) is invalid */
	mkdir(cp, 0755);
	snprintf(f, sizeof(f), "%s/KIND", cp);
	touch(f, 4096);
	snprintf(f, sizeof(f), "%s/sub", cp);
	mkdir(f, 0755);
	snprintf(f, sizeof(f), "%s/sub/part.dat", cp);
	touch(f, 3 * 4096);
	snprintf(m1, sizeof(m1), "%s/.coldstudy-clone", dst);
	snprintf(m2, sizeof(m2), "%s/.coldstudy-clone", cp);
	assert_int_equal(cs_read_file(m1, 1 << 20, &buf, &len, &e), 0);
	assert_int_equal(cs_write_file_atomic(m2, buf, len, 0444, &e), 0);
	free(buf);
	assert_int_equal(guard_clone(l, sd, cp, "run", 0, NULL, &e), CS_EXIT_REFUSED);
	assert_non_null(strstr(e.msg, "copied marker"));
	/* the marker edited to fit the copy (dev, ino, inodes) is refused: no key, no HMAC */
	{
		json_t *m = NULL;
		struct stat cs;
		char *txt;

		assert_int_equal(cs_json_load_file(m2, 1 << 20, &m, &e), 0);
		assert_int_equal(stat(cp, &cs), 0);
		json_object_set_new(m, "dev", json_integer((json_int_t) cs.st_dev));
		json_object_set_new(m, "ino", json_integer((json_int_t) cs.st_ino));
		txt = json_dumps(m, JSON_COMPACT);
		unlink(m2);
		assert_int_equal(cs_write_file_atomic(m2, txt, strlen(txt), 0444, &e), 0);
		free(txt);
		json_decref(m);
		assert_int_equal(guard_clone(l, sd, cp, "run", 0, NULL, &e), CS_EXIT_REFUSED);
		assert_non_null(strstr(e.msg, "not authenticated"));
	}
	/* a clone file with a second link (cp -al of production, say) is refused */
	{
		char extra[PATH_MAX * 2];

		snprintf(f, sizeof(f), "%s/KIND", dst);
		snprintf(extra, sizeof(extra), "%s/kind-link", root);
		assert_int_equal(link(f, extra), 0);
		assert_int_equal(guard_clone(l, sd, dst, "run", 0, NULL, &e), CS_EXIT_REFUSED);
		assert_non_null(strstr(e.msg, "links"));
		unlink(extra);
		/* and a file the marker does not name */
		snprintf(extra, sizeof(extra), "%s/planted.dat", dst);
		touch(extra, 4096);
		assert_int_equal(guard_clone(l, sd, dst, "run", 0, NULL, &e), CS_EXIT_REFUSED);
		assert_non_null(strstr(e.msg, "names"));
		unlink(extra);
	}

	/* a changed file fails the content hash */
	snprintf(f, sizeof(f), "%s/sub/part.dat", dst);
	{
		int fd = open(f, O_WRONLY);

		assert_int_equal(pwrite(fd, "y", 1, 10), 1);
		close(fd);
	}
	assert_int_equal(guard_clone(l, sd, dst, "run", 0, NULL, &e), 0);
	assert_int_equal(guard_clone(l, sd, dst, "run", 1, NULL, &e), CS_EXIT_REFUSED);
	assert_int_equal(refusals(l, NULL), 6);
	ledger_close(l);
}

static void test_registered_and_validated(void **state)
{
	ledger *l = new_study("s-reg");
	json_t *ids = json_pack("[s]", "H1"), *p;
	cs_err e = {0};

	(void) state;
	assert_int_equal(guard_hypotheses(l, ids, "run", &e), CS_EXIT_REFUSED);
	assert_non_null(strstr(e.msg, "H1"));
	p = json_pack("{s:s}", "id", "H1");
	assert_int_equal(ledger_append(l, "hypothesis", p, NULL, &e), 0);
	json_decref(p);
	assert_int_equal(guard_hypotheses(l, ids, "run", &e), 0);
	json_decref(ids);

	/* no validation yet */
	assert_int_equal(guard_validated(l, "run", &e), CS_EXIT_REFUSED);
	p = json_pack("{s:s, s:b, s:i}", "check", "all", "passed", 1, "batch", 1);
	ledger_append(l, "validation", p, NULL, &e);
	json_decref(p);
	assert_int_equal(guard_validated(l, "run", &e), 0);
	/* a later batch that has not finished */
	p = json_pack("{s:s, s:b, s:i}", "check", "eviction", "passed", 1, "batch", 2);
	ledger_append(l, "validation", p, NULL, &e);
	json_decref(p);
	assert_int_equal(guard_validated(l, "run", &e), CS_EXIT_REFUSED);
	/* which then failed */
	p = json_pack("{s:s, s:b, s:i}", "check", "all", "passed", 0, "batch", 2);
	ledger_append(l, "validation", p, NULL, &e);
	json_decref(p);
	assert_int_equal(guard_validated(l, "run", &e), CS_EXIT_REFUSED);
	assert_non_null(strstr(e.msg, "failed"));
	assert_int_equal(refusals(l, NULL), 4);
	ledger_close(l);
}

static void test_cold(void **state)
{
	ledger *l = new_study("s-cold");
	char f[PATH_MAX], *paths[1], buf[4096];
	double frac = -1;
	cs_err e = {0};
	int fd;

	(void) state;
	pathf(f, "%s/%s", "cold.dat");
	touch(f, 64 * 4096);
	paths[0] = f;
	assert_int_equal(cv_cache_evict(f), 0);
	assert_int_equal(guard_cold(l, paths, 1, "run", &frac, &e), 0);
	assert_true(frac == 0.0);
	fd = open(f, O_RDONLY);
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), (ssize_t) sizeof(buf));
	close(fd);
	assert_int_equal(guard_cold(l, paths, 1, "run", &frac, &e), CS_EXIT_REFUSED);
	assert_true(frac > 0.0);
	assert_non_null(strstr(e.msg, "not cold"));
	assert_int_equal(refusals(l, NULL), 1);
	ledger_close(l);
}

static void test_clean_tree(void **state)
{
	ledger *l = new_study("s-git");
	char repo[PATH_MAX], cmd[PATH_MAX * 2], f[PATH_MAX * 2];
	cs_err e = {0};

	(void) state;
	pathf(repo, "%s/%s", "repo");
	mkdir(repo, 0755);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && git init -q . && git -c user.email=t@t -c user.name=t commit -q "
		 "--allow-empty -m init",
		 repo);
	if (system(cmd) != 0)
		skip();
	assert_int_equal(guard_clean_tree(l, repo, "run", &e), 0);
	snprintf(f, sizeof(f), "%s/dirty.txt", repo);
	touch(f, 4096);
	assert_int_equal(guard_clean_tree(l, repo, "run", &e), CS_EXIT_REFUSED);
	assert_non_null(strstr(e.msg, "dirty"));
	pathf(f, "%s/%s", "not-a-repo");
	mkdir(f, 0755);
	assert_int_equal(guard_clean_tree(l, f, "run", &e), CS_EXIT_REFUSED);
	assert_int_equal(refusals(l, NULL), 2);
	ledger_close(l);
}

typedef struct kcount {
	int n;
} kcount;

static int kcb(const ledger_record *r, void *ud)
{
	(void) r;
	((kcount *) ud)->n++;
	return 0;
}

static void test_holdout(void **state)
{
	ledger *l = new_study("s-hold");
	const char *sha = "ab12000000000000000000000000000000000000000000000000000000000000";
	json_t *p, *spec;
	kcount dv = {0};
	cs_err e = {0};

	(void) state;
	assert_int_equal(guard_holdout_predictions(l, sha, "run", &e), CS_EXIT_REFUSED);
	p = json_pack("{s:s, s:{s:s, s:s, s:s}, s:f}", "id", "P1", "target", "run_spec", "h.json",
		      "spec_sha256", sha, "metric", "wall_s", "value", 1.0);
	assert_int_equal(ledger_append(l, "prediction", p, NULL, &e), 0);
	json_decref(p);
	assert_int_equal(guard_holdout_predictions(l, sha, "run", &e), 0);

	/* a design run on partitions 1, 2 and queries [0, 10) */
	p = json_pack("{s:s, s:b, s:{s:[i, i], s:{s:s, s:i, s:i}}}", "run_id", "R0001", "holdout", 0,
		      "spec", "partitions", 1, 2, "queries", "spec", "synth:q", "first", 0, "count",
		      10);
	assert_int_equal(ledger_append(l, "run", p, NULL, &e), 0);
	json_decref(p);
	spec = json_pack("{s:[i], s:{s:s, s:i, s:i}}", "partitions", 3, "queries", "spec", "synth:q",
			 "first", 10, "count", 5);
	assert_int_equal(guard_holdout_overlap(l, spec, NULL, "run", &e), 0);
	json_decref(spec);
	/* same partition, other queries: new evidence */
	spec = json_pack("{s:[i], s:{s:s, s:i, s:i}}", "partitions", 2, "queries", "spec",
			 "synth:q", "first", 10, "count", 5);
	assert_int_equal(guard_holdout_overlap(l, spec, NULL, "run", &e), 0);
	json_decref(spec);
	/* other partition, same queries: new evidence */
	spec = json_pack("{s:[i], s:{s:s, s:i, s:i}}", "partitions", 5, "queries", "spec", "synth:q",
			 "first", 5, "count", 10);
	assert_int_equal(guard_holdout_overlap(l, spec, NULL, "run", &e), 0);
	json_decref(spec);
	/* all partitions (a gate) and queries 5..14: measured already */
	spec = json_pack("{s:{s:s, s:i, s:i}}", "queries", "spec", "synth:q", "first", 5, "count", 10);
	assert_int_equal(guard_holdout_overlap(l, spec, NULL, "run", &e), CS_EXIT_REFUSED);
	assert_non_null(strstr(e.msg, "partitions and queries"));
	json_decref(spec);
	spec = json_pack("{s:[i, i], s:{s:s, s:i, s:i}}", "partitions", 2, 7, "queries", "spec",
			 "synth:q", "first", 9, "count", 1);
	assert_int_equal(guard_holdout_overlap(l, spec, NULL, "run", &e), CS_EXIT_REFUSED);
	/* declared: allowed, and recorded as a deviation */
	assert_int_equal(guard_holdout_overlap(l, spec, "query 5-9 reused by design", "run", &e), 0);
	json_decref(spec);
	ledger_foreach(l, "deviation", kcb, &dv, NULL);
	assert_int_equal(dv.n, 1);
	assert_int_equal(refusals(l, NULL), 3);
	ledger_close(l);
}

/*
 * A PostgreSQL cluster's clone: the owner, modes and empty directories
 * kept, a marker for a cluster that survives the server writing its files
 * but not a second link; a running cluster is not copied without its
 * socket; a production port is refused (recorded), another allowed.
 */
static void test_postgres(void **state)
{
	ledger *l = new_study("s-pg");
	char src[PATH_MAX], dst[PATH_MAX], f[PATH_MAX * 2], g[PATH_MAX * 2], sd[PATH_MAX];
	harness_clone_info info;
	json_t *marker = NULL, *doc, *items = NULL, *rec;
	guard_prodset *ps = NULL;
	struct stat st;
	cs_err e = {0};
	uid_t owner = geteuid() == 0 ? 12345 : geteuid();

	(void) state;
	pathf(sd, "%s/%s", "s-pg");
	pathf(src, "%s/%s", "pgsrc");
	pathf(dst, "%s/%s", "pgdst");
	assert_int_equal(mkdir(src, 0700), 0);
	snprintf(f, sizeof(f), "%s/PG_VERSION", src);
	touch(f, 4096);
	snprintf(f, sizeof(f), "%s/global", src);
	mkdir(f, 0700);
	snprintf(f, sizeof(f), "%s/global/pg_control", src);
	touch(f, 8192);
	snprintf(f, sizeof(f), "%s/pg_notify", src); /* empty: the server needs it all the same */
	mkdir(f, 0700);
	if (geteuid() == 0) {
		snprintf(f, sizeof(f), "chown -R %u '%s'", (unsigned) owner, src);
		assert_int_equal(system(f), 0);
	}
	assert_int_equal(harness_clone(src, dst, sd, &info, &e), 0);
	assert_int_equal(stat(dst, &st), 0);
	assert_int_equal(st.st_uid, owner);
	assert_int_equal(st.st_mode & 0777, 0700);
	snprintf(f, sizeof(f), "%s/pg_notify", dst);
	assert_int_equal(stat(f, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	snprintf(f, sizeof(f), "%s/global/pg_control", dst);
	assert_int_equal(stat(f, &st), 0);
	assert_int_equal(st.st_uid, owner);
	assert_int_equal(guard_clone(l, sd, dst, "run", 1, &marker, &e), 0);
	assert_string_equal(json_string_value(json_object_get(marker, "target")), "postgres");
	json_decref(marker);
	/* The server writes its clone: a changed size and a new file are its own doing. */
	touch(f, 16384);
	snprintf(g, sizeof(g), "%s/postmaster.pid", dst);
	touch(g, 4096);
	assert_int_equal(guard_clone(l, sd, dst, "run", 1, NULL, &e), 0);
	unlink(g);
	/* A second name for a clone file is refused. */
	snprintf(g, sizeof(g), "%s/second-name", root);
	assert_int_equal(link(f, g), 0);
	assert_int_equal(guard_clone(l, sd, dst, "run", 0, NULL, &e), CS_EXIT_REFUSED);
	assert_non_null(strstr(e.msg, "links"));
	unlink(g);
	/* A running cluster is not copied without its socket (bad input, nothing made). */
	snprintf(f, sizeof(f), "%s/postmaster.pid", src);
	touch(f, 4096);
	snprintf(g, sizeof(g), "%s/pgdst2", root);
	assert_int_equal(harness_clone(src, g, sd, &info, &e), CS_EXIT_BADINPUT);
	assert_non_null(strstr(e.msg, "running"));
	assert_int_not_equal(stat(g, &st), 0);
	/* Production ports: the study's are refused by number, recorded; others pass. */
	doc = json_pack("{s:s, s:{s:[s], s:[i]}}", "id", "pg", "production", "paths", src, "ports",
			5499);
	assert_int_equal(guard_production_resolve(doc, AT_FDCWD, "study.json", &items, &e), 0);
	rec = json_pack("{s:s, s:O, s:o}", "id", "pg", "doc", doc, "production_items", items);
	assert_int_equal(ledger_append(l, "study", rec, NULL, &e), 0);
	json_decref(rec);
	json_decref(doc);
	assert_int_equal(guard_prodset_load(l, &ps, &e), 0);
	{
		int before = refusals(l, NULL);

		assert_int_equal(guard_port(l, ps, 5499, "run", "postgres.port", &e), CS_EXIT_REFUSED);
		assert_non_null(strstr(e.msg, "production's port"));
		assert_int_equal(refusals(l, NULL), before + 1);
		assert_int_equal(guard_port(l, ps, 5433, "run", "postgres.port", &e), 0);
	}
	guard_prodset_free(ps);
	ledger_close(l);
}

/*
 * guard_spell: a held path, an existing one and one still to be made,
 * comes back in the words typed (or, resolved, as the kernel's path);
 * a descriptor nobody holds and other text pass unchanged.
 */
static void test_spell(void **state)
{
	char dir[PATH_MAX], missing[PATH_MAX], text[PATH_MAX * 2], out[PATH_MAX * 2], real[PATH_MAX];
	guard_held a, b;
	cs_err e = {0};

	(void) state;
	pathf(dir, "%s/spell%s", "");
	assert_int_equal(mkdir(dir, 0755), 0);
	pathf(missing, "%s/spell/x/%s", "y");
	assert_int_equal(guard_hold(dir, AT_FDCWD, &a, &e), 0);
	assert_int_equal(guard_hold(missing, AT_FDCWD, &b, &e), 0);
	snprintf(text, sizeof(text), "%s/KIND: no such file; %s: cannot create", guard_held_via(&a),
		 guard_held_via(&b));
	guard_spell(text, 0, out, sizeof(out));
	snprintf(text, sizeof(text), "%s/KIND: no such file; %s: cannot create", dir, missing);
	assert_string_equal(out, text);
	assert_null(strstr(out, "/proc/"));
	assert_non_null(realpath(dir, real));
	guard_spell(guard_held_via(&a), 1, out, sizeof(out));
	assert_string_equal(out, real);
	/* once made, the new directory is spelled as typed too */
	assert_int_equal(guard_held_mkdirs(&b, &e), 0);
	guard_spell(guard_held_via(&b), 0, out, sizeof(out));
	assert_string_equal(out, missing);
	guard_held_close(&a);
	guard_held_close(&b);
	snprintf(text, sizeof(text), "/proc/%d/fd/999/x and /proc/self/fd/3", (int) getpid());
	guard_spell(text, 0, out, sizeof(out));
	assert_string_equal(out, text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spell),
		cmocka_unit_test(test_production),
		cmocka_unit_test(test_production_keep),
		cmocka_unit_test(test_clone_marker),
		cmocka_unit_test(test_registered_and_validated),
		cmocka_unit_test(test_cold),
		cmocka_unit_test(test_clean_tree),
		cmocka_unit_test(test_holdout),
		cmocka_unit_test(test_postgres),
	};
	const char *tmp = getenv("TMPDIR");
	char cmd[PATH_MAX + 16];
	int rc;

	snprintf(root, sizeof(root), "%s/cs-guard-XXXXXX", tmp && *tmp ? tmp : "/var/tmp");
	if (!mkdtemp(root))
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", root);
	return rc;
}
