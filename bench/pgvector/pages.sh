#!/bin/sh
# The paged comparator against real pgvector at the seed's shape: the same
# rows in P partitions built both ways, then per query the index pages each
# touches and each reads cold (PostgreSQL restarted before every cold query;
# `coldstudy index query --cold` on the engine), for each pgvector version
# built from ../shared/vendor into a private copy of PostgreSQL's tree. Uses
# the README's release build of the CLI. Then on the first TIMED_NQ queries
# the cold serial/fan-out ratio on both (pgvector: Merge Append against
# FANOUT connections; the engine: --mode serial against fanout:FANOUT), the
# data directory and the index evicted from the page cache before each run.
# Run as root.
#
#   bench/pgvector/pages.sh [CS] [N] [DIM] [PARTS] [NQ] [COLD_NQ] [VERSIONS] [TIMED_NQ] [FANOUT]
#   defaults: build/cli/coldstudy 64000 768 64 100 100 "0.5.1 0.8.6" 20 8
#   (64,000 rows: 1,000 a partition, more than ef_search 40 reaches)
# Prints one summary line a version and leaves the per-query JSON in
# ${OUT:-bench/out/pgvector}/pages-VERSION.json.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
cs=$(realpath "${1:-$here/build/cli/coldstudy}")
n=${2:-64000} dim=${3:-768} parts=${4:-64} nq=${5:-100} coldnq=${6:-100}
versions=${7:-0.5.1 0.8.6} timednq=${8:-20} fanout=${9:-8}
out=${OUT:-$here/bench/out/pgvector}
mkdir -p "$out"
T=$(mktemp -d /var/tmp/cs-pgvbench-XXXXXX)
chmod 755 "$T"
cleanup() {
	for v in $versions; do
		[ -f "$T/w-$v/data/postmaster.pid" ] && [ -f "$T/bin-$v" ] &&
			runuser -u postgres -- "$(cat "$T/bin-$v")/pg_ctl" -D "$T/w-$v/data" \
				-m immediate stop >/dev/null 2>&1
	done
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
port=5631
for v in $versions; do
	sh "$here/scripts/pgvector.sh" private "$v" "$T/pg-$v" >"$T/bin-$v"
	/usr/bin/python3 "$here/tests/harness/pgvector_pages.py" --cs "$cs" --bindir "$(cat "$T/bin-$v")" \
		--work "$T/w-$v" --n "$n" --dim "$dim" --parts "$parts" --nq "$nq" --cold-nq "$coldnq" \
		--timed-nq "$timednq" --fanout "$fanout" --port $port --out "$out/pages-$v.json" >/dev/null
	port=$((port + 1))
	/usr/bin/python3 - "$out/pages-$v.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
a, c = r["accesses_ratio"], r["cold_reads_ratio"]
print("pgvector %s | %d x %d, %d partitions, ef_search %d | accesses median %.3f worst %.3f "
      "(%.3f..%.3f) | cold reads over %d queries median %.3f worst %.3f (%.3f..%.3f) | "
      "%.1f / %.1f pages a cold query | recall %.3f / %.3f | build %.1f s / %.1f s"
      % (r["pgvector"], r["n"], r["dim"], r["partitions"], r["ef_search"], a["median"],
         a["worst"], a["min"], a["max"], c["n"], c["median"], c["worst"], c["min"], c["max"],
         r["cv_cold_reads_mean"], r["pg_cold_reads_mean"], r["cv_recall_mean"],
         r["pg_recall_mean"], r["cv_build_s"], r["pg_build_s"]))
if "fanout_speedup_ratio" in r:
    p, c, q = r["pg_fanout_speedup"], r["cv_fanout_speedup"], r["fanout_speedup_ratio"]
    print("pgvector %s | cold serial / fan-out %d over %d queries: pgvector %.2fx (%.1f / %.1f ms) "
          "| engine %.2fx (%.1f / %.1f ms) | engine/pgvector median %.2f (%.2f..%.2f) | "
          "other rows: %d / %d" % (r["pgvector"], r["fanout"], q["n"], p["median"],
          r["pg_serial_ms_median"], r["pg_fanout_ms_median"], c["median"],
          r["cv_serial_ms_median"], r["cv_fanout_ms_median"], q["median"], q["min"], q["max"],
          r["pg_fanout_ids_differ"], r["cv_fanout_recall_differs"]))
PY
done
