/*
 * run_inputs.c - what a run reads, loaded and checked before anything is
 * recorded: the query rows (and whether they reach a holdout target's), the
 * index opened through its hold, its partitions, the recall base and exact
 * ground truth, the device model, a real throttle, the load generator's
 * settings, the index's files and features, the run's tags, and a memory
 * cap the run could not live under. Every refusal here names the spec's
 * JSON path; nothing is in the ledger yet.
 */
#include "run_phase.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The base dataset for recall: run.base, else the study index whose clone
 * is this index (the clone resolved against the study folder, compared by
 * device and inode with the held index).
 */
static const char *base_spec(struct ledger *l, const json_t *study, const json_t *eff,
			     const char *index)
{
	const char *b = json_string_value(json_object_get(eff, "base"));
	struct stat ist;
	guard_held sh;
	const char *k, *found = NULL;
	json_t *v;
	cs_err e = {0};

	if (b)
		return harness_dataset_spec(study, b);
	if (stat(index, &ist) < 0 || guard_hold(ledger_dir(l), AT_FDCWD, &sh, &e))
		return NULL;
	json_object_foreach(json_object_get(study, "indexes"), k, v) {
		const char *c = json_string_value(json_object_get(v, "clone"));
		const char *d = json_string_value(json_object_get(v, "dataset"));
		guard_held ch;

		if (!c || !d || found || guard_hold(c, sh.fd, &ch, &e))
			continue;
		if (ch.exists && ch.st.st_dev == ist.st_dev && ch.st.st_ino == ist.st_ino)
			found = harness_dataset_spec(study, d);
		guard_held_close(&ch);
	}
	guard_held_close(&sh);
	return found;
}

/* Map the effective spec onto the engine's query options. */
static void query_opts(const json_t *eff, cv_query_opts *qo, uint32_t **parts)
{
	const json_t *p = json_object_get(eff, "partitions");

	cv_query_opts_default(qo);
	qo->k = (size_t) json_integer_value(json_object_get(eff, "k"));
	qo->ef_search = (unsigned) json_integer_value(json_object_get(eff, "ef_search"));
	qo->search_probe = (unsigned) json_integer_value(json_object_get(eff, "search_probe"));
	qo->rescore_limit = (unsigned) json_integer_value(json_object_get(eff, "rescore_limit"));
	qo->mode = strcmp(json_string_value(json_object_get(eff, "mode")), "fanout")
			   ? CV_MODE_SERIAL
			   : CV_MODE_FANOUT;
	qo->fanout = (unsigned) json_integer_value(json_object_get(eff, "fanout"));
	qo->merge = strcmp(json_string_value(json_object_get(eff, "merge")), "sort")
			    ? CV_MERGE_STREAM
			    : CV_MERGE_SORT;
	qo->io_mode = strcmp(json_string_value(json_object_get(eff, "io")), "concurrent")
			      ? CV_HIO_SERIAL
			      : CV_HIO_CONCURRENT;
	qo->io_depth = (unsigned) json_integer_value(json_object_get(eff, "io_depth"));
	*parts = NULL;
	if (json_is_array(p)) {
		size_t i;
		json_t *x;

		*parts = calloc(json_array_size(p), sizeof(**parts));
		if (*parts) {
			json_array_foreach(p, i, x)
				(*parts)[i] = (uint32_t) json_integer_value(x);
			qo->partitions = *parts;
			qo->npartitions = json_array_size(p);
		}
	}
}

/*
 * A memory cap must hold what the run cannot do without, or the kernel
 * kills the run before it measures anything: the paged kinds' buffer pool
 * (the queries fill all of it; at least 16 blocks, as the engine's pool),
 * the per-query rows the run keeps (queries x repeats, about MEM_ROW_BYTES
 * each, at most ROWS_MAX a repeat) and MEM_HEADROOM for the harness. A cap
 * below that is bad input: exit 5 naming $.mem_cap_bytes and the figure.
 */
static int memcap_check(const json_t *eff, const cv_index *ix, uint64_t nq, unsigned nrep,
			const char *spec_path, cs_err *e)
{
	const json_t *c = json_object_get(eff, "mem_cap_bytes");
	uint64_t cap, pool = 0, rows, need;
	const char *kind = cv_index_kind(ix);

	if (!json_is_integer(c))
		return 0;
	cap = (uint64_t) json_integer_value(c);
	if (!strcmp(kind, "paged") || !strcmp(kind, "phnsw")) {
		uint64_t nb = (uint64_t) json_integer_value(json_object_get(eff, "buffers_bytes")) /
			      HARNESS_BLOCK;

		pool = (nb < 16 ? 16 : nb) * HARNESS_BLOCK;
	}
	rows = (nq < ROWS_MAX ? nq : ROWS_MAX) * (uint64_t) nrep * MEM_ROW_BYTES;
	need = pool + rows + MEM_HEADROOM;
	if (cap >= need)
		return 0;
	return cs_err_set(e, CS_EXIT_BADINPUT,
			  "%s: $.mem_cap_bytes: %llu bytes is below what the run must map, %llu "
			  "bytes (buffer pool %llu + per-query rows %llu + harness %llu); raise it "
			  "to at least %llu or lower buffers_bytes",
			  spec_path, (unsigned long long) cap, (unsigned long long) need,
			  (unsigned long long) pool, (unsigned long long) rows,
			  (unsigned long long) MEM_HEADROOM, (unsigned long long) need);
}

/*
 * The inputs: queries, holdout overlap, the index, base and ground truth,
 * the device, the throttle, the load's settings, the features and tags,
 * the memory cap.
 */
int harness_phase_inputs(harness_run_ctx *R, cs_err *e)
{
	int rc = 0;
	cv_err ce = {{0}};

	/* Inputs: queries, base and exact ground truth (cached), the index, the device. */
	{
		const json_t *q = json_object_get(R->eff, "queries");
		const char *qspec = harness_dataset_spec(R->study, json_string_value(json_object_get(q, "spec")));
		/* with queries.draw, this replicate's own rows out of the registered range */
		uint64_t first = harness_query_first(R->eff, R->study, R->o->replicate);
		uint64_t count;
		int r;

		r = cv_dataset_load(guard_dataset_via(qspec), &R->qall, &ce);
		if (r) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.queries.spec: %s", R->spec_path, ce.msg);
			return rc;
		}
		count = json_is_integer(json_object_get(q, "count"))
				? (uint64_t) json_integer_value(json_object_get(q, "count"))
				: (first < R->qall->n ? R->qall->n - first : 0);
		if (first >= R->qall->n || count > R->qall->n - first || !count) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"%s: $.queries: rows [%llu, %llu) are outside the %zu queries of %s",
					R->spec_path, (unsigned long long) first,
					(unsigned long long) (first + count), R->qall->n, qspec);
			return rc;
		}
		if (cv_dataset_slice(R->qall, first, count, &R->queries)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory slicing queries");
			return rc;
		}
		R->L.first_id = first;
	}
	/* what the run reads, by the rows it resolves to, not by how its spec spells them */
	R->qrows = harness_query_digests(R->queries);
	rc = harness_holdout_rows(R->l, R->study, R->eff, R->qrows, R->holdout, R->o->declare_overlap,
				  &R->reached, e);
	if (rc)
		return rc;
	{
		cv_open_opts oo;
		int r;

		cv_open_opts_default(&oo);
		oo.buffers_bytes = (uint64_t) json_integer_value(json_object_get(R->eff, "buffers_bytes"));
		oo.flags = json_is_true(json_object_get(R->eff, "readahead")) ? CV_FILE_READAHEAD : 0;
		r = cv_index_open(R->index, &oo, &R->ix, &ce);
		if (r) {
			rc = cs_err_set(e, harness_errno_exit(r), "%s: %s", R->index_shown, ce.msg);
			return rc;
		}
		if (cv_index_dim(R->ix) != R->queries->d) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"%s: $.queries: queries have %zu dimensions, the index %zu",
					R->spec_path, R->queries->d, cv_index_dim(R->ix));
			return rc;
		}
		/* Partitions the index does not have: bad input, named, before anything runs. */
		{
			const json_t *pj = json_object_get(R->eff, "partitions"), *x;
			unsigned np = cv_index_partitions(R->ix);
			size_t i;

			json_array_foreach(pj, i, x) {
				if (json_integer_value(x) >= (json_int_t) np) {
					rc = cs_err_set(e, CS_EXIT_BADINPUT,
							"%s: $.partitions[%zu]: partition %lld is out of "
							"range: %s has %u partition%s (0..%u)",
							R->spec_path, i, (long long) json_integer_value(x),
							R->index, np, np == 1 ? "" : "s", np ? np - 1 : 0);
					return rc;
				}
			}
		}
	}
	R->L.k = (size_t) json_integer_value(json_object_get(R->eff, "k"));
	R->L.metric = cv_index_metric(R->ix);
	if (json_is_string(json_object_get(R->eff, "metric")))
		cv_metric_parse(json_string_value(json_object_get(R->eff, "metric")), &R->L.metric);
	R->bspec = base_spec(R->l, R->study, R->eff, R->index);
	/* a base found through the study (no $.base) is checked as $.base is */
	if (R->bspec && (rc = guard_dataset(R->l, R->prod, R->bspec, "run", "the study's base dataset", e)))
		return rc;
	if (R->bspec) {
		int r = cv_dataset_load(guard_dataset_via(R->bspec), &R->base, &ce);

		if (r) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.base: %s", R->spec_path, ce.msg);
			return rc;
		}
		if (R->base->d != R->queries->d) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.base: %zu dimensions, queries %zu",
					R->spec_path, R->base->d, R->queries->d);
			return rc;
		}
		r = cv_groundtruth_cached(R->base, R->queries, R->L.k, R->L.metric, 0, NULL, &R->gt, &ce);
		if (r) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "ground truth: %s", ce.msg);
			return rc;
		}
	}
	if (json_is_string(json_object_get(R->eff, "device"))) {
		int r = cv_device_new(json_string_value(json_object_get(R->eff, "device")), 42, &R->dev, &ce);

		if (r) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.device: %s", R->spec_path, ce.msg);
			return rc;
		}
	}
	if (json_is_string(json_object_get(R->eff, "throttle"))) {
		harness_cap cap;
		int r;

		/* a real cap on the held clone's whole disk; its readers join it below */
		r = harness_cap_parse(json_string_value(json_object_get(R->eff, "throttle")), &cap, e);
		if (!r)
			r = harness_throttle_begin(&cap, R->ihold.fd, &R->thr, e);
		/* v2: one process, one cgroup; the memory cap's cgroup and the throttle's exclude each other */
		if (!r && R->thr.v2 && json_is_integer(json_object_get(R->eff, "mem_cap_bytes")))
			r = cs_err_set(e, CS_EXIT_BADINPUT,
				       "cgroup v2 puts the whole process in one cgroup: a throttle and "
				       "mem_cap_bytes cannot both apply (drop one)");
		if (r) {
			char m[CS_ERR_MAX];

			snprintf(m, sizeof(m), "%s", e->msg);
			rc = cs_err_set(e, r, "%s: $.throttle: %s", R->spec_path, m);
			return rc;
		}
	}
	query_opts(R->eff, &R->L.qo, &R->parts);
	R->L.qo.k = R->L.k;
	cv_io_opts_default(&R->L.io);
	cv_io_strategy_parse(json_string_value(json_object_get(R->eff, "strategy")), &R->L.io.strategy);
	if (json_is_integer(json_object_get(R->eff, "queue_depth")))
		R->L.io.queue_depth = (unsigned) json_integer_value(json_object_get(R->eff, "queue_depth"));
	R->L.io.device = R->virt ? NULL : R->dev; /* virtual: real reads, replayed afterwards */
	R->L.vdev = R->virt ? R->dev : NULL;
	R->L.cpus = json_is_array(json_object_get(R->eff, "client_cpus")) ? json_object_get(R->eff, "client_cpus")
								    : NULL;
	if (R->L.qo.mode == CV_MODE_FANOUT && R->L.qo.fanout > (R->L.io.queue_depth ? R->L.io.queue_depth : 64))
		R->L.io.queue_depth = R->L.qo.fanout;
	R->L.ix = R->ix;
	R->L.queries = R->queries;
	R->L.base = R->base;
	R->L.gt = R->gt;
	R->L.clients = (unsigned) json_integer_value(json_object_get(R->eff, "clients"));
	if (json_is_integer(json_object_get(R->eff, "query_count")))
		R->L.query_count = (uint64_t) json_integer_value(json_object_get(R->eff, "query_count"));
	else if (!json_is_number(json_object_get(R->eff, "duration_s")))
		R->L.query_count = R->queries->n;
	if (cv_index_files(R->index, &R->files, &R->nfiles) || !R->nfiles) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot list the index files", R->index_shown);
		return rc;
	}
	R->L.files = R->files;
	R->L.nfiles = R->nfiles;
	{
		/* the index's figures through the held directory, never its spelling again */
		json_t *held = json_copy(R->eff);

		if (!held) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		} else {
			json_object_set_new(held, "index", json_string(R->index));
			rc = harness_spec_features(held, &R->features, e);
			json_decref(held);
		}
	}
	if (rc)
		return rc;
	if (json_is_null(json_object_get(R->features, "partitions")))
		json_object_set_new(R->features, "partitions",
				    json_integer((json_int_t) (R->parts ? json_array_size(json_object_get(R->eff, "partitions"))
								     : cv_index_partitions(R->ix))));

	rc = harness_run_tags(R->eff, json_object_get(R->study, "defaults"),
			      json_string_value(json_object_get(R->features, "kind")), R->cls, R->spec_path,
			      &R->tags, e);
	if (rc)
		return rc;

	rc = memcap_check(R->eff, R->ix, R->L.query_count, R->nrep, R->spec_path, e);
	if (rc)
		return rc;

	if (harness_run_interrupted()) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "interrupted before the run started; nothing recorded");
		return rc;
	}
	return 0;
}
