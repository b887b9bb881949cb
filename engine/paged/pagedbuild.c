/*
 * pagedbuild.c - build one partition's HNSW graph the way pgvector 0.5.1
 * builds it in memory, then write it in pgvector's page layout.
 *
 * Why our own builder and not engine/hnsw's: the cold cost of a paged
 * search is one page read per unvisited neighbour, so the number of
 * neighbours per node sets the read count. pgvector's graph differs from
 * hnswlib's in exactly that: a new node gets up to 2m links at layer 0
 * (hnswlib: m), SelectNeighbors keeps pruned connections to fill the
 * list (hnswlib: no), its "closer" test is <=, and an overflowing
 * neighbour list replaces one pruned link instead of being rewritten.
 * So this file follows src/hnswbuild.c, src/hnswinsert.c and
 * src/hnswutils.c of v0.5.1 step by step:
 *
 *   InsertTuple   level = floor(-ln U * 1/ln m), capped at HnswGetMaxLevel;
 *                 HnswInsertElement: greedy ef=1 from the entry point down
 *                 to level+1, then for lc = min(level, entry level)..0
 *                 SearchLayer(ef_construction) and SelectNeighbors(lm)
 *                 (lm = 2m at layer 0, m above); HnswFindDuplicate merges
 *                 an identical vector into an existing element (up to 10
 *                 heap TIDs); else HnswUpdateConnection for each new
 *                 neighbour (append while below lm, else SelectNeighbors
 *                 over the list plus the new node, with the cached
 *                 "closer" flags, and replace the one pruned).
 *   CreateElementPages   elements in insertion order from block 1, each
 *                 element tuple followed by its neighbour tuple on the
 *                 same page when the pair fits (<= HNSW_MAX_SIZE), else
 *                 on the next page; pages chained by nextblkno.
 *   CreateNeighborPages  the neighbour TIDs, filled in once every element
 *                 has a position (here: a second pass over the same
 *                 layout), slots from the top layer down, 2m at layer 0.
 *   meta page     block 0, written last with the entry point.
 *
 * Invariant: pass 1 and pass 2 add the same tuple sizes in the same
 * order, so the positions pass 1 records are where pass 2 writes.
 */
#include "paged.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* splitmix64: the level draws (pgvector uses pg_prng_double). */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static double rng_double(uint64_t *s)
{
	return (double) (rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

int pb_graph_init(pb_graph *g, size_t dim, unsigned m, unsigned efc, cv_metric metric,
		  uint64_t seed, size_t capacity)
{
	memset(g, 0, sizeof(*g));
	if (m < HNSW_MIN_M || m > HNSW_MAX_M || efc < HNSW_MIN_EF_CONSTRUCTION ||
	    efc > HNSW_MAX_EF_CONSTRUCTION || efc < 2 * m || dim == 0 || dim > HNSW_MAX_DIM)
		return -EINVAL;
	g->dim = dim;
	g->m = m;
	g->ef_construction = efc;
	g->metric = metric;
	g->entry = -1;
	g->rng = seed ^ 0x5DEECE66Dull;
	g->cap = capacity ? capacity : 16;
	g->elems = calloc(g->cap, sizeof(*g->elems));
	g->visit_cap = g->cap;
	g->visit = calloc(g->visit_cap, sizeof(*g->visit));
	if (!g->elems || !g->visit) {
		pb_graph_free(g);
		return -ENOMEM;
	}
	return 0;
}

void pb_graph_free(pb_graph *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++) {
		pb_elem *e = &g->elems[i];

		if (e->nbrs)
			for (int l = 0; l <= e->level; l++)
				free(e->nbrs[l].items);
		free(e->nbrs);
	}
	free(g->elems);
	free(g->visit);
	memset(g, 0, sizeof(*g));
}

static float edist(pb_graph *g, const float *a, const float *b)
{
	g->distances++;
	return paged_index_distance(g->metric, a, b, g->dim);
}

/* ---- binary heaps of candidates ---- */

typedef struct cheap {
	pb_cand *v;
	size_t n, cap;
	int max; /* 1: furthest on top (W), 0: nearest on top (C) */
} cheap;

/* Ties break on the element number, so a build is the same every time. */
#define HEAP_PREFIX pbmax /* furthest on top: W */
#define HEAP_ELEM pb_cand
#define HEAP_ABOVE(x, y) ((x).dist != (y).dist ? (x).dist > (y).dist : (x).elem > (y).elem)
#include "heap_template.h"

#define HEAP_PREFIX pbmin /* nearest on top: C */
#define HEAP_ELEM pb_cand
#define HEAP_ABOVE(x, y) ((x).dist != (y).dist ? (x).dist < (y).dist : (x).elem < (y).elem)
#include "heap_template.h"

static int heap_push(cheap *h, pb_cand c)
{
	if (h->n == h->cap) {
		size_t nc = h->cap ? h->cap * 2 : 64;
		pb_cand *nv = realloc(h->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		h->v = nv;
		h->cap = nc;
	}
	if (h->max)
		pbmax_push(h->v, &h->n, c);
	else
		pbmin_push(h->v, &h->n, c);
	return 0;
}

static pb_cand heap_pop(cheap *h)
{
	return h->max ? pbmax_pop(h->v, &h->n) : pbmin_pop(h->v, &h->n);
}

/* ---- HnswSearchLayer over the in-memory graph ---- */

/* Mark elem visited in this layer's search; true if it already was. */
static bool visit(pb_graph *g, uint32_t elem)
{
	if (g->visit[elem] == g->visit_gen)
		return true;
	g->visit[elem] = g->visit_gen;
	return false;
}

/*
 * Algorithm 2 of the HNSW paper as pgvector writes it; w receives W
 * furthest first (pgvector's "ordered desc"). *nw in, capacity is grown.
 */
static int search_layer(pb_graph *g, const float *q, const pb_cand *ep, size_t nep, unsigned ef,
			int lc, pb_cand **w, size_t *nw, size_t *wcap)
{
	cheap C = {0}, W = {0};
	size_t wlen = 0;
	int rc = 0;

	C.max = 0;
	W.max = 1;
	if (++g->visit_gen == 0) {
		memset(g->visit, 0, g->visit_cap * sizeof(*g->visit));
		g->visit_gen = 1;
	}
	for (size_t i = 0; i < nep; i++) {
		visit(g, ep[i].elem);
		if ((rc = heap_push(&C, ep[i])) || (rc = heap_push(&W, ep[i])))
			goto out;
		wlen++;
	}
	while (C.n) {
		pb_cand c = heap_pop(&C);
		const pb_elem *ce = &g->elems[c.elem];
		const pb_nbrs *nb;

		if (c.dist > W.v[0].dist)
			break;
		if (lc > ce->level)
			continue;
		nb = &ce->nbrs[lc];
		for (size_t i = 0; i < nb->len; i++) {
			uint32_t e = nb->items[i].elem;
			float d;

			if (visit(g, e))
				continue;
			d = edist(g, q, g->elems[e].vec);
			if (d < W.v[0].dist || wlen < ef) {
				pb_cand ec = {e, d, false};

				if ((rc = heap_push(&C, ec)) || (rc = heap_push(&W, ec)))
					goto out;
				wlen++;
				if (wlen > ef)
					heap_pop(&W);
			}
		}
	}
	if (*wcap < W.n) {
		pb_cand *nv = realloc(*w, W.n * sizeof(*nv));

		if (!nv) {
			rc = -ENOMEM;
			goto out;
		}
		*w = nv;
		*wcap = W.n;
	}
	*nw = 0;
	while (W.n)
		(*w)[(*nw)++] = heap_pop(&W);
out:
	free(C.v);
	free(W.v);
	return rc;
}

/* ---- SelectNeighbors (heuristic, keep pruned connections) ---- */

/* CheckElementCloser: e is kept if no r[i] is at least as close to e as the query is. */
static bool element_closer(pb_graph *g, const pb_cand *e, pb_cand *const *r, size_t nr)
{
	const float *ev = g->elems[e->elem].vec;

	for (size_t i = 0; i < nr; i++)
		if (edist(g, ev, g->elems[r[i]->elem].vec) <= e->dist)
			return false;
	return true;
}

static int cmp_desc(const void *a, const void *b)
{
	const pb_cand *x = *(pb_cand *const *) a, *y = *(pb_cand *const *) b;

	if (x->dist < y->dist)
		return 1;
	if (x->dist > y->dist)
		return -1;
	return x->elem < y->elem ? 1 : x->elem > y->elem ? -1 : 0;
}

/*
 * pgvector's SelectNeighbors. w: candidates (pointers; closer flags are
 * written through them) ordered furthest first unless sort; nb: the
 * array whose closer cache applies; newc: the new candidate (update
 * path) or NULL; pruned: the one left out (update path). r gets <= m.
 */
static size_t select_neighbors(pb_graph *g, pb_cand **w, size_t nw, unsigned m, pb_nbrs *nb,
			       pb_cand *newc, pb_cand **pruned, bool sort, pb_cand **r)
{
	pb_cand *wd[2 * HNSW_MAX_EF_CONSTRUCTION + 2 * HNSW_MAX_M + 2];
	pb_cand *added[2 * HNSW_MAX_M + 2];
	size_t nr = 0, nwd = 0, nadded = 0;
	bool must = !nb->closer_set, removed_any = false;

	if (nw <= m) {
		for (size_t i = 0; i < nw; i++)
			r[i] = w[i];
		if (pruned)
			*pruned = NULL;
		return nw;
	}
	if (sort)
		qsort(w, nw, sizeof(*w), cmp_desc);
	while (nw > 0 && nr < m) {
		pb_cand *e = w[--nw];

		if (must) {
			e->closer = element_closer(g, e, r, nr);
		} else if (nadded > 0) {
			if (e->closer) {
				e->closer = element_closer(g, e, added, nadded);
				if (!e->closer)
					removed_any = true;
			} else if (removed_any) {
				e->closer = element_closer(g, e, r, nr);
				if (e->closer && nadded < sizeof(added) / sizeof(added[0]))
					added[nadded++] = e;
			}
		} else if (e == newc) {
			e->closer = element_closer(g, e, r, nr);
			if (e->closer)
				added[nadded++] = e;
		}
		if (e->closer)
			r[nr++] = e;
		else if (nwd < sizeof(wd) / sizeof(wd[0]))
			wd[nwd++] = e;
	}
	nb->closer_set = sort;
	/* keep pruned connections, nearest first (a pairing heap in pgvector) */
	while (nwd > 0 && nr < m) {
		size_t best = 0;

		for (size_t i = 1; i < nwd; i++)
			if (wd[i]->dist < wd[best]->dist)
				best = i;
		r[nr++] = wd[best];
		wd[best] = wd[--nwd];
	}
	if (pruned) {
		if (nwd > 0) {
			size_t best = 0;

			for (size_t i = 1; i < nwd; i++)
				if (wd[i]->dist < wd[best]->dist)
					best = i;
			*pruned = wd[best];
		} else {
			*pruned = nw > 0 ? w[0] : NULL;
		}
	}
	return nr;
}

/* HnswUpdateConnection: link the new element into neighbour hc's list at lc. */
static void update_connection(pb_graph *g, uint32_t elem, const pb_cand *hc, unsigned lm, int lc)
{
	pb_nbrs *cur = &g->elems[hc->elem].nbrs[lc];
	pb_cand hc2 = {elem, hc->dist, false};
	pb_cand *c[2 * HNSW_MAX_M + 2], *r[2 * HNSW_MAX_M + 2], *pruned = NULL;
	size_t nc = 0;

	if (cur->len < lm) {
		cur->items[cur->len++] = hc2;
		return;
	}
	for (size_t i = 0; i < cur->len; i++)
		c[nc++] = &cur->items[i];
	c[nc++] = &hc2;
	select_neighbors(g, c, nc, lm, cur, &hc2, &pruned, true, r);
	if (!pruned)
		return;
	for (size_t i = 0; i < cur->len; i++)
		if (cur->items[i].elem == pruned->elem) {
			cur->items[i] = hc2;
			break;
		}
}

static unsigned layer_m(const pb_graph *g, int lc)
{
	return lc == 0 ? 2 * g->m : g->m;
}

int pb_graph_insert(pb_graph *g, const float *vec, pg_tid heaptid)
{
	pb_cand *w = NULL, *ep = NULL;
	size_t nw = 0, wcap = 0, nep = 0;
	double ml = 1.0 / log((double) g->m);
	int level, entry_level, rc = 0;
	uint32_t id;
	pb_elem *el;

	if (g->n == g->cap) {
		size_t nc = g->cap * 2;
		pb_elem *ne = realloc(g->elems, nc * sizeof(*ne));
		uint32_t *nv;

		if (!ne)
			return -ENOMEM;
		g->elems = ne;
		g->cap = nc;
		nv = realloc(g->visit, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		memset(nv + g->visit_cap, 0, (nc - g->visit_cap) * sizeof(*nv));
		g->visit = nv;
		g->visit_cap = nc;
	}
	level = (int) (-log(rng_double(&g->rng)) * ml);
	if (level > HNSW_MAX_LEVEL(g->m) || level < 0)
		level = HNSW_MAX_LEVEL(g->m);
	id = (uint32_t) g->n;
	el = &g->elems[id];
	memset(el, 0, sizeof(*el));
	el->vec = vec;
	el->level = level;
	el->heaptids[0] = heaptid;
	el->heaptid_n = 1;
	el->nbrs = calloc((size_t) level + 1, sizeof(*el->nbrs));
	if (!el->nbrs)
		return -ENOMEM;
	for (int l = 0; l <= level; l++) {
		el->nbrs[l].cap = (uint16_t) layer_m(g, l);
		el->nbrs[l].items = calloc(el->nbrs[l].cap, sizeof(pb_cand));
		if (!el->nbrs[l].items) {
			for (int k = 0; k < l; k++)
				free(el->nbrs[k].items);
			free(el->nbrs);
			el->nbrs = NULL;
			return -ENOMEM;
		}
	}
	g->n++;
	if (g->entry < 0) {
		g->entry = id;
		return 0;
	}
	/* HnswInsertElement */
	entry_level = g->elems[g->entry].level;
	nep = 1;
	ep = malloc(sizeof(*ep));
	if (!ep) {
		rc = -ENOMEM;
		goto out;
	}
	ep[0] = (pb_cand){(uint32_t) g->entry, edist(g, vec, g->elems[g->entry].vec), false};
	for (int lc = entry_level; lc >= level + 1; lc--) {
		if ((rc = search_layer(g, vec, ep, nep, 1, lc, &w, &nw, &wcap)))
			goto out;
		free(ep);
		ep = w;
		nep = nw;
		w = NULL;
		wcap = 0;
	}
	for (int lc = level < entry_level ? level : entry_level; lc >= 0; lc--) {
		pb_cand *ptr[2 * HNSW_MAX_EF_CONSTRUCTION + 2 * HNSW_MAX_M + 2];
		pb_cand *r[2 * HNSW_MAX_M + 2];
		unsigned lm = layer_m(g, lc);
		size_t nr, np = 0;
		pb_nbrs *mine = &el->nbrs[lc];

		if ((rc = search_layer(g, vec, ep, nep, g->ef_construction, lc, &w, &nw, &wcap)))
			goto out;
		for (size_t i = 0; i < nw && np < sizeof(ptr) / sizeof(ptr[0]); i++)
			ptr[np++] = &w[i];
		nr = select_neighbors(g, ptr, np, lm, mine, NULL, NULL, false, r);
		for (size_t i = 0; i < nr && mine->len < mine->cap; i++)
			mine->items[mine->len++] = *r[i];
		free(ep);
		ep = w;
		nep = nw;
		w = NULL;
		wcap = 0;
	}
	/* HnswFindDuplicate: an identical vector joins an existing element */
	for (size_t i = 0; i < el->nbrs[0].len; i++) {
		pb_elem *o = &g->elems[el->nbrs[0].items[i].elem];

		if (memcmp(o->vec, vec, g->dim * sizeof(float)))
			break;
		if (o->heaptid_n < HNSW_HEAPTIDS) {
			o->heaptids[o->heaptid_n++] = heaptid;
			for (int l = 0; l <= el->level; l++)
				free(el->nbrs[l].items);
			free(el->nbrs);
			g->n--;
			goto out;
		}
	}
	for (int lc = level; lc >= 0; lc--)
		for (size_t i = 0; i < el->nbrs[lc].len; i++) {
			/* el->nbrs[lc] may not move: capacity was fixed at creation */
			pb_cand hc = el->nbrs[lc].items[i];

			update_connection(g, id, &hc, layer_m(g, lc), lc);
		}
	if (level > entry_level)
		g->entry = id;
out:
	free(w);
	free(ep);
	return rc;
}

/* ---- writing the pages ---- */

typedef struct writer {
	int fd;
	int pass;           /* 1: positions only, 2: write */
	uint8_t *page;
	uint32_t blk;       /* block number of page */
	uint64_t written;
	int err;
} writer;

/* Start the next page, writing out the current one (HnswBuildAppendPage). */
static void append_page(writer *w)
{
	uint8_t *sp = w->page + PG_BLCKSZ - HNSW_SPECIAL;

	pg_put32(sp, w->blk + 1);
	if (w->pass == 2 && !w->err) {
		pg_page_set_checksum(w->page, w->blk);
		if (cvu_pwrite_full(w->fd, w->page, PG_BLCKSZ, (uint64_t) w->blk * PG_BLCKSZ))
			w->err = -EIO;
		w->written++;
	}
	w->blk++;
	pg_page_init(w->page, HNSW_SPECIAL);
	sp = w->page + PG_BLCKSZ - HNSW_SPECIAL;
	pg_put32(sp, PG_INVALID_BLOCK);
	pg_put16(sp + 6, HNSW_PAGE_ID);
}

static void fill_element(const pb_graph *g, const pb_elem *e, uint8_t *t)
{
	size_t vlen = 8 + 4 * g->dim;

	memset(t, 0, HNSW_ELEMENT_TUPLE_SIZE(g->dim));
	t[0] = HNSW_ELEMENT_TYPE;
	t[1] = (uint8_t) e->level;
	for (unsigned i = 0; i < HNSW_HEAPTIDS; i++) {
		pg_tid inv = {PG_INVALID_BLOCK, 0};

		pg_put_tid(t + 4 + 6 * i, i < e->heaptid_n ? e->heaptids[i] : inv);
	}
	pg_put_tid(t + 64, e->ntid);
	pg_put32(t + 72, (uint32_t) (vlen << 2)); /* SET_VARSIZE, 4-byte header */
	pg_put16(t + 76, (uint16_t) g->dim);
	memcpy(t + 80, e->vec, 4 * g->dim);
}

static void fill_neighbors(const pb_graph *g, const pb_elem *e, uint8_t *t)
{
	size_t idx = 0;

	memset(t, 0, HNSW_NEIGHBOR_TUPLE_SIZE(e->level, g->m));
	t[0] = HNSW_NEIGHBOR_TYPE;
	for (int lc = e->level; lc >= 0; lc--) {
		unsigned lm = layer_m(g, lc);
		const pb_nbrs *nb = &e->nbrs[lc];

		for (unsigned i = 0; i < lm; i++, idx++) {
			pg_tid tid = {PG_INVALID_BLOCK, 0};

			if (i < nb->len)
				tid = g->elems[nb->items[i].elem].tid;
			pg_put_tid(t + 4 + 6 * idx, tid);
		}
	}
	pg_put16(t + 2, (uint16_t) idx);
}

/* One pass of CreateElementPages (+ CreateNeighborPages in pass 2). */
static int layout(pb_graph *g, writer *w, uint8_t *etup, uint8_t *ntup)
{
	size_t esize = HNSW_ELEMENT_TUPLE_SIZE(g->dim);

	uint8_t *sp = w->page + PG_BLCKSZ - HNSW_SPECIAL;

	w->blk = HNSW_HEAD_BLKNO;
	w->written = 0;
	pg_page_init(w->page, HNSW_SPECIAL);
	pg_put32(sp, PG_INVALID_BLOCK);
	pg_put16(sp + 6, HNSW_PAGE_ID);
	for (size_t i = 0; i < g->n; i++) {
		pb_elem *e = &g->elems[i];
		size_t nsize = HNSW_NEIGHBOR_TUPLE_SIZE(e->level, g->m);
		size_t combined = esize + nsize + PG_ITEMID;
		unsigned off;

		if (pg_page_free(w->page) < esize ||
		    (combined <= HNSW_MAX_SIZE && pg_page_free(w->page) < combined))
			append_page(w);
		if (w->pass == 1) {
			e->tid.blk = w->blk;
			e->tid.off = (uint16_t) (pg_page_nitems(w->page) + 1);
			if (combined <= HNSW_MAX_SIZE)
				e->ntid = (pg_tid){e->tid.blk, (uint16_t) (e->tid.off + 1)};
			else
				e->ntid = (pg_tid){e->tid.blk + 1, 1};
			memset(etup, 0, esize);
		} else {
			fill_element(g, e, etup);
		}
		off = pg_page_add(w->page, etup, esize);
		if (off != e->tid.off || w->blk != e->tid.blk)
			return -EFAULT;
		if (pg_page_free(w->page) < nsize)
			append_page(w);
		if (w->pass == 1)
			memset(ntup, 0, nsize);
		else
			fill_neighbors(g, e, ntup);
		off = pg_page_add(w->page, ntup, nsize);
		if (off != e->ntid.off || w->blk != e->ntid.blk)
			return -EFAULT;
	}
	return 0;
}

int pb_write_pages(pb_graph *g, const char *path, uint64_t *npages, cv_err *e)
{
	uint8_t *etup = NULL, *ntup = NULL, *page = NULL, *meta = NULL;
	writer w = {.fd = -1};
	uint32_t insert_page;
	int rc = -ENOMEM;

	etup = malloc(HNSW_ELEMENT_TUPLE_SIZE(g->dim));
	ntup = malloc(PG_BLCKSZ);
	page = malloc(PG_BLCKSZ);
	meta = malloc(PG_BLCKSZ);
	if (!etup || !ntup || !page || !meta)
		goto out;
	if (HNSW_ELEMENT_TUPLE_SIZE(g->dim) > HNSW_MAX_SIZE) {
		rc = cv_err_set(e, -EINVAL, "dimension %zu: index tuple too large for an 8 KB page",
				g->dim);
		goto out;
	}
	w.fd = cv_open_new(path, O_WRONLY, 0644);
	if (w.fd < 0) {
		rc = cv_err_set(e, -errno, "%s: cannot create", path);
		goto out;
	}
	w.page = page;
	for (w.pass = 1; w.pass <= 2; w.pass++) {
		w.err = 0;
		rc = layout(g, &w, etup, ntup);
		if (rc) {
			rc = cv_err_set(e, rc, "%s: page layout mismatch (internal)", path);
			goto out;
		}
	}
	/* the last page stays open for inserts: insertPage */
	insert_page = w.blk;
	pg_page_set_checksum(w.page, w.blk);
	if (!w.err && cvu_pwrite_full(w.fd, w.page, PG_BLCKSZ, (uint64_t) w.blk * PG_BLCKSZ))
		w.err = -EIO;
	/* meta page */
	pg_page_init(meta, HNSW_SPECIAL);
	pg_put32(meta + PG_BLCKSZ - HNSW_SPECIAL, PG_INVALID_BLOCK);
	pg_put16(meta + PG_BLCKSZ - 2, HNSW_PAGE_ID);
	{
		uint8_t *mp = meta + PG_PAGE_HEADER;
		const pb_elem *ent = g->entry >= 0 ? &g->elems[g->entry] : NULL;

		pg_put32(mp + 0, HNSW_MAGIC);
		pg_put32(mp + 4, HNSW_VERSION);
		pg_put32(mp + 8, (uint32_t) g->dim);
		pg_put16(mp + 12, (uint16_t) g->m);
		pg_put16(mp + 14, (uint16_t) g->ef_construction);
		pg_put32(mp + 16, ent ? ent->tid.blk : PG_INVALID_BLOCK);
		pg_put16(mp + 20, ent ? ent->tid.off : 0);
		pg_put16(mp + 22, (uint16_t) (int16_t) (ent ? ent->level : -1));
		pg_put32(mp + 24, insert_page);
		pg_put16(meta + PGH_LOWER, (uint16_t) (PG_PAGE_HEADER + 28));
	}
	pg_page_set_checksum(meta, HNSW_METAPAGE_BLKNO);
	if (!w.err && cvu_pwrite_full(w.fd, meta, PG_BLCKSZ, 0))
		w.err = -EIO;
	if (!w.err && fsync(w.fd) < 0)
		w.err = -errno;
	if (w.err) {
		rc = cv_err_set(e, w.err, "%s: write failed", path);
		goto out;
	}
	if (npages)
		*npages = (uint64_t) insert_page + 1;
	rc = 0;
out:
	if (w.fd >= 0)
		close(w.fd);
	free(etup);
	free(ntup);
	free(page);
	free(meta);
	return rc;
}
