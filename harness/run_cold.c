/*
 * run_cold.c - the state a run starts from (phase 3): cold, the buffer pool
 * dropped, every index file evicted and its residency proven 0 pages
 * (guard_cold); or warm, one pass over the queries first and the resident
 * fraction measured. A prewarm treatment's block lists are recorded here
 * before the cold state, and a repeat (or warm-up queries) starts from the
 * same state again (harness_before_repeat).
 */
#include "run_phase.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Evict every file and measure the resident fraction (no refusal). */
static int evict_all(char **files, size_t n, cs_err *e)
{
	for (size_t i = 0; i < n; i++) {
		int rc = cv_cache_evict(files[i]);

		if (rc)
			return cs_err_set(e, CS_EXIT_INTERNAL, "%s: eviction failed: %s", files[i],
					  strerror(-rc));
	}
	return 0;
}

static double resident_fraction(char **files, size_t n)
{
	uint64_t pages = 0, res = 0;

	for (size_t i = 0; i < n; i++) {
		cv_residency r;

		if (cv_cache_residency(files[i], &r))
			return NAN;
		pages += r.pages;
		res += r.resident;
	}
	return pages ? (double) res / (double) pages : 0.0;
}

/*
 * Before a repeat (or before the first when warm-up queries are asked):
 * nwarm untimed queries with one client, then, for a cold run, cold again
 * (buffers dropped, every file evicted, residency proven 0). A warm run's
 * resident fraction is measured again.
 */
int harness_before_repeat(ledger *l, load *L, cv_index *ix, const cv_dataset *queries, char **files,
			 size_t nfiles, uint64_t nwarm, int cold, double *resident_before, cs_err *e)
{
	cv_io *w = NULL;
	uint32_t *ids = NULL;
	float *d = NULL;
	int r = 0, rc;

	if (nwarm) {
		ids = calloc(L->k ? L->k : 1, sizeof(*ids));
		d = calloc(L->k ? L->k : 1, sizeof(*d));
		r = ids && d ? cv_io_new(&L->io, &w) : -ENOMEM;
		for (uint64_t i = 0; !r && i < nwarm && !harness_run_interrupted(); i++) {
			size_t nout;

			r = cv_index_query(ix, w, cv_row(queries, (size_t) (i % queries->n)), &L->qo, ids, d,
					   &nout, NULL);
		}
		cv_io_free(w);
		free(ids);
		free(d);
		if (r)
			return cs_err_set(e, CS_EXIT_INTERNAL, "warm-up query failed: %s", strerror(-r));
	}
	if (!cold) {
		*resident_before = resident_fraction(files, nfiles);
		return 0;
	}
	cv_index_drop_buffers(ix);
	rc = evict_all(files, nfiles, e);
	if (!rc)
		rc = guard_cold(l, files, nfiles, "run", resident_before, e);
	return rc;
}

/* Prewarm: the blocks each query (or another query) reads, recorded before the cold state. */
int harness_phase_prewarm(harness_run_ctx *R, cs_err *e)
{
	int rc = 0;

	if (json_is_object(json_object_get(R->eff, "prewarm"))) {
		const json_t *p = json_object_get(R->eff, "prewarm");
		int other = !strcmp(json_string_value(json_object_get(p, "of")), "other");
		uint64_t off = json_is_integer(json_object_get(p, "offset"))
				       ? (uint64_t) json_integer_value(json_object_get(p, "offset"))
				       : R->queries->n;
		cv_io *w = NULL;
		uint32_t *ids = calloc(R->L.k, sizeof(*ids));
		float *d = calloc(R->L.k, sizeof(*d));
		cv_io_opts wo = R->L.io;
		int r;

		wo.device = NULL;
		wo.trace = NULL;
		R->npw = R->queries->n;
		R->pw = calloc(R->npw, sizeof(*R->pw));
		r = (!ids || !d || !R->pw) ? -ENOMEM : cv_io_new(&wo, &w);
		for (size_t q = 0; !r && q < R->npw; q++) {
			cv_block_list bl = {0};
			cv_query_opts qo = R->L.qo;
			size_t nout;
			const float *v = other ? cv_row(R->qall, (R->L.first_id + q + off) % R->qall->n)
					       : cv_row(R->queries, q);

			qo.blocks = &bl;
			cv_index_drop_buffers(R->ix); /* every block the query needs, not only pool misses */
			r = cv_index_query(R->ix, w, v, &qo, ids, d, &nout, NULL);
			if (!r)
				r = harness_blockset_from(&bl, &R->pw[q]);
			free(bl.file);
			free(bl.block);
		}
		cv_io_free(w);
		free(ids);
		free(d);
		if (r) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "recording the prewarm block lists: %s",
					strerror(-r));
			return rc;
		}
		R->L.pw = R->pw;
		R->treat = json_object();
		{
			uint64_t nb = 0;

			for (size_t q = 0; q < R->npw; q++)
				nb += R->pw[q].n;
			json_object_set_new(R->treat, "prewarm",
					    json_pack("{s:s, s:I, s:f, s:s}", "of",
						      other ? "other" : "self", "offset",
						      (json_int_t) (other ? off : 0), "blocks_mean",
						      R->npw ? (double) nb / (double) R->npw : 0.0,
						      "method",
						      "block list recorded by a query pass (cv_block_list), "
						      "then per query: drop buffers, evict, residency 0, "
						      "cv_cache_prewarm"));
		}
	}
	return 0;
}

/*
 * Phase 3: cold (buffers dropped, files evicted, residency proven 0) or
 * warm (one pass over the queries); the host captured.
 */
int harness_phase_cold(harness_run_ctx *R, cs_err *e)
{
	int rc = 0;

	R->cold = json_is_true(json_object_get(R->eff, "cold"));
	R->L.each = R->cold && json_is_true(json_object_get(R->eff, "cold_each_query"));
	/* A cgroup of its own for every run (capped or not): one peak-memory counter. */
	R->memcap = harness_memcap_apply(json_is_integer(json_object_get(R->eff, "mem_cap_bytes"))
					      ? (uint64_t) json_integer_value(json_object_get(R->eff, "mem_cap_bytes"))
					      : 0,
				      R->cgdir, sizeof(R->cgdir));
	harness_live_cgroup(&R->live, R->memcap);
	if (R->cold) {
		cv_index_drop_buffers(R->ix);
		rc = evict_all(R->files, R->nfiles, e);
		if (rc)
			return rc;
		rc = guard_cold(R->l, R->files, R->nfiles, "run", &R->resident_before, e);
		if (rc)
			return rc;
	} else {
		/* One pass over the queries with one client warms cache and buffers. */
		cv_io *w = NULL;
		uint32_t *ids = calloc(R->L.k, sizeof(*ids));
		float *d = calloc(R->L.k, sizeof(*d));
		int r = cv_io_new(&R->L.io, &w);

		for (size_t q = 0; !r && ids && d && q < R->queries->n && !harness_run_interrupted(); q++) {
			size_t nout;

			r = cv_index_query(R->ix, w, cv_row(R->queries, q), &R->L.qo, ids, d, &nout, NULL);
		}
		cv_io_free(w);
		free(ids);
		free(d);
		if (r) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "warm-up query failed: %s", strerror(-r));
			return rc;
		}
		R->resident_before = resident_fraction(R->files, R->nfiles);
	}
	R->host = harness_host_capture(R->index);
	return 0;
}
