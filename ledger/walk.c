/*
 * walk.c - the records in seq order, each hash recomputed: the canonical
 * bytes of a record, the walker every answer about the records goes
 * through (verify, checkpoints, proofs, export, signing), the leaf hashes
 * and the root at a size. It uses the Merkle code (merkle.c) and SQLite and
 * no other file of the ledger, so the store, the signer, the verifier and
 * the proofs can all stand on it.
 *
 * Error convention: 0, or CS_EXIT_VERIFY naming the first bad seq, or
 * another CS_EXIT_* with the caller's cs_err filled (lg_walk_next: 1, 0 at
 * the end, -1 with e filled).
 */
#include "ledger_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int lg_sqlerr(ledger *l, cs_err *e, const char *what)
{
	return cs_err_set(e, CS_EXIT_INTERNAL, "%s/ledger.db: %s: %s", l->dir, what,
			  sqlite3_errmsg(l->db));
}

size_t lg_record_bytes(char **buf, size_t *cap, int64_t seq, const char *ts, const char *kind,
		       const char *payload, size_t plen)
{
	size_t klen = strlen(kind), tlen = strlen(ts), need = klen + tlen + plen + 64;
	char num[24], *p;
	int nlen;

	if (need > *cap) {
		size_t nc = *cap ? *cap : 1024;
		char *nb;

		while (nc < need)
			nc *= 2;
		nb = realloc(*buf, nc);
		if (!nb)
			return 0;
		*buf = nb;
		*cap = nc;
	}
	nlen = snprintf(num, sizeof(num), "%lld", (long long) seq);
	p = *buf;
#define PUT(s, n)                      \
	do {                           \
		memcpy(p, (s), (n));   \
		p += (n);              \
	} while (0)
	PUT("{\"kind\":\"", 9);
	PUT(kind, klen);
	PUT("\",\"payload\":", 12);
	PUT(payload, plen);
	PUT(",\"seq\":", 7);
	PUT(num, (size_t) nlen);
	PUT(",\"ts\":\"", 7);
	PUT(ts, tlen);
	PUT("\"}", 2);
#undef PUT
	return (size_t) (p - *buf);
}

/* Fixed-format RFC 3339 check: YYYY-MM-DDTHH:MM:SS.ffffffZ (so memcmp orders them). */
static int ts_ok(const unsigned char *t, int n)
{
	static const char pat[] = "dddd-dd-ddTdd:dd:dd.ddddddZ";

	if (n != 27)
		return 0;
	for (int i = 0; i < 27; i++) {
		if (pat[i] == 'd') {
			if (t[i] < '0' || t[i] > '9')
				return 0;
		} else if (t[i] != (unsigned char) pat[i]) {
			return 0;
		}
	}
	return 1;
}

/* Same rule as the store: 1..31 characters of [a-z_]. */
static int kind_ok(const unsigned char *k, int n)
{
	if (n <= 0 || n > LG_KIND_MAX)
		return 0;
	for (int i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || k[i] == '_'))
			return 0;
	return 1;
}

/*
 * The walker: one prepared SELECT in seq order that recomputes each
 * record's hash from its bytes and the previous hash and refuses (exit 4)
 * the first record whose seq, ts, kind, prev link or stored hash is wrong.
 * Every answer the ledger gives about its records (verify, checkpoints,
 * proofs, export, signing) goes through it, so none is taken from the
 * stored hash column alone.
 */
int lg_walk_begin(ledger *l, lg_walk *w, int64_t limit, cs_err *e)
{
	memset(w, 0, sizeof(*w));
	w->expect = 1;
	w->limit = limit;
	if (sqlite3_prepare_v2(l->db,
			       "SELECT seq, ts, kind, payload, prev, hash FROM records"
			       " WHERE ?1 < 0 OR seq <= ?1 ORDER BY seq",
			       -1, &w->st, NULL) != SQLITE_OK)
		return lg_sqlerr(l, e, "cannot read records");
	sqlite3_bind_int64(w->st, 1, limit);
	return 0;
}

void lg_walk_end(lg_walk *w)
{
	sqlite3_finalize(w->st);
	w->st = NULL;
}

int lg_walk_next(ledger *l, lg_walk *w, cs_err *e)
{
	const unsigned char *ts, *kind;
	int tslen, klen, s;
	size_t rlen;
	int64_t seq;

	s = sqlite3_step(w->st);
	if (s == SQLITE_DONE)
		return 0;
	if (s != SQLITE_ROW) {
		lg_sqlerr(l, e, "cannot read records");
		return -1;
	}
	seq = sqlite3_column_int64(w->st, 0);
	ts = sqlite3_column_text(w->st, 1);
	tslen = sqlite3_column_bytes(w->st, 1);
	kind = sqlite3_column_text(w->st, 2);
	klen = sqlite3_column_bytes(w->st, 2);
	w->payload = (const char *) sqlite3_column_text(w->st, 3);
	w->plen = (size_t) sqlite3_column_bytes(w->st, 3);
	if (seq != w->expect) {
		cs_err_set(e, CS_EXIT_VERIFY,
			   "%s/ledger.db: seq %lld: missing (the next record is seq %lld)", l->dir,
			   (long long) w->expect, (long long) seq);
		return -1;
	}
	if (!ts || !ts_ok(ts, tslen)) {
		cs_err_set(e, CS_EXIT_VERIFY, "%s/ledger.db: seq %lld: malformed ts", l->dir,
			   (long long) seq);
		return -1;
	}
	if (seq > 1 && memcmp(ts, w->last_ts, 27) <= 0) {
		cs_err_set(e, CS_EXIT_VERIFY,
			   "%s/ledger.db: seq %lld: ts %.27s is not after seq %lld's %.27s", l->dir,
			   (long long) seq, (const char *) ts, (long long) seq - 1,
			   (const char *) w->last_ts);
		return -1;
	}
	memcpy(w->last_ts, ts, 27);
	if (!kind || !kind_ok(kind, klen) || !w->payload) {
		cs_err_set(e, CS_EXIT_VERIFY, "%s/ledger.db: seq %lld: malformed kind or payload",
			   l->dir, (long long) seq);
		return -1;
	}
	if (sqlite3_column_bytes(w->st, 4) != 32 ||
	    memcmp(sqlite3_column_blob(w->st, 4), w->hash, 32)) {
		cs_err_set(e, CS_EXIT_VERIFY,
			   "%s/ledger.db: seq %lld: prev is not the hash of seq %lld "
			   "(the chain is broken)",
			   l->dir, (long long) seq, (long long) seq - 1);
		return -1;
	}
	rlen = lg_record_bytes(&l->rec_buf, &l->rec_cap, seq, (const char *) ts,
			       (const char *) kind, w->payload, w->plen);
	if (!rlen) {
		cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		return -1;
	}
	memcpy(w->prev, w->hash, 32);
	lg_sha2(&l->sha, w->prev, 32, l->rec_buf, rlen, w->hash);
	if (sqlite3_column_bytes(w->st, 5) != 32 ||
	    memcmp(sqlite3_column_blob(w->st, 5), w->hash, 32)) {
		cs_err_set(e, CS_EXIT_VERIFY,
			   "%s/ledger.db: seq %lld: hash mismatch: the record (ts, kind "
			   "or payload) was changed after it was written",
			   l->dir, (long long) seq);
		return -1;
	}
	w->seq = seq;
	w->ts = (const char *) ts;
	w->kind = (const char *) kind;
	w->expect++;
	return 1;
}

int lg_load_leaves(ledger *l, int64_t n, unsigned char (**leaves)[32], cs_err *e)
{
	lg_walk w = {0};
	unsigned char(*lv)[32];
	int64_t i = 0;
	int s, rc = 0;

	*leaves = NULL;
	lv = malloc((size_t) (n > 0 ? n : 1) * 32);
	if (!lv)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory for %lld leaves", (long long) n);
	if ((rc = lg_walk_begin(l, &w, n, e)))
		goto out;
	while (i < n && (s = lg_walk_next(l, &w, e)) == 1)
		lg_leaf(&l->sha, w.hash, lv[i++]);
	if (i < n && s < 0) {
		rc = e->code;
		goto out;
	}
	if (i != n) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: the log has %lld records, not %lld", l->dir,
				(long long) i, (long long) n);
		goto out;
	}
	*leaves = lv;
	lv = NULL;
out:
	free(lv);
	lg_walk_end(&w);
	return rc;
}

int ledger_root(ledger *l, int64_t size, unsigned char root[32], cs_err *e)
{
	lg_walk w = {0};
	lg_range range;
	unsigned char leaf[32];
	int64_t i = 0;
	int s = 0, rc = 0;

	range.n = 0;
	range.top = 0;
	if (size < 0)
		return cs_err_set(e, CS_EXIT_USAGE, "tree size %lld is negative", (long long) size);
	if ((rc = lg_walk_begin(l, &w, size, e)))
		return rc;
	while (i < size && (s = lg_walk_next(l, &w, e)) == 1) {
		lg_leaf(&l->sha, w.hash, leaf);
		lg_range_push(&range, &l->sha, leaf);
		i++;
	}
	if (i < size && s < 0) {
		rc = e->code;
		goto out;
	}
	if (i != size) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: the log has %lld records, not %lld", l->dir,
				(long long) i, (long long) size);
		goto out;
	}
	lg_range_root(&range, &l->sha, root);
out:
	lg_walk_end(&w);
	return rc;
}
