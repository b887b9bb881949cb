/*
 * verify.c - recomputing the ledger: one pass over every record that
 * checks seq continuity, strictly increasing ts, the prev link, the record
 * hash and builds the RFC 6962 root; then every raw blob against its hash
 * and every run record's "raw" references against the blobs present; then,
 * given a saved checkpoint, that the log still extends it. Frozen copies
 * of registered files (DIR/frozen/) are checked against the file_sha256
 * their records hold.
 *
 * The pass is one prepared SELECT in seq order, one reusable EVP context,
 * and a compact range of O(log n) subtree hashes for the root, so a
 * million records verify in seconds without holding the leaves. Leaves
 * are kept only when a checkpoint asks for a consistency proof.
 *
 * What verify can and cannot see: a changed byte, a swapped payload, a
 * deleted row in the middle, a changed timestamp break the chain at the
 * first bad seq. Deleting the tail, or rewriting everything and
 * recomputing every hash, leaves a valid chain: only a checkpoint saved
 * earlier (size + root) catches that, as in Certificate Transparency.
 *
 * A signed study (signed.c) must also have a checkpoint signed by its key
 * that covers every record, and the signed roots at the signed sizes: so
 * records appended with raw SQL (a correct chain, no key) and a log
 * rewritten below a signed size are caught without a checkpoint saved
 * elsewhere. Every payload is checked against its kind's schema (schema.c).
 *
 * Error convention: 0, or CS_EXIT_VERIFY naming the first bad seq (or the
 * checkpoint), or another CS_EXIT_* with the caller's cs_err filled.
 */
#include "ledger_int.h"

#include <stdlib.h>
#include <string.h>

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
 * Every raw blob a run record names in its "raw" object must be present
 * (a deleted blob would otherwise go unnoticed: its hash is still in the
 * record, which verifies). Returns 0 or CS_EXIT_VERIFY naming the seq.
 */
static int verify_raw_refs(ledger *l, cs_err *e)
{
	sqlite3_stmt *st = NULL;
	int s, rc = 0;

	if (sqlite3_prepare_v2(l->db,
			       "SELECT r.seq, j.key, j.value FROM records r, json_each(r.payload, '$.raw') j"
			       " WHERE r.kind = 'run' AND json_valid(r.payload) AND j.type = 'text'"
			       " AND NOT EXISTS (SELECT 1 FROM raw WHERE raw.sha = j.value)"
			       " ORDER BY r.seq LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return lg_sqlerr(l, e, "cannot check raw references");
	s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		rc = cs_err_set(e, CS_EXIT_VERIFY,
				"%s/ledger.db: seq %lld: raw blob %s (%s) named by the run is missing",
				l->dir, (long long) sqlite3_column_int64(st, 0),
				(const char *) sqlite3_column_text(st, 2),
				(const char *) sqlite3_column_text(st, 1));
	else if (s != SQLITE_DONE)
		rc = lg_sqlerr(l, e, "cannot check raw references");
	sqlite3_finalize(st);
	return rc;
}

/*
 * Every frozen copy named by a hypothesis or amendment record must exist
 * and hash to the file_sha256 of a record that names it (two files with
 * the same canonical form share a frozen name; the first copy is kept).
 */
static int verify_frozen(ledger *l, cs_err *e)
{
	sqlite3_stmt *st = NULL;
	int s, rc = 0;

	if (sqlite3_prepare_v2(l->db,
			       "SELECT json_extract(payload, '$.frozen'), min(seq),"
			       " group_concat(json_extract(payload, '$.file_sha256'), ' ')"
			       " FROM records WHERE kind IN ('hypothesis', 'amendment')"
			       " AND json_valid(payload) AND json_type(payload, '$.frozen') = 'text'"
			       " GROUP BY 1 ORDER BY 2",
			       -1, &st, NULL) != SQLITE_OK)
		return lg_sqlerr(l, e, "cannot list frozen copies");
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		const char *rel = (const char *) sqlite3_column_text(st, 0);
		const char *shas = (const char *) sqlite3_column_text(st, 2);
		char path[4096], got[65], *buf = NULL;
		size_t len = 0;
		cs_err fe = {0};

		if (!rel || strstr(rel, "..") || rel[0] == '/') {
			rc = cs_err_set(e, CS_EXIT_VERIFY, "%s/ledger.db: seq %lld: bad frozen path",
					l->dir, (long long) sqlite3_column_int64(st, 1));
			break;
		}
		snprintf(path, sizeof(path), "%s/%s", l->dir, rel);
		if (cs_read_file(path, LG_PAYLOAD_MAX, &buf, &len, &fe)) {
			rc = cs_err_set(e, CS_EXIT_VERIFY, "%s: frozen copy of seq %lld is missing or "
					"unreadable", path, (long long) sqlite3_column_int64(st, 1));
			break;
		}
		cs_sha256_hex(buf, len, got);
		free(buf);
		if (!shas || !strstr(shas, got)) {
			rc = cs_err_set(e, CS_EXIT_VERIFY,
					"%s: frozen copy of seq %lld was changed (it hashes to %.12s...)",
					path, (long long) sqlite3_column_int64(st, 1), got);
			break;
		}
	}
	if (!rc && s != SQLITE_DONE && s != SQLITE_ROW)
		rc = lg_sqlerr(l, e, "cannot list frozen copies");
	sqlite3_finalize(st);
	return rc;
}

/* Check every raw blob's body against its SHA-256 name. */
static int verify_raw(ledger *l, int64_t *count, cs_err *e)
{
	sqlite3_stmt *st = NULL;
	char got[65];
	int s, rc = 0;

	*count = 0;
	if (sqlite3_prepare_v2(l->db, "SELECT sha, body FROM raw ORDER BY sha", -1, &st, NULL) !=
	    SQLITE_OK)
		return lg_sqlerr(l, e, "cannot read raw blobs");
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		const char *sha = (const char *) sqlite3_column_text(st, 0);

		cs_sha256_hex(sqlite3_column_blob(st, 1), (size_t) sqlite3_column_bytes(st, 1), got);
		if (!sha || strcmp(sha, got)) {
			rc = cs_err_set(e, CS_EXIT_VERIFY,
					"%s/ledger.db: raw blob %s: its content hashes to %s "
					"(changed after it was stored)",
					l->dir, sha ? sha : "(null)", got);
			goto out;
		}
		(*count)++;
	}
	if (s != SQLITE_DONE)
		rc = lg_sqlerr(l, e, "cannot read raw blobs");
out:
	sqlite3_finalize(st);
	return rc;
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

int ledger_verify_ex(ledger *l, const char *checkpoint_text, ledger_verify_info *info, cs_err *e)
{
	return ledger_verify_pinned(l, checkpoint_text, NULL, info, e);
}

int ledger_verify_pinned(ledger *l, const char *checkpoint_text, const char *vkey,
			 ledger_verify_info *info, cs_err *e)
{
	lg_walk w = {0};
	lg_signed_set sigs;
	lg_range range;
	ledger_tree_head cp;
	unsigned char leaf[32], cp_root[32];
	unsigned char(*proof)[32] = NULL;
	char hx[65], hy[65], why[256];
	int64_t raw_count = 0;
	size_t plen = 0;
	int s, rc = 0, have_cp = 0;

	range.n = 0;
	range.top = 0;
	if (checkpoint_text) {
		rc = ledger_checkpoint_parse(checkpoint_text, strlen(checkpoint_text), "checkpoint",
					     &cp, e);
		if (rc)
			return rc;
		have_cp = 1;
		/* a signature by the study's key on a given checkpoint must hold (others are ignored) */
		if (l->keyed) {
			size_t tl;
			int r = lg_note_open(checkpoint_text, strlen(checkpoint_text), &l->vkey, &tl,
					     why, sizeof(why));

			if (r < 0 && strstr(checkpoint_text, "\n\n"))
				return cs_err_set(e, CS_EXIT_VERIFY, "checkpoint: %s", why);
		}
	}
	if (sqlite3_exec(l->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		rc = lg_sqlerr(l, e, "cannot start a read");
		goto out_nocommit;
	}
	if ((rc = lg_signed_load(l, vkey, &sigs, e)) || (rc = lg_walk_begin(l, &w, -1, e)))
		goto out;
	while ((s = lg_walk_next(l, &w, e)) == 1) {
		if (lg_payload_check(w.kind, w.payload, w.plen, why, sizeof(why))) {
			rc = cs_err_set(e, CS_EXIT_VERIFY, "%s/ledger.db: seq %lld: %s payload: %s",
					l->dir, (long long) w.seq, w.kind, why);
			goto out;
		}
		lg_leaf(&l->sha, w.hash, leaf);
		lg_range_push(&range, &l->sha, leaf);
		if (have_cp && w.seq == cp.size)
			lg_range_root(&range, &l->sha, cp_root);
		lg_signed_observe(&sigs, w.seq, &range, &l->sha);
	}
	if (s < 0) {
		rc = e->code;
		goto out;
	}
	lg_walk_end(&w);
	rc = verify_raw(l, &raw_count, e);
	if (!rc)
		rc = verify_raw_refs(l, e);
	if (!rc)
		rc = verify_frozen(l, e);
	if (!rc)
		rc = lg_signed_judge(l, &sigs, w.expect - 1, e);
	if (rc)
		goto out;
	if (have_cp) {
		int64_t n = w.expect - 1;

		if (cp.size > n) {
			rc = cs_err_set(e, CS_EXIT_VERIFY,
					"%s/ledger.db: the log has %lld records but checkpoint '%s' "
					"has size %lld: records were removed (truncated tail)",
					l->dir, (long long) n, cp.origin, (long long) cp.size);
			goto out;
		}
		if (cp.size == 0)
			memcpy(cp_root, lg_empty_root, 32);
		if (memcmp(cp_root, cp.root, 32)) {
			cs_hex(cp_root, 32, hx);
			cs_hex(cp.root, 32, hy);
			rc = cs_err_set(e, CS_EXIT_VERIFY,
					"%s/ledger.db: the log no longer extends checkpoint '%s' size "
					"%lld: root at that size is %s, checkpoint says %s",
					l->dir, cp.origin, (long long) cp.size, hx, hy);
			goto out;
		}
		/*
		 * The same check as a verifier without the database would make it:
		 * a consistency proof from the checkpoint to the current head,
		 * built from the leaves (read again: the pass above keeps none).
		 */
		if (cp.size > 0 && cp.size < n) {
			unsigned char head[32];
			unsigned char(*all)[32] = NULL;

			lg_range_root(&range, &l->sha, head);
			rc = lg_load_leaves(l, n, &all, e);
			if (rc)
				goto out;
			if (merkle_consistency_proof((const unsigned char(*)[32]) all, (size_t) n,
						     (size_t) cp.size, &proof, &plen) ||
			    !merkle_verify_consistency((size_t) cp.size, (size_t) n, cp.root, head,
						       (const unsigned char(*)[32]) proof, plen)) {
				free(all);
				rc = cs_err_set(e, CS_EXIT_VERIFY,
						"%s/ledger.db: no valid consistency proof from "
						"checkpoint '%s' size %lld to size %lld",
						l->dir, cp.origin, (long long) cp.size, (long long) n);
				goto out;
			}
			free(all);
		}
	}
	if (info) {
		info->size = w.expect - 1;
		lg_range_root(&range, &l->sha, info->root);
		info->raw_blobs = raw_count;
		info->checkpoint_size = have_cp ? cp.size : -1;
		info->keyed = sigs.keyed;
		info->signed_size = sigs.keyed ? sigs.signed_size : -1;
	}
out:
	lg_walk_end(&w);
	sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL);
out_nocommit:
	free(proof);
	return rc;
}

int ledger_verify(ledger *l, const char *checkpoint_text, cs_err *e)
{
	return ledger_verify_ex(l, checkpoint_text, NULL, e);
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
