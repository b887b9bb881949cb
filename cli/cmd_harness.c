/*
 * cmd_harness.c - the harness's verbs: validate, clone, run, study.
 * Argument parsing only; the work is in harness/ and guards/.
 */
#include "cmds.h"

#include "args.h"
#include "guard.h"
#include "harness.h"
#include "ledger.h"

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

/* a whole number from lo to max (strtoull's spelling); -2 when val is empty or an option */
static int take_count(const char *val, unsigned long long lo, unsigned long long max,
		      unsigned long long *out)
{
	char *end = NULL;

	if (!val[0] || val[0] == '-')
		return -2;
	errno = 0;
	*out = strtoull(val, &end, 10);
	return errno || !end || *end || *out < lo || *out > max ? -1 : 0;
}

static int take_seed(const char *val, void *dst)
{
	harness_run_opts *o = dst;
	unsigned long long v;
	int rc = take_count(val, 0, HARNESS_SEED_MAX, &v);

	o->seed = rc ? o->seed : (uint64_t) v;
	o->has_seed |= !rc;
	return rc;
}

static int take_replicate(const char *val, void *dst)
{
	harness_run_opts *o = dst;
	unsigned long long v;
	int rc = take_count(val, 1, HARNESS_REPLICATES_MAX, &v);

	o->replicate = rc ? o->replicate : (unsigned) v;
	return rc;
}

int cmd_validate(int argc, char **argv)
{
	harness_validate_opts o = {0};
	const char *dir = NULL;
	int json = 0, rc;
	cs_err e = {0};

	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy validate DIR [--allow-no-device-stats] [-q|--quiet] [--json]\n\n"
		       "Run the checks that must pass before any study run, each a validation record:\n"
		       "ledger verifies, clock monotonic, O_DIRECT, io_uring, eviction (residency 0.0\n"
		       "on every index file; of a PostgreSQL clone, its top-level files and a sample\n"
		       "of base/ and global/), engine vs block-device read counts (ratio in [0.9, 1.1]),\n"
		       "the guard refuses a planted production path, the clone marker validates, host;\n"
		       "per hypothesis can-fail:Hn, power:Hn (interval decisions) and model-check:Hn:\n"
		       "each comparison of its rules classified by what decides it (the engine, a real\n"
		       "device, or the device model's parameters; docs/device-model.md).\n"
		       "--allow-no-device-stats waives the device comparison where the device has no\n"
		       "stats, recorded as a deviation. Exit 4 when a check failed. --json prints\n"
		       "the batch's validation records as a JSON array instead of the lines.\n");
		return CS_EXIT_OK;
	}
	{
		const cli_opt opts[] = {
			CLI_OPT_FLAG("--allow-no-device-stats", NULL, &o.allow_no_device_stats),
			CLI_OPT_FLAG("--quiet", "-q", &o.quiet),
			CLI_OPT_FLAG("--json", NULL, &json),
			CLI_OPT_END,
		};
		size_t np = 0;
		const cli_spec spec = {.verb = argv[0], .opts = opts, .pos = &dir, .maxpos = 1, .npos = &np,
				       .unknown = "unknown option '%s'", .extra = "unexpected argument '%s'"};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!dir)
		return cli_usage(argv[0], "missing study directory");
	if (json) {
		o.quiet = 1;
		o.results = json_array();
	}
	rc = harness_validate(dir, &o, &e);
	if (json && json_array_size(o.results)) {
		/* The records, also when a check failed (exit 4 below says so). */
		json_dumpf(o.results, stdout, JSON_INDENT(2));
		putchar('\n');
	}
	json_decref(o.results);
	return rc ? cli_fail(argv[0], &e) : CS_EXIT_OK;
}

int cmd_clone(int argc, char **argv)
{
	const char *src = NULL, *dst = NULL, *study = NULL, *pg_socket = NULL;
	harness_clone_info info;
	int pg_port = 0; /* 0: the port the running server registered */
	ledger *l = NULL;
	guard_held held;
	json_t *note;
	cs_err e = {0};
	int rc;

	guard_held_init(&held);
	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy clone SRC DST [--study DIR] [--pg-socket DIR [--pg-port N]]\n\n"
		       "Clone index directory SRC into DST (which must not exist): FICLONE reflinks\n"
		       "where the file system can, a full copy otherwise, recorded as which in the\n"
		       "clone marker DST/.coldstudy-clone (bound to DST's device and inode, each\n"
		       "file's inode and size, and SRC's content hash). DST is resolved once and\n"
		       "refused (exit 3) when it is, lies inside, or contains a production item of\n"
		       "the machine registry (and, with --study, of the study); it is created beneath\n"
		       "its held parent and filled through the held directory. With --study the\n"
		       "marker is authenticated with the study's clone key (HMAC-SHA-256) and the\n"
		       "clone is noted in the ledger; only such clones are accepted by `run`.\n\n"
		       "SRC may be a PostgreSQL data directory: every directory is made, owner and\n"
		       "modes kept; its tablespaces (pg_tblspc/OID) are cloned beside DST, in\n"
		       "DST.tblspc/OID (refused, exit 3, when that is production), and the clone's\n"
		       "links repointed there. A running cluster is refused (exit 5) unless\n"
		       "--pg-socket DIR [--pg-port N] names its server's socket: then it is copied\n"
		       "through the low-level backup API (pg_backup_start, the files,\n"
		       "pg_backup_stop, pg_wal and the backup_label), the server checked to run on\n"
		       "SRC itself; without --pg-port, on the port the server registered in\n"
		       "SRC/postmaster.pid. A running cluster with tablespaces is refused (exit 5).\n");
		return CS_EXIT_OK;
	}
	{
		const cli_opt opts[] = {
			CLI_OPT_STRM("--study", &study, "--study needs a directory"),
			CLI_OPT_STRM("--pg-socket", &pg_socket, "--pg-socket needs a directory"),
			CLI_OPT_FNM("--pg-port", &pg_port, take_port, "--pg-port: '%s' is not a port number",
				    "--pg-port needs a port number"),
			CLI_OPT_END,
		};
		const char *pos[2] = {NULL, NULL};
		size_t np = 0;
		const cli_spec spec = {.verb = argv[0], .opts = opts, .pos = pos, .maxpos = 2, .npos = &np,
				       .unknown = "unknown option '%s'", .extra = "unexpected argument '%s'"};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
		src = pos[0];
		dst = pos[1];
	}
	if (!src || !dst)
		return cli_usage(argv[0], "need SRC and DST");
	if (study && (rc = ledger_open(study, &l, &e)))
		goto out;
	rc = harness_clone_target(l, dst, &held, &e);
	if (rc)
		goto out;
	rc = harness_clone_cluster(src, guard_held_via(&held), study, pg_socket, pg_port, &info, &e);
	if (rc) {
		guard_held_rmdir(&held); /* the empty DST made for it, by name in its held parent */
		goto out;
	}
	printf("%s: %s of %llu files (%llu bytes, %llu reflinked), source sha256 %s\n", dst,
	       info.method, (unsigned long long) info.files, (unsigned long long) info.bytes,
	       (unsigned long long) info.reflinked_files, info.source_sha256);
	if (l) {
		note = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "text", "clone", "source", src,
				 "clone", dst, "method", info.method, "source_sha256",
				 info.source_sha256, "files", (json_int_t) info.files);
		rc = ledger_append(l, "note", note, NULL, &e);
		json_decref(note);
	}
out:
	guard_held_close(&held);
	ledger_close(l);
	return rc ? cli_fail(argv[0], &e) : CS_EXIT_OK;
}

/* What `run` prints after each replicate: its id (and summary), or its record. */
typedef struct run_out {
	const char *dir;
	int quiet, json, rc;
} run_out;

static void run_done(const char *run_id, void *ud)
{
	run_out *ro = ud;

	if (ro->json) {
		int r = cli_run_json(ro->dir, run_id);

		if (r && !ro->rc)
			ro->rc = r;
		return;
	}
	printf("%s\n", run_id);
	if (!ro->quiet)
		cli_run_summary(ro->dir, run_id);
	fflush(stdout);
}

int cmd_run(int argc, char **argv)
{
	harness_run_opts o = {0};
	const char *dir = NULL, *spec = NULL;
	int quiet = 0, json = 0;
	cs_err e = {0};

	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy run DIR run.json [--holdout] [--enforce-clean] [--seed S]\n"
		       "                    [--replicate I]\n"
		       "                    [--declare-overlap TEXT] [--progress|--no-progress]\n"
		       "                    [-q|--quiet] [--json]\n"
		       "       coldstudy run show DIR RUN_ID [--queries | --series [NAME]]\n"
		       "                          [--csv|--jsonl|--json]\n\n"
		       "One study run: guards (production, clone marker, registered hypotheses,\n"
		       "validation passed, holdout predictions frozen), a run_start record, evict and\n"
		       "prove the cache cold (residency 0.0 on every index file), a closed-loop load\n"
		       "of C clients for N queries or T seconds with samplers beside it, and one run\n"
		       "record with the raw per-query rows and series. Exit 3 when a guard refused;\n"
		       "exit 5 for a bad spec, and for a mem_cap_bytes below what the run must map\n"
		       "(nothing recorded). A sampler that fails is counted in the record and said\n"
		       "on stderr; with \"samplers\": {\"fatal\": true} it fails the run (exit 1, a\n"
		       "deviation, no run record). A run killed outright (kill -9, the OOM killer)\n"
		       "is recorded as a deviation with its cause by the next command on the study.\n\n"
		       "Prints the run id on the first line (scripts: first line), then a summary of\n"
		       "what it measured; -q prints the id only and no progress; --json prints the run\n"
		       "record instead. 'coldstudy runs DIR' lists every run; 'run show' shows one.\n"
		       "The run spec's keys: 'coldstudy schema run' (JSON Schema) and the README.\n\n"
		       "Under a device profile every run draws from its own random stream, seeded\n"
		       "from its run id and spec hash and recorded as device_seed; --seed S (0 to\n"
		       "2^53-1) replays that stream: in virtual time the per-read latencies of a\n"
		       "run reproduce exactly from its recorded seed.\n\n"
		       "A spec with \"replicates\": N makes N runs, one after another, each its own\n"
		       "cold run and run record (replicate index 1..N and group: the first's run id)\n"
		       "with its own random stream (a registered seed mixed with the index; the\n"
		       "study's plan.seed mixed into every stream); each id is printed as its run\n"
		       "ends. --replicate I runs only replicate I (with --seed: replays it).\n");
		return CS_EXIT_OK;
	}
	if (argc > 1 && !strcmp(argv[1], "show"))
		return cmd_run_show(argc - 1, argv + 1);
	o.progress = -1;
	{
		char rbad[96];
		const char *pos[2] = {NULL, NULL};
		size_t np = 0;
		run_flags rf = {.o = &o, .quiet = &quiet};
		const cli_opt opts[] = {
			CLI_OPT_DO("--quiet", "-q", &rf, take_quiet),
			CLI_OPT_FLAG("--json", NULL, &json),
			CLI_OPT_FLAG("--holdout", NULL, &o.holdout),
			CLI_OPT_FLAG("--enforce-clean", NULL, &o.enforce_clean),
			CLI_OPT_SET("--progress", &o.progress, 1),
			CLI_OPT_SET("--no-progress", &o.progress, 0),
			CLI_OPT_FNM("--seed", &o, take_seed, "--seed '%s': not a number from 0 to 2^53-1",
				    "--seed needs a number (0 to 2^53-1)"),
			CLI_OPT_FNM("--replicate", &o, take_replicate, rbad,
				    "--replicate needs a number (1 to the spec's replicates)"),
			CLI_OPT_TEXT("--declare-overlap", &o.declare_overlap, "--declare-overlap needs a text"),
			CLI_OPT_END,
		};
		const cli_spec cs = {.verb = argv[0], .opts = opts, .pos = pos, .maxpos = 2, .npos = &np,
				     .unknown = "unknown option '%s'", .extra = "unexpected argument '%s'"};
		int rc;

		snprintf(rbad, sizeof(rbad), "--replicate '%%s': not a number from 1 to %u",
			 HARNESS_REPLICATES_MAX);
		if ((rc = cli_args_parse(&cs, argc, argv)))
			return rc;
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

	if (cli_wants_help(argc, argv) || argc < 2) {
		printf("usage: coldstudy study register DIR study.json [--amend --rationale TEXT]\n"
		       "       coldstudy study show DIR [--json]\n\n"
		       "Register the study spec (production targets, datasets, indexes, defaults and\n"
		       "the plan: design run specs, holdout targets and scoring rule, the runs that\n"
		       "decide each hypothesis and its sceptic runs) as a study record, strictly\n"
		       "validated (exit 5 with file, JSON path and why; dataset files must exist);\n"
		       "every run spec the plan names is hashed. The plan freezes at the first run: a\n"
		       "different spec after that is refused (exit 3, a refusal record) unless --amend\n"
		       "--rationale TEXT, recorded with the access state. show prints the one in\n"
		       "force. Production paths are resolved against DIR (the study folder, never the\n"
		       "current directory), must exist (exit 5), and are recorded by identity (device,\n"
		       "inode, file system, a block device's backing) in the record and in the\n"
		       "machine-wide production registry; a spec that drops a production item is\n"
		       "refused (exit 3) at any time unless --amend --rationale. Every key: 'coldstudy\n"
		       "schema study' and docs/specs.md.\n");
		return argc < 2 && !cli_wants_help(argc, argv) ? CS_EXIT_USAGE : CS_EXIT_OK;
	}
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
		size_t np = 0;
		const cli_spec spec = {.verb = argv[0], .opts = opts, .first = 2, .pos = pos, .maxpos = 2,
				       .npos = &np, .unknown = "unknown option '%s'",
				       .extra = "unexpected argument '%s'"};
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
		ledger *l = NULL;
		json_t *doc = NULL;
		int rc;

		/* The study is JSON already: --json is accepted like every verb's. */
		for (int i = 2; i < argc; i++) {
			if (!strcmp(argv[i], "--json"))
				continue;
			if (argv[i][0] == '-')
				return cli_usage(argv[0], "unknown option '%s'", argv[i]);
			if (dir)
				return cli_usage(argv[0], "show takes one DIR");
			dir = argv[i];
		}
		if (!dir)
			return cli_usage(argv[0], "show needs DIR");
		rc = ledger_open(dir, &l, &e);
		if (!rc)
			rc = harness_study_current(l, &doc, &e);
		if (!rc) {
			char *s = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);

			printf("%s\n", s ? s : "{}");
			free(s);
		}
		json_decref(doc);
		ledger_close(l);
		return rc ? cli_fail(argv[0], &e) : CS_EXIT_OK;
	}
	return cli_usage(argv[0], "unknown subcommand '%s' (register, show)", argv[1]);
}
