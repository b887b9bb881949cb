/*
 * report.c - a study's report, published from its ledger alone.
 *
 * Phases:
 *  1. verify: ledger_verify_ex recomputes every hash, the Merkle root and
 *     every raw blob; a log that fails is not published (exit 4) and
 *     nothing is written.
 *  2. gather: one pass over the records, kept by kind (hypotheses and
 *     amendments, validation, refusals, runs, predictions, scores,
 *     refutations, deviations, notes); per-query rows are read back from
 *     the raw side table by the hashes the run records carry.
 *  3. build: a document model (a JSON array of blocks: headings,
 *     paragraphs, tables, preformatted text, folds, figures) plus the SVG
 *     plots, one section per sec_*.c and one figure per plot_*.c
 *     (report_doc.h lists the seams).
 *     Verdicts are evaluated now from the registered rules
 *     (report_verdicts with record = 0), showing the numbers each rule saw.
 *  4. render: the same blocks as Markdown and as self-contained HTML
 *     (inline CSS and SVG, a Content-Security-Policy that forbids scripts
 *     and remote loads; all record text escaped).
 *  5. publish: every file is written into a fresh temporary directory
 *     beside R, then the directory is renamed into place (or exchanged
 *     with a previous report), so R is either the old report or the new
 *     one, never half of either.
 *
 * Determinism: the only times in a report are the records' own; numbers
 * print through report_fmt_num; maps are walked in record order. The same
 * ledger gives the same bytes.
 */
#include "report_doc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#define OUT_MAX_FILES 64

/* ---- 5. publish: a temporary directory, then one rename ---- */

/* Is name a file a report writes? */
static int report_file_name(const char *name)
{
	size_t n = strlen(name);

	return !strcmp(name, "report.md") || !strcmp(name, "report.html") ||
	       !strcmp(name, "records.jsonl") || !strcmp(name, "checkpoint.txt") ||
	       (n > 4 && !strcmp(name + n - 4, ".svg") && !strchr(name, '/'));
}

/*
 * Remove the folder name beneath pfd when it holds only report files (it
 * is opened with O_NOFOLLOW: a symlink swapped in is never entered).
 * Returns 0, or -1 if it holds anything else (then nothing more is removed).
 */
static int remove_report_dir(int pfd, const char *name)
{
	int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	DIR *dh;
	int bad = 0;

	if (dfd < 0)
		return errno == ENOENT ? 0 : -1;
	dh = fdopendir(dfd);
	if (!dh) {
		close(dfd);
		return -1;
	}
	while ((de = readdir(dh))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!report_file_name(de->d_name)) {
			bad = 1;
			continue;
		}
	}
	if (bad) {
		closedir(dh);
		return -1;
	}
	rewinddir(dh);
	while ((de = readdir(dh))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		unlinkat(dirfd(dh), de->d_name, 0);
	}
	closedir(dh);
	return unlinkat(pfd, name, AT_REMOVEDIR);
}

/*
 * 1 if name beneath pfd is empty or a previous report (report.md and report
 * files only), 0 if absent, else -1 (a symlink too: it is not followed).
 */
static int existing_report(int pfd, const char *name)
{
	struct stat st;
	DIR *dh;
	struct dirent *de;
	int ok = 1, entries = 0, has_md = 0, dfd;

	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return -1;
	dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || !(dh = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	while ((de = readdir(dh))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		entries++;
		has_md |= !strcmp(de->d_name, "report.md");
		if (!report_file_name(de->d_name))
			ok = -1;
	}
	closedir(dh);
	/* a folder of someone's own SVG files is not a previous report */
	if (entries && !has_md)
		ok = -1;
	return ok;
}

/* Make a new folder "NAME.TAG-XXXXXX" beneath pfd (0755) into made; 0 or -errno. */
static int mkdir_unique(int pfd, const char *name, const char *tag, char *made, size_t cap)
{
	static unsigned seq;
	uint64_t r = (uint64_t) cs_now_us() ^ ((uint64_t) getpid() << 20);

	for (int tries = 0; tries < 100; tries++) {
		r = r * 6364136223846793005ull + 1442695040888963407ull + seq++;
		if ((size_t) snprintf(made, cap, "%s.%s-%06x", name, tag,
				      (unsigned) (r >> 40) & 0xffffffu) >= cap)
			return -ENAMETOOLONG;
		if (mkdirat(pfd, made, 0755) == 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

typedef struct outfile {
	const char *name;
	const char *data;
	size_t len;
} outfile;

/*
 * Write files into a temporary directory beside out and move it into place
 * whole. Everything happens beneath out's folder's descriptor (no name is
 * walked again), the files are created in the temporary folder's own
 * descriptor, and a folder that is a symlink is never entered or emptied.
 */
static int publish_dir(const char *out, const outfile *files, size_t n, cs_err *e)
{
	char parent[4096], tmp[512], old[512], shown[4200];
	const char *slash = strrchr(out, '/'), *name = slash ? slash + 1 : out;
	size_t i;
	int rc = 0, ex, pfd, tfd, r;

	if (!*name || !strcmp(name, ".") || !strcmp(name, "..") || strlen(name) > 200)
		return cs_err_set(e, CS_EXIT_USAGE, "%s: a folder name is expected", out);
	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else if (slash == out)
		snprintf(parent, sizeof(parent), "/");
	else if ((size_t) snprintf(parent, sizeof(parent), "%.*s", (int) (slash - out), out) >=
		 sizeof(parent))
		return cs_err_set(e, CS_EXIT_USAGE, "%s: path too long", out);
	pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: %s", parent, strerror(errno));
	ex = existing_report(pfd, name);
	if (ex < 0) {
		close(pfd);
		return cs_err_set(
		    e, CS_EXIT_REFUSED,
		    "%s: exists and is not a report directory (it holds other files); "
		    "choose another --out",
		    out);
	}
	if ((r = mkdir_unique(pfd, name, "tmp", tmp, sizeof(tmp)))) {
		close(pfd);
		return cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot create a temporary directory: %s",
				  out, strerror(-r));
	}
	tfd = openat(pfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s/%s: %s", parent, tmp, strerror(errno));
		goto fail;
	}
	for (i = 0; !rc && i < n; i++) {
		snprintf(shown, sizeof(shown), "%s/%s", out, files[i].name);
		rc = cs_write_file_atomic_at(tfd, files[i].name, shown, files[i].data, files[i].len,
					     0644, e);
	}
	close(tfd);
	if (rc)
		goto fail;
	if (ex == 0) {
		if (renameat(pfd, tmp, pfd, name)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot rename into place: %s",
			                out, strerror(errno));
			goto fail;
		}
		close(pfd);
		return 0;
	}
	/* swap with the previous report in one step, then remove the old one */
	if (renameat2(pfd, tmp, pfd, name, RENAME_EXCHANGE)) {
		if ((r = mkdir_unique(pfd, name, "old", old, sizeof(old))) ||
		    unlinkat(pfd, old, AT_REMOVEDIR) || renameat(pfd, name, pfd, old)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL,
			                "%s: cannot replace the previous report: %s", out,
			                strerror(r ? -r : errno));
			goto fail;
		}
		if (renameat(pfd, tmp, pfd, name)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot rename into place: %s",
			                out, strerror(errno));
			renameat(pfd, old, pfd, name);
			goto fail;
		}
		remove_report_dir(pfd, old);
		close(pfd);
		return 0;
	}
	remove_report_dir(pfd, tmp); /* now the previous report */
	close(pfd);
	return 0;
fail:
	remove_report_dir(pfd, tmp);
	close(pfd);
	return rc;
}

/* ---- the whole report ---- */

int report_write(struct ledger *l, const char *out, const char *title, cs_err *e)
{
	model m;
	doc d = {0};
	rbuf md, html;
	char *jsonl = NULL, *ttl = NULL;
	size_t jsonl_len = 0, i, nf = 0;
	FILE *mem = NULL;
	outfile files[OUT_MAX_FILES];
	const char *names[OUT_MAX_FILES];
	int rc;

	rb_init(&md, 0);
	rb_init(&html, 0);
	rc = rpt_model_load(l, &m, e);
	if (rc)
		goto out;
	mem = open_memstream(&jsonl, &jsonl_len);
	if (!mem) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	rc = ledger_export(l, mem, e);
	if (fclose(mem) && !rc)
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "cannot buffer the export");
	if (rc)
		goto out;
	if (title) {
		ttl = strdup(title);
	} else {
		const char *sid =
		    m.study ? rpt_str(json_object_get(rpt_pl(m.study), "doc"), "id") : NULL;
		size_t n = sid ? strlen(sid) + 32 : 32;

		ttl = malloc(n);
		if (ttl)
			snprintf(ttl, n,
			         sid ? "Study %s: report from the log"
			             : "%sStudy report from the log",
			         sid ? sid : "");
	}
	d.blocks = json_array();
	d.figs = json_object();
	d.fig_order = json_array();
	if (!ttl || !d.blocks || !d.figs || !d.fig_order) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}

	/*
	 * The order a person reads in: the first screen (question, verdicts
	 * against their bands, holdout, what survives) and the contents; then
	 * the verdicts' evidence, the holdout, the figures that answer the
	 * seeds' questions and then the runs behind them (summarised by group,
	 * each run's row folded: every column is in runs.csv); then what was
	 * registered, validated and recorded; the log's hashes and checkpoint
	 * last.
	 */
	{
		json_t *fname;

		rpt_sec_glance(&d, &m);
		rpt_toc(&d);
		rpt_sec_verdicts(&d, &m);
		rpt_sec_holdout(&d, &m);
		rc = rpt_sec_figures(&d, &m, l, e);
		if (!rc)
			rc = rpt_sec_runs(&d, &m, l, e);
		if (rc)
			goto out;
		rpt_sec_hypotheses(&d, &m);
		rpt_sec_validation(&d, &m);
		rpt_sec_refutations(&d, &m);
		rpt_sec_deviations(&d, &m);
		rpt_sec_notes(&d, &m);
		names[nf++] = "report.md";
		names[nf++] = "report.html";
		names[nf++] = "records.jsonl";
		names[nf++] = "checkpoint.txt";
		json_array_foreach(d.fig_order, i, fname) if (nf < OUT_MAX_FILES) names[nf++] =
		    json_string_value(fname);
		rpt_sec_log(&d, &m, names, nf);
	}
	if (d.failed) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory building the report");
		goto out;
	}
	rpt_render_md(&md, &d, ttl);
	rpt_render_html(&html, &d, ttl);
	if (!rb_ok(&md) || !rb_ok(&html)) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL,
		                "the report is larger than %zu bytes or out of memory",
		                (size_t) RB_DEFAULT_MAX);
		goto out;
	}
	nf = 0;
	files[nf++] = (outfile){"report.md", md.p, md.len};
	files[nf++] = (outfile){"report.html", html.p, html.len};
	files[nf++] = (outfile){"records.jsonl", jsonl ? jsonl : "", jsonl_len};
	files[nf++] = (outfile){"checkpoint.txt", m.checkpoint, strlen(m.checkpoint)};
	{
		json_t *fname;

		json_array_foreach(d.fig_order, i, fname)
		{
			const char *svg =
			    json_string_value(json_object_get(d.figs, json_string_value(fname)));

			if (nf < OUT_MAX_FILES)
				files[nf++] = (outfile){json_string_value(fname), svg, strlen(svg)};
		}
	}
	rc = publish_dir(out, files, nf, e);
out:
	free(jsonl);
	free(ttl);
	json_decref(d.blocks);
	json_decref(d.figs);
	json_decref(d.fig_order);
	rb_free(&md);
	rb_free(&html);
	rpt_model_free(&m);
	return rc;
}

