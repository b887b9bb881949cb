/*
 * cv_data.h - datasets by spec string, exact ground truth, recall.
 *
 * Spec strings (uint8 and integer inputs are widened to float32):
 *   fashion-mnist[:train|:test]  the Debian package dataset-fashion-mnist
 *                    (gzip IDX under /usr/share/datasets/fashion-mnist, or
 *                    $COLDSTUDY_FASHION_MNIST): 60,000 x 784 train (the
 *                    default), 10,000 x 784 test
 *   fvecs:PATH, ivecs:PATH, bvecs:PATH   TEXMEX (per row: int32 d, then d
 *                    float32 / int32 / uint8), gzip or plain; ivecs values
 *                    become floats (exact up to 2^24; read ids with
 *                    cv_ivecs_read instead)
 *   idx:PATH         IDX (big-endian; u8, i8, i16, i32, f32, f64), gzip or
 *                    plain; n = dims[0], d = product of the others
 *   npy:PATH         NumPy .npy v1-3, '<f4' or '|u1', C order; n = shape[0]
 *   hdf5:PATH[:train|:test|:neighbors|:distances]   an ann-benchmarks HDF5
 *                    file's member (default train), any numeric type as
 *                    float32, through libhdf5 (-ENOTSUP when built without);
 *                    cv_ivecs_read("hdf5:PATH") reads its neighbors as ids
 *                    (an integer type only); cv_hdf5_describe reads the
 *                    file's `distance` attribute and train's row count
 *   synth:n=N,d=D[,clusters=C][,seed=S][,sigma=X]   a Gaussian mixture:
 *                    C centres (default 10) with N(0,1) coordinates, each
 *                    point a uniformly chosen centre plus N(0, X^2) noise
 *                    (X default 0.5), from xoshiro256** seeded by S (default
 *                    0) and a polar normal transform in IEEE double with no
 *                    libm transcendental, so the bytes are the same on every
 *                    machine for the same spec.
 * Any spec may end in a row range [A:B] (rows A..B-1; either bound may be
 * left out): "fashion-mnist:test[0:100]".
 *
 * Refused, with -EINVAL (malformed) or -EOVERFLOW (absurd size) and one
 * line naming the file and byte offset (in the decompressed stream for
 * gzip): truncated files, wrong magic, rows of different dimension,
 * trailing bytes, NaN or Inf, d > CV_DATA_MAX_DIM, n*d > CV_DATA_MAX_VALUES.
 * A missing file is -ENOENT.
 *
 * The content hash is SHA-256 over (n as uint64 LE, d as uint64 LE, the
 * n*d float32 values LE): equal data gives equal hashes whatever the
 * source format.
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

/*
 * spec with its file's path absolute and resolved (realpath), member and
 * row range kept; specs naming no file (fashion-mnist, synth:) unchanged.
 * 0, or -ENOENT etc. / -ENAMETOOLONG (past cap) with e set.
 */
CV_API int cv_dataset_spec_resolve(const char *spec, char *out, size_t cap, cv_err *e);

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

/* on: cv_groundtruth draws a progress line on stderr (cv_progress) while it computes; off by default. */
CV_API void cv_groundtruth_progress(int on);

/*
 * As cv_groundtruth, cached under cache_dir by the inputs' content hashes,
 * k and metric. cache_dir NULL: $COLDSTUDY_CACHE or ~/.cache/coldstudy.
 */
CV_API int cv_groundtruth_cached(const cv_dataset *base, const cv_dataset *queries, size_t k,
				 cv_metric m, int threads, const char *cache_dir, int32_t **ids,
				 cv_err *e);

/*
 * recall@k as ann-benchmarks computes it: of the first k returned ids, one
 * counts if its true distance to the query is <= the k-th true distance +
 * 1e-3 (for l2 compared as Euclidean, not squared, distance, as
 * ann-benchmarks does); repeated ids and ids past the base count once /
 * not at all. Returns hits / k in [0, 1], or NaN on bad arguments (a
 * true id outside the base: ground truth of another base), which callers
 * must refuse rather than average.
 */
CV_API double cv_recall_at_k(const cv_dataset *base, const float *query, cv_metric m,
			     const int32_t *true_ids, size_t k, const uint32_t *got, size_t ngot);

/* What an ann-benchmarks HDF5 file says of itself. */
typedef struct cv_hdf5_info {
	char distance[32]; /* the file's `distance` attribute, "" when it has none */
	int has_metric;    /* distance names a metric: euclidean (l2), angular or cosine
			    * (cosine), dot or ip (ip) */
	cv_metric metric;
	size_t train_rows; /* rows of `train`, 0 when it has none */
} cv_hdf5_info;

/*
 * Describe the file of an hdf5: spec (any member or row range is ignored);
 * -EINVAL, -ENOENT or -ENOTSUP (built without libhdf5) with e set.
 */
CV_API int cv_hdf5_describe(const char *spec, cv_hdf5_info *out, cv_err *e);

/* Caps on what a loader accepts (larger is refused with -EOVERFLOW). */
#define CV_DATA_MAX_DIM 65536
#define CV_DATA_MAX_VALUES ((size_t) 1 << 31) /* 8 GiB of float32 */

/* The content hash as 64 lowercase hex digits + NUL. */
CV_API void cv_dataset_hash_hex(const cv_dataset *ds, char out[65]);

/*
 * The exact k nearest neighbours with their distances, cached as
 * cv_groundtruth_cached (ids nq*k, dists nq*k, both new, caller frees;
 * dists may be NULL). *from_cache says whether it was a cache hit (may be NULL).
 */
CV_API int cv_groundtruth_cached2(const cv_dataset *base, const cv_dataset *queries, size_t k,
				  cv_metric m, int threads, const char *cache_dir, int32_t **ids,
				  float **dists, int *from_cache, cv_err *e);

#endif
