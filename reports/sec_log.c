/*
 * sec_log.c - the log: what was verified, the checkpoint, the files.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"

void rpt_sec_log(doc *d, const model *m, const char *const *files, size_t nfiles)
{
	char hex[65], n[REPORT_NUM_MAX];
	const char *key;
	json_t *t, *r, *v;
	rbuf kinds;
	size_t i;

	rpt_h(d, 2, "The log");
	rpt_p(d,
	      "Everything in this report comes from the study's ledger: %s records, from %s to %s. "
	      "Every record hash, the RFC 6962 Merkle root and %lld raw measurement blobs were "
	      "recomputed before anything was written: the log verifies.",
	      report_fmt_num((double) m->size, n), m->first_ts[0] ? m->first_ts : "-",
	      m->last_ts[0] ? m->last_ts : "-", (long long) m->vi.raw_blobs);
	t = rpt_table(d, NULL, "Field", "Value", NULL);
	if (m->study) {
		r = rpt_row(t);
		rpt_cell_s(r, "Study");
		rpt_cell_s(r, rpt_str(json_object_get(rpt_pl(m->study), "doc"), "id")
		                  ?: rpt_str(rpt_pl(m->study), "id"));
		r = rpt_row(t);
		rpt_cell_s(r, "Study spec SHA-256");
		rpt_cell_s(r, rpt_str(rpt_pl(m->study), "sha256"));
	}
	r = rpt_row(t);
	rpt_cell_s(r, "Records (tree size)");
	rpt_cell_i(r, m->size);
	r = rpt_row(t);
	rpt_cell_s(r, "First record (UTC)");
	rpt_cell_s(r, m->first_ts);
	r = rpt_row(t);
	rpt_cell_s(r, "Last record (UTC)");
	rpt_cell_s(r, m->last_ts);
	r = rpt_row(t);
	rpt_cell_s(r, "Merkle root (hex)");
	cs_hex(m->vi.root, 32, hex);
	rpt_cell_s(r, hex);
	r = rpt_row(t);
	rpt_cell_s(r, "Raw blobs verified");
	rpt_cell_i(r, m->vi.raw_blobs);
	r = rpt_row(t);
	rpt_cell_s(r, "Access state");
	rpt_cell_s(r, m->access_state);
	rb_init(&kinds, 0);
	json_object_foreach((json_t *) m->kinds, key, v)
	{
		if (kinds.len)
			rb_put(&kinds, ", ");
		rb_printf(&kinds, "%s %lld", key, (long long) json_integer_value(v));
	}
	r = rpt_row(t);
	rpt_cell_s(r, "Records by kind");
	rpt_cell_s(r, kinds.p ? kinds.p : "");
	rb_free(&kinds);
	rpt_p(d, m->vi.keyed
	             ? "Checkpoint (C2SP tlog-checkpoint, signed with the study's key "
	               "(coldstudy log key); also checkpoint.txt):"
	             : "Checkpoint (C2SP tlog-checkpoint body, unsigned: the study was made "
	               "before studies had keys; also checkpoint.txt):");
	rpt_pre(d, m->checkpoint);
	rpt_p(
	    d,
	    "Anyone holding this checkpoint can check that the log they are given still extends it "
	    "with 'coldstudy log verify STUDY --checkpoint checkpoint.txt', and that a record is "
	    "in "
	    "it with 'coldstudy log prove'. records.jsonl is the export: one canonical record per "
	    "line, with its hash and the previous hash.");
	rb_init(&kinds, 0);
	for (i = 0; i < nfiles; i++) {
		if (i)
			rb_put(&kinds, ", ");
		rb_put(&kinds, files[i]);
	}
	rpt_p(d, "Files of this report: %s.", kinds.p ? kinds.p : "");
	rb_free(&kinds);
}
