/*
 * sample.c - the samplers that run beside a run, one thread each, as the
 * blog seed captured its runs: the block device's /sys/block stat every
 * second (iostat -x's r/s, rkB/s, r_await, aqu-sz, %util), memory every
 * 5 s (the cgroup's usage and the process's RSS), and Prometheus text
 * metrics from a URL every 10 s (libcurl, GET only: read-only).
 *
 * Each thread samples at once when started, then every period, and once
 * more when stopped, so even a run shorter than a period has a first and
 * a last row. Threads sleep on a condition variable so that stop is
 * prompt. Series are bounded (SAMPLE_ROWS_MAX rows; later rows are
 * counted as dropped) and handed to the run record as raw blobs.
 *
 * The iostat arithmetic is iostat's (sysstat rd_stats): over an interval
 * of dt seconds, r/s = dreads/dt, rkB/s = dsectors/2/dt, r_await =
 * dread_ms/dreads, aqu-sz = dtime_in_queue/(dt*1000), %util =
 * dio_ticks/(dt*1000)*100.
 */
#include "harness_int.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SAMPLE_ROWS_MAX 100000
#define PROM_BODY_MAX (4u << 20)  /* a scrape larger than 4 MiB is cut */
#define PROM_SAMPLES_MAX 5000     /* samples kept per scrape */

json_t *harness_iostat_row(const cv_blkstat *a, const cv_blkstat *b, double t_s)
{
	double dt = (double) (b->t_ns - a->t_ns) / 1e9;
	uint64_t dr = b->reads - a->reads;
	json_t *r;

	if (dt <= 0)
		dt = 1e-9;
	r = json_object();
	json_object_set_new(r, "t_s", json_real(t_s));
	json_object_set_new(r, "r_s", json_real((double) dr / dt));
	json_object_set_new(r, "rkB_s", json_real((double) (b->read_sectors - a->read_sectors) / 2.0 / dt));
	json_object_set_new(r, "r_await", dr ? json_real((double) (b->read_ms - a->read_ms) / (double) dr)
					  : json_null());
	json_object_set_new(r, "aqu_sz",
			    json_real((double) (b->time_in_queue_ms - a->time_in_queue_ms) / (dt * 1000.0)));
	json_object_set_new(r, "util",
			    json_real((double) (b->io_ticks_ms - a->io_ticks_ms) / (dt * 1000.0) * 100.0));
	json_object_set_new(r, "reads", json_integer((json_int_t) dr));
	return r;
}

size_t harness_prom_parse(const char *text, size_t len, json_t *obj, size_t cap, size_t *skipped)
{
	size_t n = 0, skip = 0, i = 0;

	while (i < len) {
		size_t end = i, ne;
		char line[2048], *val, *stop;
		double v;

		while (end < len && text[end] != '\n')
			end++;
		ne = end - i;
		if (ne == 0 || text[i] == '#') {
			i = end + 1;
			continue;
		}
		if (ne >= sizeof(line) || n >= cap) {
			skip++;
			i = end + 1;
			continue;
		}
		memcpy(line, text + i, ne);
		line[ne] = '\0';
		i = end + 1;
		if (line[ne - 1] == '\r')
			line[--ne] = '\0';
		/* The name (with labels, which may hold spaces inside quotes) ends at the last '}' or first space. */
		val = strrchr(line, '}');
		val = val ? val + 1 : strchr(line, ' ');
		if (!val || (*val != ' ' && *val != '\t')) {
			skip++;
			continue;
		}
		*val++ = '\0';
		while (*val == ' ' || *val == '\t')
			val++;
		errno = 0;
		v = strtod(val, &stop);
		if (stop == val || errno || (*stop && *stop != ' ' && *stop != '\t') || !line[0]) {
			skip++;
			continue;
		}
		if (v != v || v == 1.0 / 0.0 || v == -1.0 / 0.0) {
			json_object_set_new(obj, line, json_null()); /* NaN/Inf: not a JSON number */
		} else {
			json_object_set_new(obj, line, json_real(v));
		}
		n++;
	}
	if (skipped)
		*skipped = skip;
	return n;
}

/* Our cgroup path for a controller from /proc/self/cgroup ("" for v2's unified line). */
static int cgroup_path(const char *controller, char *out, size_t cap)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[1024];
	int found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2;

		if (!c1 || !(c2 = strchr(c1 + 1, ':')))
			continue;
		*c2 = '\0';
		c2[1 + strcspn(c2 + 1, "\n")] = '\0';
		if ((controller[0] == '\0' && !strcmp(line, "0") && c1[1] == '\0') ||
		    (controller[0] && strstr(c1 + 1, controller))) {
			snprintf(out, cap, "%s", c2 + 1);
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

static int64_t read_i64(const char *path)
{
	FILE *f = fopen(path, "re");
	long long v;

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

int64_t harness_cgroup_memory(char *which, size_t cap)
{
	char cg[512], path[1024];
	int64_t v;

	if (cgroup_path("", cg, sizeof(cg)) == 0) {
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.current", cg);
		v = read_i64(path);
		if (v >= 0) {
			if (which)
				snprintf(which, cap, "v2 memory.current");
			return v;
		}
	}
	if (cgroup_path("memory", cg, sizeof(cg)) == 0) {
		snprintf(path, sizeof(path), "/sys/fs/cgroup/memory%s/memory.usage_in_bytes", cg);
		v = read_i64(path);
		if (v >= 0) {
			if (which)
				snprintf(which, cap, "v1 memory.usage_in_bytes");
			return v;
		}
	}
	return -1;
}

int64_t harness_rss(void)
{
	FILE *f = fopen("/proc/self/statm", "re");
	long long size, res;

	if (!f)
		return -1;
	if (fscanf(f, "%lld %lld", &size, &res) != 2)
		res = -1;
	fclose(f);
	return res < 0 ? -1 : res * (int64_t) sysconf(_SC_PAGESIZE);
}

/* Write a string to a file; 0 or -errno. */
static int write_str(const char *path, const char *s)
{
	FILE *f = fopen(path, "we");
	int rc = 0;

	if (!f)
		return -errno;
	if (fputs(s, f) < 0)
		rc = -EIO;
	if (fclose(f) != 0 && !rc)
		rc = -errno;
	return rc;
}

/* The "oom_kill N" count of a cgroup directory (v2 memory.events, v1 memory.oom_control); -1: none. */
int64_t harness_cgroup_oom_kills(const char *cgdir)
{
	static const char *const files[] = {"memory.events", "memory.oom_control", NULL};

	for (size_t i = 0; files[i]; i++) {
		char path[1200], line[256];
		FILE *f;
		int64_t n = -1;

		snprintf(path, sizeof(path), "%s/%s", cgdir, files[i]);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			long long v;

			if (sscanf(line, "oom_kill %lld", &v) == 1) {
				n = v;
				break;
			}
		}
		fclose(f);
		if (n >= 0)
			return n;
	}
	return -1;
}

/*
 * Remove the coldstudy-PID cgroups a killed run left under parent (kill -9
 * skips harness_memcap_release): only those whose process is gone, and
 * rmdir refuses any that still holds a task. One that counted an OOM kill
 * stays until the next command on its study has read the count and
 * recorded the run's deviation (live.c). Returns how many went.
 */
static int sweep_stale(const char *parent)
{
	DIR *d = opendir(parent);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char *end, path[1400];
		long pid;

		if (strncmp(de->d_name, "coldstudy-", 10))
			continue;
		errno = 0;
		pid = strtol(de->d_name + 10, &end, 10);
		if (errno || *end || pid <= 0 || pid == (long) getpid())
			continue;
		if (kill((pid_t) pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", parent, de->d_name);
		/* an OOM-killed run's cgroup is its study's evidence: the reaper (live.c) removes it */
		if (harness_cgroup_oom_kills(path) > 0)
			continue;
		if (rmdir(path) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/*
 * Make the memory cgroup coldstudy-PID beside this process's own (stale
 * ones of dead processes swept first) into dir; file gets its limit
 * file's path. 0, or -1 with why in r.
 */
static int memcg_make(json_t *r, char *dir, size_t dcap, char *file, size_t fcap)
{
	char cg[512];

	if (cgroup_path("", cg, sizeof(cg)) == 0 &&
	    access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0) {
		snprintf(dir, dcap, "/sys/fs/cgroup%s/coldstudy-%d", strcmp(cg, "/") ? cg : "",
			 (int) getpid());
		json_object_set_new(r, "cgroup", json_string("v2"));
		snprintf(file, fcap, "%s/memory.max", dir);
	} else if (cgroup_path("memory", cg, sizeof(cg)) == 0) {
		snprintf(dir, dcap, "/sys/fs/cgroup/memory%s/coldstudy-%d",
			 strcmp(cg, "/") ? cg : "", (int) getpid());
		json_object_set_new(r, "cgroup", json_string("v1"));
		snprintf(file, fcap, "%s/memory.limit_in_bytes", dir);
	} else {
		json_object_set_new(r, "applied", json_false());
		json_object_set_new(r, "why", json_string("no memory cgroup found"));
		return -1;
	}
	{
		char parent[1024], *sl;

		snprintf(parent, sizeof(parent), "%s", dir);
		sl = strrchr(parent, '/');
		if (sl)
			*sl = '\0';
		json_object_set_new(r, "stale_removed", json_integer(sweep_stale(parent)));
	}
	if (mkdir(dir, 0755) < 0) {
		json_object_set_new(r, "applied", json_false());
		json_object_set_new(r, "why", json_sprintf("mkdir %s: %s", dir, strerror(errno)));
		return -1;
	}
	return 0;
}

json_t *harness_memcap_apply(uint64_t bytes, char *cleanup_path, size_t cap)
{
	char dir[1024], file[1100], num[32], pid[32];
	json_t *r = bytes ? json_pack("{s:I}", "requested_bytes", (json_int_t) bytes)
			  : json_pack("{s:n}", "requested_bytes");
	int rc = 0;

	cleanup_path[0] = '\0';
	snprintf(num, sizeof(num), "%llu", (unsigned long long) bytes);
	snprintf(pid, sizeof(pid), "%d", (int) getpid());
	if (memcg_make(r, dir, sizeof(dir), file, sizeof(file)))
		return r;
	snprintf(cleanup_path, cap, "%s", dir);
	if (bytes) /* without a cap: a cgroup of its own, unlimited, for the peak counter */
		rc = write_str(file, num);
	if (!rc) {
		snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
		rc = write_str(file, pid);
	}
	json_object_set_new(r, "applied", json_boolean(!rc && bytes));
	json_object_set_new(r, "own_cgroup", json_boolean(!rc));
	json_object_set_new(r, "path", json_string(dir));
	if (rc)
		json_object_set_new(r, "why", json_sprintf("%s: %s", file, strerror(-rc)));
	return r;
}

json_t *harness_server_cgroup(char *dir, size_t cap)
{
	char file[1100];
	json_t *r = json_pack("{s:n}", "requested_bytes");

	dir[0] = '\0';
	if (!r || memcg_make(r, dir, cap, file, sizeof(file))) {
		dir[0] = '\0';
		return r;
	}
	json_object_set_new(r, "applied", json_false());
	json_object_set_new(r, "own_cgroup", json_true());
	json_object_set_new(r, "path", json_string(dir));
	return r;
}

int64_t harness_cgroup_peak(const char *cgdir, char *which, size_t cap)
{
	static const char *const files[] = {"memory.peak", "memory.max_usage_in_bytes", NULL};

	for (size_t i = 0; cgdir && cgdir[0] && files[i]; i++) {
		char path[1200];
		int64_t v;

		snprintf(path, sizeof(path), "%s/%s", cgdir, files[i]);
		v = read_i64(path);
		if (v >= 0) {
			if (which)
				snprintf(which, cap, "%s", files[i]);
			return v;
		}
	}
	return -1;
}

void harness_memcap_release(const char *cleanup_path)
{
	char parent[1024], file[1100], pid[32], *s;

	if (!cleanup_path || !cleanup_path[0])
		return;
	snprintf(parent, sizeof(parent), "%s", cleanup_path);
	s = strrchr(parent, '/');
	if (s)
		*s = '\0';
	snprintf(pid, sizeof(pid), "%d", (int) getpid());
	snprintf(file, sizeof(file), "%s/cgroup.procs", parent);
	write_str(file, pid);
	rmdir(cleanup_path);
}

/* ---- the threads ---- */

typedef struct series {
	json_t *rows;
	size_t dropped;
	size_t tries, failed;   /* samples attempted, and those that got nothing usable */
	char last_error[160];   /* why the last failure failed */
} series;

static const char *const series_name[3] = {"iostat", "memory", "prometheus"};

struct harness_samplers {
	harness_sampler_opts o;
	cv_blkdev dev;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	uint64_t t0;
	pthread_t th[3];
	int started[3];
	series s[3];
	harness_mem_peak peak;
	cv_blkstat last;
	int have_last;
	CURL *curl;
};

static double since(const harness_samplers *s)
{
	return (double) (cs_mono_ns() - s->t0) / 1e9;
}

static void add_row(harness_samplers *s, int which, json_t *row)
{
	pthread_mutex_lock(&s->mu);
	if (json_array_size(s->s[which].rows) < SAMPLE_ROWS_MAX)
		json_array_append_new(s->s[which].rows, row);
	else {
		s->s[which].dropped++;
		json_decref(row);
	}
	pthread_mutex_unlock(&s->mu);
}

/* Count one attempt of series which; why non-NULL: it failed. */
static void tally(harness_samplers *s, int which, const char *why)
{
	pthread_mutex_lock(&s->mu);
	s->s[which].tries++;
	if (why) {
		s->s[which].failed++;
		snprintf(s->s[which].last_error, sizeof(s->s[which].last_error), "%s", why);
	}
	pthread_mutex_unlock(&s->mu);
	if (why && s->o.on_fail)
		s->o.on_fail(s->o.on_fail_ud, series_name[which], why);
}

static void sample_iostat(harness_samplers *s)
{
	cv_blkstat now;
	int rc = cv_blkdev_stat(&s->dev, &now);

	tally(s, 0, rc ? "cannot read the block device's stat" : NULL);
	if (rc)
		return;
	if (s->have_last)
		add_row(s, 0, harness_iostat_row(&s->last, &now, since(s)));
	s->last = now;
	s->have_last = 1;
}

static void sample_memory(harness_samplers *s)
{
	char which[64] = "";
	int64_t cg = harness_cgroup_memory(which, sizeof(which)), rss = harness_rss();
	json_t *row = json_object();

	json_object_set_new(row, "t_s", json_real(since(s)));
	json_object_set_new(row, "cgroup_bytes", cg >= 0 ? json_integer(cg) : json_null());
	json_object_set_new(row, "rss_bytes", rss >= 0 ? json_integer(rss) : json_null());
	if (which[0])
		json_object_set_new(row, "source", json_string(which));
	tally(s, 1, cg < 0 && rss < 0 ? "neither the cgroup's usage nor RSS could be read" : NULL);
	pthread_mutex_lock(&s->mu);
	if (cg > 0 && (uint64_t) cg > s->peak.cgroup_max)
		s->peak.cgroup_max = (uint64_t) cg;
	if (rss > 0 && (uint64_t) rss > s->peak.rss_max)
		s->peak.rss_max = (uint64_t) rss;
	s->peak.samples++;
	pthread_mutex_unlock(&s->mu);
	add_row(s, 1, row);
}

typedef struct body {
	char *p;
	size_t len;
} body;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	body *b = ud;
	size_t n = size * nmemb, take = n;
	char *np;

	if (b->len + take > PROM_BODY_MAX)
		take = PROM_BODY_MAX - b->len;
	if (!take)
		return n;
	np = realloc(b->p, b->len + take + 1);
	if (!np)
		return 0;
	b->p = np;
	memcpy(b->p + b->len, ptr, take);
	b->len += take;
	b->p[b->len] = '\0';
	return n;
}

static void sample_prometheus(harness_samplers *s)
{
	body b = {NULL, 0};
	json_t *row = json_object(), *m = json_object();
	long status = 0;
	CURLcode cc;

	json_object_set_new(row, "t_s", json_real(since(s)));
	curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, &b);
	cc = curl_easy_perform(s->curl);
	curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK || status != 200) {
		char why[160];

		if (cc != CURLE_OK)
			snprintf(why, sizeof(why), "%s", curl_easy_strerror(cc));
		else
			snprintf(why, sizeof(why), "HTTP %ld", status);
		json_object_set_new(row, "error", json_string(why));
		tally(s, 2, why);
		json_decref(m);
	} else {
		size_t skipped = 0, n = harness_prom_parse(b.p ? b.p : "", b.len, m, PROM_SAMPLES_MAX,
							   &skipped);

		json_object_set_new(row, "samples", json_integer((json_int_t) n));
		json_object_set_new(row, "skipped", json_integer((json_int_t) skipped));
		json_object_set_new(row, "metrics", m);
		/* A 200 with no sample in it (an HTML page, an empty body) is no scrape either. */
		if (!n) {
			char why[160];

			snprintf(why, sizeof(why), "no Prometheus sample in the %zu-byte body (%zu lines skipped)",
				 b.len, skipped);
			json_object_set_new(row, "error", json_string(why));
			tally(s, 2, why);
		} else {
			tally(s, 2, NULL);
		}
	}
	free(b.p);
	add_row(s, 2, row);
}

typedef struct thread_arg {
	harness_samplers *s;
	int which;
} thread_arg;

static void *loop(void *p)
{
	harness_samplers *s = ((thread_arg *) p)->s;
	int which = ((thread_arg *) p)->which;
	double period = which == 0 ? s->o.iostat_s : which == 1 ? s->o.memory_s : s->o.prometheus_s;
	uint64_t next = cs_mono_ns();

	free(p); /* the argument was ours to free once read */
	for (;;) {
		struct timespec ts;
		int stop;

		if (which == 0)
			sample_iostat(s);
		else if (which == 1)
			sample_memory(s);
		else
			sample_prometheus(s);
		next += (uint64_t) (period * 1e9);
		pthread_mutex_lock(&s->mu);
		while (!s->stop) {
			uint64_t now = cs_mono_ns();

			if (now >= next)
				break;
			clock_gettime(CLOCK_REALTIME, &ts);
			{
				uint64_t wait = next - now;

				ts.tv_sec += (time_t) (wait / 1000000000u);
				ts.tv_nsec += (long) (wait % 1000000000u);
				if (ts.tv_nsec >= 1000000000L) {
					ts.tv_sec++;
					ts.tv_nsec -= 1000000000L;
				}
			}
			pthread_cond_timedwait(&s->cv, &s->mu, &ts);
		}
		stop = s->stop;
		pthread_mutex_unlock(&s->mu);
		if (stop)
			break;
	}
	/* The last sample, at stop. */
	if (which == 0)
		sample_iostat(s);
	else if (which == 1)
		sample_memory(s);
	else
		sample_prometheus(s);
	return NULL;
}

int harness_samplers_start(const harness_sampler_opts *o, harness_samplers **out, cs_err *e)
{
	harness_samplers *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	s->o = *o;
	if (s->o.iostat_s <= 0)
		s->o.iostat_s = 1;
	if (s->o.memory_s <= 0)
		s->o.memory_s = 5;
	if (s->o.prometheus_s <= 0)
		s->o.prometheus_s = 10;
	if (o->dev)
		s->dev = *o->dev;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->t0 = cs_mono_ns();
	for (int i = 0; i < 3; i++)
		s->s[i].rows = json_array();
	if (o->prometheus_url) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		s->curl = curl_easy_init();
		if (!s->curl) {
			free(s);
			return cs_err_set(e, CS_EXIT_INTERNAL, "libcurl did not start");
		}
		curl_easy_setopt(s->curl, CURLOPT_URL, o->prometheus_url);
		curl_easy_setopt(s->curl, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(s->curl, CURLOPT_TIMEOUT_MS, 5000L);
		curl_easy_setopt(s->curl, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(s->curl, CURLOPT_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(s->curl, CURLOPT_FOLLOWLOCATION, 0L);
	}
	for (int i = 0; i < 3; i++) {
		thread_arg *a;

		if ((i == 0 && !o->dev) || (i == 2 && !o->prometheus_url))
			continue;
		a = malloc(sizeof(*a));
		if (!a)
			continue;
		a->s = s;
		a->which = i;
		if (pthread_create(&s->th[i], NULL, loop, a) == 0)
			s->started[i] = 1;
		else
			free(a);
	}
	*out = s;
	return 0;
}

/* {"iostat": {...}, ...} for the series that ran, and "failed" in all (new). */
static json_t *health_of(const harness_samplers *s)
{
	json_t *h = json_object();
	size_t failed = 0;

	for (int i = 0; i < 3; i++) {
		const series *x = &s->s[i];
		json_t *one;

		if (!s->started[i])
			continue;
		one = json_pack("{s:I, s:I, s:I, s:I}", "tries", (json_int_t) x->tries, "failed",
				(json_int_t) x->failed, "rows", (json_int_t) json_array_size(x->rows),
				"dropped", (json_int_t) x->dropped);
		if (x->failed)
			json_object_set_new(one, "last_error", json_string(x->last_error));
		json_object_set_new(h, series_name[i], one);
		failed += x->failed;
	}
	json_object_set_new(h, "failed", json_integer((json_int_t) failed));
	return h;
}

void harness_samplers_stop(harness_samplers *s, json_t **iostat, json_t **memory,
			   json_t **prometheus, harness_mem_peak *peak, json_t **health)
{
	json_t **outs[3] = {iostat, memory, prometheus};

	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < 3; i++)
		if (s->started[i])
			pthread_join(s->th[i], NULL);
	if (health)
		*health = health_of(s);
	for (int i = 0; i < 3; i++) {
		if (outs[i])
			*outs[i] = s->s[i].rows;
		else
			json_decref(s->s[i].rows);
	}
	if (peak)
		*peak = s->peak;
	if (s->curl)
		curl_easy_cleanup(s->curl);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}

int harness_samplers_judge(json_t *health, const json_t *eff, const char *run_id, char *why,
			   size_t cap)
{
	int fatal = json_is_true(json_object_get(json_object_get(eff, "samplers"), "fatal"));
	const char *k;
	json_t *v;
	size_t o = 0;

	why[0] = '\0';
	json_object_set_new(health, "fatal", json_boolean(fatal));
	if (!json_integer_value(json_object_get(health, "failed")))
		return 0;
	json_object_foreach(health, k, v) {
		int n;

		if (!json_is_object(v) || !json_integer_value(json_object_get(v, "failed")))
			continue;
		n = snprintf(why + o, cap - o, "%ssampler %s failed %lld of %lld samples (last: %s)",
			     o ? "; " : "", k, (long long) json_integer_value(json_object_get(v, "failed")),
			     (long long) json_integer_value(json_object_get(v, "tries")),
			     json_string_value(json_object_get(v, "last_error")));
		if (n < 0 || (size_t) n >= cap - o)
			break;
		o += (size_t) n;
	}
	fprintf(stderr, "coldstudy run: %s %s: %s%s\n", fatal ? "error:" : "warning:", run_id, why,
		fatal ? " (samplers.fatal: no run record)" : " (counted in the run record's samplers)");
	return fatal;
}

