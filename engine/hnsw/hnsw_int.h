/*
 * hnsw_int.h - private to engine/hnsw/ (and its tests): the graph's memory
 * layout, the search context, the distance kernels and the file decoder.
 *
 * Layout. Every node owns one fixed-size record, 64-byte aligned, as
 * hnswlib's data_level0_memory_: its vector first (float32, quant8 codes or
 * exact bytes, h->vtype),
 * then a small header (label, level, deleted flag, a spinlock), the
 * layer-0 link count and 2m link slots, and a pointer to its upper-layer
 * links (level * (1 + m) uint32: a count and m slots per layer, allocated
 * once at insertion). Records live in segments that never move: segment s
 * holds base << s records, so the graph grows under concurrent searches
 * without a realloc, and node -> record is one compare in the common case
 * (everything in segment 0 when the capacity was known up front).
 *
 * Invariants. A node's record is fully written before its id is stored in
 * any link list or published as the entry point (a release fence orders
 * it), so a search that finds an id may read that record without a lock.
 * A link at layer l always names a node whose level is >= l (the loader
 * checks this for files). Link lists are written under the owning node's
 * spinlock; lock-free readers may see a list half rewritten, which only
 * ever mixes valid ids, and the count is stored with release order.
 */
#ifndef CV_HNSW_INT_H
#define CV_HNSW_INT_H

#include "hnsw.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#define HNSW_MAGIC       0x57534e48u /* "HNSW" little-endian */
#define HNSW_FILE_MAGIC2 0x31564331u /* "1CV1" */
#define HNSW_VERSION     1u
#define HNSW_MIN_M       2u
#define HNSW_MAX_M       100u
#define HNSW_MIN_EFC     1u
#define HNSW_MAX_EFC     4096u
#define HNSW_MAX_DIM     65536u
#define HNSW_MAX_LEVEL   31
#define HNSW_MAX_SEGS    40
#define HNSW_MAX_NODES   0x7fffffffu

/* The header in front of each node's layer-0 links. */
typedef struct hnsw_hdr {
	uint32_t label;
	uint8_t level;
	uint8_t deleted;
	uint16_t pad;
	uint32_t lock;   /* spinlock over this node's link lists */
	uint32_t nlink0; /* layer-0 link count (release-stored) */
} hnsw_hdr;

/* A (distance, node) pair in a heap. */
typedef struct hnsw_pair {
	float d;
	uint32_t id;
} hnsw_pair;

/* A prepared query: what the kernels compare stored vectors against. */
typedef struct hnsw_query {
	const float *a; /* float32: the (normalised) query; quant8: transformed */
	const float *w; /* quant8 L2: per-dimension weights (scale^2) */
	float cst;      /* quant8: the constant part of the distance */
	const int16_t *sa; /* the sketch's query (hnsw_sketch.c), NULL when it is off */
	double sk_e;     /* the bound on sa's rounding */
} hnsw_query;

struct hnsw;
typedef uint64_t (*hnsw_sketch_fn)(const int16_t *a, const uint8_t *c, size_t nb, uint64_t limit);
typedef float (*hnsw_qdist_fn)(const hnsw_query *q, const void *v, size_t d);
typedef float (*hnsw_ndist_fn)(const struct hnsw *h, const void *a, const void *b);

/*
 * One searcher's scratch: visited tags, the two heaps, the prepared query.
 * Taken from the graph's pool for one search and given back, so a search
 * allocates nothing once the pool is warm.
 */
typedef struct hnsw_ctx {
	struct hnsw_ctx *next;
	uint16_t *visited;
	size_t nvisited;
	uint16_t tag;
	hnsw_pair *cand; /* min-heap */
	size_t ncand, capcand;
	hnsw_pair *top;  /* max-heap, at most ef + 1 */
	size_t ntop, captop;
	float *qbuf;     /* the prepared query (dim floats) */
	int16_t *sbuf;   /* the sketch's query (sk_bytes values, 64-aligned), NULL without */
	uint32_t *links; /* a copied link list (2m) */
	hnsw_pair *sel;  /* heuristic scratch */
	size_t capsel;
	hnsw_pair *lsel; /* an insertion's selected neighbours, 2m slots per layer */
	uint8_t nlsel[HNSW_MAX_LEVEL + 1];
	uint64_t ndist;  /* distance computations */
} hnsw_ctx;

/* How a record holds its vector. */
enum hnsw_vtype {
	HNSW_V_F32,  /* dim float32 */
	HNSW_V_Q8,   /* dim quant8 codes (lossy, params.quant8) */
	HNSW_V_U8,   /* dim bytes, each a float32 whole number 0..255 (lossless) */
};

struct hnsw {
	size_t dim;
	hnsw_params p;
	enum hnsw_vtype vtype;
	unsigned m, m0;
	double ml;
	size_t vec_bytes;   /* stored vector bytes, rounded to 4 */
	size_t rec_size;    /* bytes per record, multiple of 64 */
	size_t off_hdr;     /* the hnsw_hdr within a record */
	size_t off_links0;  /* the layer-0 links */
	size_t off_upper;   /* the upper-links pointer */
	size_t upper_stride; /* uint32 words per upper layer: 1 + m */
	size_t off_sk;      /* the sketch's codes (hnsw_sketch.c), 64-aligned; 0: none */
	size_t sk_bytes;    /* code bytes a record: dim rounded up to 32, zero-padded */

	unsigned seg_shift;
	char *seg[HNSW_MAX_SEGS];
	size_t seg_map[HNSW_MAX_SEGS]; /* bytes mapped for a huge-page segment; 0: malloc'd */
	uint32_t cap;       /* records allocated */
	uint32_t count;     /* node ids handed out (atomic) */
	uint64_t entry;     /* (level << 32) | node, UINT64_MAX when empty (atomic) */
	uint32_t ndeleted;  /* (atomic) */

	pthread_mutex_t alloc_lock; /* node ids, segments, label map */
	pthread_mutex_t top_lock;   /* held by an insert raising the top level */
	pthread_mutex_t pool_lock;
	hnsw_ctx *pool;

	uint32_t *lm_key, *lm_val; /* label -> node, open addressing */
	size_t lm_cap, lm_n;

	/* quant8: x ~ lo + scale * code, per dimension */
	float *q_lo, *q_scale, *q_w;
	int q_trained;

	/* the sketch: x ~ sk_lo + sk_s * code; sk_rmax: a double's bits, >= every |x - decoded| */
	float *sk_lo;
	uint32_t *sk_perm;  /* code k is dimension sk_perm[k]: falling variance */
	double sk_s;
	uint64_t sk_rmax;   /* (atomic) */
	int sk_on;          /* range set and every node encoded */

	hnsw_qdist_fn qdist;
	hnsw_ndist_fn ndist;
	hnsw_sketch_fn skern; /* the sketch's kernel, chosen with the others */
	unsigned build_threads; /* threads that inserted in the last hnsw_build */
	size_t repaired;        /* layer-0 links the last build added to reach every node */
};

/* The record of node id (no bounds check). */
static inline char *hnsw_rec(const struct hnsw *h, uint32_t id)
{
	uint64_t b;
	unsigned s;

	if (id < (1u << h->seg_shift))
		return h->seg[0] + (size_t) id * h->rec_size;
	b = (uint64_t) id + (1ull << h->seg_shift);
	s = 63u - (unsigned) __builtin_clzll(b) - h->seg_shift;
	return h->seg[s] + (size_t) (b - ((1ull << h->seg_shift) << s)) * h->rec_size;
}

static inline hnsw_hdr *hnsw_hdr_of(const struct hnsw *h, uint32_t id)
{
	return (hnsw_hdr *) (hnsw_rec(h, id) + h->off_hdr);
}

/* Layer l's list of node id: [count, slots...] for l > 0, slots only for l == 0. */
static inline uint32_t *hnsw_upper(const struct hnsw *h, uint32_t id, int l)
{
	uint32_t *up;

	memcpy(&up, hnsw_rec(h, id) + h->off_upper, sizeof(up));
	return up + (size_t) (l - 1) * h->upper_stride;
}

/* Kernels (hnsw_dist.c): pick the best set for this CPU and the graph's vectors. */
void hnsw_kernels_select(struct hnsw *h);
/* Prepare query q (dim floats) into c->qbuf and *out. */
void hnsw_prepare_query(const struct hnsw *h, hnsw_ctx *c, const float *q, hnsw_query *out);
/* Encode vec (already normalised for cosine) into a record's vector area. */
void hnsw_encode(const struct hnsw *h, const float *vec, void *dst);
/* Decode a stored vector into buf (dim floats). */
void hnsw_decode_vec(const struct hnsw *h, const void *src, float *buf);
/* Whether every one of the n floats at v is a whole number 0..255 (not -0): exact as a byte. */
bool hnsw_fits_u8(const float *v, size_t n);
/* As hnsw_new, with records laid out for vtype (HNSW_V_Q8 exactly when p->quant8). */
int hnsw_new_as(size_t dim, const hnsw_params *p, size_t capacity, enum hnsw_vtype vtype,
		struct hnsw **out);
/*
 * Re-lay an empty graph's records for vtype (alloc_lock held or
 * single-threaded, no node yet): -EBUSY once nodes exist.
 */
int hnsw_relayout(struct hnsw *h, enum hnsw_vtype vtype);
/* Whether a graph with these params may hold exact bytes (auto store, float32, not cosine). */
bool hnsw_may_narrow(const hnsw_params *p);
/*
 * The exact-byte kernels of one level, as hnsw_q8_kernels: query L2/IP
 * (IP includes cst) and node-node L2/IP; -ENOTSUP if the CPU lacks it.
 */
int hnsw_u8_kernels(const char *level, hnsw_qdist_fn *l2, hnsw_qdist_fn *ip, hnsw_ndist_fn *nl2,
		    hnsw_ndist_fn *nip);

/* Normalise src into dst (cosine); a zero vector stays zero. */
void hnsw_normalise(const float *src, float *dst, size_t d);
/* Which kernel set the graph uses: "scalar", "avx2", "avx512". */
const char *hnsw_kernel_name(void);

/*
 * The quant8 kernels of one level ("scalar", "avx2", "avx512"), for tests
 * that compare them: query L2/IP and node-node L2/IP (node-node IP
 * includes the metric's base). 0, or -ENOTSUP if the CPU lacks the level.
 */
int hnsw_q8_kernels(const char *level, hnsw_qdist_fn *l2, hnsw_qdist_fn *ip, hnsw_ndist_fn *nl2,
		    hnsw_ndist_fn *nip);

/* How hnsw_dist.c was compiled (-march), for the bench. */
const char *hnsw_build_info(void);

/*
 * The sketch (hnsw_sketch.c): a proven lower bound on float32 L2 distances
 * from a byte per dimension, so a search skips only what it would reject.
 */
/* Whether a graph of this metric gets sketch room (L2, COLDSTUDY_HNSW_SKETCH not 0). */
bool hnsw_sketch_wanted(size_t dim, int metric);
/* The kernel of one level ("scalar", "avx2", "avx512"; NULL: the best), NULL if the CPU lacks it. */
hnsw_sketch_fn hnsw_sketch_kernel(const char *level);
/* Set the range from data's n rows (a fresh build) or, data NULL, the nodes (a load); encode the nodes. */
int hnsw_sketch_init(struct hnsw *h, const float *data, size_t n);
/* Encode node id's codes from its stored vector and raise sk_rmax (before the node is published). */
void hnsw_sketch_encode(struct hnsw *h, uint32_t id);
/* Set q->sa (and sk_e) from q->a, or NULL when the graph or the query has no sketch. */
void hnsw_sketch_prepare(const struct hnsw *h, hnsw_ctx *c, hnsw_query *q);
/* The same by the portable loop (vector false) or the AVX-512 one (true: only where the CPU has it). */
void hnsw_sketch_prepare_at(const struct hnsw *h, hnsw_ctx *c, hnsw_query *q, bool vector);
/* The kernel's value at or above which a candidate is proven no closer than lb. */
double hnsw_sketch_threshold(const struct hnsw *h, const hnsw_query *q, float lb);

/* Search context pool (hnsw_search.c). */
int hnsw_ctx_get(const struct hnsw *h, hnsw_ctx **out);
void hnsw_ctx_put(const struct hnsw *h, hnsw_ctx *c);
void hnsw_ctx_free(hnsw_ctx *c);

/*
 * Search one layer from ep (distance epd) with width ef, into c->top
 * (a max-heap). locked: copy link lists under node locks (construction).
 */
int hnsw_search_layer(const struct hnsw *h, hnsw_ctx *c, const hnsw_query *q, uint32_t ep,
		      float epd, int level, unsigned ef, bool locked);

/* Spinlock over one node's link lists. */
void hnsw_lock(hnsw_hdr *hd);
void hnsw_unlock(hnsw_hdr *hd);

/* Allocate record storage for at least n nodes (alloc_lock held or single-threaded). */
int hnsw_reserve(struct hnsw *h, size_t n);
/* Label map (alloc_lock held). */
int hnsw_lm_put(struct hnsw *h, uint32_t label, uint32_t node);
int hnsw_lm_get(const struct hnsw *h, uint32_t label, uint32_t *node);

/* quant8 without training: params' global range, else the first vector's, widened (alloc_lock held). */
int hnsw_q8_fallback(struct hnsw *h, const float *vec);

/* Decode a whole file image; check_sum 0 skips the SHA-256 (fuzzing). */
int hnsw_decode(const unsigned char *buf, size_t len, int check_sum, hnsw **out, cv_err *e,
		const char *name);

#endif
