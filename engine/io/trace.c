/*
 * trace.c - the per-read trace that virtual-time replay consumes.
 *
 * A trace is a fixed array of cap records, allocated once; appending is
 * an atomic increment and a store, so several cv_io contexts (threads)
 * may share one trace. Records land in completion order. Reads past cap
 * are counted as dropped, never silently lost. The file table maps each
 * cv_file seen to a small index (a lock is taken only on the first read
 * of a file after the last one looked up). Reading the trace while
 * writers are still running is not supported.
 */
#include "io_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_FILES_MAX 4096

struct cv_trace {
	cv_trace_rec *recs;
	size_t cap;
	atomic_size_t n;
	atomic_uint_least64_t dropped;
	pthread_mutex_t mu;
	uint32_t nfiles;
	uint32_t file_ids[TRACE_FILES_MAX];
	char *file_paths[TRACE_FILES_MAX];
	_Atomic uint64_t last; /* (file id << 32) | index of the last file looked up */
};

/* A new trace of at most cap records; 0 or -ENOMEM / -EINVAL. Free with cv_trace_free. */
CV_API int cv_trace_new(size_t cap, cv_trace **out)
{
	cv_trace *t;

	*out = NULL;
	if (cap == 0 || cap > ((size_t) 1 << 32))
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->recs = malloc(cap * sizeof(*t->recs));
	if (!t->recs) {
		free(t);
		return -ENOMEM;
	}
	t->cap = cap;
	pthread_mutex_init(&t->mu, NULL);
	*out = t;
	return 0;
}

/* Free; accepts NULL. */
CV_API void cv_trace_free(cv_trace *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nfiles; i++)
		free(t->file_paths[i]);
	pthread_mutex_destroy(&t->mu);
	free(t->recs);
	free(t);
}

CV_API size_t cv_trace_len(const cv_trace *t)
{
	size_t n = atomic_load(&((cv_trace *) t)->n);

	return n < t->cap ? n : t->cap;
}

CV_API const cv_trace_rec *cv_trace_recs(const cv_trace *t)
{
	return t->recs;
}

/* Forget every record and file (not thread-safe against writers). */
CV_API void cv_trace_clear(cv_trace *t)
{
	for (uint32_t i = 0; i < t->nfiles; i++)
		free(t->file_paths[i]);
	t->nfiles = 0;
	atomic_store(&t->last, 0);
	atomic_store(&t->n, 0);
	atomic_store(&t->dropped, 0);
}

CV_API uint64_t cv_trace_dropped(const cv_trace *t)
{
	return atomic_load(&((cv_trace *) t)->dropped);
}

CV_API uint32_t cv_trace_nfiles(const cv_trace *t)
{
	return t->nfiles;
}

CV_API const char *cv_trace_file_path(const cv_trace *t, uint32_t idx)
{
	return idx < t->nfiles ? t->file_paths[idx] : NULL;
}

/* The trace's index for f (added on first sight); UINT32_MAX when the table is full. */
static uint32_t file_index(cv_trace *t, const cv_file *f)
{
	uint64_t last = atomic_load(&t->last);
	uint32_t idx = UINT32_MAX;

	if (last && (uint32_t) (last >> 32) == f->id)
		return (uint32_t) last;
	pthread_mutex_lock(&t->mu);
	for (uint32_t i = 0; i < t->nfiles; i++)
		if (t->file_ids[i] == f->id) {
			idx = i;
			break;
		}
	if (idx == UINT32_MAX && t->nfiles < TRACE_FILES_MAX) {
		char *p = strdup(f->path);

		if (p) {
			idx = t->nfiles;
			t->file_ids[idx] = f->id;
			t->file_paths[idx] = p;
			t->nfiles++;
		}
	}
	pthread_mutex_unlock(&t->mu);
	if (idx != UINT32_MAX)
		atomic_store(&t->last, ((uint64_t) f->id << 32) | idx);
	return idx;
}

/* Append one read's record (or count it dropped when the trace is full). */
void cvio_trace_add(cv_trace *t, const cv_file *f, uint32_t stream, uint32_t batch, uint64_t off,
		    uint32_t len, uint64_t submit_ns, uint64_t complete_ns)
{
	size_t i = atomic_fetch_add(&t->n, 1);
	cv_trace_rec *r;

	if (i >= t->cap) {
		atomic_fetch_add(&t->dropped, 1);
		return;
	}
	r = &t->recs[i];
	r->stream = stream;
	r->batch = batch;
	r->off = off;
	r->len = len;
	r->file = file_index(t, f);
	r->submit_ns = submit_ns;
	r->complete_ns = complete_ns;
}

/* Append a hand-made record; 0 or -ENOSPC when full. */
CV_API int cv_trace_append(cv_trace *t, const cv_trace_rec *r)
{
	size_t i = atomic_fetch_add(&t->n, 1);

	if (i >= t->cap) {
		atomic_fetch_add(&t->dropped, 1);
		return -ENOSPC;
	}
	t->recs[i] = *r;
	return 0;
}

/* Add a path to the file table of a loaded trace (its id outside cv_file's range). */
int cvio_trace_add_path(cv_trace *t, const char *path)
{
	char *p;

	if (t->nfiles >= TRACE_FILES_MAX)
		return -ENOSPC;
	p = strdup(path);
	if (!p)
		return -ENOMEM;
	t->file_ids[t->nfiles] = UINT32_MAX - t->nfiles;
	t->file_paths[t->nfiles++] = p;
	return 0;
}

/* Set the dropped count (a loaded trace keeps its capture's). */
void cvio_trace_set_dropped(cv_trace *t, uint64_t dropped)
{
	atomic_store(&t->dropped, dropped);
}
