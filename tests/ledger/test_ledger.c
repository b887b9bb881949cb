/*
 * test_ledger.c - the ledger library: init/open, appends and the chain,
 * timestamps, triggers, raw blobs, find/foreach/access state, verify with
 * and without checkpoints, the checkpoint and proof codecs, export.
 * Each test works in its own temporary study directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "ledger_int.h"

/* A fresh study directory under /tmp (removed by teardown). */
static int setup(void **state)
{
	char *dir = strdup("/tmp/cs-ledger-test-XXXXXX");

	if (!mkdtemp(dir))
		return -1;
	*state = dir;
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", (char *) *state);
	if (system(cmd) != 0)
		return -1;
	free(*state);
	return 0;
}

/* Open a new ledger in the state's directory. */
static ledger *fresh(void **state)
{
	cs_err e = {0};
	ledger *l = NULL;

	assert_int_equal(ledger_init(*state, &e), 0);
	assert_int_equal(ledger_open(*state, &l, &e), 0);
	return l;
}

/* Append a note {"text": t, "id": id?}. */
static int64_t note(ledger *l, const char *kind, const char *id, int i)
{
	json_t *p = json_pack("{s:s, s:i}", "text", "a note", "i", i);
	int64_t seq = 0;
	cs_err e = {0};

	if (id)
		json_object_set_new(p, "id", json_string(id));
	assert_int_equal(ledger_append(l, kind, p, &seq, &e), 0);
	json_decref(p);
	return seq;
}

/* Run SQL directly on DIR/ledger.db (the tamperer's view); returns the SQLite code. */
static int raw_sql(const char *dir, const char *sql)
{
	char path[512];
	sqlite3 *db;
	int rc;

	snprintf(path, sizeof(path), "%s/ledger.db", dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

static void test_init_open(void **state)
{
	cs_err e = {0};
	ledger *l = NULL;
	struct stat st;
	char path[512];

	/* not a study: exit 5 */
	assert_int_equal(ledger_open(*state, &l, &e), CS_EXIT_BADINPUT);
	assert_non_null(strstr(e.msg, "not a study"));
	l = fresh(state);
	snprintf(path, sizeof(path), "%s/frozen", (char *) *state);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(ledger_size(l), 0);
	assert_string_equal(ledger_access_state(l), "none");
	ledger_close(l);
	/* a second init is refused */
	assert_int_equal(ledger_init(*state, &e), CS_EXIT_REFUSED);
	/* a wrong format is exit 4 */
	assert_int_equal(raw_sql(*state, "PRAGMA user_version=99"), SQLITE_OK);
	assert_int_equal(ledger_open(*state, &l, &e), CS_EXIT_VERIFY);
	assert_null(l);
}

static void test_append_chain(void **state)
{
	ledger *l = fresh(state);
	ledger_record a, b;
	cs_err e = {0};
	unsigned char prev[32] = {0}, h[32];
	char hx[65], *rec = NULL;
	size_t cap = 0, n;
	int64_t ua, ub;

	for (int i = 1; i <= 20; i++)
		assert_int_equal(note(l, "note", NULL, i), i);
	assert_int_equal(ledger_size(l), 20);
	for (int64_t s = 1; s <= 20; s++) {
		assert_int_equal(ledger_get(l, s, &a, &e), 0);
		assert_int_equal(a.seq, s);
		assert_string_equal(a.kind, "note");
		/* the documented canonical record, recomputed independently */
		n = lg_record_bytes(&rec, &cap, s, a.ts, a.kind, a.payload, strlen(a.payload));
		{
			json_t *o = json_pack("{s:s, s:o, s:I, s:s}", "kind", a.kind, "payload",
					      json_loads(a.payload, 0, NULL), "seq", (json_int_t) s,
					      "ts", a.ts);
			char *canon;
			size_t clen;

			assert_int_equal(cs_json_canonical(o, &canon, &clen, &e), 0);
			assert_int_equal(clen, n);
			assert_memory_equal(canon, rec, n);
			free(canon);
			json_decref(o);
		}
		cs_hex(prev, 32, hx);
		assert_string_equal(a.prev, hx);
		{
			unsigned char *buf = malloc(32 + n);

			memcpy(buf, prev, 32);
			memcpy(buf + 32, rec, n);
			cs_sha256(buf, 32 + n, h);
			free(buf);
		}
		cs_hex(h, 32, hx);
		assert_string_equal(a.hash, hx);
		memcpy(prev, h, 32);
		if (s > 1) {
			assert_int_equal(ledger_get(l, s - 1, &b, &e), 0);
			assert_int_equal(cs_parse_rfc3339(a.ts, &ua), 0);
			assert_int_equal(cs_parse_rfc3339(b.ts, &ub), 0);
			assert_true(ua > ub); /* strictly increasing */
			ledger_record_free(&b);
		}
		ledger_record_free(&a);
	}
	free(rec);
	assert_int_equal(ledger_get(l, 21, &a, &e), CS_EXIT_BADINPUT);
	assert_int_equal(ledger_verify(l, NULL, &e), 0);
	/* payloads must be objects, kinds [a-z_] */
	{
		json_t *arr = json_array();

		assert_int_not_equal(ledger_append(l, "note", arr, NULL, &e), 0);
		json_decref(arr);
		arr = json_pack("{s:i}", "a", 1);
		assert_int_not_equal(ledger_append(l, "No\"te", arr, NULL, &e), 0);
		json_decref(arr);
	}
	assert_int_equal(ledger_size(l), 20);
	ledger_close(l);
}

static void test_transactions_and_triggers(void **state)
{
	ledger *l = fresh(state);
	cs_err e = {0};

	assert_int_equal(ledger_begin(l, &e), 0);
	note(l, "note", NULL, 1);
	note(l, "note", NULL, 2);
	ledger_rollback(l);
	assert_int_equal(ledger_size(l), 0);
	assert_int_equal(ledger_begin(l, &e), 0);
	note(l, "note", NULL, 1);
	note(l, "note", NULL, 2);
	assert_int_equal(ledger_commit(l, &e), 0);
	assert_int_equal(ledger_size(l), 2);
	assert_int_equal(ledger_verify(l, NULL, &e), 0);
	ledger_close(l);
	/* the append-only triggers */
	assert_int_equal(raw_sql(*state, "UPDATE records SET kind='x' WHERE seq=1"),
			 SQLITE_CONSTRAINT);
	assert_int_equal(raw_sql(*state, "DELETE FROM records WHERE seq=2"), SQLITE_CONSTRAINT);
	assert_int_equal(raw_sql(*state, "DELETE FROM meta"), SQLITE_CONSTRAINT);
	assert_int_equal(raw_sql(*state, "INSERT INTO raw VALUES('a','b','c');"
					 "UPDATE raw SET body='d'"),
			 SQLITE_CONSTRAINT);
}

static void test_raw_blobs(void **state)
{
	ledger *l = fresh(state);
	json_t *rows = json_pack("[{s:i, s:f}, {s:i, s:f}]", "q", 1, "ms", 12.5, "q", 2, "ms", 7.25);
	json_t *back = NULL;
	char sha[65], sha2[65], sql[256];
	cs_err e = {0};
	ledger_verify_info info;

	assert_int_equal(ledger_put_raw(l, "queries", rows, sha, &e), 0);
	assert_int_equal(ledger_put_raw(l, "queries", rows, sha2, &e), 0); /* idempotent */
	assert_string_equal(sha, sha2);
	assert_int_equal(ledger_get_raw(l, sha, &back, &e), 0);
	assert_true(json_equal(rows, back));
	json_decref(back);
	assert_int_equal(ledger_get_raw(l, "00", &back, &e), CS_EXIT_BADINPUT);
	assert_int_equal(ledger_verify_ex(l, NULL, &info, &e), 0);
	assert_int_equal(info.raw_blobs, 1);
	ledger_close(l);
	/* change a raw blob behind the triggers' back: verify names it */
	snprintf(sql, sizeof(sql),
		 "DROP TRIGGER raw_no_update; UPDATE raw SET body = replace(body, '12.5', '1.5')"
		 " WHERE sha = '%s'",
		 sha);
	assert_int_equal(raw_sql(*state, sql), SQLITE_OK);
	assert_int_equal(ledger_open(*state, &l, &e), 0);
	assert_int_equal(ledger_verify(l, NULL, &e), CS_EXIT_VERIFY);
	assert_non_null(strstr(e.msg, sha));
	assert_int_equal(ledger_get_raw(l, sha, &back, &e), CS_EXIT_VERIFY);
	ledger_close(l);
	json_decref(rows);
}

static void test_raw_reference_missing(void **state)
{
	ledger *l = fresh(state);
	json_t *rows = json_pack("[{s:i}]", "q", 1), *run;
	char sha[65];
	cs_err e = {0};

	note(l, "note", NULL, 0);
	assert_int_equal(ledger_put_raw(l, "queries", rows, sha, &e), 0);
	run = json_pack("{s:s, s:{s:s}}", "run_id", "R1", "raw", "queries", sha);
	assert_int_equal(ledger_append(l, "run", run, NULL, &e), 0);
	assert_int_equal(ledger_verify(l, NULL, &e), 0);
	ledger_close(l);
	assert_int_equal(raw_sql(*state, "DROP TRIGGER raw_no_delete; DELETE FROM raw"), SQLITE_OK);
	assert_int_equal(ledger_open(*state, &l, &e), 0);
	assert_int_equal(ledger_verify(l, NULL, &e), CS_EXIT_VERIFY);
	assert_non_null(strstr(e.msg, "seq 2: raw blob"));
	ledger_close(l);
	json_decref(rows);
	json_decref(run);
}

static int count_cb(const ledger_record *r, void *ud)
{
	(*(int *) ud)++;
	return r->seq == 4; /* stop at seq 4 */
}

static void test_find_foreach_state(void **state)
{
	ledger *l = fresh(state);
	ledger_record r;
	cs_err e = {0};
	int n = 0;

	note(l, "hypothesis", "H1", 1);
	note(l, "hypothesis", "H2", 2);
	note(l, "amendment", "H1", 3);
	assert_int_equal(ledger_find(l, "hypothesis", "H1", &r, &e), 1);
	assert_int_equal(r.seq, 1);
	ledger_record_free(&r);
	assert_int_equal(ledger_find(l, NULL, "H1", &r, &e), 1);
	assert_int_equal(r.seq, 3);
	ledger_record_free(&r);
	assert_int_equal(ledger_find(l, "hypothesis", "H9", &r, &e), 0);
	assert_int_equal(ledger_foreach(l, "hypothesis", count_cb, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_string_equal(ledger_access_state(l), "none");
	note(l, "run_start", NULL, 4);
	assert_string_equal(ledger_access_state(l), "runs started");
	n = 0;
	assert_int_equal(ledger_foreach(l, NULL, count_cb, &n, &e), 0);
	assert_int_equal(n, 4); /* the callback stopped it */
	note(l, "run", NULL, 5);
	assert_string_equal(ledger_access_state(l), "results seen");
	note(l, "score", NULL, 6);
	assert_string_equal(ledger_access_state(l), "holdout seen");
	ledger_close(l);
}

/*
 * Signed notes against golang.org/x/mod/sumdb/note's own example (note.go):
 * the same signer key signs the same text to the same bytes (Ed25519 is
 * deterministic), its verifier key prints the same, and the note opens
 * with it; a flipped bit, another key and malformed lines are told apart.
 */
static void test_signed_note(void **state)
{
	static const char skey[] = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
	static const char vkey[] = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
	static const char text[] = "If you think cryptography is the answer to your problem,\n"
				   "then you don't know what your problem is.\n";
	static const char want[] =
		"If you think cryptography is the answer to your problem,\n"
		"then you don't know what your problem is.\n"
		"\n"
		"\xe2\x80\x94 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
	lg_signer *k = NULL, *other = NULL;
	lg_vkey v, ov;
	char buf[256], why[200], *note = NULL, *osk = NULL;
	size_t tl;
	cs_err e = {0};

	(void) state;
	assert_int_equal(lg_signer_parse(skey, strlen(skey), &k), 0);
	assert_int_equal(lg_vkey_format(k->v.name, k->v.pub, buf, sizeof(buf)), 0);
	assert_string_equal(buf, vkey);
	assert_int_equal(lg_vkey_parse(vkey, strlen(vkey), &v), 0);
	assert_int_equal(v.hash, 0xc74f20a3u);
	assert_int_equal(lg_note_sign(k, text, strlen(text), &note, &e), 0);
	assert_string_equal(note, want);
	assert_int_equal(lg_note_open(note, strlen(note), &v, &tl, why, sizeof(why)), 1);
	assert_int_equal(tl, strlen(text));
	/* a flipped bit in the text: the signature no longer verifies */
	note[3] ^= 1;
	assert_int_equal(lg_note_open(note, strlen(note), &v, &tl, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "does not verify"));
	note[3] ^= 1;
	/* another key of the same name: well formed, not signed by it */
	assert_int_equal(lg_signer_generate("PeterNeumann", &other, &osk, &e), 0);
	ov = other->v;
	assert_int_equal(lg_note_open(note, strlen(note), &ov, &tl, why, sizeof(why)), 0);
	/* a verifier key whose hash does not match, a bad name, a private key as a verifier key */
	assert_int_equal(lg_vkey_parse("PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", 66, &v), -1);
	assert_int_equal(lg_vkey_parse("Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", 67, &v), -1);
	assert_int_equal(lg_vkey_parse(skey, strlen(skey), &v), -1);
	/* malformed notes */
	assert_int_equal(lg_note_open(text, strlen(text), NULL, &tl, why, sizeof(why)), -1);
	assert_int_equal(lg_note_open("a\n\n- x AAAA\n", 13, NULL, &tl, why, sizeof(why)), -1);
	assert_int_equal(lg_note_open("a\n\n\xe2\x80\x94 x AAAAAAA=\n", 18, NULL, &tl, why, sizeof(why)), 1);
	assert_int_equal(lg_note_open("a\n\n\xe2\x80\x94 x AAAAAAA\n", 17, NULL, &tl, why, sizeof(why)), -1);
	free(note);
	free(osk);
	lg_signer_free(k);
	lg_signer_free(other);
}

static void test_checkpoint_codec(void **state)
{
	ledger *l = fresh(state);
	ledger_tree_head th;
	unsigned char root[32];
	char *text = NULL;
	cs_err e = {0};

	assert_int_equal(ledger_checkpoint(l, &text, &e), 0);
	assert_int_equal(ledger_checkpoint_parse(text, strlen(text), "cp", &th, &e), 0);
	assert_int_equal(th.size, 0);
	assert_memory_equal(th.root, lg_empty_root, 32);
	/* a unique origin: "coldstudy/" and the study id, 32 hex digits */
	assert_int_equal(strncmp(th.origin, "coldstudy/", 10), 0);
	assert_int_equal(strlen(th.origin), 42);
	assert_int_equal(strspn(th.origin + 10, "0123456789abcdef"), 32);
	free(text);
	for (int i = 0; i < 5; i++)
		note(l, "note", NULL, i);
	assert_int_equal(ledger_checkpoint_origin(l, "example.org/study", &text, &e), 0);
	assert_int_equal(ledger_checkpoint_parse(text, strlen(text), "cp", &th, &e), 0);
	assert_string_equal(th.origin, "example.org/study");
	assert_int_equal(th.size, 5);
	assert_int_equal(ledger_root(l, 5, root, &e), 0);
	assert_memory_equal(th.root, root, 32);
	free(text);
	/* signed-note tail accepted, malformed bodies refused with exit 5 */
	{
		static const char *const good[] = {
			"o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
			"o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\next\n\n— o sig\n",
		};
		static const char *const bad[] = {
			"",
			"o\n",
			"o\n1",
			"o\n01\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
			"o\n-1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
			"o\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU\n",
			"o\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFV=\n", /* non-canonical */
			"o\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
			"\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
			"o\n99999999999999999999\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
			"o\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\ntrailing",
		};
		for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
			assert_int_equal(ledger_checkpoint_parse(good[i], strlen(good[i]), "cp", &th, &e),
					 0);
		assert_memory_equal(th.root, lg_empty_root, 32);
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			assert_int_equal(ledger_checkpoint_parse(bad[i], strlen(bad[i]), "cp", &th, &e),
					 CS_EXIT_BADINPUT);
			assert_non_null(strstr(e.msg, "cp: "));
		}
	}
	ledger_close(l);
}

static void test_verify_with_checkpoints(void **state)
{
	ledger *l = fresh(state);
	char *cp3 = NULL, *cp0 = NULL, *forged = NULL;
	unsigned char junk[32] = {7};
	ledger_verify_info info;
	cs_err e = {0};

	assert_int_equal(ledger_checkpoint(l, &cp0, &e), 0);
	for (int i = 0; i < 3; i++)
		note(l, "note", NULL, i);
	assert_int_equal(ledger_checkpoint(l, &cp3, &e), 0);
	for (int i = 3; i < 11; i++)
		note(l, "note", NULL, i);
	assert_int_equal(ledger_verify_ex(l, cp3, &info, &e), 0);
	assert_int_equal(info.size, 11);
	assert_int_equal(info.checkpoint_size, 3);
	assert_int_equal(ledger_verify(l, cp0, &e), 0);
	assert_int_equal(ledger_checkpoint_format("x", 3, junk, &forged, &e), 0);
	assert_int_equal(ledger_verify(l, forged, &e), CS_EXIT_VERIFY);
	assert_non_null(strstr(e.msg, "no longer extends"));
	free(forged);
	assert_int_equal(ledger_checkpoint_format("x", 12, junk, &forged, &e), 0);
	assert_int_equal(ledger_verify(l, forged, &e), CS_EXIT_VERIFY);
	assert_non_null(strstr(e.msg, "truncated"));
	assert_int_equal(ledger_verify(l, "garbage", &e), CS_EXIT_BADINPUT);
	free(forged);
	free(cp3);
	free(cp0);
	ledger_close(l);
}

static void test_proofs(void **state)
{
	ledger *l = fresh(state);
	ledger_proof p, q;
	char *js = NULL;
	cs_err e = {0};

	for (int i = 0; i < 13; i++)
		note(l, "note", NULL, i);
	for (int64_t size = 1; size <= 13; size++) {
		for (int64_t seq = 1; seq <= size; seq++) {
			assert_int_equal(ledger_prove_inclusion(l, seq, size, &p, &e), 0);
			assert_int_equal(ledger_proof_verify(&p, &e), 0);
			/* JSON round trip keeps it valid */
			assert_int_equal(ledger_proof_to_json(&p, &js, &e), 0);
			assert_int_equal(ledger_proof_parse(js, strlen(js), "p", &q, &e), 0);
			assert_int_equal(ledger_proof_verify(&q, &e), 0);
			assert_int_equal(q.n_hashes, p.n_hashes);
			if (q.n_hashes) {
				q.hashes[0][3] ^= 0x10;
				assert_int_equal(ledger_proof_verify(&q, &e), CS_EXIT_VERIFY);
			}
			ledger_proof_free(&q);
			ledger_proof_free(&p);
			free(js);
		}
		for (int64_t old = 0; old <= size; old++) {
			assert_int_equal(ledger_prove_consistency(l, old, size, &p, &e), 0);
			assert_int_equal(ledger_proof_verify(&p, &e), 0);
			assert_int_equal(ledger_proof_to_json(&p, &js, &e), 0);
			assert_int_equal(ledger_proof_parse(js, strlen(js), "p", &q, &e), 0);
			assert_int_equal(ledger_proof_verify(&q, &e), 0);
			ledger_proof_free(&q);
			ledger_proof_free(&p);
			free(js);
		}
	}
	assert_int_equal(ledger_prove_inclusion(l, 14, 0, &p, &e), CS_EXIT_BADINPUT);
	assert_int_equal(ledger_prove_consistency(l, 3, 20, &p, &e), CS_EXIT_BADINPUT);
	/* strict parser */
	{
		static const char *const bad[] = {
			"{}",
			"{\"type\":\"inclusion\"}",
			"{\"type\":\"consistency\",\"old_size\":-1,\"tree_size\":1,\"old_root\":\"00\","
			"\"root\":\"00\",\"hashes\":[]}",
			"{\"type\":\"inclusion\",\"leaf_index\":0,\"tree_size\":1,\"record_hash\":"
			"\"0000000000000000000000000000000000000000000000000000000000000000\",\"root\":"
			"\"0000000000000000000000000000000000000000000000000000000000000000\","
			"\"hashes\":[],\"extra\":1}",
			"[1]",
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			assert_int_equal(ledger_proof_parse(bad[i], strlen(bad[i]), "p", &q, &e),
					 CS_EXIT_BADINPUT);
	}
	ledger_close(l);
}

static void test_export_deterministic(void **state)
{
	ledger *l = fresh(state);
	char *a = NULL, *b = NULL;
	size_t an = 0, bn = 0;
	FILE *f;
	cs_err e = {0};

	for (int i = 0; i < 7; i++)
		note(l, i % 2 ? "note" : "hypothesis", i % 2 ? NULL : "H1", i);
	f = open_memstream(&a, &an);
	assert_int_equal(ledger_export(l, f, &e), 0);
	fclose(f);
	ledger_close(l);
	assert_int_equal(ledger_open(*state, &l, &e), 0);
	f = open_memstream(&b, &bn);
	assert_int_equal(ledger_export(l, f, &e), 0);
	fclose(f);
	assert_int_equal(an, bn);
	assert_memory_equal(a, b, an);
	/* every line is canonical JSON of the record */
	{
		char *line = a, *nl;
		int lines = 0;

		while ((nl = strchr(line, '\n'))) {
			json_t *o = json_loadb(line, (size_t) (nl - line), 0, NULL);
			char *canon;
			size_t clen;

			assert_non_null(o);
			assert_int_equal(cs_json_canonical(o, &canon, &clen, &e), 0);
			assert_int_equal(clen, (size_t) (nl - line));
			assert_memory_equal(canon, line, clen);
			free(canon);
			json_decref(o);
			line = nl + 1;
			lines++;
		}
		assert_int_equal(lines, 7);
	}
	free(a);
	free(b);
	ledger_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_append_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_transactions_and_triggers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_blobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raw_reference_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find_foreach_state, setup, teardown),
		cmocka_unit_test(test_signed_note),
		cmocka_unit_test_setup_teardown(test_checkpoint_codec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_verify_with_checkpoints, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proofs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_export_deterministic, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
