#!/bin/sh
# The cold-query study's plan (studies/cold-query), without running it: the
# hypotheses and study.json register on a small synthetic index, and
#  1 every selection of every hypothesis's rules matches exactly one of the
#    run specs the plan maps to it (the design runs and, apart, the sceptic
#    runs), and every planned spec is matched by some selection: no rule is
#    decided by a run it does not name, none by a planned run it ignores
#    (tags as the harness derives them: coldstudy validate's can-fail
#    records list the specs each contrast's sides match, and must agree);
#  2 validate's can-fail:Hn check passes for every hypothesis, the seed's
#    findings (H12-H18, issue 14) among them, each contrast's sides one
#    spec each;
#  2b validate classifies every comparison (model-check:Hn): the confirmatory
#    model checks are H1, H5, H7, H10 and H12; H2, H8 and H15 are findings
#    (the engine's figures move a comparison), the real-disk ones the device's;
#  3 and it refuses (exit 3) broken variants of the new designs that could
#    not fail: H12 with its two fan-out runs sharing one random stream, H14
#    with its warm side on other queries, H15 with its partition side cold
#    once against a gate cold before every query, H17 with the sort side's
#    merge left at the stream (the two runs then do not differ at all).
set -u
cs=${COLDSTUDY:?}
src=${COLDSTUDY_SRC:?}
command -v python3 >/dev/null 2>&1 || exit 77
command -v sqlite3 >/dev/null 2>&1 || { echo "no sqlite3 shell"; exit 77; }
T=$(mktemp -d /var/tmp/cs-coldquery-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
fail=0
die() { echo "FAIL: $*"; fail=1; }
q() { sqlite3 "$1/ledger.db" "$2"; }
export COLDSTUDY_PRODUCTION_REGISTRY="$T/registry.json"
BASE="synth:n=3000,d=16,clusters=8,seed=3"
QUER="synth:n=400,d=16,clusters=8,seed=5"
HYPS=$(ls "$src"/studies/cold-query/hypotheses/H*.json)

# setup DIR [PYTHON]: a copy of the runs (edited by PYTHON, run in it, if given) with small
# indexes, the study registered (the plan hashes the specs as they are then) and cloned
# shellcheck disable=SC2086
setup() {
	mkdir -p "$1" && cp -r "$src/studies/cold-query/runs" "$1/runs" && cd "$1/runs" || return 1
	[ -z "${2:-}" ] || python3 -c "$2" || return 1
	mkdir -p work
	sed -e "s|\"fashion-mnist:train\"|\"$BASE\"|" -e "s|\"fashion-mnist:test\"|\"$QUER\"|" study.json > study.t.json
	"$cs" index build --kind phnsw --data "$BASE" --metric l2 --partitions 16 --m 8 --ef-construction 32 \
		--out work/prod-index -q &&
		"$cs" index build --kind phnsw --data "synth:n=600,d=8,clusters=6,seed=11,sigma=0.0000001" --metric l2 \
			--partitions 8 --m 8 --ef-construction 32 --out work/ties-index -q &&
		"$cs" init ../S >/dev/null &&
		"$cs" register ../S $HYPS >/dev/null &&
		"$cs" study register ../S study.t.json >/dev/null &&
		"$cs" clone work/prod-index work/clone --study ../S >/dev/null 2>&1 &&
		"$cs" clone work/ties-index work/ties-clone --study ../S >/dev/null 2>&1
}
validate() { # study -> exit code
	"$cs" validate "$1" --quiet >"$T/v" 2>&1 && return 0
	rc=$?
	[ $rc = 3 ] && return 3
	"$cs" validate "$1" --quiet --allow-no-device-stats >"$T/v" 2>&1
}

# ---- 1 and 2: the committed plan
setup "$T/a" || { echo "FAIL: setup of the committed study"; exit 1; }
validate ../S; rc=$?
[ $rc = 0 ] || die "validate of the committed study: exit $rc: $(grep -i 'can-fail\|refused' "$T/v" | head -5)"
for f in $HYPS; do
	id=$(basename "$f" .json)
	c=$(q ../S "select json_extract(payload,'\$.passed')||'|'||json_extract(payload,'\$.detail.findings') from records where kind='validation' and json_extract(payload,'\$.check')='can-fail:$id' order by seq desc limit 1")
	[ "$c" = "1|[]" ] || die "can-fail:$id: $c"
done
q ../S "select substr(json_extract(payload,'\$.check'), 10)||' '||json_extract(payload,'\$.detail.contrasts') from records where kind='validation' and json_extract(payload,'\$.check') like 'can-fail:%'" > "$T/contrasts"
python3 - "$src/studies/cold-query" "$T/contrasts" <<'PY' || fail=1
import glob, json, os, sys
top, contrasts = sys.argv[1], sys.argv[2]
plan = json.load(open(os.path.join(top, "runs", "study.json")))["plan"]
spec = lambda f: json.load(open(os.path.join(top, "runs", f)))
hyps = {json.load(open(f))["id"]: json.load(open(f)) for f in glob.glob(os.path.join(top, "hypotheses", "H*.json"))}
bad = []
def sels(rule, out):
    if isinstance(rule, dict):
        if "select" in rule:
            out.append(rule["select"])
        for v in rule.values():
            sels(v, out)
    elif isinstance(rule, list):
        for v in rule:
            sels(v, out)
    return out
def hit(sel, s):
    return set(sel.get("tags", [])) <= set(s["tags"]) and not set(sel.get("not_tags", [])) & set(s["tags"])
if sorted(hyps) != sorted(plan["hypotheses"]):
    bad.append("hypotheses %s, plan maps %s" % (sorted(hyps), sorted(plan["hypotheses"])))
for h, m in sorted(plan["hypotheses"].items()):
    for group in ("runs", "sceptic"):
        if group not in m:
            continue
        runs = {f: spec(f) for f in m[group]}
        used = set()
        for sel in sels([hyps[h]["accept"], hyps[h]["reject"]], []):
            got = [f for f, s in runs.items() if hit(sel, s)]
            if len(got) != 1:
                bad.append("%s %s: selection %s matches %s" % (h, group, sel.get("tags"), got))
            used.update(got)
        if set(runs) - used:
            bad.append("%s %s: planned runs no selection matches: %s" % (h, group, sorted(set(runs) - used)))
# the harness's own matching (derived tags) agrees: each contrast's sides one planned spec each
n = 0
for line in open(contrasts):
    h, _, js = line.strip().partition(" ")
    for c in json.loads(js or "[]"):
        n += 1
        for side in ("treatment_runs", "baseline_runs"):
            if len(c.get(side, [])) != 1:
                bad.append("%s: can-fail contrast %s / %s: %s %s" % (h, c["treatment"].get("tags"), c["baseline"].get("tags"), side, c.get(side)))
seen = {l.split(" ", 1)[0]: l for l in open(contrasts)}
for h in ("H12", "H13", "H14", "H15", "H17", "H18", "H19", "H20"):
    if h not in seen or '"treatment_runs"' not in seen[h]:
        bad.append("%s: no can-fail record with a contrast" % h)
print("\n".join("FAIL: " + b for b in bad) or "ok: %d hypotheses, each selection matches one planned spec and each planned spec a selection; %d can-fail contrasts, one spec a side" % (len(hyps), n))
sys.exit(1 if bad else 0)
PY

# ---- the plan's model checks (issue 28): validate's model-check:Hn records, before any run
q ../S "select substr(json_extract(payload,'\$.check'), 13)||' '||json_extract(payload,'\$.detail') from records where kind='validation' and json_extract(payload,'\$.check') like 'model-check:%'" > "$T/mchk"
python3 - "$T/mchk" <<'PY' || fail=1
import json, sys
d = {l.split(" ", 1)[0]: json.loads(l.split(" ", 1)[1]) for l in open(sys.argv[1])}
bad = []
conf = sorted((h for h, x in d.items() if x.get("kind") in ("confirmatory", "non-cause")), key=lambda h: int(h[1:]))
mc = [h for h in conf if d[h].get("evidence") == "model check"]
# the model's parameters: a modelled cold wall over a warm one (H1), profile against profile
# (H5), competing readers and writers in the model's queues (H7, H10), fan-out against fan-out (H12)
if mc != ["H1", "H5", "H7", "H10", "H12"]:
    bad.append("confirmatory model checks %s, expected H1, H5, H7, H10, H12" % mc)
why = lambda h, i: d[h]["clauses"][i]["why"]
# findings the model multiplies: H8's ids, H15's gate against partition (their reads differ),
# H2's prewarm of another query's blocks (the pages the two share)
if d["H8"]["evidence"] != "finding" or d["H8"]["clauses"][1]["basis"] != "engine":
    bad.append("H8: %s" % d["H8"]["clauses"])
if d["H15"]["evidence"] != "finding" or "(another)" not in why("H15", 0):
    bad.append("H15: %s" % why("H15", 0))
if d["H2"]["evidence"] != "finding" or "resident" not in why("H2", 1):
    bad.append("H2: %s" % why("H2", 1))
for h in ("H9", "H14", "H19", "H20"):
    if d[h]["evidence"] != "finding" or "device" not in {c["basis"] for c in d[h]["clauses"]}:
        bad.append("%s: not the real device's: %s" % (h, d[h]["clauses"]))
print("\n".join("FAIL: " + b for b in bad) or "model checks of the plan: %s; findings: %s" % (", ".join(mc), ", ".join(h for h in conf if h not in mc)))
sys.exit(1 if bad else 0)
PY

# ---- 3: broken variants of the new designs are refused
variant() { # name hypothesis python-edit-of-the-runs expected-finding
	setup "$T/$1" "$3" || { die "setup $1"; return; }
	validate ../S; rc=$?
	[ $rc = 3 ] || { die "$1: validate exit $rc, expected 3 (refused)"; return; }
	c=$(q ../S "select json_extract(payload,'\$.passed')||'|'||json_extract(payload,'\$.detail.findings') from records where kind='validation' and json_extract(payload,'\$.check')='can-fail:$2' order by seq desc limit 1")
	case $c in 0\|*"$4"*) ;; *) die "$1: can-fail:$2: $c" ;; esac
	[ "$(q ../S "select json_extract(payload,'\$.guard') from records where kind='refusal' order by seq desc limit 1")" = "can-fail" ] ||
		die "$1: no can-fail refusal record"
}
edit='import json, sys
def ed(f, fn):
    d = json.load(open(f)); fn(d); open(f, "w").write(json.dumps(d))
'
variant h12-shared H12 "$edit
ed('gate-cold-fanout32-hdd.json', lambda d: d.update(seed=42))
ed('gate-cold-fanout64-hdd.json', lambda d: d.update(seed=42))" "register the same seed 42"
variant h14-queries H14 "$edit
ed('gate-warm-serial.json', lambda d: d['queries'].update(first=20))" "run different query sets"
variant h15-coldmode H15 "$edit
ed('partition-cold-each-serial-ssd.json', lambda d: d.pop('cold_each_query'))" "not like for like"
variant h17-same H17 "$edit
ed('ties-warm-fanout16-sort.json', lambda d: (d.pop('merge'), d.update(tags=[t for t in d['tags'] if t != 'merge-sort'])))" "matches none of the plan's runs"
[ $fail = 0 ] && echo "ok: the cold-query plan: selections match the planned runs, can-fail passes for every hypothesis and refuses the broken H12, H14, H15, H17"
exit $fail
