/*
 * prodset.h - what production is, and whether a held target touches it
 * (prodset.c). It calls held.c and refuse.c, never guard.c.
 */
#ifndef GUARD_PRODSET_H
#define GUARD_PRODSET_H

#include <stdio.h>

#include "cs.h"
#include "held.h"

struct ledger;

/* ---- the production set (prodset.c) ---- */

/*
 * Everything production: the registry (COLDSTUDY_PRODUCTION_REGISTRY, default
 * /var/lib/coldstudy/production.json; the default is read too when the
 * variable names another: it is never hidden) and, with a ledger, every
 * production item the study ever registered (unless amended away).
 */
typedef struct guard_prodset guard_prodset;

int guard_prodset_load(struct ledger *l, guard_prodset **out, cs_err *e);
void guard_prodset_free(guard_prodset *ps);
/* Add path (resolved from base_fd, must exist) to ps only: validate's planted targets. */
int guard_prodset_add(guard_prodset *ps, const char *path, int base_fd, const char *owner,
		      cs_err *e);
/* Add items (guard_production_resolve's, not yet registered) to ps only: a study registering. */
int guard_prodset_add_items(guard_prodset *ps, const json_t *items, const char *owner, cs_err *e);
/* The registry file's path (borrowed; from the environment or the default). */
const char *guard_registry_path(void);

/*
 * Refuse (CS_EXIT_REFUSED, a refusal record with l) when the held target
 * is production, lies inside it, contains it, holds a hard link to a
 * production file, or lives on a production block device. role names the
 * target in messages ("index", "bulkwrite.dir"). ps NULL: the registry
 * only, loaded for this call. A walk past its limits refuses (fail closed).
 */
int guard_check_held(struct ledger *l, guard_prodset *ps, const guard_held *h, const char *verb,
		     const char *role, cs_err *e);

/* guard_hold + guard_check_held; on refusal h is closed. */
int guard_target(struct ledger *l, guard_prodset *ps, const char *path, int base_fd,
		 const char *verb, const char *role, guard_held *h, cs_err *e);

/*
 * Resolve study.json's production items against the study folder
 * (study_fd), each required to exist (CS_EXIT_BADINPUT naming it), into
 * *items (a new JSON array of identities); hosts and databases are added
 * as named items. 0 or CS_EXIT_*.
 */
int guard_production_resolve(const json_t *study, int study_fd, const char *study_name,
			     json_t **items, cs_err *e);
/*
 * A re-registration may add production items, never drop one silently:
 * refuse (recorded) when items misses any item the study protected so far,
 * unless amend; *removed (new) gets the items an amendment drops.
 */
int guard_production_keep(struct ledger *l, const json_t *items, int amend, const char *verb,
			  json_t **removed, cs_err *e);
/* Add items (guard_production_resolve's) to the machine registry under owner. */
int guard_registry_add(const json_t *items, const char *owner, cs_err *e);
/* Remove the registry items whose path (or name) is name; *removed gets how many. */
int guard_registry_remove(const char *name, size_t *removed, cs_err *e);
/* The registry's items (new reference). */
int guard_registry_list(json_t **items, cs_err *e);

/* ---- `coldstudy production` (registry.c): one line said to out ---- */

/* The registry: a line an item (kind, path or name, identity, owner), or JSON with json. */
int guard_registry_print(int json, FILE *out, cs_err *e);
/* Resolve paths (from the current directory), hosts and dbs (JSON arrays of strings) and register them. */
int guard_registry_add_named(json_t *paths, json_t *hosts, json_t *dbs, FILE *out, cs_err *e);
/* Remove each of names[0..n) (a path or a name; one that matches nothing is exit 5). */
int guard_registry_remove_all(char *const *names, size_t n, FILE *out, cs_err *e);

/*
 * Refuse (CS_EXIT_REFUSED, recorded with l) a TCP port that a production
 * item names (study.json's production.ports): a server a run starts must
 * never be addressed like production's. ps NULL: the registry only.
 */
int guard_port(struct ledger *l, guard_prodset *ps, int port, const char *verb, const char *role,
	       cs_err *e);

/* guard_target for a target that must exist (exit 5 otherwise): what evicts, reads or loads. */
int guard_existing(struct ledger *l, guard_prodset *ps, const char *path, int base_fd,
		   const char *verb, const char *role, guard_held *h, cs_err *e);

/*
 * A dataset spec's file (fvecs:PATH, npy:PATH, ...) checked like a target:
 * a study run reads clones and generated data, never production's files.
 * Specs without a path (synth:, fashion-mnist) pass. The file is held for
 * the process and read through guard_dataset_via.
 */
int guard_dataset(struct ledger *l, guard_prodset *ps, const char *spec, const char *verb,
		  const char *role, cs_err *e);
/*
 * The spec a loader reads for spec: once guard_dataset passed it, the same
 * spec through the held file ("fvecs:/proc/PID/fd/N[A:B]", held for the
 * process); any other spec as it is (borrowed).
 */
const char *guard_dataset_via(const char *spec);

#endif
