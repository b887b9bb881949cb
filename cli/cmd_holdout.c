/* Placeholder verbs until their part lands: they say so and exit 1. */
#include "cmds.h"

#include <stdio.h>

int cmd_holdout(int argc, char **argv)
{
	(void) argc;
	fprintf(stderr, "coldstudy %s: not built yet\n", argv[0]);
	return CS_EXIT_INTERNAL;
}

int cmd_refute(int argc, char **argv)
{
	(void) argc;
	fprintf(stderr, "coldstudy %s: not built yet\n", argv[0]);
	return CS_EXIT_INTERNAL;
}

int cmd_verdicts(int argc, char **argv)
{
	(void) argc;
	fprintf(stderr, "coldstudy %s: not built yet\n", argv[0]);
	return CS_EXIT_INTERNAL;
}

int cmd_deviate(int argc, char **argv)
{
	(void) argc;
	fprintf(stderr, "coldstudy %s: not built yet\n", argv[0]);
	return CS_EXIT_INTERNAL;
}

