/*
 * pagedcatalog.c - the catalog of a paged or partitioned index directory:
 * kind, metric, dimension, rows, partitions, m, ef_construction and the
 * heap's shape, as text lines closed by their CRC-32, written atomically
 * (temporary file, fsync, rename). The comparator (phnsw.c) writes it at
 * build and reads it at open; the verifier (pagedverify.c) reads it first.
 * Below both, it calls neither.
 *
 * Error convention: 0 or -errno with e filled (-EBADMSG: malformed).
 */
#include "util.h"
#include "paged.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

int phnsw_catalog_write(const char *dir, const phnsw_catalog *c, cv_err *e)
{
	char path[4096], tmp[4200], buf[1024];
	int n, fd, rc = 0;
	uLong crc;

	n = snprintf(buf, sizeof(buf),
		     "coldstudy-catalog 1\nkind %s\nmetric %s\ndim %" PRIu32 "\ncount %" PRIu64
		     "\npartitions %" PRIu32 "\nm %" PRIu32 "\nef_construction %" PRIu32
		     "\nheap_rows_per_page %" PRIu32 "\nheap_pages %" PRIu64 "\n",
		     c->kind, cv_metric_name(c->metric), c->dim, c->count, c->partitions, c->m,
		     c->ef_construction, c->heap_rows_per_page, c->heap_pages);
	crc = crc32(0L, (const Bytef *) buf, (uInt) n);
	n += snprintf(buf + n, sizeof(buf) - (size_t) n, "crc32 %08lx\n", (unsigned long) crc);
	snprintf(path, sizeof(path), "%s/catalog", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = cv_open_new(tmp, O_WRONLY, 0644);
	if (fd < 0)
		return cv_err_set(e, -errno, "%s: cannot create", tmp);
	if (write(fd, buf, (size_t) n) != n || fsync(fd) < 0)
		rc = -EIO;
	close(fd);
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		return cv_err_set(e, rc, "%s: write failed", path);
	return 0;
}

int phnsw_catalog_read(const char *dir, phnsw_catalog *c, cv_err *e)
{
	char path[4096], buf[2048], metric[32] = "", *crcline;
	unsigned long crc_stored;
	int fd, fields;
	ssize_t n;

	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), "%s/catalog", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return cv_err_set(e, -ENOENT, "%s: cannot open catalog", path);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return cv_err_set(e, -EBADMSG, "%s: empty catalog", path);
	buf[n] = '\0';
	crcline = strstr(buf, "crc32 ");
	if (!crcline || sscanf(crcline, "crc32 %8lx", &crc_stored) != 1)
		return cv_err_set(e, -EBADMSG, "%s: no crc32 line", path);
	if (crc32(0L, (const Bytef *) buf, (uInt) (crcline - buf)) != crc_stored)
		return cv_err_set(e, -EBADMSG, "%s: catalog checksum mismatch", path);
	fields = sscanf(buf,
			"coldstudy-catalog 1\nkind %15s\nmetric %31s\ndim %" SCNu32 "\ncount %" SCNu64
			"\npartitions %" SCNu32 "\nm %" SCNu32 "\nef_construction %" SCNu32
			"\nheap_rows_per_page %" SCNu32 "\nheap_pages %" SCNu64,
			c->kind, metric, &c->dim, &c->count, &c->partitions, &c->m,
			&c->ef_construction, &c->heap_rows_per_page, &c->heap_pages);
	if (fields != 9 || cv_metric_parse(metric, &c->metric) || c->dim == 0 ||
	    c->dim > HNSW_MAX_DIM || c->partitions == 0 || c->partitions > 4096 ||
	    c->m < HNSW_MIN_M || c->m > HNSW_MAX_M || c->heap_rows_per_page == 0)
		return cv_err_set(e, -EBADMSG, "%s: malformed catalog (field %d)", path, fields + 1);
	return 0;
}
