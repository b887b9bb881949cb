/*
 * qbench.c - what `index query` and `index sweep` measure: the index open
 * (and what the open added to resident memory), the query set, the recall
 * base and its truth, the device models, the trace, the kernel's throttle
 * and the reader; then the passes of qmeasure.c over them.
 *
 * The phases, in the order a query run calls them: harness_qbench_open,
 * harness_qbench_load, harness_qbench_io, harness_qbench_passes,
 * harness_qbench_close. The caller has resolved the index and every output
 * through the guards before the first and passes their held spellings.
 */
#include "guard.h"
#include "qmeasure.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int harness_hdf5_metric(const char *spec, const char *what, const char *metric, cv_metric *m,
			cs_err *e)
{
	cv_hdf5_info hi;
	cv_err ce = {{0}};
	int rc;

	if (strncmp(spec, "hdf5:", 5))
		return 0;
	if ((rc = cv_hdf5_describe(spec, &hi, &ce)))
		return harness_cv_fail(e, rc, &ce);
	if (!hi.has_metric) {
		if (metric)
			return 0;
		if (hi.distance[0])
			return cs_err_set(e, CS_EXIT_BADINPUT, "%s %s: distance '%s' is none of euclidean, "
					  "angular, dot: give --metric", what, spec, hi.distance);
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s %s: no 'distance' attribute: give --metric",
				  what, spec);
	}
	if (metric && hi.metric != *m)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s %s: the file's distance is '%s' (%s), %s is %s",
				  what, spec, hi.distance, cv_metric_name(hi.metric), metric,
				  cv_metric_name(*m));
	*m = hi.metric;
	return 0;
}

void harness_qbench_init(harness_qbench *b)
{
	memset(b, 0, sizeof(*b));
	b->rss_open_kb = b->index_rss_kb = -1;
	harness_throttle_init(&b->thr);
}

int harness_reader_pool(const cv_query_opts *qo, harness_throttle *thr, cv_pool **out, cs_err *e)
{
	const char *env = getenv("COLDSTUDY_FANOUT_POOL");
	int rc;

	*out = NULL;
	if (qo->mode != CV_MODE_FANOUT || qo->fanout <= 1 || (env && !strcmp(env, "0")))
		return 0;
	if ((rc = cv_pool_new(0, out)))
		return cs_err_set(e, CS_EXIT_INTERNAL, "cannot make the reader pool: %s", strerror(-rc));
	if (thr && thr->dirfd >= 0)
		cv_pool_set_join(*out, harness_throttle_join, thr);
	return 0;
}

int harness_qbench_open(harness_qbench *b, const char *dir, uint64_t buffers, cs_err *e)
{
	cv_open_opts oo;
	cv_err ce = {{0}};
	long rss0, rss1;
	int rc;

	cv_open_opts_default(&oo);
	oo.buffers_bytes = buffers;
	rss0 = harness_rss_anon_kb();
	if ((rc = cv_index_open(dir, &oo, &b->ix, &ce)))
		return harness_cv_fail(e, rc, &ce);
	rss1 = harness_rss_anon_kb();
	b->rss_open_kb = rss0 < 0 || rss1 < 0 ? -1 : rss1 > rss0 ? rss1 - rss0 : 0;
	return 0;
}

/*
 * Recall is computed only against the base the ground truth was made of:
 * an hdf5: truth's `train` must have the base's rows, and no id of the
 * nq rows used may reach past the base. Otherwise exit 5 naming both sizes.
 */
static int gt_matches_base(const char *gtspec, size_t k, const cv_dataset *base, const int32_t *gt,
			   size_t nq, cs_err *e)
{
	int32_t top = -1;

	if (!strncmp(gtspec, "hdf5:", 5)) {
		cv_hdf5_info hi;
		cv_err ce = {{0}};
		int rc = cv_hdf5_describe(gtspec, &hi, &ce);

		if (rc)
			return harness_cv_fail(e, rc, &ce);
		if (hi.train_rows && hi.train_rows != base->n)
			return cs_err_set(e, CS_EXIT_BADINPUT, "--gt %s: its neighbours are of a base of %zu "
					  "rows ('train'), the base %s has %zu: recall needs the truth of "
					  "the same base", gtspec, hi.train_rows, base->spec, base->n);
	}
	for (size_t i = 0; i < nq * k; i++)
		if (gt[i] > top)
			top = gt[i];
	if (top >= 0 && (size_t) top >= base->n)
		return cs_err_set(e, CS_EXIT_BADINPUT, "--gt %s: ids reach %d, so its base has at least "
				  "%lld rows; the base %s has %zu: recall needs the truth of the same base",
				  gtspec, top, (long long) top + 1, base->spec, base->n);
	return 0;
}

/* The truth of k ids for each of the nq queries: --gt cut to k, or the exact one (cached). */
static int load_truth(harness_qbench *b, const harness_qbench_load_opts *o, size_t k, cs_err *e)
{
	cv_err ce = {{0}};
	int rc;

	if (o->gt) {
		size_t gnq, gk;

		if ((rc = cv_ivecs_read(o->gt, &b->gt, &gnq, &gk, &ce)))
			return harness_cv_fail(e, rc, &ce);
		if (gnq < b->nq || gk < k)
			return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %zu rows of %zu ids, need %zu of %zu",
					  o->gt, gnq, gk, b->nq, k);
		/* keep the first k of each row */
		for (size_t i = 0; gk != k && i < b->nq; i++)
			memmove(b->gt + i * k, b->gt + i * gk, k * sizeof(*b->gt));
		return gt_matches_base(o->gt, k, b->base, b->gt, b->nq, e);
	} else {
		cv_dataset *sub = NULL;

		rc = cv_dataset_slice(b->qs, 0, b->nq, &sub);
		cv_groundtruth_progress(o->progress);
		if (!rc)
			rc = cv_groundtruth_cached(b->base, sub, k, cv_index_metric(b->ix), 0, NULL, &b->gt,
						   &ce);
		cv_groundtruth_progress(0);
		cv_dataset_free(sub);
		return rc ? harness_cv_fail(e, rc, &ce) : 0;
	}
}

int harness_qbench_load(harness_qbench *b, const harness_qbench_load_opts *o,
			const cv_query_opts *qo, cs_err *e)
{
	const char *data = o->data, *data_from_index = NULL;
	cv_metric im = cv_index_metric(b->ix);
	cv_err ce = {{0}};
	int rc;

	if ((rc = cv_dataset_load(o->queries, &b->qs, &ce)))
		return harness_cv_fail(e, rc, &ce);
	if (b->qs->d != cv_index_dim(b->ix))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %zu dimensions, the index has %zu", o->queries,
				  b->qs->d, cv_index_dim(b->ix));
	b->nq = o->nq && o->nq < b->qs->n ? o->nq : b->qs->n;
	for (size_t i = 0; i < qo->npartitions; i++)
		if (qo->partitions[i] >= cv_index_partitions(b->ix))
			return cs_err_set(e, CS_EXIT_BADINPUT, "--partitions: %u is past the last partition "
					  "(%u)", qo->partitions[i], cv_index_partitions(b->ix) - 1);
	/* the base for recall: --data, or DIR/DATA (what the index was built from) */
	if (!data && harness_index_data_spec(o->dir, b->data_spec, sizeof(b->data_spec)) == 0)
		data_from_index = data = b->data_spec;
	if (!data && o->need_base)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s needs the base for recall: %s/DATA or --data",
				  o->need_base, o->shown);
	if (data && (rc = cv_dataset_load(data, &b->base, &ce))) {
		if (data_from_index)
			return cs_err_set(e, CS_EXIT_BADINPUT, "%s/DATA names the index's data as %s: %s "
					  "(give --data SPEC)", o->shown, data,
					  ce.msg[0] ? ce.msg : strerror(-rc));
		return harness_cv_fail(e, rc, &ce);
	}
	if ((rc = harness_hdf5_metric(o->queries, "--queries", "the index's metric", &im, e)) ||
	    (o->gt && (rc = harness_hdf5_metric(o->gt, "--gt", "the index's metric", &im, e))))
		return rc;
	return b->base ? load_truth(b, o, qo->k, e) : 0;
}

int harness_qbench_io(harness_qbench *b, const harness_qbench_io_opts *o, const cv_query_opts *qo,
		      cs_err *e)
{
	cv_io_opts io_o;
	cv_err ce = {{0}};
	int rc;

	if (o->device && (rc = cv_device_new(o->device, 1, &b->dev, &ce)))
		return harness_cv_fail(e, rc, &ce);
	if (o->simulate && (rc = cv_device_new(o->simulate, 1, &b->simdev, &ce)))
		return harness_cv_fail(e, rc, &ce);
	if ((o->simulate || o->trace) && (rc = cv_trace_new(1u << 22, &b->trace)))
		return harness_cv_fail(e, rc, NULL);
	if (o->cap) {
		/* the whole disk under the held index; the query loop's thread (and its readers) join */
		if (harness_throttle_begin(o->cap, o->held_fd, &b->thr, e)) {
			char why[CS_ERR_MAX];

			snprintf(why, sizeof(why), "%s", e->msg);
			return cs_err_set(e, e->code, "%s: %s", o->shown, why);
		}
		if ((rc = harness_throttle_enter(&b->thr)))
			return cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot join: %s", b->thr.dir,
					  strerror(-rc));
		b->throttled = 1;
	}
	cv_io_opts_default(&io_o);
	io_o.strategy = o->strategy;
	io_o.device = b->dev;
	io_o.trace = b->trace;
	if (qo->mode == CV_MODE_FANOUT && qo->fanout > io_o.queue_depth)
		io_o.queue_depth = qo->fanout;
	if ((rc = cv_io_new(&io_o, &b->io)))
		return cs_err_set(e, rc == -ENOSYS || rc == -EPERM ? CS_EXIT_REFUSED : CS_EXIT_INTERNAL,
				  "cannot start the %s reader: %s", cv_io_strategy_name(o->strategy),
				  strerror(-rc));
	if (o->files && (rc = cv_index_files(o->dir, &b->files, &b->nfiles)))
		return harness_cv_fail(e, rc, NULL);
	return 0;
}

int harness_qbench_passes(harness_qbench *b, const cv_query_opts *qo, harness_qm_opts *o,
			  harness_qm_result *r, cs_err *e)
{
	cv_query_opts pq = *qo;
	int rc;

	/* made at the first passes that fan out (a sweep's first fan-out setting), kept for the rest */
	if (!b->pool && (rc = harness_reader_pool(qo, b->throttled ? &b->thr : NULL, &b->pool, e)))
		return rc;
	pq.pool = b->pool;
	o->files = b->files;
	o->nfiles = b->nfiles;
	o->base = b->base;
	o->gt = b->gt;
	o->metric = cv_index_metric(b->ix);
	o->trace = b->trace;
	o->simdev = b->simdev;
	rc = harness_qm_passes(b->ix, b->io, b->qs, b->nq, &pq, o, r, e);
	if (b->throttled) {
		uint64_t tr = 0, tb = 0;

		harness_throttle_leave(&b->thr);
		b->throttled = 0;
		if (!rc && harness_throttle_counters(&b->thr, &tr, &tb) == 0)
			b->throttle = harness_throttle_record(&b->thr, tr, tb);
	}
	if (!rc && o->rss)
		b->index_rss_kb = b->rss_open_kb < 0 || r->rss_passes_kb < 0
					  ? -1
					  : b->rss_open_kb + r->rss_passes_kb;
	return rc;
}

void harness_qbench_close(harness_qbench *b)
{
	if (!b)
		return;
	free(b->gt);
	cv_index_files_free(b->files, b->nfiles);
	cv_pool_free(b->pool); /* its threads out of the cap's cgroup before the throttle ends */
	cv_io_free(b->io);
	cv_trace_free(b->trace);
	cv_device_free(b->dev);
	cv_device_free(b->simdev);
	cv_dataset_free(b->qs);
	cv_dataset_free(b->base);
	cv_index_close(b->ix);
	harness_throttle_end(&b->thr);
	json_decref(b->throttle);
	harness_qbench_init(b);
}

int harness_blocks_write(const char *prefix, const cv_block_list *bl, char **files, size_t nfiles)
{
	for (size_t f = 0; f < nfiles; f++) {
		const char *base = strrchr(files[f], '/');
		char path[4096];
		FILE *o = NULL;

		base = base ? base + 1 : files[f];
		for (size_t i = 0; i < bl->n; i++) {
			if (bl->file[i] != f)
				continue;
			if (!o) {
				cs_err we = {0};

				snprintf(path, sizeof(path), "%s.%s", prefix, base);
				/* beneath the held folder: a link at its name is replaced, never followed */
				o = guard_output_fopen(path, "index query", "--record-blocks", &we);
				if (!o) {
					char spelt[CS_ERR_MAX + 4096];

					guard_spell(we.msg, 0, spelt, sizeof(spelt));
					fprintf(stderr, "coldstudy index: %s\n", spelt);
					return we.code == CS_EXIT_REFUSED ? -EPERM : -EIO;
				}
			}
			fprintf(o, "%llu\n", (unsigned long long) bl->block[i]);
		}
		if (o && fclose(o))
			return -EIO;
	}
	return 0;
}
