/*
 * util.c - small helpers shared by the verbs: error printing, strict
 * number parsing.
 */
#include "cmds.h"

#include "guard.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_fail(const char *verb, const cs_err *e)
{
	fprintf(stderr, "coldstudy %s: %s\n", verb, e->msg[0] ? cli_spell(e->msg) : "failed");
	return e->code ? e->code : CS_EXIT_INTERNAL;
}

const char *cli_spell(const char *text)
{
	static char buf[CS_ERR_MAX + 4096];

	guard_spell(text, 0, buf, sizeof(buf));
	return buf;
}

int cli_usage(const char *verb, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "coldstudy %s: ", verb);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try 'coldstudy %s --help')\n", verb);
	return CS_EXIT_USAGE;
}

int cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	}
	return 0;
}

int cli_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int cli_parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}
