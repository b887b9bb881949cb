/*
 * ledger.h - the study's experiment log: an append-only, hash-chained,
 * Merkle-checkpointed SQLite ledger (DIR/ledger.db) with frozen copies of
 * registered files in DIR/frozen/.
 *
 * A record: seq (1, 2, ...), ts (RFC 3339 UTC with microseconds, strictly
 * increasing), kind (hypothesis, amendment, study, validation, run,
 * prediction, score, refutation, verdict, deviation, refusal, note),
 * payload (canonical JSON), prev and hash = SHA-256 over the previous
 * hash and the canonical record. Leaves of the RFC 6962 Merkle tree are
 * the record hashes.
 *
 * Raw measurements (per-query rows, sampler series) go into an
 * append-only side table through ledger_put_raw; the returned SHA-256 is
 * put in the record's payload, so the record's hash covers them, and
 * verify checks every raw blob against its hash.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 * Writers take an IMMEDIATE transaction; several processes may append at
 * once without losing or duplicating a record.
 */
#ifndef LEDGER_H
#define LEDGER_H

#include <stdint.h>
#include "cs.h"

typedef struct ledger ledger;

typedef struct ledger_record {
	int64_t seq;
	char ts[32];
	char kind[32];
	char *payload; /* canonical JSON, owned by the record */
	char prev[65];
	char hash[65];
} ledger_record;

/* Create DIR/ledger.db and DIR/frozen/; refuses (exit 3) an existing ledger. */
int ledger_init(const char *dir, cs_err *e);

/* Open DIR's ledger; exit 5 if DIR is not a study, exit 4 if its format is wrong. */
int ledger_open(const char *dir, ledger **out, cs_err *e);
void ledger_close(ledger *l);
const char *ledger_dir(const ledger *l);

/*
 * Grouping several appends (and raw blobs) into one transaction. Outside
 * begin/commit each append is its own transaction.
 */
int ledger_begin(ledger *l, cs_err *e);
int ledger_commit(ledger *l, cs_err *e);
void ledger_rollback(ledger *l);

/* Append a record; payload is borrowed and canonicalised. seq_out may be NULL. */
int ledger_append(ledger *l, const char *kind, const json_t *payload, int64_t *seq_out,
		  cs_err *e);

/* Store a raw blob (canonical JSON of rows), returns its SHA-256 hex in sha_out. */
int ledger_put_raw(ledger *l, const char *series, const json_t *rows, char sha_out[65],
		   cs_err *e);

/* Read a raw blob back by hash (new reference). */
int ledger_get_raw(ledger *l, const char *sha, json_t **rows, cs_err *e);

int64_t ledger_size(ledger *l);
int ledger_get(ledger *l, int64_t seq, ledger_record *out, cs_err *e);
void ledger_record_free(ledger_record *r);

/* Call cb for each record (of kind, or all when kind is NULL) in seq order; cb returns nonzero to stop. */
int ledger_foreach(ledger *l, const char *kind, int (*cb)(const ledger_record *r, void *ud),
		   void *ud, cs_err *e);

/*
 * The latest record of kind whose payload's "id" equals id: returns 1 and
 * fills out, 0 when none, or -1 with e on error.
 */
int ledger_find(ledger *l, const char *kind, const char *id, ledger_record *out, cs_err *e);

/*
 * The access state now, as the Python prereg package records it:
 * "nothing run", "runs recorded" (runs exist, no score or verdict yet),
 * "results seen".
 */
const char *ledger_access_state(ledger *l);

/* ---- verification and transparency ---- */

/* Recompute every hash and the Merkle root; exit 4 naming the first bad seq. */
int ledger_verify(ledger *l, const char *checkpoint_text, cs_err *e);

/* RFC 6962 tree head over the first size records (root 32 bytes). */
int ledger_root(ledger *l, int64_t size, unsigned char root[32], cs_err *e);

/* C2SP tlog-checkpoint body: "<origin>\n<size>\n<base64 root>\n"; caller frees. */
int ledger_checkpoint(ledger *l, char **text, cs_err *e);

/* ---- RFC 6962 Merkle primitives (pure functions, tested with the RFC's vectors) ---- */

void merkle_leaf_hash(const void *data, size_t len, unsigned char out[32]);
void merkle_node_hash(const unsigned char l[32], const unsigned char r[32], unsigned char out[32]);
/* Root over n leaf hashes (MTH({}) = SHA-256() when n is 0). */
void merkle_root(const unsigned char (*leaves)[32], size_t n, unsigned char out[32]);
/* Inclusion proof for index i in a tree of n leaves; *proof is malloc'd, *plen hashes. */
int merkle_inclusion_proof(const unsigned char (*leaves)[32], size_t n, size_t i,
			   unsigned char (**proof)[32], size_t *plen);
int merkle_consistency_proof(const unsigned char (*leaves)[32], size_t n, size_t m,
			     unsigned char (**proof)[32], size_t *plen);
/* RFC 9162 2.1.3.2 / 2.1.4.2; returns 1 valid, 0 invalid (m = 0 and m = n handled). */
int merkle_verify_inclusion(const unsigned char leaf[32], size_t i, size_t n,
			    const unsigned char (*proof)[32], size_t plen, const unsigned char root[32]);
int merkle_verify_consistency(size_t m, size_t n, const unsigned char old_root[32],
			      const unsigned char new_root[32], const unsigned char (*proof)[32],
			      size_t plen);

#endif
