#!/bin/sh
# Replicates (issue 25, item 1): a spec with "replicates": 3 and a
# registered seed makes three runs from one `run`, each its own record with
# replicate index 1..3, of 3, and the first's run id as its group; replicate
# 1 draws the registered seed, 2 and 3 streams derived from it (different
# per-read means); `--replicate 2 --seed S` replays replicate 2 exactly;
# `--seed` alone on a spec of three replicates and `--replicate 4` are
# usage errors (exit 2); `runs --csv` gives replicate and replicate_group;
# "replicates" in a study's defaults is refused (exit 5), and so are
# replicates on a holdout target (exit 5). With queries.draw each replicate
# reads its own rows out of the registered range, the same rows as replicate
# i of another spec with that range; a draw without a count, or not larger
# than it, is refused (exit 5). Skips (77) while
# the phnsw kind is not built.
set -u
. "$(dirname "$0")/common.sh"
fail=0
setup_study "synth:n=4000,d=32,clusters=16,seed=1" 4
printf '{"index":"%s","queries":{"spec":"%s","first":0,"count":4},"cold":true,"k":10,%s}' \
	"$T/clone" "synth:n=40,d=32,clusters=16,seed=7" \
	'"partitions":[0],"device":"hdd-pool","device_time":"virtual","seed":5,"replicates":3' > "$T/r.json"
"$cs" run "$S" "$T/r.json" -q > "$T/ids" 2>"$T/err" || { echo "FAIL: run: $(cat "$T/err")"; fail=1; }
[ "$(wc -l < "$T/ids")" = 3 ] || { echo "FAIL: expected 3 run ids, got: $(cat "$T/ids")"; fail=1; }
r2=$(sed -n 2p "$T/ids")
"$cs" run "$S" "$T/r.json" -q --seed 5 >/dev/null 2>"$T/err"; got=$?
[ "$got" = 2 ] || { echo "FAIL: --seed without --replicate: exit $got, expected 2"; fail=1; }
"$cs" run "$S" "$T/r.json" -q --replicate 4 >/dev/null 2>"$T/err"; got=$?
[ "$got" = 2 ] || { echo "FAIL: --replicate 4 of 3: exit $got, expected 2"; fail=1; }
grep -q "registers 3 replicates" "$T/err" || { echo "FAIL: --replicate 4 message: $(cat "$T/err")"; fail=1; }
s2=$(python3 - "$S/ledger.db" "$r2" <<'PY'
import json, sqlite3, sys
for (p,) in sqlite3.connect(sys.argv[1]).execute("select payload from records where kind='run'"):
    r = json.loads(p)
    if r["run_id"] == sys.argv[2]:
        print(r["device_seed"])
PY
)
rr=$("$cs" run "$S" "$T/r.json" -q --replicate 2 --seed "$s2" 2>"$T/err") ||
	{ echo "FAIL: replay of replicate 2: $(cat "$T/err")"; fail=1; }
"$cs" run "$S" "$T/r.json" -q --replicate 2 --seed 6 >/dev/null 2>"$T/err"; got=$?
[ "$got" = 2 ] || { echo "FAIL: --replicate 2 --seed 6 (not its stream): exit $got, expected 2"; fail=1; }
"$cs" runs "$S" --csv > "$T/runs.csv" || { echo "FAIL: runs --csv"; fail=1; }
python3 - "$S/ledger.db" "$T/ids" "$rr" "$T/runs.csv" <<'PY' || fail=1
import csv, json, sqlite3, sys
db, ids, rr, runs_csv = sys.argv[1:]
ids = open(ids).read().split()
runs = {}
for (p,) in sqlite3.connect(db).execute("select payload from records where kind='run'"):
    r = json.loads(p)
    runs[r["run_id"]] = r
bad = []
reps = [runs[i]["replicate"] for i in ids if i in runs]
if [r["index"] for r in reps] != [1, 2, 3]: bad.append("indexes %r" % reps)
if any(r["of"] != 3 or r["group"] != ids[0] for r in reps): bad.append("of/group %r" % reps)
seeds = [runs[i]["device_seed"] for i in ids]
if seeds[0] != 5: bad.append("replicate 1 draws the registered seed 5, not %r" % seeds[0])
if len(set(seeds)) != 3: bad.append("seeds %r" % seeds)
means = [runs[i]["metrics"]["engine_read_ms_mean"] for i in ids]
if len(set(means)) != 3: bad.append("per-read means %r" % means)
if rr in runs:
    if runs[rr]["replicate"]["index"] != 2 or runs[rr]["replicate"]["group"] != rr: bad.append("replay's replicate %r" % runs[rr]["replicate"])
    if runs[rr]["metrics"]["engine_read_ms_mean"] != means[1]: bad.append("replay of replicate 2: %r != %r" % (runs[rr]["metrics"]["engine_read_ms_mean"], means[1]))
else:
    bad.append("replay run missing")
rows = {r["run_id"]: r for r in csv.DictReader(open(runs_csv))}
for k, i in enumerate(ids):
    if rows.get(i, {}).get("replicate") != str(k + 1) or rows[i].get("replicate_group") != ids[0]:
        bad.append("runs.csv row %s: %r" % (i, {c: rows.get(i, {}).get(c) for c in ("replicate", "replicates", "replicate_group")}))
print("seeds %r, per-read means %r" % (seeds, means))
print("\n".join("FAIL: " + x for x in bad) or "ok")
sys.exit(1 if bad else 0)
PY
# a query draw (queries.draw): each replicate reads its own count rows out of the registered
# range, drawn by its index, so replicate i of another spec with the same range reads the same
# rows (contrasted replicates stay paired); the record names the first row drawn
for d in hdd-pool nvme; do
	printf '{"index":"%s","queries":{"spec":"%s","first":4,"count":3,"draw":30},"cold":true,"k":10,%s}' \
		"$T/clone" "synth:n=40,d=32,clusters=16,seed=7" \
		"\"partitions\":[0],\"device\":\"$d\",\"device_time\":\"virtual\",\"replicates\":3" > "$T/draw-$d.json"
	"$cs" run "$S" "$T/draw-$d.json" -q > "$T/draw-$d.ids" 2>"$T/err" || { echo "FAIL: run draw-$d: $(cat "$T/err")"; fail=1; }
done
for i in $(cat "$T/draw-hdd-pool.ids" "$T/draw-nvme.ids"); do
	"$cs" run show "$S" "$i" --queries --csv > "$T/q-$i.csv" 2>"$T/err" || { echo "FAIL: run show $i: $(cat "$T/err")"; fail=1; }
done
python3 - "$S/ledger.db" "$T" "$T/draw-hdd-pool.ids" "$T/draw-nvme.ids" <<'PY' || fail=1
import csv, json, sqlite3, sys
db, T, a_ids, b_ids = sys.argv[1:]
runs = {}
for (p,) in sqlite3.connect(db).execute("select payload from records where kind='run'"):
    r = json.loads(p)
    runs[r["run_id"]] = r
bad = []
def rows(i):
    return sorted({int(r["q"]) for r in csv.DictReader(open("%s/q-%s.csv" % (T, i)))})
firsts = []
for side in (a_ids, b_ids):
    ids = open(side).read().split()
    f = [runs[i]["replicate"].get("queries_first") for i in ids]
    firsts.append(f)
    for i, q0 in zip(ids, f):
        if not isinstance(q0, int) or not 4 <= q0 <= 4 + 30 - 3:
            bad.append("%s: queries_first %r outside [4, 31]" % (i, q0))
        elif rows(i) != [q0, q0 + 1, q0 + 2]:
            bad.append("%s: read rows %r, drew %r" % (i, rows(i), q0))
if firsts[0] != firsts[1]:
    bad.append("replicate i of two specs with one range drew differently: %r / %r" % tuple(firsts))
if len(set(firsts[0])) < 2:
    bad.append("the three replicates drew the same rows: %r" % firsts[0])
print("draws %r" % firsts[0])
print("\n".join("FAIL: " + x for x in bad) or "ok")
sys.exit(1 if bad else 0)
PY
# a draw needs a count, and a range larger than it (exit 5)
for q in '"first":0,"draw":10' '"first":0,"count":10,"draw":10'; do
	printf '{"index":"%s","queries":{"spec":"q",%s},"cold":true}' "$T/clone" "$q" > "$T/bad-draw.json"
	"$cs" schema run --check "$T/bad-draw.json" >/dev/null 2>"$T/err"; got=$?
	[ "$got" = 5 ] || { echo "FAIL: queries {$q}: exit $got, expected 5"; fail=1; }
	grep -q 'queries.draw' "$T/err" || { echo "FAIL: queries {$q}: message $(cat "$T/err")"; fail=1; }
done
# a study's defaults cannot carry a spec's replicates
sed 's|"scratch_dir"|"defaults":{"replicates":2},"scratch_dir"|' "$T/study.json" > "$T/study2.json"
"$cs" schema study --check "$T/study2.json" >/dev/null 2>"$T/err"; got=$?
[ "$got" = 5 ] || { echo "FAIL: replicates in defaults: exit $got, expected 5"; fail=1; }
grep -q 'replicates' "$T/err" || { echo "FAIL: defaults message: $(cat "$T/err")"; fail=1; }
# a holdout target is observed by one run: replicates on one are refused at registration
python3 - "$T/study.json" "$T/study3.json" "$T/r.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["plan"] = {"holdout": {"targets": [sys.argv[3]], "metrics": ["wall_s"], "threshold": 0.35}}
json.dump(s, open(sys.argv[2], "w"))
PY
"$cs" study register "$S" "$T/study3.json" >/dev/null 2>"$T/err"; got=$?
[ "$got" = 5 ] || { echo "FAIL: replicates on a holdout target: exit $got, expected 5"; fail=1; }
grep -q "holdout target is observed by one run" "$T/err" || { echo "FAIL: holdout message: $(cat "$T/err")"; fail=1; }
exit $fail
