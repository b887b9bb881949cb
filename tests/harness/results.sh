#!/bin/sh
# Getting results out: `run` prints its id first and a summary, `-q` the id
# only, `--json` the record; `runs` has one row per run (table, CSV, JSON
# lines, JSON) with the ledger's own figures, kinds and every metric of the
# vocabulary; `run show` gives one run and its per-query rows; an unknown
# run id is exit 5. Then the README's "Getting results out" block is run
# as it stands (pandas and matplotlib where installed; scripts/deps.sh
# installs them), and the same figures are checked with python's csv module.
set -u
. "$(dirname "$0")/common.sh"
fail=0
setup_study "synth:n=3000,d=16,clusters=8,seed=1" 4
# H1 as an exploratory claim: the plan below maps no run to it, so as a confirmatory one it could
# never be decided, and validate's can-fail check would refuse it (issue 14)
sed 's/"kind": "confirmatory"/"kind": "exploratory"/' "$COLDSTUDY_SRC/studies/cold-query/hypotheses/H1.json" > "$T/H1.json"
"$cs" register "$S" "$T/H1.json" >/dev/null ||
	{ echo "FAIL: register H1"; exit 1; }
q='"queries":{"spec":"synth:n=30,d=16,clusters=8,seed=7","count":12}'
printf '{"index":"%s",%s,"cold":true,"hypotheses":["H1"],"tags":["a"]}' "$T/clone" "$q" > "$T/design.json"
printf '{"index":"%s",%s,"cold":false,"clients":2,"query_count":24,"tags":["b","c"]}' "$T/clone" "$q" > "$T/explore.json"
# a run is design because the plan names its spec (issue 13), not because it serves a hypothesis
python3 - "$T/study.json" "$T/study-plan.json" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1])); d["plan"] = {"design": ["design.json"]}
json.dump(d, open(sys.argv[2], "w"))
PY
"$cs" study register "$S" "$T/study-plan.json" >/dev/null || { echo "FAIL: study register with a plan"; exit 1; }
# what was registered since the last validation is checked before the first run
"$cs" validate "$S" --quiet --allow-no-device-stats || { echo "FAIL: validate after registering"; exit 1; }

"$cs" run "$S" "$T/design.json" --no-progress >"$T/run1.out" 2>"$T/err" ||
	{ echo "FAIL: design run: $(cat "$T/err")"; exit 1; }
id1=$(head -n1 "$T/run1.out")
echo "$id1" | grep -qx 'R[0-9][0-9]*' || { echo "FAIL: first line of run is '$id1', not a run id"; fail=1; }
grep -q 'queries in' "$T/run1.out" || { echo "FAIL: no summary after the run id"; cat "$T/run1.out"; fail=1; }
grep -q 'samples, under 100' "$T/run1.out" || { echo "FAIL: a p99 of 12 samples is not flagged"; fail=1; }
id2=$("$cs" run "$S" "$T/explore.json" -q) || { echo "FAIL: run -q"; exit 1; }
echo "$id2" | grep -qx 'R[0-9][0-9]*' || { echo "FAIL: run -q printed '$id2', not only the id"; fail=1; }
"$cs" run "$S" "$T/explore.json" --json >"$T/run3.json" 2>"$T/err" || { echo "FAIL: run --json: $(cat "$T/err")"; fail=1; }
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["run_id"]=="R0003" and r["status"]=="complete", r' "$T/run3.json" ||
	{ echo "FAIL: run --json is not the run record"; fail=1; }

"$cs" runs "$S" >"$T/table" || { echo "FAIL: runs"; fail=1; }
[ "$(grep -c '^R000' "$T/table")" = 3 ] || { echo "FAIL: runs table has not 3 rows"; cat "$T/table"; fail=1; }
"$cs" runs "$S" --csv >"$T/runs.csv" || { echo "FAIL: runs --csv"; fail=1; }
"$cs" runs "$S" --jsonl >"$T/runs.jsonl" || { echo "FAIL: runs --jsonl"; fail=1; }
"$cs" runs "$S" --json >"$T/runs.json" || { echo "FAIL: runs --json"; fail=1; }
"$cs" run show "$S" "$id1" --queries --csv >"$T/q.csv" || { echo "FAIL: run show --queries --csv"; fail=1; }
"$cs" run show "$S" "$id1" >"$T/show.txt" || { echo "FAIL: run show"; fail=1; }
grep -q '^  lat_p99_ms' "$T/show.txt" || { echo "FAIL: run show lists no lat_p99_ms"; fail=1; }
"$cs" run show "$S" R9999 >/dev/null 2>"$T/err"; rc=$?
[ $rc = 5 ] && grep -q R9999 "$T/err" || { echo "FAIL: unknown run: exit $rc: $(cat "$T/err")"; fail=1; }
"$cs" runs "$S" --csv --json >/dev/null 2>&1; rc=$?
[ $rc = 2 ] || { echo "FAIL: two formats: exit $rc, expected 2"; fail=1; }

python3 - "$S/ledger.db" "$T" "$id1" <<'PY' || fail=1
import csv, json, sqlite3, sys
db, T, id1 = sys.argv[1:]
vocab = ["wall_s", "queries", "qps", "lat_mean_ms", "lat_p50_ms", "lat_p99_ms", "recall_at_k",
         "engine_reads", "engine_read_ms_mean", "reads_per_query", "bytes_per_read", "device_reads",
         "device_read_ms_mean", "device_busy", "io_over_wall", "inflight_median",
         "resident_fraction_before", "mem_peak_bytes"]
recs = {}
for (p,) in sqlite3.connect(db).execute("select payload from records where kind='run' order by seq"):
    r = json.loads(p); recs[r["run_id"]] = r
rows = list(csv.DictReader(open(T + "/runs.csv", newline="")))
lines = [json.loads(l) for l in open(T + "/runs.jsonl")]
arr = json.load(open(T + "/runs.json"))
bad = 0
def fail(msg):
    global bad; print("FAIL:", msg); bad = 1
if len(rows) != 3 or len(lines) != 3 or len(arr) != 3: fail("not 3 rows in csv/jsonl/json")
if lines != arr: fail("--jsonl and --json differ")
for c in ["run_id", "kind", "status", "spec_file", "spec_sha256", "clients", "mode", "query_count"] + vocab:
    if c not in rows[0]: fail("csv lacks column " + c)
for row, js in zip(rows, lines):
    r = recs[row["run_id"]]
    if row["spec_sha256"] != r["spec_sha256"]: fail("spec hash differs for " + row["run_id"])
    if not row["spec_file"].endswith(".json"): fail("spec file missing: %r" % row["spec_file"])
    for m in vocab:
        v = r["metrics"][m]
        if v is None:
            if row[m] != "" or js[m] is not None: fail("%s %s: null shown as %r" % (row["run_id"], m, row[m]))
        elif float(row[m]) != float(v) or js[m] != v:
            fail("%s %s: csv %s, jsonl %s, ledger %s" % (row["run_id"], m, row[m], js[m], v))
    if int(row["clients"]) != r["features"]["clients"]: fail("clients differ")
kinds = [r["kind"] for r in rows]
if kinds != ["design", "exploratory", "exploratory"]: fail("kinds %s" % kinds)
# tags are derived from the settings; an exploratory run's own labels (b, c) are not among them
if "warm" not in rows[1]["tags"].split() or "b" in rows[1]["tags"].split(): fail("tags cell %r" % rows[1]["tags"])
q = list(csv.DictReader(open(T + "/q.csv", newline="")))
m = recs[id1]["metrics"]
if len(q) != m["queries"]: fail("%d query rows, the run says %d queries" % (len(q), m["queries"]))
mean = sum(float(x["lat_real_ms"]) for x in q) / len(q)
if abs(mean - m["lat_mean_ms"]) > 1e-6 * max(1, m["lat_mean_ms"]): fail("query rows' mean latency %g vs %g" % (mean, m["lat_mean_ms"]))
# one clock per column: a real-disk run's times are all named real
if list(q[0])[:5] != ["q", "client", "t_real_ms", "lat_real_ms", "read_real_ms"]: fail("query columns %s" % list(q[0]))
if any(c.endswith("_ms") and "_real_" not in c and "_virtual_" not in c for c in q[0]): fail("a time column names no clock: %s" % list(q[0]))
if rows[0]["clock"] != "real" or any(r["cold"] not in ("true", "false") or r["cold_each_query"] not in ("true", "false") for r in rows):
    fail("clock / boolean cells: %s" % [(r["clock"], r["cold"], r["cold_each_query"]) for r in rows])
if any(r["recall_scope"] not in ("whole_base", "") for r in rows): fail("recall_scope %s" % [r["recall_scope"] for r in rows])
sys.exit(bad)
PY

# Repeats: each from a cold state again, after warm-up queries; metrics the means, the
# spread and a 95% interval out in the tables (on the log scale: positive); raw rows tagged
# by repeat.
printf '{"index":"%s",%s,"cold":true,"repeat":3,"warmup_queries":2}' "$T/clone" "$q" > "$T/rep.json"
idr=$("$cs" run "$S" "$T/rep.json" -q) || { echo "FAIL: repeat run"; exit 1; }
"$cs" run show "$S" "$idr" >"$T/rep.txt" || fail=1
grep -q 'means of 3 repeats' "$T/rep.txt" || { echo "FAIL: run show does not give the repeats' spread"; fail=1; }
"$cs" runs "$S" --jsonl >"$T/rep.jsonl" || fail=1
"$cs" run show "$S" "$idr" --queries --csv >"$T/rep.csv" || fail=1
python3 - "$S/ledger.db" "$T" "$idr" <<'PY' || fail=1
import csv, json, math, sqlite3, sys
db, T, idr = sys.argv[1:]
rec = [json.loads(p) for (p,) in sqlite3.connect(db).execute("select payload from records where kind='run'")
       if json.loads(p)["run_id"] == idr][0]
bad = 0
def fail(m):
    global bad; print("FAIL:", m); bad = 1
reps = rec.get("repeats", [])
if len(reps) != 3: fail("%d repeats recorded, expected 3" % len(reps))
for m in ("wall_s", "qps", "lat_p99_ms", "engine_reads"):
    mean = sum(r[m] for r in reps) / len(reps)
    if abs(rec["metrics"][m] - mean) > 1e-9 * max(1, abs(mean)): fail("metrics.%s %s is not the repeats' mean %s" % (m, rec["metrics"][m], mean))
if any(r["resident_fraction_before"] != 0 for r in reps): fail("a repeat did not start cold: %s" % [r["resident_fraction_before"] for r in reps])
if any(r["queries"] != 12 for r in reps): fail("a repeat ran %s queries" % [r["queries"] for r in reps])
row = [json.loads(l) for l in open(T + "/rep.jsonl") if json.loads(l)["run_id"] == idr][0]
if row["repeat"] != 3 or row["warmup_queries"] != 2: fail("settings columns %s %s" % (row["repeat"], row["warmup_queries"]))
w = [r["wall_s"] for r in reps]; mu = sum(w) / 3
sd = math.sqrt(sum((x - mu) ** 2 for x in w) / 2)
if abs(row["wall_s_sd"] - sd) > 1e-9 * max(1, sd): fail("wall_s_sd %s, expected %s" % (row["wall_s_sd"], sd))
# the interval of a positive metric is the geometric mean's, t(0.975, 2) on the logs: never <= 0
lw = [math.log(x) for x in w]; lmu = sum(lw) / 3
lsd = math.sqrt(sum((x - lmu) ** 2 for x in lw) / 2)
half = 4.302652729911275 * lsd / math.sqrt(3)  # t(0.975, 2)
lo, hi = math.exp(lmu - half), math.exp(lmu + half)
if abs(row["wall_s_ci95_lo"] - lo) > 1e-6 * max(1, lo) or abs(row["wall_s_ci95_hi"] - hi) > 1e-6 * max(1, hi):
    fail("wall_s 95%% interval [%s, %s], expected [%s, %s]" % (row["wall_s_ci95_lo"], row["wall_s_ci95_hi"], lo, hi))
for m in ("wall_s", "qps", "lat_p99_ms", "lat_mean_ms"):
    if not row[m + "_ci95_lo"] > 0: fail("%s interval reaches %s (a positive quantity)" % (m, row[m + "_ci95_lo"]))
if row["lat_samples"] != 12 or row["lat_p99_indicative"] is not True: fail("percentile samples %s / flag %s" % (row["lat_samples"], row["lat_p99_indicative"]))
q = list(csv.DictReader(open(T + "/rep.csv", newline="")))
if len(q) != 36 or sorted({r["repeat"] for r in q}) != ["0", "1", "2"]: fail("%d raw rows, repeats %s" % (len(q), sorted({r["repeat"] for r in q})))
sys.exit(bad)
PY

# The README's walk-through, as written, in a directory where the study is S.
awk '/<!-- results-walkthrough/{f=1; next} f && /^```sh/{g=1; next} g && /^```/{exit} g' \
	"$COLDSTUDY_SRC/README.md" >"$T/walk.sh"
[ -s "$T/walk.sh" ] || { echo "FAIL: no walk-through block in README.md"; fail=1; }
sed -i "s/R0001/$id1/g" "$T/walk.sh"
# Debian's python3-pandas is under /usr/bin/python3, which another python3 on PATH may hide.
py=""
for p in python3 /usr/bin/python3; do
	"$p" -c 'import pandas, matplotlib' 2>/dev/null && { py=$p; break; }
done
if [ -n "$py" ]; then
	mkdir "$T/walk" && ln -s "$S" "$T/walk/S"
	(cd "$T/walk" && coldstudy() { "$cs" "$@"; } && python3() { "$py" "$@"; } &&
		MPLBACKEND=Agg && export MPLBACKEND && . "$T/walk.sh") \
		>"$T/walk.out" 2>&1 || { echo "FAIL: the README walk-through: $(tail -5 "$T/walk.out")"; fail=1; }
	for f in runs.csv runs.jsonl R0001-queries.csv latency-vs-reads.png R0001-latency-vs-reads.png; do
		f=$(echo "$f" | sed "s/R0001/$id1/")
		[ -s "$T/walk/$f" ] || { echo "FAIL: the walk-through made no $f"; fail=1; }
	done
	grep -q "$id1" "$T/walk.out" || { echo "FAIL: the walk-through's table lacks $id1"; fail=1; }
else
	echo "pandas or matplotlib not installed (scripts/deps.sh): README walk-through's python part not run"
fi
[ $fail = 0 ] || exit 1
echo "ok: 3 runs out as table, CSV, JSON lines and JSON; per-query rows; README walk-through"
