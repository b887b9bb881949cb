#!/bin/sh
# Power at registration and interval verdicts on real runs (issue 25,
# items 2 and 3): H1 says the hard-disk pool's per-read latency is at
# least twice NVMe's, decided by the Welch interval on the logs of
# engine_read_ms_mean. With one replicate a side validate refuses it as
# underpowered (exit 3, a refusal record naming power); registered
# underpowered with a rationale it passes; with three replicates a side
# it passes, `plan power` gives its power and the replicates for 0.9 (and
# takes exploratory pilot runs, refusing a design run as a pilot, exit 5),
# and the verdict carries the estimate, an interval wholly above 2 and n
# 3 / 3. Skips (77) while the phnsw kind is not built.
set -u
. "$(dirname "$0")/common.sh"
fail=0
setup_study "synth:n=4000,d=32,clusters=16,seed=1" 4
spec() { # file device replicates clone
	printf '{"index":"%s","queries":{"spec":"%s","first":0,"count":3},"cold":true,"k":10,%s}' \
		"$4" "synth:n=40,d=32,clusters=16,seed=7" \
		"\"partitions\":[0],\"device\":\"$2\",\"device_time\":\"virtual\",\"hypotheses\":[\"H1\"],\"replicates\":$3" > "$T/$1"
}
hyp() { # file extra-keys
	cat > "$T/$1" <<J
{"id":"H1","title":"hdd reads at least twice as slow as nvme","statement":"s","kind":"confirmatory",
 "metric":"engine_read_ms_mean","unit":"x","prediction":{"value":40,"band95":[10,400]},
 "accept":{"cmp":{"left":{"ratio":[{"agg":"median","metric":"engine_read_ms_mean","select":{"tags":["hdd"]}},
                                  {"agg":"median","metric":"engine_read_ms_mean","select":{"tags":["nvme"]}}]},"op":">=","right":2}},
 "reject":{"cmp":{"left":{"ratio":[{"agg":"median","metric":"engine_read_ms_mean","select":{"tags":["hdd"]}},
                                  {"agg":"median","metric":"engine_read_ms_mean","select":{"tags":["nvme"]}}]},"op":"<","right":2}},
 "decision":"interval",
 "interval":{"metric":"engine_read_ms_mean","select":{"tags":["hdd"]},"over":{"tags":["nvme"]},
             "op":">=","threshold":2,"method":"welch-log","sd_log":0.3}$2}
J
}
plan_study() { # study-dir hyp-file replicates
	"$cs" init "$1" >/dev/null || exit 1
	"$cs" register "$1" "$T/$2" >/dev/null || { echo "FAIL: register $2"; exit 1; }
	c="$T/clone-$(basename "$1")"
	spec "hdd.json" hdd-pool "$3" "$c"
	spec "nvme.json" nvme "$3" "$c"
	python3 - "$T/study.json" "$T/plan.json" "$c" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["indexes"]["p"]["clone"] = sys.argv[3]
s["plan"] = {"design": ["hdd.json", "nvme.json"], "hypotheses": {"H1": {"runs": ["hdd.json", "nvme.json"]}}}
json.dump(s, open(sys.argv[2], "w"))
PY
	"$cs" study register "$1" "$T/plan.json" >/dev/null || { echo "FAIL: study register"; exit 1; }
	"$cs" clone "$T/src" "$c" --study "$1" >/dev/null || { echo "FAIL: clone"; exit 1; }
}
validate_rc() { # study-dir
	"$cs" validate "$1" --quiet --allow-no-device-stats > "$T/val.out" 2>&1; echo $?
}
hyp h1.json ""
hyp h1u.json ',"underpowered":true,"underpowered_rationale":"one run a side: a smoke test"'
# 1. one replicate a side: no interval can be had, so the power is far below 0.8
plan_study "$T/S1" h1.json 1
got=$(validate_rc "$T/S1")
[ "$got" = 3 ] || { echo "FAIL: one replicate: validate exit $got, expected 3"; cat "$T/val.out"; fail=1; }
grep -q "power" "$T/val.out" || { echo "FAIL: refusal does not name power: $(cat "$T/val.out")"; fail=1; }
python3 - "$T/S1/ledger.db" <<'PY' || fail=1
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
refs = [json.loads(p) for (p,) in db.execute("select payload from records where kind='refusal'")]
vals = [json.loads(p) for (p,) in db.execute("select payload from records where kind='validation'")]
pw = [v for v in vals if v["check"] == "power:H1"]
ok = any(r["guard"] == "power" for r in refs) and pw and pw[-1]["passed"] is False and pw[-1]["detail"]["replicates"] == 1
print("one replicate: power %r" % (pw[-1]["detail"].get("power") if pw else None))
sys.exit(0 if ok else 1)
PY
# 2. the same, registered underpowered with a rationale: allowed
plan_study "$T/S2" h1u.json 1
got=$(validate_rc "$T/S2")
[ "$got" = 0 ] || { echo "FAIL: underpowered flagged: validate exit $got, expected 0"; cat "$T/val.out"; fail=1; }
# 3. three replicates a side: enough; the plan power table; the runs and the verdict
plan_study "$T/S3" h1.json 3
"$cs" plan power "$T/S3" > "$T/pp.out" 2>&1 || { echo "FAIL: plan power"; cat "$T/pp.out"; fail=1; }
cat "$T/pp.out"
got=$(validate_rc "$T/S3")
[ "$got" = 0 ] || { echo "FAIL: three replicates: validate exit $got, expected 0"; cat "$T/val.out"; fail=1; }
for f in hdd.json nvme.json; do
	"$cs" run "$T/S3" "$T/$f" -q >> "$T/ids" 2>"$T/err" || { echo "FAIL: run $f: $(cat "$T/err")"; fail=1; }
done
[ "$(wc -l < "$T/ids")" = 6 ] || { echo "FAIL: expected 6 runs: $(cat "$T/ids")"; fail=1; }
# a pilot: one exploratory run (a spec the plan does not name); a design run is refused as a pilot
sed 's/"replicates":3/"replicates":2/' "$T/hdd.json" > "$T/pilot.json"
"$cs" run "$T/S3" "$T/pilot.json" -q > "$T/pids" 2>"$T/err" || { echo "FAIL: pilot run: $(cat "$T/err")"; fail=1; }
"$cs" plan power "$T/S3" --pilot $(cat "$T/pids") > "$T/pp2.out" 2>&1 || { echo "FAIL: plan power --pilot"; cat "$T/pp2.out"; fail=1; }
grep -q "p " "$T/pp2.out" || { echo "FAIL: pilot spread not used: $(cat "$T/pp2.out")"; fail=1; }
"$cs" plan power "$T/S3" --pilot "$(head -1 "$T/ids")" >/dev/null 2>"$T/err"; got=$?
[ "$got" = 5 ] || { echo "FAIL: a design run as pilot: exit $got, expected 5"; fail=1; }
"$cs" verdicts "$T/S3" > "$T/v.out" 2>&1 || { echo "FAIL: verdicts"; cat "$T/v.out"; fail=1; }
cat "$T/v.out"
"$cs" verdicts "$T/S3" --json > "$T/v.json" 2>&1 || fail=1
python3 - "$T/v.json" <<'PY' || fail=1
import json, sys
v = [x for x in json.load(open(sys.argv[1])) if x["hypothesis"] == "H1"][0]
iv = v.get("interval") or {}
bad = []
if iv.get("n_select") != 3 or iv.get("n_over") != 3: bad.append("n %r / %r" % (iv.get("n_select"), iv.get("n_over")))
ci = iv.get("interval") or [0, 0]
if not (2 <= ci[0] <= iv.get("estimate", 0) <= ci[1]): bad.append("interval %r estimate %r" % (ci, iv.get("estimate")))
if iv.get("result") != "accept": bad.append("result %r" % iv.get("result"))
if v["verdict"] != "provisional": bad.append("verdict %r (no sceptic run: provisional)" % v["verdict"])
print("\n".join("FAIL: " + b for b in bad) or "ok")
sys.exit(1 if bad else 0)
PY
# the report shows the interval decision and the runs' replicates
"$cs" report "$T/S3" --out "$T/report" >/dev/null 2>"$T/err" || { echo "FAIL: report: $(cat "$T/err")"; fail=1; }
grep -q "Decisions from intervals" "$T/report/report.md" || { echo "FAIL: report has no interval table"; fail=1; }
grep -q "replicate 3 of 3, group" "$T/report/report.md" || { echo "FAIL: report's runs do not show replicates"; fail=1; }
# the first screen's Observed is the interval rule's own number: its estimate and bounds (issue 25)
sed -n '/^## At a glance/,/^Contents:/p' "$T/report/report.md" | grep '^| H1 |' > "$T/glance" || true
python3 - "$T/glance" "$T/v.json" <<'PY' || fail=1
import json, re, sys
row = open(sys.argv[1]).read()
v = [x for x in json.load(open(sys.argv[2])) if x["hypothesis"] == "H1"][0]["interval"]
m = re.search(r"\| ([0-9.,]+) \\?\[([0-9.,]+), ([0-9.,]+)\\?\] \(interval\) \|", row)  # Markdown escapes [ ]
num = lambda t: float(t.replace(",", ""))
ok = m and abs(num(m.group(1)) - v["estimate"]) <= 0.06 * v["estimate"] and \
     abs(num(m.group(2)) - v["interval"][0]) <= 0.06 * v["interval"][0] and \
     abs(num(m.group(3)) - v["interval"][1]) <= 0.06 * v["interval"][1]
print("first screen: " + (row.strip() if ok else "FAIL: H1's Observed is not its interval %r: %r" % (v, row)))
sys.exit(0 if ok else 1)
PY
grep "ratio of geometric means" "$T/report/report.md" | head -1
exit $fail
