/*
 * verbs.c - what the study's verbs print whole, from the log: holdout show
 * (the predictions and whether they are frozen), holdout score (the score
 * of record made, then its table or JSON), replicate compare (two studies'
 * verdicts side by side) and hypotheses (the registered list). The tables
 * themselves are text.c's.
 */
#include "report.h"

#include "holdout.h"
#include "ledger.h"
#include "register.h"

#include <stdlib.h>

/* v as indented JSON with sorted keys and a newline ("[]" for NULL). */
static void print_json(const json_t *v, FILE *out)
{
	char *txt = v ? json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;

	fprintf(out, "%s\n", txt ? txt : "[]");
	free(txt);
}

int report_holdout_show(struct ledger *l, int json, FILE *out, cs_err *e)
{
	holdout_log v;
	json_t *key, *all;
	size_t i;
	int rc;

	if ((rc = holdout_log_load(l, &v, e)))
		return rc;
	if (!(all = json_array())) {
		holdout_log_free(&v);
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	}
	json_array_foreach(v.pred_order, i, key)
	    json_array_append(all, json_object_get(v.predictions, json_string_value(key)));
	if (json) {
		print_json(all, out);
	} else {
		report_predictions_text(all, out);
		fprintf(out, "%s\n",
		        v.holdout_started ? "frozen: a holdout run has started"
		                          : "open: no holdout run has started");
	}
	json_decref(all);
	holdout_log_free(&v);
	return 0;
}

int report_holdout_score(struct ledger *l, const struct holdout_score_opts *o, int json, FILE *out,
                         int *exitc, cs_err *e)
{
	json_t *s = NULL;
	int rc;

	if ((rc = holdout_score_record(l, o, &s, e)))
		return rc;
	if (json)
		print_json(s, out);
	else
		report_score_text(s, out);
	*exitc = holdout_score_exit(s);
	json_decref(s);
	return 0;
}

int report_holdout_verb(const char *dir, const struct holdout_score_opts *o, int json, FILE *out,
			int *exitc, cs_err *e)
{
	ledger *l = NULL;
	int rc = ledger_open(dir, &l, e);

	if (!rc)
		rc = o ? report_holdout_score(l, o, json, out, exitc, e)
		       : report_holdout_show(l, json, out, e);
	ledger_close(l);
	return rc;
}

int report_compare_print(struct ledger *a, struct ledger *b, int json, FILE *out, int *disagree,
                         cs_err *e)
{
	json_t *rows = NULL;
	int rc;

	if ((rc = report_compare(a, b, &rows, disagree, e)))
		return rc;
	if (json)
		print_json(rows, out);
	else
		report_compare_text(rows, *disagree, out);
	json_decref(rows);
	return 0;
}

int report_hypotheses_print(struct ledger *l, int json, FILE *out, cs_err *e)
{
	json_t *list = NULL;
	char *txt = NULL;
	int rc;

	if ((rc = holdout_hypotheses(l, &list, e)))
		return rc;
	if (!json)
		report_hypotheses_text(list, out);
	else if (!(rc = cs_json_canonical(list, &txt, NULL, e)))
		fprintf(out, "%s\n", txt);
	free(txt);
	json_decref(list);
	return rc;
}

int report_runs_print(struct ledger *l, int format, FILE *out, cs_err *e)
{
	json_t *rows = NULL;
	int rc = report_runs(l, &rows, e);

	if (!rc)
		rc = report_rows_write(rows, format, out, e);
	json_decref(rows);
	return rc;
}

int report_run_summary_print(const char *dir, const char *run_id, FILE *out, cs_err *e)
{
	ledger *l = NULL;
	json_t *rec = NULL;
	int rc;

	rc = ledger_open(dir, &l, e);
	if (!rc)
		rc = report_run_get(l, run_id, &rec, e);
	if (!rc) {
		report_run_summary(rec, out);
		fprintf(out, "  details: coldstudy run show %s %s [--queries] [--csv|--json]\n", dir, run_id);
	}
	json_decref(rec);
	ledger_close(l);
	return rc;
}

int report_run_json_print(const char *dir, const char *run_id, FILE *out, cs_err *e)
{
	ledger *l = NULL;
	int rc = ledger_open(dir, &l, e);

	if (!rc)
		rc = report_run_show(l, run_id, 0, REPORT_FMT_JSON, out, e);
	ledger_close(l);
	return rc;
}

void report_verdicts_print(const json_t *all, const json_t *test, const json_t *state, int json, FILE *out)
{
	if (json)
		print_json(all, out);
	else
		report_verdicts_text(all, test, state, out);
}

void report_power_print(const json_t *res, int json, FILE *out)
{
	if (json)
		print_json(res, out);
	else
		report_power_text(res, out);
}
