/*
 * hfresh.c - the HFresh kind's entry points for index.c's dispatcher.
 *
 * Where things live (STYLE 1): hfreshbuild.c builds, hfreshsearch.c opens
 * and queries, hfreshupdate.c inserts, deletes, splits, merges and
 * reassigns, hfreshverify.c checks, hfreshformat.c owns the bytes and
 * rabitq.c the codes. hfresh.h is the private header they share.
 */
#include "hfresh.h"

#include <signal.h>
#include <stdlib.h>

/* Set from HFRESH_CRASH_AT once; counts steps of the update path. */
static long crash_at = -2;
static long crash_step;

void hfr_crash_point(void)
{
	if (crash_at == -2) {
		const char *s = getenv("HFRESH_CRASH_AT");
		char *end = NULL;

		crash_at = s ? strtol(s, &end, 10) : -1;
		if (!s || !end || *end)
			crash_at = -1;
	}
	if (crash_at >= 0 && ++crash_step == crash_at)
		raise(SIGKILL);
}

void hfr_crash_arm(long n)
{
	crash_at = n > 0 ? n : -1;
	crash_step = 0;
}

const cv_index_ops cv_hfresh_ops = {
	.kind = "hfresh",
	.build = hfr_build,
	.open = hfr_open,
	.close = hfr_close,
	.dim = hfr_state_dim,
	.count = hfr_state_count,
	.metric = hfr_state_metric,
	.query = hfr_query,
	.verify = hfr_verify,
	.insert = hfr_insert,
	.del = hfr_delete,
};
