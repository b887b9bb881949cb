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

/* ---- small helpers ---- */

static int bad(cs_err *e, const char *name, const char *where, const char *key, const char *why)
{
	return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s%s%s: %s", name, where, key ? "." : "",
			  key ? key : "", why);
}

/* ---- the key tables: what study.json and run.json may say ---- */

/* What a name of a study's datasets or indexes, an id, looks like. */
#define ID_PATTERN "^[A-Za-z0-9._-]{1,64}$"
#define ID_EXPECT "1-64 of [A-Za-z0-9._-]"
/* A dataset spec string (engine/cv_data.h), with an optional row range. */
#define DATASET_PATTERN                                                                            \
	"^(fashion-mnist(:train|:test)?|(fvecs|ivecs|bvecs|idx|npy):.+|synth:.+)"                  \
	"(\\[[0-9]*:[0-9]*\\])?$"
#define DATASET_EXPECT                                                                             \
	"a dataset spec (fashion-mnist[:train|:test], fvecs:PATH, ivecs:PATH, bvecs:PATH, "       \
	"idx:PATH, npy:PATH, synth:n=N,d=D,...; optionally [A:B])"
#define PATH_MAX_BYTES 4000

static const char *const modes[] = {"serial", "fanout", NULL};
static const char *const merges[] = {"stream", "sort", NULL};
static const char *const io_modes[] = {"serial", "concurrent", NULL};
static const char *const strategies[] = {"mmap", "pread", "direct", "uring", NULL};
static const char *const dist_metrics[] = {"l2", "ip", "cosine", NULL};
static const char *const device_times[] = {"realtime", "virtual", NULL};
static const char *const prewarm_ofs[] = {"self", "other", NULL};
static const char *const index_kinds[] = {"hnsw", "paged", "phnsw", "hfresh", "postgres", NULL};
static const char *const targets[] = {"engine", "postgres", NULL};
static const char *const vector_texts[] = {"array", "pgvector", NULL};

/*
 * A run on a PostgreSQL clone (target "postgres", harness/pgrun.c): the
 * run's index is the clone's data directory; these say what to send and
 * how the private server runs. The SQL patterns want $1 (and {p}) anywhere,
 * across lines too.
 */
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
	{.name = "database", .type = JK_STRING, .max = 63, .desc = "the database (default postgres)"},
	{.name = "user", .type = JK_STRING, .max = 63,
	 .desc = "the role (default: the data directory's owner's name)"},
	{.name = "vector_text", .type = JK_ENUM, .vals = vector_texts,
	 .desc = "how $1 is written: array ({a,b,...}, cast it, e.g. cube($1::float8[])) or "
		 "pgvector ([a,b,...])"},
	{0},
};

static const jv_key query_keys[] = {
	{.name = "spec", .type = JK_STRING, .flags = JK_REQUIRED, .max = PATH_MAX_BYTES,
	 .desc = "the query vectors: a dataset spec, or a name from the study's datasets"},
	{.name = "first", .type = JK_INT, .lo = 0, .hi = 1099511627776.0,
	 .desc = "the first query row used (default 0)"},
	{.name = "count", .type = JK_INT, .lo = 1, .hi = 1099511627776.0,
	 .desc = "how many query rows from first (default: to the end)"},
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
	 .desc = "block I/O: mmap, pread, direct (O_DIRECT) or uring (io_uring) (default pread)"},
	{.name = "queue_depth", .type = JK_INT, .lo = 1, .hi = 4096,
	 .desc = "reads in flight a client for uring / direct"},
	{.name = "buffers_bytes", .type = JK_INT, .lo = 0, .hi = 70368744177664.0,
	 .desc = "the index's buffer pool in bytes (as shared_buffers; default 128 MiB)"},
	{.name = "device", .type = JK_ENUM, .flags = JK_NULLABLE, .vals_fn = cv_device_profiles,
	 .pattern = "^probe:", .expect = "unknown device profile",
	 .desc = "a device model every read goes through: a profile ('coldstudy device list') or "
		 "probe:FILE; null: the real device"},
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
	 .desc = "series sampled beside the load: iostat_s, memory_s, prometheus_s, prometheus_url"},
	{.name = "mem_cap_bytes", .type = JK_INT, .lo = 1048576, .hi = 70368744177664.0,
	 .desc = "a memory cgroup cap for the run (the page cache it may hold)"},
	{.name = "readahead", .type = JK_BOOL, .desc = "leave kernel read-ahead on (default off)"},
	{.name = "metric", .type = JK_ENUM, .vals = dist_metrics,
	 .desc = "distance for ground truth (default: the index's)"},
	{.name = "notes", .type = JK_STRING, .max = 65536, .desc = "free text"},
	{.name = "device_time", .type = JK_ENUM, .vals = device_times,
	 .desc = "realtime: the device model delays reads; virtual: real reads, each query's trace "
		 "replayed on the model afterwards"},
	{.name = "prewarm", .type = JK_OBJECT, .flags = JK_NULLABLE, .sub = prewarm_keys,
	 .desc = "load a query's blocks (or another's) into the cache before it: {of, offset}"},
	{.name = "load", .type = JK_OBJECT, .flags = JK_NULLABLE, .sub = load_keys,
	 .desc = "competing random readers during the run: {readers, block_bytes}"},
	{.name = "bulkwrite", .type = JK_OBJECT, .flags = JK_NULLABLE, .sub = bulkwrite_keys,
	 .desc = "a bulk writer on the same file system during the run"},
	{.name = "client_cpus", .type = JK_INTS, .flags = JK_NULLABLE, .lo = 0, .hi = 1023, .max = 1024,
	 .desc = "CPUs the clients are pinned to"},
	{.name = "cold_each_query", .type = JK_BOOL,
	 .desc = "cold again (evict, prove) before every query; needs cold and one client"},
	{.name = "target", .type = JK_ENUM, .vals = targets,
	 .desc = "what is queried: engine (coldstudy's index, the default) or postgres (a private "
		 "server on a cloned cluster; index is its data directory)"},
	{.name = "postgres", .type = JK_OBJECT, .sub = postgres_keys,
	 .desc = "target postgres: {sql, partition_sql, session, shared_buffers, port, database, "
		 "user, vector_text}"},
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
	{0},
};

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
 * that would measure nothing (virtual time without a device, competing
 * readers replayed in virtual time, prewarm under a real-time device
 * model) are refused on the effective spec only, since study defaults may
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
	const json_t *ld = json_object_get(eff, "load");

	if (virt && !has_dev)
		return bad(e, name, "$", "device_time",
			   "\"virtual\" replays reads against a device profile, and none is named");
	if (virt && json_is_object(ld))
		return bad(e, name, "$", "load",
			   "competing readers cannot be replayed in virtual time (the replay models "
			   "one query's reads); use \"device_time\": \"realtime\"");
	if (json_is_object(pw) && has_dev && !virt)
		return bad(e, name, "$", "prewarm",
			   "the real-time device model delays page-cache hits too, so prewarm would "
			   "show nothing; use \"device_time\": \"virtual\" or no device");
	if (json_is_object(pw) && json_integer_value(json_object_get(eff, "clients")) != 1)
		return bad(e, name, "$", "prewarm",
			   "prewarm evicts and loads the cache before each query: needs clients 1");
	if (json_is_true(json_object_get(eff, "cold_each_query")) &&
	    !json_is_true(json_object_get(eff, "cold")))
		return bad(e, name, "$", "cold_each_query", "needs \"cold\": true");
	if (json_is_true(json_object_get(eff, "cold_each_query")) &&
	    json_integer_value(json_object_get(eff, "clients")) != 1)
		return bad(e, name, "$", "cold_each_query",
			   "evicting before each query would evict other clients' pages: needs clients 1");
	if (json_is_object(pw) && !json_is_true(json_object_get(eff, "cold")))
		return bad(e, name, "$", "prewarm", "a prewarm run starts cold: needs \"cold\": true");
	if (json_is_string(json_object_get(eff, "target")) &&
	    !strcmp(json_string_value(json_object_get(eff, "target")), "postgres")) {
		static const char *const engine_only[] = {"device", "prewarm", "load", "bulkwrite",
							  "client_cpus", NULL};
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
	if (json_is_array(parts)) {
		json_object_set_new(f, "partitions", json_integer((json_int_t) json_array_size(parts)));
	} else if (!strcmp(kind, "phnsw")) {
		cv_index *ix = NULL;
		cv_open_opts oo;

		cv_open_opts_default(&oo);
		oo.buffers_bytes = 1u << 20;
		if (cv_index_open(dir, &oo, &ix, NULL) == 0) {
			json_object_set_new(f, "partitions",
					    json_integer((json_int_t) cv_index_partitions(ix)));
			cv_index_close(ix);
		} else {
			json_object_set_new(f, "partitions", json_null());
		}
	} else {
		json_object_set_new(f, "partitions", json_integer(kind[0] ? 1 : 0));
		if (!kind[0])
			json_object_set_new(f, "partitions", json_null());
	}
	json_decref(eff);
	*features = f;
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
						    NULL};
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
			f = fopen(file, "rb");
			if (!f)
				return cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.datasets.%.64s: %s: %s", name,
						  k, file, strerror(errno));
			fclose(f);
		}
	}
	return 0;
}

int harness_study_register(const char *dir, const char *path, const harness_study_reg_opts *o,
			   int64_t *seq, cs_err *e)
{
	ledger *l = NULL;
	json_t *doc = NULL, *rec = NULL, *items = NULL, *removed = NULL;
	char *canon = NULL, sha[65], owner[PATH_MAX + 80], real[PATH_MAX], link[64];
	guard_held sh;
	ssize_t rl;
	size_t len;
	int rc;

	guard_held_init(&sh);
	if (o && o->amend && (!o->rationale || !*o->rationale))
		return cs_err_set(e, CS_EXIT_USAGE, "--amend needs --rationale TEXT");
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
	rc = ledger_open(dir, &l, e);
	if (rc)
		goto out;
	/* Production paths are resolved once, against the study folder, and must exist. */
	rc = guard_hold(dir, AT_FDCWD, &sh, e);
	if (rc)
		goto out;
	rc = guard_production_resolve(doc, sh.fd, path, &items, e);
	if (rc)
		goto out;
	rc = guard_production_keep(l, items, o && o->amend, "study register", &removed, e);
	if (rc)
		goto out;
	rec = json_pack("{s:O, s:s, s:O, s:O}", "id", json_object_get(doc, "id"), "sha256", sha,
			"doc", doc, "production_items", items);
	if (!rec) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	if (o && o->amend && json_array_size(removed)) {
		json_object_set_new(rec, "production_amended", json_true());
		json_object_set_new(rec, "amend",
				    json_pack("{s:s, s:O, s:s}", "rationale", o->rationale,
					      "production_removed", removed, "access_state",
					      ledger_access_state(l)));
	}
	rc = ledger_append(l, "study", rec, seq, e);
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
			"duplicate keys (the loader); 'run' checks the files and the index "
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
	json_object_set_new(body, "$defs", json_pack("{s:o}", "run_defaults", defaults));
	return schema_doc("https://coldstudy.invalid/schema/study.json",
			  "coldstudy study spec (study.json)", body);
}
