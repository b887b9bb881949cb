/*
 * hnsw_search.c - searching the graph: the greedy descent through the
 * upper layers and the beam search of one layer (Algorithm 2 of Malkov &
 * Yashunin; hnswlib's searchBaseLayer / searchBaseLayerST).
 *
 * Speed comes from what is not done per search: the scratch (visited
 * tags, both heaps, the prepared query) is a context taken from a pool and
 * given back, so a warm search allocates nothing. "Visited" is a uint16
 * tag per node compared against the context's epoch; a new search bumps
 * the epoch and clears the array only when the tag wraps.
 *
 * Memory, not arithmetic, bounds a hop: each neighbour's vector is a
 * cache miss. So a hop first collects its unvisited neighbours (tags are
 * checked and set in one pass) and prefetches all their vectors' heads at
 * once, letting the misses overlap; while scoring neighbour j it
 * prefetches more of j+1's vector, and after the hop the best candidate's
 * link list. hnswlib prefetches one neighbour ahead, so its misses queue
 * one after another; on fashion-mnist this is worth about 1.3x in QPS.
 *
 * The candidate set C is a binary min-heap, the result set W a binary
 * max-heap holding at most ef entries; both are arrays in the context.
 * Deleted nodes route (they enter C) but never enter W; while there are
 * deletions the search does not stop before W holds ef entries, as hnswlib.
 */
#include "hnsw_int.h"

#include <errno.h>
#include <immintrin.h>
#include <linux/futex.h>
#include <math.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- heaps ---- */

#define HEAP_PREFIX maxheap /* furthest on top: the results */
#define HEAP_ELEM hnsw_pair
#define HEAP_ABOVE(x, y) ((x).d > (y).d)
#include "heap_template.h"

#define HEAP_PREFIX minheap /* nearest on top: the candidates */
#define HEAP_ELEM hnsw_pair
#define HEAP_ABOVE(x, y) ((x).d < (y).d)
#include "heap_template.h"

/* ---- contexts ---- */

void hnsw_ctx_free(hnsw_ctx *c)
{
	if (!c)
		return;
	free(c->visited);
	free(c->cand);
	free(c->top);
	free(c->qbuf);
	free(c->sbuf);
	free(c->links);
	free(c->sel);
	free(c->lsel);
	free(c);
}

/* Grow c's visited array to cover cap nodes (new tags start at 0). */
static int ctx_fit(hnsw_ctx *c, size_t cap)
{
	uint16_t *v;

	if (c->nvisited >= cap)
		return 0;
	v = calloc(cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	free(c->visited);
	c->visited = v;
	c->nvisited = cap;
	c->tag = 0;
	return 0;
}

int hnsw_ctx_get(const struct hnsw *h, hnsw_ctx **out)
{
	struct hnsw *hm = (struct hnsw *) h; /* the pool is mutable scratch */
	size_t cap = __atomic_load_n(&h->cap, __ATOMIC_ACQUIRE);
	hnsw_ctx *c;
	int rc = -ENOMEM;

	pthread_mutex_lock(&hm->pool_lock);
	c = hm->pool;
	if (c)
		hm->pool = c->next;
	pthread_mutex_unlock(&hm->pool_lock);
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		c->capcand = 256;
		c->captop = 256;
		c->capsel = 256;
		c->cand = malloc(c->capcand * sizeof(*c->cand));
		c->top = malloc(c->captop * sizeof(*c->top));
		c->sel = malloc(c->capsel * sizeof(*c->sel));
		c->qbuf = malloc((h->dim + 16) * sizeof(float));
		c->links = malloc((h->m0 + 1) * sizeof(uint32_t));
		c->lsel = malloc((HNSW_MAX_LEVEL + 1) * (size_t) h->m0 * sizeof(*c->lsel));
		if (!c->cand || !c->top || !c->sel || !c->qbuf || !c->links || !c->lsel)
			goto fail;
		if (h->off_sk) {
			c->sbuf = aligned_alloc(64, (h->sk_bytes * sizeof(int16_t) + 63) / 64 * 64);
			if (!c->sbuf)
				goto fail;
		}
	}
	rc = ctx_fit(c, cap);
	if (rc)
		goto fail;
	c->next = NULL;
	*out = c;
	return 0;
fail:
	hnsw_ctx_free(c);
	return rc;
}

void hnsw_ctx_put(const struct hnsw *h, hnsw_ctx *c)
{
	struct hnsw *hm = (struct hnsw *) h;

	pthread_mutex_lock(&hm->pool_lock);
	c->next = hm->pool;
	hm->pool = c;
	pthread_mutex_unlock(&hm->pool_lock);
}

/* Make room for n pairs in *a (capacity *cap). */
static int grow(hnsw_pair **a, size_t *cap, size_t n)
{
	hnsw_pair *p;
	size_t nc = *cap;

	if (n <= nc)
		return 0;
	while (nc < n)
		nc *= 2;
	p = realloc(*a, nc * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*a = p;
	*cap = nc;
	return 0;
}

/* A new epoch for c's visited tags. */
static inline void ctx_epoch(hnsw_ctx *c)
{
	if (++c->tag == 0) {
		memset(c->visited, 0, c->nvisited * sizeof(*c->visited));
		c->tag = 1;
	}
}

/* ---- search ---- */

/*
 * A node lock in the record's 4-byte word (0 free, 1 held, 2 held with
 * waiters): a short spin, then a futex wait, so a holder preempted on a
 * busy machine does not leave the other builders spinning (Drepper,
 * "Futexes are tricky", mutex 2).
 */
void hnsw_lock(hnsw_hdr *hd)
{
	uint32_t c = 0;

	if (__atomic_compare_exchange_n(&hd->lock, &c, 1u, false, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED))
		return;
	for (int i = 0; i < 100; i++) {
		_mm_pause();
		c = 0;
		if (__atomic_load_n(&hd->lock, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&hd->lock, &c, 1u, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
	}
	c = __atomic_exchange_n(&hd->lock, 2u, __ATOMIC_ACQUIRE);
	while (c != 0) {
		syscall(SYS_futex, &hd->lock, FUTEX_WAIT_PRIVATE, 2u, NULL, NULL, 0);
		c = __atomic_exchange_n(&hd->lock, 2u, __ATOMIC_ACQUIRE);
	}
}

void hnsw_unlock(hnsw_hdr *hd)
{
	if (__atomic_exchange_n(&hd->lock, 0u, __ATOMIC_RELEASE) == 2u)
		syscall(SYS_futex, &hd->lock, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/*
 * Prefetching a vector's lines. A hop first collects its unvisited
 * neighbours and prefetches each one's head (line 0) into L1. Then:
 *
 * - Small vectors (at most HOP_LINES lines: bytes up to 1,024
 *   dimensions, float32 up to 256): every other line of every collected
 *   neighbour goes to L2 at once (prefetch_hop). A first-level prefetch
 *   holds one of the core's few line-fill buffers until its line arrives,
 *   so one neighbour ahead was all it could cover, and fashion-mnist as
 *   bytes (13 lines a vector, 20-30 neighbours a hop) then arrived a few
 *   lines at a time: the query waited on nearly every line. Sent to L2,
 *   many more misses overlap; its ef 40 queries ran about 1.3x faster.
 * - Larger vectors: lines 1..PF_LINES-1 of the next neighbour only,
 *   while the current one is scored (prefetch_rest); the hardware
 *   streamer takes over from there. A whole hop of float32 fashion-mnist
 *   (49 lines a vector) into L2 gained nothing.
 *
 * Both are always_inline on purpose: a function whose only effects are
 * prefetches is "pure" to GCC, which then deletes its calls (until this
 * was found, prefetch_rest had been compiled out of every build).
 */
#define PF_LINES 8
#define HOP_LINES 16
#define SK_PF_LINES 4 /* a sketch's first two kernel blocks: most candidates stop there */

__attribute__((always_inline)) static inline void prefetch_rest(const struct hnsw *h, uint32_t id)
{
	const char *r = hnsw_rec(h, id);
	size_t lines = (h->vec_bytes + 63) / 64;

	if (lines > PF_LINES)
		lines = PF_LINES;
	for (size_t l = 1; l < lines; l++)
		_mm_prefetch(r + 64 * l, _MM_HINT_T0);
}

/* Lines 1.. of u[1..nu) into L2 when the vectors are small; whether it did (see above). */
__attribute__((always_inline)) static inline bool prefetch_hop(const struct hnsw *h,
							       const uint32_t *u, uint32_t nu)
{
	size_t lines = (h->vec_bytes + 63) / 64;

	if (lines > HOP_LINES)
		return false;
	for (uint32_t j = 1; j < nu; j++) {
		const char *r = hnsw_rec(h, u[j]);

		for (size_t l = 1; l < lines; l++)
			_mm_prefetch(r + 64 * l, _MM_HINT_T2);
	}
	return true;
}

int hnsw_search_layer(const struct hnsw *h, hnsw_ctx *c, const hnsw_query *q, uint32_t ep,
		      float epd, int level, unsigned ef, bool locked)
{
	const bool hasdel = __atomic_load_n(&h->ndeleted, __ATOMIC_RELAXED) != 0;
	const hnsw_qdist_fn qdist = h->qdist;
	const size_t dim = h->dim;
	const unsigned maxn = level ? h->m : h->m0;
	uint32_t u[2 * HNSW_MAX_M];
	uint64_t ndist = 0;
	float lb;
	int rc;

	/* ep may be a node added after this context was sized (concurrent adds) */
	rc = ep < c->nvisited ? 0 : ctx_fit(c, __atomic_load_n(&h->cap, __ATOMIC_ACQUIRE));
	if (!rc)
		rc = grow(&c->top, &c->captop, (size_t) ef + 2);
	if (rc)
		return rc;
	ctx_epoch(c);
	const size_t nvis = c->nvisited;
	uint16_t *const vis = c->visited;
	const uint16_t tag = c->tag;
	c->ntop = 0;
	c->ncand = 0;
	vis[ep] = tag;
	if (hasdel && __atomic_load_n(&hnsw_hdr_of(h, ep)->deleted, __ATOMIC_RELAXED)) {
		lb = INFINITY;
	} else {
		maxheap_push(c->top, &c->ntop, (hnsw_pair){epd, ep});
		lb = epd;
	}
	minheap_push(c->cand, &c->ncand, (hnsw_pair){epd, ep});

	while (c->ncand) {
		hnsw_pair cur = c->cand[0];
		const uint32_t *ids;
		uint32_t n, nu;

		if (cur.d > lb && (c->ntop == ef || !hasdel))
			break;
		minheap_pop(c->cand, &c->ncand);
		if (level == 0) {
			hnsw_hdr *hd = hnsw_hdr_of(h, cur.id);
			const uint32_t *l0 = (const uint32_t *) (hnsw_rec(h, cur.id) + h->off_links0);

			if (locked) {
				hnsw_lock(hd);
				n = hd->nlink0;
				memcpy(c->links, l0, n * sizeof(uint32_t));
				hnsw_unlock(hd);
				ids = c->links;
			} else {
				n = __atomic_load_n(&hd->nlink0, __ATOMIC_ACQUIRE);
				ids = l0;
			}
		} else {
			hnsw_hdr *hd = hnsw_hdr_of(h, cur.id);
			const uint32_t *ul = hnsw_upper(h, cur.id, level);

			if (locked)
				hnsw_lock(hd);
			n = __atomic_load_n(&ul[0], __ATOMIC_ACQUIRE);
			memcpy(c->links, ul + 1, n * sizeof(uint32_t));
			if (locked)
				hnsw_unlock(hd);
			ids = c->links;
		}
		if (n > maxn)
			n = maxn;
		nu = 0;
		for (uint32_t j = 0; j < n; j++) {
			uint32_t id = ids[j];

			if (id >= nvis || vis[id] == tag)
				continue;
			vis[id] = tag;
			u[nu++] = id;
			_mm_prefetch(hnsw_rec(h, id), _MM_HINT_T0);
		}
		rc = grow(&c->cand, &c->capcand, c->ncand + nu + 1);
		if (rc)
			return rc;
		const bool hop = prefetch_hop(h, u, nu);
		for (uint32_t j = 0; j < nu; j++) {
			uint32_t id = u[j];
			float d;

			if (j + 1 < nu && !hop)
				prefetch_rest(h, u[j + 1]);
			d = qdist(q, hnsw_rec(h, id), dim);
			ndist++;
			if (c->ntop < ef || d < lb) {
				minheap_push(c->cand, &c->ncand, (hnsw_pair){d, id});
				if (!hasdel ||
				    !__atomic_load_n(&hnsw_hdr_of(h, id)->deleted, __ATOMIC_RELAXED))
					maxheap_push(c->top, &c->ntop, (hnsw_pair){d, id});
				if (c->ntop > ef)
					maxheap_pop(c->top, &c->ntop);
				if (c->ntop)
					lb = c->top[0].d;
			}
		}
	}
	c->ndist += ndist;
	return 0;
}

/* The smallest sketch sum that proves a float32 distance >= lb (the kernels' sums are exact integers). */
static uint64_t sketch_limit(const struct hnsw *h, const hnsw_query *q, float lb)
{
	const double thr = hnsw_sketch_threshold(h, q, lb);

	return thr < 0x1p63 ? (uint64_t) ceil(thr) : UINT64_MAX;
}

/*
 * The sketch's pass over a hop's unvisited neighbours u[0..nu): each one
 * whose codes prove it no closer than lb (the full result list's worst
 * now; it only falls during the hop, so what it rules out stays ruled
 * out) is dropped and counted as scored; the rest keep their order and
 * have their float32 vectors prefetched for the float32 pass (every line
 * of a small one, the first PF_LINES of a large one), while the other
 * codes are scored. Returns how many are kept.
 */
__attribute__((always_inline)) static inline uint32_t skim_hop(const struct hnsw *h,
							       const hnsw_query *q, uint32_t *u,
							       uint32_t nu, float lb, uint64_t *ndist)
{
	const hnsw_sketch_fn kern = h->skern;
	const uint64_t limit = sketch_limit(h, q, lb);
	const size_t lines = (h->sk_bytes + 63) / 64, vl = (h->vec_bytes + 63) / 64;
	const size_t vlines = vl <= HOP_LINES ? vl : PF_LINES; /* as prefetch_hop, prefetch_rest */
	uint32_t nk = 0;

	for (uint32_t j = 0; j < nu; j++) {
		const char *r = hnsw_rec(h, u[j]) + h->off_sk;

		for (size_t l = 1; l < lines && l < SK_PF_LINES; l++)
			_mm_prefetch(r + 64 * l, _MM_HINT_T2);
	}
	for (uint32_t j = 0; j < nu; j++) {
		const char *r = hnsw_rec(h, u[j]);

		if (kern(q->sa, (const uint8_t *) r + h->off_sk, h->sk_bytes, limit) >= limit) {
			(*ndist)++;
			continue;
		}
		/* its float32 vector is scored next: start every line now, behind the other codes */
		_mm_prefetch(r, _MM_HINT_T0);
		for (size_t l = 1; l < vlines; l++)
			_mm_prefetch(r + 64 * l, _MM_HINT_T1);
		u[nk++] = u[j];
	}
	return nk;
}

/*
 * The query-time layer-0 search: as hnsw_search_layer without locks, but
 * it first collects a hop's unvisited neighbours and prefetches all their
 * vectors' heads at once, so their cache misses overlap instead of each
 * waiting for the distance before it.
 */
static int search_base(const struct hnsw *h, hnsw_ctx *c, const hnsw_query *q, uint32_t ep,
		       float epd, unsigned ef)
{
	const bool hasdel = __atomic_load_n(&h->ndeleted, __ATOMIC_RELAXED) != 0;
	const hnsw_qdist_fn qdist = h->qdist;
	const size_t dim = h->dim;
	const unsigned maxn = h->m0;
	uint32_t u[2 * HNSW_MAX_M];
	uint64_t ndist = 0;
	float lb;
	int rc;

	/* ep may be a node added after this context was sized (concurrent adds) */
	rc = ep < c->nvisited ? 0 : ctx_fit(c, __atomic_load_n(&h->cap, __ATOMIC_ACQUIRE));
	if (!rc)
		rc = grow(&c->top, &c->captop, (size_t) ef + 2);
	if (rc)
		return rc;
	ctx_epoch(c);
	const size_t nvis = c->nvisited;
	uint16_t *const vis = c->visited;
	const uint16_t tag = c->tag;
	c->ntop = 0;
	c->ncand = 0;
	vis[ep] = tag;
	if (hasdel && __atomic_load_n(&hnsw_hdr_of(h, ep)->deleted, __ATOMIC_RELAXED)) {
		lb = INFINITY;
	} else {
		maxheap_push(c->top, &c->ntop, (hnsw_pair){epd, ep});
		lb = epd;
	}
	minheap_push(c->cand, &c->ncand, (hnsw_pair){epd, ep});

	while (c->ncand) {
		hnsw_pair cur = c->cand[0];
		bool skim;
		const char *rec;
		const uint32_t *ids;
		uint32_t n, nu = 0;

		if (cur.d > lb && (c->ntop == ef || !hasdel))
			break;
		minheap_pop(c->cand, &c->ncand);
		rec = hnsw_rec(h, cur.id);
		n = __atomic_load_n(&((const hnsw_hdr *) (rec + h->off_hdr))->nlink0, __ATOMIC_ACQUIRE);
		ids = (const uint32_t *) (rec + h->off_links0);
		if (n > maxn)
			n = maxn;
		/* the sketch may skip candidates only while the result list is full (hnsw_sketch.c) */
		skim = q->sa && c->ntop == ef;
		for (uint32_t j = 0; j < n; j++) {
			uint32_t id = ids[j];

			if (id >= nvis || vis[id] == tag)
				continue;
			vis[id] = tag;
			u[nu++] = id;
			_mm_prefetch(hnsw_rec(h, id) + (skim ? h->off_sk : 0), _MM_HINT_T0);
		}
		rc = grow(&c->cand, &c->capcand, c->ncand + nu + 1);
		if (rc)
			return rc;
		if (skim)
			nu = skim_hop(h, q, u, nu, lb, &ndist);
		const bool hop = (skim && h->vec_bytes <= 64 * HOP_LINES) || prefetch_hop(h, u, nu);
		for (uint32_t j = 0; j < nu; j++) {
			uint32_t id = u[j];
			float d;

			if (j + 1 < nu && !hop)
				prefetch_rest(h, u[j + 1]);
			d = qdist(q, hnsw_rec(h, id), dim);
			ndist++;
			if (c->ntop < ef || d < lb) {
				minheap_push(c->cand, &c->ncand, (hnsw_pair){d, id});
				if (!hasdel ||
				    !__atomic_load_n(&hnsw_hdr_of(h, id)->deleted, __ATOMIC_RELAXED))
					maxheap_push(c->top, &c->ntop, (hnsw_pair){d, id});
				if (c->ntop > ef)
					maxheap_pop(c->top, &c->ntop);
				if (c->ntop)
					lb = c->top[0].d;
			}
		}
		if (c->ncand)
			_mm_prefetch(hnsw_rec(h, c->cand[0].id) + h->off_hdr, _MM_HINT_T0);
	}
	c->ndist += ndist;
	return 0;
}

/*
 * Greedy descent from (ep, *epd) through layers top..1 (Algorithm 2 with
 * ef = 1). A neighbour replaces ep only when strictly closer than best,
 * so with the sketch one whose codes prove its float32 distance >= best
 * is one the loop would pass over: it is skipped, counted as scored, and
 * ep, best and the distance count stay the float32 loop's (hnsw_sketch.c;
 * test_sketch_graph). Each step asks for every neighbour's first code
 * lines at once. On fashion-mnist / 255 the upper layers' float32
 * distances were about a third of a query's at ef 10.
 */
static uint32_t descend(const struct hnsw *h, hnsw_ctx *c, const hnsw_query *q, uint32_t ep,
			float *epd, int top)
{
	const hnsw_sketch_fn kern = h->skern;
	const size_t lines = (h->sk_bytes + 63) / 64;
	float best = *epd;
	uint64_t limit = q->sa ? sketch_limit(h, q, best) : UINT64_MAX;

	for (int l = top; l > 0; l--) {
		bool changed = true;

		while (changed) {
			const uint32_t *ul = hnsw_upper(h, ep, l);
			uint32_t n = __atomic_load_n(&ul[0], __ATOMIC_ACQUIRE);

			changed = false;
			if (n > h->m)
				n = h->m;
			if (limit != UINT64_MAX)
				for (uint32_t j = 0; j < n; j++) {
					const char *r = hnsw_rec(h, ul[1 + j]) + h->off_sk;

					for (size_t li = 0; li < lines && li < SK_PF_LINES; li++)
						_mm_prefetch(r + 64 * li, _MM_HINT_T0);
				}
			for (uint32_t j = 0; j < n; j++) {
				uint32_t id = ul[1 + j];
				const char *r = hnsw_rec(h, id);
				float d;

				c->ndist++;
				if (limit != UINT64_MAX &&
				    kern(q->sa, (const uint8_t *) r + h->off_sk, h->sk_bytes, limit) >= limit)
					continue;
				d = h->qdist(q, r, h->dim);
				if (d < best) {
					best = d;
					ep = id;
					changed = true;
					if (q->sa)
						limit = sketch_limit(h, q, best);
				}
			}
		}
	}
	*epd = best;
	return ep;
}

int hnsw_search_n(const hnsw *h, const float *qv, size_t k, unsigned ef, uint32_t *labels,
		  float *dists, size_t *nout, uint64_t *ndist)
{
	uint64_t e = __atomic_load_n(&h->entry, __ATOMIC_ACQUIRE);
	hnsw_query q;
	hnsw_ctx *c;
	uint32_t ep;
	float epd;
	size_t n;
	int rc;

	*nout = 0;
	if (k == 0 || e == UINT64_MAX)
		return 0;
	if (ef < k)
		ef = (unsigned) k;
	rc = hnsw_ctx_get(h, &c);
	if (rc)
		return rc;
	c->ndist = 0;
	hnsw_prepare_query(h, c, qv, &q);
	hnsw_sketch_prepare(h, c, &q);
	ep = (uint32_t) e;
	epd = h->qdist(&q, hnsw_rec(h, ep), h->dim);
	c->ndist++;
	ep = descend(h, c, &q, ep, &epd, (int) (e >> 32));
	rc = search_base(h, c, &q, ep, epd, ef);
	if (rc)
		goto out;
	while (c->ntop > k)
		maxheap_pop(c->top, &c->ntop);
	n = c->ntop;
	for (size_t i = n; i-- > 0;) {
		labels[i] = hnsw_hdr_of(h, c->top[0].id)->label;
		if (dists)
			dists[i] = c->top[0].d;
		maxheap_pop(c->top, &c->ntop);
	}
	*nout = n;
	if (ndist)
		*ndist += c->ndist;
out:
	hnsw_ctx_put(h, c);
	return rc;
}

int hnsw_search(const hnsw *h, const float *q, size_t k, unsigned ef, uint32_t *labels,
		float *dists, size_t *nout)
{
	return hnsw_search_n(h, q, k, ef, labels, dists, nout, NULL);
}
