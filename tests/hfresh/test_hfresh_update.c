/*
 * test_hfresh_update.c - live updates: inserts and deletes keep recall
 * within 0.02 of a fresh build on the same data (and split, merge and
 * reassign are asserted to have run); ids and versions behave; and a
 * writer killed (SIGKILL) at every step of an update, and at random
 * moments, always leaves an index that opens, verifies and answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hfr_test.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

static double mean_recall(const char *dir, const cv_dataset *ref, const uint32_t *map,
			  const uint8_t *skip, const float *qs, size_t nq, unsigned probe)
{
	cv_index *ix;
	cv_err e;
	cv_query_opts qo;
	double sum = 0;

	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	cv_query_opts_default(&qo);
	qo.search_probe = probe;
	qo.rescore_limit = 100;
	for (size_t i = 0; i < nq; i++) {
		uint32_t ids[10], truth[10];
		float dd[10];
		size_t n;

		assert_int_equal(cv_index_query(ix, NULL, qs + i * ref->d, &qo, ids, dd, &n, NULL), 0);
		for (size_t j = 0; j < n; j++) {
			if (map)
				ids[j] = map[ids[j]];
			assert_false(skip && skip[ids[j]]); /* deleted ids never come back */
			for (size_t j2 = 0; j2 < j; j2++) /* nor does an id twice */
				assert_int_not_equal(ids[j], ids[j2]);
		}
		t_exact(ref, CV_METRIC_L2, qs + i * ref->d, 10, truth, skip);
		sum += t_recall(truth, ids, n, 10);
	}
	cv_index_close(ix);
	return sum / nq;
}

/*
 * Build on 90%, insert the other 10%, delete 10%: recall vs a fresh build
 * on what is left, with codes of bits bits (splits re-encode from full
 * vectors, so extended codes must survive them as 1-bit ones do).
 */
static void update_recall(unsigned bits, unsigned replicas)
{
	const size_t N = 6000, B = 5400, NQ = 100;
	cv_dataset *all = t_data(N + NQ, 24, 30, 21, 0), base = *all, ins, *fresh, ref;
	const float *qs = all->data + N * 24;
	uint8_t *del = calloc(N, 1);
	uint32_t *dids = malloc(sizeof(uint32_t) * N), *map = malloc(sizeof(uint32_t) * N), nd = 0;
	cv_build_opts o;
	char *dir = t_tmpdir(), *dir2 = t_tmpdir();
	hfr_update_stats us;
	cv_err e = {{0}};
	cv_index *ix;
	double r_upd, r_fresh;
	size_t nf = 0;
	uint64_t s = 99;

	base.n = B;
	ref = *all;
	ref.n = N; /* the truth is over the indexed rows, not the queries */
	cv_build_opts_default(&o);
	o.max_posting_kb = bits > 1 && replicas > 1 ? 16 : 8; /* full enough that inserts split */
	o.replicas = replicas; /* 4 as HFresh; 1, the extended shape's default, skips the seen marks */
	o.threads = 2;
	o.code_bits = bits;
	assert_int_equal(cv_index_build("hfresh", &base, &o, dir, &e), 0);
	ins = *all;
	ins.data = all->data + B * 24;
	ins.n = N - B;
	assert_int_equal(cv_index_insert(dir, &ins, (uint32_t) B, &e), 0);
	hfr_last_update_stats(&us);
	printf("# insert %zu: splits %llu, reassigned %llu of %llu checked, merges %llu\n", ins.n,
	       (unsigned long long) us.splits, (unsigned long long) us.reassigned,
	       (unsigned long long) us.reassign_checked, (unsigned long long) us.merges);
	assert_int_equal(us.inserted, N - B);
	assert_true(us.splits > 0);
	assert_true(us.reassign_checked > 0);
	assert_int_equal(cv_index_verify(dir, &e), 0);
	/* re-inserting a live id is refused */
	ins.n = 1;
	assert_int_equal(cv_index_insert(dir, &ins, 3, &e), -EEXIST);
	/* delete 10%, spread over everything */
	for (size_t i = 0; i < N; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		if ((s >> 33) % 10 == 0) {
			del[i] = 1;
			dids[nd++] = (uint32_t) i;
		}
	}
	assert_int_equal(cv_index_delete(dir, dids, nd, &e), 0);
	assert_int_equal(cv_index_delete(dir, dids, 1, &e), -ENOENT);
	assert_int_equal(cv_index_verify(dir, &e), 0);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	assert_int_equal(cv_index_count(ix), N - nd);
	cv_index_close(ix);
	r_upd = mean_recall(dir, &ref, NULL, del, qs, NQ, 32);
	/* the fresh build over the same live rows */
	assert_int_equal(cv_dataset_slice(all, 0, N, &fresh), 0);
	for (size_t i = 0; i < N; i++)
		if (!del[i]) {
			memmove(fresh->data + nf * 24, all->data + i * 24, 24 * sizeof(float));
			map[nf++] = (uint32_t) i;
		}
	fresh->n = nf;
	assert_int_equal(cv_index_build("hfresh", fresh, &o, dir2, &e), 0);
	r_fresh = mean_recall(dir2, &ref, map, del, qs, NQ, 32);
	printf("# %u-bit codes, %u replicas: recall@10 after +10%%/-10%%: %.3f, fresh build: %.3f\n",
	       bits, replicas, r_upd, r_fresh);
	assert_true(r_upd >= r_fresh - 0.02);
	assert_true(r_upd >= 0.9);
	/* delete most of the index: merges must run and it still answers */
	nd = 0;
	for (size_t i = 0; i < N; i++)
		if (!del[i] && i % 5 != 0) {
			dids[nd++] = (uint32_t) i;
			del[i] = 1;
		}
	assert_int_equal(cv_index_delete(dir, dids, nd, &e), 0);
	hfr_last_update_stats(&us);
	printf("# deleted %u more: merges %llu, reassigned %llu\n", nd,
	       (unsigned long long) us.merges, (unsigned long long) us.reassigned);
	assert_true(us.merges > 0);
	assert_int_equal(cv_index_verify(dir, &e), 0);
	r_upd = mean_recall(dir, &ref, NULL, del, qs, NQ, 32);
	printf("# recall@10 with 18%% left: %.3f\n", r_upd);
	assert_true(r_upd >= 0.9);
	cv_dataset_free(fresh);
	t_rmdir(dir);
	t_rmdir(dir2);
	free(dir);
	free(dir2);
	free(del);
	free(dids);
	free(map);
	t_data_free(all);
}

static void test_update_recall(void **st)
{
	(void) st;
	update_recall(1, 4);
}

static void test_update_recall_ex4(void **st)
{
	(void) st;
	update_recall(4, 4);
}

static void test_update_recall_ex4_one_replica(void **st)
{
	(void) st;
	update_recall(4, 1);
}

/* The index opens, verifies, and answers; its count is one of the allowed ones. */
static void check_alive(const char *dir, const cv_dataset *all, const size_t *ok, size_t nok)
{
	cv_index *ix;
	cv_err e = {{0}};
	cv_query_opts qo;
	uint32_t ids[10];
	float dd[10];
	size_t n, cnt;
	int found = 0;

	if (cv_index_verify(dir, &e))
		fail_msg("verify after kill: %s", e.msg);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	cnt = cv_index_count(ix);
	for (size_t i = 0; i < nok; i++)
		found |= cnt == ok[i];
	if (!found)
		fail_msg("count %zu after kill is neither before nor after", cnt);
	cv_query_opts_default(&qo);
	qo.search_probe = 8;
	assert_int_equal(cv_index_query(ix, NULL, all->data, &qo, ids, dd, &n, NULL), 0);
	assert_int_equal(n, 10);
	cv_index_close(ix);
}

/*
 * Kill the writer at step 1, 5, 9, ... of an insert-then-delete (its
 * crash points, past the last one, so some runs complete), then at random
 * moments within the time an update takes here (measured on the rounds
 * that completed), until at least 30 kills in all. Small data keeps each
 * round to milliseconds.
 */
static void test_crash_kills(void **st)
{
	const size_t B = 1500, STEP = 40, ROUNDS = 200;
	cv_dataset *all = t_data(B + ROUNDS * STEP, 16, 10, 31, 0), base = *all;
	cv_build_opts o;
	char *dir = t_tmpdir();
	cv_err e = {{0}};
	size_t live = B, next = B, kills = 0, completed = 0;
	uint64_t s = (uint64_t) time(NULL), took_us = 30000;

	(void) st;
	base.n = B;
	cv_build_opts_default(&o);
	o.max_posting_kb = 8;
	o.threads = 1;
	assert_int_equal(cv_index_build("hfresh", &base, &o, dir, &e), 0);
	for (long round = 0; round < (long) ROUNDS && next + STEP <= all->n &&
			     (round < 60 || kills < 30);
	     round++) {
		long arm = round < 40 ? 1 + round * 4 : 0;
		pid_t pid;
		int status;
		struct timespec t0, t1;
		uint32_t dids[STEP / 2];
		size_t ok[3];

		/* deletes come from a fresh range of built ids each round */
		for (size_t j = 0; j < STEP / 2; j++)
			dids[j] = (uint32_t) (round * (STEP / 2) + j);
		fflush(NULL);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			cv_dataset ins = *all;
			cv_err ce;

			ins.data = all->data + next * 16;
			ins.n = STEP;
			hfr_crash_arm(arm);
			if (cv_index_insert(dir, &ins, (uint32_t) next, &ce))
				_exit(3);
			if (cv_index_delete(dir, dids, STEP / 2, &ce))
				_exit(4);
			_exit(0);
		}
		if (arm == 0) { /* a random moment instead of a step */
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			usleep((useconds_t) ((s >> 33) % (took_us + 1)));
			kill(pid, SIGKILL);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (WIFEXITED(status)) /* an update's whole time: the window to kill in */
			took_us = (uint64_t) ((t1.tv_sec - t0.tv_sec) * 1000000 +
					      (t1.tv_nsec - t0.tv_nsec) / 1000);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			kills++;
		else if (WIFEXITED(status))
			assert_int_equal(WEXITSTATUS(status), 0);
		ok[0] = live;
		ok[1] = live + STEP;
		ok[2] = live + STEP - STEP / 2;
		check_alive(dir, all, ok, 3);
		{
			cv_index *ix;

			assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
			live = cv_index_count(ix);
			cv_index_close(ix);
		}
		if (WIFEXITED(status))
			completed++;
		next += STEP;
	}
	printf("# %zu kills, %zu completed updates, final live count %zu\n", kills, completed, live);
	assert_true(kills >= 30);
	assert_true(completed >= 1);
	t_rmdir(dir);
	free(dir);
	t_data_free(all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_update_recall),
		cmocka_unit_test(test_update_recall_ex4),
		cmocka_unit_test(test_update_recall_ex4_one_replica),
		cmocka_unit_test(test_crash_kills),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
