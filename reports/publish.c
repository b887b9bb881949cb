/*
 * publish.c - sending the log to a transparency endpoint: as C2SP
 * tlog-tiles over HTTP PUT (report_publish_tiles, at the end of the file),
 * or as the older one-off POST described here (report_publish, --url).
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
#include <openssl/evp.h>

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

/* ---- publishing as C2SP tlog-tiles over HTTP PUT (coldstudy log publish --to) ---- */

/*
 * The protocol, for any static web server or object store that accepts
 * PUT (nginx's DAV module, S3-style stores):
 *  1. GET <base>/checkpoint. 404: nothing published yet (old size 0).
 *     200: it must be an ancestor of this log (ledger_check_ancestor: the
 *     study's signature and origin, a size no larger, the root this log
 *     has at that size), else exit 4 and nothing is sent: a remote tree
 *     this log does not extend is never overwritten.
 *  2. PUT every tile and entry bundle the old tree did not have
 *     (ledger_tiles_foreach), then PUT <base>/checkpoint last: a reader
 *     never sees a checkpoint whose tiles are not all there.
 * Interrupted anywhere, the remote checkpoint is still the old one, so
 * the next run sends the same tiles again (PUT of the same bytes) and
 * then the checkpoint: resumable and idempotent. A run with nothing new
 * sends nothing. Redirects are not followed; TLS peers are verified.
 *
 * With a witness (C2SP tlog-witness): POST <witness>/add-checkpoint with
 * "old <size>\n", the consistency proof's hashes in base64 one a line, a
 * blank line and the signed checkpoint; a 409 answer names the size the
 * witness holds and is retried once from there. The cosignature lines of
 * a 200 answer are appended to the checkpoint and stored as
 * DIR/checkpoint.witnessed.
 */

#define TILES_REPLY_MAX (1u << 20)

typedef struct http_reply {
	char *buf;
	size_t len;
} http_reply;

/* Keep at most TILES_REPLY_MAX bytes of an answer (bounded memory). */
static size_t on_reply(char *p, size_t size, size_t nmemb, void *ud)
{
	http_reply *r = ud;
	size_t n = size * nmemb;
	char *nb;

	if (r->len + n > TILES_REPLY_MAX)
		return 0; /* abort the transfer: an answer this large is not ours */
	nb = realloc(r->buf, r->len + n + 1);
	if (!nb)
		return 0;
	r->buf = nb;
	memcpy(r->buf + r->len, p, n);
	r->len += n;
	r->buf[r->len] = '\0';
	return n;
}

typedef struct tiles_ctx {
	CURL *c;
	const char *base;   /* with a trailing '/' */
	const char *shown;  /* the base without credentials, for messages */
	long timeout_s;
	int64_t sent, bytes;
	cs_err *e;
} tiles_ctx;

/*
 * One request: method GET, PUT or POST of body to url; *status and ans
 * filled. A transport failure is exit 1 naming the URL.
 */
static int http_req(tiles_ctx *t, const char *method, const char *url, const char *shown,
		    const void *body, size_t len, const char *ctype, long *status,
		    http_reply *ans)
{
	char errbuf[CURL_ERROR_SIZE], hdr[128];
	struct curl_slist *hdrs = NULL;
	CURLcode cc;

	free(ans->buf);
	ans->buf = NULL;
	ans->len = 0;
	curl_easy_reset(t->c);
	errbuf[0] = '\0';
	curl_easy_setopt(t->c, CURLOPT_URL, url);
	curl_easy_setopt(t->c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(t->c, CURLOPT_USERAGENT, "coldstudy/0.1 (log publish)");
	curl_easy_setopt(t->c, CURLOPT_CONNECTTIMEOUT, t->timeout_s < 10 ? t->timeout_s : 10L);
	curl_easy_setopt(t->c, CURLOPT_TIMEOUT, t->timeout_s);
	curl_easy_setopt(t->c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(t->c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(t->c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(t->c, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(t->c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(t->c, CURLOPT_WRITEFUNCTION, on_reply);
	curl_easy_setopt(t->c, CURLOPT_WRITEDATA, ans);
	if (strcmp(method, "GET")) {
		curl_easy_setopt(t->c, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(t->c, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(t->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) len);
		snprintf(hdr, sizeof(hdr), "Content-Type: %s", ctype);
		hdrs = curl_slist_append(hdrs, hdr);
		hdrs = curl_slist_append(hdrs, "Expect:");
		curl_easy_setopt(t->c, CURLOPT_HTTPHEADER, hdrs);
	}
	cc = curl_easy_perform(t->c);
	curl_slist_free_all(hdrs);
	if (cc != CURLE_OK)
		return cs_err_set(t->e, CS_EXIT_INTERNAL, "%s %s: %s", method, shown,
				  errbuf[0] ? errbuf : curl_easy_strerror(cc));
	curl_easy_getinfo(t->c, CURLINFO_RESPONSE_CODE, status);
	return 0;
}

/* A 2xx answer, or exit 1 naming the status and the answer's first line. */
static int want_2xx(tiles_ctx *t, const char *method, const char *shown, long status,
		    const http_reply *r)
{
	char line[256];

	if (status >= 200 && status < 300)
		return 0;
	first_line(r->buf ? r->buf : "", line, sizeof(line));
	return cs_err_set(t->e, CS_EXIT_INTERNAL, "%s %s answered HTTP %ld%s%s%s", method, shown,
			  status, status >= 300 && status < 400 ? " (a redirect, not followed)" : "",
			  line[0] ? ": " : "", line);
}

/* base + path into a malloc'd string (caller frees). */
static char *join_url(const char *base, const char *path)
{
	size_t n = strlen(base) + strlen(path) + 1;
	char *u = malloc(n);

	if (u)
		snprintf(u, n, "%s%s", base, path);
	return u;
}

/* ledger_tiles_foreach's callback: PUT one tile. */
static int put_tile(const char *path, const void *data, size_t len, void *ud)
{
	tiles_ctx *t = ud;
	http_reply r = {0};
	char *u = join_url(t->base, path), *s = join_url(t->shown, path);
	long status = 0;
	int rc;

	if (!u || !s)
		rc = cs_err_set(t->e, CS_EXIT_INTERNAL, "out of memory");
	else if (!(rc = http_req(t, "PUT", u, s, data, len, "application/octet-stream", &status,
				 &r)))
		rc = want_2xx(t, "PUT", s, status, &r);
	if (!rc) {
		t->sent++;
		t->bytes += (int64_t) len;
	}
	free(r.buf);
	free(u);
	free(s);
	return rc;
}

/* Ask a C2SP tlog-witness to cosign note (tree of size n); store the result in DIR. */
static int witness_cosign(tiles_ctx *t, struct ledger *l, const char *wurl, const char *note,
			  int64_t n, FILE *out)
{
	char *u = NULL, *shown = NULL, *body = NULL, *sigs = NULL, path[4096];
	http_reply r = {0};
	int64_t old = 0;
	long status = 0;
	int rc = 0, attempt;

	shown = url_for_record(wurl, t->e);
	if (!shown)
		return t->e->code;
	{
		const char *sep = wurl[strlen(wurl) - 1] == '/' ? "" : "/";
		size_t k = strlen(wurl) + 32;

		u = malloc(k);
		if (u)
			snprintf(u, k, "%s%sadd-checkpoint", wurl, sep);
	}
	for (attempt = 0; u && attempt < 2; attempt++) {
		ledger_proof p = {0};
		size_t cap, o;

		if (old > n) {
			rc = cs_err_set(t->e, CS_EXIT_VERIFY,
					"witness %s holds a tree of %lld records, more than this "
					"log's %lld",
					shown, (long long) old, (long long) n);
			goto out;
		}
		if ((rc = ledger_prove_consistency(l, old, n, &p, t->e)))
			goto out;
		cap = 32 + p.n_hashes * 46 + strlen(note) + 2;
		free(body);
		body = malloc(cap);
		if (!body) {
			ledger_proof_free(&p);
			rc = cs_err_set(t->e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
		o = (size_t) snprintf(body, cap, "old %lld\n", (long long) old);
		for (size_t i = 0; i < p.n_hashes; i++) {
			EVP_EncodeBlock((unsigned char *) body + o, p.hashes[i], 32);
			o += 44;
			body[o++] = '\n';
		}
		ledger_proof_free(&p);
		o += (size_t) snprintf(body + o, cap - o, "\n%s", note);
		if ((rc = http_req(t, "POST", u, shown, body, o, "text/plain", &status, &r)))
			goto out;
		if (status == 409 && attempt == 0 && r.buf) {
			/* the witness holds another size: its answer names it */
			char *end = NULL;
			long long v = strtoll(r.buf, &end, 10);

			if (end == r.buf || v < 0) {
				rc = want_2xx(t, "POST", shown, status, &r);
				goto out;
			}
			old = (int64_t) v;
			continue;
		}
		if ((rc = want_2xx(t, "POST", shown, status, &r)))
			goto out;
		break;
	}
	if (!u) {
		rc = cs_err_set(t->e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	/* the answer is cosignature lines: "— name base64\n" each */
	if (!r.buf || r.len < 5 || strncmp(r.buf, "\xe2\x80\x94 ", 4) || r.buf[r.len - 1] != '\n' ||
	    memchr(r.buf, '\0', r.len)) {
		rc = cs_err_set(t->e, CS_EXIT_INTERNAL,
				"POST %s: the answer is not cosignature lines", shown);
		goto out;
	}
	sigs = malloc(strlen(note) + r.len + 1);
	if (!sigs) {
		rc = cs_err_set(t->e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	snprintf(sigs, strlen(note) + r.len + 1, "%s%s", note, r.buf);
	snprintf(path, sizeof(path), "%s/checkpoint.witnessed", ledger_dir(l));
	if ((rc = cs_write_file_atomic(path, sigs, strlen(sigs), 0644, t->e)))
		goto out;
	fprintf(out, "witness %s cosigned the tree of %lld records: %s", shown, (long long) n,
		r.buf);
out:
	free(r.buf);
	free(u);
	free(shown);
	free(body);
	free(sigs);
	return rc;
}

int report_publish_tiles(struct ledger *l, const char *url, const char *witness, long timeout_s,
			 FILE *out, cs_err *e)
{
	tiles_ctx t = {0};
	ledger_tree_head th;
	http_reply r = {0};
	char *note = NULL, *shown = NULL, *base = NULL, *cpu = NULL, *cps = NULL;
	int64_t old = 0, count = 0;
	long status = 0;
	int rc, inited = 0;

	shown = url_for_record(url, e);
	if (!shown)
		return e->code;
	if (witness) {
		char *w = url_for_record(witness, e);

		if (!w) {
			rc = e->code;
			goto out;
		}
		free(w);
	}
	{
		size_t n = strlen(url) + 2;
		char *s2;

		base = malloc(n);
		s2 = malloc(strlen(shown) + 2);
		if (!base || !s2) {
			free(s2);
			rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			goto out;
		}
		snprintf(base, n, "%s%s", url, url[strlen(url) - 1] == '/' ? "" : "/");
		snprintf(s2, strlen(shown) + 2, "%s%s", shown,
			 shown[strlen(shown) - 1] == '/' ? "" : "/");
		free(shown);
		shown = s2;
	}
	/* the whole log recomputed; a signed study's newest signature must cover it */
	rc = ledger_signed(l) ? ledger_checkpoint_signed(l, &note, e) : ledger_checkpoint(l, &note, e);
	if (rc)
		goto out;
	if ((rc = ledger_checkpoint_parse(note, strlen(note), "checkpoint", &th, e)))
		goto out;
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "cannot initialise libcurl");
		goto out;
	}
	inited = 1;
	t.c = curl_easy_init();
	t.base = base;
	t.shown = shown;
	t.timeout_s = timeout_s;
	t.e = e;
	cpu = join_url(base, "checkpoint");
	cps = join_url(shown, "checkpoint");
	if (!t.c || !cpu || !cps) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	/* 1. what is there */
	if ((rc = http_req(&t, "GET", cpu, cps, NULL, 0, NULL, &status, &r)))
		goto out;
	if (status == 200) {
		if ((rc = ledger_check_ancestor(l, r.buf ? r.buf : "", r.len, cps, th.size, &old, e)))
			goto out;
	} else if (status != 404 && status != 410) {
		rc = want_2xx(&t, "GET", cps, status, &r);
		goto out;
	}
	/* 2. what is new, then the checkpoint */
	if (old < th.size) {
		if ((rc = ledger_tiles_foreach(l, note, old, put_tile, &t, &count, e)))
			goto out;
		if ((rc = http_req(&t, "PUT", cpu, cps, note, strlen(note), "text/plain; charset=utf-8",
				   &status, &r)) ||
		    (rc = want_2xx(&t, "PUT", cps, status, &r)))
			goto out;
		fprintf(out, "published %lld records to %s: %lld tiles (%lld bytes) and the "
			     "checkpoint sent; the server had %lld\n",
			(long long) th.size, shown, (long long) t.sent, (long long) t.bytes,
			(long long) old);
	} else {
		fprintf(out, "%s is up to date: its checkpoint has all %lld records; nothing sent\n",
			shown, (long long) th.size);
	}
	if (witness && (rc = witness_cosign(&t, l, witness, note, th.size, out)))
		goto out;
	rc = 0;
out:
	if (t.c)
		curl_easy_cleanup(t.c);
	if (inited)
		curl_global_cleanup();
	free(r.buf);
	free(note);
	free(shown);
	free(base);
	free(cpu);
	free(cps);
	return rc;
}
