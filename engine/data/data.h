/*
 * data.h - private: the pieces of the dataset loaders (engine/data/).
 *
 * A loader reads through an rd (zlib's gzFile, which reads gzip and plain
 * files alike, with the position in the decompressed stream kept for
 * error messages) into a dsbuf (a 64-byte aligned float buffer that grows
 * by doubling up to CV_DATA_MAX_VALUES). Every error names the file and
 * the byte offset (in the decompressed stream for gzip files) and returns
 * -EINVAL (malformed), -EOVERFLOW (absurd size) or -ENOENT / -errno.
 */
#ifndef CV_DATA_PRIV_H
#define CV_DATA_PRIV_H

#include "cv_data.h"

#include <stdio.h>
#include <zlib.h>

/* A file being read, with the offset of the next byte. */
typedef struct rd {
	gzFile gz;
	const char *path;
	uint64_t off;
	int gzipped;     /* the file starts with the gzip magic */
	uint64_t size;   /* st_size of the file (compressed size for gzip) */
} rd;

/* Open path; -ENOENT etc. with e naming it. */
int rd_open(rd *r, const char *path, cv_err *e);
void rd_close(rd *r);

/* Read up to n bytes; *got receives how many (less only at end of file). */
int rd_read_some(rd *r, void *buf, size_t n, size_t *got, cv_err *e);

/* Read exactly n bytes of what; -EINVAL "truncated" at the offset otherwise. */
int rd_read(rd *r, void *buf, size_t n, const char *what, cv_err *e);

/* -EINVAL if any byte follows (a payload shorter than the file: wrong dimensions). */
int rd_expect_eof(rd *r, cv_err *e);

/* "decompressed byte" for gzip files, "byte" for plain ones. */
const char *rd_where(const rd *r);

/* A growing row-major float buffer. */
typedef struct dsbuf {
	float *data;  /* 64-byte aligned */
	size_t cap;   /* floats */
	size_t len;   /* floats */
} dsbuf;

/* Make room for at least want floats; -ENOMEM, or -EOVERFLOW past the cap. */
int dsbuf_reserve(dsbuf *b, size_t want);

/* -EOVERFLOW (with e naming path) if n*d overflows or passes CV_DATA_MAX_VALUES. */
int data_check_size(const char *path, uint64_t n, uint64_t d, cv_err *e);

/* -EINVAL naming the first NaN/Inf of v[0..count) at base + i * stride bytes. */
int data_check_finite(const rd *r, const float *v, size_t count, uint64_t base, size_t stride,
		      cv_err *e);

/* A new dataset that takes ownership of data (n*d floats); hashes it. */
int data_make(const char *spec, float *data, size_t n, size_t d, cv_dataset **out);

/* The format readers: each fills a new dataset of the whole file. */
int data_load_vecs(const char *path, char kind, dsbuf *b, size_t *n, size_t *d, cv_err *e);
int data_load_idx(const char *path, dsbuf *b, size_t *n, size_t *d, cv_err *e);
int data_load_npy(const char *path, dsbuf *b, size_t *n, size_t *d, cv_err *e);
/* hdf5:SPEC, SPEC = PATH[:train|:test|:neighbors|:distances] (hdf5.c; -ENOTSUP without libhdf5). */
int data_load_hdf5(const char *spec, dsbuf *b, size_t *n, size_t *d, cv_err *e);
/* hdf5:PATH[:neighbors]: the integer ids of `neighbors` (a float array is refused); ids new, caller frees. */
int data_hdf5_ids(const char *spec, int32_t **ids, size_t *nq, size_t *k, cv_err *e);

/* synth:BODY (the part after "synth:"); see cv_data.h. */
int data_load_synth(const char *body, dsbuf *b, size_t *n, size_t *d, cv_err *e);

/* SHA-256 over (n as u64 LE, d as u64 LE, n*d float32 LE). */
void data_hash(size_t n, size_t d, const float *data, unsigned char out[32]);

/* Ground-truth cache key: hex SHA-256 over both hashes, k, metric. */
void data_gt_key(const cv_dataset *base, const cv_dataset *queries, size_t k, cv_metric m,
		 char out[65]);

#endif
