/*
 * ledger_int.h - the ledger's private header: the on-disk format in one
 * place (STYLE 8), the open-ledger struct, and the SHA-256 helpers the
 * store, the verifier and the Merkle code share.
 *
 * On-disk format (DIR/ledger.db, SQLite, application_id LG_APP_ID,
 * user_version LG_FORMAT):
 *
 *   meta(key TEXT PRIMARY KEY, value TEXT)        format, created, origin,
 *                                                 study_id, vkey (signed studies)
 *   records(seq INTEGER PRIMARY KEY,              1, 2, 3, ... without gaps
 *           ts TEXT,                              RFC 3339 UTC, microseconds
 *           kind TEXT,                            [a-z_]{1,31}
 *           payload TEXT,                         canonical JSON object
 *           prev BLOB(32), hash BLOB(32))
 *   raw(sha TEXT PRIMARY KEY, series TEXT, body TEXT)
 *                                                 body = canonical JSON,
 *                                                 sha = SHA-256 hex of body
 *
 *   signed(size INTEGER PRIMARY KEY, note TEXT)   signed checkpoints, one per
 *                                                 commit that appended (signed
 *                                                 studies only)
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

#define LG_ORIGIN_MAX 255
#define LG_NOTE_MAX (64u * 1024u) /* a signed checkpoint, cosignatures included */

/* ---- keys and signed notes (sign.c) ---- */

/* A verifier key: name (the origin), key hash, Ed25519 public key. */
typedef struct lg_vkey {
	char name[LG_ORIGIN_MAX + 1];
	uint32_t hash;
	unsigned char pub[32];
} lg_vkey;

/* A signer: the verifier key and the private key (caller frees with lg_signer_free). */
typedef struct lg_signer {
	lg_vkey v;
	EVP_PKEY *pkey;
} lg_signer;

/* Base64 (standard, padded) of n bytes into out (4 * ceil(n / 3) + 1 bytes); returns the length. */
size_t lg_b64_enc(const unsigned char *in, size_t n, char *out);
/* Strict, canonical base64 decode into at most cap bytes; the length or -1. */
long lg_b64_dec(const char *s, size_t len, unsigned char *out, size_t cap);
/* A note name: 1..LG_ORIGIN_MAX printable ASCII bytes, no space, no '+'; 1 or 0. */
int lg_key_name_ok(const char *name, size_t n);
/* note.go's key hash of an Ed25519 key: SHA-256(name "\n" 0x01 pub)[0:4], big-endian. */
uint32_t lg_key_hash(const char *name, const unsigned char pub[32]);
/* "<name>+<hash>+<base64(0x01 || pub)>" into out; 0 or -1 (too long). */
int lg_vkey_format(const char *name, const unsigned char pub[32], char *out, size_t cap);
/* Parse a verifier key (the hash must match); 0 or -1. */
int lg_vkey_parse(const char *s, size_t len, lg_vkey *out);
/* A new key named name; *skey is the signer key text to store (caller frees, secret). */
int lg_signer_generate(const char *name, lg_signer **out, char **skey, cs_err *e);
/* Parse "PRIVATE+KEY+<name>+<hash>+<base64(0x01 || seed)>" (optional final newline); 0 or -1. */
int lg_signer_parse(const char *s, size_t len, lg_signer **out);
void lg_signer_free(lg_signer *k);
/* text (ending in '\n') + "\n" + "— name base64(hash || sig)\n" (caller frees *note). */
int lg_note_sign(const lg_signer *k, const char *text, size_t len, char **note, cs_err *e);
/*
 * Open a signed note: *text_len = the bytes the signatures cover. Returns
 * 1 when v signed it (or, v NULL, when it is well formed), 0 when it is
 * well formed but carries no signature by v, -1 when it is malformed or
 * v's signature does not verify; why says what.
 */
int lg_note_open(const char *note, size_t len, const lg_vkey *v, size_t *text_len, char *why,
		 size_t cap);
/* 2 * nbytes random hex digits (nbytes <= 32) into out; 0 or -1. */
int lg_random_hex(char *out, size_t nbytes);

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
	/* signing (a study with a key: every commit that appended signs the new head) */
	char origin[LG_ORIGIN_MAX + 1];
	int keyed;          /* meta holds a verifier key */
	lg_vkey vkey;       /* ... this one */
	lg_signer *signer;  /* DIR/signing.key, read at the first signing commit */
	lg_range rng;       /* compact range over the first rng.n records, when rng_valid */
	int rng_valid;
	int64_t signed_n;   /* size this process last signed (rng.n then), -1 if none */
	int64_t tx_base;    /* log size when this transaction first read the tail, -1 */
	int64_t appended;   /* records appended in this transaction */
	char *pending_note; /* signed at commit; written to DIR/checkpoint after it */
	int swept;          /* leftovers swept in this transaction (frozen.c) */
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
 * Walking the records in seq order, recomputing each hash (walk.c):
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

/* ---- signed checkpoints (signed.c) ---- */

/* Sign the head inside the write transaction (ledger_commit); exit 4 if the base is not signed. */
int lg_sign_commit(ledger *l, cs_err *e);

/* The signed checkpoints a verify checks: the newest row of `signed` and DIR/checkpoint. */
typedef struct lg_signed_set {
	int keyed, count;
	int64_t signed_size; /* after judge: the newest signed size */
	struct {
		char src[64];
		ledger_tree_head th;
		unsigned char got[32]; /* the log's root at th.size */
		int have;
	} c[2];
} lg_signed_set;

/* Load and check signatures and origins (pin: a verifier key the caller trusts, or NULL). */
int lg_signed_load(ledger *l, const char *pin, lg_signed_set *set, cs_err *e);
/* During a walk: after pushing record seq into r, note the roots the set needs. */
void lg_signed_observe(lg_signed_set *set, int64_t seq, const lg_range *r, lg_sha *sha);
/* After a walk over n records: rewritten below a signed size, or records no signature covers: exit 4. */
int lg_signed_judge(ledger *l, lg_signed_set *set, int64_t n, cs_err *e);

/* All leaf hashes of the first n records (malloc'd, n * 32 bytes), each record's hash recomputed (walk.c). */
int lg_load_leaves(ledger *l, int64_t n, unsigned char (**leaves)[32], cs_err *e);

/* Report an SQLite failure as an internal error naming what was being done (walk.c). */
int lg_sqlerr(ledger *l, cs_err *e, const char *what);

/* Strict lowercase-or-uppercase hex of exactly 2n digits into n bytes; 0 or -1 (checkpoint.c). */
int lg_unhex(const char *s, size_t slen, unsigned char *out, size_t n);

/* Base64 (standard alphabet, padded) of 32 bytes into 45 bytes; strict decode, 0 or -1. */
void lg_b64_32(const unsigned char in[32], char out[45]);
int lg_unb64_32(const char *s, size_t len, unsigned char out[32]);

#endif
