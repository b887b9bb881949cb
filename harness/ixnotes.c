/*
 * ixnotes.c - what an index directory keeps beside the engine's own files,
 * and the few inputs the index verbs read besides datasets:
 *
 *   DIR/DATA   the data spec the index was built from, its path absolute
 *              (the recall base of a later query or sweep)
 *   DIR/BUILD  {"seconds","kind","n","d"}: how long the build took (a
 *              sweep's build_s; a missing one is null there)
 *
 * and an ids file (ivecs, or numbers separated by white space) for
 * `index delete --ids`.
 */
#include "guard.h"
#include "qmeasure.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Write DIR/DATA: the spec, one line. 0 or -errno. */
static int write_data_spec(const char *dir, const char *spec)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/DATA", dir);
	f = guard_output_fopen(path, "index build", "--out", &(cs_err){0});
	if (!f)
		return errno ? -errno : -EIO;
	fprintf(f, "%s\n", spec);
	return fclose(f) ? -EIO : 0;
}

int harness_index_build(const char *kind, const cv_dataset *ds, const cv_build_opts *o,
			const char *dir, const char *data_spec, double *secs, cs_err *e)
{
	cv_err ce = {{0}};
	uint64_t t0 = cs_mono_ns();
	char bpath[4300];
	FILE *bf;
	int rc;

	rc = cv_index_build(kind, ds, o, dir, &ce);
	if (!rc)
		rc = write_data_spec(dir, data_spec);
	if (rc)
		return harness_cv_fail(e, rc, &ce);
	*secs = (double) (cs_mono_ns() - t0) / 1e9;
	snprintf(bpath, sizeof(bpath), "%s/BUILD", dir);
	if ((bf = guard_output_fopen(bpath, "index build", "--out", &(cs_err){0}))) {
		fprintf(bf, "{\"seconds\":%.3f,\"kind\":\"%s\",\"n\":%zu,\"d\":%zu}\n", *secs, kind, ds->n,
			ds->d);
		fclose(bf);
	}
	return 0;
}

int harness_index_data_spec(const char *dir, char *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/DATA", dir);
	f = fopen(path, "r");
	if (!f)
		return -ENOENT;
	if (!fgets(buf, (int) len, f)) {
		fclose(f);
		return -ENOENT;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

double harness_index_build_seconds(const char *dir)
{
	char path[4300];
	json_t *j;
	double v;

	snprintf(path, sizeof(path), "%s/BUILD", dir);
	j = json_load_file(path, 0, NULL);
	v = json_is_number(json_object_get(j, "seconds")) ? json_number_value(json_object_get(j, "seconds"))
							   : NAN;
	json_decref(j);
	return v;
}

long long harness_index_bytes(const char *dir)
{
	char **files = NULL;
	size_t n = 0;
	long long sum = 0;

	if (cv_index_files(dir, &files, &n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *b = strrchr(files[i], '/');
		struct stat st;

		b = b ? b + 1 : files[i];
		if (!strcmp(b, "DATA") || !strcmp(b, "BUILD"))
			continue;
		if (stat(files[i], &st) == 0)
			sum += (long long) st.st_size;
	}
	cv_index_files_free(files, n);
	return sum;
}

int harness_ids_read(const char *path, uint32_t **out, size_t *n, cs_err *e)
{
	size_t len = strlen(path), cap = 0, cnt = 0;
	uint32_t *v = NULL;
	FILE *f;
	unsigned long long x;
	int c;

	if (len > 6 && !strcmp(path + len - 6, ".ivecs")) {
		int32_t *ids = NULL;
		size_t nq, k;
		cv_err ce = {{0}};
		int rc = cv_ivecs_read(path, &ids, &nq, &k, &ce);

		if (rc)
			return harness_cv_fail(e, rc, &ce);
		*out = (uint32_t *) ids;
		*n = nq * k;
		return 0;
	}
	f = fopen(path, "r");
	if (!f)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: cannot open: %s", path, strerror(errno));
	while ((c = fscanf(f, "%llu", &x)) == 1) {
		if (x > UINT32_MAX)
			break;
		if (cnt == cap) {
			uint32_t *nv;

			cap = cap ? cap * 2 : 1024;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				fclose(f);
				free(v);
				return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			}
			v = nv;
		}
		v[cnt++] = (uint32_t) x;
	}
	if (!feof(f) || c == 1) {
		cs_err_set(e, CS_EXIT_BADINPUT, "%s: byte %ld: expected an id (0..4294967295)", path,
			   ftell(f));
		fclose(f);
		free(v);
		return CS_EXIT_BADINPUT;
	}
	fclose(f);
	*out = v;
	*n = cnt;
	return 0;
}
