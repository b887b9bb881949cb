/*
 * cv_data.h - datasets by spec string, exact ground truth, recall.
 *
 * Spec strings: fashion-mnist[:train|:test], fvecs:PATH, ivecs:PATH,
 * bvecs:PATH, idx:PATH (gzip or plain), npy:PATH (float32/uint8, C order),
 * synth:n=N,d=D,clusters=C,seed=S (Gaussian mixture, byte-identical on
 * every machine for the same spec). uint8 inputs are widened to float32.
 */
#ifndef CV_DATA_H
#define CV_DATA_H

#include "cv_base.h"

typedef struct cv_dataset {
	size_t n, d;
	float *data;          /* n * d, row-major, 64-byte aligned */
	char spec[512];       /* the spec it was loaded from */
	unsigned char sha256[32]; /* content hash over (n, d, data) */
} cv_dataset;

/* Load a dataset; -EINVAL etc. with e naming file and byte offset. */
CV_API int cv_dataset_load(const char *spec, cv_dataset **out, cv_err *e);

/* A dataset over rows [first, first+count) of src (a copy). */
CV_API int cv_dataset_slice(const cv_dataset *src, size_t first, size_t count, cv_dataset **out);

CV_API void cv_dataset_free(cv_dataset *ds);

static inline const float *cv_row(const cv_dataset *ds, size_t i)
{
	return ds->data + i * ds->d;
}

/* TEXMEX ivecs: nq rows of k int32 ids. */
CV_API int cv_ivecs_write(const char *path, const int32_t *ids, size_t nq, size_t k, cv_err *e);
CV_API int cv_ivecs_read(const char *path, int32_t **ids, size_t *nq, size_t *k, cv_err *e);

/*
 * Exact k nearest neighbours of every query (blocked, multi-threaded,
 * ties broken by lower id). ids: nq*k, dists: nq*k (may be NULL).
 */
CV_API int cv_groundtruth(const cv_dataset *base, const cv_dataset *queries, size_t k,
			  cv_metric m, int threads, int32_t *ids, float *dists);

/*
 * As cv_groundtruth, cached under cache_dir by the inputs' content hashes,
 * k and metric. cache_dir NULL: $COLDSTUDY_CACHE or ~/.cache/coldstudy.
 */
CV_API int cv_groundtruth_cached(const cv_dataset *base, const cv_dataset *queries, size_t k,
				 cv_metric m, int threads, const char *cache_dir, int32_t **ids,
				 cv_err *e);

/*
 * recall@k as ann-benchmarks computes it: a returned id counts if its true
 * distance to the query is <= the k-th true distance + 1e-3.
 */
CV_API double cv_recall_at_k(const cv_dataset *base, const float *query, cv_metric m,
			     const int32_t *true_ids, size_t k, const uint32_t *got, size_t ngot);

#endif
