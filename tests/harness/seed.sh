#!/bin/sh
# Each run draws from its own random stream (issue 14, item 1): two runs
# of one spec under hdd-pool in virtual time record different device
# seeds and give different per-read latency means, and each, run again
# with `--seed` set to its recorded device_seed, reproduces its per-read
# latencies exactly (every query's read_ms, and the mean); the repeats of
# one run draw streams of their own too. A bad --seed is
# a usage error (exit 2). Skips (77) while the phnsw kind is not built.
set -u
. "$(dirname "$0")/common.sh"
fail=0
setup_study "synth:n=4000,d=32,clusters=16,seed=1" 4
printf '{"index":"%s","queries":{"spec":"%s","first":0,"count":4},"cold":true,"k":10,%s}' \
	"$T/clone" "synth:n=40,d=32,clusters=16,seed=7" \
	'"partitions":[0],"device":"hdd-pool","device_time":"virtual"' > "$T/v.json"
run() { # extra args...; prints the run id
	"$cs" run "$S" "$T/v.json" -q "$@" 2>"$T/err" || { echo "FAIL: run $*: $(cat "$T/err")" >&2; echo FAILED; }
}
a=$(run); b=$(run)
printf '{"index":"%s","queries":{"spec":"%s","first":0,"count":4},"cold":true,"k":10,%s}' \
	"$T/clone" "synth:n=40,d=32,clusters=16,seed=7" \
	'"partitions":[0],"device":"hdd-pool","device_time":"virtual","repeat":2' > "$T/rep.json"
rep=$("$cs" run "$S" "$T/rep.json" -q 2>"$T/err") || { echo "FAIL: repeat run: $(cat "$T/err")"; fail=1; }
seed_of() {
	python3 - "$S/ledger.db" "$1" <<'PY'
import json, sqlite3, sys
for (p,) in sqlite3.connect(sys.argv[1]).execute("select payload from records where kind='run'"):
    r = json.loads(p)
    if r["run_id"] == sys.argv[2]:
        print(r["device_seed"])
PY
}
sa=$(seed_of "$a"); sb=$(seed_of "$b")
ra=$(run --seed "$sa"); rb=$(run --seed "$sb")
"$cs" run "$S" "$T/v.json" -q --seed 9007199254740992 >/dev/null 2>&1; got=$?
[ "$got" = 2 ] || { echo "FAIL: --seed 2^53: exit $got, expected 2"; fail=1; }
"$cs" run "$S" "$T/v.json" -q --seed x1 >/dev/null 2>&1; got=$?
[ "$got" = 2 ] || { echo "FAIL: --seed x1: exit $got, expected 2"; fail=1; }
for i in "$a" "$b" "$ra" "$rb"; do
	"$cs" run show "$S" "$i" --queries --json > "$T/q.$i.json" 2>"$T/err" ||
		{ echo "FAIL: run show $i: $(cat "$T/err")"; fail=1; }
done
python3 - "$S/ledger.db" "$T" "$a" "$b" "$ra" "$rb" "$rep" <<'PY' || fail=1
import json, sqlite3, sys
db, T, a, b, ra, rb, rep_run = sys.argv[1:]
runs = {}
for (p,) in sqlite3.connect(db).execute("select payload from records where kind='run'"):
    r = json.loads(p)
    runs[r["run_id"]] = r
bad = []
def mean(i): return runs[i]["metrics"]["engine_read_ms_mean"]
def rows(i):
    j = json.load(open("%s/q.%s.json" % (T, i)))
    q = j["queries"] if isinstance(j, dict) else j
    return [(x["q"], x["reads"], x["read_virtual_ms"]) for x in q]
for i in (a, b, ra, rb):
    if i not in runs: bad.append("run %s missing" % i)
if not bad:
    if runs[a]["device_seed"] == runs[b]["device_seed"]: bad.append("one seed for two runs")
    if not all(0 <= runs[i]["device_seed"] < 2**53 for i in (a, b)): bad.append("seed range")
    if mean(a) == mean(b): bad.append("two runs, one per-read mean %r" % mean(a))
    if runs[a]["metrics"]["engine_reads"] != runs[b]["metrics"]["engine_reads"]: bad.append("reads differ between runs")
    for orig, rep in ((a, ra), (b, rb)):
        if runs[rep]["device_seed"] != runs[orig]["device_seed"]: bad.append("replay seed not recorded")
        if mean(rep) != mean(orig): bad.append("replay of %s: mean %r != %r" % (orig, mean(rep), mean(orig)))
        if not rows(orig) or rows(rep) != rows(orig): bad.append("replay of %s: per-query read times differ (or none)" % orig)
    print("per-read means: %s %.4f ms (seed %d), %s %.4f ms (seed %d); replays %.4f, %.4f"
          % (a, mean(a), runs[a]["device_seed"], b, mean(b), runs[b]["device_seed"], mean(ra), mean(rb)))
rr = runs.get(rep_run, {}).get("repeats") or []
if len(rr) != 2: bad.append("repeat run: %d repeats recorded" % len(rr))
elif rr[0]["engine_read_ms_mean"] == rr[1]["engine_read_ms_mean"]: bad.append("two repeats, one stream: %r" % rr[0]["engine_read_ms_mean"])
else: print("repeats: %.4f, %.4f ms" % (rr[0]["engine_read_ms_mean"], rr[1]["engine_read_ms_mean"]))
print("per-query rows compared: %d" % len(rows(a)))
print("\n".join("FAIL: " + x for x in bad) or "ok")
sys.exit(1 if bad else 0)
PY
exit $fail
