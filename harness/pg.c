/*
 * pg.c - a private PostgreSQL server on a cloned cluster: where the
 * binaries are, start, stop, and the one kind of connection a run makes.
 *
 * The harness never connects to a server it did not start. A run's server
 *   - runs on the clone's data directory, entered through the held
 *     descriptor (fchdir, then "-D ."), as the directory's owner (the
 *     server refuses root): the child drops to that uid and gid;
 *   - listens on a unix socket in a private directory made for this run
 *     (0700, the owner's) and on no TCP address (listen_addresses='');
 *   - takes its client authentication from a private pg_hba.conf in that
 *     directory ("local all all trust": the socket is reachable by root and
 *     the owner only), so a cluster cloned with peer or password
 *     authentication still admits the harness;
 *   - has archiving, autovacuum and SSL off (a clone must not push WAL to
 *     production's archive, background reads would mix with the measured
 *     ones), track_io_timing on, and the run's shared_buffers;
 *   - is stopped with a fast shutdown (SIGINT) at the end, and receives
 *     SIGINT too if the harness dies (PR_SET_PDEATHSIG).
 * Every connection is checked to reach that server: its data_directory is
 * the held directory (device and inode) and its socket directory is the
 * private one.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled.
 */
#include "harness.h"
#include "harness_int.h"

#include "guard.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define PG_START_S 60 /* the longest a server may take to accept connections */
#define PG_STOP_S 60  /* ... and to shut down after SIGINT */

/* snprintf for paths: a name that does not fit is cut (and then not found), never overrun. */
__attribute__((format(printf, 3, 4))) static void pathf(char *out, size_t cap, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(out, cap, f, ap);
	va_end(ap);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

int harness_pg_bindir(char *out, size_t cap, cs_err *e)
{
	const char *env = getenv("COLDSTUDY_PG_BINDIR");
	char line[PATH_MAX] = "", exe[PATH_MAX + 16];
	FILE *p;

	if (env && *env) {
		pathf(out, cap, "%s", env);
	} else {
		/* pg_config says where this machine's server binaries are; Debian's default else. */
		p = popen("pg_config --bindir 2>/dev/null", "r");
		if (p) {
			if (!fgets(line, sizeof(line), p))
				line[0] = '\0';
			pclose(p);
		}
		line[strcspn(line, "\r\n")] = '\0';
		pathf(out, cap, "%s", line);
		pathf(exe, sizeof(exe), "%s/postgres", out);
		if (!line[0] || access(exe, X_OK) < 0)
			pathf(out, cap, "%s", "/usr/lib/postgresql/15/bin");
	}
	pathf(exe, sizeof(exe), "%s/postgres", out);
	if (access(exe, X_OK) < 0)
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: no PostgreSQL server binary (install postgresql, or set "
				  "COLDSTUDY_PG_BINDIR)",
				  exe);
	return 0;
}

/* Write text to dir/name as a new file owned by uid/gid. */
static int write_private(const char *dir, const char *name, const char *text, uid_t uid,
			 gid_t gid, char *path, size_t cap, cs_err *e)
{
	size_t len = strlen(text);
	int fd;

	pathf(path, cap, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || fchown(fd, uid, gid) < 0 || write(fd, text, len) != (ssize_t) len) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot write: %s", path, strerror(err));
	}
	close(fd);
	return 0;
}

int harness_pg_init(harness_pg *s, const guard_held *pgdata, int port, const char *shared_buffers,
		    cs_err *e)
{
	struct passwd *pw;
	char tmpl[] = "/tmp/coldstudy-pg-XXXXXX", hba[PATH_MAX + 32];
	int rc;

	memset(s, 0, sizeof(*s));
	s->pgdata = pgdata;
	s->port = port;
	pathf(s->shared_buffers, sizeof(s->shared_buffers), "%s",
		 shared_buffers ? shared_buffers : "128MB");
	rc = harness_pg_bindir(s->bindir, sizeof(s->bindir), e);
	if (rc)
		return rc;
	if (!S_ISDIR(pgdata->st.st_mode))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: not a data directory", pgdata->shown);
	s->uid = pgdata->st.st_uid;
	s->gid = pgdata->st.st_gid;
	if (s->uid == 0)
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: owned by root; PostgreSQL runs as the data directory's owner and "
				  "refuses root (clone the cluster with coldstudy clone, which keeps its owner)",
				  pgdata->shown);
	pw = getpwuid(s->uid);
	pathf(s->user, sizeof(s->user), "%s", pw ? pw->pw_name : "postgres");
	if (!mkdtemp(tmpl))
		return cs_err_set(e, CS_EXIT_INTERNAL, "cannot make a private socket directory: %s",
				  strerror(errno));
	pathf(s->sockdir, sizeof(s->sockdir), "%s", tmpl);
	if (chown(s->sockdir, s->uid, s->gid) < 0 || chmod(s->sockdir, 0700) < 0) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", s->sockdir, strerror(errno));
		goto fail;
	}
	if ((rc = write_private(s->sockdir, "pg_hba.conf", "local all all trust\n", s->uid, s->gid,
				hba, sizeof(hba), e)) ||
	    (rc = write_private(s->sockdir, "pg_ident.conf", "", s->uid, s->gid, hba, sizeof(hba),
				e)) ||
	    (rc = write_private(s->sockdir, "postgresql.conf", "# coldstudy: settings are on the command line\n",
				s->uid, s->gid, hba, sizeof(hba), e)) ||
	    (rc = write_private(s->sockdir, "server.log", "", s->uid, s->gid, s->log,
				sizeof(s->log), e)))
		goto fail;
	return 0;
fail:
	harness_pg_fini(s);
	return rc;
}

/* The last lines of the server's log, for a message. */
static void log_tail(const harness_pg *s, char *out, size_t cap)
{
	char buf[2048];
	ssize_t n = 0;
	int fd = open(s->log, O_RDONLY | O_CLOEXEC);

	out[0] = '\0';
	if (fd < 0)
		return;
	{
		off_t end = lseek(fd, 0, SEEK_END);

		lseek(fd, end > (off_t) sizeof(buf) - 1 ? end - (off_t) sizeof(buf) + 1 : 0, SEEK_SET);
		n = read(fd, buf, sizeof(buf) - 1);
	}
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = ' ';
	pathf(out, cap, "%s", buf + (strlen(buf) > 300 ? strlen(buf) - 300 : 0));
}

/* conninfo for the private server (socket directory and port only). */
static void conninfo(const harness_pg *s, const char *db, const char *user, char *out, size_t cap)
{
	pathf(out, cap, "host='%s' port=%d dbname='%s' user='%s' connect_timeout=10", s->sockdir,
		 s->port, db ? db : "postgres", user ? user : s->user);
}

int harness_pg_start(harness_pg *s, cs_err *e)
{
	char port[16], sb[64], hba[PATH_MAX + 16], ident[PATH_MAX + 16], conf[PATH_MAX + 32];
	char exe[PATH_MAX + 16], ci[PATH_MAX + 256], tail[400], own_conf[PATH_MAX + 32];
	char *argv[64];
	struct stat cst;
	size_t a = 0;
	pid_t parent = getpid(), pid;
	int logfd, status;

	if (s->pid)
		return 0;
	pathf(exe, sizeof(exe), "%s/postgres", s->bindir);
	pathf(port, sizeof(port), "%d", s->port);
	pathf(sb, sizeof(sb), "shared_buffers=%s", s->shared_buffers);
	pathf(hba, sizeof(hba), "hba_file=%s/pg_hba.conf", s->sockdir);
	pathf(ident, sizeof(ident), "ident_file=%s/pg_ident.conf", s->sockdir);
	pathf(own_conf, sizeof(own_conf), "%s/postgresql.conf", guard_held_via(s->pgdata));
	/* A cluster whose configuration lives elsewhere (Debian's /etc) gets an empty one. */
	pathf(conf, sizeof(conf), "config_file=%s/postgresql.conf", s->sockdir);
	argv[a++] = "postgres";
	argv[a++] = "-D";
	argv[a++] = ".";
	argv[a++] = "-k";
	argv[a++] = s->sockdir;
	argv[a++] = "-p";
	argv[a++] = port;
	if (stat(own_conf, &cst) < 0) {
		argv[a++] = "-c";
		argv[a++] = conf;
	}
	{
		static char *fixed[] = {"listen_addresses=", "unix_socket_permissions=0700",
					"archive_mode=off", "autovacuum=off", "ssl=off",
					"track_io_timing=on", "logging_collector=off",
					"log_destination=stderr", "external_pid_file=",
					"shared_preload_libraries=", NULL};

		for (size_t i = 0; fixed[i]; i++) {
			argv[a++] = "-c";
			argv[a++] = fixed[i];
		}
	}
	argv[a++] = "-c";
	argv[a++] = sb;
	argv[a++] = "-c";
	argv[a++] = hba;
	argv[a++] = "-c";
	argv[a++] = ident;
	argv[a] = NULL;
	logfd = open(s->log, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (logfd < 0)
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", s->log, strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(logfd);
		return cs_err_set(e, CS_EXIT_INTERNAL, "cannot start the server: %s", strerror(errno));
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		/* The held data directory, whatever its name says now; then the owner's identity. */
		if (fchdir(s->pgdata->fd) < 0 || setgroups(0, NULL) < 0 ||
		    setresgid(s->gid, s->gid, s->gid) < 0 || setresuid(s->uid, s->uid, s->uid) < 0)
			_exit(126);
		prctl(PR_SET_PDEATHSIG, SIGINT);
		if (getppid() != parent)
			_exit(126);
		setpgid(0, 0); /* the terminal's ^C is the harness's to handle, not the server's */
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(logfd, 1);
		dup2(logfd, 2);
		execv(exe, argv);
		_exit(127);
	}
	close(logfd);
	s->pid = pid;
	conninfo(s, "postgres", NULL, ci, sizeof(ci));
	for (int i = 0; i < PG_START_S * 20; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			s->pid = 0;
			log_tail(s, tail, sizeof(tail));
			return cs_err_set(e, CS_EXIT_INTERNAL,
					  "%s: the server exited at start (status %d): %s",
					  s->pgdata->shown, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
					  tail);
		}
		/* The server answers (even "starting up" means it is ours and alive); wait for OK. */
		if (PQping(ci) == PQPING_OK)
			return 0;
		sleep_ms(50);
	}
	log_tail(s, tail, sizeof(tail));
	harness_pg_stop(s, NULL);
	return cs_err_set(e, CS_EXIT_INTERNAL, "%s: the server did not accept connections in %d s: %s",
			  s->pgdata->shown, PG_START_S, tail);
}

int harness_pg_stop(harness_pg *s, cs_err *e)
{
	int status = 0, sig = SIGINT;

	if (!s->pid)
		return 0;
	kill(s->pid, SIGINT); /* fast shutdown: sessions end, a shutdown checkpoint, exit */
	for (int i = 0;; i++) {
		pid_t r = waitpid(s->pid, &status, WNOHANG);

		if (r == s->pid || (r < 0 && errno == ECHILD))
			break;
		if (i == PG_STOP_S * 100 && sig == SIGINT) {
			sig = SIGQUIT; /* immediate shutdown */
			kill(s->pid, sig);
		} else if (i == PG_STOP_S * 100 + 1000) {
			sig = SIGKILL;
			kill(s->pid, sig);
		}
		sleep_ms(10);
	}
	s->pid = 0;
	if (sig != SIGINT)
		return cs_err_set(e, CS_EXIT_INTERNAL,
				  "%s: the server did not stop within %d s of a fast shutdown",
				  s->pgdata->shown, PG_STOP_S);
	return 0;
}

void harness_pg_fini(harness_pg *s)
{
	char p[PATH_MAX + 32];
	static const char *const names[] = {"pg_hba.conf", "pg_ident.conf", "postgresql.conf",
					    "server.log", NULL};

	harness_pg_stop(s, NULL);
	if (!s->sockdir[0])
		return;
	for (size_t i = 0; names[i]; i++) {
		pathf(p, sizeof(p), "%s/%s", s->sockdir, names[i]);
		unlink(p);
	}
	rmdir(s->sockdir);
	s->sockdir[0] = '\0';
}

/* One value of a one-row query, into out; 0 or -1. */
static int one_value(PGconn *c, const char *sql, char *out, size_t cap)
{
	PGresult *r = PQexec(c, sql);
	int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;

	if (ok)
		pathf(out, cap, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	return ok ? 0 : -1;
}

int harness_pg_connect(const harness_pg *s, const char *db, const char *user, PGconn **out,
		       cs_err *e)
{
	char ci[PATH_MAX + 256], dd[PATH_MAX], sd[PATH_MAX];
	struct stat st;
	PGconn *c;

	*out = NULL;
	if (!s->pid)
		return cs_err_set(e, CS_EXIT_INTERNAL, "no server of this run is running");
	conninfo(s, db, user, ci, sizeof(ci));
	c = PQconnectdb(ci);
	if (PQstatus(c) != CONNECTION_OK) {
		int rc = cs_err_set(e, CS_EXIT_BADINPUT, "cannot connect to the run's server: %s",
				    PQerrorMessage(c));

		PQfinish(c);
		return rc;
	}
	/* The server answering is the one started on the held clone, on the private socket. */
	if (one_value(c, "SELECT current_setting('data_directory')", dd, sizeof(dd)) ||
	    one_value(c, "SELECT current_setting('unix_socket_directories')", sd, sizeof(sd)) ||
	    stat(dd, &st) < 0 || st.st_dev != s->pgdata->st.st_dev ||
	    st.st_ino != s->pgdata->st.st_ino || strcmp(sd, s->sockdir)) {
		PQfinish(c);
		return cs_err_set(e, CS_EXIT_REFUSED,
				  "the server on %s is not the one this run started on %s", s->sockdir,
				  s->pgdata->shown);
	}
	*out = c;
	return 0;
}

int harness_pg_backup_start(const char *pgdata, const struct stat *st, const char *sockdir,
			    int port, PGconn **out, cs_err *e)
{
	char ci[PATH_MAX + 256], dd[PATH_MAX];
	struct passwd *pw = getpwuid(st->st_uid);
	struct stat dst;
	PGresult *r;
	PGconn *c;
	int rc;

	*out = NULL;
	pathf(ci, sizeof(ci), "host='%s' port=%d dbname=postgres user='%s' connect_timeout=10",
		 sockdir, port, pw ? pw->pw_name : "postgres");
	c = PQconnectdb(ci);
	if (PQstatus(c) != CONNECTION_OK) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "%s: cannot connect to the running cluster at %s: %s",
				pgdata, sockdir, PQerrorMessage(c));
		PQfinish(c);
		return rc;
	}
	/* The files copied are that server's own, or the copy would be nobody's backup. */
	if (one_value(c, "SELECT current_setting('data_directory')", dd, sizeof(dd)) ||
	    stat(dd, &dst) < 0 || dst.st_dev != st->st_dev || dst.st_ino != st->st_ino) {
		PQfinish(c);
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: the server at %s port %d does not run on this data directory",
				  pgdata, sockdir, port);
	}
	r = PQexec(c, "SELECT pg_backup_start('coldstudy clone', true)");
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: pg_backup_start failed: %s", pgdata,
				PQresultErrorMessage(r));
		PQclear(r);
		PQfinish(c);
		return rc;
	}
	PQclear(r);
	*out = c;
	return 0;
}

int harness_pg_backup_stop(PGconn *c, char **label, cs_err *e)
{
	PGresult *r;
	int rc = 0;

	if (label)
		*label = NULL;
	/* Not waiting for archiving: the clone's WAL is copied from pg_wal right after. */
	r = PQexec(c, "SELECT labelfile FROM pg_backup_stop(false)");
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "pg_backup_stop failed: %s",
				PQresultErrorMessage(r));
	else if (label && !(*label = strdup(PQgetvalue(r, 0, 0))))
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	PQclear(r);
	PQfinish(c);
	return rc;
}
