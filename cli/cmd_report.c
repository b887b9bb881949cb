/* Placeholder verbs until reports land: they say so and exit 1. */
#include "cmds.h"

#include <stdio.h>

int cmd_report(int argc, char **argv)
{
	(void) argc;
	fprintf(stderr, "coldstudy %s: not built yet\n", argv[0]);
	return CS_EXIT_INTERNAL;
}

int cmd_log_publish(int argc, char **argv)
{
	(void) argc;
	fprintf(stderr, "coldstudy log %s: not built yet\n", argv[0]);
	return CS_EXIT_INTERNAL;
}
