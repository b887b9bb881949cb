/*
 * hfresh.c - the HFresh kind's entry points for index.c's dispatcher.
 *
 * Where things live (STYLE 1): hfreshbuild.c builds, hfreshsearch.c opens
 * and queries, hfreshupdate.c inserts, deletes, splits, merges and
 * reassigns, hfreshverify.c checks, hfreshformat.c owns the bytes and
 * rabitq.c the codes, hfreshcrash.c the update path's crash points.
 * hfresh.h is the private header they share.
 */
#include "hfresh.h"

#include <signal.h>
#include <stdlib.h>

const cv_index_ops cv_hfresh_ops = {
	.kind = "hfresh",
	.build = hfr_build,
	.open = hfr_open,
	.close = hfr_close,
	.dim = hfr_state_dim,
	.count = hfr_state_count,
	.metric = hfr_state_metric,
	.drop_buffers = hfr_drop_buffers,
	.query = hfr_query,
	.verify = hfr_verify,
	.insert = hfr_insert,
	.del = hfr_delete,
};
