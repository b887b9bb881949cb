/*
 * cmd_replicate.c - `coldstudy replicate`: a study made again from another
 * study's registration, with fresh random streams, and the comparison of
 * the two studies' verdicts.
 *
 * replicate S --out S2 is init, register and study register, composed:
 * S2 gets S's hypotheses as they stood before S's first run (their frozen
 * copies, byte for byte: the same hashes), S's study spec with the plan
 * unchanged except its seed (plan.seed, which every run's stream and
 * every bootstrap mixes in), and a `replication_of` record naming S's
 * signed checkpoint. The plan's run specs are the same files (or copies
 * of them under --specs DIR, which must hash the same). The comparison
 * (replicate compare) is reports' report_compare.
 */
#include "cmds.h"

#include "guard.h"
#include "harness.h"
#include "ledger.h"
#include "report.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

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

static int compare(int argc, char **argv)
{
	const char *a = NULL, *b = NULL;
	int json = 0, disagree = 0, rc;
	ledger *la = NULL, *lb = NULL;
	json_t *rows = NULL, *r;
	cs_err e = {0};
	size_t i;

	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--json"))
			json = 1;
		else if (argv[k][0] == '-')
			return cli_usage("replicate", "unknown option '%s'", argv[k]);
		else if (!a)
			a = argv[k];
		else if (!b)
			b = argv[k];
		else
			return cli_usage("replicate", "compare takes two studies");
	}
	if (!a || !b)
		return cli_usage("replicate", "compare needs S and S2");
	rc = ledger_open(a, &la, &e);
	if (!rc)
		rc = ledger_open(b, &lb, &e);
	if (!rc)
		rc = report_compare(la, lb, &rows, &disagree, &e);
	ledger_close(la);
	ledger_close(lb);
	if (rc)
		return cli_fail("replicate", &e);
	if (json) {
		char *t = json_dumps(rows, JSON_INDENT(2) | JSON_SORT_KEYS);

		printf("%s\n", t ? t : "[]");
		free(t);
	} else {
		printf("%-7s %-13s %-12s %-12s %-5s  %s\n", "id", "class", "in S", "in S2", "agree",
		       "interval in S | in S2");
		json_array_foreach(rows, i, r) {
			char ia[96] = "-", ib[96] = "-";
			const json_t *x = json_object_get(r, "interval_a"), *y = json_object_get(r, "interval_b");

			if (json_is_array(json_object_get(x, "interval")))
				snprintf(ia, sizeof(ia), "%.4g [%.4g, %.4g] n %lld",
					 json_number_value(json_object_get(x, "estimate")),
					 json_number_value(json_array_get(json_object_get(x, "interval"), 0)),
					 json_number_value(json_array_get(json_object_get(x, "interval"), 1)),
					 (long long) json_integer_value(json_object_get(x, "n_select")));
			if (json_is_array(json_object_get(y, "interval")))
				snprintf(ib, sizeof(ib), "%.4g [%.4g, %.4g] n %lld",
					 json_number_value(json_object_get(y, "estimate")),
					 json_number_value(json_array_get(json_object_get(y, "interval"), 0)),
					 json_number_value(json_array_get(json_object_get(y, "interval"), 1)),
					 (long long) json_integer_value(json_object_get(y, "n_select")));
			printf("%-7s %-13s %-12s %-12s %-5s  %s | %s\n",
			       json_string_value(json_object_get(r, "hypothesis")),
			       json_string_value(json_object_get(r, "class")),
			       json_string_value(json_object_get(r, "verdict_a")),
			       json_string_value(json_object_get(r, "verdict_b")) ?: "(absent)",
			       json_is_true(json_object_get(r, "agree")) ? "yes" : "NO", ia, ib);
		}
		printf("%s\n", disagree ? "a confirmatory verdict differs: the finding did not replicate"
					: "every confirmatory verdict agrees");
	}
	json_decref(rows);
	return disagree ? CS_EXIT_FAILED : CS_EXIT_OK;
}

int cmd_replicate(int argc, char **argv)
{
	const char *src = NULL, *out = NULL, *specs = NULL;
	uint64_t seed = 0;
	int has_seed = 0, rc;
	ledger *l = NULL;
	ledger_plan plan = {0};
	pre_reg pr = {0, json_object(), json_array(), json_array()};
	json_t *doc = NULL, *ndoc = NULL, *rec = NULL, *id;
	char **rargv = NULL, path[PATH_MAX * 2], srcabs[PATH_MAX];
	char *ckpt = NULL;
	size_t ckpt_len = 0, i;
	int64_t seq = 0;
	cs_err e = {0};
	guard_held outh;
	char outvia[PATH_MAX + 300];

	guard_held_init(&outh);
	if (cli_wants_help(argc, argv) || argc < 2) {
		printf("usage: coldstudy replicate S --out S2 [--seed N] [--specs DIR]\n"
		       "       coldstudy replicate compare S S2 [--json]\n\n"
		       "Make S2, a replication of study S: S's hypotheses as registered before its\n"
		       "first run (their frozen copies: the same hashes; later ones are left out and\n"
		       "named), S's study spec with its plan unchanged but for plan.seed (N, or fresh\n"
		       "from the kernel), which every run's random stream and every bootstrap mixes\n"
		       "in, and a replication_of record naming S's signed checkpoint. S2's production,\n"
		       "index and scratch paths resolve against S2 as S's did against S (make S2 in a\n"
		       "copy of S's work folder, with its own index and clone); the plan's run specs\n"
		       "are S's files, or those under --specs DIR (which must hash the same). Then\n"
		       "clone and validate S2 and run its plan as S's was run.\n\n"
		       "compare evaluates both studies' verdicts (recording nothing) and prints, per\n"
		       "hypothesis of S, the verdict in S and in S2, their intervals and whether they\n"
		       "agree; exit 6 when a confirmatory verdict differs.\n");
		json_decref(pr.frozen);
		json_decref(pr.order);
		json_decref(pr.later);
		return argc < 2 && !cli_wants_help(argc, argv) ? CS_EXIT_USAGE : CS_EXIT_OK;
	}
	if (!strcmp(argv[1], "compare")) {
		json_decref(pr.frozen);
		json_decref(pr.order);
		json_decref(pr.later);
		return compare(argc - 1, argv + 1);
	}
	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--out") && k + 1 < argc) {
			out = argv[++k];
		} else if (!strcmp(argv[k], "--specs") && k + 1 < argc) {
			specs = argv[++k];
		} else if (!strcmp(argv[k], "--seed") && k + 1 < argc) {
			if (cli_parse_u64(argv[++k], &seed) || seed > HARNESS_SEED_MAX) {
				rc = cli_usage("replicate", "--seed '%s': not a number from 0 to 2^53-1", argv[k]);
				goto out;
			}
			has_seed = 1;
		} else if (argv[k][0] == '-' || src) {
			rc = cli_usage("replicate", "unexpected argument '%s'", argv[k]);
			goto out;
		} else {
			src = argv[k];
		}
	}
	if (!src || !out) {
		rc = cli_usage("replicate", "need S and --out S2");
		goto out;
	}
	if (!has_seed) {
		if (getrandom(&seed, sizeof(seed), 0) != (ssize_t) sizeof(seed)) {
			rc = cli_fail("replicate", &(cs_err){CS_EXIT_INTERNAL, "getrandom failed"});
			goto out;
		}
		seed &= HARNESS_SEED_MAX;
	}
	/* 1. what S registered before its first run, its study spec and its signed checkpoint */
	if ((rc = ledger_open(src, &l, &e)) || (rc = ledger_plan_load(l, 0, &plan, &e)) ||
	    (rc = harness_study_current(l, &doc, &e)))
		goto fail;
	pr.first_run = plan.first_run_start;
	if (ledger_foreach(l, NULL, pre_cb, &pr, &e)) {
		rc = e.code ? e.code : CS_EXIT_INTERNAL;
		goto fail;
	}
	if (!specs)
		specs = json_string_value(json_object_get(plan.rec, "plan_base"));
	snprintf(path, sizeof(path), "%s/checkpoint", src);
	if ((rc = cs_read_file(path, 1u << 20, &ckpt, &ckpt_len, &e)))
		goto fail;
	if (!realpath(src, srcabs))
		snprintf(srcabs, sizeof(srcabs), "%s", src);
	ledger_close(l);
	l = NULL;
	if (!json_array_size(pr.order)) {
		rc = cs_err_set(&e, CS_EXIT_BADINPUT, "%s: no hypothesis registered before its first run",
				src);
		goto fail;
	}
	/* 2. S2: a new ledger, the same hypothesis files, the same plan under a new seed */
	if ((rc = guard_output(NULL, NULL, out, 1, "replicate", "--out", &outh, outvia,
			       sizeof(outvia), &e)))
		goto fail;
	out = outvia; /* held, checked (never inside production) and made, as init's folder */
	if ((rc = ledger_init(out, &e)))
		goto fail;
	rargv = calloc(json_array_size(pr.order) + 3, sizeof(*rargv));
	if (!rargv) {
		rc = cs_err_set(&e, CS_EXIT_INTERNAL, "out of memory");
		goto fail;
	}
	rargv[0] = (char *) "register";
	rargv[1] = (char *) out;
	json_array_foreach(pr.order, i, id) {
		snprintf(path, sizeof(path), "%s/%s", src,
			 json_string_value(json_object_get(pr.frozen, json_string_value(id))));
		rargv[i + 2] = strdup(path);
	}
	if ((rc = cmd_register((int) json_array_size(pr.order) + 2, rargv)))
		goto out; /* register said why */
	ndoc = replicated_doc(doc, specs ? specs : ".", seed);
	snprintf(path, sizeof(path), "%s/study.json", out);
	{
		/* beneath the held S2: a link planted at study.json is replaced, never followed */
		FILE *sf = ndoc ? guard_output_fopen(path, "replicate", "--out", &e) : NULL;
		int bad = !sf || json_dumpf(ndoc, sf, JSON_INDENT(2) | JSON_SORT_KEYS);

		if ((sf && fclose(sf)) || bad) {
			rc = e.msg[0] ? e.code
				      : cs_err_set(&e, CS_EXIT_INTERNAL, "%s: cannot write the study spec",
						   path);
			goto fail;
		}
	}
	if ((rc = harness_study_register_amend(out, path, NULL, &seq, &e)))
		goto fail;
	/* 3. the replication_of record: which study, at which signed tree head, with which seed */
	{
		char sha[65];

		cs_sha256_hex(ckpt, ckpt_len, sha);
		rec = json_pack("{s:s, s:s%, s:s, s:I, s:O, s:O}", "study", srcabs, "checkpoint", ckpt,
				ckpt_len, "checkpoint_sha256", sha, "seed", (json_int_t) seed,
				"hypotheses", pr.order, "left_out", pr.later);
	}
	if ((rc = ledger_open(out, &l, &e)) || (rc = ledger_append(l, "replication_of", rec, NULL, &e)))
		goto fail;
	printf("%s: a replication of %s (its checkpoint recorded), seed %llu; %zu hypotheses "
	       "re-registered",
	       cli_spell(out), srcabs, (unsigned long long) seed, json_array_size(pr.order));
	if (json_array_size(pr.later)) {
		printf("; left out (post hoc in %s):", src);
		json_array_foreach(pr.later, i, id)
			printf(" %s", json_string_value(id));
	}
	printf("\nnext: clone the index with --study %s, validate it and run its plan\n",
	       cli_spell(out));
	rc = CS_EXIT_OK;
	goto out;
fail:
	rc = cli_fail("replicate", &e);
out:
	guard_held_close(&outh);
	ledger_close(l);
	ledger_plan_free(&plan);
	if (rargv)
		for (i = 2; i < json_array_size(pr.order) + 2; i++)
			free(rargv[i]);
	free(rargv);
	free(ckpt);
	json_decref(doc);
	json_decref(ndoc);
	json_decref(rec);
	json_decref(pr.frozen);
	json_decref(pr.order);
	json_decref(pr.later);
	return rc;
}
