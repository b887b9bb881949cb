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

/* ---- small schema helpers ---- */

static int bad(cs_err *e, const char *name, const char *where, const char *key, const char *why)
{
	return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s%s%s: %s", name, where, key ? "." : "",
			  key ? key : "", why);
}

/* Refuse keys of obj not in allowed (NULL-terminated). */
static int only_keys(const json_t *obj, const char *const *allowed, const char *name,
		     const char *where, cs_err *e)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *) obj, k, v) {
		size_t i;

		for (i = 0; allowed[i]; i++)
			if (!strcmp(allowed[i], k))
				break;
		if (!allowed[i])
			return bad(e, name, where, k, "unknown key");
	}
	return 0;
}

static int want_string(const json_t *obj, const char *key, int required, size_t maxlen,
		       const char *name, const char *where, cs_err *e)
{
	const json_t *v = json_object_get(obj, key);

	if (!v)
		return required ? bad(e, name, where, key, "required string is missing") : 0;
	if (!json_is_string(v))
		return bad(e, name, where, key, "expected a string");
	if (json_string_length(v) == 0 || json_string_length(v) > maxlen)
		return bad(e, name, where, key, "string is empty or too long");
	return 0;
}

static int want_int(const json_t *obj, const char *key, int required, json_int_t lo,
		    json_int_t hi, const char *name, const char *where, cs_err *e)
{
	const json_t *v = json_object_get(obj, key);
	char why[128];

	if (!v)
		return required ? bad(e, name, where, key, "required integer is missing") : 0;
	if (!json_is_integer(v))
		return bad(e, name, where, key, "expected an integer");
	if (json_integer_value(v) < lo || json_integer_value(v) > hi) {
		snprintf(why, sizeof(why), "expected an integer in [%lld, %lld]", (long long) lo,
			 (long long) hi);
		return bad(e, name, where, key, why);
	}
	return 0;
}

static int want_enum(const json_t *obj, const char *key, const char *const *vals,
		     const char *name, const char *where, cs_err *e)
{
	const json_t *v = json_object_get(obj, key);
	char why[256];
	size_t len = 0;

	if (!v)
		return 0;
	if (json_is_string(v))
		for (size_t i = 0; vals[i]; i++)
			if (!strcmp(vals[i], json_string_value(v)))
				return 0;
	len += (size_t) snprintf(why, sizeof(why), "expected one of");
	for (size_t i = 0; vals[i] && len < sizeof(why); i++)
		len += (size_t) snprintf(why + len, sizeof(why) - len, " \"%s\"", vals[i]);
	return bad(e, name, where, key, why);
}

static int want_string_array(const json_t *obj, const char *key, size_t maxn, const char *name,
			     const char *where, cs_err *e)
{
	const json_t *v = json_object_get(obj, key);
	char w[256];
	size_t i;
	json_t *x;

	if (!v)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > maxn)
		return bad(e, name, where, key, "expected an array of strings (bounded)");
	json_array_foreach(v, i, x) {
		if (!json_is_string(x) || !json_string_length(x) || json_string_length(x) > 4096) {
			snprintf(w, sizeof(w), "%s.%s[%zu]", where, key, i);
			return bad(e, name, w, NULL, "expected a non-empty string");
		}
	}
	return 0;
}

/* An array of TCP port numbers (a server's, named as production). */
static int want_port_array(const json_t *obj, const char *key, const char *name, const char *where,
			   cs_err *e)
{
	const json_t *v = json_object_get(obj, key);
	char w[256];
	size_t i;
	json_t *x;

	if (!v)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > 64)
		return bad(e, name, where, key, "expected an array of port numbers (bounded)");
	json_array_foreach(v, i, x) {
		if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > 65535) {
			snprintf(w, sizeof(w), "%s.%s[%zu]", where, key, i);
			return bad(e, name, w, NULL, "expected a port number in [1, 65535]");
		}
	}
	return 0;
}

static int id_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '-' || s[i] == '_' || s[i] == '.' || (s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return 0;
	return 1;
}

/* ---- study.json ---- */

int harness_study_validate(const json_t *doc, const char *name, cs_err *e)
{
	static const char *const top[] = {"id", "title", "production", "datasets", "indexes",
					  "defaults", "scratch_dir", "notes", NULL};
	/* sockets: a server's socket directories (identities, like paths); ports: its port numbers */
	static const char *const prod_keys[] = {"paths", "block_devices", "databases", "hosts",
						"sockets", "ports", NULL};
	static const char *const ix_keys[] = {"kind", "dataset", "source", "clone", NULL};
	static const char *const kinds[] = {"hnsw", "paged", "phnsw", "hfresh", "postgres", NULL};
	const json_t *prod, *ds, *ixs;
	const char *k;
	json_t *v;
	size_t total = 0;
	int rc;

	if ((rc = only_keys(doc, top, name, "$", e)) ||
	    (rc = want_string(doc, "id", 1, 64, name, "$", e)) ||
	    (rc = want_string(doc, "title", 0, 512, name, "$", e)) ||
	    (rc = want_string(doc, "scratch_dir", 0, 4000, name, "$", e)) ||
	    (rc = want_string(doc, "notes", 0, 65536, name, "$", e)))
		return rc;
	if (!id_ok(json_string_value(json_object_get(doc, "id"))))
		return bad(e, name, "$", "id", "expected 1-64 of [A-Za-z0-9._-]");
	prod = json_object_get(doc, "production");
	if (!json_is_object(prod))
		return bad(e, name, "$", "production",
			   "required object {paths, block_devices, databases, hosts} is missing");
	if ((rc = only_keys(prod, prod_keys, name, "$.production", e)))
		return rc;
	for (size_t i = 0; prod_keys[i]; i++) {
		if (!strcmp(prod_keys[i], "ports"))
			rc = want_port_array(prod, prod_keys[i], name, "$.production", e);
		else
			rc = want_string_array(prod, prod_keys[i], 64, name, "$.production", e);
		if (rc)
			return rc;
		total += json_array_size(json_object_get(prod, prod_keys[i]));
	}
	if (!total)
		return bad(e, name, "$", "production",
			   "names no production item: a study must say what it must never touch");
	ds = json_object_get(doc, "datasets");
	if (ds) {
		if (!json_is_object(ds))
			return bad(e, name, "$", "datasets", "expected an object {name: spec}");
		json_object_foreach((json_t *) ds, k, v) {
			if (!json_is_string(v) || !json_string_length(v) || !id_ok(k))
				return cs_err_set(e, CS_EXIT_BADINPUT,
						  "%s: $.datasets.%s: expected a dataset spec string "
						  "under a name of [A-Za-z0-9._-]",
						  name, k);
		}
	}
	ixs = json_object_get(doc, "indexes");
	if (ixs) {
		if (!json_is_object(ixs))
			return bad(e, name, "$", "indexes", "expected an object {name: {...}}");
		json_object_foreach((json_t *) ixs, k, v) {
			char w[128];

			snprintf(w, sizeof(w), "$.indexes.%.64s", k);
			if (!json_is_object(v))
				return bad(e, name, w, NULL, "expected an object");
			if ((rc = only_keys(v, ix_keys, name, w, e)) ||
			    (rc = want_enum(v, "kind", kinds, name, w, e)) ||
			    (rc = want_string(v, "dataset", 0, 4000, name, w, e)) ||
			    (rc = want_string(v, "source", 0, 4000, name, w, e)) ||
			    (rc = want_string(v, "clone", 1, 4000, name, w, e)))
				return rc;
		}
	}
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
 * prewarm, load, bulkwrite, client_cpus. Combinations that would measure
 * nothing (virtual time without a device, competing readers replayed in
 * virtual time, prewarm under a real-time device model) are refused on
 * the effective spec only, since study defaults may supply the device.
 */
static int treatments_validate(const json_t *doc, const char *name, const char *where, cs_err *e)
{
	static const char *const times[] = {"realtime", "virtual", NULL};
	static const char *const ofs[] = {"self", "other", NULL};
	static const char *const pw_keys[] = {"of", "offset", NULL};
	static const char *const ld_keys[] = {"readers", "block_bytes", NULL};
	static const char *const bw_keys[] = {"max_bytes", "max_s", "chunk_bytes", "sync_bytes",
					      "dir", NULL};
	const json_t *v;
	char w[200];
	int rc;

	if ((rc = want_enum(doc, "device_time", times, name, where, e)))
		return rc;
	v = json_object_get(doc, "prewarm");
	if (v && !json_is_null(v)) {
		snprintf(w, sizeof(w), "%s.prewarm", where);
		if (!json_is_object(v))
			return bad(e, name, where, "prewarm",
				   "expected {\"of\": \"self\"|\"other\", \"offset\": N}");
		if ((rc = only_keys(v, pw_keys, name, w, e)) ||
		    (rc = want_enum(v, "of", ofs, name, w, e)) ||
		    (rc = want_int(v, "offset", 0, 1, (json_int_t) 1 << 40, name, w, e)))
			return rc;
		if (!json_object_get(v, "of"))
			return bad(e, name, w, "of", "required: \"self\" or \"other\"");
	}
	v = json_object_get(doc, "load");
	if (v && !json_is_null(v)) {
		snprintf(w, sizeof(w), "%s.load", where);
		if (!json_is_object(v))
			return bad(e, name, where, "load", "expected {\"readers\": N, \"block_bytes\": B}");
		if ((rc = only_keys(v, ld_keys, name, w, e)) ||
		    (rc = want_int(v, "readers", 1, 1, 256, name, w, e)) ||
		    (rc = want_int(v, "block_bytes", 0, 4096, 1 << 20, name, w, e)))
			return rc;
		if (json_integer_value(json_object_get(v, "block_bytes")) % 4096)
			return bad(e, name, w, "block_bytes", "expected a multiple of 4096 (O_DIRECT)");
	}
	v = json_object_get(doc, "bulkwrite");
	if (v && !json_is_null(v)) {
		const json_t *ms;

		snprintf(w, sizeof(w), "%s.bulkwrite", where);
		if (!json_is_object(v))
			return bad(e, name, where, "bulkwrite",
				   "expected {\"max_bytes\", \"max_s\", \"chunk_bytes\", \"sync_bytes\", \"dir\"}");
		if ((rc = only_keys(v, bw_keys, name, w, e)) ||
		    (rc = want_int(v, "max_bytes", 0, 1 << 20, (json_int_t) 1 << 40, name, w, e)) ||
		    (rc = want_int(v, "chunk_bytes", 0, 4096, 64 << 20, name, w, e)) ||
		    (rc = want_int(v, "sync_bytes", 0, 4096, (json_int_t) 1 << 34, name, w, e)) ||
		    (rc = want_string(v, "dir", 0, 4000, name, w, e)))
			return rc;
		ms = json_object_get(v, "max_s");
		if (ms && (!json_is_number(ms) || json_number_value(ms) <= 0 ||
			   json_number_value(ms) > 86400.0))
			return bad(e, name, w, "max_s", "expected a number of seconds in (0, 86400]");
	}
	v = json_object_get(doc, "client_cpus");
	if (v && !json_is_null(v)) {
		size_t i;
		json_t *x;

		if (!json_is_array(v) || !json_array_size(v) || json_array_size(v) > 1024)
			return bad(e, name, where, "client_cpus", "expected a non-empty array of CPU numbers");
		json_array_foreach(v, i, x) {
			if (!json_is_integer(x) || json_integer_value(x) < 0 ||
			    json_integer_value(x) >= 1024) {
				snprintf(w, sizeof(w), "%s.client_cpus[%zu]", where, i);
				return bad(e, name, w, NULL, "expected a CPU number in [0, 1023]");
			}
		}
	}
	return 0;
}

/*
 * The "postgres" object of a run on a PostgreSQL clone (target "postgres",
 * "index" naming the clone's data directory): the query template (SQL with $1 for the
 * query vector; partition_sql also with {p} for a partition's number, used
 * by fan-out), the per-session knobs (SET statements, one each), the
 * server's shared_buffers, the port its private socket is named by, the
 * database and role, and how the vector is written as text.
 */
static int postgres_validate(const json_t *doc, int required, const char *name, const char *where,
			     cs_err *e)
{
	static const char *const pg_keys[] = {"sql", "partition_sql", "session",
					      "shared_buffers", "port", "database", "user",
					      "vector_text", NULL};
	static const char *const vtexts[] = {"array", "pgvector", NULL};
	const json_t *v = json_object_get(doc, "postgres"), *x;
	char w[200];
	size_t i;
	int rc;

	if (!v)
		return required ? bad(e, name, where, "postgres",
				      "required object {sql, ...} is missing (target \"postgres\")")
				: 0;
	snprintf(w, sizeof(w), "%s.postgres", where);
	if (!json_is_object(v))
		return bad(e, name, where, "postgres", "expected an object {sql, ...}");
	if ((rc = only_keys(v, pg_keys, name, w, e)) ||
	    (rc = want_string(v, "sql", required, 65536, name, w, e)) ||
	    (rc = want_string(v, "partition_sql", 0, 65536, name, w, e)) ||
	    (rc = want_string(v, "shared_buffers", 0, 32, name, w, e)) ||
	    (rc = want_int(v, "port", 0, 1024, 65535, name, w, e)) ||
	    (rc = want_string(v, "database", 0, 63, name, w, e)) ||
	    (rc = want_string(v, "user", 0, 63, name, w, e)) ||
	    (rc = want_enum(v, "vector_text", vtexts, name, w, e)) ||
	    (rc = want_string_array(v, "session", 64, name, w, e)))
		return rc;
	x = json_object_get(v, "sql");
	if (x && !strstr(json_string_value(x), "$1"))
		return bad(e, name, w, "sql", "expected SQL with $1 for the query vector");
	x = json_object_get(v, "partition_sql");
	if (x && (!strstr(json_string_value(x), "$1") || !strstr(json_string_value(x), "{p}")))
		return bad(e, name, w, "partition_sql",
			   "expected SQL with $1 for the query vector and {p} for the partition");
	x = json_object_get(v, "shared_buffers");
	if (x) {
		const char *sb = json_string_value(x);
		size_t d = strspn(sb, "0123456789");

		if (!d || (sb[d] && strcmp(sb + d, "kB") && strcmp(sb + d, "MB") &&
			   strcmp(sb + d, "GB")))
			return bad(e, name, w, "shared_buffers",
				   "expected a size like \"16MB\" (digits, then kB, MB or GB)");
	}
	json_array_foreach(json_object_get(v, "session"), i, x) {
		const char *st = json_string_value(x);

		/* One SET each: a knob, never a second statement that could write. */
		if (strncasecmp(st, "SET ", 4) || strchr(st, ';')) {
			snprintf(w, sizeof(w), "%s.postgres.session[%zu]", where, i);
			return bad(e, name, w, NULL,
				   "expected one \"SET name = value\" statement without ';'");
		}
	}
	return 0;
}

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
	static const char *const top[] = {
		"index", "queries", "base", "k", "ef_search", "search_probe", "rescore_limit", "mode",
		"fanout", "merge", "io", "io_depth", "strategy", "queue_depth", "buffers_bytes",
		"device", "clients", "query_count", "duration_s", "cold", "partitions", "tags",
		"hypotheses", "samplers", "mem_cap_bytes", "readahead", "metric", "notes",
		"device_time", "prewarm", "load", "bulkwrite", "client_cpus", "cold_each_query",
		"target", "postgres", NULL};
	static const char *const targets[] = {"engine", "postgres", NULL};
	static const char *const q_keys[] = {"spec", "first", "count", NULL};
	static const char *const s_keys[] = {"iostat_s", "memory_s", "prometheus_s",
					     "prometheus_url", NULL};
	static const char *const modes[] = {"serial", "fanout", NULL};
	static const char *const merges[] = {"stream", "sort", NULL};
	static const char *const ios[] = {"serial", "concurrent", NULL};
	static const char *const strategies[] = {"mmap", "pread", "direct", "uring", NULL};
	static const char *const metrics[] = {"l2", "ip", "cosine", NULL};
	const json_t *q, *s, *v;
	char w[160];
	int rc;

	int pg = json_is_string(json_object_get(doc, "target")) &&
		 !strcmp(json_string_value(json_object_get(doc, "target")), "postgres");

	if ((rc = only_keys(doc, top, name, where, e)) ||
	    (rc = want_enum(doc, "target", targets, name, where, e)))
		return rc;
	if ((rc = postgres_validate(doc, pg, name, where, e)))
		return rc;
	if ((rc = want_string(doc, "index", !partial, 4000, name, where, e)) ||
	    (rc = want_string(doc, "base", 0, 4000, name, where, e)) ||
	    (rc = want_int(doc, "k", 0, 1, 1000, name, where, e)) ||
	    (rc = want_int(doc, "ef_search", 0, 1, 100000, name, where, e)) ||
	    (rc = want_int(doc, "search_probe", 0, 1, 100000, name, where, e)) ||
	    (rc = want_int(doc, "rescore_limit", 0, 0, 1000000, name, where, e)) ||
	    (rc = want_enum(doc, "mode", modes, name, where, e)) ||
	    (rc = want_int(doc, "fanout", 0, 1, 4096, name, where, e)) ||
	    (rc = want_enum(doc, "merge", merges, name, where, e)) ||
	    (rc = want_enum(doc, "io", ios, name, where, e)) ||
	    (rc = want_int(doc, "io_depth", 0, 1, 4096, name, where, e)) ||
	    (rc = want_enum(doc, "strategy", strategies, name, where, e)) ||
	    (rc = want_int(doc, "queue_depth", 0, 1, 4096, name, where, e)) ||
	    (rc = want_int(doc, "buffers_bytes", 0, 0, (json_int_t) 1 << 46, name, where, e)) ||
	    (rc = want_int(doc, "clients", 0, 1, 1024, name, where, e)) ||
	    (rc = want_int(doc, "query_count", 0, 1, 100000000, name, where, e)) ||
	    (rc = want_int(doc, "mem_cap_bytes", 0, 1 << 20, (json_int_t) 1 << 46, name, where, e)) ||
	    (rc = want_enum(doc, "metric", metrics, name, where, e)) ||
	    (rc = want_string(doc, "notes", 0, 65536, name, where, e)) ||
	    (rc = want_string_array(doc, "tags", 64, name, where, e)) ||
	    (rc = want_string_array(doc, "hypotheses", 64, name, where, e)))
		return rc;
	v = json_object_get(doc, "device");
	if (v && !json_is_null(v)) {
		if ((rc = want_string(doc, "device", 0, 4000, name, where, e)))
			return rc;
	}
	v = json_object_get(doc, "duration_s");
	if (v && (!json_is_number(v) || json_number_value(v) <= 0 ||
		  json_number_value(v) > 7 * 86400.0))
		return bad(e, name, where, "duration_s", "expected a number of seconds in (0, 604800]");
	if (json_object_get(doc, "query_count") && json_object_get(doc, "duration_s"))
		return bad(e, name, where, "duration_s",
			   "give either query_count or duration_s, not both");
	v = json_object_get(doc, "cold");
	if (!v && !partial)
		return bad(e, name, where, "cold", "required boolean is missing (cold or warm?)");
	if (v && !json_is_boolean(v))
		return bad(e, name, where, "cold", "expected true (cold) or false (warm)");
	v = json_object_get(doc, "cold_each_query");
	if (v && !json_is_boolean(v))
		return bad(e, name, where, "cold_each_query",
			   "expected a boolean (true: evict and prove cold before every query)");
	v = json_object_get(doc, "readahead");
	if (v && !json_is_boolean(v))
		return bad(e, name, where, "readahead", "expected a boolean");
	v = json_object_get(doc, "partitions");
	if (v) {
		size_t i;
		json_t *x;

		if (!json_is_array(v) || !json_array_size(v) || json_array_size(v) > 65536)
			return bad(e, name, where, "partitions",
				   "expected a non-empty array of partition numbers");
		json_array_foreach(v, i, x) {
			if (!json_is_integer(x) || json_integer_value(x) < 0 ||
			    json_integer_value(x) > 65535) {
				snprintf(w, sizeof(w), "%s.partitions[%zu]", where, i);
				return bad(e, name, w, NULL, "expected an integer in [0, 65535]");
			}
			for (size_t j = 0; j < i; j++)
				if (json_integer_value(json_array_get(v, j)) == json_integer_value(x)) {
					snprintf(w, sizeof(w), "%s.partitions[%zu]", where, i);
					return bad(e, name, w, NULL, "partition listed twice");
				}
		}
	}
	v = json_object_get(doc, "hypotheses");
	if (v) {
		size_t i;
		json_t *x;

		json_array_foreach(v, i, x) {
			if (!id_ok(json_string_value(x))) {
				snprintf(w, sizeof(w), "%s.hypotheses[%zu]", where, i);
				return bad(e, name, w, NULL, "expected a hypothesis id like \"H1\"");
			}
		}
	}
	q = json_object_get(doc, "queries");
	if (!q && !partial)
		return bad(e, name, where, "queries",
			   "required object {spec, first, count} is missing");
	if (q) {
		snprintf(w, sizeof(w), "%s.queries", where);
		if (!json_is_object(q))
			return bad(e, name, where, "queries", "expected an object {spec, first, count}");
		if ((rc = only_keys(q, q_keys, name, w, e)) ||
		    (rc = want_string(q, "spec", 1, 4000, name, w, e)) ||
		    (rc = want_int(q, "first", 0, 0, (json_int_t) 1 << 40, name, w, e)) ||
		    (rc = want_int(q, "count", 0, 1, (json_int_t) 1 << 40, name, w, e)))
			return rc;
	}
	s = json_object_get(doc, "samplers");
	if (s) {
		snprintf(w, sizeof(w), "%s.samplers", where);
		if (!json_is_object(s))
			return bad(e, name, where, "samplers", "expected an object");
		if ((rc = only_keys(s, s_keys, name, w, e)) ||
		    (rc = want_string(s, "prometheus_url", 0, 2000, name, w, e)))
			return rc;
		for (size_t i = 0; i < 3; i++) {
			v = json_object_get(s, s_keys[i]);
			if (v && (!json_is_number(v) || json_number_value(v) < 0.01 ||
				  json_number_value(v) > 3600))
				return bad(e, name, w, s_keys[i],
					   "expected a period in seconds in [0.01, 3600]");
		}
		v = json_object_get(s, "prometheus_url");
		if (v && strncmp(json_string_value(v), "http://", 7) &&
		    strncmp(json_string_value(v), "https://", 8))
			return bad(e, name, w, "prometheus_url", "expected an http:// or https:// URL");
	}
	if ((rc = treatments_validate(doc, name, where, e)))
		return rc;
	/* Knob values the engine itself can judge. */
	v = json_object_get(doc, "device");
	if (json_is_string(v) && strncmp(json_string_value(v), "probe:", 6)) {
		const char *const *p = cv_device_profiles();
		size_t i;

		for (i = 0; p && p[i]; i++)
			if (!strcmp(p[i], json_string_value(v)))
				break;
		if (p && !p[i])
			return bad(e, name, where, "device",
				   "unknown device profile (see 'coldstudy device list')");
	}
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
