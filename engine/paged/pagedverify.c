/*
 * pagedverify.c - `coldstudy index verify` for paged and phnsw indexes:
 * every page's checksum and header, every tuple's type and size, every
 * TID pointing at a tuple of the right type, the meta page, the heap rows
 * (id = position), the count of heap TIDs against the rows, and
 * reachability from the entry point over all layers.
 *
 * Reads with pread, not through the counted block reader: verification is
 * not a measured path. -EBADMSG with the file and block on damage.
 * Unreachable elements are reported, not failed: pgvector's build can
 * orphan a node when a neighbour list overflows (it replaces one link).
 */
#include "paged.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct vel {
	pg_tid tid, ntid;
	int level;
	uint64_t key;
} vel;

typedef struct tidmap {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap;
} tidmap;

static uint64_t key_of(pg_tid t)
{
	return ((uint64_t) t.blk << 16 | t.off) + 1;
}

static size_t slot_of(const tidmap *m, uint64_t k)
{
	size_t i = (size_t) ((k * 0x9E3779B97F4A7C15ull) >> 17) & (m->cap - 1);

	while (m->keys[i] && m->keys[i] != k)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int read_page(int fd, uint32_t blk, uint8_t *page)
{
	return cvu_pread_exact(fd, page, PG_BLCKSZ, (uint64_t) blk * PG_BLCKSZ);
}

int paged_verify_file(const char *path, size_t dim, uint32_t m, uint64_t *elements,
		      uint64_t *heaptids, uint64_t *unreachable, cv_err *e)
{
	uint8_t *page = malloc(PG_BLCKSZ);
	vel *els = NULL;
	size_t nel = 0, celm = 0;
	tidmap map = {0};
	uint32_t *queue = NULL;
	uint8_t *seen = NULL;
	pg_tid entry = {PG_INVALID_BLOCK, 0};
	struct stat sb;
	uint32_t nblocks;
	int fd = -1, rc = -ENOMEM;
	uint64_t ht = 0;

	*elements = *heaptids = *unreachable = 0;
	if (!page)
		goto out;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		rc = cv_err_set(e, -ENOENT, "%s: cannot open", path);
		goto out;
	}
	if (fstat(fd, &sb) < 0 || sb.st_size < (off_t) (2 * PG_BLCKSZ) || sb.st_size % PG_BLCKSZ) {
		rc = cv_err_set(e, -EBADMSG, "%s: size %lld is not >= 2 whole 8 KB pages", path,
				(long long) sb.st_size);
		goto out;
	}
	nblocks = (uint32_t) (sb.st_size / PG_BLCKSZ);
	/* pass 1: pages, meta, element tuples */
	for (uint32_t b = 0; b < nblocks; b++) {
		unsigned n;

		if ((rc = read_page(fd, b, page)) || (rc = pg_page_check(page, b)) ||
		    pg_get16(page + PG_BLCKSZ - 2) != HNSW_PAGE_ID) {
			rc = cv_err_set(e, -EBADMSG, "%s: block %u (byte %llu): bad checksum or header",
					path, b, (unsigned long long) b * PG_BLCKSZ);
			goto out;
		}
		if (b == HNSW_METAPAGE_BLKNO) {
			const uint8_t *mp = page + PG_PAGE_HEADER;

			if (pg_get32(mp) != HNSW_MAGIC || pg_get32(mp + 4) != HNSW_VERSION ||
			    pg_get32(mp + 8) != dim || pg_get16(mp + 12) != m) {
				rc = cv_err_set(e, -EBADMSG,
						"%s: meta page: magic/version/dimensions/m mismatch",
						path);
				goto out;
			}
			entry.blk = pg_get32(mp + 16);
			entry.off = pg_get16(mp + 20);
			continue;
		}
		n = pg_page_nitems(page);
		for (unsigned off = 1; off <= n; off++) {
			size_t len;
			const uint8_t *t = pg_page_item(page, off, &len);

			if (!t || (t[0] != HNSW_ELEMENT_TYPE && t[0] != HNSW_NEIGHBOR_TYPE)) {
				rc = cv_err_set(e, -EBADMSG, "%s: block %u item %u: bad item", path, b,
						off);
				goto out;
			}
			if (t[0] != HNSW_ELEMENT_TYPE)
				continue;
			if (len < 80 + 4 * dim || pg_get16(t + 76) != dim) {
				rc = cv_err_set(e, -EBADMSG, "%s: block %u item %u: element size", path,
						b, off);
				goto out;
			}
			if (nel == celm) {
				size_t nc = celm ? celm * 2 : 1024;
				vel *nv = realloc(els, nc * sizeof(*nv));

				if (!nv) {
					rc = -ENOMEM;
					goto out;
				}
				els = nv;
				celm = nc;
			}
			els[nel].tid = (pg_tid){b, (uint16_t) off};
			els[nel].ntid = pg_get_tid(t + 64);
			els[nel].level = t[1];
			for (unsigned i = 0; i < HNSW_HEAPTIDS; i++) {
				if (!pg_tid_valid(pg_get_tid(t + 4 + 6 * i)))
					break;
				ht++;
			}
			nel++;
		}
	}
	rc = -ENOMEM;
	map.cap = 64;
	while (map.cap < 2 * nel + 2)
		map.cap <<= 1;
	map.keys = calloc(map.cap, sizeof(*map.keys));
	map.vals = calloc(map.cap, sizeof(*map.vals));
	seen = calloc(nel + 1, 1);
	queue = malloc((nel + 1) * sizeof(*queue));
	if (!map.keys || !map.vals || !seen || !queue)
		goto out;
	for (size_t i = 0; i < nel; i++) {
		size_t s = slot_of(&map, key_of(els[i].tid));

		map.keys[s] = key_of(els[i].tid);
		map.vals[s] = (uint32_t) i;
	}
	/* pass 2: neighbour tuples and links, then reachability */
	if (nel) {
		size_t s = slot_of(&map, key_of(entry));
		size_t qh = 0, qt = 0;

		if (!map.keys[s]) {
			rc = cv_err_set(e, -EBADMSG, "%s: entry point (%u,%u) is not an element", path,
					entry.blk, entry.off);
			goto out;
		}
		queue[qt++] = map.vals[s];
		seen[map.vals[s]] = 1;
		while (qh < qt) {
			vel *v = &els[queue[qh++]];
			size_t len, count;
			const uint8_t *t;

			if (v->ntid.blk >= nblocks || (rc = read_page(fd, v->ntid.blk, page)) ||
			    !(t = pg_page_item(page, v->ntid.off, &len)) || t[0] != HNSW_NEIGHBOR_TYPE ||
			    (count = pg_get16(t + 2)) != (size_t) (v->level + 2) * m ||
			    len < 4 + 6 * count) {
				rc = cv_err_set(e, -EBADMSG,
						"%s: element (%u,%u): bad neighbour tuple (%u,%u)", path,
						v->tid.blk, v->tid.off, v->ntid.blk, v->ntid.off);
				goto out;
			}
			for (size_t i = 0; i < count; i++) {
				pg_tid n = pg_get_tid(t + 4 + 6 * i);
				size_t sl;

				if (!pg_tid_valid(n))
					continue;
				sl = slot_of(&map, key_of(n));
				if (!map.keys[sl]) {
					rc = cv_err_set(e, -EBADMSG,
							"%s: element (%u,%u): neighbour (%u,%u) is not an element",
							path, v->tid.blk, v->tid.off, n.blk, n.off);
					goto out;
				}
				if (!seen[map.vals[sl]]) {
					seen[map.vals[sl]] = 1;
					queue[qt++] = map.vals[sl];
				}
			}
		}
		*unreachable = nel - qt;
	}
	*elements = nel;
	*heaptids = ht;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(page);
	free(els);
	free(map.keys);
	free(map.vals);
	free(seen);
	free(queue);
	return rc;
}

/* Heap: checksums, id = position, count rows. */
static int verify_heap(const char *dir, const phnsw_catalog *c, cv_err *e)
{
	char path[4096];
	uint8_t *page = malloc(PG_BLCKSZ);
	float *row = malloc(c->dim * sizeof(float) + 4);
	uint64_t rows = 0;
	struct stat sb;
	int fd = -1, rc = -ENOMEM;

	snprintf(path, sizeof(path), "%s/heap", dir);
	if (!page || !row)
		goto out;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &sb) < 0) {
		rc = cv_err_set(e, -ENOENT, "%s: cannot open", path);
		goto out;
	}
	if (sb.st_size % PG_BLCKSZ || (uint64_t) sb.st_size / PG_BLCKSZ != c->heap_pages) {
		rc = cv_err_set(e, -EBADMSG, "%s: %lld bytes, catalog says %" PRIu64 " pages", path,
				(long long) sb.st_size, c->heap_pages);
		goto out;
	}
	for (uint32_t b = 0; b < c->heap_pages; b++) {
		unsigned n;

		if (read_page(fd, b, page) || pg_page_check(page, b)) {
			rc = cv_err_set(e, -EBADMSG, "%s: block %u (byte %llu): bad checksum or header",
					path, b, (unsigned long long) b * PG_BLCKSZ);
			goto out;
		}
		n = pg_page_nitems(page);
		for (unsigned off = 1; off <= n; off++) {
			uint32_t id;

			if (phnsw_heap_row(page, b, off, c->dim, &id, row) || id != rows) {
				rc = cv_err_set(e, -EBADMSG, "%s: block %u item %u: bad row", path, b,
						off);
				goto out;
			}
			rows++;
		}
	}
	if (rows != c->count) {
		rc = cv_err_set(e, -EBADMSG, "%s: %" PRIu64 " rows, catalog says %" PRIu64, path, rows,
				c->count);
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(page);
	free(row);
	return rc;
}

int paged_verify_dir(const char *dir, cv_err *e)
{
	phnsw_catalog c;
	uint64_t tot_el = 0, tot_ht = 0, tot_un = 0;
	int rc = phnsw_catalog_read(dir, &c, e);

	if (rc)
		return rc;
	rc = verify_heap(dir, &c, e);
	if (rc)
		return rc;
	for (uint32_t p = 0; p < c.partitions; p++) {
		char path[4096];
		uint64_t el, ht, un;

		snprintf(path, sizeof(path), "%s/part-%03u", dir, p);
		rc = paged_verify_file(path, c.dim, c.m, &el, &ht, &un, e);
		if (rc)
			return rc;
		tot_el += el;
		tot_ht += ht;
		tot_un += un;
	}
	if (tot_ht != c.count)
		return cv_err_set(e, -EBADMSG, "%s: %" PRIu64 " heap TIDs in the index, %" PRIu64
				  " rows in the table", dir, tot_ht, c.count);
	cv_err_set(e, 0, "ok: %u partitions, %" PRIu64 " rows, %" PRIu64 " elements, %" PRIu64
		   " unreachable from the entry point", c.partitions, c.count, tot_el, tot_un);
	return 0;
}
