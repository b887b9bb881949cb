/*
 * frozen.c - frozen copies of registered files (DIR/frozen/) and what a
 * killed writer leaves behind.
 *
 * A frozen copy is named by the SHA-256 of the file's own bytes:
 * frozen/<id>-<file sha256, 64 hex>.json, mode 0444, written atomically
 * (temporary file, fsync, rename). So a copy left by a writer killed
 * before its commit (an orphan) can only ever have the name of a file
 * with exactly those bytes: a later record that names it names the right
 * bytes, and registering the same hypothesis from a differently
 * formatted file makes another name. (The copies of older studies were
 * named by the canonical document's hash, <id>-<sha8>.json; their records
 * keep naming them.)
 *
 * Sweeping (first freeze of a transaction, under the write lock, so no
 * other writer is between writing a copy and committing it): temporary
 * files (*.tmp.<pid>) in DIR and DIR/frozen/, and frozen copies named
 * <id>-<64 hex>.json that no record names (in its "frozen" member), are
 * removed. They can only be leftovers of a writer that
 * died.
 *
 * Signals: ledger_signals_hold blocks SIGINT, SIGTERM and SIGHUP around a
 * short critical section (freeze + append + commit); a signal that arrives
 * meanwhile is delivered at ledger_signals_release, after the commit or
 * the rollback. So Ctrl-C leaves the study as a SIGKILL before or after
 * the commit would: all of the transaction or none, never half of it.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 */
#include "ledger_int.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static sigset_t held_old;
static int held;

void ledger_signals_hold(void)
{
	sigset_t s;

	if (held++)
		return;
	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGHUP);
	sigprocmask(SIG_BLOCK, &s, &held_old);
}

void ledger_signals_release(void)
{
	if (!held || --held)
		return;
	sigprocmask(SIG_SETMASK, &held_old, NULL);
}

/* Is name a temporary file of cs_write_file_atomic ("<name>.tmp.<digits>")? */
static int is_tmp(const char *name)
{
	const char *p = strstr(name, ".tmp.");

	if (!p || !p[5])
		return 0;
	for (p += 5; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return 1;
}

/* Remove temporary leftovers in path (a directory). */
static void sweep_tmp(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (is_tmp(de->d_name))
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

/* Is "frozen/<name>" named by a hypothesis or amendment record? 1, 0, -1 error. */
static int named(ledger *l, sqlite3_stmt *st, const char *name)
{
	char rel[512];
	int s;

	snprintf(rel, sizeof(rel), "frozen/%s", name);
	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, rel, -1, SQLITE_TRANSIENT);
	s = sqlite3_step(st);
	(void) l;
	return s == SQLITE_ROW ? 1 : s == SQLITE_DONE ? 0 : -1;
}

int ledger_sweep(ledger *l, cs_err *e)
{
	char path[4096];
	sqlite3_stmt *st = NULL;
	struct dirent *de;
	DIR *d;

	if (!l->in_tx)
		return cs_err_set(e, CS_EXIT_INTERNAL, "ledger_sweep outside a transaction");
	if (l->swept)
		return 0;
	l->swept = 1;
	sweep_tmp(l->dir);
	snprintf(path, sizeof(path), "%s/frozen", l->dir);
	sweep_tmp(path);
	if (sqlite3_prepare_v2(l->db,
			       "SELECT 1 FROM records WHERE json_valid(payload)"
			       " AND json_extract(payload, '$.frozen') = ?1 LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return lg_sqlerr(l, e, "cannot list frozen copies");
	d = opendir(path);
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		/* only this code's names, <id>-<64 hex>.json: older names are left alone */
		if (n < 71 || strcmp(de->d_name + n - 5, ".json") || de->d_name[n - 70] != '-' ||
		    strspn(de->d_name + n - 69, "0123456789abcdef") != 64 || de->d_type == DT_DIR)
			continue;
		if (named(l, st, de->d_name) == 0)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	if (d)
		closedir(d);
	sqlite3_finalize(st);
	return 0;
}

int ledger_freeze(ledger *l, const char *id, const void *bytes, size_t len, char *rel,
		  size_t cap, cs_err *e)
{
	char sha[65], *path = NULL;
	size_t n;
	struct stat st;
	int rc;

	if (!l->in_tx)
		return cs_err_set(e, CS_EXIT_INTERNAL, "ledger_freeze outside a transaction");
	if (!id[0] || strchr(id, '/') || id[0] == '.')
		return cs_err_set(e, CS_EXIT_BADINPUT, "id '%s' cannot name a frozen copy", id);
	if ((rc = ledger_sweep(l, e)))
		return rc;
	cs_sha256_hex(bytes, len, sha);
	if (snprintf(rel, cap, "frozen/%s-%s.json", id, sha) >= (int) cap)
		return cs_err_set(e, CS_EXIT_BADINPUT, "id '%s' is too long for a frozen name", id);
	n = strlen(l->dir) + strlen(rel) + 2;
	path = malloc(n);
	if (!path)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	snprintf(path, n, "%s/%s", l->dir, rel);
	/* the name is the content's hash: an existing copy is these bytes (verify checks it) */
	rc = stat(path, &st) == 0 && S_ISREG(st.st_mode) && (size_t) st.st_size == len
		     ? 0
		     : cs_write_file_atomic(path, bytes, len, 0444, e);
	free(path);
	return rc;
}
