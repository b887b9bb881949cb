/*
 * guard.h - every refusal in one place.
 *
 * A guard answers one question before a verb may touch anything: is this
 * target production, is this a real clone, was the hypothesis registered,
 * has validate passed, is the cache cold, is the tree clean, are the
 * holdout predictions frozen, does a holdout run reuse design data. When
 * the answer is no, guard_refuse appends a `refusal` record
 * {"guard","verb","target","why"} (a refusal is itself evidence) and the
 * guard returns CS_EXIT_REFUSED with one line in the cs_err.
 *
 * Every guard takes the ledger l (NULL: refuse without recording, used by
 * validate's self-test of a planted production path) and the verb name.
 *
 * Error convention: 0 (allowed), CS_EXIT_REFUSED (refused, recorded), or
 * another CS_EXIT_* when the question itself could not be answered.
 */
#ifndef GUARD_H
#define GUARD_H

#include <stdint.h>
#include <sys/types.h>
#include "cs.h"

struct ledger;

/*
 * Append a refusal record (when l is set) and fill e; returns CS_EXIT_REFUSED.
 * A transaction the verb has open is rolled back first: a refusal changes
 * nothing but its own record.
 */
int guard_refuse(struct ledger *l, const char *guard, const char *verb, const char *target,
		 cs_err *e, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/*
 * Refuse a target that is, contains, or lies inside a production item of
 * study (its "production" object): compared by device + inode after every
 * symlink, "..", trailing slash and /proc/self/fd/N has been resolved by
 * the kernel, so bind mounts and hard links are caught too; every file
 * inside a target directory is checked as well. A target on a production
 * block device, or naming a production database or host, is refused.
 */
int guard_production(struct ledger *l, const json_t *study, const char *target, const char *verb,
		     cs_err *e);

/*
 * Refuse a target directory without a valid clone marker: the marker's
 * dev/ino must be the directory's own (a marker copied elsewhere is
 * invalid) and every file it lists must exist with its size. With
 * check_hash, the content hash of the directory must also equal the
 * source's. *marker (may be NULL) gets the marker (new reference).
 */
int guard_clone(struct ledger *l, const char *dir, const char *verb, int check_hash,
		json_t **marker, cs_err *e);

#define GUARD_CLONE_MARKER ".coldstudy-clone"

/*
 * The files of an index directory: regular files, recursively, as sorted
 * relative paths, without the clone marker. Caller frees with
 * guard_dir_files_free. 0 or CS_EXIT_*.
 */
int guard_dir_files(const char *dir, char ***names, size_t *n, cs_err *e);
void guard_dir_files_free(char **names, size_t n);

/* SHA-256 over guard_dir_files: for each, the name, NUL, its size (8 bytes LE), its bytes. */
int guard_dir_sha256(const char *dir, char out[65], cs_err *e);

/* Refuse unless every id in the JSON array ids is a registered hypothesis. */
int guard_hypotheses(struct ledger *l, const json_t *ids, const char *verb, cs_err *e);

/* Refuse unless the latest validation batch ended with {"check":"all","passed":true}. */
int guard_validated(struct ledger *l, const char *verb, cs_err *e);

/*
 * Refuse a cold run unless every file's residency is 0 pages, measured by
 * a trustworthy method (cachestat, or mincore with write access). *fraction
 * (may be NULL) gets the resident fraction over all files.
 */
int guard_cold(struct ledger *l, char **paths, size_t n, const char *verb, double *fraction,
	       cs_err *e);

/* Refuse when `git status --porcelain` in project_dir prints anything (or git fails). */
int guard_clean_tree(struct ledger *l, const char *project_dir, const char *verb, cs_err *e);

/* Refuse a holdout run unless prediction records target spec_sha256. */
int guard_holdout_predictions(struct ledger *l, const char *spec_sha256, const char *verb,
			      cs_err *e);

/*
 * Refuse a holdout run that measures queries a design (non-holdout) run
 * measured on partitions it also searched (an absent partition list is
 * every partition; spec: the effective run document), unless
 * declare_overlap is given: then the overlap is recorded as a deviation.
 */
int guard_holdout_overlap(struct ledger *l, const json_t *spec, const char *declare_overlap,
			  const char *verb, cs_err *e);

/* Refuse when the study has no registered study spec. */
int guard_study(struct ledger *l, const char *verb, json_t **study, cs_err *e);

/* ---- the order of a study (order.c): the plan, predictions, scoring ---- */

struct ledger_plan;

/*
 * A study or hypothesis registration that would change what is registered
 * (what: "study plan", "H3", ...): refused unless amend, once frozen (for a
 * hypothesis: always; for the study and its plan: after the first
 * run_start). Returns 0 when the change may be recorded.
 */
int guard_registration(struct ledger *l, const char *what, int frozen, int amend,
		       const char *verb, cs_err *e);

/*
 * A run's class from the plan: *holdout is set when the spec is a holdout
 * target (whatever the flag) or flagged. A flagged spec the plan does not
 * name as a target is refused once a plan is registered.
 */
int guard_run_plan(struct ledger *l, const struct ledger_plan *p, const char *sha,
		   int flag_holdout, const char *verb, int *holdout, cs_err *e);

/*
 * A holdout target that already has a run: allowed, recorded as a
 * deviation (the first run stays the observation). *repeat set when so.
 */
int guard_holdout_repeat(struct ledger *l, const char *sha, const char *run_id, const char *verb,
			 int *repeat, cs_err *e);

/* Refuse predictions once the first holdout run has started. */
int guard_predictions_open(struct ledger *l, const char *verb, const char *target, cs_err *e);

/* Refuse a prediction target (spec hash sha, metric) the plan does not register. */
int guard_prediction_target(struct ledger *l, const struct ledger_plan *p, const char *sha,
			    const char *path, const char *metric, const char *verb, cs_err *e);

/* Refuse a --threshold that differs from the registered one. */
int guard_score_threshold(struct ledger *l, double registered, double given, const char *verb,
			  cs_err *e);

/*
 * Refuse a score while n_missing holdout targets have no run, unless
 * interim (then allowed: the score is recorded as interim).
 */
int guard_score_complete(struct ledger *l, size_t n_missing, size_t n_targets, int interim,
			 const char *verb, cs_err *e);

#endif
