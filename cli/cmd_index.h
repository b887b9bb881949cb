/*
 * cmd_index.h - what the three files of `coldstudy index` share:
 * cmd_index.c (build, verify, insert, delete) and cmd_query.c (query
 * and sweep). The measurement itself is harness/qmeasure.h's, the two
 * verbs whole harness/qcmd.c's.
 */
#ifndef CLI_CMD_INDEX_H
#define CLI_CMD_INDEX_H

#include "cmds.h"
#include "coldvec.h"
#include "qmeasure.h"

/* What index query (and sweep, which takes query's options) was asked (harness/qmeasure.h). */
typedef harness_query_args qargs;

/* Parse index query's options into *a (a->parts: caller frees); 0 or a usage exit. */
int index_query_args(int argc, char **argv, qargs *a);

/* LIST: comma-separated numbers and ranges A-B (each at most 65535); *out new. 0 or -1. */
int index_parse_list(const char *s, uint32_t **out, size_t *n);

int index_query(int argc, char **argv);
int index_sweep(int argc, char **argv);

#endif
