/*
 * bufpool.c - the buffer pool the paged HNSW is read through, in the
 * manner of PostgreSQL's shared_buffers (src/backend/storage/buffer).
 *
 * N buffers of 8 KB; a hash from (file, block) to buffer; a free list;
 * clock-sweep replacement with usage counts capped at 5 (BM_MAX_USAGE_COUNT)
 * over unpinned buffers. A lookup that hits pins the buffer and bumps its
 * usage; a miss reserves a victim, marks it I/O-in-progress and pinned,
 * and the caller reads into it, synchronously (bufpool_read) or through
 * an asynchronous submission (the fan-out driver), then calls
 * bufpool_io_done. A second reader of a block whose read is in flight
 * gets -EBUSY (async) or waits (sync), as PostgreSQL's WaitIO.
 *
 * One mutex guards the tables; reads happen outside it. Pages are 4096-
 * aligned so O_DIRECT and io_uring can read into them directly.
 */
#include "paged.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_USAGE 5

typedef struct bufdesc {
	uint32_t file, blk;
	int next;          /* hash chain or free list */
	uint16_t pins;
	uint8_t usage;
	uint8_t state;     /* 0 free, 1 valid, 2 io in progress */
} bufdesc;

struct bufpool {
	pthread_mutex_t mu;
	pthread_cond_t io_cv;
	size_t n, nbuckets;
	bufdesc *desc;
	int *bucket;
	uint8_t *pages;
	int free_head;
	size_t hand;
	int mapped;         /* every page of the pool faulted in (bufpool_map) */
};

enum { B_FREE = 0, B_VALID = 1, B_IO = 2 };

static size_t tag_hash(const bufpool *bp, uint32_t file, uint32_t blk)
{
	uint64_t h = ((uint64_t) file << 32 | blk) * 0x9E3779B97F4A7C15ull;

	return (size_t) (h >> 32) & (bp->nbuckets - 1);
}

int bufpool_new(size_t nbuffers, bufpool **out)
{
	bufpool *bp;
	void *mem = NULL;

	*out = NULL;
	if (nbuffers < 16)
		nbuffers = 16;
	if (nbuffers > (1u << 24))
		return -EINVAL;
	bp = calloc(1, sizeof(*bp));
	if (!bp)
		return -ENOMEM;
	bp->n = nbuffers;
	bp->nbuckets = 64;
	while (bp->nbuckets < 2 * nbuffers)
		bp->nbuckets <<= 1;
	bp->desc = calloc(nbuffers, sizeof(*bp->desc));
	bp->bucket = malloc(bp->nbuckets * sizeof(*bp->bucket));
	/*
	 * 2 MB-aligned and advised for transparent huge pages: a cold read
	 * lands in a page nobody touched since the DMA, and with 4 KB pages
	 * its first access also misses the TLB (a 128 MB pool is 32,768 of
	 * them); with 2 MB pages the pool's translations fit the TLB.
	 */
	if (posix_memalign(&mem, (size_t) 2 << 20, nbuffers * PG_BLCKSZ))
		mem = NULL;
#ifdef MADV_HUGEPAGE
	if (mem)
		(void) madvise(mem, nbuffers * PG_BLCKSZ, MADV_HUGEPAGE);
#endif
	bp->pages = mem;
	if (!bp->desc || !bp->bucket || !bp->pages) {
		free(bp->desc);
		free(bp->bucket);
		free(bp->pages);
		free(bp);
		return -ENOMEM;
	}
	pthread_mutex_init(&bp->mu, NULL);
	pthread_cond_init(&bp->io_cv, NULL);
	bufpool_drop(bp);
	*out = bp;
	return 0;
}

void bufpool_free(bufpool *bp)
{
	if (!bp)
		return;
	pthread_mutex_destroy(&bp->mu);
	pthread_cond_destroy(&bp->io_cv);
	free(bp->desc);
	free(bp->bucket);
	free(bp->pages);
	free(bp);
}

size_t bufpool_size(const bufpool *bp)
{
	return bp->n;
}

void bufpool_drop(bufpool *bp)
{
	pthread_mutex_lock(&bp->mu);
	for (size_t i = 0; i < bp->nbuckets; i++)
		bp->bucket[i] = -1;
	bp->free_head = -1;
	for (size_t i = bp->n; i-- > 0;) {
		bufdesc *d = &bp->desc[i];

		if (d->pins || d->state == B_IO) {
			/* still in use: keep it hashed */
			size_t h = tag_hash(bp, d->file, d->blk);

			d->next = bp->bucket[h];
			bp->bucket[h] = (int) i;
			continue;
		}
		d->state = B_FREE;
		d->usage = 0;
		d->next = bp->free_head;
		bp->free_head = (int) i;
	}
	bp->hand = 0;
	pthread_mutex_unlock(&bp->mu);
}

/*
 * Fault the whole pool in, once, as a running server's shared_buffers
 * already are: otherwise the first cold query also pays for zeroing (and,
 * in a VM, for the host backing) every page its reads land in, inside the
 * O_DIRECT submission, and a 128 MB pool costs a fan-out query hundreds
 * of milliseconds that are not its reads.
 */
void bufpool_map(bufpool *bp)
{
	size_t len = bp->n * PG_BLCKSZ;

	if (bp->mapped)
		return;
#ifdef MADV_POPULATE_WRITE
	if (madvise(bp->pages, len, MADV_POPULATE_WRITE) == 0) {
		bp->mapped = 1;
		return;
	}
#endif
	for (size_t off = 0; off < len; off += 4096)
		((volatile uint8_t *) bp->pages)[off] = 0;
	bp->mapped = 1;
}

/* Unlink buffer i from its hash chain (lock held). */
static void unhash(bufpool *bp, int i)
{
	bufdesc *d = &bp->desc[i];
	int *pp = &bp->bucket[tag_hash(bp, d->file, d->blk)];

	while (*pp >= 0 && *pp != i)
		pp = &bp->desc[*pp].next;
	if (*pp == i)
		*pp = d->next;
}

/* A buffer to reuse: the free list, else the clock sweep (lock held); -1 if all pinned. */
static int victim(bufpool *bp)
{
	int i = bp->free_head;

	if (i >= 0) {
		bp->free_head = bp->desc[i].next;
		return i;
	}
	for (size_t tries = 0; tries < bp->n * (MAX_USAGE + 1); tries++) {
		bufdesc *d = &bp->desc[bp->hand];

		i = (int) bp->hand;
		bp->hand = (bp->hand + 1) % bp->n;
		if (d->pins || d->state == B_IO)
			continue;
		if (d->usage) {
			d->usage--;
			continue;
		}
		unhash(bp, i);
		return i;
	}
	return -1;
}

/* bufpool_lookup with the lock held. */
static int lookup_locked(bufpool *bp, uint32_t file, uint32_t blk, int *buf, uint8_t **page)
{
	size_t h;
	int i, rc;

	h = tag_hash(bp, file, blk);
	for (i = bp->bucket[h]; i >= 0; i = bp->desc[i].next) {
		bufdesc *d = &bp->desc[i];

		if (d->file != file || d->blk != blk)
			continue;
		if (d->state == B_IO) {
			rc = -EBUSY;
			goto out;
		}
		d->pins++;
		if (d->usage < MAX_USAGE)
			d->usage++;
		*buf = i;
		*page = bp->pages + (size_t) i * PG_BLCKSZ;
		rc = BUF_HIT;
		goto out;
	}
	i = victim(bp);
	if (i < 0) {
		rc = -ENOSPC;
		goto out;
	}
	bp->desc[i] = (bufdesc){.file = file, .blk = blk, .next = bp->bucket[h], .pins = 1,
				.usage = 1, .state = B_IO};
	bp->bucket[h] = i;
	*buf = i;
	*page = bp->pages + (size_t) i * PG_BLCKSZ;
	rc = BUF_MISS;
out:
	return rc;
}

int bufpool_lookup(bufpool *bp, uint32_t file, uint32_t blk, int *buf, uint8_t **page)
{
	int rc;

	pthread_mutex_lock(&bp->mu);
	rc = lookup_locked(bp, file, blk, buf, page);
	pthread_mutex_unlock(&bp->mu);
	return rc;
}

void bufpool_io_done(bufpool *bp, int buf, bool ok)
{
	bufdesc *d = &bp->desc[buf];

	pthread_mutex_lock(&bp->mu);
	if (ok) {
		d->state = B_VALID;
	} else {
		unhash(bp, buf);
		d->state = B_FREE;
		d->pins = 0;
		d->usage = 0;
		d->next = bp->free_head;
		bp->free_head = buf;
	}
	pthread_cond_broadcast(&bp->io_cv);
	pthread_mutex_unlock(&bp->mu);
}

void bufpool_release(bufpool *bp, int buf)
{
	pthread_mutex_lock(&bp->mu);
	if (bp->desc[buf].pins)
		bp->desc[buf].pins--;
	pthread_mutex_unlock(&bp->mu);
}

int bufpool_read(bufpool *bp, cv_io *io, cv_file *f, uint32_t file, uint32_t blk, int *buf,
		 const uint8_t **page, bool *hit)
{
	uint8_t *p;
	int rc;

	pthread_mutex_lock(&bp->mu);
	/* another thread is reading it: wait, as WaitIO */
	while ((rc = lookup_locked(bp, file, blk, buf, &p)) == -EBUSY)
		pthread_cond_wait(&bp->io_cv, &bp->mu);
	pthread_mutex_unlock(&bp->mu);
	if (rc < 0)
		return rc;
	*page = p;
	*hit = rc == BUF_HIT;
	if (rc == BUF_HIT)
		return 0;
	rc = cv_io_read(io, f, (uint64_t) blk * PG_BLCKSZ, PG_BLCKSZ, p);
	if (!rc)
		rc = pg_page_check(p, blk);
	bufpool_io_done(bp, *buf, rc == 0);
	return rc;
}
