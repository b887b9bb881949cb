/* Placeholder kind table until the in-memory HNSW kind lands; NULL members give -ENOTSUP. */
#include "index_ops.h"

const cv_index_ops cv_hnsw_ops = {.kind = "hnsw"};
