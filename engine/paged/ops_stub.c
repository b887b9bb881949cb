/* Placeholder kind tables until paged HNSW and phnsw land; NULL members give -ENOTSUP. */
#include "index_ops.h"

const cv_index_ops cv_paged_ops = {.kind = "paged"};
const cv_index_ops cv_phnsw_ops = {.kind = "phnsw"};
