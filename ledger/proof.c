/*
 * proof.c - what the ledger shows to people who do not have its database:
 * checkpoints of the log (their text is checkpoint.c's), inclusion and
 * consistency proofs as JSON, and the JSONL export.
 *
 * The proof parser reads what a user hands in, so it is strict and fuzzed
 * (tests/ledger/fuzz_proof.c): every byte is accounted for, sizes are
 * bounded, hex and base64 are exact.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 */
#include "ledger_int.h"

#include <stdlib.h>
#include <string.h>

#define PROOF_HASHES_MAX 128

int ledger_checkpoint_origin(ledger *l, const char *origin, char **text, cs_err *e)
{
	unsigned char root[32];
	int64_t n;
	int rc;

	*text = NULL;
	if (!origin)
		origin = l->origin;
	/* size and root from one read snapshot, so a concurrent append cannot split them */
	if (sqlite3_exec(l->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return lg_sqlerr(l, e, "cannot start a read");
	n = ledger_size(l);
	rc = n < 0 ? lg_sqlerr(l, e, "cannot count records") : ledger_root(l, n, root, e);
	sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL);
	if (rc)
		return rc;
	return ledger_checkpoint_format(origin, n, root, text, e);
}

int ledger_signed(const ledger *l)
{
	return l->keyed;
}

const char *ledger_origin(const ledger *l)
{
	return l->origin;
}

int ledger_key(ledger *l, char *out, size_t cap, cs_err *e)
{
	if (!l->keyed)
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: unsigned study: it was made before studies had keys, so it "
				  "has no verifier key",
				  l->dir);
	if (lg_vkey_format(l->vkey.name, l->vkey.pub, out, cap))
		return cs_err_set(e, CS_EXIT_INTERNAL, "verifier key too long");
	return 0;
}

int ledger_checkpoint_check_key(const char *text, size_t len, const char *vkey, const char *name,
				cs_err *e)
{
	lg_vkey v;
	size_t tl = 0, ol;
	char why[256];
	int r;

	if (lg_vkey_parse(vkey, strlen(vkey), &v))
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "--key: not a verifier key '<origin>+<hash>+<base64>' (as `log key` "
				  "prints): '%.200s'",
				  vkey);
	ol = strcspn(text, "\n");
	if (ol != strlen(v.name) || memcmp(text, v.name, ol))
		return cs_err_set(e, CS_EXIT_VERIFY, "%s: origin '%.*s' is not the key's ('%s')", name,
				  (int) (ol > 200 ? 200 : ol), text, v.name);
	r = lg_note_open(text, len, &v, &tl, why, sizeof(why));
	if (r != 1)
		return cs_err_set(e, CS_EXIT_VERIFY, "%s: not signed by the key given: %s", name,
				  r == 0 ? "no signature by it" : why);
	return 0;
}

int ledger_checkpoint_signed(ledger *l, char **note, cs_err *e)
{
	ledger_verify_info vi;
	sqlite3_stmt *st = NULL;
	int rc;

	*note = NULL;
	if (!l->keyed)
		return ledger_key(l, NULL, 0, e);
	/* every hash recomputed, the newest signature checked to cover them all */
	rc = ledger_verify_ex(l, NULL, &vi, e);
	if (rc)
		return rc;
	if (sqlite3_prepare_v2(l->db, "SELECT note FROM signed WHERE size = ?1", -1, &st, NULL) !=
	    SQLITE_OK)
		return lg_sqlerr(l, e, "cannot read signed checkpoints");
	sqlite3_bind_int64(st, 1, vi.signed_size);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		*note = strdup((const char *) sqlite3_column_text(st, 0));
	else
		rc = cs_err_set(e, CS_EXIT_VERIFY,
				"%s/ledger.db: no signed checkpoint of size %lld in the ledger "
				"(only in %s/checkpoint)",
				l->dir, (long long) vi.signed_size, l->dir);
	if (!rc && !*note)
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	sqlite3_finalize(st);
	return rc;
}

int ledger_checkpoint(ledger *l, char **text, cs_err *e)
{
	return ledger_checkpoint_origin(l, NULL, text, e);
}

void ledger_proof_free(ledger_proof *p)
{
	if (!p)
		return;
	free(p->hashes);
	p->hashes = NULL;
	p->n_hashes = 0;
}

/* Resolve a requested tree size (<= 0: the whole log) against the log's size n. */
static int resolve_size(ledger *l, int64_t want, int64_t *size, cs_err *e)
{
	int64_t n = ledger_size(l);

	if (n < 0)
		return lg_sqlerr(l, e, "cannot count records");
	if (want <= 0)
		want = n;
	if (want > n)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: tree size %lld, but the log has %lld records",
				  l->dir, (long long) want, (long long) n);
	*size = want;
	return 0;
}

int ledger_prove_inclusion(ledger *l, int64_t seq, int64_t tree_size, ledger_proof *out,
			   cs_err *e)
{
	unsigned char(*leaves)[32] = NULL;
	ledger_record r;
	int64_t n = 0; /* resolve_size sets it; gcc -O3 cannot see that on its error path */
	int rc;

	memset(out, 0, sizeof(*out));
	if (sqlite3_exec(l->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return lg_sqlerr(l, e, "cannot start a read");
	rc = resolve_size(l, tree_size, &n, e);
	if (rc)
		goto out;
	if (seq < 1 || seq > n) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "seq %lld is not in a tree of %lld records",
				(long long) seq, (long long) n);
		goto out;
	}
	rc = lg_load_leaves(l, n, &leaves, e);
	if (rc)
		goto out;
	rc = ledger_get(l, seq, &r, e);
	if (rc)
		goto out;
	lg_unhex(r.hash, strlen(r.hash), out->record_hash, 32);
	ledger_record_free(&r);
	out->type = LEDGER_PROOF_INCLUSION;
	out->leaf_index = seq - 1;
	out->tree_size = n;
	merkle_root((const unsigned char(*)[32]) leaves, (size_t) n, out->root);
	if (merkle_inclusion_proof((const unsigned char(*)[32]) leaves, (size_t) n,
				   (size_t) (seq - 1), &out->hashes, &out->n_hashes))
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
out:
	sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL);
	free(leaves);
	if (rc)
		ledger_proof_free(out);
	return rc;
}

int ledger_prove_consistency(ledger *l, int64_t old_size, int64_t new_size, ledger_proof *out,
			     cs_err *e)
{
	unsigned char(*leaves)[32] = NULL;
	int64_t n = 0; /* set by resolve_size (gcc -O3 cannot see it) */
	int rc;

	memset(out, 0, sizeof(*out));
	if (sqlite3_exec(l->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return lg_sqlerr(l, e, "cannot start a read");
	rc = resolve_size(l, new_size, &n, e);
	if (rc)
		goto out;
	if (old_size < 0 || old_size > n) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "old size %lld is not within 0..%lld",
				(long long) old_size, (long long) n);
		goto out;
	}
	rc = lg_load_leaves(l, n, &leaves, e);
	if (rc)
		goto out;
	out->type = LEDGER_PROOF_CONSISTENCY;
	out->old_size = old_size;
	out->tree_size = n;
	merkle_root((const unsigned char(*)[32]) leaves, (size_t) old_size, out->old_root);
	merkle_root((const unsigned char(*)[32]) leaves, (size_t) n, out->root);
	if (merkle_consistency_proof((const unsigned char(*)[32]) leaves, (size_t) n,
				     (size_t) old_size, &out->hashes, &out->n_hashes))
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
out:
	sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL);
	free(leaves);
	if (rc)
		ledger_proof_free(out);
	return rc;
}

/* A JSON string of the hex of 32 bytes (new reference). */
static json_t *hex_json(const unsigned char h[32])
{
	char hx[65];

	cs_hex(h, 32, hx);
	return json_string(hx);
}

int ledger_proof_to_json(const ledger_proof *p, char **out, cs_err *e)
{
	json_t *o = json_object(), *arr = json_array();
	unsigned char leaf[32];
	int rc;

	*out = NULL;
	if (!o || !arr) {
		json_decref(o);
		json_decref(arr);
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	}
	for (size_t i = 0; i < p->n_hashes; i++)
		json_array_append_new(arr, hex_json(p->hashes[i]));
	if (p->type == LEDGER_PROOF_INCLUSION) {
		merkle_leaf_hash(p->record_hash, 32, leaf);
		json_object_set_new(o, "type", json_string("inclusion"));
		json_object_set_new(o, "seq", json_integer(p->leaf_index + 1));
		json_object_set_new(o, "leaf_index", json_integer(p->leaf_index));
		json_object_set_new(o, "record_hash", hex_json(p->record_hash));
		json_object_set_new(o, "leaf_hash", hex_json(leaf));
	} else {
		json_object_set_new(o, "type", json_string("consistency"));
		json_object_set_new(o, "old_size", json_integer(p->old_size));
		json_object_set_new(o, "old_root", hex_json(p->old_root));
	}
	json_object_set_new(o, "tree_size", json_integer(p->tree_size));
	json_object_set_new(o, "root", hex_json(p->root));
	json_object_set_new(o, "hashes", arr);
	rc = cs_json_canonical(o, out, NULL, e);
	json_decref(o);
	return rc;
}

/* Member key of o as a 32-byte hex hash; 0 or exit 5. */
static int get_hash(const json_t *o, const char *key, const char *name, unsigned char out[32],
		    cs_err *e)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_string(v) || lg_unhex(json_string_value(v), json_string_length(v), out, 32))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.%s: expected 64 hex digits", name,
				  key);
	return 0;
}

/* Member key of o as an integer in [lo, INT64_MAX]; 0 or exit 5. */
static int get_int(const json_t *o, const char *key, const char *name, int64_t lo, int64_t *out,
		   cs_err *e)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < lo)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.%s: expected an integer >= %lld", name,
				  key, (long long) lo);
	*out = (int64_t) json_integer_value(v);
	return 0;
}

int ledger_proof_parse(const char *buf, size_t len, const char *name, ledger_proof *out,
		       cs_err *e)
{
	static const char *const inc_keys[] = {"type",      "seq",  "leaf_index", "tree_size",
					       "record_hash", "leaf_hash", "root", "hashes", NULL};
	static const char *const con_keys[] = {"type", "old_size", "tree_size", "old_root",
					       "root", "hashes",   NULL};
	const char *const *keys;
	json_t *doc = NULL, *v, *arr;
	const char *type, *k;
	unsigned char leaf[32], want[32];
	int rc;

	memset(out, 0, sizeof(*out));
	rc = cs_json_load_buf(buf, len, name, &doc, e);
	if (rc)
		return rc;
	v = json_object_get(doc, "type");
	type = json_is_string(v) ? json_string_value(v) : "";
	if (!strcmp(type, "inclusion")) {
		out->type = LEDGER_PROOF_INCLUSION;
		keys = inc_keys;
	} else if (!strcmp(type, "consistency")) {
		out->type = LEDGER_PROOF_CONSISTENCY;
		keys = con_keys;
	} else {
		rc = cs_err_set(e, CS_EXIT_BADINPUT,
				"%s: $.type: expected \"inclusion\" or \"consistency\"", name);
		goto out;
	}
	json_object_foreach(doc, k, v) {
		int known = 0;

		for (size_t i = 0; keys[i]; i++)
			known |= !strcmp(keys[i], k);
		if (!known) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.%s: unknown key in a %s proof",
					name, k, type);
			goto out;
		}
	}
	if ((rc = get_int(doc, "tree_size", name, 0, &out->tree_size, e)) ||
	    (rc = get_hash(doc, "root", name, out->root, e)))
		goto out;
	if (out->type == LEDGER_PROOF_INCLUSION) {
		if ((rc = get_int(doc, "leaf_index", name, 0, &out->leaf_index, e)) ||
		    (rc = get_hash(doc, "record_hash", name, out->record_hash, e)))
			goto out;
		if (json_object_get(doc, "seq")) {
			int64_t seq = 0;

			if ((rc = get_int(doc, "seq", name, 1, &seq, e)))
				goto out;
			if (seq != out->leaf_index + 1) {
				rc = cs_err_set(e, CS_EXIT_BADINPUT,
						"%s: $.seq: expected leaf_index + 1 = %lld", name,
						(long long) out->leaf_index + 1);
				goto out;
			}
		}
		if (json_object_get(doc, "leaf_hash")) {
			if ((rc = get_hash(doc, "leaf_hash", name, leaf, e)))
				goto out;
			merkle_leaf_hash(out->record_hash, 32, want);
			if (memcmp(leaf, want, 32)) {
				rc = cs_err_set(e, CS_EXIT_BADINPUT,
						"%s: $.leaf_hash: is not the leaf hash of $.record_hash",
						name);
				goto out;
			}
		}
	} else {
		if ((rc = get_int(doc, "old_size", name, 0, &out->old_size, e)) ||
		    (rc = get_hash(doc, "old_root", name, out->old_root, e)))
			goto out;
	}
	arr = json_object_get(doc, "hashes");
	if (!json_is_array(arr) || json_array_size(arr) > PROOF_HASHES_MAX) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.hashes: expected an array of at most %d "
				"hashes", name, PROOF_HASHES_MAX);
		goto out;
	}
	out->n_hashes = json_array_size(arr);
	out->hashes = calloc(out->n_hashes ? out->n_hashes : 1, 32);
	if (!out->hashes) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < out->n_hashes; i++) {
		v = json_array_get(arr, i);
		if (!json_is_string(v) ||
		    lg_unhex(json_string_value(v), json_string_length(v), out->hashes[i], 32)) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.hashes[%zu]: expected 64 hex digits",
					name, i);
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(doc);
	if (rc)
		ledger_proof_free(out);
	return rc;
}

int ledger_proof_verify(const ledger_proof *p, cs_err *e)
{
	unsigned char leaf[32];

	if (p->type == LEDGER_PROOF_INCLUSION) {
		merkle_leaf_hash(p->record_hash, 32, leaf);
		if (p->tree_size <= 0 || p->leaf_index >= p->tree_size ||
		    !merkle_verify_inclusion(leaf, (size_t) p->leaf_index, (size_t) p->tree_size,
					     (const unsigned char(*)[32]) p->hashes, p->n_hashes,
					     p->root))
			return cs_err_set(e, CS_EXIT_VERIFY,
					  "inclusion proof of seq %lld in a tree of %lld records "
					  "does not lead to the root",
					  (long long) p->leaf_index + 1, (long long) p->tree_size);
		return 0;
	}
	if (p->type == LEDGER_PROOF_CONSISTENCY) {
		if (p->old_size > p->tree_size ||
		    !merkle_verify_consistency((size_t) p->old_size, (size_t) p->tree_size,
					       p->old_root, p->root,
					       (const unsigned char(*)[32]) p->hashes, p->n_hashes))
			return cs_err_set(e, CS_EXIT_VERIFY,
					  "consistency proof from size %lld to %lld does not hold",
					  (long long) p->old_size, (long long) p->tree_size);
		return 0;
	}
	return cs_err_set(e, CS_EXIT_BADINPUT, "proof of unknown type");
}

int ledger_export(ledger *l, FILE *out, cs_err *e)
{
	lg_walk w = {0};
	char prev[65], hash[65];
	int s, rc = 0;

	/* one read snapshot, every hash recomputed before it is printed */
	if (sqlite3_exec(l->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return lg_sqlerr(l, e, "cannot start a read");
	if ((rc = lg_walk_begin(l, &w, -1, e)))
		goto out;
	while ((s = lg_walk_next(l, &w, e)) == 1) {
		cs_hex(w.prev, 32, prev);
		cs_hex(w.hash, 32, hash);
		/* keys in sorted order, payload already canonical: the line is canonical JSON */
		fprintf(out, "{\"hash\":\"%s\",\"kind\":\"%s\",\"payload\":%s,\"prev\":\"%s\","
			     "\"seq\":%lld,\"ts\":\"%s\"}\n",
			hash, w.kind, w.payload, prev, (long long) w.seq, w.ts);
	}
	if (s < 0)
		rc = e->code;
	if (!rc && (fflush(out) || ferror(out)))
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "export: write failed");
out:
	lg_walk_end(&w);
	sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL);
	return rc;
}
