/*
 * test_hnsw.c - the in-memory HNSW's contract: parameters refused, the
 * graph's invariants (levels, link counts, links only to high enough
 * levels, the entry on the top level), labels and -EEXIST, mark_deleted
 * hiding labels, save/load giving identical answers (float32 and quant8),
 * a damaged file (bit flips, truncation, padding) giving -EBADMSG and
 * never a crash, search while another thread adds, and the "hnsw" kind
 * through cv_index (build, open, query, verify, a corrupt file refused).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cs.h"
#include "hnsw/hnsw.h"
#include "hnsw/hnsw_int.h"
#include "kernels/kernels.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/cv-hnsw-test-XXXXXX";

/* n rows of synth data, d dimensions (new; free with cv_dataset_free). */
static cv_dataset *synth(size_t n, size_t d, unsigned seed)
{
	cv_dataset *ds = NULL;
	cv_err e = {{0}};
	char spec[128];

	snprintf(spec, sizeof(spec), "synth:n=%zu,d=%zu,clusters=16,seed=%u", n, d, seed);
	assert_int_equal(cv_dataset_load(spec, &ds, &e), 0);
	return ds;
}

static hnsw *build(const cv_dataset *ds, cv_metric m, int q8, unsigned threads)
{
	hnsw_params p = {.m = 8, .ef_construction = 64, .metric = m, .quant8 = q8, .seed = 1};
	hnsw *h = NULL;

	assert_int_equal(hnsw_new(ds->d, &p, ds->n, &h), 0);
	assert_int_equal(hnsw_build(h, ds->data, ds->n, threads, NULL, NULL), 0);
	return h;
}

static void test_params(void **state)
{
	hnsw_params p = {.m = 16, .ef_construction = 100};
	hnsw *h = NULL;
	uint32_t lab[4];
	size_t n = 9;
	uint32_t node;
	int level;

	(void) state;
	assert_int_equal(hnsw_new(0, &p, 10, &h), -EINVAL);
	p.m = 1;
	assert_int_equal(hnsw_new(4, &p, 10, &h), -EINVAL);
	p.m = 101;
	assert_int_equal(hnsw_new(4, &p, 10, &h), -EINVAL);
	p.m = 4;
	p.metric = (cv_metric) 7;
	assert_int_equal(hnsw_new(4, &p, 10, &h), -EINVAL);
	p.metric = CV_METRIC_L2;
	assert_int_equal(hnsw_new(4, &p, 0, &h), 0);
	/* empty: nothing found, no entry */
	assert_int_equal(hnsw_search(h, (float[4]){0}, 4, 10, lab, NULL, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(hnsw_entry(h, &node, &level), -ENOENT);
	assert_int_equal(hnsw_add(h, (float[4]){1, 2, 3, 4}, 77), 0);
	assert_int_equal(hnsw_add(h, (float[4]){1, 2, 3, 5}, 77), -EEXIST);
	assert_int_equal(hnsw_add(h, (float[4]){9, 9, 9, 9}, 78), 0);
	assert_int_equal(hnsw_search(h, (float[4]){1, 2, 3, 4}, 4, 10, lab, NULL, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(lab[0], 77);
	assert_int_equal(lab[1], 78);
	assert_int_equal(hnsw_mark_deleted(h, 5), -ENOENT);
	assert_int_equal(hnsw_quant8_train(h, (float[4]){0}, 1), -EINVAL);
	hnsw_free(h);
	hnsw_free(NULL);
}

/* Levels, link counts, link targets and the entry point are as the paper and the paged writer need. */
static void check_invariants(const hnsw *h)
{
	uint32_t node, out[64];
	int top, maxl = 0;
	size_t n = hnsw_count(h);
	unsigned m = hnsw_get_params(h)->m;

	assert_int_equal(hnsw_entry(h, &node, &top), 0);
	assert_int_equal(hnsw_node_level(h, node), top);
	for (uint32_t i = 0; i < n; i++) {
		int lv = hnsw_node_level(h, i);

		if (lv > maxl)
			maxl = lv;
		for (int l = 0; l <= lv; l++) {
			size_t k = hnsw_node_neighbors(h, i, l, out, 64);

			assert_true(k <= (l ? m : 2 * m));
			if (n > 1 && l == 0)
				assert_true(k >= 1);
			for (size_t j = 0; j < k; j++) {
				assert_true(out[j] < n);
				assert_true(out[j] != i);
				assert_true(hnsw_node_level(h, out[j]) >= l);
			}
		}
		assert_int_equal(hnsw_node_neighbors(h, i, lv + 1, out, 64), 0);
	}
	assert_int_equal(maxl, top);
}

static void test_invariants(void **state)
{
	cv_dataset *ds = synth(3000, 16, 3);
	hnsw *h1 = build(ds, CV_METRIC_L2, 0, 1), *h2 = build(ds, CV_METRIC_COSINE, 0, 2);
	float buf[16];

	(void) state;
	check_invariants(h1);
	check_invariants(h2);
	assert_int_equal(hnsw_build_threads(h1), 1);
	assert_int_equal(hnsw_build_threads(h2), 2);
	/* one thread inserts in row order: node i is label i, its vector row i */
	for (uint32_t i = 0; i < 3000; i += 97) {
		assert_int_equal(hnsw_node_label(h1, i), i);
		assert_memory_equal(hnsw_node_vector(h1, i, buf), cv_row(ds, i), 16 * sizeof(float));
	}
	hnsw_free(h1);
	hnsw_free(h2);
	cv_dataset_free(ds);
}

static void test_delete(void **state)
{
	cv_dataset *ds = synth(2000, 16, 4);
	hnsw *h = build(ds, CV_METRIC_L2, 0, 2);

	(void) state;
	/* delete every even label: no even label comes back, and k are still found */
	for (uint32_t i = 0; i < 2000; i += 2)
		assert_int_equal(hnsw_mark_deleted(h, i), 0);
	assert_int_equal(hnsw_mark_deleted(h, 0), 0); /* twice is fine */
	for (size_t qi = 0; qi < 200; qi++) {
		uint32_t lab[10];
		size_t n;

		assert_int_equal(hnsw_search(h, cv_row(ds, qi * 10), 10, 40, lab, NULL, &n), 0);
		assert_int_equal(n, 10);
		for (size_t j = 0; j < n; j++)
			assert_true(lab[j] % 2 == 1);
		/* an odd query row finds itself first */
		if ((qi * 10) % 2 == 1)
			assert_int_equal(lab[0], qi * 10);
	}
	hnsw_free(h);
	cv_dataset_free(ds);
}

/* Search every 7th row with both graphs; results must be identical. */
static void same_answers(const hnsw *a, const hnsw *b, const cv_dataset *ds)
{
	for (size_t i = 0; i < ds->n; i += 7) {
		uint32_t la[10], lb[10];
		float da[10], db[10];
		size_t na, nb;

		assert_int_equal(hnsw_search(a, cv_row(ds, i), 10, 30, la, da, &na), 0);
		assert_int_equal(hnsw_search(b, cv_row(ds, i), 10, 30, lb, db, &nb), 0);
		assert_int_equal(na, nb);
		assert_memory_equal(la, lb, na * sizeof(*la));
		assert_memory_equal(da, db, na * sizeof(*da));
	}
}

static void test_roundtrip(void **state)
{
	cv_dataset *ds = synth(1500, 24, 5);
	char path[256];
	cv_err e = {{0}};

	(void) state;
	snprintf(path, sizeof(path), "%s/rt.bin", tmpdir);
	for (int q8 = 0; q8 <= 1; q8++) {
		for (int m = 0; m <= 2; m++) {
			hnsw *h = build(ds, (cv_metric) m, q8, 2), *g = NULL;

			assert_int_equal(hnsw_mark_deleted(h, 3), 0);
			assert_int_equal(hnsw_save(h, path), 0);
			assert_int_equal(hnsw_load(path, &g, &e), 0);
			assert_int_equal(hnsw_count(g), hnsw_count(h));
			assert_int_equal(hnsw_get_params(g)->metric, m);
			assert_int_equal(hnsw_get_params(g)->quant8, q8);
			assert_true(hnsw_node_deleted(g, 0) == hnsw_node_deleted(h, 0));
			same_answers(h, g, ds);
			check_invariants(g);
			/* adding after load works */
			assert_int_equal(hnsw_add(g, cv_row(ds, 0), 5000), 0);
			hnsw_free(h);
			hnsw_free(g);
		}
	}
	cv_dataset_free(ds);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *b;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	b = malloc((size_t) st.st_size);
	assert_non_null(b);
	assert_int_equal(read(fd, b, (size_t) st.st_size), st.st_size);
	close(fd);
	*len = (size_t) st.st_size;
	return b;
}

static void spit(const char *path, const unsigned char *b, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, len), (ssize_t) len);
	close(fd);
}

static void test_corrupt(void **state)
{
	cv_dataset *ds = synth(300, 8, 6);
	hnsw *h = build(ds, CV_METRIC_L2, 1, 1), *g = NULL;
	char path[256], bad[256];
	unsigned char *img, *cp;
	size_t len;
	cv_err e = {{0}};
	unsigned seed = 12345;

	(void) state;
	snprintf(path, sizeof(path), "%s/c.bin", tmpdir);
	snprintf(bad, sizeof(bad), "%s/bad.bin", tmpdir);
	assert_int_equal(hnsw_save(h, path), 0);
	img = slurp(path, &len);
	cp = malloc(len + 16);
	assert_non_null(cp);
	/* a flipped bit anywhere: every header byte, then random positions */
	for (size_t t = 0; t < 400; t++) {
		size_t pos = t < 96 ? t : (seed = seed * 1103515245u + 12345u) % len;

		memcpy(cp, img, len);
		cp[pos] ^= (unsigned char) (1u << (t % 8));
		spit(bad, cp, len);
		assert_int_equal(hnsw_load(bad, &g, &e), -EBADMSG);
		assert_null(g);
		assert_non_null(strstr(e.msg, bad));
	}
	/* truncated at every length class, and padded */
	for (size_t cut = 0; cut < len; cut += len / 50 + 1) {
		spit(bad, img, cut);
		assert_int_equal(hnsw_load(bad, &g, &e), -EBADMSG);
	}
	spit(bad, img, len - 1);
	assert_int_equal(hnsw_load(bad, &g, &e), -EBADMSG);
	memcpy(cp, img, len);
	memset(cp + len, 0, 16);
	spit(bad, cp, len + 16);
	assert_int_equal(hnsw_load(bad, &g, &e), -EBADMSG);
	/* the decoder with the checksum off still refuses mangled fields (a forged checksum) */
	for (size_t t = 0; t < 2000; t++) {
		size_t pos = (seed = seed * 1103515245u + 12345u) % (len - 32);

		memcpy(cp, img, len);
		cp[pos] = (unsigned char) (seed >> 16);
		if (hnsw_decode(cp, len, 0, &g, &e, "mem") == 0) {
			float q[8] = {0};
			uint32_t lab[5];
			size_t n;

			assert_int_equal(hnsw_search(g, q, 5, 20, lab, NULL, &n), 0);
			hnsw_free(g);
			g = NULL;
		}
	}
	assert_int_equal(hnsw_load("/nonexistent/x.bin", &g, &e), -ENOENT);
	/* the intact file still loads */
	assert_int_equal(hnsw_load(path, &g, &e), 0);
	hnsw_free(g);
	free(img);
	free(cp);
	hnsw_free(h);
	cv_dataset_free(ds);
}

typedef struct adder {
	hnsw *h;
	const cv_dataset *ds;
	size_t first, last;
	int done;
} adder;

static void *add_run(void *arg)
{
	adder *a = arg;

	for (size_t i = a->first; i < a->last; i++)
		if (hnsw_add(a->h, cv_row(a->ds, i), (uint32_t) i))
			break;
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_concurrent(void **state)
{
	cv_dataset *ds = synth(4000, 16, 7);
	hnsw_params p = {.m = 8, .ef_construction = 64, .metric = CV_METRIC_L2, .quant8 = 1,
			 .seed = 9};
	hnsw *h = NULL;
	adder a;
	pthread_t t;
	size_t searches = 0, self = 0;

	(void) state;
	/* small capacity, so the graph grows segments while being searched */
	assert_int_equal(hnsw_new(ds->d, &p, 16, &h), 0);
	assert_int_equal(hnsw_quant8_train(h, ds->data, ds->n), 0);
	for (size_t i = 0; i < 500; i++)
		assert_int_equal(hnsw_add(h, cv_row(ds, i), (uint32_t) i), 0);
	a = (adder){.h = h, .ds = ds, .first = 500, .last = 4000};
	assert_int_equal(pthread_create(&t, NULL, add_run, &a), 0);
	while (!__atomic_load_n(&a.done, __ATOMIC_ACQUIRE) || searches < 200) {
		size_t i = searches % 500, n;
		uint32_t lab[5];

		assert_int_equal(hnsw_search(h, cv_row(ds, i), 5, 32, lab, NULL, &n), 0);
		assert_int_equal(n, 5);
		for (size_t j = 0; j < n; j++)
			assert_true(lab[j] < 4000);
		searches++;
	}
	pthread_join(t, NULL);
	assert_int_equal(hnsw_count(h), 4000);
	for (size_t i = 0; i < 4000; i += 10) {
		uint32_t lab[1];
		size_t n;

		assert_int_equal(hnsw_search(h, cv_row(ds, i), 1, 40, lab, NULL, &n), 0);
		self += n == 1 && lab[0] == i;
	}
	/* synth rows are distinct: nearly every row finds itself */
	assert_true(self >= 390);
	check_invariants(h);
	hnsw_free(h);
	cv_dataset_free(ds);
}

static void test_index_kind(void **state)
{
	cv_dataset *ds = synth(1000, 12, 8);
	cv_build_opts bo;
	cv_query_opts qo;
	cv_query_stats st = {0};
	cv_index *ix = NULL;
	cv_err e = {{0}};
	char dir[256], file[300];
	uint32_t ids[10];
	float d[10];
	size_t n;
	int fd;

	(void) state;
	snprintf(dir, sizeof(dir), "%s/idx", tmpdir);
	cv_build_opts_default(&bo);
	bo.metric = CV_METRIC_COSINE;
	bo.threads = 2;
	assert_int_equal(cv_index_build("hnsw", ds, &bo, dir, &e), 0);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), 0);
	assert_string_equal(cv_index_kind(ix), "hnsw");
	assert_int_equal(cv_index_dim(ix), 12);
	assert_int_equal(cv_index_count(ix), 1000);
	assert_int_equal(cv_index_metric(ix), CV_METRIC_COSINE);
	cv_query_opts_default(&qo);
	assert_int_equal(cv_index_query(ix, NULL, cv_row(ds, 5), &qo, ids, d, &n, &st), 0);
	assert_int_equal(n, 10);
	assert_int_equal(ids[0], 5);
	assert_true(st.distances > 10);
	assert_int_equal(st.reads, 0);
	cv_index_close(ix);
	assert_int_equal(cv_index_verify(dir, &e), 0);
	/* one flipped byte: verify and open both say damaged */
	snprintf(file, sizeof(file), "%s/hnsw.bin", dir);
	fd = open(file, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "\xff", 1, 200), 1);
	close(fd);
	assert_int_equal(cv_index_verify(dir, &e), -EBADMSG);
	assert_int_equal(cv_index_open(dir, NULL, &ix, &e), -EBADMSG);
	cv_dataset_free(ds);
}

static int teardown(void **state)
{
	char cmd[128];

	(void) state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The bits of f. */
static uint32_t fbits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/*
 * The quant8 kernels: every level the CPU has returns the scalar level's
 * bits (one summation order), for the query and the node-node kernels, at
 * dimensions 1..200 and 784, with the codes as the last bytes of a page
 * followed by an unreadable one (so no level reads a code past the end).
 */
static void test_q8_levels_bit_equal(void **state)
{
	static const char *levels[] = {"avx2", "avx512"};
	hnsw_qdist_fn rl2, rip, l2, ip;
	hnsw_ndist_fn rnl2, rnip, nl2, nip;
	size_t pg = (size_t) sysconf(_SC_PAGESIZE), compared = 0, order_matters = 0;
	uint8_t *map = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *y = malloc(1024);
	float *a = malloc(1024 * sizeof(float)), *w = malloc(1024 * sizeof(float));
	float *lo = malloc(1024 * sizeof(float)), *sc = malloc(1024 * sizeof(float));
	struct hnsw *h = calloc(1, sizeof(*h));
	uint64_t r = 7;

	(void) state;
	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map + pg, pg, PROT_NONE), 0);
	assert_int_equal(hnsw_q8_kernels("scalar", &rl2, &rip, &rnl2, &rnip), 0);
	for (size_t d = 1; d <= 785; d += d < 200 ? 1 : 584) {
		uint8_t *c = map + pg - d;
		hnsw_query q = {.a = a, .w = w, .cst = 0.25f};
		float seq = 0;

		for (size_t i = 0; i < d; i++) {
			r = r * 6364136223846793005ull + 1442695040888963407ull;
			c[i] = (uint8_t) (r >> 56);
			y[i] = (uint8_t) (r >> 48);
			a[i] = (float) ((double) (r >> 40) / 16777216.0 * 300.0 - 20.0);
			w[i] = (float) ((double) ((r >> 20) & 0xFFFFF) / 1048576.0 * 1e-3);
			lo[i] = -0.5f + (float) (r & 0xFF) / 512.0f;
			sc[i] = (float) ((r >> 8) & 0xFF) / 4096.0f;
			seq += q.a[i] * (float) c[i];
		}
		h->dim = d;
		h->q_w = w;
		h->q_lo = lo;
		h->q_scale = sc;
		h->p.metric = CV_METRIC_IP;
		if (fbits(seq + q.cst) != fbits(rip(&q, c, d)))
			order_matters++;
		for (int l = 0; l < 2; l++) {
			if (hnsw_q8_kernels(levels[l], &l2, &ip, &nl2, &nip))
				continue;
			compared++;
			if (fbits(l2(&q, c, d)) != fbits(rl2(&q, c, d)) ||
			    fbits(ip(&q, c, d)) != fbits(rip(&q, c, d)) ||
			    fbits(nl2(h, c, y)) != fbits(rnl2(h, c, y)) ||
			    fbits(nip(h, c, y)) != fbits(rnip(h, c, y)))
				fail_msg("%s d=%zu: l2 %a/%a ip %a/%a nl2 %a/%a nip %a/%a", levels[l], d,
					 (double) l2(&q, c, d), (double) rl2(&q, c, d), (double) ip(&q, c, d),
					 (double) rip(&q, c, d), (double) nl2(h, c, y), (double) rnl2(h, c, y),
					 (double) nip(h, c, y), (double) rnip(h, c, y));
		}
	}
	/* the data is order-sensitive: a plain sequential sum differs from the reference */
	assert_true(order_matters > 50);
	munmap(map, 2 * pg);
	free(y);
	free(a);
	free(w);
	free(lo);
	free(sc);
	free(h);
	if (!compared)
		skip();
}

/*
 * The exact-byte kernels: every level the CPU has returns, bit for bit,
 * what the float32 kernel (engine/kernels, scalar reference) returns on
 * the bytes converted to floats, for the query (L2, IP with its constant)
 * and the node-node kernels, at dimensions 1..200 and 784, the bytes the
 * last of a page followed by an unreadable one.
 */
static void test_exact8_kernels(void **state)
{
	static const char *levels[] = {"scalar", "avx2", "avx512"};
	size_t pg = (size_t) sysconf(_SC_PAGESIZE), compared = 0;
	uint8_t *map = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *y = malloc(1024);
	float *a = malloc(1024 * sizeof(float)), *cf = malloc(1024 * sizeof(float));
	float *yf = malloc(1024 * sizeof(float));
	struct hnsw *h = calloc(1, sizeof(*h));
	uint64_t r = 11;

	(void) state;
	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map + pg, pg, PROT_NONE), 0);
	for (size_t d = 1; d <= 785; d += d < 200 ? 1 : 584) {
		uint8_t *c = map + pg - d;
		hnsw_query q = {.a = a, .cst = 0.0f};

		for (size_t i = 0; i < d; i++) {
			r = r * 6364136223846793005ull + 1442695040888963407ull;
			c[i] = (uint8_t) (r >> 56);
			y[i] = (uint8_t) (r >> 48);
			a[i] = (float) ((double) (r >> 20 & 0xFFFFF) / 1048576.0 * 300.0 - 20.0);
			cf[i] = (float) c[i];
			yf[i] = (float) y[i];
		}
		h->dim = d;
		h->p.metric = CV_METRIC_IP;
		for (int l = 0; l < 3; l++) {
			hnsw_qdist_fn l2, ip;
			hnsw_ndist_fn nl2, nip;
			float want_l2 = cvk_l2sq_scalar(a, cf, d), want_ip = 0.0f - cvk_dot_scalar(a, cf, d);
			float want_nl2 = cvk_l2sq_scalar(yf, cf, d);
			float want_nip = 0.0f - cvk_dot_scalar(yf, cf, d);

			if (hnsw_u8_kernels(levels[l], &l2, &ip, &nl2, &nip))
				continue;
			compared++;
			if (fbits(l2(&q, c, d)) != fbits(want_l2) || fbits(ip(&q, c, d)) != fbits(want_ip) ||
			    fbits(nl2(h, c, y)) != fbits(want_nl2) || fbits(nip(h, c, y)) != fbits(want_nip))
				fail_msg("%s d=%zu: l2 %a/%a ip %a/%a nl2 %a/%a nip %a/%a", levels[l], d,
					 (double) l2(&q, c, d), (double) want_l2, (double) ip(&q, c, d),
					 (double) want_ip, (double) nl2(h, c, y), (double) want_nl2,
					 (double) nip(h, c, y), (double) want_nip);
		}
	}
	assert_true(compared >= 201); /* the scalar level at least, every dimension */
	munmap(map, 2 * pg);
	free(y);
	free(a);
	free(cf);
	free(yf);
	free(h);
}

/* Which values a byte holds exactly: whole numbers 0..255, not -0, NaN or 255.5. */
static void test_exact8_fits(void **state)
{
	(void) state;
	assert_true(hnsw_fits_u8((float[4]){0.0f, 1.0f, 254.0f, 255.0f}, 4));
	assert_true(hnsw_fits_u8(NULL, 0));
	assert_false(hnsw_fits_u8((float[1]){-0.0f}, 1));
	assert_false(hnsw_fits_u8((float[1]){256.0f}, 1));
	assert_false(hnsw_fits_u8((float[1]){-1.0f}, 1));
	assert_false(hnsw_fits_u8((float[1]){0.5f}, 1));
	assert_false(hnsw_fits_u8((float[1]){254.99998f}, 1));
	assert_false(hnsw_fits_u8((float[1]){NAN}, 1));
	assert_false(hnsw_fits_u8((float[1]){INFINITY}, 1));
	assert_false(hnsw_fits_u8((float[3]){1.0f, 2.0f, 1e-40f}, 3)); /* a denormal */
}

/* n x d synth rows turned into whole numbers 0..255 (as image pixels). */
static cv_dataset *synth_bytes(size_t n, size_t d, unsigned seed)
{
	cv_dataset *ds = synth(n, d, seed);

	for (size_t i = 0; i < n * d; i++) {
		float v = nearbyintf(ds->data[i] * 40.0f + 128.0f);

		ds->data[i] = v <= 0 ? 0.0f : v > 255 ? 255.0f : v; /* never -0 */
	}
	return ds;
}

/* Every node's level and links, and a search's labels and distance bits, agree. */
static void assert_same_graph(const hnsw *a, const hnsw *b, const cv_dataset *qs)
{
	uint32_t la[64], lb[64], ra[20], rb[20];
	float da[20], db[20];
	size_t na, nb;

	assert_int_equal(hnsw_count(a), hnsw_count(b));
	for (uint32_t i = 0; i < hnsw_count(a); i++) {
		assert_int_equal(hnsw_node_level(a, i), hnsw_node_level(b, i));
		for (int l = 0; l <= hnsw_node_level(a, i); l++) {
			na = hnsw_node_neighbors(a, i, l, la, 64);
			nb = hnsw_node_neighbors(b, i, l, lb, 64);
			assert_int_equal(na, nb);
			assert_memory_equal(la, lb, na * sizeof(uint32_t));
		}
	}
	for (size_t i = 0; i < qs->n; i++) {
		for (unsigned ef = 10; ef <= 80; ef *= 8) {
			uint64_t nda = 0, ndb = 0;

			assert_int_equal(hnsw_search_n(a, cv_row(qs, i), 20, ef, ra, da, &na, &nda), 0);
			assert_int_equal(hnsw_search_n(b, cv_row(qs, i), 20, ef, rb, db, &nb, &ndb), 0);
			assert_int_equal(na, nb);
			/* a candidate the sketch rules out counts as scored: the float32 search's count */
			assert_int_equal(nda, ndb);
			assert_memory_equal(ra, rb, na * sizeof(uint32_t));
			assert_memory_equal(da, db, na * sizeof(float));
		}
	}
}

/*
 * Exact bytes are lossless: on whole-number data a graph built with the
 * default store holds bytes ("exact8") and one told HNSW_STORE_F32 holds
 * floats, and with one thread and one seed the two have the same links on
 * every layer, find the same labels at the same distance bits (queries
 * with fractions too), and save byte-identical files (the file keeps
 * float32). Loading either file gives bytes again, with the same answers.
 * L2 and IP; cosine and fractional data stay float32.
 */
static void test_exact8_graph(void **state)
{
	cv_dataset *ds = synth_bytes(2500, 40, 9), *qs = synth(60, 40, 10);
	cv_metric metrics[] = {CV_METRIC_L2, CV_METRIC_IP};

	(void) state;
	for (int mi = 0; mi < 2; mi++) {
		hnsw_params p = {.m = 8, .ef_construction = 64, .metric = metrics[mi], .seed = 3};
		hnsw *hb = NULL, *hf = NULL, *lb = NULL, *lf = NULL;
		char pb[4096], pf[4096];
		unsigned char *fb, *ff;
		size_t nfb, nff;
		cv_err e = {{0}};

		assert_int_equal(hnsw_new(ds->d, &p, ds->n, &hb), 0);
		assert_int_equal(hnsw_build(hb, ds->data, ds->n, 1, NULL, NULL), 0);
		p.store = HNSW_STORE_F32;
		assert_int_equal(hnsw_new(ds->d, &p, ds->n, &hf), 0);
		assert_int_equal(hnsw_build(hf, ds->data, ds->n, 1, NULL, NULL), 0);
		assert_string_equal(hnsw_storage(hb), "exact8");
		assert_string_equal(hnsw_storage(hf),
				    metrics[mi] == CV_METRIC_L2 ? "float32+sketch8" : "float32");
		assert_same_graph(hb, hf, qs);
		assert_same_graph(hb, hf, ds); /* stored rows as queries: distance 0 ties */

		snprintf(pb, sizeof(pb), "%s/exact8-%d.bin", tmpdir, mi);
		snprintf(pf, sizeof(pf), "%s/float32-%d.bin", tmpdir, mi);
		assert_int_equal(hnsw_save(hb, pb), 0);
		assert_int_equal(hnsw_save(hf, pf), 0);
		fb = slurp(pb, &nfb);
		ff = slurp(pf, &nff);
		assert_int_equal(nfb, nff);
		assert_memory_equal(fb, ff, nfb);
		assert_int_equal(hnsw_load(pb, &lb, &e), 0);
		assert_int_equal(hnsw_load(pf, &lf, &e), 0);
		assert_string_equal(hnsw_storage(lb), "exact8");
		assert_string_equal(hnsw_storage(lf), "exact8");
		assert_same_graph(lb, hf, qs);
		for (uint32_t i = 0; i < 2500; i += 101) {
			float buf[40];

			assert_memory_equal(hnsw_node_vector(lb, i, buf), cv_row(ds, hnsw_node_label(lb, i)),
					    sizeof(buf));
		}
		free(fb);
		free(ff);
		hnsw_free(hb);
		hnsw_free(hf);
		hnsw_free(lb);
		hnsw_free(lf);
	}
	/* cosine normalises, and a fraction anywhere keeps floats */
	{
		hnsw *hc = build(ds, CV_METRIC_COSINE, 0, 1), *hq = build(ds, CV_METRIC_L2, 1, 1), *hx;

		assert_string_equal(hnsw_storage(hc), "float32");
		assert_string_equal(hnsw_storage(hq), "quant8");
		ds->data[2499 * 40 + 39] += 0.5f;
		hx = build(ds, CV_METRIC_L2, 0, 2);
		assert_string_equal(hnsw_storage(hx), "float32+sketch8");
		hnsw_free(hc);
		hnsw_free(hq);
		hnsw_free(hx);
	}
	cv_dataset_free(ds);
	cv_dataset_free(qs);
}

/*
 * A byte graph refuses a vector it cannot hold exactly (-ERANGE) and is
 * unchanged: same count, the label still free, searches as before; a
 * whole-number vector is then taken under that label. Two threads build it
 * (each insert checks its vector under the allocation lock).
 */
static void test_exact8_add(void **state)
{
	cv_dataset *ds = synth_bytes(800, 12, 4);
	hnsw *h = build(ds, CV_METRIC_L2, 0, 2);
	float v[12], bad[12];
	uint32_t lab[5], lab2[5];
	float lab_d[5];
	size_t n, n2;

	(void) state;
	assert_string_equal(hnsw_storage(h), "exact8");
	check_invariants(h);
	memcpy(v, cv_row(ds, 5), sizeof(v));
	assert_int_equal(hnsw_search(h, v, 5, 40, lab, NULL, &n), 0);
	for (int k = 0; k < 4; k++) {
		memcpy(bad, v, sizeof(bad));
		bad[k * 3] = k == 0 ? 0.25f : k == 1 ? -0.0f : k == 2 ? 300.0f : NAN;
		assert_int_equal(hnsw_add(h, bad, 5000), -ERANGE);
		assert_int_equal(hnsw_count(h), 800);
	}
	assert_int_equal(hnsw_search(h, v, 5, 40, lab2, NULL, &n2), 0);
	assert_int_equal(n, n2);
	assert_memory_equal(lab, lab2, n * sizeof(uint32_t));
	v[0] = v[0] == 7.0f ? 8.0f : 7.0f;
	assert_int_equal(hnsw_add(h, v, 5000), 0);
	assert_int_equal(hnsw_count(h), 801);
	assert_int_equal(hnsw_search(h, v, 5, 40, lab, lab_d, &n), 0);
	assert_true(n >= 1 && lab_d[0] == 0.0f);
	{
		bool found = false;

		for (size_t j = 0; j < n; j++)
			found |= lab[j] == 5000;
		assert_true(found);
	}
	check_invariants(h);
	hnsw_free(h);
	cv_dataset_free(ds);
}

/* A graph of ds (1 thread, seed 3), with the sketch or without (COLDSTUDY_HNSW_SKETCH=0). */
static hnsw *build_sketch(const cv_dataset *ds, bool sketch)
{
	hnsw_params p = {.m = 8, .ef_construction = 64, .metric = CV_METRIC_L2, .seed = 3};
	hnsw *h = NULL;

	if (!sketch)
		setenv("COLDSTUDY_HNSW_SKETCH", "0", 1);
	assert_int_equal(hnsw_new(ds->d, &p, ds->n, &h), 0);
	unsetenv("COLDSTUDY_HNSW_SKETCH");
	assert_int_equal(hnsw_build(h, ds->data, ds->n, 1, NULL, NULL), 0);
	assert_int_equal(h->sk_on, sketch ? 1 : 0);
	assert_string_equal(hnsw_storage(h), sketch ? "float32+sketch8" : "float32");
	return h;
}

/*
 * The sketch's bound at every kernel level: for each (query, node) pair a
 * list worst lb just above the float32 distance d_f is never ruled out (a
 * skip there would change results), and at lb = 0.95 d_f most pairs are
 * (or the sketch would buy nothing); every level's sum is the same integer.
 * Queries include a far one, one with a huge coordinate and one with a
 * NaN, for which the sketch turns itself off.
 */
static void test_sketch_bound(void **state)
{
	cv_dataset *ds = synth(1500, 300, 21), *qs = synth(40, 300, 22);
	const char *levels[] = {"scalar", "avx2", "avx512"};
	hnsw *h = build_sketch(ds, true);
	hnsw_ctx *c = NULL;
	size_t pairs = 0, ruled = 0;

	(void) state;
	assert_int_equal(h->sk_bytes, 320); /* 300 rounded up: three kernel blocks, the last short */
	assert_int_equal(hnsw_ctx_get(h, &c), 0);
	for (size_t qi = 0; qi < qs->n + 3; qi++) {
		float qv[300];
		hnsw_query q;

		memcpy(qv, cv_row(qs, qi < qs->n ? qi : 0), sizeof(qv));
		if (qi == qs->n)
			for (int j = 0; j < 300; j++)
				qv[j] = qv[j] * 50 + 7;
		if (qi == qs->n + 1)
			qv[3] = NAN;
		if (qi == qs->n + 2)
			qv[3] = 3e20f; /* clamped to the codes' range: the bound still holds */
		hnsw_prepare_query(h, c, qv, &q);
		if (hnsw_sketch_kernel("avx512")) {
			/* the AVX-512 query codes are the portable loop's; sk_e all but equal */
			hnsw_query qv2 = q;
			int16_t port[320];
			double e_port;

			hnsw_sketch_prepare_at(h, c, &qv2, false);
			assert_true((qv2.sa == NULL) == (qi == qs->n + 1));
			if (qv2.sa)
				memcpy(port, qv2.sa, sizeof(port));
			e_port = qv2.sk_e;
			hnsw_sketch_prepare_at(h, c, &qv2, true);
			assert_true((qv2.sa == NULL) == (qi == qs->n + 1));
			if (qv2.sa) {
				assert_memory_equal(port, qv2.sa, sizeof(port));
				assert_true(fabs(qv2.sk_e - e_port) <= 1e-12 * e_port + 1e-300);
			}
		}
		hnsw_sketch_prepare(h, c, &q);
		if (qi == qs->n + 1) {
			assert_null(q.sa);
			continue;
		}
		assert_non_null(q.sa);
		for (int l = 0; l < 3; l++) {
			hnsw_sketch_fn k = hnsw_sketch_kernel(levels[l]);

			if (!k)
				continue;
			for (uint32_t i = 0; i < hnsw_count(h); i += 11) {
				const char *r = hnsw_rec(h, i);
				const uint8_t *cd = (const uint8_t *) r + h->off_sk;
				uint64_t sv = k(q.sa, cd, h->sk_bytes, UINT64_MAX);
				float d = h->qdist(&q, r, h->dim);

				/* integers: every level's sum is the scalar one's */
				assert_int_equal(sv, hnsw_sketch_kernel("scalar")(q.sa, cd, h->sk_bytes,
										  UINT64_MAX));
				/* stopped early: at or past the limit exactly when the sum is */
				for (uint64_t lim = sv / 4 + 1; lim < 2 * sv + 2; lim += sv / 3 + 1)
					assert_true((k(q.sa, cd, h->sk_bytes, lim) >= lim) == (sv >= lim));

				assert_true((double) sv < hnsw_sketch_threshold(h, &q, nextafterf(d, INFINITY)));
				if (qi >= qs->n)
					continue; /* far or clamped: sound, and weak on purpose */
				pairs++;
				ruled += (double) sv >= hnsw_sketch_threshold(h, &q, 0.95f * d);
			}
		}
	}
	print_message("sketch: %zu of %zu pairs ruled out at 0.95 of their distance\n", ruled, pairs);
	assert_true(ruled * 10 >= pairs * 9);
	hnsw_ctx_put(h, c);
	hnsw_free(h);
	cv_dataset_free(ds);
	cv_dataset_free(qs);
}

/*
 * The sketch changes no result: graphs with and without it have the same
 * links and find the same labels at the same distance bits, for queries
 * near, far and equal to stored rows; after a save and load (the sketch
 * is encoded again); and after adds outside the build's range, which
 * widen its bound (rmax grows) rather than break it.
 */
static void test_sketch_graph(void **state)
{
	cv_dataset *ds = synth(3000, 40, 31), *qs = synth(80, 40, 32);
	hnsw *hs = build_sketch(ds, true), *hf = build_sketch(ds, false), *ls = NULL;
	char path[4096];
	cv_err e = {{0}};
	uint64_t r0, r1;
	float v[40];

	(void) state;
	assert_same_graph(hs, hf, qs);
	assert_same_graph(hs, hf, ds);
	snprintf(path, sizeof(path), "%s/sketch.bin", tmpdir);
	assert_int_equal(hnsw_save(hs, path), 0);
	assert_int_equal(hnsw_load(path, &ls, &e), 0);
	assert_int_equal(ls->sk_on, 1);
	assert_same_graph(ls, hf, qs);
	r0 = __atomic_load_n(&hs->sk_rmax, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < 20; i++) {
		memcpy(v, cv_row(ds, i), sizeof(v));
		v[i % 40] = (i & 1 ? -1 : 1) * 1e3f;
		assert_int_equal(hnsw_add(hs, v, 10000 + i), 0);
		assert_int_equal(hnsw_add(hf, v, 10000 + i), 0);
	}
	r1 = __atomic_load_n(&hs->sk_rmax, __ATOMIC_RELAXED);
	assert_true(r1 > r0);
	assert_same_graph(hs, hf, qs);
	hnsw_free(hs);
	hnsw_free(hf);
	hnsw_free(ls);
	cv_dataset_free(ds);
	cv_dataset_free(qs);
}

/* /proc/vmstat's thp_fault_fallback: huge-page faults the kernel served with 4 KiB pages. */
static long thp_fallbacks(void)
{
	return cs_proc_field("/proc/vmstat", "thp_fault_fallback ");
}

/*
 * A graph's record segment of 2 MiB or more is 2 MiB-aligned and advised
 * for transparent huge pages: where THP is on ("always" or "madvise"),
 * /proc/self/smaps shows huge pages backing it once the build has written
 * it. Without the advice, under "madvise", it shows none. Where the kernel
 * tried and found no free huge page (thp_fault_fallback grew), it skips.
 */
static void test_huge_pages(void **state)
{
	long fb0 = thp_fallbacks();
	cv_dataset *ds = synth(20000, 128, 5);
	hnsw *h = build(ds, CV_METRIC_L2, 0, 2);
	uintptr_t a = (uintptr_t) hnsw_rec(h, 0), lo, hi;
	char line[512], thp[128] = "";
	long huge_kb = -1, fb1 = thp_fallbacks();
	bool in = false;
	FILE *f;

	(void) state;
	assert_int_equal(a % (2u << 20), 0);
	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (f) {
		if (!fgets(thp, sizeof(thp), f))
			thp[0] = '\0';
		thp[strcspn(thp, "\n")] = '\0';
		fclose(f);
	}
	if (!strstr(thp, "[always]") && !strstr(thp, "[madvise]")) {
		hnsw_free(h);
		cv_dataset_free(ds);
		skip(); /* THP off here: the advice is dropped, the pages stay 4 KiB */
	}
	f = fopen("/proc/self/smaps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = a >= lo && a < hi;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %ld kB", &huge_kb) == 1)
			break;
	}
	fclose(f);
	print_message("segment 0 at %#lx: AnonHugePages %ld kB (THP %s)\n", (unsigned long) a, huge_kb,
		      thp);
	hnsw_free(h);
	cv_dataset_free(ds);
	if (huge_kb < 2048 && fb0 >= 0 && fb1 > fb0)
		skip(); /* asked, but no huge page was free: the kernel fell back to 4 KiB */
	assert_true(huge_kb >= 2048);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params),    cmocka_unit_test(test_invariants),
		cmocka_unit_test(test_delete),    cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_corrupt),   cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_index_kind),
		cmocka_unit_test(test_q8_levels_bit_equal),
		cmocka_unit_test(test_exact8_kernels),
		cmocka_unit_test(test_exact8_fits),
		cmocka_unit_test(test_exact8_graph),
		cmocka_unit_test(test_exact8_add),
		cmocka_unit_test(test_huge_pages),
		cmocka_unit_test(test_sketch_bound),
		cmocka_unit_test(test_sketch_graph),
	};

	if (!mkdtemp(tmpdir))
		return 1;
	return cmocka_run_group_tests(tests, NULL, teardown);
}
