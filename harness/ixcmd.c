/*
 * ixcmd.c - `index build`, `index insert`, `index delete` and `index verify` whole, below
 * the cli: the index folder resolved once through the guards (a build's
 * --out created beneath its held parent and never over a non-empty index;
 * a production index never changed), the data loaded, the engine called
 * through the hold, and one line said.
 */
#include "qmeasure.h"

#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

/* An engine failure as an exit code, e filled with its message (else strerror). */
static int engine_fail(int rc, const cv_err *ce, cs_err *e)
{
	return cs_err_set(e, cs_exit_from_errno(rc), "%s", ce->msg[0] ? ce->msg : strerror(-rc));
}

int harness_index_make(const harness_build_args *a, cv_build_opts *o, FILE *out, cs_err *e)
{
	char data_abs[sizeof(((cv_dataset *) 0)->spec)];
	guard_held held;
	cv_dataset *ds = NULL;
	cv_err ce = {{0}};
	char **files = NULL;
	size_t n = 0;
	double secs;
	int rc;

	guard_held_init(&held);
	if ((rc = harness_hdf5_metric(a->data, "--data", a->metric_given ? "--metric" : NULL,
	                              &o->metric, e)))
		return rc;
	/* DATA keeps the spec resolved, so a query from any directory finds the same file */
	if ((rc = cv_dataset_spec_resolve(a->data, data_abs, sizeof(data_abs), &ce)))
		return engine_fail(rc, &ce, e);
	/* --out is resolved once: checked, created beneath its held parent, written through the
	 * hold. */
	if ((rc = guard_target(NULL, NULL, a->out, AT_FDCWD, "index build", "--out", &held, e)))
		return rc;
	if (held.exists && cv_index_files(guard_held_via(&held), &files, &n) == 0 && n > 0) {
		rc = cs_err_set(e, CS_EXIT_REFUSED,
		                "%s: exists and is not empty (refusing to overwrite)", a->out);
		goto out;
	}
	if ((rc = cv_dataset_load(a->data, &ds, &ce))) {
		rc = engine_fail(rc, &ce, e);
		goto out;
	}
	if ((rc = guard_held_mkdirs(&held, e)) ||
	    (rc = harness_index_build(a->kind, ds, o, guard_held_via(&held), data_abs, &secs, e)))
		goto out;
	if (a->json) {
		json_t *j =
		    json_pack("{s:s, s:s, s:s, s:I, s:I, s:s, s:f}", "kind", a->kind, "dir", a->out,
		              "data", a->data, "n", (json_int_t) ds->n, "d", (json_int_t) ds->d,
		              "metric", cv_metric_name(o->metric), "seconds", secs);

		if (j)
			json_dumpf(j, out, JSON_COMPACT);
		fputc('\n', out);
		json_decref(j);
	} else {
		fprintf(out, "built %s index of %zu rows x %zu dims in %s (%.1f s)\n", a->kind,
		        ds->n, ds->d, a->out, secs);
	}
out:
	cv_index_files_free(files, n);
	cv_dataset_free(ds);
	guard_held_close(&held);
	return rc;
}

int harness_index_update(int insert, const char *dir, const char *data, const char *idfile,
                         uint32_t first, FILE *out, cs_err *e)
{
	guard_held held;
	cv_dataset *ds = NULL;
	cv_err ce = {{0}};
	uint32_t *ids = NULL;
	size_t n = 0;
	int rc;

	/* A production index is never changed: resolve once, check, update through the hold. */
	if ((rc = guard_existing(NULL, NULL, dir, AT_FDCWD,
	                         insert ? "index insert" : "index delete", "index", &held, e)))
		return rc;
	if (data && (rc = cv_dataset_load(data, &ds, &ce))) {
		rc = engine_fail(rc, &ce, e);
		goto out;
	}
	if (insert) {
		rc = cv_index_insert(guard_held_via(&held), ds, first, &ce);
		n = ds->n;
	} else {
		if (idfile) {
			if ((rc = harness_ids_read(idfile, &ids, &n, e)))
				goto out;
		} else {
			n = ds->n;
			if (!(ids = malloc((n ? n : 1) * sizeof(*ids)))) {
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
				goto out;
			}
			for (size_t i = 0; i < n; i++)
				ids[i] = (uint32_t) (first + i);
		}
		rc = cv_index_delete(guard_held_via(&held), ids, n, &ce);
	}
	if (rc == -ENOTSUP)
		rc = cs_err_set(e, CS_EXIT_REFUSED, "%s", ce.msg[0] ? ce.msg : "not supported");
	else if (rc)
		rc = engine_fail(rc, &ce, e);
	else
		fprintf(out, "%s %zu rows %s %s\n", insert ? "inserted" : "deleted", n,
		        insert ? "into" : "from", dir);
out:
	free(ids);
	cv_dataset_free(ds);
	guard_held_close(&held);
	return rc;
}

int harness_index_verify_verb(const char *dir, FILE *out, cs_err *e)
{
	cv_err ce = {{0}};
	int rc = cv_index_verify(dir, &ce);

	if (rc)
		return engine_fail(rc, &ce, e);
	fprintf(out, "%s: %s\n", dir, ce.msg[0] ? ce.msg : "ok");
	return 0;
}
