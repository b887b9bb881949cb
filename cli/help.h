/*
 * help.h - the verbs' help texts, kept as text in cli/help/NAME.txt and
 * embedded at build time (cli/help/embed.py writes the table below into
 * the build folder); printed byte for byte as the files hold them.
 */
#ifndef CLI_HELP_H
#define CLI_HELP_H

#include <stdio.h>

typedef struct cli_help_text {
	const char *name; /* the file's name without .txt: "run", "log-publish" */
	const char *text;
} cli_help_text;

/* The table, ended by {NULL, NULL} (generated: help_texts.c). */
extern const cli_help_text cli_help_texts[];

/* Print the help text NAME to f and return rc (an internal error when NAME has no file). */
int cli_help(const char *name, FILE *f, int rc);

#endif
