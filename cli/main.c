/*
 * main.c - `coldstudy`, the one command: git-style verbs, dispatch only.
 * Each verb parses its own options (cli/cmd_*.c) and calls into its part.
 */
#include "cmds.h"

#include "harness.h"
#include "ledger.h"

#include <stdio.h>
#include <string.h>

typedef struct {
	const char *name;
	cmd_fn fn;
	const char *summary;
} verb;

static const verb verbs[] = {
	{"init", cmd_init, "create a study: DIR/ledger.db and DIR/frozen/"},
	{"register", cmd_register, "validate, hash, timestamp and freeze hypothesis or study files"},
	{"hypotheses", cmd_hypotheses, "list the registered hypotheses"},
	{"log", cmd_log, "verify, export, checkpoint, prove, publish: the experiment log"},
	{"data", cmd_data, "dataset info and exact ground truth"},
	{"cache", cmd_cache, "evict files from the page cache, measure residency, prewarm blocks"},
	{"probe", cmd_probe, "random reads at a fixed queue depth (fio-like), with --fio beside it"},
	{"device", cmd_device, "device profiles; replay a read trace in virtual time"},
	{"index", cmd_index, "build, query, verify, insert into and delete from indexes"},
	{"validate", cmd_validate, "the checks that must pass before any study run"},
	{"clone", cmd_clone, "clone an index (reflink where possible) with a clone marker"},
	{"run", cmd_run, "execute one study run: guards, evict, prove cold, load, measure, record"},
	{"runs", cmd_runs, "the study's runs, one row each: settings and metrics (table, CSV, JSON)"},
	{"schema", cmd_schema, "JSON Schemas of hypothesis files, study.json and run.json; --check FILE"},
	{"study", cmd_study, "register and show a study spec (production targets, datasets)"},
	{"production", cmd_production, "list, add and remove machine-wide production items"},
	{"holdout", cmd_holdout, "predict holdout runs from design runs; score the predictions"},
	{"refute", cmd_refute, "record the sceptic's refutation of a hypothesis"},
	{"verdicts", cmd_verdicts, "evaluate every hypothesis's registered rules"},
	{"replicate", cmd_replicate, "make a study again with fresh seeds; compare two studies' verdicts"},
	{"plan", cmd_plan, "plan power: the replicates each interval-decided hypothesis needs"},
	{"deviate", cmd_deviate, "record a departure from the plan"},
	{"report", cmd_report, "publish tables, plots and verdicts from the log (Markdown, HTML, SVG)"},
};

#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

static void help(FILE *f)
{
	fprintf(f, "usage: coldstudy VERB [ARGS...]   (coldstudy VERB --help for each verb)\n\n"
		   "Pre-registered studies of cold, disk-bound vector search.\n\nverbs:\n");
	for (size_t i = 0; i < NVERBS; i++)
		fprintf(f, "  %-11s %s\n", verbs[i].name, verbs[i].summary);
	fprintf(f, "\nexit codes: 0 ok, 1 internal error, 2 usage, 3 refused, "
		   "4 verification failed, 5 bad input,\n"
		   "6 the registered test failed, 7 the registered holdout test is unfinished\n");
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
					return verbs[i].fn(2, hargv);
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
		if (!strcmp(verbs[i].name, argv[1]))
			return verbs[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "coldstudy: unknown verb '%s' (try 'coldstudy help')\n", argv[1]);
	return CS_EXIT_USAGE;
}
