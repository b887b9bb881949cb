/*
 * hnsw_graph.c - the graph's memory: creation and teardown, the segmented
 * record storage, the label map, quant8 training, and the read-only
 * accessors other layouts (the paged HNSW) walk the graph with.
 *
 * Records are 64-byte aligned and sized to a multiple of 64, so a vector
 * starts on a cache line (aligned loads, one prefetch per line). Segment
 * 0 holds max(capacity, 64) records rounded up to a power of two;
 * segment s holds base << s, so growth never moves a record (searches run
 * while HFresh adds centroids) and segments stay O(log n) in number.
 */
#include "hnsw_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define LM_EMPTY UINT32_MAX

static void seg_free(struct hnsw *h, unsigned s);

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* A record's offsets for vectors of vtype. */
static void layout(struct hnsw *h, enum hnsw_vtype vtype)
{
	h->vtype = vtype;
	h->vec_bytes = round_up(vtype == HNSW_V_F32 ? h->dim * sizeof(float) : h->dim, 4);
	h->off_hdr = h->vec_bytes;
	h->off_links0 = h->off_hdr + sizeof(hnsw_hdr);
	h->off_upper = round_up(h->off_links0 + h->m0 * sizeof(uint32_t), 8);
	h->rec_size = round_up(h->off_upper + sizeof(uint32_t *), 64);
	h->off_sk = 0;
	h->sk_bytes = 0;
	h->sk_on = 0;
	if (vtype == HNSW_V_F32 && hnsw_sketch_wanted(h->dim, h->p.metric)) {
		h->off_sk = h->rec_size;
		h->sk_bytes = round_up(h->dim, 32);
		h->rec_size = round_up(h->off_sk + h->sk_bytes, 64);
	}
}

int hnsw_new(size_t dim, const hnsw_params *p, size_t capacity, hnsw **out)
{
	return hnsw_new_as(dim, p, capacity, p && p->quant8 ? HNSW_V_Q8 : HNSW_V_F32, out);
}

int hnsw_new_as(size_t dim, const hnsw_params *p, size_t capacity, enum hnsw_vtype vtype,
		hnsw **out)
{
	hnsw *h;
	unsigned shift = 6;
	int rc = -ENOMEM;

	*out = NULL;
	if (!p || dim == 0 || dim > HNSW_MAX_DIM || p->m < HNSW_MIN_M || p->m > HNSW_MAX_M ||
	    p->ef_construction > HNSW_MAX_EFC || (unsigned) p->metric > CV_METRIC_COSINE)
		return -EINVAL;
	if (capacity > HNSW_MAX_NODES)
		capacity = HNSW_MAX_NODES;
	while ((1ull << shift) < capacity)
		shift++;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->dim = dim;
	h->p = *p;
	h->p.quant8 = p->quant8 ? 1 : 0;
	if (h->p.ef_construction < h->p.m)
		h->p.ef_construction = h->p.m;
	h->m = p->m;
	h->m0 = 2 * p->m;
	h->ml = 1.0 / log((double) p->m);
	h->p.store = p->store == HNSW_STORE_F32 ? HNSW_STORE_F32 : HNSW_STORE_AUTO;
	layout(h, vtype);
	h->upper_stride = 1 + h->m;
	h->seg_shift = shift;
	h->entry = UINT64_MAX;
	pthread_mutex_init(&h->alloc_lock, NULL);
	pthread_mutex_init(&h->top_lock, NULL);
	pthread_mutex_init(&h->pool_lock, NULL);
	if (h->p.quant8) {
		h->q_lo = calloc(dim, sizeof(float));
		h->q_scale = calloc(dim, sizeof(float));
		h->q_w = calloc(dim + 16, sizeof(float));
		if (!h->q_lo || !h->q_scale || !h->q_w)
			goto fail;
	}
	hnsw_kernels_select(h);
	rc = hnsw_reserve(h, capacity ? capacity : 1);
	if (rc)
		goto fail;
	*out = h;
	return 0;
fail:
	hnsw_free(h);
	return rc;
}

void hnsw_free(hnsw *h)
{
	hnsw_ctx *c;

	if (!h)
		return;
	for (uint32_t i = 0; i < h->count; i++) {
		uint32_t *up;

		memcpy(&up, hnsw_rec(h, i) + h->off_upper, sizeof(up));
		free(up);
	}
	for (unsigned s = 0; s < HNSW_MAX_SEGS; s++)
		seg_free(h, s);
	while ((c = h->pool)) {
		h->pool = c->next;
		hnsw_ctx_free(c);
	}
	free(h->lm_key);
	free(h->lm_val);
	free(h->q_lo);
	free(h->q_scale);
	free(h->q_w);
	free(h->sk_lo);
	free(h->sk_perm);
	pthread_mutex_destroy(&h->alloc_lock);
	pthread_mutex_destroy(&h->top_lock);
	pthread_mutex_destroy(&h->pool_lock);
	free(h);
}

/*
 * A segment's memory. A search's hops land on random records, so with
 * 4 KiB pages nearly every scored vector is also a TLB miss (the data TLB
 * covers a few MiB; fashion-mnist's graph is 196 MiB). A segment of 2 MiB
 * or more is 2 MiB-aligned, its length rounded up, and marked for
 * transparent huge pages, which the kernel honours under THP "madvise" as
 * well as "always". Where it cannot (THP off, no huge page free) the
 * advice is dropped and the pages stay 4 KiB: same bytes, no error.
 */
#define HUGE_PAGE (2u << 20)

/*
 * The large segments are mapped here, not taken from malloc, and advised
 * before anything touches them: an allocator that writes its blocks
 * (glibc under MALLOC_PERTURB_, which the test runner sets) faulted them in
 * as 4 KiB pages first, and the advice came too late. *mapped gets the
 * bytes mapped (0 for a malloc'd one), for seg_free.
 */
static void *seg_alloc(size_t bytes, size_t *mapped)
{
	char *mem, *a;

	*mapped = 0;
	if (bytes < HUGE_PAGE)
		return aligned_alloc(64, round_up(bytes, 64));
	bytes = round_up(bytes, HUGE_PAGE);
	mem = mmap(NULL, bytes + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		   0);
	if (mem == MAP_FAILED)
		return NULL;
	a = (char *) round_up((uintptr_t) mem, HUGE_PAGE); /* the slop either side unmapped */
	if (a > mem)
		(void) munmap(mem, (size_t) (a - mem));
	if (a + bytes < mem + bytes + HUGE_PAGE)
		(void) munmap(a + bytes, (size_t) (mem + bytes + HUGE_PAGE - (a + bytes)));
#ifdef MADV_HUGEPAGE
	(void) madvise(a, bytes, MADV_HUGEPAGE);
#endif
	*mapped = bytes;
	return a;
}

static void seg_free(struct hnsw *h, unsigned s)
{
	if (h->seg_map[s])
		(void) munmap(h->seg[s], h->seg_map[s]);
	else
		free(h->seg[s]);
	h->seg[s] = NULL;
	h->seg_map[s] = 0;
}

int hnsw_reserve(struct hnsw *h, size_t n)
{
	const uint64_t base = 1ull << h->seg_shift;

	if (n > HNSW_MAX_NODES)
		return -EOVERFLOW;
	while (h->cap < n) {
		/* segments fill in order; after s of them, cap == base * (2^s - 1) */
		unsigned s = 0;
		uint64_t cap;
		char *mem;

		while (s < HNSW_MAX_SEGS && h->seg[s])
			s++;
		if (s >= HNSW_MAX_SEGS)
			return -EOVERFLOW;
		mem = seg_alloc((size_t) (base << s) * h->rec_size, &h->seg_map[s]);
		if (!mem)
			return -ENOMEM;
		h->seg[s] = mem;
		cap = base * ((1ull << (s + 1)) - 1);
		if (cap > HNSW_MAX_NODES)
			cap = HNSW_MAX_NODES;
		__atomic_store_n(&h->cap, (uint32_t) cap, __ATOMIC_RELEASE);
	}
	return 0;
}

static size_t lm_slot(uint32_t label, size_t cap)
{
	return (size_t) ((label * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

int hnsw_lm_get(const struct hnsw *h, uint32_t label, uint32_t *node)
{
	if (!h->lm_cap)
		return -ENOENT;
	for (size_t i = lm_slot(label, h->lm_cap);; i = (i + 1) & (h->lm_cap - 1)) {
		if (h->lm_val[i] == LM_EMPTY)
			return -ENOENT;
		if (h->lm_key[i] == label) {
			*node = h->lm_val[i];
			return 0;
		}
	}
}

int hnsw_lm_put(struct hnsw *h, uint32_t label, uint32_t node)
{
	size_t i;

	if ((h->lm_n + 1) * 2 > h->lm_cap) {
		size_t nc = h->lm_cap ? h->lm_cap * 2 : 1024;
		uint32_t *k = malloc(nc * sizeof(*k)), *v = malloc(nc * sizeof(*v));

		if (!k || !v) {
			free(k);
			free(v);
			return -ENOMEM;
		}
		memset(v, 0xff, nc * sizeof(*v));
		for (size_t j = 0; j < h->lm_cap; j++) {
			if (h->lm_val[j] == LM_EMPTY)
				continue;
			for (i = lm_slot(h->lm_key[j], nc); v[i] != LM_EMPTY; i = (i + 1) & (nc - 1))
				;
			k[i] = h->lm_key[j];
			v[i] = h->lm_val[j];
		}
		free(h->lm_key);
		free(h->lm_val);
		h->lm_key = k;
		h->lm_val = v;
		h->lm_cap = nc;
	}
	for (i = lm_slot(label, h->lm_cap); h->lm_val[i] != LM_EMPTY; i = (i + 1) & (h->lm_cap - 1))
		if (h->lm_key[i] == label)
			return -EEXIST;
	h->lm_key[i] = label;
	h->lm_val[i] = node;
	h->lm_n++;
	return 0;
}

/* Set quant8's derived arrays from lo/hi per dimension. */
static void q8_set(struct hnsw *h, const float *lo, const float *hi)
{
	for (size_t j = 0; j < h->dim; j++) {
		float s = hi[j] > lo[j] ? (hi[j] - lo[j]) / 255.0f : 0.0f;

		h->q_lo[j] = lo[j];
		h->q_scale[j] = s;
		h->q_w[j] = s * s;
	}
	h->q_trained = 1;
}

int hnsw_quant8_train(hnsw *h, const float *data, size_t n)
{
	float *lo = NULL, *hi = NULL, *row = NULL;
	int rc = -EINVAL;

	if (!h->p.quant8 || n == 0)
		return -EINVAL;
	pthread_mutex_lock(&h->alloc_lock);
	if (h->count) {
		rc = -EBUSY;
		goto out;
	}
	rc = -ENOMEM;
	lo = malloc(h->dim * sizeof(float));
	hi = malloc(h->dim * sizeof(float));
	row = malloc(h->dim * sizeof(float));
	if (!lo || !hi || !row)
		goto out;
	for (size_t j = 0; j < h->dim; j++) {
		lo[j] = INFINITY;
		hi[j] = -INFINITY;
	}
	for (size_t i = 0; i < n; i++) {
		const float *x = data + i * h->dim;

		if (h->p.metric == CV_METRIC_COSINE) {
			hnsw_normalise(x, row, h->dim);
			x = row;
		}
		for (size_t j = 0; j < h->dim; j++) {
			if (x[j] < lo[j])
				lo[j] = x[j];
			if (x[j] > hi[j])
				hi[j] = x[j];
		}
	}
	q8_set(h, lo, hi);
	rc = 0;
out:
	pthread_mutex_unlock(&h->alloc_lock);
	free(lo);
	free(hi);
	free(row);
	return rc;
}

/* quant8 without training: the params' global range, else the first vector's widened (alloc_lock held). */
int hnsw_q8_fallback(struct hnsw *h, const float *vec)
{
	float *lo = malloc(h->dim * sizeof(float)), *hi = malloc(h->dim * sizeof(float));
	float mn = h->p.q8_min, mx = h->p.q8_max;

	if (!lo || !hi) {
		free(lo);
		free(hi);
		return -ENOMEM;
	}
	if (!(mx > mn)) {
		float span;

		mn = INFINITY;
		mx = -INFINITY;
		for (size_t j = 0; j < h->dim; j++) {
			mn = vec[j] < mn ? vec[j] : mn;
			mx = vec[j] > mx ? vec[j] : mx;
		}
		span = mx - mn > 0 ? mx - mn : 1.0f;
		mn -= span;
		mx += span;
	}
	for (size_t j = 0; j < h->dim; j++) {
		lo[j] = mn;
		hi[j] = mx;
	}
	q8_set(h, lo, hi);
	free(lo);
	free(hi);
	return 0;
}

size_t hnsw_count(const hnsw *h)
{
	return __atomic_load_n(&h->count, __ATOMIC_ACQUIRE);
}

size_t hnsw_dim(const hnsw *h)
{
	return h->dim;
}

const hnsw_params *hnsw_get_params(const hnsw *h)
{
	return &h->p;
}

unsigned hnsw_build_threads(const hnsw *h)
{
	return h->build_threads;
}

uint32_t hnsw_node_label(const hnsw *h, uint32_t node)
{
	return hnsw_hdr_of(h, node)->label;
}

int hnsw_node_level(const hnsw *h, uint32_t node)
{
	return hnsw_hdr_of(h, node)->level;
}

int hnsw_node_deleted(const hnsw *h, uint32_t node)
{
	return __atomic_load_n(&hnsw_hdr_of(h, node)->deleted, __ATOMIC_RELAXED);
}

size_t hnsw_node_neighbors(const hnsw *h, uint32_t node, int level, uint32_t *out, size_t max)
{
	const hnsw_hdr *hd = hnsw_hdr_of(h, node);
	const uint32_t *ids;
	size_t n;

	if (level < 0 || level > hd->level)
		return 0;
	if (level == 0) {
		n = hd->nlink0;
		ids = (const uint32_t *) (hnsw_rec(h, node) + h->off_links0);
	} else {
		const uint32_t *ul = hnsw_upper(h, node, level);

		n = ul[0];
		ids = ul + 1;
	}
	if (n > max)
		n = max;
	memcpy(out, ids, n * sizeof(*out));
	return n;
}

int hnsw_entry(const hnsw *h, uint32_t *node, int *level)
{
	uint64_t e = __atomic_load_n(&h->entry, __ATOMIC_ACQUIRE);

	if (e == UINT64_MAX)
		return -ENOENT;
	*node = (uint32_t) e;
	*level = (int) (e >> 32);
	return 0;
}

const float *hnsw_node_vector(const hnsw *h, uint32_t node, float *buf)
{
	const char *v = hnsw_rec(h, node);

	if (h->vtype == HNSW_V_F32)
		return (const float *) v;
	hnsw_decode_vec(h, v, buf);
	return buf;
}

const char *hnsw_storage(const hnsw *h)
{
	if (h->vtype == HNSW_V_F32)
		return h->sk_on ? "float32+sketch8" : "float32"; /* hnsw_sketch.c */
	return h->vtype == HNSW_V_Q8 ? "quant8" : "exact8";
}

bool hnsw_may_narrow(const hnsw_params *p)
{
	const char *env = getenv("COLDSTUDY_HNSW_STORE");

	if (env && !strcmp(env, "float32"))
		return false; /* the float32 figures on the same data (bench/hnsw) */
	return p->store == HNSW_STORE_AUTO && !p->quant8 && p->metric != CV_METRIC_COSINE;
}

/* Bit for bit: (float) (uint8_t) x == x and x is not -0 (which a byte would turn into +0). */
bool hnsw_fits_u8(const float *v, size_t n)
{
	unsigned bad = 0;

	for (size_t i = 0; i < n; i++) {
		float x = v[i];
		bool range = x >= 0.0f && x <= 255.0f; /* false for NaN */
		float y = (float) (uint8_t) (range ? x : 0.0f);
		uint32_t a, b;

		memcpy(&a, &x, 4);
		memcpy(&b, &y, 4);
		bad |= (a ^ b) | !range;
	}
	return bad == 0;
}

int hnsw_relayout(struct hnsw *h, enum hnsw_vtype vtype)
{
	uint32_t cap = h->cap;

	if (h->count)
		return -EBUSY;
	if (vtype == h->vtype)
		return 0;
	for (unsigned s = 0; s < HNSW_MAX_SEGS; s++)
		seg_free(h, s);
	h->cap = 0;
	layout(h, vtype);
	hnsw_kernels_select(h);
	return hnsw_reserve(h, cap ? cap : 1);
}
