/*
 * hnsw.h - private: the in-memory HNSW (Malkov & Yashunin 2018).
 *
 * Small on purpose: it also serves HFresh's centroid index, which adds
 * and deletes centroids while searching. Vectors are float32 or 8-bit
 * scalar-quantized (params.quant8). Labels are the caller's uint32 ids.
 * Error convention: 0 or -errno.
 *
 * Concurrency: hnsw_search may run concurrently with other searches and
 * with hnsw_add / hnsw_mark_deleted (per-node locks, as hnswlib).
 * hnsw_save, hnsw_quant8_train and the hnsw_node_* accessors need a
 * quiescent graph (no add in flight).
 *
 * Distances: L2 is squared Euclidean; IP is -<q,x>; cosine normalises
 * vectors at insert and query and returns 1 - <q,x>.
 *
 * quant8: every dimension j is stored as an 8-bit code c with
 * x ~ lo[j] + scale[j] * c, lo/scale from the per-dimension min/max of
 * training data: hnsw_build trains on its input when the graph is empty
 * and untrained, hnsw_quant8_train on a caller's sample. A graph that
 * receives hnsw_add before any training uses the global range
 * [q8_min, q8_max] from the params, or, when those are equal, the first
 * vector's range widened by its own span on both sides. Values outside
 * the range are clamped. Queries stay float32 (asymmetric distances).
 *
 * Exact bytes (store HNSW_STORE_AUTO, the default): a float32 graph whose
 * vectors are all whole numbers 0..255 (image data: MNIST, fashion-mnist,
 * SIFT) keeps them as one byte each instead of four. Nothing is lost: a
 * byte converts back to the same float, and the kernels do the float32
 * kernels' arithmetic in their order, so every distance, link and result
 * is bit for bit the float32 graph's, from a quarter of the memory
 * traffic. hnsw_build picks it when the graph is empty and every input
 * value qualifies, hnsw_load when every stored vector does (the file
 * keeps float32 either way); never for cosine (vectors are normalised).
 * Such a graph refuses, with -ERANGE and before changing anything, an
 * hnsw_add whose vector it cannot hold exactly; HNSW_STORE_F32 keeps four
 * bytes a value for a graph that must take any float later, and
 * $COLDSTUDY_HNSW_STORE=float32 does so for a whole process (the bench's
 * float32 figures on the same data).
 */
#ifndef CV_HNSW_H
#define CV_HNSW_H

#include "coldvec.h"

typedef struct hnsw hnsw;

typedef struct hnsw_params {
	unsigned m;               /* links per node; layer 0 gets 2m */
	unsigned ef_construction;
	cv_metric metric;
	int quant8;               /* store 8-bit quantized vectors */
	uint64_t seed;
	float q8_min, q8_max;     /* quant8 global range before training (see above) */
	int store;                /* HNSW_STORE_AUTO (0) or HNSW_STORE_F32 (see above) */
} hnsw_params;

enum { HNSW_STORE_AUTO = 0, HNSW_STORE_F32 = 1 };

/* An empty graph for vectors of dim, room for capacity nodes (grows). */
int hnsw_new(size_t dim, const hnsw_params *p, size_t capacity, hnsw **out);
void hnsw_free(hnsw *h);

/* Insert one vector under label (thread-safe against other adds and searches); -EEXIST if taken. */
int hnsw_add(hnsw *h, const float *vec, uint32_t label);

/*
 * Insert n vectors, labels 0..n-1, with threads workers (0: all cores);
 * progress may be NULL and is called from the calling thread only.
 */
int hnsw_build(hnsw *h, const float *data, size_t n, unsigned threads,
	       void (*progress)(size_t done, size_t total, void *ud), void *ud);

/* Hide label from search results (its node still routes). -ENOENT if unknown. */
int hnsw_mark_deleted(hnsw *h, uint32_t label);

/* The k nearest labels to q with search width ef (>= k), nearest first. */
int hnsw_search(const hnsw *h, const float *q, size_t k, unsigned ef, uint32_t *labels,
		float *dists, size_t *nout);

size_t hnsw_count(const hnsw *h);

/*
 * Graph access for writers of other layouts (the paged HNSW writes this
 * graph into pgvector's page format). Nodes are numbered 0..count-1 in
 * insertion order.
 */
uint32_t hnsw_node_label(const hnsw *h, uint32_t node);
int hnsw_node_level(const hnsw *h, uint32_t node);
/* Neighbour node numbers of node at level into out (up to max); returns the count. */
size_t hnsw_node_neighbors(const hnsw *h, uint32_t node, int level, uint32_t *out, size_t max);
/* The entry point node and the top level; -ENOENT when empty. */
int hnsw_entry(const hnsw *h, uint32_t *node, int *level);
/* A node's vector (float32; dequantized into buf when quant8). */
const float *hnsw_node_vector(const hnsw *h, uint32_t node, float *buf);
size_t hnsw_dim(const hnsw *h);

/* Versioned, checksummed file format. -EBADMSG on damage. */
int hnsw_save(const hnsw *h, const char *path);
int hnsw_load(const char *path, hnsw **out, cv_err *e);

/* ---- additions ---- */

/* As hnsw_search; *ndist (may be NULL) is increased by the distances computed. */
int hnsw_search_n(const hnsw *h, const float *q, size_t k, unsigned ef, uint32_t *labels,
		  float *dists, size_t *nout, uint64_t *ndist);

/* Set quant8's per-dimension ranges from n sample rows; -EBUSY once nodes exist, -EINVAL if not quant8. */
int hnsw_quant8_train(hnsw *h, const float *data, size_t n);

/* The graph's parameters (m, ef_construction, metric, quant8, seed). */
const hnsw_params *hnsw_get_params(const hnsw *h);

/* How many threads inserted nodes in the last hnsw_build (tests assert the path ran). */
unsigned hnsw_build_threads(const hnsw *h);

/* Whether node is marked deleted. */
int hnsw_node_deleted(const hnsw *h, uint32_t node);

/* The distance kernel set in use: "scalar", "avx2" or "avx512". */
const char *hnsw_kernels(void);

/* How the graph stores a vector: "float32", "float32+sketch8" (hnsw_sketch.c), "quant8" or "exact8" (bytes, see above). */
const char *hnsw_storage(const hnsw *h);

#endif
