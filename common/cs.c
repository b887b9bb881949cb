/*
 * cs.c - errors, files, hashes and clocks shared by the parts above the
 * engine. See cs.h for the conventions.
 */
#include "cs.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

const char *cs_exit_meaning(int c)
{
	static const char *const meaning[CS_EXIT_MAX + 1] = {
		[CS_EXIT_OK] = "ok",
		[CS_EXIT_INTERNAL] = "internal error",
		[CS_EXIT_USAGE] = "usage",
		[CS_EXIT_REFUSED] = "refused",
		[CS_EXIT_VERIFY] = "verification failed",
		[CS_EXIT_BADINPUT] = "bad input",
		[CS_EXIT_FAILED] = "the registered test failed",
		[CS_EXIT_UNFINISHED] = "the registered test is unfinished",
	};

	return c >= 0 && c <= CS_EXIT_MAX ? meaning[c] : NULL;
}

int cs_exit_from_errno(int rc)
{
	switch (-rc) {
	case 0: return CS_EXIT_OK;
	case EBADMSG: return CS_EXIT_VERIFY;
	case EINVAL:
	case EOVERFLOW:
	case ENOENT:
	case EISDIR:
	case ENOTDIR:
	case EFBIG:
	case ERANGE: return CS_EXIT_BADINPUT;
	case EPERM:
	case EACCES: return CS_EXIT_REFUSED;
	default: return CS_EXIT_INTERNAL;
	}
}

int cs_err_set(cs_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return code;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return code;
}

long cs_proc_field(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	size_t n = strlen(key);
	char line[256], *end;
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n)) {
			errno = 0;
			v = strtol(line + n, &end, 10);
			if (errno || end == line + n)
				v = -1;
			break;
		}
	fclose(f);
	return v;
}

int cs_read_file(const char *path, size_t cap, char **buf, size_t *len, cs_err *e)
{
	int fd, rc = CS_EXIT_INTERNAL;
	struct stat st;
	char *p = NULL;
	size_t got = 0;

	*buf = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: cannot open: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: cannot stat: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: not a regular file", path);
		goto out;
	}
	if ((uint64_t) st.st_size > cap) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: file is %lld bytes, over the cap of %zu",
				path, (long long) st.st_size, cap);
		goto out;
	}
	p = malloc((size_t) st.st_size + 1);
	if (!p) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: out of memory", path);
		goto out;
	}
	while (got < (size_t) st.st_size) {
		ssize_t r = read(fd, p + got, (size_t) st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: read failed at byte %zu", path, got);
			goto out;
		}
		got += (size_t) r;
	}
	p[got] = '\0';
	*buf = p;
	p = NULL;
	if (len)
		*len = got;
	rc = 0;
out:
	free(p);
	close(fd);
	return rc;
}

void cs_sha256(const void *p, size_t n, unsigned char out[32])
{
	unsigned int olen = 32;

	EVP_Digest(p, n, out, &olen, EVP_sha256(), NULL);
}

void cs_hex(const unsigned char *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

void cs_sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char md[32];

	cs_sha256(p, n, md);
	cs_hex(md, 32, out);
}

int64_t cs_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t cs_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

double cs_quantile(const double *sorted, size_t n, double q)
{
	double pos;
	size_t lo;

	if (!n)
		return NAN;
	if (!(q > 0))
		q = 0;
	if (q > 1)
		q = 1;
	pos = q * (double) (n - 1);
	lo = (size_t) pos;
	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + (pos - (double) lo) * (sorted[lo + 1] - sorted[lo]);
}

void cs_format_rfc3339(int64_t us, char out[32])
{
	time_t sec = (time_t) (us / 1000000);
	struct tm tm;

	char buf[64];

	gmtime_r(&sec, &tm);
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int) (us % 1000000));
	memcpy(out, buf, 31);
	out[31] = '\0';
}

int cs_parse_rfc3339(const char *s, int64_t *us)
{
	struct tm tm;
	int frac = 0, n = 0;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &frac, &n) != 7 ||
	    n != 27 || s[n] != '\0')
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*us = (int64_t) timegm(&tm) * 1000000 + frac;
	return 0;
}

int cs_write_file_atomic(const char *path, const void *buf, size_t len, unsigned mode, cs_err *e)
{
	char tmp[4096], dirbuf[4096];
	int fd, dfd, rc = CS_EXIT_INTERNAL;
	size_t off = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int) getpid()) >= (int) sizeof(tmp))
		return cs_err_set(e, CS_EXIT_USAGE, "%s: path too long", path);
	/* a new file: a link planted at the temporary name is removed, never written through */
	if (unlink(tmp) < 0 && errno != ENOENT)
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot replace: %s", tmp, strerror(errno));
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot create: %s", tmp, strerror(errno));
	while (off < len) {
		ssize_t w = write(fd, (const char *) buf + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: write failed: %s", tmp, strerror(errno));
			goto fail;
		}
		off += (size_t) w;
	}
	if (fchmod(fd, (mode_t) mode) < 0 || fsync(fd) < 0) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: fsync failed: %s", tmp, strerror(errno));
		goto fail;
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: rename failed: %s", path, strerror(errno));
		unlink(tmp);
		return rc;
	}
	snprintf(dirbuf, sizeof(dirbuf), "%s", path);
	dfd = open(dirname(dirbuf), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
fail:
	close(fd);
	unlink(tmp);
	return rc;
}

const char *cs_num_text(double d, char out[CS_NUM_MAX])
{
	double a = fabs(d);

	if (!isfinite(d)) {
		snprintf(out, CS_NUM_MAX, "%s", isnan(d) ? "nan" : d > 0 ? "inf" : "-inf");
		return out;
	}
	if (d == 0 || (a >= 1e-4 && a < 1e15)) {
		/* The fewest decimals that read back as d (17 significant digits at most). */
		for (int dec = 0; dec <= 20; dec++) {
			snprintf(out, CS_NUM_MAX, "%.*f", dec, d);
			if (strtod(out, NULL) == d)
				return out;
		}
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(out, CS_NUM_MAX, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			break;
	}
	return out;
}

int cs_read_line(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int cs_write_file_atomic_at(int dirfd, const char *name, const char *shown, const void *buf,
			    size_t len, unsigned mode, cs_err *e)
{
	char tmp[512];
	size_t off = 0;
	int fd;

	if (!*name || strchr(name, '/') ||
	    snprintf(tmp, sizeof(tmp), ".%s.tmp.%d", name, (int) getpid()) >= (int) sizeof(tmp))
		return cs_err_set(e, CS_EXIT_USAGE, "%s: not a file name", shown);
	/* a new file: a link planted at the temporary name is removed, never written through */
	if (unlinkat(dirfd, tmp, 0) < 0 && errno != ENOENT)
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot replace: %s", shown, strerror(errno));
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot create: %s", shown, strerror(errno));
	while (off < len) {
		ssize_t w = write(fd, (const char *) buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int err = errno;

			close(fd);
			unlinkat(dirfd, tmp, 0);
			return cs_err_set(e, CS_EXIT_INTERNAL, "%s: write failed: %s", shown,
					  strerror(err));
		}
		off += (size_t) w;
	}
	if (fchmod(fd, (mode_t) mode) < 0 || fsync(fd) < 0) {
		int err = errno;

		close(fd);
		unlinkat(dirfd, tmp, 0);
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: fsync failed: %s", shown, strerror(err));
	}
	close(fd);
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		int err = errno;

		unlinkat(dirfd, tmp, 0);
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: rename failed: %s", shown, strerror(err));
	}
	fsync(dirfd);
	return 0;
}
