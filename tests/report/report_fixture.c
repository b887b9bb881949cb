/*
 * report_fixture.c - a test helper that appends what the harness and
 * holdout predict would have written for a small study, so the report has
 * runs, raw per-query rows, predictions and a holdout run to show without
 * building an index:
 *
 *   report_fixture DIR
 *   report_fixture --odd DIR   records of every kind with odd members
 *
 * appends, through the real ledger: a study record, a passed validation
 * batch, five design runs (serial cold gate on hdd-pool, a warm gate, a
 * fan-out at 4 x 2 on hdd-pool in modelled real time, a cold single
 * partition on sata-ssd (recall 0 against the whole set's truth), one with
 * device metrics null and no device model: the real disk; the others in
 * virtual time), each with run_start, its per-query rows as a raw
 * blob and a run record shaped as in docs/records.md; two predictions;
 * then a holdout run_start and the holdout run they predict. The numbers
 * are fixed, so the report's bytes are too. `coldstudy holdout score` and
 * `coldstudy verdicts` are run on the result by report.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"

#define HOLD_SHA "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"

typedef struct fx_run {
	const char *id;
	const char *tags; /* JSON array text */
	const char *hyps; /* JSON array text */
	const char *mode;
	int fanout, clients, cold, holdout;
	const char *device; /* NULL: the host's own device */
	double wall_s, read_ms, lat_ms, recall;
	long reads, queries;
	int device_null;
	const char *device_time; /* "virtual", "realtime" or NULL (no model: the real disk) */
	int part;                /* >= 0: the spec names this one partition */
} fx_run;

static const fx_run runs[] = {
    {"R0001", "[\"gate\",\"cold\",\"serial\",\"hdd\",\"baseline\"]", "[\"H1\",\"H8\"]", "serial", 1,
     1, 1, 0, "hdd-pool", 191.2, 33.26, 19120.0, 0.98, 5742, 10, 0, "virtual", -1},
    {"R0002", "[\"gate\",\"warm\",\"serial\",\"baseline\"]", "[\"H1\"]", "serial", 1, 1, 0, 0,
     "hdd-pool", 0.52, 0.0, 52.0, 0.98, 0, 10, 0, "virtual", -1},
    {"R0003", "[\"gate\",\"cold\",\"fanout16\",\"hdd\",\"baseline\"]", "[\"H8\"]", "fanout", 4, 2,
     1, 0, "hdd-pool", 12.5, 57.2, 1250.0, 0.97, 4648, 10, 0, "realtime", -1},
    {"R0004", "[\"partition\",\"cold\",\"serial\",\"ssd\",\"baseline\"]", "[\"H5\"]", "serial", 1,
     1, 1, 0, "sata-ssd", 0.95, 0.704, 95.0, 0.0, 941, 10, 0, "virtual", 3},
    {"R0005", "[\"partition\",\"cold\",\"serial\"]", "[]", "serial", 1, 1, 1, 0, NULL, 0.081, 0.052,
     8.1, 0.99, 941, 10, 1, NULL, -1},
    {"R0006", "[\"gate\",\"cold\",\"serial\",\"hdd\",\"holdout\"]", "[]", "serial", 1, 1, 1, 1,
     "hdd-pool", 137.0, 25.42, 13700.0, 0.98, 5386, 10, 0, "virtual", -1},
};

/* The per-query rows of a run: reads and read time spread over its queries. */
static json_t *query_rows(const fx_run *r)
{
	json_t *rows = json_array();
	long q;

	for (q = 0; q < r->queries; q++) {
		long reads = r->reads / r->queries + (q % 3) - 1;
		double per = r->read_ms * (0.6 + 0.08 * (double) q);

		if (reads < 0 || r->reads == 0)
			reads = 0;
		json_array_append_new(
		    rows,
		    json_pack("{s:I,s:I,s:f,s:f,s:I,s:I,s:f,s:f,s:I}", "q", (json_int_t) q,
		              "client", (json_int_t) (q % r->clients), "t_ms",
		              r->lat_ms * (double) q, "lat_ms",
		              r->lat_ms * (0.9 + 0.02 * (double) q), "reads", (json_int_t) reads,
		              "bytes", (json_int_t) reads * 8192, "read_ms", per * (double) reads,
		              "recall", r->recall, "n", (json_int_t) 10));
	}
	return rows;
}

static int add_run(ledger *l, const fx_run *r, cs_err *e)
{
	json_t *rows = query_rows(r), *start, *rec, *metrics, *tags, *hyps;
	char sha[65], spec_sha[65];
	int rc;

	if (r->holdout)
		snprintf(spec_sha, sizeof(spec_sha), "%s", HOLD_SHA);
	else
		cs_sha256_hex(r->id, strlen(r->id), spec_sha);
	tags = json_loads(r->tags, 0, NULL);
	hyps = json_loads(r->hyps, 0, NULL);
	metrics = json_pack(
	    "{s:f,s:I,s:f,s:f,s:f,s:f,s:f,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:I}", "wall_s",
	    r->wall_s, "queries", (json_int_t) r->queries, "qps", (double) r->queries / r->wall_s,
	    "lat_mean_ms", r->lat_ms, "lat_p50_ms", r->lat_ms * 0.98, "lat_p99_ms", r->lat_ms * 1.2,
	    "recall_at_k", r->recall, "engine_reads", (json_int_t) r->reads, "engine_read_ms_mean",
	    r->read_ms, "reads_per_query", (double) r->reads / (double) r->queries,
	    "bytes_per_read", 8192.0, "device_reads", (double) r->reads * 0.95,
	    "device_read_ms_mean", r->read_ms * 1.04, "device_busy", r->cold ? 0.975 : 0.01,
	    "io_over_wall", (double) r->reads * r->read_ms / 1000.0 / r->wall_s, "inflight_median",
	    (double) (r->fanout * r->clients), "resident_fraction_before", r->cold ? 0.0 : 1.0,
	    "mem_peak_bytes", (json_int_t) 52428800);
	if (r->device_null) {
		json_object_set_new(metrics, "device_reads", json_null());
		json_object_set_new(metrics, "device_read_ms_mean", json_null());
		json_object_set_new(metrics, "device_busy", json_null());
	}
	rc = ledger_begin(l, e);
	if (rc)
		goto out;
	start = json_pack("{s:s,s:s,s:b}", "run_id", r->id, "spec_sha256", spec_sha, "holdout",
	                  r->holdout);
	rc = ledger_append(l, "run_start", start, NULL, e);
	json_decref(start);
	if (!rc)
		rc = ledger_put_raw(l, "queries", rows, sha, e);
	if (rc) {
		ledger_rollback(l);
		goto out;
	}
	rec = json_pack("{s:s,s:{},s:s,s:O,s:O,s:b,s:{s:s,s:s},s:{s:I,s:I,s:s,s:s?,s:s,s:I,s:I,s:b,"
	                "s:I,s:s},s:O,s:{s:s},s:s,s:s,s:s}",
	                "run_id", r->id, "spec", "spec_sha256", spec_sha, "tags", tags,
	                "hypotheses", hyps, "holdout", r->holdout, "index", "kind", "phnsw", "dir",
	                "/clone", "features", "clients", (json_int_t) r->clients, "fanout",
	                (json_int_t) r->fanout, "mode", r->mode, "device", r->device, "strategy",
	                "pread", "ef_search", (json_int_t) 40, "partitions", (json_int_t) 8, "cold",
	                r->cold, "queries", (json_int_t) r->queries, "kind", "phnsw", "metrics",
	                metrics, "raw", "queries", sha, "started", "2026-10-29T10:00:00.000000Z",
	                "ended", "2026-10-29T10:05:00.000000Z", "status", "complete");
	if (!r->device)
		json_object_set_new(json_object_get(rec, "features"), "device", json_null());
	json_object_set_new(rec, "device_time",
	                    r->device_time ? json_string(r->device_time) : json_null());
	if (r->part >= 0) {
		json_object_set_new(json_object_get(rec, "spec"), "partitions",
		                    json_pack("[i]", r->part));
		json_object_set_new(json_object_get(rec, "features"), "partitions", json_integer(1));
	}
	rc = ledger_append(l, "run", rec, NULL, e);
	json_decref(rec);
	if (rc)
		ledger_rollback(l);
	else
		rc = ledger_commit(l, e);
out:
	json_decref(rows);
	json_decref(tags);
	json_decref(hyps);
	json_decref(metrics);
	return rc;
}

static int add(ledger *l, const char *kind, json_t *p, cs_err *e)
{
	int rc = p ? ledger_append(l, kind, p, NULL, e) : cs_err_set(e, 1, "pack failed");

	json_decref(p);
	return rc;
}

/*
 * Records of every kind the report reads, with members of the wrong type,
 * missing or absurd: the report must show them as n/a or leave them out,
 * never crash or print garbage. They keep each kind's schema (log verify
 * refuses payloads that do not, and so does report, which verifies first).
 */
static const char *const odd[][2] = {
    /* each keeps its kind's schema (ledger/schema.c), so the log verifies; the rest is odd */
    {"run", "{\"run_id\":\"R5\",\"tags\":{\"x\":1},\"metrics\":{\"wall_s\":[1,2]},\"features\":\"s\"}"},
    {"run", "{\"run_id\":\"R9\",\"metrics\":{\"wall_s\":-1,\"engine_reads\":\"many\","
            "\"engine_read_ms_mean\":1e300},\"features\":{\"mode\":\"fanout\",\"fanout\":-3,"
            "\"device\":7},\"status\":\"aborted\"}"},
    {"run", "{\"run_id\":\"\"}"},
    {"validation", "{\"check\":\"\",\"passed\":false,\"batch\":-1,\"detail\":7}"},
    {"prediction", "{\"id\":\"1\",\"target\":{\"metric\":7},\"band95\":[5,1],\"value\":-0.0}"},
    {"run_start", "{\"holdout\":true,\"run_id\":\"R5\",\"spec_sha256\":\"" "ffffffffffffffffffff"
                  "ffffffffffffffffffffffffffffffffffffffffffff\"}"},
    {"score", "{\"passed\":true,\"rows\":[{\"predicted\":0,\"observed\":-5,\"lo\":\"x\"},3],"
              "\"n\":\"two\"}"},
    {"refutation", "{\"hypothesis\":\"H404\",\"because\":\"\"}"},
    {"deviation", "{\"because\":\"x\",\"run_id\":\"R404\"}"},
    {"note", "{\"text\":\"\",\"status\":[1]}"},
    {"verdict", "{\"hypothesis\":\"H404\",\"verdict\":\"maybe\"}"},
    {"study", "{\"id\":\"\",\"doc\":{\"holdout\":[]}}"},
};

/* Append the odd records. */
static int add_odd(ledger *l, cs_err *e)
{
	size_t i;
	int rc = 0;

	for (i = 0; !rc && i < sizeof(odd) / sizeof(odd[0]); i++)
		rc = add(l, odd[i][0], json_loads(odd[i][1], 0, NULL), e);
	return rc;
}

int main(int argc, char **argv)
{
	ledger *l = NULL;
	cs_err e = {0};
	size_t i;
	int rc;

	if (argc == 3 && !strcmp(argv[1], "--odd")) {
		rc = ledger_open(argv[2], &l, &e);
		if (!rc)
			rc = add_odd(l, &e);
		goto out;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: report_fixture [--odd] DIR\n");
		return 2;
	}
	rc = ledger_open(argv[1], &l, &e);
	if (rc)
		goto out;
	rc = add(l, "study",
	         json_pack("{s:s,s:s,s:{s:s,s:{s:f}}}", "id", "cold-query-fixture", "sha256",
	                   HOLD_SHA, "doc", "id", "cold-query-fixture", "holdout", "threshold",
	                   0.35),
	         &e);
	if (!rc)
		rc = add(l, "validation",
		         json_pack("{s:s,s:b,s:{s:f},s:I}", "check", "counters-agree", "passed", 1,
		                   "detail", "ratio", 0.94, "batch", (json_int_t) 1),
		         &e);
	if (!rc)
		rc = add(l, "validation",
		         json_pack("{s:s,s:b,s:I}", "check", "all", "passed", 1, "batch",
		                   (json_int_t) 1),
		         &e);
	for (i = 0; !rc && i < sizeof(runs) / sizeof(runs[0]) - 1; i++)
		rc = add_run(l, &runs[i], &e);
	if (!rc)
		rc = add(l, "prediction",
		         json_pack("{s:s,s:{s:s,s:s,s:s},s:f,s:[f,f],s:{s:s,s:{}},s:[s,s]}", "id",
		                   "P1", "target", "run_spec", "hold.json", "spec_sha256", HOLD_SHA,
		                   "metric", "wall_s", "value", 142.4, "band95", 95.0, 210.0,
		                   "model", "name", "io-model", "params", "fitted_on", "R0001",
		                   "R0003"),
		         &e);
	if (!rc)
		rc = add(l, "prediction",
		         json_pack("{s:s,s:{s:s,s:s,s:s},s:f,s:[f,f],s:{s:s,s:{}},s:[s,s]}", "id",
		                   "P2", "target", "run_spec", "hold.json", "spec_sha256", HOLD_SHA,
		                   "metric", "engine_reads", "value", 5742.0, "band95", 5600.0,
		                   5900.0, "model", "name", "io-model", "params", "fitted_on",
		                   "R0001", "R0003"),
		         &e);
	if (!rc)
		rc = add_run(l, &runs[sizeof(runs) / sizeof(runs[0]) - 1], &e);
out:
	ledger_close(l);
	if (rc) {
		fprintf(stderr, "report_fixture: %s\n", e.msg);
		return 1;
	}
	return 0;
}
