#!/bin/sh
# The disk-tier study's files (studies/disk-tier): the hypotheses register,
# the study spec with its plan registers (every run spec it names hashed),
# and the plan is sound as a design: every selection of a hypothesis's rules
# matches exactly one of the runs the plan maps to it (so no rule is decided
# by a run it does not name), the two sides of every ratio select different
# runs that differ in the knob the hypothesis is about, and the holdout
# targets are settings no design run used, on queries no design or sceptic
# run touched. With DISK_TIER_FULL=1 (the slow suite) the whole study also
# runs end to end on a small synthetic set through scripts/demo-disk-tier.sh.
set -u
cs=${COLDSTUDY:?}
src=${COLDSTUDY_SRC:?}
command -v python3 >/dev/null 2>&1 || exit 77
T=$(mktemp -d /var/tmp/cs-disktier-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
fail=0
cp -r "$src/studies/disk-tier/runs" "$T/runs"
cd "$T/runs" || exit 1
mkdir -p work
BASE="synth:n=3000,d=32,clusters=8,seed=1"
"$cs" index build --kind hfresh --data "$BASE" --metric l2 --out work/prod-index -q || { echo "FAIL: index build"; exit 1; }
sed -e "s|\"fashion-mnist:train\"|\"$BASE\"|" -e "s|\"fashion-mnist:test\"|\"synth:n=5200,d=32,clusters=8,seed=2\"|" \
	study.json > study.t.json
"$cs" init ../S >/dev/null || { echo "FAIL: init"; exit 1; }
"$cs" register ../S "$src"/studies/disk-tier/hypotheses/H*.json >/dev/null || { echo "FAIL: register the hypotheses"; fail=1; }
"$cs" study register ../S study.t.json >"$T/out" 2>&1 || { echo "FAIL: study register: $(cat "$T/out")"; fail=1; }
n=$(sqlite3 ../S/ledger.db "select json_array_length(payload, '\$.plan_specs') from records where kind='study'" 2>/dev/null || echo "?")
echo "plan specs hashed: $n"
# validate's can-fail:Hn checks pass for every hypothesis (each contrast differs in its factor only)
"$cs" clone work/prod-index work/clone --study ../S >/dev/null 2>&1 || { echo "FAIL: clone"; fail=1; }
"$cs" validate ../S --quiet >"$T/v" 2>&1 || "$cs" validate ../S --quiet --allow-no-device-stats >"$T/v" 2>&1 ||
	{ echo "FAIL: validate: $(grep -i 'can-fail\|refused' "$T/v" | head -5)"; fail=1; }
np=$(sqlite3 ../S/ledger.db "select count(*) from records where kind='validation' and json_extract(payload,'\$.check') like 'can-fail:%' and json_extract(payload,'\$.passed')" 2>/dev/null || echo 0)
[ "$np" -ge 12 ] || { echo "FAIL: $np can-fail checks passed, expected 12"; fail=1; }
# issue 25: the interval hypotheses (H7, H10, H12) pass validate's power check with the
# replicates the plan registers, and `plan power` prints each with its power and exits 0
# (validate may have run twice, with --allow-no-device-stats: count hypotheses, not records)
npw=$(sqlite3 ../S/ledger.db "select group_concat(h) from (select distinct substr(json_extract(payload,'\$.check'), 7) h from records where kind='validation' and json_extract(payload,'\$.check') like 'power:%' and json_extract(payload,'\$.passed') order by h)" 2>/dev/null || echo "?")
nfail=$(sqlite3 ../S/ledger.db "select count(*) from records where kind='validation' and json_extract(payload,'\$.check') like 'power:%' and not json_extract(payload,'\$.passed')" 2>/dev/null || echo "?")
[ "$npw" = "H10,H12,H7" ] && [ "$nfail" = 0 ] ||
	{ echo "FAIL: power checks passed for '$npw' ($nfail failed), expected H10,H12,H7 and none failed"; fail=1; }
"$cs" plan power ../S >"$T/pw" 2>&1 || { echo "FAIL: plan power: $(cat "$T/pw")"; fail=1; }
for h in H7 H10 H12; do
	grep -q "^$h .* ok\$" "$T/pw" || { echo "FAIL: plan power has no passing row for $h: $(cat "$T/pw")"; fail=1; }
done
python3 - "$src/studies/disk-tier" <<'PY' || fail=1
import glob, json, os, sys
top = sys.argv[1]
study = json.load(open(os.path.join(top, "runs", "study.json")))
plan = study["plan"]
spec = lambda f: json.load(open(os.path.join(top, "runs", f)))
hyps = {json.load(open(f))["id"]: json.load(open(f)) for f in glob.glob(os.path.join(top, "hypotheses", "H*.json"))}
bad = []
def sels(rule, out):
    if isinstance(rule, dict):
        if "ratio" in rule:
            out.append(("ratio", [r["select"] for r in rule["ratio"]]))
        elif "select" in rule:
            out.append(("one", [rule["select"]]))
        for v in rule.values():
            sels(v, out)
    elif isinstance(rule, list):
        for v in rule:
            sels(v, out)
    return out
def knobs(s):
    return {k: s.get(k) for k in ("device", "throttle", "clients", "search_probe", "strategy", "readahead", "query_count")}
if sorted(hyps) != sorted(plan["hypotheses"]):
    bad.append("hypotheses %s, plan maps %s" % (sorted(hyps), sorted(plan["hypotheses"])))
for h, m in plan["hypotheses"].items():
    for group in ("runs", "sceptic"):
        runs = {f: spec(f) for f in m[group]}
        for kind, tagsets in sels([hyps[h]["accept"], hyps[h]["reject"]], []):
            matched = []
            for sel in tagsets:
                hit = [f for f, s in runs.items() if set(sel.get("tags", [])) <= set(s["tags"])
                       and not set(sel.get("not_tags", [])) & set(s["tags"])]
                if len(hit) != 1:
                    bad.append("%s %s: selection %s matches %s" % (h, group, sel, hit))
                matched += hit
            if kind == "ratio" and len(matched) == 2:
                a, b = (knobs(runs[f]) for f in matched)
                diff = [k for k in a if a[k] != b[k]]
                if len(diff) != 1:
                    bad.append("%s %s: the ratio's runs differ in %s, not one knob" % (h, group, diff))
        # an interval's two groups: each matches one planned spec, registered with two or more replicates
        iv = hyps[h].get("interval")
        if hyps[h].get("decision") == "interval":
            for side in ("select", "over"):
                sel = iv.get(side, {})
                hit = [f for f, s in runs.items() if set(sel.get("tags", [])) <= set(s["tags"])
                       and not set(sel.get("not_tags", [])) & set(s["tags"])]
                if len(hit) != 1 or runs[hit[0]].get("replicates", 1) < 2:
                    bad.append("%s %s: interval %s matches %s (one spec with replicates >= 2 wanted)"
                               % (h, group, side, [(f, runs[f].get("replicates", 1)) for f in hit]))
        if hyps[h]["kind"] == "descriptive" and not hyps[h].get("underpowered_rationale"):
            bad.append("%s: descriptive without the reason (underpowered_rationale)" % h)
        if group == "sceptic":
            for f, s in runs.items():
                if s["queries"]["first"] == 0:
                    bad.append("%s: sceptic run %s uses the design queries" % (h, f))
design_knobs = [knobs(spec(f)) for f in plan["design"]]
for f in plan["holdout"]["targets"]:
    s = spec(f)
    if knobs(s) in design_knobs:
        bad.append("holdout target %s repeats a design run's settings" % f)
    if s["queries"]["first"] < 2000:
        bad.append("holdout target %s uses queries %d.. that design or sceptic runs touch" % (f, s["queries"]["first"]))
print("\n".join("FAIL: " + b for b in bad) or "ok: %d hypotheses, each rule's selections match one planned run; %d holdout targets unseen" % (len(hyps), len(plan["holdout"]["targets"])))
sys.exit(1 if bad else 0)
PY
if [ "${DISK_TIER_FULL:-0}" = 1 ]; then
	B=$(dirname "$(dirname "$cs")")
	DEMO_BASE="synth:n=20000,d=96,clusters=16,seed=1" DEMO_QUERIES="synth:n=5200,d=96,clusters=16,seed=2" \
		sh "$src/scripts/demo-disk-tier.sh" "$B" "$T/demo" > "$T/demo.log" 2>&1 ||
		{ echo "FAIL: the disk-tier demo: $(tail -20 "$T/demo.log")"; fail=1; }
	python3 - "$T/demo/runs/verdicts.json" <<'PY' || fail=1
import json, sys
v = json.load(open(sys.argv[1]))
ids = sorted(x["hypothesis"] for x in v)
ok = ids == sorted("H%d" % i for i in range(1, 13))
print(("ok" if ok else "FAIL") + ": verdicts for %s: %s" % (ids, [x["verdict"] for x in sorted(v, key=lambda x: int(x["hypothesis"][1:]))]))
sys.exit(0 if ok else 1)
PY
	grep -q "the registered test: " "$T/demo/runs/score.txt" || { echo "FAIL: no holdout score"; fail=1; }
	[ -s "$T/demo/report/report.html" ] || { echo "FAIL: no report"; fail=1; }
fi
exit $fail
