/*
 * signed.c - the study's signed checkpoints: made at every commit that
 * appended, checked by `log verify`.
 *
 * A study made by `coldstudy init` has an Ed25519 key (DIR/signing.key,
 * mode 0600, the note signer-key text) and its verifier key in meta
 * ('vkey', named by the study's unique origin "coldstudy/<study id>").
 *
 * Signing (lg_sign_commit, inside the write transaction, before COMMIT):
 *  1. The head is computed from a compact range over every record. A
 *     process keeps its range between its own commits; otherwise (first
 *     commit, or another process appended since) it is rebuilt by walking
 *     every record and recomputing its hash, so a broken chain is never
 *     signed.
 *  2. Before signing, the newest signed checkpoint must cover exactly the
 *     records that were there when this transaction began (tx_base), with
 *     the root they have now. Records appended without the key, or a log
 *     rewritten below a signed size, are refused (exit 4) rather than
 *     signed over: nobody can launder records through a later command.
 *  3. The note is inserted into the `signed` table in the same transaction
 *     as the records, so a crash never leaves records without their
 *     signature, or a signature without its records; DIR/checkpoint gets a
 *     copy after the commit (publish_note, ledger.c).
 *
 * Verifying (lg_signed_*, called by ledger_verify_ex): the newest row of
 * `signed` and DIR/checkpoint must be signed by the study's key (or the key
 * the caller pinned), name the study's origin, lie within the log with the
 * root the log has at their size (else: rewritten below a signed size),
 * and the newer of the two must cover every record (else: appended
 * without the key). A copy in DIR/checkpoint older than the table (a crash
 * between commit and copy) is fine; one that is newer is not.
 *
 * Studies made before keys existed have no 'vkey': they are reported as
 * unsigned and checked as before.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 */
#include "ledger_int.h"

#include <stdlib.h>
#include <string.h>

#define KEY_FILE_MAX 4096

/* Read and check DIR/signing.key against the verifier key in meta. */
static int load_signer(ledger *l, cs_err *e)
{
	char path[4096], *buf = NULL;
	size_t len = 0;
	cs_err re = {0};
	int rc;

	snprintf(path, sizeof(path), "%s/signing.key", l->dir);
	if (cs_read_file(path, KEY_FILE_MAX, &buf, &len, &re))
		return cs_err_set(e, CS_EXIT_VERIFY,
				  "%s: cannot read the study's signing key (%s); records appended "
				  "without it would not verify, so nothing was written",
				  path, re.msg);
	rc = lg_signer_parse(buf, len, &l->signer);
	OPENSSL_cleanse(buf, len);
	free(buf);
	if (rc)
		return cs_err_set(e, CS_EXIT_VERIFY, "%s: not a note signer key", path);
	if (strcmp(l->signer->v.name, l->vkey.name) || l->signer->v.hash != l->vkey.hash ||
	    memcmp(l->signer->v.pub, l->vkey.pub, 32)) {
		lg_signer_free(l->signer);
		l->signer = NULL;
		return cs_err_set(e, CS_EXIT_VERIFY,
				  "%s: the key is not the study's (%s+%08x); nothing was written", path,
				  l->vkey.name, (unsigned) l->vkey.hash);
	}
	return 0;
}

/* Rebuild l->rng over every record (hashes recomputed); base_root = root at size base. */
static int rebuild_range(ledger *l, int64_t base, unsigned char base_root[32], cs_err *e)
{
	lg_walk w = {0};
	unsigned char leaf[32];
	int s, rc = 0;

	l->rng_valid = 0;
	l->rng.n = 0;
	l->rng.top = 0;
	memcpy(base_root, lg_empty_root, 32);
	if ((rc = lg_walk_begin(l, &w, -1, e)))
		return rc;
	while ((s = lg_walk_next(l, &w, e)) == 1) {
		lg_leaf(&l->sha, w.hash, leaf);
		lg_range_push(&l->rng, &l->sha, leaf);
		if (w.seq == base)
			lg_range_root(&l->rng, &l->sha, base_root);
	}
	if (s < 0)
		rc = e->code;
	else if ((int64_t) l->rng.n != l->last_seq)
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s/ledger.db: %llu records, expected %lld",
				l->dir, (unsigned long long) l->rng.n, (long long) l->last_seq);
	lg_walk_end(&w);
	l->rng_valid = rc == 0;
	return rc;
}

/* The newest row of `signed` (note malloc'd into *note, NULL when there is none). */
static int newest_signed(ledger *l, char **note, cs_err *e)
{
	sqlite3_stmt *st = NULL;
	int s, rc = 0;

	*note = NULL;
	if (sqlite3_prepare_v2(l->db, "SELECT note FROM signed ORDER BY size DESC LIMIT 1", -1, &st,
			       NULL) != SQLITE_OK)
		return cs_err_set(e, CS_EXIT_VERIFY,
				  "%s/ledger.db: the signed table is missing: %s", l->dir,
				  sqlite3_errmsg(l->db));
	s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		const char *t = (const char *) sqlite3_column_text(st, 0);

		if (!t || !(*note = strdup(t)))
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	} else if (s != SQLITE_DONE) {
		rc = lg_sqlerr(l, e, "cannot read signed checkpoints");
	}
	sqlite3_finalize(st);
	return rc;
}

/*
 * Open a signed checkpoint from src: signed by v, origin is the study's,
 * well formed. Fills th; exit 4 naming src otherwise.
 */
static int open_signed(ledger *l, const lg_vkey *v, const char *note, size_t len,
		       const char *src, ledger_tree_head *th, cs_err *e)
{
	char why[200];
	size_t tlen;
	int r = lg_note_open(note, len, v, &tlen, why, sizeof(why));
	cs_err pe = {0};

	if (r != 1)
		return cs_err_set(e, CS_EXIT_VERIFY, "%s: %s", src, why);
	if (ledger_checkpoint_parse(note, tlen, src, th, &pe))
		return cs_err_set(e, CS_EXIT_VERIFY, "%s", pe.msg);
	if (strcmp(th->origin, l->origin))
		return cs_err_set(e, CS_EXIT_VERIFY,
				  "%s: origin '%s' is not this study's ('%s'): a checkpoint of "
				  "another log",
				  src, th->origin, l->origin);
	return 0;
}

int lg_sign_commit(ledger *l, cs_err *e)
{
	unsigned char root[32], base_root[32];
	ledger_tree_head th;
	sqlite3_stmt *st = NULL;
	char *body = NULL, *note = NULL, *newest = NULL, src[64];
	int rc;

	if (!l->signer && (rc = load_signer(l, e)))
		return rc;
	if (!(l->rng_valid && (int64_t) l->rng.n == l->last_seq && l->signed_n == l->tx_base &&
	      l->signed_n >= 0)) {
		/* not the head this process signed last: recompute and check the base */
		if ((rc = rebuild_range(l, l->tx_base, base_root, e)) ||
		    (rc = newest_signed(l, &newest, e)))
			goto out;
		snprintf(src, sizeof(src), "ledger.db signed checkpoint");
		if (!newest) {
			if (l->tx_base > 0) {
				rc = cs_err_set(e, CS_EXIT_VERIFY,
						"%s: records 1..%lld are covered by no signed "
						"checkpoint; refusing to sign over them",
						l->dir, (long long) l->tx_base);
				goto out;
			}
		} else {
			if ((rc = open_signed(l, &l->vkey, newest, strlen(newest), src, &th, e)))
				goto out;
			if (th.size < l->tx_base) {
				rc = cs_err_set(e, CS_EXIT_VERIFY,
						"%s: records %lld..%lld were appended without the "
						"study's key (the last signed size is %lld); refusing "
						"to sign over them: run 'coldstudy log verify'",
						l->dir, (long long) th.size + 1, (long long) l->tx_base,
						(long long) th.size);
				goto out;
			}
			if (th.size > l->tx_base || memcmp(th.root, base_root, 32)) {
				rc = cs_err_set(e, CS_EXIT_VERIFY,
						"%s: the log was rewritten below its signed size %lld "
						"(it has %lld records before this commit); refusing to "
						"sign: run 'coldstudy log verify'",
						l->dir, (long long) th.size, (long long) l->tx_base);
				goto out;
			}
		}
	}
	lg_range_root(&l->rng, &l->sha, root);
	if ((rc = ledger_checkpoint_format(l->origin, l->last_seq, root, &body, e)) ||
	    (rc = lg_note_sign(l->signer, body, strlen(body), &note, e)))
		goto out;
	if (sqlite3_prepare_v2(l->db, "INSERT INTO signed(size, note) VALUES(?1, ?2)", -1, &st,
			       NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, l->last_seq) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, note, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE) {
		rc = lg_sqlerr(l, e, "cannot store the signed checkpoint");
		goto out;
	}
	l->signed_n = l->last_seq;
	free(l->pending_note);
	l->pending_note = note;
	note = NULL;
	rc = 0;
out:
	sqlite3_finalize(st);
	free(body);
	free(note);
	free(newest);
	return rc;
}

int lg_signed_load(ledger *l, const char *pin, lg_signed_set *set, cs_err *e)
{
	char path[4096], *buf = NULL, *newest = NULL;
	size_t len = 0;
	cs_err fe = {0};
	const lg_vkey *v = &l->vkey;
	lg_vkey pinned;
	int rc = 0;

	memset(set, 0, sizeof(*set));
	if (pin) {
		if (lg_vkey_parse(pin, strlen(pin), &pinned))
			return cs_err_set(e, CS_EXIT_USAGE,
					  "--key: expected a verifier key NAME+HASH+BASE64");
		if (!l->keyed || strcmp(pinned.name, l->vkey.name) || pinned.hash != l->vkey.hash ||
		    memcmp(pinned.pub, l->vkey.pub, 32))
			return cs_err_set(e, CS_EXIT_VERIFY,
					  "%s: the study's key is %s, not the key given (%s+%08x)",
					  l->dir, l->keyed ? l->vkey.name : "(none: unsigned)",
					  pinned.name, (unsigned) pinned.hash);
		v = &pinned;
	}
	if (!l->keyed)
		return 0;
	set->keyed = 1;
	if ((rc = newest_signed(l, &newest, e)))
		goto out;
	if (newest) {
		snprintf(set->c[set->count].src, sizeof(set->c[0].src), "ledger.db signed checkpoint");
		if ((rc = open_signed(l, v, newest, strlen(newest), set->c[set->count].src,
				      &set->c[set->count].th, e)))
			goto out;
		set->count++;
	}
	snprintf(path, sizeof(path), "%s/checkpoint", l->dir);
	if (!cs_read_file(path, LG_NOTE_MAX, &buf, &len, &fe)) {
		snprintf(set->c[set->count].src, sizeof(set->c[0].src), "%.40s/checkpoint",
			 strrchr(l->dir, '/') ? strrchr(l->dir, '/') + 1 : l->dir);
		if ((rc = open_signed(l, v, buf, len, path, &set->c[set->count].th, e)))
			goto out;
		set->count++;
	}
out:
	free(buf);
	free(newest);
	return rc;
}

void lg_signed_observe(lg_signed_set *set, int64_t seq, const lg_range *r, lg_sha *sha)
{
	for (int i = 0; i < set->count; i++)
		if (set->c[i].th.size == seq) {
			lg_range_root(r, sha, set->c[i].got);
			set->c[i].have = 1;
		}
}

int lg_signed_judge(ledger *l, lg_signed_set *set, int64_t n, cs_err *e)
{
	int64_t best = -1;
	char hx[65];

	if (!set->keyed)
		return 0;
	if (set->count == 0)
		return cs_err_set(e, CS_EXIT_VERIFY,
				  "%s: the study has a key but no signed checkpoint (the signed "
				  "table is empty and there is no %s/checkpoint)",
				  l->dir, l->dir);
	for (int i = 0; i < set->count; i++) {
		ledger_tree_head *th = &set->c[i].th;

		if (th->size == 0) {
			memcpy(set->c[i].got, lg_empty_root, 32);
			set->c[i].have = 1;
		}
		if (th->size > n)
			return cs_err_set(e, CS_EXIT_VERIFY,
					  "%s/ledger.db: the log has %lld records but %s is signed at "
					  "size %lld: the log was truncated or rewritten below a "
					  "signed size",
					  l->dir, (long long) n, set->c[i].src, (long long) th->size);
		if (!set->c[i].have || memcmp(set->c[i].got, th->root, 32)) {
			cs_hex(set->c[i].got, 32, hx);
			return cs_err_set(e, CS_EXIT_VERIFY,
					  "%s/ledger.db: the log was rewritten below the signed size "
					  "%lld of %s: its root there is %.16s..., not the signed one",
					  l->dir, (long long) th->size, set->c[i].src, hx);
		}
		if (th->size > best)
			best = th->size;
	}
	if (best < n)
		return cs_err_set(e, CS_EXIT_VERIFY,
				  "%s/ledger.db: records %lld..%lld are covered by no signed "
				  "checkpoint: appended without the study's key",
				  l->dir, (long long) best + 1, (long long) n);
	set->signed_size = best;
	return 0;
}
