/*
 * verbs.c - study verbs run whole below the cli (verbs.h): init, clone,
 * validate, study show, schema --check, log tiles, plan power's checks,
 * replicate.
 */
#include "verbs.h"

#include "guard.h"
#include "harness.h"
#include "hyp.h"
#include "ledger.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

int harness_clone_verb(const harness_clone_args *a, FILE *out, cs_err *e)
{
	harness_clone_info info;
	ledger *l = NULL;
	guard_held held;
	json_t *note;
	int rc;

	guard_held_init(&held);
	if (a->study && (rc = ledger_open(a->study, &l, e)))
		goto out;
	if ((rc = harness_clone_target(l, a->dst, &held, e)))
		goto out;
	rc = harness_clone_cluster(a->src, guard_held_via(&held), a->study, a->pg_socket,
	                           a->pg_port, &info, e);
	if (rc) {
		guard_held_rmdir(&held); /* the empty DST made for it, by name in its held parent */
		goto out;
	}
	fprintf(out, "%s: %s of %llu files (%llu bytes, %llu reflinked), source sha256 %s\n",
	        a->dst, info.method, (unsigned long long) info.files,
	        (unsigned long long) info.bytes, (unsigned long long) info.reflinked_files,
	        info.source_sha256);
	if (l) {
		note = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "text", "clone", "source",
		                 a->src, "clone", a->dst, "method", info.method, "source_sha256",
		                 info.source_sha256, "files", (json_int_t) info.files);
		rc = ledger_append(l, "note", note, NULL, e);
		json_decref(note);
	}
out:
	guard_held_close(&held);
	ledger_close(l);
	return rc;
}

int harness_study_print(const char *dir, FILE *out, cs_err *e)
{
	ledger *l = NULL;
	json_t *doc = NULL;
	int rc;

	rc = ledger_open(dir, &l, e);
	if (!rc)
		rc = harness_study_current(l, &doc, e);
	if (!rc) {
		char *s = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);

		fprintf(out, "%s\n", s ? s : "{}");
		free(s);
	}
	json_decref(doc);
	ledger_close(l);
	return rc;
}

int harness_schema_check(const char *kind, const char *path, cs_err *e)
{
	json_t *doc = NULL;
	char sha[65];
	hyp *h = NULL;
	int rc;

	if (!strcmp(kind, "hypothesis")) {
		rc = hyp_parse_file(path, &h, e);
		hyp_free(h);
	} else if (!strcmp(kind, "study")) {
		rc = harness_study_load(path, &doc, e);
	} else {
		rc = harness_run_load(path, &doc, sha, e);
	}
	json_decref(doc);
	return rc;
}

int harness_init_verb(const char *dir, FILE *out, cs_err *e)
{
	/* the study folder: held, checked (never inside production), made */
	guard_held h;
	char via[PATH_MAX + 300], vk[512];
	ledger *l = NULL;
	int rc;

	rc = guard_output(NULL, NULL, dir, 1, "init", "DIR", &h, via, sizeof(via), e);
	if (!rc)
		rc = ledger_init(via, e);
	guard_held_close(&h);
	if (rc)
		return rc;
	fprintf(out,
	        "created %s/ledger.db, %s/frozen/, %s/signing.key (keep it private) and "
	        "%s/checkpoint\n",
	        dir, dir, dir, dir);
	if (!(rc = ledger_open(dir, &l, e)) && !(rc = ledger_key(l, vk, sizeof(vk), e)))
		fprintf(out, "verifier key: %s\n", vk);
	ledger_close(l);
	return rc;
}

void harness_replica_print(const harness_replica *r, const char *src, const char *shown,
                           uint64_t seed, FILE *out)
{
	json_t *id;
	size_t i;

	fprintf(out,
	        "%s: a replication of %s (its checkpoint recorded), seed %llu; %zu hypotheses "
	        "re-registered",
	        shown, r->source, (unsigned long long) seed, r->hypotheses);
	if (json_array_size(r->left_out)) {
		fprintf(out, "; left out (post hoc in %s):", src);
		json_array_foreach(r->left_out, i, id) fprintf(out, " %s", json_string_value(id));
	}
	fprintf(out, "\nnext: clone the index with --study %s, validate it and run its plan\n",
	        shown);
}

int harness_power_verb(const char *dir, const json_t *ids, json_t *res, cs_err *e)
{
	ledger *l = NULL;
	json_t *study = NULL, *pilots = NULL;
	int refuse = 0, rc = ledger_open(dir, &l, e);

	if (!rc)
		rc = harness_study_current(l, &study, e);
	if (!rc && json_array_size(ids))
		rc = harness_pilots(l, ids, &pilots, e);
	if (!rc)
		rc = harness_power(l, study, pilots, res, &refuse, e);
	ledger_close(l);
	json_decref(pilots);
	json_decref(study);
	return rc;
}

int harness_replicate_verb(const char *src, const char *out, const char *specs, uint64_t seed,
                           FILE *says, int *register_failed, cs_err *e)
{
	harness_replica r = {0};
	guard_held h;
	char via[PATH_MAX + 300], shown[CS_ERR_MAX + 4096];
	int rc = 0;

	guard_held_init(&h);
	if (seed > HARNESS_SEED_MAX && getrandom(&seed, sizeof(seed), 0) != (ssize_t) sizeof(seed))
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "getrandom failed");
	seed &= HARNESS_SEED_MAX;
	/* S2 held, checked (never inside production) and made, as init's folder */
	if (!rc)
		rc = guard_output(NULL, NULL, out, 1, "replicate", "--out", &h, via, sizeof(via), e);
	if (!rc && (rc = harness_replicate(src, via, specs, seed, says, &r, e)))
		*register_failed = r.register_failed;
	if (!rc) {
		guard_spell(out, 0, shown, sizeof(shown));
		harness_replica_print(&r, src, shown, seed, says);
	}
	guard_held_close(&h);
	json_decref(r.left_out);
	return rc;
}

int harness_validate_verb(const char *dir, harness_validate_opts *o, int json, FILE *out, cs_err *e)
{
	int rc;

	if (json) {
		o->quiet = 1;
		o->results = json_array();
	}
	rc = harness_validate(dir, o, e);
	if (json && json_array_size(o->results)) {
		/* The records, also when a check failed (exit 4 says so). */
		json_dumpf(o->results, out, JSON_INDENT(2));
		fputc('\n', out);
	}
	json_decref(o->results);
	o->results = NULL;
	return rc;
}

int harness_tiles_verb(const char *dir, const char *out_dir, FILE *out, cs_err *e)
{
	int64_t written = 0, same = 0;
	char *note = NULL, via[PATH_MAX + 300];
	ledger *l = NULL;
	guard_held h;
	int rc;

	guard_held_init(&h);
	if (!(rc = guard_output(NULL, NULL, out_dir, 1, "log tiles", "--out", &h, via, sizeof(via), e)) &&
	    !(rc = ledger_open(dir, &l, e)) &&
	    !(rc = ledger_tiles_write(l, via, &written, &same, &note, e)))
		fprintf(out, "%s: %lld tiles written, %lld already there; checkpoint:\n%s", out_dir,
		        (long long) written, (long long) same, note);
	free(note);
	ledger_close(l);
	guard_held_close(&h);
	return rc;
}
