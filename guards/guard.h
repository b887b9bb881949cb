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
 *
 * The units, lowest first (each calls only those before it): held.h (a
 * path held, identities), refuse.h (a refusal recorded), prodset.h (what
 * production is, guard_target), then this header's output.c, guard.c and
 * order.c. This header includes the others: a verb needs only guard.h.
 */
#ifndef GUARD_H
#define GUARD_H

#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "cs.h"
#include "held.h"
#include "prodset.h"
#include "refuse.h"

struct ledger;

/* ---- where a verb writes (output.c) ---- */

/*
 * An output path checked before anything is written: path (is_dir: a
 * folder the writer fills; else a file) is held and checked like any
 * target (following a symlink at its name, and magic links), and so
 * is the folder it is created in; missing folders are made beneath the
 * held ancestor. out (cap bytes) gets the path to write through: the held
 * folder (is_dir), or "<held folder>/NAME", which the writer opens with
 * guard_output_fopen (or creates with O_EXCL, or as a temporary file and a
 * rename). h stays held until the writer is
 * done; caller closes it with guard_held_close (also on refusal: closed).
 */
int guard_output(struct ledger *l, guard_prodset *ps, const char *path, int is_dir,
		 const char *verb, const char *role, guard_held *h, char *out, size_t cap,
		 cs_err *e);

/*
 * Open for writing a file guard_output handed out (out: "<held folder>/NAME";
 * any other path has its folder held and checked here first). NAME is
 * created beneath the held folder's descriptor with O_CREAT|O_EXCL|O_NOFOLLOW.
 * The overwrite rule for a name already there: a symlink is removed (never
 * followed) and the file created new; a regular file with one link is
 * opened with O_NOFOLLOW and no O_TRUNC, identified through that
 * descriptor, checked against production, and only then truncated; anything
 * else (a hard link, a FIFO, a device) is refused. role names it in
 * messages. A stream ("w"), or NULL with e filled (CS_EXIT_REFUSED when refused).
 */
FILE *guard_output_fopen(const char *out, const char *verb, const char *role, cs_err *e);

/*
 * TMPDIR, where a verb's children and scratch files go: when set, held and
 * checked as an output folder (never inside production: CS_EXIT_REFUSED),
 * for the life of the process, and TMPDIR set to the held folder. Unset: 0.
 */
int guard_tmpdir(struct ledger *l, guard_prodset *ps, const char *verb, cs_err *e);

/*
 * The ground-truth cache a verb may write: dir (--cache-dir) when given,
 * else COLDSTUDY_CACHE, else $HOME/.cache/coldstudy (none: *via NULL, no
 * cache), checked and made as guard_output's folders, held for the life of
 * the process; COLDSTUDY_CACHE is set to *via (borrowed), the held folder.
 */
int guard_cache_dir(struct ledger *l, guard_prodset *ps, const char *dir, const char *verb,
		    const char **via, cs_err *e);


/* guard_refuse, the one way a guard says no, is refuse.h's (included above). */

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
 * Refuse a target directory without a valid clone marker: format 2, an
 * HMAC-SHA-256 under study_dir's clone key (clone.key, 0600, made at init
 * or the first clone), dev/ino of the directory itself (a marker copied
 * elsewhere is invalid), every file it lists present as a regular file with
 * its size and inode and one link, and no file it does not list. With
 * check_hash, the content hash of the directory must also equal the
 * source's. *marker (may be NULL) gets the marker (new reference).
 */
int guard_clone(struct ledger *l, const char *study_dir, const char *dir, const char *verb,
		int check_hash, json_t **marker, cs_err *e);

/* The study's clone key (32 bytes); create: make it (0600) when missing. 0 or CS_EXIT_*. */
int guard_clone_key(const char *study_dir, int create, unsigned char key[32], cs_err *e);
/* HMAC-SHA-256 (hex) of a marker's canonical JSON without its "hmac_sha256". */
int guard_clone_mac(const json_t *marker, const unsigned char key[32], char out[65], cs_err *e);

#define GUARD_CLONE_MARKER ".coldstudy-clone"

/*
 * The files of an index directory: regular files, recursively, as sorted
 * relative paths, without the clone marker. Caller frees with
 * guard_dir_files_free. 0 or CS_EXIT_*. Any other link or special file is
 * refused, except in a PostgreSQL cluster (PG_VERSION, global/pg_control)
 * its tablespaces' links pg_tblspc/OID, which are left out (a cluster's
 * clone: guard_clone checks them against its marker).
 */
int guard_dir_files(const char *dir, char ***names, size_t *n, cs_err *e);
void guard_dir_files_free(char **names, size_t n);

/* SHA-256 over guard_dir_files: for each, the name, NUL, its size (8 bytes LE), its bytes. */
int guard_dir_sha256(const char *dir, char out[65], cs_err *e);

/* Refuse unless every id in the JSON array ids is a registered hypothesis. */
int guard_hypotheses(struct ledger *l, const json_t *ids, const char *verb, cs_err *e);

/*
 * Refuse unless the latest validation batch ended with {"check":"all","passed":true}
 * and no hypothesis, amendment or study record came after it before the first run
 * (validate checks each hypothesis can fail: one registered later was not checked).
 */
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

/* Refuse predictions once the first holdout run has started, or once a first set is on record. */
int guard_predictions_open(struct ledger *l, const char *verb, const char *target, cs_err *e);

/* Refuse a prediction target (spec hash sha, metric) the plan does not register. */
int guard_prediction_target(struct ledger *l, const struct ledger_plan *p, const char *sha,
			    const char *path, const char *metric, const char *verb, cs_err *e);

/*
 * --seed on a planned spec (cls not "exploratory") that registers no seed
 * (registered 0): refused. A spec's own seed against --seed is the run
 * spec validator's (exit 2).
 */
int guard_plan_seed(struct ledger *l, const char *cls, int registered, const char *spec_path,
		    const char *verb, cs_err *e);

/*
 * A design or sceptic spec that already has its registered number of
 * complete runs (harness_spec_replicates): this run is beyond the plan,
 * *beyond set and a deviation recorded; the run is shown and excluded
 * from every decision (verdicts, the holdout's models).
 */
int guard_plan_runs(struct ledger *l, const char *sha, const char *cls, unsigned registered,
		    const char *run_id, const char *verb, int *beyond, cs_err *e);

/*
 * A planned run's clone bound to the content the plan's runs were made on:
 * the first planned run on index (the spec's path) fixes its clone's
 * source SHA-256; a later planned run whose clone holds other content gets
 * a why line (cap bytes; empty when bound) and runs as exploratory.
 */
int guard_plan_clone(struct ledger *l, const char *cls, const char *index,
		     const char *source_sha256, char *why, size_t cap, cs_err *e);

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
