/*
 * main.c - `coldstudy`, the one command: git-style verbs, dispatch only.
 * Each verb parses its own options (cli/cmd_*.c) and calls into its part.
 */
#include "cmds.h"

#include "guard.h"
#include "harness.h"
#include "ledger.h"

#include <stdio.h>
#include <string.h>

typedef struct {
	const char *name;
	cmd_fn fn;
	const char *summary;
	const char *exits; /* the exit codes the verb can end with, as digits */
} verb;

/*
 * Which codes each verb can return: 4 wherever a ledger is opened (a
 * tampered log), 3 wherever a guard or a pre-registration rule decides,
 * 6 where a registered test is scored. The meanings come from the one
 * table (cs_exit_meaning); tests/cli/help.sh checks both against README.
 */

static const verb verbs[] = {
	{"init", cmd_init, "create a study: DIR/ledger.db and DIR/frozen/", "01235"},
	{"register", cmd_register, "validate, hash, timestamp and freeze hypothesis or study files", "012345"},
	{"hypotheses", cmd_hypotheses, "list the registered hypotheses", "01245"},
	{"log", cmd_log, "verify, export, checkpoint, prove, publish: the experiment log", "012345"},
	{"data", cmd_data, "dataset info and exact ground truth", "01235"},
	{"cache", cmd_cache, "evict files from the page cache, measure residency, prewarm blocks", "01235"},
	{"probe", cmd_probe, "random reads at a fixed queue depth (fio-like), with --fio beside it", "01235"},
	{"device", cmd_device, "device profiles; replay a read trace in virtual time", "01235"},
	{"index", cmd_index, "build, query, verify, insert into and delete from indexes", "012345"},
	{"validate", cmd_validate, "the checks that must pass before any study run", "012345"},
	{"clone", cmd_clone, "clone an index (reflink where possible) with a clone marker", "012345"},
	{"run", cmd_run, "execute one study run: guards, evict, prove cold, load, measure, record", "012345"},
	{"runs", cmd_runs, "the study's runs, one row each: settings and metrics (table, CSV, JSON)", "01245"},
	{"schema", cmd_schema, "JSON Schemas of hypothesis files, study.json and run.json; --check FILE", "0125"},
	{"study", cmd_study, "register and show a study spec (production targets, datasets)", "012345"},
	{"production", cmd_production, "list, add and remove machine-wide production items", "01235"},
	{"holdout", cmd_holdout, "predict holdout runs from design runs; score the predictions", "01234567"},
	{"refute", cmd_refute, "record the sceptic's refutation of a hypothesis", "012345"},
	{"verdicts", cmd_verdicts, "evaluate every hypothesis's registered rules", "0124567"},
	{"replicate", cmd_replicate, "make a study again with fresh seeds; compare two studies' verdicts", "0123456"},
	{"plan", cmd_plan, "plan power: the replicates each interval-decided hypothesis needs", "01245"},
	{"deviate", cmd_deviate, "record a departure from the plan", "012345"},
	{"report", cmd_report, "publish tables, plots and verdicts from the log (Markdown, HTML, SVG)", "012345"},
};

#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

/* "exit codes: 0 ok, 1 internal error, ..." for the codes in exits (NULL: all). */
static void exit_line(FILE *f, const char *exits)
{
	fprintf(f, "\nexit codes:");
	for (int c = 0; c <= CS_EXIT_MAX; c++)
		if (!exits || strchr(exits, '0' + c))
			fprintf(f, "%s %d %s", c ? "," : "", c, cs_exit_meaning(c));
	fprintf(f, "\n");
}

/* A verb's help, then its exit codes from the one table. */
static int verb_help(const verb *v, int argc, char **argv)
{
	int rc = v->fn(argc, argv);

	fflush(stderr);
	if (rc == CS_EXIT_OK)
		exit_line(stdout, v->exits);
	return rc;
}

static void help(FILE *f)
{
	fprintf(f, "usage: coldstudy VERB [ARGS...]   (coldstudy VERB --help for each verb)\n\n"
		   "Pre-registered studies of cold, disk-bound vector search.\n\nverbs:\n");
	for (size_t i = 0; i < NVERBS; i++)
		fprintf(f, "  %-11s %s\n", verbs[i].name, verbs[i].summary);
	exit_line(f, NULL);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		help(stderr);
		return CS_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		if (argc > 2) {
			for (size_t i = 0; i < NVERBS; i++) {
				if (!strcmp(verbs[i].name, argv[2])) {
					char *hargv[] = {argv[2], "--help", NULL};
					return verb_help(&verbs[i], 2, hargv);
				}
			}
			fprintf(stderr, "coldstudy: unknown verb '%s'\n", argv[2]);
			return CS_EXIT_USAGE;
		}
		help(stdout);
		return CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("coldstudy 0.1.0\n");
		return CS_EXIT_OK;
	}
	/* Whichever verb opens a study first records the runs that died there (harness/live.c). */
	ledger_on_open(harness_reap_unfinished);
	/* and any command removes the throttle cgroups a killed process left (harness/throttle.c) */
	harness_throttle_reap();
	for (size_t i = 0; i < NVERBS; i++)
		if (!strcmp(verbs[i].name, argv[1])) {
			cs_err e = {0};

			if (cli_wants_help(argc - 1, argv + 1))
				return verb_help(&verbs[i], argc - 1, argv + 1);
			/* a verb a guard may stop writes: its scratch and its children's (TMPDIR) asks too */
			if (strchr(verbs[i].exits, '3') && guard_tmpdir(NULL, NULL, verbs[i].name, &e))
				return cli_fail(verbs[i].name, &e);
			return verbs[i].fn(argc - 1, argv + 1);
		}
	fprintf(stderr, "coldstudy: unknown verb '%s' (try 'coldstudy help')\n", argv[1]);
	return CS_EXIT_USAGE;
}
