/*
 * hnsw_insert.c - building the graph: one insertion (Algorithm 1 of Malkov
 * & Yashunin 2018), the heuristic neighbour selection (Algorithm 4, as
 * hnswlib's getNeighborsByHeuristic2: no candidate extension, no refill
 * with pruned candidates), and the multi-threaded bulk build.
 *
 * An insertion draws its level as floor(-ln(U) * mL), mL = 1/ln(M), with
 * U from a hash of (seed, label), so a graph's levels do not depend on the
 * order threads happen to insert in. It descends greedily to its level,
 * then on each layer from there to 0 runs a search of width
 * ef_construction (reading link lists under the owners' locks), selects
 * neighbours with the heuristic (at most M above layer 0 and 2M on layer
 * 0, as pgvector does; hnswlib stops at M on every layer, which on
 * fashion-mnist costs it about 0.003 of recall@10 at ef 10), links itself
 * to them and them back to it. A neighbour whose list is full (M above layer 0,
 * 2M at layer 0) reruns the heuristic over its old links plus the new one.
 *
 * Phases and locks: alloc_lock hands out node ids and guards the label
 * map; top_lock is held for the whole insertion by a node that will raise
 * the top level (so two such nodes serialise, as hnswlib's global lock);
 * a node's spinlock guards its link lists while they are written.
 */
#include "hnsw_int.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A uniform double in (0, 1] from (seed, label) (splitmix64). */
static double unit_hash(uint64_t seed, uint32_t label)
{
	uint64_t z = seed + 0x9E3779B97F4A7C15ull * ((uint64_t) label + 1);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	z ^= z >> 31;
	return ((double) (z >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

static int draw_level(const struct hnsw *h, uint32_t label)
{
	double l = -log(unit_hash(h->p.seed, label)) * h->ml;

	return l >= HNSW_MAX_LEVEL ? HNSW_MAX_LEVEL : (int) l;
}

static int pair_cmp(const void *a, const void *b)
{
	const hnsw_pair *x = a, *y = b;

	if (x->d != y->d)
		return x->d < y->d ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Algorithm 4 over cand[0..n) sorted nearest first (distances to the base
 * point): keep e unless a kept r has dist(r, e) < dist(base, e); stop at
 * max. Writes the kept pairs to the front of cand; returns their count.
 */
static size_t heuristic(const struct hnsw *h, hnsw_pair *cand, size_t n, size_t max)
{
	size_t kept = 0;

	if (n < max)
		return n;
	for (size_t i = 0; i < n && kept < max; i++) {
		const char *ev = hnsw_rec(h, cand[i].id);
		bool good = true;

		for (size_t r = 0; r < kept; r++) {
			if (h->ndist(h, hnsw_rec(h, cand[r].id), ev) < cand[i].d) {
				good = false;
				break;
			}
		}
		if (good)
			cand[kept++] = cand[i];
	}
	return kept;
}

/* Node id's list at level: slots and a pointer to its count. */
static uint32_t *list_of(const struct hnsw *h, uint32_t id, int level, uint32_t **cnt)
{
	if (level == 0) {
		*cnt = &hnsw_hdr_of(h, id)->nlink0;
		return (uint32_t *) (hnsw_rec(h, id) + h->off_links0);
	}
	uint32_t *ul = hnsw_upper(h, id, level);

	*cnt = ul;
	return ul + 1;
}

/* Link new node id to sel[0..ns) at level and each of them back to it. */
static void connect(const struct hnsw *h, uint32_t id, const hnsw_pair *sel, size_t ns, int level)
{
	const size_t cap = level ? h->m : h->m0;
	hnsw_pair tmp[2 * HNSW_MAX_M + 1];
	uint32_t *cnt, *ids, old[2 * HNSW_MAX_M];
	hnsw_hdr *hd = hnsw_hdr_of(h, id);
	size_t n0, n;

	/* Our own list; keep links others added to us meanwhile if there is room. */
	hnsw_lock(hd);
	ids = list_of(h, id, level, &cnt);
	n0 = *cnt;
	memcpy(old, ids, n0 * sizeof(*old));
	n = 0;
	for (size_t i = 0; i < ns; i++)
		ids[n++] = sel[i].id;
	for (size_t i = 0; i < n0 && n < cap; i++) {
		bool dup = false;

		for (size_t j = 0; j < ns; j++)
			dup |= sel[j].id == old[i];
		if (!dup)
			ids[n++] = old[i];
	}
	__atomic_store_n(cnt, (uint32_t) n, __ATOMIC_RELEASE);
	hnsw_unlock(hd);

	for (size_t i = 0; i < ns; i++) {
		uint32_t o = sel[i].id;
		hnsw_hdr *ho = hnsw_hdr_of(h, o);
		const char *ov = hnsw_rec(h, o);
		size_t k;

		hnsw_lock(ho);
		ids = list_of(h, o, level, &cnt);
		n = *cnt;
		if (n < cap) {
			ids[n] = id;
			__atomic_store_n(cnt, (uint32_t) (n + 1), __ATOMIC_RELEASE);
			hnsw_unlock(ho);
			continue;
		}
		for (size_t j = 0; j < n; j++) {
			tmp[j].id = ids[j];
			tmp[j].d = h->ndist(h, hnsw_rec(h, ids[j]), ov);
		}
		tmp[n].id = id;
		tmp[n].d = sel[i].d;
		qsort(tmp, n + 1, sizeof(*tmp), pair_cmp);
		k = heuristic(h, tmp, n + 1, cap);
		for (size_t j = 0; j < k; j++)
			ids[j] = tmp[j].id;
		__atomic_store_n(cnt, (uint32_t) k, __ATOMIC_RELEASE);
		hnsw_unlock(ho);
	}
}

/* Greedy descent from ep through layers top..bottom+1 (construction). */
static uint32_t descend_to(const struct hnsw *h, hnsw_ctx *c, const hnsw_query *q, uint32_t ep,
			   float *epd, int top, int bottom)
{
	for (int l = top; l > bottom; l--) {
		bool changed = true;

		while (changed) {
			hnsw_hdr *hd = hnsw_hdr_of(h, ep);
			const uint32_t *ul = hnsw_upper(h, ep, l);
			uint32_t n;

			changed = false;
			hnsw_lock(hd);
			n = ul[0];
			memcpy(c->links, ul + 1, n * sizeof(uint32_t));
			hnsw_unlock(hd);
			for (uint32_t j = 0; j < n; j++) {
				float d = h->qdist(q, hnsw_rec(h, c->links[j]), h->dim);

				if (d < *epd) {
					*epd = d;
					ep = c->links[j];
					changed = true;
				}
			}
		}
	}
	return ep;
}

/* Take the search result (c->top) sorted nearest first into c->sel; returns the count. */
static int take_sorted(hnsw_ctx *c, size_t *n)
{
	if (c->ntop > c->capsel) {
		hnsw_pair *p = realloc(c->sel, c->ntop * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->sel = p;
		c->capsel = c->ntop;
	}
	memcpy(c->sel, c->top, c->ntop * sizeof(*c->sel));
	qsort(c->sel, c->ntop, sizeof(*c->sel), pair_cmp);
	*n = c->ntop;
	return 0;
}

int hnsw_add(hnsw *h, const float *vec, uint32_t label)
{
	const int level = draw_level(h, label);
	uint32_t *upper = NULL;
	hnsw_query q;
	hnsw_ctx *c = NULL;
	hnsw_hdr *hd;
	uint64_t e;
	uint32_t id, ep;
	float epd;
	int rc, top, lmax, low = HNSW_MAX_LEVEL + 1;
	bool holds_top = false, sketch;

	if (level > 0) {
		upper = calloc((size_t) level * h->upper_stride, sizeof(uint32_t));
		if (!upper)
			return -ENOMEM;
	}
	rc = hnsw_ctx_get(h, &c);
	if (rc)
		goto fail;

	pthread_mutex_lock(&h->alloc_lock);
	if (h->p.quant8 && !h->q_trained) {
		const float *v = vec;

		if (h->p.metric == CV_METRIC_COSINE) {
			hnsw_normalise(vec, c->qbuf, h->dim);
			v = c->qbuf;
		}
		rc = hnsw_q8_fallback(h, v);
	}
	/* exact bytes cannot hold it: refused before anything changes (hnsw.h) */
	if (!rc && h->vtype == HNSW_V_U8 && !hnsw_fits_u8(vec, h->dim))
		rc = -ERANGE;
	if (!rc && h->count >= HNSW_MAX_NODES)
		rc = -EOVERFLOW;
	if (!rc)
		rc = hnsw_reserve(h, (size_t) h->count + 1);
	if (!rc)
		rc = hnsw_lm_put(h, label, h->count);
	if (rc) {
		pthread_mutex_unlock(&h->alloc_lock);
		goto fail;
	}
	id = h->count;
	sketch = h->sk_on; /* set under this lock (hnsw_build), before any node */
	memcpy(hnsw_rec(h, id) + h->off_upper, &upper, sizeof(upper));
	hd = hnsw_hdr_of(h, id);
	hd->label = label;
	hd->level = (uint8_t) level;
	hd->deleted = 0;
	hd->pad = 0;
	hd->lock = 0;
	hd->nlink0 = 0;
	__atomic_store_n(&h->count, id + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&h->alloc_lock);
	upper = NULL;

	/* The stored vector (normalised for cosine), then the query prepared from it. */
	if (h->p.metric == CV_METRIC_COSINE) {
		hnsw_normalise(vec, c->qbuf, h->dim);
		hnsw_encode(h, c->qbuf, hnsw_rec(h, id));
	} else {
		hnsw_encode(h, vec, hnsw_rec(h, id));
	}
	if (sketch)
		hnsw_sketch_encode(h, id);
	hnsw_prepare_query(h, c, vec, &q);
	__atomic_thread_fence(__ATOMIC_RELEASE);

	e = __atomic_load_n(&h->entry, __ATOMIC_ACQUIRE);
	if (e == UINT64_MAX || level > (int) (e >> 32)) {
		pthread_mutex_lock(&h->top_lock);
		e = __atomic_load_n(&h->entry, __ATOMIC_ACQUIRE);
		if (e == UINT64_MAX) {
			__atomic_store_n(&h->entry, ((uint64_t) level << 32) | id, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&h->top_lock);
			goto done;
		}
		if (level > (int) (e >> 32))
			holds_top = true;
		else
			pthread_mutex_unlock(&h->top_lock);
	}
	ep = (uint32_t) e;
	top = (int) (e >> 32);
	epd = h->qdist(&q, hnsw_rec(h, ep), h->dim);
	if (level < top)
		ep = descend_to(h, c, &q, ep, &epd, top, level);
	/*
	 * Search every layer top-down, then link bottom-up: a node becomes
	 * reachable on layer l only once its links below l exist, so a
	 * concurrent search never descends into a node with an empty layer 0.
	 */
	lmax = level < top ? level : top;
	for (int l = lmax; l >= 0; l--) {
		size_t n;

		rc = hnsw_search_layer(h, c, &q, ep, epd, l, h->p.ef_construction, true);
		if (!rc)
			rc = take_sorted(c, &n);
		if (rc)
			break; /* the node stays, linked on the layers found so far */
		/* a concurrent insert may have linked us in already: never link to self */
		for (size_t i = 0; i < n; i++) {
			if (c->sel[i].id == id) {
				memmove(c->sel + i, c->sel + i + 1, (n - i - 1) * sizeof(*c->sel));
				n--;
				break;
			}
		}
		n = heuristic(h, c->sel, n, l ? h->m : h->m0);
		memcpy(c->lsel + (size_t) l * h->m0, c->sel, n * sizeof(*c->sel));
		c->nlsel[l] = (uint8_t) n;
		low = l;
		if (n) {
			ep = c->sel[0].id;
			epd = c->sel[0].d;
		}
	}
	for (int l = low; l <= lmax; l++)
		if (c->nlsel[l])
			connect(h, id, c->lsel + (size_t) l * h->m0, c->nlsel[l], l);
	if (holds_top) {
		__atomic_store_n(&h->entry, ((uint64_t) level << 32) | id, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&h->top_lock);
	}
done:
	hnsw_ctx_put(h, c);
	return rc;
fail:
	free(upper);
	if (c)
		hnsw_ctx_put(h, c);
	return rc;
}

int hnsw_mark_deleted(hnsw *h, uint32_t label)
{
	uint32_t node;
	int rc;

	pthread_mutex_lock(&h->alloc_lock);
	rc = hnsw_lm_get(h, label, &node);
	pthread_mutex_unlock(&h->alloc_lock);
	if (rc)
		return rc;
	if (!__atomic_exchange_n(&hnsw_hdr_of(h, node)->deleted, (uint8_t) 1, __ATOMIC_RELAXED))
		__atomic_fetch_add(&h->ndeleted, 1u, __ATOMIC_RELAXED);
	return 0;
}

/* ---- bulk build ---- */

typedef struct build_job {
	hnsw *h;
	const float *data;
	size_t n;
	size_t next; /* atomic */
	size_t done; /* atomic */
	int rc;      /* first error (atomic) */
	void (*progress)(size_t done, size_t total, void *ud);
	void *ud;
	size_t *inserted; /* per worker of the team */
} build_job;

/* One worker of the build team: insert rows in order until none are left. */
static void build_run(void *arg, unsigned w)
{
	build_job *j = arg;
	size_t last = 0;

	for (;;) {
		size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		int rc;

		if (i >= j->n || __atomic_load_n(&j->rc, __ATOMIC_RELAXED))
			break;
		rc = hnsw_add(j->h, j->data + i * j->h->dim, (uint32_t) i);
		if (rc) {
			int zero = 0;

			__atomic_compare_exchange_n(&j->rc, &zero, rc, false, __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED);
			break;
		}
		j->inserted[w]++;
		__atomic_fetch_add(&j->done, 1, __ATOMIC_RELAXED);
		if (w == 0 && j->progress && j->inserted[w] - last >= 256) {
			last = j->inserted[w];
			j->progress(__atomic_load_n(&j->done, __ATOMIC_RELAXED), j->n, j->ud);
		}
	}
}

/* Mark every node reachable from s on layer 0 (breadth-first; queue holds n ids). */
static void reach_from(const struct hnsw *h, uint32_t s, unsigned char *reach, uint32_t *queue)
{
	size_t nq = 0;

	if (reach[s])
		return;
	reach[s] = 1;
	queue[nq++] = s;
	for (size_t i = 0; i < nq; i++) {
		uint32_t *cnt, *ids = list_of(h, queue[i], 0, &cnt);

		for (uint32_t j = 0; j < *cnt; j++)
			if (!reach[ids[j]]) {
				reach[ids[j]] = 1;
				queue[nq++] = ids[j];
			}
	}
}

/*
 * Layer 0 made whole. On strongly clustered points (a node and a near
 * twin, both far from everything else) the neighbour heuristic can leave
 * nodes that no node reachable from the entry point links to, and a
 * search never returns them whatever its ef: HFresh's centroid index over
 * 291 postings of 256 tight clusters lost 59 that way, so those postings
 * were never probed and recall stopped at 0.78 even with every posting
 * asked for. After a build, each node the entry point cannot reach on
 * layer 0 is linked from its nearest reachable nodes: into a free slot,
 * else in place of the link (of its nearest reachable node) to the
 * farthest node that has another link into it. Rounds repeat while a
 * replaced link cut someone off, at most four. data holds the build's
 * rows by label (a build into an empty graph). Returns 0, -ENOMEM, or
 * what the search returns.
 */
static int repair_reach(hnsw *h, const float *data, size_t *linked)
{
	const uint32_t n = hnsw_count(h);
	unsigned char *reach = calloc(n ? n : 1, 1);
	uint32_t *queue = malloc((n ? n : 1) * sizeof(uint32_t));
	uint32_t *indeg = calloc(n ? n : 1, sizeof(uint32_t));
	uint64_t e = __atomic_load_n(&h->entry, __ATOMIC_ACQUIRE);
	hnsw_ctx *c = NULL;
	int rc = -ENOMEM;

	*linked = 0;
	if (!reach || !queue || !indeg)
		goto out;
	rc = 0;
	if (n < 2 || e == UINT64_MAX)
		goto out;
	for (int round = 0; round < 4; round++) {
		size_t missing = 0;

		memset(reach, 0, n);
		memset(indeg, 0, (size_t) n * sizeof(*indeg));
		for (uint32_t u = 0; u < n; u++) {
			uint32_t *cnt, *ids = list_of(h, u, 0, &cnt);

			for (uint32_t j = 0; j < *cnt; j++)
				indeg[ids[j]]++;
		}
		reach_from(h, (uint32_t) e, reach, queue);
		for (uint32_t u = 0; u < n; u++)
			missing += !reach[u];
		if (!missing)
			break;
		if (!c && (rc = hnsw_ctx_get(h, &c)))
			goto out;
		for (uint32_t u = 0; u < n; u++) {
			uint32_t ep = (uint32_t) e, *cnt, *ids, r = UINT32_MAX;
			float epd;
			size_t ns;
			hnsw_query q;

			if (reach[u])
				continue;
			hnsw_prepare_query(h, c, data + (size_t) hnsw_hdr_of(h, u)->label * h->dim, &q);
			epd = h->qdist(&q, hnsw_rec(h, ep), h->dim);
			ep = descend_to(h, c, &q, ep, &epd, (int) (e >> 32), 0);
			rc = hnsw_search_layer(h, c, &q, ep, epd, 0, h->p.ef_construction, false);
			if (!rc)
				rc = take_sorted(c, &ns);
			if (rc)
				goto out;
			/* a free slot in the nearest reachable node that has one */
			for (size_t i = 0; i < ns && r == UINT32_MAX; i++) {
				uint32_t v = c->sel[i].id;

				ids = list_of(h, v, 0, &cnt);
				if (v != u && reach[v] && *cnt < h->m0) {
					ids[*cnt] = u;
					__atomic_store_n(cnt, *cnt + 1, __ATOMIC_RELEASE);
					r = v;
				}
			}
			/* else the nearest reachable node's link to its farthest doubly linked node */
			for (size_t i = 0; i < ns && r == UINT32_MAX; i++) {
				uint32_t v = c->sel[i].id, best = UINT32_MAX;
				float bd = -1;

				if (v == u || !reach[v])
					continue;
				ids = list_of(h, v, 0, &cnt);
				for (uint32_t j = 0; j < *cnt; j++) {
					float d;

					if (indeg[ids[j]] < 2)
						continue;
					d = h->ndist(h, hnsw_rec(h, v), hnsw_rec(h, ids[j]));
					if (d > bd) {
						bd = d;
						best = j;
					}
				}
				if (best != UINT32_MAX) {
					indeg[ids[best]]--;
					ids[best] = u;
					r = v;
				}
			}
			if (r == UINT32_MAX)
				continue; /* nothing reachable to link from: the next round tries again */
			indeg[u]++;
			(*linked)++;
			/* u's own list points back at r when it has room, as an insert would */
			ids = list_of(h, u, 0, &cnt);
			{
				bool dup = false;

				for (uint32_t j = 0; j < *cnt; j++)
					dup |= ids[j] == r;
				if (!dup && *cnt < h->m0) {
					ids[*cnt] = r;
					__atomic_store_n(cnt, *cnt + 1, __ATOMIC_RELEASE);
					indeg[r]++;
				}
			}
			reach_from(h, u, reach, queue);
		}
	}
out:
	if (c)
		hnsw_ctx_put(h, c);
	free(reach);
	free(queue);
	free(indeg);
	return rc;
}

int hnsw_build(hnsw *h, const float *data, size_t n, unsigned threads,
	       void (*progress)(size_t done, size_t total, void *ud), void *ud)
{
	build_job job = {.h = h, .data = data, .n = n, .progress = progress, .ud = ud};
	unsigned ran, used = 0;
	bool fresh;
	int rc;

	if (n > HNSW_MAX_NODES || hnsw_count(h) + n > HNSW_MAX_NODES)
		return -EOVERFLOW;
	if (n == 0)
		return 0;
	fresh = hnsw_count(h) == 0;
	if (fresh && hnsw_may_narrow(&h->p) && h->vtype == HNSW_V_F32 &&
	    hnsw_fits_u8(data, n * h->dim)) {
		pthread_mutex_lock(&h->alloc_lock);
		rc = hnsw_relayout(h, HNSW_V_U8);
		pthread_mutex_unlock(&h->alloc_lock);
		if (rc && rc != -EBUSY) /* busy: a concurrent add came first; float32 it stays */
			return rc;
	}
	if (h->p.quant8 && !h->q_trained && hnsw_count(h) == 0) {
		rc = hnsw_quant8_train(h, data, n);
		if (rc)
			return rc;
	}
	if (fresh) { /* the sketch's range from the batch, before its first node (hnsw_sketch.c) */
		pthread_mutex_lock(&h->alloc_lock);
		rc = h->count == 0 ? hnsw_sketch_init(h, data, n) : 0;
		pthread_mutex_unlock(&h->alloc_lock);
		if (rc)
			return rc;
	}
	pthread_mutex_lock(&h->alloc_lock);
	rc = hnsw_reserve(h, hnsw_count(h) + n);
	pthread_mutex_unlock(&h->alloc_lock);
	if (rc)
		return rc;
	threads = cvu_threads(threads);
	if (threads > n)
		threads = (unsigned) n;
	if (threads > 256)
		threads = 256;
	job.inserted = calloc(threads, sizeof(*job.inserted));
	if (!job.inserted)
		return -ENOMEM;
	ran = cvu_team(threads, build_run, &job);
	for (unsigned t = 0; t < ran; t++)
		used += job.inserted[t] > 0;
	h->build_threads = used;
	free(job.inserted);
	if (!job.rc && fresh)
		job.rc = repair_reach(h, data, &h->repaired);
	if (progress)
		progress(job.done, n, ud);
	return job.rc;
}
