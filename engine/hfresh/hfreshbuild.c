/*
 * hfreshbuild.c - building an HFresh index from a dataset.
 *
 * Phases (each multi-threaded where the work is):
 *
 *  1. Internal space. Vectors are mapped to the space where the metric is
 *     squared L2 (hfresh.h): normalised for cosine, one extra coordinate
 *     sqrt(M^2 - |x|^2) for inner product.
 *  2. Balanced hierarchical k-means (SPANN's hierarchical balanced
 *     clustering): a node with more than `leaf` vectors is split by
 *     k-means into k = min(16, ceil(n/leaf)) children, recursively, until
 *     every leaf holds at most `leaf` vectors. Balance comes from SPANN's
 *     penalty: a point's cost for cluster j is d(x, c_j) + lambda * |j|,
 *     with lambda scaled so a cluster twice the mean size costs one mean
 *     distance more. leaf = max_entries / 2 when replicas > 1, so primary
 *     members fill at most half of a posting and replicas the rest.
 *  3. Placement. Each vector's primary posting is its leaf; replicas are
 *     chosen by SPFresh's RNG rule over the HFR_CANDIDATES nearest
 *     centroids (hfr_rng_select), and accepted while the posting has room
 *     (max_entries), so no posting exceeds maxPostingSizeKB.
 *  4. Encoding. Each (vector, posting) pair becomes an entry: the 1-bit
 *     RaBitQ code of R(x - c) and its factors, or with code_bits > 1 its
 *     extended code and factors (rabitq.c).
 *  5. Files. vectors.dat (slots), postings.0.dat (one 4 KiB-aligned
 *     record per posting), then hfresh.meta, renamed into place last; the
 *     dispatcher writes KIND after that, so a directory is an index only
 *     once every byte is on disk.
 */
#include "hfresh.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

static uint64_t mix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- balanced k-means ---- */

typedef struct km_ctx {
	const float *x;
	const uint32_t *rows;
	uint32_t di, k;
	const float *cent;
	const double *pen;   /* per-cluster penalty lambda * size */
	uint32_t *assign;
	float *best;         /* plain distance to the chosen centroid */
} km_ctx;

/* Assign row i to the cluster of least penalised distance. */
static void km_assign_one(void *arg, size_t i)
{
	km_ctx *c = arg;
	const float *v = c->x + (size_t) c->rows[i] * c->di;
	double bc = INFINITY;
	uint32_t bj = 0;
	float bd = 0;

	for (uint32_t j = 0; j < c->k; j++) {
		float d = cv_l2sq(v, c->cent + (size_t) j * c->di, c->di);
		double cost = d + (c->pen ? c->pen[j] : 0.0);

		if (cost < bc) {
			bc = cost;
			bj = j;
			bd = d;
		}
	}
	c->assign[i] = bj;
	c->best[i] = bd;
}

/* Means of the assigned rows into cent; empty clusters keep their centroid. */
static void km_means(const float *x, const uint32_t *rows, size_t n, uint32_t di, uint32_t k,
		     const uint32_t *assign, float *cent, size_t *cnt)
{
	double *acc = calloc((size_t) k * di, sizeof(double));

	memset(cnt, 0, k * sizeof(size_t));
	if (!acc)
		return;
	for (size_t i = 0; i < n; i++) {
		const float *v = x + (size_t) rows[i] * di;
		double *a = acc + (size_t) assign[i] * di;

		for (uint32_t t = 0; t < di; t++)
			a[t] += v[t];
		cnt[assign[i]]++;
	}
	for (uint32_t j = 0; j < k; j++)
		if (cnt[j])
			for (uint32_t t = 0; t < di; t++)
				cent[(size_t) j * di + t] = (float) (acc[(size_t) j * di + t] / cnt[j]);
	free(acc);
}

typedef struct cap_ctx {
	const float *x;
	const uint32_t *rows;
	uint32_t di, k;
	const float *cent;
	float *dm;           /* n * k distances */
	float *regret;       /* second best - best */
} cap_ctx;

/* Distances of row i to every centroid, and its regret. */
static void cap_dist_one(void *arg, size_t i)
{
	cap_ctx *c = arg;
	const float *v = c->x + (size_t) c->rows[i] * c->di;
	float b1 = INFINITY, b2 = INFINITY;

	for (uint32_t j = 0; j < c->k; j++) {
		float d = cv_l2sq(v, c->cent + (size_t) j * c->di, c->di);

		c->dm[i * c->k + j] = d;
		if (d < b1) {
			b2 = b1;
			b1 = d;
		} else if (d < b2) {
			b2 = d;
		}
	}
	c->regret[i] = c->k > 1 ? b2 - b1 : 0;
}

static const float *regret_base;

static int regret_cmp(const void *a, const void *b)
{
	float x = regret_base[*(const uint32_t *) a], y = regret_base[*(const uint32_t *) b];

	return x > y ? -1 : x < y;
}

/*
 * Capacity-constrained assignment (balance): points in order of regret
 * (how much they lose by not getting their nearest centroid), each to the
 * nearest centroid with room; capacity ceil(1.2 n / k).
 */
static int assign_capacity(const float *x, const uint32_t *rows, size_t n, uint32_t di,
			   uint32_t k, unsigned threads, const float *cent, uint32_t *assign)
{
	cap_ctx c = {.x = x, .rows = rows, .di = di, .k = k, .cent = cent};
	uint32_t *order = malloc(n * sizeof(uint32_t));
	size_t *room = malloc(k * sizeof(size_t)), cap = (size_t) ceil(1.2 * (double) n / k);
	int rc = -ENOMEM;

	c.dm = malloc(sizeof(float) * n * k);
	c.regret = malloc(sizeof(float) * n);
	if (!order || !room || !c.dm || !c.regret)
		goto out;
	if (cap < 1)
		cap = 1;
	cvu_parallel_for(n, 64, threads, cap_dist_one, &c);
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t) i;
	regret_base = c.regret; /* callers are serialised by hfr_kmeans' lock */
	qsort(order, n, sizeof(uint32_t), regret_cmp);
	for (uint32_t j = 0; j < k; j++)
		room[j] = cap;
	for (size_t t = 0; t < n; t++) {
		size_t i = order[t];
		const float *dr = c.dm + i * k;
		uint32_t bj = UINT32_MAX;

		for (uint32_t j = 0; j < k; j++)
			if (room[j] && (bj == UINT32_MAX || dr[j] < dr[bj]))
				bj = j;
		assign[i] = bj;
		room[bj]--;
	}
	rc = 0;
out:
	free(order);
	free(room);
	free(c.dm);
	free(c.regret);
	return rc;
}

static pthread_mutex_t km_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Balanced k-means (k-means++ seeding and Lloyd iterations on a sample
 * of at most max(256 k, 4096) rows, then every row): assignments are
 * capacity-constrained (assign_capacity), so no cluster exceeds 1.2 n/k,
 * the balance SPANN's clustering aims at. cent gets k centroids (the
 * means of the final assignment), assign each row's cluster.
 */
int hfr_kmeans(const float *x, const uint32_t *rows, size_t n, uint32_t di, uint32_t k,
	       unsigned threads, uint64_t seed, float *cent, uint32_t *assign)
{
	size_t ns = n, *cnt = NULL;
	uint32_t *srows = NULL, *sassign = NULL;
	float *sbest = NULL;
	uint64_t s = seed;
	int rc = -ENOMEM;

	if (k < 1 || n < 1)
		return -EINVAL;
	if (ns > 256u * k)
		ns = 256u * k;
	if (ns < 4096 && n > ns)
		ns = n < 4096 ? n : 4096;
	pthread_mutex_lock(&km_lock);
	srows = malloc(ns * sizeof(*srows));
	sassign = malloc(ns * sizeof(*sassign));
	sbest = malloc(ns * sizeof(*sbest));
	cnt = malloc(k * sizeof(*cnt));
	if (!srows || !sassign || !sbest || !cnt)
		goto out;
	/* sample without replacement (partial Fisher-Yates over positions) */
	if (ns == n) {
		memcpy(srows, rows, n * sizeof(*rows));
	} else {
		uint32_t *pos = malloc(n * sizeof(*pos));

		if (!pos)
			goto out;
		for (size_t i = 0; i < n; i++)
			pos[i] = (uint32_t) i;
		for (size_t i = 0; i < ns; i++) {
			size_t j = i + mix64(&s) % (n - i);
			uint32_t t = pos[i];

			pos[i] = pos[j];
			pos[j] = t;
			srows[i] = rows[pos[i]];
		}
		free(pos);
	}
	/* k-means++ seeding on the sample */
	{
		size_t first = mix64(&s) % ns;

		memcpy(cent, x + (size_t) srows[first] * di, di * sizeof(float));
		for (size_t i = 0; i < ns; i++)
			sbest[i] = cv_l2sq(x + (size_t) srows[i] * di, cent, di);
		for (uint32_t j = 1; j < k; j++) {
			double tot = 0, r;
			size_t pick = 0;

			for (size_t i = 0; i < ns; i++)
				tot += sbest[i];
			r = (double) (mix64(&s) >> 11) / 9007199254740992.0 * tot;
			for (size_t i = 0; i < ns; i++) {
				r -= sbest[i];
				if (r <= 0) {
					pick = i;
					break;
				}
			}
			if (tot <= 0)
				pick = mix64(&s) % ns;
			memcpy(cent + (size_t) j * di, x + (size_t) srows[pick] * di,
			       di * sizeof(float));
			for (size_t i = 0; i < ns; i++) {
				float d = cv_l2sq(x + (size_t) srows[i] * di, cent + (size_t) j * di, di);

				if (d < sbest[i])
					sbest[i] = d;
			}
		}
	}
	/* Lloyd iterations on the sample: plain first, then balanced */
	for (int it = 0; it < 8; it++) {
		if (it < 3) {
			km_ctx c = {.x = x, .rows = srows, .di = di, .k = k, .cent = cent,
				    .pen = NULL, .assign = sassign, .best = sbest};

			cvu_parallel_for(ns, 64, threads, km_assign_one, &c);
		} else {
			rc = assign_capacity(x, srows, ns, di, k, threads, cent, sassign);
			if (rc)
				goto out;
			rc = -ENOMEM;
		}
		km_means(x, srows, ns, di, k, sassign, cent, cnt);
		/* an empty cluster restarts at a point of the largest one */
		for (uint32_t j = 0; j < k; j++) {
			uint32_t big = 0;

			if (cnt[j])
				continue;
			for (uint32_t t = 1; t < k; t++)
				if (cnt[t] > cnt[big])
					big = t;
			for (size_t i = 0, skip = mix64(&s) % (cnt[big] ? cnt[big] : 1); i < ns; i++)
				if (sassign[i] == big && skip-- == 0) {
					const float *v = x + (size_t) srows[i] * di;

					for (uint32_t t = 0; t < di; t++)
						cent[(size_t) j * di + t] =
							v[t] + 1e-3f * (cent[(size_t) big * di + t] - v[t]);
					cnt[j] = 1;
					break;
				}
		}
	}
	rc = assign_capacity(x, rows, n, di, k, threads, cent, assign);
	if (!rc)
		km_means(x, rows, n, di, k, assign, cent, cnt);
out:
	pthread_mutex_unlock(&km_lock);
	free(srows);
	free(sassign);
	free(sbest);
	free(cnt);
	return rc;
}

/* ---- RNG rule ---- */

size_t hfr_rng_select(const float *cent, uint32_t di, const float *ccmat, uint32_t nc,
		      const uint32_t *cand, const float *dist, size_t ncand, double factor,
		      size_t want, uint32_t *out)
{
	size_t got = 0;

	for (size_t j = 0; j < ncand && got < want; j++) {
		int ok = 1;

		for (size_t r = 0; r < got && ok; r++) {
			float dcr = ccmat ? ccmat[(size_t) cand[j] * nc + out[r]] :
					    cv_l2sq(cent + (size_t) cand[j] * di,
						    cent + (size_t) out[r] * di, di);

			/* SPFresh: skip c if factor * d(c, r) <= d(x, c) */
			if (factor * dcr <= dist[j])
				ok = 0;
		}
		if (ok)
			out[got++] = cand[j];
	}
	return got;
}

/* ---- build ---- */

typedef struct progress {
	int on;
	const char *phase;
	const char *drawn; /* the phase the line was last drawn for */
	uint64_t t0;       /* cv_progress_start() when that phase began */
} progress;

/* Draw "building hfresh PHASE [...] done/total, elapsed, left" on stderr when it is a terminal. */
static void prog(progress *p, size_t done, size_t total)
{
	char what[48];

	if (!p->on)
		return;
	if (p->drawn != p->phase) { /* each phase's estimate from its own start */
		p->drawn = p->phase;
		p->t0 = cv_progress_start();
	}
	snprintf(what, sizeof(what), "hfresh %s", p->phase);
	cv_progress_line(what, done, total, p->t0);
}

typedef struct bctx {
	const hfr_meta *m;
	const float *x;        /* internal vectors, n * di */
	size_t n;
	uint32_t nc;
	const float *ccmat;
	const uint32_t *leaf;  /* leaf posting of each vector */
	uint32_t *picks;       /* n * replicas RNG-ordered picks (UINT32_MAX: none) */
	/* encoding */
	const uint32_t *mstart, *members;
	const hfr_rot *rot;
	const float *crot;     /* nc * dp rotated centroids */
	int fd;
	int err;
} bctx;

/* Nearest HFR_CANDIDATES centroids of vector i, then the RNG walk from its leaf. */
static void place_one(void *arg, size_t i)
{
	bctx *b = arg;
	const hfr_meta *m = b->m;
	uint32_t C = b->nc < HFR_CANDIDATES ? b->nc : HFR_CANDIDATES, nc = 0;
	uint32_t cand[HFR_CANDIDATES + 1];
	float cd[HFR_CANDIDATES + 1];
	const float *v = b->x + i * m->di;
	uint32_t own = b->leaf[i];

	/* bounded insertion into the C best (C is small) */
	for (uint32_t c = 0; c < b->nc; c++) {
		float d;
		uint32_t j;

		if (c == own)
			continue;
		d = cv_l2sq(v, m->cent + (size_t) c * m->di, m->di);
		if (nc == C && d >= cd[nc - 1])
			continue;
		j = nc < C ? nc++ : nc - 1;
		while (j > 0 && cd[j - 1] > d) {
			cd[j] = cd[j - 1];
			cand[j] = cand[j - 1];
			j--;
		}
		cd[j] = d;
		cand[j] = c;
	}
	/* the leaf goes first: it is the primary posting */
	memmove(cand + 1, cand, nc * sizeof(*cand));
	memmove(cd + 1, cd, nc * sizeof(*cd));
	cand[0] = own;
	cd[0] = cv_l2sq(v, m->cent + (size_t) own * m->di, m->di);
	nc++;
	{
		uint32_t *out = b->picks + i * (HFR_MAX_REPLICAS + 2);
		size_t want = m->replicas + 2 < HFR_MAX_REPLICAS + 2 ? m->replicas + 2 :
								      HFR_MAX_REPLICAS + 2;
		size_t got = hfr_rng_select(m->cent, m->di, b->ccmat, b->nc, cand, cd, nc,
					    m->rng_factor, want, out);

		for (size_t j = got; j < HFR_MAX_REPLICAS + 2; j++)
			out[j] = UINT32_MAX;
	}
}

/* Encode and write posting p. */
static void encode_one(void *arg, size_t p)
{
	bctx *b = arg;
	const hfr_meta *m = b->m;
	const hfr_post *ps = &m->posts[p];
	uint8_t *rec = calloc(1, ps->len);
	float *xr = malloc(sizeof(float) * m->dp);
	uint64_t *code = malloc(m->dp / 8);
	uint8_t *ex = malloc(hfr_ex_code_bytes(m->dp, m->code_bits) + 1);
	uint32_t es = hfr_entry_size(m->dp, m->code_bits);
	hfr_fac f;
	int rc;

	if (!rec || !xr || !code || !ex) {
		b->err = -ENOMEM;
		goto out;
	}
	for (uint32_t j = 0; j < ps->count; j++) {
		uint32_t id = b->members[b->mstart[p] + j];
		const float *cr = b->crot + p * m->dp;

		hfr_rot_apply(b->rot, b->x + (size_t) id * m->di, xr);
		for (uint32_t t = 0; t < m->dp; t++)
			xr[t] -= cr[t];
		hfr_encode(xr, m->dp, m->code_bits, code, ex, &f);
		hfr_entry_put(hfr_entry_at(rec, es, j), m->dp, m->code_bits, id, 1, &f, code, ex);
	}
	hfr_post_seal(rec, (uint32_t) p, ps->count, m->dp, m->code_bits);
	rc = cvu_pwrite_full(b->fd, rec, ps->len, ps->off);
	if (rc)
		b->err = rc;
out:
	free(rec);
	free(xr);
	free(code);
	free(ex);
}

/* Write vectors.dat: one slot per id, slots never cross a 4 KiB block. */
static int write_vectors(const char *dir, const hfr_meta *m, const cv_dataset *data, cv_err *e)
{
	char path[4096];
	uint32_t bl = hfr_vec_read_len(m), vpb = m->vec_per_block;
	size_t nblocks = (data->n + vpb - 1) / vpb, chunk = 256;
	uint8_t *buf = malloc((size_t) bl * chunk);
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, HFR_VEC_NAME);
	if (!buf)
		return -ENOMEM;
	fd = cv_open_new(path, O_WRONLY, 0644);
	if (fd < 0) {
		free(buf);
		return cv_err_set(e, -errno, "%s: cannot create: %s", path, strerror(errno));
	}
	for (size_t b0 = 0; b0 < nblocks && !rc; b0 += chunk) {
		size_t nb = nblocks - b0 < chunk ? nblocks - b0 : chunk;

		memset(buf, 0, (size_t) bl * nb);
		for (size_t b = 0; b < nb; b++)
			for (uint32_t s = 0; s < vpb; s++) {
				size_t id = (b0 + b) * vpb + s;

				if (id >= data->n)
					break;
				hfr_vec_pack(m, cv_row(data, id), buf + b * bl + (size_t) s * m->vec_slot);
			}
		rc = cvu_pwrite_full(fd, buf, (size_t) bl * nb, (uint64_t) b0 * bl);
	}
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (rc)
		cv_err_set(e, rc, "%s: write failed: %s", path, strerror(-rc));
	close(fd);
	free(buf);
	return rc;
}

typedef struct node {
	uint32_t *rows;
	size_t n;
} node;

/* Split all rows into leaves of at most leaf rows (phase 2). */
static int hier_kmeans(const float *x, size_t n, uint32_t di, size_t leaf, unsigned threads,
		       uint64_t seed, progress *pg, node **leaves_out, size_t *nleaves_out)
{
	node *stack = NULL, *leaves = NULL;
	size_t ns = 0, scap = 0, nl = 0, lcap = 0, done = 0;
	float *cent = NULL;
	uint32_t *assign = NULL;
	int rc = -ENOMEM;

	stack = malloc(sizeof(*stack) * 16);
	if (!stack)
		return -ENOMEM;
	scap = 16;
	stack[0].n = n;
	stack[0].rows = malloc(n * sizeof(uint32_t));
	if (!stack[0].rows)
		goto out;
	for (size_t i = 0; i < n; i++)
		stack[0].rows[i] = (uint32_t) i;
	ns = 1;
	while (ns) {
		node nd = stack[--ns];
		uint32_t k;
		size_t *cnt;

		if (nd.n <= leaf) {
			if (nl == lcap) {
				node *t = realloc(leaves, sizeof(*leaves) * (lcap ? lcap * 2 : 256));

				if (!t) {
					free(nd.rows);
					goto out;
				}
				leaves = t;
				lcap = lcap ? lcap * 2 : 256;
			}
			leaves[nl++] = nd;
			done += nd.n;
			prog(pg, done, n);
			continue;
		}
		k = (uint32_t) ((nd.n + leaf - 1) / leaf);
		if (k > 16)
			k = 16;
		if (k < 2)
			k = 2;
		cent = malloc(sizeof(float) * k * di);
		assign = malloc(sizeof(uint32_t) * nd.n);
		cnt = calloc(k, sizeof(size_t));
		if (!cent || !assign || !cnt) {
			free(cnt);
			free(nd.rows);
			goto out;
		}
		rc = hfr_kmeans(x, nd.rows, nd.n, di, k, threads, seed ^ (nd.n * 0x9e37ull) ^ ns,
				cent, assign);
		if (rc) {
			free(cnt);
			free(nd.rows);
			goto out;
		}
		rc = -ENOMEM;
		for (size_t i = 0; i < nd.n; i++)
			cnt[assign[i]]++;
		{
			uint32_t nonempty = 0;

			for (uint32_t j = 0; j < k; j++)
				nonempty += cnt[j] > 0;
			if (nonempty < 2) { /* identical points: split by position */
				for (size_t i = 0; i < nd.n; i++)
					assign[i] = (uint32_t) (i * k / nd.n);
				memset(cnt, 0, k * sizeof(size_t));
				for (size_t i = 0; i < nd.n; i++)
					cnt[assign[i]]++;
			}
		}
		if (ns + k > scap) {
			node *t = realloc(stack, sizeof(*stack) * (ns + k) * 2);

			if (!t) {
				free(cnt);
				free(nd.rows);
				goto out;
			}
			stack = t;
			scap = (ns + k) * 2;
		}
		for (uint32_t j = 0; j < k; j++) {
			node ch = {.n = cnt[j], .rows = NULL};

			if (!cnt[j])
				continue;
			ch.rows = malloc(cnt[j] * sizeof(uint32_t));
			if (!ch.rows) {
				free(cnt);
				free(nd.rows);
				goto out;
			}
			ch.n = 0;
			for (size_t i = 0; i < nd.n; i++)
				if (assign[i] == j)
					ch.rows[ch.n++] = nd.rows[i];
			stack[ns++] = ch;
		}
		free(cnt);
		free(nd.rows);
		free(cent);
		free(assign);
		cent = NULL;
		assign = NULL;
	}
	*leaves_out = leaves;
	*nleaves_out = nl;
	leaves = NULL;
	nl = 0;
	rc = 0;
out:
	for (size_t i = 0; i < ns; i++)
		free(stack[i].rows);
	for (size_t i = 0; i < nl; i++)
		free(leaves[i].rows);
	free(leaves);
	free(stack);
	free(cent);
	free(assign);
	return rc;
}

/*
 * The options with the shape filled in from the dimension where they
 * leave it 0 (HFR_EX_MAX_DIM): code bits first, then the posting size and
 * replicas that go with them. Returns o itself when nothing is left open,
 * else *buf so filled.
 */
static const cv_build_opts *resolve_shape(const cv_build_opts *o, size_t d, cv_build_opts *buf)
{
	int ex;

	if (o->code_bits && o->max_posting_kb && o->replicas)
		return o;
	*buf = *o;
	if (!buf->code_bits)
		buf->code_bits = d <= HFR_EX_MAX_DIM ? HFR_EX_CODE_BITS : HFR_DEFAULT_CODE_BITS;
	ex = buf->code_bits > 1;
	if (!buf->max_posting_kb)
		buf->max_posting_kb = ex ? HFR_EX_MAX_POSTING_KB : HFR_DEFAULT_MAX_POSTING_KB;
	if (!buf->replicas)
		buf->replicas = ex ? HFR_EX_REPLICAS : HFR_DEFAULT_REPLICAS;
	return buf;
}

int hfr_build(const cv_dataset *data, const cv_build_opts *o, const char *dir, cv_err *e)
{
	cv_build_opts shaped;
	hfr_meta m;
	hfr_rot rot = {0};
	progress pg = {.on = o->progress && isatty(2)};
	unsigned threads = cvu_threads(o->threads);
	float *xi = NULL, *ccmat = NULL, *crot = NULL;
	const float *x;
	node *leaves = NULL;
	size_t nleaves = 0, leaf;
	uint32_t *leafof = NULL, *picks = NULL, *mstart = NULL, *members = NULL, *fill = NULL;
	char path[4096];
	int fd = -1, rc;

	memset(&m, 0, sizeof(m));
	if (!data || data->n == 0 || data->d == 0)
		return cv_err_set(e, -EINVAL, "hfresh: empty dataset");
	if (data->d > 16384)
		return cv_err_set(e, -EINVAL, "hfresh: %zu dimensions, at most 16384", data->d);
	if (data->n >= UINT32_MAX)
		return cv_err_set(e, -EINVAL, "hfresh: %zu vectors, ids are 32-bit", data->n);
	o = resolve_shape(o, data->d, &shaped);
	if (o->max_posting_kb < HFR_MIN_MAX_POSTING_KB || o->max_posting_kb > HFR_MAX_MAX_POSTING_KB)
		return cv_err_set(e, -EINVAL, "hfresh: --max-posting-kb %u out of range %u..%u",
				  o->max_posting_kb, HFR_MIN_MAX_POSTING_KB, HFR_MAX_MAX_POSTING_KB);
	if (o->replicas < HFR_MIN_REPLICAS || o->replicas > HFR_MAX_REPLICAS)
		return cv_err_set(e, -EINVAL, "hfresh: --replicas %u out of range %u..%u",
				  o->replicas, HFR_MIN_REPLICAS, HFR_MAX_REPLICAS);
	if (o->code_bits < HFR_MIN_CODE_BITS || o->code_bits > HFR_MAX_CODE_BITS)
		return cv_err_set(e, -EINVAL, "hfresh: --code-bits %u out of range %u..%u",
				  o->code_bits, HFR_MIN_CODE_BITS, HFR_MAX_CODE_BITS);
	if (!(o->rng_factor >= HFR_MIN_RNG_FACTOR && o->rng_factor <= HFR_MAX_RNG_FACTOR))
		return cv_err_set(e, -EINVAL, "hfresh: --rng-factor %g out of range %g..%g",
				  o->rng_factor, HFR_MIN_RNG_FACTOR, HFR_MAX_RNG_FACTOR);
	m.d = (uint32_t) data->d;
	m.metric = o->metric;
	m.max_posting_kb = o->max_posting_kb;
	m.replicas = o->replicas;
	m.code_bits = o->code_bits;
	m.rng_factor = o->rng_factor;
	m.rot_seed = o->seed ^ 0x48465245534821ull;
	m.nids = (uint32_t) data->n;
	m.live = (uint32_t) data->n;
	m.generation = 1;
	hfr_meta_sizes(&m);

	/* phase 1: the internal space */
	if (m.metric == CV_METRIC_IP) {
		double mx = 0;

		for (size_t i = 0; i < data->n; i++) {
			double nn = cv_dot(cv_row(data, i), cv_row(data, i), data->d);

			if (nn > mx)
				mx = nn;
		}
		m.ip_m = (float) sqrt(mx) * 1.0001f;
	}
	if (m.di != m.d || m.metric == CV_METRIC_COSINE) {
		xi = malloc(sizeof(float) * data->n * m.di);
		if (!xi) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < data->n; i++)
			hfr_to_internal(&m, cv_row(data, i), xi + i * m.di);
		x = xi;
	} else {
		x = data->data;
	}

	/* phase 2: balanced hierarchical k-means */
	leaf = m.replicas > 1 ? m.max_entries / 2 : m.max_entries;
	if (leaf < 2)
		leaf = 2;
	pg.phase = "kmeans";
	rc = hier_kmeans(x, data->n, m.di, leaf, threads, o->seed, &pg, &leaves, &nleaves);
	if (rc) {
		cv_err_set(e, rc, "hfresh: k-means failed");
		goto out;
	}
	m.nposts = (uint32_t) nleaves;
	m.posts = calloc(nleaves, sizeof(hfr_post));
	m.cent = calloc(nleaves * m.di, sizeof(float));
	m.ver = malloc(sizeof(uint32_t) * data->n);
	leafof = malloc(sizeof(uint32_t) * data->n);
	picks = malloc(sizeof(uint32_t) * data->n * (HFR_MAX_REPLICAS + 2));
	rc = -ENOMEM;
	if (!m.posts || !m.cent || !m.ver || !leafof || !picks)
		goto out;
	for (size_t i = 0; i < data->n; i++)
		m.ver[i] = 1;
	for (size_t p = 0; p < nleaves; p++) {
		double *acc = calloc(m.di, sizeof(double));

		if (!acc)
			goto out;
		for (size_t j = 0; j < leaves[p].n; j++) {
			const float *v = x + (size_t) leaves[p].rows[j] * m.di;

			leafof[leaves[p].rows[j]] = (uint32_t) p;
			for (uint32_t t = 0; t < m.di; t++)
				acc[t] += v[t];
		}
		for (uint32_t t = 0; t < m.di; t++)
			m.cent[p * m.di + t] = (float) (acc[t] / (double) leaves[p].n);
		free(acc);
	}

	/* phase 3: placement by the RNG rule */
	if (nleaves <= 4096) {
		ccmat = malloc(sizeof(float) * nleaves * nleaves);
		if (!ccmat)
			goto out;
		for (size_t a = 0; a < nleaves; a++)
			for (size_t b = 0; b <= a; b++)
				ccmat[a * nleaves + b] = ccmat[b * nleaves + a] =
					cv_l2sq(m.cent + a * m.di, m.cent + b * m.di, m.di);
	}
	pg.phase = "placement";
	for (size_t i0 = 0; i0 < data->n; i0 += 4096) {
		size_t nn = data->n - i0 < 4096 ? data->n - i0 : 4096;
		/* a window of rows: place_one indexes relative to it */
		bctx b = {.m = &m, .x = x + i0 * m.di, .n = nn, .nc = (uint32_t) nleaves,
			  .ccmat = ccmat, .leaf = leafof + i0,
			  .picks = picks + i0 * (HFR_MAX_REPLICAS + 2)};

		cvu_parallel_for(nn, 64, threads, place_one, &b);
		prog(&pg, i0 + nn, data->n);
	}
	/* primaries always, replicas while the posting has room */
	for (size_t i = 0; i < data->n; i++)
		m.posts[leafof[i]].count++;
	for (size_t i = 0; i < data->n; i++) {
		uint32_t *pk = picks + i * (HFR_MAX_REPLICAS + 2);
		uint32_t placed = 1;

		for (size_t j = 1; j < HFR_MAX_REPLICAS + 2 && pk[j] != UINT32_MAX; j++) {
			if (placed < m.replicas && m.posts[pk[j]].count < m.max_entries) {
				m.posts[pk[j]].count++;
				placed++;
			} else {
				pk[j] = UINT32_MAX - 1; /* not placed */
			}
		}
	}
	mstart = malloc(sizeof(uint32_t) * (nleaves + 1));
	fill = calloc(nleaves, sizeof(uint32_t));
	if (!mstart || !fill)
		goto out;
	mstart[0] = 0;
	for (size_t p = 0; p < nleaves; p++)
		mstart[p + 1] = mstart[p] + m.posts[p].count;
	members = malloc(sizeof(uint32_t) * ((size_t) mstart[nleaves] + 1));
	if (!members)
		goto out;
	for (size_t i = 0; i < data->n; i++) {
		uint32_t *pk = picks + i * (HFR_MAX_REPLICAS + 2);

		for (size_t j = 0; j < HFR_MAX_REPLICAS + 2 && pk[j] != UINT32_MAX; j++)
			if (pk[j] != UINT32_MAX - 1)
				members[mstart[pk[j]] + fill[pk[j]]++] = (uint32_t) i;
	}
	{
		uint64_t off = 0;

		for (size_t p = 0; p < nleaves; p++) {
			m.posts[p].off = off;
			m.posts[p].len = (uint32_t) hfr_post_disk_len(m.posts[p].count, m.dp, m.code_bits);
			m.posts[p].alive = 1;
			off += m.posts[p].len;
		}
		m.postings_end = off;
	}

	/* phase 4: encode, write postings */
	rc = hfr_rot_init(&rot, m.di, m.rot_seed);
	if (rc)
		goto out;
	rc = -ENOMEM;
	crot = malloc(sizeof(float) * nleaves * m.dp);
	if (!crot)
		goto out;
	for (size_t p = 0; p < nleaves; p++)
		hfr_rot_apply(&rot, m.cent + p * m.di, crot + p * m.dp);
	hfr_postings_path(dir, m.postings_gen, path, sizeof(path));
	fd = cv_open_new(path, O_WRONLY, 0644);
	if (fd < 0) {
		rc = cv_err_set(e, -errno, "%s: cannot create: %s", path, strerror(errno));
		goto out;
	}
	{
		bctx b = {.m = &m, .x = x, .n = data->n, .nc = (uint32_t) nleaves, .mstart = mstart,
			  .members = members, .rot = &rot, .crot = crot, .fd = fd};

		pg.phase = "encode";
		cvu_parallel_for(nleaves, 64, threads, encode_one, &b);
		prog(&pg, nleaves, nleaves);
		rc = b.err;
		if (!rc && fsync(fd) < 0)
			rc = -errno;
		if (rc) {
			cv_err_set(e, rc, "%s: write failed: %s", path, strerror(-rc));
			goto out;
		}
	}

	/* phase 5: vectors, then the manifest */
	rc = write_vectors(dir, &m, data, e);
	if (rc)
		goto out;
	rc = hfr_meta_write(dir, &m, e);
out:
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < nleaves; i++)
		free(leaves[i].rows);
	free(leaves);
	free(xi);
	free(ccmat);
	free(crot);
	free(leafof);
	free(picks);
	free(mstart);
	free(members);
	free(fill);
	hfr_rot_free(&rot);
	hfr_meta_free(&m);
	return rc;
}
