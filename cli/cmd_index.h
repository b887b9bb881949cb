/*
 * cmd_index.h - what the three files of `coldstudy index` share:
 * cmd_index.c (build, verify, insert, delete, and the verb's help),
 * cmd_query.c (query) and cmd_sweep.c (sweep). The measurement itself is
 * harness/qmeasure.h's.
 */
#ifndef CLI_CMD_INDEX_H
#define CLI_CMD_INDEX_H

#include "cmds.h"
#include "coldvec.h"

/* What index query (and sweep, which takes query's options) was asked. */
typedef struct qargs {
	const char *dir, *queries, *data, *gt, *device, *simulate, *record, *tracefile, *throttle;
	const char *per_query; /* --per-query FILE: one row a timed query (.csv, else JSON lines) */
	uint64_t nq, buffers;
	uint64_t repeat, warmup; /* timed passes over the queries, untimed ones first */
	int cold, json, quiet;
	cv_io_strategy strategy;
	cv_query_opts qo;
	uint32_t *parts;
	size_t nparts;
} qargs;

/* Parse index query's options into *a (a->parts: caller frees); 0 or a usage exit. */
int index_query_args(int argc, char **argv, qargs *a);

/* LIST: comma-separated numbers and ranges A-B (each at most 65535); *out new. 0 or -1. */
int index_parse_list(const char *s, uint32_t **out, size_t *n);

int index_query(int argc, char **argv);
int index_sweep(int argc, char **argv);

#endif
