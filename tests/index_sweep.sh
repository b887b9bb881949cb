#!/bin/sh
# The ann-benchmarks loop: `index sweep` over an HNSW index (--ef-search)
# and an HFresh one (--search-probe) writes a row a setting (recall, QPS
# median and spread, p50..p99.9, reads, build seconds, index bytes) as CSV,
# JSON lines and an SVG front; `index query --per-query` writes a row a
# timed query whose recalls average to the printed recall. The wrong knob
# for a kind is a usage error (2).
set -u
cs=${COLDSTUDY:?}
py=/usr/bin/python3
[ -x "$py" ] || py=python3
T=$(mktemp -d /var/tmp/cs-sweep-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
export COLDSTUDY_CACHE="$T/cache"
fail=0
no() { echo "FAIL: $*"; fail=1; }
base="synth:n=4000,d=16,clusters=20,seed=1"
q="synth:n=40,d=16,clusters=20,seed=2"
"$cs" index build --kind hnsw --data "$base" --metric l2 --out "$T/hnsw" -q >/dev/null || no "build hnsw"
"$cs" index build --kind hfresh --data "$base" --metric l2 --out "$T/hfr" -q >/dev/null || no "build hfresh"
"$cs" index sweep "$T/hnsw" --queries "$q" --ef-search 10,20,40,160 --repeat 2 --out "$T/h" >"$T/h.txt" || no "sweep hnsw: $(cat "$T/h.txt")"
"$cs" index sweep "$T/hfr" --queries "$q" --search-probe 1,4,16,64 --repeat 2 --out "$T/f" --json >"$T/f.out" || no "sweep hfresh"
for p in h f; do
	"$py" - "$T/$p" "$p" <<'PY' || fail=1
import csv, json, sys, xml.dom.minidom
pre, which = sys.argv[1], sys.argv[2]
knob = "ef_search" if which == "h" else "search_probe"
rows = [json.loads(l) for l in open(pre + ".jsonl")]
c = list(csv.DictReader(open(pre + ".csv")))
bad = 0
def fail(m):
    global bad; print("FAIL: %s: %s" % (which, m)); bad = 1
if [r[knob] for r in rows] != ([10, 20, 40, 160] if which == "h" else [1, 4, 16, 64]): fail("settings %s" % rows)
if len(c) != len(rows) or any(float(x["recall_at_k"]) != r["recall_at_k"] for x, r in zip(c, rows)): fail("csv differs from jsonl")
for r in rows:
    p = [r[k] for k in ("lat_p50_ms", "lat_p90_ms", "lat_p95_ms", "lat_p99_ms", "lat_p999_ms")]
    if p != sorted(p) or not 0 <= r["recall_at_k"] <= 1: fail("percentiles or recall %s" % r)
    if not r["qps_min"] <= r["qps"] <= r["qps_max"]: fail("QPS median outside its spread %s" % r)
    if not (r["build_s"] > 0 and r["index_bytes"] > 0 and r["queries"] == 40 and r["repeat"] == 2): fail("row %s" % r)
if rows[-1]["recall_at_k"] < rows[0]["recall_at_k"] or rows[-1]["recall_at_k"] < 0.9:
    fail("recall does not rise to 0.9 with the knob: %s" % [r["recall_at_k"] for r in rows])
svg = xml.dom.minidom.parse(pre + ".svg")
if svg.documentElement.tagName != "svg" or len(svg.getElementsByTagName("circle")) < len(rows): fail("the SVG front lacks its points")
sys.exit(bad)
PY
done
grep -q "^ef_search .*recall" "$T/h.txt" || no "sweep's table: $(head -2 "$T/h.txt")"
"$cs" index sweep "$T/hfr" --queries "$q" --ef-search 10 >/dev/null 2>&1; rc=$?
[ $rc = 2 ] || no "--ef-search on hfresh: exit $rc, expected 2"
"$cs" index sweep "$T/hnsw" --queries "$q" >/dev/null 2>&1; rc=$?
[ $rc = 2 ] || no "sweep without a knob: exit $rc, expected 2"
# per-query rows: recall averages to the printed recall, a row a timed query
"$cs" index query "$T/hnsw" --queries "$q" --ef-search 20 --repeat 3 --per-query "$T/pq.csv" --json >"$T/pq.json" || no "--per-query"
"$py" - "$T/pq.csv" "$T/pq.json" <<'PY' || fail=1
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
s = json.load(open(sys.argv[2]))
bad = 0
if len(rows) != 3 * 40 or list(rows[0])[:5] != ["pass", "q", "lat_real_ms", "reads", "recall"]:
    print("FAIL: per-query rows %d %s" % (len(rows), list(rows[0]))); bad = 1
first = [float(r["recall"]) for r in rows if r["pass"] == "0"]
if abs(sum(first) / len(first) - s["recall_at_k"]) > 1e-6:
    print("FAIL: per-query recall mean %s, printed %s" % (sum(first) / len(first), s["recall_at_k"])); bad = 1
lat = sorted(float(r["lat_real_ms"]) for r in rows)
if abs(lat[len(lat) // 2 - 1] + lat[len(lat) // 2] - 2 * s["lat_p50_ms"]) > 2e-3 + 1e-3 * s["lat_p50_ms"]:
    print("FAIL: per-query median latency differs from lat_p50_ms %s" % s["lat_p50_ms"]); bad = 1
sys.exit(bad)
PY
[ $fail = 0 ] || exit 1
echo "ok: sweep on hnsw and hfresh, CSV/JSONL/SVG, per-query rows"
