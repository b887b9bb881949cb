/*
 * hnsw_ops.c - the "hnsw" index kind behind cv_index.h: the in-memory
 * graph, built into DIR/hnsw.bin and loaded whole at open. A query reads
 * nothing from disk, so it ignores the cv_io (its counters stay zero);
 * cv_query_stats.distances counts the distances it computed. verify loads
 * the file, which checks the SHA-256 and every field and link.
 */
#include "hnsw.h"
#include "index_ops.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define GRAPH_FILE "hnsw.bin"

/* DIR/hnsw.bin into buf; -ENAMETOOLONG if it does not fit. */
static int graph_path(const char *dir, char *buf, size_t len)
{
	return (size_t) snprintf(buf, len, "%s/%s", dir, GRAPH_FILE) >= len ? -ENAMETOOLONG : 0;
}

/* The build's progress line on stderr; ud holds the build's start (cv_progress_start). */
static void bar(size_t done, size_t total, void *ud)
{
	cv_progress_line("hnsw", done, total, *(const uint64_t *) ud);
}

static int ops_build(const cv_dataset *data, const cv_build_opts *o, const char *dir, cv_err *e)
{
	hnsw_params p = {.m = o->m, .ef_construction = o->ef_construction, .metric = o->metric,
			 .seed = o->seed};
	char path[4096];
	hnsw *h = NULL;
	uint64_t t0;
	int rc;

	if (graph_path(dir, path, sizeof(path)))
		return cv_err_set(e, -ENAMETOOLONG, "%s: path too long", dir);
	if (data->n == 0 || data->n > UINT32_MAX)
		return cv_err_set(e, -EINVAL, "%s: %zu rows; an hnsw index needs 1..2^31", data->spec,
				  data->n);
	rc = hnsw_new(data->d, &p, data->n, &h);
	if (rc)
		return cv_err_set(e, rc, "hnsw: bad parameters (m %u, ef_construction %u, dim %zu)",
				  o->m, o->ef_construction, data->d);
	t0 = cv_progress_start();
	rc = hnsw_build(h, data->data, data->n, o->threads,
			o->progress && isatty(2) ? bar : NULL, &t0);
	if (rc) {
		rc = cv_err_set(e, rc, "hnsw: build failed: %s", strerror(-rc));
		goto out;
	}
	rc = hnsw_save(h, path);
	if (rc)
		rc = cv_err_set(e, rc, "%s: cannot write: %s", path, strerror(-rc));
out:
	hnsw_free(h);
	return rc;
}

static int ops_open(const char *dir, const cv_open_opts *o, void **state, cv_err *e)
{
	char path[4096];

	(void) o;
	if (graph_path(dir, path, sizeof(path)))
		return cv_err_set(e, -ENAMETOOLONG, "%s: path too long", dir);
	return hnsw_load(path, (hnsw **) state, e);
}

static void ops_close(void *state)
{
	hnsw_free(state);
}

static size_t ops_dim(const void *state)
{
	return hnsw_dim(state);
}

static size_t ops_count(const void *state)
{
	return hnsw_count(state);
}

static cv_metric ops_metric(const void *state)
{
	return hnsw_get_params(state)->metric;
}

static const char *ops_storage(const void *state)
{
	return hnsw_storage(state);
}

static int ops_query(void *state, cv_io *io, const float *q, const cv_query_opts *o, uint32_t *ids,
		     float *dists, size_t *nout, cv_query_stats *stats)
{
	uint64_t nd = 0;
	int rc;

	(void) io;
	rc = hnsw_search_n(state, q, o->k, o->ef_search ? o->ef_search : 40, ids, dists, nout, &nd);
	if (stats)
		stats->distances += nd;
	return rc;
}

static int ops_verify(const char *dir, cv_err *e)
{
	char path[4096];
	hnsw *h = NULL;
	int rc;

	if (graph_path(dir, path, sizeof(path)))
		return cv_err_set(e, -ENAMETOOLONG, "%s: path too long", dir);
	rc = hnsw_load(path, &h, e);
	hnsw_free(h);
	return rc;
}

const cv_index_ops cv_hnsw_ops = {
	.kind = "hnsw",
	.build = ops_build,
	.open = ops_open,
	.close = ops_close,
	.dim = ops_dim,
	.count = ops_count,
	.metric = ops_metric,
	.storage = ops_storage,
	.query = ops_query,
	.verify = ops_verify,
};
