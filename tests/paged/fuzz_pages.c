/*
 * fuzz_pages.c - libFuzzer target over the paged index's page decoders:
 * the page header and checksum check, the line-pointer walk, the heap-row
 * decoder and the whole-file verifier (element and neighbour tuples,
 * links), on arbitrary bytes. Anything may be refused; nothing may crash,
 * read out of bounds or leak.
 *
 * Input: byte 0 picks the dimension (1..256), byte 1 the m (2..33), the
 * rest is the index file, cut into 8 KB pages.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "paged/paged.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t page[8192] __attribute__((aligned(64)));
	float row[256];
	size_t dim, body;
	uint32_t m;
	char path[64];
	int fd;

	if (size < 2 || size > (1u << 20))
		return 0;
	dim = 1 + data[0];
	m = 2 + (data[1] & 31);
	data += 2;
	size -= 2;
	/* every page: header check, every item, every heap row */
	for (size_t off = 0; off < size; off += sizeof(page)) {
		size_t n = size - off < sizeof(page) ? size - off : sizeof(page);
		unsigned items;

		memset(page, 0, sizeof(page));
		memcpy(page, data + off, n);
		(void) pg_page_check(page, (uint32_t) (off / sizeof(page)));
		items = pg_page_nitems(page);
		for (unsigned i = 1; i <= items && i <= 2048; i++) {
			size_t len;
			uint32_t id;
			const uint8_t *t = pg_page_item(page, i, &len);

			if (t && len > sizeof(page))
				abort(); /* an item must lie inside its page */
			(void) phnsw_heap_row(page, (uint32_t) (off / sizeof(page)), i, dim, &id, row);
		}
	}
	/* the verifier over the same bytes as a file */
	fd = memfd_create("pages", 0);
	if (fd < 0)
		return 0;
	body = 0;
	while (body < size) {
		ssize_t w = write(fd, data + body, size - body);

		if (w <= 0)
			break;
		body += (size_t) w;
	}
	if (body == size) {
		uint64_t elements, heaptids, unreachable;
		cv_err e;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		(void) paged_verify_file(path, dim, m, &elements, &heaptids, &unreachable, &e);
	}
	close(fd);
	return 0;
}
