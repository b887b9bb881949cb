/*
 * ledger.c - the store: creating and opening DIR/ledger.db, appending
 * hash-chained records, raw blobs, and reading records back.
 *
 * Invariants (the format is written up in ledger_int.h):
 *  - seq runs 1, 2, 3, ... without gaps; ts strictly increases; prev of a
 *    record is the hash of the one before (32 zero bytes for seq 1).
 *  - Every append happens inside BEGIN IMMEDIATE: the write lock is taken
 *    before the tail (last seq, ts, hash) is read, so two processes never
 *    chain onto the same tail, and a waiting writer sleeps on busy_timeout
 *    instead of failing. That is what keeps concurrent registrations from
 *    losing or duplicating a record.
 *  - ts = max(now, last ts + 1 us), read inside the same transaction, so it
 *    is strictly increasing across processes even if the clock steps back.
 *  - WAL with synchronous=FULL: a commit that returned is on disk; a writer
 *    killed mid-transaction leaves nothing behind (SQLite's journal).
 *  - Tables refuse UPDATE and DELETE by triggers. Triggers stop accidents,
 *    not adversaries: verify.c recomputes every hash and the Merkle root.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 */
#include "ledger_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fcntl.h>

static const char schema[] =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE records(seq INTEGER PRIMARY KEY, ts TEXT NOT NULL, kind TEXT NOT NULL,"
	" payload TEXT NOT NULL, prev BLOB NOT NULL, hash BLOB NOT NULL);"
	"CREATE INDEX records_kind ON records(kind, seq);"
	"CREATE TABLE raw(sha TEXT PRIMARY KEY, series TEXT NOT NULL, body TEXT NOT NULL);"
	"CREATE TRIGGER meta_no_update BEFORE UPDATE ON meta"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;"
	"CREATE TRIGGER meta_no_delete BEFORE DELETE ON meta"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;"
	"CREATE TRIGGER records_no_update BEFORE UPDATE ON records"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;"
	"CREATE TRIGGER records_no_delete BEFORE DELETE ON records"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;"
	"CREATE TABLE signed(size INTEGER PRIMARY KEY, note TEXT NOT NULL);"
	"CREATE TRIGGER signed_no_update BEFORE UPDATE ON signed"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;"
	"CREATE TRIGGER signed_no_delete BEFORE DELETE ON signed"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;"
	"CREATE TRIGGER raw_no_update BEFORE UPDATE ON raw"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;"
	"CREATE TRIGGER raw_no_delete BEFORE DELETE ON raw"
	" BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;";

/* Join dir and name into a malloc'd path. */
static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* Per-connection settings: busy wait, durability, foreign keys. */
static int configure(sqlite3 *db)
{
	sqlite3_busy_timeout(db, LG_BUSY_MS);
	return sqlite3_exec(db,
			    "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"
			    "PRAGMA cache_size=-16384;",
			    NULL, NULL, NULL);
}

/*
 * Write note to DIR/checkpoint unless the file already holds a larger
 * tree (a concurrent writer that committed later may have written first):
 * under an exclusive flock on the directory, so the file only grows.
 * Best effort: the signed table holds the same note, committed with the
 * records; returns 0 or -1 (errno-style failure, message in e).
 */
static int publish_note(const char *dir, const char *note, cs_err *e)
{
	ledger_tree_head have, mine;
	char *path = join(dir, "checkpoint"), *old = NULL;
	size_t olen = 0;
	int dfd = -1, rc = -1;
	cs_err ig = {0};

	if (!path || ledger_checkpoint_parse(note, strlen(note), "note", &mine, e))
		goto out;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || flock(dfd, LOCK_EX) < 0) {
		cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot lock: %s", dir, strerror(errno));
		goto out;
	}
	if (!cs_read_file(path, LG_NOTE_MAX, &old, &olen, &ig) &&
	    !ledger_checkpoint_parse(old, olen, path, &have, &ig) && have.size > mine.size) {
		rc = 0;
		goto out;
	}
	rc = cs_write_file_atomic(path, note, strlen(note), 0644, e) ? -1 : 0;
out:
	if (dfd >= 0)
		close(dfd); /* releases the lock */
	free(old);
	free(path);
	return rc;
}

int ledger_init(const char *dir, cs_err *e)
{
	char *db_path = NULL, *frozen = NULL, *key_path = NULL, sql[256], ts[32];
	char *meta_sql = NULL, *skey = NULL, *body = NULL, *note = NULL;
	char study_id[33], origin[64], vkey[LG_ORIGIN_MAX + 80];
	lg_signer *signer = NULL;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	struct stat st_;
	int rc = CS_EXIT_INTERNAL;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: cannot create directory: %s", dir,
				  strerror(errno));
	db_path = join(dir, "ledger.db");
	frozen = join(dir, "frozen");
	key_path = join(dir, "signing.key");
	if (!db_path || !frozen || !key_path) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	if (stat(db_path, &st_) == 0) {
		rc = cs_err_set(e, CS_EXIT_REFUSED, "%s: a ledger already exists; refusing to touch it",
				db_path);
		goto out;
	}
	if (mkdir(frozen, 0755) < 0 && errno != EEXIST) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: cannot create directory: %s", frozen,
				strerror(errno));
		goto out;
	}
	/* A unique origin (the study id) names the log and its key. */
	if (lg_random_hex(study_id, 16)) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "no random bytes for a study id");
		goto out;
	}
	snprintf(origin, sizeof(origin), "coldstudy/%s", study_id);
	if ((rc = lg_signer_generate(origin, &signer, &skey, e)))
		goto out;
	lg_vkey_format(origin, signer->v.pub, vkey, sizeof(vkey));
	/* the private key first (0600): a ledger never exists without its key */
	if ((rc = cs_write_file_atomic(key_path, skey, strlen(skey), 0600, e)))
		goto out;
	rc = CS_EXIT_INTERNAL;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot create: %s", db_path,
				db ? sqlite3_errmsg(db) : "out of memory");
		goto out;
	}
	configure(db);
	snprintf(sql, sizeof(sql), "PRAGMA journal_mode=WAL; PRAGMA application_id=%d;"
		 " PRAGMA user_version=%d;", LG_APP_ID, LG_FORMAT);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK)
		goto sqlfail;
	cs_format_rfc3339(cs_now_us(), ts);
	meta_sql = sqlite3_mprintf("INSERT INTO meta VALUES('format','%d'),('created',%Q),"
				   "('origin',%Q),('study_id',%Q),('vkey',%Q);",
				   LG_FORMAT, ts, origin, study_id, vkey);
	if (!meta_sql || sqlite3_exec(db, meta_sql, NULL, NULL, NULL) != SQLITE_OK)
		goto sqlfail;
	/* the empty log's signed checkpoint: every later one must extend it */
	if ((rc = ledger_checkpoint_format(origin, 0, lg_empty_root, &body, e)) ||
	    (rc = lg_note_sign(signer, body, strlen(body), &note, e)))
		goto fail;
	rc = CS_EXIT_INTERNAL;
	if (sqlite3_prepare_v2(db, "INSERT INTO signed(size, note) VALUES(0, ?1)", -1, &st, NULL) !=
		    SQLITE_OK ||
	    sqlite3_bind_text(st, 1, note, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		goto sqlfail;
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto sqlfail;
	publish_note(dir, note, e);
	rc = 0;
	goto out;
sqlfail:
	rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot create the ledger: %s", db_path,
			sqlite3_errmsg(db));
fail:
	sqlite3_finalize(st);
	st = NULL;
	sqlite3_close(db);
	db = NULL;
	unlink(db_path);
out:
	sqlite3_finalize(st);
	sqlite3_free(meta_sql);
	sqlite3_close(db);
	if (skey) {
		OPENSSL_cleanse(skey, strlen(skey));
		free(skey);
	}
	lg_signer_free(signer);
	free(body);
	free(note);
	free(db_path);
	free(frozen);
	free(key_path);
	return rc;
}

/* Read one meta value into buf; 1 found, 0 absent, -1 error. */
static int meta_get(sqlite3 *db, const char *key, char *buf, size_t cap)
{
	sqlite3_stmt *st;
	int rc = 0;

	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) !=
	    SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
		snprintf(buf, cap, "%s", (const char *) sqlite3_column_text(st, 0));
		rc = 1;
	}
	sqlite3_finalize(st);
	return rc;
}

/* Read one integer PRAGMA; -1 on error. */
static int64_t pragma_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* What every ledger_open calls once the study is open (ledger_on_open), and its guard. */
static void (*on_open)(ledger *l);
static int in_on_open;

int ledger_open(const char *dir, ledger **out, cs_err *e)
{
	ledger *l = NULL;
	char *db_path = NULL;
	struct stat st;
	int rc = CS_EXIT_INTERNAL;
	int64_t app, ver;

	*out = NULL;
	db_path = join(dir, "ledger.db");
	l = calloc(1, sizeof(*l));
	if (!db_path || !l || !(l->dir = strdup(dir)) || lg_sha_init(&l->sha)) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	if (stat(db_path, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT,
				"%s: not a study (no ledger.db; create one with 'coldstudy init %s')",
				dir, dir);
		goto out;
	}
	if (sqlite3_open_v2(db_path, &l->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot open: %s", db_path,
				l->db ? sqlite3_errmsg(l->db) : "out of memory");
		goto out;
	}
	configure(l->db);
	app = pragma_int(l->db, "PRAGMA application_id");
	ver = pragma_int(l->db, "PRAGMA user_version");
	if (app != LG_APP_ID || ver != LG_FORMAT) {
		rc = cs_err_set(e, CS_EXIT_VERIFY,
				"%s: not a coldstudy ledger of format %d (application_id %lld, "
				"user_version %lld)",
				db_path, LG_FORMAT, (long long) app, (long long) ver);
		goto out;
	}
	if (sqlite3_prepare_v3(l->db, "SELECT seq, ts, hash FROM records ORDER BY seq DESC LIMIT 1",
			       -1, SQLITE_PREPARE_PERSISTENT, &l->st_tail, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(l->db,
			       "INSERT INTO records(seq, ts, kind, payload, prev, hash)"
			       " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
			       -1, SQLITE_PREPARE_PERSISTENT, &l->st_insert, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(l->db, "INSERT OR IGNORE INTO raw(sha, series, body) VALUES(?1, ?2, ?3)",
			       -1, SQLITE_PREPARE_PERSISTENT, &l->st_raw_insert, NULL) != SQLITE_OK) {
		rc = cs_err_set(e, CS_EXIT_VERIFY, "%s: the ledger's tables are missing or wrong: %s",
				db_path, sqlite3_errmsg(l->db));
		goto out;
	}
	{
		char vk[LG_ORIGIN_MAX + 80];
		int f;

		if (meta_get(l->db, "origin", l->origin, sizeof(l->origin)) != 1)
			snprintf(l->origin, sizeof(l->origin), "coldstudy");
		f = meta_get(l->db, "vkey", vk, sizeof(vk));
		if (f == 1 && (lg_vkey_parse(vk, strlen(vk), &l->vkey) ||
			       strcmp(l->vkey.name, l->origin))) {
			rc = cs_err_set(e, CS_EXIT_VERIFY,
					"%s: meta 'vkey' is not a verifier key for origin %s",
					db_path, l->origin);
			goto out;
		}
		l->keyed = f == 1;
	}
	l->signed_n = -1;
	l->tx_base = -1;
	*out = l;
	if (on_open && !in_on_open) {
		in_on_open = 1;
		on_open(l);
		in_on_open = 0;
	}
	l = NULL;
	rc = 0;
out:
	ledger_close(l);
	free(db_path);
	return rc;
}

void ledger_on_open(void (*fn)(ledger *l))
{
	on_open = fn;
}

void ledger_close(ledger *l)
{
	if (!l)
		return;
	if (l->in_tx)
		ledger_rollback(l);
	sqlite3_finalize(l->st_tail);
	sqlite3_finalize(l->st_insert);
	sqlite3_finalize(l->st_raw_insert);
	sqlite3_close(l->db);
	lg_sha_free(&l->sha);
	lg_signer_free(l->signer);
	free(l->pending_note);
	free(l->rec_buf);
	free(l->dir);
	free(l);
}

const char *ledger_dir(const ledger *l)
{
	return l->dir;
}

int ledger_begin(ledger *l, cs_err *e)
{
	if (l->in_tx)
		return cs_err_set(e, CS_EXIT_INTERNAL, "ledger: transaction already open");
	if (sqlite3_exec(l->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return lg_sqlerr(l, e, "cannot take the write lock");
	l->in_tx = 1;
	l->tail_valid = 0;
	l->tx_base = -1;
	l->appended = 0;
	l->swept = 0;
	return 0;
}

int ledger_commit(ledger *l, cs_err *e)
{
	int rc;

	if (!l->in_tx)
		return cs_err_set(e, CS_EXIT_INTERNAL, "ledger: commit without begin");
	/* a signed study signs the new head inside the transaction that made it */
	if (l->keyed && l->appended && (rc = lg_sign_commit(l, e))) {
		ledger_rollback(l);
		return rc;
	}
	if (sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		rc = lg_sqlerr(l, e, "commit failed");
		ledger_rollback(l);
		return rc;
	}
	l->in_tx = 0;
	l->tail_valid = 0;
	l->tx_base = -1;
	l->appended = 0;
	if (l->pending_note) {
		cs_err fe = {0};

		if (publish_note(l->dir, l->pending_note, &fe))
			fprintf(stderr, "coldstudy: warning: %s/checkpoint not updated (the ledger "
					"holds the signed checkpoint): %s\n",
				l->dir, fe.msg);
		free(l->pending_note);
		l->pending_note = NULL;
	}
	return 0;
}

void ledger_rollback(ledger *l)
{
	if (!l)
		return;
	if (l->in_tx)
		sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
	l->in_tx = 0;
	l->tail_valid = 0;
	l->tx_base = -1;
	l->appended = 0;
	l->rng_valid = 0; /* it may hold leaves of records rolled back */
	l->signed_n = -1;
	free(l->pending_note);
	l->pending_note = NULL;
}

/* Read the last record's seq, ts and hash into l (inside the write lock). */
static int load_tail(ledger *l, cs_err *e)
{
	int s;

	sqlite3_reset(l->st_tail);
	s = sqlite3_step(l->st_tail);
	if (s == SQLITE_DONE) {
		l->last_seq = 0;
		l->last_us = 0;
		memset(l->last_hash, 0, 32);
	} else if (s == SQLITE_ROW) {
		const char *ts = (const char *) sqlite3_column_text(l->st_tail, 1);

		l->last_seq = sqlite3_column_int64(l->st_tail, 0);
		if (!ts || cs_parse_rfc3339(ts, &l->last_us) ||
		    sqlite3_column_bytes(l->st_tail, 2) != 32) {
			sqlite3_reset(l->st_tail);
			return cs_err_set(e, CS_EXIT_VERIFY,
					  "%s/ledger.db: seq %lld: malformed ts or hash; run "
					  "'coldstudy log verify'",
					  l->dir, (long long) l->last_seq);
		}
		memcpy(l->last_hash, sqlite3_column_blob(l->st_tail, 2), 32);
	} else {
		sqlite3_reset(l->st_tail);
		return lg_sqlerr(l, e, "cannot read the last record");
	}
	sqlite3_reset(l->st_tail);
	l->tail_valid = 1;
	return 0;
}

/* A kind is 1..31 characters of [a-z_]. */
static int kind_ok(const char *kind)
{
	size_t n = strlen(kind);

	if (n == 0 || n > LG_KIND_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((kind[i] >= 'a' && kind[i] <= 'z') || kind[i] == '_'))
			return 0;
	return 1;
}

int lg_append_canonical(ledger *l, const char *kind, const char *payload, size_t plen,
			int64_t *seq_out, cs_err *e)
{
	int own = !l->in_tx, rc;
	int64_t now, seq;
	char ts[32];
	unsigned char hash[32];
	size_t rlen;

	if (!kind_ok(kind))
		return cs_err_set(e, CS_EXIT_INTERNAL, "ledger: bad record kind '%s'", kind);
	if (plen > LG_PAYLOAD_MAX)
		return cs_err_set(e, CS_EXIT_BADINPUT, "ledger: payload of %zu bytes over the cap",
				  plen);
	if (own && (rc = ledger_begin(l, e)))
		return rc;
	if (!l->tail_valid && (rc = load_tail(l, e)))
		goto fail;
	if (l->tx_base < 0)
		l->tx_base = l->last_seq;
	now = cs_now_us();
	if (now <= l->last_us)
		now = l->last_us + 1;
	seq = l->last_seq + 1;
	cs_format_rfc3339(now, ts);
	rlen = lg_record_bytes(&l->rec_buf, &l->rec_cap, seq, ts, kind, payload, plen);
	if (!rlen) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto fail;
	}
	lg_sha2(&l->sha, l->last_hash, 32, l->rec_buf, rlen, hash);
	sqlite3_reset(l->st_insert);
	sqlite3_bind_int64(l->st_insert, 1, seq);
	sqlite3_bind_text(l->st_insert, 2, ts, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(l->st_insert, 3, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(l->st_insert, 4, payload, (int) plen, SQLITE_STATIC);
	sqlite3_bind_blob(l->st_insert, 5, l->last_hash, 32, SQLITE_TRANSIENT);
	sqlite3_bind_blob(l->st_insert, 6, hash, 32, SQLITE_TRANSIENT);
	if (sqlite3_step(l->st_insert) != SQLITE_DONE) {
		rc = lg_sqlerr(l, e, "cannot append a record");
		sqlite3_reset(l->st_insert);
		goto fail;
	}
	sqlite3_reset(l->st_insert);
	sqlite3_clear_bindings(l->st_insert);
	l->last_seq = seq;
	l->last_us = now;
	memcpy(l->last_hash, hash, 32);
	l->appended++;
	if (l->rng_valid && l->rng.n == (uint64_t) (seq - 1)) {
		unsigned char leaf[32];

		lg_leaf(&l->sha, hash, leaf);
		lg_range_push(&l->rng, &l->sha, leaf);
	} else {
		l->rng_valid = 0;
	}
	if (own && (rc = ledger_commit(l, e)))
		return rc;
	if (seq_out)
		*seq_out = seq;
	return 0;
fail:
	if (own)
		ledger_rollback(l);
	else
		l->tail_valid = 0;
	return rc;
}

int ledger_append(ledger *l, const char *kind, const json_t *payload, int64_t *seq_out,
		  cs_err *e)
{
	char *canon = NULL;
	size_t len;
	int rc;

	if (!json_is_object(payload))
		return cs_err_set(e, CS_EXIT_INTERNAL, "ledger: a %s payload must be a JSON object",
				  kind);
	rc = cs_json_canonical(payload, &canon, &len, e);
	if (rc)
		return rc;
	rc = lg_append_canonical(l, kind, canon, len, seq_out, e);
	free(canon);
	return rc;
}

int ledger_put_raw(ledger *l, const char *series, const json_t *rows, char sha_out[65],
		   cs_err *e)
{
	char *canon = NULL;
	size_t len;
	int rc;

	rc = cs_json_canonical(rows, &canon, &len, e);
	if (rc)
		return rc;
	cs_sha256_hex(canon, len, sha_out);
	sqlite3_reset(l->st_raw_insert);
	sqlite3_bind_text(l->st_raw_insert, 1, sha_out, 64, SQLITE_STATIC);
	sqlite3_bind_text(l->st_raw_insert, 2, series, -1, SQLITE_STATIC);
	sqlite3_bind_text(l->st_raw_insert, 3, canon, (int) len, SQLITE_STATIC);
	if (sqlite3_step(l->st_raw_insert) != SQLITE_DONE)
		rc = lg_sqlerr(l, e, "cannot store a raw blob");
	sqlite3_reset(l->st_raw_insert);
	sqlite3_clear_bindings(l->st_raw_insert);
	free(canon);
	return rc;
}

int ledger_get_raw(ledger *l, const char *sha, json_t **rows, cs_err *e)
{
	sqlite3_stmt *st = NULL;
	json_error_t jerr;
	char got[65];
	int rc;

	*rows = NULL;
	if (sqlite3_prepare_v2(l->db, "SELECT body FROM raw WHERE sha = ?1", -1, &st, NULL) !=
	    SQLITE_OK)
		return lg_sqlerr(l, e, "cannot read a raw blob");
	sqlite3_bind_text(st, 1, sha, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		rc = rc == SQLITE_DONE
			     ? cs_err_set(e, CS_EXIT_BADINPUT, "%s/ledger.db: no raw blob %s", l->dir,
					  sha)
			     : lg_sqlerr(l, e, "cannot read a raw blob");
		goto out;
	}
	cs_sha256_hex(sqlite3_column_text(st, 0), (size_t) sqlite3_column_bytes(st, 0), got);
	if (strcmp(got, sha)) {
		rc = cs_err_set(e, CS_EXIT_VERIFY, "%s/ledger.db: raw blob %s: content hashes to %s",
				l->dir, sha, got);
		goto out;
	}
	*rows = json_loadb((const char *) sqlite3_column_text(st, 0),
			   (size_t) sqlite3_column_bytes(st, 0), 0, &jerr);
	rc = *rows ? 0
		   : cs_err_set(e, CS_EXIT_VERIFY, "%s/ledger.db: raw blob %s: %s", l->dir, sha,
				jerr.text);
out:
	sqlite3_finalize(st);
	return rc;
}

int64_t ledger_size(ledger *l)
{
	return pragma_int(l->db, "SELECT coalesce(max(seq), 0) FROM records");
}

/* Fill r from a row (seq, ts, kind, payload, prev, hash); borrow = point into the row. */
static int fill_record(sqlite3_stmt *st, ledger_record *r, int borrow)
{
	const char *ts = (const char *) sqlite3_column_text(st, 1);
	const char *kind = (const char *) sqlite3_column_text(st, 2);
	const char *payload = (const char *) sqlite3_column_text(st, 3);

	memset(r, 0, sizeof(*r));
	r->seq = sqlite3_column_int64(st, 0);
	snprintf(r->ts, sizeof(r->ts), "%s", ts ? ts : "");
	snprintf(r->kind, sizeof(r->kind), "%s", kind ? kind : "");
	if (sqlite3_column_bytes(st, 4) == 32)
		cs_hex(sqlite3_column_blob(st, 4), 32, r->prev);
	if (sqlite3_column_bytes(st, 5) == 32)
		cs_hex(sqlite3_column_blob(st, 5), 32, r->hash);
	if (borrow) {
		r->payload = (char *) (payload ? payload : "");
		return 0;
	}
	r->payload = strdup(payload ? payload : "");
	return r->payload ? 0 : -1;
}

#define RECORD_COLS "seq, ts, kind, payload, prev, hash"

int ledger_get(ledger *l, int64_t seq, ledger_record *out, cs_err *e)
{
	sqlite3_stmt *st = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (sqlite3_prepare_v2(l->db, "SELECT " RECORD_COLS " FROM records WHERE seq = ?1", -1, &st,
			       NULL) != SQLITE_OK)
		return lg_sqlerr(l, e, "cannot read a record");
	sqlite3_bind_int64(st, 1, seq);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		rc = fill_record(st, out, 0) ? cs_err_set(e, CS_EXIT_INTERNAL, "out of memory") : 0;
	else if (rc == SQLITE_DONE)
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: no record with seq %lld (the log has %lld)",
				l->dir, (long long) seq, (long long) ledger_size(l));
	else
		rc = lg_sqlerr(l, e, "cannot read a record");
	sqlite3_finalize(st);
	return rc;
}

void ledger_record_free(ledger_record *r)
{
	if (!r)
		return;
	free(r->payload);
	r->payload = NULL;
}

/*
 * The record passed to cb is borrowed: its payload points into SQLite's
 * row and is valid only during the call.
 */
int ledger_foreach(ledger *l, const char *kind, int (*cb)(const ledger_record *r, void *ud),
		   void *ud, cs_err *e)
{
	sqlite3_stmt *st = NULL;
	ledger_record r;
	int s, rc = 0;

	if (sqlite3_prepare_v2(l->db,
			       kind ? "SELECT " RECORD_COLS " FROM records WHERE kind = ?1 ORDER BY seq"
				    : "SELECT " RECORD_COLS " FROM records ORDER BY seq",
			       -1, &st, NULL) != SQLITE_OK)
		return lg_sqlerr(l, e, "cannot list records");
	if (kind)
		sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		fill_record(st, &r, 1);
		if (cb(&r, ud))
			break;
	}
	if (s != SQLITE_ROW && s != SQLITE_DONE)
		rc = lg_sqlerr(l, e, "cannot list records");
	sqlite3_finalize(st);
	return rc;
}

/* kind may be NULL: the latest record of any kind with that id. */
int ledger_find(ledger *l, const char *kind, const char *id, ledger_record *out, cs_err *e)
{
	sqlite3_stmt *st = NULL;
	int s, rc;

	memset(out, 0, sizeof(*out));
	if (sqlite3_prepare_v2(l->db,
			       "SELECT " RECORD_COLS " FROM records WHERE (?1 IS NULL OR kind = ?1)"
			       " AND json_valid(payload) AND json_extract(payload, '$.id') = ?2"
			       " ORDER BY seq DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK) {
		lg_sqlerr(l, e, "cannot search records");
		return -1;
	}
	if (kind)
		sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
	s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		rc = 1;
		if (fill_record(st, out, 0)) {
			cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			rc = -1;
		}
	} else if (s == SQLITE_DONE) {
		rc = 0;
	} else {
		lg_sqlerr(l, e, "cannot search records");
		rc = -1;
	}
	sqlite3_finalize(st);
	return rc;
}

const char *ledger_access_state(ledger *l)
{
	int64_t hold = pragma_int(l->db, "SELECT EXISTS(SELECT 1 FROM records WHERE kind = 'score'"
					 " OR (kind = 'run' AND json_extract(payload, '$.holdout') = 1))");
	int64_t seen = pragma_int(l->db, "SELECT EXISTS(SELECT 1 FROM records WHERE kind IN"
					 " ('run', 'verdict'))");
	int64_t started = pragma_int(l->db, "SELECT EXISTS(SELECT 1 FROM records WHERE kind ="
					    " 'run_start')");

	if (hold < 0 || seen < 0 || started < 0)
		return "unknown";
	if (hold)
		return "holdout seen";
	if (seen)
		return "results seen";
	return started ? "runs started" : "none";
}
