/*
 * sec_summary.c - the counts a reader wants first.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The few lines a reader wants first: verdicts by class, the holdout, what went off plan. */
void rpt_sec_summary(doc *d, const model *m)
{
	size_t acc = 0, rej = 0, ref = 0, unres = 0, prov = 0, expl = 0, post = 0, nmc = 0, i;
	size_t nreg = 0;
	size_t interim = 0, rescores = 0;
	json_t *v, *rec;
	const json_t *sr = rpt_score_of_record(m);
	char f[4][REPORT_NUM_MAX];
	rbuf eb, mb;

	rb_init(&eb, 0);
	rb_init(&mb, 0);
	json_array_foreach(m->verdicts, i, v)
	{
		const char *x = rpt_str(v, "verdict");

		nreg += !json_object_get(v, "version"); /* an amended version is not another hypothesis */
		if (!x)
			continue;
		if (!strcmp(rpt_str(v, "class") ?: "", "exploratory")) {
			rb_printf(
			    &eb, "%s%s %s%s", expl ? ", " : "", rpt_str(v, "hypothesis") ?: "?", x,
			    json_is_true(json_object_get(v, "post_hoc")) ? " (post hoc)" : "");
			expl++;
			post += json_is_true(json_object_get(v, "post_hoc"));
			continue;
		}
		if (!strcmp(rpt_str(v, "evidence") ?: "", "model check")) {
			rb_printf(&mb, "%s%s %s", nmc ? ", " : "", rpt_str(v, "hypothesis") ?: "?", x);
			nmc++;
			continue;
		}
		acc += !strcmp(x, "accepted");
		rej += !strcmp(x, "rejected");
		ref += !strcmp(x, "refuted");
		unres += !strcmp(x, "unresolved");
		prov += !strcmp(x, "provisional");
	}
	rpt_p(d,
	      "%zu hypotheses registered (amendments: %zu). Confirmatory findings, decided by the "
	      "runs the plan maps to each: %zu accepted (the plan's sceptic runs done and not "
	      "refuting), %zu rejected, %zu refuted, %zu unresolved. Provisional (the accept rule "
	      "holds, the sceptic runs are missing or none are planned): %zu.",
	      nreg, json_array_size(m->hyps) >= nreg ? json_array_size(m->hyps) - nreg : 0, acc, rej,
	      ref, unres, prov);
	if (nmc)
		rpt_p(d,
		      "Model checks (confirmatory hypotheses whose every comparison validate found "
		      "decided by the device model's parameters, whatever the engine measures; "
		      "never counted as evidence): %zu: %s.",
		      nmc, mb.p);
	rb_free(&mb);
	rpt_p(d,
	      "Exploratory hypotheses, never counted as confirmatory: %zu (%zu post hoc: "
	      "registered or amended after the first run)%s%s%s.",
	      expl, post, expl ? ": " : "", expl && eb.p ? eb.p : "", "");
	rb_free(&eb);
	{
		size_t ncls[4] = {0};
		static const char *const cls[] = {"design", "sceptic", "holdout", "exploratory"};

		json_array_foreach(m->runs, i, rec)
		{
			const char *c = rpt_str(rpt_pl(rec), "class")
			                    ?: json_is_true(json_object_get(rpt_pl(rec), "holdout"))
			                       ? "holdout"
			                       : "exploratory";

			for (size_t k = 0; k < 4; k++)
				ncls[k] += !strcmp(c, cls[k]);
		}
		rpt_p(d,
		      "%zu runs: %zu design, %zu sceptic, %zu holdout, %zu exploratory (not in the "
		      "plan: never counted toward a confirmatory verdict or the holdout score). "
		      "%zu validation checks, %zu refusals, %zu refutations and %zu deviations are "
		      "on "
		      "record.",
		      json_array_size(m->runs), ncls[0], ncls[1], ncls[2], ncls[3],
		      json_array_size(m->validations), json_array_size(m->refusals),
		      json_array_size(m->refutations), json_array_size(m->deviations));
	}
	json_array_foreach(m->scores, i, rec)
	{
		interim += json_is_true(json_object_get(rpt_pl(rec), "interim"));
		rescores += json_is_true(json_object_get(rpt_pl(rec), "rescore"));
	}
	if (sr) {
		const json_t *s = rpt_pl(sr);

		rpt_p(
		    d,
		    "Holdout (the score of record, seq %lld): median relative error %s against the "
		    "threshold %s (%s): %s, %s of %s predictions inside their bands. "
		    "Interim scores: %zu; re-scores: %zu.",
		    (long long) json_integer_value(json_object_get(sr, "seq")),
		    report_fmt_json(json_object_get(s, "mdape"), f[0]),
		    report_fmt_json(json_object_get(s, "threshold"), f[1]),
		    rpt_str(s, "threshold_source") ?: "unstated",
		    json_is_true(json_object_get(s, "passed")) ? "PASS" : "FAIL",
		    report_fmt_json(json_object_get(s, "inside"), f[2]),
		    report_fmt_json(json_object_get(s, "n"), f[3]), interim, rescores);
	} else {
		rpt_p(d, "Holdout: %zu predictions, not scored (interim scores: %zu).",
		      json_array_size(m->predictions), interim);
	}
}
