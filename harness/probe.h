/*
 * probe.h - the measurements of `coldstudy probe` (probe.c): the probe's
 * random reads, under a real cap where asked, and fio beside it (the same
 * reads run by fio, for a figure next to one everybody knows).
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 */
#ifndef HARNESS_PROBE_H
#define HARNESS_PROBE_H

#include <stdio.h>

#include "coldvec.h"
#include "cs.h"
#include "harness.h"

/*
 * cv_probe(file, o) into *r; with cap, under the kernel's block throttle
 * on the whole disk under fd (the held file), the probe's readers in the
 * cgroup, whose counts of reads and bytes come back in *treads, *tbytes
 * (0 where unreadable). thr is caller-initialised (harness_throttle_init)
 * and ended here; its fields still name the disk and the controller.
 * shown: the file as typed, for messages. 0 or an exit code.
 */
int harness_probe(const char *file, const cv_probe_opts *o, const harness_cap *cap, int fd,
		  const char *shown, harness_throttle *thr, cv_probe_result *r, uint64_t *treads,
		  uint64_t *tbytes, cs_err *e);

/* fio's figures; out keeps fio's whole JSON output (new reference, caller decrefs). */
typedef struct harness_fio {
	double iops, mibps, lat_mean_ms, lat_p50_ms, lat_p99_ms;
	double clat_mean_ms, slat_mean_ms;
	json_t *out;
} harness_fio;

/* Which of fio's latencies is compared with the probe's, and why. */
#define HARNESS_FIO_LATENCY "lat"
#define HARNESS_FIO_LATENCY_WHY                                                            \
	"fio's lat_ns (slat + clat: issue to completion), the interval the probe times (its "  \
	"submission to its completion); clat_ns leaves out the submission"

/*
 * Run fio on file (the guards' held spelling) with o's block size, queue
 * depth, reads and strategy, and read its figures into *r. fio missing
 * or failing is exit 1; output without the figures, exit 5.
 */
int harness_fio_run(const char *file, const cv_probe_opts *o, harness_fio *r, cs_err *e);

/* What probe measured, as harness_probe_print shows it. */
typedef struct harness_probe_report {
	const char *shown;              /* FILE as typed */
	const cv_probe_opts *o;
	const cv_probe_result *r;
	const char *device;             /* the model's name; NULL: the real device */
	const harness_cap *cap;         /* the real cap, or NULL */
	const harness_throttle *thr;    /* with cap: its disk, and the kernel's count: */
	uint64_t treads, tbytes;
	const harness_fio *fio;         /* fio's figures beside, or NULL */
} harness_probe_report;

/*
 * probe's output: the figures (and fio's beside them, their ratio, and
 * which latency fio's is) as text rows, or one JSON object with json.
 * 0 or -ENOMEM.
 */
int harness_probe_print(const harness_probe_report *p, int json, FILE *out);

/* What probe was asked beside the reads (probecmd.c). */
typedef struct harness_probe_args {
	const char *device; /* a device model's profile; NULL: none */
	const char *cap;    /* a real cap's spelling (harness_cap_parse); NULL: none */
	int json, fio;
} harness_probe_args;

/*
 * `coldstudy probe` whole: file (as typed) held through the guards, the
 * model or the cap, the reads, fio beside them (its failure a line on
 * warn, not an error), the figures to out. 0 or an exit code.
 */
int harness_probe_verb(const char *file, const harness_probe_args *a, cv_probe_opts *o, FILE *out,
		       FILE *warn, cs_err *e);

#endif
