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
 *                     of every study clone that exists (never a source:
 *                     in a study's layout that is production): residency 0 pages
 *                     by a trustworthy method (the fincore caveat: mincore
 *                     without write access lies, so -EACCES is a failure);
 *                     a PostgreSQL clone's top-level files and an even
 *                     sample of its base/ and global/ relation files (a
 *                     cluster lacking either fails), and of each
 *                     tablespace its clone marker names (held and matched
 *                     by identity as a run holds it; one that cannot be
 *                     fails);
 *   engine_vs_device  after eviction, N random O_DIRECT reads (io_uring, batches of 32, so the window is short) through a
 *                     cv_io, and the block device's read counter over the
 *                     same window: the ratio engine/device is recorded and
 *                     must lie in [0.9, 1.1] (the seed's was 0.94). Where
 *                     the device has no stats (loop, overlay, tmpfs) the
 *                     check is recorded as not available and FAILS; with
 *                     --allow-no-device-stats it is waived, and the waiver
 *                     is a deviation record: never passed by default;
 *   guard_production  a planted production item (held in memory, never in
 *                     the machine registry) is refused through each class
 *                     of target the guards know: direct, symlink, a
 *                     symlink's "..", a trailing slash, a hard link inside
 *                     a target, a hard link as the target, /proc/self/fd/N,
 *                     a bind mount (where mount works), a target that does
 *                     not exist yet inside it, a relative path from another
 *                     directory, and a walk past its limit; a benign
 *                     directory is allowed (a control);
 *   clone_marker      a fresh clone's marker validates with its content
 *                     hash and the study's HMAC, a marker copied into
 *                     another directory does not, an edited marker does
 *                     not, and every existing study clone validates;
 *   throttle          only where the study's defaults or a plan spec name a
 *                     "throttle" (throttle.c): for each cap, a probe of the
 *                     scratch file (io_uring, O_DIRECT, queue depth 32, 3 s
 *                     of reads at the cap) inside the capped cgroup must
 *                     reach 0.9-1.05 of its riops (the kernel's first slice
 *                     lets a burst through, so a short probe reads high),
 *                     and the throttle's own count of reads must equal the
 *                     probe's within 2% (every read reached the disk and
 *                     was capped). Up to three trials a cap, the first in
 *                     band passing (other processes' load only slows a
 *                     trial down); every trial is recorded. No writable
 *                     controller fails it;
 *   host              the host, captured as BenchExec does;
 *   can-fail:Hn       one per registered hypothesis (canfail.c): its deciding
 *                     runs differ from their baselines in exactly the
 *                     registered factor, and its reject rule can hold. A
 *                     confirmatory or non-cause hypothesis that cannot fail
 *                     is refused: exit 3 and a `refusal` record (guard
 *                     "can-fail"), after the batch's closing record;
 *   model-check:Hn    one per registered hypothesis (modelcheck.c): each
 *                     comparison of its rules classified by what decides
 *                     it (engine, device, device model) by replaying the
 *                     model under engine figures it cannot know; always
 *                     passes (a classification, read by verdicts).
 * Scratch files live in the study's scratch_dir (default DIR/.validate;
 * study.json's paths are the study folder's), which must be new and
 * outside every production item; it is made beneath its held parent, used
 * through the hold, and removed.
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
#define THROTTLE_TRIALS 3 /* capped probes a cap gets: the first in band passes */
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

/*
 * A PostgreSQL clone's files are its relations, not a few top-level files:
 * every top-level file, and an even sample of base/ (the databases'
 * relations) and global/ (the shared catalogs), at most PG_SAMPLE of each,
 * evicted through the held directory and proven non-resident. 1 when all
 * were; *sampled says how many of how many.
 */
#define PG_SAMPLE 32
static int evict_cluster(const char *dir, json_t *files, json_t **sampled)
{
	static const char *const parts[] = {"base/", "global/", NULL};
	char **names = NULL, p[PATH_MAX * 2];
	size_t n = 0, have[2] = {0, 0};
	int good = 1;
	cs_err e = {0};

	*sampled = json_object();
	if (guard_dir_files(dir, &names, &n, &e)) {
		json_object_set_new(*sampled, "error", json_string(e.msg));
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		for (int d = 0; parts[d]; d++)
			have[d] += !strncmp(names[i], parts[d], strlen(parts[d]));
	for (int d = 0; parts[d]; d++) {
		size_t step = have[d] > PG_SAMPLE ? (have[d] + PG_SAMPLE - 1) / PG_SAMPLE : 1, seen = 0, took = 0;

		for (size_t i = 0; i < n; i++) {
			if (strncmp(names[i], parts[d], strlen(parts[d])))
				continue;
			if (seen++ % step)
				continue;
			snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
			good &= evict_one(p, files);
			took++;
		}
		json_object_set_new(*sampled, parts[d], json_pack("{s:I, s:I}", "evicted", (json_int_t) took,
								  "of", (json_int_t) have[d]));
		good &= have[d] > 0; /* a cluster without its relations is not one */
	}
	for (size_t i = 0; i < n; i++)
		if (!strchr(names[i], '/')) {
			snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
			good &= evict_one(p, files);
		}
	guard_dir_files_free(names, n);
	return good;
}

/*
 * A clone's tablespaces (the folders its marker names, each cloned beside
 * the data directory): each held and guarded as a run holds it, the same
 * folder by identity, and an even sample of its files, at most PG_SAMPLE,
 * evicted and proven non-resident as base/'s are. Their counts go to
 * sampled's "tablespaces". 1 when all were.
 */
static int evict_tablespaces(const json_t *marker, guard_prodset *ps, json_t *files,
			     json_t *sampled)
{
	const json_t *tl = json_object_get(marker, "tablespaces");
	json_t *out = json_array(), *t;
	char p[PATH_MAX * 2];
	size_t i;
	int good = 1;

	json_array_foreach(tl, i, t) {
		const char *cl = json_string_value(json_object_get(t, "clone"));
		const char *oid = json_string_value(json_object_get(t, "oid"));
		char **names = NULL;
		size_t n = 0, took = 0, step;
		guard_held th;
		cs_err e = {0};

		guard_held_init(&th);
		if (!cl || guard_existing(NULL, ps, cl, AT_FDCWD, "validate", "tablespace", &th, &e) ||
		    (json_int_t) th.st.st_dev != json_integer_value(json_object_get(t, "dev")) ||
		    (json_int_t) th.st.st_ino != json_integer_value(json_object_get(t, "ino")) ||
		    guard_dir_files(guard_held_via(&th), &names, &n, &e)) {
			json_array_append_new(
				out, json_pack("{s:s?, s:s?, s:s}", "clone", cl, "oid", oid, "error",
					       !cl ? "the clone marker names no clone for it"
					       : e.msg[0] ? e.msg
							  : "not the folder the clone made (device "
							    "and inode differ)"));
			guard_held_close(&th);
			good = 0;
			continue;
		}
		step = n > PG_SAMPLE ? (n + PG_SAMPLE - 1) / PG_SAMPLE : 1;
		for (size_t j = 0; j < n; j += step, took++) {
			snprintf(p, sizeof(p), "%s/%s", guard_held_via(&th), names[j]);
			good &= evict_one(p, files);
		}
		json_array_append_new(out, json_pack("{s:s, s:s?, s:I, s:I}", "clone", cl, "oid", oid,
						     "evicted", (json_int_t) took, "of",
						     (json_int_t) n));
		guard_dir_files_free(names, n);
		guard_held_close(&th);
	}
	json_object_set_new(sampled, "tablespaces", out);
	return good;
}

static json_t *check_eviction(const json_t *study, const char *study_dir, int study_fd,
			      guard_prodset *ps, const char *scratch_file, int *ok)
{
	json_t *clusters = json_object();
	json_t *files = json_array(), *skipped = json_array(), *refusedj = json_array();
	const char *k;
	json_t *ix;
	int good = 1;

	good &= evict_one(scratch_file, files);
	json_object_foreach(json_object_get(study, "indexes"), k, ix) {
		const char *c = json_string_value(json_object_get(ix, "clone"));
		char **paths = NULL;
		size_t n = 0;
		guard_held h;
		cs_err e = {0};

		/* Clones only, and only once the guards say a clone is not production. */
		if (!c)
			continue;
		if (guard_target(NULL, ps, c, study_fd, "validate", "clone", &h, &e)) {
			json_array_append_new(refusedj, json_pack("{s:s, s:s}", "clone", c, "why", e.msg));
			good = 0;
			continue;
		}
		if (h.exists && !strcmp(json_string_value(json_object_get(ix, "kind")) ?: "", "postgres")) {
			json_t *sampled = NULL;

			json_t *marker = NULL;

			good &= evict_cluster(guard_held_via(&h), files, &sampled);
			/* its tablespaces, by the marker a run trusts: unknown ones fail closed */
			if (guard_clone(NULL, study_dir, guard_held_via(&h), "validate", 0, &marker, &e)) {
				json_object_set_new(sampled, "tablespaces_error", json_string(e.msg));
				good = 0;
			} else {
				good &= evict_tablespaces(marker, ps, files, sampled);
			}
			json_decref(marker);
			json_object_set_new(clusters, c, sampled);
			guard_held_close(&h);
			continue;
		}
		if (!h.exists || cv_index_files(guard_held_via(&h), &paths, &n)) {
			json_array_append_new(skipped, json_string(c));
			guard_held_close(&h);
			continue;
		}
		for (size_t i = 0; i < n; i++)
			good &= evict_one(paths[i], files);
		cv_index_files_free(paths, n);
		guard_held_close(&h);
	}
	*ok = good;
	return json_pack("{s:o, s:o, s:o, s:o}", "files", files, "not_built_yet", skipped, "refused",
			 refusedj, "clusters", clusters);
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

/* Is target (from base_fd) refused by the planted production set? Appends {how, target, refused}. */
/* The throttle caps the study's runs name: its defaults' and every plan spec's (new array). */
static json_t *study_caps(ledger *l, const json_t *study)
{
	json_t *caps = json_array(), *s;
	const json_t *d = json_object_get(json_object_get(study, "defaults"), "throttle");
	ledger_plan p = {0};
	cs_err e = {0};
	size_t i;

	if (json_is_string(d))
		json_array_append(caps, (json_t *) d);
	if (ledger_plan_load(l, 0, &p, &e) || !p.rec)
		goto out;
	json_array_foreach(json_object_get(p.rec, "plan_specs"), i, s) {
		const char *base = json_string_value(json_object_get(p.rec, "plan_base"));
		const char *rel = json_string_value(json_object_get(s, "path"));
		char full[PATH_MAX], sha[65];
		json_t *run = NULL, *eff = NULL;
		const json_t *t;

		if (!rel)
			continue;
		pathf(full, sizeof(full), "%s%s%s", rel[0] == '/' || !base ? "" : base,
		      rel[0] == '/' || !base ? "" : "/", rel);
		if (!harness_run_load(full, &run, sha, &e) &&
		    !harness_run_effective(run, json_object_get(study, "defaults"), &eff, &e)) {
			t = json_object_get(eff, "throttle");
			if (json_is_string(t) && !cs_json_has_string(caps, json_string_value(t)))
				json_array_append(caps, (json_t *) t);
		}
		json_decref(eff);
		json_decref(run);
	}
out:
	ledger_plan_free(&p);
	return caps;
}

/* One capped probe of file: {cap, ...figures, passed}; *ok cleared when it misses. */
static json_t *throttle_probe(const char *file, const char *capname, int *ok)
{
	harness_cap cap;
	harness_throttle t;
	cv_probe_opts po = {.qd = PROBE_QD, .bs = 4096, .strategy = CV_IO_URING, .seed = 7};
	cv_probe_result r;
	cv_err ce = {{0}};
	cs_err e = {0};
	uint64_t treads = 0, tbytes = 0;
	json_t *d;
	int fd, rc, pass;

	harness_throttle_init(&t);
	if (harness_cap_parse(capname, &cap, &e)) {
		*ok = 0;
		return json_pack("{s:s, s:b, s:s}", "cap", capname, "passed", 0, "error", e.msg);
	}
	/* three seconds at the cap (the first slice's burst weighs ~3%); uncapped: 20,000 reads */
	po.reads = cap.riops ? cap.riops * 3 : 20000;
	fd = open(file, O_RDONLY | O_CLOEXEC);
	rc = fd < 0 ? cs_err_set(&e, CS_EXIT_INTERNAL, "%s: %s", file, strerror(errno))
		    : harness_throttle_begin(&cap, fd, &t, &e);
	if (!rc && (rc = harness_throttle_enter(&t)))
		rc = cs_err_set(&e, CS_EXIT_INTERNAL, "%s: cannot join: %s", t.dir, strerror(-rc));
	if (!rc) {
		rc = cv_probe(file, &po, &r, &ce);
		harness_throttle_leave(&t);
		if (rc)
			cs_err_set(&e, CS_EXIT_INTERNAL, "probe: %s", ce.msg);
		else if (harness_throttle_counters(&t, &treads, &tbytes))
			rc = cs_err_set(&e, CS_EXIT_INTERNAL, "%s: the throttle's counters are unreadable",
					t.dir);
	}
	if (rc) {
		harness_throttle_end(&t);
		if (fd >= 0)
			close(fd);
		*ok = 0;
		return json_pack("{s:s, s:b, s:s}", "cap", capname, "passed", 0, "error", e.msg);
	}
	d = harness_throttle_record(&t, treads, tbytes);
	harness_throttle_end(&t);
	close(fd);
	pass = llabs((long long) treads - (long long) r.reads) <= (long long) (0.02 * (double) r.reads);
	json_object_set_new(d, "qd", json_integer(po.qd));
	json_object_set_new(d, "engine_reads", json_integer((json_int_t) r.reads));
	json_object_set_new(d, "iops", json_real(r.iops));
	json_object_set_new(d, "wall_s", json_real(r.wall_s));
	json_object_set_new(d, "lat_mean_ms", json_real(r.lat_mean_ms));
	if (cap.riops) {
		double of = r.iops / (double) cap.riops;

		json_object_set_new(d, "of_cap", json_real(of));
		json_object_set_new(d, "of_cap_band", json_pack("[f, f]", 0.9, 1.05));
		pass = pass && of >= 0.9 && of <= 1.05;
	}
	json_object_set_new(d, "counts_within", json_real(0.02));
	json_object_set_new(d, "passed", json_boolean(pass));
	if (!pass)
		*ok = 0;
	return d;
}

/* The capped probes of every cap the study names; NULL when it names none. */
static json_t *check_throttle(ledger *l, const json_t *study, const char *file, int *ok)
{
	json_t *caps = study_caps(l, study), *out, *c;
	size_t i;

	*ok = 1;
	if (!json_array_size(caps)) {
		json_decref(caps);
		return NULL;
	}
	out = json_pack("{s:[], s:i}", "probes", "trials_max", THROTTLE_TRIALS);
	json_array_foreach(caps, i, c) {
		json_t *trials = json_array(), *last = NULL;
		int one = 0;

		/* the machine's other load can only slow a trial down: the first in band counts */
		for (int t = 0; t < THROTTLE_TRIALS && !one; t++) {
			one = 1;
			last = throttle_probe(file, json_string_value(c), &one);
			json_array_append_new(trials, last);
			if (json_object_get(last, "error"))
				break; /* no controller, no device: another trial would say the same */
		}
		last = json_copy(last);
		json_object_set_new(last, "trials", trials);
		json_array_append_new(json_object_get(out, "probes"), last);
		if (!one)
			*ok = 0;
	}
	json_decref(caps);
	return out;
}

static int refused(guard_prodset *ps, const char *how, const char *target, int base_fd,
		   json_t *cases)
{
	cs_err e = {0};
	guard_held h;
	int rc = guard_target(NULL, ps, target, base_fd, "validate", "target", &h, &e);

	guard_held_close(&h);
	json_array_append_new(cases, json_pack("{s:s, s:s, s:b, s:s}", "how", how, "target", target,
					       "refused", rc == CS_EXIT_REFUSED, "why", e.msg));
	return rc == CS_EXIT_REFUSED;
}

/*
 * The self-test of the production guard: one target of each class the
 * guards know, planted under the scratch directory against a production
 * item that lives only in this check's own set (sfd: the held scratch dir).
 */
static json_t *check_guard(int sfd, const char *scratch, int *ok)
{
	char prod[PATH_MAX], t[PATH_MAX * 2], mnt[PATH_MAX], abs[PATH_MAX];
	json_t *cases = json_array();
	guard_prodset *ps = NULL;
	cs_err e = {0};
	int good = 1, fd, bfd = -1;

	/* The layout, made through the held scratch directory. */
	mkdirat(sfd, "planted-production", 0755);
	mkdirat(sfd, "planted-production/sub", 0755);
	mkdirat(sfd, "benign", 0755);
	mkdirat(sfd, "bind", 0755);
	close(openat(sfd, "planted-production/data", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	pathf(prod, sizeof(prod), "%s/planted-production", scratch);
	pathf(mnt, sizeof(mnt), "%s/bind", scratch);
	/* Links hold absolute targets: the scratch directory's real path. */
	fd = openat(sfd, "planted-production", O_PATH | O_CLOEXEC);
	pathf(t, sizeof(t), "/proc/self/fd/%d", fd);
	{
		ssize_t n = fd >= 0 ? readlink(t, abs, sizeof(abs) - 1) : -1;

		abs[n > 0 ? n : 0] = '\0';
	}
	if (fd >= 0)
		close(fd);
	unlinkat(sfd, "link-to-production", 0);
	unlinkat(sfd, "link-to-sub", 0);
	if (!abs[0] || symlinkat(abs, sfd, "link-to-production") < 0) {
		good = 0;
	} else {
		pathf(t, sizeof(t), "%s/sub", abs);
		if (symlinkat(t, sfd, "link-to-sub") < 0)
			good = 0;
	}
	if (guard_prodset_load(NULL, &ps, &e) ||
	    guard_prodset_add(ps, "planted-production", sfd, "validate self-test", &e)) {
		json_array_append_new(cases, json_pack("{s:s, s:s}", "how", "setup", "error", e.msg));
		good = 0;
		goto out;
	}
	/* The control: a directory that is not production must be allowed. */
	{
		guard_held h;
		int rc = guard_target(NULL, ps, "benign", sfd, "validate", "target", &h, &e);

		guard_held_close(&h);
		json_array_append_new(cases, json_pack("{s:s, s:s, s:b}", "how", "control (benign)",
						       "target", "benign", "refused", rc != 0));
		if (rc)
			good = 0;
	}
	good &= refused(ps, "direct", "planted-production", sfd, cases);
	good &= refused(ps, "symlink", "link-to-production", sfd, cases);
	/* The kernel's "..": link-to-sub/.. is planted-production, whatever the spelling says. */
	good &= refused(ps, "symlink then ..", "link-to-sub/../new-file", sfd, cases);
	good &= refused(ps, "dotdot", "benign/../planted-production/", sfd, cases);
	good &= refused(ps, "trailing slash", "planted-production/", sfd, cases);
	good &= refused(ps, "does not exist yet, inside", "planted-production/a/b", sfd, cases);
	good &= refused(ps, "does not exist yet, through a symlink", "link-to-production/new",
			sfd, cases);
	if (linkat(sfd, "planted-production/data", sfd, "benign/hardlink", 0) == 0) {
		good &= refused(ps, "hard link inside target", "benign", sfd, cases);
		good &= refused(ps, "hard link as the target", "benign/hardlink", sfd, cases);
		unlinkat(sfd, "benign/hardlink", 0);
	} else {
		good = 0;
	}
	/* A relative path, resolved from another directory than the one it was written for. */
	bfd = openat(sfd, "benign", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (bfd >= 0)
		good &= refused(ps, "relative path from another directory", "../planted-production",
				bfd, cases);
	fd = openat(sfd, "planted-production", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		pathf(t, sizeof(t), "/proc/self/fd/%d", fd);
		good &= refused(ps, "/proc/self/fd", t, AT_FDCWD, cases);
		pathf(t, sizeof(t), "/proc/self/fd/%d/new", fd);
		good &= refused(ps, "/proc/self/fd, not existing yet", t, AT_FDCWD, cases);
		close(fd);
	}
	if (mount(prod, mnt, NULL, MS_BIND, NULL) == 0) {
		good &= refused(ps, "bind mount", "bind", sfd, cases);
		good &= refused(ps, "bind mount, not existing yet", "bind/new", sfd, cases);
		umount2(mnt, MNT_DETACH);
	} else {
		json_array_append_new(cases, json_pack("{s:s, s:s}", "how", "bind mount", "not_tested",
						       strerror(errno)));
	}
	/* Fail closed: a walk past its limit refuses a directory it could not finish. */
	{
		const char *old = getenv("COLDSTUDY_GUARD_WALK_MAX");
		char keep[64];

		pathf(keep, sizeof(keep), "%s", old ? old : "");
		mkdirat(sfd, "benign/a", 0755);
		mkdirat(sfd, "benign/b", 0755);
		setenv("COLDSTUDY_GUARD_WALK_MAX", "1", 1);
		good &= refused(ps, "walk past its limit", "benign", sfd, cases);
		if (old)
			setenv("COLDSTUDY_GUARD_WALK_MAX", keep, 1);
		else
			unsetenv("COLDSTUDY_GUARD_WALK_MAX");
		unlinkat(sfd, "benign/a", AT_REMOVEDIR);
		unlinkat(sfd, "benign/b", AT_REMOVEDIR);
	}
out:
	if (bfd >= 0)
		close(bfd);
	guard_prodset_free(ps);
	unlinkat(sfd, "link-to-production", 0);
	unlinkat(sfd, "link-to-sub", 0);
	unlinkat(sfd, "planted-production/data", 0);
	unlinkat(sfd, "planted-production/sub", AT_REMOVEDIR);
	unlinkat(sfd, "planted-production", AT_REMOVEDIR);
	unlinkat(sfd, "benign", AT_REMOVEDIR);
	unlinkat(sfd, "bind", AT_REMOVEDIR);
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

static json_t *check_clone(const json_t *study, const char *study_dir, int study_fd,
			   const char *scratch, int *ok)
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
	rc = harness_clone(src, cl, study_dir, &info, &e);
	if (rc) {
		json_object_set_new(d, "clone_error", json_string(e.msg));
		good = 0;
	} else {
		json_object_set_new(d, "method", json_string(info.method));
		rc = guard_clone(NULL, study_dir, cl, "validate", 1, NULL, &e);
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
			rc = guard_clone(NULL, study_dir, cp, "validate", 0, NULL, &e);
			json_object_set_new(d, "copied_marker_refused", json_boolean(rc == CS_EXIT_REFUSED));
			if (rc != CS_EXIT_REFUSED)
				good = 0;
		} else {
			good = 0;
		}
		/* A marker edited to fit the copy (its dev and ino), without the key, must be refused. */
		{
			json_t *m = NULL;
			struct stat cst;
			char *txt = NULL;

			if (cs_json_load_file(m1, 1u << 20, &m, NULL) == 0 && stat(cp, &cst) == 0) {
				json_object_set_new(m, "dev", json_integer((json_int_t) cst.st_dev));
				json_object_set_new(m, "ino", json_integer((json_int_t) cst.st_ino));
				txt = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS);
			}
			if (txt && cs_write_file_atomic(m2, txt, strlen(txt), 0444, NULL) == 0) {
				rc = guard_clone(NULL, study_dir, cp, "validate", 0, NULL, &e);
				json_object_set_new(d, "forged_marker_refused",
						    json_boolean(rc == CS_EXIT_REFUSED));
				if (rc != CS_EXIT_REFUSED)
					good = 0;
			} else {
				good = 0;
			}
			free(txt);
			json_decref(m);
		}
		free(buf);
	}
	json_object_foreach(json_object_get(study, "indexes"), k, ix) {
		const char *c = json_string_value(json_object_get(ix, "clone"));
		guard_held h;

		if (!c || guard_hold(c, study_fd, &h, &e))
			continue;
		if (!h.exists) {
			guard_held_close(&h);
			continue;
		}
		rc = guard_clone(NULL, study_dir, guard_held_via(&h), "validate", 1, NULL, &e);
		guard_held_close(&h);
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

/*
 * One can-fail:Hn record per hypothesis; a binding one that cannot fail is
 * refused (exit 3, a refusal record naming each). 0 or an exit code.
 */
static int check_can_fail(vctx *v, const json_t *study, cs_err *e)
{
	json_t *res = json_array(), *r;
	char ids[512] = "", first[CS_ERR_MAX] = "";
	size_t i, n = 0;
	int refuse = 0, rc;

	rc = harness_can_fail(v->l, study, res, &refuse, e);
	json_array_foreach(res, i, r) {
		const char *id = json_string_value(json_object_get(r, "hypothesis"));
		int passed = json_is_true(json_object_get(r, "passed"));
		json_t *d = json_object_get(r, "detail");

		if (rc)
			break;
		if (!passed) {
			size_t len = strlen(ids);

			snprintf(ids + len, sizeof(ids) - len, "%s%s", n++ ? ", " : "", id);
			if (!first[0])
				snprintf(first, sizeof(first), "%s: %s", id,
					 json_string_value(json_array_get(json_object_get(d, "findings"), 0))
						 ?: "?");
		}
		rc = record(v, json_string_value(json_object_get(r, "check")), passed, json_incref(d), e);
	}
	json_decref(res);
	if (!rc && refuse)
		rc = guard_refuse(v->l, "can-fail", "validate", ids, e,
				  "%zu hypothes%s cannot fail (register %s descriptive, or change the "
				  "design): %s",
				  n, n == 1 ? "is" : "es", n == 1 ? "it" : "them", first);
	return rc;
}

/*
 * One power:Hn record per hypothesis decided by an interval; a binding one
 * below power 0.8 and not registered underpowered is refused (exit 3, a
 * refusal record naming each). 0 or an exit code.
 */
static int check_power(vctx *v, const json_t *study, cs_err *e)
{
	json_t *res = json_array(), *r;
	char ids[512] = "", first[CS_ERR_MAX] = "";
	size_t i, n = 0;
	int refuse = 0, rc;

	rc = harness_power(v->l, study, NULL, res, &refuse, e);
	json_array_foreach(res, i, r) {
		const char *id = json_string_value(json_object_get(r, "hypothesis"));
		json_t *d = json_object_get(r, "detail");

		if (rc)
			break;
		if (!json_is_true(json_object_get(r, "passed"))) {
			size_t len = strlen(ids);

			snprintf(ids + len, sizeof(ids) - len, "%s%s", n++ ? ", " : "", id);
			if (!first[0] && json_is_number(json_object_get(d, "power")))
				snprintf(first, sizeof(first),
					 "%s: power %.2f with %lld runs a side (sd_log %.3g; %s)", id,
					 json_number_value(json_object_get(d, "power")),
					 (long long) json_integer_value(json_object_get(d, "replicates")),
					 json_number_value(json_object_get(d, "sd_log")),
					 json_is_integer(json_object_get(d, "replicates_for_power_0.9"))
						 ? "see replicates_for_power_0.9"
						 : "no replicate count reaches 0.9");
			else if (!first[0])
				snprintf(first, sizeof(first), "%s: %s", id,
					 json_string_value(json_object_get(d, "why")) ?: "?");
		}
		rc = record(v, json_string_value(json_object_get(r, "check")),
			    json_is_true(json_object_get(r, "passed")), json_incref(d), e);
	}
	json_decref(res);
	if (!rc && n)
		rc = guard_refuse(v->l, "power", "validate", ids, e,
				  "%zu hypothes%s below power %.1f (register more replicates, or "
				  "underpowered with a rationale): %s",
				  n, n == 1 ? "is" : "es", HARNESS_POWER_MIN, first);
	return rc;
}

/*
 * One model-check:Hn record per hypothesis (modelcheck.c): what decides
 * each comparison of its rules on the plan's runs, and whether the device
 * model's parameters alone decide it (a model check, never confirmatory
 * evidence). A classification, never a refusal: passed is always true.
 */
static int check_model(vctx *v, const json_t *study, cs_err *e)
{
	json_t *res = json_array(), *r;
	size_t i;
	int rc;

	rc = harness_model_checks(v->l, study, res, e);
	json_array_foreach(res, i, r) {
		if (rc)
			break;
		rc = record(v, json_string_value(json_object_get(r, "check")), 1,
			    json_incref(json_object_get(r, "detail")), e);
	}
	json_decref(res);
	return rc;
}

int harness_validate(const char *dir, const harness_validate_opts *o, cs_err *e)
{
	vctx v = {0};
	json_t *study = NULL, *d;
	guard_held sh, xh;
	guard_prodset *ps = NULL;
	int made_scratch = 0;
	char scratch[PATH_MAX], file[PATH_MAX + 16];
	cs_err le = {0};
	int rc, ok, avail;

	guard_held_init(&sh);
	guard_held_init(&xh);
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
	/*
	 * study.json's paths are the study folder's. The scratch directory must
	 * be new and outside production: it is checked, made beneath its held
	 * parent, used only through the hold, and removed by name in that parent.
	 */
	rc = guard_hold(dir, AT_FDCWD, &sh, e);
	if (rc)
		goto out;
	rc = guard_prodset_load(v.l, &ps, e);
	if (rc)
		goto out;
	{
		/* the study's own datasets are read by its runs: checked as a run spec's are */
		const char *k;
		json_t *ds;

		json_object_foreach(json_object_get(study, "datasets"), k, ds) {
			char role[160];

			snprintf(role, sizeof(role), "$.datasets.%s", k);
			if (json_is_string(ds) && (rc = guard_dataset(v.l, ps, json_string_value(ds),
								     "validate", role, e)))
				goto out;
		}
	}
	rc = guard_target(v.l, ps,
			  json_is_string(json_object_get(study, "scratch_dir"))
				  ? json_string_value(json_object_get(study, "scratch_dir"))
				  : ".validate",
			  sh.fd, "validate", "scratch_dir", &xh, e);
	if (rc)
		goto out;
	if (xh.exists) {
		rc = guard_refuse(v.l, "scratch-new", "validate", xh.shown, e,
				  "scratch_dir %s exists: validate makes it new and removes it (remove "
				  "it, or name a new one)",
				  xh.shown);
		goto out;
	}
	rc = guard_held_mkdirs(&xh, e);
	if (rc)
		goto out;
	made_scratch = 1;
	pathf(scratch, sizeof(scratch), "%s", guard_held_via(&xh));
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
	d = check_eviction(study, ledger_dir(v.l), sh.fd, ps, file, &ok);
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
	d = check_guard(xh.fd, scratch, &ok);
	if ((rc = record(&v, "guard_production", ok, d, e)))
		goto out;
	d = check_clone(study, dir, sh.fd, scratch, &ok);
	if ((rc = record(&v, "clone_marker", ok, d, e)))
		goto out;
	d = check_throttle(v.l, study, file, &ok);
	if (d && (rc = record(&v, "throttle", ok, d, e)))
		goto out;
	d = harness_host_capture(scratch);
	if ((rc = record(&v, "host", d != NULL, d, e)))
		goto out;
	rc = check_can_fail(&v, study, e);
	if (!rc)
		rc = check_power(&v, study, e);
	if (!rc)
		rc = check_model(&v, study, e);
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
	if (made_scratch) {
		unlink(file);
		guard_held_rmdir(&xh);
	}
	guard_held_close(&xh);
	guard_held_close(&sh);
	guard_prodset_free(ps);
	json_decref(v.waived);
	json_decref(study);
	ledger_close(v.l);
	return rc;
}
