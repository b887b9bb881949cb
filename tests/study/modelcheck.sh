#!/bin/sh
# Issue 28 item 6: model checks apart from findings, classified when the plan
# is validated. On a small synthetic study with a plan:
#  - H1 compares the hdd-pool's per-read latency with the sata-ssd's on runs
#    alike in everything else: the profiles' parameters decide it whatever the
#    engine reads, so validate records it a model check (its comparisons
#    "device model"), and verdicts and the report list it apart, out of the
#    confirmatory count;
#  - H2 is a level of a modelled run's wall time: the model's clock, but the
#    pages the engine reads move it across the threshold, so it is a finding
#    ("engine and device model"; a classification from the runs alone called
#    it the model's);
#  - H3 compares engine counts (reads a query): a finding of the engine;
#  - each record names the plan (plan_sha256) and the version it classified
#    (hypothesis_seq), and verdicts use it ("classified": {"by": "validate"}).
set -u
cs=${COLDSTUDY:?}
command -v python3 >/dev/null 2>&1 || exit 77
command -v sqlite3 >/dev/null 2>&1 || { echo "no sqlite3 shell"; exit 77; }
T=$(mktemp -d /var/tmp/cs-modelcheck-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
fail=0
die() { echo "FAIL: $*"; fail=1; }
expect() { # code description command...
	want=$1; what=$2; shift 2
	"$@" >"$T/out" 2>"$T/err"; got=$?
	[ "$got" = "$want" ] || die "$what: exit $got, expected $want: $(head -c 600 "$T/err")"
}
q() { sqlite3 "$1/ledger.db" "$2"; }
export COLDSTUDY_PRODUCTION_REGISTRY="$T/registry.json"
BASE="synth:n=4000,d=16,clusters=8,seed=3"
QUER="synth:n=200,d=16,clusters=8,seed=5"
mkdir -p "$T/w" "$T/hyp"
cd "$T/w" || exit 1

hyp() { # id metric accept-json reject-json
	printf '{"id":"%s","title":"t %s","statement":"s","kind":"confirmatory","metric":"%s","unit":"x","prediction":{"value":1,"band95":[0.5,2]},"accept":%s,"reject":%s}\n' \
		"$1" "$1" "$2" "$3" "$4"
}
agg() { # metric tags-json
	printf '{"agg":"median","metric":"%s","select":{"tags":%s}}' "$1" "$2"
}
hdd='["partition","cold","serial","hdd"]'
ssd='["partition","cold","serial","ssd"]'
ratio="{\"ratio\":[$(agg engine_read_ms_mean "$hdd"),$(agg engine_read_ms_mean "$ssd")]}"
hyp H1 engine_read_ms_mean "{\"cmp\":{\"left\":$ratio,\"op\":\">=\",\"right\":10}}" \
	"{\"cmp\":{\"left\":$ratio,\"op\":\"<\",\"right\":4}}" > "$T/hyp/H1.json"
hyp H2 wall_s "{\"cmp\":{\"left\":$(agg wall_s "$hdd"),\"op\":\">=\",\"right\":10}}" \
	"{\"cmp\":{\"left\":$(agg wall_s "$hdd"),\"op\":\"<\",\"right\":2}}" > "$T/hyp/H2.json"
hyp H3 reads_per_query "{\"cmp\":{\"left\":$(agg reads_per_query "$hdd"),\"op\":\">=\",\"right\":1}}" \
	"{\"cmp\":{\"left\":$(agg reads_per_query "$hdd"),\"op\":\"<\",\"right\":1}}" > "$T/hyp/H3.json"
spec() { # file device seed tags
	printf '{"index":"%s","queries":{"spec":"queries","first":0,"count":3},"cold":true,"mode":"serial","partitions":[0],"device":"%s","device_time":"virtual","seed":%s,"tags":%s}\n' \
		"$T/w/clone" "$2" "$3" "$4" > "$1"
}
spec D1.json hdd-pool 11 '["partition","cold","serial","hdd","virtual","baseline"]'
spec D2.json sata-ssd 12 '["partition","cold","serial","ssd","virtual","baseline"]'
cat > study.json <<J
{"id":"modelcheck","production":{"paths":["$T/w/prod"]},
 "datasets":{"base":"$BASE","queries":"$QUER"},
 "indexes":{"p":{"kind":"phnsw","dataset":"base","source":"$T/w/prod","clone":"$T/w/clone"}},
 "scratch_dir":"$T/w/scratch","defaults":{"k":10,"strategy":"pread","ef_search":40},
 "plan":{"design":["D1.json","D2.json"],
   "hypotheses":{"H1":{"runs":["D1.json","D2.json"]},"H2":{"runs":["D1.json"]},"H3":{"runs":["D1.json"]}}}}
J

expect 0 "index build" "$cs" index build --kind phnsw --data "$BASE" --metric l2 --partitions 8 --m 8 --ef-construction 32 --out prod -q
S=$T/S
expect 0 init "$cs" init "$S"
expect 0 register "$cs" register "$S" "$T/hyp/H1.json" "$T/hyp/H2.json" "$T/hyp/H3.json"
expect 0 "study register" "$cs" study register "$S" study.json
expect 0 clone "$cs" clone prod clone --study "$S"
"$cs" validate "$S" --quiet >/dev/null 2>&1 || expect 0 validate "$cs" validate "$S" --quiet --allow-no-device-stats

# the classification, recorded at validate, before any run, bound to the plan and the version
q "$S" "select json_extract(payload,'\$.check')||' '||json_extract(payload,'\$.passed')||' '||json_extract(payload,'\$.detail') from records where kind='validation' and json_extract(payload,'\$.check') like 'model-check:%'" > "$T/mc"
plan_sha=$(q "$S" "select json_extract(payload,'\$.plan_sha256') from records where kind='study' order by seq desc limit 1")
hseqs=$(q "$S" "select json_extract(payload,'\$.id')||'='||seq from records where kind='hypothesis'" | tr '\n' ' ')
[ "$(q "$S" "select count(*) from records where kind='run_start'")" = 0 ] || die "a run before the classification"
python3 - "$T/mc" "$plan_sha" "$hseqs" <<'PY' || fail=1
import json, sys
rows = {}
for line in open(sys.argv[1]):
    check, passed, detail = line.strip().split(" ", 2)
    rows[check.split(":", 1)[1]] = (passed, json.loads(detail))
seqs = dict(x.split("=") for x in sys.argv[3].split())
bad = []
want = {"H1": ("model check", {"device model"}), "H2": ("finding", {"engine and device model"}),
        "H3": ("finding", {"engine"})}
for h, (ev, bases) in want.items():
    if h not in rows:
        bad.append("%s: no model-check record" % h)
        continue
    passed, d = rows[h]
    got = {c["basis"] for c in d.get("clauses", [])}
    if passed != "1" or d.get("evidence") != ev or got != bases:
        bad.append("%s: %s, clauses %s (expected %s, %s)" % (h, d.get("evidence"), sorted(got), ev, sorted(bases)))
    if d.get("plan_sha256") != sys.argv[2] or str(d.get("hypothesis_seq")) != seqs.get(h):
        bad.append("%s: bound to plan %s seq %s" % (h, d.get("plan_sha256"), d.get("hypothesis_seq")))
    if len(d.get("clauses", [])) != 2:
        bad.append("%s: %d clauses classified, expected 2 (accept and reject)" % (h, len(d.get("clauses", []))))
c = rows.get("H1", ("", {}))[1].get("clauses", [{}])[0]
if not c.get("outcome", "").startswith("true") or "the model's parameters decide it" not in c.get("why", ""):
    bad.append("H1: the accept comparison's outcome under the model: %s" % c)
c = rows.get("H2", ("", {}))[1].get("clauses", [{}])[0]
if "moves it" not in c.get("why", "") or "pages a query" not in c.get("why", ""):
    bad.append("H2: why the engine decides: %s" % c.get("why"))
print("\n".join("FAIL: " + b for b in bad) or "classified at validate: H1 model check, H2 and H3 findings")
sys.exit(1 if bad else 0)
PY

for r in D1 D2; do expect 0 "run $r" "$cs" run "$S" $r.json --no-progress; done
expect 0 "verdicts" "$cs" verdicts "$S" --json
python3 - "$T/out" <<'PY' || fail=1
import json, sys
v = {x["hypothesis"]: x for x in json.load(open(sys.argv[1]))}
bad = []
for h, ev in (("H1", "model check"), ("H2", "finding"), ("H3", "finding")):
    x = v[h]
    if x.get("evidence") != ev or (x.get("classified") or {}).get("by") != "validate" or not x.get("clauses"):
        bad.append("%s: evidence %s, classified %s" % (h, x.get("evidence"), x.get("classified")))
if v["H1"]["class"] != "confirmatory" or v["H1"]["basis"].get("engine_read_ms_mean") != "device model":
    bad.append("H1: %s %s" % (v["H1"]["class"], v["H1"].get("basis")))
print("\n".join("FAIL: " + b for b in bad) or "verdicts use validate's classification")
sys.exit(1 if bad else 0)
PY
expect 0 "verdicts (text)" "$cs" verdicts "$S"
grep -q "confirmatory: 2 findings, 1 model checks" "$T/out" || die "verdicts' count: $(tail -3 "$T/out")"
sed -n '/^model checks/,/^confirmatory:/p' "$T/out" > "$T/mtab"
grep -q "^H1 " "$T/mtab" && grep -q "\$.accept.cmp: device model" "$T/mtab" || die "verdicts: H1 not listed with its comparisons among the model checks: $(cat "$T/out")"
sed -n '/^confirmatory findings/,/^model checks/p' "$T/out" | grep -q "^H1 " && die "verdicts: H1 among the findings"
expect 0 report "$cs" report "$S" --out "$T/R"
grep -q "^Table [0-9]*: Model checks" "$T/R/report.md" || grep -q "Model checks: confirmatory hypotheses" "$T/R/report.md" ||
	die "report: no table of model checks"
grep -q "Model checks (confirmatory hypotheses whose every comparison validate found decided by the device model's parameters, whatever the engine measures; never counted as evidence): 1: H1" "$T/R/report.md" ||
	die "report: the counts do not set H1 apart: $(grep -i 'model check' "$T/R/report.md" | head -3)"
grep -q "model check (not evidence)" "$T/R/report.md" || die "report: the verdicts table does not mark H1"
expect 0 "log verify" "$cs" log verify "$S"
exit $fail
