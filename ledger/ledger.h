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
#include <stdio.h>
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
 * A function every successful ledger_open calls on the open study before
 * returning it (NULL: none; not called again while it runs). The cli sets
 * harness_reap_unfinished, so that the next command on a study records
 * the runs that died (harness/live.c); the ledger knows nothing of runs.
 */
void ledger_on_open(void (*fn)(ledger *l));

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
 * The access state now: what anyone holding the log could have seen.
 *   "none"          no run has started;
 *   "runs started"  a run_start record exists, no run record yet;
 *   "results seen"  a design (or any non-holdout) run record, or a verdict;
 *   "holdout seen"  a holdout run record or a score.
 */
const char *ledger_access_state(ledger *l);

/*
 * Freeze a registered file's bytes as DIR/frozen/<id>-<SHA-256 of the
 * bytes>.json (mode 0444, atomic), inside a transaction; rel (cap bytes)
 * gets "frozen/..." for the record. The first freeze of a transaction
 * sweeps what killed writers left (temporary files, copies no record
 * names). See ledger/frozen.c.
 */
int ledger_freeze(ledger *l, const char *id, const void *bytes, size_t len, char *rel,
		  size_t cap, cs_err *e);

/* The sweep alone (once a transaction; inside one, under the write lock). */
int ledger_sweep(ledger *l, cs_err *e);

/*
 * Hold SIGINT, SIGTERM and SIGHUP around a short critical section (freeze,
 * append, commit); release delivers what arrived meanwhile, after the
 * commit or rollback. Nested calls count.
 */
void ledger_signals_hold(void);
void ledger_signals_release(void);

/* ---- the study plan (plan.c) ---- */

/*
 * The plan of the latest `study` record (up to seq as_of, 0: all): doc is
 * the study document, plan its "plan" section (NULL: none registered),
 * specs the record's "plan_specs" [{"path","sha256","class"}], where class
 * is "design", "holdout" or "sceptic". first_run_start is the seq of the
 * first run_start record (0: none; the plan froze there). All borrowed
 * from rec; free with ledger_plan_free.
 */
typedef struct ledger_plan {
	json_t *rec;            /* the study record's payload (owned) */
	json_t *doc, *plan, *specs;
	int64_t study_seq;
	int64_t first_run_start;
} ledger_plan;

int ledger_plan_load(ledger *l, int64_t as_of, ledger_plan *p, cs_err *e);
void ledger_plan_free(ledger_plan *p);
/* The class of a run spec hash: "design", "holdout", "sceptic" or "exploratory" (not planned). */
const char *ledger_plan_class(const ledger_plan *p, const char *sha);
/* The plan's path of a spec hash (borrowed), or NULL. */
const char *ledger_plan_path(const ledger_plan *p, const char *sha);
/* 1 if the plan maps hypothesis id to runs. */
int ledger_plan_maps(const ledger_plan *p, const char *id);
/* Spec hashes the plan maps to hypothesis id under role "runs" or "sceptic" (new array). */
json_t *ledger_plan_hyp_specs(const ledger_plan *p, const char *id, const char *role);
/* Spec hashes of the holdout targets (new array, empty without a plan). */
json_t *ledger_plan_targets(const ledger_plan *p);

/*
 * The study's order on a hypothesis or amendment payload about to be
 * appended: after the first run_start it is post hoc ("post_hoc": true and
 * "access_state"), and verdicts list it as exploratory.
 */
void ledger_mark_post_hoc(ledger *l, json_t *payload);

/* 1 if hypothesis id has a hypothesis or amendment record, 0 if not, -1 on error. */
int ledger_hyp_registered(ledger *l, const char *id, cs_err *e);
/* 1 if a run_start record names run_id, 0 if not, -1 on error. */
int ledger_run_exists(ledger *l, const char *run_id, cs_err *e);

/*
 * A `refutation` / `deviation` record with the access state, after checking
 * what it names: an unknown hypothesis or run is exit 5, nothing written.
 */
int ledger_refute(ledger *l, const char *hyp, const char *because, int64_t *seq, cs_err *e);
int ledger_deviate(ledger *l, const char *because, const char *hyp, const char *run_id,
		   int64_t *seq, cs_err *e);
/*
 * `refute` (refute 1) or `deviate` whole: the study in dir opened, the record
 * appended as above and its line printed to out ("refutation recorded as seq
 * N (STATE)"); 0 or the exit code with e set.
 */
int ledger_text_record_verb(const char *dir, int refute, const char *hyp, const char *run_id,
			    const char *because, FILE *out, cs_err *e);

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

/* ---- tree heads, proofs, export (appended; see ledger/proof.c) ---- */

/*
 * The canonical record, the bytes a record's hash is taken over: the
 * canonical JSON of {"kind":K,"payload":P,"seq":N,"ts":T}, i.e. exactly
 *   {"kind":"note","payload":{"text":"x"},"seq":7,"ts":"2026-10-29T05:24:30.123456Z"}
 * and hash(N) = SHA-256(prev || canonical record) over the 32 raw bytes of
 * prev (32 zero bytes for seq 1). Merkle leaf N-1 = SHA-256(0x00 || hash(N)).
 */

/* A tree head: what a C2SP tlog-checkpoint says. */
typedef struct ledger_tree_head {
	char origin[256];
	int64_t size;
	unsigned char root[32];
} ledger_tree_head;

/* What ledger_verify_ex saw: record count, current root, raw blobs checked. */
typedef struct ledger_verify_info {
	int64_t size;
	unsigned char root[32];
	int64_t raw_blobs;
	int64_t checkpoint_size; /* -1 without a checkpoint */
	int keyed;               /* the study has a signing key (else: unsigned, made before keys) */
	int64_t signed_size;     /* keyed: the newest signed size (= size when verify passed) */
} ledger_verify_info;

/* ledger_verify, also reporting what it checked (info may be NULL). */
int ledger_verify_ex(ledger *l, const char *checkpoint_text, ledger_verify_info *info, cs_err *e);

/*
 * ledger_verify_ex, checking the signatures against vkey, a verifier key
 * the caller trusts ("<name>+<hash>+<base64>", from `log key` kept
 * elsewhere), instead of the one the study holds (vkey NULL). A signed
 * study verifies only if a checkpoint signed by its key covers every
 * record and the log has the signed roots at the signed sizes (exit 4:
 * records appended without the key; a rewrite below a signed size). A
 * given checkpoint_text that carries a signature by the study's key must
 * verify too.
 */
int ledger_verify_pinned(ledger *l, const char *checkpoint_text, const char *vkey,
			 ledger_verify_info *info, cs_err *e);

/* The study's verifier key "<origin>+<hash>+<base64>" into out; exit 5 for an unsigned study. */
int ledger_key(ledger *l, char *out, size_t cap, cs_err *e);

/* 1 if the study has a signing key (made by an init that makes keys), else 0. */
int ledger_signed(const ledger *l);

/* The study's origin (borrowed). */
const char *ledger_origin(const ledger *l);

/*
 * The signed checkpoint of the whole log (caller frees): the newest one
 * the study signed, after recomputing every hash and checking that it
 * covers every record with the root they have (exit 4 otherwise). Exit 5
 * for an unsigned study.
 */
int ledger_checkpoint_signed(ledger *l, char **note, cs_err *e);

/* Checkpoint of the whole log under origin (NULL: the origin stored at init); caller frees. */
int ledger_checkpoint_origin(ledger *l, const char *origin, char **text, cs_err *e);

/* Format "<origin>\n<size>\n<base64 root>\n"; caller frees *text. */
int ledger_checkpoint_format(const char *origin, int64_t size, const unsigned char root[32],
			     char **text, cs_err *e);

/*
 * Parse a checkpoint (the body, optionally followed by extension lines and
 * a blank line with signature lines, which are checked by verify, not
 * here). name is for messages. Exit 5 with the line and what was expected
 * on bad input.
 */
int ledger_checkpoint_parse(const char *text, size_t len, const char *name, ledger_tree_head *out,
			    cs_err *e);

/*
 * A checkpoint signed by vkey ("<origin>+<hash>+<base64>", as `log key`
 * prints): its origin line is the key's name and the key's signature on
 * it verifies. name is for messages. 0; exit 5 for a malformed key;
 * exit 4 when the note is not signed by that key or names another origin.
 */
int ledger_checkpoint_check_key(const char *text, size_t len, const char *vkey, const char *name,
				cs_err *e);

/* A root hash given by hand: 64 hex digits or 44 characters of base64; 0 or -1. */
int ledger_root_parse(const char *s, unsigned char root[32]);

enum { LEDGER_PROOF_INCLUSION = 1, LEDGER_PROOF_CONSISTENCY = 2 };

/*
 * A proof as `coldstudy log prove` prints it (JSON):
 *   {"type":"inclusion","seq":S,"leaf_index":S-1,"tree_size":N,
 *    "record_hash":hex,"leaf_hash":hex,"root":hex,"hashes":[hex,...]}
 *   {"type":"consistency","old_size":M,"tree_size":N,"old_root":hex,
 *    "root":hex,"hashes":[hex,...]}
 */
typedef struct ledger_proof {
	int type;
	int64_t leaf_index;             /* inclusion */
	int64_t old_size;               /* consistency */
	int64_t tree_size;
	unsigned char record_hash[32];  /* inclusion: the leaf's data */
	unsigned char old_root[32];     /* consistency */
	unsigned char root[32];
	unsigned char (*hashes)[32];    /* owned */
	size_t n_hashes;
} ledger_proof;

/* Inclusion proof of record seq in the tree of tree_size records (<= 0: the whole log). */
int ledger_prove_inclusion(ledger *l, int64_t seq, int64_t tree_size, ledger_proof *out,
			   cs_err *e);
/* Consistency proof from old_size to new_size (<= 0: the whole log). */
int ledger_prove_consistency(ledger *l, int64_t old_size, int64_t new_size, ledger_proof *out,
			     cs_err *e);
void ledger_proof_free(ledger_proof *p);
/* JSON text of a proof (caller frees). */
int ledger_proof_to_json(const ledger_proof *p, char **out, cs_err *e);
/* Parse a proof's JSON strictly (unknown keys, bad hex, sizes out of range: exit 5). */
int ledger_proof_parse(const char *buf, size_t len, const char *name, ledger_proof *out,
		       cs_err *e);
/* Check a proof against its own root(s); 0 valid, CS_EXIT_VERIFY with the reason. */
int ledger_proof_verify(const ledger_proof *p, cs_err *e);

/* ---- a proof against a tree head one trusts (ledger/anchor.c) ---- */

/* Read and parse a checkpoint file (at most 64 KiB); *text new (caller frees). */
int ledger_checkpoint_read(const char *path, char **text, ledger_tree_head *th, cs_err *e);
/*
 * Read the proof in file ("-": stdin; at most 64 KiB) and check it against
 * a trusted tree head: the checkpoint file cpf (with vkey, it must carry
 * that key's signature) and/or the root anchor (written as roots, for
 * messages), and with oldf, a consistency proof must start at that old
 * checkpoint; then the proof itself. 0 with *p filled (free with
 * ledger_proof_free); exit 4 naming what differs, exit 5 for bad input.
 */
int ledger_proof_check(const char *file, const char *cpf, const char *vkey,
		       const unsigned char *anchor, const char *roots, const char *oldf,
		       ledger_proof *p, cs_err *e);

/*
 * `log verify`'s report of info: the records, raw blobs and root; who
 * signed (origin; pinned: the key was given, not the study's own) or that
 * the study is unsigned; with th, the checkpoint cpf it extends. Lines, or
 * one JSON object with json.
 */
void ledger_verify_print(const ledger_verify_info *info, const char *origin, int pinned,
			 const ledger_tree_head *th, const char *cpf, int json, FILE *out);
/*
 * `log verify` whole (anchor.c): the checkpoint file cpf read (NULL: none),
 * DIR's ledger opened and verified against it and vkey, the report printed.
 */
int ledger_verify_verb(const char *dir, const char *cpf, const char *vkey, int json, FILE *out,
		       cs_err *e);

/*
 * `log checkpoint`'s output (show.c): the signed checkpoint (with origin,
 * or for an unsigned study, the unsigned body under that origin) as its
 * note, or with json one object: origin, size, root_hex, signed, note.
 */
int ledger_checkpoint_print(ledger *l, const char *origin, int json, FILE *out, cs_err *e);
/* `log verify-proof`'s line for a checked proof. */
void ledger_proof_print(const ledger_proof *p, FILE *out);
/* `log prove`: the inclusion proof of record seq (> 0), else the consistency proof from old_size, as JSON. */
int ledger_prove_print(ledger *l, int64_t seq, int64_t old_size, int64_t size, FILE *out, cs_err *e);

/*
 * Write the log as JSONL: per record, the canonical JSON of
 * {"hash","kind","payload","prev","seq","ts"}, one line each, in seq order;
 * byte-identical for the same ledger.
 */
int ledger_export(ledger *l, FILE *out, cs_err *e);

/* ---- C2SP tlog-tiles (ledger/tiles.c) ---- */

/* The C2SP path of level's tile n of width w (level -1: the entry bundle); 0 or -1. */
int ledger_tile_path(int level, uint64_t n, unsigned w, char *out, size_t cap);

/*
 * Call cb(path, data, len, ud) for every tile and entry bundle of the tree
 * that checkpoint note (signed or not) names which the tree of old_size
 * records did not have (old_size 0: all of them), after recomputing every
 * record hash up to the note's size and checking its root (exit 4). cb
 * returns 0 or an exit code that stops the walk. *count = tiles passed.
 */
int ledger_tiles_foreach(ledger *l, const char *note, int64_t old_size,
			 int (*cb)(const char *path, const void *data, size_t len, void *ud),
			 void *ud, int64_t *count, cs_err *e);

/*
 * Is the checkpoint note (len bytes, named src in messages) an ancestor of
 * this log at size: signed by the study's key (a signed study), of its
 * origin, no larger, with the root this log has at its size? 0 with
 * *old_size its size, or exit 4 saying which.
 */
int ledger_check_ancestor(ledger *l, const char *note, size_t len, const char *src,
			  int64_t size, int64_t *old_size, cs_err *e);

/*
 * Write the log's tiles and its (signed) checkpoint under outdir, the
 * checkpoint last. A checkpoint already there must be an ancestor
 * (ledger_check_ancestor, exit 4). Tiles already there with the same
 * bytes are left (counted in *same); one with other bytes is refused
 * (exit 4). *note_out
 * is the checkpoint written (caller frees).
 */
int ledger_tiles_write(ledger *l, const char *outdir, int64_t *written, int64_t *same,
		       char **note_out, cs_err *e);

#endif
