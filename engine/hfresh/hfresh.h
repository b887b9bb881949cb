/*
 * hfresh.h - private: HFresh, the disk-based index of the blog seed, after
 * SPANN/SPFresh, with RaBitQ codes.
 *
 * An index directory holds:
 *   hfresh.meta       the manifest: parameters, the posting table
 *                     (offset, length, count per posting), the centroids
 *                     and the per-vector version map; replaced atomically
 *                     (write temp, fsync, rename, fsync dir) on every commit
 *   postings.G.dat    posting records, each 4 KiB aligned, append-only
 *                     (copy-on-write: an update appends a new record and
 *                     the next manifest points at it)
 *   vectors.dat       the full-precision vectors, fixed slots that never
 *                     cross a 4 KiB block, one aligned read per vector
 * ARCHITECTURE.md at the repository root describes the bytes.
 *
 * Spaces. The index works in an internal space in which the metric is
 * squared L2: cosine vectors are normalised; inner-product vectors get one
 * more coordinate sqrt(M^2 - |x|^2) (M the largest norm at build), so that
 * |x' - q'|^2 = M^2 + |q|^2 - 2<x,q> and the nearest in L2 is the largest
 * inner product, exactly. Codes live in a rotated space of dp dimensions
 * (the internal dimension rounded up to 64).
 *
 * Versions: each id has a 32-bit word, bit 31 = deleted, bits 0..30 the
 * version (0 = never inserted). A posting entry carries the version it
 * was written with; it is live only if it equals the id's current version
 * and the id is not deleted. A reassignment bumps the version, which
 * makes every older copy stale at once. The version saturates at
 * HFR_VERSION_MAX: a vector that reaches it is no longer reassigned
 * (it stays where it is), so a version never wraps onto a stale copy.
 *
 * Error convention: 0 or -errno; a cv_err names the file and byte offset.
 */
#ifndef CV_HFRESH_H
#define CV_HFRESH_H

#include "coldvec.h"
#include "index_ops.h"

#include <stdint.h>

/* ---- format constants (STYLE 8: one header, DEFAULT/MIN/MAX) ---- */

#define HFR_META_MAGIC       "CVHFMETA"
#define HFR_META_NAME        "hfresh.meta"
#define HFR_VEC_NAME         "vectors.dat"
#define HFR_POST_MAGIC       0x50534648u /* "HFSP" little-endian */
#define HFR_FORMAT_VERSION   1u   /* the manifest's */
#define HFR_POST_VERSION     2u   /* posting records written: CRC-32C */
#define HFR_POST_VERSION_ZLIB 1u  /* posting records still read: zlib CRC-32 */
#define HFR_POST_VERSION_EX  3u   /* posting records with extended (multi-bit) codes */
#define HFR_FORMAT_VERSION_EX 2u  /* the manifest of an index with extended codes */
#define HFR_BLOCK            4096u
#define HFR_POST_HDR         32u
#define HFR_ENTRY_HDR        24u
/* Offsets in an entry's header: id 0, version 4, then the factors (extended codes' here) */
#define HFR_ENT_ADD          8u
#define HFR_ENT_RESCALE_EX   12u
#define HFR_ENT_ERR_EX       16u
#define HFR_ENT_QERR_EX      20u
#define HFR_META_HDR         128u

#define HFR_DEFAULT_MAX_POSTING_KB 48u
#define HFR_MIN_MAX_POSTING_KB     8u
#define HFR_MAX_MAX_POSTING_KB     1024u
#define HFR_DEFAULT_REPLICAS       4u
#define HFR_MIN_REPLICAS           1u
#define HFR_MAX_REPLICAS           10u
#define HFR_DEFAULT_RNG_FACTOR     1.0 /* SPFresh; Weaviate relaxes to 10 */
#define HFR_MIN_RNG_FACTOR         0.01
#define HFR_MAX_RNG_FACTOR         1000.0
#define HFR_DEFAULT_CODE_BITS      1u  /* HFresh's 1-bit RaBitQ; 2..4: extended RaBitQ */
/*
 * The shape a build gets when its options leave code_bits, max_posting_kb
 * or replicas 0 ("from the data"): up to HFR_EX_MAX_DIM dimensions 4-bit
 * extended codes in 96 KB postings with one replica, above it HFresh's
 * 1-bit codes in 48 KB postings with 4 replicas. Measured (bench/hfresh):
 * at d 128 the 1-bit code's error stops recall@10 at 0.933 and 4-bit
 * codes reach 0.95 at 2.3x faiss IVFFlat; at d 784 1-bit codes rank well
 * enough (4.7x faiss) and a 4-bit entry is 3.4x the bytes (3.4x faiss).
 * The cut at 256 lies between the two measured points; it is not fitted.
 */
#define HFR_EX_MAX_DIM             256u
#define HFR_EX_CODE_BITS           4u
#define HFR_EX_MAX_POSTING_KB      96u
#define HFR_EX_REPLICAS            1u
#define HFR_MIN_CODE_BITS          1u
#define HFR_MAX_CODE_BITS          4u

/*
 * While the live centroids take up to this many bytes (full precision) a
 * query scans them all, exactly, instead of searching the centroid HNSW
 * (an HNSW over 8-bit codes, ef 64): on synth 1M x 128 (1,397 postings,
 * 0.7 MB) the exact centroids lift recall@10 at probe 7 from 0.9675 to
 * 0.9795 and the scan costs less than the walk; on fashion-mnist (461
 * postings of 784 dimensions, 1.4 MB) recall is the same either way and
 * the scan costs more (bench/hfresh/README.md). The scan's cost grows
 * with the bytes, the walk's with their log.
 */
#define HFR_FLAT_CENTROID_BYTES (1024u * 1024u)
/* For tests: how many centroids the exact scan's bf16 prescan has ruled out (hfreshsearch.c). */
uint64_t hfr_centroid_prescan_pruned(void);
#define HFR_QUERY_BITS   4      /* query quantisation (RaBitQ's B_q) */
#define HFR_ROT_ROUNDS   4      /* sign flip + permutation + FHT-64 rounds */
#define HFR_EPS0         1.9f   /* RaBitQ's confidence parameter */
#define HFR_CANDIDATES   64     /* centroids considered for placement */
#define HFR_REASSIGN_K   16     /* neighbouring postings checked after a split */
#define HFR_VERSION_MAX  0x7fffffffu
#define HFR_DELETED      0x80000000u

/* ---- RaBitQ (rabitq.c) ---- */

/* A pseudo-random orthogonal rotation of R^di (zero-padded to dp). */
typedef struct hfr_rot {
	uint32_t di, dp;
	float *sign;     /* HFR_ROT_ROUNDS * dp, +-1 */
	uint32_t *perm;  /* HFR_ROT_ROUNDS * dp */
} hfr_rot;

/* Padded dimension for an internal dimension di. */
static inline uint32_t hfr_dp(uint32_t di)
{
	return (di + 63u) / 64u * 64u;
}

int hfr_rot_init(hfr_rot *r, uint32_t di, uint64_t seed);
void hfr_rot_free(hfr_rot *r);
/* out (dp floats) = R * pad(x); x has di floats. */
void hfr_rot_apply(const hfr_rot *r, const float *x, float *out);

/* The per-entry estimator factors stored beside a code. */
typedef struct hfr_fac {
	float add;      /* |o - c|^2 */
	float rescale;  /* -2 |o - c| / <o_bar, o> */
	float err;      /* 2 |o - c| sqrt(1 - x0^2) / x0 * eps0 / sqrt(dp - 1) */
	uint16_t pop;   /* set bits in the code */
	/* extended codes only (code_bits > 1): the same three for the B-bit code */
	float rescale_ex; /* -2 |o - c| / <y, u> */
	float err_ex;     /* as err with x0 = <y/|y|, u> */
	float qerr_ex;    /* |rescale_ex| |y| 3 / sqrt(12): times the query step */
} hfr_fac;

/*
 * Encode a rotated residual (dp floats) into dp/8 sign-code bytes and its
 * factors; with bits > 1 also the extended code (hfr_ex_code_bytes bytes
 * into ex, which may be NULL when bits == 1).
 */
void hfr_encode(const float *res, uint32_t dp, unsigned bits, uint64_t *code, uint8_t *ex,
		hfr_fac *f);

/* Bytes of an extended code: one nibble a dimension (bits <= 4); 0 for bits 1. */
static inline uint32_t hfr_ex_code_bytes(uint32_t dp, unsigned bits)
{
	return bits > 1 ? dp / 2 : 0;
}
/* Dimension t's level (0..2^bits - 1) in an extended code (nibbles per 64 dims). */
static inline unsigned hfr_ex_level(const uint8_t *ex, uint32_t t)
{
	uint8_t b = ex[(t / 64) * 32 + (t % 32)];

	return (t % 64) < 32 ? (b & 15u) : (b >> 4);
}

/* A query residual quantised to HFR_QUERY_BITS bit planes. */
typedef struct hfr_qq {
	uint32_t dp, words;
	uint64_t *planes;  /* HFR_QUERY_BITS * words, caller-owned */
	float lo, delta, sumq, qn2, qn, inv_sqrt_d;
} hfr_qq;

/* Quantise the rotated query residual qr (dp floats) into q (planes preallocated). */
void hfr_query_quant(const float *qr, uint32_t dp, hfr_qq *q);

/* Estimated squared distance of a coded entry to the query; *err gets the bound. */
float hfr_estimate(const hfr_qq *q, const uint64_t *code, const hfr_fac *f, float *err);
/* The portable loop hfr_estimate must equal whatever CPU path it takes (tests). */
float hfr_estimate_ref(const hfr_qq *q, const uint64_t *code, const hfr_fac *f, float *err);

/* A query residual quantised to signed bytes for extended codes. */
typedef struct hfr_qx {
	uint32_t dp;
	int8_t *q8;        /* dp, caller-owned: q_r[t] ~ step * q8[t] */
	int8_t *q8p;       /* dp, caller-owned: q8 in the extended code's nibble order */
	float step;
	int32_t sum8;      /* sum of q8 */
	float qn2, qn;     /* |q_r|^2 and |q_r| */
} hfr_qx;

/* Quantise the rotated query residual qr (dp floats) into x (q8 preallocated). */
void hfr_query_quant_ex(const float *qr, uint32_t dp, hfr_qx *x);
/* The portable loop hfr_query_quant_ex must equal, field for field (tests). */
void hfr_query_quant_ex_ref(const float *qr, uint32_t dp, hfr_qx *x);
/* Estimated squared distance from the extended code; *err gets the bound. */
float hfr_estimate_ex(const hfr_qx *x, const uint8_t *ex, unsigned bits, const hfr_fac *f,
		      float *err);
float hfr_estimate_ex_ref(const hfr_qx *x, const uint8_t *ex, unsigned bits, const hfr_fac *f,
			  float *err);
/*
 * The estimates of n entries with extended codes of one posting at once:
 * entry idx[i] of the entries at ent0, es bytes apart (hfr_entry_put's
 * layout), into est[i] and err[i], each hfr_estimate_ex's of the entry's
 * code and factors bit for bit (AVX-512 VNNI: sixteen entries a step);
 * _ref: the portable path.
 */
void hfr_estimate_ex_entries(const hfr_qx *x, const uint8_t *ent0, uint32_t es,
			     const uint32_t *idx, size_t n, unsigned bits, float *est, float *err);
void hfr_estimate_ex_entries_ref(const hfr_qx *x, const uint8_t *ent0, uint32_t es,
				 const uint32_t *idx, size_t n, unsigned bits, float *est,
				 float *err);

/* ---- posting records (hfreshformat.c) ---- */

typedef struct hfr_post_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t entry_size;
	uint32_t posting_id;
	uint32_t count;
	uint32_t dp;
	uint32_t crc;
	uint32_t code_bits;  /* version 3; 0 in versions 1 and 2 (1-bit codes) */
	uint32_t reserved;
} hfr_post_hdr;

/*
 * Bytes of one entry: the 24-byte header, then the code: dp/8 bytes of
 * sign bits, or with bits > 1 the extended code alone (its top bits are the
 * sign bits, so they are not stored twice).
 */
static inline uint32_t hfr_entry_size(uint32_t dp, unsigned bits)
{
	return HFR_ENTRY_HDR + (bits > 1 ? hfr_ex_code_bytes(dp, bits) : dp / 8);
}

/* Bytes a posting of count entries takes on disk (4 KiB aligned). */
static inline uint64_t hfr_post_disk_len(uint32_t count, uint32_t dp, unsigned bits)
{
	uint64_t n = HFR_POST_HDR + (uint64_t) count * hfr_entry_size(dp, bits);

	return (n + HFR_BLOCK - 1) / HFR_BLOCK * HFR_BLOCK;
}

/* Entry i of a posting buffer (header first) whose entries are es bytes. */
static inline uint8_t *hfr_entry_at(const void *post, uint32_t es, uint32_t i)
{
	return (uint8_t *) post + HFR_POST_HDR + (size_t) i * es;
}

/*
 * Fill an entry: id, version, factors and code; with bits > 1 the extended
 * factors and ex, the extended code, instead of the 1-bit ones.
 */
void hfr_entry_put(uint8_t *ent, uint32_t dp, unsigned bits, uint32_t id, uint32_t ver,
		   const hfr_fac *f, const uint64_t *code, const uint8_t *ex);
void hfr_entry_get(const uint8_t *ent, uint32_t dp, unsigned bits, uint32_t *id, uint32_t *ver,
		   hfr_fac *f);
static inline const uint64_t *hfr_entry_code(const uint8_t *ent)
{
	return (const uint64_t *) (const void *) (ent + HFR_ENTRY_HDR);
}
static inline const uint8_t *hfr_entry_ex(const uint8_t *ent)
{
	return ent + HFR_ENTRY_HDR;
}

/*
 * CRC-32C (Castagnoli) of n bytes on the best path the CPU has (folding on
 * VPCLMULQDQ, SSE4.2's crc32, a table); _sw: the table path.
 */
uint32_t hfr_crc32c(const void *p, size_t n);
uint32_t hfr_crc32c_sw(const void *p, size_t n);
/* For tests: how many paths this CPU has (1-4); a raw state continued on one of them. */
unsigned hfr_crc32c_paths(void);
uint32_t hfr_crc32c_path(unsigned path, uint32_t state, const void *p, size_t n);
/*
 * zlib's CRC-32, crc32(crc, p, n)'s value for any n: folded on PCLMULQDQ
 * from 64 bytes where the CPU has it, else zlib's own. For tests: the paths
 * (1 or 2) and one of them forced (0 zlib, 1 folding).
 */
uint32_t hfr_crc32z(uint32_t crc, const void *p, size_t n);
unsigned hfr_crc32z_paths(void);
uint32_t hfr_crc32z_path(unsigned path, uint32_t crc, const void *p, size_t n);

/* Write the header (and checksum) of a posting whose entries are filled. */
void hfr_post_seal(void *post, uint32_t posting_id, uint32_t count, uint32_t dp, unsigned bits);

/*
 * Check a posting record of len bytes: magic, format version (3 for
 * bits > 1, 1 or 2 otherwise), code bits, entry size, dp, count against
 * len (and expect_count unless UINT32_MAX), posting id (unless
 * UINT32_MAX), and the checksum when check_crc. -EBADMSG with e.
 */
int hfr_post_check(const void *buf, size_t len, uint32_t dp, unsigned bits, uint32_t expect_id,
		   uint32_t expect_count, int check_crc, hfr_post_hdr *out, cv_err *e);

/* ---- manifest (hfreshformat.c) ---- */

typedef struct hfr_post {
	uint64_t off;    /* byte offset in the postings file */
	uint32_t len;    /* bytes on disk (4 KiB multiple) */
	uint32_t count;  /* entries */
	uint32_t alive;  /* 0: removed by a split or merge */
	uint32_t pad;
} hfr_post;

typedef struct hfr_meta {
	uint32_t d, di, dp;
	cv_metric metric;
	uint32_t max_posting_kb, replicas;
	uint32_t code_bits;   /* 1: RaBitQ; 2..4: extended RaBitQ codes beside the sign bits */
	double rng_factor;
	uint32_t max_entries, min_entries;
	uint64_t rot_seed;
	float ip_m;           /* inner product: the largest norm M */
	uint64_t generation;
	uint32_t nids;        /* id space: ids 0..nids-1 */
	uint32_t live;        /* ids present and not deleted */
	uint32_t nposts;
	uint32_t vec_slot, vec_per_block;
	uint64_t postings_end;
	uint32_t postings_gen;
	hfr_post *posts;      /* nposts */
	float *cent;          /* nposts * di, internal space */
	uint32_t *ver;        /* nids version words */
} hfr_meta;

/* Fill the derived sizes of m from d, metric, max_posting_kb. */
void hfr_meta_sizes(hfr_meta *m);
void hfr_meta_free(hfr_meta *m);
/* Read and check DIR/hfresh.meta. -EBADMSG on damage. */
int hfr_meta_read(const char *dir, hfr_meta *m, cv_err *e);
/* Write DIR/hfresh.meta atomically (temp, fsync, rename, fsync dir). */
int hfr_meta_write(const char *dir, const hfr_meta *m, cv_err *e);
/* DIR/postings.G.dat into buf. */
void hfr_postings_path(const char *dir, uint32_t gen, char *buf, size_t n);

/* ---- vector store (hfreshformat.c) ---- */

/* Byte offset of id's slot, and of the 4 KiB block that holds it. */
static inline uint64_t hfr_vec_off(const hfr_meta *m, uint32_t id)
{
	return (uint64_t) (id / m->vec_per_block) * (m->vec_slot > HFR_BLOCK ? m->vec_slot :
						 HFR_BLOCK) + (uint64_t) (id % m->vec_per_block) * m->vec_slot;
}
static inline uint32_t hfr_vec_read_len(const hfr_meta *m)
{
	return m->vec_slot > HFR_BLOCK ? m->vec_slot : HFR_BLOCK;
}
/* Pack vector x (d floats) with its checksum into slot. */
void hfr_vec_pack(const hfr_meta *m, const float *x, uint8_t *slot);
/* Check a slot's checksum; 0 or -EBADMSG. */
int hfr_vec_check(const hfr_meta *m, const uint8_t *slot);

/* Map an original vector to the internal space (di floats). */
void hfr_to_internal(const hfr_meta *m, const float *x, float *out);

/* ---- helpers ---- */

/* The read/write loops and the parallel-for are the engine's (util.h). */
int hfr_fsync_dir(const char *dir);
/* Balanced 2..k-means; see hfreshbuild.c. assign gets each row's cluster. */
int hfr_kmeans(const float *x, const uint32_t *rows, size_t n, uint32_t di, uint32_t k,
	       unsigned threads, uint64_t seed, float *cent, uint32_t *assign);

/*
 * RNG placement (SPFresh's rule): from candidates (posting ids sorted by
 * distance dist[] to x, nearest first), choose up to want postings: a
 * candidate c is skipped when factor * d(c, r) <= d(x, c) for some
 * already chosen r. ccmat (nc * nc centroid distances) may be NULL.
 * Returns the number chosen (>= 1 when ncand >= 1).
 */
size_t hfr_rng_select(const float *cent, uint32_t di, const float *ccmat, uint32_t nc,
		      const uint32_t *cand, const float *dist, size_t ncand, double factor,
		      size_t want, uint32_t *out);

/* ---- the kind ---- */

int hfr_build(const cv_dataset *data, const cv_build_opts *o, const char *dir, cv_err *e);
int hfr_open(const char *dir, const cv_open_opts *o, void **state, cv_err *e);
void hfr_close(void *state);
void hfr_drop_buffers(void *state);
int hfr_query(void *state, cv_io *io, const float *q, const cv_query_opts *o, uint32_t *ids,
	      float *dists, size_t *nout, cv_query_stats *stats);
int hfr_verify(const char *dir, cv_err *e);
int hfr_insert(const char *dir, const cv_dataset *data, uint32_t first_id, cv_err *e);
int hfr_delete(const char *dir, const uint32_t *ids, size_t n, cv_err *e);

size_t hfr_state_dim(const void *state);
size_t hfr_state_count(const void *state);
cv_metric hfr_state_metric(const void *state);

/* What the last insert/delete in this process did (tests assert the path ran). */
typedef struct hfr_update_stats {
	uint64_t inserted, deleted, splits, merges, reassign_checked, reassigned, compactions;
} hfr_update_stats;
void hfr_last_update_stats(hfr_update_stats *out);

/*
 * Test hooks: the update path raises SIGKILL at its n-th step when armed
 * with hfr_crash_arm(n) or HFRESH_CRASH_AT=n in the environment; n <= 0
 * disarms.
 */
void hfr_crash_point(void);
void hfr_crash_arm(long n);

#endif
