/*
 * hfreshcrash.c - the crash points of the update path (hfreshformat.c's
 * commit and hfreshupdate.c's steps): HFRESH_CRASH_AT=N, or hfr_crash_arm,
 * kills the process with SIGKILL at the N-th point, so the tests can show
 * every step leaves a readable index. It calls nothing of HFresh.
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
