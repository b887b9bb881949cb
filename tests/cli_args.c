/*
 * cli_args.c - the verbs' option parser (cli/args.c): each kind converts
 * into its destination, and each wrong argument gives the verb's one line
 * (the table's words) and exit 2: an unknown option, a value missing, out
 * of range or not a number, an operand too many, any bare word where the
 * verb takes no operands; --name=V where the verb takes it; '-' as an
 * operand where the verb reads stdin; SIZE's forms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cmds.h"

typedef struct dst {
	int flag, other;
	const char *str, *text;
	uint64_t u64;
	unsigned uns;
	size_t sz;
	double d;
	int fn_calls;
} dst;

static int take_even(const char *val, void *p)
{
	uint64_t v;

	if (!strcmp(val, "none"))
		return -2;
	if (cli_parse_u64(val, &v) || v % 2)
		return -1;
	((dst *) p)->fn_calls++;
	return 0;
}

static char line[4096];
static int options_only; /* the spec's options_only for the next parse */

/* Parse argv (NULL-ended) through the test table; the line printed, if any, in line. */
static int parse(dst *d, const char **pos, size_t *np, int eq, int dash_operand, int missing_first,
		 const char **words)
{
	cli_opt opts[] = {
		CLI_OPT_FLAG("--flag", "-f", &d->flag),
		CLI_OPT_SET("--no-other", &d->other, 7),
		CLI_OPT_STR("--str", &d->str),
		CLI_OPT_TEXT("--text", &d->text, "--text needs a text"),
		CLI_OPT_NUM("--u64", CLI_U64, &d->u64, 1, 10),
		CLI_OPT_NUM("--uns", CLI_UINT, &d->uns, 0, 4096),
		CLI_OPT_NUM("--sz", CLI_SIZE_T, &d->sz, 5, 5),
		{.name = "--d", .kind = CLI_DOUBLE, .dst = &d->d, .bad = "--d: not a number '%s'"},
		{.name = "--even", .kind = CLI_FN, .dst = d, .fn = take_even, .bad = "--even wants even, got '%s'",
		 .missing = "--even needs a number"},
		{.name = "--evens", .kind = CLI_FN, .dst = d, .fn = take_even, .missing = "--evens needs numbers",
		 .more = 1},
		CLI_OPT_END,
	};
	cli_spec spec = {.verb = "t", .opts = opts, .pos = pos, .maxpos = 2, .npos = np,
			 .unknown = "unknown option '%s'", .missing = "%s needs a value",
			 .extra = "one '%s' too many", .eq = eq, .dash_operand = dash_operand,
			 .missing_first = missing_first, .options_only = options_only};
	char *argv[32];
	int argc = 0, rc, saved = dup(2);
	FILE *f = tmpfile();
	size_t n;

	assert_non_null(f);
	argv[argc++] = (char *) "t";
	for (; *words; words++)
		argv[argc++] = (char *) *words;
	argv[argc] = NULL;
	fflush(stderr);
	dup2(fileno(f), 2);
	rc = cli_args_parse(&spec, argc, argv);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(line, 1, sizeof(line) - 1, f);
	line[n] = 0;
	fclose(f);
	return rc;
}

#define PARSE(d, pos, np, eq, dash, mf, ...) parse(d, pos, np, eq, dash, mf, (const char *[]){__VA_ARGS__, NULL})

static void t_kinds(void **state)
{
	dst d = {0};
	const char *pos[2] = {0};
	size_t np = 0;

	(void) state;
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "a", "-f", "--no-other", "--str", "-x-", "--text",
			       "t", "--u64", "10", "--uns", "4096", "--sz", "5", "--d", "-2.5", "--even",
			       "4", "b"),
			 0);
	assert_string_equal(line, "");
	assert_int_equal(d.flag, 1);
	assert_int_equal(d.other, 7);
	assert_string_equal(d.str, "-x-"); /* a value may start with '-' */
	assert_string_equal(d.text, "t");
	assert_int_equal(d.u64, 10);
	assert_int_equal(d.uns, 4096);
	assert_int_equal(d.sz, 5);
	assert_true(d.d == -2.5);
	assert_int_equal(d.fn_calls, 1);
	assert_int_equal(np, 2);
	assert_string_equal(pos[0], "a");
	assert_string_equal(pos[1], "b");
}

static void t_errors(void **state)
{
	dst d = {0};
	const char *pos[2] = {0};
	size_t np = 0;

	(void) state;
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--bogus", "v"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: unknown option '--bogus' (try 'coldstudy t --help')\n");
	np = 0;
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--u64", "11"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: --u64 wants a whole number in 1..10, got '11' (try "
				  "'coldstudy t --help')\n");
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--u64", "+3"), CS_EXIT_USAGE);
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--uns", "-1"), CS_EXIT_USAGE);
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--d", "1e999"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: --d: not a number '1e999' (try 'coldstudy t --help')\n");
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--str"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: --str needs a value (try 'coldstudy t --help')\n");
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--text", ""), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: --text needs a text (try 'coldstudy t --help')\n");
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--even", "3"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: --even wants even, got '3' (try 'coldstudy t --help')\n");
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--even", "none"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: --even needs a number (try 'coldstudy t --help')\n");
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--even"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: --even needs a number (try 'coldstudy t --help')\n");
	assert_int_equal(d.fn_calls, 0);
	/* an unknown option as the last word: unknown, or missing its value where the verb says so */
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--bogus"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: unknown option '--bogus' (try 'coldstudy t --help')\n");
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 1, "--bogus"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: --bogus needs a value (try 'coldstudy t --help')\n");
	np = 0;
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "a", "b", "c"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: one 'c' too many (try 'coldstudy t --help')\n");
	/* options_only: a bare word is an unknown option, missing its value when last (data gt) */
	options_only = 1;
	np = 0;
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "a", "--flag"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: unknown option 'a' (try 'coldstudy t --help')\n");
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 1, "--flag", "a"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: a needs a value (try 'coldstudy t --help')\n");
	assert_int_equal(np, 0);
	options_only = 0;
}

static void t_more(void **state)
{
	dst d = {0};
	const char *pos[2] = {0};
	size_t np = 0;

	(void) state;
	/* a value, then every following word not starting with '-' (plan power --pilot A B) */
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--evens", "2", "4", "6", "-f", "a"), 0);
	assert_int_equal(d.fn_calls, 3);
	assert_int_equal(d.flag, 1);
	assert_int_equal(np, 1);
	assert_string_equal(pos[0], "a");
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--evens", "2", "3"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: --evens wants a number, got '3' (try 'coldstudy t --help')\n");
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--evens"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: --evens needs numbers (try 'coldstudy t --help')\n");
}

static void t_eq_and_dash(void **state)
{
	dst d = {0};
	const char *pos[2] = {0};
	size_t np = 0;

	(void) state;
	/* --name=V only where the verb takes it; never for a flag */
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "--str=x"), CS_EXIT_USAGE);
	assert_int_equal(PARSE(&d, pos, &np, 1, 0, 0, "--str=x", "--u64=3", "--text="), CS_EXIT_USAGE);
	assert_string_equal(d.str, "x");
	assert_int_equal(d.u64, 3);
	assert_string_equal(line, "coldstudy t: --text needs a text (try 'coldstudy t --help')\n");
	assert_int_equal(PARSE(&d, pos, &np, 1, 0, 0, "--flag=1"), CS_EXIT_USAGE);
	assert_int_equal(PARSE(&d, pos, &np, 1, 0, 0, "--strx=1"), CS_EXIT_USAGE);
	assert_string_equal(line, "coldstudy t: unknown option '--strx=1' (try 'coldstudy t --help')\n");
	/* '-' is an option unless the verb reads stdin */
	assert_int_equal(PARSE(&d, pos, &np, 0, 0, 0, "-"), CS_EXIT_USAGE);
	np = 0;
	assert_int_equal(PARSE(&d, pos, &np, 0, 1, 0, "-"), 0);
	assert_int_equal(np, 1);
	assert_string_equal(pos[0], "-");
}

static void t_size(void **state)
{
	uint64_t v = 0;

	(void) state;
	assert_int_equal(cli_parse_size("8192", &v), 0);
	assert_int_equal(v, 8192);
	assert_int_equal(cli_parse_size("8K", &v), 0);
	assert_int_equal(v, 8192);
	assert_int_equal(cli_parse_size("2MiB", &v), 0);
	assert_int_equal(v, 2u << 20);
	assert_int_equal(cli_parse_size("1gB", &v), 0);
	assert_int_equal(v, 1u << 30);
	assert_int_equal(cli_parse_size("1X", &v), -1);
	assert_int_equal(cli_parse_size("1KX", &v), -1);
	assert_int_equal(cli_parse_size("-1", &v), -1);
	assert_int_equal(cli_parse_size("", &v), -1);
	assert_int_equal(cli_parse_size("17179869184G", &v), -1); /* past 2^64 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_kinds),
		cmocka_unit_test(t_errors),
		cmocka_unit_test(t_eq_and_dash),
		cmocka_unit_test(t_more),
		cmocka_unit_test(t_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
