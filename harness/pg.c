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
 *   - runs in a memory cgroup of its own (coldstudy-PID, made by init;
 *     the postmaster joins it before exec, its backends follow), whose
 *     peak is the run's mem_peak_bytes; under a run's "throttle" it joins
 *     the throttle's block-throttle cgroup (thrdir, throttle.c) the same
 *     way, so every read of every backend passes the cap;
 *   - is stopped with a fast shutdown (SIGINT) at the end, and receives
 *     SIGINT too if the harness dies (PR_SET_PDEATHSIG); what a killed
 *     run leaves (the cgroup, the socket directory) the next command
 *     removes (harness_pg_leftovers, from live.c's sweep).
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
#include <ctype.h>
#include <dirent.h>
#include <linux/openat2.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
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
	{
		/* scratch like any other: the folder it is made in is never production */
		guard_held th;

		if ((rc = guard_target(NULL, NULL, tmpl, AT_FDCWD, "run",
				       "the private socket directory", &th, e)))
			return rc;
		guard_held_close(&th);
	}
	if (!mkdtemp(tmpl))
		return cs_err_set(e, CS_EXIT_INTERNAL, "cannot make a private socket directory: %s",
				  strerror(errno));
	pathf(s->sockdir, sizeof(s->sockdir), "%s", tmpl);
	/* the server's own memory cgroup: its peak is the server's (a run without one says why) */
	s->cgroup = harness_server_cgroup(s->cgdir, sizeof(s->cgdir));
	if (chown(s->sockdir, s->uid, s->gid) < 0 || chmod(s->sockdir, 0700) < 0) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", s->sockdir, strerror(errno));
		goto fail;
	}
	if ((rc = write_private(s->sockdir, "pg_hba.conf", "local all all trust\n", s->uid, s->gid,
				hba, sizeof(hba), e)) ||
	    (rc = write_private(s->sockdir, "pg_ident.conf", "", s->uid, s->gid, hba, sizeof(hba),
				e)) ||
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

/*
 * The keywords and values of a connection to a unix socket directory: built
 * as arrays for PQconnectdbParams (never pasted into a conninfo string, where
 * a quote in a name would add keywords of its own, and with expand_dbname 0
 * a dbname is a name, never a connection string).
 */
typedef struct pgparams {
	const char *kw[8];
	const char *val[8];
	char port[16];
} pgparams;

static void params_of(pgparams *p, const char *sockdir, int port, const char *db, const char *user)
{
	size_t i = 0;

	pathf(p->port, sizeof(p->port), "%d", port);
	p->kw[i] = "host", p->val[i++] = sockdir;
	p->kw[i] = "port", p->val[i++] = p->port;
	p->kw[i] = "dbname", p->val[i++] = db;
	p->kw[i] = "user", p->val[i++] = user;
	p->kw[i] = "connect_timeout", p->val[i++] = "10";
	/*
	 * no password file, no service file, no environment defaults beyond these;
	 * a path beneath /dev/null can never exist (ENOTDIR), so libpq skips it
	 * quietly, where /dev/null itself drew a warning on every connection
	 */
	p->kw[i] = "passfile", p->val[i++] = "/dev/null/none";
	p->kw[i] = NULL, p->val[i] = NULL;
}

/* The private server's parameters (socket directory and port only). */
static void conn_params(const harness_pg *s, const char *db, const char *user, pgparams *p)
{
	params_of(p, s->sockdir, s->port, db ? db : "postgres", user ? user : s->user);
}

int harness_pg_name_ok(const char *name)
{
	if (!name || !*name)
		return 0;
	for (const unsigned char *c = (const unsigned char *) name; *c; c++)
		if (*c == '\'' || *c == '"' || *c == '=' || *c <= ' ' || *c == 0x7f)
			return 0;
	return 1;
}

/* ---- the clone's own configuration: checked, then handed to the server as a private copy ---- */

#define CONF_DEPTH 8         /* include nesting followed at most */
#define CONF_MAX (1 << 20)   /* the bytes of configuration copied at most */

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/*
 * Open name beneath dirfd only (RESOLVE_BENEATH: no absolute path, no ".."
 * above dirfd, no symlink or magic link leaving it): -errno, -EXDEV when
 * it would leave the clone. Where openat2 is missing every spelling but a
 * plain relative one without ".." is refused.
 */
static int open_beneath(int dirfd, const char *name, int flags)
{
	struct open_how how = {.flags = (uint64_t) (flags | O_CLOEXEC),
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
					  RESOLVE_NO_SYMLINKS};
	int fd = (int) syscall(SYS_openat2, dirfd, name, &how, sizeof(how));

	if (fd >= 0)
		return fd;
	if (errno != ENOSYS)
		return errno == ELOOP ? -EXDEV : -errno;
	if (name[0] == '/' || strstr(name, ".."))
		return -EXDEV;
	fd = openat(dirfd, name, flags | O_CLOEXEC | O_NOFOLLOW);
	return fd >= 0 ? fd : -errno;
}

typedef struct confcheck {
	const harness_pg *s;
	char *out;      /* the checked copy */
	size_t len, cap;
	char *why;      /* the refusal, when the configuration points outside the clone */
	size_t whycap;
	int refused;
} confcheck;

static int conf_put(confcheck *c, const char *p, size_t n)
{
	if (c->len + n + 1 > CONF_MAX)
		return -EFBIG;
	if (c->len + n + 1 > c->cap) {
		size_t cap = c->cap ? c->cap : 4096;
		char *o;

		while (cap < c->len + n + 1)
			cap *= 2;
		if (!(o = realloc(c->out, cap)))
			return -ENOMEM;
		c->out = o;
		c->cap = cap;
	}
	memcpy(c->out + c->len, p, n);
	c->len += n;
	c->out[c->len] = '\0';
	return 0;
}

/* A value of a configuration line: quoted ('' and \' inside) or one bare token. */
static const char *conf_value(const char *p, char *out, size_t cap)
{
	size_t n = 0;

	if (*p == '\'') {
		for (p++; *p && *p != '\n'; p++) {
			if ((*p == '\'' && p[1] == '\'') || (*p == '\\' && p[1])) {
				p++;
			} else if (*p == '\'') {
				p++;
				break;
			}
			if (n + 1 < cap)
				out[n++] = *p;
		}
	} else {
		for (; *p && *p != '\n' && *p != '#' && *p != ' ' && *p != '\t'; p++)
			if (n + 1 < cap)
				out[n++] = *p;
	}
	out[n] = '\0';
	return p;
}

static int conf_file(confcheck *c, int dirfd, const char *name, const char *shown, int depth,
		     int copy, int if_exists);

/*
 * One path a setting names, relative to dirfd (the directory of the file
 * naming it): allowed only beneath the clone. what: "data_directory", ...
 */
static int conf_path_inside(confcheck *c, int dirfd, const char *shown, const char *what,
			    const char *val, int want_self)
{
	int fd = open_beneath(dirfd, val, O_PATH);
	struct stat st;

	if (fd >= 0 && want_self) {
		int same = fstat(fd, &st) == 0 && st.st_dev == c->s->pgdata->st.st_dev &&
			   st.st_ino == c->s->pgdata->st.st_ino;

		close(fd);
		fd = same ? 0 : -EXDEV;
	} else if (fd >= 0) {
		close(fd);
		fd = 0;
	}
	if (fd == -ENOENT && !want_self)
		return 0; /* nothing there inside the clone: nothing outside read */
	if (fd < 0 && !c->refused) {
		c->refused = 1;
		pathf(c->why, c->whycap,
		      "%s: %s '%s' points outside the clone (%s); a clone's configuration must name "
		      "only the clone itself",
		      shown, what, val, fd == -EXDEV ? "not beneath its data directory" : strerror(-fd));
	}
	return 0;
}

/* An include_dir: its *.conf files in name order, each as an include. */
static int conf_dir(confcheck *c, int at, const char *name, const char *shown, int depth,
		    int copy)
{
	int fd = open_beneath(at, name, O_RDONLY | O_DIRECTORY), rc = 0;
	struct dirent **ents = NULL;
	char sub[PATH_MAX];
	DIR *d;
	int n = 0;

	if (fd < 0) {
		if (fd == -ENOENT)
			return 0;
		return conf_path_inside(c, at, shown, "include_dir", name, 0);
	}
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -errno;
	}
	/* scandir needs a path: the entries are read here and sorted by name */
	{
		struct dirent *de;
		size_t cap = 0;

		while ((de = readdir(d))) {
			size_t l = strlen(de->d_name);

			if (de->d_name[0] == '.' || l < 6 || strcmp(de->d_name + l - 5, ".conf"))
				continue;
			if ((size_t) n == cap) {
				struct dirent **m = realloc(ents, (cap = cap ? cap * 2 : 16) * sizeof(*m));

				if (!m) {
					rc = -ENOMEM;
					goto out;
				}
				ents = m;
			}
			if (!(ents[n] = malloc(sizeof(**ents)))) {
				rc = -ENOMEM;
				goto out;
			}
			memcpy(ents[n++], de, sizeof(*de));
		}
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (strcmp(ents[i]->d_name, ents[j]->d_name) > 0) {
				struct dirent *t = ents[i];

				ents[i] = ents[j];
				ents[j] = t;
			}
	for (int i = 0; i < n && !rc && !c->refused; i++) {
		pathf(sub, sizeof(sub), "%s/%s", shown, ents[i]->d_name);
		rc = conf_file(c, dirfd(d), ents[i]->d_name, sub, depth + 1, copy, 0);
	}
out:
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	closedir(d);
	return rc;
}

/*
 * Read one configuration file beneath dirfd and check every setting that
 * names a place: data_directory must be the clone itself; hba_file,
 * ident_file, include files and socket directories must lie beneath it.
 * copy: append its lines (includes inlined, so the copy stands alone) to c.
 */
static int conf_file(confcheck *c, int dirfd, const char *name, const char *shown, int depth,
		     int copy, int if_exists)
{
	char *text = NULL, key[64], val[PATH_MAX], sub[PATH_MAX + 64];
	size_t len = 0, cap = 0;
	int fd, dfd = -1, rc = 0;
	const char *p, *slash;

	if (depth > CONF_DEPTH) {
		c->refused = 1;
		pathf(c->why, c->whycap, "%s: includes nested deeper than %d", shown, CONF_DEPTH);
		return 0;
	}
	fd = open_beneath(dirfd, name, O_RDONLY);
	if (fd < 0) {
		if (fd == -ENOENT && (if_exists || depth == 0))
			return 0;
		return conf_path_inside(c, dirfd, shown, "include", name, 0);
	}
	for (;;) {
		ssize_t r;

		if (len + 4096 + 1 > cap) {
			char *t;

			if (cap >= CONF_MAX) {
				rc = -EFBIG;
				goto out;
			}
			if (!(t = realloc(text, cap = cap ? cap * 2 : 8192))) {
				rc = -ENOMEM;
				goto out;
			}
			text = t;
		}
		r = read(fd, text + len, cap - len - 1);
		if (r < 0) {
			rc = -errno;
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t) r;
	}
	if (!text)
		goto out;
	text[len] = '\0';
	/* includes resolve from the including file's own directory */
	slash = strrchr(name, '/');
	if (slash) {
		char d[PATH_MAX];

		pathf(d, sizeof(d), "%.*s", (int) (slash - name), name);
		dfd = open_beneath(dirfd, d[0] ? d : ".", O_PATH | O_DIRECTORY);
		if (dfd < 0) {
			rc = dfd;
			goto out;
		}
	}
	for (p = text; *p && !c->refused && !rc;) {
		const char *line = p, *eol = strchr(p, '\n'), *q;
		size_t kl = 0;
		int inc = 0;

		if (!eol)
			eol = p + strlen(p);
		for (q = p; *q == ' ' || *q == '\t'; q++)
			;
		while ((isalnum((unsigned char) *q) || *q == '_' || *q == '.' || *q == '-') &&
		       kl + 1 < sizeof(key))
			key[kl++] = (char) tolower((unsigned char) *q++);
		key[kl] = '\0';
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q == '=')
			q++;
		while (*q == ' ' || *q == '\t')
			q++;
		p = *eol ? eol + 1 : eol;
		if (!kl || q > eol)
			goto keep;
		conf_value(q, val, sizeof(val));
		if (!strcmp(key, "include") || !strcmp(key, "include_if_exists")) {
			inc = 1;
			pathf(sub, sizeof(sub), "%s -> %s", shown, val);
			rc = conf_file(c, dfd >= 0 ? dfd : dirfd, val, sub, depth + 1, copy,
				       key[7] == '_');
		} else if (!strcmp(key, "include_dir")) {
			inc = 1;
			pathf(sub, sizeof(sub), "%s -> %s", shown, val);
			rc = conf_dir(c, dfd >= 0 ? dfd : dirfd, val, sub, depth, copy);
		} else if (!strcmp(key, "data_directory") && val[0]) {
			/* relative to where the server starts: the clone */
			rc = conf_path_inside(c, c->s->pgdata->fd, shown, key, val, 1);
		} else if ((!strcmp(key, "hba_file") || !strcmp(key, "ident_file") ||
			    !strcmp(key, "config_file") || !strcmp(key, "external_pid_file")) &&
			   val[0]) {
			rc = conf_path_inside(c, c->s->pgdata->fd, shown, key, val, 0);
		} else if (!strcmp(key, "unix_socket_directories")) {
			/* a comma-separated list; each must lie in the clone */
			char *save = NULL, *tok;

			for (tok = strtok_r(val, ", ", &save); tok && !rc && !c->refused;
			     tok = strtok_r(NULL, ", ", &save))
				rc = conf_path_inside(c, c->s->pgdata->fd, shown, key, tok, 0);
		}
	keep:
		if (copy && !inc && !rc)
			rc = conf_put(c, line, (size_t) (p - line));
		if (copy && !rc && p == eol && *line)
			rc = conf_put(c, "\n", 1);
	}
out:
	if (dfd >= 0)
		close(dfd);
	close(fd);
	free(text);
	return rc;
}

int harness_pg_conf(harness_pg *s, char *why, size_t cap, cs_err *e)
{
	confcheck c = {.s = s, .why = why, .whycap = cap};
	char path[PATH_MAX + 32];
	int rc;

	why[0] = '\0';
	/*
	 * Tablespaces: pg_tblspc's links lead out of the clone by construction,
	 * each to the tablespace's clone its marker names (guard_clone), held
	 * and guarded like the data directory by the run (pgrun.c).
	 */
	pathf(path, sizeof(path), "%s/postgresql.auto.conf", s->pgdata->shown);
	rc = conf_file(&c, s->pgdata->fd, "postgresql.auto.conf", path, 0, 0, 1);
	if (!rc && !c.refused) {
		pathf(path, sizeof(path), "%s/postgresql.conf", s->pgdata->shown);
		static const char head[] = "# coldstudy: the clone's postgresql.conf, checked; "
					   "the command line overrides its places\n";

		rc = conf_put(&c, head, sizeof(head) - 1);
		if (!rc)
			rc = conf_file(&c, s->pgdata->fd, "postgresql.conf", path, 0, 1, 1);
	}
	if (!rc && !c.refused)
		rc = write_private(s->sockdir, "postgresql.conf", c.out, s->uid, s->gid, path,
				   sizeof(path), e) ? -EIO : 0;
	free(c.out);
	if (rc == -EIO)
		return e->code ? e->code : CS_EXIT_INTERNAL;
	if (rc)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: cannot read its configuration: %s",
				  s->pgdata->shown, strerror(-rc));
	return c.refused;
}

int harness_pg_start(harness_pg *s, cs_err *e)
{
	char port[16], sb[64], hba[PATH_MAX + 16], ident[PATH_MAX + 16], conf[PATH_MAX + 32];
	char exe[PATH_MAX + 16], tail[400];
	char *argv[64], **env;
	size_t a = 0;
	pgparams pp;
	pid_t parent = getpid(), pid;
	int logfd, status, cgfd = -1, thrfd = -1;

	if (s->pid)
		return 0;
	pathf(exe, sizeof(exe), "%s/postgres", s->bindir);
	pathf(port, sizeof(port), "%d", s->port);
	pathf(sb, sizeof(sb), "shared_buffers=%s", s->shared_buffers);
	pathf(hba, sizeof(hba), "hba_file=%s/pg_hba.conf", s->sockdir);
	pathf(ident, sizeof(ident), "ident_file=%s/pg_ident.conf", s->sockdir);
	/*
	 * The configuration is the private, checked copy (harness_pg_conf), and the
	 * data directory is named on the command line: a data_directory line of
	 * the clone's own never moves the server elsewhere.
	 */
	pathf(conf, sizeof(conf), "config_file=%s/postgresql.conf", s->sockdir);
	argv[a++] = "postgres";
	argv[a++] = "-D";
	argv[a++] = ".";
	argv[a++] = "-k";
	argv[a++] = s->sockdir;
	argv[a++] = "-p";
	argv[a++] = port;
	argv[a++] = "-c";
	argv[a++] = conf;
	argv[a++] = "-c";
	argv[a++] = "data_directory=.";
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
	/*
	 * The server's environment without PG* variables: a PGHOSTADDR or
	 * PGSERVICE of the harness's would steer the libpq inside the server
	 * (postgres_fdw's connections, pgfdw.c) away from where its options say.
	 */
	{
		extern char **environ;
		size_t ne = 0;

		for (char **v = environ; *v; v++)
			ne++;
		if (!(env = calloc(ne + 1, sizeof(*env))))
			return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		ne = 0;
		for (char **v = environ; *v; v++)
			if (strncmp(*v, "PG", 2))
				env[ne++] = *v;
	}
	logfd = open(s->log, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (logfd < 0) {
		free(env);
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", s->log, strerror(errno));
	}
	if (s->cgdir[0]) {
		char procs[1100];

		pathf(procs, sizeof(procs), "%s/cgroup.procs", s->cgdir);
		cgfd = open(procs, O_WRONLY | O_CLOEXEC);
	}
	if (s->thrdir[0]) {
		char procs[600];

		/* a capped run's server never starts uncapped: no cgroup to join, no server */
		pathf(procs, sizeof(procs), "%s/cgroup.procs", s->thrdir);
		thrfd = open(procs, O_WRONLY | O_CLOEXEC);
		if (thrfd < 0) {
			int err = errno;

			free(env);
			close(logfd);
			if (cgfd >= 0)
				close(cgfd);
			return cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot join the throttle: %s",
					  procs, strerror(err));
		}
	}
	pid = fork();
	if (pid < 0) {
		free(env);
		close(logfd);
		if (cgfd >= 0)
			close(cgfd);
		if (thrfd >= 0)
			close(thrfd);
		return cs_err_set(e, CS_EXIT_INTERNAL, "cannot start the server: %s", strerror(errno));
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		/* Into the server's cgroup before anything forks from it ("0": the writer itself). */
		if (cgfd >= 0 && write(cgfd, "0", 1) != 1)
			_exit(125);
		/* ... and the throttle's (v1 blkio is a hierarchy of its own) */
		if (thrfd >= 0 && write(thrfd, "0", 1) != 1)
			_exit(125);
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
		execve(exe, argv, env);
		_exit(127);
	}
	free(env);
	close(logfd);
	if (cgfd >= 0)
		close(cgfd);
	if (thrfd >= 0)
		close(thrfd);
	s->pid = pid;
	conn_params(s, "postgres", NULL, &pp);
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
		if (PQpingParams(pp.kw, pp.val, 0) == PQPING_OK)
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
	if (s->cgdir[0])
		(void) rmdir(s->cgdir); /* empty once the postmaster and its backends are gone */
	s->cgdir[0] = '\0';
	json_decref(s->cgroup);
	s->cgroup = NULL;
	if (!s->sockdir[0])
		return;
	for (size_t i = 0; names[i]; i++) {
		pathf(p, sizeof(p), "%s/%s", s->sockdir, names[i]);
		unlink(p);
	}
	rmdir(s->sockdir);
	s->sockdir[0] = '\0';
}

/* A dead run's server cgroup: /sys/fs/cgroup/.../coldstudy-PID, PID the run's and gone. */
static int dead_runs_cgroup(const char *cgdir, pid_t owner)
{
	const char *base = strrchr(cgdir, '/');
	char *end;
	long pid;

	if (strncmp(cgdir, "/sys/fs/cgroup/", 15) || strstr(cgdir, "/../") || !base ||
	    strncmp(base + 1, "coldstudy-", 10))
		return 0;
	errno = 0;
	pid = strtol(base + 11, &end, 10);
	if (errno || *end || pid <= 0 || pid != (long) owner)
		return 0;
	return kill((pid_t) pid, 0) < 0 && errno == ESRCH;
}

int harness_pg_leftovers(const char *sockdir, int port, const char *cgdir, pid_t owner)
{
	static const char prefix[] = "/tmp/coldstudy-pg-";
	static const char *const names[] = {"pg_hba.conf", "pg_ident.conf", "postgresql.conf",
					    "server.log", NULL};
	char sock[64], lock[64];
	struct stat st;
	int fd, rc = 0;

	/* 1. the dead run's server: what is still in its cgroup (ours by name) goes */
	if (cgdir && cgdir[0] && dead_runs_cgroup(cgdir, owner)) {
		char procs[1100], line[32];

		pathf(procs, sizeof(procs), "%s/cgroup.procs", cgdir);
		for (int tries = 0; tries < 500; tries++) {
			FILE *f = fopen(procs, "re");
			int any = 0;

			if (!f)
				break;
			while (fgets(line, sizeof(line), f)) {
				long pid = strtol(line, NULL, 10);

				if (pid > 1) {
					any = 1;
					/* it had SIGINT when the run died: a fast shutdown, then no waiting */
					if (tries == 200)
						kill((pid_t) pid, SIGKILL);
				}
			}
			fclose(f);
			if (!any)
				break;
			sleep_ms(10);
		}
		if (rmdir(cgdir) < 0 && errno != ENOENT)
			rc = -errno;
	}
	/* 2. the private socket directory: only what harness_pg_init makes */
	if (!sockdir || strncmp(sockdir, prefix, sizeof(prefix) - 1) ||
	    strlen(sockdir) != sizeof(prefix) - 1 + 6 || strchr(sockdir + sizeof(prefix) - 1, '/'))
		return rc ? rc : -EINVAL;
	fd = open(sockdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? rc : -errno;
	if (fstat(fd, &st) < 0 || (st.st_mode & 07777) != 0700) {
		close(fd);
		return -EPERM;
	}
	for (size_t i = 0; names[i]; i++)
		(void) unlinkat(fd, names[i], 0);
	pathf(sock, sizeof(sock), ".s.PGSQL.%d", port);
	pathf(lock, sizeof(lock), ".s.PGSQL.%d.lock", port);
	(void) unlinkat(fd, sock, 0);
	(void) unlinkat(fd, lock, 0);
	close(fd);
	if (rmdir(sockdir) < 0)
		rc = -errno;
	return rc;
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

/*
 * Who answered on c, before any statement: the process that listens on the
 * socket (SO_PEERCRED on a unix socket gives the listener's pid: the
 * postmaster) and the socket file's name. 0 when it is s's server, else
 * -1 with what answered in out.
 */
static int peer_is_ours(const harness_pg *s, PGconn *c, char *out, size_t cap)
{
	struct sockaddr_un sa;
	socklen_t sl = sizeof(sa);
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	char want[sizeof(sa.sun_path) + 1];
	int fd = PQsocket(c);

	memset(&sa, 0, sizeof(sa));
	memset(&cr, 0, sizeof(cr));
	pathf(want, sizeof(want), "%s/.s.PGSQL.%d", s->sockdir, s->port);
	if (fd < 0 || getpeername(fd, (struct sockaddr *) &sa, &sl) < 0 || sa.sun_family != AF_UNIX ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
		pathf(out, cap, "a server on %s:%s that does not say who it is",
		      PQhost(c) ? PQhost(c) : "?", PQport(c) ? PQport(c) : "?");
		return -1;
	}
	sa.sun_path[sizeof(sa.sun_path) - 1] = '\0';
	if (cr.pid != s->pid || strcmp(sa.sun_path, want)) {
		pathf(out, cap, "the server listening on %s (pid %ld)",
		      sa.sun_path[0] ? sa.sun_path : "an unnamed socket", (long) cr.pid);
		return -1;
	}
	return 0;
}

int harness_pg_connect(const harness_pg *s, const char *db, const char *user, PGconn **out,
		       cs_err *e)
{
	char dd[PATH_MAX] = "", sd[PATH_MAX] = "", who[PATH_MAX + 64];
	struct stat st;
	pgparams pp;
	PGconn *c;

	*out = NULL;
	if (!s->pid)
		return cs_err_set(e, CS_EXIT_INTERNAL, "no server of this run is running");
	if ((db && !harness_pg_name_ok(db)) || (user && !harness_pg_name_ok(user)))
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "$.postgres.%s: a name without quotes, '=', whitespace or control "
				  "characters is expected",
				  db && !harness_pg_name_ok(db) ? "database" : "user");
	conn_params(s, db, user, &pp);
	c = PQconnectdbParams(pp.kw, pp.val, 0);
	if (PQstatus(c) != CONNECTION_OK) {
		int rc = cs_err_set(e, CS_EXIT_BADINPUT, "cannot connect to the run's server: %s",
				    PQerrorMessage(c));

		PQfinish(c);
		return rc;
	}
	/* Before any statement: the listener is the postmaster this run started, on its socket. */
	if (peer_is_ours(s, c, who, sizeof(who))) {
		PQfinish(c);
		return cs_err_set(e, CS_EXIT_REFUSED,
				  "%s answered, not the server this run started on %s (pid %ld, "
				  "socket %s); nothing was sent to it",
				  who, s->pgdata->shown, (long) s->pid, s->sockdir);
	}
	/* ... and it runs on the held clone, with the private socket directory. */
	if (one_value(c, "SELECT current_setting('data_directory')", dd, sizeof(dd)) ||
	    one_value(c, "SELECT current_setting('unix_socket_directories')", sd, sizeof(sd)) ||
	    stat(dd, &st) < 0 || st.st_dev != s->pgdata->st.st_dev ||
	    st.st_ino != s->pgdata->st.st_ino || strcmp(sd, s->sockdir)) {
		PQfinish(c);
		return cs_err_set(e, CS_EXIT_REFUSED,
				  "the server on %s (data directory %s, sockets %s) is not the one this "
				  "run started on %s",
				  s->sockdir, dd, sd, s->pgdata->shown);
	}
	*out = c;
	return 0;
}

int harness_pg_backup_start(const char *pgdata, const struct stat *st, const char *sockdir,
			    int port, PGconn **out, cs_err *e)
{
	char dd[PATH_MAX];
	struct passwd *pw = getpwuid(st->st_uid);
	pgparams pp;
	struct stat dst;
	PGresult *r;
	PGconn *c;
	int rc;

	*out = NULL;
	params_of(&pp, sockdir, port, "postgres", pw ? pw->pw_name : "postgres");
	c = PQconnectdbParams(pp.kw, pp.val, 0);
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
