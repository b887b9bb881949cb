/*
 * refuse.c - a refusal is itself evidence: recorded, then said in one line
 * (refuse.h). The user's own spelling is kept (guard_spell maps a live
 * hold's /proc/PID/fd/N back to the words typed).
 */
#include "refuse.h"
#include "held.h"

#include "ledger.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int guard_refuse(struct ledger *l, const char *guard, const char *verb, const char *target,
		 cs_err *e, const char *whyfmt, ...)
{
	char raw[CS_ERR_MAX], why[CS_ERR_MAX], typed[4200], resolved[4200];
	va_list ap;
	json_t *p;

	va_start(ap, whyfmt);
	vsnprintf(raw, sizeof(raw), whyfmt, ap);
	va_end(ap);
	/* the user's words, never a held descriptor's /proc path (see guard_spell) */
	guard_spell(raw, 0, why, sizeof(why));
	guard_spell(target ? target : "", 0, typed, sizeof(typed));
	guard_spell(target ? target : "", 1, resolved, sizeof(resolved));
	if (l) {
		cs_err le = {0};

		/* a refusal changes nothing but its own record: drop what the verb began */
		ledger_rollback(l);
		p = json_pack("{s:s, s:s, s:s, s:s}", "guard", guard, "verb", verb, "target", typed,
			      "why", why);
		/* what the typed target resolved to, where a held descriptor stood for it */
		if (p && strcmp(typed, resolved))
			json_object_set_new(p, "target_resolved", json_string(resolved));
		if (!p || ledger_append(l, "refusal", p, NULL, &le))
			fprintf(stderr, "coldstudy %s: warning: refusal not recorded: %s\n", verb,
				le.msg);
		json_decref(p);
	}
	return cs_err_set(e, CS_EXIT_REFUSED, "refused (%s): %s", guard, why);
}
