/*
 * cmd_harness.c - the harness's verbs: validate, clone, run, study.
 * Argument parsing only; the work is in harness/ and guards/.
 */
#include "cmds.h"

#include "args.h"
#include "guard.h"
#include "harness.h"
#include "ledger.h"
#include "report.h"
#include "verbs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* clone's --pg-port: 1..65535 */
static int take_port(const char *val, void *dst)
{
	char *end;
	long v = strtol(val, &end, 10);

	if (*end || v < 1 || v > 65535)
		return -1;
	*(int *) dst = (int) v;
	return 0;
}

/* run's -q: no id but the first line, and no progress */
typedef struct run_flags {
	harness_run_opts *o;
	int *quiet;
} run_flags;

static int take_quiet(const char *val, void *dst)
{
	run_flags *f = dst;

	(void) val;
	*f->quiet = 1;
	f->o->progress = 0;
	return 0;
}

int cmd_validate(int argc, char **argv)
{
	harness_validate_opts o = {0};
	const char *dir = NULL;
	int json = 0, rc;
	cs_err e = {0};

	if (cli_wants_help(argc, argv))
		return cli_help("validate", stdout, CS_EXIT_OK);
	{
		const cli_opt opts[] = {
			CLI_OPT_FLAG("--allow-no-device-stats", NULL, &o.allow_no_device_stats),
			CLI_OPT_FLAG("--quiet", "-q", &o.quiet),
			CLI_OPT_FLAG("--json", NULL, &json),
			CLI_OPT_END,
		};
		const cli_spec spec = {.verb = argv[0], .opts = opts, .pos = &dir, .maxpos = 1};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!dir)
		return cli_usage(argv[0], "missing study directory");
	return harness_validate_verb(dir, &o, json, stdout, &e) ? cli_fail(argv[0], &e) : CS_EXIT_OK;
}

int cmd_clone(int argc, char **argv)
{
	harness_clone_args a = {.pg_port = 0}; /* 0: the port the running server registered */
	cs_err e = {0};
	int rc;

	if (cli_wants_help(argc, argv))
		return cli_help("clone", stdout, CS_EXIT_OK);
	{
		const cli_opt opts[] = {
			CLI_OPT_STRM("--study", &a.study, "--study needs a directory"),
			CLI_OPT_STRM("--pg-socket", &a.pg_socket, "--pg-socket needs a directory"),
			CLI_OPT_FNM("--pg-port", &a.pg_port, take_port, "--pg-port: '%s' is not a port number",
				    "--pg-port needs a port number"),
			CLI_OPT_END,
		};
		const char *pos[2] = {NULL, NULL};
		const cli_spec spec = {.verb = argv[0], .opts = opts, .pos = pos, .maxpos = 2};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
		a.src = pos[0];
		a.dst = pos[1];
	}
	if (!a.src || !a.dst)
		return cli_usage(argv[0], "need SRC and DST");
	return harness_clone_verb(&a, stdout, &e) ? cli_fail(argv[0], &e) : CS_EXIT_OK;
}

/* What `run` prints after each replicate: its id (and summary), or its record. */
typedef struct run_out {
	const char *dir;
	int quiet, json, rc;
} run_out;

static void run_done(const char *run_id, void *ud)
{
	run_out *ro = ud;
	cs_err e = {0};

	if (ro->json) {
		int r = report_run_json_print(ro->dir, run_id, stdout, &e) ? cli_fail("run", &e) : 0;

		if (r && !ro->rc)
			ro->rc = r;
		return;
	}
	printf("%s\n", run_id);
	if (!ro->quiet && report_run_summary_print(ro->dir, run_id, stdout, &e))
		fprintf(stderr, "coldstudy run: warning: %s recorded, but no summary: %s\n", run_id, e.msg);
	fflush(stdout);
}

int cmd_run(int argc, char **argv)
{
	harness_run_opts o = {0};
	const char *dir = NULL, *spec = NULL;
	int quiet = 0, json = 0;
	cs_err e = {0};

	if (cli_wants_help(argc, argv))
		return cli_help("run", stdout, CS_EXIT_OK);
	if (argc > 1 && !strcmp(argv[1], "show"))
		return cmd_run_show(argc - 1, argv + 1);
	o.progress = -1;
	{
		char rbad[96];
		const char *pos[2] = {NULL, NULL};
		run_flags rf = {.o = &o, .quiet = &quiet};
		const cli_opt opts[] = {
			CLI_OPT_DO("--quiet", "-q", &rf, take_quiet),
			CLI_OPT_FLAG("--json", NULL, &json),
			CLI_OPT_FLAG("--holdout", NULL, &o.holdout),
			CLI_OPT_FLAG("--enforce-clean", NULL, &o.enforce_clean),
			CLI_OPT_SET("--progress", &o.progress, 1),
			CLI_OPT_SET("--no-progress", &o.progress, 0),
			{.name = "--seed", .kind = CLI_U64, .dst = &o.seed, .hi = HARNESS_SEED_MAX,
			 .bad = "--seed '%s': not a number from 0 to 2^53-1",
			 .missing = "--seed needs a number (0 to 2^53-1)"},
			{.name = "--replicate", .kind = CLI_UINT, .dst = &o.replicate, .lo = 1,
			 .hi = HARNESS_REPLICATES_MAX, .bad = rbad,
			 .missing = "--replicate needs a number (1 to the spec's replicates)"},
			CLI_OPT_TEXT("--declare-overlap", &o.declare_overlap, "--declare-overlap needs a text"),
			CLI_OPT_END,
		};
		const cli_spec cs = {.verb = argv[0], .opts = opts, .pos = pos, .maxpos = 2};
		int rc;

		snprintf(rbad, sizeof(rbad), "--replicate '%%s': not a number from 1 to %u",
			 HARNESS_REPLICATES_MAX);
		o.seed = UINT64_MAX; /* past HARNESS_SEED_MAX: no --seed */
		if ((rc = cli_args_parse(&cs, argc, argv)))
			return rc;
		o.has_seed = o.seed != UINT64_MAX;
		o.seed = o.has_seed ? o.seed : 0;
		dir = pos[0];
		spec = pos[1];
	}
	if (!dir || !spec)
		return cli_usage(argv[0], "need DIR and run.json");
	if (quiet && o.progress > 0)
		return cli_usage(argv[0], "--quiet and --progress contradict each other");
	{
		run_out ro = {.dir = dir, .quiet = quiet, .json = json};

		if (harness_run_replicates(dir, spec, &o, run_done, &ro, &e))
			return cli_fail(argv[0], &e);
		return ro.rc;
	}
}

int cmd_study(int argc, char **argv)
{
	cs_err e = {0};

	if (cli_wants_help(argc, argv) || argc < 2)
		return cli_help("study", stdout, cli_wants_help(argc, argv) ? CS_EXIT_OK : CS_EXIT_USAGE);
	if (!strcmp(argv[1], "register")) {
		const char *dir = NULL, *path = NULL, *rationale = NULL;
		int64_t seq = 0;
		int amend = 0;

		const cli_opt opts[] = {
			CLI_OPT_FLAG("--amend", NULL, &amend),
			CLI_OPT_STR("--rationale", &rationale),
			CLI_OPT_END,
		};
		const char *pos[2] = {NULL, NULL};
		const cli_spec spec = {.verb = argv[0], .opts = opts, .first = 2, .pos = pos,
				       .maxpos = 2};
		int rc;

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
		dir = pos[0];
		path = pos[1];
		if (!dir || !path)
			return cli_usage(argv[0], "register needs DIR and study.json");
		if (amend != (rationale != NULL) || (rationale && !*rationale))
			return cli_usage(argv[0], "--amend and --rationale TEXT go together");
		if (harness_study_register_amend(dir, path, rationale, &seq, &e))
			return cli_fail(argv[0], &e);
		printf("study registered as record %lld\n", (long long) seq);
		return CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "show")) {
		const char *dir = NULL;
		/* The study is JSON already: --json is accepted like every verb's. */
		int json = 0, rc;
		const cli_opt opts[] = {CLI_OPT_FLAG("--json", NULL, &json), CLI_OPT_END};
		const cli_spec spec = {.verb = argv[0], .opts = opts, .first = 2, .pos = &dir,
				       .maxpos = 1, .extra = "show takes one DIR"};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
		if (!dir)
			return cli_usage(argv[0], "show needs DIR");
		return harness_study_print(dir, stdout, &e) ? cli_fail(argv[0], &e) : CS_EXIT_OK;
	}
	return cli_usage(argv[0], "unknown subcommand '%s' (register, show)", argv[1]);
}
