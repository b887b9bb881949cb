/*
 * hfreshsearch.c - opening an HFresh index and answering queries.
 *
 * Open reads the manifest, rotates every live centroid once (so a query
 * residual in rotated space is R q - R c, one rotation per query), and
 * puts the centroids in the in-memory HNSW with 8-bit quantised vectors
 * (engine/hnsw), labels = index into the live-posting list.
 *
 * A query:
 *   1. maps q to the internal space and rotates it;
 *   2. asks the centroid HNSW for the searchProbe nearest postings;
 *   3. reads those postings through the caller's cv_io: with io_mode
 *      serial one read after another, each scored before the next is
 *      issued (Weaviate's order); with concurrent:Q all of them in
 *      batches of Q via cv_io_read_batch;
 *   4. scores every entry whose version is current with the RaBitQ
 *      estimator against the 4-bit query residual (with extended codes:
 *      the byte query residual against the entry's B-bit code), skipping
 *      ids already seen (replicas), keeping the best max(rescoreLimit, k)
 *      estimates;
 *   5. prunes with the error bound: a candidate whose lower bound exceeds
 *      the k-th smallest upper bound cannot be in the top k;
 *   6. reads the survivors' full vectors (one aligned 4 KiB read each) in
 *      order of lower bound, serially (stopping once the next lower bound
 *      exceeds the k-th exact distance) or in batches (2k reads, at most Q,
 *      with the same stopping test between batches), and returns
 *      the k best exact distances in the index's metric.
 *
 * Integrity: every posting a query reads is checked whole (header and
 * CRC-32 over the header and its entries) before it is scored, and every
 * vector slot's CRC-32 before its exact distance is used; a damaged
 * posting or slot fails the query with -EBADMSG, never a silently wrong
 * answer. Postings (most of the bytes) carry CRC-32C, which SSE4.2
 * computes 8 bytes an instruction; bench/hfresh/README.md measures the
 * cost against the scoring it guards.
 *
 * Block lists: with cv_query_opts.blocks set, every 4 KiB block of every
 * posting and vector slot read is recorded against the index file's
 * position in cv_index_files' sorted list, for `coldstudy cache prewarm
 * FILE --block-size 4096 --blocks @LIST`.
 *
 * Thread safety: the index is read-only after open; each thread keeps
 * its scratch (the seen bitmap and the ids it marked, buffers) under a
 * pthread key.
 *
 * Memory traffic: an entry's liveness needs its id's version word and
 * whether a replica was already scored — random places in arrays of a
 * million ids and more, two cache (and TLB) misses an entry. Both are
 * bitmaps here, an eighth of a byte an id (128 KiB at a million ids, in
 * L2): "changed" has a bit for every id whose version is not 1 (reassigned,
 * deleted, or never inserted), so an entry of an unchanged id is live iff
 * it was written with version 1 and only the others consult the version
 * map (an index no update has touched has none, and skips the bitmap);
 * "seen" is cleared after each query through the list of ids it marked.
 */
#include "hfresh.h"
#include "util.h"
#include "hnsw/hnsw.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The centroids are scanned, exactly, while they take up to
 * HFR_FLAT_CENTROID_BYTES ($COLDSTUDY_CENTROID_SCAN overrides), and
 * searched through an HNSW above that. The HNSW is referenced weakly:
 * a build without engine/hnsw (or a test binary that does not pull it in)
 * scans at any count, which is what the HNSW approximates anyway.
 */
#pragma weak hnsw_new
#pragma weak hnsw_build
#pragma weak hnsw_free
#pragma weak hnsw_search_n

typedef struct hfr_scratch {
	const void *owner;
	uint64_t *seen;         /* nids bits */
	uint32_t *marked;       /* the ids whose seen bit is set */
	size_t nmarked, capmarked;
	float *qi, *qrot, *qr;
	float *q16, *dhat;      /* the prescan's query (d16) and distances (nalive) */
	uint64_t *planes;
	int8_t *q8, *q8p;       /* the byte query of extended codes */
	uint32_t *plist;
	float *pdist;
	size_t plist_cap;
	uint8_t **pbuf;         /* posting buffers, maxlen each */
	size_t npbuf;
	uint8_t **vbuf;         /* vector-read buffers */
	size_t nvbuf;
	cv_read_req *reqs;
	size_t nreqs;
	struct cand *cand;
	float *ub;              /* R upper bounds (the k-th one prunes) */
	size_t ncand_cap;
	uint32_t *pl2;
	/* a posting's live entries with extended codes, estimated together */
	uint32_t *bidx, *bid;
	uint32_t *iota;         /* 0, 1, 2, ...: every entry of a posting, in order */
	float *best, *berr;
	size_t capb;
} hfr_scratch;

typedef struct cand {
	float est, err;
	uint32_t id;
} cand;

typedef struct hfr_index {
	char dir[4096];
	hfr_meta m;
	hfr_rot rot;
	uint32_t nalive;
	uint32_t *alive;        /* live posting ids */
	float *acent;           /* nalive * di */
	float *crot;            /* nposts * dp (live ones filled) */
	uint32_t maxlen;        /* largest posting record */
	uint64_t *changed;      /* nids bits: the id's version is not 1 */
	uint32_t nchanged;      /* how many: with none, "version 1" is the whole test */
	hnsw *h;
	/* the exact scan's bf16 prescan (cent16_build); c16 NULL: none */
	uint16_t *c16;          /* nalive * d16: bf16(centroid - cmean), zero-padded */
	float *cmean;           /* d16, zero-padded */
	uint32_t d16;           /* di rounded up to 32 */
	double cslack;          /* >= |(c - cmean) - bf16(c - cmean)| for every centroid */
	float (*c16_l2)(const float *, const uint16_t *, uint32_t);
	cv_file *fpost, *fvec;
	uint32_t fipost, fivec; /* positions in cv_index_files' list (block lists) */
	int fdpost, fdvec;
	pthread_key_t key;
} hfr_index;

/*
 * Up to how many bytes of live centroids a query scans: HFR_FLAT_CENTROID_BYTES,
 * or $COLDSTUDY_CENTROID_SCAN when it is a whole number (0: the HNSW always).
 */
static uint64_t flat_centroid_bytes(void)
{
	const char *env = getenv("COLDSTUDY_CENTROID_SCAN");
	char *end;
	unsigned long long v;

	if (!env || !*env)
		return HFR_FLAT_CENTROID_BYTES;
	errno = 0;
	v = strtoull(env, &end, 10);
	if (errno || *end || env[0] == '-')
		return HFR_FLAT_CENTROID_BYTES;
	return v;
}

/* Free a thread's scratch (the pthread key's destructor). */
static void scratch_free(void *p)
{
	hfr_scratch *s = p;

	if (!s)
		return;
	free(s->seen);
	free(s->marked);
	free(s->qi);
	free(s->qrot);
	free(s->qr);
	free(s->q16);
	free(s->dhat);
	free(s->planes);
	free(s->q8);
	free(s->q8p);
	free(s->plist);
	free(s->pdist);
	for (size_t i = 0; i < s->npbuf; i++)
		free(s->pbuf[i]);
	free(s->pbuf);
	for (size_t i = 0; i < s->nvbuf; i++)
		free(s->vbuf[i]);
	free(s->vbuf);
	free(s->reqs);
	free(s->cand);
	free(s->ub);
	free(s->pl2);
	free(s->bidx);
	free(s->bid);
	free(s->iota);
	free(s->best);
	free(s->berr);
	free(s);
}

/* Room for n entries in s's batch arrays. */
static int batch_fit(hfr_scratch *s, size_t n)
{
	uint32_t *a, *b, *c;
	float *e, *r;

	if (n <= s->capb)
		return 0;
	c = realloc(s->iota, n * sizeof(*c));
	if (!c)
		return -ENOMEM;
	s->iota = c;
	for (size_t i = s->capb; i < n; i++)
		c[i] = (uint32_t) i;
	a = realloc(s->bidx, n * sizeof(*a));
	if (a)
		s->bidx = a;
	b = a ? realloc(s->bid, n * sizeof(*b)) : NULL;
	if (b)
		s->bid = b;
	e = b ? realloc(s->best, n * sizeof(*e)) : NULL;
	if (e)
		s->best = e;
	r = e ? realloc(s->berr, n * sizeof(*r)) : NULL;
	if (!r)
		return -ENOMEM;
	s->berr = r;
	s->capb = n;
	return 0;
}

/*
 * ---- the exact centroid scan's prescan ----
 *
 * The scan reads every live centroid in full (0.7 MB at 1M x 128), and
 * that stream, not the arithmetic, is what it costs. So it first reads
 * them as bf16 (half the bytes), relative to their mean, and gets from
 * those distances a bound that rules most centroids out; only the rest
 * are scanned exactly, in the same order and by the same test, so the
 * list and its order are the full scan's, bit for bit.
 *
 * The bound. Reals: D = |q - c|, and with mu the mean, q' the float
 * q - mu (|q' - (q - mu)| <= dq, one rounding a coordinate), b the bf16
 * c - mu (|b - (c - mu)| <= cslack, measured in double at open), the
 * real |q' - b| lies within s = dq + cslack of D. A float distance over
 * n terms, each square >= 0 and rounded a few times, is within a factor
 * 1 +- eps of the real one (eps = (n + 16) 2^-22, far above the
 * (n + 3) 2^-24 the sums can reach): so the exact kernel's d lies in
 * D^2 (1 -+ eps), and the bf16 one's h in |q' - b|^2 (1 -+ eps). With
 * h_p the probe-th smallest h, at least probe centroids have d <= T =
 * (1 + eps)(sqrt(h_p / (1 - eps)) + s)^2; a centroid with
 * h > (1 + eps)(s + sqrt(T / (1 - eps)))^2 has d > T, so probe others are
 * strictly nearer and it is in no list (its index breaks no tie); the
 * scan of the rest in order keeps exactly the full scan's list.
 * (hfresh-unit test_centroid_prescan compares the two on every query.)
 *
 * Where it is off: a CPU without AVX2, a centroid or mean that is not
 * finite or does not fit bf16, a query with a value that is not finite,
 * and COLDSTUDY_CENTROID_PRESCAN=0 in the environment (read at open).
 */
static uint64_t prescan_pruned; /* centroids the prescan ruled out, all queries (tests) */

uint64_t hfr_centroid_prescan_pruned(void)
{
	return __atomic_load_n(&prescan_pruned, __ATOMIC_RELAXED);
}

static uint16_t bf16_round(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t) ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static float bf16_float(uint16_t b)
{
	uint32_t u = (uint32_t) b << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* The portable sum the vector kernels approximate (any order is within the bound). */
static float c16_l2_ref(const float *q, const uint16_t *c, uint32_t d16)
{
	float s = 0;

	for (uint32_t i = 0; i < d16; i++) {
		float t = q[i] - bf16_float(c[i]);

		s += t * t;
	}
	return s;
}

#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 8)
#include <immintrin.h>
#define HFR_HAVE_C16 1
__attribute__((target("avx512f"))) static float c16_l2_avx512(const float *q, const uint16_t *c,
							       uint32_t d16)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = s0;

	for (uint32_t i = 0; i < d16; i += 32) {
		__m512 c0 = _mm512_castsi512_ps(_mm512_slli_epi32(
			_mm512_cvtepu16_epi32(_mm256_loadu_si256((const void *) (c + i))), 16));
		__m512 c1 = _mm512_castsi512_ps(_mm512_slli_epi32(
			_mm512_cvtepu16_epi32(_mm256_loadu_si256((const void *) (c + i + 16))), 16));
		__m512 t0 = _mm512_sub_ps(_mm512_loadu_ps(q + i), c0);
		__m512 t1 = _mm512_sub_ps(_mm512_loadu_ps(q + i + 16), c1);

		s0 = _mm512_fmadd_ps(t0, t0, s0);
		s1 = _mm512_fmadd_ps(t1, t1, s1);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

__attribute__((target("avx2,fma"))) static float c16_l2_avx2(const float *q, const uint16_t *c,
							      uint32_t d16)
{
	__m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
		       _mm256_setzero_ps()};
	__m128 h;

	for (uint32_t i = 0; i < d16; i += 32)
		for (int j = 0; j < 4; j++) {
			__m256 cj = _mm256_castsi256_ps(_mm256_slli_epi32(
				_mm256_cvtepu16_epi32(_mm_loadu_si128((const void *) (c + i + 8 * j))),
				16));
			__m256 t = _mm256_sub_ps(_mm256_loadu_ps(q + i + 8 * j), cj);

			s[j] = _mm256_fmadd_ps(t, t, s[j]);
		}
	s[0] = _mm256_add_ps(_mm256_add_ps(s[0], s[1]), _mm256_add_ps(s[2], s[3]));
	h = _mm_add_ps(_mm256_castps256_ps128(s[0]), _mm256_extractf128_ps(s[0], 1));
	h = _mm_add_ps(h, _mm_movehl_ps(h, h));
	h = _mm_add_ss(h, _mm_movehdup_ps(h));
	return _mm_cvtss_f32(h);
}
#endif

/* Encode the live centroids for the prescan where it can run; 0 or -ENOMEM (off is 0). */
static int cent16_build(hfr_index *ix)
{
	const uint32_t di = ix->m.di, d16 = (di + 31u) / 32u * 32u;
	const char *env = getenv("COLDSTUDY_CENTROID_PRESCAN");
	double *mu, smax = 0;

	if (ix->nalive < 2 || (env && !strcmp(env, "0")))
		return 0;
#ifdef HFR_HAVE_C16
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		ix->c16_l2 = c16_l2_avx512;
	else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		ix->c16_l2 = c16_l2_avx2;
#endif
	if (env && !strcmp(env, "ref")) /* the portable sum, for tests, on any CPU */
		ix->c16_l2 = c16_l2_ref;
	if (!ix->c16_l2)
		return 0;
	mu = calloc(di, sizeof(double));
	ix->cmean = calloc(d16, sizeof(float));
	ix->c16 = calloc((size_t) ix->nalive * d16, sizeof(uint16_t));
	if (!mu || !ix->cmean || !ix->c16) {
		free(mu);
		return -ENOMEM;
	}
	for (uint32_t a = 0; a < ix->nalive; a++)
		for (uint32_t t = 0; t < di; t++)
			mu[t] += ix->acent[(size_t) a * di + t];
	for (uint32_t t = 0; t < di; t++)
		ix->cmean[t] = (float) (mu[t] / ix->nalive);
	free(mu);
	for (uint32_t a = 0; a < ix->nalive; a++) {
		const float *c = ix->acent + (size_t) a * di;
		uint16_t *b = ix->c16 + (size_t) a * d16;
		double e2 = 0;

		for (uint32_t t = 0; t < di; t++) {
			double r = (double) c[t] - (double) ix->cmean[t]; /* exact */
			float bf;

			b[t] = bf16_round((float) r);
			bf = bf16_float(b[t]);
			if (!isfinite(c[t]) || !isfinite(ix->cmean[t]) || !isfinite(bf)) {
				free(ix->c16); /* off: the plain scan */
				ix->c16 = NULL;
				return 0;
			}
			e2 += (r - (double) bf) * (r - (double) bf);
		}
		if (e2 > smax)
			smax = e2;
	}
	ix->d16 = d16;
	ix->cslack = sqrt(smax) * (1 + 0x1p-30) + 0x1p-1000;
	return 0;
}

/*
 * The centroids the exact scan must read: -1 for all (no prescan here), or
 * the float bound h must not exceed (see above); s->dhat holds h.
 */
static double cent16_limit(hfr_index *ix, hfr_scratch *s, size_t probe)
{
	const uint32_t di = ix->m.di, d16 = ix->d16;
	const double eps = (double) (d16 + 16) * 0x1p-22;
	double qn2 = 0, sl, hp, T, lim;
	float best[64] = {0};
	size_t got = 0;

	if (!ix->c16 || probe > 64 || probe >= ix->nalive)
		return -1;
	for (uint32_t t = 0; t < di; t++) {
		if (!isfinite(s->qi[t]))
			return -1;
		s->q16[t] = s->qi[t] - ix->cmean[t];
		qn2 += (double) s->q16[t] * s->q16[t];
	}
	sl = ix->cslack + sqrt(qn2) * 0x1p-23 * (1 + 0x1p-20);
	for (uint32_t a = 0; a < ix->nalive; a++) {
		float h = ix->c16_l2(s->q16, ix->c16 + (size_t) a * d16, d16);
		size_t j;

		s->dhat[a] = h;
		if (got == probe && !(h < best[got - 1]))
			continue;
		j = got < probe ? got++ : got - 1;
		while (j > 0 && best[j - 1] > h) {
			best[j] = best[j - 1];
			j--;
		}
		best[j] = h;
	}
	hp = best[probe - 1];
	if (!isfinite(hp))
		return -1;
	T = (1 + eps) * pow(sqrt(hp / (1 - eps)) + sl, 2);
	lim = (1 + eps) * pow(sl + sqrt(T / (1 - eps)), 2);
	return lim;
}

void hfr_close(void *state)
{
	hfr_index *ix = state;

	if (!ix)
		return;
	scratch_free(pthread_getspecific(ix->key));
	pthread_setspecific(ix->key, NULL);
	pthread_key_delete(ix->key);
	if (ix->h && hnsw_free)
		hnsw_free(ix->h);
	cv_file_close(ix->fpost);
	cv_file_close(ix->fvec);
	if (ix->fdpost >= 0)
		close(ix->fdpost);
	if (ix->fdvec >= 0)
		close(ix->fdvec);
	hfr_rot_free(&ix->rot);
	hfr_meta_free(&ix->m);
	free(ix->alive);
	free(ix->acent);
	free(ix->c16);
	free(ix->cmean);
	free(ix->crot);
	free(ix->changed);
	free(ix);
}

int hfr_open(const char *dir, const cv_open_opts *o, void **state, cv_err *e)
{
	hfr_index *ix = calloc(1, sizeof(*ix));
	char path[4096];
	int rc;

	*state = NULL;
	if (!ix)
		return -ENOMEM;
	ix->fdpost = ix->fdvec = -1;
	if (pthread_key_create(&ix->key, scratch_free)) {
		free(ix);
		return -EAGAIN;
	}
	snprintf(ix->dir, sizeof(ix->dir), "%s", dir);
	rc = hfr_meta_read(dir, &ix->m, e);
	if (rc)
		goto fail;
	rc = hfr_rot_init(&ix->rot, ix->m.di, ix->m.rot_seed);
	if (rc)
		goto fail;
	rc = -ENOMEM;
	ix->alive = malloc(sizeof(uint32_t) * (ix->m.nposts + 1));
	ix->crot = malloc(sizeof(float) * ((size_t) ix->m.nposts * ix->m.dp + 1));
	ix->acent = malloc(sizeof(float) * ((size_t) ix->m.nposts * ix->m.di + 1));
	ix->changed = calloc(ix->m.nids / 64 + 1, sizeof(uint64_t));
	if (!ix->alive || !ix->crot || !ix->acent || !ix->changed)
		goto fail;
	for (uint32_t id = 0; id < ix->m.nids; id++)
		if (ix->m.ver[id] != 1) {
			ix->changed[id >> 6] |= 1ull << (id & 63);
			ix->nchanged++;
		}
	for (uint32_t p = 0; p < ix->m.nposts; p++) {
		if (!ix->m.posts[p].alive || !ix->m.posts[p].count)
			continue;
		memcpy(ix->acent + (size_t) ix->nalive * ix->m.di, ix->m.cent + (size_t) p * ix->m.di,
		       sizeof(float) * ix->m.di);
		ix->alive[ix->nalive++] = p;
		hfr_rot_apply(&ix->rot, ix->m.cent + (size_t) p * ix->m.di,
			      ix->crot + (size_t) p * ix->m.dp);
		if (ix->m.posts[p].len > ix->maxlen)
			ix->maxlen = ix->m.posts[p].len;
	}
	if ((uint64_t) ix->nalive * ix->m.di * sizeof(float) > flat_centroid_bytes() && hnsw_new &&
	    hnsw_build && hnsw_search_n) {
		hnsw_params hp = {.m = 16, .ef_construction = 100, .metric = CV_METRIC_L2,
				  .quant8 = 1, .seed = ix->m.rot_seed};

		rc = hnsw_new(ix->m.di, &hp, ix->nalive, &ix->h);
		if (!rc)
			rc = hnsw_build(ix->h, ix->acent, ix->nalive, 1, NULL, NULL);
		if (rc) {
			cv_err_set(e, rc, "%s: centroid index build failed", dir);
			goto fail;
		}
	}
	if (!ix->h && cent16_build(ix)) {
		rc = -ENOMEM;
		goto fail;
	}
	hfr_postings_path(dir, ix->m.postings_gen, path, sizeof(path));
	rc = cv_file_open(path, (o ? o->flags : 0) | CV_FILE_NOFOLLOW, &ix->fpost);
	if (rc) {
		cv_err_set(e, rc, "%s: cannot open: %s", path, strerror(-rc));
		goto fail;
	}
	ix->fdpost = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (cv_file_size(ix->fpost) < ix->m.postings_end) {
		rc = cv_err_set(e, -EBADMSG, "%s: %llu bytes, the manifest needs %llu (truncated)",
				path, (unsigned long long) cv_file_size(ix->fpost),
				(unsigned long long) ix->m.postings_end);
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, HFR_VEC_NAME);
	rc = cv_file_open(path, (o ? o->flags : 0) | CV_FILE_NOFOLLOW, &ix->fvec);
	if (rc) {
		cv_err_set(e, rc, "%s: cannot open: %s", path, strerror(-rc));
		goto fail;
	}
	ix->fdvec = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (ix->m.nids && cv_file_size(ix->fvec) < hfr_vec_off(&ix->m, ix->m.nids - 1) +
							 ix->m.vec_slot) {
		rc = cv_err_set(e, -EBADMSG, "%s: shorter than %u vectors (truncated)", path,
				ix->m.nids);
		goto fail;
	}
	{ /* the files' positions in cv_index_files' sorted list, for block lists */
		char **files = NULL, pp[4096];
		size_t nf = 0;

		ix->fipost = ix->fivec = UINT32_MAX;
		hfr_postings_path(dir, ix->m.postings_gen, pp, sizeof(pp));
		if (!cv_index_files(dir, &files, &nf)) {
			for (size_t i = 0; i < nf; i++) {
				if (!strcmp(files[i], pp))
					ix->fipost = (uint32_t) i;
				else if (!strcmp(files[i], path))
					ix->fivec = (uint32_t) i;
			}
			cv_index_files_free(files, nf);
		}
	}
	*state = ix;
	return 0;
fail:
	hfr_close(ix);
	return rc;
}

/* This thread's scratch for ix, grown to the query's needs. */
static hfr_scratch *scratch_get(hfr_index *ix, size_t probe, size_t R, size_t depth)
{
	hfr_scratch *s = pthread_getspecific(ix->key);
	const hfr_meta *m = &ix->m;

	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		s->seen = calloc(m->nids / 64 + 1, sizeof(uint64_t));
		s->qi = malloc(sizeof(float) * (m->di + 1));
		s->qrot = malloc(sizeof(float) * m->dp);
		s->qr = malloc(sizeof(float) * m->dp);
		s->planes = malloc(sizeof(uint64_t) * HFR_QUERY_BITS * (m->dp / 64));
		if (ix->c16) {
			s->q16 = calloc(ix->d16, sizeof(float));
			s->dhat = malloc(sizeof(float) * ix->nalive);
			if (!s->q16 || !s->dhat) {
				scratch_free(s);
				return NULL;
			}
		}
		s->q8 = cv_alloc_aligned(m->dp);
		s->q8p = cv_alloc_aligned(m->dp);
		if (!s->seen || !s->qi || !s->qrot || !s->qr || !s->planes || !s->q8 || !s->q8p ||
		    pthread_setspecific(ix->key, s)) {
			scratch_free(s);
			return NULL;
		}
	}
	if (probe > s->plist_cap) {
		uint32_t *a = realloc(s->plist, probe * sizeof(uint32_t));
		float *b = a ? realloc(s->pdist, probe * sizeof(float)) : NULL;
		uint32_t *c = b ? realloc(s->pl2, probe * sizeof(uint32_t)) : NULL;

		if (a)
			s->plist = a;
		if (b)
			s->pdist = b;
		if (!c)
			return NULL;
		s->pl2 = c;
		s->plist_cap = probe;
	}
	if (R > s->ncand_cap) {
		cand *c = realloc(s->cand, R * sizeof(cand));
		float *u = c ? realloc(s->ub, R * sizeof(float)) : NULL;

		if (c)
			s->cand = c;
		if (!u)
			return NULL;
		s->ub = u;
		s->ncand_cap = R;
	}
	if (depth > s->nreqs) {
		cv_read_req *r = realloc(s->reqs, depth * sizeof(*r));

		if (!r)
			return NULL;
		s->reqs = r;
		s->nreqs = depth;
	}
	if (depth > s->npbuf) {
		uint8_t **b = realloc(s->pbuf, depth * sizeof(*b));

		if (!b)
			return NULL;
		s->pbuf = b;
		while (s->npbuf < depth) {
			s->pbuf[s->npbuf] = cv_alloc_aligned(ix->maxlen ? ix->maxlen : HFR_BLOCK);
			if (!s->pbuf[s->npbuf])
				return NULL;
			s->npbuf++;
		}
	}
	if (depth > s->nvbuf) {
		uint8_t **b = realloc(s->vbuf, depth * sizeof(*b));

		if (!b)
			return NULL;
		s->vbuf = b;
		while (s->nvbuf < depth) {
			s->vbuf[s->nvbuf] = cv_alloc_aligned(hfr_vec_read_len(m));
			if (!s->vbuf[s->nvbuf])
				return NULL;
			s->nvbuf++;
		}
	}
	return s;
}

#define HEAP_PREFIX candheap /* the largest estimate on top */
#define HEAP_ELEM cand
#define HEAP_ABOVE(x, y) ((x).est > (y).est)
#include "heap_template.h"

/* Max-heap on est of at most cap candidates: push, replacing the worst when full. */
static void heap_push(cand *h, size_t *n, size_t cap, cand c)
{
	if (*n < cap)
		candheap_push(h, n, c);
	else if (c.est < h[0].est)
		candheap_replace_top(h, *n, c);
}

typedef struct score_ctx {
	hfr_index *ix;
	hfr_scratch *s;
	cand *heap;
	size_t nheap, cap;
	uint64_t scored;
} score_ctx;

/* Score every live entry of posting p (its record in buf). */
static int score_posting(score_ctx *c, uint32_t p, const uint8_t *buf)
{
	hfr_index *ix = c->ix;
	const hfr_meta *m = &ix->m;
	hfr_scratch *s = c->s;
	const float *cr = ix->crot + (size_t) p * m->dp;
	hfr_post_hdr h;
	hfr_qq qq = {.planes = s->planes};
	hfr_qx qx = {.q8 = s->q8, .q8p = s->q8p};
	const int ex = m->code_bits > 1;
	/*
	 * With replicas a vector sits in several postings and a query must
	 * score it once: the seen bitmap marks each id scored. With one
	 * replica the only other copies are stale ones, which the version
	 * test drops, so the bitmap (a random access an entry) is skipped;
	 * topk_add keeps the answer free of a repeated id all the same.
	 */
	const int mark = m->replicas > 1;
	size_t nb = 0, nmarked;
	uint64_t *seen;
	const uint64_t *changed = ix->nchanged ? ix->changed : NULL;
	const uint32_t *ver_of = m->ver;
	const int fast = ex && !changed && !mark;
	uint32_t *marked, *bidx, *bid;
	int rc;

	rc = hfr_post_check(buf, m->posts[p].len, m->dp, m->code_bits, p, m->posts[p].count, 1, &h,
			    NULL);
	if (!rc && ex)
		rc = batch_fit(s, h.count);
	if (!rc && mark && s->capmarked - s->nmarked < h.count) { /* room for every entry's mark */
		size_t nc = s->capmarked ? s->capmarked : 4096;
		uint32_t *nm;

		while (nc - s->nmarked < h.count)
			nc *= 2;
		nm = realloc(s->marked, nc * sizeof(*nm));
		if (!nm)
			return -ENOMEM;
		s->marked = nm;
		s->capmarked = nc;
	}
	if (rc)
		return rc;
	{ /* the residual; locals, so the loop vectorises (s's arrays could alias) */
		float *restrict qr = s->qr;
		const float *restrict qrot = s->qrot, *restrict cv = cr;
		const size_t dp = m->dp;

		for (size_t t = 0; t < dp; t++)
			qr[t] = qrot[t] - cv[t];
	}
	if (ex)
		hfr_query_quant_ex(s->qr, m->dp, &qx);
	else
		hfr_query_quant(s->qr, m->dp, &qq);
	seen = s->seen;
	marked = s->marked;
	nmarked = s->nmarked;
	bidx = s->bidx;
	bid = s->bid;
	if (fast) {
		/*
		 * The common case (extended codes, one replica, no update yet): an
		 * entry is live iff its id is in range and its version is 1, and
		 * in an index no update has touched only damage that kept its CRC
		 * makes one dead (verify reports it). So every entry is estimated,
		 * in order, with no pass over them first, and liveness is tested
		 * where an entry would enter the heap, on the few that would:
		 * a dead one never does (test_dead_entry), and the heap holds what
		 * it held when dead entries were dropped before the estimates.
		 */
		bidx = s->iota;
		nb = h.count;
	}
	for (uint32_t i = 0; i < h.count && !fast; i++) {
		const uint8_t *ent = hfr_entry_at(buf, h.entry_size, i);
		uint32_t id, ver;
		hfr_fac f;
		cand cd;

		memcpy(&id, ent, 4);
		memcpy(&ver, ent + 4, 4);
		if (id >= m->nids)
			continue;
		if (changed && (changed[id >> 6] >> (id & 63)) & 1 ? ver != ver_of[id] : ver != 1)
			continue; /* a stale copy or a deleted id */
		if (mark) {
			if ((seen[id >> 6] >> (id & 63)) & 1)
				continue; /* a replica already scored */
			seen[id >> 6] |= 1ull << (id & 63);
			marked[nmarked++] = id;
		}
		/*
		 * Extended codes are scored from their B-bit code alone: screening
		 * with the 1-bit estimate first was measured slower (synth 1M x 128,
		 * bench/hfresh/README.md), since at these dimensions its bound
		 * lets most entries through and the byte dot product is as cheap
		 * as the popcounts; so entries do not store the sign bits twice.
		 * They are estimated after this pass, all together: sixteen dot
		 * products at once keep the vector units busy where one entry at
		 * a time waited on each one's reduction.
		 */
		if (ex) {
			bidx[nb] = i;
			bid[nb++] = id;
			continue;
		}
		hfr_entry_get(ent, m->dp, m->code_bits, &id, &ver, &f);
		cd.id = id;
		cd.est = hfr_estimate(&qq, hfr_entry_code(ent), &f, &cd.err);
		heap_push(c->heap, &c->nheap, c->cap, cd);
		c->scored++;
	}
	s->nmarked = nmarked;
	if (!nb)
		return 0;
	c->scored += nb;
	hfr_estimate_ex_entries(&qx, hfr_entry_at(buf, h.entry_size, 0), h.entry_size, bidx, nb,
				m->code_bits, s->best, s->berr);
	{
		/*
		 * The heap's worst estimate held in a register: most entries only
		 * meet it. Eight at a time, the test is a mask (a vector compare)
		 * and one branch for the eight; a branch on each entry's test
		 * mispredicted on every entry that went in.
		 */
		size_t nh = c->nheap, j = 0;
		float worst = nh == c->cap ? c->heap[0].est : INFINITY;
		const float *best = s->best;

		for (; j < nb; j += 8) {
			size_t n8 = nb - j < 8 ? nb - j : 8;
			unsigned in = 0;

			if (nh < c->cap) /* not full: every entry goes in (as in heap_push) */
				in = (1u << n8) - 1;
			else if (n8 == 8)
				for (size_t l = 0; l < 8; l++)
					in |= (unsigned) !(best[j + l] >= worst) << l;
			else
				for (size_t l = 0; l < n8; l++)
					in |= (unsigned) !(best[j + l] >= worst) << l;
			while (in) {
				size_t l = j + (size_t) __builtin_ctz(in);
				uint32_t id;

				in &= in - 1;
				if (best[l] >= worst && nh == c->cap)
					continue; /* worst fell since the mask */
				if (fast) { /* entry l itself (bidx is iota) */
					const uint8_t *ent = hfr_entry_at(buf, h.entry_size, (uint32_t) l);
					uint32_t ver;

					memcpy(&id, ent, 4);
					memcpy(&ver, ent + 4, 4);
					if (id >= m->nids || ver != 1)
						continue; /* dead: never a candidate */
				} else {
					id = bid[l];
				}
				heap_push(c->heap, &nh, c->cap,
					  (cand){.est = best[l], .err = s->berr[l], .id = id});
				if (nh == c->cap)
					worst = c->heap[0].est;
			}
		}
		c->nheap = nh;
	}
	return 0;
}

static int cand_lb_cmp(const void *a, const void *b)
{
	const cand *x = a, *y = b;
	float lx = x->est - x->err, ly = y->est - y->err;

	return lx < ly ? -1 : lx > ly;
}

/* The (r+1)-th smallest upper bound of the n candidates (r < n): a sorted r+1 best in buf. */
static float kth_upper(const cand *c, size_t n, size_t r, float *buf)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		float u = c[i].est + c[i].err;
		size_t j;

		if (m == r + 1 && u >= buf[r])
			continue;
		j = m <= r ? m++ : r;
		while (j > 0 && buf[j - 1] > u) {
			buf[j] = buf[j - 1];
			j--;
		}
		buf[j] = u;
	}
	return buf[r];
}

/* Nearest probe live postings to qi (internal space): HNSW over quantised centroids. */
static int centroid_search(hfr_index *ix, hfr_scratch *s, size_t probe, size_t *np,
			   uint64_t *ndist)
{
	size_t got = 0;
	unsigned ef = probe < 64 ? 64 : (unsigned) probe;
	int rc;

	if (!ix->h) { /* exact scan, bounded insertion into the probe best */
		const hfr_meta *m = &ix->m;
		double lim = cent16_limit(ix, s, probe);
		uint64_t pruned = 0;

		for (uint32_t a = 0; a < ix->nalive; a++) {
			float d;
			size_t j;

			if (lim >= 0 && (double) s->dhat[a] > lim) {
				pruned++;
				continue; /* probe centroids are provably nearer */
			}
			d = cv_l2sq(s->qi, ix->acent + (size_t) a * m->di, m->di);
			if (got == probe && d >= s->pdist[got - 1])
				continue;
			j = got < probe ? got++ : got - 1;
			while (j > 0 && s->pdist[j - 1] > d) {
				s->pdist[j] = s->pdist[j - 1];
				s->plist[j] = s->plist[j - 1];
				j--;
			}
			s->pdist[j] = d;
			s->plist[j] = ix->alive[a];
		}
		if (pruned)
			__atomic_fetch_add(&prescan_pruned, pruned, __ATOMIC_RELAXED);
		*ndist += ix->nalive;
		*np = got;
		return 0;
	}
	rc = hnsw_search_n(ix->h, s->qi, probe, ef, s->pl2, s->pdist, &got, ndist);
	if (rc)
		return rc;
	for (size_t i = 0; i < got; i++)
		s->plist[i] = ix->alive[s->pl2[i]];
	*np = got;
	return 0;
}

/* The metric's exact distance between the query and a stored vector. */
static float exact_dist(const hfr_meta *m, const float *q, const float *x)
{
	return cv_distance(m->metric, q, x, m->d);
}

/* A metric distance mapped to the internal squared-L2 space (for the bound). */
static float to_internal_dist(const hfr_meta *m, float d, float qn2)
{
	switch (m->metric) {
	case CV_METRIC_COSINE: return 2.0f * d;
	case CV_METRIC_IP: return m->ip_m * m->ip_m + qn2 + 2.0f * d;
	default: return d;
	}
}

/* Insert (d, id) into the sorted top-k arrays. */
static void topk_add(float *td, uint32_t *ti, size_t *n, size_t k, float d, uint32_t id)
{
	size_t i;

	if (*n == k && d >= td[k - 1])
		return;
	for (i = 0; i < *n; i++) /* a second copy of an id already in (score_posting's mark) */
		if (ti[i] == id)
			return;
	i = *n < k ? (*n)++ : k - 1;
	while (i > 0 && td[i - 1] > d) {
		td[i] = td[i - 1];
		ti[i] = ti[i - 1];
		i--;
	}
	td[i] = d;
	ti[i] = id;
}

/* Record the 4 KiB blocks of a read of len bytes at off in file fi (no list: nothing). */
static int record_read(cv_block_list *bl, uint32_t fi, uint64_t off, uint32_t len)
{
	if (!bl || fi == UINT32_MAX)
		return 0;
	for (uint64_t b = off / HFR_BLOCK; b * HFR_BLOCK < off + len; b++) {
		int rc = cv_block_list_add(bl, fi, b);

		if (rc)
			return rc;
	}
	return 0;
}

/* No page of the index stays mapped here: a cold pass's eviction can then drop them all. */
void hfr_drop_buffers(void *state)
{
	hfr_index *ix = state;

	cv_file_release_pages(ix->fpost);
	cv_file_release_pages(ix->fvec);
}

/*
 * Read a batch: through the cv_io, or pread when io is NULL. Each r[i].data
 * gets where its bytes are: its buffer, or the file's mapping when the
 * cv_io gives a view (mmap always, auto where the page cache holds the
 * bytes), which spares a system call and a copy of every posting.
 */
static int read_batch(hfr_index *ix, cv_io *io, cv_read_req *r, size_t n)
{
	if (io) {
		const int nobuf = cv_io_views(io) == 1;

		for (size_t i = 0; i < n; i++) {
			r[i].flags = CV_READ_VIEW;
			if (nobuf)
				r[i].buf = NULL;
		}
		return cv_io_read_batch(io, r, n);
	}
	for (size_t i = 0; i < n; i++) {
		int fd = r[i].file == ix->fvec ? ix->fdvec : ix->fdpost;

		r[i].data = r[i].buf;
		r[i].res = cvu_pread_exact(fd, r[i].buf, r[i].len, r[i].off);
		if (r[i].res)
			return r[i].res;
	}
	return 0;
}

/* One posting or vector (which: 0 or 1) into buf, or viewed; *data: where its bytes are. */
static int read_one(hfr_index *ix, cv_io *io, int which, uint64_t off, uint32_t len, void *buf,
		    const uint8_t **data)
{
	cv_read_req r = {.file = which ? ix->fvec : ix->fpost, .off = off, .len = len, .buf = buf};
	int rc = read_batch(ix, io, &r, 1);

	*data = r.data;
	return rc;
}

int hfr_query(void *state, cv_io *io, const float *q, const cv_query_opts *o, uint32_t *ids,
	      float *dists, size_t *nout, cv_query_stats *stats)
{
	hfr_index *ix = state;
	const hfr_meta *m = &ix->m;
	size_t k = o->k, probe = o->search_probe ? o->search_probe : 64, R, np = 0, nc,
	       depth, nres = 0;
	int concurrent = o->io_mode == CV_HIO_CONCURRENT;
	uint64_t reads = 0, bytes = 0, preads = 0, rreads = 0, ndist = 0;
	hfr_scratch *s;
	score_ctx sc;
	float qn2 = 0, ubk = INFINITY;
	int rc = 0;

	*nout = 0;
	if (k == 0 || ix->nalive == 0 || m->live == 0)
		return 0;
	if (probe > ix->nalive)
		probe = ix->nalive;
	R = o->rescore_limit > k ? o->rescore_limit : k;
	depth = concurrent ? (o->io_depth ? o->io_depth : 64) : 1;
	s = scratch_get(ix, probe, R, depth);
	if (!s)
		return -ENOMEM;
	while (s->nmarked) { /* the last query's marks (whatever way it ended) */
		uint32_t id = s->marked[--s->nmarked];

		s->seen[id >> 6] &= ~(1ull << (id & 63));
	}

	/* 1-2: internal query, rotation, centroid search */
	memcpy(s->qi, q, sizeof(float) * m->d);
	for (uint32_t i = 0; i < m->d; i++)
		qn2 += q[i] * q[i];
	if (m->metric == CV_METRIC_COSINE && qn2 > 0) {
		float inv = 1.0f / sqrtf(qn2);

		for (uint32_t i = 0; i < m->d; i++)
			s->qi[i] *= inv;
	} else if (m->metric == CV_METRIC_IP) {
		s->qi[m->d] = 0.0f;
	}
	hfr_rot_apply(&ix->rot, s->qi, s->qrot);
	rc = centroid_search(ix, s, probe, &np, &ndist);
	if (rc)
		return rc;

	/*
	 * 3-4: read and score the postings. Their rotated centroids (a random
	 * 512 bytes each at d 128, read first thing in score_posting) are
	 * asked for now, all together.
	 */
	for (size_t i = 0; i < np; i++) {
		const char *c = (const char *) (ix->crot + (size_t) s->plist[i] * m->dp);

		for (size_t b = 0; b < sizeof(float) * m->dp; b += 64)
			__builtin_prefetch(c + b, 0, 3);
	}
	sc = (score_ctx){.ix = ix, .s = s, .heap = s->cand, .nheap = 0, .cap = R};
	if (!concurrent) {
		for (size_t i = 0; i < np && !rc; i++) {
			const hfr_post *ps = &m->posts[s->plist[i]];
			const uint8_t *pd;

			rc = read_one(ix, io, 0, ps->off, ps->len, s->pbuf[0], &pd);
			if (!rc) {
				reads++;
				preads++;
				bytes += ps->len;
				rc = record_read(o->blocks, ix->fipost, ps->off, ps->len);
			}
			if (!rc && io && i + 1 < np) { /* mapped: the next one's bytes on their way */
				const hfr_post *pn = &m->posts[s->plist[i + 1]];

				cv_io_view_prefetch(io, ix->fpost, pn->off, pn->len);
			}
			if (!rc)
				rc = score_posting(&sc, s->plist[i], pd);
		}
	} else {
		for (size_t b0 = 0; b0 < np && !rc; b0 += depth) {
			size_t nb = np - b0 < depth ? np - b0 : depth;

			for (size_t j = 0; j < nb; j++) {
				const hfr_post *ps = &m->posts[s->plist[b0 + j]];

				s->reqs[j] = (cv_read_req){.file = ix->fpost, .off = ps->off,
							   .len = ps->len, .buf = s->pbuf[j]};
				bytes += ps->len;
			}
			rc = read_batch(ix, io, s->reqs, nb);
			reads += nb;
			preads += nb;
			for (size_t j = 0; j < nb && !rc; j++) {
				rc = s->reqs[j].res;
				if (!rc)
					rc = record_read(o->blocks, ix->fipost, s->reqs[j].off,
							 s->reqs[j].len);
				if (!rc)
					rc = score_posting(&sc, s->plist[b0 + j], s->reqs[j].data);
			}
		}
	}
	if (rc)
		goto out;

	/* 5: error-bound pruning against the k-th smallest upper bound */
	nc = sc.nheap;
	if (nc > k)
		ubk = kth_upper(s->cand, nc, k - 1, s->ub);
	{
		size_t w = 0;

		for (size_t i = 0; i < nc; i++)
			if (s->cand[i].est - s->cand[i].err <= ubk)
				s->cand[w++] = s->cand[i];
		nc = w;
	}
	qsort(s->cand, nc, sizeof(cand), cand_lb_cmp);

	/* 6: exact distances from the vector store */
	{
		float *td = dists, kth;
		uint32_t *ti = ids;
		uint32_t vlen = hfr_vec_read_len(m);

		for (size_t i0 = 0; i0 < nc && !rc;) {
			size_t nb = 0;

			kth = nres == k ? to_internal_dist(m, td[k - 1], qn2) : INFINITY;
			if (s->cand[i0].est - s->cand[i0].err > kth)
				break; /* no later candidate can enter the top k */
			/*
			 * The first concurrent batch is 2k reads (at most Q): most queries
			 * have their top k after it. Once k exact distances are known,
			 * every candidate whose lower bound is within the k-th one may
			 * still enter, and the serial order would read the first of them
			 * next: all of them go in one batch (at most Q), so a query whose
			 * bound stops nothing does not wait on 2k reads at a time.
			 */
			size_t lim = 2 * k;

			if (kth < INFINITY) {
				lim = 0;
				while (i0 + lim < nc && lim < depth &&
				       s->cand[i0 + lim].est - s->cand[i0 + lim].err <= kth)
					lim++;
			}
			if (lim > depth)
				lim = depth;

			while (i0 + nb < nc && nb < lim) {
				uint32_t id = s->cand[i0 + nb].id;
				uint64_t off = hfr_vec_off(m, id);
				uint64_t boff = off / HFR_BLOCK * HFR_BLOCK;

				if (vlen > HFR_BLOCK)
					boff = off;
				s->reqs[nb] = (cv_read_req){.file = ix->fvec, .off = boff, .len = vlen,
							    .buf = s->vbuf[nb], .user = NULL};
				nb++;
			}
			/*
			 * Mapped: every line of every slot of the batch on its way at
			 * once, so their misses overlap; the views below would take
			 * them one slot after another, touching the block's first and
			 * last bytes, which are rarely the slot's (bench/hfresh/README.md,
			 * "AVX-512 round": +5% at 1M).
			 */
			if (io && cv_io_views(io))
				for (size_t j = 0; j < nb; j++) {
					uint64_t off = hfr_vec_off(m, s->cand[i0 + j].id);

					for (uint32_t b = 0; b < m->vec_slot; b += 64)
						cv_io_view_prefetch(io, ix->fvec, off + b, 1);
				}
			rc = read_batch(ix, io, s->reqs, nb);
			reads += nb;
			rreads += nb;
			bytes += (uint64_t) nb * vlen;
			for (size_t j = 0; j < nb && !rc; j++) {
				uint32_t id = s->cand[i0 + j].id;
				uint64_t off = hfr_vec_off(m, id);
				const float *x;
				float xv[m->d];

				if (s->reqs[j].res) {
					rc = s->reqs[j].res;
					break;
				}
				const uint8_t *slot = (const uint8_t *) s->reqs[j].data +
						      (off - s->reqs[j].off);

				if (hfr_vec_check(m, slot)) {
					rc = -EBADMSG; /* a damaged slot: never a wrong distance */
					break;
				}
				rc = record_read(o->blocks, ix->fivec, s->reqs[j].off, vlen);
				if (rc)
					break;
				memcpy(xv, slot, sizeof(float) * m->d);
				x = xv;
				topk_add(td, ti, &nres, k, exact_dist(m, q, x), id);
				ndist++;
			}
			i0 += nb;
		}
	}
	*nout = nres;
out:
	if (stats) {
		stats->reads += reads;
		stats->bytes += bytes;
		stats->posting_reads += preads;
		stats->rescore_reads += rreads;
		stats->distances += ndist + sc.scored;
	}
	return rc;
}

size_t hfr_state_dim(const void *state)
{
	return ((const hfr_index *) state)->m.d;
}

size_t hfr_state_count(const void *state)
{
	return ((const hfr_index *) state)->m.live;
}

cv_metric hfr_state_metric(const void *state)
{
	return ((const hfr_index *) state)->m.metric;
}
