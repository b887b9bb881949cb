/*
 * ledger_int.h - the ledger's private header: the on-disk format in one
 * place (STYLE 8), the open-ledger struct, and the SHA-256 helpers the
 * store, the verifier and the Merkle code share.
 *
 * On-disk format (DIR/ledger.db, SQLite, application_id LG_APP_ID,
 * user_version LG_FORMAT):
 *
 *   meta(key TEXT PRIMARY KEY, value TEXT)        format, created, origin
 *   records(seq INTEGER PRIMARY KEY,              1, 2, 3, ... without gaps
 *           ts TEXT,                              RFC 3339 UTC, microseconds
 *           kind TEXT,                            [a-z_]{1,31}
 *           payload TEXT,                         canonical JSON object
 *           prev BLOB(32), hash BLOB(32))
 *   raw(sha TEXT PRIMARY KEY, series TEXT, body TEXT)
 *                                                 body = canonical JSON,
 *                                                 sha = SHA-256 hex of body
 *
 * Every table has BEFORE UPDATE and BEFORE DELETE triggers that RAISE(ABORT).
 *
 * The canonical record of seq N is the canonical JSON (common/json.c) of
 * {"kind":K,"payload":P,"seq":N,"ts":T}; because P is stored canonical,
 * K is [a-z_] and T is fixed-format, those bytes are built by
 * concatenation (lg_record_bytes) and are identical to what
 * cs_json_canonical would print. hash(N) = SHA-256(prev(N) || canonical
 * record(N)) with prev(1) = 32 zero bytes and prev(N) = hash(N-1).
 *
 * The Merkle tree (RFC 6962 2.1) has one leaf per record, in seq order;
 * leaf data = the 32 raw bytes of the record's hash, so leaf hash =
 * SHA-256(0x00 || hash).
 */
#ifndef LEDGER_INT_H
#define LEDGER_INT_H

#include <sqlite3.h>
#include <openssl/evp.h>

#include "ledger.h"

#define LG_APP_ID 0x436f4c64 /* "CoLd" */
#define LG_FORMAT 1
#define LG_BUSY_MS 30000     /* writers wait this long for the write lock */
#define LG_KIND_MAX 31
#define LG_PAYLOAD_MAX (64u << 20)

/* A reusable SHA-256 context: one fetch of the algorithm, one EVP_MD_CTX. */
typedef struct lg_sha {
	EVP_MD_CTX *ctx;
	EVP_MD *md;
} lg_sha;

/* 0 or -1 (out of memory); lg_sha_free accepts a zeroed struct. */
int lg_sha_init(lg_sha *s);
void lg_sha_free(lg_sha *s);
/* SHA-256 over the concatenation of (a, an) and (b, bn); b may be NULL. */
void lg_sha2(lg_sha *s, const void *a, size_t an, const void *b, size_t bn, unsigned char out[32]);
/* RFC 6962 leaf and node hashes through a reusable context. */
void lg_leaf(lg_sha *s, const unsigned char data[32], unsigned char out[32]);
void lg_node(lg_sha *s, const unsigned char l[32], const unsigned char r[32],
	     unsigned char out[32]);

/*
 * A compact range: the roots of the perfect subtrees that make up the
 * first n leaves, largest first (one per set bit of n), so a root over a
 * stream of leaves needs O(log n) memory.
 */
typedef struct lg_range {
	uint64_t n;
	int top;
	unsigned char h[64][32];
} lg_range;

void lg_range_push(lg_range *r, lg_sha *s, const unsigned char leaf_hash[32]);
/* The RFC 6962 root of the leaves pushed so far. */
void lg_range_root(const lg_range *r, lg_sha *s, unsigned char out[32]);

/* The empty tree's root, SHA-256(""). */
extern const unsigned char lg_empty_root[32];

struct ledger {
	sqlite3 *db;
	char *dir;
	int in_tx;          /* inside ledger_begin .. commit/rollback */
	int tail_valid;     /* last_* read inside the current transaction */
	int64_t last_seq;
	int64_t last_us;
	unsigned char last_hash[32];
	sqlite3_stmt *st_tail, *st_insert, *st_raw_insert;
	lg_sha sha;
	char *rec_buf;      /* scratch for canonical records */
	size_t rec_cap;
};

/*
 * Build the canonical record bytes of (seq, ts, kind, payload) into
 * a growable buffer (*buf, *cap); returns the length or 0 on
 * out of memory.
 */
size_t lg_record_bytes(char **buf, size_t *cap, int64_t seq, const char *ts, const char *kind,
		       const char *payload, size_t plen);

/* Append with a payload that is already canonical JSON (bulk loads, tests). */
int lg_append_canonical(ledger *l, const char *kind, const char *payload, size_t plen,
			int64_t *seq_out, cs_err *e);

/*
 * Walking the records in seq order, recomputing each hash (verify.c):
 * begin (limit < 0: all records), then next until it returns 0 (the end)
 * or -1 (e filled: exit 4 naming the first bad seq, or an SQLite error).
 * After a 1, seq/ts/kind/payload (borrowed, valid until the next step),
 * prev and hash (recomputed, equal to what is stored) describe the record.
 * end accepts a walk that was never begun (zeroed).
 */
typedef struct lg_walk {
	sqlite3_stmt *st;
	int64_t expect, limit, seq;
	const char *ts, *kind, *payload;
	size_t plen;
	unsigned char prev[32], hash[32];
	unsigned char last_ts[27];
} lg_walk;

int lg_walk_begin(ledger *l, lg_walk *w, int64_t limit, cs_err *e);
int lg_walk_next(ledger *l, lg_walk *w, cs_err *e);
void lg_walk_end(lg_walk *w);

/*
 * Check a payload against its kind's schema (schema.c): canonical JSON of
 * an object, with the members the kind requires, of the right types.
 * Returns 0, or -1 with why (a JSON path and what was expected) filled.
 */
int lg_payload_check(const char *kind, const char *payload, size_t len, char *why, size_t cap);

/* All leaf hashes of the first n records (malloc'd, n * 32 bytes), each record's hash recomputed. */
int lg_load_leaves(ledger *l, int64_t n, unsigned char (**leaves)[32], cs_err *e);

/* Report an SQLite failure as an internal error naming what was being done. */
int lg_sqlerr(ledger *l, cs_err *e, const char *what);

/* Strict lowercase-or-uppercase hex of exactly 2n digits into n bytes; 0 or -1. */
int lg_unhex(const char *s, size_t slen, unsigned char *out, size_t n);

/* Base64 (standard alphabet, padded) of 32 bytes into 45 bytes; strict decode, 0 or -1. */
void lg_b64_32(const unsigned char in[32], char out[45]);
int lg_unb64_32(const char *s, size_t len, unsigned char out[32]);

#endif
