/*
 * hnsw_file.c - the graph's file format (version 1), save and load.
 *
 * All integers little-endian, no padding:
 *
 *   header (96 bytes)
 *     0  u32 magic 0x57534e48 ("HNSW")   4  u32 magic2 0x31564331
 *     8  u32 version (1)                 12 u32 header size (96)
 *     16 u32 dim    20 u32 m    24 u32 ef_construction    28 u32 metric
 *     32 u32 quant8 36 u32 bytes per node record (8 + 8m + vector bytes)
 *     40 u64 seed   48 u64 count          56 u32 entry node
 *     60 i32 top level (-1: empty)        64 u64 upper-layer words
 *     72 u32 deleted count  76 u32 quant8 trained  80 f32 q8_min  84 f32 q8_max
 *     88 u64 reserved (0)
 *   quant8 only: f32 lo[dim], f32 scale[dim]
 *   count node records, in node order:
 *     u32 label, u8 level, u8 deleted, u16 layer-0 count, u32 links[2m],
 *     the vector (float32[dim], or uint8[dim] codes)
 *   upper layers, for each node with level > 0 in node order:
 *     level x (u32 count, u32 links[m]), layer 1 first
 *   SHA-256 of everything above (32 bytes)
 *
 * Saving writes PATH.tmp, fsyncs and renames, so a crash leaves the old
 * file or the new one, never half of one. Loading checks the checksum
 * first (-EBADMSG: damaged), then every field and every link (a link at
 * layer l must name an existing node of level >= l), so even a file with
 * a forged checksum cannot make a later search read out of bounds.
 */
#include "hnsw_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HDR_SIZE 96u
#define SUM_SIZE 32u
#define MAX_FILE (64ull << 30)

/* A buffered writer that hashes what it writes. */
typedef struct writer {
	int fd;
	EVP_MD_CTX *md;
	unsigned char buf[1 << 16];
	size_t n;
	int rc;
} writer;

static void w_flush(writer *w)
{
	size_t off = 0;

	if (w->rc)
		return;
	while (off < w->n) {
		ssize_t r = write(w->fd, w->buf + off, w->n - off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			w->rc = -errno;
			return;
		}
		off += (size_t) r;
	}
	w->n = 0;
}

static void w_put(writer *w, const void *p, size_t len, bool hash)
{
	const unsigned char *s = p;

	if (hash && EVP_DigestUpdate(w->md, p, len) != 1 && !w->rc)
		w->rc = -EIO;
	while (len && !w->rc) {
		size_t k = sizeof(w->buf) - w->n;

		if (k > len)
			k = len;
		memcpy(w->buf + w->n, s, k);
		w->n += k;
		s += k;
		len -= k;
		if (w->n == sizeof(w->buf))
			w_flush(w);
	}
}

static void w_u32(writer *w, uint32_t v)
{
	w_put(w, &v, 4, true);
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Vector bytes as stored in the file (no record padding). */
static size_t file_vec_bytes(size_t dim, int quant8)
{
	return quant8 ? dim : dim * sizeof(float);
}

int hnsw_save(const hnsw *h, const char *path)
{
	const size_t vb = file_vec_bytes(h->dim, h->p.quant8);
	const uint32_t count = (uint32_t) hnsw_count(h);
	unsigned char hdr[HDR_SIZE] = {0}, sum[EVP_MAX_MD_SIZE];
	uint64_t e = __atomic_load_n(&h->entry, __ATOMIC_ACQUIRE), upper_words = 0;
	char tmp[4096];
	writer *w;
	float *vf = NULL;
	unsigned sumlen = 0;
	int rc;

	if ((size_t) snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	for (uint32_t i = 0; i < count; i++)
		upper_words += (uint64_t) hnsw_hdr_of(h, i)->level * h->upper_stride;
	put32(hdr + 0, HNSW_MAGIC);
	put32(hdr + 4, HNSW_FILE_MAGIC2);
	put32(hdr + 8, HNSW_VERSION);
	put32(hdr + 12, HDR_SIZE);
	put32(hdr + 16, (uint32_t) h->dim);
	put32(hdr + 20, h->m);
	put32(hdr + 24, h->p.ef_construction);
	put32(hdr + 28, (uint32_t) h->p.metric);
	put32(hdr + 32, (uint32_t) h->p.quant8);
	put32(hdr + 36, (uint32_t) (8 + 4 * h->m0 + vb));
	put64(hdr + 40, h->p.seed);
	put64(hdr + 48, count);
	put32(hdr + 56, e == UINT64_MAX ? 0 : (uint32_t) e);
	put32(hdr + 60, e == UINT64_MAX ? UINT32_MAX : (uint32_t) (e >> 32));
	put64(hdr + 64, upper_words);
	put32(hdr + 72, __atomic_load_n(&h->ndeleted, __ATOMIC_RELAXED));
	put32(hdr + 76, (uint32_t) h->q_trained);
	memcpy(hdr + 80, &h->p.q8_min, 4);
	memcpy(hdr + 84, &h->p.q8_max, 4);

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (h->vtype == HNSW_V_U8 && !(vf = malloc(h->dim * sizeof(float)))) {
		free(w);
		return -ENOMEM;
	}
	w->md = EVP_MD_CTX_new();
	if (!w->md || EVP_DigestInit_ex(w->md, EVP_sha256(), NULL) != 1) {
		rc = -ENOMEM;
		goto out;
	}
	w->fd = cv_open_new(tmp, O_WRONLY, 0644);
	if (w->fd < 0) {
		rc = -errno;
		goto out;
	}
	w_put(w, hdr, sizeof(hdr), true);
	if (h->p.quant8) {
		w_put(w, h->q_lo, h->dim * sizeof(float), true);
		w_put(w, h->q_scale, h->dim * sizeof(float), true);
	}
	for (uint32_t i = 0; i < count && !w->rc; i++) {
		const char *r = hnsw_rec(h, i);
		const hnsw_hdr *hd = hnsw_hdr_of(h, i);
		uint32_t links[2 * HNSW_MAX_M] = {0};
		unsigned char nh[8];
		uint32_t n = hd->nlink0 > h->m0 ? h->m0 : hd->nlink0;

		memcpy(links, r + h->off_links0, n * sizeof(uint32_t));
		put32(nh, hd->label);
		nh[4] = hd->level;
		nh[5] = hd->deleted;
		nh[6] = (unsigned char) (n & 0xff);
		nh[7] = (unsigned char) (n >> 8);
		w_put(w, nh, 8, true);
		w_put(w, links, h->m0 * sizeof(uint32_t), true);
		if (vf) { /* exact bytes: the file keeps float32 (hnsw.h) */
			hnsw_decode_vec(h, r, vf);
			w_put(w, vf, vb, true);
		} else {
			w_put(w, r, vb, true);
		}
	}
	for (uint32_t i = 0; i < count && !w->rc; i++) {
		const hnsw_hdr *hd = hnsw_hdr_of(h, i);

		for (int l = 1; l <= hd->level; l++) {
			const uint32_t *ul = hnsw_upper(h, i, l);
			uint32_t slots[HNSW_MAX_M] = {0};
			uint32_t n = ul[0] > h->m ? h->m : ul[0];

			memcpy(slots, ul + 1, n * sizeof(uint32_t));
			w_u32(w, n);
			w_put(w, slots, h->m * sizeof(uint32_t), true);
		}
	}
	if (!w->rc && EVP_DigestFinal_ex(w->md, sum, &sumlen) != 1)
		w->rc = -EIO;
	w_put(w, sum, SUM_SIZE, false);
	w_flush(w);
	rc = w->rc;
	if (!rc && fsync(w->fd) < 0)
		rc = -errno;
	if (close(w->fd) < 0 && !rc)
		rc = -errno;
	w->fd = -1;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
out:
	if (w->md)
		EVP_MD_CTX_free(w->md);
	free(w);
	free(vf);
	return rc;
}

#define BAD(...) cv_err_set(e, -EBADMSG, __VA_ARGS__)

/* Whether the dim little-endian float32 at p (any alignment) are all exact bytes. */
static bool file_fits_u8(const unsigned char *p, size_t dim)
{
	float v[256];

	for (size_t i = 0; i < dim; i += 256) {
		size_t n = dim - i < 256 ? dim - i : 256;

		memcpy(v, p + 4 * i, 4 * n);
		if (!hnsw_fits_u8(v, n))
			return false;
	}
	return true;
}

/* A record's vector from the file's float32 at p into dst, as the graph stores it. */
static void file_vec_in(const hnsw *h, const unsigned char *p, void *dst)
{
	if (h->vtype != HNSW_V_U8) {
		memcpy(dst, p, file_vec_bytes(h->dim, h->p.quant8));
		return;
	}
	for (size_t i = 0; i < h->dim; i++) {
		float x;

		memcpy(&x, p + 4 * i, 4);
		((uint8_t *) dst)[i] = (uint8_t) x;
	}
}

int hnsw_decode(const unsigned char *buf, size_t len, int check_sum, hnsw **out, cv_err *e,
		const char *name)
{
	hnsw_params p = {0};
	const unsigned char *b;
	uint32_t dim, m, m0, rec, count, entry, top, ndel, trained;
	uint64_t upper_words, need, seen_upper = 0;
	size_t vb, off;
	int maxlevel = -1, rc;
	bool narrow;
	hnsw *h = NULL;

	*out = NULL;
	if (len < HDR_SIZE + SUM_SIZE)
		return BAD("%s: truncated: %zu bytes, a graph file has at least %u", name, len,
			   HDR_SIZE + SUM_SIZE);
	if (check_sum) {
		unsigned char sum[EVP_MAX_MD_SIZE];
		unsigned sl = 0;

		if (EVP_Digest(buf, len - SUM_SIZE, sum, &sl, EVP_sha256(), NULL) != 1)
			return cv_err_set(e, -EIO, "%s: sha-256 failed", name);
		if (memcmp(sum, buf + len - SUM_SIZE, SUM_SIZE))
			return BAD("%s: checksum mismatch (sha-256 at byte %zu): damaged file", name,
				   len - SUM_SIZE);
	}
	if (get32(buf) != HNSW_MAGIC || get32(buf + 4) != HNSW_FILE_MAGIC2)
		return BAD("%s: byte 0: not an hnsw graph file (bad magic)", name);
	if (get32(buf + 8) != HNSW_VERSION)
		return BAD("%s: byte 8: format version %u, this build reads %u", name,
			   get32(buf + 8), HNSW_VERSION);
	if (get32(buf + 12) != HDR_SIZE)
		return BAD("%s: byte 12: header size %u, expected %u", name, get32(buf + 12),
			   HDR_SIZE);
	dim = get32(buf + 16);
	m = get32(buf + 20);
	p.m = m;
	p.ef_construction = get32(buf + 24);
	p.metric = (cv_metric) get32(buf + 28);
	p.quant8 = (int) get32(buf + 32);
	rec = get32(buf + 36);
	p.seed = get64(buf + 40);
	count = (uint32_t) get64(buf + 48);
	entry = get32(buf + 56);
	top = get32(buf + 60);
	upper_words = get64(buf + 64);
	ndel = get32(buf + 72);
	trained = get32(buf + 76);
	memcpy(&p.q8_min, buf + 80, 4);
	memcpy(&p.q8_max, buf + 84, 4);
	if (dim == 0 || dim > HNSW_MAX_DIM)
		return BAD("%s: byte 16: dimension %u out of range 1..%u", name, dim, HNSW_MAX_DIM);
	if (m < HNSW_MIN_M || m > HNSW_MAX_M)
		return BAD("%s: byte 20: m %u out of range %u..%u", name, m, HNSW_MIN_M, HNSW_MAX_M);
	if (p.ef_construction > HNSW_MAX_EFC)
		return BAD("%s: byte 24: ef_construction %u above %u", name, p.ef_construction,
			   HNSW_MAX_EFC);
	if ((unsigned) p.metric > CV_METRIC_COSINE)
		return BAD("%s: byte 28: unknown metric %u", name, (unsigned) p.metric);
	if ((unsigned) p.quant8 > 1 || trained > 1)
		return BAD("%s: byte 32: bad quant8 flags", name);
	m0 = 2 * m;
	vb = file_vec_bytes(dim, p.quant8);
	if (rec != 8 + 4 * m0 + vb)
		return BAD("%s: byte 36: record size %u, expected %zu", name, rec, 8 + 4 * m0 + vb);
	if (get64(buf + 48) > HNSW_MAX_NODES || ndel > count)
		return BAD("%s: byte 48: node count out of range", name);
	if (upper_words > MAX_FILE)
		return BAD("%s: byte 64: upper-layer size out of range", name);
	need = HDR_SIZE + (p.quant8 ? 8ull * dim : 0) + (uint64_t) count * rec + upper_words * 4 +
	       SUM_SIZE;
	if (need != len)
		return BAD("%s: size %zu bytes, the header implies %llu (truncated or padded)", name,
			   len, (unsigned long long) need);
	if (count == 0 ? top != UINT32_MAX : (entry >= count || top > HNSW_MAX_LEVEL))
		return BAD("%s: byte 56: bad entry point", name);

	/* exact bytes when every stored vector allows (hnsw.h); the vectors are checked below */
	narrow = count > 0 && hnsw_may_narrow(&p);
	for (uint32_t i = 0; narrow && i < count; i++)
		narrow = file_fits_u8(buf + HDR_SIZE + (size_t) i * rec + 8 + 4 * (size_t) m0, dim);
	rc = hnsw_new_as(dim, &p, count,
			 narrow ? HNSW_V_U8 : p.quant8 ? HNSW_V_Q8 : HNSW_V_F32, &h);
	if (rc)
		return cv_err_set(e, rc, "%s: cannot allocate a graph of %u nodes", name, count);
	b = buf + HDR_SIZE;
	if (p.quant8) {
		memcpy(h->q_lo, b, dim * sizeof(float));
		memcpy(h->q_scale, b + 4 * (size_t) dim, dim * sizeof(float));
		for (uint32_t j = 0; j < dim; j++) {
			if (!isfinite(h->q_lo[j]) || !isfinite(h->q_scale[j]) || h->q_scale[j] < 0) {
				rc = BAD("%s: byte %zu: bad quant8 range", name,
					 (size_t) (HDR_SIZE + 4 * j));
				goto fail;
			}
			h->q_w[j] = h->q_scale[j] * h->q_scale[j];
		}
		h->q_trained = (int) trained;
		b += 8 * (size_t) dim;
	}
	/* pass 1: headers, labels, vectors (links are checked once all levels are known) */
	for (uint32_t i = 0; i < count; i++) {
		const unsigned char *r = b + (size_t) i * rec;
		char *dst = hnsw_rec(h, i);
		hnsw_hdr *hd = hnsw_hdr_of(h, i);
		uint32_t *null = NULL;

		off = (size_t) (r - buf);
		hd->label = get32(r);
		hd->level = r[4];
		hd->deleted = r[5];
		hd->nlink0 = (uint32_t) r[6] | (uint32_t) r[7] << 8;
		hd->lock = 0;
		hd->pad = 0;
		memcpy(dst + h->off_upper, &null, sizeof(null));
		h->count = i + 1; /* hnsw_free walks the upper pointers of counted nodes */
		if (hd->level > HNSW_MAX_LEVEL || hd->deleted > 1 || hd->nlink0 > m0) {
			rc = BAD("%s: byte %zu: node %u: bad level, flag or link count", name, off, i);
			goto fail;
		}
		if (hnsw_lm_put(h, hd->label, i)) {
			rc = BAD("%s: byte %zu: node %u: duplicate label %u", name, off, i,
				 hd->label);
			goto fail;
		}
		memcpy(dst + h->off_links0, r + 8, 4 * (size_t) m0);
		file_vec_in(h, r + 8 + 4 * (size_t) m0, dst);
		if (hd->level > maxlevel)
			maxlevel = hd->level;
		if (hd->level) {
			uint32_t *up = calloc((size_t) hd->level * h->upper_stride, sizeof(uint32_t));

			if (!up) {
				rc = cv_err_set(e, -ENOMEM, "%s: out of memory", name);
				goto fail;
			}
			memcpy(dst + h->off_upper, &up, sizeof(up));
		}
		seen_upper += (uint64_t) hd->level * h->upper_stride;
	}
	if (seen_upper != upper_words) {
		rc = BAD("%s: byte 64: %llu upper-layer words, the nodes' levels need %llu", name,
			 (unsigned long long) upper_words, (unsigned long long) seen_upper);
		goto fail;
	}
	if (count && ((int) top != maxlevel || hnsw_hdr_of(h, entry)->level != top)) {
		rc = BAD("%s: byte 56: entry point is not on the top level", name);
		goto fail;
	}
	/* pass 2: every link names an existing node of a high enough level */
	for (uint32_t i = 0; i < count; i++) {
		const hnsw_hdr *hd = hnsw_hdr_of(h, i);
		const uint32_t *l0 = (const uint32_t *) (hnsw_rec(h, i) + h->off_links0);

		for (uint32_t j = 0; j < hd->nlink0; j++) {
			if (l0[j] >= count) {
				rc = BAD("%s: byte %zu: node %u: link to missing node %u", name,
					 (size_t) (b - buf) + (size_t) i * rec + 8 + 4 * j, i, l0[j]);
				goto fail;
			}
		}
	}
	b += (size_t) count * rec;
	for (uint32_t i = 0; i < count; i++) {
		const hnsw_hdr *hd = hnsw_hdr_of(h, i);

		for (int l = 1; l <= hd->level; l++) {
			uint32_t *ul = hnsw_upper(h, i, l);

			off = (size_t) (b - buf);
			memcpy(ul, b, 4 * h->upper_stride);
			b += 4 * h->upper_stride;
			if (ul[0] > m) {
				rc = BAD("%s: byte %zu: node %u layer %d: %u links, at most %u", name,
					 off, i, l, ul[0], m);
				goto fail;
			}
			for (uint32_t j = 0; j < ul[0]; j++) {
				if (ul[1 + j] >= count || hnsw_hdr_of(h, ul[1 + j])->level < l) {
					rc = BAD("%s: byte %zu: node %u layer %d: bad link %u", name,
						 off + 4 + 4 * j, i, l, ul[1 + j]);
					goto fail;
				}
			}
		}
	}
	h->ndeleted = ndel;
	h->entry = count ? ((uint64_t) top << 32) | entry : UINT64_MAX;
	rc = hnsw_sketch_init(h, NULL, 0); /* not in the file: encoded again from the vectors */
	if (rc) {
		cv_err_set(e, rc, "%s: out of memory", name);
		goto fail;
	}
	*out = h;
	return 0;
fail:
	hnsw_free(h);
	return rc;
}

int hnsw_load(const char *path, hnsw **out, cv_err *e)
{
	unsigned char *buf = NULL;
	struct stat st;
	size_t got = 0;
	int fd, rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return cv_err_set(e, -errno, "%s: cannot open: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = cv_err_set(e, -errno, "%s: cannot stat", path);
		goto out;
	}
	if ((uint64_t) st.st_size > MAX_FILE) {
		rc = BAD("%s: %lld bytes is too large for a graph file", path,
			 (long long) st.st_size);
		goto out;
	}
	buf = malloc(st.st_size ? (size_t) st.st_size : 1);
	if (!buf) {
		rc = cv_err_set(e, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	while (got < (size_t) st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t) st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? cv_err_set(e, -errno, "%s: read failed", path)
				   : BAD("%s: truncated while reading at byte %zu", path, got);
			goto out;
		}
		got += (size_t) r;
	}
	rc = hnsw_decode(buf, got, 1, out, e, path);
out:
	free(buf);
	close(fd);
	return rc;
}
