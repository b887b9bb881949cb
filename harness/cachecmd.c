/*
 * cachecmd.c - what `coldstudy cache` does to the page cache: evict a
 * file's pages, measure their residency, read a list of blocks in. Each
 * file is resolved once (symlinks followed once) and acted on through the
 * hold; production's files are never evicted or read into.
 */
#include "iocmd.h"

#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS_MAX (1u << 24)

int harness_cache_evict(const char *path, cs_err *e)
{
	guard_held h;
	int rc;

	if ((rc = guard_existing(NULL, NULL, path, AT_FDCWD, "cache evict", "file", &h, e)))
		return rc;
	rc = cv_cache_evict(guard_held_via(&h));
	guard_held_close(&h);
	return rc ? cs_err_set(e, cs_exit_from_errno(rc), "%s: %s", path, strerror(-rc)) : 0;
}

int harness_cache_residency(char *const *files, size_t n, int json, FILE *out, cs_err *e)
{
	json_t *arr = NULL;
	int rc = CS_EXIT_OK;

	if (json && !(arr = json_array()))
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	if (!json)
		fprintf(out, "%10s %10s %9s %-9s %s\n", "RES", "PAGES", "FRACTION", "METHOD",
		        "FILE");
	for (size_t i = 0; i < n; i++) {
		cv_residency r;
		guard_held h;
		double frac;
		int x;

		if ((rc = guard_hold(files[i], AT_FDCWD, &h, e)))
			goto out;
		x = h.exists ? cv_cache_residency(guard_held_via(&h), &r) : -ENOENT;
		guard_held_close(&h);
		if (x == -EACCES) {
			rc = cs_err_set(
			    e, cs_exit_from_errno(x),
			    "%s: residency refused: no cachestat and the file cannot be opened for "
			    "writing, so mincore would report every page resident",
			    files[i]);
			goto out;
		}
		if (x) {
			rc = cs_err_set(e, cs_exit_from_errno(x), "%s: %s", files[i], strerror(-x));
			goto out;
		}
		frac = r.pages ? (double) r.resident / (double) r.pages : 0.0;
		if (!json) {
			fprintf(out, "%10llu %10llu %9.4f %-9s %s\n",
			        (unsigned long long) r.resident, (unsigned long long) r.pages, frac,
			        r.method, files[i]);
			continue;
		}
		if (json_array_append_new(arr, json_pack("{s:s, s:I, s:I, s:f, s:s}", "file",
		                                         files[i], "pages", (json_int_t) r.pages,
		                                         "resident", (json_int_t) r.resident,
		                                         "fraction", frac, "method", r.method))) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
	}
	if (json) {
		char *s = json_dumps(arr, JSON_INDENT(2));

		if (!s) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
		fprintf(out, "%s\n", s);
		free(s);
	}
out:
	json_decref(arr);
	return rc;
}

/* "1,2,3" or "@FILE" (numbers separated by commas or white space) into *out (new), *n. */
static int parse_blocks(const char *spec, uint64_t **out, size_t *n, cs_err *e)
{
	char *text = NULL;
	const char *p;
	uint64_t *v = NULL;
	size_t cap = 0, len = 0, tl;
	int rc;

	*out = NULL;
	*n = 0;
	if (spec[0] == '@' && (rc = cs_read_file(spec + 1, 64u << 20, &text, &tl, e)))
		return rc;
	p = spec[0] == '@' ? text : spec;
	while (*p) {
		char *end;
		unsigned long long x;

		while (*p == ',' || *p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
			p++;
		if (!*p)
			break;
		if (*p < '0' || *p > '9') {
			rc =
			    cs_err_set(e, CS_EXIT_BADINPUT, "%s: byte %zu: expected a block number",
			               spec[0] == '@' ? spec + 1 : "--blocks",
			               (size_t) (p - (spec[0] == '@' ? text : spec)));
			goto out;
		}
		errno = 0;
		x = strtoull(p, &end, 10);
		if (errno) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "block number out of range");
			goto out;
		}
		if (len == cap) {
			uint64_t *nv;

			if (cap >= BLOCKS_MAX) {
				rc = cs_err_set(e, CS_EXIT_BADINPUT, "more than %u blocks",
				                BLOCKS_MAX);
				goto out;
			}
			cap = cap ? cap * 2 : 256;
			if (!(nv = realloc(v, cap * sizeof(*v)))) {
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
				goto out;
			}
			v = nv;
		}
		v[len++] = x;
		p = end;
	}
	*out = v;
	*n = len;
	v = NULL;
	rc = 0;
out:
	free(v);
	free(text);
	return rc;
}

int harness_cache_prewarm(const char *file, const char *spec, uint32_t bs, FILE *out, cs_err *e)
{
	uint64_t *list = NULL;
	size_t n = 0;
	guard_held h;
	int rc;

	if ((rc = parse_blocks(spec, &list, &n, e)))
		return rc;
	if ((rc = guard_existing(NULL, NULL, file, AT_FDCWD, "cache prewarm", "file", &h, e))) {
		free(list);
		return rc;
	}
	rc = cv_cache_prewarm(guard_held_via(&h), list, n, bs);
	guard_held_close(&h);
	free(list);
	if (rc == -ERANGE)
		return cs_err_set(e, CS_EXIT_BADINPUT,
		                  "%s: a block in the list lies past the end of the file", file);
	if (rc)
		return cs_err_set(e, cs_exit_from_errno(rc), "%s: %s", file, strerror(-rc));
	fprintf(out, "prewarmed %zu blocks of %llu bytes from %s\n", n, (unsigned long long) bs,
	        file);
	return CS_EXIT_OK;
}
