#!/bin/sh
# The paged comparator against real pgvector, page for page (issue 32): the
# same rows built both ways (PostgreSQL + pgvector HNSW per partition, and
# `index build --kind phnsw`), then per query the index pages each touches
# (every buffer access) and each reads cold (the server restarted before the
# query; `index query --cold` on the engine), for pgvector 0.5.1 (the seed's)
# and 0.8.6, each built from ../shared/vendor into a private copy of
# PostgreSQL's tree. Asserts the median per-query ratio engine/pgvector of
# accesses and of cold reads within 10%, the worst within a factor 1.5, the
# recall of both within 0.05 of each other, and no query short of k rows.
# Then, cold on 20 queries, serial against a fan-out over the 4 partitions on
# both sides (pgvector: Merge Append against 4 connections; the engine:
# --mode serial against fanout:4): asserts the fan-out returns the serial
# rows on each side, speeds each up by a median 1.1x or more (the lever
# works on both), and the engine's serial/fan-out ratio is within a factor
# 2.5 of pgvector's, query for query by median (1.3-1.5 measured: PostgreSQL
# reads with the kernel's read-ahead on, docs/pgvector.md).
# Skips (77) without root, the postgres user, the server headers and
# binaries, numpy, psycopg2, or the vendored archives.
set -u
cs=${COLDSTUDY:?}
src=${COLDSTUDY_SRC:?}
[ "$(id -u)" = 0 ] || { echo "needs root (the server runs as postgres)"; exit 77; }
id postgres >/dev/null 2>&1 || { echo "no postgres user"; exit 77; }
/usr/bin/python3 -c 'import numpy' 2>/dev/null || { echo "no numpy (python3-numpy)"; exit 77; }
/usr/bin/python3 -c 'import psycopg2' 2>/dev/null || { echo "no psycopg2 (python3-psycopg2)"; exit 77; }
T=$(mktemp -d /var/tmp/cs-pgvpages-XXXXXX)
chmod 755 "$T"
cleanup() {
	for v in 0.5.1 0.8.6; do
		[ -f "$T/w-$v/data/postmaster.pid" ] && [ -f "$T/bin-$v" ] &&
			runuser -u postgres -- "$(cat "$T/bin-$v")/pg_ctl" -D "$T/w-$v/data" \
				-m immediate stop >/dev/null 2>&1
	done
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
fail=0
port=5621
for v in 0.5.1 0.8.6; do
	rc=0
	bin=$(sh "$src/scripts/pgvector.sh" private "$v" "$T/pg-$v" 2>"$T/err") || rc=$?
	echo "$bin" >"$T/bin-$v"
	if [ $rc = 77 ]; then
		echo "skip: $(cat "$T/err") (apt-get install postgresql-server-dev-15; the archives are in ../shared/vendor)"
		exit 77
	fi
	[ $rc = 0 ] || { echo "FAIL: building pgvector $v: $(tail -3 "$T/err")"; exit 1; }
	/usr/bin/python3 "$src/tests/harness/pgvector_pages.py" --cs "$cs" --bindir "$bin" \
		--work "$T/w-$v" --n 8000 --nq 100 --cold-nq 20 --timed-nq 20 --port $port --out "$T/r-$v.json" \
		>"$T/sum-$v" 2>"$T/err" || { echo "FAIL: pgvector $v: $(tail -3 "$T/err")"; fail=1; continue; }
	port=$((port + 1))
	/usr/bin/python3 - "$T/r-$v.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
a, c = r["accesses_ratio"], r["cold_reads_ratio"]
print("pgvector %s: %d queries, %d rows x %d in %d partitions, ef_search %d: engine/pgvector "
      "index page accesses median %.3f worst %.3f; cold reads (%d queries) median %.3f worst %.3f "
      "(%.1f vs %.1f pages); recall %.3f vs %.3f"
      % (r["pgvector"], r["queries"], r["n"], r["dim"], r["partitions"], r["ef_search"],
         a["median"], a["worst"], c["n"], c["median"], c["worst"], r["cv_cold_reads_mean"],
         r["pg_cold_reads_mean"], r["cv_recall_mean"], r["pg_recall_mean"]))
pgs, cvs, q = r["pg_fanout_speedup"], r["cv_fanout_speedup"], r["fanout_speedup_ratio"]
print("pgvector %s: cold serial / fan-out %d over %d queries: pgvector %.2fx (%.1f / %.1f ms), "
      "engine %.2fx (%.1f / %.1f ms); engine/pgvector by query median %.2f (%.2f..%.2f)"
      % (r["pgvector"], r["fanout"], q["n"], pgs["median"], r["pg_serial_ms_median"],
         r["pg_fanout_ms_median"], cvs["median"], r["cv_serial_ms_median"],
         r["cv_fanout_ms_median"], q["median"], q["min"], q["max"]))
bad = []
if r["pg_fanout_ids_differ"]:
    bad.append("%d pgvector fan-outs returned other rows than the Merge Append" % r["pg_fanout_ids_differ"])
if r["cv_fanout_recall_differs"]:
    bad.append("%d engine fan-outs had another recall than serial" % r["cv_fanout_recall_differs"])
for side, s in (("pgvector", pgs), ("engine", cvs)):
    if s["median"] < 1.1:
        bad.append("%s fan-out speed-up %.2f below 1.1" % (side, s["median"]))
if not 0.4 <= q["median"] <= 2.5:
    bad.append("engine/pgvector fan-out speed-up %.2f outside [0.4, 2.5]" % q["median"])
for name, s in (("accesses", a), ("cold reads", c)):
    if not 0.9 <= s["median"] <= 1.1:
        bad.append("%s median ratio %.3f outside [0.9, 1.1]" % (name, s["median"]))
    if not 1 / 1.5 <= s["worst"] <= 1.5:
        bad.append("%s worst ratio %.3f outside [0.67, 1.5]" % (name, s["worst"]))
if abs(r["cv_recall_mean"] - r["pg_recall_mean"]) > 0.05:
    bad.append("recall %.3f (engine) against %.3f (pgvector)" % (r["cv_recall_mean"], r["pg_recall_mean"]))
if r["pg_short_results"]:
    bad.append("%d pgvector queries returned fewer than k rows" % r["pg_short_results"])
for b in bad:
    print("FAIL: pgvector %s: %s" % (r["pgvector"], b))
sys.exit(1 if bad else 0)
PY
done
[ $fail = 0 ] && echo "ok: the paged comparator reads pgvector's pages, 0.5.1 and 0.8.6"
exit $fail
