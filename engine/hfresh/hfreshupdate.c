/*
 * hfreshupdate.c - live updates: insert, delete, and the rebalancing they
 * cause (split, merge, reassign), committed crash-safely.
 *
 * A writer takes an exclusive flock on the index directory, reads the
 * manifest and every live posting into memory (hfr_writer), applies the
 * batch, rebalances, and commits (ARCHITECTURE.md, "Commit protocol"):
 * new vector slots, fsync; changed postings appended as new records past
 * postings_end, fsync; a new manifest renamed over the old, fsync dir.
 * A SIGKILL anywhere leaves either the old manifest (which references
 * none of the bytes written since) or the new one (all of whose bytes
 * were durable before the rename). hfr_crash_point() marks each step, so
 * a test can kill the writer at every one of them.
 *
 * Insert (SPFresh's Insert): RNG placement over the HFR_CANDIDATES
 * nearest live centroids, version 1, appended to each chosen posting; a
 * posting over max_entries is queued for a split.
 *
 * Delete: the version word's deleted bit. Copies are dropped when their
 * posting is next rewritten (garbage collection in split and merge).
 *
 * Split (SPFresh's LIRE, paper 3.3): garbage-collect; if still over the
 * cap, balanced 2-means on the *full-precision* vectors read from the
 * vector store (not on decoded codes, as Weaviate does), two new
 * postings with the means as centroids, the old one removed. Then the two
 * necessary conditions for reassignment:
 *   (1) a vector of the split posting whose new centroid is farther than
 *       the old one was (d(v, A_i) > d(v, old)) may belong elsewhere;
 *   (2) a vector of one of the HFR_REASSIGN_K postings nearest the old
 *       centroid may now belong to A0 or A1 unless d(v, old) <=
 *       min d(v, A_i) (it did not gain) or d(v, own) <= min d(v, A_i).
 * Reassign: RNG placement again from the full vector; if the posting it
 * sits in is among the picks, nothing moves; otherwise its version is
 * bumped (making every other copy stale at once) and it is appended to
 * each pick. Versions saturate at HFR_VERSION_MAX (no reassignment past
 * it), so no version wraps.
 *
 * Merge: a posting with fewer than min_entries live entries is garbage
 * collected and its live vectors moved (re-encoded against the new
 * centroid, same version) into the nearest posting with room, or it is
 * dropped when empty; moved vectors that are now farther from their
 * centroid go through reassignment.
 *
 * All of this runs inside the update call, before its commit ("background"
 * in Weaviate's sense of not being on the query path; queries on an open
 * index keep reading the previous manifest's records, which are never
 * overwritten).
 */
#include "hfresh.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct upost {
	uint32_t n, cap;
	uint8_t *ents;  /* n entries of es bytes */
	int dirty;
} upost;

typedef struct hfr_writer {
	const char *dir;
	int dirfd, fdpost, fdvec;
	hfr_meta m;
	hfr_rot rot;
	uint32_t es;
	upost *up;      /* m.nposts */
	uint32_t upcap;
	uint32_t *splitq;
	size_t nsplit, capsplit;
	uint8_t *inq;   /* per posting: queued for a split */
	uint32_t inqcap;
	hfr_update_stats st;
} hfr_writer;

static hfr_update_stats last_stats;

void hfr_last_update_stats(hfr_update_stats *out)
{
	*out = last_stats;
}

static int is_live(const hfr_meta *m, uint32_t id, uint32_t ver)
{
	return id < m->nids && ver == m->ver[id];
}

/* Grow the posting arrays to hold n postings. */
static int w_grow_posts(hfr_writer *w, uint32_t n)
{
	hfr_meta *m = &w->m;

	if (n <= w->upcap)
		return 0;
	{
		uint32_t cap = n * 2 + 16;
		upost *up = realloc(w->up, sizeof(*up) * cap);
		hfr_post *ps;
		float *c;
		uint8_t *q;

		if (!up)
			return -ENOMEM;
		w->up = up;
		memset(up + w->upcap, 0, sizeof(*up) * (cap - w->upcap));
		ps = realloc(m->posts, sizeof(*ps) * cap);
		if (!ps)
			return -ENOMEM;
		m->posts = ps;
		c = realloc(m->cent, sizeof(float) * cap * m->di);
		if (!c)
			return -ENOMEM;
		m->cent = c;
		q = realloc(w->inq, cap);
		if (!q)
			return -ENOMEM;
		w->inq = q;
		memset(q + w->upcap, 0, cap - w->upcap);
		w->upcap = cap;
	}
	return 0;
}

/* Append an entry for (id, ver) with internal vector xi to posting p. */
static int w_append(hfr_writer *w, uint32_t p, uint32_t id, uint32_t ver, const float *xi)
{
	hfr_meta *m = &w->m;
	upost *u = &w->up[p];
	float res[m->di], rr[m->dp];
	uint64_t code[m->dp / 64];
	uint8_t ex[hfr_ex_code_bytes(m->dp, m->code_bits) + 1];
	hfr_fac f;

	if (u->n == u->cap) {
		uint32_t cap = u->cap ? u->cap * 2 : 64;
		uint8_t *e = realloc(u->ents, (size_t) cap * w->es);

		if (!e)
			return -ENOMEM;
		u->ents = e;
		u->cap = cap;
	}
	for (uint32_t t = 0; t < m->di; t++)
		res[t] = xi[t] - m->cent[(size_t) p * m->di + t];
	hfr_rot_apply(&w->rot, res, rr);
	hfr_encode(rr, m->dp, m->code_bits, code, ex, &f);
	hfr_entry_put(u->ents + (size_t) u->n * w->es, m->dp, m->code_bits, id, ver, &f, code, ex);
	u->n++;
	u->dirty = 1;
	if (u->n > m->max_entries && !w->inq[p]) {
		if (w->nsplit == w->capsplit) {
			size_t cap = w->capsplit ? w->capsplit * 2 : 64;
			uint32_t *q = realloc(w->splitq, cap * sizeof(*q));

			if (!q)
				return -ENOMEM;
			w->splitq = q;
			w->capsplit = cap;
		}
		w->splitq[w->nsplit++] = p;
		w->inq[p] = 1;
	}
	return 0;
}

/* Read id's vector from the store into the internal space. */
static int w_vec(hfr_writer *w, uint32_t id, float *xi)
{
	hfr_meta *m = &w->m;
	uint8_t slot[m->vec_slot];
	int rc = cvu_pread_exact(w->fdvec, slot, m->vec_slot, hfr_vec_off(m, id));

	if (rc)
		return rc;
	if (hfr_vec_check(m, slot))
		return -EBADMSG;
	{
		float x[m->d];

		memcpy(x, slot, sizeof(float) * m->d);
		hfr_to_internal(m, x, xi);
	}
	return 0;
}

/* The C nearest live postings to xi (exact scan), nearest first; returns how many. */
static size_t w_nearest(hfr_writer *w, const float *xi, uint32_t skip, size_t C, uint32_t *cand,
			float *cd)
{
	hfr_meta *m = &w->m;
	size_t nc = 0;

	for (uint32_t p = 0; p < m->nposts; p++) {
		float d;
		size_t j;

		if (!m->posts[p].alive || p == skip)
			continue;
		d = cv_l2sq(xi, m->cent + (size_t) p * m->di, m->di);
		if (nc == C && d >= cd[nc - 1])
			continue;
		j = nc < C ? nc++ : nc - 1;
		while (j > 0 && cd[j - 1] > d) {
			cd[j] = cd[j - 1];
			cand[j] = cand[j - 1];
			j--;
		}
		cd[j] = d;
		cand[j] = p;
	}
	return nc;
}

/* A new live posting with centroid c; its id in *out. */
static int w_new_posting(hfr_writer *w, const float *c, uint32_t *out)
{
	hfr_meta *m = &w->m;
	uint32_t p = m->nposts;
	int rc = w_grow_posts(w, p + 1);

	if (rc)
		return rc;
	memset(&m->posts[p], 0, sizeof(hfr_post));
	m->posts[p].alive = 1;
	memcpy(m->cent + (size_t) p * m->di, c, sizeof(float) * m->di);
	memset(&w->up[p], 0, sizeof(upost));
	w->up[p].dirty = 1;
	w->inq[p] = 0;
	m->nposts++;
	*out = p;
	return 0;
}

/* RNG placement of (id, ver, xi): picks into out, returns how many. */
static size_t w_select(hfr_writer *w, const float *xi, uint32_t *out)
{
	uint32_t cand[HFR_CANDIDATES];
	float cd[HFR_CANDIDATES];
	size_t nc = w_nearest(w, xi, UINT32_MAX, HFR_CANDIDATES, cand, cd);

	return hfr_rng_select(w->m.cent, w->m.di, NULL, 0, cand, cd, nc, w->m.rng_factor,
			      w->m.replicas, out);
}

/* Place a vector: RNG-selected postings, or a new posting when there are none. */
static int w_place(hfr_writer *w, uint32_t id, uint32_t ver, const float *xi)
{
	uint32_t picks[HFR_MAX_REPLICAS];
	size_t np = w_select(w, xi, picks);
	int rc = 0;

	if (np == 0) {
		uint32_t p;

		rc = w_new_posting(w, xi, &p);
		if (rc)
			return rc;
		picks[0] = p;
		np = 1;
	}
	for (size_t i = 0; i < np && !rc; i++)
		rc = w_append(w, picks[i], id, ver, xi);
	return rc;
}

/* Reassign id (found in posting src): move it if src is not among its RNG picks. */
static int w_reassign(hfr_writer *w, uint32_t id, uint32_t src)
{
	hfr_meta *m = &w->m;
	uint32_t picks[HFR_MAX_REPLICAS], ver;
	float xi[m->di];
	size_t np;
	int rc;

	w->st.reassign_checked++;
	if (id >= m->nids || !m->ver[id] || (m->ver[id] & HFR_DELETED))
		return 0;
	if ((m->ver[id] & HFR_VERSION_MAX) >= HFR_VERSION_MAX)
		return 0; /* saturated: stays where it is rather than wrap */
	rc = w_vec(w, id, xi);
	if (rc)
		return rc;
	np = w_select(w, xi, picks);
	for (size_t i = 0; i < np; i++)
		if (picks[i] == src)
			return 0;
	ver = m->ver[id] + 1;
	m->ver[id] = ver;
	w->st.reassigned++;
	for (size_t i = 0; i < np && !rc; i++)
		rc = w_append(w, picks[i], id, ver, xi);
	return rc;
}

/* Drop stale and deleted entries of posting p. */
static void w_gc(hfr_writer *w, uint32_t p)
{
	upost *u = &w->up[p];
	uint32_t keep = 0;

	for (uint32_t i = 0; i < u->n; i++) {
		uint8_t *e = u->ents + (size_t) i * w->es;
		uint32_t id, ver;

		memcpy(&id, e, 4);
		memcpy(&ver, e + 4, 4);
		if (!is_live(&w->m, id, ver))
			continue;
		if (keep != i)
			memmove(u->ents + (size_t) keep * w->es, e, w->es);
		keep++;
	}
	if (keep != u->n) {
		u->n = keep;
		u->dirty = 1;
	}
}

/* Live entries of posting p. */
static uint32_t w_live(hfr_writer *w, uint32_t p)
{
	upost *u = &w->up[p];
	uint32_t n = 0;

	for (uint32_t i = 0; i < u->n; i++) {
		uint32_t id, ver;

		memcpy(&id, u->ents + (size_t) i * w->es, 4);
		memcpy(&ver, u->ents + (size_t) i * w->es + 4, 4);
		n += is_live(&w->m, id, ver);
	}
	return n;
}

/* Remove posting p (its centroid stays in the manifest, unused). */
static void w_kill(hfr_writer *w, uint32_t p)
{
	free(w->up[p].ents);
	memset(&w->up[p], 0, sizeof(upost));
	memset(&w->m.posts[p], 0, sizeof(hfr_post));
}

/* Split posting p (LIRE): GC, balanced 2-means on full vectors, reassign by the two conditions. */
static int w_split(hfr_writer *w, uint32_t p)
{
	hfr_meta *m = &w->m;
	upost *u = &w->up[p];
	uint32_t n, *ids = NULL, *vers = NULL, *rows = NULL, *as = NULL, a[2];
	float *x = NULL, cent[2 * m->di], old[m->di];
	int rc = -ENOMEM;

	w->inq[p] = 0;
	if (!m->posts[p].alive)
		return 0;
	w_gc(w, p);
	n = u->n;
	if (n <= m->max_entries)
		return 0;
	memcpy(old, m->cent + (size_t) p * m->di, sizeof(old));
	ids = malloc(sizeof(uint32_t) * n);
	vers = malloc(sizeof(uint32_t) * n);
	rows = malloc(sizeof(uint32_t) * n);
	as = malloc(sizeof(uint32_t) * n);
	x = malloc(sizeof(float) * n * m->di);
	if (!ids || !vers || !rows || !as || !x)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		memcpy(&ids[i], u->ents + (size_t) i * w->es, 4);
		memcpy(&vers[i], u->ents + (size_t) i * w->es + 4, 4);
		rows[i] = i;
		rc = w_vec(w, ids[i], x + (size_t) i * m->di);
		if (rc)
			goto out;
	}
	rc = hfr_kmeans(x, rows, n, m->di, 2, 1, m->generation ^ p, cent, as);
	if (rc)
		goto out;
	w_kill(w, p);
	for (int j = 0; j < 2; j++) {
		rc = w_new_posting(w, cent + (size_t) j * m->di, &a[j]);
		if (rc)
			goto out;
	}
	for (uint32_t i = 0; i < n && !rc; i++)
		rc = w_append(w, a[as[i]], ids[i], vers[i], x + (size_t) i * m->di);
	if (rc)
		goto out;
	w->st.splits++;
	/* condition (1): members now farther from their new centroid than from the old */
	for (uint32_t i = 0; i < n && !rc; i++) {
		const float *v = x + (size_t) i * m->di;

		if (cv_l2sq(v, m->cent + (size_t) a[as[i]] * m->di, m->di) > cv_l2sq(v, old, m->di))
			rc = w_reassign(w, ids[i], a[as[i]]);
	}
	/* condition (2): members of the postings nearest the old centroid */
	{
		uint32_t nb[HFR_REASSIGN_K];
		float nd[HFR_REASSIGN_K];
		size_t nn = w_nearest(w, old, UINT32_MAX, HFR_REASSIGN_K, nb, nd);
		float *v = malloc(sizeof(float) * m->di);

		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t b = 0; b < nn && !rc; b++) {
			uint32_t q = nb[b], cnt;

			if (q == a[0] || q == a[1])
				continue;
			cnt = w->up[q].n;
			for (uint32_t i = 0; i < cnt && !rc; i++) {
				uint32_t id, ver;
				float dold, dmin, down;

				memcpy(&id, w->up[q].ents + (size_t) i * w->es, 4);
				memcpy(&ver, w->up[q].ents + (size_t) i * w->es + 4, 4);
				if (!is_live(m, id, ver))
					continue;
				rc = w_vec(w, id, v);
				if (rc)
					break;
				dold = cv_l2sq(v, old, m->di);
				dmin = fminf(cv_l2sq(v, m->cent + (size_t) a[0] * m->di, m->di),
					     cv_l2sq(v, m->cent + (size_t) a[1] * m->di, m->di));
				down = cv_l2sq(v, m->cent + (size_t) q * m->di, m->di);
				if (dold <= dmin || down <= dmin)
					continue;
				rc = w_reassign(w, id, q);
			}
		}
		free(v);
	}
out:
	free(ids);
	free(vers);
	free(rows);
	free(as);
	free(x);
	return rc;
}

/* Merge posting p (under min_entries live) into its nearest neighbour with room. */
static int w_merge(hfr_writer *w, uint32_t p)
{
	hfr_meta *m = &w->m;
	uint32_t cand[HFR_CANDIDATES], n, q = UINT32_MAX;
	float cd[HFR_CANDIDATES], old[m->di], xi[m->di];
	size_t nc;
	int rc = 0;

	w_gc(w, p);
	n = w->up[p].n;
	if (n == 0) {
		w_kill(w, p);
		w->st.merges++;
		return 0;
	}
	memcpy(old, m->cent + (size_t) p * m->di, sizeof(old));
	nc = w_nearest(w, old, p, HFR_CANDIDATES, cand, cd);
	for (size_t i = 0; i < nc; i++)
		if (w_live(w, cand[i]) + n <= m->max_entries) {
			q = cand[i];
			break;
		}
	if (q == UINT32_MAX)
		return 0; /* nowhere to go: keep the small posting */
	{
		upost moved = w->up[p];
		uint8_t *present = calloc(m->nids + 1, 1);

		if (!present)
			return -ENOMEM;
		for (uint32_t i = 0; i < w->up[q].n; i++) {
			uint32_t id, ver;

			memcpy(&id, w->up[q].ents + (size_t) i * w->es, 4);
			memcpy(&ver, w->up[q].ents + (size_t) i * w->es + 4, 4);
			if (is_live(m, id, ver))
				present[id] = 1;
		}
		memset(&w->up[p], 0, sizeof(upost)); /* ownership of the entries moves to 'moved' */
		memset(&m->posts[p], 0, sizeof(hfr_post));
		w->st.merges++;
		for (uint32_t i = 0; i < moved.n && !rc; i++) {
			uint32_t id, ver;

			memcpy(&id, moved.ents + (size_t) i * w->es, 4);
			memcpy(&ver, moved.ents + (size_t) i * w->es + 4, 4);
			if (present[id])
				continue;
			rc = w_vec(w, id, xi);
			if (!rc)
				rc = w_append(w, q, id, ver, xi);
			/* now farther from its centroid than before: may belong elsewhere */
			if (!rc && cv_l2sq(xi, m->cent + (size_t) q * m->di, m->di) >
					   cv_l2sq(xi, old, m->di))
				rc = w_reassign(w, id, q);
		}
		free(moved.ents);
		free(present);
	}
	return rc;
}

/* Split everything queued, then merge what fell under the minimum. */
static int w_rebalance(hfr_writer *w)
{
	hfr_meta *m = &w->m;
	int rc = 0;

	for (int round = 0; round < 8 && !rc; round++) {
		while (w->nsplit && !rc) {
			uint32_t p = w->splitq[--w->nsplit];

			rc = w_split(w, p);
		}
		if (rc)
			break;
		for (uint32_t p = 0; p < m->nposts && !rc; p++) {
			uint32_t live;

			if (!m->posts[p].alive)
				continue;
			live = w_live(w, p);
			if (live < m->min_entries && m->live > m->max_entries)
				rc = w_merge(w, p);
		}
		if (!w->nsplit)
			break;
	}
	return rc;
}

static void w_close(hfr_writer *w)
{
	if (w->up)
		for (uint32_t p = 0; p < w->upcap; p++)
			free(w->up[p].ents);
	free(w->up);
	free(w->splitq);
	free(w->inq);
	hfr_rot_free(&w->rot);
	hfr_meta_free(&w->m);
	if (w->fdpost >= 0)
		close(w->fdpost);
	if (w->fdvec >= 0)
		close(w->fdvec);
	if (w->dirfd >= 0)
		close(w->dirfd); /* releases the flock */
}

/* Remove postings files of other generations (left by a crash mid-compaction). */
static void w_remove_orphans(hfr_writer *w)
{
	char pat[4200], keep[4200];
	glob_t g;

	snprintf(pat, sizeof(pat), "%s/postings.*.dat", w->dir);
	hfr_postings_path(w->dir, w->m.postings_gen, keep, sizeof(keep));
	if (glob(pat, 0, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc; i++)
		if (strcmp(g.gl_pathv[i], keep))
			unlink(g.gl_pathv[i]);
	globfree(&g);
}

/* Lock, read the manifest and every live posting. */
static int w_open(hfr_writer *w, const char *dir, cv_err *e)
{
	hfr_meta *m = &w->m;
	char path[4200];
	uint8_t *buf = NULL;
	int rc;

	memset(w, 0, sizeof(*w));
	w->dir = dir;
	w->fdpost = w->fdvec = -1;
	w->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->dirfd < 0)
		return cv_err_set(e, -errno, "%s: cannot open: %s", dir, strerror(errno));
	if (flock(w->dirfd, LOCK_EX) < 0)
		return cv_err_set(e, -errno, "%s: cannot lock: %s", dir, strerror(errno));
	rc = hfr_meta_read(dir, m, e);
	if (rc)
		return rc;
	w->es = hfr_entry_size(m->dp, m->code_bits);
	rc = hfr_rot_init(&w->rot, m->di, m->rot_seed);
	if (rc)
		return rc;
	w_remove_orphans(w);
	snprintf(path, sizeof(path), "%s/%s.tmp", dir, HFR_META_NAME);
	unlink(path);
	hfr_postings_path(dir, m->postings_gen, path, sizeof(path));
	w->fdpost = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (w->fdpost < 0)
		return cv_err_set(e, -EBADMSG, "%s: cannot open: %s", path, strerror(errno));
	/* bytes past postings_end are a crashed writer's; the manifest never saw them */
	if (ftruncate(w->fdpost, (off_t) m->postings_end) < 0)
		return cv_err_set(e, -errno, "%s: truncate failed", path);
	snprintf(path, sizeof(path), "%s/%s", dir, HFR_VEC_NAME);
	w->fdvec = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (w->fdvec < 0)
		return cv_err_set(e, -EBADMSG, "%s: cannot open: %s", path, strerror(errno));
	{
		uint32_t n = m->nposts;
		hfr_post *ps = m->posts;
		float *c = m->cent;

		/* w_grow_posts reallocates; start from the manifest's arrays */
		w->upcap = 0;
		m->posts = NULL;
		m->cent = NULL;
		rc = w_grow_posts(w, n + 1);
		if (rc) {
			free(ps);
			free(c);
			return rc;
		}
		memcpy(m->posts, ps, sizeof(hfr_post) * n);
		memcpy(m->cent, c, sizeof(float) * n * m->di);
		free(ps);
		free(c);
	}
	buf = malloc(hfr_post_disk_len(m->max_entries * 2u + 64u, m->dp, m->code_bits));
	if (!buf)
		return -ENOMEM;
	hfr_postings_path(dir, m->postings_gen, path, sizeof(path));
	for (uint32_t p = 0; p < m->nposts; p++) {
		hfr_post *ps = &m->posts[p];
		upost *u = &w->up[p];
		cv_err pe;

		if (!ps->alive)
			continue;
		rc = cvu_pread_exact(w->fdpost, buf, ps->len, ps->off);
		if (!rc)
			rc = hfr_post_check(buf, ps->len, m->dp, m->code_bits, p, ps->count, 1, NULL, &pe);
		if (rc) {
			rc = cv_err_set(e, -EBADMSG, "%s: posting %u at byte %llu: %s", path, p,
					(unsigned long long) ps->off, rc == -EBADMSG ? pe.msg : "unreadable");
			break;
		}
		u->cap = ps->count + 16;
		u->ents = malloc((size_t) u->cap * w->es);
		if (!u->ents) {
			rc = -ENOMEM;
			break;
		}
		memcpy(u->ents, buf + HFR_POST_HDR, (size_t) ps->count * w->es);
		u->n = ps->count;
	}
	free(buf);
	return rc;
}

/* Append changed postings, fsync, write the manifest (the commit point). */
static int w_commit(hfr_writer *w, cv_err *e)
{
	hfr_meta *m = &w->m;
	uint8_t *buf = NULL;
	size_t bcap = 0;
	uint64_t live_bytes = 0;
	int rc = 0;

	if (fsync(w->fdvec) < 0)
		return cv_err_set(e, -errno, "%s/%s: fsync failed", w->dir, HFR_VEC_NAME);
	hfr_crash_point();
	for (uint32_t p = 0; p < m->nposts; p++) {
		hfr_post *ps = &m->posts[p];
		upost *u = &w->up[p];
		uint64_t len;

		if (!ps->alive)
			continue;
		if (u->dirty)
			w_gc(w, p);
		if (u->n == 0) { /* empty postings are dropped */
			w_kill(w, p);
			continue;
		}
		len = hfr_post_disk_len(u->n, m->dp, m->code_bits);
		live_bytes += len;
		if (!u->dirty)
			continue;
		if (len > bcap) {
			uint8_t *b = realloc(buf, len);

			if (!b) {
				rc = -ENOMEM;
				goto out;
			}
			buf = b;
			bcap = len;
		}
		memset(buf, 0, len);
		memcpy(buf + HFR_POST_HDR, u->ents, (size_t) u->n * w->es);
		hfr_post_seal(buf, p, u->n, m->dp, m->code_bits);
		rc = cvu_pwrite_full(w->fdpost, buf, len, m->postings_end);
		if (rc) {
			cv_err_set(e, rc, "%s: posting write failed: %s", w->dir, strerror(-rc));
			goto out;
		}
		hfr_crash_point();
		ps->off = m->postings_end;
		ps->len = (uint32_t) len;
		ps->count = u->n;
		m->postings_end += len;
		u->dirty = 0;
	}
	if (fsync(w->fdpost) < 0) {
		rc = cv_err_set(e, -errno, "%s: postings fsync failed", w->dir);
		goto out;
	}
	hfr_crash_point();
	/* compaction: when more than half the file is old records, rewrite it */
	if (m->postings_end > 2 * live_bytes + (1u << 20)) {
		char path[4200];
		uint32_t gen = m->postings_gen + 1;
		uint64_t off = 0;
		int fd;

		hfr_postings_path(w->dir, gen, path, sizeof(path));
		fd = cv_open_new(path, O_RDWR, 0644);
		if (fd < 0) {
			rc = cv_err_set(e, -errno, "%s: cannot create: %s", path, strerror(errno));
			goto out;
		}
		for (uint32_t p = 0; p < m->nposts && !rc; p++) {
			hfr_post *ps = &m->posts[p];

			if (!ps->alive)
				continue;
			if (ps->len > bcap) {
				uint8_t *b = realloc(buf, ps->len);

				if (!b) {
					rc = -ENOMEM;
					break;
				}
				buf = b;
				bcap = ps->len;
			}
			rc = cvu_pread_exact(w->fdpost, buf, ps->len, ps->off);
			if (!rc)
				rc = cvu_pwrite_full(fd, buf, ps->len, off);
			ps->off = off;
			off += ps->len;
		}
		if (!rc && fsync(fd) < 0)
			rc = -errno;
		if (rc) {
			close(fd);
			unlink(path);
			cv_err_set(e, rc, "%s: compaction failed: %s", path, strerror(-rc));
			goto out;
		}
		close(w->fdpost);
		w->fdpost = fd;
		m->postings_end = off;
		m->postings_gen = gen;
		w->st.compactions++;
		hfr_crash_point();
	}
	m->generation++;
	rc = hfr_meta_write(w->dir, m, e);
	if (rc)
		goto out;
	hfr_crash_point();
	w_remove_orphans(w);
out:
	free(buf);
	return rc;
}

int hfr_insert(const char *dir, const cv_dataset *data, uint32_t first_id, cv_err *e)
{
	hfr_writer w;
	hfr_meta *m = &w.m;
	int rc;

	rc = w_open(&w, dir, e);
	if (rc)
		goto out;
	if (data->d != m->d) {
		rc = cv_err_set(e, -EINVAL, "%s: data has %zu dimensions, the index %u", data->spec,
				data->d, m->d);
		goto out;
	}
	if ((uint64_t) first_id + data->n >= UINT32_MAX) {
		rc = cv_err_set(e, -EINVAL, "ids %u.. overflow 32 bits", first_id);
		goto out;
	}
	for (size_t i = 0; i < data->n; i++) {
		uint32_t id = first_id + (uint32_t) i;

		if (id < m->nids && m->ver[id]) {
			rc = cv_err_set(e, -EEXIST, "%s: id %u is already in the index (row %zu)",
					dir, id, i);
			goto out;
		}
	}
	/* grow the id space */
	if (first_id + data->n > m->nids) {
		uint32_t nn = first_id + (uint32_t) data->n;
		uint32_t *v = realloc(m->ver, sizeof(uint32_t) * nn);

		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
		memset(v + m->nids, 0, sizeof(uint32_t) * (nn - m->nids));
		m->ver = v;
		m->nids = nn;
	}
	{
		uint8_t *slot = calloc(1, m->vec_slot);
		float *xi = malloc(sizeof(float) * m->di);

		if (!slot || !xi) {
			free(slot);
			free(xi);
			rc = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < data->n && !rc; i++) {
			uint32_t id = first_id + (uint32_t) i;

			/* a slot no committed manifest references: safe to write in place */
			hfr_vec_pack(m, cv_row(data, i), slot);
			rc = cvu_pwrite_full(w.fdvec, slot, m->vec_slot, hfr_vec_off(m, id));
			if (rc) {
				cv_err_set(e, rc, "%s/%s: write failed", dir, HFR_VEC_NAME);
				break;
			}
			hfr_crash_point();
			m->ver[id] = 1;
			m->live++;
			hfr_to_internal(m, cv_row(data, i), xi);
			rc = w_place(&w, id, 1, xi);
			w.st.inserted++;
		}
		free(slot);
		free(xi);
		if (rc)
			goto out;
	}
	/* the vector file must cover whole 4 KiB blocks for aligned reads */
	{
		uint64_t need = hfr_vec_off(m, m->nids - 1) / HFR_BLOCK * HFR_BLOCK +
				hfr_vec_read_len(m);
		struct stat st;

		if (fstat(w.fdvec, &st) == 0 && (uint64_t) st.st_size < need &&
		    ftruncate(w.fdvec, (off_t) need) < 0) {
			rc = cv_err_set(e, -errno, "%s/%s: extend failed", dir, HFR_VEC_NAME);
			goto out;
		}
	}
	rc = w_rebalance(&w);
	if (rc) {
		cv_err_set(e, rc, "%s: rebalancing failed: %s", dir, strerror(-rc));
		goto out;
	}
	rc = w_commit(&w, e);
out:
	last_stats = w.st;
	w_close(&w);
	return rc;
}

int hfr_delete(const char *dir, const uint32_t *ids, size_t n, cv_err *e)
{
	hfr_writer w;
	hfr_meta *m = &w.m;
	int rc;

	rc = w_open(&w, dir, e);
	if (rc)
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint32_t id = ids[i];

		if (id >= m->nids || !m->ver[id] || (m->ver[id] & HFR_DELETED)) {
			rc = cv_err_set(e, -ENOENT, "%s: id %u is not in the index (item %zu)", dir,
					id, i);
			goto out;
		}
		m->ver[id] |= HFR_DELETED;
		m->live--;
		w.st.deleted++;
	}
	rc = w_rebalance(&w);
	if (rc) {
		cv_err_set(e, rc, "%s: rebalancing failed: %s", dir, strerror(-rc));
		goto out;
	}
	rc = w_commit(&w, e);
out:
	last_stats = w.st;
	w_close(&w);
	return rc;
}
