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
#endif
