/*
 * live.c - runs that did not finish: a liveness marker held by every run,
 * and the sweep that the next command on the study makes.
 *
 * Every run_start ends in the ledger either with its run record or with a
 * deviation naming it. A run that stops on its own (SIGINT, SIGTERM, an
 * error, a refusal) writes that deviation itself; one that is killed
 * (SIGKILL, the memory cgroup's OOM killer, a crash, the machine going
 * down) cannot. So before its run_start a run creates DIR/running/RID and
 * holds an exclusive flock(2) on it for its whole life; the file says the
 * process id and, once made, the run's own memory cgroup and cap. The
 * kernel drops the lock when the process dies, however it dies.
 *
 * harness_reap_unfinished, called by the ledger each time a command opens
 * the study (ledger_on_open), looks for run_start records with neither a
 * run record nor a deviation: a marker still locked is a live run (left
 * alone); an unlocked marker, or none (a run of a coldstudy from before
 * markers), is a dead one. For a dead run it reads the cause from the
 * run's memory cgroup (v2 memory.events, v1 memory.oom_control: the
 * oom_kill count) -- "oom_kill" when the kernel's OOM killer fired there,
 * else "killed or crashed" -- and appends one deviation
 * {"because","run_id","access_state","cause",...}, checked again inside
 * the write transaction so two commands sweeping at once write it once.
 * Then the cgroup and the marker go; for a PostgreSQL run (pgrun.c) also
 * what is left of its private server: the processes in the server's
 * cgroup, the cgroup, and the private socket directory
 * (harness_pg_leftovers).
 *
 * Error convention: begin returns 0 or CS_EXIT_* with e filled; the sweep
 * reports on stderr and never fails the command that opened the study.
 */
#include "harness.h"
#include "harness_int.h"

#include "ledger.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIVE_DIR "running"
#define LIVE_MAX 4096 /* a marker is a small JSON object */

void harness_live_init(harness_live *lv)
{
	memset(lv, 0, sizeof(*lv));
	lv->fd = -1;
	lv->dirfd = -1;
}

/* Replace the marker's content with doc (through the held descriptor). */
static int live_write(harness_live *lv, const json_t *doc)
{
	char *s = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	size_t n = s ? strlen(s) : 0;
	int rc = 0;

	if (!s)
		return -ENOMEM;
	if (ftruncate(lv->fd, 0) < 0 || pwrite(lv->fd, s, n, 0) != (ssize_t) n)
		rc = -errno;
	free(s);
	return rc;
}

int harness_live_begin(const char *dir, const char *run_id, harness_live *lv, cs_err *e)
{
	int dfd = -1, rc;
	json_t *doc;

	harness_live_init(lv);
	snprintf(lv->run_id, sizeof(lv->run_id), "%s", run_id);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", dir, strerror(errno));
	if (mkdirat(dfd, LIVE_DIR, 0755) < 0 && errno != EEXIST) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s/%s: %s", dir, LIVE_DIR, strerror(errno));
		close(dfd);
		return rc;
	}
	lv->dirfd = openat(dfd, LIVE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (lv->dirfd < 0)
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s/%s: %s", dir, LIVE_DIR, strerror(errno));
	lv->fd = openat(lv->dirfd, run_id, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (lv->fd < 0) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s/%s/%s: %s", dir, LIVE_DIR, run_id,
				strerror(errno));
		harness_live_end(lv);
		return rc;
	}
	if (flock(lv->fd, LOCK_EX | LOCK_NB) < 0) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL,
				"%s/%s/%s: another process holds run %s (two runs started at once?)",
				dir, LIVE_DIR, run_id, run_id);
		close(lv->fd);
		lv->fd = -1;
		harness_live_end(lv);
		return rc;
	}
	doc = json_pack("{s:s, s:i}", "run_id", run_id, "pid", (int) getpid());
	rc = doc ? live_write(lv, doc) : -ENOMEM;
	json_decref(doc);
	if (rc) {
		harness_live_end(lv);
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s/%s/%s: %s", dir, LIVE_DIR, run_id,
				  strerror(-rc));
	}
	return 0;
}

void harness_live_cgroup(harness_live *lv, const json_t *memcap)
{
	json_t *doc;

	if (lv->fd < 0)
		return;
	doc = json_pack("{s:s, s:i, s:O}", "run_id", lv->run_id, "pid", (int) getpid(), "mem_cap",
			memcap);
	if (doc)
		(void) live_write(lv, doc); /* best effort: without it the cause is only "killed" */
	json_decref(doc);
}

void harness_live_postgres(harness_live *lv, const char *sockdir, int port, const char *cgdir)
{
	json_t *doc;

	if (lv->fd < 0)
		return;
	doc = json_pack("{s:s, s:i, s:{s:s, s:i, s:s?}}", "run_id", lv->run_id, "pid",
			(int) getpid(), "postgres", "sockdir", sockdir, "port", port, "cgroup",
			cgdir && cgdir[0] ? cgdir : NULL);
	if (doc)
		(void) live_write(lv, doc); /* best effort: without it the leftovers stay */
	json_decref(doc);
}

void harness_live_end(harness_live *lv)
{
	if (lv->fd >= 0) {
		(void) unlinkat(lv->dirfd, lv->run_id, 0);
		close(lv->fd); /* drops the lock */
	}
	if (lv->dirfd >= 0)
		close(lv->dirfd);
	lv->fd = -1;
	lv->dirfd = -1;
}

/* ---- the sweep ---- */

typedef struct ids_ctx {
	json_t *starts; /* [run_id] in order */
	json_t *done;   /* {run_id: true}: a run record or a deviation names it */
} ids_ctx;

static int ids_cb(const ledger_record *r, void *ud)
{
	ids_ctx *c = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	const char *id = json_string_value(json_object_get(p, "run_id"));

	if (id) {
		if (!strcmp(r->kind, "run_start"))
			json_array_append_new(c->starts, json_string(id));
		else
			json_object_set_new(c->done, id, json_true());
	}
	json_decref(p);
	return 0;
}

static int collect(ledger *l, ids_ctx *c, int starts, cs_err *e)
{
	if (starts && ledger_foreach(l, "run_start", ids_cb, c, e))
		return -1;
	if (ledger_foreach(l, "run", ids_cb, c, e) || ledger_foreach(l, "deviation", ids_cb, c, e))
		return -1;
	return 0;
}


/* The limit a cgroup had at the end (v2 memory.max, v1 memory.limit_in_bytes); -1: none or "max". */
static int64_t cgroup_limit(const char *cgdir)
{
	static const char *const files[] = {"memory.max", "memory.limit_in_bytes", NULL};

	for (size_t i = 0; files[i]; i++) {
		char path[1200];
		long long v;
		FILE *f;
		int ok;

		snprintf(path, sizeof(path), "%s/%s", cgdir, files[i]);
		f = fopen(path, "re");
		if (!f)
			continue;
		ok = fscanf(f, "%lld", &v) == 1;
		fclose(f);
		return ok ? v : -1;
	}
	return -1;
}

/* What killed the run: fills d with cause and detail; the cgroup directory (if any) into cg. */
static void find_cause(const json_t *marker, json_t *d, const char *run_id, char *cg, size_t cap)
{
	const json_t *mc = json_object_get(marker, "mem_cap");
	const char *path = json_string_value(json_object_get(mc, "path"));
	const json_t *req = json_object_get(mc, "requested_bytes");
	int64_t kills = path ? harness_cgroup_oom_kills(path) : -1;
	int pid = (int) json_integer_value(json_object_get(marker, "pid"));
	char because[512];

	cg[0] = '\0';
	if (path)
		snprintf(cg, cap, "%s", path);
	if (pid > 0)
		json_object_set_new(d, "pid", json_integer(pid));
	if (path)
		json_object_set_new(d, "cgroup", json_string(path));
	if (json_is_integer(req))
		json_object_set_new(d, "mem_cap_bytes", json_incref((json_t *) req));
	int64_t lim = path && json_is_integer(req) ? cgroup_limit(path) : -1;
	char limtxt[96] = "";

	if (kills >= 0)
		json_object_set_new(d, "oom_kill", json_integer(kills));
	/* what the kernel held it to at the end (someone may have lowered the cap) */
	if (lim > 0) {
		json_object_set_new(d, "limit_bytes", json_integer(lim));
		if (lim != json_integer_value(req))
			snprintf(limtxt, sizeof(limtxt), ", its limit then %lld bytes", (long long) lim);
	}
	if (kills > 0) {
		if (json_is_integer(req))
			snprintf(because, sizeof(because),
				 "run %s did not finish: OOM kill under mem_cap_bytes %lld (its memory "
				 "cgroup counted %lld oom_kill%s); no run record",
				 run_id, (long long) json_integer_value(req), (long long) kills, limtxt);
		else
			snprintf(because, sizeof(because),
				 "run %s did not finish: OOM kill (its memory cgroup counted %lld "
				 "oom_kill); no run record",
				 run_id, (long long) kills);
		json_object_set_new(d, "cause", json_string("oom_kill"));
	} else {
		snprintf(because, sizeof(because),
			 "run %s did not finish: killed or crashed (%s%s); no run record", run_id,
			 json_object_size(marker) ? "its process is gone" : "no liveness marker",
			 json_object_size(marker) && path ? ", no OOM kill in its memory cgroup" : "");
		json_object_set_new(d, "cause", json_string("killed or crashed"));
	}
	json_object_set_new(d, "because", json_string(because));
}

/* Remove a dead run's cgroup (only coldstudy-PID, only when its process is gone). */
static void remove_cgroup(const char *cg)
{
	const char *base = strrchr(cg, '/');
	char *end;
	long pid;

	if (!base || strncmp(base + 1, "coldstudy-", 10))
		return;
	errno = 0;
	pid = strtol(base + 11, &end, 10);
	if (errno || *end || pid <= 0 || (kill((pid_t) pid, 0) == 0 || errno != ESRCH))
		return;
	(void) rmdir(cg);
}

/* Read a marker (held fd) as JSON; an empty object when unreadable. */
static json_t *read_marker(int fd)
{
	char buf[LIVE_MAX + 1];
	ssize_t n = pread(fd, buf, LIVE_MAX, 0);
	json_t *j;

	if (n <= 0)
		return json_object();
	buf[n] = '\0';
	j = json_loads(buf, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return json_object();
	}
	return j;
}

/* One dead run: the deviation (once), then its cgroup and marker go. */
static void reap_one(ledger *l, int dirfd, const char *run_id, int fd)
{
	json_t *marker = fd >= 0 ? read_marker(fd) : json_object();
	json_t *d = json_object();
	ids_ctx c = {json_array(), json_object()};
	char cg[1100];
	cs_err e = {0};
	int64_t seq = 0;
	int rc;

	find_cause(marker, d, run_id, cg, sizeof(cg));
	json_object_set_new(d, "run_id", json_string(run_id));
	json_object_set_new(d, "found_by", json_string("the next command on the study"));
	rc = ledger_begin(l, &e);
	if (!rc) {
		/* Under the write lock: another command may have swept it meanwhile. */
		if (collect(l, &c, 0, &e)) {
			rc = e.code ? e.code : CS_EXIT_INTERNAL;
		} else if (!json_object_get(c.done, run_id)) {
			json_object_set_new(d, "access_state", json_string(ledger_access_state(l)));
			rc = ledger_append(l, "deviation", d, &seq, &e);
		}
		if (rc)
			ledger_rollback(l);
		else
			rc = ledger_commit(l, &e);
	}
	if (rc)
		fprintf(stderr, "coldstudy: warning: run %s did not finish, and the deviation was not "
				"recorded: %s\n", run_id, e.msg);
	else if (seq)
		fprintf(stderr, "coldstudy: %s (deviation recorded, seq %lld)\n",
			json_string_value(json_object_get(d, "because")), (long long) seq);
	if (!rc && json_is_object(json_object_get(marker, "postgres"))) {
		/* a PostgreSQL run's server (fast-shut down at the run's death) and socket directory */
		const json_t *pg = json_object_get(marker, "postgres");
		const char *sd = json_string_value(json_object_get(pg, "sockdir"));
		int r = harness_pg_leftovers(
			sd, (int) json_integer_value(json_object_get(pg, "port")),
			json_string_value(json_object_get(pg, "cgroup")),
			(pid_t) json_integer_value(json_object_get(marker, "pid")));

		if (r)
			fprintf(stderr, "coldstudy: warning: run %s's private socket directory %s: "
					"not removed: %s\n", run_id, sd ? sd : "?", strerror(-r));
		else
			fprintf(stderr, "coldstudy: run %s's private socket directory %s removed\n",
				run_id, sd ? sd : "?");
		/* its server gone, the throttle cgroup it was in is empty: removed now (throttle.c) */
		harness_throttle_reap();
	}
	if (!rc) {
		if (cg[0])
			remove_cgroup(cg);
		if (fd >= 0 && dirfd >= 0)
			(void) unlinkat(dirfd, run_id, 0);
	}
	json_decref(c.starts);
	json_decref(c.done);
	json_decref(marker);
	json_decref(d);
}

/* Markers of runs that did finish (killed between their record and the unlink). */
static void sweep_markers(int dirfd, const json_t *done)
{
	int dfd = dirfd >= 0 ? dup(dirfd) : -1;
	DIR *dd = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *de;

	if (!dd) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	while ((de = readdir(dd))) {
		int fd;

		if (de->d_name[0] == '.' || !json_object_get(done, de->d_name))
			continue;
		fd = openat(dirfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			(void) unlinkat(dirfd, de->d_name, 0);
		close(fd);
	}
	closedir(dd);
}

void harness_reap_unfinished(ledger *l)
{
	ids_ctx c = {json_array(), json_object()};
	int dfd, dirfd = -1;
	json_t *id;
	size_t i;
	cs_err e = {0};

	if (!c.starts || !c.done || collect(l, &c, 1, &e))
		goto out;
	dfd = open(ledger_dir(l), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		dirfd = openat(dfd, LIVE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dfd);
	}
	json_array_foreach(c.starts, i, id) {
		const char *rid = json_string_value(id);
		int fd = -1;

		if (json_object_get(c.done, rid))
			continue;
		if (dirfd >= 0)
			fd = openat(dirfd, rid, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd); /* locked: the run is alive */
			continue;
		}
		reap_one(l, dirfd, rid, fd);
		if (fd >= 0)
			close(fd);
	}
	if (dirfd >= 0)
		sweep_markers(dirfd, c.done);
out:
	if (dirfd >= 0)
		close(dirfd);
	json_decref(c.starts);
	json_decref(c.done);
}
