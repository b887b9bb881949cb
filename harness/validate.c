/*
 * validate.c - `coldstudy validate S`: the checks that must pass before
 * any study run, each a `validation` record of one batch, and a last
 * {"check":"all"} record that guard_validated reads.
 *
 * The checks, and why each is there:
 *   ledger_verifies   the log is intact before anything is added to it;
 *   clock_monotonic   CLOCK_MONOTONIC never steps back and resolves 1 us;
 *   o_direct          O_DIRECT reads work where the clones live;
 *   io_uring          an io_uring read works (the "uring" strategy);
 *   eviction          evicting works on a scratch file and on every file
 *                     of every study index that exists: residency 0 pages
 *                     by a trustworthy method (the fincore caveat: mincore
 *                     without write access lies, so -EACCES is a failure);
 *   engine_vs_device  after eviction, N random O_DIRECT reads (io_uring, batches of 32, so the window is short) through a
 *                     cv_io, and the block device's read counter over the
 *                     same window: the ratio engine/device is recorded and
 *                     must lie in [0.9, 1.1] (the seed's was 0.94). Where
 *                     the device has no stats (loop, overlay, tmpfs) the
 *                     check is recorded as not available and FAILS; with
 *                     --allow-no-device-stats it is waived, and the waiver
 *                     is a deviation record: never passed by default;
 *   guard_production  a planted production item is refused through a
 *                     symlink, "..", a trailing slash, a hard link,
 *                     /proc/self/fd/N, a bind mount (where mount works),
 *                     and a benign directory is allowed (a control);
 *   clone_marker      a fresh clone's marker validates with its content
 *                     hash, a marker copied into another directory does
 *                     not, and every existing study clone validates;
 *   host              the host, captured as BenchExec does.
 * Scratch files live in the study's scratch_dir (default DIR/.validate),
 * which should be on the file system of the clones; they are removed.
 */
#include "harness.h"

#include "coldvec.h"
#include "guard.h"
#include "ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SCRATCH_BYTES (16u << 20)
#define PROBE_READS 256
#define PROBE_QD 32
#define DEVICE_TRIALS 12 /* the device counts every process's reads: the least disturbed trial counts */

/* snprintf for paths and messages: truncation is harmless here (names are short, checked by use). */
__attribute__((format(printf, 3, 4))) static void pathf(char *out, size_t cap, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(out, cap, f, ap);
	va_end(ap);
}

typedef struct vctx {
	ledger *l;
	json_int_t batch;
	int all_passed;
	int quiet;
	json_t *waived;
	json_t *out; /* o->results: the batch's payloads, or NULL */
} vctx;

static int batch_cb(const ledger_record *r, void *ud)
{
	json_t *p = json_loads(r->payload, 0, NULL);
	json_int_t b = json_integer_value(json_object_get(p, "batch"));

	if (b > *(json_int_t *) ud)
		*(json_int_t *) ud = b;
	json_decref(p);
	return 0;
}

/* Append one check's record; detail is stolen. */
static int record_w(vctx *v, const char *check, int passed, int waived, json_t *detail,
		    cs_err *e)
{
	json_t *p = json_pack("{s:s, s:b, s:o, s:I}", "check", check, "passed", passed, "detail",
			      detail ? detail : json_object(), "batch", v->batch);
	int rc;

	if (!p)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	rc = ledger_append(v->l, "validation", p, NULL, e);
	if (v->out)
		json_array_append(v->out, p);
	json_decref(p);
	if (!passed && !waived)
		v->all_passed = 0;
	if (!v->quiet)
		printf("%-18s %s\n", check, passed ? "passed" : waived ? "not available (waived)" : "FAILED");
	return rc;
}

static int record(vctx *v, const char *check, int passed, json_t *detail, cs_err *e)
{
	return record_w(v, check, passed, 0, detail, e);
}

/* Write a scratch file of size bytes of pseudo-random content. */
static int make_file(const char *path, size_t size)
{
	char *buf = malloc(1u << 20);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int fd, rc = 0;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	for (size_t done = 0; done < size && !rc;) {
		size_t n = size - done < (1u << 20) ? size - done : (1u << 20);

		for (size_t i = 0; i + 8 <= n; i += 8) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			memcpy(buf + i, &x, 8);
		}
		if (write(fd, buf, n) != (ssize_t) n)
			rc = -EIO;
		done += n;
	}
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	free(buf);
	return rc;
}

static json_t *check_clock(int *ok)
{
	struct timespec res;
	uint64_t prev = cs_mono_ns(), back = 0;

	for (int i = 0; i < 200000; i++) {
		uint64_t t = cs_mono_ns();

		if (t < prev)
			back++;
		prev = t;
	}
	clock_getres(CLOCK_MONOTONIC, &res);
	*ok = back == 0 && res.tv_sec == 0 && res.tv_nsec <= 1000;
	return json_pack("{s:i, s:I, s:I}", "samples", 200000, "backwards", (json_int_t) back,
			 "resolution_ns", (json_int_t) res.tv_nsec);
}

static json_t *check_direct(const char *file, int *ok)
{
	void *buf = cv_alloc_aligned(4096);
	int fd = open(file, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ssize_t n = -1;
	int err = 0;

	if (fd < 0)
		err = errno;
	else if ((n = pread(fd, buf, 4096, 8192)) != 4096)
		err = n < 0 ? errno : EIO;
	if (fd >= 0)
		close(fd);
	free(buf);
	*ok = !err;
	return err ? json_pack("{s:s, s:s}", "file", file, "error", strerror(err))
		   : json_pack("{s:s, s:i}", "file", file, "bytes", 4096);
}

static json_t *check_uring(const char *file, int *ok)
{
	cv_io_opts o;
	cv_io *io = NULL;
	cv_file *f = NULL;
	void *buf = cv_alloc_aligned(4096);
	int rc;

	cv_io_opts_default(&o);
	o.strategy = CV_IO_URING;
	rc = cv_io_new(&o, &io);
	if (!rc)
		rc = cv_file_open(file, 0, &f);
	if (!rc)
		rc = cv_io_read(io, f, 4096, 4096, buf);
	cv_file_close(f);
	cv_io_free(io);
	free(buf);
	*ok = rc == 0;
	return rc ? json_pack("{s:s, s:s}", "file", file, "error", strerror(-rc))
		  : json_pack("{s:s, s:i}", "file", file, "bytes", 4096);
}

/* Evict path and require 0 resident pages; appends a row to files. */
static int evict_one(const char *path, json_t *files)
{
	cv_residency r = {0};
	int rc = cv_cache_evict(path);

	if (!rc)
		rc = cv_cache_residency(path, &r);
	if (rc) {
		json_array_append_new(files, json_pack("{s:s, s:s}", "path", path, "error",
						       rc == -EACCES ? "residency untrustworthy (EACCES)"
								     : strerror(-rc)));
		return 0;
	}
	json_array_append_new(files, json_pack("{s:s, s:I, s:I, s:s}", "path", path, "pages",
					       (json_int_t) r.pages, "resident",
					       (json_int_t) r.resident, "method",
					       r.method ? r.method : "?"));
	return r.resident == 0;
}

static json_t *check_eviction(const json_t *study, const char *scratch_file, int *ok)
{
	json_t *files = json_array(), *skipped = json_array();
	const char *k;
	json_t *ix;
	int good = 1;

	good &= evict_one(scratch_file, files);
	json_object_foreach(json_object_get(study, "indexes"), k, ix) {
		const char *dirs[2] = {json_string_value(json_object_get(ix, "clone")),
				       json_string_value(json_object_get(ix, "source"))};

		for (int d = 0; d < 2; d++) {
			char **paths = NULL;
			size_t n = 0;

			if (!dirs[d])
				continue;
			if (cv_index_files(dirs[d], &paths, &n)) {
				json_array_append_new(skipped, json_string(dirs[d]));
				continue;
			}
			for (size_t i = 0; i < n; i++)
				good &= evict_one(paths[i], files);
			cv_index_files_free(paths, n);
		}
	}
	*ok = good;
	return json_pack("{s:o, s:o}", "files", files, "not_built_yet", skipped);
}

/*
 * One trial: N random O_DIRECT reads of the evicted scratch file, with the
 * device's read counter read before and after. Other processes' reads can
 * only add to the device count, so the trial with the ratio nearest 1 is
 * the least disturbed; every trial is recorded.
 */
static int device_trial(const cv_blkdev *bd, const char *file, uint64_t seed, json_t *trials,
			double *ratio)
{
	cv_blkstat a, b;
	cv_io_opts o;
	cv_io *io = NULL;
	cv_file *f = NULL;
	cv_io_stats st;
	void *buf = cv_alloc_aligned(4096 * PROBE_QD);
	uint64_t x = seed, blocks = SCRATCH_BYTES / 4096;
	int rc;

	cv_io_opts_default(&o);
	o.strategy = CV_IO_URING; /* batches keep the window short: less of others' traffic in it */
	o.queue_depth = PROBE_QD;
	rc = buf ? cv_cache_evict(file) : -ENOMEM;
	if (!rc)
		rc = cv_io_new(&o, &io);
	if (!rc)
		rc = cv_file_open(file, 0, &f);
	if (!rc)
		rc = cv_blkdev_stat(bd, &a);
	for (int i = 0; !rc && i < PROBE_READS; i += PROBE_QD) {
		cv_read_req req[PROBE_QD];

		for (int j = 0; j < PROBE_QD; j++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			req[j] = (cv_read_req){.file = f, .off = ((x >> 33) % blocks) * 4096,
					       .len = 4096, .buf = (char *) buf + (size_t) j * 4096};
		}
		rc = cv_io_read_batch(io, req, PROBE_QD);
	}
	if (!rc)
		rc = cv_blkdev_stat(bd, &b);
	if (!rc) {
		cv_io_stats_get(io, &st);
		*ratio = b.reads > a.reads ? (double) st.reads / (double) (b.reads - a.reads) : 0.0;
		json_array_append_new(
			trials,
			json_pack("{s:f, s:I, s:I, s:f, s:f, s:f}", "window_ms",
				  (double) (b.t_ns - a.t_ns) / 1e6, "engine_reads", (json_int_t) st.reads,
				  "device_reads", (json_int_t) (b.reads - a.reads), "ratio", *ratio,
				  "engine_read_ms_mean", cv_hist_mean(&st.lat_ns) / 1e6,
				  "device_read_ms_mean",
				  b.reads > a.reads ? (double) (b.read_ms - a.read_ms) /
							      (double) (b.reads - a.reads)
						    : 0.0));
	}
	cv_file_close(f);
	cv_io_free(io);
	free(buf);
	return rc;
}

static json_t *check_device(const char *file, int *ok, int *available)
{
	cv_blkdev bd;
	cv_err ce = {{0}};
	json_t *trials = json_array();
	double best = 0, r = 0;
	int rc = 0;

	*ok = 0;
	*available = 0;
	if (cv_blkdev_for_path(file, &bd, &ce)) {
		json_decref(trials);
		return json_pack("{s:b, s:s}", "available", 0, "why", ce.msg);
	}
	*available = 1;
	for (int t = 0; t < DEVICE_TRIALS && !rc; t++) {
		rc = device_trial(&bd, file, 12345u + (uint64_t) t * 7919u, trials, &r);
		if (!rc && (best == 0 || fabs(r - 1.0) < fabs(best - 1.0)))
			best = r;
		if (!rc && best >= 0.9 && best <= 1.1)
			break;
	}
	if (rc)
		return json_pack("{s:b, s:s, s:s, s:o}", "available", 1, "device", bd.part, "error",
				 strerror(-rc), "trials", trials);
	*ok = best >= 0.9 && best <= 1.1;
	return json_pack("{s:b, s:s, s:s, s:f, s:f, s:f, s:o}", "available", 1, "device", bd.part,
			 "disk", bd.disk, "ratio", best, "pass_low", 0.9, "pass_high", 1.1, "trials",
			 trials);
}

/* Is target refused by the planted study? Appends {how, target, refused}. */
static int refused(const json_t *st, const char *how, const char *target, json_t *cases)
{
	cs_err e = {0};
	int rc = guard_production(NULL, st, target, "validate", &e);

	json_array_append_new(cases, json_pack("{s:s, s:s, s:b, s:s}", "how", how, "target", target,
					       "refused", rc == CS_EXIT_REFUSED, "why", e.msg));
	return rc == CS_EXIT_REFUSED;
}

static json_t *check_guard(const json_t *study, const char *scratch, int *ok)
{
	char prod[PATH_MAX], data[PATH_MAX + 8], lnk[PATH_MAX], t[PATH_MAX * 2], clone[PATH_MAX],
		hl[PATH_MAX + 8], mnt[PATH_MAX];
	json_t *st = json_deep_copy(study), *paths, *cases = json_array();
	const char *k;
	json_t *v;
	int good = 1, fd;
	size_t i;

	pathf(prod, sizeof(prod), "%s/planted-production", scratch);
	pathf(data, sizeof(data), "%s/data", prod);
	pathf(lnk, sizeof(lnk), "%s/link-to-production", scratch);
	pathf(clone, sizeof(clone), "%s/benign", scratch);
	pathf(hl, sizeof(hl), "%s/hardlink", clone);
	pathf(mnt, sizeof(mnt), "%s/bind", scratch);
	mkdir(prod, 0755);
	mkdir(clone, 0755);
	mkdir(mnt, 0755);
	close(open(data, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	unlink(lnk);
	/* Links hold absolute targets: a relative one would resolve from the link's own
	 * directory and dangle when the study's scratch_dir is relative. */
	{
		char abs[PATH_MAX];

		if (!realpath(prod, abs) || symlink(abs, lnk) < 0)
			good = 0;
	}
	paths = json_object_get(json_object_get(st, "production"), "paths");
	if (!json_is_array(paths)) {
		paths = json_array();
		json_object_set_new(json_object_get(st, "production"), "paths", paths);
	}
	json_array_append_new(paths, json_string(prod));

	/* The control: a directory that is not production must be allowed. */
	{
		cs_err e = {0};
		int rc = guard_production(NULL, st, clone, "validate", &e);

		json_array_append_new(cases, json_pack("{s:s, s:s, s:b}", "how", "control (benign)",
						       "target", clone, "refused",
						       rc == CS_EXIT_REFUSED));
		if (rc)
			good = 0;
	}
	good &= refused(st, "direct", prod, cases);
	good &= refused(st, "symlink", lnk, cases);
	pathf(t, sizeof(t), "%s/../planted-production/", clone);
	good &= refused(st, "dotdot", t, cases);
	pathf(t, sizeof(t), "%s/", prod);
	good &= refused(st, "trailing slash", t, cases);
	if (link(data, hl) == 0) {
		good &= refused(st, "hard link inside target", clone, cases);
		unlink(hl);
	} else {
		good = 0;
	}
	fd = open(prod, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		pathf(t, sizeof(t), "/proc/self/fd/%d", fd);
		good &= refused(st, "/proc/self/fd", t, cases);
		close(fd);
	}
	if (mount(prod, mnt, NULL, MS_BIND, NULL) == 0) {
		good &= refused(st, "bind mount", mnt, cases);
		umount2(mnt, MNT_DETACH);
	} else {
		json_array_append_new(cases, json_pack("{s:s, s:s}", "how", "bind mount", "not_tested",
						       strerror(errno)));
	}
	/* Every real production path that exists, through a symlink. */
	json_array_foreach(json_object_get(json_object_get(study, "production"), "paths"), i, v) {
		struct stat sb;
		char l2[PATH_MAX], abs[PATH_MAX];

		if (stat(json_string_value(v), &sb) < 0 || !realpath(json_string_value(v), abs))
			continue;
		pathf(l2, sizeof(l2), "%s/link-%zu", scratch, i);
		unlink(l2);
		if (symlink(abs, l2) == 0) {
			good &= refused(st, "symlink to a real production path", l2, cases);
			unlink(l2);
		}
	}
	(void) k;
	unlink(lnk);
	unlink(data);
	rmdir(prod);
	rmdir(clone);
	rmdir(mnt);
	json_decref(st);
	*ok = good;
	return json_pack("{s:o}", "cases", cases);
}

static void rm_tree(const char *dir)
{
	char **names = NULL;
	size_t n = 0;

	if (guard_dir_files(dir, &names, &n, NULL) == 0) {
		for (size_t i = 0; i < n; i++) {
			char p[PATH_MAX * 2];

			pathf(p, sizeof(p), "%s/%s", dir, names[i]);
			unlink(p);
		}
		guard_dir_files_free(names, n);
	}
	{
		char m[PATH_MAX * 2];

		pathf(m, sizeof(m), "%s/%s", dir, GUARD_CLONE_MARKER);
		unlink(m);
	}
	rmdir(dir);
}

static json_t *check_clone(const json_t *study, const char *scratch, const char *file, int *ok)
{
	char src[PATH_MAX], cl[PATH_MAX], cp[PATH_MAX], s1[PATH_MAX + 8], m1[PATH_MAX * 2],
		m2[PATH_MAX * 2];
	harness_clone_info info;
	json_t *d = json_object(), *studies = json_array();
	cs_err e = {0};
	const char *k;
	json_t *ix;
	char *buf = NULL;
	size_t len;
	int good = 1, rc;

	pathf(src, sizeof(src), "%s/clone-src", scratch);
	pathf(cl, sizeof(cl), "%s/clone-dst", scratch);
	pathf(cp, sizeof(cp), "%s/clone-copied-marker", scratch);
	rm_tree(cl);
	rm_tree(cp);
	rm_tree(src);
	mkdir(src, 0755);
	pathf(s1, sizeof(s1), "%s/part0", src);
	make_file(s1, 65536);
	rc = harness_clone(src, cl, &info, &e);
	if (rc) {
		json_object_set_new(d, "clone_error", json_string(e.msg));
		good = 0;
	} else {
		json_object_set_new(d, "method", json_string(info.method));
		rc = guard_clone(NULL, cl, "validate", 1, NULL, &e);
		json_object_set_new(d, "fresh_clone_valid", json_boolean(rc == 0));
		if (rc)
			good = 0;
		/* A marker copied next to a copy of the files must be refused. */
		mkdir(cp, 0755);
		pathf(m1, sizeof(m1), "%s/%s", cl, GUARD_CLONE_MARKER);
		pathf(m2, sizeof(m2), "%s/part0", cp);
		make_file(m2, 65536);
		pathf(m2, sizeof(m2), "%s/%s", cp, GUARD_CLONE_MARKER);
		if (cs_read_file(m1, 1u << 20, &buf, &len, NULL) == 0 &&
		    cs_write_file_atomic(m2, buf, len, 0444, NULL) == 0) {
			rc = guard_clone(NULL, cp, "validate", 0, NULL, &e);
			json_object_set_new(d, "copied_marker_refused", json_boolean(rc == CS_EXIT_REFUSED));
			if (rc != CS_EXIT_REFUSED)
				good = 0;
		} else {
			good = 0;
		}
		free(buf);
	}
	json_object_foreach(json_object_get(study, "indexes"), k, ix) {
		const char *c = json_string_value(json_object_get(ix, "clone"));
		struct stat sb;

		if (!c || stat(c, &sb) < 0)
			continue;
		rc = guard_clone(NULL, c, "validate", 1, NULL, &e);
		json_array_append_new(studies, json_pack("{s:s, s:b, s:s}", "clone", c, "valid",
							 rc == 0, "why", rc ? e.msg : ""));
		if (rc)
			good = 0;
	}
	json_object_set_new(d, "study_clones", studies);
	rm_tree(cl);
	rm_tree(cp);
	rm_tree(src);
	*ok = good;
	return d;
}

int harness_validate(const char *dir, const harness_validate_opts *o, cs_err *e)
{
	vctx v = {0};
	json_t *study = NULL, *d;
	char scratch[PATH_MAX], file[PATH_MAX + 16];
	cs_err le = {0};
	int rc, ok, avail;

	v.quiet = o->quiet;
	v.out = o->results;
	v.all_passed = 1;
	rc = ledger_open(dir, &v.l, e);
	if (rc)
		return rc;
	rc = guard_study(v.l, "validate", &study, e);
	if (rc)
		goto out;
	if (ledger_foreach(v.l, "validation", batch_cb, &v.batch, e)) {
		rc = e->code ? e->code : CS_EXIT_INTERNAL;
		goto out;
	}
	v.batch++;
	if (json_is_string(json_object_get(study, "scratch_dir")))
		pathf(scratch, sizeof(scratch), "%s",
			 json_string_value(json_object_get(study, "scratch_dir")));
	else
		pathf(scratch, sizeof(scratch), "%s/.validate", dir);
	mkdir(scratch, 0755);
	pathf(file, sizeof(file), "%s/probe.dat", scratch);
	rc = make_file(file, SCRATCH_BYTES);
	if (rc) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot write the scratch file: %s", file,
				strerror(-rc));
		goto out;
	}

	rc = ledger_verify(v.l, NULL, &le);
	d = json_pack("{s:s}", "result", rc ? le.msg : "ok");
	if ((rc = record(&v, "ledger_verifies", rc == 0, d, e)))
		goto out;
	d = check_clock(&ok);
	if ((rc = record(&v, "clock_monotonic", ok, d, e)))
		goto out;
	d = check_direct(file, &ok);
	if ((rc = record(&v, "o_direct", ok, d, e)))
		goto out;
	d = check_uring(file, &ok);
	if ((rc = record(&v, "io_uring", ok, d, e)))
		goto out;
	d = check_eviction(study, file, &ok);
	if ((rc = record(&v, "eviction", ok, d, e)))
		goto out;
	d = check_device(file, &ok, &avail);
	if (!avail && o->allow_no_device_stats) {
		json_t *dev = json_pack("{s:s, s:s}", "because",
					"engine-vs-device check waived: the device under the study has no "
					"block-device stats (--allow-no-device-stats); device metrics "
					"will be null",
					"access_state", ledger_access_state(v.l));

		json_object_set_new(d, "waived", json_true());
		rc = ledger_append(v.l, "deviation", dev, NULL, e);
		json_decref(dev);
		if (rc)
			goto out;
		v.waived = json_pack("[s]", "engine_vs_device");
		if ((rc = record_w(&v, "engine_vs_device", 0, 1, d, e)))
			goto out;
	} else if ((rc = record(&v, "engine_vs_device", ok, d, e))) {
		goto out;
	}
	d = check_guard(study, scratch, &ok);
	if ((rc = record(&v, "guard_production", ok, d, e)))
		goto out;
	d = check_clone(study, scratch, file, &ok);
	if ((rc = record(&v, "clone_marker", ok, d, e)))
		goto out;
	d = harness_host_capture(scratch);
	if ((rc = record(&v, "host", d != NULL, d, e)))
		goto out;
	rc = 0;
out:
	if (v.l && v.batch) {
		/* The closing record: all passed, or not (also when a check could not run). */
		int passed = !rc && v.all_passed; /* a waived check does not fail the batch */
		json_t *p;

		p = json_pack("{s:s, s:b, s:I, s:o}", "check", "all", "passed", passed, "batch", v.batch,
			      "waived", v.waived ? json_incref(v.waived) : json_array());
		if (p)
			ledger_append(v.l, "validation", p, NULL, &le);
		if (p && v.out)
			json_array_append(v.out, p);
		json_decref(p);
		if (!rc && !passed)
			rc = cs_err_set(e, CS_EXIT_VERIFY, "validation batch %lld failed; runs stay refused",
					(long long) v.batch);
	}
	unlink(file);
	rmdir(scratch);
	json_decref(v.waived);
	json_decref(study);
	ledger_close(v.l);
	return rc;
}
