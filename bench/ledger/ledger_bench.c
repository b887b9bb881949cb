/*
 * ledger_bench.c - how fast `log verify` recomputes a big ledger.
 *
 *   ledger_bench build DIR N    init DIR and bulk-append N records (one
 *                               transaction per 100,000; a ~240-byte payload
 *                               shaped like a run summary)
 *   ledger_bench verify DIR     time, on one core, side by side:
 *                                 scan     a bare SELECT of every record's
 *                                          columns (SQLite's floor)
 *                                 verify   ledger_verify_ex: chain, hashes,
 *                                          ts order, Merkle root, raw blobs
 *                               and print records/s for each and their ratio.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ledger_int.h"

static double now_s(void)
{
	return (double) cs_mono_ns() / 1e9;
}

/* CPU time of this process: on a shared machine, wall time includes waiting for a core. */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static int build(const char *dir, long n)
{
	ledger *l = NULL;
	cs_err e = {0};
	char payload[512];
	double t0 = now_s();

	if (ledger_init(dir, &e) || ledger_open(dir, &l, &e))
		goto fail;
	for (long k = 0; k < n; k++) {
		int len;

		if (k % 100000 == 0 && (k ? ledger_commit(l, &e) : 0))
			goto fail;
		if (k % 100000 == 0 && ledger_begin(l, &e))
			goto fail;
		len = snprintf(payload, sizeof(payload),
			       "{\"features\":{\"clients\":%ld,\"device\":\"hdd-pool\",\"ef_search\":40,"
			       "\"fanout\":1,\"mode\":\"serial\"},\"metrics\":{\"lat_p50_ms\":%ld.25,"
			       "\"qps\":7.6,\"recall_at_k\":0.95,\"wall_s\":1.3},\"run_id\":\"R%07ld\","
			       "\"tags\":[\"cold\",\"gate\",\"serial\"]}",
			       k % 64, k % 1000, k);
		if (lg_append_canonical(l, "note", payload, (size_t) len, NULL, &e))
			goto fail;
	}
	if (ledger_commit(l, &e))
		goto fail;
	printf("built %s: %ld records in %.2f s\n", dir, n, now_s() - t0);
	ledger_close(l);
	return 0;
fail:
	fprintf(stderr, "ledger_bench: %s\n", e.msg);
	ledger_close(l);
	return 1;
}

static int verify(const char *dir)
{
	ledger *l = NULL;
	cs_err e = {0};
	ledger_verify_info info;
	sqlite3_stmt *st;
	double t0, c0, scan_s, ver_s, scan_c, ver_c;
	long rows = 0;
	size_t bytes = 0;
	char root[65];

	if (ledger_open(dir, &l, &e))
		goto fail;
	t0 = now_s();
	c0 = cpu_s();
	sqlite3_prepare_v2(l->db, "SELECT seq, ts, kind, payload, prev, hash FROM records ORDER BY seq",
			   -1, &st, NULL);
	while (sqlite3_step(st) == SQLITE_ROW) {
		bytes += (size_t) sqlite3_column_bytes(st, 3) + (size_t) sqlite3_column_bytes(st, 1);
		rows++;
	}
	sqlite3_finalize(st);
	scan_s = now_s() - t0;
	scan_c = cpu_s() - c0;
	t0 = now_s();
	c0 = cpu_s();
	if (ledger_verify_ex(l, NULL, &info, &e))
		goto fail;
	ver_s = now_s() - t0;
	ver_c = cpu_s() - c0;
	cs_hex(info.root, 32, root);
	printf("records        %lld (payload+ts %.1f MB)\n", (long long) info.size, bytes / 1e6);
	printf("               wall s   records/s (wall)   cpu s   records/s (cpu)\n");
	printf("scan           %6.3f   %16.0f   %6.3f   %15.0f\n", scan_s, rows / scan_s, scan_c,
	       rows / scan_c);
	printf("verify         %6.3f   %16.0f   %6.3f   %15.0f\n", ver_s, info.size / ver_s, ver_c,
	       (double) info.size / ver_c);
	printf("verify / scan  %.2fx (wall), %.2fx (cpu)\n", ver_s / scan_s, ver_c / scan_c);
	printf("root           %s\n", root);
	ledger_close(l);
	return 0;
fail:
	fprintf(stderr, "ledger_bench: %s\n", e.msg);
	ledger_close(l);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "build"))
		return build(argv[2], strtol(argv[3], NULL, 10));
	if (argc == 3 && !strcmp(argv[1], "verify"))
		return verify(argv[2]);
	fprintf(stderr, "usage: ledger_bench build DIR N | verify DIR\n");
	return 2;
}
