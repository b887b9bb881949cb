/*
 * refuse.h - the one way a guard says no (refuse.c).
 *
 * Below every other unit of guards/: the production checks (prodset.c),
 * the outputs (output.c), the order of a study (order.c) and guard.c all
 * refuse through it, and it calls none of them (only held.c's spelling
 * and the ledger).
 */
#ifndef GUARD_REFUSE_H
#define GUARD_REFUSE_H

#include "cs.h"

struct ledger;

/*
 * Append a refusal record {"guard","verb","target","why"} (when l is set;
 * target_resolved beside target where a held descriptor stood for it) and
 * fill e; returns CS_EXIT_REFUSED. A transaction the verb has open is
 * rolled back first: a refusal changes nothing but its own record.
 */
int guard_refuse(struct ledger *l, const char *guard, const char *verb, const char *target,
		 cs_err *e, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#endif
