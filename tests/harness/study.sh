#!/bin/sh
# A whole small study, end to end: init, register, a run refused before
# validate, validate, build a small partitioned index (phnsw), clone, the
# guard cases through the command line (each message and refusal record
# in the user's spelling, never a /proc/PID/fd path), three runs (serial
# cold, fan-out cold, warm), then `log verify` and every metric present in
# every run.
# Skips (77) while the phnsw kind is not built.
set -u
cs=${COLDSTUDY:?}
bi=${BUILD_INDEX:?}
command -v python3 >/dev/null 2>&1 || exit 77
T=$(mktemp -d /var/tmp/cs-study-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
fail=0
expect() { # code description command...
	want=$1; what=$2; shift 2
	"$@" >"$T/out" 2>"$T/err"; got=$?
	if [ "$got" != "$want" ]; then
		echo "FAIL: $what: exit $got, expected $want: $(cat "$T/err")"; grep -i fail "$T/out"; fail=1
	fi
}
base="synth:n=6000,d=32,clusters=16,seed=1"
queries="synth:n=40,d=32,clusters=16,seed=7"
"$bi" phnsw "$base" "$T/src" 8
rc=$?
[ $rc = 77 ] && { echo "phnsw not built yet"; exit 77; }
[ $rc = 0 ] || { echo "FAIL: build exit $rc"; exit 1; }

expect 0 "init" "$cs" init "$T/S"
cat > "$T/study.json" <<J
{"id":"cold-query","production":{"paths":["$T/src"],"hosts":["pg-prod-1"]},
 "datasets":{"base":"$base","queries":"$queries"},
 "indexes":{"p":{"kind":"phnsw","dataset":"base","source":"$T/src","clone":"$T/clone"}},
 "scratch_dir":"$T/scratch","defaults":{"k":10,"strategy":"pread","samplers":{"iostat_s":0.2,"memory_s":0.2}}}
J
printf '{"id":"x","production":{"paths":["/p"]},"typo":1}' > "$T/bad.json"
expect 5 "bad study spec" "$cs" study register "$T/S" "$T/bad.json"
grep -q '\$.typo: unknown key' "$T/err" || { echo "FAIL: bad study message: $(cat "$T/err")"; fail=1; }
expect 0 "study register" "$cs" study register "$T/S" "$T/study.json"
expect 0 "clone" "$cs" clone "$T/src" "$T/clone" --study "$T/S"
expect 3 "clone onto production" "$cs" clone "$T/clone" "$T/src/inner" --study "$T/S"

run() { # name json-body
	printf '{"index":"%s","queries":{"spec":"queries","first":0,"count":8},%s}' "$T/clone" "$2" > "$T/$1.json"
}
run serial '"cold":true,"tags":["cold","serial"]'
run fanout '"cold":true,"mode":"fanout","fanout":4,"clients":2,"query_count":16,"mem_cap_bytes":2147483648,"tags":["cold","fanout"]'
run warm '"cold":false,"tags":["warm"]'
expect 3 "run before validate" "$cs" run "$T/S" "$T/serial.json" --no-progress
grep -q "refused (validated)" "$T/err" || { echo "FAIL: before-validate message: $(cat "$T/err")"; fail=1; }
expect 0 "validate" "$cs" validate "$T/S" --allow-no-device-stats

# guard cases through the command line
printf '{"index":"%s","queries":{"spec":"queries","count":2},"cold":true}' "$T/src" > "$T/prod.json"
expect 3 "run on production" "$cs" run "$T/S" "$T/prod.json" --no-progress
ln -s "$T/src" "$T/sneaky"
printf '{"index":"%s/","queries":{"spec":"queries","count":2},"cold":true}' "$T/sneaky" > "$T/prod2.json"
expect 3 "run on production through a symlink" "$cs" run "$T/S" "$T/prod2.json" --no-progress
mkdir "$T/nomarker"; cp "$T/src/"* "$T/nomarker/"
printf '{"index":"%s","queries":{"spec":"queries","count":2},"cold":true}' "$T/nomarker" > "$T/nm.json"
expect 3 "run without a clone marker" "$cs" run "$T/S" "$T/nm.json" --no-progress
# the user's spelling in the message and the permanent record, never a held descriptor's /proc path
grep -q "/proc/" "$T/err" && { echo "FAIL: the refusal message shows a /proc path: $(cat "$T/err")"; fail=1; }
grep -q "$T/nomarker" "$T/err" || { echo "FAIL: the refusal message does not name $T/nomarker: $(cat "$T/err")"; fail=1; }
python3 - "$T/S/ledger.db" "$T/nomarker" <<'PY' || fail=1
import json, sqlite3, sys
rows = [json.loads(p) for (p,) in sqlite3.connect(sys.argv[1]).execute(
    "select payload from records where kind='refusal'")]
clone = [r for r in rows if r["guard"] == "clone"]
bad = [r for r in rows if "/proc/" in r.get("target", "") + r["why"] + r.get("target_resolved", "")]
if not clone or clone[-1]["target"] != sys.argv[2] or clone[-1].get("target_resolved") not in (None, sys.argv[2]):
    print("FAIL: the clone refusal's target is not the path typed: %s" % clone); sys.exit(1)
if bad:
    print("FAIL: refusal records with a /proc path: %s" % bad); sys.exit(1)
PY
run unreg '"cold":true,"hypotheses":["H99"]'
expect 3 "run for an unregistered hypothesis" "$cs" run "$T/S" "$T/unreg.json" --no-progress
expect 3 "holdout without predictions" "$cs" run "$T/S" "$T/serial.json" --holdout --no-progress
mkdir "$T/repo" && (cd "$T/repo" && git init -q . && touch dirty) 2>/dev/null
expect 3 "enforce-clean on a dirty tree" env COLDSTUDY_SRC="$T/repo" "$cs" run "$T/S" "$T/serial.json" --enforce-clean --no-progress
printf '{"index":"%s","queries":{"spec":"queries"},"cold":true,"ef_serch":3}' "$T/clone" > "$T/typo.json"
expect 5 "run spec with a typo" "$cs" run "$T/S" "$T/typo.json" --no-progress

for r in serial fanout warm; do
	expect 0 "run $r" "$cs" run "$T/S" "$T/$r.json" --no-progress
done
expect 0 "log verify" "$cs" log verify "$T/S"

python3 - "$T/S/ledger.db" <<'PY' || fail=1
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
want = ["wall_s", "queries", "qps", "lat_mean_ms", "lat_p50_ms", "lat_p99_ms", "recall_at_k",
        "engine_reads", "engine_read_ms_mean", "reads_per_query", "bytes_per_read", "device_reads",
        "device_read_ms_mean", "device_busy", "io_over_wall", "inflight_median", "inflight_max",
        "fanout_via", "resident_fraction_before", "mem_peak_bytes"]
runs = [json.loads(p) for (p,) in db.execute("select payload from records where kind='run' order by seq")]
refusals = [json.loads(p)["guard"] for (p,) in db.execute("select payload from records where kind='refusal'")]
bad = 0
if len(runs) != 3:
    print("FAIL: %d run records, expected 3" % len(runs)); bad = 1
for r in runs:
    m = r["metrics"]
    missing = [k for k in want if k not in m]
    if missing:
        print("FAIL: run %s lacks %s" % (r["run_id"], missing)); bad = 1
    if "applied" not in r.get("mem_cap", {}):
        print("FAIL: run %s does not record its memory cap" % r["run_id"]); bad = 1
    for k in ("raw", "host", "features", "spec_sha256", "index"):
        if k not in r:
            print("FAIL: run %s lacks %s" % (r["run_id"], k)); bad = 1
    print("%s %-14s wall %.3f s  qps %.1f  reads/q %.1f  io/wall %.3f  recall %.3f  resident %.3f  dev reads %s" % (
        r["run_id"], ",".join(r["tags"]), m["wall_s"], m["qps"], m["reads_per_query"],
        m["io_over_wall"], m["recall_at_k"] or -1, m["resident_fraction_before"], m["device_reads"]))
# the pread fan-out ran on synchronous readers, and the record says so; serial runs have none
if len(runs) > 1 and (runs[1]["metrics"]["fanout_via"] != "threads" or runs[0]["metrics"]["fanout_via"] is not None):
    print("FAIL: fanout_via %s / %s" % (runs[1]["metrics"]["fanout_via"], runs[0]["metrics"]["fanout_via"])); bad = 1
if len(runs) > 1 and runs[1]["mem_cap"].get("requested_bytes") != 2147483648:
    print("FAIL: the fan-out run's memory cap was not recorded"); bad = 1
cold = [r for r in runs if r["spec"]["cold"]]
if any(r["metrics"]["resident_fraction_before"] != 0 for r in cold):
    print("FAIL: a cold run started warm"); bad = 1
if runs and runs[2]["metrics"]["engine_reads"] != 0 and runs[2]["metrics"]["resident_fraction_before"] < 0.5:
    print("FAIL: the warm run was not warm"); bad = 1
if runs and runs[0]["metrics"]["engine_reads"] == 0:
    print("FAIL: the cold run read nothing"); bad = 1
for g in ("validated", "production", "clone", "registered", "holdout-predictions", "clean-tree"):
    if g not in refusals:
        print("FAIL: no %s refusal recorded (%s)" % (g, refusals)); bad = 1
sys.exit(bad)
PY
exit $fail
