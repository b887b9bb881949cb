/*
 * sec_glance.c - the first screen: the study's question, each verdict with
 * the number its rule saw against the registered band and how that number
 * was made, the holdout's result, and what survives. Everything a reader
 * needs to decide whether to read on; the evidence follows in the sections.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The latest registered document of hypothesis id (borrowed from hs), NULL when none. */
static const json_t *hyp_doc(const json_t *hs, const char *id)
{
	size_t i;
	json_t *h;

	json_array_foreach(hs, i, h)
	{
		const json_t *latest = rpt_pl(json_object_get(h, "latest"));
		const char *hid = rpt_str(latest, "id");

		if (id && hid && !strcmp(hid, id))
			return json_object_get(latest, "doc");
	}
	return NULL;
}

/* The document a verdict judged (its doc_seq's record in m->hyps; borrowed), NULL when unknown. */
static const json_t *verdict_doc(const model *m, const json_t *v)
{
	const json_t *ds = json_object_get(v, "doc_seq");
	size_t i;
	json_t *h;

	if (!json_is_integer(ds))
		return NULL;
	json_array_foreach(m->hyps, i, h)
		if (json_integer_value(json_object_get(h, "seq")) == json_integer_value(ds))
			return json_object_get(rpt_pl(h), "doc");
	return NULL;
}

/* "H1 (title)" (titled) or "H1" into b, after a separator when b is not empty. */
static void list_hyp(rbuf *b, const char *id, const json_t *hdoc, int titled)
{
	if (b->len)
		rb_put(b, titled ? "; " : ", ");
	rb_put(b, id ? id : "?");
	if (titled && rpt_str(hdoc, "title"))
		rb_printf(b, " (%s)", rpt_str(hdoc, "title"));
}

/*
 * What was amended after the holdout was seen (hypotheses and the study
 * plan), and the amended holdout rule's result beside the score of record:
 * on the first screen, since none of it may change a result.
 */
static void amended_after_holdout(doc *d, const model *m, const json_t *sr)
{
	const json_t *am = json_object_get(rpt_pl(sr), "amended")
				   ?: json_object_get(m->holdout_state, "amended");
	const json_t *sa = json_object_get(rpt_pl(m->study), "amendment");
	rbuf b;
	size_t i;
	json_t *h;

	rb_init(&b, 0);
	json_array_foreach(m->hyps, i, h)
	{
		const json_t *p = rpt_pl(h);

		if (!strcmp(rpt_str(h, "kind") ?: "", "amendment") &&
		    !strcmp(rpt_str(p, "access_state") ?: "", "holdout seen"))
			rb_printf(&b, "%s%s (seq %lld)", b.len ? ", " : "", rpt_str(p, "id") ?: "?",
				  (long long) json_integer_value(json_object_get(h, "seq")));
	}
	if (!strcmp(rpt_str(sa, "access_state") ?: "", "holdout seen"))
		rb_printf(&b, "%sthe study plan (seq %lld)", b.len ? ", " : "",
			  (long long) json_integer_value(json_object_get(m->study, "seq")));
	if (b.len)
		rpt_p(d,
		      "Amended after the holdout was seen: %s. None of it changes a result: "
		      "an amended hypothesis keeps its registered verdict (the amended version is "
		      "listed as exploratory) and the holdout keeps the rule registered before.",
		      b.p);
	if (am) {
		char f[REPORT_NUM_MAX];

		rpt_p(d,
		      "Holdout rule amended after the holdout was seen: against the amended "
		      "threshold %s the score would %s; not the score of record.",
		      report_fmt_json(json_object_get(am, "threshold"), f),
		      json_is_true(json_object_get(am, "passed")) ? "PASS" : "FAIL");
	}
	rb_free(&b);
}

void rpt_sec_glance(doc *d, const model *m)
{
	json_t *hs = rpt_latest_hyps(m), *t, *r, *v;
	const json_t *sdoc = m->study ? json_object_get(rpt_pl(m->study), "doc") : NULL;
	const json_t *sr = rpt_score_of_record(m);
	rbuf keep, fall, open, expl, mchk;
	size_t i, out_accepted = 0;

	rpt_h_plain(d, "At a glance", "glance");
	if (rpt_str(sdoc, "question") || rpt_str(sdoc, "title"))
		rpt_p(d, "The question: %s", rpt_str(sdoc, "question") ?: rpt_str(sdoc, "title"));
	else
		rpt_p(d, "No study spec is registered: the question is the hypotheses' own.");
	rb_init(&keep, 0);
	rb_init(&fall, 0);
	rb_init(&open, 0);
	rb_init(&expl, 0);
	rb_init(&mchk, 0);
	if (!json_array_size(m->verdicts)) {
		rpt_p(d, "No verdict: no hypothesis is registered.");
	} else {
		t = rpt_table(
		    d,
		    "Verdicts: the number each accept rule saw (of its comparisons, the one "
		    "whose threshold lies nearest the band; for a hypothesis decided by an "
		    "interval, the interval's estimate and bounds) against the band registered "
		    "before any run, and how the runs behind it were measured "
		    "(virtual time: reads replayed on a device model's clock; modelled real "
		    "time: the model's service times slept; real disk: this machine's disk).",
		    "Hypothesis", "Claim", "Verdict", "Observed", "Predicted [95% band]", "Unit",
		    "In band", "Measured by", NULL);
		json_array_foreach(m->verdicts, i, v)
		{
			const char *id = rpt_str(v, "hypothesis"),
			           *vd = rpt_str(v, "verdict") ?: "?";
			const json_t *hdoc = verdict_doc(m, v) ?: hyp_doc(hs, id),
			             *pred = json_object_get(hdoc, "prediction");
			int amended = json_object_get(v, "version") != NULL;
			int mchk_ = !strcmp(rpt_str(v, "evidence") ?: "", "model check");
			const json_t *band = json_object_get(pred, "band95");
			const json_t *iv = json_object_get(v, "interval");
			const json_t *ci = json_object_get(iv, "interval");
			/* an interval rule's own number: its estimate, shown with its bounds */
			double obs = json_is_number(json_object_get(iv, "estimate"))
			                 ? json_number_value(json_object_get(iv, "estimate"))
			                 : rpt_verdict_observed(v, band);
			double lo = rpt_num_at(band, 0), hi = rpt_num_at(band, 1);
			int expl_ = !strcmp(rpt_str(v, "class") ?: "", "exploratory");
			rbuf b;

			r = rpt_row(t);
			rb_init(&b, 0);
			rb_printf(&b, "%s%s", id ? id : "?", amended ? "' (amended)" : "");
			rpt_cell_s(r, b.p);
			rb_free(&b);
			rpt_cell_s(r, rpt_str(hdoc, "title"));
			rb_init(&b, 0);
			rb_printf(&b, "%s%s%s%s", vd, expl_ ? " (exploratory)" : "",
				  !expl_ && mchk_ ? " (model check)" : "",
				  json_object_get(v, "amended_later") ? " (registered version; amended later)"
								      : "");
			rpt_cell_s(r, b.p);
			rb_free(&b);
			if (json_is_array(ci) && isfinite(obs)) {
				char e[REPORT_NUM_MAX], lo_[REPORT_NUM_MAX], hi_[REPORT_NUM_MAX];

				rb_init(&b, 0);
				rb_printf(&b, "%s [%s, %s] (interval)", report_fmt_num(obs, e),
				          report_fmt_json(json_array_get(ci, 0), lo_),
				          report_fmt_json(json_array_get(ci, 1), hi_));
				rpt_cell_s(r, b.p);
				rb_free(&b);
			} else {
				rpt_cell_n(r, obs);
			}
			rb_init(&b, 0);
			if (pred)
				rpt_fmt_pred(&b, pred);
			rpt_cell_s(r, b.p ? b.p : "n/a");
			rb_free(&b);
			rpt_cell_s(r, rpt_str(hdoc, "unit"));
			/* outside the band yet accepted: say which decided, so the row reads right */
			if (!isfinite(obs) || json_array_size(band) != 2)
				rpt_cell_s(r, "n/a");
			else if (obs >= lo && obs <= hi)
				rpt_cell_s(r, "yes");
			else if (strcmp(vd, "accepted"))
				rpt_cell_s(r, "no");
			else {
				out_accepted++;
				rpt_cell_s(r, !strcmp(rpt_str(hdoc, "kind") ?: "", "descriptive")
				                  ? "no: descriptive, its rule reports the figure"
				                  : "no: its rules decide, not the band");
			}
			{
				char tw[RPT_TIME_WORDS_MAX];

				rpt_cell_s(r, rpt_time_words(rpt_verdict_basis(m, v), tw));
			}
			if (expl_)
				list_hyp(&expl, id, hdoc, 0);
			else if (mchk_)
				list_hyp(&mchk, id, hdoc, 0);
			else if (!strcmp(vd, "accepted"))
				list_hyp(&keep, id, hdoc, 1);
			else if (!strcmp(vd, "rejected") || !strcmp(vd, "refuted"))
				list_hyp(&fall, id, hdoc, 1);
			else
				list_hyp(&open, id, hdoc, 0);
		}
	}
	if (out_accepted)
		rpt_p(d,
		      "In band says whether the observed number lies in the 95%% band registered "
		      "before any run. The verdict comes from the registered accept and reject rules, "
		      "which may test another comparison than the band (a ratio, a threshold, the "
		      "sceptic runs): %zu hypothes%s accepted by %s rules with %s number outside "
		      "%s band. A descriptive hypothesis's rule reports a figure the design cannot "
		      "fail; its band is what was expected, not a test.",
		      out_accepted, out_accepted == 1 ? "is is" : "es are",
		      out_accepted == 1 ? "its" : "their", out_accepted == 1 ? "its" : "their",
		      out_accepted == 1 ? "its" : "their");
	if (sr) {
		const json_t *s = rpt_pl(sr);
		char f[4][REPORT_NUM_MAX];

		rpt_p(d,
		      "Holdout: %s. The median relative error of the frozen predictions is %s "
		      "against "
		      "the threshold %s (registered before the holdout was seen); %s of %s "
		      "predictions fell inside their 95%% bands.",
		      json_is_true(json_object_get(s, "passed")) ? "PASS" : "FAIL",
		      report_fmt_json(json_object_get(s, "mdape"), f[0]),
		      report_fmt_json(json_object_get(s, "threshold"), f[1]),
		      report_fmt_json(json_object_get(s, "inside"), f[2]),
		      report_fmt_json(json_object_get(s, "n"), f[3]));
	} else if (json_is_true(json_object_get(m->holdout_state, "unfinished"))) {
		rpt_p(d,
		      "Holdout: UNFINISHED, not scored (%zu predictions on record; %zu of %lld "
		      "targets without a run; interim scores are never the result).",
		      json_array_size(m->predictions),
		      json_array_size(json_object_get(m->holdout_state, "targets_without_run")),
		      (long long) json_integer_value(json_object_get(m->holdout_state, "targets")));
	} else {
		rpt_p(d, "Holdout: not scored (%zu predictions on record).",
		      json_array_size(m->predictions));
	}
	amended_after_holdout(d, m, sr);
	rpt_p(d, "What survives (confirmatory findings, accepted): %s.", keep.len ? keep.p : "nothing");
	rpt_p(d, "What does not (rejected or refuted): %s.", fall.len ? fall.p : "nothing");
	if (mchk.len)
		rpt_p(d,
		      "Model checks (validate found every comparison their rules make decided by "
		      "the device model's parameters, whatever the engine measures; never counted "
		      "as evidence): %s.",
		      mchk.p);
	if (open.len)
		rpt_p(d, "Not settled (provisional or unresolved): %s.", open.p);
	if (expl.len)
		rpt_p(d, "Exploratory, never counted as confirmatory: %s.", expl.p);
	rb_free(&keep);
	rb_free(&fall);
	rb_free(&open);
	rb_free(&expl);
	rb_free(&mchk);
	json_decref(hs);
	rpt_fold_open(d, "The study in counts");
	rpt_sec_summary(d, m);
	rpt_fold_close(d);
}
