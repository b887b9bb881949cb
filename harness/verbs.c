/*
 * verbs.c - study verbs run whole below the cli (verbs.h): clone, study
 * show, schema --check.
 */
#include "verbs.h"

#include "guard.h"
#include "harness.h"
#include "hyp.h"
#include "ledger.h"

#include <stdlib.h>
#include <string.h>

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
	rc = harness_clone_cluster(a->src, guard_held_via(&held), a->study, a->pg_socket, a->pg_port, &info, e);
	if (rc) {
		guard_held_rmdir(&held); /* the empty DST made for it, by name in its held parent */
		goto out;
	}
	fprintf(out, "%s: %s of %llu files (%llu bytes, %llu reflinked), source sha256 %s\n", a->dst,
		info.method, (unsigned long long) info.files, (unsigned long long) info.bytes,
		(unsigned long long) info.reflinked_files, info.source_sha256);
	if (l) {
		note = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "text", "clone", "source", a->src, "clone",
				 a->dst, "method", info.method, "source_sha256", info.source_sha256, "files",
				 (json_int_t) info.files);
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
