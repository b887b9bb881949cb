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
 * Remove a directory that holds only report files. Returns 0, or -1 if it
 * holds anything else (then nothing more is removed).
 */
static int remove_report_dir(const char *dir)
{
	DIR *dh = opendir(dir);
	struct dirent *de;
	char path[4096];
	int bad = 0;

	if (!dh)
		return errno == ENOENT ? 0 : -1;
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
		if ((size_t) snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < sizeof(path))
			unlink(path);
	}
	closedir(dh);
	return rmdir(dir);
}

/* 1 if dir is empty or a previous report (report.md and report files only), 0 if absent, else -1.
 */
static int existing_report(const char *dir)
{
	struct stat st;
	DIR *dh;
	struct dirent *de;
	int ok = 1, entries = 0, has_md = 0;

	if (lstat(dir, &st))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return -1;
	dh = opendir(dir);
	if (!dh)
		return -1;
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

typedef struct outfile {
	const char *name;
	const char *data;
	size_t len;
} outfile;

/* Write files into a temporary directory beside out and move it into place whole. */
static int publish_dir(const char *out, const outfile *files, size_t n, cs_err *e)
{
	char tmp[4096], path[4096];
	size_t i;
	int rc = 0, ex;

	ex = existing_report(out);
	if (ex < 0)
		return cs_err_set(
		    e, CS_EXIT_REFUSED,
		    "%s: exists and is not a report directory (it holds other files); "
		    "choose another --out",
		    out);
	if ((size_t) snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", out) >= sizeof(tmp))
		return cs_err_set(e, CS_EXIT_USAGE, "%s: path too long", out);
	if (!mkdtemp(tmp))
		return cs_err_set(e, CS_EXIT_INTERNAL,
		                  "%s: cannot create a temporary directory: %s", tmp,
		                  strerror(errno));
	if (chmod(tmp, 0755)) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: chmod: %s", tmp, strerror(errno));
		goto fail;
	}
	for (i = 0; i < n; i++) {
		if ((size_t) snprintf(path, sizeof(path), "%s/%s", tmp, files[i].name) >=
		    sizeof(path)) {
			rc = cs_err_set(e, CS_EXIT_USAGE, "%s: path too long", out);
			goto fail;
		}
		rc = cs_write_file_atomic(path, files[i].data, files[i].len, 0644, e);
		if (rc)
			goto fail;
	}
	if (ex == 0) {
		if (rename(tmp, out)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot rename into place: %s",
			                out, strerror(errno));
			goto fail;
		}
		return 0;
	}
	/* swap with the previous report in one step, then remove the old one */
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_EXCHANGE)) {
		char old[4096];

		if ((size_t) snprintf(old, sizeof(old), "%s.old-XXXXXX", out) >= sizeof(old) ||
		    !mkdtemp(old) || rmdir(old) || rename(out, old)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL,
			                "%s: cannot replace the previous report: %s", out,
			                strerror(errno));
			goto fail;
		}
		if (rename(tmp, out)) {
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: cannot rename into place: %s",
			                out, strerror(errno));
			rename(old, out);
			goto fail;
		}
		remove_report_dir(old);
		return 0;
	}
	remove_report_dir(tmp); /* now the previous report */
	return 0;
fail:
	remove_report_dir(tmp);
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

