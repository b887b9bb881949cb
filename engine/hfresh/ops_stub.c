/* Placeholder kind table until HFresh lands; every member NULL gives -ENOTSUP. */
#include "index_ops.h"

const cv_index_ops cv_hfresh_ops = {.kind = "hfresh"};
