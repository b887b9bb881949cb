#!/bin/sh
# Cold under a real cap against the physical bound: with the kernel's block
# throttle at C read IOPS on this machine's disk and R reads a query, no
# reader can do better than C / R queries a second. Through the release
# CLI, on small indexes on the real disk, O_DIRECT (every read reaches the
# throttle; R is what the throttle counted, so the bound is the cap's own):
#   hfresh  100,000 x 128 (synth, 135 postings of at most 96 KB, searchProbe
#           64): `coldstudy run`, 32 clients, cold start, QUERIES queries
#   phnsw   the paged comparator, 20,000 x 128 in 16 partitions, fanned out
#           16 ways: `coldstudy run`, 4 clients each on its reader pool,
#           PQUERIES queries, with an 8 MiB buffer pool (the index is 28 MB:
#           misses a query stay about the same from the first query to the
#           last, where the default 128 MiB would end up holding all of it
#           and leave nothing to bound); and `index query --cold --mode
#           fanout:16`, NQ queries one at a time, each from an empty pool
# For every cap in CAPS it prints QPS, reads a query (engine and throttle),
# the bound and QPS / bound (target >= 0.9) as one line, and the same as a
# JSON line with "row" so a caller can collect them.
#   BUILD=build CAPS="1000 3000" QUERIES=256 bench/io/capbound.sh
# Needs root and a writable blkio (v1) or io (v2) controller; about 2 to 4
# minutes at the defaults.
set -eu
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
CAPS=${CAPS:-"1000 3000"}
QUERIES=${QUERIES:-256}
PQUERIES=${PQUERIES:-24}
NQ=${NQ:-8}
W=${WORK:-/var/tmp/cs-capbound}
CS=$B/cli/coldstudy
if [ ! -x "$CS" ]; then
	[ -f "$B/build.ninja" ] || meson setup "$B" --buildtype=release >/dev/null
	ninja -C "$B" cli/coldstudy >/dev/null
fi
case "$W" in /var/tmp/*|/tmp/*) ;; *) echo "WORK must be under /var/tmp or /tmp"; exit 2 ;; esac
rm -rf "$W"
mkdir -p "$W"
trap 'rm -rf "$W"' EXIT INT TERM
# The bench's own production registry, gone with its folder: nothing it
# registers outlives it in the machine's (/var/lib/coldstudy).
export COLDSTUDY_PRODUCTION_REGISTRY="$W/production-registry.json"
HDATA="synth:n=100000,d=128,clusters=64,seed=1"
PDATA="synth:n=20000,d=128,clusters=64,seed=1"
QSPEC="synth:n=400,d=128,clusters=64,seed=2"

"$CS" index build --kind hfresh --data "$HDATA" --metric l2 --out "$W/src-h" -q >/dev/null
"$CS" index build --kind phnsw --data "$PDATA" --metric l2 --partitions 16 --m 16 --ef-construction 64 \
	--out "$W/src-p" -q >/dev/null
"$CS" init "$W/S" >/dev/null
cat > "$W/study.json" <<J
{"id":"capbound","production":{"paths":["$W/src-h","$W/src-p"]},"datasets":{"h":"$HDATA","p":"$PDATA"},
 "indexes":{"h":{"kind":"hfresh","dataset":"h","source":"$W/src-h","clone":"$W/clone-h"},
            "p":{"kind":"phnsw","dataset":"p","source":"$W/src-p","clone":"$W/clone-p"}},
 "scratch_dir":"$W/scratch"}
J
"$CS" study register "$W/S" "$W/study.json" >/dev/null
"$CS" clone "$W/src-h" "$W/clone-h" --study "$W/S" >/dev/null
"$CS" clone "$W/src-p" "$W/clone-p" --study "$W/S" >/dev/null
# the block device counts every process's reads: a busy neighbour can fail one validation
"$CS" validate "$W/S" --quiet --allow-no-device-stats ||
	"$CS" validate "$W/S" --quiet --allow-no-device-stats

row() { # what cap json-file: one line and one JSON row from a run record or index query's JSON
	python3 - "$@" <<'PY'
import json, sys
what, cap, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
d = json.load(open(path))
if "metrics" in d:   # a run record
    m, t = d["metrics"], d["throttle"]
    q, qps, er = m["queries"], m["qps"], m["engine_reads"]
    clients = d["features"]["clients"] if "features" in d else None
else:                # index query --json
    m, t = d, d["throttle"]
    q, qps, er = d["queries"] * d["repeat"], d["qps"], d["engine_reads"]
    clients = 1
tr = t["throttle_reads"]
rq = tr / q
bound = cap / rq
print("%-34s cap %5d  %8.2f qps  reads/q engine %6.1f throttle %6.1f  bound %7.2f  qps/bound %.3f"
      % (what, cap, qps, er / q, rq, bound, qps / bound))
print(json.dumps({"row": what, "cap": cap, "clients": clients, "queries": q, "qps": round(qps, 3),
                  "engine_reads_per_query": round(er / q, 2), "throttle_reads_per_query": round(rq, 2),
                  "bound_qps": round(bound, 3), "of_bound": round(qps / bound, 4),
                  "fanout_via": m.get("fanout_via"), "reader_threads": d.get("reader_threads")}))
PY
}

for cap in $CAPS; do
	printf '{"index":"%s","queries":{"spec":"%s"},"cold":true,"clients":32,"throttle":"riops=%s","strategy":"direct","query_count":%s}' \
		"$W/clone-h" "$QSPEC" "$cap" "$QUERIES" > "$W/h.json"
	"$CS" run "$W/S" "$W/h.json" --json -q > "$W/h.out"
	row "hfresh run, 32 clients" "$cap" "$W/h.out"
	printf '{"index":"%s","queries":{"spec":"%s"},"cold":true,"clients":4,"mode":"fanout","fanout":16,"throttle":"riops=%s","strategy":"direct","query_count":%s,"buffers_bytes":8388608}' \
		"$W/clone-p" "$QSPEC" "$cap" "$PQUERIES" > "$W/p.json"
	"$CS" run "$W/S" "$W/p.json" --json -q > "$W/p.out"
	row "phnsw run, 4 clients x fanout:16" "$cap" "$W/p.out"
	"$CS" index query "$W/clone-p" --queries "$QSPEC" --nq "$NQ" --cold --mode fanout:16 \
		--strategy direct --throttle "riops=$cap" --json -q > "$W/q.out"
	row "phnsw index query, fanout:16" "$cap" "$W/q.out"
done
