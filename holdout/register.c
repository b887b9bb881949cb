/*
 * register.c - registration, the first step of a study's order: hypothesis
 * files validated, hashed, frozen and recorded, all or nothing.
 *
 * Every file is validated (hyp_parse_buf) and checked against what is
 * already registered before anything is written; then, inside one
 * IMMEDIATE transaction, each file is frozen (ledger_freeze:
 * DIR/frozen/<id>-<SHA-256 of the file>.json, mode 0444) and its record
 * appended, with SIGINT/SIGTERM held until the commit or rollback. A
 * refusal (guard_registration records it) or a bad file changes nothing
 * else. Frozen copies are named by the file's bytes, so one left behind by
 * a killed register can never pass for another file's copy, and the next
 * register sweeps it.
 */
#include "register.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "hyp.h"
#include "ledger.h"

typedef struct reg_item {
	const char *path;
	hyp *h;
	char file_sha[65];
	char *bytes;          /* the file as read */
	size_t len;
	int64_t prev_seq;     /* latest registered version, 0 if none */
	char prev_sha[65];
	int action;           /* 0 nothing to do, 1 register, 2 amend */
	char frozen[512];     /* "frozen/<id>-<file sha256>.json" once frozen */
} reg_item;

/* The latest hypothesis or amendment record for id; 1 found (seq, sha filled), 0 none, -1 error. */
static int latest_version(ledger *l, const char *id, int64_t *seq, char sha[65], cs_err *e)
{
	ledger_record a, b, *best = NULL;
	int fa, fb, rc = 0;
	json_t *p = NULL;

	fa = ledger_find(l, "hypothesis", id, &a, e);
	if (fa < 0)
		return -1;
	fb = ledger_find(l, "amendment", id, &b, e);
	if (fb < 0) {
		ledger_record_free(&a);
		return -1;
	}
	if (fa == 1)
		best = &a;
	if (fb == 1 && (!best || b.seq > best->seq))
		best = &b;
	if (best) {
		json_error_t jerr;
		json_t *s;

		p = json_loads(best->payload, 0, &jerr);
		s = json_object_get(p, "sha256");
		if (!json_is_string(s)) {
			cs_err_set(e, CS_EXIT_VERIFY, "ledger seq %lld: hypothesis record without sha256",
				   (long long) best->seq);
			rc = -1;
		} else {
			*seq = best->seq;
			snprintf(sha, 65, "%s", json_string_value(s));
			rc = 1;
		}
	}
	json_decref(p);
	ledger_record_free(&a);
	ledger_record_free(&b);
	return rc;
}

/* Basename of a path (borrowed). */
static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* Freeze one file and append its record (inside the caller's transaction). */
static int register_one(ledger *l, reg_item *it, const char *rationale, int64_t *seq,
			cs_err *e)
{
	char *rel = it->frozen;
	json_t *p = NULL;
	int rc;

	/* named by the file's own SHA-256, so an orphan can never pass for another file's copy */
	if ((rc = ledger_freeze(l, it->h->id, it->bytes, it->len, rel, sizeof(it->frozen), e)))
		goto out;
	p = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O}", "id", it->h->id, "file",
		      base_name(it->path), "file_sha256", it->file_sha, "sha256", it->h->sha256,
		      "frozen", rel, "doc", it->h->doc);
	if (!p) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	if (it->action == 2) {
		json_object_set_new(p, "rationale", json_string(rationale));
		json_object_set_new(p, "replaces", json_string(it->prev_sha));
	}
	if (it->action == 2)
		json_object_set_new(p, "access_state", json_string(ledger_access_state(l)));
	ledger_mark_post_hoc(l, p);
	rc = ledger_append(l, it->action == 2 ? "amendment" : "hypothesis", p, seq, e);
out:
	json_decref(p);
	return rc;
}

int holdout_register(const char *dir, const char *const *paths, size_t n, int amend,
		     const char *rationale, FILE *out, cs_err *e)
{
	int nfiles = (int) n, rc = 0, held = 0;
	reg_item *items = calloc(n + 1, sizeof(*items));
	ledger *l = NULL;

	if (!items)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	for (size_t i = 0; i < n; i++)
		items[i].path = paths[i];
	/* Phase 1: every file must be valid before anything is written. */
	for (int i = 0; i < nfiles; i++) {
		reg_item *it = &items[i];

		/* One read: the bytes validated are the bytes hashed and frozen. */
		if ((rc = cs_read_file(it->path, HYP_FILE_CAP, &it->bytes, &it->len, e)) ||
		    (rc = hyp_parse_buf(it->bytes, it->len, it->path, &it->h, e)))
			goto out;
		cs_sha256_hex(it->bytes, it->len, it->file_sha);
		for (int j = 0; j < i; j++) {
			if (!strcmp(items[j].h->id, it->h->id)) {
				rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.id: %s is also the id of %s",
						it->path, it->h->id, items[j].path);
				goto out;
			}
		}
	}
	if ((rc = ledger_open(dir, &l, e)) || (rc = ledger_begin(l, e)))
		goto out;
	/* Phase 2, under the write lock: what is already registered decides each action. */
	for (int i = 0; i < nfiles; i++) {
		reg_item *it = &items[i];
		int f = latest_version(l, it->h->id, &it->prev_seq, it->prev_sha, e);

		if (f < 0) {
			rc = e->code ? e->code : CS_EXIT_INTERNAL;
			goto out;
		}
		if (f == 0)
			it->action = 1;
		else if (!strcmp(it->prev_sha, it->h->sha256))
			it->action = 0;
		else if (amend)
			it->action = 2;
		else {
			char what[256];

			snprintf(what, sizeof(what), "%s: %s (seq %lld, sha256 %.12s..., this file %.12s...)",
				 it->path, it->h->id, (long long) it->prev_seq, it->prev_sha,
				 it->h->sha256);
			(void) guard_registration(l, what, 1, 0, "register", e); /* records the refusal */
			rc = e->code ? e->code : CS_EXIT_REFUSED;
			goto out;
		}
	}
	/* Phase 3: freeze and append, then commit once; Ctrl-C waits for the commit or rollback. */
	ledger_signals_hold();
	held = 1;
	if ((rc = ledger_sweep(l, e)))
		goto out;
	for (int i = 0; i < nfiles; i++) {
		reg_item *it = &items[i];
		int64_t seq = 0;

		if (it->action == 0) {
			fprintf(out, "%s: %s already registered at seq %lld with the same content "
				"(sha256 %.12s...); nothing to do\n",
				it->path, it->h->id, (long long) it->prev_seq, it->h->sha256);
			continue;
		}
		if ((rc = register_one(l, it, rationale, &seq, e)))
			goto out;
		it->prev_seq = seq;
	}
	if ((rc = ledger_commit(l, e)))
		goto out;
	for (int i = 0; i < nfiles; i++) {
		reg_item *it = &items[i];

		if (it->action)
			fprintf(out, "%s: %s %s at seq %lld, sha256 %s -> %s\n", it->path,
				it->action == 2 ? "amended" : "registered", it->h->id,
				(long long) it->prev_seq, it->h->sha256, it->frozen);
	}
	fflush(out);
out:
	ledger_close(l); /* rolls back an open transaction */
	if (held)
		ledger_signals_release();
	for (int i = 0; i < nfiles; i++) {
		hyp_free(items[i].h);
		free(items[i].bytes);
	}
	free(items);
	return rc;
}

typedef struct {
	json_t *byid;  /* id -> summary (latest version) */
	json_t *order; /* ids in order of first registration */
} hyp_list;

/* Fold one hypothesis/amendment record into the list. */
static int collect_hyp(const ledger_record *r, void *ud)
{
	hyp_list *hl = ud;
	json_error_t jerr;
	json_t *p, *doc, *pred, *prev, *s;
	const char *id;
	int64_t versions = 1;

	if (strcmp(r->kind, "hypothesis") && strcmp(r->kind, "amendment"))
		return 0;
	p = json_loads(r->payload, 0, &jerr);
	id = json_string_value(json_object_get(p, "id"));
	doc = json_object_get(p, "doc");
	if (!id || !doc) {
		json_decref(p);
		return 0;
	}
	pred = json_object_get(doc, "prediction");
	prev = json_object_get(hl->byid, id);
	if (prev)
		versions = json_integer_value(json_object_get(prev, "versions")) + 1;
	else
		json_array_append_new(hl->order, json_string(id));
	s = json_pack("{s:s, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:s, s:s, s:I, s:I, s:s}",
		      "id", id, "title", json_object_get(doc, "title"), "kind",
		      json_object_get(doc, "kind"), "metric", json_object_get(doc, "metric"), "unit",
		      json_object_get(doc, "unit"), "prediction", json_object_get(pred, "value"),
		      "band95", json_object_get(pred, "band95"), "sha256",
		      json_object_get(p, "sha256"), "ts", r->ts, "record", r->kind, "seq",
		      (json_int_t) r->seq, "versions", (json_int_t) versions, "frozen",
		      json_string_value(json_object_get(p, "frozen"))
			      ? json_string_value(json_object_get(p, "frozen"))
			      : "");
	if (s)
		json_object_set_new(hl->byid, id, s);
	json_decref(p);
	return 0;
}

int holdout_hypotheses(struct ledger *l, json_t **list, cs_err *e)
{
	hyp_list hl = {json_object(), json_array()};
	size_t i;
	json_t *id;
	int rc;

	*list = NULL;
	if (!hl.byid || !hl.order || !(*list = json_array()))
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	else if (!(rc = ledger_foreach(l, NULL, collect_hyp, &hl, e)))
		json_array_foreach(hl.order, i, id)
			json_array_append(*list, json_object_get(hl.byid, json_string_value(id)));
	json_decref(hl.byid);
	json_decref(hl.order);
	return rc;
}
