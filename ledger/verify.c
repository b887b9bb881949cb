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
