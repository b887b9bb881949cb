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
#include <sys/stat.h>
#include <sys/types.h>
#include "cs.h"

struct ledger;

/* ---- held targets (held.c) ---- */

/* A file system: a device number, or a loop device's backing file (dev, inode, offset). */
typedef struct guard_fskey {
	int kind; /* 1 device (a = major, b = minor), 2 loop backing (a = dev, b = ino, c = offset) */
	uint64_t a, b, c;
} guard_fskey;

/* What a file is: its file system and inode, with the inode's birth time. */
typedef struct guard_ident {
	dev_t dev;
	uint64_t ino;
	unsigned mode, nlink;
	dev_t rdev;
	int64_t btime_ns; /* 0: unknown */
	guard_fskey fs;
} guard_ident;

#define GUARD_DEVSET_MAX 32
/* The storage behind a device: itself, its device-mapper slaves, its disk or partitions. */
typedef struct guard_devset {
	guard_fskey v[GUARD_DEVSET_MAX];
	size_t n;
} guard_devset;

/*
 * A path resolved once. fd holds the target (O_PATH) when it exists, else
 * its nearest existing ancestor, with the missing components in rest.
 */
typedef struct guard_held {
	int fd;
	int exists;
	struct stat st;          /* of what fd holds */
	char rest[4096];         /* components still to create beneath fd */
	char shown[4096];        /* the user's spelling, for messages */
	char via[4200];          /* "/proc/PID/fd/N[/rest]": the held target for path-taking APIs */
	int made_parent;         /* after guard_held_mkdirs: the directory the last component was made in */
	char made_name[256];     /* ... and that component (guard_held_rmdir removes it) */
} guard_held;

void guard_held_init(guard_held *h);
/*
 * Resolve path once from base_fd (AT_FDCWD: the current directory) with
 * openat2(RESOLVE_NO_MAGICLINKS) (a component walk without it). A magic
 * link is refused (CS_EXIT_REFUSED); a missing target is held through its
 * nearest existing ancestor. Caller closes with guard_held_close.
 */
int guard_hold(const char *path, int base_fd, guard_held *h, cs_err *e);
void guard_held_close(guard_held *h);
/* The held target as a path the kernel resolves through the descriptor (borrowed). */
const char *guard_held_via(const guard_held *h);
/*
 * text with every live hold's "/proc/PID/fd/N[/rest]" spelled as the user
 * typed it (resolved 0) or as the path the kernel holds (resolved 1:
 * readlink, for a record's resolved identity), into out (truncated to
 * cap); returns the length. Other text is copied as it is.
 */
size_t guard_spell(const char *text, int resolved, char *out, size_t cap);
/* Create the missing components beneath the held ancestor (mkdirat, no symlink followed); h then holds the new directory. */
int guard_held_mkdirs(guard_held *h, cs_err *e);
/* Remove the (empty) directory guard_held_mkdirs made last, by name in its held parent. */
void guard_held_rmdir(guard_held *h);

int guard_ident_fd(int fd, guard_ident *id);
int guard_ident_same(const guard_ident *x, const guard_ident *y);
void guard_fskey_of(dev_t dev, guard_fskey *k);
int guard_fskey_eq(const guard_fskey *x, const guard_fskey *y);
/* The devices behind dev (is_blockdev_item: a production device, covering its partitions). */
void guard_devset_of(dev_t dev, int is_blockdev_item, guard_devset *s);
int guard_devset_meet(const guard_devset *x, const guard_devset *y);

/* ---- the production set (prodset.c) ---- */

/*
 * Everything production: the machine-wide registry (COLDSTUDY_PRODUCTION_REGISTRY,
 * default /var/lib/coldstudy/production.json) and, with a ledger, every
 * production item the study ever registered (unless amended away).
 */
typedef struct guard_prodset guard_prodset;

int guard_prodset_load(struct ledger *l, guard_prodset **out, cs_err *e);
void guard_prodset_free(guard_prodset *ps);
/* Add path (resolved from base_fd, must exist) to ps only: validate's planted targets. */
int guard_prodset_add(guard_prodset *ps, const char *path, int base_fd, const char *owner,
		      cs_err *e);
/* The registry file's path (borrowed; from the environment or the default). */
const char *guard_registry_path(void);

/*
 * Refuse (CS_EXIT_REFUSED, a refusal record with l) when the held target
 * is production, lies inside it, contains it, holds a hard link to a
 * production file, or lives on a production block device. role names the
 * target in messages ("index", "bulkwrite.dir"). ps NULL: the registry
 * only, loaded for this call. A walk past its limits refuses (fail closed).
 */
int guard_check_held(struct ledger *l, guard_prodset *ps, const guard_held *h, const char *verb,
		     const char *role, cs_err *e);

/* guard_hold + guard_check_held; on refusal h is closed. */
int guard_target(struct ledger *l, guard_prodset *ps, const char *path, int base_fd,
		 const char *verb, const char *role, guard_held *h, cs_err *e);

/*
 * Resolve study.json's production items against the study folder
 * (study_fd), each required to exist (CS_EXIT_BADINPUT naming it), into
 * *items (a new JSON array of identities); hosts and databases are added
 * as named items. 0 or CS_EXIT_*.
 */
int guard_production_resolve(const json_t *study, int study_fd, const char *study_name,
			     json_t **items, cs_err *e);
/*
 * A re-registration may add production items, never drop one silently:
 * refuse (recorded) when items misses any item the study protected so far,
 * unless amend; *removed (new) gets the items an amendment drops.
 */
int guard_production_keep(struct ledger *l, const json_t *items, int amend, const char *verb,
			  json_t **removed, cs_err *e);
/* Add items (guard_production_resolve's) to the machine registry under owner. */
int guard_registry_add(const json_t *items, const char *owner, cs_err *e);
/* Remove the registry items whose path (or name) is name; *removed gets how many. */
int guard_registry_remove(const char *name, size_t *removed, cs_err *e);
/* The registry's items (new reference). */
int guard_registry_list(json_t **items, cs_err *e);

/*
 * Refuse (CS_EXIT_REFUSED, recorded with l) a TCP port that a production
 * item names (study.json's production.ports): a server a run starts must
 * never be addressed like production's. ps NULL: the registry only.
 */
int guard_port(struct ledger *l, guard_prodset *ps, int port, const char *verb, const char *role,
	       cs_err *e);

/* ---- where a verb writes (output.c) ---- */

/*
 * An output path checked before anything is written: path (is_dir: a
 * folder the writer fills; else a file) is held and checked like any
 * target (following a symlink at its name, refusing magic links), and so
 * is the folder it is created in; missing folders are made beneath the
 * held ancestor. out (cap bytes) gets the path to write through: the held
 * folder (is_dir), or "<held folder>/NAME", which the writer creates with
 * O_EXCL or a temporary file and a rename. h stays held until the writer is
 * done; caller closes it with guard_held_close (also on refusal: closed).
 */
int guard_output(struct ledger *l, guard_prodset *ps, const char *path, int is_dir,
		 const char *verb, const char *role, guard_held *h, char *out, size_t cap,
		 cs_err *e);

/*
 * The ground-truth cache a verb may write: dir (--cache-dir) when given,
 * else COLDSTUDY_CACHE, else $HOME/.cache/coldstudy (none: *via NULL, no
 * cache), checked and made as guard_output's folders, held for the life of
 * the process; COLDSTUDY_CACHE is set to *via (borrowed), the held folder.
 */
int guard_cache_dir(struct ledger *l, guard_prodset *ps, const char *dir, const char *verb,
		    const char **via, cs_err *e);

/* guard_target for a target that must exist (exit 5 otherwise): what evicts, reads or loads. */
int guard_existing(struct ledger *l, guard_prodset *ps, const char *path, int base_fd,
		   const char *verb, const char *role, guard_held *h, cs_err *e);

/*
 * A dataset spec's file (fvecs:PATH, npy:PATH, ...) checked like a target:
 * a study run reads clones and generated data, never production's files.
 * Specs without a path (synth:, fashion-mnist) pass. The file is held for
 * the process and read through guard_dataset_via.
 */
int guard_dataset(struct ledger *l, guard_prodset *ps, const char *spec, const char *verb,
		  const char *role, cs_err *e);
/*
 * The spec a loader reads for spec: once guard_dataset passed it, the same
 * spec through the held file ("fvecs:/proc/PID/fd/N[A:B]", held for the
 * process); any other spec as it is (borrowed).
 */
const char *guard_dataset_via(const char *spec);

/* Append a refusal record (when l is set) and fill e; returns CS_EXIT_REFUSED. */
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
 * guard_dir_files_free. 0 or CS_EXIT_*.
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
