/*
 * tracefile.c - a read trace on disk, so a run's reads can be replayed in
 * virtual time later, on another machine, against any device profile
 * (`coldstudy device replay TRACE --device PROFILE`).
 *
 * Format "cvtrace" version 1, every integer little-endian:
 *
 *   header   magic "CVTRACE\0" (8 bytes), u32 version (1), u32 nfiles
 *            (<= 4096), u64 nrecs, u64 dropped (reads the capture lost)
 *   files    nfiles times: u16 length (1..4095), that many path bytes
 *            (no NUL, no terminator)
 *   records  nrecs times 40 bytes: u32 stream, u32 batch, u64 off,
 *            u32 len, u32 file (< nfiles, or 0xFFFFFFFF when the capture's
 *            table was full), u64 submit_ns, u64 complete_ns
 *            (complete_ns >= submit_ns)
 *   trailer  u32 CRC-32 (zlib) of every byte before it
 *
 * The decoder checks each field against the bytes that remain before it
 * allocates, so a short file claiming billions of records is refused
 * cheaply; every refusal names the byte offset and the field. Saving
 * writes a temporary file, fsyncs and renames, so a reader never sees
 * half a trace.
 */
#include "io_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define TF_MAGIC "CVTRACE"
#define TF_VERSION 1u
#define TF_HEADER 32u
#define TF_REC 40u
#define TF_FILES_MAX 4096u
#define TF_PATH_MAX 4095u
#define TF_MAX_BYTES ((uint64_t) 1 << 34) /* 16 GiB: refuse anything larger */

/* A growing byte buffer for encoding. */
typedef struct tbuf {
	uint8_t *p;
	size_t n, cap;
	bool oom;
} tbuf;

/* Append n bytes (sets oom on failure). */
static void tb_put(tbuf *b, const void *src, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n > b->cap) {
		size_t nc = b->cap ? b->cap : 4096;
		uint8_t *np;

		while (nc < b->n + n)
			nc *= 2;
		np = realloc(b->p, nc);
		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->n, src, n);
	b->n += n;
}

/* Append v as little-endian of w bytes. */
static void tb_le(tbuf *b, uint64_t v, unsigned w)
{
	uint8_t x[8];

	for (unsigned i = 0; i < w; i++)
		x[i] = (uint8_t) (v >> (8 * i));
	tb_put(b, x, w);
}

/* Little-endian read of w bytes at p. */
static uint64_t le(const uint8_t *p, unsigned w)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < w; i++)
		v |= (uint64_t) p[i] << (8 * i);
	return v;
}

/* Encode t into a fresh buffer (*out, *n; free with free). 0 or -errno. */
CV_API int cv_trace_encode(const cv_trace *t, uint8_t **out, size_t *n)
{
	tbuf b = {0};
	size_t nrecs = cv_trace_len(t);
	const cv_trace_rec *r = cv_trace_recs(t);
	uint32_t nfiles = cv_trace_nfiles(t);

	*out = NULL;
	*n = 0;
	tb_put(&b, TF_MAGIC, 8); /* the literal's NUL is the eighth byte */
	tb_le(&b, TF_VERSION, 4);
	tb_le(&b, nfiles, 4);
	tb_le(&b, nrecs, 8);
	tb_le(&b, cv_trace_dropped(t), 8);
	for (uint32_t i = 0; i < nfiles; i++) {
		const char *p = cv_trace_file_path(t, i);
		size_t len = p ? strlen(p) : 0;

		if (len == 0 || len > TF_PATH_MAX) {
			free(b.p);
			return -ENAMETOOLONG;
		}
		tb_le(&b, len, 2);
		tb_put(&b, p, len);
	}
	for (size_t i = 0; i < nrecs; i++) {
		tb_le(&b, r[i].stream, 4);
		tb_le(&b, r[i].batch, 4);
		tb_le(&b, r[i].off, 8);
		tb_le(&b, r[i].len, 4);
		tb_le(&b, r[i].file, 4);
		tb_le(&b, r[i].submit_ns, 8);
		tb_le(&b, r[i].complete_ns, 8);
	}
	if (!b.oom) {
		uLong crc = crc32(0L, Z_NULL, 0);
		size_t done = 0;

		/* crc32 takes uInt lengths: feed large traces in pieces */
		while (done < b.n) {
			size_t piece = b.n - done > (1u << 30) ? (1u << 30) : b.n - done;

			crc = crc32(crc, b.p + done, (uInt) piece);
			done += piece;
		}
		tb_le(&b, (uint32_t) crc, 4);
	}
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	*out = b.p;
	*n = b.n;
	return 0;
}

/* Write t to path whole (temporary file, fsync, rename). 0 or -errno with e. */
CV_API int cv_trace_save(const cv_trace *t, const char *path, cv_err *e)
{
	uint8_t *buf = NULL;
	size_t n = 0, done = 0;
	char tmp[4200];
	int fd, rc;

	rc = cv_trace_encode(t, &buf, &n);
	if (rc)
		return cv_err_set(e, rc, "%s: cannot encode the trace", path);
	if ((size_t) snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long) getpid()) >= sizeof(tmp)) {
		free(buf);
		return cv_err_set(e, -ENAMETOOLONG, "%s: path too long", path);
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		free(buf);
		return cv_err_set(e, rc, "%s: cannot create: %s", tmp, strerror(-rc));
	}
	while (done < n) {
		ssize_t w = write(fd, buf + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t) w;
	}
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	free(buf);
	if (rc) {
		unlink(tmp);
		return cv_err_set(e, rc, "%s: cannot write: %s", path, strerror(-rc));
	}
	return 0;
}

/* Decode a cvtrace image; -EBADMSG with the byte offset in e on anything malformed. */
CV_API int cv_trace_decode(const uint8_t *buf, size_t n, cv_trace **out, cv_err *e)
{
	cv_trace *t = NULL;
	uint64_t nrecs, dropped;
	uint32_t version, nfiles, crc_stored;
	uLong crc;
	size_t at, done;
	int rc;

	*out = NULL;
	if (n < TF_HEADER + 4)
		return cv_err_set(e, -EBADMSG, "byte %zu: truncated header (%zu bytes, need %u)", n, n,
				  TF_HEADER + 4);
	if (memcmp(buf, TF_MAGIC, 8))
		return cv_err_set(e, -EBADMSG, "byte 0: not a cvtrace file (bad magic)");
	version = (uint32_t) le(buf + 8, 4);
	if (version != TF_VERSION)
		return cv_err_set(e, -EBADMSG, "byte 8: version %u, this build reads %u", version,
				  TF_VERSION);
	crc_stored = (uint32_t) le(buf + n - 4, 4);
	crc = crc32(0L, Z_NULL, 0);
	for (done = 0; done < n - 4;) {
		size_t piece = n - 4 - done > (1u << 30) ? (1u << 30) : n - 4 - done;

		crc = crc32(crc, buf + done, (uInt) piece);
		done += piece;
	}
	if ((uint32_t) crc != crc_stored)
		return cv_err_set(e, -EBADMSG, "byte %zu: checksum mismatch (stored %08x, computed %08x)",
				  n - 4, crc_stored, (uint32_t) crc);
	nfiles = (uint32_t) le(buf + 12, 4);
	nrecs = le(buf + 16, 8);
	dropped = le(buf + 24, 8);
	if (nfiles > TF_FILES_MAX)
		return cv_err_set(e, -EBADMSG, "byte 12: %u files, at most %u", nfiles, TF_FILES_MAX);
	/* the file table is at least 3 bytes per file: refuse before reading it */
	at = TF_HEADER;
	if ((uint64_t) nfiles * 3 > n - 4 - at)
		return cv_err_set(e, -EBADMSG, "byte 12: %u files do not fit in %zu bytes", nfiles, n);
	for (uint32_t i = 0; i < nfiles; i++) {
		size_t len;

		if (at + 2 > n - 4)
			return cv_err_set(e, -EBADMSG, "byte %zu: truncated file table (file %u)", at, i);
		len = (size_t) le(buf + at, 2);
		if (len == 0 || len > TF_PATH_MAX || len > n - 4 - at - 2)
			return cv_err_set(e, -EBADMSG, "byte %zu: file %u: path length %zu out of range",
					  at, i, len);
		if (memchr(buf + at + 2, '\0', len))
			return cv_err_set(e, -EBADMSG, "byte %zu: file %u: NUL in path", at + 2, i);
		at += 2 + len;
	}
	if (nrecs > (n - 4 - at) / TF_REC || nrecs * TF_REC != n - 4 - at)
		return cv_err_set(e, -EBADMSG,
				  "byte 16: %llu records need %llu bytes after byte %zu, the file has %zu",
				  (unsigned long long) nrecs,
				  (unsigned long long) (nrecs > UINT64_MAX / TF_REC ? UINT64_MAX
										 : nrecs * TF_REC),
				  at, n - 4 - at);
	rc = cv_trace_new(nrecs ? (size_t) nrecs : 1, &t);
	if (rc)
		return cv_err_set(e, rc, "%llu records: cannot allocate", (unsigned long long) nrecs);
	at = TF_HEADER;
	for (uint32_t i = 0; i < nfiles; i++) {
		size_t len = (size_t) le(buf + at, 2);
		char path[TF_PATH_MAX + 1];

		memcpy(path, buf + at + 2, len);
		path[len] = '\0';
		rc = cvio_trace_add_path(t, path);
		if (rc) {
			cv_trace_free(t);
			return cv_err_set(e, rc, "file %u: cannot add", i);
		}
		at += 2 + len;
	}
	for (uint64_t i = 0; i < nrecs; i++, at += TF_REC) {
		const uint8_t *p = buf + at;
		cv_trace_rec r = {
			.stream = (uint32_t) le(p, 4),
			.batch = (uint32_t) le(p + 4, 4),
			.off = le(p + 8, 8),
			.len = (uint32_t) le(p + 16, 4),
			.file = (uint32_t) le(p + 20, 4),
			.submit_ns = le(p + 24, 8),
			.complete_ns = le(p + 32, 8),
		};

		if (r.file >= nfiles && r.file != UINT32_MAX) {
			cv_trace_free(t);
			return cv_err_set(e, -EBADMSG, "byte %zu: record %llu: file %u of %u", at + 20,
					  (unsigned long long) i, r.file, nfiles);
		}
		if (r.complete_ns < r.submit_ns) {
			cv_trace_free(t);
			return cv_err_set(e, -EBADMSG, "byte %zu: record %llu: completes before it is submitted",
					  at + 32, (unsigned long long) i);
		}
		cv_trace_append(t, &r);
	}
	cvio_trace_set_dropped(t, dropped);
	*out = t;
	return 0;
}

/* Read a cvtrace file; -EBADMSG (with the byte offset) or -errno with e. */
CV_API int cv_trace_load(const char *path, cv_trace **out, cv_err *e)
{
	struct stat st;
	uint8_t *buf = NULL;
	size_t n, got = 0;
	int fd, rc = 0;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		return cv_err_set(e, rc, "%s: cannot open: %s", path, strerror(-rc));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return cv_err_set(e, -EBADMSG, "%s: not a regular file", path);
	}
	if ((uint64_t) st.st_size > TF_MAX_BYTES) {
		close(fd);
		return cv_err_set(e, -EBADMSG, "%s: %lld bytes, larger than any trace this reads", path,
				  (long long) st.st_size);
	}
	n = (size_t) st.st_size;
	buf = malloc(n ? n : 1);
	if (!buf) {
		close(fd);
		return cv_err_set(e, -ENOMEM, "%s: cannot allocate %zu bytes", path, n);
	}
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -errno : -EIO;
			break;
		}
		got += (size_t) r;
	}
	close(fd);
	if (rc) {
		free(buf);
		return cv_err_set(e, rc, "%s: cannot read: %s", path, strerror(-rc));
	}
	rc = cv_trace_decode(buf, n, out, e);
	free(buf);
	if (rc && e) {
		char msg[sizeof(e->msg)];

		snprintf(msg, sizeof(msg), "%s", e->msg);
		cv_err_set(e, rc, "%s: %s", path, msg);
	}
	return rc;
}
