/*
 * report.c - a study's report, published from its ledger alone.
 *
 * Phases:
 *  1. verify: ledger_verify_ex recomputes every hash, the Merkle root and
 *     every raw blob; a log that fails is not published (exit 4) and
 *     nothing is written.
 *  2. gather: one pass over the records, kept by kind (hypotheses and
 *     amendments, validation, refusals, runs, predictions, scores,
 *     refutations, deviations, notes); per-query rows are read back from
 *     the raw side table by the hashes the run records carry.
 *  3. build: a document model (a JSON array of blocks: headings,
 *     paragraphs, tables, preformatted text, figures) plus the SVG plots.
 *     Verdicts are evaluated now from the registered rules
 *     (report_verdicts with record = 0), showing the numbers each rule saw.
 *  4. render: the same blocks as Markdown and as self-contained HTML
 *     (inline CSS and SVG, a Content-Security-Policy that forbids scripts
 *     and remote loads; all record text escaped).
 *  5. publish: every file is written into a fresh temporary directory
 *     beside R, then the directory is renamed into place (or exchanged
 *     with a previous report), so R is either the old report or the new
 *     one, never half of either.
 *
 * Determinism: the only times in a report are the records' own; numbers
 * print through report_fmt_num; maps are walked in record order. The same
 * ledger gives the same bytes.
 */
#include "report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ledger.h"
#include "report_int.h"

#define OUT_MAX_FILES 16

/* ---- 2. gather ---- */

typedef struct model {
	int64_t size;
	ledger_verify_info vi;
	char *checkpoint;
	char first_ts[32], last_ts[32];
	json_t *kinds; /* kind -> count, in first-seen order */
	json_t *study; /* latest study record or NULL */
	json_t *hyps;  /* hypothesis and amendment records */
	json_t *validations, *refusals, *runs, *run_starts, *predictions, *scores;
	json_t *refutations, *deviations, *notes, *verdict_recs;
	json_t *verdicts; /* evaluated now */
	const char *access_state;
} model;

/* Each kept record: {"seq", "ts", "kind", "p": payload}. */
static int gather_cb(const ledger_record *r, void *ud)
{
	model *m = ud;
	json_t *p = json_loads(r->payload, JSON_DECODE_ANY, NULL), *rec, *list = NULL;
	json_t *count;

	if (!p)
		p = json_null();
	if (!m->first_ts[0])
		snprintf(m->first_ts, sizeof(m->first_ts), "%s", r->ts);
	snprintf(m->last_ts, sizeof(m->last_ts), "%s", r->ts);
	count = json_object_get(m->kinds, r->kind);
	json_object_set_new(m->kinds, r->kind,
	                    json_integer(count ? json_integer_value(count) + 1 : 1));
	rec = json_pack("{s:I,s:s,s:s,s:o}", "seq", (json_int_t) r->seq, "ts", r->ts, "kind",
	                r->kind, "p", p);
	if (!rec)
		return 0;
	if (!strcmp(r->kind, "study")) {
		json_decref(m->study);
		m->study = json_incref(rec);
	} else if (!strcmp(r->kind, "hypothesis") || !strcmp(r->kind, "amendment"))
		list = m->hyps;
	else if (!strcmp(r->kind, "validation"))
		list = m->validations;
	else if (!strcmp(r->kind, "refusal"))
		list = m->refusals;
	else if (!strcmp(r->kind, "run"))
		list = m->runs;
	else if (!strcmp(r->kind, "run_start"))
		list = m->run_starts;
	else if (!strcmp(r->kind, "prediction"))
		list = m->predictions;
	else if (!strcmp(r->kind, "score"))
		list = m->scores;
	else if (!strcmp(r->kind, "refutation"))
		list = m->refutations;
	else if (!strcmp(r->kind, "deviation"))
		list = m->deviations;
	else if (!strcmp(r->kind, "note"))
		list = m->notes;
	else if (!strcmp(r->kind, "verdict"))
		list = m->verdict_recs;
	if (list)
		json_array_append(list, rec);
	json_decref(rec);
	return 0;
}

/* Release what model_load gathered; accepts a partly loaded model. */
static void model_free(model *m)
{
	free(m->checkpoint);
	json_decref(m->kinds);
	json_decref(m->study);
	json_decref(m->hyps);
	json_decref(m->validations);
	json_decref(m->refusals);
	json_decref(m->runs);
	json_decref(m->run_starts);
	json_decref(m->predictions);
	json_decref(m->scores);
	json_decref(m->refutations);
	json_decref(m->deviations);
	json_decref(m->notes);
	json_decref(m->verdict_recs);
	json_decref(m->verdicts);
}

/* Verify the log, then read everything a report shows. */
static int model_load(ledger *l, model *m, cs_err *e)
{
	int rc;

	memset(m, 0, sizeof(*m));
	rc = ledger_verify_ex(l, NULL, &m->vi, e);
	if (rc)
		return rc;
	m->size = m->vi.size;
	/* a signed study's report carries its signed checkpoint (ledger_checkpoint_signed) */
	rc = ledger_signed(l) ? ledger_checkpoint_signed(l, &m->checkpoint, e)
			      : ledger_checkpoint(l, &m->checkpoint, e);
	if (rc)
		return rc;
	m->kinds = json_object();
	m->hyps = json_array();
	m->validations = json_array();
	m->refusals = json_array();
	m->runs = json_array();
	m->run_starts = json_array();
	m->predictions = json_array();
	m->scores = json_array();
	m->refutations = json_array();
	m->deviations = json_array();
	m->notes = json_array();
	m->verdict_recs = json_array();
	if (!m->kinds || !m->hyps || !m->notes || !m->verdict_recs)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	rc = ledger_foreach(l, NULL, gather_cb, m, e);
	if (rc)
		return rc;
	m->access_state = ledger_access_state(l);
	rc = report_verdicts(l, m->size, 0, &m->verdicts, e);
	if (rc == CS_EXIT_REFUSED) { /* no hypothesis registered: no verdicts */
		m->verdicts = json_array();
		rc = 0;
	}
	return rc;
}

/* ---- small JSON accessors ---- */

static const char *str_of(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* payload of a kept record */
static json_t *pl(const json_t *rec)
{
	return json_object_get(rec, "p");
}

/* o[k] as a double, NAN when absent or not a number. */
static double num_of(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Comma-joined strings of a JSON array of strings into b. */
static void join_strings(rbuf *b, const json_t *a, const char *sep)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
	{
		if (i)
			rb_put(b, sep);
		if (json_is_string(v))
			rb_put(b, json_string_value(v));
		else {
			char n[REPORT_NUM_MAX];

			rb_put(b, report_fmt_json(v, n));
		}
	}
}

/* ---- 3. the document model ---- */

typedef struct doc {
	json_t *blocks;
	json_t *figs; /* file name -> svg text */
	json_t *fig_order;
	int failed;
} doc;

/* Append a block (stolen); a NULL block marks the document failed. */
static void add_block(doc *d, json_t *blk)
{
	if (!blk || json_array_append_new(d->blocks, blk))
		d->failed = 1;
}

/* A heading of level 2 or 3 (the title is level 1). */
static void add_h(doc *d, int level, const char *text)
{
	add_block(d, json_pack("{s:s,s:i,s:s}", "t", "h", "level", level, "text", text));
}

/* A paragraph, printf-style (the text is escaped when rendered). */
static void add_p(doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_p(doc *d, const char *fmt, ...)
{
	rbuf b;
	va_list ap;
	int n;

	rb_init(&b, 0);
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n >= 0) {
		char *s = malloc((size_t) n + 1);

		if (s) {
			va_start(ap, fmt);
			vsnprintf(s, (size_t) n + 1, fmt, ap);
			va_end(ap);
			add_block(d, json_pack("{s:s,s:s}", "t", "p", "text", s));
			free(s);
			return;
		}
	}
	d->failed = 1;
}

/* Preformatted text, shown as is (escaped for HTML). */
static void add_pre(doc *d, const char *text)
{
	add_block(d, json_pack("{s:s,s:s}", "t", "pre", "text", text));
}

/* A table with the given header cells (NULL-terminated); rows via row_new. */
static json_t *add_table(doc *d, const char *caption, ...)
{
	json_t *head = json_array(), *t;
	va_list ap;
	const char *c;

	va_start(ap, caption);
	while ((c = va_arg(ap, const char *)))
		json_array_append_new(head, json_string(c));
	va_end(ap);
	t = json_pack("{s:s,s:o,s:[],s:s?}", "t", "table", "head", head, "rows", "caption",
	              caption);
	add_block(d, t);
	return t; /* borrowed: owned by d->blocks */
}

/* A new row at the end of table (borrowed). */
static json_t *row_new(json_t *table)
{
	json_t *r = json_array();

	json_array_append_new(json_object_get(table, "rows"), r);
	return r; /* borrowed */
}

/* A text cell (NULL: empty). */
static void cell_s(json_t *row, const char *s)
{
	json_array_append_new(row, json_string(s ? s : ""));
}

/* A number cell as report_fmt_num prints it. */
static void cell_n(json_t *row, double x)
{
	char n[REPORT_NUM_MAX];

	cell_s(row, report_fmt_num(x, n));
}

/* A cell for any JSON value: lists joined, objects as canonical JSON, null as n/a. */
static void cell_j(json_t *row, const json_t *v)
{
	char n[REPORT_NUM_MAX];

	if (json_is_array(v) && !json_array_size(v)) {
		cell_s(row, "none");
	} else if (json_is_array(v)) {
		rbuf b;

		rb_init(&b, 0);
		join_strings(&b, v, ", ");
		cell_s(row, rb_ok(&b) && b.p ? b.p : "");
		rb_free(&b);
	} else if (json_is_object(v)) {
		char *c = NULL;

		cs_json_canonical(v, &c, NULL, NULL);
		cell_s(row, c ? c : "");
		free(c);
	} else {
		cell_s(row, report_fmt_json(v, n));
	}
}

/* An integer cell with thousands separators. */
static void cell_i(json_t *row, int64_t v)
{
	char n[REPORT_NUM_MAX];

	cell_s(row, report_fmt_num((double) v, n));
}

/* Register a figure: svg (taken) saved as file, shown with caption. */
static void add_fig(doc *d, const char *file, const char *caption, rbuf *svg)
{
	if (!rb_ok(svg) || !svg->p) {
		d->failed = 1;
		rb_free(svg);
		return;
	}
	json_object_set_new(d->figs, file, json_string(svg->p));
	json_array_append_new(d->fig_order, json_string(file));
	add_block(d, json_pack("{s:s,s:s,s:s}", "t", "fig", "file", file, "caption", caption));
	rb_free(svg);
}

/* ---- sections ---- */

static void sec_log(doc *d, const model *m, const char *const *files, size_t nfiles)
{
	char hex[65], n[REPORT_NUM_MAX];
	const char *key;
	json_t *t, *r, *v;
	rbuf kinds;
	size_t i;

	add_h(d, 2, "1. The log");
	add_p(d,
	      "Everything in this report comes from the study's ledger: %s records, from %s to %s. "
	      "Every record hash, the RFC 6962 Merkle root and %lld raw measurement blobs were "
	      "recomputed before anything was written: the log verifies.",
	      report_fmt_num((double) m->size, n), m->first_ts[0] ? m->first_ts : "-",
	      m->last_ts[0] ? m->last_ts : "-", (long long) m->vi.raw_blobs);
	t = add_table(d, NULL, "Field", "Value", NULL);
	if (m->study) {
		r = row_new(t);
		cell_s(r, "Study");
		cell_s(r, str_of(json_object_get(pl(m->study), "doc"), "id")
		              ?: str_of(pl(m->study), "id"));
		r = row_new(t);
		cell_s(r, "Study spec SHA-256");
		cell_s(r, str_of(pl(m->study), "sha256"));
	}
	r = row_new(t);
	cell_s(r, "Records (tree size)");
	cell_i(r, m->size);
	r = row_new(t);
	cell_s(r, "First record (UTC)");
	cell_s(r, m->first_ts);
	r = row_new(t);
	cell_s(r, "Last record (UTC)");
	cell_s(r, m->last_ts);
	r = row_new(t);
	cell_s(r, "Merkle root (hex)");
	cs_hex(m->vi.root, 32, hex);
	cell_s(r, hex);
	r = row_new(t);
	cell_s(r, "Raw blobs verified");
	cell_i(r, m->vi.raw_blobs);
	r = row_new(t);
	cell_s(r, "Access state");
	cell_s(r, m->access_state);
	rb_init(&kinds, 0);
	json_object_foreach((json_t *) m->kinds, key, v)
	{
		if (kinds.len)
			rb_put(&kinds, ", ");
		rb_printf(&kinds, "%s %lld", key, (long long) json_integer_value(v));
	}
	r = row_new(t);
	cell_s(r, "Records by kind");
	cell_s(r, kinds.p ? kinds.p : "");
	rb_free(&kinds);
	add_p(d, m->vi.keyed ? "Checkpoint (C2SP tlog-checkpoint, signed with the study's key "
			       "(coldstudy log key); also checkpoint.txt):"
			     : "Checkpoint (C2SP tlog-checkpoint body, unsigned: the study was made "
			       "before studies had keys; also checkpoint.txt):");
	add_pre(d, m->checkpoint);
	add_p(
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
	add_p(d, "Files of this report: %s.", kinds.p ? kinds.p : "");
	rb_free(&kinds);
}

/* Latest registered version of each hypothesis, in first-registration order. */
static json_t *latest_hyps(const model *m)
{
	json_t *byid = json_object(), *order = json_array(), *out = json_array(), *rec, *id;
	size_t i;

	json_array_foreach(m->hyps, i, rec)
	{
		const char *hid = str_of(pl(rec), "id");
		json_t *cur;

		if (!hid)
			continue;
		cur = json_object_get(byid, hid);
		if (!cur) {
			json_array_append_new(order, json_string(hid));
			cur =
			    json_pack("{s:O,s:O,s:[]}", "first", rec, "latest", rec, "amendments");
			json_object_set_new(byid, hid, cur);
		} else {
			json_object_set(cur, "latest", rec);
		}
		if (!strcmp(str_of(rec, "kind"), "amendment"))
			json_array_append(json_object_get(cur, "amendments"), rec);
	}
	json_array_foreach(order, i, id)
	    json_array_append(out, json_object_get(byid, json_string_value(id)));
	json_decref(byid);
	json_decref(order);
	return out;
}

/* "0.97 [0.9, 1]" */
static void fmt_pred(rbuf *b, const json_t *pred)
{
	char x[REPORT_NUM_MAX], lo[REPORT_NUM_MAX], hi[REPORT_NUM_MAX];
	const json_t *band = json_object_get(pred, "band95");

	rb_printf(b, "%s [%s, %s]", report_fmt_json(json_object_get(pred, "value"), x),
	          report_fmt_json(json_array_get(band, 0), lo),
	          report_fmt_json(json_array_get(band, 1), hi));
}

/* Section 2: the registered hypotheses, their statements and amendments. */
static void sec_hypotheses(doc *d, const model *m)
{
	json_t *hs = latest_hyps(m), *h, *t, *r;
	size_t i, j;

	add_h(d, 2, "2. Hypotheses");
	if (!json_array_size(hs)) {
		add_p(d, "No hypothesis is registered in this study.");
		json_decref(hs);
		return;
	}
	add_p(d,
	      "As registered (the latest version of each; amendments are listed below it, with the "
	      "access state at the moment they were made). The SHA-256 is over the canonical "
	      "hypothesis document and the frozen copy lies in the study's frozen/ folder.");
	t = add_table(d, "Table 1. Registered hypotheses.", "ID", "Kind", "Metric",
	              "Prediction [95% band]", "Unit", "Registered (UTC)", "Seq", "SHA-256",
	              "Amendments", NULL);
	json_array_foreach(hs, i, h)
	{
		json_t *first = json_object_get(h, "first"), *latest = json_object_get(h, "latest");
		json_t *ldoc = json_object_get(pl(latest), "doc");
		rbuf b;

		r = row_new(t);
		cell_s(r, str_of(pl(latest), "id"));
		cell_s(r, str_of(ldoc, "kind"));
		cell_s(r, str_of(ldoc, "metric"));
		rb_init(&b, 0);
		fmt_pred(&b, json_object_get(ldoc, "prediction"));
		cell_s(r, b.p);
		rb_free(&b);
		cell_s(r, str_of(ldoc, "unit"));
		cell_s(r, str_of(first, "ts"));
		cell_j(r, json_object_get(first, "seq"));
		cell_s(r, str_of(pl(latest), "sha256"));
		cell_i(r, (int64_t) json_array_size(json_object_get(h, "amendments")));
	}
	json_array_foreach(hs, i, h)
	{
		json_t *first = json_object_get(h, "first"), *latest = json_object_get(h, "latest");
		json_t *ldoc = json_object_get(pl(latest), "doc"), *am;
		rbuf b;

		rb_init(&b, 0);
		rb_printf(&b, "%s: %s", str_of(pl(latest), "id") ?: "?",
		          str_of(ldoc, "title") ?: "");
		add_h(d, 3, b.p ? b.p : "");
		rb_free(&b);
		add_p(d, "%s", str_of(ldoc, "statement") ?: "");
		add_p(d, "Registered at %s (seq %lld) from %s (file SHA-256 %s), frozen as %s.",
		      str_of(first, "ts") ?: "",
		      (long long) json_integer_value(json_object_get(first, "seq")),
		      str_of(pl(first), "file") ?: "?", str_of(pl(first), "file_sha256") ?: "n/a",
		      str_of(pl(first), "frozen") ?: "n/a");
		if (str_of(ldoc, "notes"))
			add_p(d, "Notes: %s", str_of(ldoc, "notes"));
		if (!json_array_size(json_object_get(h, "amendments")))
			continue;
		t = add_table(d, NULL, "Amended (UTC)", "Seq", "Access state", "Rationale",
		              "Prediction [95% band]", "Replaces", "New SHA-256", NULL);
		json_array_foreach(json_object_get(h, "amendments"), j, am)
		{
			r = row_new(t);
			cell_s(r, str_of(am, "ts"));
			cell_j(r, json_object_get(am, "seq"));
			cell_s(r, str_of(pl(am), "access_state"));
			cell_s(r, str_of(pl(am), "rationale"));
			rb_init(&b, 0);
			fmt_pred(&b, json_object_get(json_object_get(pl(am), "doc"), "prediction"));
			cell_s(r, b.p);
			rb_free(&b);
			cell_s(r, str_of(pl(am), "replaces"));
			cell_s(r, str_of(pl(am), "sha256"));
		}
	}
	json_decref(hs);
}

/* Section 3: every validation batch and every refusal. */
static void sec_validation(doc *d, const model *m)
{
	json_t *t, *r, *rec;
	size_t i;

	add_h(d, 2, "3. Validation checks and refusals");
	if (!json_array_size(m->validations)) {
		add_p(d, "No validation check is on record.");
	} else {
		t = add_table(d, "Table 2. Validation checks, every batch.", "Batch", "Seq",
		              "Time (UTC)", "Check", "Passed", "Detail", NULL);
		json_array_foreach(m->validations, i, rec)
		{
			r = row_new(t);
			cell_j(r, json_object_get(pl(rec), "batch"));
			cell_j(r, json_object_get(rec, "seq"));
			cell_s(r, str_of(rec, "ts"));
			cell_s(r, str_of(pl(rec), "check"));
			cell_j(r, json_object_get(pl(rec), "passed"));
			cell_j(r, json_object_get(pl(rec), "detail"));
		}
	}
	if (!json_array_size(m->refusals)) {
		add_p(d, "No refusal is on record.");
		return;
	}
	add_p(d, "Every refusal by a guard or a pre-registration rule is itself a record:");
	t = add_table(d, "Table 3. Refusals.", "Seq", "Time (UTC)", "Guard", "Verb", "Target",
	              "Why", NULL);
	json_array_foreach(m->refusals, i, rec)
	{
		r = row_new(t);
		cell_j(r, json_object_get(rec, "seq"));
		cell_s(r, str_of(rec, "ts"));
		cell_s(r, str_of(pl(rec), "guard"));
		cell_s(r, str_of(pl(rec), "verb"));
		cell_s(r, str_of(pl(rec), "target"));
		cell_s(r, str_of(pl(rec), "why"));
	}
}

/* The label a run's device is known by. */
static const char *device_of(const json_t *run)
{
	const char *dev = str_of(json_object_get(pl(run), "features"), "device");

	return dev ? dev : "host device";
}

/* Concurrency of a run: fan-out width times clients (1 when absent). */
static double concurrency_of(const json_t *run)
{
	const json_t *f = json_object_get(pl(run), "features");
	double fo = num_of(f, "fanout"), cl = num_of(f, "clients");

	return (isfinite(fo) && fo > 0 ? fo : 1) * (isfinite(cl) && cl > 0 ? cl : 1);
}

/* A run's metric k (borrowed; NULL when absent). */
static const json_t *metric(const json_t *run, const char *k)
{
	return json_object_get(json_object_get(pl(run), "metrics"), k);
}

/* A run's metric k as a double, NAN when null or absent. */
static double metric_num(const json_t *run, const char *k)
{
	const json_t *v = metric(run, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Per-query mean read latency (read_ms / reads) of a run's raw rows, appended to *v. */
static int query_read_ms(ledger *l, const json_t *run, double **v, size_t *n, size_t *cap,
                         cs_err *e)
{
	const char *sha = str_of(json_object_get(pl(run), "raw"), "queries");
	json_t *rows = NULL, *row;
	size_t i;
	int rc;

	if (!sha)
		return 0;
	rc = ledger_get_raw(l, sha, &rows, e);
	if (rc)
		return rc;
	json_array_foreach(rows, i, row)
	{
		double reads = num_of(row, "reads"), ms = num_of(row, "read_ms");

		if (!(reads > 0) || !isfinite(ms))
			continue;
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 256;
			double *nv = realloc(*v, nc * sizeof(**v));

			if (!nv) {
				json_decref(rows);
				return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			}
			*v = nv;
			*cap = nc;
		}
		(*v)[(*n)++] = ms / reads;
	}
	json_decref(rows);
	return 0;
}

/* qsort order for doubles. */
static int dbl_cmp(const void *x, const void *y)
{
	double a = *(const double *) x, c = *(const double *) y;

	return (a > c) - (a < c);
}

/* Quantile q of v[0..n) (sorted here); NAN when n is 0. */
static double quantile_of(double *v, size_t n, double q)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), dbl_cmp);
	return cs_quantile(v, n, q);
}

/* "lo to hi (median m, n runs)" of the finite values; "n/a" when none. */
static void range_text(rbuf *b, double *v, size_t n)
{
	char lo[REPORT_NUM_MAX], hi[REPORT_NUM_MAX], md[REPORT_NUM_MAX];
	size_t k = 0, i;

	for (i = 0; i < n; i++)
		if (isfinite(v[i]))
			v[k++] = v[i];
	if (!k) {
		rb_put(b, "n/a");
		return;
	}
	md[0] = '\0';
	report_fmt_num(quantile_of(v, k, 0.5), md);
	if (k == 1)
		rb_put(b, report_fmt_num(v[0], lo));
	else
		rb_printf(b, "%s to %s (median %s)", report_fmt_num(v[0], lo),
		          report_fmt_num(v[k - 1], hi), md);
}

typedef struct devgroup {
	const char *name;
	double *run_ms, *cold_s, *q_ms;
	size_t nrun, ncold, nq, capq;
} devgroup;

#define MAX_DEVICES 32

/* Section 4: the runs, where the time goes, serial against fan-out, by device, and the figures. */
static int sec_runs(doc *d, const model *m, ledger *l, cs_err *e)
{
	devgroup g[MAX_DEVICES];
	size_t ng = 0, i, k, nruns = json_array_size(m->runs);
	svg_bar *bars = NULL;
	svg_point *pts = NULL;
	json_t *t, *r, *run;
	int rc = 0, any_fan = 0;

	memset(g, 0, sizeof(g));
	add_h(d, 2, "4. Runs");
	if (!nruns) {
		add_p(d, "No run is on record yet.");
		return 0;
	}
	add_p(d,
	      "%zu run records. Metrics a device could not supply are shown as "
	      "n/a, never as zero. Names follow the measurement vocabulary: engine reads are "
	      "counted by "
	      "the block-I/O layer, device reads by the block device's counters; I/O / wall is "
	      "engine "
	      "reads times engine per-read latency over wall time; busy is the device's io_ticks "
	      "over "
	      "wall.",
	      nruns);
	t = add_table(d, "Table 4. The runs.", "Run", "Seq", "Tags", "Hypotheses", "Index", "Mode",
	              "Fan-out x clients", "Device", "Cold", "Holdout", "Status", NULL);
	json_array_foreach(m->runs, i, run)
	{
		const json_t *p = pl(run), *f = json_object_get(p, "features");
		char fc[64], a[REPORT_NUM_MAX], b2[REPORT_NUM_MAX];

		r = row_new(t);
		cell_s(r, str_of(p, "run_id"));
		cell_j(r, json_object_get(run, "seq"));
		cell_j(r, json_object_get(p, "tags"));
		cell_j(r, json_object_get(p, "hypotheses"));
		cell_s(r, str_of(f, "kind") ?: str_of(json_object_get(p, "index"), "kind") ?: "n/a");
		cell_s(r, str_of(f, "mode") ?: "n/a");
		snprintf(fc, sizeof(fc), "%s x %s",
		         report_fmt_json(json_object_get(f, "fanout"), a),
		         report_fmt_json(json_object_get(f, "clients"), b2));
		cell_s(r, fc);
		cell_s(r, device_of(run));
		cell_j(r, json_object_get(f, "cold"));
		cell_j(r, json_object_get(p, "holdout"));
		cell_s(r, str_of(p, "status") ?: "complete");
	}

	t = add_table(d, "Table 5. Where the time goes.", "Run", "Wall (s)", "Queries",
	              "Engine reads", "Device reads", "Device per read (ms)",
	              "Engine per read (ms)", "I/O / wall", "Busy", "Resident before", NULL);
	json_array_foreach(m->runs, i, run)
	{
		r = row_new(t);
		cell_s(r, str_of(pl(run), "run_id"));
		cell_j(r, metric(run, "wall_s"));
		cell_j(r, metric(run, "queries"));
		cell_j(r, metric(run, "engine_reads"));
		cell_j(r, metric(run, "device_reads"));
		cell_j(r, metric(run, "device_read_ms_mean"));
		cell_j(r, metric(run, "engine_read_ms_mean"));
		cell_j(r, metric(run, "io_over_wall"));
		cell_j(r, metric(run, "device_busy"));
		cell_j(r, metric(run, "resident_fraction_before"));
	}

	t = add_table(d, "Table 6. Query latency, recall and memory.", "Run", "QPS", "Mean (ms)",
	              "p50 (ms)", "p99 (ms)", "Recall@k", "Reads / query", "Bytes / read",
	              "In flight (median)", "Peak memory (bytes)", NULL);
	json_array_foreach(m->runs, i, run)
	{
		r = row_new(t);
		cell_s(r, str_of(pl(run), "run_id"));
		cell_j(r, metric(run, "qps"));
		cell_j(r, metric(run, "lat_mean_ms"));
		cell_j(r, metric(run, "lat_p50_ms"));
		cell_j(r, metric(run, "lat_p99_ms"));
		cell_j(r, metric(run, "recall_at_k"));
		cell_j(r, metric(run, "reads_per_query"));
		cell_j(r, metric(run, "bytes_per_read"));
		cell_j(r, metric(run, "inflight_median"));
		cell_j(r, metric(run, "mem_peak_bytes"));
	}

	json_array_foreach(m->runs, i, run)
	{
		const char *mode = str_of(json_object_get(pl(run), "features"), "mode");

		if (mode && strcmp(mode, "serial"))
			any_fan = 1;
	}
	if (any_fan) {
		add_p(d, "Serial against fan-out: reads per second (engine reads over wall) "
		         "compare runs "
		         "better than wall time when the query vectors or the hour differ.");
		t = add_table(d, "Table 7. Serial against fan-out.", "Run", "Mode", "Concurrency",
		              "Partitions", "Engine reads", "Wall (s)", "Reads/s", "Mean read (ms)",
		              NULL);
		json_array_foreach(m->runs, i, run)
		{
			const json_t *f = json_object_get(pl(run), "features");

			r = row_new(t);
			cell_s(r, str_of(pl(run), "run_id"));
			cell_s(r, str_of(f, "mode") ?: "n/a");
			cell_n(r, concurrency_of(run));
			cell_j(r, json_object_get(f, "partitions"));
			cell_j(r, metric(run, "engine_reads"));
			cell_j(r, metric(run, "wall_s"));
			cell_n(r, metric_num(run, "engine_reads") / metric_num(run, "wall_s"));
			cell_j(r, metric(run, "engine_read_ms_mean"));
		}
	}

	/* by device: run-level per-read latency, cold query time, per-query read latency */
	json_array_foreach(m->runs, i, run)
	{
		const char *dev = device_of(run);
		devgroup *x = NULL;

		for (k = 0; k < ng; k++)
			if (!strcmp(g[k].name, dev))
				x = &g[k];
		if (!x) {
			if (ng == MAX_DEVICES)
				continue;
			x = &g[ng++];
			x->name = dev;
			x->run_ms = calloc(nruns, sizeof(double));
			x->cold_s = calloc(nruns, sizeof(double));
			if (!x->run_ms || !x->cold_s) {
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
				goto out;
			}
		}
		x->run_ms[x->nrun++] = metric_num(run, "engine_read_ms_mean");
		if (json_is_true(json_object_get(json_object_get(pl(run), "features"), "cold")))
			x->cold_s[x->ncold++] = metric_num(run, "lat_mean_ms") / 1000.0;
		rc = query_read_ms(l, run, &x->q_ms, &x->nq, &x->capq, e);
		if (rc)
			goto out;
	}
	t = add_table(d, "Table 8. Per-read latency and cold query time by device.", "Device",
	              "Runs", "Per-read latency, run means (ms)", "Per-query read latency p50 (ms)",
	              "p99 (ms)", "Queries", "Cold query, mean per run (s)", NULL);
	for (k = 0; k < ng; k++) {
		rbuf b;
		double *tmp = malloc((g[k].nq ? g[k].nq : 1) * sizeof(double));

		if (!tmp) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
		if (g[k].nq)
			memcpy(tmp, g[k].q_ms, g[k].nq * sizeof(double));
		r = row_new(t);
		cell_s(r, g[k].name);
		cell_i(r, (int64_t) g[k].nrun);
		rb_init(&b, 0);
		range_text(&b, g[k].run_ms, g[k].nrun);
		cell_s(r, b.p);
		rb_free(&b);
		cell_n(r, quantile_of(tmp, g[k].nq, 0.5));
		cell_n(r, quantile_of(tmp, g[k].nq, 0.99));
		cell_i(r, (int64_t) g[k].nq);
		rb_init(&b, 0);
		range_text(&b, g[k].cold_s, g[k].ncold);
		cell_s(r, b.p);
		rb_free(&b);
		free(tmp);
	}

	/* figures */
	{
		static const char *const modes[] = {"serial", "fan-out", "other"};
		size_t nb = nruns > 200 ? 200 : nruns;
		rbuf svg;

		bars = calloc(nb ? nb : 1, sizeof(*bars));
		pts = calloc(nruns ? nruns : 1, sizeof(*pts));
		if (!bars || !pts) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
		for (i = 0; i < nb; i++) {
			const json_t *rn = json_array_get(m->runs, i);
			const char *mode = str_of(json_object_get(pl(rn), "features"), "mode");

			bars[i].label = str_of(pl(rn), "run_id") ?: "?";
			bars[i].value = metric_num(rn, "wall_s");
			bars[i].group = !mode                     ? 2
			                : !strcmp(mode, "serial") ? 0
			                : !strcmp(mode, "fanout") ? 1
			                                          : 2;
		}
		rb_init(&svg, 0);
		svg_hbars(&svg, "Wall time by run", "wall time (s), log scale", bars, nb, 1, modes,
		          3);
		add_fig(d, "wall.svg",
		        nb < nruns ? "Figure 1. Wall time of the first 200 runs (log axis)."
		                   : "Figure 1. Wall time by run, coloured by mode (log axis).",
		        &svg);
		{
			svg_strip *rows = calloc(ng ? ng : 1, sizeof(*rows));

			if (!rows) {
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
				goto out;
			}
			for (k = 0; k < ng; k++)
				rows[k] = (svg_strip){g[k].name, g[k].q_ms, g[k].nq};
			rb_init(&svg, 0);
			svg_strips(&svg, "Per-read latency by device (each query's mean)",
			           "read latency per query (ms), log scale", rows, ng);
			free(rows);
			add_fig(d, "read-latency.svg",
			        "Figure 2. Per-read latency by device: each dot is one query's "
			        "read time "
			        "over its reads, from the raw per-query rows.",
			        &svg);
		}
		if (any_fan) {
			const char **names = calloc(ng ? ng : 1, sizeof(*names));
			size_t np = 0;

			if (!names) {
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
				goto out;
			}
			for (k = 0; k < ng; k++)
				names[k] = g[k].name;
			json_array_foreach(m->runs, i, run)
			{
				const char *dev = device_of(run);

				for (k = 0; k < ng && strcmp(g[k].name, dev); k++)
					;
				pts[np++] = (svg_point){concurrency_of(run),
				                        metric_num(run, "engine_reads") /
				                            metric_num(run, "wall_s"),
				                        NAN,
				                        NAN,
				                        (int) k,
				                        str_of(pl(run), "run_id")};
			}
			rb_init(&svg, 0);
			svg_scatter(&svg, "Reads per second against concurrency",
			            "concurrency (fan-out x clients)", "engine reads / s", pts, np,
			            1, 0, 0, 0, names, ng);
			free(names);
			add_fig(d, "fanout.svg",
			        "Figure 3. Serial against fan-out: engine reads per second by "
			        "concurrency, "
			        "coloured by device.",
			        &svg);
		}
	}
out:
	for (k = 0; k < ng; k++) {
		free(g[k].run_ms);
		free(g[k].cold_s);
		free(g[k].q_ms);
	}
	free(bars);
	free(pts);
	return rc;
}

/* Section 5: predictions, when they were frozen, and the latest score. */
/* The score of record: the first complete score that is not interim (NULL: none). */
static const json_t *score_of_record(const model *m)
{
	size_t i;
	json_t *rec;

	json_array_foreach(m->scores, i, rec)
		if (!json_is_true(json_object_get(pl(rec), "interim")))
			return rec;
	return NULL;
}

static void sec_holdout(doc *d, const model *m)
{
	json_t *t, *r, *rec, *first_hold = NULL;
	const json_t *score;
	size_t i, np = json_array_size(m->predictions);
	char a[REPORT_NUM_MAX], b[REPORT_NUM_MAX];

	add_h(d, 2, "5. The holdout");
	json_array_foreach(m->run_starts, i,
	                   rec) if (json_is_true(json_object_get(pl(rec), "holdout")))
	{
		first_hold = rec;
		break;
	}
	if (!np) {
		add_p(d, "No prediction is on record.%s",
		      first_hold ? " A holdout run started without predictions." : "");
	} else {
		const json_t *p0 = json_array_get(m->predictions, 0),
		             *pl_ = json_array_get(m->predictions, np - 1);

		if (first_hold)
			add_p(d,
			      "%zu predictions (value and 95%% band) were written from %s to %s "
			      "(seq %lld "
			      "to %lld); the first holdout run started at %s (seq %lld), %s.",
			      np, str_of(p0, "ts"), str_of(pl_, "ts"),
			      (long long) json_integer_value(json_object_get(p0, "seq")),
			      (long long) json_integer_value(json_object_get(pl_, "seq")),
			      str_of(first_hold, "ts"),
			      (long long) json_integer_value(json_object_get(first_hold, "seq")),
			      json_integer_value(json_object_get(first_hold, "seq")) >
			              json_integer_value(json_object_get(pl_, "seq"))
			          ? "after the last prediction: the predictions were frozen before "
			            "any "
			            "holdout result existed"
			          : "BEFORE the last prediction: some predictions postdate a "
			            "holdout run");
		else
			add_p(
			    d,
			    "%zu predictions (value and 95%% band) were written from %s to %s; no "
			    "holdout run has started, so they are not yet frozen.",
			    np, str_of(p0, "ts"), str_of(pl_, "ts"));
		t = add_table(d, "Table 9. Predictions.", "ID", "Seq", "Run spec", "Metric",
		              "Predicted", "95% band", "Model", "Fitted on (runs)", NULL);
		json_array_foreach(m->predictions, i, rec)
		{
			const json_t *p = pl(rec), *band = json_object_get(p, "band95");
			char bt[2 * REPORT_NUM_MAX + 8];

			r = row_new(t);
			cell_s(r, str_of(p, "id"));
			cell_j(r, json_object_get(rec, "seq"));
			cell_s(r, str_of(json_object_get(p, "target"), "run_spec"));
			cell_s(r, str_of(json_object_get(p, "target"), "metric"));
			cell_j(r, json_object_get(p, "value"));
			snprintf(bt, sizeof(bt), "%s to %s",
			         report_fmt_json(json_array_get(band, 0), a),
			         report_fmt_json(json_array_get(band, 1), b));
			cell_s(r, bt);
			cell_s(r, str_of(json_object_get(p, "model"), "name"));
			cell_i(r, (int64_t) json_array_size(json_object_get(p, "fitted_on")));
		}
	}
	if (!json_array_size(m->scores)) {
		add_p(d, "No score is on record.");
		return;
	}
	score = score_of_record(m);
	if (!score) /* only interim scores: show the latest, labelled so */
		score = json_array_get(m->scores, json_array_size(m->scores) - 1);
	{
		const json_t *s = pl(score), *per = json_object_get(s, "per_metric"), *pm;
		const char *mk;
		char f[9][REPORT_NUM_MAX];

		add_p(d,
		      "%s (seq %lld, %s): median relative error %s against the threshold %s (%s): "
		      "%s. %s of %s predictions inside their bands (level %s); two-sided binomial "
		      "p = %s over the rows, %s over the %s independent holdout runs behind them%s. "
		      "Mean relative interval score (interval score / observed) %s.",
		      json_is_true(json_object_get(s, "interim")) ? "An INTERIM score, not the result"
		                                                   : "The score of record",
		      (long long) json_integer_value(json_object_get(score, "seq")),
		      str_of(score, "ts"), report_fmt_json(json_object_get(s, "mdape"), f[0]),
		      report_fmt_json(json_object_get(s, "threshold"), f[1]),
		      str_of(s, "threshold_source") ?: "unstated",
		      json_is_true(json_object_get(s, "passed")) ? "PASS" : "FAIL",
		      report_fmt_json(json_object_get(s, "inside"), f[2]),
		      report_fmt_json(json_object_get(s, "n"), f[3]),
		      report_fmt_json(json_object_get(s, "band_level"), f[4]),
		      report_fmt_json(json_object_get(s, "coverage_p_two_sided"), f[5]),
		      report_fmt_json(json_object_get(s, "coverage_p_two_sided_runs"), f[6]),
		      report_fmt_json(json_object_get(s, "independent_runs"), f[7]),
		      json_is_true(json_object_get(s, "calibration_rejected"))
		          ? " (calibration rejected at 0.05)"
		          : "",
		      report_fmt_json(json_object_get(s, "mean_relative_interval_score"), f[8]));
		if (json_object_size(per)) {
			t = add_table(d, "Table 10a. The score per metric (interval scores in the metric's "
			                 "own unit, and relative to the observed value).",
			              "Metric", "Rows", "Inside", "MdAPE", "Mean interval score",
			              "Mean relative interval score", "Two-sided p", NULL);
			json_object_foreach((json_t *) per, mk, pm)
			{
				r = row_new(t);
				cell_s(r, mk);
				cell_j(r, json_object_get(pm, "n"));
				cell_j(r, json_object_get(pm, "inside"));
				cell_j(r, json_object_get(pm, "mdape"));
				cell_j(r, json_object_get(pm, "mean_interval_score"));
				cell_j(r, json_object_get(pm, "mean_relative_interval_score"));
				cell_j(r, json_object_get(pm, "coverage_p_two_sided"));
			}
		}
		t = add_table(d, "Table 10. The score, row by row.", "Prediction", "Metric",
		              "Predicted", "95% band", "Observed", "Relative error", "Inside",
		              "Interval score", "Runs", NULL);
		json_array_foreach(json_object_get(s, "rows"), i, rec)
		{
			char bt[2 * REPORT_NUM_MAX + 8];

			r = row_new(t);
			cell_s(r, str_of(rec, "prediction"));
			cell_s(r, str_of(rec, "metric"));
			cell_j(r, json_object_get(rec, "predicted"));
			snprintf(bt, sizeof(bt), "%s to %s",
			         report_fmt_json(json_object_get(rec, "lo"), a),
			         report_fmt_json(json_object_get(rec, "hi"), b));
			cell_s(r, bt);
			cell_j(r, json_object_get(rec, "observed"));
			cell_j(r, json_object_get(rec, "relative_error"));
			cell_j(r, json_object_get(rec, "inside"));
			cell_j(r, json_object_get(rec, "interval_score"));
			cell_j(r, json_object_get(rec, "runs"));
		}
		if (json_array_size(json_object_get(s, "pending")))
			add_p(d, "%zu predictions had no holdout run when scored.",
			      json_array_size(json_object_get(s, "pending")));
		if (json_array_size(m->scores) > 1)
			add_p(d, "%zu other scores are on record (interim scores and re-scores); the "
			         "score of record is shown.",
			      json_array_size(m->scores) - 1);
		if (json_array_size(json_object_get(s, "rows"))) {
			size_t n = json_array_size(json_object_get(s, "rows"));
			svg_point *pts = calloc(n, sizeof(*pts));
			static const char *const gn[] = {"inside band", "outside band"};
			rbuf svg;

			if (!pts) {
				d->failed = 1;
				return;
			}
			json_array_foreach(json_object_get(s, "rows"), i, rec) pts[i] =
			    (svg_point){num_of(rec, "predicted"),
			                num_of(rec, "observed"),
			                num_of(rec, "lo"),
			                num_of(rec, "hi"),
			                json_is_true(json_object_get(rec, "inside")) ? 0 : 1,
			                str_of(rec, "prediction")};
			/* the band is around the prediction; drawn on the predicted axis it would
			 * be horizontal, so show observed on x and the predicted band vertically */
			for (i = 0; i < n; i++) {
				double x = pts[i].x;

				pts[i].x = pts[i].y;
				pts[i].y = x;
			}
			rb_init(&svg, 0);
			svg_scatter(&svg, "Holdout: predicted against observed", "observed",
			            "predicted, with its 95% band", pts, n, 1, 1, 1, 0, gn, 2);
			free(pts);
			add_fig(d, "holdout.svg",
			        "Figure 4. Holdout predictions (with 95% bands) against what was "
			        "observed, "
			        "log axes; the dashed line is exact agreement.",
			        &svg);
		}
	}
}

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

		rb_printf(b, "%s(%s over runs", str_of(t, "agg") ?: "?",
		          str_of(t, "metric") ?: "runs");
		if (json_array_size(json_object_get(sel, "tags"))) {
			rb_put(b, " tagged ");
			join_strings(b, json_object_get(sel, "tags"), "+");
		}
		if (json_array_size(json_object_get(sel, "not_tags"))) {
			rb_put(b, " not ");
			join_strings(b, json_object_get(sel, "not_tags"), "+");
		}
		if (str_of(sel, "hypothesis"))
			rb_printf(b, " for %s", str_of(sel, "hypothesis"));
		rb_printf(b, ") = %s", report_fmt_json(json_object_get(t, "value"), n));
		if (str_of(t, "why"))
			rb_printf(b, " (%s)", str_of(t, "why"));
		if (json_array_size(json_object_get(t, "runs"))) {
			rb_put(b, " [runs: ");
			join_strings(b, json_object_get(t, "runs"), ", ");
			rb_put(b, "; values: ");
			join_strings(b, json_object_get(t, "values"), ", ");
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
		rb_printf(b, " %s ", str_of(kids, "op") ?: "?");
		expr_text(b, json_object_get(kids, "right"));
		rb_printf(b, ": %s\n", tri_text(json_object_get(t, "result")));
	} else {
		expr_text(b, t);
		rb_put(b, "\n");
	}
}

/* Section 6: verdicts evaluated now, and the numbers each rule saw. */
static void sec_verdicts(doc *d, const model *m)
{
	json_t *t, *r, *v, *rec;
	size_t i, j;

	add_h(d, 2, "6. Verdicts");
	if (!json_array_size(m->verdicts)) {
		add_p(d, "No verdict: no hypothesis is registered.");
		return;
	}
	add_p(
	    d,
	    "Evaluated from the registered accept and reject rules over every record (as of seq "
	    "%lld), as 'coldstudy verdicts' does, without recording anything. A confirmatory "
	    "hypothesis sees only the design runs the plan maps to it, and is accepted only if its "
	    "accept rule holds, the plan's sceptic runs for it are done and do not refute it, and no "
	    "refutation is on record (provisional while sceptic runs are missing or none are "
	    "planned); a reject rule that holds wins. Exploratory ones (kind exploratory, post hoc, "
	    "or no plan) see the runs that serve them and are never counted as confirmatory.",
	    (long long) m->size);
	t = add_table(d, "Table 11. Verdicts.", "Hypothesis", "Kind", "Verdict", "Counted as",
	              "Accept rule", "Reject rule", "Runs", "Sceptic runs (done of planned)",
	              "Refutations (seq)", "Deviations (seq)", "Last recorded verdict", NULL);
	json_array_foreach(m->verdicts, i, v)
	{
		const char *h = str_of(v, "hypothesis");
		const json_t *last = NULL;
		rbuf b;

		json_array_foreach(m->verdict_recs, j,
		                   rec) if (h && str_of(pl(rec), "hypothesis") &&
		                            !strcmp(str_of(pl(rec), "hypothesis"), h)) last = rec;
		r = row_new(t);
		cell_s(r, h);
		cell_s(r, str_of(v, "kind"));
		cell_s(r, str_of(v, "verdict"));
		cell_s(r, !strcmp(str_of(v, "class") ?: "", "exploratory")
		              ? (json_is_true(json_object_get(v, "post_hoc")) ? "exploratory (post hoc)"
		                                                               : "exploratory")
		              : "confirmatory");
		cell_s(r, str_of(json_object_get(v, "accept"), "result"));
		cell_s(r, str_of(json_object_get(v, "reject"), "result"));
		rb_init(&b, 0);
		json_array_foreach(json_object_get(v, "runs"), j, rec)
		{
			if (j)
				rb_put(&b, ", ");
			rb_put(&b, str_of(rec, "run_id") ?: "?");
		}
		cell_s(r, b.p ? b.p : "none");
		rb_free(&b);
		if (json_object_get(v, "sceptic")) {
			char sct[64];
			const json_t *sc = json_object_get(v, "sceptic");

			snprintf(sct, sizeof(sct), "%lld of %lld",
			         (long long) json_integer_value(json_object_get(sc, "done")),
			         (long long) json_integer_value(json_object_get(sc, "planned")));
			cell_s(r, sct);
		} else {
			cell_s(r, "n/a");
		}
		cell_j(r, json_object_get(v, "refutations"));
		cell_j(r, json_object_get(v, "deviations"));
		if (last) {
			char txt[128];

			snprintf(txt, sizeof(txt), "%s (seq %lld)",
			         str_of(pl(last), "verdict") ?: "?",
			         (long long) json_integer_value(json_object_get(last, "seq")));
			cell_s(r, txt);
		} else {
			cell_s(r, "none");
		}
	}
	add_p(d, "The numbers each rule saw:");
	json_array_foreach(m->verdicts, i, v)
	{
		rbuf b;

		rb_init(&b, 0);
		rb_printf(&b, "%s: %s\naccept:\n", str_of(v, "hypothesis") ?: "?",
		          str_of(v, "verdict") ?: "?");
		trace_text(&b, json_object_get(json_object_get(v, "accept"), "trace"), 1);
		rb_put(&b, "reject:\n");
		trace_text(&b, json_object_get(json_object_get(v, "reject"), "trace"), 1);
		if (rb_ok(&b))
			add_pre(d, b.p);
		else
			d->failed = 1;
		rb_free(&b);
	}
}

/* Section 7: the sceptics' records. */
static void sec_refutations(doc *d, const model *m)
{
	json_t *t, *r, *rec;
	size_t i;

	add_h(d, 2, "7. Refutations");
	if (!json_array_size(m->refutations)) {
		add_p(d, "No refutation is on record.");
		return;
	}
	t = add_table(d, "Table 12. The sceptics' records.", "Seq", "Time (UTC)", "Hypothesis",
	              "Access state", "Because", NULL);
	json_array_foreach(m->refutations, i, rec)
	{
		r = row_new(t);
		cell_j(r, json_object_get(rec, "seq"));
		cell_s(r, str_of(rec, "ts"));
		cell_s(r, str_of(pl(rec), "hypothesis"));
		cell_s(r, str_of(pl(rec), "access_state"));
		cell_s(r, str_of(pl(rec), "because"));
	}
}

/* Section 8: every deviation, always shown (none is said too). */
static void sec_deviations(doc *d, const model *m)
{
	json_t *t, *r, *rec;
	size_t i;

	add_h(d, 2, "8. Deviations");
	add_p(d, "Every deviation from the registered plan is shown here, whatever it concerns, "
	         "with the "
	         "access state at the moment it was recorded.");
	if (!json_array_size(m->deviations)) {
		add_p(d, "No deviation is on record.");
		return;
	}
	t = add_table(d, "Table 13. Deviations.", "Seq", "Time (UTC)", "Hypothesis", "Run",
	              "Access state", "Because", NULL);
	json_array_foreach(m->deviations, i, rec)
	{
		r = row_new(t);
		cell_j(r, json_object_get(rec, "seq"));
		cell_s(r, str_of(rec, "ts"));
		cell_s(r, str_of(pl(rec), "hypothesis") ?: "all");
		cell_s(r, str_of(pl(rec), "run_id") ?: "n/a");
		cell_s(r, str_of(pl(rec), "access_state"));
		cell_s(r, str_of(pl(rec), "because"));
	}
}

/* Section 9: notes, including where the log was published. */
static void sec_notes(doc *d, const model *m)
{
	json_t *t, *r, *rec;
	size_t i;

	if (!json_array_size(m->notes))
		return;
	add_h(d, 2, "9. Notes and publications");
	t = add_table(d, "Table 14. Notes.", "Seq", "Time (UTC)", "Text", "Published to",
	              "Tree size", "HTTP status", NULL);
	json_array_foreach(m->notes, i, rec)
	{
		r = row_new(t);
		cell_j(r, json_object_get(rec, "seq"));
		cell_s(r, str_of(rec, "ts"));
		cell_s(r, str_of(pl(rec), "text"));
		cell_s(r, str_of(pl(rec), "published") ?: "");
		if (json_object_get(pl(rec), "tree_size"))
			cell_j(r, json_object_get(pl(rec), "tree_size"));
		else
			cell_s(r, "");
		if (json_object_get(pl(rec), "status"))
			cell_j(r, json_object_get(pl(rec), "status"));
		else
			cell_s(r, "");
	}
}

/* The few lines a reader wants first: verdicts by class, the holdout, what went off plan. */
static void sec_summary(doc *d, const model *m)
{
	size_t acc = 0, rej = 0, ref = 0, unres = 0, prov = 0, expl = 0, post = 0, i;
	size_t interim = 0, rescores = 0;
	json_t *v, *rec;
	const json_t *sr = score_of_record(m);
	char f[4][REPORT_NUM_MAX];
	rbuf eb;

	rb_init(&eb, 0);
	json_array_foreach(m->verdicts, i, v)
	{
		const char *x = str_of(v, "verdict");

		if (!x)
			continue;
		if (!strcmp(str_of(v, "class") ?: "", "exploratory")) {
			rb_printf(&eb, "%s%s %s%s", expl ? ", " : "", str_of(v, "hypothesis") ?: "?", x,
			          json_is_true(json_object_get(v, "post_hoc")) ? " (post hoc)" : "");
			expl++;
			post += json_is_true(json_object_get(v, "post_hoc"));
			continue;
		}
		acc += !strcmp(x, "accepted");
		rej += !strcmp(x, "rejected");
		ref += !strcmp(x, "refuted");
		unres += !strcmp(x, "unresolved");
		prov += !strcmp(x, "provisional");
	}
	add_h(d, 2, "Summary");
	add_p(d,
	      "%zu hypotheses registered (amendments: %zu). Confirmatory, decided by the runs the "
	      "plan maps to each: %zu accepted (the plan's sceptic runs done and not refuting), "
	      "%zu rejected, %zu refuted, %zu unresolved. Provisional (the accept rule holds, the "
	      "sceptic runs are missing or none are planned): %zu.",
	      json_array_size(m->verdicts),
	      json_array_size(m->hyps) >= json_array_size(m->verdicts)
	          ? json_array_size(m->hyps) - json_array_size(m->verdicts)
	          : 0,
	      acc, rej, ref, unres, prov);
	add_p(d,
	      "Exploratory hypotheses, never counted as confirmatory: %zu (%zu post hoc: "
	      "registered or amended after the first run)%s%s%s.",
	      expl, post, expl ? ": " : "", expl && eb.p ? eb.p : "", "");
	rb_free(&eb);
	{
		size_t ncls[4] = {0};
		static const char *const cls[] = {"design", "sceptic", "holdout", "exploratory"};

		json_array_foreach(m->runs, i, rec)
		{
			const char *c = str_of(pl(rec), "class")
			                    ?: json_is_true(json_object_get(pl(rec), "holdout"))
			                           ? "holdout"
			                           : "exploratory";

			for (size_t k = 0; k < 4; k++)
				ncls[k] += !strcmp(c, cls[k]);
		}
		add_p(d,
		      "%zu runs: %zu design, %zu sceptic, %zu holdout, %zu exploratory (not in the "
		      "plan: never counted toward a confirmatory verdict or the holdout score). "
		      "%zu validation checks, %zu refusals, %zu refutations and %zu deviations are on "
		      "record.",
		      json_array_size(m->runs), ncls[0], ncls[1], ncls[2], ncls[3],
		      json_array_size(m->validations), json_array_size(m->refusals),
		      json_array_size(m->refutations), json_array_size(m->deviations));
	}
	json_array_foreach(m->scores, i, rec)
	{
		interim += json_is_true(json_object_get(pl(rec), "interim"));
		rescores += json_is_true(json_object_get(pl(rec), "rescore"));
	}
	if (sr) {
		const json_t *s = pl(sr);

		add_p(d,
		      "Holdout (the score of record, seq %lld): median relative error %s against the "
		      "threshold %s (%s): %s, %s of %s predictions inside their bands. "
		      "Interim scores: %zu; re-scores: %zu.",
		      (long long) json_integer_value(json_object_get(sr, "seq")),
		      report_fmt_json(json_object_get(s, "mdape"), f[0]),
		      report_fmt_json(json_object_get(s, "threshold"), f[1]),
		      str_of(s, "threshold_source") ?: "unstated",
		      json_is_true(json_object_get(s, "passed")) ? "PASS" : "FAIL",
		      report_fmt_json(json_object_get(s, "inside"), f[2]),
		      report_fmt_json(json_object_get(s, "n"), f[3]), interim, rescores);
	} else {
		add_p(d, "Holdout: %zu predictions, not scored (interim scores: %zu).",
		      json_array_size(m->predictions), interim);
	}
}

/* ---- 4. render ---- */

static const char *const css =
    "body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;"
    "color:#111;line-height:1.45}"
    "table{border-collapse:collapse;margin:1rem 0;font-size:0.85rem}"
    "th,td{border:1px solid #ccc;padding:0.2rem 0.45rem;text-align:left;vertical-align:top}"
    "th{background:#f2f2f2}caption{caption-side:bottom;text-align:left;font-style:italic;"
    "padding-top:0.3rem}"
    "td{max-width:28rem;overflow-wrap:anywhere}"
    "pre{background:#f7f7f7;padding:0.6rem;overflow-x:auto;font-size:0.8rem}"
    "figure{margin:1rem 0}figcaption{font-style:italic;font-size:0.9rem}"
    "svg{max-width:100%;height:auto}";

/* The document as self-contained HTML: inline CSS and SVG, no script, every text escaped. */
static void render_html(rbuf *b, const doc *d, const char *title)
{
	size_t i, j, k;
	json_t *blk;

	rb_put(b,
	       "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	       "style-src 'unsafe-inline'; img-src data:\">\n"
	       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
	rb_html(b, title);
	rb_printf(b, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", css);
	rb_html(b, title);
	rb_put(b, "</h1>\n");
	json_array_foreach(d->blocks, i, blk)
	{
		const char *t = str_of(blk, "t");

		if (!strcmp(t, "h")) {
			int lv = (int) json_integer_value(json_object_get(blk, "level"));

			rb_printf(b, "<h%d>", lv);
			rb_html(b, str_of(blk, "text"));
			rb_printf(b, "</h%d>\n", lv);
		} else if (!strcmp(t, "p")) {
			rb_put(b, "<p>");
			rb_html(b, str_of(blk, "text"));
			rb_put(b, "</p>\n");
		} else if (!strcmp(t, "pre")) {
			rb_put(b, "<pre>");
			rb_html(b, str_of(blk, "text"));
			rb_put(b, "</pre>\n");
		} else if (!strcmp(t, "table")) {
			json_t *c, *row;

			rb_put(b, "<table>\n");
			if (str_of(blk, "caption")) {
				rb_put(b, "<caption>");
				rb_html(b, str_of(blk, "caption"));
				rb_put(b, "</caption>\n");
			}
			rb_put(b, "<thead><tr>");
			json_array_foreach(json_object_get(blk, "head"), j, c)
			{
				rb_put(b, "<th>");
				rb_html(b, json_string_value(c));
				rb_put(b, "</th>");
			}
			rb_put(b, "</tr></thead>\n<tbody>\n");
			json_array_foreach(json_object_get(blk, "rows"), j, row)
			{
				rb_put(b, "<tr>");
				json_array_foreach(row, k, c)
				{
					rb_put(b, "<td>");
					rb_html(b, json_string_value(c));
					rb_put(b, "</td>");
				}
				rb_put(b, "</tr>\n");
			}
			rb_put(b, "</tbody>\n</table>\n");
		} else if (!strcmp(t, "fig")) {
			rb_put(b, "<figure>\n");
			rb_put(b, json_string_value(json_object_get(d->figs, str_of(blk, "file"))));
			rb_put(b, "<figcaption>");
			rb_html(b, str_of(blk, "caption"));
			rb_put(b, " (");
			rb_html(b, str_of(blk, "file"));
			rb_put(b, ")</figcaption>\n</figure>\n");
		}
	}
	rb_put(b, "</body>\n</html>\n");
}

/* Preformatted text as an indented Markdown code block (nothing in it can end it). */
static void md_pre(rbuf *b, const char *s)
{
	const char *nl;

	while (*s) {
		nl = strchr(s, '\n');
		rb_put(b, "    ");
		rb_putn(b, s, nl ? (size_t) (nl - s) : strlen(s));
		rb_put(b, "\n");
		if (!nl)
			break;
		s = nl + 1;
	}
	rb_put(b, "\n");
}

/* The document as Markdown (tables as pipes, figures as links to the SVG files). */
static void render_md(rbuf *b, const doc *d, const char *title)
{
	size_t i, j, k;
	json_t *blk;

	rb_put(b, "# ");
	rb_md(b, title);
	rb_put(b, "\n\n");
	json_array_foreach(d->blocks, i, blk)
	{
		const char *t = str_of(blk, "t");

		if (!strcmp(t, "h")) {
			rb_printf(b, "%.*s ",
			          (int) json_integer_value(json_object_get(blk, "level")),
			          "######");
			rb_md(b, str_of(blk, "text"));
			rb_put(b, "\n\n");
		} else if (!strcmp(t, "p")) {
			rb_md(b, str_of(blk, "text"));
			rb_put(b, "\n\n");
		} else if (!strcmp(t, "pre")) {
			md_pre(b, str_of(blk, "text"));
		} else if (!strcmp(t, "table")) {
			json_t *c, *row, *head = json_object_get(blk, "head");

			rb_put(b, "|");
			json_array_foreach(head, j, c)
			{
				rb_put(b, " ");
				rb_md(b, json_string_value(c));
				rb_put(b, " |");
			}
			rb_put(b, "\n|");
			for (j = 0; j < json_array_size(head); j++)
				rb_put(b, "---|");
			rb_put(b, "\n");
			json_array_foreach(json_object_get(blk, "rows"), j, row)
			{
				rb_put(b, "|");
				json_array_foreach(row, k, c)
				{
					rb_put(b, " ");
					rb_md(b, json_string_value(c));
					rb_put(b, " |");
				}
				rb_put(b, "\n");
			}
			if (str_of(blk, "caption")) {
				rb_put(b, "\n*");
				rb_md(b, str_of(blk, "caption"));
				rb_put(b, "*\n");
			}
			rb_put(b, "\n");
		} else if (!strcmp(t, "fig")) {
			rb_put(b, "![");
			rb_md(b, str_of(blk, "caption"));
			rb_put(b, "](");
			rb_put(b, str_of(blk, "file")); /* our own fixed file names */
			rb_put(b, ")\n\n*");
			rb_md(b, str_of(blk, "caption"));
			rb_put(b, "*\n\n");
		}
	}
}

/* ---- 5. publish: a temporary directory, then one rename ---- */

/* Is name a file a report writes? */
static int report_file_name(const char *name)
{
	size_t n = strlen(name);

	return !strcmp(name, "report.md") || !strcmp(name, "report.html") ||
	       !strcmp(name, "records.jsonl") || !strcmp(name, "checkpoint.txt") ||
	       (n > 4 && !strcmp(name + n - 4, ".svg") && !strchr(name, '/'));
}

/*
 * Remove a directory that holds only report files. Returns 0, or -1 if it
 * holds anything else (then nothing more is removed).
 */
static int remove_report_dir(const char *dir)
{
	DIR *dh = opendir(dir);
	struct dirent *de;
	char path[4096];
	int bad = 0;

	if (!dh)
		return errno == ENOENT ? 0 : -1;
	while ((de = readdir(dh))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!report_file_name(de->d_name)) {
			bad = 1;
			continue;
		}
	}
	if (bad) {
		closedir(dh);
		return -1;
	}
	rewinddir(dh);
	while ((de = readdir(dh))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((size_t) snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < sizeof(path))
			unlink(path);
	}
	closedir(dh);
	return rmdir(dir);
}

/* 1 if dir is empty or a previous report (report.md and report files only), 0 if absent, else -1.
 */
static int existing_report(const char *dir)
{
	struct stat st;
	DIR *dh;
	struct dirent *de;
	int ok = 1, entries = 0, has_md = 0;

	if (lstat(dir, &st))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return -1;
	dh = opendir(dir);
	if (!dh)
		return -1;
	while ((de = readdir(dh))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		entries++;
		has_md |= !strcmp(de->d_name, "report.md");
		if (!report_file_name(de->d_name))
			ok = -1;
	}
	closedir(dh);
	/* a folder of someone's own SVG files is not a previous report */
	if (entries && !has_md)
		ok = -1;
	return ok;
}

typedef struct outfile {
	const char *name;
	const char *data;
	size_t len;
} outfile;

/* Write files into a temporary directory beside out and move it into place whole. */
static int publish_dir(const char *out, const outfile *files, size_t n, cs_err *e)
{
	char tmp[4096], path[4096];
	size_t i;
	int rc = 0, ex;

	ex = existing_report(out);
	if (ex < 0)
		return cs_err_set(
		    e, CS_EXIT_REFUSED,
		    "%s: exists and is not a report directory (it holds other files); "
		    "choose another --out",
		    out);
	if ((size_t) snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", out) >= sizeof(tmp))
		return cs_err_set(e, CS_EXIT_USAGE, "%s: path too long", out);
	if (!mkdtemp(tmp))
		return cs_err_set(e, CS_EXIT_INTERNAL,
		                  "%s: cannot create a temporary directory: %s", tmp,
		                  strerror(errno));
	if (chmod(tmp, 0755)) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: chmod: %s", tmp, strerror(errno));
		goto fail;
	}
	for (i = 0; i < n; i++) {
		if ((size_t) snprintf(path, sizeof(path), "%s/%s", tmp, files[i].name) >=
		    sizeof(path)) {
			rc = cs_err_set(e, CS_EXIT_USAGE, "%s: path too long", out);
			goto fail;
		}
		rc = cs_write_file_atomic(path, files[i].data, files[i].len, 0644, e);
		if (rc)
			goto fail;
	}
	if (ex == 0) {
		if (rename(tmp, out)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot rename into place: %s",
			                out, strerror(errno));
			goto fail;
		}
		return 0;
	}
	/* swap with the previous report in one step, then remove the old one */
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_EXCHANGE)) {
		char old[4096];

		if ((size_t) snprintf(old, sizeof(old), "%s.old-XXXXXX", out) >= sizeof(old) ||
		    !mkdtemp(old) || rmdir(old) || rename(out, old)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL,
			                "%s: cannot replace the previous report: %s", out,
			                strerror(errno));
			goto fail;
		}
		if (rename(tmp, out)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot rename into place: %s",
			                out, strerror(errno));
			rename(old, out);
			goto fail;
		}
		remove_report_dir(old);
		return 0;
	}
	remove_report_dir(tmp); /* now the previous report */
	return 0;
fail:
	remove_report_dir(tmp);
	return rc;
}

/* ---- the whole report ---- */

int report_write(struct ledger *l, const char *out, const char *title, cs_err *e)
{
	model m;
	doc d = {0};
	rbuf md, html;
	char *jsonl = NULL, *ttl = NULL;
	size_t jsonl_len = 0, i, nf = 0;
	FILE *mem = NULL;
	outfile files[OUT_MAX_FILES];
	const char *names[OUT_MAX_FILES];
	int rc;

	rb_init(&md, 0);
	rb_init(&html, 0);
	rc = model_load(l, &m, e);
	if (rc)
		goto out;
	mem = open_memstream(&jsonl, &jsonl_len);
	if (!mem) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	rc = ledger_export(l, mem, e);
	if (fclose(mem) && !rc)
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "cannot buffer the export");
	if (rc)
		goto out;
	if (title) {
		ttl = strdup(title);
	} else {
		const char *sid =
		    m.study ? str_of(json_object_get(pl(m.study), "doc"), "id") : NULL;
		size_t n = sid ? strlen(sid) + 32 : 32;

		ttl = malloc(n);
		if (ttl)
			snprintf(ttl, n,
			         sid ? "Study %s: report from the log"
			             : "%sStudy report from the log",
			         sid ? sid : "");
	}
	d.blocks = json_array();
	d.figs = json_object();
	d.fig_order = json_array();
	if (!ttl || !d.blocks || !d.figs || !d.fig_order) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}

	/* sections after the first come first, so the log section can list the figures */
	{
		doc body = {json_array(), d.figs, d.fig_order, 0};
		json_t *fname;

		if (!body.blocks) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
		sec_hypotheses(&body, &m);
		sec_validation(&body, &m);
		rc = sec_runs(&body, &m, l, e);
		if (!rc) {
			sec_holdout(&body, &m);
			sec_verdicts(&body, &m);
			sec_refutations(&body, &m);
			sec_deviations(&body, &m);
			sec_notes(&body, &m);
		}
		names[nf++] = "report.md";
		names[nf++] = "report.html";
		names[nf++] = "records.jsonl";
		names[nf++] = "checkpoint.txt";
		json_array_foreach(d.fig_order, i, fname) if (nf < OUT_MAX_FILES) names[nf++] =
		    json_string_value(fname);
		if (!rc) {
			sec_summary(&d, &m);
			sec_log(&d, &m, names, nf);
		}
		json_array_extend(d.blocks, body.blocks);
		json_decref(body.blocks);
		d.failed |= body.failed;
		if (rc)
			goto out;
	}
	if (d.failed) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory building the report");
		goto out;
	}
	render_md(&md, &d, ttl);
	render_html(&html, &d, ttl);
	if (!rb_ok(&md) || !rb_ok(&html)) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL,
		                "the report is larger than %zu bytes or out of memory",
		                (size_t) RB_DEFAULT_MAX);
		goto out;
	}
	nf = 0;
	files[nf++] = (outfile){"report.md", md.p, md.len};
	files[nf++] = (outfile){"report.html", html.p, html.len};
	files[nf++] = (outfile){"records.jsonl", jsonl ? jsonl : "", jsonl_len};
	files[nf++] = (outfile){"checkpoint.txt", m.checkpoint, strlen(m.checkpoint)};
	{
		json_t *fname;

		json_array_foreach(d.fig_order, i, fname)
		{
			const char *svg =
			    json_string_value(json_object_get(d.figs, json_string_value(fname)));

			if (nf < OUT_MAX_FILES)
				files[nf++] = (outfile){json_string_value(fname), svg, strlen(svg)};
		}
	}
	rc = publish_dir(out, files, nf, e);
out:
	free(jsonl);
	free(ttl);
	json_decref(d.blocks);
	json_decref(d.figs);
	json_decref(d.fig_order);
	rb_free(&md);
	rb_free(&html);
	model_free(&m);
	return rc;
}
