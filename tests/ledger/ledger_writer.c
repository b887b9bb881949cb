/*
 * ledger_writer.c - a test helper that appends a stream of records to a
 * study's ledger, the way harness and register do, and reports each one
 * only after its commit returned:
 *
 *   ledger_writer DIR TAG COUNT     appends COUNT records; for every k it
 *                                   stores a raw blob and appends a note
 *                                   {"tag":TAG,"k":k,"raw":sha} in one
 *                                   transaction, then writes "ok TAG k\n"
 *                                   to stdout with write(2)
 *   ledger_writer --check DIR FILE  every "ok TAG k" line of FILE must be
 *                                   in the ledger exactly once; the ledger
 *                                   must verify; exit 0, or 1 naming what
 *                                   is missing
 *
 * crash.sh kills the first form with SIGKILL at random moments and runs the
 * second; concurrency.sh runs several of the first at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ledger_int.h"

/* One record with its raw blob, in one transaction. */
static int append_one(ledger *l, const char *tag, long k, cs_err *e)
{
	json_t *rows = json_pack("[{s:I, s:s}]", "k", (json_int_t) k, "tag", tag), *p = NULL;
	char sha[65];
	int rc;

	if ((rc = ledger_begin(l, e)))
		goto out;
	if ((rc = ledger_put_raw(l, "queries", rows, sha, e)))
		goto fail;
	p = json_pack("{s:s, s:I, s:s}", "tag", tag, "k", (json_int_t) k, "raw", sha);
	if ((rc = ledger_append(l, "note", p, NULL, e)))
		goto fail;
	rc = ledger_commit(l, e);
	goto out;
fail:
	ledger_rollback(l);
out:
	json_decref(rows);
	json_decref(p);
	return rc;
}

static int writer(const char *dir, const char *tag, long count)
{
	ledger *l = NULL;
	cs_err e = {0};
	char line[128];

	if (ledger_open(dir, &l, &e)) {
		fprintf(stderr, "ledger_writer: %s\n", e.msg);
		return 1;
	}
	for (long k = 0; k < count; k++) {
		int n;

		if (append_one(l, tag, k, &e)) {
			fprintf(stderr, "ledger_writer: %s\n", e.msg);
			ledger_close(l);
			return 1;
		}
		n = snprintf(line, sizeof(line), "ok %s %ld\n", tag, k);
		if (write(1, line, (size_t) n) != n)
			return 1;
	}
	ledger_close(l);
	return 0;
}

typedef struct {
	json_t *seen; /* "tag k" -> count */
} seen_set;

static int collect(const ledger_record *r, void *ud)
{
	seen_set *s = ud;
	json_t *p = json_loads(r->payload, 0, NULL);
	char key[128];

	snprintf(key, sizeof(key), "%s %lld", json_string_value(json_object_get(p, "tag")),
		 (long long) json_integer_value(json_object_get(p, "k")));
	json_object_set_new(s->seen, key,
			    json_integer(json_integer_value(json_object_get(s->seen, key)) + 1));
	json_decref(p);
	return 0;
}

static int check(const char *dir, const char *file)
{
	seen_set s = {json_object()};
	ledger *l = NULL;
	cs_err e = {0};
	FILE *f = fopen(file, "r");
	char tag[64], key[128];
	long k, reported = 0;
	int bad = 0;
	const char *kk;
	json_t *v;

	if (!f || ledger_open(dir, &l, &e) || ledger_verify(l, NULL, &e) ||
	    ledger_foreach(l, "note", collect, &s, &e)) {
		fprintf(stderr, "ledger_writer --check: %s\n", f ? e.msg : "cannot open the report");
		bad = 1;
		goto out;
	}
	while (fscanf(f, "ok %63s %ld\n", tag, &k) == 2) {
		snprintf(key, sizeof(key), "%s %ld", tag, k);
		reported++;
		if (json_integer_value(json_object_get(s.seen, key)) != 1) {
			fprintf(stderr, "ledger_writer --check: '%s' reported committed but found %lld "
					"times\n",
				key, (long long) json_integer_value(json_object_get(s.seen, key)));
			bad = 1;
		}
	}
	json_object_foreach(s.seen, kk, v) {
		if (json_integer_value(v) != 1) {
			fprintf(stderr, "ledger_writer --check: '%s' appears %lld times\n", kk,
				(long long) json_integer_value(v));
			bad = 1;
		}
	}
	printf("%ld reported, %zu in the ledger\n", reported, json_object_size(s.seen));
out:
	if (f)
		fclose(f);
	ledger_close(l);
	json_decref(s.seen);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--check"))
		return check(argv[2], argv[3]);
	if (argc == 4)
		return writer(argv[1], argv[2], strtol(argv[3], NULL, 10));
	fprintf(stderr, "usage: ledger_writer DIR TAG COUNT | --check DIR FILE\n");
	return 2;
}
