/*
 * pgfdw.c - a PostgreSQL run over N servers: a coordinator whose partitions
 * are postgres_fdw foreign tables, and its shard servers, each a cloned
 * cluster started privately (pg.c) as the coordinator itself is.
 *
 * The spec names the shards by the coordinator's foreign server names:
 *   "postgres": {"sql": ..., "port": P,
 *                "shards": {"shard0": {"index": CLONE0, "port": P0}, ...}}
 * and pgrun.c runs the coordinator as any PostgreSQL run, calling here:
 *   - harness_pgfdw_prepare (phase 1): every shard's clone held, not
 *     production by identity, this study's clone of a cluster, its own
 *     configuration naming only itself, its port and its private socket
 *     directory not production's: the same guards as the coordinator's;
 *   - harness_pgfdw_stop / _evict / _start (phase 3): every server stopped,
 *     each shard's files evicted and proven cold (one proof a server), the
 *     shards started;
 *   - harness_pgfdw_repoint, on a session of the started coordinator before
 *     any statement that could reach a foreign server: every foreign server
 *     of the coordinator must be postgres_fdw's and one the spec names (a
 *     server it does not name could be production: refused), no dblink, and
 *     each server's place (host, hostaddr, port, service, ...) is replaced
 *     by its shard's private socket directory and port; read back, checked,
 *     and refused when anything else would be reached. Options that name no
 *     place (dbname, async_capable, fetch_size, ...) stay; any other option
 *     is refused, so a place spelled some new way fails closed;
 *   - harness_pgfdw_before / _after, around each query (setup, outside the
 *     wall): the coordinator's remote sessions are closed
 *     (postgres_fdw_disconnect_all) and the shards' backends waited out, so
 *     every statistic they hold is flushed (a backend flushes at exit);
 *     before the query, the statement is planned on every shard (an EXPLAIN
 *     with use_remote_estimate, rolled back: catalogs and relation caches,
 *     as the single-server run's plan-only EXPLAIN does), those sessions
 *     closed again, one LIMIT 0 statement a foreign table opens the remote
 *     sessions, then each shard's pg_statio is read; after it, read again:
 *     the query's data blocks read
 *     on every shard (user relations; catalogs apart) and its read time
 *     (pg_stat_database.blk_read_time, track_io_timing).
 *
 * The server's environment loses every PG* variable (pg.c), so a PGHOSTADDR
 * or PGSERVICE of the harness never steers postgres_fdw's libpq elsewhere.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 */
#include "harness.h"
#include "harness_int.h"

#include "coldvec.h"
#include "guard.h"
#include "ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define FDW_SHARDS_MAX 256
#define FDW_WAIT_S 30 /* the longest a shard's closed backends may take to exit */

/* One shard: its clone, its private server, the harness's own session on it. */
typedef struct fdw_shard {
	char name[64];      /* the coordinator's foreign server */
	const char *index;  /* the clone's data directory (borrowed from the spec) */
	char dbname[64];    /* the database the foreign server names (read at repoint) */
	char from[512];     /* where the coordinator's server pointed before (the record) */
	guard_held hold;
	harness_pg srv;
	json_t *marker;
	PGconn *c;          /* statistics session */
	int64_t data0, cat0;
	double ms0;
	int64_t data_reads, cat_reads; /* over the run's queries */
	double read_ms;
} fdw_shard;

struct harness_pgfdw {
	fdw_shard *s;
	size_t n;
	const char *spec_path;
	const char *user;
	int repointed;
	int planned;         /* the plan below was taken */
	int async_scans;     /* its "Async Foreign Scan" nodes */
	char plan[8192];     /* EXPLAIN of the run's statement (the first query's vector) */
};

/* Options of a postgres_fdw server that name no place: kept as they are. */
static const char *const keep_opts[] = {
	"dbname", "async_capable", "fetch_size", "batch_size", "use_remote_estimate",
	"fdw_startup_cost", "fdw_tuple_cost", "extensions", "updatable", "truncatable",
	"keep_connections", "parallel_commit", "application_name", "connect_timeout",
	"options", "client_encoding", "sslmode", "gssencmode", "target_session_attrs", NULL};
/* ... that name a place: replaced by the shard's private socket and port. */
static const char *const place_opts[] = {"host", "hostaddr", "port", "service", "passfile",
					 "requirepeer", NULL};

/* snprintf for messages and names: what does not fit is cut, never overrun. */
__attribute__((format(printf, 3, 4))) static void sayf(char *out, size_t cap, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(out, cap, f, ap);
	va_end(ap);
}

/* Copy an option's value; -1 when it does not fit (then it is refused, never cut). */
static int copy_value(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		return -1;
	memcpy(dst, src, n + 1);
	return 0;
}

static int in_list(const char *const *l, const char *s)
{
	for (; *l; l++)
		if (!strcmp(*l, s))
			return 1;
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

int harness_pgfdw_prepare(struct ledger *l, guard_prodset *prod, const json_t *pgspec,
			  const char *spec_path, harness_pgfdw **out, cs_err *e)
{
	const json_t *shards = json_object_get(pgspec, "shards"), *v;
	const char *sb = json_string_value(json_object_get(pgspec, "shared_buffers"));
	const char *name;
	harness_pgfdw *f;
	size_t i = 0;
	int rc;

	*out = NULL;
	if (!json_is_object(shards))
		return 0;
	if (json_object_size(shards) > FDW_SHARDS_MAX)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.postgres.shards: more than %d shards",
				  spec_path, FDW_SHARDS_MAX);
	f = calloc(1, sizeof(*f));
	if (!f || !(f->s = calloc(json_object_size(shards) ? json_object_size(shards) : 1,
				  sizeof(*f->s)))) {
		free(f);
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	}
	f->spec_path = spec_path;
	f->user = json_string_value(json_object_get(pgspec, "user"));
	*out = f;
	json_object_foreach((json_t *) shards, name, v) {
		fdw_shard *s = &f->s[i];
		const char *ssb = json_string_value(json_object_get(v, "shared_buffers"));
		int port = (int) json_integer_value(json_object_get(v, "port"));
		char why[PATH_MAX + 256], role[128];

		guard_held_init(&s->hold);
		f->n = ++i;
		sayf(s->name, sizeof(s->name), "%s", name);
		s->index = json_string_value(json_object_get(v, "index"));
		sayf(role, sizeof(role), "postgres.shards.%s.port", name);
		/* The shard's clone: held once, not production by identity, this study's cluster clone. */
		if ((rc = guard_existing(l, prod, s->index, AT_FDCWD, "run", "shard index", &s->hold,
					 e)) ||
		    (rc = guard_clone(l, ledger_dir(l), guard_held_via(&s->hold), "run", 0, &s->marker,
				      e)))
			return rc;
		if (!json_is_string(json_object_get(s->marker, "target")) ||
		    strcmp(json_string_value(json_object_get(s->marker, "target")), "postgres"))
			return guard_refuse(l, "clone", "run", s->index, e,
					    "$.postgres.shards.%s.index %s: its clone marker is not a "
					    "cluster's (clone the stopped shard's data directory with "
					    "coldstudy clone)",
					    name, s->index);
		if ((rc = guard_port(l, prod, port, "run", role, e)))
			return rc;
		if ((rc = harness_pg_init(&s->srv, &s->hold, port, ssb ? ssb : sb, e)))
			return rc;
		rc = harness_pg_conf(&s->srv, why, sizeof(why), e);
		if (rc == 1)
			return guard_refuse(l, "production", "run", s->index, e, "%s", why);
		if (rc)
			return rc;
		{
			/* Its private socket directory, which the coordinator will be pointed at. */
			guard_held sh;

			if ((rc = guard_existing(l, prod, s->srv.sockdir, AT_FDCWD, "run",
						 "shard socket directory", &sh, e)))
				return rc;
			guard_held_close(&sh);
		}
	}
	return 0;
}

int harness_pgfdw_stop(harness_pgfdw *f, cs_err *e)
{
	int rc = 0;

	for (size_t i = 0; f && i < f->n; i++) {
		int r;

		PQfinish(f->s[i].c);
		f->s[i].c = NULL;
		r = harness_pg_stop(&f->s[i].srv, e);
		if (r && !rc)
			rc = r;
	}
	return rc;
}

int harness_pgfdw_evict(harness_pgfdw *f, struct ledger *l, cs_err *e)
{
	for (size_t i = 0; f && i < f->n; i++) {
		fdw_shard *s = &f->s[i];
		const char *via = guard_held_via(&s->hold);
		char **names = NULL, **paths = NULL;
		size_t n = 0;
		double res = 0;
		int rc = guard_dir_files(via, &names, &n, e);

		if (rc)
			return rc;
		if (!(paths = calloc(n ? n : 1, sizeof(*paths))))
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		for (size_t j = 0; !rc && j < n; j++) {
			size_t len = strlen(via) + strlen(names[j]) + 2;
			int r;

			if (!(paths[j] = malloc(len))) {
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
				break;
			}
			snprintf(paths[j], len, "%s/%s", via, names[j]);
			if ((r = cv_cache_evict(paths[j])))
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s/%s: eviction failed: %s",
						s->hold.shown, names[j], strerror(-r));
		}
		/* one proof a server: every file of this shard resident 0.0 */
		if (!rc)
			rc = guard_cold(l, paths, n, "run", &res, e);
		for (size_t j = 0; paths && j < n; j++)
			free(paths[j]);
		free(paths);
		guard_dir_files_free(names, n);
		if (rc)
			return rc;
	}
	return 0;
}

int harness_pgfdw_start(harness_pgfdw *f, cs_err *e)
{
	for (size_t i = 0; f && i < f->n; i++) {
		int rc = harness_pg_start(&f->s[i].srv, e);

		if (rc)
			return rc;
	}
	return 0;
}

/* One statement on a blocking session; 0, or -1 with why. */
static int exec1(PGconn *c, const char *sql, PGresult **res, char *why, size_t cap)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType st = PQresultStatus(r);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		if (why)
			sayf(why, cap, "\"%.200s\": %s", sql, PQresultErrorMessage(r));
		PQclear(r);
		return -1;
	}
	if (res)
		*res = r;
	else
		PQclear(r);
	return 0;
}

/* The shard named name, or NULL. */
static fdw_shard *shard_of(harness_pgfdw *f, const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->s[i].name, name))
			return &f->s[i];
	return NULL;
}

/*
 * Parse one "key=value" of a text[] of options (PostgreSQL's array output,
 * each element quoted when it holds a comma, quote or space) into key and
 * value; returns the rest, or NULL at the end.
 */
static const char *next_opt(const char *p, char *key, size_t kcap, char *val, size_t vcap)
{
	char item[1024];
	size_t n = 0;
	const char *eq;

	while (*p == '{' || *p == ',')
		p++;
	if (!*p || *p == '}')
		return NULL;
	if (*p == '"') {
		for (p++; *p && *p != '"'; p++) {
			if (*p == '\\' && p[1])
				p++;
			if (n + 1 < sizeof(item))
				item[n++] = *p;
		}
		if (*p == '"')
			p++;
	} else {
		for (; *p && *p != ',' && *p != '}'; p++)
			if (n + 1 < sizeof(item))
				item[n++] = *p;
	}
	item[n] = '\0';
	eq = strchr(item, '=');
	sayf(key, kcap, "%.*s", eq ? (int) (eq - item) : (int) n, item);
	sayf(val, vcap, "%s", eq ? eq + 1 : "");
	return p;
}

/*
 * Every foreign server of the coordinator checked: postgres_fdw's, named by
 * the spec, no option outside the two lists. repointed: each server's
 * place must be its shard's socket directory and port, nothing else.
 * 0, 1 with why (refuse), or -1 with why (a failed statement).
 */
static int check_servers(harness_pgfdw *f, PGconn *c, int repointed, char *why, size_t cap)
{
	PGresult *r = NULL;
	int rc = 0, nt;

	if (exec1(c,
		  "SELECT s.srvname, w.fdwname, coalesce(s.srvoptions, '{}')::text "
		  "FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw "
		  "ORDER BY 1",
		  &r, why, cap))
		return -1;
	nt = PQntuples(r);
	for (int i = 0; i < nt && !rc; i++) {
		const char *name = PQgetvalue(r, i, 0), *fdw = PQgetvalue(r, i, 1);
		const char *p = PQgetvalue(r, i, 2);
		fdw_shard *s = shard_of(f, name);
		char key[128], val[1024], host[512] = "", port[32] = "";
		int other_place = 0;

		if (strcmp(fdw, "postgres_fdw")) {
			sayf(why, cap,
				 "the coordinator's foreign server %s uses the wrapper %s; a sharded run "
				 "reaches its shards through postgres_fdw only",
				 name, fdw);
			rc = 1;
			break;
		}
		while ((p = next_opt(p, key, sizeof(key), val, sizeof(val)))) {
			if ((!strcmp(key, "host") && copy_value(host, sizeof(host), val)) ||
			    (!strcmp(key, "port") && copy_value(port, sizeof(port), val)) ||
			    (!strcmp(key, "dbname") && s &&
			     copy_value(s->dbname, sizeof(s->dbname), val))) {
				sayf(why, cap,
				     "the coordinator's foreign server %s has a %s longer than a sharded "
				     "run reads (refused, fail closed)",
				     name, key);
				rc = 1;
				break;
			}
			if (!strcmp(key, "host") || !strcmp(key, "port") || !strcmp(key, "dbname"))
				continue;
			if (in_list(place_opts, key))
				other_place = 1;
			else if (!in_list(keep_opts, key)) {
				sayf(why, cap,
					 "the coordinator's foreign server %s has the option %s, which a "
					 "sharded run does not know to name no place (refused, fail closed)",
					 name, key);
				rc = 1;
				break;
			}
		}
		if (rc)
			break;
		if (!s) {
			sayf(why, cap,
				 "the coordinator's foreign server %s (host %s, port %s) is not one of "
				 "%s's $.postgres.shards: a query could reach it, and it may be "
				 "production",
				 name, host[0] ? host : "default", port[0] ? port : "default",
				 f->spec_path);
			rc = 1;
			break;
		}
		if (!repointed && !s->from[0]) {
			/* the first look, before any repointing: where the coordinator pointed */
			sayf(s->from, sizeof(s->from), "host %s, port %s", host[0] ? host : "default",
				 port[0] ? port : "default");
		} else {
			char want[16];

			sayf(want, sizeof(want), "%d", s->srv.port);
			if (other_place || strcmp(host, s->srv.sockdir) || strcmp(port, want)) {
				sayf(why, cap,
					 "the coordinator's foreign server %s points at host %s, port %s "
					 "after repointing, not at its shard's private server (%s, %d)",
					 name, host, port, s->srv.sockdir, s->srv.port);
				rc = 1;
			}
		}
	}
	PQclear(r);
	return rc;
}

/* Whether the coordinator's database has dblink (which connects wherever its SQL says). */
static int has_dblink(PGconn *c, char *why, size_t cap)
{
	PGresult *r = NULL;
	int has;

	if (exec1(c, "SELECT count(*) FROM pg_extension WHERE extname = 'dblink'", &r, why, cap))
		return -1;
	has = strcmp(PQgetvalue(r, 0, 0), "0") != 0;
	PQclear(r);
	if (has)
		sayf(why, cap,
			 "the coordinator's database has dblink, which connects wherever a "
			 "statement says: a sharded run reaches its shards through postgres_fdw only");
	return has;
}

int harness_pgfdw_repoint(harness_pgfdw *f, struct ledger *l, const harness_pg *coord,
			  const char *db, const char *user, cs_err *e)
{
	char why[2048] = "";
	PGconn *c = NULL;
	int rc;

	if (!f)
		return 0;
	if ((rc = harness_pg_connect(coord, db, user, &c, e)))
		return rc;
	for (size_t i = 0; i < f->n; i++)
		f->s[i].dbname[0] = '\0';
	rc = has_dblink(c, why, sizeof(why));
	if (!rc)
		rc = check_servers(f, c, 0, why, sizeof(why));
	for (size_t i = 0; !rc && i < f->n; i++) {
		fdw_shard *s = &f->s[i];
		PGresult *r = NULL;
		char *id, *host, *port, sql[2048], num[16];
		/* every shard the spec names is a server of the coordinator */
		if (exec1(c, "SELECT srvname FROM pg_foreign_server", &r, why, sizeof(why))) {
			rc = -1;
			break;
		}
		{
			int found = 0;

			for (int j = 0; j < PQntuples(r); j++)
				found |= !strcmp(PQgetvalue(r, j, 0), s->name);
			PQclear(r);
			if (!found) {
				PQfinish(c);
				return cs_err_set(e, CS_EXIT_BADINPUT,
						  "%s: $.postgres.shards.%s: the coordinator has no foreign "
						  "server of that name",
						  f->spec_path, s->name);
			}
		}
		if (!s->dbname[0])
			sayf(s->dbname, sizeof(s->dbname), "%s", "postgres");
		if (!harness_pg_name_ok(s->dbname)) {
			PQfinish(c);
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "the coordinator's foreign server %s names the database \"%s\" "
					  "(a name without quotes, '=' or whitespace is expected)",
					  s->name, s->dbname);
		}
		sayf(num, sizeof(num), "%d", s->srv.port);
		id = PQescapeIdentifier(c, s->name, strlen(s->name));
		host = PQescapeLiteral(c, s->srv.sockdir, strlen(s->srv.sockdir));
		port = PQescapeLiteral(c, num, strlen(num));
		if (!id || !host || !port) {
			PQfreemem(id);
			PQfreemem(host);
			PQfreemem(port);
			rc = -1;
			sayf(why, sizeof(why), "cannot quote: %s", PQerrorMessage(c));
			break;
		}
		/* Drop every place option the server has, then set the shard's two. */
		{
			char *lit = PQescapeLiteral(c, s->name, strlen(s->name));

			if (!lit) {
				rc = -1;
			} else {
				if (snprintf(sql, sizeof(sql),
					 "DO $$DECLARE o text; BEGIN FOR o IN SELECT split_part(x, '=', 1) "
					 "FROM pg_foreign_server, unnest(srvoptions) x WHERE srvname = %s "
					 "AND split_part(x, '=', 1) = ANY (ARRAY['host','hostaddr','port',"
					 "'service','passfile','requirepeer']) LOOP EXECUTE format('ALTER "
					 "SERVER %%I OPTIONS (DROP %%I)', %s, o); END LOOP; END$$",
					 lit, lit) >= (int) sizeof(sql)) {
					sayf(why, sizeof(why), "server %s: the statement does not fit",
					     s->name);
					rc = -1;
				} else {
					rc = exec1(c, sql, NULL, why, sizeof(why));
				}
				PQfreemem(lit);
			}
		}
		if (!rc) {
			if (snprintf(sql, sizeof(sql), "ALTER SERVER %s OPTIONS (ADD host %s, ADD port %s)",
				     id, host, port) >= (int) sizeof(sql)) {
				sayf(why, sizeof(why), "server %s: the statement does not fit", s->name);
				rc = -1;
			} else {
				rc = exec1(c, sql, NULL, why, sizeof(why));
			}
		}
		PQfreemem(id);
		PQfreemem(host);
		PQfreemem(port);
	}
	/* read back: every server is a shard's, at its private socket and port, nothing else */
	if (!rc)
		rc = check_servers(f, c, 1, why, sizeof(why));
	PQfinish(c);
	if (rc == 1)
		return guard_refuse(l, "production", "run", coord->pgdata->shown, e, "%s",
				    why);
	if (rc)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: the coordinator's foreign servers: %s",
				  f->spec_path, why);
	f->repointed = 1;
	return 0;
}

/* The harness's own session on each shard (its private server, checked as ours). */
static int shard_sessions(harness_pgfdw *f, cs_err *e)
{
	for (size_t i = 0; i < f->n; i++) {
		fdw_shard *s = &f->s[i];
		int rc;

		if (s->c)
			continue;
		if ((rc = harness_pg_connect(&s->srv, s->dbname[0] ? s->dbname : "postgres", f->user,
					     &s->c, e)))
			return rc;
	}
	return 0;
}

/* Close the coordinator's remote sessions and wait until no shard has another backend. */
static int disconnect_wait(harness_pgfdw *f, PGconn *coord, cs_err *e)
{
	char why[1024];

	PQsetnonblocking(coord, 0);
	if (exec1(coord, "SELECT postgres_fdw_disconnect_all()", NULL, why, sizeof(why))) {
		PQsetnonblocking(coord, 1);
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: the coordinator: %s", f->spec_path, why);
	}
	PQsetnonblocking(coord, 1);
	for (size_t i = 0; i < f->n; i++) {
		int gone = 0;

		for (int t = 0; t < FDW_WAIT_S * 200 && !gone; t++) {
			PGresult *r = NULL;

			if (exec1(f->s[i].c,
				  "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client "
				  "backend' AND pid <> pg_backend_pid()",
				  &r, why, sizeof(why)))
				return cs_err_set(e, CS_EXIT_INTERNAL, "shard %s: %s", f->s[i].name, why);
			gone = !strcmp(PQgetvalue(r, 0, 0), "0");
			PQclear(r);
			if (!gone)
				sleep_ms(5);
		}
		if (!gone)
			return cs_err_set(e, CS_EXIT_INTERNAL,
					  "shard %s: the coordinator's sessions did not end in %d s",
					  f->s[i].name, FDW_WAIT_S);
	}
	return 0;
}

/* One shard's blocks read (user relations, catalogs) and read time so far. */
static int shard_counts(fdw_shard *s, int64_t *data, int64_t *cat, double *ms, cs_err *e)
{
	char why[1024];
	PGresult *r = NULL;

	/*
	 * Read twice: this session's own catalog reads of the first reading are
	 * flushed by the second's pg_stat_force_next_flush and counted there.
	 */
	for (int pass = 0; pass < 2; pass++) {
		if (exec1(s->c, "SELECT pg_stat_force_next_flush()", NULL, why, sizeof(why)) ||
		    exec1(s->c,
			  "SELECT coalesce(sum(CASE WHEN schemaname IN ('pg_catalog', "
			  "'information_schema', 'pg_toast') THEN 0 ELSE b END), 0)::bigint, "
			  "coalesce(sum(CASE WHEN schemaname IN ('pg_catalog', 'information_schema', "
			  "'pg_toast') THEN b ELSE 0 END), 0)::bigint, (SELECT coalesce(sum("
			  "blk_read_time), 0) FROM pg_stat_database) FROM (SELECT schemaname, "
			  "coalesce(heap_blks_read, 0) + coalesce(idx_blks_read, 0) + "
			  "coalesce(toast_blks_read, 0) + coalesce(tidx_blks_read, 0) AS b FROM "
			  "pg_statio_all_tables) t",
			  &r, why, sizeof(why)))
			return cs_err_set(e, CS_EXIT_INTERNAL, "shard %s: %s", s->name, why);
		*data = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
		*cat = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
		*ms = strtod(PQgetvalue(r, 0, 2), NULL);
		PQclear(r);
	}
	return 0;
}

/* The statement's plan (EXPLAIN, no ANALYZE: it reaches no shard), once a run. */
static int take_plan(harness_pgfdw *f, PGconn *coord, const char *sql, const char *vtext,
		     cs_err *e)
{
	size_t len = strlen(sql), at = 0;
	char *ex = malloc(len + 16);
	PGresult *r;
	int rc = 0;

	if (!ex)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	memcpy(ex, "EXPLAIN ", 8);
	memcpy(ex + 8, sql, len + 1);
	r = PQexecParams(coord, ex, 1, NULL, &vtext, NULL, NULL, 0);
	free(ex);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: $.postgres.sql: EXPLAIN: %s", f->spec_path,
				PQresultErrorMessage(r));
		PQclear(r);
		return rc;
	}
	f->plan[0] = '\0';
	f->async_scans = 0;
	for (int i = 0; i < PQntuples(r); i++) {
		const char *line = PQgetvalue(r, i, 0);

		f->async_scans += strstr(line, "Async Foreign Scan") != NULL;
		if (at < sizeof(f->plan))
			at += (size_t) snprintf(f->plan + at, sizeof(f->plan) - at, "%s%s", i ? "\n" : "",
						line);
	}
	PQclear(r);
	f->planned = 1;
	return 0;
}

/*
 * The statement planned on every shard, nothing executed: in one transaction
 * rolled back, the coordinator's servers use_remote_estimate 'true' and an
 * EXPLAIN of the statement, so each shard plans its part (postgres_fdw's
 * remote EXPLAIN) and reads its catalogs and relation caches here, in setup,
 * as the single-server run's plan-only EXPLAIN does. 0 or -1 with why.
 */
static int remote_plan(PGconn *coord, const char *sql, const char *vtext, char *why, size_t cap)
{
	size_t len = strlen(sql);
	char *ex;
	PGresult *r;
	int rc;

	if (exec1(coord, "BEGIN", NULL, why, cap))
		return -1;
	rc = exec1(coord,
		   "DO $$DECLARE s record; BEGIN FOR s IN SELECT srvname, coalesce(srvoptions, "
		   "'{}') AS o FROM pg_foreign_server LOOP EXECUTE format('ALTER SERVER %I OPTIONS "
		   "(%s use_remote_estimate %L)', s.srvname, CASE WHEN EXISTS (SELECT 1 FROM "
		   "unnest(s.o) x WHERE x LIKE 'use\\_remote\\_estimate=%') THEN 'SET' ELSE 'ADD' "
		   "END, 'true'); END LOOP; END$$",
		   NULL, why, cap);
	if (!rc && !(ex = malloc(len + 16))) {
		sayf(why, cap, "out of memory");
		rc = -1;
	} else if (!rc) {
		memcpy(ex, "EXPLAIN ", 8);
		memcpy(ex + 8, sql, len + 1);
		r = PQexecParams(coord, ex, 1, NULL, &vtext, NULL, NULL, 0);
		free(ex);
		if (PQresultStatus(r) != PGRES_TUPLES_OK) {
			sayf(why, cap, "EXPLAIN with remote estimates: %s", PQresultErrorMessage(r));
			rc = -1;
		}
		PQclear(r);
	}
	/* the servers' options as they were, whatever happened */
	if (exec1(coord, "ROLLBACK", NULL, rc ? NULL : why, rc ? 0 : cap) && !rc)
		rc = -1;
	return rc;
}

int harness_pgfdw_before(harness_pgfdw *f, PGconn *coord, const char *sql, const char *vtext,
			 cs_err *e)
{
	char why[1024];
	PGresult *r = NULL;
	int rc;

	if (!f)
		return 0;
	if ((rc = shard_sessions(f, e)) || (rc = disconnect_wait(f, coord, e)))
		return rc;
	PQsetnonblocking(coord, 0);
	if (!f->planned)
		rc = take_plan(f, coord, sql, vtext, e);
	if (!rc && remote_plan(coord, sql, vtext, why, sizeof(why)))
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: planning on the shards: %s", f->spec_path,
				why);
	PQsetnonblocking(coord, 1);
	/* ... and those sessions closed, so their reads are flushed before the counts */
	if (rc || (rc = disconnect_wait(f, coord, e)))
		return rc;
	/* Open the remote sessions again: catalogs and relation caches, no data read. */
	PQsetnonblocking(coord, 0);
	rc = exec1(coord,
		   "SELECT format('SELECT 1 FROM %I.%I LIMIT 0', n.nspname, c.relname) FROM "
		   "pg_foreign_table t JOIN pg_class c ON c.oid = t.ftrelid JOIN pg_namespace n ON "
		   "n.oid = c.relnamespace ORDER BY 1",
		   &r, why, sizeof(why));
	for (int i = 0; !rc && i < PQntuples(r); i++)
		rc = exec1(coord, PQgetvalue(r, i, 0), NULL, why, sizeof(why));
	PQclear(r);
	PQsetnonblocking(coord, 1);
	if (rc)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: opening the shards' sessions: %s",
				  f->spec_path, why);
	for (size_t i = 0; i < f->n; i++)
		if ((rc = shard_counts(&f->s[i], &f->s[i].data0, &f->s[i].cat0, &f->s[i].ms0, e)))
			return rc;
	return 0;
}

int harness_pgfdw_after(harness_pgfdw *f, PGconn *coord, int64_t *data, double *ms, cs_err *e)
{
	int rc;

	*data = 0;
	*ms = 0;
	if (!f)
		return 0;
	if ((rc = disconnect_wait(f, coord, e)))
		return rc;
	for (size_t i = 0; i < f->n; i++) {
		fdw_shard *s = &f->s[i];
		int64_t d, c;
		double t;

		if ((rc = shard_counts(s, &d, &c, &t, e)))
			return rc;
		s->data_reads += d - s->data0;
		s->cat_reads += c - s->cat0;
		s->read_ms += t - s->ms0;
		*data += d - s->data0;
		*ms += t - s->ms0;
	}
	return 0;
}

json_t *harness_pgfdw_record(const harness_pgfdw *f, json_t **plan)
{
	json_t *a;

	*plan = NULL;
	if (!f)
		return NULL;
	*plan = json_pack("{s:I, s:s}", "async_foreign_scans", (json_int_t) f->async_scans, "text",
			  f->plan);
	a = json_array();
	for (size_t i = 0; a && i < f->n; i++) {
		const fdw_shard *s = &f->s[i];

		json_array_append_new(
			a, json_pack("{s:s, s:s, s:I, s:s, s:s, s:{s:O*, s:O*}, s:I, s:I, s:f}", "server",
				     s->name, "index", s->index, "port", (json_int_t) s->srv.port,
				     "database", s->dbname, "repointed_from", s->from, "clone",
				     "method", json_object_get(s->marker, "method"), "source_sha256",
				     json_object_get(s->marker, "source_sha256"), "data_blocks_read",
				     (json_int_t) s->data_reads, "catalog_blocks_read",
				     (json_int_t) s->cat_reads, "read_ms", s->read_ms));
	}
	return a;
}

/*
 * All in one cgroup: the shards' clones and the coordinator's lie on one
 * disk here, and one cap on one disk is one volume's budget; a cgroup each
 * would give every server a cap of its own on that same disk (N volumes'
 * worth from one).
 */
void harness_pgfdw_throttle(harness_pgfdw *f, const char *dir)
{
	for (size_t i = 0; f && i < f->n; i++)
		snprintf(f->s[i].srv.thrdir, sizeof(f->s[i].srv.thrdir), "%s", dir ? dir : "");
}

void harness_pgfdw_free(harness_pgfdw *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		PQfinish(f->s[i].c);
		harness_pg_fini(&f->s[i].srv);
		guard_held_close(&f->s[i].hold);
		json_decref(f->s[i].marker);
	}
	free(f->s);
	free(f);
}
