/*
 * publish.c - sending the log to a transparency endpoint.
 *
 * What is sent: one HTTP(S) POST, multipart/form-data, with two parts:
 *   "checkpoint"  text/plain            the C2SP tlog-checkpoint body
 *   "records"     application/x-ndjson  the export (ledger_export), cut to
 *                                       exactly the checkpoint's tree size
 * plus the headers X-Coldstudy-Tree-Size and X-Coldstudy-Origin. A
 * receiver that keeps the checkpoint can later demand a consistency proof
 * from any newer one (`coldstudy log prove`), so the study cannot quietly
 * rewrite what it published.
 *
 * The log is verified first (exit 4 if it fails); nothing is sent from a
 * log that does not verify. After a 2xx answer a `note` record is appended:
 * {"text", "published": URL, "checkpoint": TEXT, "status": CODE,
 * "tree_size": N}. The URL is recorded without any user name or password
 * it carried. A failure to connect, a timeout or an HTTP status >= 400 is
 * exit 1 with a one-line error naming the status, and records nothing; so
 * is a redirect (3xx), which is not followed: a redirected POST stored nothing.
 */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "ledger.h"
#include "report_int.h"

#define REPLY_MAX 4096

typedef struct reply {
	char buf[REPLY_MAX];
	size_t len;
} reply;

/* Keep the first REPLY_MAX - 1 bytes of the answer, for the error line. */
static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
	reply *r = ud;
	size_t n = size * nmemb, room = sizeof(r->buf) - 1 - r->len;

	if (room) {
		size_t k = n < room ? n : room;

		memcpy(r->buf + r->len, p, k);
		r->len += k;
		r->buf[r->len] = '\0';
	}
	return n;
}

/* The first line of s, printable ASCII only, at most 200 bytes, into out. */
static void first_line(const char *s, char *out, size_t cap)
{
	size_t o = 0;

	for (; *s && *s != '\n' && *s != '\r' && o + 1 < cap && o < 200; s++)
		out[o++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	out[o] = '\0';
}

/* The URL without user name and password (new string, caller frees), or NULL if not a URL. */
static char *url_for_record(const char *url, cs_err *e)
{
	CURLU *u = curl_url();
	char *clean = NULL, *scheme = NULL, *out = NULL;

	if (!u) {
		cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		return NULL;
	}
	if (curl_url_set(u, CURLUPART_URL, url, 0) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    (strcmp(scheme, "http") && strcmp(scheme, "https"))) {
		cs_err_set(e, CS_EXIT_USAGE, "--url %s: expected an http:// or https:// URL", url);
		goto out;
	}
	curl_url_set(u, CURLUPART_USER, NULL, 0);
	curl_url_set(u, CURLUPART_PASSWORD, NULL, 0);
	if (curl_url_get(u, CURLUPART_URL, &clean, 0)) {
		cs_err_set(e, CS_EXIT_USAGE, "--url %s: cannot be parsed", url);
		goto out;
	}
	out = strdup(clean);
	if (!out)
		cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
out:
	curl_free(clean);
	curl_free(scheme);
	curl_url_cleanup(u);
	return out;
}

/* Cut a JSONL buffer after its n-th line; returns the new length. */
static size_t first_lines(const char *buf, size_t len, int64_t n)
{
	size_t i;

	for (i = 0; i < len && n > 0; i++)
		if (buf[i] == '\n')
			n--;
	return i;
}

int report_publish(struct ledger *l, const char *url, const char *origin, int dry_run,
                   long timeout_s, FILE *out, cs_err *e)
{
	ledger_verify_info vi;
	ledger_tree_head th;
	char *cp = NULL, *jsonl = NULL, *rec_url = NULL, hdr_size[64], hdr_origin[300];
	char errbuf[CURL_ERROR_SIZE], line[256];
	size_t jsonl_len = 0;
	FILE *mem;
	CURL *c = NULL;
	curl_mime *mime = NULL;
	curl_mimepart *part;
	struct curl_slist *hdrs = NULL;
	reply *rep = NULL;
	long status = 0;
	CURLcode cc;
	json_t *note = NULL;
	int rc, inited = 0;

	rec_url = url_for_record(url, e);
	if (!rec_url)
		return e->code;
	rc = ledger_verify_ex(l, NULL, &vi, e);
	if (rc)
		goto out;
	rc = ledger_checkpoint_origin(l, origin, &cp, e);
	if (rc)
		goto out;
	rc = ledger_checkpoint_parse(cp, strlen(cp), "checkpoint", &th, e);
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
	/* a writer may have appended since the checkpoint: send what it covers */
	jsonl_len = first_lines(jsonl ? jsonl : "", jsonl_len, th.size);
	snprintf(hdr_size, sizeof(hdr_size), "X-Coldstudy-Tree-Size: %lld", (long long) th.size);
	snprintf(hdr_origin, sizeof(hdr_origin), "X-Coldstudy-Origin: %s", th.origin);
	if (dry_run) {
		fprintf(
		    out,
		    "POST %s\nContent-Type: multipart/form-data\n%s\n%s\n\n"
		    "--- part \"checkpoint\" (text/plain; charset=utf-8, %zu bytes) ---\n%s"
		    "--- part \"records\" (application/x-ndjson, %zu bytes, %lld records) ---\n",
		    rec_url, hdr_size, hdr_origin, strlen(cp), cp, jsonl_len, (long long) th.size);
		if (jsonl_len)
			fwrite(jsonl, 1, jsonl_len, out);
		fprintf(out, "--- end (dry run: nothing sent, nothing recorded) ---\n");
		rc = 0;
		goto out;
	}

	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "cannot initialise libcurl");
		goto out;
	}
	inited = 1;
	c = curl_easy_init();
	rep = calloc(1, sizeof(*rep));
	mime = c ? curl_mime_init(c) : NULL;
	if (!c || !rep || !mime) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	part = curl_mime_addpart(mime);
	curl_mime_name(part, "checkpoint");
	curl_mime_filename(part, "checkpoint.txt");
	curl_mime_type(part, "text/plain; charset=utf-8");
	curl_mime_data(part, cp, strlen(cp));
	part = curl_mime_addpart(mime);
	curl_mime_name(part, "records");
	curl_mime_filename(part, "records.jsonl");
	curl_mime_type(part, "application/x-ndjson");
	curl_mime_data(part, jsonl ? jsonl : "", jsonl_len);
	hdrs = curl_slist_append(hdrs, hdr_size);
	hdrs = curl_slist_append(hdrs, hdr_origin);
	hdrs = curl_slist_append(hdrs, "Expect:"); /* send the body at once, no 100-continue wait */
	errbuf[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "coldstudy/0.1 (log publish)");
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, timeout_s < 10 ? timeout_s : 10L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, rep);
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s: %s", rec_url,
		                errbuf[0] ? errbuf : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status >= 300) {
		/* redirects are not followed: a POST that was redirected was not stored */
		first_line(rep->buf, line, sizeof(line));
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "%s answered HTTP %ld%s%s%s; nothing recorded",
		                rec_url, status,
		                status >= 300 && status < 400 ? " (a redirect)" : "",
		                line[0] ? ": " : "", line);
		goto out;
	}
	note = json_pack("{s:s,s:s,s:s,s:i,s:I,s:s}", "text",
	                 "published the log's checkpoint and export", "published", rec_url,
	                 "checkpoint", cp, "status", (int) status, "tree_size",
	                 (json_int_t) th.size, "origin", th.origin);
	if (!note) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	rc = ledger_append(l, "note", note, NULL, e);
	if (rc)
		goto out;
	fprintf(out, "published %lld records to %s (HTTP %ld)\n%s", (long long) th.size, rec_url,
	        status, cp);
out:
	json_decref(note);
	curl_slist_free_all(hdrs);
	curl_mime_free(mime);
	if (c)
		curl_easy_cleanup(c);
	free(rep);
	free(cp);
	free(jsonl);
	free(rec_url);
	if (inited)
		curl_global_cleanup();
	return rc;
}
