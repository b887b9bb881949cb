/*
 * datacmd.c - what `coldstudy data` does: a dataset spec's shape, hash and
 * value range, and the exact ground truth of a query set over a base
 * (cached by content hash), its --out and cache folder asked of the guards.
 */
#include "iocmd.h"

#include "guard.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The loader's failure as an exit code, e filled with its message (else strerror). */
static int data_fail(int rc, const cv_err *ce, cs_err *e)
{
	return cs_err_set(e, cs_exit_from_errno(rc), "%s", ce->msg[0] ? ce->msg : strerror(-rc));
}

int harness_data_info(const char *spec, int json, FILE *out, cs_err *e)
{
	cv_dataset *ds = NULL;
	cv_err ce = {{0}};
	char hex[65];
	double mn = INFINITY, mx = -INFINITY, norms = 0;
	int rc;

	if ((rc = cv_dataset_load(spec, &ds, &ce)))
		return data_fail(rc, &ce, e);
	for (size_t i = 0; i < ds->n; i++) {
		const float *r = cv_row(ds, i);
		double s = 0;

		for (size_t j = 0; j < ds->d; j++) {
			mn = r[j] < mn ? r[j] : mn;
			mx = r[j] > mx ? r[j] : mx;
			s += (double) r[j] * r[j];
		}
		norms += sqrt(s);
	}
	cv_dataset_hash_hex(ds, hex);
	if (json) {
		json_t *o =
		    json_pack("{s:s, s:I, s:I, s:s, s:f, s:f, s:f, s:s}", "spec", spec, "n",
		              (json_int_t) ds->n, "d", (json_int_t) ds->d, "sha256", hex, "min", mn,
		              "max", mx, "mean_norm", norms / (double) ds->n, "dtype", "float32");
		char *s = o ? json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT) : NULL;

		json_decref(o);
		if (!s) {
			cv_dataset_free(ds);
			return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		}
		fprintf(out, "%s\n", s);
		free(s);
	} else {
		/* The same names as --json's keys, so a reader of one can read the other. */
		fprintf(out,
		        "spec       %s\nn          %zu (rows)\nd          %zu (dimensions)\ndtype  "
		        "    float32\n"
		        "min        %g\nmax        %g\nmean_norm  %g\nsha256     %s\n",
		        spec, ds->n, ds->d, mn, mx, norms / (double) ds->n, hex);
	}
	cv_dataset_free(ds);
	return CS_EXIT_OK;
}

int harness_data_gt(const harness_gt_opts *o, FILE *log, cs_err *e)
{
	cv_dataset *base = NULL, *q = NULL;
	cv_err ce = {{0}};
	int32_t *ids = NULL;
	int rc, hit = 0;
	uint64_t t0;
	guard_held outh;
	const char *cdir = o->cache_dir;
	char outvia[PATH_MAX + 300];

	guard_held_init(&outh);
	/* --out and the cache (--cache-dir, COLDSTUDY_CACHE, ~/.cache): never inside production */
	if ((rc = guard_output(NULL, NULL, o->out, 0, "data gt", "--out", &outh, outvia,
	                       sizeof(outvia), e)) ||
	    (rc = guard_cache_dir(NULL, NULL, cdir, "data gt", &cdir, e)))
		goto out;
	if ((rc = cv_dataset_load(o->base, &base, &ce)) ||
	    (rc = cv_dataset_load(o->queries, &q, &ce))) {
		rc = data_fail(rc, &ce, e);
		goto out;
	}
	if (base->d != q->d || o->k > base->n) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT,
		                "%s has dimension %zu and %zu rows; %s has dimension %zu; k=%zu",
		                o->base, base->d, base->n, o->queries, q->d, o->k);
		goto out;
	}
	t0 = cs_mono_ns();
	/* a progress line on a terminal while it computes (-q: none) */
	cv_groundtruth_progress(!o->quiet && isatty(2));
	rc = cv_groundtruth_cached2(base, q, o->k, o->metric, o->threads, cdir, &ids, NULL, &hit,
	                            &ce);
	cv_groundtruth_progress(0);
	if (!rc)
		rc = cv_ivecs_write(outvia, ids, q->n, o->k, &ce);
	if (rc) {
		rc = data_fail(rc, &ce, e);
		goto out;
	}
	fprintf(log, "ground truth: %zu queries x k=%zu (%s, %s kernels) %s in %.2f s -> %s\n",
	        q->n, o->k, cv_metric_name(o->metric), cv_simd_level(),
	        hit ? "from cache" : "computed", (double) (cs_mono_ns() - t0) / 1e9, o->out);
out:
	guard_held_close(&outh);
	free(ids);
	cv_dataset_free(base);
	cv_dataset_free(q);
	return rc;
}
