/*
 * sec_records.c - refutations, deviations and notes, as recorded.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Section 7: the sceptics' records. */
void rpt_sec_refutations(doc *d, const model *m)
{
	json_t *t, *r, *rec;
	size_t i;

	rpt_h(d, 2, "Refutations");
	if (!json_array_size(m->refutations)) {
		rpt_p(d, "No refutation is on record.");
		return;
	}
	t = rpt_table(d, "The sceptics' records.", "Seq", "Time (UTC)", "Hypothesis",
	              "Access state", "Because", NULL);
	json_array_foreach(m->refutations, i, rec)
	{
		r = rpt_row(t);
		rpt_cell_j(r, json_object_get(rec, "seq"));
		rpt_cell_s(r, rpt_str(rec, "ts"));
		rpt_cell_s(r, rpt_str(rpt_pl(rec), "hypothesis"));
		rpt_cell_s(r, rpt_str(rpt_pl(rec), "access_state"));
		rpt_cell_s(r, rpt_str(rpt_pl(rec), "because"));
	}
}

/* Section 8: every deviation, always shown (none is said too). */
void rpt_sec_deviations(doc *d, const model *m)
{
	json_t *t, *r, *rec;
	size_t i;

	rpt_h(d, 2, "Deviations");
	rpt_p(d, "Every deviation from the registered plan is shown here, whatever it concerns, "
	         "with the "
	         "access state at the moment it was recorded.");
	if (!json_array_size(m->deviations)) {
		rpt_p(d, "No deviation is on record.");
		return;
	}
	t = rpt_table(d, "Deviations.", "Seq", "Time (UTC)", "Hypothesis", "Run", "Access state",
	              "Because", NULL);
	json_array_foreach(m->deviations, i, rec)
	{
		r = rpt_row(t);
		rpt_cell_j(r, json_object_get(rec, "seq"));
		rpt_cell_s(r, rpt_str(rec, "ts"));
		rpt_cell_s(r, rpt_str(rpt_pl(rec), "hypothesis") ?: "all");
		rpt_cell_s(r, rpt_str(rpt_pl(rec), "run_id") ?: "n/a");
		rpt_cell_s(r, rpt_str(rpt_pl(rec), "access_state"));
		rpt_cell_s(r, rpt_str(rpt_pl(rec), "because"));
	}
}

/* Section 9: notes, including where the log was published. */
void rpt_sec_notes(doc *d, const model *m)
{
	json_t *t, *r, *rec;
	size_t i;

	if (!json_array_size(m->notes))
		return;
	rpt_h(d, 2, "Notes and publications");
	t = rpt_table(d, "Notes.", "Seq", "Time (UTC)", "Text", "Published to", "Tree size",
	              "HTTP status", NULL);
	json_array_foreach(m->notes, i, rec)
	{
		r = rpt_row(t);
		rpt_cell_j(r, json_object_get(rec, "seq"));
		rpt_cell_s(r, rpt_str(rec, "ts"));
		rpt_cell_s(r, rpt_str(rpt_pl(rec), "text"));
		rpt_cell_s(r, rpt_str(rpt_pl(rec), "published") ?: "");
		if (json_object_get(rpt_pl(rec), "tree_size"))
			rpt_cell_j(r, json_object_get(rpt_pl(rec), "tree_size"));
		else
			rpt_cell_s(r, "");
		if (json_object_get(rpt_pl(rec), "status"))
			rpt_cell_j(r, json_object_get(rpt_pl(rec), "status"));
		else
			rpt_cell_s(r, "");
	}
}
