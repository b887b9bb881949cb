/*
 * args.c - the verbs' option tables walked over argv (args.h): each value
 * converted into its destination, or the verb's one-line usage error.
 */
#include "args.h"

#include "cmds.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The option argv[*i] names; *val its "=V" part when spec->eq allows it. */
static const cli_opt *find(const cli_spec *spec, const char *w, const char **val)
{
	*val = NULL;
	for (const cli_opt *o = spec->opts; o->name; o++) {
		size_t n = strlen(o->name);

		if (!strcmp(w, o->name) || (o->alias && !strcmp(w, o->alias)))
			return o;
		if (spec->eq && o->kind != CLI_FLAG && !strncmp(w, o->name, n) && w[n] == '=') {
			*val = w + n + 1;
			return o;
		}
	}
	return NULL;
}

static int take(const cli_spec *spec, const cli_opt *o, const char *v)
{
	uint64_t u;
	double d;

	switch (o->kind) {
	case CLI_FLAG:
		if (o->fn)
			o->fn(NULL, o->dst);
		else
			*(int *) o->dst = o->set;
		return 0;
	case CLI_TEXT:
		if (!v[0])
			return cli_usage(spec->verb, "%s", o->missing);
		/* fall through */
	case CLI_STR:
		*(const char **) o->dst = v;
		return 0;
	case CLI_U64:
	case CLI_UINT:
	case CLI_SIZE_T:
		if (o->missing && (!v[0] || v[0] == '-'))
			return cli_usage(spec->verb, "%s", o->missing);
		if (cli_parse_u64(v, &u) || u < o->lo || u > o->hi)
			break;
		if (o->kind == CLI_U64)
			*(uint64_t *) o->dst = u;
		else if (o->kind == CLI_UINT)
			*(unsigned *) o->dst = (unsigned) u;
		else
			*(size_t *) o->dst = (size_t) u;
		return 0;
	case CLI_DOUBLE:
		if (cli_parse_double(v, &d))
			break;
		*(double *) o->dst = d;
		return 0;
	case CLI_FN:
		switch (o->fn(v, o->dst)) {
		case 0:
			return 0;
		case -2:
			return cli_usage(spec->verb, "%s", o->missing);
		}
		break;
	}
	if (o->bad)
		return cli_usage(spec->verb, o->bad, v);
	if (o->kind == CLI_DOUBLE || o->kind == CLI_FN)
		return cli_usage(spec->verb, "%s wants a number, got '%s'", o->name, v);
	return cli_usage(spec->verb, "%s wants a whole number in %llu..%llu, got '%s'", o->name,
			 (unsigned long long) o->lo, (unsigned long long) o->hi, v);
}

int cli_args_parse(const cli_spec *in, int argc, char **argv)
{
	size_t n = 0;
	cli_spec sp = *in, *spec = &sp;

	sp.unknown = sp.unknown ? sp.unknown : "unknown option '%s'";
	sp.extra = sp.extra ? sp.extra : "unexpected argument '%s'";
	sp.npos = sp.npos ? sp.npos : &n;
	for (int i = spec->first ? spec->first : 1; i < argc; i++) {
		const char *w = argv[i], *v;
		const cli_opt *o = find(spec, w, &v);
		int rc;

		if (!o && !spec->options_only && (w[0] != '-' || (spec->dash_operand && !w[1]))) {
			if (!spec->pos || *spec->npos >= spec->maxpos)
				return cli_usage(spec->verb, spec->extra, w);
			spec->pos[(*spec->npos)++] = w;
			continue;
		}
		if (!o) {
			if (spec->missing_first && i + 1 >= argc)
				return cli_usage(spec->verb, spec->missing, w);
			return cli_usage(spec->verb, spec->unknown, w);
		}
		if (o->kind != CLI_FLAG && !v) {
			if (i + 1 >= argc) {
				if (o->missing)
					return cli_usage(spec->verb, "%s", o->missing);
				return cli_usage(spec->verb, spec->missing ? spec->missing : spec->unknown, w);
			}
			v = argv[++i];
		}
		if ((rc = take(spec, o, v)))
			return rc;
		while (o->more && i + 1 < argc && argv[i + 1][0] != '-')
			if ((rc = take(spec, o, argv[++i])))
				return rc;
	}
	return 0;
}

/* SIZE: digits with an optional K/M/G suffix. */
int cli_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end == 'k' || *end == 'K')
		mul = 1ull << 10;
	else if (*end == 'm' || *end == 'M')
		mul = 1ull << 20;
	else if (*end == 'g' || *end == 'G')
		mul = 1ull << 30;
	else if (*end)
		return -1;
	if (*end && (end[1] && strcmp(end + 1, "B") && strcmp(end + 1, "iB")))
		return -1;
	if (v > UINT64_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}
