/*
 * qcmd.c - `index query` and `index sweep` whole, below the cli: the index
 * resolved once and read through the hold, what they write asked of the
 * guards, the passes measured by qbench.c and qmeasure.c, the summary or
 * the sweep's rows printed (qprint.c). The exports (--per-query, sweep's
 * --out) are written by the caller through reports/, which the harness
 * does not call.
 */
#include "qmeasure.h"

#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * --per-query's rows: one a timed query: pass, q (its row in the query
 * set), lat_real_ms, reads, recall (null without a truth); new, or NULL.
 */
static json_t *per_query_rows(const harness_qm_result *s)
{
	json_t *rows = json_array();

	for (size_t p = 0; rows && p < s->passes; p++)
		for (size_t i = 0; i < s->nq; i++)
			json_array_append_new(
			    rows,
			    json_pack("{s:I, s:I, s:f, s:I, s:o}", "pass", (json_int_t) p, "q",
			              (json_int_t) i, "lat_real_ms", s->lat_ms[p * s->nq + i],
			              "reads", (json_int_t) s->q_reads[p * s->nq + i], "recall",
			              isfinite(s->q_recall[i]) ? json_real(s->q_recall[i])
			                                       : json_null()));
	return rows;
}

/*
 * The index is resolved once and read through the hold. A cold query
 * evicts, so a production index is refused there; warm reads are allowed.
 * What the query writes (--trace, --record-blocks, --per-query, the ground
 * truth's cache) asks the guards first; the paths become the held ones.
 */
static int hold_paths(harness_query_args *a, guard_held *held, guard_held outs[3],
                      char via[3][PATH_MAX + 300], cs_err *e)
{
	const char *cvia;
	int rc;

	rc = a->cold ? guard_existing(NULL, NULL, a->dir, AT_FDCWD, "index query --cold", "index",
	                              held, e)
	             : guard_hold(a->dir, AT_FDCWD, held, e);
	if (!rc && !held->exists) {
		guard_held_close(held);
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: does not exist", a->dir);
	}
	if (rc)
		return rc;
	if ((a->tracefile && (rc = guard_output(NULL, NULL, a->tracefile, 0, "index query",
	                                        "--trace", &outs[0], via[0], sizeof(via[0]), e))) ||
	    (a->record &&
	     (rc = guard_output(NULL, NULL, a->record, 0, "index query", "--record-blocks",
	                        &outs[1], via[1], sizeof(via[1]), e))) ||
	    (a->per_query &&
	     (rc = guard_output(NULL, NULL, a->per_query, 0, "index query", "--per-query", &outs[2],
	                        via[2], sizeof(via[2]), e))) ||
	    (!a->gt && (rc = guard_cache_dir(NULL, NULL, NULL, "index query", &cvia, e)))) {
		guard_held_close(held);
		return rc;
	}
	if (a->tracefile)
		a->tracefile = via[0];
	if (a->record)
		a->record = via[1];
	if (a->per_query)
		a->per_query = via[2];
	return 0;
}

int harness_index_query(const harness_query_args *in, harness_rows_writer write_rows, FILE *out, cs_err *e)
{
	harness_query_args qa = *in, *a = &qa; /* its paths become held ones: the caller's stay */
	json_t *rows = NULL;
	harness_qbench b;
	harness_qm_result s = {0};
	harness_qm_summary m;
	harness_qm_opts mo = {0};
	harness_cap cap;
	cv_block_list bl = {0};
	guard_held held, outs[3];
	char via[3][PATH_MAX + 300];
	const char *idir;
	int rc;

	harness_qbench_init(&b);
	for (int i = 0; i < 3; i++)
		guard_held_init(&outs[i]);
	if (a->throttle && harness_cap_parse(a->throttle, &cap, e)) {
		char why[sizeof(e->msg)];

		snprintf(why, sizeof(why), "%s", e->msg);
		return cs_err_set(e, e->code, "--throttle: %s", why);
	}
	if ((rc = hold_paths(a, &held, outs, via, e))) {
		for (int i = 0; i < 3; i++)
			guard_held_close(&outs[i]);
		return rc;
	}
	idir = guard_held_via(&held);
	a->qo.partitions = a->parts;
	a->qo.npartitions = a->nparts;
	a->qo.blocks = a->record ? &bl : NULL;
	mo.warmup = a->warmup;
	mo.repeat = a->repeat;
	mo.cold = a->cold;
	mo.cpu = mo.rss = 1;
	mo.trace_path = a->tracefile;
	mo.per_query = a->per_query != NULL;
	mo.progress = !a->quiet && isatty(2) ? a->dir : NULL;
	if ((rc = harness_qbench_open(&b, idir, a->buffers, e)) ||
	    (rc = harness_qbench_load(
	         &b,
	         &(harness_qbench_load_opts){.dir = idir,
	                                     .shown = a->dir,
	                                     .queries = a->queries,
	                                     .nq = a->nq,
	                                     .data = a->data,
	                                     .gt = a->gt,
	                                     .progress = !a->quiet && isatty(2)},
	         &a->qo, e)) ||
	    (rc = harness_qbench_io(&b,
	                            &(harness_qbench_io_opts){.strategy = a->strategy,
	                                                      .device = a->device,
	                                                      .simulate = a->simulate,
	                                                      .trace = !!a->tracefile,
	                                                      .files = a->cold || a->record,
	                                                      .dir = idir,
	                                                      .shown = a->dir,
	                                                      .cap = a->throttle ? &cap : NULL,
	                                                      .held_fd = held.fd},
	                            &a->qo, e)) ||
	    (rc = harness_qbench_passes(&b, &a->qo, &mo, &s, e)) ||
	    (rc = harness_qm_summarise(&s, &m) ? cs_err_set(e, CS_EXIT_INTERNAL, "out of memory")
	                                       : 0) ||
	    (a->per_query && !(rows = per_query_rows(&s)) &&
	     (rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory"))) ||
	    (rows && (rc = write_rows(rows, a->per_query, "--per-query", e))))
		goto out;
	harness_qbench_print(&b,
	                     &(harness_qbench_shown){.qo = &a->qo,
	                                             .strategy = a->strategy,
	                                             .cold = a->cold,
	                                             .json = a->json,
	                                             .buffers = a->buffers,
	                                             .warmup = a->warmup,
	                                             .nparts = a->nparts,
	                                             .simulate = a->simulate},
	                     &s, &m, out);
	if (a->record && (rc = harness_blocks_write(a->record, &bl, b.files, b.nfiles)))
		rc = cs_err_set(e, rc == -EPERM ? CS_EXIT_REFUSED : CS_EXIT_INTERNAL,
		                "%s: cannot write block lists: %s", a->record, strerror(-rc));
out:
	json_decref(rows);
	free(bl.file);
	free(bl.block);
	harness_qm_result_free(&s);
	harness_qbench_close(&b);
	guard_held_close(&held);
	for (int i = 0; i < 3; i++)
		guard_held_close(&outs[i]);
	return rc;
}

void harness_sweep_result_free(harness_sweep_result *r)
{
	for (size_t v = 0; r->labels && v < r->n; v++)
		free(r->labels[v]);
	free(r->labels);
	free(r->recalls);
	free(r->qps);
	json_decref(r->rows);
	memset(r, 0, sizeof(*r));
}

int harness_index_sweep(const harness_query_args *in, const harness_sweep_opts *w,
                        harness_sweep_result *res, FILE *out, cs_err *e)
{
	harness_query_args qa = *in, *a = &qa; /* the knob set a setting at a time here */
	const int ef = !strcmp(w->knob, "--ef-search");
	const char *kcol = ef ? "ef_search" : "search_probe", *idir, *kind;
	double *recalls = calloc(w->nvals, sizeof(double)),
	       *qmeds = calloc(w->nvals, sizeof(double));
	char **labels = calloc(w->nvals, sizeof(char *));
	json_t *rows = json_array();
	guard_held held;
	harness_qbench b;
	double bsecs;
	long long ibytes;
	int rc;

	memset(res, 0, sizeof(*res));
	guard_held_init(&held);
	harness_qbench_init(&b);
	if (!recalls || !qmeds || !labels || !rows) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	rc = guard_hold(a->dir, AT_FDCWD, &held, e);
	if (!rc && !held.exists)
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: does not exist", a->dir);
	if (rc)
		goto out;
	idir = guard_held_via(&held);
	if ((rc = harness_qbench_open(&b, idir, a->buffers, e)))
		goto out;
	kind = cv_index_kind(b.ix);
	if (ef == !strcmp(kind, "hfresh")) {
		rc = cs_err_set(e, CS_EXIT_USAGE, "%s: a %s index's knob is %s", w->knob, kind,
		                strcmp(kind, "hfresh") ? "--ef-search" : "--search-probe");
		goto out;
	}
	if ((rc = harness_qbench_load(
	         &b,
	         &(harness_qbench_load_opts){.dir = idir,
	                                     .shown = a->dir,
	                                     .queries = a->queries,
	                                     .nq = a->nq,
	                                     .data = a->data,
	                                     .gt = a->gt,
	                                     .need_base = "sweep",
	                                     .progress = !a->quiet && isatty(2)},
	         &a->qo, e)) ||
	    (rc = harness_qbench_io(
	         &b,
	         &(harness_qbench_io_opts){.strategy = a->strategy, .dir = idir, .shown = a->dir},
	         &a->qo, e)))
		goto out;
	bsecs = harness_index_build_seconds(idir);
	ibytes = harness_index_bytes(idir);
	if (!a->json)
		harness_sweep_print_head(kcol, out);
	for (size_t v = 0; v < w->nvals; v++) {
		harness_qm_opts mo = {.warmup = a->warmup, .repeat = a->repeat};
		harness_qm_result r;
		harness_qm_summary m;
		cv_query_stats st;
		json_t *row;

		if (ef)
			a->qo.ef_search = w->vals[v];
		else
			a->qo.search_probe = w->vals[v];
		rc = harness_qbench_passes(&b, &a->qo, &mo, &r, e);
		if (!rc && harness_qm_summarise(&r, &m))
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		st = r.st;
		harness_qm_result_free(&r);
		if (rc) {
			if (r.query_failed) {
				char why[sizeof(e->msg)];

				snprintf(why, sizeof(why), "%s", e->msg);
				cs_err_set(e, rc, "%s %u: %s", w->knob + 2, w->vals[v], why);
			}
			goto out;
		}
		recalls[v] = r.recall;
		qmeds[v] = m.qps;
		labels[v] = malloc(32);
		if (labels[v])
			snprintf(labels[v], 32, "%u", w->vals[v]);
		row = harness_sweep_row(&(harness_sweep_setting){.kcol = kcol,
		                                                 .value = w->vals[v],
		                                                 .k = a->qo.k,
		                                                 .nq = b.nq,
		                                                 .repeat = a->repeat,
		                                                 .build_s = bsecs,
		                                                 .index_bytes = ibytes,
		                                                 .kind = kind},
		                        &m, r.recall, &st);
		if (!row) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
		harness_sweep_print_row(row, kcol, a->json, out);
		json_array_append_new(rows, row);
	}
	if (!a->json)
		harness_sweep_print_foot(b.nq, a->qo.k, a->repeat, a->warmup, bsecs, ibytes, out);
	*res = (harness_sweep_result){
	    .rows = rows, .recalls = recalls, .qps = qmeds, .labels = labels, .n = w->nvals};
	snprintf(res->title, sizeof(res->title), "%s: recall against QPS by %s (k=%zu)", kind, kcol,
	         a->qo.k);
	rows = NULL;
	recalls = qmeds = NULL;
	labels = NULL;
out:
	for (size_t v = 0; labels && v < w->nvals; v++)
		free(labels[v]);
	free(labels);
	free(recalls);
	free(qmeds);
	json_decref(rows);
	harness_qbench_close(&b);
	guard_held_close(&held);
	return rc;
}
