/*
 * harness.h - study execution: the study and run specs, clones, the
 * validation checks, and one run (guards, evict, prove cold, load,
 * measure, record). The public face of harness/ for the cli and for
 * holdout (harness_spec_features).
 *
 * A study spec (study.json) names what must never be touched (production
 * paths, block devices, database and host names), the datasets, the
 * indexes (source, clone) and defaults for run specs. It is registered in
 * the ledger as a `study` record; every later verb reads the latest one.
 *
 * A run spec (run.json) is one run: the index (a clone), the query set,
 * k, the knobs, the access strategy, buffers, a device profile, clients
 * and a query count or a duration, cold or warm, a partition subset,
 * tags and the hypotheses it serves. Its identity is spec_sha256 = the
 * SHA-256 of the canonical JSON (cs_json_canonical) of the file as
 * written, before the study's defaults are merged in; predictions target
 * a run by that hash.
 *
 * Both files are validated strictly, like hypothesis files: unknown keys
 * are refused, and a failure is exit 5 with file, JSON path and why.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 */
#ifndef HARNESS_H
#define HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include "cs.h"

#define HARNESS_SPEC_CAP (256u * 1024u) /* a study or run spec is at most 256 KiB */

/* ---- specs (spec.c) ---- */

/* Validate a study document (name: the file, for messages). */
int harness_study_validate(const json_t *doc, const char *name, cs_err *e);

/* Load and validate study.json; *doc is a new reference. */
int harness_study_load(const char *path, json_t **doc, cs_err *e);

/* Validate a run document; partial = 1 for a study's "defaults" (no required keys). */
int harness_run_validate(const json_t *doc, const char *name, const char *where, int partial,
			 cs_err *e);

/* The most replicates a run spec may register. */
#define HARNESS_REPLICATES_MAX 1000u

/*
 * The runs a planned spec registers: its "replicates" key (1..1000),
 * default 1. spec: the raw or effective run document (borrowed). Every
 * count of a planned spec's runs reads it here.
 */
unsigned harness_spec_replicates(const json_t *spec);
/*
 * The first query row replicate (1..N) of an effective spec reads: queries.first,
 * or with queries.draw a row drawn from [first, first + draw - count] by the
 * replicate index and the study's plan.seed (study: NULL or the study spec).
 */
uint64_t harness_query_first(const json_t *eff, const json_t *study, unsigned replicate);

/* Load and validate run.json; *doc new, sha_out = spec_sha256 of the file's canonical form. */
int harness_run_load(const char *path, json_t **doc, char sha_out[65], cs_err *e);

/*
 * The effective spec: study defaults (may be NULL) under the run document,
 * every absent knob filled with the engine's default. New reference.
 */
int harness_run_effective(const json_t *run, const json_t *defaults, json_t **out, cs_err *e);

/*
 * Refuse treatment combinations that would measure nothing, on an
 * effective spec: virtual time without a device, prewarm under a
 * real-time device model, prewarm with
 * more than one client or warm. Exit 5 with the JSON path and why.
 */
int harness_run_check_treatments(const json_t *eff, const char *name, cs_err *e);

/*
 * harness_run_effective with the defaults of the study registered last in
 * l's ledger (none registered: engine defaults only). What `run` records
 * as "spec" and takes its features from; holdout should predict from the
 * same. New reference.
 */
struct ledger;
int harness_run_effective_study(struct ledger *l, const json_t *run, json_t **out, cs_err *e);

/*
 * The features a model may predict from (docs/records.md): clients,
 * fanout, mode, device, strategy, ef_search, search_probe, rescore_limit,
 * partitions (number searched), queries, cold, buffers_bytes, kind. kind
 * is read from the index directory's KIND file, and the partition count
 * of an index without a subset from the index itself (null when the index
 * cannot be opened). spec may be the raw or effective run document.
 */
int harness_spec_features(const json_t *spec, json_t **features, cs_err *e);

/*
 * The JSON Schemas (draft 2020-12) of run.json and study.json, built from
 * the key tables the validators above check with (`coldstudy schema`).
 * New references.
 */
json_t *harness_run_schema(void);
json_t *harness_study_schema(void);

/* coldstudy study register DIR study.json: validate and append a `study` record. */
int harness_study_register(const char *dir, const char *path, int64_t *seq, cs_err *e);

/*
 * The same with the plan's rules, and production's: production paths are
 * resolved against DIR (each must exist) and recorded by identity in the
 * record ("production_items") and the machine registry; a spec that drops
 * a protected item is refused (exit 3, recorded) unless rationale is given.
 * Every run spec the plan names is loaded,
 * validated and hashed (its tags checked against its settings) and the
 * record carries "plan_specs" [{"path","sha256","class"}] and
 * "plan_sha256". The same study and plan again writes nothing (*seq: the
 * record in force). A change is free before the first run_start; after
 * it, it is refused (exit 3, a refusal record) unless rationale is given,
 * when the record carries "amendment" {rationale, access_state, replaces,
 * replaces_seq}.
 */
int harness_study_register_amend(const char *dir, const char *path, const char *rationale,
				 int64_t *seq, cs_err *e);

/* The plan_specs of doc's plan, its paths relative to path's folder (new; exit 5 on conflict). */
int harness_plan_specs(const json_t *doc, const char *path, json_t **out, cs_err *e);

/*
 * The tags a run record carries, which rules select by: those its own
 * settings give it (cold|warm, serial|fanout + fanout<N>, gate|partition,
 * the device (hdd, ssd, nvme, gp3 and the profile name) and
 * virtual|realtime, ef<N>, prewarm|prewarm-other (then not cold), load,
 * bulkwrite, client-alt (client_cpus), memcap, merge-sort, baseline (knobs
 * at the study defaults, no treatment), the index kind) and its class (design, holdout, sceptic, exploratory), plus the
 * spec's other labels when the plan names the spec (cls not exploratory).
 * A spec tag of that vocabulary its settings contradict is exit 5 naming
 * $.tags[i]. eff: the effective spec; kind NULL when unknown. New array.
 */
int harness_run_tags(const json_t *eff, const json_t *defaults, const char *kind,
		     const char *cls, const char *name, json_t **out, cs_err *e);

/*
 * The run.json knobs a tag of the vocabulary stands for (NULL-terminated,
 * static): "cold" and "warm" the cache state (cold, cold_each_query,
 * warmup_queries), "serial"/"fanout<N>" the mode, a device tag the device,
 * "ef<N>" ef_search, "load" load, ... and "baseline" the knobs a baseline
 * run holds at the study's defaults. NULL for a tag that names no knob
 * (class and kind tags, labels outside the vocabulary).
 */
const char *const *harness_tag_knobs(const char *tag);

/*
 * The model checks (modelcheck.c): for each registered hypothesis, one
 * {"check": "model-check:Hn", "passed": true, "detail"} object appended to
 * out: every comparison of its rules classified by what decides it on the
 * plan's runs (the engine, a real device, the device model's parameters)
 * by replaying the model under engine figures it cannot know, and the
 * hypothesis a "model check" when the model alone decides it. Bound to the
 * plan (plan_sha256) and the version classified (hypothesis_seq).
 * 0 or an exit code.
 */
int harness_model_checks(struct ledger *l, const json_t *study, json_t *out, cs_err *e);

/*
 * The can-fail checks (canfail.c): for each registered hypothesis, one
 * {"check": "can-fail:Hn", "passed", "detail"} object appended to out
 * (study: the registered study document; plan: its plan, NULL: none).
 * *refuse is set to 1 when a confirmatory or non-cause hypothesis cannot
 * fail (validate then refuses, exit 3). 0 or CS_EXIT_INTERNAL.
 */
int harness_can_fail(struct ledger *l, const json_t *study, json_t *out, int *refuse, cs_err *e);

/*
 * The power checks (canfail.c): for each hypothesis decided by an interval,
 * one {"check": "power:Hn", "passed", "detail"} object appended to out:
 * the runs a side the plan registers, the spread (sd_log) it plans with,
 * the power at the predicted effect and the replicates that reach 0.9.
 * pilots: NULL, or run records ({tags, metrics}) whose spread is used in
 * place of the registered sd_log (`plan power --pilot`). *refuse is set
 * when a binding hypothesis falls below HARNESS_POWER_MIN and is not
 * registered underpowered. 0 or an exit code.
 */
#define HARNESS_POWER_MIN 0.8
int harness_power(struct ledger *l, const json_t *study, const json_t *pilots, json_t *out,
		  int *refuse, cs_err *e);

/*
 * The pilot runs named by ids (an array of run ids) as {id, tags, metrics}
 * (*out new): exit 5 for an id with no run record, or a run that is not
 * exploratory (pilots are disclosed runs outside the plan).
 */
int harness_pilots(struct ledger *l, const json_t *ids, json_t **out, cs_err *e);

/* The latest registered study document of DIR's ledger (new reference); exit 3 when none. */
struct ledger;
int harness_study_current(struct ledger *l, json_t **doc, cs_err *e);

/* ---- clones (clone.c) ---- */

#define HARNESS_CLONE_MARKER ".coldstudy-clone"

typedef struct harness_clone_info {
	char method[16];         /* "reflink" or "copy" */
	char source_sha256[65];  /* over the index files */
	uint64_t files, bytes, reflinked_files;
} harness_clone_info;

/*
 * Clone index directory src into dst (must not exist, or be an empty
 * directory): FICLONE per file where the file system can, a full copy
 * otherwise (method "copy" if any file had to be copied). Writes
 * dst/.coldstudy-clone last, bound to dst's own st_dev and st_ino, each
 * file's inode and size and src's content hash, authenticated with an
 * HMAC under study_dir's clone key (made on first use; NULL: no HMAC, and
 * no study run will accept the clone).
 */
int harness_clone(const char *src, const char *dst, const char *study_dir,
		  harness_clone_info *info, cs_err *e);

/*
 * harness_clone, for a PostgreSQL data directory that may be running: with
 * sockdir (its server's socket directory) and port, a running cluster is
 * copied through the low-level backup API (pg_backup_start, the files,
 * pg_backup_stop, then pg_wal and the backup_label), after checking that
 * the server there runs on src itself; port 0 is the port the server
 * registered (line 4 of src/postmaster.pid). Without sockdir a running
 * cluster is bad input (exit 5).
 */
int harness_clone_cluster(const char *src, const char *dst, const char *study_dir,
			  const char *sockdir, int port, harness_clone_info *info, cs_err *e);

/*
 * Resolve a clone's destination once and make it: refused (recorded with
 * l) when it exists, or is, lies in or contains production; created
 * beneath its held parent; h then holds the new, empty directory.
 */
struct guard_held;
int harness_clone_target(struct ledger *l, const char *dst, struct guard_held *h, cs_err *e);

/* SHA-256 over a directory's index files (sorted names, each name + length + bytes). */
int harness_dir_sha256(const char *dir, char out[65], cs_err *e);

/* ---- host (host.c) ---- */

/* BenchExec-style host capture; path selects the block device described. New reference. */
json_t *harness_host_capture(const char *path);

struct cv_device;
/*
 * What made a run's numbers (new): {"coldstudy": the project version,
 * "binary_sha256": the running binary's SHA-256 (null when unreadable),
 * "device_model": {"profile", "parameters_sha256": of the model's
 * parameters as cv_device_describe prints them} or null without a model}.
 */
json_t *harness_versions(const struct cv_device *dev);


/* ---- what a run reads (reach.c) ---- */

struct cv_dataset;
/* The digest of each query row (16 hex digits of its SHA-256; new), NULL past 65,536 rows. */
json_t *harness_query_digests(const struct cv_dataset *q);
/*
 * The plan's holdout targets a run (effective spec eff, query row digests)
 * reaches: same device, intersecting partitions and a query row in common,
 * or the target's device when no design run used it. *reached (new):
 * [{"target": path, "spec_sha256", "why"}], empty without a plan.
 */
int harness_holdout_reached(struct ledger *l, const json_t *study, const json_t *eff,
			    const json_t *digests, json_t **reached, cs_err *e);
/*
 * A run's query rows (digests) against the plan's holdout targets, for both
 * run paths: a holdout run's overlap with another target is decided on its
 * rows (guard_holdout_overlap); any other run before the predictions gets
 * *reached (new, or NULL) with the targets it reads, and a line on stderr.
 */
int harness_holdout_rows(struct ledger *l, const json_t *study, const json_t *eff,
			 const json_t *digests, int holdout, const char *declare_overlap, json_t **reached,
			 cs_err *e);

/* ---- validate (validate.c) ---- */

typedef struct harness_validate_opts {
	int allow_no_device_stats; /* waive the engine-vs-device check where no stats exist (a deviation) */
	int quiet;
	json_t *results;           /* borrowed, or NULL: each record's payload is appended (--json) */
} harness_validate_opts;

/* Run every check, each a `validation` record; exit 4 if any failed. */
int harness_validate(const char *dir, const harness_validate_opts *o, cs_err *e);

/* ---- a real storage tier: the kernel's block throttle (throttle.c) ---- */

/* A read cap: a profile's or riops=N,rbps=SIZE; 0: no limit on that axis. */
typedef struct harness_cap {
	char name[32];  /* the profile, "custom" or "uncapped" */
	uint64_t riops; /* reads a second */
	uint64_t rbps;  /* read bytes a second */
} harness_cap;

/* The profile names (NULL-terminated, static): gp3-3000, gp3-16000, gp3-80000, io2-80000, uncapped. */
const char *const *harness_cap_profiles(void);
/* Parse a profile name or "riops=N,rbps=SIZE" (K/M/G binary); exit 5 naming the part. */
int harness_cap_parse(const char *s, harness_cap *c, cs_err *e);

/* One capped cgroup on the whole disk under a held file (caller-owned; init, begin, end). */
typedef struct harness_throttle {
	harness_cap cap;
	int v2;             /* 1: cgroup v2 io.max (whole process), 0: v1 blkio (threads) */
	unsigned maj, min;  /* the whole disk capped */
	char disk[64];      /* its name */
	char via[256];      /* how it was found: "7:0 (loop0, backing file) -> 254:0 (vda)" */
	char root[256];     /* its hierarchy's root */
	char dir[512];      /* the cgroup */
	char home[1100];    /* where an entered thread goes back to */
	int dirfd, rootfd;
	int made;           /* the directory is ours to remove */
	int entered;        /* enter calls not yet left */
} harness_throttle;

void harness_throttle_init(harness_throttle *t);
/*
 * Resolve the whole disk under fd (a loop device to its backing file's
 * disk, a partition to its disk), make the cgroup and write the cap.
 * Exit 5 where there is no block device or no writable controller
 * (nothing is left behind); on success harness_throttle_end undoes it.
 */
int harness_throttle_begin(const harness_cap *cap, int fd, harness_throttle *t, cs_err *e);
/*
 * The calling thread (v1; v2: the whole process, as the io controller is
 * not threaded) joins / goes back; threads started inside inherit it, so on
 * v1 a caller enters, starts its readers and leaves, and on v2 it stays in
 * until its readers are done. 0 or -errno.
 */
int harness_throttle_enter(harness_throttle *t);
int harness_throttle_leave(harness_throttle *t);
/*
 * The calling thread (v1; v2: the process) into the cgroup, counting
 * nothing, from any thread: a reader pool's join (cv_pool_set_join, ctx
 * the harness_throttle), so a pool thread started before the cap reads
 * inside it. The threads go back at harness_throttle_end. 0 or -errno
 * (-EBADF once the throttle has ended: a pool thread never reads uncapped
 * by mistake).
 */
int harness_throttle_join(void *t);
/* The throttle's own counters of reads and bytes on the disk since begin. 0 or -errno. */
int harness_throttle_counters(const harness_throttle *t, uint64_t *reads, uint64_t *bytes);
/* What a record says of it: cap, controller, cgroup, disk, the counters given (new). */
json_t *harness_throttle_record(const harness_throttle *t, uint64_t reads, uint64_t bytes);
/* Everything back out, the cgroup removed; accepts an unused or ended one. */
void harness_throttle_end(harness_throttle *t);
/* Remove the cgroups that killed processes left (every command calls it). */
void harness_throttle_reap(void);

/* ---- run (run.c) ---- */

typedef struct harness_run_opts {
	int holdout;
	int enforce_clean;
	const char *declare_overlap; /* text of a declared holdout overlap, or NULL */
	const char *project_dir;     /* for --enforce-clean; NULL: $COLDSTUDY_SRC or "." */
	int progress;                /* -1: when stderr is a terminal */
	int has_seed;                /* seed given (--seed): replay that random stream */
	uint64_t seed;               /* the device model's seed, at most HARNESS_SEED_MAX */
	unsigned replicate;          /* 1..N: which of the spec's N replicates (0: the first) */
	const char *group;           /* the replicate group's id (its first run's), or NULL: this run's */
	char run_id[32];             /* out: the run's id */
	uint64_t seed_used;          /* out: the seed the run drew from */
} harness_run_opts;

/* Seeds are kept below 2^53 so that every JSON reader holds them exactly. */
#define HARNESS_SEED_MAX ((UINT64_C(1) << 53) - 1)

/* One run: guards, run_start, evict, prove cold, load, measure, one `run` record. */
int harness_run(const char *dir, const char *spec_path, harness_run_opts *o, cs_err *e);

/*
 * Every replicate of a spec, one harness_run each (replicate 1..N, the
 * group named by the first's run id), or only o->replicate when it is set
 * (1..N; exit 2 beyond N). each(run_id, ud) after each run that recorded.
 * Stops at the first failure. --seed (o->has_seed) names one run's stream:
 * with N > 1 it needs o->replicate.
 */
int harness_run_replicates(const char *dir, const char *spec_path, harness_run_opts *o,
			   void (*each)(const char *run_id, void *ud), void *ud, cs_err *e);

/*
 * The runs that died: every run_start with neither a run record nor a
 * deviation, whose run no longer holds its liveness marker, gets one
 * deviation naming it and the cause ("oom_kill" from its memory cgroup's
 * count, else "killed or crashed"), said on stderr. Set as the ledger's
 * ledger_on_open hook, so the next command on the study does it.
 */
struct ledger;
void harness_reap_unfinished(struct ledger *l);

/*
 * The samplers' series of run_id as flat rows (new array): which NULL or
 * "all" for every series, else "iostat", "memory" or "prometheus". Rows:
 * {"series", "t_s", ...the sampler's columns}; a Prometheus scrape is one
 * row per sample {"series","t_s","metric","value"} with "prometheus", or
 * one row per scrape {"samples","skipped","error"} with "all". Exit 5
 * naming the run or series when there is none.
 */
int harness_run_series(struct ledger *l, const char *run_id, const char *which, json_t **rows,
		       cs_err *e);

/* Write series rows as a table for a person, one block per series. */
void harness_series_write_text(const json_t *rows, FILE *out);

#endif
