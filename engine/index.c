/*
 * index.c - the dispatcher behind cv_index.h: DIR/KIND names the kind,
 * each kind supplies a cv_index_ops table (index_ops.h). What the kinds
 * share (block lists, an index's files, progress lines) is index_util.c's,
 * so the kinds never call back into the dispatcher.
 */
#include "index_ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct cv_index {
	const cv_index_ops *ops;
	void *state;
};

static const cv_index_ops *const kinds[] = {&cv_hnsw_ops, &cv_paged_ops, &cv_phnsw_ops,
					    &cv_hfresh_ops};

static const cv_index_ops *find_kind(const char *name)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i]->kind, name))
			return kinds[i];
	return NULL;
}

/* Read DIR/KIND into a kind table. */
static int read_kind(const char *dir, const cv_index_ops **out, cv_err *e)
{
	char path[4096], buf[64] = {0};
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/KIND", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return cv_err_set(e, -ENOENT, "%s: not an index directory (no KIND file)", dir);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return cv_err_set(e, -EBADMSG, "%s: empty KIND file", path);
	buf[strcspn(buf, "\n")] = '\0';
	*out = find_kind(buf);
	if (!*out)
		return cv_err_set(e, -EBADMSG, "%s: unknown index kind '%s'", path, buf);
	return 0;
}

CV_API void cv_build_opts_default(cv_build_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->metric = CV_METRIC_L2;
	o->m = 16;
	o->ef_construction = 200;
	o->partitions = 64;
	o->threads = 0;
	o->seed = 42;
	o->max_posting_kb = 0; /* hfresh: 0, 0, 0: from the dimension (hfresh.h) */
	o->replicas = 0;
	o->rng_factor = 1.0;
	o->code_bits = 0;
}

CV_API void cv_open_opts_default(cv_open_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->buffers_bytes = 128ull << 20;
}

CV_API void cv_query_opts_default(cv_query_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->k = 10;
	o->ef_search = 40;
	o->mode = CV_MODE_SERIAL;
	o->fanout = 1;
	o->merge = CV_MERGE_STREAM;
	o->search_probe = 64;
	o->rescore_limit = 350;
	o->io_mode = CV_HIO_SERIAL;
	o->io_depth = 64;
}

CV_API const char *cv_fanout_via_name(uint32_t via)
{
	switch (via) {
	case CV_FANOUT_URING:
		return "uring";
	case CV_FANOUT_THREADS:
		return "threads";
	default:
		return NULL;
	}
}

CV_API int cv_index_build(const char *kind, const cv_dataset *data, const cv_build_opts *o,
			  const char *dir, cv_err *e)
{
	const cv_index_ops *ops = find_kind(kind);
	char path[4096];
	int rc, fd;

	if (!ops)
		return cv_err_set(e, -EINVAL, "unknown index kind '%s' (hnsw, paged, phnsw, hfresh)",
				  kind);
	if (!ops->build)
		return cv_err_set(e, -ENOTSUP, "index kind '%s' cannot be built in this build", kind);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return cv_err_set(e, -errno, "%s: cannot create: %s", dir, strerror(errno));
	rc = ops->build(data, o, dir, e);
	if (rc)
		return rc;
	/* KIND is written last: a directory without it is not an index. */
	snprintf(path, sizeof(path), "%s/KIND", dir);
	fd = cv_open_new(path, O_WRONLY, 0644);
	if (fd < 0)
		return cv_err_set(e, -errno, "%s: cannot create: %s", path, strerror(errno));
	if (write(fd, kind, strlen(kind)) < 0 || write(fd, "\n", 1) < 0 || fsync(fd) < 0) {
		rc = -errno;
		close(fd);
		return cv_err_set(e, rc, "%s: write failed", path);
	}
	close(fd);
	return 0;
}

CV_API int cv_index_open(const char *dir, const cv_open_opts *o, cv_index **out, cv_err *e)
{
	const cv_index_ops *ops;
	cv_open_opts def;
	cv_index *ix;
	int rc;

	*out = NULL;
	rc = read_kind(dir, &ops, e);
	if (rc)
		return rc;
	if (!ops->open)
		return cv_err_set(e, -ENOTSUP, "index kind '%s' cannot be opened in this build",
				  ops->kind);
	if (!o) {
		cv_open_opts_default(&def);
		o = &def;
	}
	ix = calloc(1, sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	ix->ops = ops;
	rc = ops->open(dir, o, &ix->state, e);
	if (rc) {
		free(ix);
		return rc;
	}
	*out = ix;
	return 0;
}

CV_API void cv_index_close(cv_index *ix)
{
	if (!ix)
		return;
	if (ix->ops->close)
		ix->ops->close(ix->state);
	free(ix);
}

CV_API const char *cv_index_kind(const cv_index *ix)
{
	return ix->ops->kind;
}

CV_API size_t cv_index_dim(const cv_index *ix)
{
	return ix->ops->dim ? ix->ops->dim(ix->state) : 0;
}

CV_API size_t cv_index_count(const cv_index *ix)
{
	return ix->ops->count ? ix->ops->count(ix->state) : 0;
}

CV_API cv_metric cv_index_metric(const cv_index *ix)
{
	return ix->ops->metric ? ix->ops->metric(ix->state) : CV_METRIC_L2;
}

CV_API const char *cv_index_storage(const cv_index *ix)
{
	return ix->ops->storage ? ix->ops->storage(ix->state) : NULL;
}

CV_API unsigned cv_index_partitions(const cv_index *ix)
{
	return ix->ops->partitions ? ix->ops->partitions(ix->state) : 1;
}

CV_API int cv_index_partition_info(const cv_index *ix, unsigned p, cv_partition_info *out)
{
	memset(out, 0, sizeof(*out));
	if (!ix->ops->partition_info)
		return -ENOTSUP;
	if (p >= cv_index_partitions(ix))
		return -ERANGE;
	return ix->ops->partition_info(ix->state, p, out);
}

CV_API void cv_index_drop_buffers(cv_index *ix)
{
	if (ix->ops->drop_buffers)
		ix->ops->drop_buffers(ix->state);
}

CV_API int cv_index_query(cv_index *ix, cv_io *io, const float *q, const cv_query_opts *o,
			  uint32_t *ids, float *dists, size_t *nout, cv_query_stats *stats)
{
	cv_query_opts def;

	if (!ix->ops->query)
		return -ENOTSUP;
	if (!o) {
		cv_query_opts_default(&def);
		o = &def;
	}
	return ix->ops->query(ix->state, io, q, o, ids, dists, nout, stats);
}

CV_API int cv_index_verify(const char *dir, cv_err *e)
{
	const cv_index_ops *ops;
	int rc = read_kind(dir, &ops, e);

	if (rc)
		return rc;
	if (!ops->verify)
		return cv_err_set(e, -ENOTSUP, "index kind '%s' has no verifier", ops->kind);
	return ops->verify(dir, e);
}

CV_API int cv_index_insert(const char *dir, const cv_dataset *data, uint32_t first_id, cv_err *e)
{
	const cv_index_ops *ops;
	int rc = read_kind(dir, &ops, e);

	if (rc)
		return rc;
	if (!ops->insert)
		return cv_err_set(e, -ENOTSUP, "index kind '%s' does not take live inserts",
				  ops->kind);
	return ops->insert(dir, data, first_id, e);
}

CV_API int cv_index_delete(const char *dir, const uint32_t *ids, size_t n, cv_err *e)
{
	const cv_index_ops *ops;
	int rc = read_kind(dir, &ops, e);

	if (rc)
		return rc;
	if (!ops->del)
		return cv_err_set(e, -ENOTSUP, "index kind '%s' does not take live deletes",
				  ops->kind);
	return ops->del(dir, ids, n, e);
}
