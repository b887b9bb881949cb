/*
 * cmds.h - the verbs of `coldstudy`. Each verb is int cmd_X(int argc,
 * char **argv) with argv[0] the verb's name; it returns an exit code
 * (CS_EXIT_*) and prints its own one-line error to stderr as
 * "coldstudy VERB: message". Each part's verbs live in cli/cmd_PART.c.
 */
#ifndef CLI_CMDS_H
#define CLI_CMDS_H

#include "cs.h"
#include "help.h"

typedef int (*cmd_fn)(int argc, char **argv);

/* cmd_ledger.c */
int cmd_init(int argc, char **argv);
int cmd_register(int argc, char **argv);
int cmd_hypotheses(int argc, char **argv);
/* cmd_log.c */
int cmd_log(int argc, char **argv);
/* cmd_data.c */
int cmd_data(int argc, char **argv);
/* cmd_io.c */
int cmd_cache(int argc, char **argv);
/* cmd_probe.c */
int cmd_probe(int argc, char **argv);
/* cmd_device.c */
int cmd_device(int argc, char **argv);
/* cmd_index.c */
int cmd_index(int argc, char **argv);
/* cmd_harness.c */
int cmd_validate(int argc, char **argv);
int cmd_clone(int argc, char **argv);
int cmd_production(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_study(int argc, char **argv);
/* cmd_runs.c: getting results out */
int cmd_runs(int argc, char **argv);
int cmd_run_show(int argc, char **argv); /* `run show ...`, argv[0] = "show" */
/* cmd_schema.c */
int cmd_schema(int argc, char **argv);
/* cmd_holdout.c */
int cmd_holdout(int argc, char **argv);
int cmd_refute(int argc, char **argv);
int cmd_verdicts(int argc, char **argv);
/* cmd_plan.c */
int cmd_plan(int argc, char **argv);
/* cmd_replicate.c */
int cmd_replicate(int argc, char **argv);
int cmd_deviate(int argc, char **argv);

/* cmd_report.c */
int cmd_report(int argc, char **argv);
/* `coldstudy log publish ...`, called by cmd_log with argv[0] = "publish" */
int cmd_log_publish(int argc, char **argv);

/* Shared helpers (cli/util.c). */

/* Print "coldstudy VERB: msg" to stderr and return e->code. */
int cli_fail(const char *verb, const cs_err *e);
/*
 * text with the paths the guards hold (/proc/PID/fd/N) spelled as the user
 * typed them; a static buffer, valid until the next call.
 */
const char *cli_spell(const char *text);
/* Print a usage error "coldstudy VERB: msg" plus "try 'coldstudy VERB --help'"; returns 2. */
int cli_usage(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True if any of argv[1..] is --help or -h. */
int cli_wants_help(int argc, char **argv);
/* Parse an unsigned/double option value strictly; 0 ok, -1 bad. */
int cli_parse_u64(const char *s, uint64_t *out);
int cli_parse_double(const char *s, double *out);

#endif
