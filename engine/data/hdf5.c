/*
 * hdf5.c - ann-benchmarks datasets: one HDF5 file holding `train` (the
 * base vectors), `test` (the queries), `neighbors` (the true nearest ids
 * of each query, int) and `distances`, read through libhdf5.
 *
 * The spec is hdf5:PATH[:train|:test|:neighbors|:distances] (default
 * train). Each member must be a two-dimensional dataset of a numeric
 * type; libhdf5 converts it to float32 (ids up to 2^24 are exact, as for
 * ivecs). Sizes pass data_check_size before anything is read, and every
 * value must be finite. Without libhdf5 at build time an hdf5: spec is
 * refused with -ENOTSUP and a line that says so.
 *
 * `neighbors` read as ids (data_hdf5_ids) must be of an integer type: a
 * float array of ids is refused, naming the member and the type it has.
 * The file's `distance` attribute (euclidean, angular, dot) is read by
 * cv_hdf5_describe, so a metric that disagrees with it can be refused.
 *
 * libhdf5 prints its own error stack to stderr by default; it is turned
 * off here, and each failure becomes one line naming the file and member.
 */
#include "data.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const members[] = {"train", "test", "neighbors", "distances", NULL};

/* Split "PATH[:member]" into path and member (default train); -EINVAL if too long. */
static int split(const char *spec, char *path, size_t cap, const char **member)
{
	const char *colon = strrchr(spec, ':');
	size_t n = strlen(spec);

	*member = "train";
	if (colon) {
		for (size_t i = 0; members[i]; i++)
			if (!strcmp(colon + 1, members[i])) {
				*member = members[i];
				n = (size_t) (colon - spec);
			}
	}
	if (!n || n >= cap)
		return -EINVAL;
	memcpy(path, spec, n);
	path[n] = '\0';
	return 0;
}

#ifdef CV_HAVE_HDF5
#include <hdf5.h>

/* Strip "hdf5:" and a row range "[A:B]" from a dataset spec into buf; -EINVAL if too long. */
static int bare_spec(const char *spec, char *buf, size_t cap)
{
	size_t n;

	if (!strncmp(spec, "hdf5:", 5))
		spec += 5;
	n = strlen(spec);
	if (n && spec[n - 1] == ']' && strrchr(spec, '['))
		n = (size_t) (strrchr(spec, '[') - spec);
	if (n >= cap)
		return -EINVAL;
	memcpy(buf, spec, n);
	buf[n] = '\0';
	return 0;
}

/* The type's name as numpy spells it ("float64", "int32", "uint8"), or "non-numeric". */
static const char *type_name(hid_t t, char *buf, size_t cap)
{
	H5T_class_t c = H5Tget_class(t);
	size_t sz = H5Tget_size(t);

	if (c == H5T_FLOAT)
		snprintf(buf, cap, "float%zu", sz * 8);
	else if (c == H5T_INTEGER)
		snprintf(buf, cap, "%sint%zu", H5Tget_sign(t) == H5T_SGN_NONE ? "u" : "", sz * 8);
	else
		snprintf(buf, cap, "non-numeric");
	return buf;
}

/* Open path read-only with libhdf5's error stack off; the file id or -EINVAL/-errno with e set. */
static hid_t open_file(const char *path, cv_err *e)
{
	hid_t f;

	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if (access(path, R_OK))
		return cv_err_set(e, -errno, "%s: %s", path, strerror(errno));
	if (H5Fis_hdf5(path) <= 0)
		return cv_err_set(e, -EINVAL, "%s: not an HDF5 file", path);
	f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0)
		return cv_err_set(e, -EINVAL, "%s: cannot open as HDF5", path);
	return f;
}

/* Read the file's string attribute `distance` into buf ("" when absent); 0 or -EINVAL. */
static int read_distance(hid_t f, const char *path, char *buf, size_t cap, cv_err *e)
{
	hid_t a, t, mt;
	int rc = 0;

	buf[0] = '\0';
	if (H5Aexists(f, "distance") <= 0)
		return 0;
	a = H5Aopen(f, "distance", H5P_DEFAULT);
	t = a < 0 ? H5I_INVALID_HID : H5Aget_type(a);
	if (a < 0 || t < 0 || H5Tget_class(t) != H5T_STRING) {
		rc = cv_err_set(e, -EINVAL, "%s: attribute 'distance' is not a string", path);
		goto out;
	}
	if (H5Tis_variable_str(t) > 0) {
		char *v = NULL;

		mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, H5T_VARIABLE);
		H5Tset_cset(mt, H5Tget_cset(t)); /* h5py writes UTF-8; libhdf5 converts no charset */
		if (H5Aread(a, mt, &v) < 0 || !v)
			rc = cv_err_set(e, -EINVAL, "%s: cannot read attribute 'distance'", path);
		else
			snprintf(buf, cap, "%s", v);
		if (v)
			H5free_memory(v);
		H5Tclose(mt);
	} else {
		size_t sz = H5Tget_size(t);
		char *v = sz < 4096 ? calloc(1, sz + 1) : NULL;

		mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, sz + 1);
		H5Tset_cset(mt, H5Tget_cset(t));
		if (!v || H5Aread(a, mt, v) < 0)
			rc = cv_err_set(e, -EINVAL, "%s: cannot read attribute 'distance'", path);
		else
			snprintf(buf, cap, "%s", v);
		free(v);
		H5Tclose(mt);
	}
out:
	if (t >= 0)
		H5Tclose(t);
	if (a >= 0)
		H5Aclose(a);
	return rc;
}

/* Describe an ann-benchmarks file (see cv_data.h). */
CV_API int cv_hdf5_describe(const char *spec, cv_hdf5_info *out, cv_err *e)
{
	char buf[4096], path[4096];
	const char *member;
	hid_t f;
	int rc;

	memset(out, 0, sizeof(*out));
	if (bare_spec(spec, buf, sizeof(buf)) || split(buf, path, sizeof(path), &member))
		return cv_err_set(e, -EINVAL, "%s: expected hdf5:PATH[:member]", spec);
	f = open_file(path, e);
	if (f < 0)
		return (int) f;
	rc = read_distance(f, path, out->distance, sizeof(out->distance), e);
	if (!rc && out->distance[0]) {
		if (!strcmp(out->distance, "euclidean"))
			out->metric = CV_METRIC_L2, out->has_metric = 1;
		else if (!strcmp(out->distance, "angular") || !strcmp(out->distance, "cosine"))
			out->metric = CV_METRIC_COSINE, out->has_metric = 1;
		else if (!strcmp(out->distance, "dot") || !strcmp(out->distance, "ip"))
			out->metric = CV_METRIC_IP, out->has_metric = 1;
	}
	if (!rc && H5Lexists(f, "train", H5P_DEFAULT) > 0) {
		hid_t ds = H5Dopen2(f, "train", H5P_DEFAULT);
		hid_t sp = ds < 0 ? H5I_INVALID_HID : H5Dget_space(ds);
		hsize_t dims[2];

		if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == 2 &&
		    H5Sget_simple_extent_dims(sp, dims, NULL) == 2)
			out->train_rows = (size_t) dims[0];
		if (sp >= 0)
			H5Sclose(sp);
		if (ds >= 0)
			H5Dclose(ds);
	}
	H5Fclose(f);
	return rc;
}

/* hdf5:PATH[:neighbors]: the ids of `neighbors`, an integer dataset; ids new, caller frees. */
int data_hdf5_ids(const char *spec, int32_t **ids, size_t *nq, size_t *k, cv_err *e)
{
	hid_t f, ds = H5I_INVALID_HID, sp = H5I_INVALID_HID, t = H5I_INVALID_HID;
	hsize_t dims[2];
	char buf[4096], path[4096], tn[32];
	const char *member;
	long long *v = NULL;
	int rc;

	*ids = NULL;
	if (bare_spec(spec, buf, sizeof(buf)) || split(buf, path, sizeof(path), &member))
		return cv_err_set(e, -EINVAL, "%s: expected hdf5:PATH[:neighbors]", spec);
	if (strcmp(member, "train") && strcmp(member, "neighbors"))
		return cv_err_set(e, -EINVAL, "%s: '%s' holds no ids (ground truth is 'neighbors')", path,
				  member);
	member = "neighbors";
	f = open_file(path, e);
	if (f < 0)
		return (int) f;
	if (H5Lexists(f, member, H5P_DEFAULT) <= 0) {
		rc = cv_err_set(e, -EINVAL, "%s: no dataset 'neighbors' (an ann-benchmarks file has train, "
				"test, neighbors, distances)", path);
		goto out;
	}
	ds = H5Dopen2(f, member, H5P_DEFAULT);
	sp = ds < 0 ? H5I_INVALID_HID : H5Dget_space(ds);
	t = ds < 0 ? H5I_INVALID_HID : H5Dget_type(ds);
	if (ds < 0 || sp < 0 || t < 0 || H5Sget_simple_extent_ndims(sp) != 2 ||
	    H5Sget_simple_extent_dims(sp, dims, NULL) != 2) {
		rc = cv_err_set(e, -EINVAL, "%s: 'neighbors' is not a two-dimensional dataset", path);
		goto out;
	}
	if (H5Tget_class(t) != H5T_INTEGER) {
		rc = cv_err_set(e, -EINVAL, "%s: 'neighbors' is %s; expected an integer type (int32 or int64 ids)",
				path, type_name(t, tn, sizeof(tn)));
		goto out;
	}
	if (!dims[0] || !dims[1]) {
		rc = cv_err_set(e, -EINVAL, "%s: 'neighbors' is empty (%llu x %llu)", path,
				(unsigned long long) dims[0], (unsigned long long) dims[1]);
		goto out;
	}
	rc = data_check_size(path, (uint64_t) dims[0], (uint64_t) dims[1], e);
	if (rc)
		goto out;
	v = malloc((size_t) (dims[0] * dims[1]) * sizeof(*v));
	*ids = malloc((size_t) (dims[0] * dims[1]) * sizeof(**ids));
	if (!v || !*ids) {
		rc = cv_err_set(e, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	if (H5Dread(ds, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
		rc = cv_err_set(e, -EINVAL, "%s: cannot read 'neighbors' as integers", path);
		goto out;
	}
	for (size_t i = 0; i < (size_t) (dims[0] * dims[1]); i++) {
		if (v[i] < 0 || v[i] > INT32_MAX) {
			rc = cv_err_set(e, -EINVAL, "%s: 'neighbors' row %zu column %zu: %lld is not a vector id",
					path, i / (size_t) dims[1], i % (size_t) dims[1], v[i]);
			goto out;
		}
		(*ids)[i] = (int32_t) v[i];
	}
	*nq = (size_t) dims[0];
	*k = (size_t) dims[1];
	rc = 0;
out:
	if (rc) {
		free(*ids);
		*ids = NULL;
	}
	free(v);
	if (t >= 0)
		H5Tclose(t);
	if (sp >= 0)
		H5Sclose(sp);
	if (ds >= 0)
		H5Dclose(ds);
	H5Fclose(f);
	return rc;
}

int data_load_hdf5(const char *spec, dsbuf *b, size_t *n, size_t *d, cv_err *e)
{
	hid_t f = H5I_INVALID_HID, ds = H5I_INVALID_HID, sp = H5I_INVALID_HID;
	hsize_t dims[2];
	char path[4096];
	const char *member;
	int rc, nd;

	if (split(spec, path, sizeof(path), &member))
		return cv_err_set(e, -EINVAL, "hdf5:%s: expected hdf5:PATH[:train|:test|:neighbors|:distances]",
				  spec);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if (access(path, R_OK))
		return cv_err_set(e, -errno, "%s: %s", path, strerror(errno));
	if (H5Fis_hdf5(path) <= 0) /* H5Fis_accessible from 1.12; Debian 12 has 1.10 */
		return cv_err_set(e, -EINVAL, "%s: not an HDF5 file", path);
	f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f < 0)
		return cv_err_set(e, -EINVAL, "%s: cannot open as HDF5", path);
	if (H5Lexists(f, member, H5P_DEFAULT) <= 0) {
		rc = cv_err_set(e, -EINVAL, "%s: no dataset '%s' (an ann-benchmarks file has train, test, "
				"neighbors, distances)", path, member);
		goto out;
	}
	ds = H5Dopen2(f, member, H5P_DEFAULT);
	sp = ds < 0 ? H5I_INVALID_HID : H5Dget_space(ds);
	nd = sp < 0 ? -1 : H5Sget_simple_extent_ndims(sp);
	if (ds < 0 || sp < 0 || nd != 2 || H5Sget_simple_extent_dims(sp, dims, NULL) != 2) {
		rc = cv_err_set(e, -EINVAL, "%s: '%s' is not a two-dimensional dataset", path, member);
		goto out;
	}
	{
		hid_t t = H5Dget_type(ds);
		H5T_class_t c = t < 0 ? H5T_NO_CLASS : H5Tget_class(t);

		if (t >= 0)
			H5Tclose(t);
		if (c != H5T_FLOAT && c != H5T_INTEGER) {
			rc = cv_err_set(e, -EINVAL, "%s: '%s' holds no numbers", path, member);
			goto out;
		}
	}
	rc = data_check_size(path, (uint64_t) dims[0], (uint64_t) dims[1], e);
	if (rc)
		goto out;
	if (!dims[0] || !dims[1]) {
		rc = cv_err_set(e, -EINVAL, "%s: '%s' is empty (%llu x %llu)", path, member,
				(unsigned long long) dims[0], (unsigned long long) dims[1]);
		goto out;
	}
	rc = dsbuf_reserve(b, (size_t) (dims[0] * dims[1]));
	if (rc)
		goto out;
	if (H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, b->data) < 0) {
		rc = cv_err_set(e, -EINVAL, "%s: cannot read '%s' as float32", path, member);
		goto out;
	}
	b->len = (size_t) (dims[0] * dims[1]);
	for (size_t i = 0; i < b->len; i++)
		if (!isfinite(b->data[i])) {
			rc = cv_err_set(e, -EINVAL, "%s: '%s' row %zu column %zu: value %s is not finite",
					path, member, i / (size_t) dims[1], i % (size_t) dims[1],
					isnan(b->data[i]) ? "NaN" : "Inf");
			goto out;
		}
	*n = (size_t) dims[0];
	*d = (size_t) dims[1];
	rc = 0;
out:
	if (sp >= 0)
		H5Sclose(sp);
	if (ds >= 0)
		H5Dclose(ds);
	if (f >= 0)
		H5Fclose(f);
	return rc;
}
#else
int data_load_hdf5(const char *spec, dsbuf *b, size_t *n, size_t *d, cv_err *e)
{
	char path[4096];
	const char *member;

	(void) b;
	(void) n;
	(void) d;
	if (split(spec, path, sizeof(path), &member))
		return cv_err_set(e, -EINVAL, "hdf5:%s: expected hdf5:PATH[:train|:test|:neighbors|:distances]",
				  spec);
	return cv_err_set(e, -ENOTSUP, "%s: this coldstudy was built without libhdf5 (libhdf5-dev)", path);
}

CV_API int cv_hdf5_describe(const char *spec, cv_hdf5_info *out, cv_err *e)
{
	memset(out, 0, sizeof(*out));
	return cv_err_set(e, -ENOTSUP, "%s: this coldstudy was built without libhdf5 (libhdf5-dev)", spec);
}

int data_hdf5_ids(const char *spec, int32_t **ids, size_t *nq, size_t *k, cv_err *e)
{
	*ids = NULL;
	(void) nq;
	(void) k;
	return cv_err_set(e, -ENOTSUP, "%s: this coldstudy was built without libhdf5 (libhdf5-dev)", spec);
}
#endif
