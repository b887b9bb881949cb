#!/bin/sh
# coldstudy replicate (issue 25, item 4): study A decides H1 (hdd-pool reads
# at least twice NVMe's, by the Welch interval over three replicates a
# side); `replicate A --out B --seed 7` makes B with the same hypothesis
# (same hash), the same plan (same spec hashes) but plan.seed 7, and a
# replication_of record holding A's signed checkpoint; B's runs, made in
# a copy of A's work folder with its own clone, draw other streams;
# `replicate compare A B` agrees (exit 0); a refutation in B makes a
# confirmatory verdict differ (exit 6); B's log verifies. Skips (77) while
# the phnsw kind is not built.
set -u
. "$(dirname "$0")/common.sh"
fail=0
"$bi" phnsw "synth:n=4000,d=32,clusters=16,seed=1" "$T/src" 4; rc=$?
[ $rc = 77 ] && { echo "phnsw not built yet"; exit 77; }
[ $rc = 0 ] || { echo "FAIL: build exit $rc"; exit 1; }
mkdir -p "$T/a/runs/work" "$T/b/runs/work"
for dev in hdd-pool nvme; do
	printf '{"index":"work/clone","queries":{"spec":"%s","first":0,"count":3},"cold":true,"k":10,%s}' \
		"synth:n=40,d=32,clusters=16,seed=7" \
		"\"partitions\":[0],\"device\":\"$dev\",\"device_time\":\"virtual\",\"hypotheses\":[\"H1\"],\"replicates\":3" \
		> "$T/a/runs/$dev.json"
done
cat > "$T/a/runs/study.json" <<J
{"id":"rep","production":{"paths":["$T/src"]},"datasets":{"base":"synth:n=4000,d=32,clusters=16,seed=1"},
 "indexes":{"p":{"kind":"phnsw","dataset":"base","source":"$T/src","clone":"../runs/work/clone"}},
 "plan":{"design":["hdd-pool.json","nvme.json"],"hypotheses":{"H1":{"runs":["hdd-pool.json","nvme.json"]}}}}
J
cat > "$T/h1.json" <<J
{"id":"H1","title":"hdd reads at least twice as slow as nvme","statement":"s","kind":"confirmatory",
 "metric":"engine_read_ms_mean","unit":"x","prediction":{"value":40,"band95":[10,400]},
 "accept":{"cmp":{"left":{"ratio":[{"agg":"median","metric":"engine_read_ms_mean","select":{"tags":["hdd"]}},
                                  {"agg":"median","metric":"engine_read_ms_mean","select":{"tags":["nvme"]}}]},"op":">=","right":2}},
 "reject":{"cmp":{"left":{"ratio":[{"agg":"median","metric":"engine_read_ms_mean","select":{"tags":["hdd"]}},
                                  {"agg":"median","metric":"engine_read_ms_mean","select":{"tags":["nvme"]}}]},"op":"<","right":2}},
 "decision":"interval",
 "interval":{"metric":"engine_read_ms_mean","select":{"tags":["hdd"]},"over":{"tags":["nvme"]},
             "op":">=","threshold":2,"method":"bootstrap","seed":3,"resamples":2000,"sd_log":0.3}}
J
A=$T/a/S B=$T/b/S
runs_in() { # work-folder study
	(cd "$1/runs" && for f in hdd-pool.json nvme.json; do
		"$cs" run "$2" "$T/a/runs/$f" -q || { echo "FAIL: run $2 $f" >&2; exit 1; }
	done) > "$1/ids" || fail=1
}
"$cs" init "$A" >/dev/null || exit 1
"$cs" register "$A" "$T/h1.json" >/dev/null || { echo "FAIL: register"; exit 1; }
"$cs" study register "$A" "$T/a/runs/study.json" >/dev/null || { echo "FAIL: study register A"; exit 1; }
"$cs" clone "$T/src" "$T/a/runs/work/clone" --study "$A" >/dev/null || { echo "FAIL: clone A"; exit 1; }
"$cs" validate "$A" --quiet --allow-no-device-stats >/dev/null 2>&1 || { echo "FAIL: validate A"; exit 1; }
runs_in "$T/a" "$A"
"$cs" replicate "$A" --out "$B" --seed 7 > "$T/rep.out" 2>&1 || { echo "FAIL: replicate"; cat "$T/rep.out"; fail=1; }
cat "$T/rep.out"
"$cs" clone "$T/src" "$T/b/runs/work/clone" --study "$B" >/dev/null || { echo "FAIL: clone B"; fail=1; }
"$cs" validate "$B" --quiet --allow-no-device-stats >/dev/null 2>&1 || { echo "FAIL: validate B"; fail=1; }
runs_in "$T/b" "$B"
"$cs" replicate compare "$A" "$B" > "$T/cmp.out" 2>&1; got=$?
cat "$T/cmp.out"
[ "$got" = 0 ] || { echo "FAIL: compare on agreement: exit $got, expected 0"; fail=1; }
"$cs" log verify "$B" >/dev/null 2>"$T/err" || { echo "FAIL: log verify B: $(cat "$T/err")"; fail=1; }
python3 - "$A" "$B" "$T/rep.ckpt" <<'PY' || fail=1
import json, sqlite3, sys
A, B = sys.argv[1:3]
def recs(S, kind):
    return [json.loads(p) for (p,) in sqlite3.connect(S + "/ledger.db").execute("select payload from records where kind=?", (kind,))]
bad = []
ha, hb = recs(A, "hypothesis"), recs(B, "hypothesis")
if [h["sha256"] for h in ha] != [h["sha256"] for h in hb]: bad.append("hypothesis hashes differ")
ra = sorted(s["sha256"] for s in recs(A, "study")[-1]["plan_specs"])
rb = sorted(s["sha256"] for s in recs(B, "study")[-1]["plan_specs"])
if ra != rb: bad.append("plan spec hashes differ: %r %r" % (ra, rb))
if recs(B, "study")[-1]["doc"]["plan"].get("seed") != 7: bad.append("plan.seed not 7")
ro = recs(B, "replication_of")
if len(ro) != 1: bad.append("%d replication_of records" % len(ro))
elif "coldstudy/" not in ro[0]["checkpoint"] or ro[0]["seed"] != 7: bad.append("replication_of %r" % ro[0])
sa = sorted(r["device_seed"] for r in recs(A, "run"))
sb = sorted(r["device_seed"] for r in recs(B, "run"))
if len(sa) != 6 or len(sb) != 6 or set(sa) & set(sb): bad.append("device seeds %r %r" % (sa, sb))
print("\n".join("FAIL: " + x for x in bad) or "ok")
sys.exit(1 if bad else 0)
PY
# a constructed disagreement: B's sceptic refutes H1
"$cs" refute "$B" H1 --because "constructed disagreement for the test" >/dev/null || { echo "FAIL: refute"; fail=1; }
"$cs" replicate compare "$A" "$B" > "$T/cmp2.out" 2>&1; got=$?
cat "$T/cmp2.out"
[ "$got" = 6 ] || { echo "FAIL: compare on disagreement: exit $got, expected 6"; fail=1; }
"$cs" replicate "$A" --out "$B" --seed 7 >/dev/null 2>&1; got=$?
[ "$got" = 3 ] || { echo "FAIL: replicate onto an existing study: exit $got, expected 3"; fail=1; }
exit $fail
