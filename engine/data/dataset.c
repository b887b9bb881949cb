/*
 * dataset.c - datasets by spec string: the prefix picks a loader, an
 * optional [A:B] suffix picks rows, and the result is hashed.
 *
 * A loader fills a dsbuf with the whole source; the row range is cut out
 * afterwards (a copy), so a range never changes how a file is checked:
 * a corrupt row past B is still refused.
 */
#include "data.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

void cv_dataset_free(cv_dataset *ds)
{
	if (!ds)
		return;
	free(ds->data);
	free(ds);
}

int data_make(const char *spec, float *data, size_t n, size_t d, cv_dataset **out)
{
	cv_dataset *ds = calloc(1, sizeof(*ds));

	if (!ds)
		return -ENOMEM;
	ds->n = n;
	ds->d = d;
	ds->data = data;
	snprintf(ds->spec, sizeof(ds->spec), "%s", spec);
	data_hash(n, d, data, ds->sha256);
	*out = ds;
	return 0;
}

/* The content hash in hex. */
CV_API void cv_dataset_hash_hex(const cv_dataset *ds, char out[65])
{
	static const char hx[] = "0123456789abcdef";

	for (int i = 0; i < 32; i++) {
		out[2 * i] = hx[ds->sha256[i] >> 4];
		out[2 * i + 1] = hx[ds->sha256[i] & 15];
	}
	out[64] = 0;
}

/* A copy of rows [first, first+count) of src; -EINVAL if out of range. */
CV_API int cv_dataset_slice(const cv_dataset *src, size_t first, size_t count, cv_dataset **out)
{
	char spec[sizeof(src->spec)];
	float *data;
	int rc;

	if (!src || count == 0 || first > src->n || count > src->n - first)
		return -EINVAL;
	data = aligned_alloc(64, (count * src->d * sizeof(float) + 63) & ~(size_t) 63);
	if (!data)
		return -ENOMEM;
	memcpy(data, src->data + first * src->d, count * src->d * sizeof(float));
	if (snprintf(spec, sizeof(spec), "%s[%zu:%zu]", src->spec, first, first + count) >= (int) sizeof(spec))
		memcpy(spec, src->spec, sizeof(spec)); /* too long to say which rows */
	rc = data_make(spec, data, count, src->d, out);
	if (rc)
		free(data);
	return rc;
}

/*
 * Split a trailing "[A:B]" off spec: *base_len is the length before it,
 * *a and *b the bounds (*b SIZE_MAX when left out). 0 if there is none,
 * 1 if there is one, -EINVAL if it is malformed.
 */
static int parse_range(const char *spec, size_t *base_len, size_t *a, size_t *b)
{
	size_t len = strlen(spec);
	const char *open, *colon;
	char *end;

	if (len < 3 || spec[len - 1] != ']' || !(open = strrchr(spec, '[')))
		return 0;
	colon = strchr(open, ':');
	if (!colon || colon > spec + len - 1)
		return -EINVAL;
	*a = 0;
	*b = SIZE_MAX;
	for (const char *p = open + 1; p < spec + len - 1; p++)
		if (p != colon && (*p < '0' || *p > '9'))
			return -EINVAL;
	if (colon > open + 1) {
		*a = (size_t) strtoull(open + 1, &end, 10);
		if (end != colon)
			return -EINVAL;
	}
	if (colon + 1 < spec + len - 1) {
		*b = (size_t) strtoull(colon + 1, &end, 10);
		if (end != spec + len - 1)
			return -EINVAL;
	}
	*base_len = (size_t) (open - spec);
	return 1;
}

/* fashion-mnist[:train|:test]: the IDX images of the Debian package. */
static int load_fmnist(const char *which, dsbuf *b, size_t *n, size_t *d, cv_err *e)
{
	const char *dir = getenv("COLDSTUDY_FASHION_MNIST");
	char path[512];
	int test, rc;

	if (!*which || !strcmp(which, ":train"))
		test = 0;
	else if (!strcmp(which, ":test"))
		test = 1;
	else
		return cv_err_set(e, -EINVAL, "fashion-mnist%s: unknown split (fashion-mnist, fashion-mnist:train or fashion-mnist:test)",
				  which);
	if (!dir || !*dir)
		dir = FMNIST_DIR;
	snprintf(path, sizeof(path), "%s/%s-images-idx3-ubyte.gz", dir, test ? "t10k" : "train");
	rc = data_load_idx(path, b, n, d, e);
	if (rc == -ENOENT)
		return cv_err_set(e, rc, "%s: not found (install the Debian package dataset-fashion-mnist)",
				  path);
	if (rc)
		return rc;
	if (*d != 784 || *n != (test ? 10000u : 60000u))
		return cv_err_set(e, -EINVAL, "%s: %zu x %zu images, expected %u x 784", path, *n, *d,
				  test ? 10000u : 60000u);
	return 0;
}

/* Load a dataset by spec string (see cv_data.h). */
CV_API int cv_dataset_load(const char *spec, cv_dataset **out, cv_err *e)
{
	char base[sizeof(((cv_dataset *) 0)->spec)];
	size_t blen = 0, a = 0, bnd = SIZE_MAX, n = 0, d = 0;
	dsbuf buf = {0};
	int rc, ranged;

	*out = NULL;
	if (e)
		e->msg[0] = 0;
	if (!spec || strlen(spec) >= sizeof(base))
		return cv_err_set(e, -EINVAL, "dataset spec missing or longer than %zu characters",
				  sizeof(base) - 1);
	ranged = parse_range(spec, &blen, &a, &bnd);
	if (ranged < 0)
		return cv_err_set(e, -EINVAL, "%s: malformed row range (expected [A:B], e.g. [0:100])", spec);
	if (!ranged)
		blen = strlen(spec);
	memcpy(base, spec, blen);
	base[blen] = 0;

	if (!strncmp(base, "fashion-mnist", 13))
		rc = load_fmnist(base + 13, &buf, &n, &d, e);
	else if (!strncmp(base, "fvecs:", 6))
		rc = data_load_vecs(base + 6, 'f', &buf, &n, &d, e);
	else if (!strncmp(base, "ivecs:", 6))
		rc = data_load_vecs(base + 6, 'i', &buf, &n, &d, e);
	else if (!strncmp(base, "bvecs:", 6))
		rc = data_load_vecs(base + 6, 'b', &buf, &n, &d, e);
	else if (!strncmp(base, "idx:", 4))
		rc = data_load_idx(base + 4, &buf, &n, &d, e);
	else if (!strncmp(base, "npy:", 4))
		rc = data_load_npy(base + 4, &buf, &n, &d, e);
	else if (!strncmp(base, "hdf5:", 5))
		rc = data_load_hdf5(base + 5, &buf, &n, &d, e);
	else if (!strncmp(base, "synth:", 6))
		rc = data_load_synth(base + 6, &buf, &n, &d, e);
	else
		rc = cv_err_set(e, -EINVAL, "%s: unknown dataset spec (fashion-mnist[:train|:test], fvecs:, ivecs:, bvecs:, idx:, npy:PATH, hdf5:PATH[:train|:test|:neighbors], synth:n=N,d=D,...)",
				spec);
	if (rc == -EOVERFLOW && e && !e->msg[0])
		cv_err_set(e, rc, "%s: dataset larger than the cap of %zu values", spec,
			   (size_t) CV_DATA_MAX_VALUES);
	else if (rc == -ENOMEM)
		cv_err_set(e, rc, "%s: out of memory", spec);
	if (rc)
		goto out;
	if (ranged) {
		if (bnd == SIZE_MAX)
			bnd = n;
		if (a >= bnd || bnd > n) {
			rc = cv_err_set(e, -EINVAL, "%s: row range [%zu:%zu] is empty or past the %zu rows",
					spec, a, bnd, n);
			goto out;
		}
		if (a > 0)
			memmove(buf.data, buf.data + a * d, (bnd - a) * d * sizeof(float));
		n = bnd - a;
	}
	rc = data_make(spec, buf.data, n, d, out);
	if (!rc)
		buf.data = NULL;
out:
	free(buf.data);
	return rc;
}

/*
 * The spec with its file's path made absolute and resolved (realpath):
 * what an index keeps in DIR/DATA, so it means the same file from any
 * directory. Specs without a path (fashion-mnist, synth:) come back as
 * they are; a member (hdf5's :test) and a row range are kept.
 */
CV_API int cv_dataset_spec_resolve(const char *spec, char *out, size_t cap, cv_err *e)
{
	static const char *const prefixes[] = {"fvecs:", "ivecs:", "bvecs:", "idx:", "npy:", "hdf5:", NULL};
	static const char *const members[] = {":train", ":test", ":neighbors", ":distances", NULL};
	char path[4096], *real;
	const char *prefix = NULL, *tail;
	size_t blen = 0, a, b, plen, tlen;
	int ranged, n;

	ranged = parse_range(spec, &blen, &a, &b);
	if (ranged < 0)
		return cv_err_set(e, -EINVAL, "%s: malformed row range (expected [A:B], e.g. [0:100])", spec);
	if (!ranged)
		blen = strlen(spec);
	for (size_t i = 0; prefixes[i] && !prefix; i++)
		if (!strncmp(spec, prefixes[i], strlen(prefixes[i])))
			prefix = prefixes[i];
	if (!prefix) {
		if (strlen(spec) >= cap)
			return cv_err_set(e, -ENAMETOOLONG, "%s: spec too long", spec);
		memcpy(out, spec, strlen(spec) + 1);
		return 0;
	}
	plen = strlen(prefix);
	/* the path runs to the range, less an hdf5 member */
	tail = spec + blen;
	if (!strcmp(prefix, "hdf5:"))
		for (size_t i = 0; members[i]; i++) {
			size_t ml = strlen(members[i]);

			if (blen - plen > ml && !strncmp(spec + blen - ml, members[i], ml)) {
				tail = spec + blen - ml;
				break;
			}
		}
	tlen = (size_t) (tail - spec) - plen;
	if (tlen == 0 || tlen >= sizeof(path))
		return cv_err_set(e, -EINVAL, "%s: no path, or a path too long", spec);
	memcpy(path, spec + plen, tlen);
	path[tlen] = '\0';
	real = realpath(path, NULL);
	if (!real)
		return cv_err_set(e, -errno, "%s: %s", path, strerror(errno));
	n = snprintf(out, cap, "%s%s%s", prefix, real, tail);
	free(real);
	if (n < 0 || (size_t) n >= cap)
		return cv_err_set(e, -ENAMETOOLONG, "%s: the resolved spec is longer than %zu characters",
				  spec, cap - 1);
	return 0;
}
