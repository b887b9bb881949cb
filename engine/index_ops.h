/*
 * index_ops.h - private: what each index kind supplies to index.c's
 * dispatcher. One const table per kind, defined in the kind's folder.
 */
#ifndef CV_INDEX_OPS_H
#define CV_INDEX_OPS_H

#include "coldvec.h"

#include <stdint.h>

typedef struct cv_index_ops {
	const char *kind;
	int (*build)(const cv_dataset *data, const cv_build_opts *o, const char *dir, cv_err *e);
	int (*open)(const char *dir, const cv_open_opts *o, void **state, cv_err *e);
	void (*close)(void *state);
	size_t (*dim)(const void *state);
	size_t (*count)(const void *state);
	cv_metric (*metric)(const void *state);
	unsigned (*partitions)(const void *state);
	const char *(*storage)(const void *state); /* how vectors are held in memory; may be NULL */
	int (*partition_info)(const void *state, unsigned p, cv_partition_info *out);
	void (*drop_buffers)(void *state);
	int (*query)(void *state, cv_io *io, const float *q, const cv_query_opts *o, uint32_t *ids,
		     float *dists, size_t *nout, cv_query_stats *stats);
	int (*verify)(const char *dir, cv_err *e);
	int (*insert)(const char *dir, const cv_dataset *data, uint32_t first_id, cv_err *e);
	int (*del)(const char *dir, const uint32_t *ids, size_t n, cv_err *e);
} cv_index_ops;

/*
 * The one build progress line every kind draws on stderr: cv_progress
 * (cv_base.h) with the verb "building". Callers rate-limit.
 */
void cv_progress_line(const char *what, size_t done, size_t total, uint64_t t0_ns);

/* Defined in engine/hnsw/ (hnsw, paged, phnsw) and engine/hfresh/. NULL members: -ENOTSUP. */
extern const cv_index_ops cv_hnsw_ops;
extern const cv_index_ops cv_paged_ops;
extern const cv_index_ops cv_phnsw_ops;
extern const cv_index_ops cv_hfresh_ops;

#endif
