/*
 * groundtruth.c - exact k nearest neighbours, their cache, ivecs files
 * and recall as ann-benchmarks computes it.
 *
 * Blocking: workers claim blocks of QBLOCK queries; for each block the
 * base is walked in blocks of about 256 KiB (to stay in L2), and every
 * query of the block is compared with every row of the base block before
 * moving on, so a base block is read from memory once per query block.
 * Distances come from the active kernel, one pair at a time, so blocking
 * changes the speed and never the answer.
 *
 * Ties: a per-query max-heap of k (distance, id) pairs ordered by distance
 * then id; rows arrive in increasing id order and a row enters only if it
 * is strictly better than the worst kept, so among equal distances the
 * lower ids win. NaN distances (only possible from overflowing inputs)
 * sort as +Inf.
 *
 * Cache: DIR/gt-KEY.ivecs where KEY is SHA-256 over a version tag, both
 * datasets' content hashes, k and the metric. A cache file of the wrong
 * shape or with ids out of range is ignored and rewritten; failing to
 * write the cache is not an error (the answer is still returned).
 */
#include "data.h"
#include "util.h"
#include "kernels/kernels.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#define QBLOCK 8
#define BBLOCK_BYTES (256u * 1024)

typedef struct gt_pair {
	float d;
	int32_t id;
} gt_pair;

typedef struct gt_job {
	const cv_dataset *base, *queries;
	size_t k, bblock;
	cv_metric m;
	int32_t *ids;
	float *dists;
	size_t next;    /* next query block, claimed atomically */
	size_t done;    /* queries finished (progress) */
	uint64_t t0, last; /* progress: start, last line drawn (ns) */
	int rc;
} gt_job;

static int gt_progress; /* cv_groundtruth_progress */

CV_API void cv_groundtruth_progress(int on)
{
	__atomic_store_n(&gt_progress, on, __ATOMIC_RELAXED);
}

/* True if a is worse (farther, or as far with a higher id) than b. */
static inline int worse(gt_pair a, gt_pair b)
{
	return a.d > b.d || (a.d == b.d && a.id > b.id);
}

#define HEAP_PREFIX gtheap /* the worst of the k nearest so far on top */
#define HEAP_ELEM gt_pair
#define HEAP_ABOVE(x, y) worse(x, y)
#include "heap_template.h"

static int cmp_pair(const void *x, const void *y)
{
	const gt_pair *a = x, *b = y;

	return worse(*a, *b) ? 1 : worse(*b, *a) ? -1 : 0;
}

/* One worker of the team: claim query blocks until none are left. */
static void gt_worker(void *arg, unsigned w)
{
	gt_job *j = arg;
	size_t k = j->k, d = j->base->d, nb = j->base->n, nq = j->queries->n;
	gt_pair *heaps = malloc(QBLOCK * k * sizeof(gt_pair));
	float *dist = malloc(j->bblock * sizeof(float));
	size_t fill[QBLOCK];

	if (!heaps || !dist) {
		__atomic_store_n(&j->rc, -ENOMEM, __ATOMIC_RELAXED);
		goto out;
	}
	for (;;) {
		size_t q0 = __atomic_fetch_add(&j->next, QBLOCK, __ATOMIC_RELAXED), q1;

		if (q0 >= nq || __atomic_load_n(&j->rc, __ATOMIC_RELAXED))
			break;
		q1 = q0 + QBLOCK < nq ? q0 + QBLOCK : nq;
		memset(fill, 0, sizeof(fill));
		for (size_t b0 = 0; b0 < nb; b0 += j->bblock) {
			size_t bn = nb - b0 < j->bblock ? nb - b0 : j->bblock;

			for (size_t q = q0; q < q1; q++) {
				gt_pair *h = heaps + (q - q0) * k;
				size_t *f = &fill[q - q0];

				cvk_distance_rows(j->m, cv_row(j->queries, q), cv_row(j->base, b0), bn, d,
						  dist);
				for (size_t i = 0; i < bn; i++) {
					gt_pair p = {isnan(dist[i]) ? INFINITY : dist[i], (int32_t) (b0 + i)};

					if (*f < k)
						gtheap_push(h, f, p);
					else if (worse(h[0], p))
						gtheap_replace_top(h, k, p);
				}
			}
		}
		{
			size_t dn = __atomic_add_fetch(&j->done, q1 - q0, __ATOMIC_RELAXED);

			/* worker 0 draws, at most five times a second */
			if (w == 0 && __atomic_load_n(&gt_progress, __ATOMIC_RELAXED)) {
				uint64_t now = cv_progress_start();

				if (now - j->last > 200000000u && dn < nq) {
					j->last = now;
					cv_progress("computing", "ground truth", dn, nq, j->t0);
				}
			}
		}
		for (size_t q = q0; q < q1; q++) {
			gt_pair *h = heaps + (q - q0) * k;

			qsort(h, k, sizeof(gt_pair), cmp_pair);
			for (size_t i = 0; i < k; i++) {
				j->ids[q * k + i] = h[i].id;
				if (j->dists)
					j->dists[q * k + i] = h[i].d;
			}
		}
	}
out:
	free(heaps);
	free(dist);
}

/* Exact k nearest neighbours; 0, -EINVAL (shapes), -EOVERFLOW, -ENOMEM. */
CV_API int cv_groundtruth(const cv_dataset *base, const cv_dataset *queries, size_t k,
			  cv_metric m, int threads, int32_t *ids, float *dists)
{
	gt_job j = {.base = base, .queries = queries, .k = k, .m = m, .ids = ids, .dists = dists};
	size_t nblocks;
	unsigned t;

	if (!base || !queries || !ids || k == 0 || k > base->n || base->d != queries->d)
		return -EINVAL;
	if (base->n > INT32_MAX || k > (size_t) 1 << 20)
		return -EOVERFLOW;
	j.bblock = BBLOCK_BYTES / (base->d * sizeof(float));
	if (j.bblock < 16)
		j.bblock = 16;
	nblocks = (queries->n + QBLOCK - 1) / QBLOCK;
	t = cvu_threads(threads > 0 ? (unsigned) threads : 0);
	if (t > nblocks)
		t = (unsigned) nblocks;
	if (t > 256)
		t = 256;
	j.t0 = j.last = cv_progress_start();
	cvu_team(t, gt_worker, &j);
	if (__atomic_load_n(&gt_progress, __ATOMIC_RELAXED) && !j.rc)
		cv_progress("computing", "ground truth", queries->n, queries->n, j.t0);
	return j.rc;
}

void data_gt_key(const cv_dataset *base, const cv_dataset *queries, size_t k, cv_metric m,
		 char out[65])
{
	static const char hx[] = "0123456789abcdef";
	unsigned char buf[15 + 32 + 32 + 8 + 1], h[32];
	unsigned int len = 32;
	uint64_t kk = k;

	memcpy(buf, "coldstudy-gt-v1", 15);
	memcpy(buf + 15, base->sha256, 32);
	memcpy(buf + 47, queries->sha256, 32);
	for (int i = 0; i < 8; i++)
		buf[79 + i] = (unsigned char) (kk >> (8 * i));
	buf[87] = (unsigned char) m;
	EVP_Digest(buf, sizeof(buf), h, &len, EVP_sha256(), NULL);
	for (int i = 0; i < 32; i++) {
		out[2 * i] = hx[h[i] >> 4];
		out[2 * i + 1] = hx[h[i] & 15];
	}
	out[64] = 0;
}

/* mkdir -p path (mode 0755); 0 or -errno. */
static int mkdir_p(const char *path)
{
	char tmp[512];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* The cache directory: dir, else $COLDSTUDY_CACHE, else $HOME/.cache/coldstudy. */
static int cache_dir_of(const char *dir, char *out, size_t cap)
{
	const char *env = getenv("COLDSTUDY_CACHE"), *home = getenv("HOME");
	int w;

	if (dir && *dir)
		w = snprintf(out, cap, "%s", dir);
	else if (env && *env)
		w = snprintf(out, cap, "%s", env);
	else if (home && *home)
		w = snprintf(out, cap, "%s/.cache/coldstudy", home);
	else
		return -ENOENT;
	return w > 0 && (size_t) w < cap ? 0 : -ENAMETOOLONG;
}

/* Ground truth with distances, cached by content hashes, k and metric. */
CV_API int cv_groundtruth_cached2(const cv_dataset *base, const cv_dataset *queries, size_t k,
				  cv_metric m, int threads, const char *cache_dir, int32_t **ids,
				  float **dists, int *from_cache, cv_err *e)
{
	char dir[400], key[65], path[512];
	int32_t *got = NULL, *res = NULL;
	float *dv = NULL;
	size_t gnq = 0, gk = 0;
	int rc, hit = 0;

	*ids = NULL;
	if (dists)
		*dists = NULL;
	if (!base || !queries || k == 0 || k > base->n || base->d != queries->d)
		return cv_err_set(e, -EINVAL, "ground truth: k=%zu with %zu base rows, dimensions %zu and %zu",
				  k, base ? base->n : 0, base ? base->d : 0, queries ? queries->d : 0);
	if (queries->n > SIZE_MAX / sizeof(float) / k)
		return cv_err_set(e, -EOVERFLOW, "ground truth: %zu x %zu results overflow", queries->n, k);
	data_gt_key(base, queries, k, m, key);
	rc = cache_dir_of(cache_dir, dir, sizeof(dir));
	if (!rc)
		snprintf(path, sizeof(path), "%s/gt-%s.ivecs", dir, key);
	if (!rc && access(path, R_OK) == 0 && cv_ivecs_read(path, &got, &gnq, &gk, NULL) == 0 &&
	    gnq == queries->n && gk == k) {
		hit = 1;
		for (size_t i = 0; i < gnq * gk; i++)
			if (got[i] < 0 || (size_t) got[i] >= base->n)
				hit = 0;
	}
	if (hit) {
		res = got;
		got = NULL;
	} else {
		res = malloc(queries->n * k * sizeof(int32_t));
		rc = -ENOMEM;
		if (!res)
			goto fail;
		rc = cv_groundtruth(base, queries, k, m, threads, res, NULL);
		if (rc) {
			cv_err_set(e, rc, "ground truth: %s", strerror(-rc));
			goto fail;
		}
		if (cache_dir_of(cache_dir, dir, sizeof(dir)) == 0 && mkdir_p(dir) == 0)
			cv_ivecs_write(path, res, queries->n, k, NULL);
	}
	if (dists) {
		dv = malloc(queries->n * k * sizeof(float));
		rc = -ENOMEM;
		if (!dv)
			goto fail;
		for (size_t q = 0; q < queries->n; q++)
			for (size_t i = 0; i < k; i++)
				dv[q * k + i] = cv_distance(m, cv_row(queries, q),
							    cv_row(base, (size_t) res[q * k + i]), base->d);
		*dists = dv;
	}
	*ids = res;
	if (from_cache)
		*from_cache = hit;
	free(got);
	return 0;
fail:
	if (rc == -ENOMEM)
		cv_err_set(e, rc, "ground truth: out of memory");
	free(got);
	free(res);
	free(dv);
	return rc;
}

CV_API int cv_groundtruth_cached(const cv_dataset *base, const cv_dataset *queries, size_t k,
				 cv_metric m, int threads, const char *cache_dir, int32_t **ids,
				 cv_err *e)
{
	return cv_groundtruth_cached2(base, queries, k, m, threads, cache_dir, ids, NULL, NULL, e);
}

/* Write nq rows of k int32 ids as ivecs, atomically (temp file, fsync, rename). */
CV_API int cv_ivecs_write(const char *path, const int32_t *ids, size_t nq, size_t k, cv_err *e)
{
	char tmp[600];
	unsigned char *row = NULL;
	FILE *f = NULL;
	int rc;

	if (k == 0 || k > INT32_MAX)
		return cv_err_set(e, -EINVAL, "%s: ivecs rows need 1..%d values, not %zu", path, INT32_MAX, k);
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long) getpid()) >= (int) sizeof(tmp))
		return cv_err_set(e, -ENAMETOOLONG, "%s: path too long", path);
	row = malloc(4 + 4 * k);
	if (!row)
		return cv_err_set(e, -ENOMEM, "%s: out of memory", path);
	f = fopen(tmp, "wbx");
	if (!f) {
		rc = -errno;
		cv_err_set(e, rc, "%s: cannot create: %s", tmp, strerror(-rc));
		goto out;
	}
	for (size_t q = 0; q < nq; q++) {
		uint32_t v = (uint32_t) k;

		for (int b = 0; b < 4; b++)
			row[b] = (unsigned char) (v >> (8 * b));
		for (size_t i = 0; i < k; i++) {
			v = (uint32_t) ids[q * k + i];
			for (int b = 0; b < 4; b++)
				row[4 + 4 * i + b] = (unsigned char) (v >> (8 * b));
		}
		if (fwrite(row, 1, 4 + 4 * k, f) != 4 + 4 * k) {
			rc = cv_err_set(e, -EIO, "%s: write failed", tmp);
			goto out;
		}
	}
	if (fflush(f) || fsync(fileno(f))) {
		rc = -errno;
		cv_err_set(e, rc, "%s: %s", tmp, strerror(-rc));
		goto out;
	}
	rc = fclose(f);
	f = NULL;
	if (rc || rename(tmp, path)) {
		rc = -errno;
		cv_err_set(e, rc, "%s: %s", path, strerror(-rc));
		goto out;
	}
	rc = 0;
out:
	if (f)
		fclose(f);
	if (rc)
		unlink(tmp);
	free(row);
	return rc;
}

/* Read an ivecs file of rows of equal length (or hdf5:FILE's neighbors); ids new, caller frees. */
CV_API int cv_ivecs_read(const char *path, int32_t **ids, size_t *nq, size_t *k, cv_err *e)
{
	int32_t *out = NULL;
	size_t rows = 0, cap = 0, kk = 0;
	rd r;
	int rc;

	*ids = NULL;
	if (!strncmp(path, "hdf5:", 5))
		return data_hdf5_ids(path, ids, nq, k, e);
	rc = rd_open(&r, path, e);
	if (rc)
		return rc;
	for (;;) {
		unsigned char h[4];
		uint64_t at = r.off;
		size_t got;
		uint32_t v;

		rc = rd_read_some(&r, h, 4, &got, e);
		if (rc)
			goto out;
		if (got == 0)
			break;
		v = (uint32_t) h[0] | (uint32_t) h[1] << 8 | (uint32_t) h[2] << 16 | (uint32_t) h[3] << 24;
		if (got < 4 || v == 0 || v > (1u << 20) || (rows && v != kk)) {
			rc = cv_err_set(e, -EINVAL, "%s: %s %llu: row %zu: %s", path, rd_where(&r),
					(unsigned long long) at, rows,
					got < 4 ? "truncated row header"
					: rows && v != kk ? "row length differs from row 0" : "row length not in 1..1048576");
			goto out;
		}
		kk = v;
		if ((rows + 1) * kk > cap) {
			size_t ncap = cap ? cap * 2 : kk * 1024;
			int32_t *p;

			if (ncap > CV_DATA_MAX_VALUES) {
				rc = cv_err_set(e, -EOVERFLOW, "%s: more than %zu ids", path, (size_t) CV_DATA_MAX_VALUES);
				goto out;
			}
			p = realloc(out, ncap * sizeof(int32_t));
			rc = -ENOMEM;
			if (!p)
				goto out;
			out = p;
			cap = ncap;
		}
		rc = rd_read(&r, out + rows * kk, kk * 4, "an ivecs row", e);
		if (rc)
			goto out;
		/* ivecs is little-endian, as is every platform this builds for. */
		rows++;
	}
	if (rows == 0) {
		rc = cv_err_set(e, -EINVAL, "%s: %s 0: empty ivecs file", path, rd_where(&r));
		goto out;
	}
	*ids = out;
	out = NULL;
	*nq = rows;
	*k = kk;
	rc = 0;
out:
	if (rc == -ENOMEM)
		cv_err_set(e, rc, "%s: out of memory", path);
	free(out);
	rd_close(&r);
	return rc;
}

/*
 * recall@k as ann-benchmarks' knn metric: the first k distinct returned
 * ids each count if their true distance is within the k-th true distance
 * + 1e-3. For l2 the comparison is on the Euclidean (not squared)
 * distance, as ann-benchmarks' euclidean metric. Ids past the base and
 * repeated ids do not count. Returns count / k, or NaN on bad arguments
 * (any true id outside the base), never a number an average could take in.
 */
CV_API double cv_recall_at_k(const cv_dataset *base, const float *query, cv_metric m,
			     const int32_t *true_ids, size_t k, const uint32_t *got, size_t ngot)
{
	double thr, hits = 0;
	size_t use = ngot < k ? ngot : k;

	if (!base || !query || !true_ids || k == 0 || (ngot && !got))
		return NAN;
	for (size_t i = 0; i < k; i++)
		if (true_ids[i] < 0 || (size_t) true_ids[i] >= base->n)
			return NAN;
	thr = cv_distance(m, query, cv_row(base, (size_t) true_ids[k - 1]), base->d);
	if (m == CV_METRIC_L2)
		thr = sqrt(thr);
	thr += 1e-3;
	for (size_t i = 0; i < use; i++) {
		double dd;
		int dup = 0;

		if (got[i] >= base->n)
			continue;
		for (size_t j = 0; j < i && !dup; j++)
			dup = got[j] == got[i];
		if (dup)
			continue;
		dd = cv_distance(m, query, cv_row(base, got[i]), base->d);
		if (m == CV_METRIC_L2)
			dd = sqrt(dd);
		if (dd <= thr)
			hits++;
	}
	return hits / (double) k;
}
