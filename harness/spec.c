/*
 * spec.c - study.json and run.json: strict validation, defaults, the
 * features a model predicts from, and the `study` record.
 *
 * Validation is as strict as for hypothesis files: every key is known
 * (unknown keys are refused, so a typo like "ef_serch" cannot silently
 * fall back to a default), every value has its type and range, and a
 * failure names the file, the JSON path and what was expected (exit 5).
 *
 * The run document is kept as written for its identity (spec_sha256 over
 * its canonical form); the effective spec merges the study's defaults
 * under it and fills every remaining knob with the engine's default, so
 * a run record shows exactly what ran.
 */
#include "harness.h"
#include "harness_int.h"

#include "coldvec.h"
#include "guard.h"
#include "jsonv.h"
#include "ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <strings.h>

/* ---- small helpers ---- */

static int bad(cs_err *e, const char *name, const char *where, const char *key, const char *why)
{
	return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s%s%s: %s", name, where, key ? "." : "",
			  key ? key : "", why);
}

/* ---- the key tables: what study.json and run.json may say ---- */

/* A throttle cap (harness_cap_parse checks it again on the effective spec). */
#define THROTTLE_PATTERN                                                                           \
	"^(gp3-3000|gp3-16000|gp3-80000|io2-80000|uncapped|riops=[1-9][0-9]{0,8}(,rbps=[1-9][0-9]{0,12}[KMG]?)?|rbps=[1-9][0-9]{0,12}[KMG]?(,riops=[1-9][0-9]{0,8})?)$"
#define THROTTLE_EXPECT "a throttle profile or riops=N,rbps=SIZE"

/* What a name of a study's datasets or indexes, an id, looks like. */
#define ID_PATTERN "^[A-Za-z0-9._-]{1,64}$"
#define ID_EXPECT "1-64 of [A-Za-z0-9._-]"
/* A dataset spec string (engine/cv_data.h), with an optional row range. */
#define DATASET_PATTERN                                                                            \
	"^(fashion-mnist(:train|:test)?|(fvecs|ivecs|bvecs|idx|npy|hdf5):.+|synth:.+)"             \
	"(\\[[0-9]*:[0-9]*\\])?$"
#define DATASET_EXPECT                                                                             \
	"a dataset spec (fashion-mnist[:train|:test], fvecs:PATH, ivecs:PATH, bvecs:PATH, "       \
	"idx:PATH, npy:PATH, hdf5:PATH[:train|:test], synth:n=N,d=D,...; optionally [A:B])"
#define PATH_MAX_BYTES 4000

static const char *const modes[] = {"serial", "fanout", NULL};
static const char *const merges[] = {"stream", "sort", NULL};
static const char *const io_modes[] = {"serial", "concurrent", NULL};
static const char *const strategies[] = {"mmap", "pread", "direct", "uring", "auto", NULL};
static const char *const dist_metrics[] = {"l2", "ip", "cosine", NULL};
static const char *const device_times[] = {"realtime", "virtual", NULL};
static const char *const prewarm_ofs[] = {"self", "other", NULL};
static const char *const index_kinds[] = {"hnsw", "paged", "phnsw", "hfresh", "postgres", NULL};
static const char *const targets[] = {"engine", "postgres", NULL};
static const char *const vector_texts[] = {"array", "pgvector", NULL};
static const char *const pg_prewarm_modes[] = {"buffer", "read", "prefetch", NULL};

/*
 * A run on a PostgreSQL clone (target "postgres", harness/pgrun.c): the
 * run's index is the clone's data directory; these say what to send and
 * how the private server runs. The SQL patterns want $1 (and {p}) anywhere,
 * across lines too.
 */
/* A database or role name: never a quote, '=', whitespace or control character (issue 31). */
#define PG_NAME_PATTERN "^[^\"'= \x01-\x1f\x7f]+$"
#define PG_NAME_EXPECT "a name without quotes, '=', whitespace or control characters"
/* One shard of a run over N servers (pgfdw.c): the coordinator's foreign server's clone. */
static const jv_key pg_shard_keys[] = {
	{.name = "index", .type = JK_STRING, .flags = JK_REQUIRED, .max = PATH_MAX_BYTES,
	 .desc = "the shard's cloned data directory (coldstudy clone of the stopped shard)"},
	{.name = "port", .type = JK_INT, .flags = JK_REQUIRED, .lo = 1024, .hi = 65535,
	 .desc = "the port that names the shard's private socket file (never production's)"},
	{.name = "shared_buffers", .type = JK_STRING, .max = 32, .pattern = "^[0-9]+(kB|MB|GB)?$",
	 .expect = "a size like \"16MB\" (digits, then kB, MB or GB)",
	 .desc = "the shard server's shared_buffers (default: the coordinator's)"},
	{0},
};

static const jv_key postgres_keys[] = {
	{.name = "sql", .type = JK_STRING, .flags = JK_REQUIRED, .max = 65536, .pattern = "[$]1",
	 .expect = "SQL with $1 for the query vector",
	 .desc = "the query, sent once per query with the query vector as $1 (text); its first "
		 "column is the row's id"},
	{.name = "partition_sql", .type = JK_STRING, .max = 65536,
	 .pattern = "[$]1(.|\n)*[{]p[}]|[{]p[}](.|\n)*[$]1",
	 .expect = "SQL with $1 for the query vector and {p} for the partition",
	 .desc = "fan-out: one partition's query ({p}: its number), returning (id, distance) in "
		 "distance order"},
	{.name = "session", .type = JK_STRINGS, .max = 64, .pattern = "^[Ss][Ee][Tt] [^;]*$",
	 .expect = "one \"SET name = value\" statement without ';'",
	 .desc = "SET statements run in every session: the knobs (hnsw.ef_search, enable_seqscan, ...)"},
	{.name = "shared_buffers", .type = JK_STRING, .max = 32, .pattern = "^[0-9]+(kB|MB|GB)?$",
	 .expect = "a size like \"16MB\" (digits, then kB, MB or GB)",
	 .desc = "the private server's shared_buffers (default 128MB)"},
	{.name = "port", .type = JK_INT, .lo = 1024, .hi = 65535,
	 .desc = "the port that names the private server's socket file (default 5432; never "
		 "production's)"},
	{.name = "database", .type = JK_STRING, .max = 63, .pattern = PG_NAME_PATTERN,
	 .expect = PG_NAME_EXPECT, .desc = "the database (default postgres)"},
	{.name = "user", .type = JK_STRING, .max = 63, .pattern = PG_NAME_PATTERN,
	 .expect = PG_NAME_EXPECT, .desc = "the role (default: the data directory's owner's name)"},
	{.name = "vector_text", .type = JK_ENUM, .vals = vector_texts,
	 .desc = "how $1 is written: array ({a,b,...}, cast it, e.g. cube($1::float8[])) or "
		 "pgvector ([a,b,...])"},
	{.name = "shards", .type = JK_OBJECT_MAP, .pattern = "^[a-z_][a-z0-9_]{0,62}$",
	 .sub = pg_shard_keys,
	 .expect = "a foreign server's name (lower case letters, digits, '_')",
	 .desc = "a run over N servers: the index is the coordinator's clone, and each of its "
		 "postgres_fdw foreign servers (by name) is a cloned shard {index, port, "
		 "shared_buffers}, started privately, evicted and proven cold; the coordinator's "
		 "servers are repointed at the shards' private sockets"},
	{.name = "prewarm", .type = JK_STRINGS, .max = 256,
	 .pattern = "^([A-Za-z_][A-Za-z0-9_$]*[.])?[A-Za-z_][A-Za-z0-9_$]*$|^all indexes$",
	 .expect = "a relation name (schema.name allowed), or \"all indexes\"",
	 .desc = "pg_prewarm (contrib) after every cold start, before the queries: these relations, "
		 "or \"all indexes\" (every index outside the catalogs); setup, timed as prewarm_s "
		 "outside the wall; needs cold"},
	{.name = "prewarm_mode", .type = JK_ENUM, .vals = pg_prewarm_modes,
	 .desc = "pg_prewarm's mode: buffer (into shared_buffers, the default), read (into the "
		 "page cache) or prefetch (asynchronous read-ahead)"},
	{0},
};

static const jv_key query_keys[] = {
	{.name = "spec", .type = JK_STRING, .flags = JK_REQUIRED, .max = PATH_MAX_BYTES,
	 .desc = "the query vectors: a dataset spec, or a name from the study's datasets"},
	{.name = "first", .type = JK_INT, .lo = 0, .hi = 1099511627776.0,
	 .desc = "the first query row used (default 0)"},
	{.name = "count", .type = JK_INT, .lo = 1, .hi = 1099511627776.0,
	 .desc = "how many query rows from first (default: to the end)"},
	{.name = "draw", .type = JK_INT, .lo = 2, .hi = 1099511627776.0,
	 .desc = "a registered range of draw rows from first: each replicate reads count "
		 "consecutive rows starting at a row drawn from [first, first + draw - count], seeded "
		 "by the replicate index and the study's plan.seed (replicate i reads the same rows in "
		 "every spec with the same range, so contrasted replicates stay paired); needs count "
		 "below draw"},
	{.schema = "{\"dependentRequired\": {\"draw\": [\"count\"]}}"},
	{0},
};

static const jv_key sampler_keys[] = {
	{.name = "iostat_s", .type = JK_NUMBER, .lo = 0.01, .hi = 3600,
	 .desc = "period in seconds of the block-device sampler (/proc/diskstats, as iostat -x)"},
	{.name = "memory_s", .type = JK_NUMBER, .lo = 0.01, .hi = 3600,
	 .desc = "period in seconds of the memory sampler (RSS, the cgroup's usage)"},
	{.name = "prometheus_s", .type = JK_NUMBER, .lo = 0.01, .hi = 3600,
	 .desc = "period in seconds of the Prometheus scraper"},
	{.name = "prometheus_url", .type = JK_STRING, .max = 2000, .pattern = "^https?://",
	 .expect = "an http:// or https:// URL",
	 .desc = "the metrics endpoint to scrape (e.g. node-exporter's http://127.0.0.1:9100/metrics)"},
	{.name = "fatal", .type = JK_BOOL,
	 .desc = "true: a sample that fails (a device stat unread, an HTTP error, a page with no "
		 "metrics) fails the run, the load stopping there: exit 1, a deviation, no run "
		 "record (default false: the failures are counted in the run record's samplers and "
		 "said on stderr)"},
	{0},
};

static const jv_key prewarm_keys[] = {
	{.name = "of", .type = JK_ENUM, .flags = JK_REQUIRED, .vals = prewarm_ofs,
	 .desc = "whose blocks are loaded before each query: the query's own (self) or another's"},
	{.name = "offset", .type = JK_INT, .lo = 1, .hi = 1099511627776.0,
	 .desc = "for other: the query row offset of the other query (default: the query count)"},
	{0},
};

static const jv_key load_keys[] = {
	{.name = "readers", .type = JK_INT, .flags = JK_REQUIRED, .lo = 1, .hi = 256,
	 .desc = "competing reader threads doing random O_DIRECT reads of the index files"},
	{.name = "block_bytes", .type = JK_INT, .lo = 4096, .hi = 1048576, .multiple = 4096,
	 .desc = "bytes a competing read (a multiple of 4096, default 8192)"},
	{0},
};

static const jv_key bulkwrite_keys[] = {
	{.name = "max_bytes", .type = JK_INT, .lo = 1048576, .hi = 1099511627776.0,
	 .desc = "stop writing after this many bytes (default 1 GiB)"},
	{.name = "max_s", .type = JK_NUMBER, .flags = JK_EXCL_LO, .lo = 0, .hi = 86400,
	 .desc = "stop writing after this many seconds (default 600)"},
	{.name = "chunk_bytes", .type = JK_INT, .lo = 4096, .hi = 67108864,
	 .desc = "bytes a write (default 1 MiB)"},
	{.name = "sync_bytes", .type = JK_INT, .lo = 4096, .hi = 17179869184.0,
	 .desc = "fdatasync after this many bytes (default 8 MiB)"},
	{.name = "dir", .type = JK_STRING, .max = PATH_MAX_BYTES,
	 .desc = "where the scratch file goes (default: the study's scratch_dir, else beside the index)"},
	{0},
};

static const jv_key run_keys[] = {
	{.name = "index", .type = JK_STRING, .flags = JK_REQUIRED, .max = PATH_MAX_BYTES,
	 .desc = "the index directory to query: a clone made by 'coldstudy clone', never production"},
	{.name = "queries", .type = JK_OBJECT, .flags = JK_REQUIRED, .sub = query_keys,
	 .desc = "the query set: {spec, first, count}"},
	{.name = "base", .type = JK_STRING, .max = PATH_MAX_BYTES,
	 .desc = "the base vectors for exact ground truth and recall (default: the study index's dataset)"},
	{.name = "k", .type = JK_INT, .lo = 1, .hi = 1000, .desc = "neighbours a query returns (default 10)"},
	{.name = "ef_search", .type = JK_INT, .lo = 1, .hi = 100000,
	 .desc = "HNSW search list size (default 40)"},
	{.name = "search_probe", .type = JK_INT, .lo = 1, .hi = 100000,
	 .desc = "HFresh: postings probed a query"},
	{.name = "rescore_limit", .type = JK_INT, .lo = 0, .hi = 1000000,
	 .desc = "HFresh: candidates rescored against full vectors"},
	{.name = "mode", .type = JK_ENUM, .vals = modes,
	 .desc = "partitioned index: serial (Merge Append, one partition after another) or fanout"},
	{.name = "fanout", .type = JK_INT, .lo = 1, .hi = 4096,
	 .desc = "fan-out: partitions searched at once by one query (default 1)"},
	{.name = "merge", .type = JK_ENUM, .vals = merges,
	 .desc = "fan-out merge: stream (k-way in returned order) or sort (by recomputed distance)"},
	{.name = "io", .type = JK_ENUM, .vals = io_modes,
	 .desc = "HFresh reads: serial (as Weaviate) or concurrent"},
	{.name = "io_depth", .type = JK_INT, .lo = 1, .hi = 4096,
	 .desc = "HFresh concurrent reads in flight a query"},
	{.name = "strategy", .type = JK_ENUM, .vals = strategies,
	 .desc = "block I/O: mmap, pread, direct (O_DIRECT), uring (io_uring) or auto (pread, and views of what the page cache holds) (default pread: a registered plan's runs stay as it was written)"},
	{.name = "queue_depth", .type = JK_INT, .lo = 1, .hi = 4096,
	 .desc = "reads in flight a client for uring / direct"},
	{.name = "buffers_bytes", .type = JK_INT, .lo = 0, .hi = 70368744177664.0,
	 .desc = "the index's buffer pool in bytes (as shared_buffers; default 128 MiB)"},
	{.name = "device", .type = JK_ENUM, .flags = JK_NULLABLE, .vals_fn = cv_device_profiles,
	 .pattern = "^probe:", .expect = "unknown device profile",
	 .desc = "a device model every read goes through: a profile ('coldstudy device list') or "
		 "probe:FILE; null: the real device"},
	{.name = "throttle", .type = JK_STRING, .flags = JK_NULLABLE, .max = 64,
	 .pattern = THROTTLE_PATTERN, .expect = THROTTLE_EXPECT,
	 .desc = "a real cap on the clone's whole disk, the kernel's block throttle (cgroup v2 "
		 "io.max, v1 blkio.throttle) over the run's readers (a postgres run's: its "
		 "servers): gp3-3000, gp3-16000, "
		 "gp3-80000, io2-80000, uncapped (counted, no limit) or riops=N,rbps=SIZE (K/M/G); "
		 "needs cold, excludes device"},
	{.name = "clients", .type = JK_INT, .lo = 1, .hi = 1024,
	 .desc = "closed-loop clients, each sending its next query when the last returns (default 1)"},
	{.name = "query_count", .type = JK_INT, .lo = 1, .hi = 100000000,
	 .desc = "queries in all, cycling through the query set (default: the set once)"},
	{.name = "duration_s", .type = JK_NUMBER, .flags = JK_EXCL_LO, .lo = 0, .hi = 604800,
	 .desc = "run for this many seconds instead of a query count"},
	{.name = "cold", .type = JK_BOOL, .flags = JK_REQUIRED,
	 .desc = "true: evict and prove the page cache cold first; false: warm it with one pass"},
	{.name = "partitions", .type = JK_INTS, .flags = JK_UNIQUE, .lo = 0, .hi = 65535, .max = 65536,
	 .desc = "partitioned index: the partitions searched (default all)"},
	{.name = "tags", .type = JK_STRINGS, .max = 64,
	 .desc = "labels the hypotheses' rules select runs by"},
	{.name = "hypotheses", .type = JK_STRINGS, .max = 64, .pattern = ID_PATTERN,
	 .expect = "a hypothesis id like \"H1\"",
	 .desc = "the registered hypotheses this run serves (a design run)"},
	{.name = "samplers", .type = JK_OBJECT, .sub = sampler_keys,
	 .desc = "series sampled beside the load: iostat_s, memory_s, prometheus_s, prometheus_url, "
		 "fatal ('coldstudy run show S RID --series' prints them)"},
	{.name = "mem_cap_bytes", .type = JK_INT, .lo = 1048576, .hi = 70368744177664.0,
	 .desc = "a memory cgroup cap for the run (its anonymous memory and the page cache it may "
		 "hold); one below what the run must map (the buffer pool + per-query rows + 16 MiB) "
		 "is refused before the run, exit 5 with the figure"},
	{.name = "readahead", .type = JK_BOOL, .desc = "leave kernel read-ahead on (default off)"},
	{.name = "metric", .type = JK_ENUM, .vals = dist_metrics,
	 .desc = "distance for ground truth (default: the index's)"},
	{.name = "notes", .type = JK_STRING, .max = 65536, .desc = "free text"},
	{.name = "device_time", .type = JK_ENUM, .vals = device_times,
	 .desc = "realtime: the device model delays reads; virtual: real reads, each query's trace "
		 "replayed on the model afterwards"},
	{.name = "seed", .type = JK_INT, .lo = 0, .hi = 9007199254740991.0,
	 .desc = "the device model's random stream, registered with the spec (default: a hash of "
		 "the run id and the spec, so every run draws its own); needs device"},
	{.name = "prewarm", .type = JK_OBJECT, .flags = JK_NULLABLE, .sub = prewarm_keys,
	 .desc = "load a query's blocks (or another's) into the cache before it: {of, offset}"},
	{.name = "load", .type = JK_OBJECT, .flags = JK_NULLABLE, .sub = load_keys,
	 .desc = "competing random readers during the run: {readers, block_bytes}; under a device "
		 "profile they wait in its queues (virtual time: modelled beside each query)"},
	{.name = "bulkwrite", .type = JK_OBJECT, .flags = JK_NULLABLE, .sub = bulkwrite_keys,
	 .desc = "a bulk writer on the same file system during the run; under a device profile its "
		 "flushes wait in its queues (virtual time: modelled, no bytes written)"},
	{.name = "client_cpus", .type = JK_INTS, .flags = JK_NULLABLE, .lo = 0, .hi = 1023, .max = 1024,
	 .desc = "CPUs the clients are pinned to"},
	{.name = "repeat", .type = JK_INT, .lo = 1, .hi = 1000,
	 .desc = "run the load this many times, each from the same state (cold: evicted and proven "
		 "cold again); metrics are the repeats' means, each repeat's are kept (default 1)"},
	{.name = "replicates", .type = JK_INT, .lo = 1, .hi = HARNESS_REPLICATES_MAX,
	 .desc = "independent runs of this spec, each its own cold run and record with its own "
		 "random stream (a registered seed is mixed with the replicate index), hashed with "
		 "the spec; not a study default, not on a holdout target (default 1)"},
	{.name = "warmup_queries", .type = JK_INT, .lo = 0, .hi = 100000000,
	 .desc = "untimed queries with one client before each repeat (a cold run is made cold "
		 "again after them) (default 0)"},
	{.name = "cold_each_query", .type = JK_BOOL,
	 .desc = "cold again (evict, prove) before every query; needs cold and one client"},
	{.name = "target", .type = JK_ENUM, .vals = targets,
	 .desc = "what is queried: engine (coldstudy's index, the default) or postgres (a private "
		 "server on a cloned cluster; index is its data directory)"},
	{.name = "postgres", .type = JK_OBJECT, .sub = postgres_keys,
	 .desc = "target postgres: {sql, partition_sql, session, shared_buffers, port, database, "
		 "user, vector_text, prewarm, prewarm_mode, shards}"},
	{.schema = "{\"not\": {\"required\": [\"query_count\", \"duration_s\"]},"
		   " \"if\": {\"required\": [\"target\"], \"properties\": {\"target\": {\"const\": \"postgres\"}}},"
		   " \"then\": {\"required\": [\"postgres\"]}}"},
};

static const jv_key production_keys[] = {
	{.name = "paths", .type = JK_STRINGS, .max = 64,
	 .desc = "files and directories no verb may write, evict or clone onto"},
	{.name = "block_devices", .type = JK_STRINGS, .max = 64, .desc = "block devices never touched"},
	{.name = "databases", .type = JK_STRINGS, .max = 64, .desc = "database names never touched"},
	{.name = "hosts", .type = JK_STRINGS, .max = 64, .desc = "host names never touched"},
	{.name = "sockets", .type = JK_STRINGS, .max = 64,
	 .desc = "a server's socket directories (identities, like paths): no run's server is "
		 "reached there"},
	{.name = "ports", .type = JK_INTS, .lo = 1, .hi = 65535, .max = 64,
	 .desc = "a server's ports: no run's server is named by one"},
	{.schema = "{\"anyOf\": [{\"required\": [\"paths\"], \"properties\": {\"paths\": {\"minItems\": 1}}},"
		   " {\"required\": [\"block_devices\"], \"properties\": {\"block_devices\": {\"minItems\": 1}}},"
		   " {\"required\": [\"databases\"], \"properties\": {\"databases\": {\"minItems\": 1}}},"
		   " {\"required\": [\"hosts\"], \"properties\": {\"hosts\": {\"minItems\": 1}}},"
		   " {\"required\": [\"sockets\"], \"properties\": {\"sockets\": {\"minItems\": 1}}},"
		   " {\"required\": [\"ports\"]}]}"},
};

static const jv_key index_keys[] = {
	{.name = "kind", .type = JK_ENUM, .vals = index_kinds,
	 .desc = "the index kind: hnsw, paged, phnsw (partitioned), hfresh, or postgres (a "
		 "cluster's data directory)"},
	{.name = "dataset", .type = JK_STRING, .max = PATH_MAX_BYTES,
	 .desc = "the dataset (a name of datasets) the index was built over: recall's base"},
	{.name = "source", .type = JK_STRING, .max = PATH_MAX_BYTES,
	 .desc = "the index directory built (production stand-in)"},
	{.name = "clone", .type = JK_STRING, .flags = JK_REQUIRED, .max = PATH_MAX_BYTES,
	 .desc = "the clone runs query"},
	{0},
};

/*
 * The plan (issue 13): what the study will run and how it will be judged,
 * registered before the first run. Paths are run specs relative to the
 * study.json's folder; registration hashes each.
 */
static const jv_key plan_hyp_keys[] = {
	{.name = "runs", .type = JK_STRINGS, .flags = JK_REQUIRED, .max = 4096,
	 .desc = "the run specs whose runs decide the hypothesis (its rules see only these)"},
	{.name = "sceptic", .type = JK_STRINGS, .max = 4096,
	 .desc = "run specs designed to refute it: 'accepted' needs them done and not refuting"},
	{0},
};

static const jv_key plan_holdout_keys[] = {
	{.name = "targets", .type = JK_STRINGS, .flags = JK_REQUIRED, .max = 4096,
	 .desc = "the holdout run specs: a run of one is a holdout run whatever its flags"},
	{.name = "metrics", .type = JK_STRINGS, .flags = JK_REQUIRED, .max = 64,
	 .pattern = "^[a-z][a-z0-9_]*$", .expect = "a metric name of the vocabulary",
	 .desc = "the metrics predicted for every target"},
	{.name = "threshold", .type = JK_NUMBER, .flags = JK_REQUIRED | JK_EXCL_LO, .lo = 0, .hi = 100,
	 .desc = "the median relative error (MdAPE/100) a pass allows; --threshold may not differ"},
	{.name = "band_level", .type = JK_NUMBER, .lo = 0.5, .hi = 0.999,
	 .desc = "the coverage level of the prediction bands (default 0.95)"},
	{.name = "min_inside", .type = JK_INT, .lo = 0, .hi = 1073741824,
	 .desc = "a pass also needs at least this many predictions inside their bands"},
	{0},
};

static const jv_key plan_keys[] = {
	{.name = "design", .type = JK_STRINGS, .max = 4096,
	 .desc = "the design run specs (those in hypotheses.*.runs are design runs too)"},
	{.name = "hypotheses", .type = JK_OBJECT_MAP, .pattern = "^H[1-9][0-9]{0,5}$",
	 .sub = plan_hyp_keys, .desc = "per hypothesis id: {runs, sceptic}"},
	{.name = "holdout", .type = JK_OBJECT, .sub = plan_holdout_keys,
	 .desc = "the holdout targets and the scoring rule"},
	{.name = "notes", .type = JK_STRING, .max = 65536, .desc = "free text"},
	{.name = "seed", .type = JK_INT, .lo = 0, .hi = 9007199254740991.0,
	 .desc = "the study's seed: mixed into every run's device stream (and every replicate's), "
		 "so a replication ('coldstudy replicate S --out S2') draws afresh from the same "
		 "specs (default: none, each run's own stream)"},
	{0},
};

static const jv_key study_keys[] = {
	{.name = "id", .type = JK_STRING, .flags = JK_REQUIRED, .max = 64, .pattern = ID_PATTERN,
	 .expect = ID_EXPECT, .desc = "the study's name"},
	{.name = "title", .type = JK_STRING, .max = 512, .desc = "a title for the report"},
	{.name = "production", .type = JK_OBJECT, .flags = JK_REQUIRED, .sub = production_keys,
	 .desc = "what the study must never touch: {paths, block_devices, databases, hosts}, one item at least"},
	{.name = "datasets", .type = JK_MAP, .pattern = ID_PATTERN, .vpattern = DATASET_PATTERN,
	 .expect = DATASET_EXPECT, .max = PATH_MAX_BYTES,
	 .desc = "named dataset specs run specs may refer to by name"},
	{.name = "indexes", .type = JK_OBJECT_MAP, .pattern = ID_PATTERN, .sub = index_keys,
	 .desc = "named indexes: {kind, dataset, source, clone}"},
	{.name = "defaults", .type = JK_ANY, .schema = "{\"$ref\": \"#/$defs/run_defaults\"}",
	 .desc = "run.json keys every run of the study starts from"},
	{.name = "scratch_dir", .type = JK_STRING, .max = PATH_MAX_BYTES,
	 .desc = "where bulk writes and scratch files go"},
	{.name = "notes", .type = JK_STRING, .max = 65536, .desc = "free text"},
	{.name = "plan", .type = JK_OBJECT, .sub = plan_keys,
	 .desc = "the plan, frozen at the first run: design runs, the runs deciding each hypothesis and "
		 "its sceptic runs, the holdout targets and scoring rule"},
	{0},
};

/* What the plan's table cannot say: non-empty lists, a reachable minimum. */
static int plan_validate(const json_t *plan, const char *name, cs_err *e)
{
	const json_t *h = json_object_get(plan, "holdout"), *mi;
	const char *k;
	json_t *x;
	char w[160];

	json_object_foreach(json_object_get(plan, "hypotheses"), k, x) {
		snprintf(w, sizeof(w), "$.plan.hypotheses.%.32s", k);
		if (!json_array_size(json_object_get(x, "runs")))
			return bad(e, name, w, "runs", "expected the run specs that decide it (non-empty)");
	}
	if (!h)
		return 0;
	if (!json_array_size(json_object_get(h, "targets")))
		return bad(e, name, "$.plan.holdout", "targets", "expected the holdout run specs (non-empty)");
	if (!json_array_size(json_object_get(h, "metrics")))
		return bad(e, name, "$.plan.holdout", "metrics", "expected the metrics predicted (non-empty)");
	mi = json_object_get(h, "min_inside");
	if (mi && (size_t) json_integer_value(mi) >
		      json_array_size(json_object_get(h, "targets")) *
			      json_array_size(json_object_get(h, "metrics")))
		return bad(e, name, "$.plan.holdout", "min_inside",
			   "asks for more predictions inside their bands than targets x metrics");
	return 0;
}

int harness_study_validate(const json_t *doc, const char *name, cs_err *e)
{
	const json_t *prod;
	size_t total = 0;
	int rc;

	rc = jv_keys_check(doc, study_keys, 0, name, "$", e);
	if (rc)
		return rc;
	/* Between keys (the terminator's anyOf): at least one production item. */
	prod = json_object_get(doc, "production");
	for (const jv_key *k = production_keys; k->name; k++)
		total += json_array_size(json_object_get(prod, k->name));
	if (!total)
		return bad(e, name, "$", "production",
			   "names no production item: a study must say what it must never touch");
	if (json_object_get(doc, "plan") && (rc = plan_validate(json_object_get(doc, "plan"), name, e)))
		return rc;
	if (json_object_get(doc, "defaults")) {
		if (!json_is_object(json_object_get(doc, "defaults")))
			return bad(e, name, "$", "defaults", "expected an object of run.json keys");
		return harness_run_validate(json_object_get(doc, "defaults"), name, "$.defaults", 1,
					    e);
	}
	return 0;
}

int harness_study_load(const char *path, json_t **doc, cs_err *e)
{
	int rc = cs_json_load_file(path, HARNESS_SPEC_CAP, doc, e);

	if (rc)
		return rc;
	rc = harness_study_validate(*doc, path, e);
	if (rc) {
		json_decref(*doc);
		*doc = NULL;
	}
	return rc;
}

/* ---- run.json ---- */

/*
 * The treatment knobs (docs/records.md "Treatments"): device_time,
 * prewarm, load, bulkwrite, client_cpus, checked by the table. Combinations
 * that would measure nothing (virtual time without a device, prewarm
 * under a real-time device model) are refused on the effective spec only, since study defaults may
 * supply the device.
 */

/* The combinations the harness refuses on an effective spec (exit 5). */
int harness_run_check_treatments(const json_t *eff, const char *name, cs_err *e)
{
	const json_t *dev = json_object_get(eff, "device");
	const char *dt = json_string_value(json_object_get(eff, "device_time"));
	int virt = dt && !strcmp(dt, "virtual");
	int has_dev = json_is_string(dev);
	const json_t *pw = json_object_get(eff, "prewarm");

	if (virt && !has_dev)
		return bad(e, name, "$", "device_time",
			   "\"virtual\" replays reads against a device profile, and none is named");
	if (json_is_object(pw) && has_dev && !virt)
		return bad(e, name, "$", "prewarm",
			   "the real-time device model delays page-cache hits too, so prewarm would "
			   "show nothing; use \"device_time\": \"virtual\" or no device");
	if (json_is_object(pw) && json_integer_value(json_object_get(eff, "clients")) != 1)
		return bad(e, name, "$", "prewarm",
			   "prewarm evicts and loads the cache before each query: needs clients 1");
	if (json_object_get(eff, "seed") && !json_is_string(json_object_get(eff, "device")))
		return bad(e, name, "$", "seed", "seeds the device model's random stream: needs \"device\"");
	if (json_is_true(json_object_get(eff, "cold_each_query")) &&
	    !json_is_true(json_object_get(eff, "cold")))
		return bad(e, name, "$", "cold_each_query", "needs \"cold\": true");
	if (json_is_string(json_object_get(eff, "throttle"))) {
		harness_cap cap;
		cs_err ce = {0};

		if (harness_cap_parse(json_string_value(json_object_get(eff, "throttle")), &cap, &ce))
			return bad(e, name, "$", "throttle", ce.msg);
		if (has_dev)
			return bad(e, name, "$", "throttle",
				   "a real cap and a device model would delay each read twice: drop "
				   "\"device\" (or the throttle)");
		if (!json_is_true(json_object_get(eff, "cold")))
			return bad(e, name, "$", "throttle",
				   "a warm run reads the page cache, which no throttle sees: needs "
				   "\"cold\": true");
		if (json_is_object(pw))
			return bad(e, name, "$", "throttle",
				   "prewarmed blocks are page-cache hits the throttle never sees: no "
				   "prewarm under a throttle");
	}
	if (json_is_true(json_object_get(eff, "cold_each_query")) &&
	    json_integer_value(json_object_get(eff, "clients")) != 1)
		return bad(e, name, "$", "cold_each_query",
			   "evicting before each query would evict other clients' pages: needs clients 1");
	if (json_is_object(pw) && !json_is_true(json_object_get(eff, "cold")))
		return bad(e, name, "$", "prewarm", "a prewarm run starts cold: needs \"cold\": true");
	if (json_is_string(json_object_get(eff, "target")) &&
	    !strcmp(json_string_value(json_object_get(eff, "target")), "postgres")) {
		static const char *const engine_only[] = {"device", "seed", "prewarm", "client_cpus",
							  NULL};
		const json_t *pg = json_object_get(eff, "postgres");

		for (size_t i = 0; engine_only[i]; i++)
			if (json_object_get(eff, engine_only[i]) &&
			    !json_is_null(json_object_get(eff, engine_only[i])))
				return bad(e, name, "$", engine_only[i],
					   "is an engine target's knob; a postgres run does not take it");
		if (json_integer_value(json_object_get(eff, "clients")) != 1)
			return bad(e, name, "$", "clients",
				   "a postgres run is one client: serial (one query at a time) or a "
				   "fan-out over \"fanout\" connections");
		if (json_object_get(pg, "shards") &&
		    !strcmp(json_string_value(json_object_get(eff, "mode")), "fanout"))
			return bad(e, name, "$", "mode",
				   "a run over shards is one statement on the coordinator (PostgreSQL's "
				   "async Append fans it out): needs mode serial");
		if (json_object_get(pg, "prewarm") && !json_is_true(json_object_get(eff, "cold")))
			return bad(e, name, "$", "postgres.prewarm",
				   "prewarms after each cold start: needs \"cold\": true");
		if (json_object_get(pg, "prewarm_mode") && !json_object_get(pg, "prewarm"))
			return bad(e, name, "$", "postgres.prewarm_mode",
				   "is pg_prewarm's mode: needs postgres.prewarm");
		if (!strcmp(json_string_value(json_object_get(eff, "mode")), "fanout") &&
		    (!json_object_get(pg, "partition_sql") ||
		     !json_is_array(json_object_get(eff, "partitions"))))
			return bad(e, name, "$", "postgres.partition_sql",
				   "a fan-out sends each partition's query: needs postgres.partition_sql "
				   "and \"partitions\"");
	}
	return 0;
}

int harness_run_validate(const json_t *doc, const char *name, const char *where, int partial,
			 cs_err *e)
{
	int rc = jv_keys_check(doc, run_keys, partial, name, where, e);

	if (rc)
		return rc;
	/* A spec's replicates are registered with it (its hash), never inherited. */
	if (partial && json_object_get(doc, "replicates"))
		return bad(e, name, where, "replicates",
			   "is a run spec's own count, hashed with it: not a study default");
	/* A query draw: count rows a replicate out of a larger registered range. */
	if (json_is_integer(json_object_get(json_object_get(doc, "queries"), "draw"))) {
		const json_t *q = json_object_get(doc, "queries");

		if (!json_is_integer(json_object_get(q, "count")) ||
		    json_integer_value(json_object_get(q, "count")) >=
			    json_integer_value(json_object_get(q, "draw")))
			return bad(e, name, where, "queries.draw",
				   "needs queries.count, and a range larger than it (each replicate "
				   "draws count rows out of draw)");
	}
	/* Between keys (the terminator's "not"): a count or a duration, not both. */
	if (json_object_get(doc, "query_count") && json_object_get(doc, "duration_s"))
		return bad(e, name, where, "duration_s",
			   "give either query_count or duration_s, not both");
	/* ... and (its "if"): a postgres target says what to send. */
	if (json_is_string(json_object_get(doc, "target")) &&
	    !strcmp(json_string_value(json_object_get(doc, "target")), "postgres") &&
	    !json_object_get(doc, "postgres"))
		return bad(e, name, where, "postgres",
			   "required object {sql, ...} is missing (target \"postgres\")");
	return 0;
}

unsigned harness_spec_replicates(const json_t *spec)
{
	const json_t *r = json_object_get(spec, "replicates");

	return json_is_integer(r) && json_integer_value(r) >= 1 &&
			       json_integer_value(r) <= HARNESS_REPLICATES_MAX
		       ? (unsigned) json_integer_value(r)
		       : 1u;
}

int harness_run_load(const char *path, json_t **doc, char sha_out[65], cs_err *e)
{
	char *canon = NULL;
	size_t len;
	int rc;

	rc = cs_json_load_file(path, HARNESS_SPEC_CAP, doc, e);
	if (rc)
		return rc;
	rc = harness_run_validate(*doc, path, "$", 0, e);
	if (!rc)
		rc = cs_json_canonical(*doc, &canon, &len, e);
	if (!rc)
		cs_sha256_hex(canon, len, sha_out);
	free(canon);
	if (rc) {
		json_decref(*doc);
		*doc = NULL;
	}
	return rc;
}

int harness_run_effective(const json_t *run, const json_t *defaults, json_t **out, cs_err *e)
{
	cv_query_opts qo;
	cv_open_opts oo;
	json_t *eff, *q;

	cv_query_opts_default(&qo);
	cv_open_opts_default(&oo);
	eff = json_pack("{s:I, s:I, s:I, s:I, s:s, s:I, s:s, s:s, s:I, s:s, s:I, s:n, s:I, "
			"s:b, s:[], s:[]}",
			"k", (json_int_t) qo.k, "ef_search", (json_int_t) qo.ef_search,
			"search_probe", (json_int_t) qo.search_probe, "rescore_limit",
			(json_int_t) qo.rescore_limit, "mode", "serial", "fanout", (json_int_t) 1,
			"merge", "stream", "io", "serial", "io_depth", (json_int_t) qo.io_depth,
			"strategy", "pread", "buffers_bytes", (json_int_t) oo.buffers_bytes, "device",
			"clients", (json_int_t) 1, "readahead", 0, "tags", "hypotheses");
	if (!eff)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	if (defaults)
		json_object_update(eff, (json_t *) defaults);
	json_object_update(eff, (json_t *) run);
	if (json_is_string(json_object_get(eff, "device")) && !json_object_get(eff, "device_time"))
		json_object_set_new(eff, "device_time", json_string("realtime"));
	/* queries: a copy with first filled in. */
	q = json_deep_copy(json_object_get(eff, "queries"));
	if (q) {
		if (!json_object_get(q, "first"))
			json_object_set_new(q, "first", json_integer(0));
		json_object_set_new(eff, "queries", q);
	}
	*out = eff;
	return 0;
}

/* Read DIR/KIND (the index's kind) into out; "" when absent. */
static void read_kind(const char *dir, char *out, size_t cap)
{
	char path[PATH_MAX], *buf = NULL;
	size_t len;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/KIND", dir);
	if (cs_read_file(path, 64, &buf, &len, NULL))
		return;
	buf[strcspn(buf, "\r\n")] = '\0';
	snprintf(out, cap, "%s", buf);
	free(buf);
}

/*
 * The index's own figures for the partitions a run searches (all of them
 * when the spec names none): how many, and the mean vectors and index
 * pages of one, so a model can predict reads from what a target searches
 * rather than from the runs it happened to follow. Read from the catalog
 * and the files' sizes: a cold index stays cold. Null where it will not open.
 */
static void paged_features(json_t *f, const char *dir, const json_t *parts)
{
	cv_index *ix = NULL;
	cv_open_opts oo;
	unsigned np;
	double el = 0, pg = 0;
	size_t n = 0, i;
	const json_t *v;

	json_object_set_new(f, "partitions", json_is_array(parts)
						     ? json_integer((json_int_t) json_array_size(parts))
						     : json_null());
	json_object_set_new(f, "partition_elements", json_null());
	json_object_set_new(f, "partition_pages", json_null());
	cv_open_opts_default(&oo);
	oo.buffers_bytes = 1u << 20;
	if (!dir || cv_index_open(dir, &oo, &ix, NULL))
		return;
	np = cv_index_partitions(ix);
	if (!json_is_array(parts))
		json_object_set_new(f, "partitions", json_integer((json_int_t) np));
	for (unsigned p = 0; p < np; p++) {
		cv_partition_info pi;
		int searched = !json_is_array(parts);

		json_array_foreach(parts, i, v)
			searched |= json_is_integer(v) && json_integer_value(v) == (json_int_t) p;
		if (!searched || cv_index_partition_info(ix, p, &pi))
			continue;
		el += (double) pi.elements;
		pg += (double) pi.pages;
		n++;
	}
	if (n) {
		json_object_set_new(f, "partition_elements", json_real(el / (double) n));
		json_object_set_new(f, "partition_pages", json_real(pg / (double) n));
	}
	cv_index_close(ix);
}

/* A modelled device's mean service time at queue depth one (the profile's), or null. */
static void device_features(json_t *f, const json_t *device)
{
	cv_device *dev = NULL;

	json_object_set_new(f, "device_mean_ms", json_null());
	if (!json_is_string(device) || cv_device_new(json_string_value(device), 1, &dev, NULL))
		return;
	json_object_set_new(f, "device_mean_ms", json_real(cv_device_mean_ms(dev)));
	cv_device_free(dev);
}

/*
 * A real cap whose profile has a device model of the same name (gp3-3000,
 * gp3-16000, gp3-80000): "throttle_model" names it and device_mean_ms is
 * its, so holdout can predict the real cap from the modelled runs (the
 * model's view of the cell) and score the model against the kernel.
 */
static void throttle_features(json_t *f, const json_t *throttle)
{
	cv_device *dev = NULL;

	if (!json_is_string(throttle) ||
	    cv_device_new(json_string_value(throttle), 1, &dev, NULL))
		return;
	json_object_set(f, "throttle_model", (json_t *) throttle);
	json_object_set_new(f, "device_mean_ms", json_real(cv_device_mean_ms(dev)));
	cv_device_free(dev);
}

/*
 * What a PostgreSQL run's statement reads is the SQL's, not a knob's: two
 * runs with the same settings and different statements (a quarter of the
 * table against all of it, one server against four) must never share a
 * model's group. The feature names the statement: the first 12 hex digits
 * of SHA-256 over sql, partition_sql and the shards' names.
 */
static json_t *pg_statement_id(const json_t *pg)
{
	json_t *o = json_pack("{s:O?, s:O?, s:o}", "sql", json_object_get(pg, "sql"), "partition_sql",
			      json_object_get(pg, "partition_sql"), "shards", json_array());
	const char *name;
	json_t *v;
	char *t, hex[65];

	if (!o)
		return json_null();
	json_object_foreach((json_t *) json_object_get(pg, "shards"), name, v)
		json_array_append_new(json_object_get(o, "shards"), json_string(name));
	t = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (!t)
		return json_null();
	cs_sha256_hex(t, strlen(t), hex);
	free(t);
	hex[12] = '\0';
	return json_string(hex);
}

/*
 * A PostgreSQL run's treatments beside the server, as one label: pg_prewarm,
 * competing readers, bulk writes, a kernel cap ("none" without). The
 * log-linear model has no numeric column for them, so each arm is its own
 * level and never moves the untreated runs' fit.
 */
static json_t *pg_arm(const json_t *eff)
{
	const json_t *pg = json_object_get(eff, "postgres"), *thr = json_object_get(eff, "throttle");
	char buf[160];
	size_t off = 0;

	buf[0] = '\0';
	if (json_array_size(json_object_get(pg, "prewarm")))
		off += (size_t) snprintf(buf + off, sizeof(buf) - off, "+prewarm");
	if (json_integer_value(json_object_get(json_object_get(eff, "load"), "readers")) > 0)
		off += (size_t) snprintf(buf + off, sizeof(buf) - off, "+load");
	if (json_is_object(json_object_get(eff, "bulkwrite")))
		off += (size_t) snprintf(buf + off, sizeof(buf) - off, "+bulkwrite");
	if (json_is_string(thr) && off < sizeof(buf))
		snprintf(buf + off, sizeof(buf) - off, "+throttle=%.64s", json_string_value(thr));
	return json_string(buf[0] ? buf + 1 : "none");
}

int harness_spec_features(const json_t *spec, json_t **features, cs_err *e)
{
	json_t *eff = NULL, *f, *parts, *qc, *v;
	const char *dir;
	char kind[64];
	int rc;

	*features = NULL;
	rc = harness_run_effective(spec, NULL, &eff, e);
	if (rc)
		return rc;
	dir = json_string_value(json_object_get(eff, "index"));
	kind[0] = '\0';
	if (dir)
		read_kind(dir, kind, sizeof(kind));
	if (json_is_string(json_object_get(eff, "target")) &&
	    !strcmp(json_string_value(json_object_get(eff, "target")), "postgres"))
		snprintf(kind, sizeof(kind), "postgres");
	f = json_object();
	json_object_set(f, "clients", json_object_get(eff, "clients"));
	json_object_set(f, "fanout", json_object_get(eff, "fanout"));
	json_object_set(f, "mode", json_object_get(eff, "mode"));
	json_object_set(f, "device", json_object_get(eff, "device"));
	json_object_set(f, "strategy", json_object_get(eff, "strategy"));
	json_object_set(f, "ef_search", json_object_get(eff, "ef_search"));
	json_object_set(f, "search_probe", json_object_get(eff, "search_probe"));
	json_object_set(f, "rescore_limit", json_object_get(eff, "rescore_limit"));
	json_object_set(f, "cold", json_object_get(eff, "cold") ?: json_false());
	json_object_set(f, "buffers_bytes", json_object_get(eff, "buffers_bytes"));
	json_object_set_new(f, "kind", kind[0] ? json_string(kind) : json_null());
	v = json_object_get(eff, "throttle");
	json_object_set(f, "throttle", v ? v : json_null());
	v = json_object_get(eff, "device_time");
	json_object_set(f, "device_time", v ? v : json_null());
	v = json_object_get(json_object_get(eff, "prewarm"), "of");
	json_object_set(f, "prewarm", v ? v : json_null());
	json_object_set_new(f, "load_readers",
			    json_integer(json_integer_value(
				    json_object_get(json_object_get(eff, "load"), "readers"))));
	json_object_set_new(f, "bulkwrite", json_boolean(json_is_object(json_object_get(eff, "bulkwrite"))));
	v = json_object_get(eff, "client_cpus");
	json_object_set(f, "client_cpus", v ? v : json_null());
	if (json_is_true(json_object_get(eff, "cold")) &&
	    json_is_true(json_object_get(eff, "cold_each_query")))
		json_object_set_new(f, "cold_each_query", json_true()); /* absent: once per run */
	qc = json_object_get(eff, "query_count");
	if (!qc)
		qc = json_object_get(json_object_get(eff, "queries"), "count");
	json_object_set(f, "queries", qc ? qc : json_null());
	parts = json_object_get(eff, "partitions");
	if (!strcmp(kind, "postgres")) {
		/*
		 * The server's settings, not the engine's defaults: ef_search as the
		 * session SETs it, buffers_bytes its shared_buffers, no engine read
		 * strategy or HFresh knob; partitions: a fan-out's count, a serial
		 * run's unknown until its plan says (pgrun.c fills it in).
		 */
		const json_t *pg = json_object_get(eff, "postgres");
		int64_t ef = harness_pg_ef_search(pg), kb = harness_pg_shared_buffers_kb(pg);

		json_object_set_new(f, "ef_search", ef > 0 ? json_integer(ef) : json_null());
		json_object_set_new(f, "search_probe", json_null());
		json_object_set_new(f, "rescore_limit", json_null());
		json_object_set_new(f, "strategy", json_null());
		json_object_set_new(f, "buffers_bytes", kb >= 0 ? json_integer(kb * 1024) : json_null());
		json_object_set_new(f, "partitions", json_is_array(parts)
							    ? json_integer((json_int_t) json_array_size(parts))
							    : json_null());
		json_object_set_new(f, "statement", pg_statement_id(pg));
		json_object_set_new(f, "pg_arm", pg_arm(eff));
	} else if (!strcmp(kind, "phnsw") || !strcmp(kind, "paged"))
		paged_features(f, dir, parts);
	else if (json_is_array(parts))
		json_object_set_new(f, "partitions", json_integer((json_int_t) json_array_size(parts)));
	else
		json_object_set_new(f, "partitions", kind[0] ? json_integer(1) : json_null());
	device_features(f, json_object_get(eff, "device"));
	throttle_features(f, json_object_get(eff, "throttle"));
	json_decref(eff);
	*features = f;
	return 0;
}

/* ---- a postgres run's settings ---- */

json_t *harness_pg_settings(const json_t *pg)
{
	json_t *out = json_object(), *v;
	size_t i;

	if (!out)
		return NULL;
	json_array_foreach(json_object_get(pg, "session"), i, v) {
		const char *s = json_string_value(v), *n, *x;
		char name[128], val[256];
		size_t nl = 0, vl;

		if (!s || strncasecmp(s, "set ", 4))
			continue;
		s += 4;
		while (*s == ' ' || *s == '\t')
			s++;
		/* SET SESSION name ... and SET LOCAL name ... set the same name */
		if (!strncasecmp(s, "session ", 8) || !strncasecmp(s, "local ", 6))
			for (s += s[0] == 's' || s[0] == 'S' ? 8 : 6; *s == ' ' || *s == '\t'; s++)
				;
		for (n = s; *n && *n != ' ' && *n != '\t' && *n != '=' && nl + 1 < sizeof(name); n++)
			name[nl++] = (char) (*n >= 'A' && *n <= 'Z' ? *n - 'A' + 'a' : *n);
		name[nl] = '\0';
		while (*n == ' ' || *n == '\t')
			n++;
		if (*n == '=')
			n++;
		else if (!strncasecmp(n, "to ", 3) || !strncasecmp(n, "to\t", 3))
			n += 3;
		else
			continue; /* not "name = value": the server will say so */
		while (*n == ' ' || *n == '\t')
			n++;
		x = n;
		vl = strlen(x);
		while (vl && (x[vl - 1] == ' ' || x[vl - 1] == '\t'))
			vl--;
		if (vl >= 2 && x[0] == '\'' && x[vl - 1] == '\'') {
			x++;
			vl -= 2;
		}
		if (!nl || vl >= sizeof(val))
			continue;
		memcpy(val, x, vl);
		val[vl] = '\0';
		json_object_set_new(out, name, json_string(val));
	}
	return out;
}

int64_t harness_pg_shared_buffers_kb(const json_t *pg)
{
	const char *s = json_string_value(json_object_get(pg, "shared_buffers"));
	char *end = NULL;
	long long v;

	if (!s)
		return 128 * 1024; /* the server's default, and the private server's */
	v = strtoll(s, &end, 10);
	/* a size no server takes (over 2^40 kB: its bytes would not fit an int64): unknown */
	if (end == s || v < 0 || v > (1LL << 40))
		return -1;
	if (!*end || !strcmp(end, "kB"))
		return !*end ? v * 8 : v; /* a bare number counts 8 kB buffers, as the server reads it */
	if (!strcmp(end, "MB") && v <= (1LL << 30))
		return v * 1024;
	if (!strcmp(end, "GB") && v <= (1LL << 20))
		return v * 1024 * 1024;
	return -1;
}

int64_t harness_pg_ef_search(const json_t *pg)
{
	json_t *set = harness_pg_settings(pg);
	const char *v = json_string_value(json_object_get(set, "hnsw.ef_search"));
	char *end = NULL;
	long long n = v ? strtoll(v, &end, 10) : -1;

	if (v && (end == v || *end || n < 1))
		n = -1;
	json_decref(set);
	return n;
}

/* The shared_buffers tag of a postgres run: "sb" and its size in the largest whole unit. */
static void sb_tag(const json_t *pg, char *out, size_t cap)
{
	int64_t kb = harness_pg_shared_buffers_kb(pg);

	if (kb < 0)
		snprintf(out, cap, "sb?");
	else if (kb && kb % (1024 * 1024) == 0)
		snprintf(out, cap, "sb%lldGB", (long long) (kb / (1024 * 1024)));
	else if (kb && kb % 1024 == 0)
		snprintf(out, cap, "sb%lldMB", (long long) (kb / 1024));
	else
		snprintf(out, cap, "sb%lldkB", (long long) kb);
}

/* ---- tags from settings ---- */

/*
 * The tag vocabulary a run's settings decide (docs/records.md "Tags"),
 * besides "fanout<N>" and "ef<N>". A run spec may carry other labels too;
 * a tag of this vocabulary that its settings do not give it is refused.
 */
static const char *const tag_vocab[] = {
	"cold", "warm", "serial", "fanout", "gate", "partition", "hdd", "ssd", "nvme", "gp3",
	"gp3-3000", "gp3-16000", "gp3-80000", "drift", "probe", "virtual", "realtime", "baseline", "prewarm",
	"prewarm-other", "load", "bulkwrite", "client-alt", "memcap", "merge-sort", "design",
	"holdout", "sceptic", "exploratory", "mmap", "pread", "direct", "uring", "auto", "readahead",
	"throttle", "uncapped", "shards", NULL};
static const char *const kind_tags[] = {"hnsw", "paged", "phnsw", "hfresh", "postgres", NULL};
/* Knobs at the study's defaults, and no treatment: a "baseline" run. */
static const char *const baseline_knobs[] = {"k", "ef_search", "search_probe", "rescore_limit",
					     "buffers_bytes", "strategy", "io", "io_depth", "merge",
					     "readahead", "queue_depth", "metric", NULL};
static const char *const treatment_keys[] = {"prewarm", "load", "bulkwrite", "client_cpus",
					     "mem_cap_bytes", "throttle", NULL};

/* The knobs each tag of the vocabulary stands for (harness_tag_knobs): what derived_tags reads. */
static const char *const k_cache[] = {"cold", "cold_each_query", "warmup_queries", NULL};
/* a postgres fan-out sends partition_sql where serial sends sql: the mode's too */
static const char *const k_mode[] = {"mode", "fanout", "merge", "postgres.partition_sql", NULL};
static const char *const k_merge[] = {"merge", NULL};
static const char *const k_parts[] = {"partitions", NULL};
static const char *const k_device[] = {"device", NULL};
static const char *const k_time[] = {"device_time", NULL};
static const char *const k_ef[] = {"ef_search", "postgres.session:hnsw.ef_search", NULL};
static const char *const k_sb[] = {"postgres.shared_buffers", "buffers_bytes", NULL};
/* a postgres run's prewarm is pg_prewarm after each cold start: its relations and its mode */
static const char *const k_prewarm[] = {"prewarm", "postgres.prewarm", "postgres.prewarm_mode", NULL};
static const char *const k_load[] = {"load", NULL};
static const char *const k_bulk[] = {"bulkwrite", NULL};
static const char *const k_cpus[] = {"client_cpus", NULL};
static const char *const k_memcap[] = {"mem_cap_bytes", NULL};
static const char *const k_clients[] = {"clients", NULL};
static const char *const k_probe[] = {"search_probe", NULL};
static const char *const k_rescore[] = {"rescore_limit", NULL};
static const char *const k_strategy[] = {"strategy", NULL};
static const char *const k_readahead[] = {"readahead", NULL};
static const char *const k_throttle[] = {"throttle", NULL};
/* a run over N servers: the coordinator's clone is its index, the shards its other servers */
static const char *const k_shards[] = {"postgres.shards", "index", NULL};
static const struct {
	const char *tag;
	const char *const *knobs;
} tag_knobs[] = {
	{"cold", k_cache},	    {"warm", k_cache},	       {"serial", k_mode},
	{"fanout", k_mode},	    {"merge-sort", k_merge},   {"gate", k_parts},
	{"partition", k_parts},	    {"hdd", k_device},	       {"ssd", k_device},
	{"nvme", k_device},	    {"gp3", k_device},	       {"gp3-3000", k_device},
	{"gp3-16000", k_device},    {"gp3-80000", k_device},    {"drift", k_device},       {"probe", k_device},       {"virtual", k_time},
	{"realtime", k_time},	    {"prewarm", k_prewarm},    {"prewarm-other", k_prewarm},
	{"load", k_load},	    {"bulkwrite", k_bulk},     {"client-alt", k_cpus},
	{"memcap", k_memcap},	    {"mmap", k_strategy},      {"pread", k_strategy},
	{"direct", k_strategy},	    {"uring", k_strategy},     {"auto", k_strategy},
	{"readahead", k_readahead},
	{"throttle", k_throttle},   {"uncapped", k_throttle},   {"shards", k_shards},
	{NULL, NULL},
};

/* "<prefix><digits>" */
static int numbered(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(s, prefix, n) || !s[n])
		return 0;
	for (s += n; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* "<prefix><digits>kB", "...MB" or "...GB" */
static int sized(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(s, prefix, n) || !(s[n] >= '0' && s[n] <= '9'))
		return 0;
	for (s += n; *s >= '0' && *s <= '9'; s++)
		;
	return !strcmp(s, "kB") || !strcmp(s, "MB") || !strcmp(s, "GB");
}

static void add_tag(json_t *tags, const char *t)
{
	if (!cs_json_has_string(tags, t))
		json_array_append_new(tags, json_string(t));
}

/* The tags an effective spec's settings give it, with kind (NULL: unknown) and class (NULL: none). */
static json_t *derived_tags(const json_t *eff, const json_t *eff0, const char *kind,
			    const char *cls)
{
	static const struct {
		const char *profile, *tag;
	} dev_tags[] = {{"hdd-pool", "hdd"},   {"hdd-pool-drift", "hdd"}, {"hdd-pool-drift", "drift"},
			{"sata-ssd", "ssd"},   {"nvme", "nvme"},	   {"gp3-3000", "gp3"},
			{"gp3-16000", "gp3"},  {"gp3-80000", "gp3"},  {NULL, NULL}};
	json_t *t = json_array();
	const json_t *dev = json_object_get(eff, "device");
	const char *mode = json_string_value(json_object_get(eff, "mode"));
	const json_t *pw = json_object_get(eff, "prewarm");
	const json_t *pgpw = json_object_get(json_object_get(eff, "postgres"), "prewarm");
	char buf[48];
	int treated = 0;

	/* a prewarm run starts cold but queries a prewarmed cache: not "cold" (studies' vocabulary);
	 * so does a postgres run whose pg_prewarm follows each cold start */
	if (json_array_size(pgpw) > 0) {
		add_tag(t, "prewarm");
		treated = 1;
	} else if (!json_is_object(pw))
		add_tag(t, json_is_true(json_object_get(eff, "cold")) ? "cold" : "warm");
	if (mode && !strcmp(mode, "fanout")) {
		add_tag(t, "fanout");
		snprintf(buf, sizeof(buf), "fanout%lld",
			 (long long) json_integer_value(json_object_get(eff, "fanout")));
		add_tag(t, buf);
		if (!strcmp(json_string_value(json_object_get(eff, "merge")) ?: "", "sort"))
			add_tag(t, "merge-sort");
	} else {
		add_tag(t, "serial");
	}
	/* a postgres run's SQL says which partitions it reads: "gate" or "partition" only when asked */
	if (!kind || strcmp(kind, "postgres"))
		add_tag(t, json_is_array(json_object_get(eff, "partitions")) ? "partition" : "gate");
	if (json_is_string(dev)) {
		const char *d = json_string_value(dev), *dt;

		for (size_t i = 0; dev_tags[i].profile; i++)
			if (!strcmp(d, dev_tags[i].profile))
				add_tag(t, dev_tags[i].tag);
		if (!strncmp(d, "gp3-", 4) || !strcmp(d, "hdd-pool") || !strcmp(d, "sata-ssd") ||
		    !strcmp(d, "nvme"))
			add_tag(t, d);
		if (!strncmp(d, "probe:", 6))
			add_tag(t, "probe");
		dt = json_string_value(json_object_get(eff, "device_time"));
		add_tag(t, dt && !strcmp(dt, "virtual") ? "virtual" : "realtime");
	}
	/* ef_search is the engine's knob: a postgres run's is a SET in its session */
	if (!kind || strcmp(kind, "postgres")) {
		snprintf(buf, sizeof(buf), "ef%lld",
			 (long long) json_integer_value(json_object_get(eff, "ef_search")));
		add_tag(t, buf);
	} else {
		const json_t *pg = json_object_get(eff, "postgres");
		int64_t ef = harness_pg_ef_search(pg);

		if (ef > 0) {
			snprintf(buf, sizeof(buf), "ef%lld", (long long) ef);
			add_tag(t, buf);
			/* a SET away from the study's ef_search is a treatment, as the engine's knob is */
			treated |= ef != json_integer_value(json_object_get(eff0, "ef_search"));
		}
		sb_tag(pg, buf, sizeof(buf));
		add_tag(t, buf);
		/* its partitions over N servers (postgres_fdw): "shards" */
		if (json_object_size(json_object_get(pg, "shards")) > 0)
			add_tag(t, "shards");
	}
	if (json_is_object(pw)) {
		const char *of = json_string_value(json_object_get(pw, "of"));

		add_tag(t, of && !strcmp(of, "other") ? "prewarm-other" : "prewarm");
	}
	if (json_is_object(json_object_get(eff, "load")))
		add_tag(t, "load");
	if (json_is_object(json_object_get(eff, "bulkwrite")))
		add_tag(t, "bulkwrite");
	if (json_is_array(json_object_get(eff, "client_cpus")))
		add_tag(t, "client-alt");
	if (json_is_integer(json_object_get(eff, "mem_cap_bytes")))
		add_tag(t, "memcap");
	if (json_is_string(json_object_get(eff, "throttle"))) {
		harness_cap cap;

		/* a real cap: "throttle", and riops<N> or "uncapped" */
		add_tag(t, "throttle");
		if (!harness_cap_parse(json_string_value(json_object_get(eff, "throttle")), &cap, NULL)) {
			if (cap.riops) {
				snprintf(buf, sizeof(buf), "riops%llu", (unsigned long long) cap.riops);
				add_tag(t, buf);
			} else if (!cap.rbps) {
				add_tag(t, "uncapped");
			}
		}
	}
	/* the load and the access path: clients<N>, probe<N>, rescore<N>, the strategy, readahead */
	snprintf(buf, sizeof(buf), "clients%lld",
		 (long long) (json_is_integer(json_object_get(eff, "clients"))
				      ? json_integer_value(json_object_get(eff, "clients"))
				      : 1));
	add_tag(t, buf);
	if (json_is_integer(json_object_get(eff, "search_probe"))) {
		snprintf(buf, sizeof(buf), "probe%lld",
			 (long long) json_integer_value(json_object_get(eff, "search_probe")));
		add_tag(t, buf);
	}
	if (json_is_integer(json_object_get(eff, "rescore_limit"))) {
		snprintf(buf, sizeof(buf), "rescore%lld",
			 (long long) json_integer_value(json_object_get(eff, "rescore_limit")));
		add_tag(t, buf);
	}
	if (json_is_string(json_object_get(eff, "strategy")))
		add_tag(t, json_string_value(json_object_get(eff, "strategy")));
	if (json_is_true(json_object_get(eff, "readahead")))
		add_tag(t, "readahead");
	for (size_t i = 0; treatment_keys[i]; i++) {
		const json_t *v = json_object_get(eff, treatment_keys[i]);

		treated |= v && !json_is_null(v);
	}
	for (size_t i = 0; baseline_knobs[i] && !treated; i++) {
		const json_t *a = json_object_get(eff, baseline_knobs[i]);
		const json_t *b = json_object_get(eff0, baseline_knobs[i]);

		treated = !((!a && !b) || (a && b && json_equal((json_t *) a, (json_t *) b)));
	}
	if (!treated)
		add_tag(t, "baseline");
	if (kind && *kind)
		add_tag(t, kind);
	if (cls)
		add_tag(t, cls);
	return t;
}

const char *const *harness_tag_knobs(const char *tag)
{
	if (!tag)
		return NULL;
	if (numbered(tag, "fanout"))
		return k_mode;
	if (numbered(tag, "ef"))
		return k_ef;
	if (numbered(tag, "clients"))
		return k_clients;
	if (numbered(tag, "probe"))
		return k_probe;
	if (numbered(tag, "rescore"))
		return k_rescore;
	if (numbered(tag, "riops"))
		return k_throttle;
	if (sized(tag, "sb"))
		return k_sb;
	if (!strcmp(tag, "baseline"))
		return baseline_knobs;
	for (size_t i = 0; tag_knobs[i].tag; i++)
		if (!strcmp(tag_knobs[i].tag, tag))
			return tag_knobs[i].knobs;
	return NULL;
}

int harness_run_tags(const json_t *eff, const json_t *defaults, const char *kind,
		     const char *cls, const char *name, json_t **out, cs_err *e)
{
	json_t *eff0 = NULL, *empty = json_object(), *t = NULL, *v;
	const json_t *own = json_object_get(eff, "tags");
	size_t i;
	int rc;

	*out = NULL;
	if (!empty)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	/* a postgres target's kind is its target, whatever its index directory holds yet */
	if (json_is_string(json_object_get(eff, "target")) &&
	    !strcmp(json_string_value(json_object_get(eff, "target")), "postgres"))
		kind = "postgres";
	rc = harness_run_effective(empty, defaults, &eff0, e);
	json_decref(empty);
	if (rc)
		return rc;
	t = derived_tags(eff, eff0, kind, cls);
	json_decref(eff0);
	json_array_foreach(own, i, v) {
		const char *s = json_string_value(v);
		int vocab;

		if (!s)
			continue;
		vocab = cs_in_list(tag_vocab, s) || numbered(s, "fanout") || numbered(s, "ef") ||
			numbered(s, "clients") || numbered(s, "probe") || numbered(s, "rescore") ||
			(kind && !strcmp(kind, "postgres") && sized(s, "sb")) ||
			(kind && *kind && cs_in_list(kind_tags, s));
		/* a postgres run's "gate" or "partition" is what its author says its SQL reads */
		if (kind && !strcmp(kind, "postgres") && (!strcmp(s, "gate") || !strcmp(s, "partition"))) {
			add_tag(t, s);
			continue;
		}
		if (vocab && !cs_json_has_string(t, s)) {
			char w[64], *have = json_dumps(t, JSON_COMPACT);

			snprintf(w, sizeof(w), "$.tags[%zu]", i);
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"%s: %s: tag \"%s\" contradicts the run's own settings, which "
					"give %s",
					name, w, s, have ? have : "[]");
			free(have);
			json_decref(t);
			return rc;
		}
		/* a label outside the vocabulary counts only where the plan registered it */
		if (!vocab && cls && strcmp(cls, "exploratory"))
			add_tag(t, s);
	}
	*out = t;
	return 0;
}

static int last_study_cb(const ledger_record *r, void *ud)
{
	json_t **study = ud;
	json_t *p = json_loads(r->payload, 0, NULL);

	if (json_object_get(p, "doc")) {
		json_decref(*study);
		*study = json_incref(json_object_get(p, "doc"));
	}
	json_decref(p);
	return 0;
}

int harness_run_effective_study(struct ledger *l, const json_t *run, json_t **out, cs_err *e)
{
	json_t *study = NULL;
	int rc;

	if (ledger_foreach(l, "study", last_study_cb, &study, e)) {
		json_decref(study);
		return e && e->code ? e->code : CS_EXIT_INTERNAL;
	}
	rc = harness_run_effective(run, json_object_get(study, "defaults"), out, e);
	json_decref(study);
	return rc;
}

/* ---- the study record ---- */

int harness_study_current(struct ledger *l, json_t **doc, cs_err *e)
{
	return guard_study(l, "study", doc, e);
}

/*
 * The dataset files a study names must be there to register it (the
 * table checked the spec's form): a file spec whose file cannot be opened
 * is exit 5 at $.datasets.NAME.
 */
static int study_datasets_exist(const json_t *doc, const char *name, cs_err *e)
{
	static const char *const file_prefixes[] = {"fvecs:", "ivecs:", "bvecs:", "idx:", "npy:",
						    "hdf5:", NULL};
	const char *k;
	json_t *v;

	json_object_foreach(json_object_get(doc, "datasets"), k, v) {
		const char *spec = json_string_value(v);
		char file[PATH_MAX];
		size_t n;
		FILE *f;

		for (size_t i = 0; file_prefixes[i]; i++) {
			size_t pl = strlen(file_prefixes[i]);

			if (strncmp(spec, file_prefixes[i], pl))
				continue;
			n = strlen(spec + pl);
			/* A trailing [A:B] row range is not part of the file name. */
			if (n && spec[pl + n - 1] == ']' && strrchr(spec + pl, '['))
				n = (size_t) (strrchr(spec + pl, '[') - (spec + pl));
			if (n >= sizeof(file))
				return cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.datasets.%.64s: path too long",
						  name, k);
			memcpy(file, spec + pl, n);
			file[n] = '\0';
			/* hdf5:PATH:member names a member of the file */
			if (!strcmp(file_prefixes[i], "hdf5:")) {
				char *c = strrchr(file, ':');

				if (c && (!strcmp(c, ":train") || !strcmp(c, ":test") ||
					  !strcmp(c, ":neighbors") || !strcmp(c, ":distances")))
					*c = '\0';
			}
			f = fopen(file, "rb");
			if (!f)
				return cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.datasets.%.64s: %s: %s", name,
						  k, file, strerror(errno));
			fclose(f);
		}
	}
	return 0;
}

/*
 * The study's datasets.* files checked as a run spec's datasets are, against
 * the machine's registry, the study's items so far and the items it is
 * registering now (items): a production file is refused (recorded).
 */
static int study_datasets_guard(ledger *l, const json_t *doc, const json_t *items, cs_err *e)
{
	guard_prodset *ps = NULL;
	const char *k;
	json_t *v;
	int rc = guard_prodset_load(l, &ps, e);

	if (!rc)
		rc = guard_prodset_add_items(ps, items, "this study", e);
	json_object_foreach(json_object_get(doc, "datasets"), k, v) {
		char role[160];

		if (rc)
			break;
		snprintf(role, sizeof(role), "$.datasets.%s", k);
		if (json_is_string(v))
			rc = guard_dataset(l, ps, json_string_value(v), "study register", role, e);
	}
	guard_prodset_free(ps);
	return rc;
}

/* The folder of path, for the plan's relative paths ("." for a bare name). */
static void folder_of(const char *path, char *out, size_t cap)
{
	const char *sl = strrchr(path, '/');

	if (!sl)
		snprintf(out, cap, ".");
	else if (sl == path)
		snprintf(out, cap, "/");
	else
		snprintf(out, cap, "%.*s", (int) (sl - path), path);
}

/* Add one planned spec (path under base, class cls) to specs; exit 5 on a conflict. */
static int plan_spec_add(json_t *specs, const json_t *doc, const char *base, const char *rel,
			 const char *cls, const char *name, const char *where, cs_err *e)
{
	char full[PATH_MAX], sha[65];
	json_t *run = NULL, *eff = NULL, *tags = NULL, *s;
	size_t i;
	int rc;

	json_array_foreach(specs, i, s) {
		if (strcmp(json_string_value(json_object_get(s, "path")), rel))
			continue;
		if (!strcmp(json_string_value(json_object_get(s, "class")), cls))
			return 0;
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s: %s is planned as %s and as %s", name,
				  where, rel, json_string_value(json_object_get(s, "class")), cls);
	}
	if ((size_t) snprintf(full, sizeof(full), "%s%s%s", rel[0] == '/' ? "" : base,
			      rel[0] == '/' ? "" : "/", rel) >= sizeof(full))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s: path too long", name, where);
	rc = harness_run_load(full, &run, sha, e);
	/* a holdout target is observed by its first run (a repeat is a deviation): one replicate */
	if (!rc && !strcmp(cls, "holdout") && harness_spec_replicates(run) > 1)
		rc = cs_err_set(e, CS_EXIT_BADINPUT,
				"%s: %s: %s registers %u replicates; a holdout target is observed by "
				"one run",
				name, where, rel, harness_spec_replicates(run));
	if (!rc)
		rc = harness_run_effective(run, json_object_get(doc, "defaults"), &eff, e);
	if (!rc) {
		char kind[64];

		read_kind(json_string_value(json_object_get(eff, "index")) ?: "", kind, sizeof(kind));
		rc = harness_run_tags(eff, json_object_get(doc, "defaults"), kind[0] ? kind : NULL,
				      cls, full, &tags, e);
	}
	json_decref(tags);
	json_decref(eff);
	json_decref(run);
	if (rc)
		return rc;
	json_array_foreach(specs, i, s) {
		if (strcmp(json_string_value(json_object_get(s, "sha256")), sha) ||
		    !strcmp(json_string_value(json_object_get(s, "class")), cls))
			continue;
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: %s: %s has the content of %s, planned as %s (one spec, one "
				  "class)",
				  name, where, rel, json_string_value(json_object_get(s, "path")),
				  json_string_value(json_object_get(s, "class")));
	}
	json_array_append_new(specs, json_pack("{s:s, s:s, s:s}", "path", rel, "sha256", sha,
					       "class", cls));
	return 0;
}

static int plan_list_add(json_t *specs, const json_t *doc, const char *base, const json_t *list,
			 const char *cls, const char *name, const char *where, cs_err *e)
{
	size_t i;
	json_t *v;
	int rc;

	json_array_foreach(list, i, v) {
		char w[200];

		snprintf(w, sizeof(w), "%s[%zu]", where, i);
		if ((rc = plan_spec_add(specs, doc, base, json_string_value(v), cls, name, w, e)))
			return rc;
	}
	return 0;
}

int harness_plan_specs(const json_t *doc, const char *path, json_t **out, cs_err *e)
{
	const json_t *plan = json_object_get(doc, "plan"), *hs;
	json_t *specs = json_array(), *h;
	char base[PATH_MAX], w[160];
	const char *k;
	int rc = 0;

	*out = NULL;
	if (!specs)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	folder_of(path, base, sizeof(base));
	hs = json_object_get(plan, "hypotheses");
	/* holdout first: a target listed as a design run too is the conflict to name */
	rc = plan_list_add(specs, doc, base, json_object_get(json_object_get(plan, "holdout"), "targets"),
			   "holdout", path, "$.plan.holdout.targets", e);
	if (!rc)
		rc = plan_list_add(specs, doc, base, json_object_get(plan, "design"), "design", path,
				   "$.plan.design", e);
	json_object_foreach((json_t *) hs, k, h) {
		if (rc)
			break;
		snprintf(w, sizeof(w), "$.plan.hypotheses.%.32s.runs", k);
		rc = plan_list_add(specs, doc, base, json_object_get(h, "runs"), "design", path, w, e);
		if (rc)
			break;
		snprintf(w, sizeof(w), "$.plan.hypotheses.%.32s.sceptic", k);
		rc = plan_list_add(specs, doc, base, json_object_get(h, "sceptic"), "sceptic", path, w,
				   e);
	}
	if (rc) {
		json_decref(specs);
		return rc;
	}
	*out = specs;
	return 0;
}

int harness_study_register(const char *dir, const char *path, int64_t *seq, cs_err *e)
{
	return harness_study_register_amend(dir, path, NULL, seq, e);
}

int harness_study_register_amend(const char *dir, const char *path, const char *rationale,
				 int64_t *seq, cs_err *e)
{
	ledger *l = NULL;
	ledger_plan prev = {0};
	json_t *doc = NULL, *rec = NULL, *specs = NULL, *items = NULL, *removed = NULL;
	char *canon = NULL, sha[65], psha[65] = "", owner[PATH_MAX + 80], real[PATH_MAX], link[64];
	guard_held sh;
	ssize_t rl;
	size_t len;
	int rc, have_prev = 0;

	*seq = 0;
	guard_held_init(&sh);
	rc = harness_study_load(path, &doc, e);
	if (rc)
		return rc;
	rc = study_datasets_exist(doc, path, e);
	if (rc)
		goto out;
	rc = cs_json_canonical(doc, &canon, &len, e);
	if (rc)
		goto out;
	cs_sha256_hex(canon, len, sha);
	free(canon);
	canon = NULL;
	if (json_object_get(doc, "plan")) {
		rc = harness_plan_specs(doc, path, &specs, e);
		if (!rc)
			rc = cs_json_canonical(specs, &canon, &len, e);
		if (rc)
			goto out;
		cs_sha256_hex(canon, len, psha);
	}
	rc = ledger_open(dir, &l, e);
	if (!rc)
		rc = ledger_begin(l, e);
	if (!rc)
		rc = ledger_plan_load(l, 0, &prev, e);
	if (rc)
		goto out;
	/*
	 * Production paths are resolved once, against the study folder (never the
	 * current directory), and must exist (bad input before anything else).
	 */
	rc = guard_hold(dir, AT_FDCWD, &sh, e);
	if (!rc)
		rc = guard_production_resolve(doc, sh.fd, path, &items, e);
	if (rc) {
		ledger_rollback(l);
		goto out;
	}
	/* its datasets, read by its runs (directly or through indexes.*.dataset), are never production */
	rc = study_datasets_guard(l, doc, items, e);
	if (rc)
		goto out;
	have_prev = prev.rec != NULL;
	if (have_prev &&
	    !strcmp(json_string_value(json_object_get(prev.rec, "sha256")) ?: "", sha) &&
	    !strcmp(json_string_value(json_object_get(prev.rec, "plan_sha256")) ?: "", psha)) {
		/* the same study and plan again: nothing to do */
		*seq = prev.study_seq;
		rc = 0;
		goto out;
	}
	/* a change: free before the first run, an amendment after (guards/) */
	if (have_prev && (rc = guard_registration(l, "the study spec and its plan",
						  prev.first_run_start != 0, rationale != NULL,
						  "study register", e)))
		goto out;
	/* The protected set only grows unless amended, before the first run too (guards/). */
	rc = guard_production_keep(l, items, rationale != NULL, "study register", &removed, e);
	if (rc)
		goto out;
	rec = json_pack("{s:O, s:s, s:O, s:O}", "id", json_object_get(doc, "id"), "sha256", sha,
			"doc", doc, "production_items", items);
	if (!rec) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	if (specs) {
		char base[PATH_MAX], pbase[PATH_MAX];

		folder_of(path, base, sizeof(base));
		json_object_set(rec, "plan_specs", specs);
		json_object_set_new(rec, "plan_sha256", json_string(psha));
		/* where the plan's relative paths were read (holdout predict reads targets there) */
		if (realpath(base, pbase))
			json_object_set_new(rec, "plan_base", json_string(pbase));
	}
	if (have_prev && rationale) {
		json_t *am = json_pack("{s:s, s:s, s:s, s:I}", "rationale", rationale, "access_state",
				       ledger_access_state(l), "replaces",
				       json_string_value(json_object_get(prev.rec, "sha256")) ?: "",
				       "replaces_seq", (json_int_t) prev.study_seq);

		if (json_array_size(removed)) {
			json_object_set(am, "production_removed", removed);
			json_object_set_new(rec, "production_amended", json_true());
		}
		json_object_set_new(rec, "amendment", am);
	}
	rc = ledger_append(l, "study", rec, seq, e);
	if (!rc)
		rc = ledger_commit(l, e);
	if (rc)
		goto out;
	/* The machine-wide registry: every verb on this machine checks it, study or not. */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", sh.fd);
	rl = readlink(link, real, sizeof(real) - 1);
	real[rl > 0 ? rl : 0] = '\0';
	snprintf(owner, sizeof(owner), "study:%s@%s", json_string_value(json_object_get(doc, "id")),
		 real);
	rc = guard_registry_add(items, owner, e);
out:
	guard_held_close(&sh);
	ledger_plan_free(&prev);
	json_decref(specs);
	json_decref(rec);
	json_decref(items);
	json_decref(removed);
	json_decref(doc);
	free(canon);
	ledger_close(l);
	return rc;
}

/* ---- the schemas: the same tables, as JSON Schema ---- */

/* A schema document: the $schema header, a title, the tables' comment, then body (stolen). */
static json_t *schema_doc(const char *id, const char *title, json_t *body)
{
	json_t *doc;

	if (!body)
		return NULL;
	doc = json_pack("{s:s, s:s, s:s, s:s}", "$schema",
			"https://json-schema.org/draft/2020-12/schema", "$id", id, "title", title,
			"$comment",
			"Generated by 'coldstudy schema' from the validator's key tables "
			"(harness/spec.c). The validator also checks what JSON Schema cannot say: "
			"lengths in bytes (the schema counts characters), no NUL in strings, no "
			"duplicate keys (the loader), a query draw larger than its count; 'run' "
			"checks the files and the index "
			"(partitions in range, dataset files present), 'study register' that "
			"dataset files exist.");
	if (doc)
		json_object_update(doc, body);
	json_decref(body);
	return doc;
}

json_t *harness_run_schema(void)
{
	return schema_doc("https://coldstudy.invalid/schema/run.json", "coldstudy run spec (run.json)",
			  jv_keys_schema(run_keys, 0));
}

json_t *harness_study_schema(void)
{
	json_t *body = jv_keys_schema(study_keys, 0), *defaults = jv_keys_schema(run_keys, 1);

	if (!body || !defaults) {
		json_decref(body);
		json_decref(defaults);
		return NULL;
	}
	/* a spec's replicates are its own (harness_run_validate refuses them as a default) */
	json_object_del(json_object_get(defaults, "properties"), "replicates");
	json_object_set_new(body, "$defs", json_pack("{s:o}", "run_defaults", defaults));
	return schema_doc("https://coldstudy.invalid/schema/study.json",
			  "coldstudy study spec (study.json)", body);
}
