/*
 * report_model.c - gather: one pass over a verified log, records kept by kind,
 * and the small accessors every section reads the records through.
 */
#include "report_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "holdout.h"
#include "ledger.h"

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
void rpt_model_free(model *m)
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
	json_decref(m->holdout_state);
}

/* Verify the log, then read everything a report shows. */
int rpt_model_load(ledger *l, model *m, cs_err *e)
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
	if (!rc) {
		json_t *score = NULL;

		rc = holdout_registered_state(l, &score, &m->holdout_state, e);
		json_decref(score);
	}
	return rc;
}

/* ---- small JSON accessors ---- */

const char *rpt_str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* payload of a kept record */
json_t *rpt_pl(const json_t *rec)
{
	return json_object_get(rec, "p");
}

/* o[k] as a double, NAN when absent or not a number. */
double rpt_num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Comma-joined strings of a JSON array of strings into b. */
void rpt_join(rbuf *b, const json_t *a, const char *sep)
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

/* The label a run's device is known by. */
const char *rpt_device(const json_t *run)
{
	const json_t *f = json_object_get(rpt_pl(run), "features");
	const char *dev = rpt_str(f, "device"), *cap = rpt_str(f, "throttle");
	static char lab[8][80]; /* a few labels alive at once (one printf may hold several) */
	static unsigned next;

	if (!dev && cap) {
		/* the host's disk behind the kernel's block throttle: a real cap, not a model */
		char *b = lab[next++ % 8];

		snprintf(b, sizeof(lab[0]), "host device, real cap %s", cap);
		return b;
	}
	return dev ? dev : "host device";
}

/* Concurrency of a run: fan-out width times clients (1 when absent). */
double rpt_concurrency(const json_t *run)
{
	const json_t *f = json_object_get(rpt_pl(run), "features");
	double fo = rpt_num(f, "fanout"), cl = rpt_num(f, "clients");

	return (isfinite(fo) && fo > 0 ? fo : 1) * (isfinite(cl) && cl > 0 ? cl : 1);
}

/* A run's metric k (borrowed; NULL when absent). */
const json_t *rpt_metric(const json_t *run, const char *k)
{
	return json_object_get(json_object_get(rpt_pl(run), "metrics"), k);
}

/* A run's metric k as a double, NAN when null or absent. */
double rpt_metric_num(const json_t *run, const char *k)
{
	const json_t *v = rpt_metric(run, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* qsort order for doubles. */
int rpt_dbl_cmp(const void *x, const void *y)
{
	double a = *(const double *) x, c = *(const double *) y;

	return (a > c) - (a < c);
}

/* Quantile q of v[0..n) (sorted here); NAN when n is 0. */
double rpt_quantile(double *v, size_t n, double q)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), rpt_dbl_cmp);
	return cs_quantile(v, n, q);
}

/* Latest registered version of each hypothesis, in first-registration order. */
json_t *rpt_latest_hyps(const model *m)
{
	json_t *byid = json_object(), *order = json_array(), *out = json_array(), *rec, *id;
	size_t i;

	json_array_foreach(m->hyps, i, rec)
	{
		const char *hid = rpt_str(rpt_pl(rec), "id");
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
		if (!strcmp(rpt_str(rec, "kind"), "amendment"))
			json_array_append(json_object_get(cur, "amendments"), rec);
	}
	json_array_foreach(order, i, id)
	    json_array_append(out, json_object_get(byid, json_string_value(id)));
	json_decref(byid);
	json_decref(order);
	return out;
}

/* "0.97 [0.9, 1]" */
void rpt_fmt_pred(rbuf *b, const json_t *pred)
{
	char x[REPORT_NUM_MAX], lo[REPORT_NUM_MAX], hi[REPORT_NUM_MAX];
	const json_t *band = json_object_get(pred, "band95");

	rb_printf(b, "%s [%s, %s]", report_fmt_json(json_object_get(pred, "value"), x),
	          report_fmt_json(json_array_get(band, 0), lo),
	          report_fmt_json(json_array_get(band, 1), hi));
}

/* The score of record: the first complete score that is not interim (NULL: none). */
const json_t *rpt_score_of_record(const model *m)
{
	size_t i;
	json_t *rec;

	json_array_foreach(m->scores, i, rec) if (!json_is_true(json_object_get(
	                                              rpt_pl(rec), "interim"))) return rec;
	return NULL;
}

/*
 * How a run's numbers were made: a run with a device model in virtual time
 * ("device_time": "virtual") replays its reads on the model's clock; one in
 * real time through the model sleeps the modelled service times; a run
 * without a device model measured the real disk (or its page cache).
 */
int rpt_time_basis(const json_t *run)
{
	const json_t *p = rpt_pl(run), *dt = json_object_get(p, "device_time");
	const char *dev = rpt_str(json_object_get(p, "features"), "device");

	if (json_is_string(dt) && !strcmp(json_string_value(dt), "virtual"))
		return RPT_TIME_VIRTUAL;
	if (json_is_string(dt) && !strcmp(json_string_value(dt), "realtime"))
		return RPT_TIME_MODEL;
	/* a record from before device_time was recorded, naming a device model */
	if (!dt && dev)
		return RPT_TIME_UNRECORDED;
	return RPT_TIME_DISK;
}

const char *rpt_time_words(int bits, char out[RPT_TIME_WORDS_MAX])
{
	static const struct {
		int bit;
		const char *words;
	} w[] = {{RPT_TIME_VIRTUAL, "virtual time"},
	         {RPT_TIME_MODEL, "modelled real time"},
	         {RPT_TIME_DISK, "real disk"},
	         {RPT_TIME_UNRECORDED, "device model, time basis not recorded"}};
	size_t i, len = 0;

	out[0] = '\0';
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (bits & w[i].bit)
			len += (size_t) snprintf(out + len, RPT_TIME_WORDS_MAX - len, "%s%s",
			                         len ? " + " : "", w[i].words);
	return len ? out : "n/a";
}

const json_t *rpt_run_by_id(const model *m, const char *id)
{
	size_t i;
	json_t *run;

	if (!id)
		return NULL;
	json_array_foreach(m->runs, i, run)
	{
		const char *rid = rpt_str(rpt_pl(run), "run_id");

		if (rid && !strcmp(rid, id))
			return run;
	}
	return NULL;
}

/* The spec names the partitions it searched: the others' neighbours were never looked at. */
int rpt_partial_search(const json_t *run)
{
	return json_is_array(json_object_get(json_object_get(rpt_pl(run), "spec"), "partitions"));
}

json_t *rpt_raw_rows(ledger *l, const json_t *run, const char *name)
{
	const char *sha = rpt_str(json_object_get(rpt_pl(run), "raw"), name);
	json_t *rows = NULL;
	cs_err e2 = {0};

	if (!sha || ledger_get_raw(l, sha, &rows, &e2))
		return NULL;
	if (json_is_object(rows) && json_is_array(json_object_get(rows, "rows"))) {
		json_t *a = json_incref(json_object_get(rows, "rows"));

		json_decref(rows);
		return a;
	}
	if (!json_is_array(rows)) {
		json_decref(rows);
		return NULL;
	}
	return rows;
}

int rpt_verdict_basis(const model *m, const json_t *verdict)
{
	int bits = 0;
	size_t i;
	json_t *r;

	json_array_foreach(json_object_get(verdict, "runs"), i, r)
	{
		const json_t *run = rpt_run_by_id(m, rpt_str(r, "run_id"));

		if (run)
			bits |= rpt_time_basis(run);
	}
	return bits;
}

/* A comparison's side as a number: a literal, or the value an aggregate or ratio came to. */
static double side_value(const json_t *side)
{
	return json_is_number(side) ? json_number_value(side) : rpt_num(side, "value");
}

/* How far x lies from [lo, hi]: 0 inside, else the distance in decades (in units when x <= 0). */
static double band_distance(double x, double lo, double hi)
{
	if (x >= lo && x <= hi)
		return 0;
	if (x > 0 && lo > 0)
		return x < lo ? log10(lo / x) : log10(x / hi);
	return x < lo ? lo - x : x - hi;
}

/* Depth-first over the trace's comparisons: keep the one whose threshold is nearest the band. */
static void nearest_cmp(const json_t *t, double lo, double hi, double *best_d, double *best_v)
{
	const json_t *kids, *c;
	size_t i;
	json_t *k;

	if (!json_is_object(t))
		return;
	if ((c = json_object_get(t, "cmp"))) {
		double v = side_value(json_object_get(c, "left"));
		double r = side_value(json_object_get(c, "right"));
		double dist = isfinite(r) && isfinite(lo) && isfinite(hi) ? band_distance(r, lo, hi)
		                                                          : INFINITY;

		if (isfinite(v) && (dist < *best_d || !isfinite(*best_v))) {
			*best_d = dist;
			*best_v = v;
		}
		return;
	}
	if ((kids = json_object_get(t, "not"))) {
		nearest_cmp(kids, lo, hi, best_d, best_v);
		return;
	}
	if (!(kids = json_object_get(t, "all")))
		kids = json_object_get(t, "any");
	json_array_foreach(kids, i, k) nearest_cmp(k, lo, hi, best_d, best_v);
}

double rpt_verdict_observed(const json_t *verdict, const json_t *band)
{
	const json_t *t = json_object_get(json_object_get(verdict, "accept"), "trace");
	double best_d = INFINITY, best_v = NAN;

	nearest_cmp(t, rpt_num_at(band, 0), rpt_num_at(band, 1), &best_d, &best_v);
	return best_v;
}

double rpt_num_at(const json_t *a, size_t i)
{
	const json_t *v = json_array_get(a, i);

	return json_is_number(v) ? json_number_value(v) : NAN;
}
