/*
 * pagedscan.c - search one paged HNSW file as pgvector 0.5.1's index scan
 * does (src/hnswscan.c GetScanItems, src/hnswutils.c HnswSearchLayer,
 * HnswLoadElement, HnswLoadNeighbors), through the buffer pool, so every
 * page it touches is a counted hit or a counted 8 KB read.
 *
 *   1. read the meta page: m and the entry point (block, offset, level);
 *   2. read the entry element's page, compute its distance;
 *   3. layers L..1: HnswSearchLayer with ef = 1 (greedy);
 *   4. layer 0: HnswSearchLayer with ef = ef_search;
 *      expanding candidate c reads c's neighbour-tuple page (all layers'
 *      slots are loaded at once), then each unvisited neighbour's element
 *      page, one read at a time; the visited set (on index TIDs) is
 *      rebuilt for every layer; stop when c is farther than W's furthest;
 *      W keeps at most ef elements;
 *   5. W, nearest first, is the whole result: at most ef_search elements,
 *      each emitting all its heap TIDs. Distances are float32 as in 0.5.1.
 *
 * Like pgvector, each neighbourhood slot that passes the visited check
 * becomes a fresh element object (HnswInitElementFromBlock), so a node
 * reached again in a lower layer has its neighbour page looked up again
 * (a buffer hit the second time). Slots hold bare TIDs until then: an
 * element per slot up front cost a fault-in of megabytes of scratch per
 * cold query, CPU time between reads that the gate counts against I/O.
 *
 * The scan is a resumable state machine: wherever pgvector calls
 * ReadBuffer, ps_scan_run looks the block up in the pool and, on a miss,
 * returns PS_NEED_IO with the block and the reserved buffer; the driver
 * reads it (a blocking cv_io_read in serial mode, an io_uring submission
 * in fan-out mode), calls ps_scan_io_done, and runs the scan again, which
 * resumes at the same ReadBuffer. Serial and fan-out therefore execute the
 * same search and read the same pages; only the overlap differs. Within a
 * scan there is never more than one read in flight (queue depth one).
 *
 * After the search the scan can also fetch heap rows (ps_scan_set_heap):
 * an Index Scan node fetches the heap tuple of every TID it returns, and
 * the executor computes ORDER BY's distance from it in double.
 */
#include "paged.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* pgvector's HnswElement as a scan sees it. */
typedef struct se {
	pg_tid tid, ntid;
	int level;               /* -1 until loaded */
	float dist;
	uint8_t nheap;
	pg_tid heaptids[HNSW_HEAPTIDS];
	pg_tid **nbrs;           /* per layer, nlen[l] neighbour TIDs; NULL until loaded */
	uint16_t *nlen;
} se;

typedef struct sc {
	se *e;
	float dist;
} sc;

typedef struct sheap {
	sc *v;
	size_t n, cap;
	int max;
} sheap;

typedef struct chunk {
	struct chunk *next;
	size_t used, size;
	_Alignas(16) unsigned char mem[];
} chunk;

enum { S_META, S_ENTRY, S_LAYER, S_POP, S_NBRPAGE, S_EXPAND, S_ELEM, S_HEAP, S_DONE };

struct ps_scan {
	bufpool *bp;
	uint32_t fileno, heap_fileno, rows_per_page;
	size_t dim;
	cv_metric metric;
	float *q;                /* index form (normalized for cosine) */
	float *qraw;             /* as given (the executor's distance) */
	float *rowbuf;
	unsigned ef_search, m;
	int state, lc, err;
	unsigned ef;
	size_t wlen;
	se *entry, *c, *e;
	size_t i;
	sheap C, W;
	sc *ep;
	size_t nep, epcap;
	/* visited set of index TIDs */
	uint64_t *vkeys;
	size_t vcap, vn;
	/* the read in progress */
	ps_need need;
	bool need_pending, need_ready;
	int cur_buf;
	/* results */
	ps_row *rows;
	size_t nrows, nheap, nfetched;
	ps_counts counts;
	chunk *arena;
};

/* ---- arena ---- */

/*
 * Scans come and go by the thousand (one per partition per query); their
 * arena chunks are kept per thread for the next scan, up to SPARE_MAX, so
 * a cold query does not fault fresh scratch memory in between its reads
 * (a query keeps every partition's scan, so it needs a chunk or two each).
 */
enum { CHUNK_SIZE = 65536, SPARE_MAX = 128 }; /* 8 MB a thread at most */

static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static int spare_ok;

static void spare_free(void *p)
{
	chunk *c = p;

	while (c) {
		chunk *n = c->next;

		free(c);
		c = n;
	}
}

static void spare_init(void)
{
	spare_ok = pthread_key_create(&spare_key, spare_free) == 0;
}

static chunk *spare_take(void)
{
	chunk *c;

	pthread_once(&spare_once, spare_init);
	if (!spare_ok || !(c = pthread_getspecific(spare_key)))
		return NULL;
	pthread_setspecific(spare_key, c->next);
	return c;
}

static void spare_give(chunk *c)
{
	chunk *head = spare_ok ? pthread_getspecific(spare_key) : NULL;
	size_t n = head ? head->used : 0; /* a spare chunk's `used`: the list's length */

	if (!spare_ok || c->size != CHUNK_SIZE || n >= SPARE_MAX) {
		free(c);
		return;
	}
	c->next = head;
	c->used = n + 1;
	if (pthread_setspecific(spare_key, c))
		free(c);
}

static void *arena_alloc(ps_scan *s, size_t n)
{
	chunk *c = s->arena;

	n = (n + 15) & ~(size_t) 15;
	if (!c || c->used + n > c->size) {
		size_t sz = n > CHUNK_SIZE ? n : CHUNK_SIZE;

		c = sz == CHUNK_SIZE ? spare_take() : NULL;
		if (!c)
			c = malloc(sizeof(*c) + sz);
		if (!c)
			return NULL;
		c->next = s->arena;
		c->used = 0;
		c->size = sz;
		s->arena = c;
	}
	c->used += n;
	return c->mem + c->used - n;
}

static se *new_elem(ps_scan *s, pg_tid tid)
{
	se *e = arena_alloc(s, sizeof(*e));

	if (!e)
		return NULL;
	memset(e, 0, sizeof(*e));
	e->tid = tid;
	e->level = -1;
	return e;
}

/* ---- heaps ---- */

#define HEAP_PREFIX scmax /* furthest on top */
#define HEAP_ELEM sc
#define HEAP_ABOVE(x, y) ((x).dist > (y).dist)
#include "heap_template.h"

#define HEAP_PREFIX scmin /* nearest on top */
#define HEAP_ELEM sc
#define HEAP_ABOVE(x, y) ((x).dist < (y).dist)
#include "heap_template.h"

static int heap_push(sheap *h, sc c)
{
	if (h->n == h->cap) {
		size_t nc = h->cap ? h->cap * 2 : 64;
		sc *nv = realloc(h->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		h->v = nv;
		h->cap = nc;
	}
	if (h->max)
		scmax_push(h->v, &h->n, c);
	else
		scmin_push(h->v, &h->n, c);
	return 0;
}

static sc heap_pop(sheap *h)
{
	return h->max ? scmax_pop(h->v, &h->n) : scmin_pop(h->v, &h->n);
}

/* ---- visited set (a hash on index TIDs, rebuilt per layer) ---- */

static uint64_t tid_key(pg_tid t)
{
	return ((uint64_t) t.blk << 16 | t.off) + 1; /* 0 means empty */
}

static int visited_reset(ps_scan *s)
{
	if (!s->vkeys) {
		s->vcap = 1024;
		s->vkeys = calloc(s->vcap, sizeof(*s->vkeys));
		if (!s->vkeys)
			return -ENOMEM;
	} else {
		memset(s->vkeys, 0, s->vcap * sizeof(*s->vkeys));
	}
	s->vn = 0;
	return 0;
}

/* AddToVisited: 1 if already visited, 0 if added, -ENOMEM. */
static int visited_add(ps_scan *s, pg_tid t)
{
	uint64_t k = tid_key(t);
	size_t mask, i;

	if (2 * (s->vn + 1) > s->vcap) {
		size_t ncap = s->vcap * 2;
		uint64_t *nk = calloc(ncap, sizeof(*nk));

		if (!nk)
			return -ENOMEM;
		for (size_t j = 0; j < s->vcap; j++) {
			uint64_t o = s->vkeys[j];

			if (!o)
				continue;
			for (i = (size_t) ((o * 0x9E3779B97F4A7C15ull) >> 20) & (ncap - 1); nk[i];
			     i = (i + 1) & (ncap - 1))
				;
			nk[i] = o;
		}
		free(s->vkeys);
		s->vkeys = nk;
		s->vcap = ncap;
	}
	mask = s->vcap - 1;
	for (i = (size_t) ((k * 0x9E3779B97F4A7C15ull) >> 20) & mask; s->vkeys[i];
	     i = (i + 1) & mask)
		if (s->vkeys[i] == k)
			return 1;
	s->vkeys[i] = k;
	s->vn++;
	return 0;
}

/* ---- public lifecycle ---- */

int ps_scan_new(bufpool *bp, uint32_t fileno, size_t dim, cv_metric metric, const float *q,
		unsigned ef_search, ps_scan **out)
{
	ps_scan *s;

	*out = NULL;
	if (ef_search < HNSW_MIN_EF_SEARCH || ef_search > HNSW_MAX_EF_SEARCH || dim == 0)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->bp = bp;
	s->fileno = fileno;
	s->dim = dim;
	s->metric = metric;
	s->ef_search = ef_search;
	s->cur_buf = -1;
	s->q = malloc(dim * sizeof(float));
	s->qraw = malloc(dim * sizeof(float));
	s->rowbuf = malloc(dim * sizeof(float));
	if (!s->q || !s->qraw || !s->rowbuf) {
		ps_scan_free(s);
		return -ENOMEM;
	}
	memcpy(s->qraw, q, dim * sizeof(float));
	if (metric == CV_METRIC_COSINE)
		paged_normalize(q, s->q, dim);
	else
		memcpy(s->q, q, dim * sizeof(float));
	s->C.max = 0;
	s->W.max = 1;
	s->state = S_META;
	*out = s;
	return 0;
}

void ps_scan_free(ps_scan *s)
{
	if (!s)
		return;
	if (s->cur_buf >= 0)
		bufpool_release(s->bp, s->cur_buf);
	if (s->need_pending)
		bufpool_io_done(s->bp, s->need.buf, false);
	else if (s->need_ready)
		bufpool_release(s->bp, s->need.buf);
	while (s->arena) {
		chunk *n = s->arena->next;

		spare_give(s->arena);
		s->arena = n;
	}
	free(s->C.v);
	free(s->W.v);
	free(s->ep);
	free(s->vkeys);
	free(s->rows);
	free(s->q);
	free(s->qraw);
	free(s->rowbuf);
	free(s);
}

void ps_scan_set_heap(ps_scan *s, uint32_t heap_fileno, size_t nheap, uint32_t rows_per_page)
{
	s->heap_fileno = heap_fileno;
	s->nheap = nheap;
	s->rows_per_page = rows_per_page;
}

void ps_scan_fetch_more(ps_scan *s, size_t nheap)
{
	if (nheap > s->nheap) {
		s->nheap = nheap;
		if (s->state == S_DONE)
			s->state = S_HEAP;
	}
}

const ps_need *ps_scan_need(const ps_scan *s)
{
	return &s->need;
}

const ps_row *ps_scan_rows(const ps_scan *s, size_t *n)
{
	*n = s->nrows;
	return s->rows;
}

const ps_counts *ps_scan_counts(const ps_scan *s)
{
	return &s->counts;
}

int ps_scan_io_done(ps_scan *s, int res)
{
	if (!s->need_pending)
		return -EINVAL;
	s->need_pending = false;
	if (!res)
		res = pg_page_check(s->need.page, s->need.blk);
	if (s->need.heap)
		s->counts.heap_reads++;
	else
		s->counts.reads++;
	bufpool_io_done(s->bp, s->need.buf, res == 0);
	if (res) {
		s->err = res;
		return res;
	}
	s->need_ready = true;
	return 0;
}

/*
 * ReadBuffer(file, blk): 0 with *page pinned (s->cur_buf), PS_NEED_IO
 * with s->need set, PS_BLOCKED, or -errno.
 */
static int get_page(ps_scan *s, uint32_t file, uint32_t blk, bool heap, const uint8_t **page)
{
	uint8_t *p;
	int buf, rc;

	if (s->need_ready) {
		/* the read we asked for has landed: consume it (not a hit) */
		if (s->need.file != file || s->need.blk != blk)
			return -EFAULT;
		s->need_ready = false;
		s->cur_buf = s->need.buf;
		*page = s->need.page;
		return 0;
	}
	rc = bufpool_lookup(s->bp, file, blk, &buf, &p);
	if (rc == -EBUSY)
		return PS_BLOCKED;
	if (rc < 0)
		return rc;
	if (rc == BUF_HIT) {
		if (heap)
			s->counts.heap_hits++;
		else
			s->counts.hits++;
		s->cur_buf = buf;
		*page = p;
		return 0;
	}
	s->need = (ps_need){.file = file, .blk = blk, .buf = buf, .page = p, .heap = heap};
	s->need_pending = true;
	return PS_NEED_IO;
}

static void put_page(ps_scan *s)
{
	bufpool_release(s->bp, s->cur_buf);
	s->cur_buf = -1;
}

/* HnswLoadElement: level, heap TIDs, neighbour TID and distance from the element tuple. */
static int load_element(ps_scan *s, se *e, const uint8_t *page)
{
	size_t len;
	const uint8_t *t = pg_page_item(page, e->tid.off, &len);

	if (!t || len < 80 + 4 * s->dim || t[0] != HNSW_ELEMENT_TYPE ||
	    pg_get16(t + 76) != s->dim)
		return -EBADMSG;
	e->level = t[1];
	e->nheap = 0;
	for (unsigned i = 0; i < HNSW_HEAPTIDS; i++) {
		pg_tid h = pg_get_tid(t + 4 + 6 * i);

		if (!pg_tid_valid(h))
			break;
		e->heaptids[e->nheap++] = h;
	}
	e->ntid = pg_get_tid(t + 64);
	/* 80 is 8-aligned in a MAXALIGNed tuple of an aligned page */
	e->dist = paged_index_distance(s->metric, s->q, (const float *) (const void *) (t + 80),
				       s->dim);
	s->counts.distances++;
	return 0;
}

/* HnswLoadNeighbors: every layer's slots; a tuple with the wrong count is ignored. */
static int load_neighbors(ps_scan *s, se *c, const uint8_t *page)
{
	size_t len, count;
	const uint8_t *t = pg_page_item(page, c->ntid.off, &len);
	int levels = c->level + 1;

	c->nbrs = arena_alloc(s, (size_t) levels * sizeof(*c->nbrs));
	c->nlen = arena_alloc(s, (size_t) levels * sizeof(*c->nlen));
	if (!c->nbrs || !c->nlen)
		return -ENOMEM;
	for (int l = 0; l < levels; l++) {
		unsigned lm = l == 0 ? 2 * s->m : s->m;

		c->nlen[l] = 0;
		c->nbrs[l] = arena_alloc(s, lm * sizeof(pg_tid));
		if (!c->nbrs[l])
			return -ENOMEM;
	}
	if (!t || len < 4 || t[0] != HNSW_NEIGHBOR_TYPE)
		return -EBADMSG;
	count = pg_get16(t + 2);
	if (count != (size_t) (c->level + 2) * s->m || len < 4 + 6 * count)
		return 0;
	for (size_t i = 0; i < count; i++) {
		pg_tid tid = pg_get_tid(t + 4 + 6 * i);
		int lc = c->level - (int) (i / s->m);
		unsigned lm;

		if (!pg_tid_valid(tid))
			continue;
		if (lc < 0)
			lc = 0;
		lm = lc == 0 ? 2 * s->m : s->m;
		if (c->nlen[lc] >= lm)
			continue;
		c->nbrs[lc][c->nlen[lc]++] = tid;
	}
	return 0;
}

/* W, drained nearest first, becomes the rows (all heap TIDs of each element). */
static int make_rows(ps_scan *s)
{
	size_t n = 0, k = 0;

	for (size_t i = 0; i < s->nep; i++)
		n += s->ep[i].e->nheap;
	s->rows = calloc(n ? n : 1, sizeof(*s->rows));
	if (!s->rows)
		return -ENOMEM;
	/* ep holds W popped furthest first */
	for (size_t i = s->nep; i-- > 0;) {
		const se *e = s->ep[i].e;

		for (unsigned h = e->nheap; h-- > 0;)
			s->rows[k++] = (ps_row){.heaptid = e->heaptids[h], .dist = s->ep[i].dist};
	}
	s->nrows = k;
	return 0;
}

int ps_scan_run(ps_scan *s)
{
	const uint8_t *page;
	int rc;

	if (s->err)
		return s->err;
	for (;;) {
		switch (s->state) {
		case S_META: {
			const uint8_t *mp;
			pg_tid etid;
			int elevel;

			rc = get_page(s, s->fileno, HNSW_METAPAGE_BLKNO, false, &page);
			if (rc)
				return rc;
			mp = page + PG_PAGE_HEADER;
			s->m = pg_get16(mp + 12);
			etid.blk = pg_get32(mp + 16);
			etid.off = pg_get16(mp + 20);
			elevel = (int16_t) pg_get16(mp + 22);
			rc = 0;
			if (pg_get32(mp) != HNSW_MAGIC || pg_get32(mp + 4) != HNSW_VERSION ||
			    pg_get32(mp + 8) != s->dim || s->m < HNSW_MIN_M || s->m > HNSW_MAX_M)
				rc = -EBADMSG;
			put_page(s);
			if (rc)
				return s->err = rc;
			if (!pg_tid_valid(etid) || elevel < 0) {
				s->nep = 0;
				if ((rc = make_rows(s)))
					return s->err = rc;
				s->state = S_HEAP;
				break;
			}
			s->entry = new_elem(s, etid);
			if (!s->entry)
				return s->err = -ENOMEM;
			s->state = S_ENTRY;
			break;
		}
		case S_ENTRY:
			rc = get_page(s, s->fileno, s->entry->tid.blk, false, &page);
			if (rc)
				return rc;
			rc = load_element(s, s->entry, page);
			put_page(s);
			if (rc)
				return s->err = rc;
			s->ep = malloc(sizeof(*s->ep));
			if (!s->ep)
				return s->err = -ENOMEM;
			s->epcap = 1;
			s->ep[0] = (sc){s->entry, s->entry->dist};
			s->nep = 1;
			s->lc = s->entry->level;
			s->state = S_LAYER;
			break;
		case S_LAYER:
			if ((rc = visited_reset(s)))
				return s->err = rc;
			s->C.n = s->W.n = 0;
			s->ef = s->lc > 0 ? 1 : s->ef_search;
			for (size_t i = 0; i < s->nep; i++) {
				if (visited_add(s, s->ep[i].e->tid) < 0 ||
				    heap_push(&s->C, s->ep[i]) || heap_push(&s->W, s->ep[i]))
					return s->err = -ENOMEM;
			}
			s->wlen = s->nep;
			s->state = S_POP;
			break;
		case S_POP: {
			sc c;

			if (s->C.n == 0 || s->C.v[0].dist > s->W.v[0].dist) {
				/* layer done: W becomes the next entry points */
				if (s->epcap < s->W.n) {
					sc *nv = realloc(s->ep, s->W.n * sizeof(*nv));

					if (!nv)
						return s->err = -ENOMEM;
					s->ep = nv;
					s->epcap = s->W.n;
				}
				s->nep = 0;
				while (s->W.n)
					s->ep[s->nep++] = heap_pop(&s->W);
				if (s->lc == 0) {
					if ((rc = make_rows(s)))
						return s->err = rc;
					s->state = S_HEAP;
				} else {
					s->lc--;
					s->state = S_LAYER;
				}
				break;
			}
			c = heap_pop(&s->C);
			s->c = c.e;
			s->i = 0;
			s->state = s->c->nbrs ? S_EXPAND : S_NBRPAGE;
			break;
		}
		case S_NBRPAGE:
			rc = get_page(s, s->fileno, s->c->ntid.blk, false, &page);
			if (rc)
				return rc;
			rc = load_neighbors(s, s->c, page);
			put_page(s);
			if (rc)
				return s->err = rc;
			s->state = S_EXPAND;
			break;
		case S_EXPAND:
			s->state = S_POP;
			if (s->lc > s->c->level)
				break;
			while (s->i < s->c->nlen[s->lc]) {
				pg_tid t = s->c->nbrs[s->lc][s->i];

				rc = visited_add(s, t);
				if (rc < 0)
					return s->err = rc;
				if (rc == 1) {
					s->i++;
					continue;
				}
				/* a fresh element per slot that reaches the page, as
				 * HnswInitElementFromBlock; slots already visited need none */
				s->e = new_elem(s, t);
				if (!s->e)
					return s->err = -ENOMEM;
				s->state = S_ELEM;
				break;
			}
			break;
		case S_ELEM: {
			float f;

			rc = get_page(s, s->fileno, s->e->tid.blk, false, &page);
			if (rc)
				return rc;
			rc = load_element(s, s->e, page);
			put_page(s);
			if (rc)
				return s->err = rc;
			s->i++;
			s->state = S_EXPAND;
			if (s->e->level < s->lc)
				break;
			f = s->W.v[0].dist;
			if (s->e->dist < f || s->wlen < s->ef) {
				sc ec = {s->e, s->e->dist};

				if (heap_push(&s->C, ec) || heap_push(&s->W, ec))
					return s->err = -ENOMEM;
				s->wlen++;
				if (s->wlen > s->ef)
					heap_pop(&s->W);
			}
			break;
		}
		case S_HEAP:
			while (s->nfetched < s->nheap && s->nfetched < s->nrows) {
				ps_row *r = &s->rows[s->nfetched];

				rc = get_page(s, s->heap_fileno, r->heaptid.blk, true, &page);
				if (rc)
					return rc;
				rc = phnsw_heap_row(page, r->heaptid.blk, r->heaptid.off, s->dim, &r->id,
						    s->rowbuf);
				put_page(s);
				if (rc)
					return s->err = rc;
				r->xdist = paged_exec_distance(s->metric, s->qraw, s->rowbuf, s->dim);
				r->fetched = true;
				s->nfetched++;
			}
			s->state = S_DONE;
			break;
		case S_DONE:
			return PS_DONE;
		default:
			return -EFAULT;
		}
	}
}

int ps_scan_run_sync(ps_scan *s, cv_io *io, cv_file *const *files)
{
	for (;;) {
		int rc = ps_scan_run(s);

		if (rc == PS_DONE || rc < 0)
			return rc;
		if (rc == PS_BLOCKED) {
			/* another thread is reading that block */
			sched_yield();
			continue;
		}
		rc = cv_io_read(io, files[s->need.file], (uint64_t) s->need.blk * PG_BLCKSZ,
				PG_BLCKSZ, s->need.page);
		rc = ps_scan_io_done(s, rc);
		if (rc)
			return rc;
	}
}
