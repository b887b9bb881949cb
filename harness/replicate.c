/*
 * replicate.c - a study made again from another study's registration, with
 * fresh random streams: init, register and study register, composed.
 *
 * S2 gets S's hypotheses as they stood before S's first run (their frozen
 * copies, byte for byte: the same hashes), S's study spec with the plan
 * unchanged except its seed (plan.seed, which every run's stream and
 * every bootstrap mixes in), and a `replication_of` record naming S's
 * signed checkpoint. The plan's run specs are the same files (or copies
 * of them under another folder, which must hash the same).
 */
#include "replicate.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "ledger.h"
#include "register.h"

typedef struct pre_reg {
	int64_t first_run; /* S's first run_start (0: none) */
	json_t *frozen;    /* id -> frozen path, the latest version before first_run */
	json_t *order;     /* ids in first-registration order */
	json_t *later;     /* ids registered or amended after first_run (left out) */
} pre_reg;

static int pre_cb(const ledger_record *r, void *ud)
{
	pre_reg *p = ud;
	json_t *j;
	const char *id, *fz;

	if (strcmp(r->kind, "hypothesis") && strcmp(r->kind, "amendment"))
		return 0;
	j = json_loads(r->payload, 0, NULL);
	id = json_string_value(json_object_get(j, "id"));
	fz = json_string_value(json_object_get(j, "frozen"));
	if (id && p->first_run && r->seq > p->first_run) {
		if (!cs_json_has_string(p->later, id))
			json_array_append_new(p->later, json_string(id));
	} else if (id && fz) {
		if (!json_object_get(p->frozen, id))
			json_array_append_new(p->order, json_string(id));
		json_object_set_new(p->frozen, id, json_string(fz));
	}
	json_decref(j);
	return 0;
}

/* Every relative spec path of list made absolute under base. */
static void absolute_paths(json_t *list, const char *base)
{
	size_t i;
	json_t *v;
	char buf[PATH_MAX * 2];

	json_array_foreach(list, i, v) {
		const char *s = json_string_value(v);

		if (!s || s[0] == '/')
			continue;
		snprintf(buf, sizeof(buf), "%s/%s", base, s);
		json_array_set_new(list, i, json_string(buf));
	}
}

/* The study document with the plan's spec paths under base and the plan's seed (new). */
static json_t *replicated_doc(const json_t *doc, const char *base, uint64_t seed)
{
	json_t *d = json_deep_copy(doc), *plan = json_object_get(d, "plan"), *h;
	const char *k;

	if (!d || !json_is_object(plan))
		return d;
	absolute_paths(json_object_get(plan, "design"), base);
	json_object_foreach(json_object_get(plan, "hypotheses"), k, h) {
		absolute_paths(json_object_get(h, "runs"), base);
		absolute_paths(json_object_get(h, "sceptic"), base);
	}
	absolute_paths(json_object_get(json_object_get(plan, "holdout"), "targets"), base);
	json_object_set_new(plan, "seed", json_integer((json_int_t) seed));
	return d;
}

int harness_replicate(const char *src, const char *out, const char *specs, uint64_t seed,
		      FILE *says, harness_replica *r, cs_err *e)
{
	ledger *l = NULL;
	ledger_plan plan = {0};
	pre_reg pr = {0, json_object(), json_array(), json_array()};
	json_t *doc = NULL, *ndoc = NULL, *rec = NULL, *id;
	char path[PATH_MAX * 2], **paths = NULL;
	char *ckpt = NULL;
	size_t ckpt_len = 0, i;
	int64_t seq = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	if (!pr.frozen || !pr.order || !pr.later) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	/* 1. what S registered before its first run, its study spec and its signed checkpoint */
	if ((rc = ledger_open(src, &l, e)) || (rc = ledger_plan_load(l, 0, &plan, e)) ||
	    (rc = harness_study_current(l, &doc, e)))
		goto out;
	pr.first_run = plan.first_run_start;
	if (ledger_foreach(l, NULL, pre_cb, &pr, e)) {
		rc = e->code ? e->code : CS_EXIT_INTERNAL;
		goto out;
	}
	if (!specs)
		specs = json_string_value(json_object_get(plan.rec, "plan_base"));
	snprintf(path, sizeof(path), "%s/checkpoint", src);
	if ((rc = cs_read_file(path, 1u << 20, &ckpt, &ckpt_len, e)))
		goto out;
	if (!realpath(src, r->source))
		snprintf(r->source, sizeof(r->source), "%s", src);
	ledger_close(l);
	l = NULL;
	if (!json_array_size(pr.order)) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: no hypothesis registered before its first run",
				src);
		goto out;
	}
	/* 2. S2: a new ledger, the same hypothesis files, the same plan under a new seed */
	if ((rc = ledger_init(out, e)))
		goto out;
	paths = calloc(json_array_size(pr.order) + 1, sizeof(*paths));
	if (!paths) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	json_array_foreach(pr.order, i, id) {
		snprintf(path, sizeof(path), "%s/%s", src,
			 json_string_value(json_object_get(pr.frozen, json_string_value(id))));
		if (!(paths[i] = strdup(path))) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
	}
	if ((rc = holdout_register(out, (const char *const *) paths, json_array_size(pr.order), 0,
				   NULL, says, e))) {
		r->register_failed = 1;
		goto out;
	}
	ndoc = replicated_doc(doc, specs ? specs : ".", seed);
	snprintf(path, sizeof(path), "%s/study.json", out);
	{
		/* beneath the held S2: a link planted at study.json is replaced, never followed */
		FILE *sf = ndoc ? guard_output_fopen(path, "replicate", "--out", e) : NULL;
		int bad = !sf || json_dumpf(ndoc, sf, JSON_INDENT(2) | JSON_SORT_KEYS);

		if ((sf && fclose(sf)) || bad) {
			rc = e->msg[0] ? e->code
				       : cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot write the study spec",
						    path);
			goto out;
		}
	}
	if ((rc = harness_study_register_amend(out, path, NULL, &seq, e)))
		goto out;
	/* 3. the replication_of record: which study, at which signed tree head, with which seed */
	{
		char sha[65];

		cs_sha256_hex(ckpt, ckpt_len, sha);
		rec = json_pack("{s:s, s:s%, s:s, s:I, s:O, s:O}", "study", r->source, "checkpoint", ckpt,
				ckpt_len, "checkpoint_sha256", sha, "seed", (json_int_t) seed,
				"hypotheses", pr.order, "left_out", pr.later);
	}
	if ((rc = ledger_open(out, &l, e)) || (rc = ledger_append(l, "replication_of", rec, NULL, e)))
		goto out;
	r->hypotheses = json_array_size(pr.order);
	r->left_out = json_incref(pr.later);
out:
	ledger_close(l);
	ledger_plan_free(&plan);
	for (i = 0; paths && i < json_array_size(pr.order); i++)
		free(paths[i]);
	free(paths);
	free(ckpt);
	json_decref(doc);
	json_decref(ndoc);
	json_decref(rec);
	json_decref(pr.frozen);
	json_decref(pr.order);
	json_decref(pr.later);
	return rc;
}
