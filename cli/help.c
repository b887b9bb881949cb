/*
 * help.c - a verb's help text (help.h) printed from the embedded table.
 */
#include "help.h"

#include "cs.h"

#include <string.h>

int cli_help(const char *name, FILE *f, int rc)
{
	for (const cli_help_text *h = cli_help_texts; h->name; h++)
		if (!strcmp(h->name, name)) {
			fputs(h->text, f);
			return rc;
		}
	fprintf(stderr, "coldstudy: no help text '%s'\n", name);
	return CS_EXIT_INTERNAL;
}
