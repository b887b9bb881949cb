/*
 * cmd_io.c - the verbs of the block-I/O layer: cache (evict, residency,
 * prewarm), probe (with fio beside it) and device (list, show, under).
 *
 *   coldstudy cache evict FILE...
 *   coldstudy cache residency FILE... [--json]
 *   coldstudy cache prewarm FILE --blocks LIST|@FILE [--block-size 8192]
 *   coldstudy probe FILE --qd N --bs 4k|8k|16k --reads M [--strategy S]
 *                   [--device PROFILE] [--seed S] [--json] [--fio]
 *   coldstudy device list | show PROFILE | under FILE
 *   coldstudy device replay TRACE --device PROFILE [--seed S] [--json]
 *
 * replay loads a cvtrace file (written by `index query --trace`) and runs
 * it through the device model in virtual time: reads of a stream wait for
 * its previous batch, streams run concurrently, the CPU gaps are kept.
 */
#include "cmds.h"

#include "coldvec.h"
#include "guard.h"
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BLOCKS_MAX (1u << 24)
#define FIO_OUT_MAX (8u << 20)

/* Print "coldstudy VERB: what: strerror" and return the exit code for rc. */
static int fail_errno(const char *verb, const char *what, int rc)
{
	fprintf(stderr, "coldstudy %s: %s: %s\n", verb, what, strerror(-rc));
	return cli_exit_from_errno(rc);
}

static int cache_evict(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage("cache", "evict needs at least one FILE");
	for (int i = 1; i < argc; i++) {
		guard_held h;
		cs_err e = {0};
		int rc;

		/* Production's cache is never evicted: resolve once, check, evict through the hold. */
		if ((rc = guard_existing(NULL, NULL, argv[i], AT_FDCWD, "cache evict", "file", &h, &e)))
			return cli_fail("cache", &e);
		rc = cv_cache_evict(guard_held_via(&h));
		guard_held_close(&h);
		if (rc)
			return fail_errno("cache", argv[i], rc);
	}
	return CS_EXIT_OK;
}

static int cache_residency(int argc, char **argv)
{
	int json = 0, nfiles = 0, rc = CS_EXIT_OK;
	json_t *arr = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (argv[i][0] == '-' && argv[i][1])
			return cli_usage("cache", "unknown option '%s'", argv[i]);
		else
			nfiles++;
	}
	if (!nfiles)
		return cli_usage("cache", "residency needs at least one FILE");
	if (json) {
		arr = json_array();
		if (!arr)
			return CS_EXIT_INTERNAL;
	} else {
		printf("%10s %10s %9s %-9s %s\n", "RES", "PAGES", "FRACTION", "METHOD", "FILE");
	}
	for (int i = 1; i < argc; i++) {
		cv_residency r;
		double frac;
		int e;

		if (!strcmp(argv[i], "--json"))
			continue;
		{
			/* the file a user names, symlinks followed once; measured through the hold */
			guard_held h;
			cs_err ge = {0};

			if ((e = guard_hold(argv[i], AT_FDCWD, &h, &ge))) {
				rc = cli_fail("cache", &ge);
				goto out;
			}
			e = h.exists ? cv_cache_residency(guard_held_via(&h), &r) : -ENOENT;
			guard_held_close(&h);
		}
		if (e) {
			if (e == -EACCES)
				fprintf(stderr,
					"coldstudy cache: %s: residency refused: no cachestat and the file cannot be opened for writing, so mincore would report every page resident\n",
					argv[i]);
			else
				fprintf(stderr, "coldstudy cache: %s: %s\n", argv[i], strerror(-e));
			rc = cli_exit_from_errno(e);
			goto out;
		}
		frac = r.pages ? (double) r.resident / (double) r.pages : 0.0;
		if (json) {
			json_t *o = json_pack("{s:s, s:I, s:I, s:f, s:s}", "file", argv[i], "pages",
					      (json_int_t) r.pages, "resident", (json_int_t) r.resident,
					      "fraction", frac, "method", r.method);

			if (!o || json_array_append_new(arr, o)) {
				rc = CS_EXIT_INTERNAL;
				goto out;
			}
		} else {
			printf("%10llu %10llu %9.4f %-9s %s\n", (unsigned long long) r.resident,
			       (unsigned long long) r.pages, frac, r.method, argv[i]);
		}
	}
	if (json) {
		char *s = json_dumps(arr, JSON_INDENT(2));

		if (!s) {
			rc = CS_EXIT_INTERNAL;
			goto out;
		}
		printf("%s\n", s);
		free(s);
	}
out:
	json_decref(arr);
	return rc;
}

/* Parse "1,2,3" or "@FILE" (numbers separated by commas or white space). */
static int parse_blocks(const char *spec, uint64_t **out, size_t *n)
{
	char *text = NULL;
	const char *p;
	uint64_t *v = NULL;
	size_t cap = 0, len = 0;
	int rc = CS_EXIT_BADINPUT;

	*out = NULL;
	*n = 0;
	if (spec[0] == '@') {
		cs_err e;
		size_t tl;

		if (cs_read_file(spec + 1, 64u << 20, &text, &tl, &e))
			return cli_fail("cache", &e);
		p = text;
	} else {
		p = spec;
	}
	while (*p) {
		char *end;
		unsigned long long x;

		while (*p == ',' || *p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
			p++;
		if (!*p)
			break;
		if (*p < '0' || *p > '9') {
			fprintf(stderr, "coldstudy cache: %s: byte %zu: expected a block number\n",
				spec[0] == '@' ? spec + 1 : "--blocks",
				(size_t) (p - (spec[0] == '@' ? text : spec)));
			goto out;
		}
		errno = 0;
		x = strtoull(p, &end, 10);
		if (errno) {
			fprintf(stderr, "coldstudy cache: block number out of range\n");
			goto out;
		}
		if (len == cap) {
			uint64_t *nv;

			if (cap >= BLOCKS_MAX) {
				fprintf(stderr, "coldstudy cache: more than %u blocks\n", BLOCKS_MAX);
				goto out;
			}
			cap = cap ? cap * 2 : 256;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = CS_EXIT_INTERNAL;
				goto out;
			}
			v = nv;
		}
		v[len++] = x;
		p = end;
	}
	*out = v;
	*n = len;
	v = NULL;
	rc = 0;
out:
	free(v);
	free(text);
	return rc;
}

static int cache_prewarm(int argc, char **argv)
{
	const char *file = NULL, *blocks = NULL;
	uint64_t bs = 8192, *list = NULL;
	size_t n = 0;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--blocks") && i + 1 < argc)
			blocks = argv[++i];
		else if (!strcmp(argv[i], "--block-size") && i + 1 < argc) {
			if (cli_parse_u64(argv[++i], &bs) || !bs || bs > (1u << 30))
				return cli_usage("cache", "--block-size wants a byte count, got '%s'", argv[i]);
		} else if (argv[i][0] == '-')
			return cli_usage("cache", "unknown option '%s'", argv[i]);
		else if (!file)
			file = argv[i];
		else
			return cli_usage("cache", "prewarm takes one FILE");
	}
	if (!file || !blocks)
		return cli_usage("cache", "prewarm needs FILE and --blocks LIST");
	rc = parse_blocks(blocks, &list, &n);
	if (rc)
		return rc;
	{
		guard_held h;
		cs_err e = {0};

		if ((rc = guard_existing(NULL, NULL, file, AT_FDCWD, "cache prewarm", "file", &h, &e))) {
			free(list);
			return cli_fail("cache", &e);
		}
		rc = cv_cache_prewarm(guard_held_via(&h), list, n, (uint32_t) bs);
		guard_held_close(&h);
	}
	free(list);
	if (rc == -ERANGE) {
		fprintf(stderr, "coldstudy cache: %s: a block in the list lies past the end of the file\n", file);
		return CS_EXIT_BADINPUT;
	}
	if (rc)
		return fail_errno("cache", file, rc);
	printf("prewarmed %zu blocks of %llu bytes from %s\n", n, (unsigned long long) bs, file);
	return CS_EXIT_OK;
}

int cmd_cache(int argc, char **argv)
{
	if (argc < 2 || cli_wants_help(argc, argv)) {
		printf("usage: coldstudy cache evict FILE...\n"
		       "       coldstudy cache residency FILE... [--json]\n"
		       "       coldstudy cache prewarm FILE --blocks LIST|@FILE [--block-size 8192]\n");
		return argc < 2 ? CS_EXIT_USAGE : CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "evict"))
		return cache_evict(argc - 1, argv + 1);
	if (!strcmp(argv[1], "residency"))
		return cache_residency(argc - 1, argv + 1);
	if (!strcmp(argv[1], "prewarm"))
		return cache_prewarm(argc - 1, argv + 1);
	return cli_usage("cache", "unknown subcommand '%s'", argv[1]);
}

/* "4k", "8k", "16k" or a byte count. */
static int parse_bs(const char *s, uint32_t *out)
{
	uint64_t v;
	size_t n = strlen(s);

	if (n > 1 && (s[n - 1] == 'k' || s[n - 1] == 'K')) {
		char tmp[32];

		if (n >= sizeof(tmp))
			return -1;
		memcpy(tmp, s, n - 1);
		tmp[n - 1] = 0;
		if (cli_parse_u64(tmp, &v) || v > (1u << 20))
			return -1;
		v *= 1024;
	} else if (cli_parse_u64(s, &v) || v > (1u << 30)) {
		return -1;
	}
	if (!v || v % 512)
		return -1;
	*out = (uint32_t) v;
	return 0;
}

/*
 * fio's figures beside the probe's. The probe times a read from its
 * submission to its completion (engine/io/probe.c), which is fio's total
 * latency `lat` (slat + clat: from the moment fio issues the I/O to its
 * completion), not `clat` (from the kernel taking it to completion); so
 * the latencies compared are lat_ns's, asked with --lat_percentiles=1.
 * out keeps fio's whole JSON output (new reference).
 */
typedef struct fio_res {
	double iops, mibps, lat_mean_ms, lat_p50_ms, lat_p99_ms;
	double clat_mean_ms, slat_mean_ms;
	json_t *out;
} fio_res;

#define FIO_LATENCY "lat"
#define FIO_LATENCY_WHY                                                                    \
	"fio's lat_ns (slat + clat: issue to completion), the interval the probe times (its "  \
	"submission to its completion); clat_ns leaves out the submission"

/*
 * Run fio with the same settings; 0 ok, else an exit code (message printed).
 * With io_uring, fio also gets the probe's batching: every read that is
 * ready goes to the kernel in one io_uring_enter (iodepth_batch_submit =
 * complete_max = qd, complete_min = 1). fio's default submits each read
 * with its own system call (20,008 calls for 20,000 reads against the
 * probe's 625 at qd 32), which on a guest with costly system calls makes
 * fio, not the disk, the bottleneck.
 */
static int run_fio(const char *file, const cv_probe_opts *o, fio_res *r)
{
	char bs[32], qd[32], io_size[64], jobs[32], bsub[48], bmax[48];
	const char *argv[26];
	int pfd[2], status, argc = 0, rc = CS_EXIT_INTERNAL;
	pid_t pid;
	char *out = NULL;
	size_t len = 0;
	json_t *root = NULL, *rd;
	json_error_t err;
	int uring = o->strategy == CV_IO_URING;
	unsigned nj = uring ? 1 : o->qd;

	snprintf(bs, sizeof(bs), "--bs=%u", o->bs);
	snprintf(qd, sizeof(qd), "--iodepth=%u", uring ? o->qd : 1);
	snprintf(jobs, sizeof(jobs), "--numjobs=%u", nj);
	snprintf(io_size, sizeof(io_size), "--io_size=%llu",
		 (unsigned long long) ((o->reads + nj - 1) / nj) * o->bs);
	argv[argc++] = "fio";
	argv[argc++] = "--name=coldstudy-probe";
	argv[argc++] = "--rw=randread";
	argv[argc++] = bs;
	argv[argc++] = qd;
	argv[argc++] = jobs;
	argv[argc++] = io_size;
	argv[argc++] = uring ? "--ioengine=io_uring" : (o->strategy == CV_IO_MMAP ? "--ioengine=mmap" : "--ioengine=psync");
	argv[argc++] = (uring || o->strategy == CV_IO_DIRECT) ? "--direct=1" : "--direct=0";
	argv[argc++] = "--norandommap";
	argv[argc++] = "--randrepeat=0";
	if (uring) {
		snprintf(bsub, sizeof(bsub), "--iodepth_batch_submit=%u", o->qd);
		snprintf(bmax, sizeof(bmax), "--iodepth_batch_complete_max=%u", o->qd);
		argv[argc++] = bsub;
		argv[argc++] = "--iodepth_batch_complete_min=1";
		argv[argc++] = bmax;
	}
	argv[argc++] = "--group_reporting";
	argv[argc++] = "--lat_percentiles=1"; /* percentiles of lat, the probe's interval */
	argv[argc++] = "--output-format=json";
	argv[argc++] = "--filename";
	argv[argc++] = file;
	argv[argc] = NULL;
	if (pipe(pfd) < 0)
		return fail_errno("probe", "pipe", -errno);
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return fail_errno("probe", "fork", -errno);
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(pfd[1], 1);
		if (devnull >= 0)
			dup2(devnull, 2);
		close(pfd[0]);
		close(pfd[1]);
		execvp("fio", (char *const *) argv);
		_exit(127);
	}
	close(pfd[1]);
	out = malloc(FIO_OUT_MAX + 1);
	if (out) {
		ssize_t k;

		while (len < FIO_OUT_MAX && (k = read(pfd[0], out + len, FIO_OUT_MAX - len)) != 0) {
			if (k < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			len += (size_t) k;
		}
		out[len] = 0;
	}
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "coldstudy probe: fio failed (exit %d)%s\n",
			WIFEXITED(status) ? WEXITSTATUS(status) : -1,
			WIFEXITED(status) && WEXITSTATUS(status) == 127 ? ": not installed" : "");
		goto out;
	}
	if (!out)
		goto out;
	/* fio may print notes before its JSON */
	{
		char *brace = strchr(out, '{');

		root = brace ? json_loads(brace, JSON_DISABLE_EOF_CHECK, &err) : NULL;
	}
	rd = json_object_get(json_array_get(json_object_get(root, "jobs"), 0), "read");
	if (!rd) {
		fprintf(stderr, "coldstudy probe: fio output: no jobs[0].read (line %d: %s)\n",
			root ? 0 : err.line, root ? "missing" : err.text);
		rc = CS_EXIT_BADINPUT;
		goto out;
	}
	r->iops = json_number_value(json_object_get(rd, "iops"));
	r->mibps = json_number_value(json_object_get(rd, "bw_bytes")) / 1048576.0;
	{
		json_t *lat = json_object_get(rd, "lat_ns"), *pct = json_object_get(lat, "percentile");

		if (!json_is_number(json_object_get(lat, "mean")) ||
		    !json_is_number(json_object_get(pct, "50.000000"))) {
			fprintf(stderr, "coldstudy probe: fio output: no jobs[0].read.lat_ns percentiles\n");
			rc = CS_EXIT_BADINPUT;
			goto out;
		}
		r->lat_mean_ms = json_number_value(json_object_get(lat, "mean")) / 1e6;
		r->lat_p50_ms = json_number_value(json_object_get(pct, "50.000000")) / 1e6;
		r->lat_p99_ms = json_number_value(json_object_get(pct, "99.000000")) / 1e6;
		r->clat_mean_ms = json_number_value(json_object_get(json_object_get(rd, "clat_ns"), "mean")) / 1e6;
		r->slat_mean_ms = json_number_value(json_object_get(json_object_get(rd, "slat_ns"), "mean")) / 1e6;
	}
	r->out = json_incref(root);
	rc = 0;
out:
	json_decref(root);
	free(out);
	return rc;
}

int cmd_probe(int argc, char **argv)
{
	const char *file = NULL, *devspec = NULL, *capspec = NULL;
	cv_probe_opts o = { .qd = 1, .bs = 4096, .reads = 1000, .strategy = CV_IO_URING, .seed = 1 };
	harness_throttle thr;
	harness_cap cap;
	uint64_t treads = 0, tbytes = 0;
	cv_probe_result r;
	cv_device *dev = NULL;
	fio_res fr = { 0 };
	int json = 0, fio = 0, have_fio = 0, rc;
	uint64_t v;
	cv_err e = { { 0 } };
	guard_held held;
	const char *shown = NULL;

	guard_held_init(&held);
	harness_throttle_init(&thr);
	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy probe FILE --qd N --bs 4k|8k|16k --reads M [--strategy uring|pread|direct|mmap]\n"
		       "                       [--device PROFILE | --throttle CAP] [--seed S] [--json] [--fio]\n"
		       "  --device PROFILE  every read through a device model (coldstudy device list)\n"
		       "  --throttle CAP    a real cap: the kernel's block throttle on FILE's whole disk, the\n"
		       "                    probe's readers in a cgroup of their own (gp3-3000, gp3-16000,\n"
		       "                    gp3-80000, io2-80000, uncapped, or riops=N,rbps=SIZE); exit 5\n"
		       "                    where no cgroup controller is writable\n");
		return CS_EXIT_OK;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json"))
			json = 1;
		else if (!strcmp(a, "--fio"))
			fio = 1;
		else if (!strcmp(a, "--qd") && i + 1 < argc) {
			if (cli_parse_u64(argv[++i], &v) || !v || v > 4096)
				return cli_usage("probe", "--qd wants 1..4096, got '%s'", argv[i]);
			o.qd = (unsigned) v;
		} else if (!strcmp(a, "--reads") && i + 1 < argc) {
			if (cli_parse_u64(argv[++i], &v) || !v)
				return cli_usage("probe", "--reads wants a positive count, got '%s'", argv[i]);
			o.reads = v;
		} else if (!strcmp(a, "--seed") && i + 1 < argc) {
			if (cli_parse_u64(argv[++i], &o.seed))
				return cli_usage("probe", "--seed wants a number, got '%s'", argv[i]);
		} else if (!strcmp(a, "--bs") && i + 1 < argc) {
			if (parse_bs(argv[++i], &o.bs))
				return cli_usage("probe", "--bs wants 4k, 8k, 16k or a multiple of 512, got '%s'", argv[i]);
		} else if (!strcmp(a, "--strategy") && i + 1 < argc) {
			if (cv_io_strategy_parse(argv[++i], &o.strategy))
				return cli_usage("probe", "--strategy wants uring, pread, direct or mmap, got '%s'", argv[i]);
		} else if (!strcmp(a, "--device") && i + 1 < argc) {
			devspec = argv[++i];
		} else if (!strcmp(a, "--throttle") && i + 1 < argc) {
			capspec = argv[++i];
		} else if (a[0] == '-') {
			return cli_usage("probe", "unknown option '%s'", a);
		} else if (!file) {
			file = a;
		} else {
			return cli_usage("probe", "one FILE only");
		}
	}
	if (!file)
		return cli_usage("probe", "FILE is required");
	if (devspec && capspec)
		return cli_usage("probe", "--device (a model) and --throttle (a real cap) exclude each other");
	if (capspec) {
		cs_err ce = {0};

		if (harness_cap_parse(capspec, &cap, &ce)) {
			fprintf(stderr, "coldstudy probe: --throttle: %s\n", ce.msg);
			return ce.code;
		}
	}
	{
		cs_err ge = {0};

		/* Load on production (a file or a device) is refused; the probe reads through the hold. */
		if ((rc = guard_existing(NULL, NULL, file, AT_FDCWD, "probe", "file", &held, &ge)))
			return cli_fail("probe", &ge);
		shown = file;
		file = guard_held_via(&held);
	}
	if (devspec) {
		rc = cv_device_new(devspec, o.seed, &dev, &e);
		if (rc) {
			fprintf(stderr, "coldstudy probe: %s\n", e.msg);
			return rc == -EINVAL || rc == -ENOENT ? CS_EXIT_BADINPUT : CS_EXIT_INTERNAL;
		}
		o.device = dev;
	}
	if (capspec) {
		cs_err ce = {0};

		/* the whole disk under the held file; only the probe's readers join the cgroup */
		if (harness_throttle_begin(&cap, held.fd, &thr, &ce)) {
			fprintf(stderr, "coldstudy probe: %s: %s\n", shown, ce.msg);
			guard_held_close(&held);
			return ce.code;
		}
		if ((rc = harness_throttle_enter(&thr))) {
			fprintf(stderr, "coldstudy probe: %s: cannot join the throttle cgroup: %s\n",
				thr.dir, strerror(-rc));
			harness_throttle_end(&thr);
			guard_held_close(&held);
			return CS_EXIT_INTERNAL;
		}
	}
	rc = cv_probe(file, &o, &r, &e);
	if (capspec) {
		harness_throttle_leave(&thr);
		if (!rc && harness_throttle_counters(&thr, &treads, &tbytes) < 0)
			treads = tbytes = 0;
		harness_throttle_end(&thr);
	}
	if (rc) {
		fprintf(stderr, "coldstudy probe: %s\n", e.msg);
		cv_device_free(dev);
		guard_held_close(&held);
		return cli_exit_from_errno(rc);
	}
	if (fio) {
		if (dev || capspec)
			fprintf(stderr, "coldstudy probe: --fio runs on the real device; the %s applies to coldstudy only\n",
				dev ? "model" : "throttle");
		have_fio = run_fio(file, &o, &fr) == 0;
	}
	if (json) {
		json_t *o2 = json_object();
		char *txt;

		if (!o2)
			goto oom;
		json_object_set_new(o2, "file", json_string(shown));
		json_object_set_new(o2, "strategy", json_string(cv_io_strategy_name(o.strategy)));
		json_object_set_new(o2, "qd", json_integer(o.qd));
		json_object_set_new(o2, "bs", json_integer(o.bs));
		json_object_set_new(o2, "reads", json_integer((json_int_t) r.reads));
		json_object_set_new(o2, "wall_s", json_real(r.wall_s));
		json_object_set_new(o2, "iops", json_real(r.iops));
		json_object_set_new(o2, "mibps", json_real(r.mibps));
		json_object_set_new(o2, "lat_mean_ms", json_real(r.lat_mean_ms));
		json_object_set_new(o2, "lat_p50_ms", json_real(r.lat_p50_ms));
		json_object_set_new(o2, "lat_p99_ms", json_real(r.lat_p99_ms));
		json_object_set_new(o2, "lat_max_ms", json_real(r.lat_max_ms));
		json_object_set_new(o2, "device", json_string(dev ? cv_device_name(dev) : "real"));
		if (capspec) {
			json_t *tj = harness_throttle_record(&thr, treads, tbytes);

			/* the probe's own count against the kernel's: what validate checks */
			json_object_set_new(tj, "engine_reads", json_integer((json_int_t) r.reads));
			json_object_set_new(tj, "iops_of_cap",
					    cap.riops ? json_real(r.iops / (double) cap.riops) : json_null());
			json_object_set_new(o2, "throttle", tj);
		}
		if (have_fio) {
			json_object_set_new(o2, "fio",
					    json_pack("{s:f, s:f, s:f, s:f, s:f, s:s, s:s, s:f, s:f}", "iops",
						      fr.iops, "mibps", fr.mibps, "lat_mean_ms",
						      fr.lat_mean_ms, "lat_p50_ms", fr.lat_p50_ms,
						      "lat_p99_ms", fr.lat_p99_ms, "latency", FIO_LATENCY,
						      "latency_why", FIO_LATENCY_WHY, "clat_mean_ms",
						      fr.clat_mean_ms, "slat_mean_ms", fr.slat_mean_ms));
			json_object_set_new(o2, "iops_ratio", json_real(fr.iops > 0 ? r.iops / fr.iops : 0));
			/* fio's own output, whole, last (probe:FILE reads the probe's figures above) */
			json_object_set(o2, "fio_output", fr.out);
		}
		txt = json_dumps(o2, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
		json_decref(o2);
		if (!txt)
			goto oom;
		printf("%s\n", txt);
		free(txt);
	} else {
		printf("probe %s: %s, qd %u, bs %u, %llu reads%s%s\n", shown, cv_io_strategy_name(o.strategy),
		       o.qd, o.bs, (unsigned long long) r.reads, dev ? ", device model " : "",
		       dev ? cv_device_name(dev) : "");
		if (capspec) {
			char of[64] = "";

			if (cap.riops)
				snprintf(of, sizeof(of), "; IOPS %.3f of the cap", r.iops / (double) cap.riops);
			printf("throttle %s on %u:%u (%s, %s): %llu reads counted by the kernel's "
			       "throttle%s\n",
			       cap.name, thr.maj, thr.min, thr.disk,
			       thr.v2 ? "cgroup v2 io.max" : "cgroup v1 blkio.throttle",
			       (unsigned long long) treads, of);
		}
		printf("%-12s %12s%s\n", "", "coldstudy", have_fio ? "          fio" : "");
#define ROW(name, a, b, fmt)                                                   \
	do {                                                                   \
		printf("%-12s " fmt, name, a);                                 \
		if (have_fio)                                                  \
			printf(" " fmt, b);                                    \
		printf("\n");                                                  \
	} while (0)
		ROW("IOPS", r.iops, fr.iops, "%12.1f");
		ROW("MiB/s", r.mibps, fr.mibps, "%12.2f");
		ROW("mean ms", r.lat_mean_ms, fr.lat_mean_ms, "%12.4f");
		ROW("p50 ms", r.lat_p50_ms, fr.lat_p50_ms, "%12.4f");
		ROW("p99 ms", r.lat_p99_ms, fr.lat_p99_ms, "%12.4f");
#undef ROW
		if (have_fio && fr.iops > 0)
			printf("%-12s %12.3f\n", "IOPS ratio", r.iops / fr.iops);
		if (have_fio)
			printf("fio's latencies are its %s (%.4f ms mean; clat alone %.4f ms): issue to "
			       "completion, as the probe times a read\n",
			       FIO_LATENCY, fr.lat_mean_ms, fr.clat_mean_ms);
	}
	json_decref(fr.out);
	cv_device_free(dev);
	guard_held_close(&held);
	return CS_EXIT_OK;
oom:
	json_decref(fr.out);
	cv_device_free(dev);
	guard_held_close(&held);
	fprintf(stderr, "coldstudy probe: out of memory\n");
	return CS_EXIT_INTERNAL;
}

/* The real span of a trace: last completion minus first submission, in ms. */
static double trace_real_ms(const cv_trace *t)
{
	const cv_trace_rec *r = cv_trace_recs(t);
	size_t n = cv_trace_len(t);
	uint64_t lo = UINT64_MAX, hi = 0;

	for (size_t i = 0; i < n; i++) {
		if (r[i].submit_ns < lo)
			lo = r[i].submit_ns;
		if (r[i].complete_ns > hi)
			hi = r[i].complete_ns;
	}
	return n ? (double) (hi - lo) / 1e6 : 0.0;
}

static int device_replay(int argc, char **argv)
{
	const char *path = NULL, *profile = NULL;
	uint64_t seed = 1;
	int json = 0, rc, exitc = CS_EXIT_OK;
	cv_trace *t = NULL;
	cv_device *d = NULL;
	cv_sim_result r;
	cv_err e = {{0}};

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
			profile = argv[++i];
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			if (cli_parse_u64(argv[++i], &seed))
				return cli_usage("device", "--seed wants a number, got '%s'", argv[i]);
		} else if (argv[i][0] != '-' && !path) {
			path = argv[i];
		} else {
			return cli_usage("device", "replay: unexpected '%s'", argv[i]);
		}
	}
	if (!path || !profile)
		return cli_usage("device", "replay needs TRACE and --device PROFILE");
	rc = cv_device_new(profile, seed, &d, &e);
	if (rc) {
		fprintf(stderr, "coldstudy device: %s\n", e.msg);
		return CS_EXIT_BADINPUT;
	}
	rc = cv_trace_load(path, &t, &e);
	if (rc) {
		fprintf(stderr, "coldstudy device: %s\n", e.msg);
		exitc = rc == -EBADMSG ? CS_EXIT_BADINPUT : cli_exit_from_errno(rc);
		goto out;
	}
	rc = cv_device_simulate(d, t, seed, &r);
	if (rc) {
		exitc = fail_errno("device", "simulate", rc);
		goto out;
	}
	if (json) {
		json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:f, s:f, s:f}",
				      "trace", path, "device", cv_device_name(d), "seed",
				      (json_int_t) seed, "records", (json_int_t) cv_trace_len(t),
				      "files", (json_int_t) cv_trace_nfiles(t), "dropped",
				      (json_int_t) cv_trace_dropped(t), "real_ms", trace_real_ms(t),
				      "wall_ms", r.wall_ms, "reads", (json_int_t) r.reads,
				      "read_ms_mean", r.read_ms_mean, "inflight_mean", r.inflight_mean,
				      "iops", r.iops);
		char *txt = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
						 JSON_REAL_PRECISION(10))
			      : NULL;

		if (!txt) {
			json_decref(o);
			fprintf(stderr, "coldstudy device: out of memory\n");
			exitc = CS_EXIT_INTERNAL;
			goto out;
		}
		printf("%s\n", txt);
		free(txt);
		json_decref(o);
	}
	else
		printf("trace          %s (%zu reads, %u files, %llu dropped)\n"
		       "device         %s (virtual time, seed %llu)\n"
		       "real span      %.3f ms\n"
		       "virtual wall   %.3f ms\n"
		       "reads          %llu\n"
		       "read ms mean   %.4f\n"
		       "in flight      %.3f (time-averaged)\n"
		       "IOPS           %.2f\n",
		       path, cv_trace_len(t), cv_trace_nfiles(t),
		       (unsigned long long) cv_trace_dropped(t), cv_device_name(d),
		       (unsigned long long) seed, trace_real_ms(t), r.wall_ms,
		       (unsigned long long) r.reads, r.read_ms_mean, r.inflight_mean, r.iops);
out:
	cv_trace_free(t);
	cv_device_free(d);
	return exitc;
}

int cmd_device(int argc, char **argv)
{
	if (argc < 2 || cli_wants_help(argc, argv)) {
		printf("usage: coldstudy device list [--json]\n"
		       "       coldstudy device show PROFILE    (a name from list, or probe:FILE)\n"
		       "       coldstudy device under FILE      (the block device and its counters)\n"
		       "       coldstudy device replay TRACE --device PROFILE [--seed S] [--json]\n"
		       "                                        (a cvtrace from `index query --trace`,\n"
		       "                                         replayed in virtual time)\n");
		return argc < 2 ? CS_EXIT_USAGE : CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "list")) {
		int json = argc == 3 && !strcmp(argv[2], "--json");
		json_t *arr = json ? json_array() : NULL;

		if (argc > 2 && !json)
			return cli_usage("device", argv[2][0] == '-' ? "unknown option '%s'"
								     : "list takes no argument ('%s')",
					 argv[2]);
		if (argc > 3)
			return cli_usage("device", "list takes only --json ('%s')", argv[3]);
		if (json && !arr)
			return CS_EXIT_INTERNAL;
		for (const char *const *p = cv_device_profiles(); *p; p++) {
			cv_device *d;
			cv_err e;

			if (cv_device_new(*p, 1, &d, &e))
				continue;
			if (json)
				json_array_append_new(arr, json_pack("{s:s, s:f, s:f}", "profile", *p,
								     "mean_ms_qd1", cv_device_mean_ms(d),
								     "iops_serial",
								     1000.0 / cv_device_mean_ms(d)));
			else
				printf("%-14s mean %8.3f ms at queue depth 1 (%.1f IOPS serial)\n", *p,
				       cv_device_mean_ms(d), 1000.0 / cv_device_mean_ms(d));
			cv_device_free(d);
		}
		if (json) {
			int bad = json_dumpf(arr, stdout, JSON_COMPACT) != 0;

			putchar('\n');
			json_decref(arr);
			return bad ? CS_EXIT_INTERNAL : CS_EXIT_OK;
		}
		printf("%-14s from a `coldstudy probe --json` result\n", "probe:FILE");
		return CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "show")) {
		cv_device *d;
		cv_err e = { { 0 } };
		char buf[2048];
		int rc;

		if (argc != 3)
			return cli_usage("device", "show takes one PROFILE");
		rc = cv_device_new(argv[2], 1, &d, &e);
		if (rc) {
			fprintf(stderr, "coldstudy device: %s\n", e.msg);
			return CS_EXIT_BADINPUT;
		}
		fputs(cv_device_describe(d, buf, sizeof(buf)), stdout);
		cv_device_free(d);
		return CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "under")) {
		cv_blkdev b;
		cv_blkstat s;
		cv_err e = { { 0 } };
		int rc;

		if (argc != 3)
			return cli_usage("device", "under takes one FILE");
		rc = cv_blkdev_for_path(argv[2], &b, &e);
		if (rc) {
			fprintf(stderr, "coldstudy device: %s\n", e.msg);
			return rc == -ENODEV ? CS_EXIT_REFUSED : cli_exit_from_errno(rc);
		}
		rc = cv_blkdev_stat(&b, &s);
		if (rc)
			return fail_errno("device", b.stat_path, rc);
		printf("partition     %s\ndisk          %s\nstat          %s\nrotational    %d\n"
		       "read_ahead_kb %d\nscheduler     %s\nmodel         %s\n"
		       "reads         %llu (%llu sectors, %llu ms)\nio_ticks_ms   %llu\n",
		       b.part, b.disk, b.stat_path, b.rotational, b.read_ahead_kb, b.scheduler,
		       b.model[0] ? b.model : "-", (unsigned long long) s.reads,
		       (unsigned long long) s.read_sectors, (unsigned long long) s.read_ms,
		       (unsigned long long) s.io_ticks_ms);
		return CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "replay"))
		return device_replay(argc, argv);
	return cli_usage("device", "unknown subcommand '%s'", argv[1]);
}
