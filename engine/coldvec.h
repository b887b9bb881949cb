/*
 * coldvec.h - the public interface of libcoldvec, the engine under study.
 *
 * libcoldvec holds the indexes coldstudy measures (in-memory HNSW, paged
 * HNSW laid out as pgvector 0.5.1, the partitioned-HNSW comparator, HFresh)
 * and the block-I/O layer every index reads through, which counts every
 * read and can play any storage device through a device model.
 *
 * Error convention (liburing's): functions return 0 or a negative errno
 * and never set errno. Where a user must be told why (a corrupt file, a
 * bad spec string), an optional caller-owned cv_err receives one line
 * naming the file and byte offset. -EINVAL/-EOVERFLOW/-ENOENT: bad input
 * (coldstudy exit 5); -EBADMSG: checksum or format damage (exit 4).
 *
 * Ownership: objects returned through **out are new and freed with the
 * matching _free or _close function, which accepts NULL.
 *
 * This header only groups the part headers; each is self-contained.
 */
#ifndef COLDVEC_H
#define COLDVEC_H

#include "cv_base.h"
#include "cv_data.h"
#include "cv_io.h"
#include "cv_index.h"

#endif
