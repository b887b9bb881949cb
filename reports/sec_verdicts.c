/*
 * sec_verdicts.c - verdicts from the registered rules and the numbers each saw.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A readable expression of a rule trace's number, aggregate or ratio. */
static void expr_text(rbuf *b, const json_t *t)
{
	char n[REPORT_NUM_MAX];

	if (json_is_number(t)) {
		rb_put(b, report_fmt_num(json_number_value(t), n));
	} else if (json_object_get(t, "ratio")) {
		const json_t *pr = json_object_get(t, "ratio");

		rb_put(b, "(");
		expr_text(b, json_array_get(pr, 0));
		rb_put(b, ") / (");
		expr_text(b, json_array_get(pr, 1));
		rb_printf(b, ") = %s", report_fmt_json(json_object_get(t, "value"), n));
	} else if (json_object_get(t, "agg")) {
		const json_t *sel = json_object_get(t, "select");

		rb_printf(b, "%s(%s over runs", rpt_str(t, "agg") ?: "?",
		          rpt_str(t, "metric") ?: "runs");
		if (json_array_size(json_object_get(sel, "tags"))) {
			rb_put(b, " tagged ");
			rpt_join(b, json_object_get(sel, "tags"), "+");
		}
		if (json_array_size(json_object_get(sel, "not_tags"))) {
			rb_put(b, " not ");
			rpt_join(b, json_object_get(sel, "not_tags"), "+");
		}
		if (rpt_str(sel, "hypothesis"))
			rb_printf(b, " for %s", rpt_str(sel, "hypothesis"));
		rb_printf(b, ") = %s", report_fmt_json(json_object_get(t, "value"), n));
		if (rpt_str(t, "why"))
			rb_printf(b, " (%s)", rpt_str(t, "why"));
		if (json_array_size(json_object_get(t, "runs"))) {
			rb_put(b, " [runs: ");
			rpt_join(b, json_object_get(t, "runs"), ", ");
			rb_put(b, "; values: ");
			rpt_join(b, json_object_get(t, "values"), ", ");
			rb_put(b, "]");
		}
	} else {
		rb_put(b, "?");
	}
}

/* A traced rule result as text. */
static const char *tri_text(const json_t *r)
{
	return json_is_true(r) ? "true" : json_is_false(r) ? "false" : "undetermined";
}

/* The rule trace as indented lines. */
static void trace_text(rbuf *b, const json_t *t, int depth)
{
	const json_t *kids;
	size_t i;
	json_t *k;

	rb_printf(b, "%*s", depth * 2, "");
	if (!t || json_is_null(t)) {
		rb_put(b, "(no rule)\n");
		return;
	}
	if ((kids = json_object_get(t, "all")) || (kids = json_object_get(t, "any"))) {
		rb_printf(b, "%s of: %s\n", json_object_get(t, "all") ? "all" : "any",
		          tri_text(json_object_get(t, "result")));
		json_array_foreach(kids, i, k) trace_text(b, k, depth + 1);
	} else if ((kids = json_object_get(t, "not"))) {
		rb_printf(b, "not: %s\n", tri_text(json_object_get(t, "result")));
		trace_text(b, kids, depth + 1);
	} else if ((kids = json_object_get(t, "cmp"))) {
		expr_text(b, json_object_get(kids, "left"));
		rb_printf(b, " %s ", rpt_str(kids, "op") ?: "?");
		expr_text(b, json_object_get(kids, "right"));
		rb_printf(b, ": %s\n", tri_text(json_object_get(t, "result")));
	} else {
		expr_text(b, t);
		rb_put(b, "\n");
	}
}

/* Section 6: verdicts evaluated now, and the numbers each rule saw. */
void rpt_sec_verdicts(doc *d, const model *m)
{
	json_t *t, *r, *v, *rec;
	size_t i, j;

	rpt_h(d, 2, "Verdicts");
	if (!json_array_size(m->verdicts)) {
		rpt_p(d, "No verdict: no hypothesis is registered.");
		return;
	}
	rpt_p(
	    d,
	    "Evaluated from the registered accept and reject rules over every record (as of seq "
	    "%lld), as 'coldstudy verdicts' does, without recording anything. A confirmatory "
	    "hypothesis sees only the design runs the plan maps to it, and is accepted only if its "
	    "accept rule holds, the plan's sceptic runs for it are done and do not refute it, and "
	    "no "
	    "refutation is on record (provisional while sceptic runs are missing or none are "
	    "planned); a reject rule that holds wins. Exploratory ones (kind exploratory, post "
	    "hoc, "
	    "or no plan) see the runs that serve them and are never counted as confirmatory.",
	    (long long) m->size);
	t = rpt_table(d, "Verdicts.", "Hypothesis", "Kind", "Verdict", "Counted as", "Accept rule",
	              "Reject rule", "Runs", "Measured by", "Sceptic runs (done of planned)",
	              "Refutations (seq)", "Deviations (seq)", "Last recorded verdict", NULL);
	json_array_foreach(m->verdicts, i, v)
	{
		const char *h = rpt_str(v, "hypothesis");
		const json_t *last = NULL;
		rbuf b;

		json_array_foreach(m->verdict_recs, j,
		                   rec) if (h && rpt_str(rpt_pl(rec), "hypothesis") &&
		                            !strcmp(rpt_str(rpt_pl(rec), "hypothesis"), h)) last =
		    rec;
		r = rpt_row(t);
		rpt_cell_s(r, h);
		rpt_cell_s(r, rpt_str(v, "kind"));
		{
			char vt[96];

			snprintf(vt, sizeof(vt), "%s%s", rpt_str(v, "verdict") ?: "?",
			         json_is_true(json_object_get(v, "underpowered"))
			             ? " (registered underpowered)"
			             : "");
			rpt_cell_s(r, vt);
		}
		rpt_cell_s(r, !strcmp(rpt_str(v, "class") ?: "", "exploratory")
		                  ? (json_is_true(json_object_get(v, "post_hoc"))
		                         ? "exploratory (post hoc)"
		                         : "exploratory")
		              : !strcmp(rpt_str(v, "evidence") ?: "", "model check")
		                  ? "model check (not evidence)"
		                  : "confirmatory");
		rpt_cell_s(r, rpt_str(json_object_get(v, "accept"), "result"));
		rpt_cell_s(r, rpt_str(json_object_get(v, "reject"), "result"));
		rb_init(&b, 0);
		json_array_foreach(json_object_get(v, "runs"), j, rec)
		{
			if (j)
				rb_put(&b, ", ");
			rb_put(&b, rpt_str(rec, "run_id") ?: "?");
		}
		rpt_cell_s(r, b.p ? b.p : "none");
		rb_free(&b);
		{
			char tw[RPT_TIME_WORDS_MAX];

			rpt_cell_s(r, rpt_time_words(rpt_verdict_basis(m, v), tw));
		}
		if (json_object_get(v, "sceptic")) {
			char sct[64];
			const json_t *sc = json_object_get(v, "sceptic");

			snprintf(sct, sizeof(sct), "%lld of %lld",
			         (long long) json_integer_value(json_object_get(sc, "done")),
			         (long long) json_integer_value(json_object_get(sc, "planned")));
			rpt_cell_s(r, sct);
		} else {
			rpt_cell_s(r, "n/a");
		}
		rpt_cell_j(r, json_object_get(v, "refutations"));
		rpt_cell_j(r, json_object_get(v, "deviations"));
		if (last) {
			char txt[128];

			snprintf(txt, sizeof(txt), "%s (seq %lld)",
			         rpt_str(rpt_pl(last), "verdict") ?: "?",
			         (long long) json_integer_value(json_object_get(last, "seq")));
			rpt_cell_s(r, txt);
		} else {
			rpt_cell_s(r, "none");
		}
	}
	/* Model checks apart: each comparison the device model's parameters decide. */
	t = NULL;
	json_array_foreach(m->verdicts, i, v)
	{
		const json_t *cl;
		rbuf b;

		if (strcmp(rpt_str(v, "class") ?: "", "confirmatory") ||
		    strcmp(rpt_str(v, "evidence") ?: "", "model check"))
			continue;
		if (!t)
			t = rpt_table(d,
			              "Model checks: confirmatory hypotheses whose every comparison the "
			              "device model's parameters decide (classified by validate before "
			              "any run, replaying the model under the engine's figures it cannot "
			              "know: docs/device-model.md). They verify the model, not the "
			              "system, and are never counted as evidence.",
			              "Hypothesis", "Verdict", "Metrics", "Each comparison under the model",
			              "Classified by", NULL);
		r = rpt_row(t);
		rpt_cell_s(r, rpt_str(v, "hypothesis"));
		rpt_cell_s(r, rpt_str(v, "verdict"));
		rb_init(&b, 0);
		json_array_foreach(json_object_get(v, "clauses"), j, cl)
			rb_printf(&b, "%s%s: %s", j ? "; " : "", rpt_str(cl, "path") ?: "?",
			          rpt_str(cl, "outcome") ?: rpt_str(cl, "basis") ?: "?");
		{
			rbuf mb;
			const char *k;
			json_t *x;
			size_t n = 0;

			rb_init(&mb, 0);
			json_object_foreach(json_object_get(v, "basis"), k, x)
				rb_printf(&mb, "%s%s", n++ ? ", " : "", k);
			rpt_cell_s(r, mb.p ? mb.p : "-");
			rb_free(&mb);
		}
		rpt_cell_s(r, b.p ? b.p : "(from its runs: validate did not classify this version)");
		rb_free(&b);
		rpt_cell_s(r, !strcmp(rpt_str(json_object_get(v, "classified"), "by") ?: "", "validate")
		                  ? "validate (before any run)"
		                  : "its runs");
	}
	/* Hypotheses decided by an interval: the estimate, the interval and n on each side. */
	t = NULL;
	json_array_foreach(m->verdicts, i, v)
	{
		const json_t *iv = json_object_get(v, "interval"), *ci = json_object_get(iv, "interval");
		char a[REPORT_NUM_MAX], lo[REPORT_NUM_MAX], hi[REPORT_NUM_MAX], txt[160];

		if (!iv)
			continue;
		if (!t)
			t = rpt_table(d,
			              "Decisions from intervals: the effect over the replicates (a "
			              "geometric mean, or a ratio of two), its interval, the runs on each "
			              "side, the registered line and what the interval says.",
			              "Hypothesis", "Effect", "Estimate", "Interval", "Method", "Runs (n)",
			              "Accept when", "Interval says", NULL);
		r = rpt_row(t);
		rpt_cell_s(r, rpt_str(v, "hypothesis"));
		rpt_cell_s(r, json_object_get(iv, "n_over") ? "ratio of geometric means"
		                                            : "geometric mean");
		rpt_cell_s(r, report_fmt_json(json_object_get(iv, "estimate"), a));
		if (json_is_array(ci)) {
			snprintf(txt, sizeof(txt), "[%s, %s]",
			         report_fmt_json(json_array_get(ci, 0), lo),
			         report_fmt_json(json_array_get(ci, 1), hi));
			rpt_cell_s(r, txt);
		} else {
			rpt_cell_s(r, rpt_str(iv, "why") ?: "none");
		}
		snprintf(txt, sizeof(txt), "%s, %s%%", rpt_str(iv, "method") ?: "?",
		         report_fmt_num(100 * json_number_value(json_object_get(iv, "level")), a));
		rpt_cell_s(r, txt);
		if (json_object_get(iv, "n_over"))
			snprintf(txt, sizeof(txt), "%lld / %lld",
			         (long long) json_integer_value(json_object_get(iv, "n_select")),
			         (long long) json_integer_value(json_object_get(iv, "n_over")));
		else
			snprintf(txt, sizeof(txt), "%lld",
			         (long long) json_integer_value(json_object_get(iv, "n_select")));
		rpt_cell_s(r, txt);
		snprintf(txt, sizeof(txt), "whole interval %s %s", rpt_str(iv, "op") ?: "?",
		         report_fmt_json(json_object_get(iv, "threshold"), a));
		rpt_cell_s(r, txt);
		rpt_cell_s(r, rpt_str(iv, "result"));
	}
	rpt_fold_open(d, "The numbers each rule saw, hypothesis by hypothesis");
	rpt_p(d, "The numbers each rule saw:");
	json_array_foreach(m->verdicts, i, v)
	{
		rbuf b;

		rb_init(&b, 0);
		rb_printf(&b, "%s: %s\naccept:\n", rpt_str(v, "hypothesis") ?: "?",
		          rpt_str(v, "verdict") ?: "?");
		trace_text(&b, json_object_get(json_object_get(v, "accept"), "trace"), 1);
		rb_put(&b, "reject:\n");
		trace_text(&b, json_object_get(json_object_get(v, "reject"), "trace"), 1);
		if (rb_ok(&b))
			rpt_pre(d, b.p);
		else
			d->failed = 1;
		rb_free(&b);
	}
	rpt_fold_close(d);
}
