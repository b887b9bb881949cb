/*
 * cs.h - the few things every coldstudy part above the engine shares:
 * exit codes, the error struct that explains a failure to a user, file
 * reading with a size cap, SHA-256 in hex, RFC 3339 time, strict JSON
 * loading and the canonical JSON form that every hash is taken over.
 *
 * Error convention: functions return 0 on success or an exit code
 * (CS_EXIT_*) on failure, and fill the caller-owned cs_err with one
 * lowercase line that says what, where (file, line:column, JSON path or
 * byte offset) and why.
 */
#ifndef CS_H
#define CS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* Exit codes, for every verb (DESIGN.md). */
enum {
	CS_EXIT_OK = 0,
	CS_EXIT_INTERNAL = 1,
	CS_EXIT_USAGE = 2,
	CS_EXIT_REFUSED = 3,
	CS_EXIT_VERIFY = 4,
	CS_EXIT_BADINPUT = 5,
	CS_EXIT_FAILED = 6, /* the registered test failed (a holdout score against its plan) */
	CS_EXIT_UNFINISHED = 7, /* the registered test is not finished: the plan's holdout has no
				 * score of record (targets without a run, or interim scores only) */
};

#define CS_EXIT_MAX CS_EXIT_UNFINISHED

/*
 * What exit code c means, in the words every --help line and README's
 * "Exit codes" table begin with ("refused", "bad input", ...); NULL past
 * CS_EXIT_MAX. The one table of exit codes: the CLI's help is made from it.
 */
const char *cs_exit_meaning(int c);

/*
 * The exit code of an engine's negative errno: 0 ok, EBADMSG 4 (damage),
 * input errors 5 (EINVAL, EOVERFLOW, ENOENT, EISDIR, ENOTDIR, EFBIG,
 * ERANGE), EPERM and EACCES 3, else 1.
 */
int cs_exit_from_errno(int rc);

#define CS_ERR_MAX 1024

/* One failure, explained. Caller-owned; cs_err_set overwrites. */
typedef struct cs_err {
	int code;            /* CS_EXIT_* */
	char msg[CS_ERR_MAX]; /* one line, no trailing newline */
} cs_err;

/* Set e (may be NULL) to code and a printf-style message; returns code. */
int cs_err_set(cs_err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Read a whole file of at most cap bytes into *buf (NUL-terminated, caller frees). */
int cs_read_file(const char *path, size_t cap, char **buf, size_t *len, cs_err *e);

/*
 * The number after key on the first line of a /proc-style file that starts
 * with key ("RssAnon:" in /proc/self/status; "thp_fault_fallback " in
 * /proc/vmstat, the space keeping its _charge line out); -1 when the file
 * cannot be read or has no such line.
 */
long cs_proc_field(const char *path, const char *key);

/* SHA-256 of p[0..n) through OpenSSL EVP; out gets 32 bytes. */
void cs_sha256(const void *p, size_t n, unsigned char out[32]);

/* Lowercase hex of p[0..n) into out (2n+1 bytes). */
void cs_hex(const unsigned char *p, size_t n, char *out);

/* SHA-256 of p[0..n) as 64 lowercase hex digits + NUL. */
void cs_sha256_hex(const void *p, size_t n, char out[65]);

/* Current UTC time in microseconds since the epoch (CLOCK_REALTIME). */
int64_t cs_now_us(void);

/* Format usec-since-epoch as RFC 3339 UTC with microseconds: 2026-10-29T05:24:30.123456Z. */
void cs_format_rfc3339(int64_t us, char out[32]);

/* Parse what cs_format_rfc3339 writes; returns 0 or -1. */
int cs_parse_rfc3339(const char *s, int64_t *us);

/* Monotonic clock in nanoseconds. */
uint64_t cs_mono_ns(void);

/*
 * The project's one percentile definition: the q-quantile (q in [0,1]) of
 * sorted[0..n) by linear interpolation between the closest ranks
 * (numpy's default, Hyndman & Fan type 7): pos = q (n - 1), the value at
 * floor(pos) plus that fraction of the step to the next. NaN when n is 0.
 * Run records, index query, reports and the hold-out statistics use it.
 */
double cs_quantile(const double *sorted, size_t n, double q);

/*
 * d for a person, exactly: the shortest text that reads back as d, in
 * plain notation from 1e-4 to 1e15 ("200", "0.0125", "1234567"), else
 * with an exponent ("1.5e-07"). Not for hashing (cs_json_canonical is).
 */
#define CS_NUM_MAX 40
const char *cs_num_text(double d, char out[CS_NUM_MAX]);

/*
 * Load a JSON document strictly: at most cap bytes, valid UTF-8, no
 * duplicate keys, no trailing garbage, an object at the top. On failure
 * the message names the file and line:column. Returns a new reference.
 */
int cs_json_load_file(const char *path, size_t cap, json_t **out, cs_err *e);
int cs_json_load_buf(const char *buf, size_t len, const char *name, json_t **out, cs_err *e);

/*
 * The canonical form: keys sorted, no insignificant space, UTF-8 (not
 * \u-escaped), numbers printed so they round-trip. *out is NUL-terminated,
 * caller frees.
 */
int cs_json_canonical(const json_t *v, char **out, size_t *len, cs_err *e);

/* 1 if the JSON array a (NULL or not an array: none) holds the string s. */
int cs_json_has_string(const json_t *a, const char *s);
/* 1 if the NULL-terminated list (NULL: empty) holds s. */
int cs_in_list(const char *const *list, const char *s);

/* Write buf to path atomically (temp file, fsync, rename, fsync dir) with mode. */
int cs_write_file_atomic(const char *path, const void *buf, size_t len, unsigned mode, cs_err *e);

/*
 * cs_write_file_atomic beneath a directory descriptor: name (one component)
 * in dirfd, the temporary file created there with O_EXCL|O_NOFOLLOW and
 * renamed over name (a link at name is replaced, never followed). shown
 * names the file in messages.
 */
int cs_write_file_atomic_at(int dirfd, const char *name, const char *shown, const void *buf,
			    size_t len, unsigned mode, cs_err *e);

/* The first line of a small file (sysfs, proc) into buf, trimmed; 0 or -errno. */
int cs_read_line(const char *path, char *buf, size_t cap);

#endif
