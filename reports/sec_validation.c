/*
 * sec_validation.c - validation checks and refusals.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Section 3: every validation batch and every refusal. */
void rpt_sec_validation(doc *d, const model *m)
{
	json_t *t, *r, *rec;
	size_t i;

	rpt_h(d, 2, "Validation checks and refusals");
	if (!json_array_size(m->validations)) {
		rpt_p(d, "No validation check is on record.");
	} else {
		json_t *batches = json_array(), *cur = NULL;
		const json_t *bt;

		/* one row a batch: when, how many checks, which failed */
		json_array_foreach(m->validations, i, rec)
		{
			const json_t *p = rpt_pl(rec);
			json_t *b = json_object_get(p, "batch");
			int passed = json_is_true(json_object_get(p, "passed"));

			if (!cur ||
			    !json_equal(json_object_get(cur, "batch"), b ? b : json_null())) {
				cur = json_pack("{s:O,s:s,s:i,s:i,s:[]}", "batch",
				                b ? b : json_null(), "ts", rpt_str(rec, "ts") ?: "",
				                "n", 0, "ok", 0, "failed");
				if (!cur || json_array_append_new(batches, cur)) {
					d->failed = 1;
					break;
				}
			}
			json_object_set_new(
			    cur, "n",
			    json_integer(json_integer_value(json_object_get(cur, "n")) + 1));
			json_object_set_new(
			    cur, "ok",
			    json_integer(json_integer_value(json_object_get(cur, "ok")) + passed));
			if (!passed)
				json_array_append_new(json_object_get(cur, "failed"),
				                      json_string(rpt_str(p, "check") ?: "?"));
		}
		t = rpt_table(
		    d, "Validation, batch by batch (every check is in the folded table below).",
		    "Batch", "Time (UTC)", "Checks", "Passed", "Failed checks", NULL);
		json_array_foreach(batches, i, bt)
		{
			r = rpt_row(t);
			rpt_cell_j(r, json_object_get(bt, "batch"));
			rpt_cell_s(r, rpt_str(bt, "ts"));
			rpt_cell_j(r, json_object_get(bt, "n"));
			rpt_cell_j(r, json_object_get(bt, "ok"));
			rpt_cell_j(r, json_object_get(bt, "failed"));
		}
		json_decref(batches);
		rpt_fold_open(d, "Every validation check with its detail");
		t = rpt_table(d, "Validation checks, every batch.", "Batch", "Seq", "Time (UTC)",
		              "Check", "Passed", "Detail", NULL);
		json_array_foreach(m->validations, i, rec)
		{
			r = rpt_row(t);
			rpt_cell_j(r, json_object_get(rpt_pl(rec), "batch"));
			rpt_cell_j(r, json_object_get(rec, "seq"));
			rpt_cell_s(r, rpt_str(rec, "ts"));
			rpt_cell_s(r, rpt_str(rpt_pl(rec), "check"));
			rpt_cell_j(r, json_object_get(rpt_pl(rec), "passed"));
			rpt_cell_j(r, json_object_get(rpt_pl(rec), "detail"));
		}
		rpt_fold_close(d);
	}
	if (!json_array_size(m->refusals)) {
		rpt_p(d, "No refusal is on record.");
		return;
	}
	rpt_p(d, "Every refusal by a guard or a pre-registration rule is itself a record:");
	t = rpt_table(d, "Refusals.", "Seq", "Time (UTC)", "Guard", "Verb", "Target", "Why", NULL);
	json_array_foreach(m->refusals, i, rec)
	{
		r = rpt_row(t);
		rpt_cell_j(r, json_object_get(rec, "seq"));
		rpt_cell_s(r, rpt_str(rec, "ts"));
		rpt_cell_s(r, rpt_str(rpt_pl(rec), "guard"));
		rpt_cell_s(r, rpt_str(rpt_pl(rec), "verb"));
		rpt_cell_s(r, rpt_str(rpt_pl(rec), "target"));
		rpt_cell_s(r, rpt_str(rpt_pl(rec), "why"));
	}
}
