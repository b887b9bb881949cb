/*
 * pool.c - a pool of reader threads kept for a session (cv_pool, cv_index.h).
 *
 * A fan-out of C synchronous readers needs C threads at once, query after
 * query. Starting them for every query costs a clone, a stack and a join
 * each time, and a thread made at the wrong moment is made in the wrong
 * place: the block throttle (harness/throttle.c) caps the threads of its
 * cgroup, and a new thread starts in its creator's.
 *
 * Invariants, all under mu:
 *   - idle counts the started threads not running a task; queued the tasks
 *     not yet taken. cv_pool_team starts threads until idle >= queued, so
 *     the n - 1 tasks of a team each have a thread of their own and run
 *     together (several callers may share the pool: each one's tasks are
 *     added to the others' before the count is made).
 *   - join_gen counts cv_pool_set_join calls. A thread remembers the
 *     generation it last joined; before every task it runs the join of a
 *     newer generation (a thread started later runs the current one before
 *     its first task), outside mu, and runs the task only if the join
 *     succeeded: a pool thread never reads outside the place the session
 *     put its threads (fail closed: the team returns the join's -errno).
 *   - a team's caller waits for its tasks, so a task's ctx outlives it.
 *
 * Threads exit only at cv_pool_free. Error convention: 0 or -errno.
 */
#include "coldvec.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct pool_call {
	void (*fn)(void *ctx, unsigned w);
	void *ctx;
	unsigned left;           /* tasks not finished */
	int rc;                  /* the first join failure */
	pthread_cond_t done;     /* left reached 0 */
} pool_call;

typedef struct pool_task {
	pool_call *call;
	unsigned w;
	struct pool_task *next;
} pool_task;

struct cv_pool {
	pthread_mutex_t mu;
	pthread_cond_t work;     /* a task was queued, or stop */
	pool_task *head, *tail;
	unsigned queued, idle, nthreads, max;
	pthread_t *tid;          /* max entries, nthreads started */
	int (*join)(void *ctx);
	void *join_ctx;
	uint64_t join_gen;
	uint64_t teams, tasks;   /* cv_pool_stats */
	bool stop;
};

/* A pool thread: take a task, join where the session says, run it, repeat until stop. */
static void *pool_main(void *arg)
{
	cv_pool *p = arg;
	uint64_t joined = 0;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		pool_task *t;
		int (*join)(void *ctx);
		void *jctx;
		uint64_t gen;
		int rc = 0;

		while (!p->head && !p->stop)
			pthread_cond_wait(&p->work, &p->mu);
		if (!p->head)
			break;
		t = p->head;
		p->head = t->next;
		if (!p->head)
			p->tail = NULL;
		p->queued--;
		p->idle--;
		join = p->join;
		jctx = p->join_ctx;
		gen = p->join_gen;
		pthread_mutex_unlock(&p->mu);
		if (gen != joined) {
			rc = join ? join(jctx) : 0;
			if (!rc)
				joined = gen;
		}
		if (!rc)
			t->call->fn(t->call->ctx, t->w);
		pthread_mutex_lock(&p->mu);
		p->idle++;
		if (rc && !t->call->rc)
			t->call->rc = rc;
		if (--t->call->left == 0)
			pthread_cond_signal(&t->call->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

CV_API int cv_pool_new(unsigned max_threads, cv_pool **out)
{
	cv_pool *p;

	*out = NULL;
	if (max_threads == 0)
		max_threads = CV_POOL_MAX_THREADS;
	if (max_threads > CV_POOL_MAX_THREADS)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->tid = calloc(max_threads, sizeof(*p->tid));
	if (!p->tid) {
		free(p);
		return -ENOMEM;
	}
	p->max = max_threads;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	*out = p;
	return 0;
}

CV_API void cv_pool_free(cv_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->tid[i], NULL);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->mu);
	free(p->tid);
	free(p);
}

CV_API void cv_pool_set_join(cv_pool *p, int (*join)(void *ctx), void *ctx)
{
	pthread_mutex_lock(&p->mu);
	p->join = join;
	p->join_ctx = ctx;
	p->join_gen++;
	pthread_mutex_unlock(&p->mu);
}

CV_API void cv_pool_stats(cv_pool *p, cv_pool_counts *out)
{
	pthread_mutex_lock(&p->mu);
	out->threads = p->nthreads;
	out->teams = p->teams;
	out->tasks = p->tasks;
	pthread_mutex_unlock(&p->mu);
}

CV_API int cv_pool_team(cv_pool *p, unsigned n, void (*fn)(void *ctx, unsigned w), void *ctx)
{
	pool_call call = {.fn = fn, .ctx = ctx};
	pool_task *tasks = NULL;
	int rc = 0;

	if (n <= 1) {
		if (n)
			fn(ctx, 0);
		return 0;
	}
	tasks = calloc(n - 1, sizeof(*tasks));
	if (!tasks)
		return -ENOMEM;
	pthread_cond_init(&call.done, NULL);
	pthread_mutex_lock(&p->mu);
	/* a thread for every task queued, this team's included */
	while (p->idle < p->queued + n - 1 && p->nthreads < p->max) {
		if (pthread_create(&p->tid[p->nthreads], NULL, pool_main, p))
			break;
		p->nthreads++;
		p->idle++;
	}
	if (!p->nthreads) {
		pthread_mutex_unlock(&p->mu);
		rc = -EAGAIN;
		goto out;
	}
	for (unsigned w = 1; w < n; w++) {
		pool_task *t = &tasks[w - 1];

		*t = (pool_task){.call = &call, .w = w};
		if (p->tail)
			p->tail->next = t;
		else
			p->head = t;
		p->tail = t;
	}
	p->queued += n - 1;
	call.left = n - 1;
	p->teams++;
	p->tasks += n - 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	fn(ctx, 0);
	pthread_mutex_lock(&p->mu);
	while (call.left)
		pthread_cond_wait(&call.done, &p->mu);
	rc = call.rc;
	pthread_mutex_unlock(&p->mu);
out:
	pthread_cond_destroy(&call.done);
	free(tasks);
	return rc;
}
