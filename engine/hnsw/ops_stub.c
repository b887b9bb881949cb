/* Placeholder kind tables until the HNSW kinds land; every member NULL gives -ENOTSUP. */
#include "index_ops.h"

const cv_index_ops cv_hnsw_ops = {.kind = "hnsw"};
const cv_index_ops cv_paged_ops = {.kind = "paged"};
const cv_index_ops cv_phnsw_ops = {.kind = "phnsw"};
