/*
 * cmd_holdout.c - verbs of the holdout and the verdicts: holdout
 * predict|score|show, refute, verdicts, deviate. Parsing and printing
 * only: the order of a study (predictions before the first holdout run,
 * scores by the registered rule) is holdout/order.c's, refusals are
 * guards/', references are checked by ledger/plan.c.
 */
#include "cmds.h"

#include "args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "harness.h"
#include "predict.h"
#include "holdout.h"
#include "ledger.h"
#include "report.h"

/* ---- holdout predict ---- */

/*
 * The targets: from the targets file (paths relative to its folder), or,
 * without one, the plan's holdout targets (harness/predict.c); one line a
 * prediction recorded.
 */
static int predict(const char *dir, const char *targets_path, const char *model)
{
	ledger *l = NULL;
	json_t *made = NULL;
	cs_err e = {0};
	int rc;

	rc = ledger_open(dir, &l, &e);
	if (!rc)
		rc = harness_holdout_predict(l, targets_path, model, &made, &e);
	if (!rc) {
		report_predictions_text(made, stdout);
		fprintf(stderr, "%zu predictions recorded; frozen at the first holdout run\n",
			json_array_size(made));
	}
	json_decref(made);
	ledger_close(l);
	return rc ? cli_fail("holdout", &e) : 0;
}

static int take_threshold(const char *val, void *dst)
{
	holdout_score_opts *so = dst;

	if (cli_parse_double(val, &so->threshold) || so->threshold <= 0)
		return -1;
	so->have_threshold = 1;
	return 0;
}

int cmd_holdout(int argc, char **argv)
{
	const char *sub, *dir, *targets = NULL, *model = "auto";
	holdout_score_opts so = {0, 0.35, 0};
	int as_json = 0, exitc = 0;
	cs_err e = {0};

	if (cli_wants_help(argc, argv))
		return cli_help("holdout", stdout, 0);
	if (argc < 3)
		return cli_usage("holdout", "expected a subcommand and a study directory");
	sub = argv[1];
	dir = argv[2];
	{
		const cli_opt opts[] = {
			CLI_OPT_FLAG("--json", NULL, &as_json),
			CLI_OPT_FLAG("--interim", NULL, &so.interim),
			CLI_OPT_STR("--targets", &targets),
			CLI_OPT_STR("--model", &model),
			CLI_OPT_FN("--threshold", &so, take_threshold, "--threshold: expected a positive number"),
			CLI_OPT_END,
		};
		const cli_spec spec = {.verb = "holdout", .opts = opts, .first = 3,
				       .unknown = CLI_UNEXPECTED};
		int rc;

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!strcmp(sub, "predict")) {
		if (strcmp(model, "auto") && strcmp(model, "io") && strcmp(model, "loglinear"))
			return cli_usage("holdout", "--model: expected auto, io or loglinear");
		return predict(dir, targets, model);
	}
	if (!strcmp(sub, "score") || !strcmp(sub, "show")) /* reports/verbs.c */
		return report_holdout_verb(dir, !strcmp(sub, "score") ? &so : NULL, as_json, stdout, &exitc, &e)
			       ? cli_fail("holdout", &e) : exitc;
	return cli_usage("holdout", "unknown subcommand '%s' (predict, score, show)", sub);
}

/* ---- refute, deviate ---- */

int cmd_refute(int argc, char **argv)
{
	const char *because = NULL;
	cs_err e = {0};

	if (cli_wants_help(argc, argv))
		return cli_help("refute", stdout, 0);
	if (argc != 5 || strcmp(argv[3], "--because"))
		return cli_usage("refute", "expected DIR H --because TEXT");
	because = argv[4];
	if (!*because)
		return cli_usage("refute", "--because needs a reason");
	return ledger_text_record_verb(argv[1], 1, argv[2], NULL, because, stdout, &e)
		       ? cli_fail("refute", &e) : 0;
}

int cmd_deviate(int argc, char **argv)
{
	const char *dir = NULL, *because = NULL, *hyp = NULL, *run = NULL;
	cs_err e = {0};

	if (cli_wants_help(argc, argv))
		return cli_help("deviate", stdout, 0);
	{
		const cli_opt opts[] = {
			CLI_OPT_STR("--because", &because),
			CLI_OPT_STR("--hypothesis", &hyp),
			CLI_OPT_STR("--run", &run),
			CLI_OPT_END,
		};
		const cli_spec spec = {.verb = "deviate", .opts = opts, .pos = &dir, .maxpos = 1,
				       .unknown = CLI_UNEXPECTED};
		int rc;

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!dir || !because || !*because)
		return cli_usage("deviate", "expected DIR --because TEXT");
	return ledger_text_record_verb(dir, 0, hyp, run, because, stdout, &e) ? cli_fail("deviate", &e) : 0;
}

/* ---- verdicts ---- */

int cmd_verdicts(int argc, char **argv)
{
	const char *dir = NULL;
	int as_json = 0, record = 1;
	uint64_t as_of = 0;
	ledger *l = NULL;
	json_t *all = NULL, *test = NULL, *state = NULL;
	cs_err e = {0};
	int rc;

	if (cli_wants_help(argc, argv))
		return cli_help("verdicts", stdout, 0);
	{
		const cli_opt opts[] = {
			CLI_OPT_FLAG("--json", NULL, &as_json),
			CLI_OPT_SET("--no-record", &record, 0),
			/* --as-of SEQ: the verdicts as of a record, recomputed and not recorded */
			{.name = "--as-of", .kind = CLI_U64, .dst = &as_of, .lo = 1, .hi = UINT64_MAX,
			 .bad = "--as-of: expected a record seq"},
			CLI_OPT_END,
		};
		const cli_spec spec = {.verb = "verdicts", .opts = opts, .pos = &dir, .maxpos = 1,
				       .unknown = CLI_UNEXPECTED};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
		record = as_of ? 0 : record;
	}
	if (!dir)
		return cli_usage("verdicts", "expected a study directory");
	rc = ledger_open(dir, &l, &e);
	if (!rc)
		rc = report_verdicts(l, (int64_t) as_of, record, &all, &e);
	if (rc == CS_EXIT_REFUSED) /* nothing to judge: a refusal, and so a record */
		rc = guard_refuse(l, "registered", "verdicts", dir, &e, "%s", e.msg);
	if (!rc)
		rc = holdout_registered_state(l, &test, &state, &e);
	ledger_close(l);
	if (rc)
		return cli_fail("verdicts", &e);
	report_verdicts_print(all, test, state, as_json, stdout);
	rc = holdout_state_exit(test, state);
	json_decref(test);
	json_decref(state);
	json_decref(all);
	return rc;
}
