/*
 * reader.c - the loaders' shared plumbing: a counted reader over zlib
 * (gzip and plain files alike), the aligned growing buffer, the size and
 * finiteness checks, and the content hash.
 *
 * Offsets in messages are positions in what the format parser sees: the
 * file itself, or for gzip files the decompressed stream ("decompressed
 * byte N"), since that is where a row or header lives.
 */
#include "data.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

/* Open path for reading through zlib; -ENOENT / -errno with e naming it. */
int rd_open(rd *r, const char *path, cv_err *e)
{
	unsigned char magic[2] = {0, 0};
	struct stat st;
	int fd, rc;

	memset(r, 0, sizeof(*r));
	r->path = path;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		return cv_err_set(e, rc, "%s: cannot open: %s", path, strerror(-rc));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return cv_err_set(e, -EINVAL, "%s: not a regular file", path);
	}
	r->size = (uint64_t) st.st_size;
	if (cvu_pread_full(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b)
		r->gzipped = 1;
	r->gz = gzdopen(fd, "rb");
	if (!r->gz) {
		close(fd);
		return cv_err_set(e, -ENOMEM, "%s: cannot open through zlib", path);
	}
	gzbuffer(r->gz, 256u << 10);
	return 0;
}

/* Close the file; accepts a reader that was never opened. */
void rd_close(rd *r)
{
	if (r->gz)
		gzclose(r->gz);
	r->gz = NULL;
}

const char *rd_where(const rd *r)
{
	return r->gzipped ? "decompressed byte" : "byte";
}

/* Read up to n bytes; *got is less than n only at the end of the file. */
int rd_read_some(rd *r, void *buf, size_t n, size_t *got, cv_err *e)
{
	unsigned char *p = buf;
	size_t done = 0;

	while (done < n) {
		size_t want = n - done > (1u << 30) ? (1u << 30) : n - done;
		int k = gzread(r->gz, p + done, (unsigned) want);

		if (k < 0) {
			int zerr;
			const char *zmsg = gzerror(r->gz, &zerr);

			return cv_err_set(e, -EINVAL, "%s: %s %llu: corrupt gzip stream: %s", r->path,
					  rd_where(r), (unsigned long long) (r->off + done),
					  zmsg ? zmsg : "read error");
		}
		if (k == 0)
			break;
		done += (size_t) k;
	}
	/* zlib reports a gzip stream cut short only through gzerror. */
	if (done < n && r->gzipped) {
		int zerr = Z_OK;
		const char *zmsg = gzerror(r->gz, &zerr);

		if (zerr != Z_OK && zerr != Z_STREAM_END)
			return cv_err_set(e, -EINVAL, "%s: %s %llu: truncated or corrupt gzip stream: %s",
					  r->path, rd_where(r), (unsigned long long) (r->off + done),
					  zmsg ? zmsg : "read error");
	}
	r->off += done;
	*got = done;
	return 0;
}

/* Read exactly n bytes of what, or say where the file ends. */
int rd_read(rd *r, void *buf, size_t n, const char *what, cv_err *e)
{
	uint64_t at = r->off;
	size_t got;
	int rc = rd_read_some(r, buf, n, &got, e);

	if (rc)
		return rc;
	if (got < n)
		return cv_err_set(e, -EINVAL, "%s: %s %llu: truncated: %s needs %zu bytes, file ends after %zu",
				  r->path, rd_where(r), (unsigned long long) at, what, n, got);
	return 0;
}

/* Refuse bytes after the payload the header promised. */
int rd_expect_eof(rd *r, cv_err *e)
{
	unsigned char c;
	uint64_t at = r->off;
	size_t got;
	int rc = rd_read_some(r, &c, 1, &got, e);

	if (rc)
		return rc;
	if (got)
		return cv_err_set(e, -EINVAL, "%s: %s %llu: trailing bytes after the payload the header describes (dimension mismatch?)",
				  r->path, rd_where(r), (unsigned long long) at);
	return 0;
}

int dsbuf_reserve(dsbuf *b, size_t want)
{
	size_t cap = b->cap ? b->cap : 4096;
	float *p;

	if (want <= b->cap)
		return 0;
	if (want > CV_DATA_MAX_VALUES)
		return -EOVERFLOW;
	while (cap < want)
		cap = cap > CV_DATA_MAX_VALUES / 2 ? CV_DATA_MAX_VALUES : cap * 2;
	p = aligned_alloc(64, (cap * sizeof(float) + 63) & ~(size_t) 63);
	if (!p)
		return -ENOMEM;
	if (b->len)
		memcpy(p, b->data, b->len * sizeof(float));
	free(b->data);
	b->data = p;
	b->cap = cap;
	return 0;
}

int data_check_size(const char *path, uint64_t n, uint64_t d, cv_err *e)
{
	if (d > CV_DATA_MAX_DIM)
		return cv_err_set(e, -EOVERFLOW, "%s: dimension %llu exceeds the cap of %d", path,
				  (unsigned long long) d, CV_DATA_MAX_DIM);
	if (d && n > CV_DATA_MAX_VALUES / d)
		return cv_err_set(e, -EOVERFLOW, "%s: %llu x %llu values exceed the cap of %zu", path,
				  (unsigned long long) n, (unsigned long long) d,
				  (size_t) CV_DATA_MAX_VALUES);
	return 0;
}

int data_check_finite(const rd *r, const float *v, size_t count, uint64_t base, size_t stride,
		      cv_err *e)
{
	for (size_t i = 0; i < count; i++)
		if (!isfinite(v[i]))
			return cv_err_set(e, -EINVAL, "%s: %s %llu: value %s is not finite", r->path,
					  rd_where(r), (unsigned long long) (base + i * stride),
					  isnan(v[i]) ? "NaN" : "Inf");
	return 0;
}

void data_hash(size_t n, size_t d, const float *data, unsigned char out[32])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char hdr[16];
	uint64_t nn = n, dd = d;
	unsigned int len = 32;

	for (int i = 0; i < 8; i++) {
		hdr[i] = (unsigned char) (nn >> (8 * i));
		hdr[8 + i] = (unsigned char) (dd >> (8 * i));
	}
	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		memset(out, 0, 32);
		EVP_MD_CTX_free(ctx);
		return;
	}
	EVP_DigestUpdate(ctx, hdr, sizeof(hdr));
	/* float32 is stored little-endian on every platform this builds for. */
	EVP_DigestUpdate(ctx, data, n * d * sizeof(float));
	EVP_DigestFinal_ex(ctx, out, &len);
	EVP_MD_CTX_free(ctx);
}
