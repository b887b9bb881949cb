/*
 * formats.c - the file formats: TEXMEX fvecs / ivecs / bvecs, IDX and
 * NumPy .npy, each into a float32 row-major buffer.
 *
 * Every reader checks, in order: the magic or first row header, that the
 * declared sizes are sane (data_check_size), that each row or the payload
 * is complete (rd_read), that nothing follows it (rd_expect_eof), and that
 * every float is finite. TEXMEX files carry no row count, so rows are
 * streamed into a buffer that grows (sized up front from st_size for
 * plain files).
 */
#include "data.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t) p[3] | (uint32_t) p[2] << 8 | (uint32_t) p[1] << 16 | (uint32_t) p[0] << 24;
}

/* fvecs ('f'), ivecs ('i') or bvecs ('b'): rows of int32 d then d values. */
int data_load_vecs(const char *path, char kind, dsbuf *b, size_t *n, size_t *d, cv_err *e)
{
	size_t esz = kind == 'b' ? 1 : 4, dim = 0, rows = 0;
	unsigned char *tmp = NULL;
	rd r;
	int rc = rd_open(&r, path, e);

	if (rc)
		return rc;
	for (;;) {
		unsigned char h[4];
		uint64_t at = r.off;
		size_t got;
		uint32_t rd_dim;

		rc = rd_read_some(&r, h, 4, &got, e);
		if (rc)
			goto out;
		if (got == 0)
			break;
		if (got < 4) {
			rc = cv_err_set(e, -EINVAL, "%s: %s %llu: truncated: row %zu header needs 4 bytes, file ends after %zu",
					path, rd_where(&r), (unsigned long long) at, rows, got);
			goto out;
		}
		rd_dim = le32(h);
		if (rows == 0) {
			if (rd_dim == 0 || rd_dim > CV_DATA_MAX_DIM) {
				rc = cv_err_set(e, rd_dim ? -EOVERFLOW : -EINVAL,
						"%s: %s 0: row 0 declares dimension %lld (expected 1..%d; not a %cvecs file?)",
						path, rd_where(&r), (long long) (int32_t) rd_dim,
						CV_DATA_MAX_DIM, kind);
				goto out;
			}
			dim = rd_dim;
			tmp = malloc(dim * esz);
			rc = -ENOMEM;
			if (!tmp)
				goto out;
			if (!r.gzipped) {
				uint64_t est = r.size / (4 + dim * esz);

				rc = data_check_size(path, est, dim, e);
				if (rc)
					goto out;
				rc = dsbuf_reserve(b, est * dim);
				if (rc)
					goto out;
			}
		} else if (rd_dim != dim) {
			rc = cv_err_set(e, -EINVAL, "%s: %s %llu: row %zu declares dimension %lld, row 0 declared %zu",
					path, rd_where(&r), (unsigned long long) at, rows,
					(long long) (int32_t) rd_dim, dim);
			goto out;
		}
		rc = data_check_size(path, rows + 1, dim, e);
		if (rc)
			goto out;
		rc = dsbuf_reserve(b, (rows + 1) * dim);
		if (rc)
			goto out;
		{
			float *dst = b->data + rows * dim;
			uint64_t vat = r.off;
			char what[64];

			snprintf(what, sizeof(what), "row %zu", rows);
			if (kind == 'f') {
				rc = rd_read(&r, dst, dim * 4, what, e);
				if (!rc)
					rc = data_check_finite(&r, dst, dim, vat, 4, e);
			} else {
				rc = rd_read(&r, tmp, dim * esz, what, e);
				for (size_t j = 0; !rc && j < dim; j++)
					dst[j] = kind == 'b' ? (float) tmp[j] : (float) (int32_t) le32(tmp + 4 * j);
			}
			if (rc)
				goto out;
		}
		rows++;
		b->len = rows * dim;
	}
	if (rows == 0) {
		rc = cv_err_set(e, -EINVAL, "%s: %s 0: empty file, no rows", path, rd_where(&r));
		goto out;
	}
	*n = rows;
	*d = dim;
	rc = 0;
out:
	free(tmp);
	rd_close(&r);
	return rc;
}

/* Element types of a fixed-size payload. */
enum { EL_U8, EL_I8, EL_I16BE, EL_I32BE, EL_F32BE, EL_F64BE, EL_F32LE };

/* Convert one element of type t at p to float. */
static float el_value(int t, const unsigned char *p)
{
	switch (t) {
	case EL_U8: return (float) p[0];
	case EL_I8: return (float) (int8_t) p[0];
	case EL_I16BE: return (float) (int16_t) (uint16_t) (p[0] << 8 | p[1]);
	case EL_I32BE: return (float) (int32_t) be32(p);
	case EL_F32BE:
	case EL_F32LE: {
		uint32_t u = t == EL_F32BE ? be32(p) : le32(p);
		float f;

		memcpy(&f, &u, 4);
		return f;
	}
	default: {
		uint64_t u = (uint64_t) be32(p) << 32 | be32(p + 4);
		double x;

		memcpy(&x, &u, 8);
		return (float) x;
	}
	}
}

/*
 * Read total elements of type t (esz bytes each) into b, converting to
 * float and, for float types, refusing NaN/Inf. A plain file shorter than
 * the payload is refused before anything is allocated; otherwise the
 * buffer grows as data arrives, so a small file that declares a huge
 * payload costs no more memory than its real size.
 */
static int read_payload(rd *r, dsbuf *b, size_t total, size_t esz, int t, const char *what, cv_err *e)
{
	unsigned char *chunk = NULL;
	size_t done = 0;
	int rc;

	if (!r->gzipped && r->off + (uint64_t) total * esz > r->size)
		return cv_err_set(e, -EINVAL, "%s: %s %llu: truncated: %s needs %llu bytes, file ends after %llu",
				  r->path, rd_where(r), (unsigned long long) r->off, what,
				  (unsigned long long) total * esz, (unsigned long long) (r->size - r->off));
	chunk = malloc(65536 * esz);
	if (!chunk)
		return -ENOMEM;
	while (done < total) {
		size_t m = total - done > 65536 ? 65536 : total - done;
		uint64_t at = r->off;

		rc = dsbuf_reserve(b, done + m);
		if (rc)
			goto out;
		rc = rd_read(r, chunk, m * esz, what, e);
		if (rc)
			goto out;
		for (size_t j = 0; j < m; j++)
			b->data[done + j] = el_value(t, chunk + j * esz);
		if (t == EL_F32BE || t == EL_F32LE || t == EL_F64BE) {
			rc = data_check_finite(r, b->data + done, m, at, esz, e);
			if (rc)
				goto out;
		}
		done += m;
		b->len = done;
	}
	rc = 0;
out:
	free(chunk);
	return rc;
}

/* IDX (MNIST's format): 0, 0, type, ndims, ndims big-endian u32 sizes, data. */
int data_load_idx(const char *path, dsbuf *b, size_t *n, size_t *d, cv_err *e)
{
	unsigned char h[4], dims[4 * 8];
	size_t esz, total;
	uint64_t nn, dd = 1;
	rd r;
	int rc = rd_open(&r, path, e);

	if (rc)
		return rc;
	rc = rd_read(&r, h, 4, "the IDX magic", e);
	if (rc)
		goto out;
	switch (h[2]) {
	case 0x08: case 0x09: esz = 1; break;
	case 0x0B: esz = 2; break;
	case 0x0C: case 0x0D: esz = 4; break;
	case 0x0E: esz = 8; break;
	default: esz = 0;
	}
	if (h[0] || h[1] || !esz || h[3] < 1 || h[3] > 8) {
		rc = cv_err_set(e, -EINVAL, "%s: %s 0: wrong magic %02x %02x %02x %02x (expected 00 00 TYPE NDIMS, an IDX file)",
				path, rd_where(&r), h[0], h[1], h[2], h[3]);
		goto out;
	}
	rc = rd_read(&r, dims, 4u * h[3], "the IDX dimensions", e);
	if (rc)
		goto out;
	nn = be32(dims);
	for (unsigned i = 1; i < h[3]; i++) {
		uint64_t v = be32(dims + 4 * i);

		dd *= v;
		if (v == 0 || dd > CV_DATA_MAX_DIM) {
			rc = cv_err_set(e, v ? -EOVERFLOW : -EINVAL, "%s: %s %u: dimension %u is %llu (a row must have 1..%d values)",
					path, rd_where(&r), 4 + 4 * i, i, (unsigned long long) v, CV_DATA_MAX_DIM);
			goto out;
		}
	}
	if (nn == 0) {
		rc = cv_err_set(e, -EINVAL, "%s: %s 4: zero rows", path, rd_where(&r));
		goto out;
	}
	rc = data_check_size(path, nn, dd, e);
	if (rc)
		goto out;
	total = (size_t) (nn * dd);
	{
		static const int types[] = {[0x08] = EL_U8, [0x09] = EL_I8, [0x0B] = EL_I16BE,
					    [0x0C] = EL_I32BE, [0x0D] = EL_F32BE, [0x0E] = EL_F64BE};

		rc = read_payload(&r, b, total, esz, types[h[2]], "the IDX data", e);
		if (rc)
			goto out;
	}
	b->len = total;
	rc = rd_expect_eof(&r, e);
	if (rc)
		goto out;
	*n = (size_t) nn;
	*d = (size_t) dd;
out:
	rd_close(&r);
	return rc;
}

/* Find 'key' (single or double quotes) in the npy header dict; the value after its colon. */
static const char *npy_value(const char *hdr, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = hdr; (p = strstr(p, key)); p += kl) {
		if (p > hdr && (p[-1] == '\'' || p[-1] == '"') && p[kl] == p[-1]) {
			const char *q = p + kl + 1;

			while (*q == ' ')
				q++;
			if (*q != ':')
				continue;
			q++;
			while (*q == ' ')
				q++;
			return q;
		}
	}
	return NULL;
}

/* NumPy .npy, versions 1-3: magic, version, header length, a dict, data. */
int data_load_npy(const char *path, dsbuf *b, size_t *n, size_t *d, cv_err *e)
{
	unsigned char pre[10];
	char *hdr = NULL, descr[16];
	const char *v;
	size_t hlen, hoff, total, dims[8], nd = 0;
	uint64_t nn = 1, dd = 1;
	int is_f4;
	rd r;
	int rc = rd_open(&r, path, e);

	if (rc)
		return rc;
	rc = rd_read(&r, pre, 8, "the npy magic", e);
	if (rc)
		goto out;
	if (memcmp(pre, "\x93NUMPY", 6) || pre[6] < 1 || pre[6] > 3) {
		rc = cv_err_set(e, -EINVAL, "%s: %s 0: wrong magic (expected \\x93NUMPY and version 1-3, an npy file)",
				path, rd_where(&r));
		goto out;
	}
	if (pre[6] == 1) {
		rc = rd_read(&r, pre + 8, 2, "the npy header length", e);
		hlen = (size_t) pre[8] | (size_t) pre[9] << 8;
		hoff = 10;
	} else {
		unsigned char l[4];

		rc = rd_read(&r, l, 4, "the npy header length", e);
		hlen = le32(l);
		hoff = 12;
	}
	if (rc)
		goto out;
	if (hlen > 1u << 16) {
		rc = cv_err_set(e, -EOVERFLOW, "%s: %s 8: header length %zu exceeds 65536", path,
				rd_where(&r), hlen);
		goto out;
	}
	hdr = malloc(hlen + 1);
	rc = -ENOMEM;
	if (!hdr)
		goto out;
	rc = rd_read(&r, hdr, hlen, "the npy header", e);
	if (rc)
		goto out;
	hdr[hlen] = 0;
	if (strlen(hdr) != hlen) {
		rc = cv_err_set(e, -EINVAL, "%s: %s %zu: NUL byte in the npy header", path, rd_where(&r),
				hoff + strlen(hdr));
		goto out;
	}
	v = npy_value(hdr, "descr");
	if (!v || (*v != '\'' && *v != '"') || !strchr(v + 1, *v) ||
	    (size_t) (strchr(v + 1, *v) - v - 1) >= sizeof(descr)) {
		rc = cv_err_set(e, -EINVAL, "%s: %s %zu: npy header has no 'descr' string", path,
				rd_where(&r), hoff);
		goto out;
	}
	memcpy(descr, v + 1, (size_t) (strchr(v + 1, *v) - v - 1));
	descr[strchr(v + 1, *v) - v - 1] = 0;
	if (!strcmp(descr, "<f4")) {
		is_f4 = 1;
	} else if (!strcmp(descr, "|u1") || !strcmp(descr, "u1") || !strcmp(descr, "<u1")) {
		is_f4 = 0;
	} else {
		rc = cv_err_set(e, -EINVAL, "%s: %s %zu: dtype '%s' not supported (float32 '<f4' or uint8 '|u1')",
				path, rd_where(&r), hoff + (size_t) (v - hdr), descr);
		goto out;
	}
	v = npy_value(hdr, "fortran_order");
	if (!v || strncmp(v, "False", 5)) {
		rc = cv_err_set(e, -EINVAL, "%s: %s %zu: npy array is not in C order (fortran_order must be False)",
				path, rd_where(&r), hoff + (size_t) (v ? v - hdr : 0));
		goto out;
	}
	v = npy_value(hdr, "shape");
	if (!v || *v != '(') {
		rc = cv_err_set(e, -EINVAL, "%s: %s %zu: npy header has no 'shape' tuple", path,
				rd_where(&r), hoff);
		goto out;
	}
	for (const char *p = v + 1;;) {
		char *end;
		unsigned long long x;

		while (*p == ' ' || *p == ',')
			p++;
		if (*p == ')')
			break;
		if (!isdigit((unsigned char) *p) || nd == 8) {
			rc = cv_err_set(e, -EINVAL, "%s: %s %zu: malformed npy shape", path, rd_where(&r),
					hoff + (size_t) (p - hdr));
			goto out;
		}
		errno = 0;
		x = strtoull(p, &end, 10);
		if (errno || x > CV_DATA_MAX_VALUES) {
			rc = cv_err_set(e, -EOVERFLOW, "%s: %s %zu: npy shape value too large", path,
					rd_where(&r), hoff + (size_t) (p - hdr));
			goto out;
		}
		dims[nd++] = (size_t) x;
		p = end;
	}
	if (nd == 0) {
		rc = cv_err_set(e, -EINVAL, "%s: %s %zu: npy array is a scalar (shape ())", path,
				rd_where(&r), hoff + (size_t) (v - hdr));
		goto out;
	}
	nn = dims[0];
	for (size_t i = 1; i < nd; i++) {
		dd *= dims[i];
		if (dd > CV_DATA_MAX_DIM) {
			rc = cv_err_set(e, -EOVERFLOW, "%s: %s %zu: row of %llu values exceeds the cap of %d",
					path, rd_where(&r), hoff + (size_t) (v - hdr), (unsigned long long) dd,
					CV_DATA_MAX_DIM);
			goto out;
		}
	}
	if (nn == 0 || dd == 0) {
		rc = cv_err_set(e, -EINVAL, "%s: %s %zu: npy array is empty", path, rd_where(&r),
				hoff + (size_t) (v - hdr));
		goto out;
	}
	rc = data_check_size(path, nn, dd, e);
	if (rc)
		goto out;
	total = (size_t) (nn * dd);
	rc = read_payload(&r, b, total, is_f4 ? 4 : 1, is_f4 ? EL_F32LE : EL_U8, "the npy data", e);
	if (rc)
		goto out;
	b->len = total;
	rc = rd_expect_eof(&r, e);
	if (rc)
		goto out;
	*n = (size_t) nn;
	*d = (size_t) dd;
out:
	free(hdr);
	rd_close(&r);
	return rc;
}
