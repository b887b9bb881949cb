/*
 * sec_hypotheses.c - the registered hypotheses and their amendments.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Section 2: the registered hypotheses, their statements and amendments. */
void rpt_sec_hypotheses(doc *d, const model *m)
{
	json_t *hs = rpt_latest_hyps(m), *h, *t, *r;
	size_t i, j;

	rpt_h(d, 2, "Hypotheses");
	if (!json_array_size(hs)) {
		rpt_p(d, "No hypothesis is registered in this study.");
		json_decref(hs);
		return;
	}
	rpt_p(d,
	      "As registered (the latest version of each; amendments are listed below it, with the "
	      "access state at the moment they were made). The SHA-256 is over the canonical "
	      "hypothesis document and the frozen copy lies in the study's frozen/ folder.");
	t = rpt_table(d, "Registered hypotheses.", "ID", "Kind", "Metric", "Prediction [95% band]",
	              "Unit", "Registered (UTC)", "Seq", "SHA-256 (first 16)", "Amendments", NULL);
	json_array_foreach(hs, i, h)
	{
		json_t *first = json_object_get(h, "first"), *latest = json_object_get(h, "latest");
		json_t *ldoc = json_object_get(rpt_pl(latest), "doc");
		rbuf b;

		r = rpt_row(t);
		rpt_cell_s(r, rpt_str(rpt_pl(latest), "id"));
		rpt_cell_s(r, rpt_str(ldoc, "kind"));
		rpt_cell_s(r, rpt_str(ldoc, "metric"));
		rb_init(&b, 0);
		rpt_fmt_pred(&b, json_object_get(ldoc, "prediction"));
		rpt_cell_s(r, b.p);
		rb_free(&b);
		rpt_cell_s(r, rpt_str(ldoc, "unit"));
		rpt_cell_s(r, rpt_str(first, "ts"));
		rpt_cell_j(r, json_object_get(first, "seq"));
		{
			/* the first 16 hex digits fit a column; the whole hash is in the fold below
			 */
			const char *sha = rpt_str(rpt_pl(latest), "sha256");
			char sh[17];

			snprintf(sh, sizeof(sh), "%s", sha ? sha : "n/a");
			rpt_cell_s(r, sh);
		}
		rpt_cell_i(r, (int64_t) json_array_size(json_object_get(h, "amendments")));
	}
	rpt_fold_open(d, "Each hypothesis' statement, registration and amendments");
	json_array_foreach(hs, i, h)
	{
		json_t *first = json_object_get(h, "first"), *latest = json_object_get(h, "latest");
		json_t *ldoc = json_object_get(rpt_pl(latest), "doc"), *am;
		rbuf b;

		rb_init(&b, 0);
		rb_printf(&b, "%s: %s", rpt_str(rpt_pl(latest), "id") ?: "?",
		          rpt_str(ldoc, "title") ?: "");
		rpt_h(d, 3, b.p ? b.p : "");
		rb_free(&b);
		rpt_p(d, "%s", rpt_str(ldoc, "statement") ?: "");
		rpt_p(d,
		      "Registered at %s (seq %lld) from %s (file SHA-256 %s), frozen as %s; "
		      "document SHA-256 %s.",
		      rpt_str(first, "ts") ?: "",
		      (long long) json_integer_value(json_object_get(first, "seq")),
		      rpt_str(rpt_pl(first), "file") ?: "?",
		      rpt_str(rpt_pl(first), "file_sha256") ?: "n/a",
		      rpt_str(rpt_pl(first), "frozen") ?: "n/a",
		      rpt_str(rpt_pl(latest), "sha256") ?: "n/a");
		if (rpt_str(ldoc, "notes"))
			rpt_p(d, "Notes: %s", rpt_str(ldoc, "notes"));
		if (!json_array_size(json_object_get(h, "amendments")))
			continue;
		t = rpt_table(d, NULL, "Amended (UTC)", "Seq", "Access state", "Rationale",
		              "Prediction [95% band]", "Replaces", "New SHA-256", NULL);
		json_array_foreach(json_object_get(h, "amendments"), j, am)
		{
			r = rpt_row(t);
			rpt_cell_s(r, rpt_str(am, "ts"));
			rpt_cell_j(r, json_object_get(am, "seq"));
			rpt_cell_s(r, rpt_str(rpt_pl(am), "access_state"));
			rpt_cell_s(r, rpt_str(rpt_pl(am), "rationale"));
			rb_init(&b, 0);
			rpt_fmt_pred(
			    &b, json_object_get(json_object_get(rpt_pl(am), "doc"), "prediction"));
			rpt_cell_s(r, b.p);
			rb_free(&b);
			rpt_cell_s(r, rpt_str(rpt_pl(am), "replaces"));
			rpt_cell_s(r, rpt_str(rpt_pl(am), "sha256"));
		}
	}
	rpt_fold_close(d);
	json_decref(hs);
}
