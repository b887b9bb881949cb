/*
 * harness_int.h - private to harness/ and its tests: the samplers and
 * the pure computations behind them (iostat -x arithmetic, Prometheus
 * text parsing, cgroup memory lookup), so the tests can check them
 * without a device or a server.
 */
#ifndef HARNESS_INT_H
#define HARNESS_INT_H

#include <stdint.h>
#include "cs.h"
#include "cv_io.h"

/* ---- samplers (sample.c) ---- */

typedef struct harness_sampler_opts {
	const cv_blkdev *dev;      /* NULL: no iostat series */
	double iostat_s;           /* 1 */
	double memory_s;           /* 5 */
	double prometheus_s;       /* 10 */
	const char *prometheus_url; /* NULL: no Prometheus series */
} harness_sampler_opts;

typedef struct harness_samplers harness_samplers;

/* Start one thread per series; each takes a first sample at once. */
int harness_samplers_start(const harness_sampler_opts *o, harness_samplers **out, cs_err *e);

/*
 * Stop, take a last sample of each series, and hand the series over (new
 * references, arrays of rows). mem_peak: the largest memory figure seen
 * (cgroup usage, else RSS). Frees s.
 */
void harness_samplers_stop(harness_samplers *s, json_t **iostat, json_t **memory,
			   json_t **prometheus, uint64_t *mem_peak);

/*
 * One iostat -x row between two block-device stat readings:
 * {"t_s", "r_s", "rkB_s", "r_await", "aqu_sz", "util"} with r_await in ms
 * (null when no reads completed) and util in percent.
 */
json_t *harness_iostat_row(const cv_blkstat *a, const cv_blkstat *b, double t_s);

/*
 * Parse Prometheus text exposition format: every sample line
 * `name{labels} value [timestamp]` into obj[name{labels}] = value (at
 * most cap samples). Comment lines and malformed lines are skipped and
 * counted in *skipped (may be NULL). Returns the number of samples.
 */
size_t harness_prom_parse(const char *text, size_t len, json_t *obj, size_t cap,
			  size_t *skipped);

/* This process's memory cgroup usage in bytes (v2 memory.current, else v1); -1 if none. */
int64_t harness_cgroup_memory(char *which, size_t cap);

/* Resident set size of this process in bytes; -1 on failure. */
int64_t harness_rss(void);

/*
 * Put this process in a new memory cgroup capped at bytes (v2 memory.max
 * or v1 memory.limit_in_bytes). Returns a JSON object saying what was
 * requested and whether it applied, and why not (new reference);
 * *cleanup_path gets the cgroup directory to remove afterwards ("" if none).
 */
json_t *harness_memcap_apply(uint64_t bytes, char *cleanup_path, size_t cap);
void harness_memcap_release(const char *cleanup_path);

#endif
