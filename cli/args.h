/*
 * args.h - one parser for the verbs' options: a verb describes its options
 * in a table (name, kind, where the value goes, its range, the line to
 * print when the value is bad) and cli_args_parse walks argv through it,
 * printing the verb's one-line usage errors (exit 2) as the verb words them.
 */
#ifndef CLI_ARGS_H
#define CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>

typedef enum cli_arg_kind {
	CLI_FLAG,   /* no value: *(int *) dst = set, or fn(NULL, dst) where fn is given */
	CLI_STR,    /* *(const char **) dst = the value */
	CLI_TEXT,   /* the same, and an empty value reads as missing */
	CLI_U64,    /* whole number in [lo, hi] into *(uint64_t *) dst */
	CLI_UINT,   /* the same into *(unsigned *) dst */
	CLI_SIZE_T, /* the same into *(size_t *) dst */
	CLI_DOUBLE, /* finite number into *(double *) dst (lo, hi unused) */
	CLI_FN,     /* fn(value, dst): 0 taken, -1 bad, -2 as if missing (the missing line) */
} cli_arg_kind;

typedef struct cli_opt {
	const char *name;  /* "--json" */
	const char *alias; /* "-q", or NULL */
	cli_arg_kind kind;
	void *dst;
	uint64_t lo, hi; /* CLI_U64/UINT/SIZE_T: the range */
	int set;         /* CLI_FLAG: the value stored */
	/*
	 * A bad value: a format with one %s, the value. NULL: "NAME wants a whole
	 * number in LO..HI, got 'V'" for numbers, "NAME wants a number, got 'V'".
	 */
	const char *bad;
	/*
	 * The value missing: a line without %s. NULL: the spec's missing line. A
	 * number's empty value or one starting with '-' reads as missing too.
	 */
	const char *missing;
	int (*fn)(const char *val, void *dst);
	int more; /* the following words not starting with '-' are values too (--pilot A B) */
} cli_opt;

typedef struct cli_spec {
	const char *verb;    /* as cli_usage names it ("index", "log publish") */
	const cli_opt *opts; /* ended by a {NULL} entry */
	int first;           /* argv index the options start at (1 when 0) */
	/*
	 * Operands (words not starting with '-'): up to maxpos into pos[], their
	 * count in *npos (or NULL: not kept).
	 */
	const char **pos;
	size_t maxpos, *npos;
	const char *unknown; /* format, %s the option; NULL: "unknown option '%s'" */
	/* format, %s the option, for a missing value; NULL: the unknown line */
	const char *missing;
	/* line (%s the operand) for an operand past maxpos; NULL: "unexpected argument '%s'" */
	const char *extra;
	int missing_first;   /* an unknown option as the last word reads as missing its value */
	int eq;              /* "--name=V" is also taken */
	int dash_operand;    /* "-" alone is an operand (stdin), not an option */
	int options_only;    /* no operands: every word is read as an option (unknown, or missing_first's) */
} cli_spec;

/* Table entries: a flag storing 1, a string, a number in [lo, hi], a converter; the end. */
#define CLI_OPT_FLAG(n, al, d) {.name = (n), .alias = (al), .kind = CLI_FLAG, .dst = (d), .set = 1}
#define CLI_OPT_SET(n, d, v) {.name = (n), .kind = CLI_FLAG, .dst = (d), .set = (v)}
#define CLI_OPT_STR(n, d) {.name = (n), .kind = CLI_STR, .dst = (d)}
#define CLI_OPT_NUM(n, k, d, l, h) {.name = (n), .kind = (k), .dst = (d), .lo = (l), .hi = (h)}
#define CLI_OPT_FN(n, d, f, b) {.name = (n), .kind = CLI_FN, .dst = (d), .fn = (f), .bad = (b)}
#define CLI_OPT_DO(n, al, d, f) {.name = (n), .alias = (al), .kind = CLI_FLAG, .dst = (d), .fn = (f)}
#define CLI_OPT_FNM(n, d, f, b, m) \
	{.name = (n), .kind = CLI_FN, .dst = (d), .fn = (f), .bad = (b), .missing = (m)}
#define CLI_OPT_STRM(n, d, m) {.name = (n), .kind = CLI_STR, .dst = (d), .missing = (m)}
#define CLI_OPT_TEXT(n, d, m) {.name = (n), .kind = CLI_TEXT, .dst = (d), .missing = (m)}
#define CLI_OPT_END {.name = NULL}
/* The spec's .unknown for verbs that name every stray word the same way. */
#define CLI_UNEXPECTED "unexpected argument '%s'"

/* Walk argv[first..] through spec; 0, or the usage exit with its line printed. */
int cli_args_parse(const cli_spec *spec, int argc, char **argv);

/* SIZE: digits with an optional K/M/G (KB, KiB) suffix; 0 or -1. */
int cli_parse_size(const char *s, uint64_t *out);

#endif
