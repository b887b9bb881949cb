/*
 * pagedpage.c - the PostgreSQL page the paged HNSW and its heap are made
 * of: init, add an item, find an item, the page checksum; and the two
 * distances (the index's float32 one and the executor's double one).
 *
 * Pages are byte arrays with little-endian fields, so the format does not
 * depend on struct padding. The checksum is PostgreSQL's algorithm
 * (src/include/storage/checksum_impl.h): 32 parallel FNV-1a-style lanes
 * over the page's uint32 words with pd_checksum zeroed, two rounds of
 * zeroes, lanes XORed, the block number mixed in, folded to 1..65535 so
 * a page moved to another block fails too. The lane seeds are our own.
 *
 * The checksum is computed once per page read from disk (a buffer-pool
 * miss), never on hits; it is the largest CPU cost of a cold read, so the
 * 32 lanes run eight at a time with AVX2 where cpuid has it (the scalar
 * form stays as the reference, and tests compare the two).
 */
#include "paged.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#define N_SUMS 32
#define FNV_PRIME 16777619u

void pg_page_init(uint8_t *page, uint32_t special)
{
	memset(page, 0, PG_BLCKSZ);
	pg_put16(page + PGH_LOWER, PG_PAGE_HEADER);
	pg_put16(page + PGH_UPPER, (uint16_t) (PG_BLCKSZ - special));
	pg_put16(page + PGH_SPECIAL, (uint16_t) (PG_BLCKSZ - special));
	pg_put16(page + PGH_SIZEVER, (uint16_t) (PG_BLCKSZ | 4u));
}

size_t pg_page_free(const uint8_t *page)
{
	size_t lower = pg_get16(page + PGH_LOWER), upper = pg_get16(page + PGH_UPPER);

	if (upper < lower + PG_ITEMID)
		return 0;
	return upper - lower - PG_ITEMID;
}

unsigned pg_page_nitems(const uint8_t *page)
{
	unsigned lower = pg_get16(page + PGH_LOWER);

	/* pd_lower comes from the page: a line-pointer array past the page holds no items */
	if (lower <= PG_PAGE_HEADER || lower > PG_BLCKSZ)
		return 0;
	return (lower - PG_PAGE_HEADER) / PG_ITEMID;
}

unsigned pg_page_add(uint8_t *page, const void *tup, size_t len)
{
	size_t lower = pg_get16(page + PGH_LOWER), upper = pg_get16(page + PGH_UPPER);
	size_t alen = PG_MAXALIGN(len);
	unsigned off;
	uint32_t lp;

	if (len == 0 || len >= (1u << 15) || upper < lower + PG_ITEMID + alen)
		return 0;
	upper -= alen;
	memcpy(page + upper, tup, len);
	/* ItemIdData {lp_off:15, lp_flags:2 (LP_NORMAL = 1), lp_len:15} */
	lp = (uint32_t) upper | (1u << 15) | ((uint32_t) len << 17);
	pg_put32(page + lower, lp);
	off = (unsigned) ((lower - PG_PAGE_HEADER) / PG_ITEMID) + 1;
	pg_put16(page + PGH_LOWER, (uint16_t) (lower + PG_ITEMID));
	pg_put16(page + PGH_UPPER, (uint16_t) upper);
	return off;
}

const uint8_t *pg_page_item(const uint8_t *page, unsigned off, size_t *len)
{
	uint32_t lp;
	size_t o, l, special = pg_get16(page + PGH_SPECIAL);

	if (off == 0 || off > pg_page_nitems(page))
		return NULL;
	lp = pg_get32(page + PG_PAGE_HEADER + (off - 1) * PG_ITEMID);
	o = lp & 0x7FFFu;
	l = lp >> 17;
	/* pd_special comes from the page itself: bound it by the page before trusting it */
	if (special > PG_BLCKSZ || ((lp >> 15) & 3u) != 1u || o < PG_PAGE_HEADER || l == 0 ||
	    o + l > special)
		return NULL;
	*len = l;
	return page + o;
}

/* Fold the 32 lanes and the block number to 1..65535. */
static uint16_t checksum_fold(uint32_t *sums, uint32_t blk)
{
	uint32_t result = 0;

	for (int r = 0; r < 2; r++)
		for (unsigned j = 0; j < N_SUMS; j++) {
			uint32_t tmp = sums[j];

			sums[j] = tmp * FNV_PRIME ^ (tmp >> 17);
		}
	for (unsigned j = 0; j < N_SUMS; j++)
		result ^= sums[j];
	result ^= blk;
	return (uint16_t) ((result % 65535u) + 1u);
}

/* The lane seeds. */
static void checksum_seed(uint32_t *sums)
{
	for (unsigned j = 0; j < N_SUMS; j++)
		sums[j] = 0x5B1F36E9u + j * 0x9E3779B9u;
}

uint16_t pg_page_checksum_scalar(const uint8_t *page, uint32_t blk)
{
	uint32_t sums[N_SUMS];
	const size_t rows = PG_BLCKSZ / (sizeof(uint32_t) * N_SUMS);

	checksum_seed(sums);
	for (size_t i = 0; i < rows; i++) {
		uint32_t w[N_SUMS];

		memcpy(w, page + i * sizeof(w), sizeof(w));
		/* pd_checksum (bytes 8..9, low half of word 2) counts as zero */
		if (i == 0)
			w[PGH_CHECKSUM / 4] &= 0xFFFF0000u;
		for (unsigned j = 0; j < N_SUMS; j++) {
			uint32_t tmp = sums[j] ^ w[j];

			sums[j] = tmp * FNV_PRIME ^ (tmp >> 17);
		}
	}
	return checksum_fold(sums, blk);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_CHECKSUM_AVX2 1

/* The same lanes, eight at a time: 4 x 256-bit registers per 128-byte row. */
__attribute__((target("avx2"))) static uint16_t checksum_avx2(const uint8_t *page, uint32_t blk)
{
	uint32_t sums[N_SUMS];
	const __m256i prime = _mm256_set1_epi32((int) FNV_PRIME);
	__m256i s[4];
	const size_t rows = PG_BLCKSZ / (sizeof(uint32_t) * N_SUMS);

	checksum_seed(sums);
	for (int k = 0; k < 4; k++)
		s[k] = _mm256_loadu_si256((const __m256i *) (const void *) (sums + 8 * k));
	for (size_t i = 0; i < rows; i++) {
		const uint8_t *row = page + i * N_SUMS * 4;

		for (int k = 0; k < 4; k++) {
			__m256i w = _mm256_loadu_si256((const __m256i *) (const void *) (row + 32 * k));
			__m256i t;

			if (i == 0 && k == 0)
				w = _mm256_and_si256(w, _mm256_setr_epi32(-1, -1, (int) 0xFFFF0000u, -1, -1,
									    -1, -1, -1));
			t = _mm256_xor_si256(s[k], w);
			s[k] = _mm256_xor_si256(_mm256_mullo_epi32(t, prime), _mm256_srli_epi32(t, 17));
		}
	}
	for (int k = 0; k < 4; k++)
		_mm256_storeu_si256((__m256i *) (void *) (sums + 8 * k), s[k]);
	return checksum_fold(sums, blk);
}
#endif

uint16_t pg_page_checksum(const uint8_t *page, uint32_t blk)
{
#ifdef HAVE_CHECKSUM_AVX2
	/* cpuid once; a racing first call computes the same answer */
	static atomic_int have_avx2 = -1;
	int h = atomic_load_explicit(&have_avx2, memory_order_relaxed);

	if (h < 0) {
		h = __builtin_cpu_supports("avx2") ? 1 : 0;
		atomic_store_explicit(&have_avx2, h, memory_order_relaxed);
	}
	if (h)
		return checksum_avx2(page, blk);
#endif
	return pg_page_checksum_scalar(page, blk);
}

void pg_page_set_checksum(uint8_t *page, uint32_t blk)
{
	pg_put16(page + PGH_CHECKSUM, pg_page_checksum(page, blk));
}

int pg_page_check(const uint8_t *page, uint32_t blk)
{
	unsigned lower = pg_get16(page + PGH_LOWER), upper = pg_get16(page + PGH_UPPER);
	unsigned special = pg_get16(page + PGH_SPECIAL);

	if (pg_get16(page + PGH_CHECKSUM) != pg_page_checksum(page, blk))
		return -EBADMSG;
	if (pg_get16(page + PGH_SIZEVER) != (PG_BLCKSZ | 4u) || lower < PG_PAGE_HEADER ||
	    lower > upper || upper > special || special > PG_BLCKSZ)
		return -EBADMSG;
	return 0;
}

float paged_index_distance(cv_metric m, const float *a, const float *b, size_t d)
{
	/* cosine indexes hold normalized vectors and rank by -<a,b> (vector_cosine_ops) */
	return m == CV_METRIC_L2 ? cv_l2sq(a, b, d) : -cv_dot(a, b, d);
}

double paged_exec_distance(cv_metric m, const float *q, const float *row, size_t d)
{
	double s = 0, na = 0, nb = 0;

	switch (m) {
	case CV_METRIC_L2:
		for (size_t i = 0; i < d; i++) {
			double t = (double) q[i] - (double) row[i];
			s += t * t;
		}
		return s;
	case CV_METRIC_IP:
		for (size_t i = 0; i < d; i++)
			s += (double) q[i] * (double) row[i];
		return -s;
	case CV_METRIC_COSINE:
		for (size_t i = 0; i < d; i++) {
			s += (double) q[i] * (double) row[i];
			na += (double) q[i] * (double) q[i];
			nb += (double) row[i] * (double) row[i];
		}
		if (na == 0 || nb == 0)
			return 1.0;
		return 1.0 - s / sqrt(na * nb);
	}
	return 0;
}

void paged_normalize(const float *v, float *out, size_t d)
{
	double n = 0;

	for (size_t i = 0; i < d; i++)
		n += (double) v[i] * (double) v[i];
	n = sqrt(n);
	for (size_t i = 0; i < d; i++)
		out[i] = n > 0 ? (float) (v[i] / n) : 0.0f;
}

/* ---- the comparator's heap relation: rows of (id, vector) in heap pages ---- */

uint32_t phnsw_heap_rows_per_page(size_t dim)
{
	size_t t = PHNSW_HEAP_TUPLE_SIZE(dim) + PG_ITEMID;
	size_t r = (PG_BLCKSZ - PG_PAGE_HEADER) / t;

	return r ? (uint32_t) r : 1;
}

pg_tid phnsw_heap_tid(uint32_t id, uint32_t rows_per_page)
{
	pg_tid t = {id / rows_per_page, (uint16_t) (id % rows_per_page + 1)};

	return t;
}

int phnsw_heap_row(const uint8_t *page, uint32_t blk, unsigned off, size_t dim, uint32_t *id,
		   float *out)
{
	size_t len;
	const uint8_t *t = pg_page_item(page, off, &len);

	(void) blk;
	if (!t || len < PHNSW_HEAP_TUPLE_HDR + 12 + 4 * dim || t[22] != PHNSW_HEAP_TUPLE_HDR ||
	    pg_get16(t + 32) != dim)
		return -EBADMSG;
	*id = pg_get32(t + 24);
	memcpy(out, t + 36, 4 * dim);
	return 0;
}
