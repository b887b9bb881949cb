/*
 * iocmd.h - the engine's verbs below the cli: what `coldstudy device`
 * shows (devices.c), what `coldstudy cache` does (cachecmd.c) and what
 * `coldstudy data` computes (datacmd.c), each target resolved once through
 * the guards.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled (one
 * line, no "coldstudy VERB:" prefix).
 */
#ifndef HARNESS_IOCMD_H
#define HARNESS_IOCMD_H

#include <stdint.h>
#include <stdio.h>

#include "coldvec.h"
#include "cs.h"

/* ---- coldstudy device (devices.c) ---- */

/* Every device model, a line each with its mean at queue depth 1, or a JSON array. */
int harness_device_list_print(int json, FILE *out);
/* One model's parameters (a name of the list, or probe:FILE); exit 5 for an unknown one. */
int harness_device_show(const char *profile, FILE *out, cs_err *e);
/* The block device under path and its counters; exit 3 where there is none. */
int harness_device_under(const char *path, FILE *out, cs_err *e);
/* A cvtrace file replayed against profile in virtual time, its figures as text or JSON. */
int harness_device_replay(const char *path, const char *profile, uint64_t seed, int json, FILE *out,
                          cs_err *e);

/* ---- coldstudy cache (cachecmd.c) ---- */

/* Evict path's pages from the page cache; production's are refused (exit 3). */
int harness_cache_evict(const char *path, cs_err *e);
/* The page-cache residency of each of files[0..n): a table, or a JSON array with json. */
int harness_cache_residency(char *const *files, size_t n, int json, FILE *out, cs_err *e);
/*
 * Read blocks of bs bytes of file into the page cache: spec is "1,2,3" or
 * "@FILE" (numbers separated by commas or white space); a bad list is exit
 * 5 at its byte offset, a block past the end exit 5. Says what it read on out.
 */
int harness_cache_prewarm(const char *file, const char *spec, uint32_t bs, FILE *out, cs_err *e);

/* ---- coldstudy data (datacmd.c) ---- */

/* A dataset spec's rows, dimension, value range, mean norm and hash: lines, or one JSON object. */
int harness_data_info(const char *spec, int json, FILE *out, cs_err *e);

/* What data gt computes. */
typedef struct harness_gt_opts {
	const char *base, *queries; /* dataset specs */
	const char *out;            /* the ivecs file, as typed (held through the guards) */
	const char *cache_dir;      /* NULL: $COLDSTUDY_CACHE or ~/.cache/coldstudy */
	size_t k;
	cv_metric metric;
	int threads; /* 0: every CPU */
	int quiet;   /* no progress line */
} harness_gt_opts;

/*
 * The exact k nearest base ids of every query (ties to the lower id),
 * cached by content hash, written as ivecs; its one line (how many, from
 * the cache or computed, how long) to log. Bases of another dimension, or
 * k past the base, are exit 5.
 */
int harness_data_gt(const harness_gt_opts *o, FILE *log, cs_err *e);

#endif
