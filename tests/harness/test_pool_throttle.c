/*
 * test_pool_throttle.c - a fan-out's reader pool under the kernel's block
 * throttle (suite 'integration'; root, a writable blkio or io controller
 * and a block device under /var/tmp, else exit 77).
 *
 * The pool's threads are started by an uncapped fan-out first, as a
 * session's threads may be before its cap is set. Then, with the cgroup
 * made and the querying thread in it, cold O_DIRECT fan-outs of 8 readers:
 *   1. without the pool's join (v1 only, where a cgroup holds threads):
 *      the pool's readers read outside the cap, so the throttle counts
 *      fewer reads than the engine issued (the hazard, shown);
 *   2. with harness_throttle_join as the pool's join: every read the
 *      engine issued is one the throttle counted (within 2%, as the
 *      harness-throttle test asks of every capped reader), and the
 *      answers are the thread-per-reader fan-out's;
 *   3. the thread-per-reader fan-out, started inside the cap: the same.
 * The cgroup is gone afterwards.
 */
#include "coldvec.h"
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NQ 6

typedef struct pass {
	uint64_t engine, throttle;
	uint32_t ids[NQ][10];
} pass;

static int fail;

static void check(int ok, const char *what)
{
	if (!ok) {
		printf("FAIL: %s\n", what);
		fail = 1;
	}
}

/* NQ cold fan-outs of 8: the engine's reads and the throttle's count over them. */
static int run_pass(cv_index *ix, cv_io *io, const cv_dataset *qs, cv_pool *pool,
		    const harness_throttle *t, pass *p)
{
	cv_query_opts qo;
	uint64_t r0 = 0, r1 = 0, b;

	cv_query_opts_default(&qo);
	qo.mode = CV_MODE_FANOUT;
	qo.fanout = 8;
	qo.pool = pool;
	memset(p, 0, sizeof(*p));
	if (t && harness_throttle_counters(t, &r0, &b))
		return -EIO;
	for (size_t i = 0; i < NQ; i++) {
		cv_query_stats st = {0};
		float d[10];
		size_t n = 0;
		int rc;

		cv_index_drop_buffers(ix);
		rc = cv_index_query(ix, io, cv_row(qs, i), &qo, p->ids[i], d, &n, &st);
		if (rc)
			return rc;
		if (st.fanout_via != CV_FANOUT_THREADS)
			return -EPROTO;
		p->engine += st.reads;
	}
	if (t && harness_throttle_counters(t, &r1, &b))
		return -EIO;
	p->throttle = r1 - r0;
	return 0;
}

static int near(uint64_t a, uint64_t b)
{
	uint64_t d = a > b ? a - b : b - a;

	return a && 50 * d <= a;
}

int main(void)
{
	char tmpl[] = "/var/tmp/cs-pool-XXXXXX", dir[600], cgdir[600] = "";
	cv_dataset *all = NULL, *base = NULL, *qs = NULL;
	cv_index *ix = NULL;
	cv_pool *pool = NULL;
	cv_io *io = NULL;
	cv_build_opts bo;
	cv_io_opts o;
	cv_err ce = {{0}};
	harness_throttle t;
	harness_cap cap;
	cs_err e = {0};
	pass warm, a, bp, c;
	cv_pool_counts pc;
	int fd = -1, rc, skip = 0;

	harness_throttle_init(&t);
	if (geteuid() != 0) {
		printf("skip: not root (the throttle's cgroup)\n");
		return 77;
	}
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/ix", tmpl);
	cv_build_opts_default(&bo);
	bo.m = 8;
	bo.ef_construction = 32;
	bo.partitions = 8;
	bo.threads = 2;
	if ((rc = cv_dataset_load("synth:n=6010,d=32,clusters=16,seed=3", &all, &ce)) ||
	    (rc = cv_dataset_slice(all, 0, 6000, &base)) || (rc = cv_dataset_slice(all, 6000, NQ, &qs)) ||
	    (rc = cv_index_build("phnsw", base, &bo, dir, &ce)) ||
	    (rc = cv_index_open(dir, NULL, &ix, &ce))) {
		printf("FAIL: the index: %s (%d)\n", ce.msg, rc);
		fail = 1;
		goto out;
	}
	cv_io_opts_default(&o);
	o.strategy = CV_IO_DIRECT;
	o.queue_depth = 8;
	if ((rc = cv_io_new(&o, &io)) || (rc = cv_pool_new(0, &pool))) {
		printf("FAIL: reader or pool: %s\n", strerror(-rc));
		fail = 1;
		goto out;
	}
	/* the pool's threads, started before any cap (no cgroup yet) */
	if ((rc = run_pass(ix, io, qs, pool, NULL, &warm))) {
		printf("FAIL: uncapped fan-out: %s\n", strerror(-rc));
		fail = 1;
		goto out;
	}
	cv_pool_stats(pool, &pc);
	check(pc.threads == 7, "8 readers a query: 7 pool threads (the caller is the 8th)");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || harness_cap_parse("uncapped", &cap, &e)) {
		printf("FAIL: %s: %s\n", dir, fd < 0 ? strerror(errno) : e.msg);
		fail = 1;
		goto out;
	}
	if (harness_throttle_begin(&cap, fd, &t, &e)) {
		printf("skip: %s\n", e.msg);
		skip = e.code == CS_EXIT_BADINPUT;
		fail = !skip;
		goto out;
	}
	snprintf(cgdir, sizeof(cgdir), "%s", t.dir);
	if ((rc = harness_throttle_enter(&t))) {
		printf("FAIL: enter %s: %s\n", t.dir, strerror(-rc));
		fail = 1;
		goto out;
	}
	/* 1. the pool's old threads, no join */
	if (!t.v2) {
		if ((rc = run_pass(ix, io, qs, pool, &t, &a)))
			printf("FAIL: fan-out without the join: %s\n", strerror(-rc)), fail = 1;
		printf("no join:   engine reads %llu, throttle counted %llu\n",
		       (unsigned long long) a.engine, (unsigned long long) a.throttle);
		check(a.throttle < a.engine, "without the join the pool's reads escape the cap (the "
		      "threads were started outside it): the test can tell");
	}
	/* 2. the join: every thread moves into the cap before its next read */
	cv_pool_set_join(pool, harness_throttle_join, &t);
	if ((rc = run_pass(ix, io, qs, pool, &t, &bp)))
		printf("FAIL: fan-out with the join: %s\n", strerror(-rc)), fail = 1;
	printf("pool+join: engine reads %llu, throttle counted %llu\n",
	       (unsigned long long) bp.engine, (unsigned long long) bp.throttle);
	check(near(bp.engine, bp.throttle), "pooled fan-out: throttle-counted reads = engine reads");
	/* 3. a thread per reader per query, started inside the cap */
	if ((rc = run_pass(ix, io, qs, NULL, &t, &c)))
		printf("FAIL: thread-per-reader fan-out: %s\n", strerror(-rc)), fail = 1;
	printf("per query: engine reads %llu, throttle counted %llu\n",
	       (unsigned long long) c.engine, (unsigned long long) c.throttle);
	check(near(c.engine, c.throttle), "thread-per-reader fan-out: throttle-counted = engine reads");
	check(bp.engine == c.engine && bp.engine == warm.engine, "the same reads on every path");
	check(!memcmp(bp.ids, c.ids, sizeof(c.ids)) && !memcmp(bp.ids, warm.ids, sizeof(c.ids)),
	      "the same answers on every path");
	cv_pool_stats(pool, &pc);
	check(pc.threads == 7, "no pool thread started after the first query");
out:
	harness_throttle_leave(&t);
	cv_pool_free(pool);
	harness_throttle_end(&t);
	if (cgdir[0] && !skip) {
		struct stat sb;

		check(stat(cgdir, &sb) != 0, "the throttle's cgroup is gone");
	}
	if (fd >= 0)
		close(fd);
	cv_io_free(io);
	cv_index_close(ix);
	if (base) {
		char **paths = NULL;
		size_t n = 0;

		if (cv_index_files(dir, &paths, &n) == 0) {
			for (size_t i = 0; i < n; i++)
				unlink(paths[i]);
			cv_index_files_free(paths, n);
		}
		rmdir(dir);
	}
	rmdir(tmpl);
	cv_dataset_free(qs);
	cv_dataset_free(base);
	cv_dataset_free(all);
	if (skip)
		return 77;
	if (!fail)
		printf("ok\n");
	return fail;
}
