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

/* ---- holdout score ---- */

static int score(const char *dir, const holdout_score_opts *o, int as_json)
{
	ledger *l = NULL;
	json_t *s = NULL;
	cs_err e = {0};
	int rc;

	rc = ledger_open(dir, &l, &e);
	if (!rc)
		rc = holdout_score_record(l, o, &s, &e);
	ledger_close(l);
	if (rc)
		return cli_fail("holdout", &e);
	if (as_json) {
		char *txt = json_dumps(s, JSON_INDENT(2) | JSON_SORT_KEYS);

		printf("%s\n", txt);
		free(txt);
		rc = holdout_score_exit(s);
		json_decref(s);
		return rc;
	}
	report_score_text(s, stdout);
	rc = holdout_score_exit(s);
	json_decref(s);
	return rc;
}

static int show(const char *dir, int as_json)
{
	ledger *l = NULL;
	holdout_log v;
	cs_err e = {0};
	json_t *key, *all = json_array();
	size_t i;
	int rc, loaded = 0;

	rc = ledger_open(dir, &l, &e);
	if (!rc) {
		rc = holdout_log_load(l, &v, &e);
		loaded = 1;
	}
	if (rc)
		goto out;
	json_array_foreach(v.pred_order, i, key)
		json_array_append(all, json_object_get(v.predictions, json_string_value(key)));
	if (as_json) {
		char *txt = json_dumps(all, JSON_INDENT(2) | JSON_SORT_KEYS);

		printf("%s\n", txt);
		free(txt);
	} else {
		report_predictions_text(all, stdout);
		printf("%s\n", v.holdout_started ? "frozen: a holdout run has started"
						 : "open: no holdout run has started");
	}
out:
	json_decref(all);
	if (loaded)
		holdout_log_free(&v);
	ledger_close(l);
	return rc ? cli_fail("holdout", &e) : 0;
}

static const char holdout_usage[] =
	"usage: coldstudy holdout predict DIR [--targets FILE] [--model auto|io|loglinear]\n"
	"       coldstudy holdout score DIR [--threshold T] [--interim] [--json]\n"
	"       coldstudy holdout show DIR [--json]\n\n"
	"predict fits the models on the plan's design runs and records a prediction (value and\n"
	"band at the plan's band level) for each target run spec and metric: the plan's holdout\n"
	"targets and metrics, or those of a targets file (each must be a target of the plan):\n"
	"  {\"targets\": [{\"run\": \"runs/h1.json\", \"metrics\": [\"wall_s\", \"engine_reads\"],\n"
	"                \"model\": \"auto\"}]}\n"
	"Predictions are refused (exit 3) once the first holdout run has started, and once a\n"
	"first set is on record: the first set is frozen.\n"
	"score compares each prediction with its target's first holdout run: relative error\n"
	"|p - o| / o (MdAPE/100), inside the band, interval score per metric and relative to the\n"
	"observed value, a two-sided binomial coverage check (over the rows and over the\n"
	"independent runs behind them), each metric's calibration (chi-square of standardised\n"
	"log errors), and pass/fail by the plan's rule (threshold, minimum inside). A row that\n"
	"is a multiple or reciprocal of another row of the same run is shown and scored once\n"
	"(the minimum inside asks the same share of the rows scored once).\n"
	"--threshold other than the plan's is refused (exit 3); without a plan it sets\n"
	"the threshold (default 0.35). A score before every target has its run is refused\n"
	"(exit 3) unless --interim, which records it as interim (exit 7: unfinished). The first\n"
	"complete score is the score; later ones are re-scores. The rule is the one registered\n"
	"before the holdout was seen (the first holdout run or score): a plan amended after that\n"
	"is shown beside it, labelled, and never changes the result or the exit. The log is\n"
	"verified first (exit 4). Exit 6 when the registered test failed.\n";

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
	int as_json = 0;

	if (cli_wants_help(argc, argv)) {
		printf(holdout_usage);
		return 0;
	}
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
				       .unknown = "unexpected argument '%s'", .extra = "unexpected argument '%s'"};
		int rc;

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!strcmp(sub, "predict")) {
		if (strcmp(model, "auto") && strcmp(model, "io") && strcmp(model, "loglinear"))
			return cli_usage("holdout", "--model: expected auto, io or loglinear");
		return predict(dir, targets, model);
	}
	if (!strcmp(sub, "score"))
		return score(dir, &so, as_json);
	if (!strcmp(sub, "show"))
		return show(dir, as_json);
	return cli_usage("holdout", "unknown subcommand '%s' (predict, score, show)", sub);
}

/* ---- refute, deviate ---- */

/* A refutation or deviation; the ledger checks what it names (exit 5, nothing written). */
static int append_text_record(const char *verb, const char *dir, const char *hyp,
			      const char *run, const char *because)
{
	ledger *l = NULL;
	cs_err e = {0};
	int64_t seq = 0;
	int rc;

	rc = ledger_open(dir, &l, &e);
	if (!rc)
		rc = !strcmp(verb, "refute") ? ledger_refute(l, hyp, because, &seq, &e)
					     : ledger_deviate(l, because, hyp, run, &seq, &e);
	if (!rc)
		printf("%s recorded as seq %lld (%s)\n", !strcmp(verb, "refute") ? "refutation" : "deviation",
		       (long long) seq, ledger_access_state(l));
	ledger_close(l);
	return rc ? cli_fail(verb, &e) : 0;
}

int cmd_refute(int argc, char **argv)
{
	const char *because = NULL;

	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy refute DIR H --because TEXT\n\n"
		       "Record the sceptic's refutation of hypothesis H: an accept rule that holds\n"
		       "then gives the verdict 'refuted' instead of 'accepted'.\n");
		return 0;
	}
	if (argc != 5 || strcmp(argv[3], "--because"))
		return cli_usage("refute", "expected DIR H --because TEXT");
	because = argv[4];
	if (!*because)
		return cli_usage("refute", "--because needs a reason");
	return append_text_record("refute", argv[1], argv[2], NULL, because);
}

int cmd_deviate(int argc, char **argv)
{
	const char *dir = NULL, *because = NULL, *hyp = NULL, *run = NULL;

	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy deviate DIR --because TEXT [--hypothesis H] [--run RUN_ID]\n\n"
		       "Record a departure from the plan, with the access state at this moment.\n"
		       "Verdicts and scores list the deviations that touch them.\n");
		return 0;
	}
	{
		const cli_opt opts[] = {
			CLI_OPT_STR("--because", &because),
			CLI_OPT_STR("--hypothesis", &hyp),
			CLI_OPT_STR("--run", &run),
			CLI_OPT_END,
		};
		size_t np = 0;
		const cli_spec spec = {.verb = "deviate", .opts = opts, .pos = &dir, .maxpos = 1, .npos = &np,
				       .unknown = "unexpected argument '%s'", .extra = "unexpected argument '%s'"};
		int rc;

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
	}
	if (!dir || !because || !*because)
		return cli_usage("deviate", "expected DIR --because TEXT");
	return append_text_record("deviate", dir, hyp, run, because);
}

/* ---- verdicts ---- */

/* --as-of SEQ: the verdicts as of a record, recomputed and not recorded */
typedef struct verdict_args {
	uint64_t *as_of;
	int *record;
} verdict_args;

static int take_as_of(const char *val, void *dst)
{
	verdict_args *va = dst;

	if (cli_parse_u64(val, va->as_of) || *va->as_of == 0)
		return -1;
	*va->record = 0;
	return 0;
}

int cmd_verdicts(int argc, char **argv)
{
	const char *dir = NULL;
	int as_json = 0, record = 1;
	uint64_t as_of = 0;
	ledger *l = NULL;
	json_t *all = NULL, *test = NULL, *state = NULL;
	cs_err e = {0};
	int rc;

	if (cli_wants_help(argc, argv)) {
		printf("usage: coldstudy verdicts DIR [--json] [--as-of SEQ] [--no-record]\n\n"
		       "Evaluate each hypothesis's registered accept and reject rules on the runs the\n"
		       "plan maps to it (confirmatory) or that serve it (exploratory: kind\n"
		       "exploratory, registered or amended after the first run, or no plan):\n"
		       "rejected (reject holds), accepted (accept holds, the plan's sceptic runs done\n"
		       "and not refuting, no refutation), provisional (accept holds, sceptic runs\n"
		       "missing or none registered), refuted (a refutation record or the sceptic\n"
		       "runs), unresolved otherwise. Each changed verdict is a ledger record naming\n"
		       "its runs; --as-of SEQ recomputes from the records up to SEQ. A hypothesis\n"
		       "amended after the first run keeps its registered version's verdict in the\n"
		       "confirmatory table; the amended version (H3') is an exploratory entry.\n"
		       "Confirmatory hypotheses that validate classified as model checks (every\n"
		       "comparison of their rules decided by the device model's parameters, its\n"
		       "replay under the engine's unknown reads and CPU never moving the outcome)\n"
		       "are listed apart, each comparison with why, and never counted as evidence.\n"
		       "The log is verified first (exit 4 on an edited log or a record appended\n"
		       "without the study's key). Exit 6 when the registered holdout test (the\n"
		       "score of record, by the rule registered before the holdout was seen)\n"
		       "failed, 7 while the plan's holdout has no score of record.\n\n"
		       "A hypothesis registered with decision \"interval\" is decided by the confidence\n"
		       "interval of its effect over its runs (geometric mean or ratio of two; Welch t\n"
		       "on the logs or a percentile bootstrap): accepted when the whole interval lies\n"
		       "beyond its threshold and the accept rule holds, rejected when it lies wholly on\n"
		       "the other side or the reject rule holds, else unresolved. The estimate, the\n"
		       "interval and n on each side are printed under its row ('interval' in --json).\n");
		return 0;
	}
	{
		verdict_args va = {&as_of, &record};
		const cli_opt opts[] = {
			CLI_OPT_FLAG("--json", NULL, &as_json),
			CLI_OPT_SET("--no-record", &record, 0),
			CLI_OPT_FN("--as-of", &va, take_as_of, "--as-of: expected a record seq"),
			CLI_OPT_END,
		};
		size_t np = 0;
		const cli_spec spec = {.verb = "verdicts", .opts = opts, .pos = &dir, .maxpos = 1, .npos = &np,
				       .unknown = "unexpected argument '%s'", .extra = "unexpected argument '%s'"};

		if ((rc = cli_args_parse(&spec, argc, argv)))
			return rc;
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
	if (as_json) {
		char *txt = json_dumps(all, JSON_INDENT(2) | JSON_SORT_KEYS);

		printf("%s\n", txt);
		free(txt);
	} else {
		report_verdicts_text(all, test, state, stdout);
	}
	rc = holdout_state_exit(test, state);
	json_decref(test);
	json_decref(state);
	json_decref(all);
	return rc;
}
