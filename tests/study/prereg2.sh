#!/bin/sh
# Issue 28: pre-registration, second pass. Each loophole of the issue,
# reproduced on a small synthetic study with a plan, now closed:
#  1 an amendment after the holdout was seen never moves the score of
#    record or its exit: a threshold amended after the holdout runs (before
#    the first score) or after a failed score; the amended rule's result is
#    shown beside, labelled, in `holdout score`, `verdicts` and the report;
#  2 a hypothesis amended after the holdout was seen keeps its registered
#    verdict in the confirmatory table; the amended version is an
#    exploratory entry linked to it;
#  3 evidence bound to the plan: --seed on a plan spec that registers none
#    is refused; a planned spec run beyond its registered count is a
#    deviation, shown and left out of the verdicts and the models; a clone
#    whose content differs from the plan's makes the run exploratory, with
#    a line saying why; each run records the binary and device-model
#    versions;
#  4 an exploratory run whose queries are spelled as the raw dataset range
#    of a holdout target reads what it holds out: the target is marked seen
#    (shown in the score) and its holdout run must declare the overlap; a
#    second `holdout predict` is refused (the first set is frozen);
#  6 a holdout row that is a function of another row of the same run
#    (reads per query = reads / queries) is shown and scored once; each
#    metric's calibration is judged from its standardised errors;
#  5 `verdicts` and `holdout score` verify the log first (exit 4 on a
#    record appended without the key), and an unfinished holdout is printed
#    as such with its own exit code, 7.
set -u
cs=${COLDSTUDY:?}; src=${COLDSTUDY_SRC:?}
command -v python3 >/dev/null 2>&1 || exit 77
command -v sqlite3 >/dev/null 2>&1 || { echo "no sqlite3 shell"; exit 77; }
T=$(mktemp -d /var/tmp/cs-prereg2-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
fail=0
die() { echo "FAIL: $*"; fail=1; }
expect() { # code description command...
	want=$1; what=$2; shift 2
	"$@" >"$T/out" 2>"$T/err"; got=$?
	[ "$got" = "$want" ] || die "$what: exit $got, expected $want: $(head -c 600 "$T/err")"
}
q() { sqlite3 "$1/ledger.db" "$2"; }
BASE="synth:n=4000,d=16,clusters=8,seed=3"
OTHER="synth:n=4000,d=16,clusters=8,seed=4"
QUER="synth:n=200,d=16,clusters=8,seed=5"
mkdir -p "$T/w" "$T/hyp"
cd "$T/w" || exit 1

hyp() { # id accept-json reject-json [title]
	printf '{"id":"%s","title":"%s","statement":"s","kind":"confirmatory","metric":"reads_per_query","unit":"x","prediction":{"value":1,"band95":[0.5,2]},"accept":%s,"reject":%s}\n' \
		"$1" "${4:-t $1}" "$2" "$3"
}
sel='{"tags":["partition","cold","serial","hdd","baseline"]}'
# H1: at least 2 queries on the deciding run: accepted (after its sceptic run)
hyp H1 "{\"cmp\":{\"left\":{\"agg\":\"median\",\"metric\":\"queries\",\"select\":$sel},\"op\":\">=\",\"right\":2}}" \
	"{\"cmp\":{\"left\":{\"agg\":\"median\",\"metric\":\"queries\",\"select\":$sel},\"op\":\"<\",\"right\":2}}" > "$T/hyp/H1.json"
# H2: at least 9 queries: rejected (D1 makes 3); amended to 1 query after the holdout: accepted
hyp H2 "{\"cmp\":{\"left\":{\"agg\":\"median\",\"metric\":\"queries\",\"select\":$sel},\"op\":\">=\",\"right\":9}}" \
	"{\"cmp\":{\"left\":{\"agg\":\"median\",\"metric\":\"queries\",\"select\":$sel},\"op\":\"<\",\"right\":9}}" > "$T/hyp/H2.json"
hyp H2 "{\"cmp\":{\"left\":{\"agg\":\"median\",\"metric\":\"queries\",\"select\":$sel},\"op\":\">=\",\"right\":1}}" \
	"{\"cmp\":{\"left\":{\"agg\":\"median\",\"metric\":\"queries\",\"select\":$sel},\"op\":\"<\",\"right\":1}}" "t H2 amended" > "$T/hyp/H2b.json"

spec() { # file partitions first count extra tags
	printf '{"index":"%s","queries":{"spec":"queries","first":%s,"count":%s},"cold":true,"mode":"serial",%s"tags":%s}\n' \
		"$T/w/clone" "$2" "$3" "$4" "$5" > "$1"
}
hdd='"device":"hdd-pool","device_time":"virtual",'
tg='["partition","cold","serial","hdd","virtual","baseline"]'
spec D1.json 0 3 "\"partitions\":[0],$hdd\"seed\":11,\"hypotheses\":[\"H1\",\"H2\"]," "$tg"
spec D2.json 20 3 "\"partitions\":[1],$hdd\"seed\":12," "$tg"
spec D3.json 30 3 "\"partitions\":[4],$hdd\"seed\":13," "$tg"
# D4 registers no seed: its runs draw from their own streams
printf '{"index":"%s","queries":{"spec":"queries","first":0,"count":3},"cold":false,"partitions":[0],"tags":["partition","warm"]}\n' "$T/w/clone" > D4.json
spec S1.json 40 2 "\"partitions\":[5],$hdd\"seed\":14," "$tg"
spec T1.json 100 3 "\"partitions\":[2],$hdd\"seed\":15," '["partition","cold","serial","hdd","virtual","holdout"]'
spec T2.json 110 3 "\"partitions\":[3],$hdd\"seed\":16," '["partition","cold","serial","hdd","virtual","holdout"]'
study() { # file threshold
	cat > "$1" <<J
{"id":"prereg2","production":{"paths":["$T/w/prod"]},
 "datasets":{"base":"$BASE","queries":"$QUER"},
 "indexes":{"p":{"kind":"phnsw","dataset":"base","source":"$T/w/prod","clone":"$T/w/clone"}},
 "scratch_dir":"$T/w/scratch","defaults":{"k":10,"strategy":"pread","ef_search":40},
 "plan":{"design":["D1.json","D2.json","D3.json","D4.json"],
   "hypotheses":{"H1":{"runs":["D1.json"],"sceptic":["S1.json"]},"H2":{"runs":["D1.json"]}},
   "holdout":{"targets":["T1.json","T2.json"],"metrics":["wall_s","engine_reads","engine_read_ms_mean","reads_per_query"],
              "threshold":$2,"band_level":0.95}}}
J
}
# registered: a threshold no model meets; amended after the holdout: one every model meets
study study.json 0.0001
study amended.json 0.99

expect 0 "index build" "$cs" index build --kind phnsw --data "$BASE" --metric l2 --partitions 8 --m 8 --ef-construction 32 --out prod
expect 0 "index build (another index)" "$cs" index build --kind phnsw --data "$OTHER" --metric l2 --partitions 8 --m 8 --ef-construction 32 --out other -q
S=$T/S
expect 0 init "$cs" init "$S"
expect 0 "register H1 H2" "$cs" register "$S" "$T/hyp/H1.json" "$T/hyp/H2.json"
expect 0 "study register" "$cs" study register "$S" study.json
expect 0 clone "$cs" clone prod clone --study "$S"
"$cs" validate "$S" --quiet >/dev/null 2>&1 || expect 0 validate "$cs" validate "$S" --quiet --allow-no-device-stats

# 3: --seed on a plan spec that registers no seed
expect 3 "3: run --seed on a plan spec without a registered seed" "$cs" run "$S" D4.json --seed 5 --no-progress
grep -q "registers no seed" "$T/err" || die "3: --seed message: $(cat "$T/err")"
[ "$(q "$S" "select json_extract(payload,'\$.guard') from records where kind='refusal' order by seq desc limit 1")" = plan-seed ] ||
	die "3: --seed: no refusal record"
[ "$(q "$S" "select count(*) from records where kind='run_start'")" = 0 ] || die "3: --seed: a run started"
for r in D1 D2 D3 D4 S1; do expect 0 "run $r" "$cs" run "$S" $r.json --no-progress; done
# 3: the run records what made its numbers
q "$S" "select json_extract(payload,'\$.versions') from records where kind='run' limit 1" > "$T/ver"
python3 - "$T/ver" <<'PY' || die "3: versions not recorded: $(cat "$T/ver")"
import json, re, sys
v = json.load(open(sys.argv[1]))
ok = v["coldstudy"] and re.fullmatch("[0-9a-f]{64}", v["binary_sha256"]) and \
     v["device_model"]["profile"] == "hdd-pool" and re.fullmatch("[0-9a-f]{64}", v["device_model"]["parameters_sha256"])
sys.exit(0 if ok else 1)
PY
# 3: a design spec run again, beyond its registered count (one run)
expect 0 "3: D1 again" "$cs" run "$S" D1.json --no-progress
[ "$(q "$S" "select json_extract(payload,'\$.beyond_plan') from records where kind='run' order by seq desc limit 1")" = 1 ] ||
	die "3: D1's second run is not marked beyond the plan"
q "$S" "select json_extract(payload,'\$.because') from records where kind='deviation'" | grep -q "beyond its registered 1 run" ||
	die "3: no deviation for D1's second run"
"$cs" verdicts "$S" --json >"$T/v0.json" 2>"$T/err"; rc=$?
[ $rc = 7 ] || die "5: verdicts with predictions not made: exit $rc, expected 7"
python3 - "$T/v0.json" <<'PY' || fail=1
import json, sys
v = {x["hypothesis"]: x for x in json.load(open(sys.argv[1]))}
bad = []
if len(v["H2"]["runs"]) != 1: bad.append("3: H2 decided on %d runs (D1's second run counted)" % len(v["H2"]["runs"]))
if len(v["H2"].get("beyond_plan", [])) != 1: bad.append("3: H2 does not show the run beyond the plan: %s" % v["H2"].get("beyond_plan"))
if v["H2"]["verdict"] != "rejected": bad.append("H2 %s" % v["H2"]["verdict"])
print("\n".join("FAIL: " + b for b in bad) or "beyond-plan ok")
sys.exit(1 if bad else 0)
PY

# 4: an exploratory near-copy of T1 whose queries are spelled as the raw dataset range: it reads
# T1's rows on T1's partition and device, so T1 is marked seen (and its holdout run must declare it)
printf '{"index":"%s","queries":{"spec":"%s[100:103]","first":0,"count":3},"cold":true,"mode":"serial","partitions":[2],%s"seed":21,"tags":["partition","cold","serial","hdd","virtual"]}\n' \
	"$T/w/clone" "$QUER" "$hdd" > peek.json
expect 0 "4: an exploratory near-copy of T1 before the predictions" "$cs" run "$S" peek.json --no-progress
grep -q "marked seen" "$T/err" || die "4: the near-copy is not said to read a holdout target: $(cat "$T/err")"
[ "$(q "$S" "select json_extract(payload,'\$.holdout_reached[0].target') from records where kind='run' order by seq desc limit 1")" = T1.json ] ||
	die "4: the near-copy's record does not name T1"

# 4: predictions, once
expect 0 "holdout predict" "$cs" holdout predict "$S"
np=$(q "$S" "select count(*) from records where kind='prediction'")
expect 3 "4: a second holdout predict" "$cs" holdout predict "$S"
grep -q "predictions are frozen" "$T/err" || die "4: second predict message: $(cat "$T/err")"
[ "$(q "$S" "select count(*) from records where kind='prediction'")" = "$np" ] || die "4: a second prediction set was written"
[ "$(q "$S" "select json_extract(payload,'\$.guard') from records where kind='refusal' order by seq desc limit 1")" = predictions-frozen ] ||
	die "4: no refusal record for the second predict"

# 5: an unfinished holdout
expect 3 "4: T1 after a run read its rows (undeclared)" "$cs" run "$S" T1.json --no-progress
grep -q "same partitions and queries" "$T/err" || die "4: T1's refusal: $(cat "$T/err")"
expect 0 "holdout T1 (the overlap declared)" "$cs" run "$S" T1.json --no-progress --declare-overlap "peek.json read T1's rows"
expect 7 "5: an interim score" "$cs" holdout score "$S" --interim
grep -q "UNFINISHED" "$T/out" || die "5: the interim score does not say unfinished"
expect 7 "5: verdicts with an interim score only" "$cs" verdicts "$S"
grep -q "holdout: UNFINISHED" "$T/out" || die "5: verdicts print no holdout line: $(cat "$T/out")"
expect 0 "holdout T2" "$cs" run "$S" T2.json --no-progress

# 5: a record appended without the key: verdicts and score refuse to answer
cp -r "$S" "$T/ST"
python3 "$src/tests/ledger/raw_append.py" "$T/ST/ledger.db" note '{"text":"appended by hand"}' >/dev/null || die "raw append failed"
n0=$(q "$T/ST" "select count(*) from records")
expect 4 "5: verdicts on a log with a record appended without the key" "$cs" verdicts "$T/ST"
expect 4 "5: holdout score on a log with a record appended without the key" "$cs" holdout score "$T/ST"
[ "$(q "$T/ST" "select count(*) from records")" = "$n0" ] || die "5: a verdict or score was appended to an unverified log"

# 1b: a failed score, the threshold amended, a re-score: still the registered test's FAIL
cp -r "$S" "$T/SF"
expect 6 "1: score of record by the registered rule (missed)" "$cs" holdout score "$T/SF"
expect 0 "1: amend the threshold after a failed score" "$cs" study register "$T/SF" amended.json --amend --rationale "0.99 after all"
expect 6 "1: re-score after the amendment" "$cs" holdout score "$T/SF"
grep -q "amended after the holdout was seen" "$T/out" || die "1: the re-score does not show the amended rule: $(cat "$T/out")"
grep -q "the registered test: FAIL" "$T/out" || die "1: the re-score does not keep FAIL"
expect 6 "1: verdicts after the amendment" "$cs" verdicts "$T/SF"
grep -q "amended after the holdout was seen" "$T/out" || die "1: verdicts do not show the amended rule"

# 1a: the threshold amended after the holdout runs, before the first score
expect 0 "1: amend the threshold after the holdout runs" "$cs" study register "$S" amended.json --amend --rationale "0.99"
expect 6 "1: the first score after the amendment" "$cs" holdout score "$S" --json
cp "$T/out" "$T/score.json"
python3 - "$T/score.json" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))
bad = []
if [t["target"] for t in s.get("targets_seen_before_predictions", [])] != ["T1.json"]:
    bad.append("4: the score does not show T1 seen: %s" % s.get("targets_seen_before_predictions"))
# 6: reads per query is engine_reads / 3 on each target: scored once; calibration per metric
dep = [r for r in s["rows"] if r.get("function_of")]
if s["rows_dependent"] != 2 or len(dep) != 2 or any(r["metric"] != "reads_per_query" for r in dep) or s["n"] != 6:
    bad.append("6: rows that are functions of others: %s of %d scored rows" % ([(r["metric"], r.get("relation")) for r in dep], s["n"]))
if "reads_per_query" in s["per_metric"]:
    bad.append("6: a copied metric is scored")
for m, v in s["per_metric"].items():
    c = v.get("calibration") or {}
    if c.get("n") != 2 or c.get("verdict") not in ("bands too wide", "bands too narrow", "consistent") or not c.get("z_rms", 0) > 0:
        bad.append("6: calibration of %s: %s" % (m, c))
if s["passed"] or s["threshold"] != 0.0001: bad.append("1: score of record %s against %s" % (s["passed"], s["threshold"]))
a = s.get("amended") or {}
if a.get("label") != "amended after the holdout was seen" or a.get("threshold") != 0.99 or a.get("passed") is not True:
    bad.append("1: the amended rule is not shown beside: %s" % a)
print("\n".join("FAIL: " + b for b in bad) or "score of record ok: mdape %.3f" % s["mdape"])
sys.exit(1 if bad else 0)
PY
expect 6 "1: verdicts after the amendment" "$cs" verdicts "$S"
grep -q "FAILED" "$T/out" && grep -q "amended after the holdout was seen" "$T/out" || die "1: verdicts: $(cat "$T/out")"

# 2: a rejected hypothesis amended after the holdout was seen
expect 0 "2: amend H2 after the holdout" "$cs" register "$S" "$T/hyp/H2b.json" --amend --rationale "one query is enough"
expect 6 "2: verdicts" "$cs" verdicts "$S" --json
python3 - "$T/out" <<'PY' || fail=1
import json, sys
v = json.load(open(sys.argv[1]))
h2 = [x for x in v if x["hypothesis"] == "H2"]
reg = [x for x in h2 if "version" not in x]
am = [x for x in h2 if x.get("version") == "amended"]
bad = []
if len(reg) != 1 or reg[0]["class"] != "confirmatory" or reg[0]["verdict"] != "rejected" or "amended_later" not in reg[0]:
    bad.append("2: the registered H2: %s" % [(x["class"], x["verdict"]) for x in reg])
if len(am) != 1 or am[0]["class"] != "exploratory" or am[0]["verdict"] == "rejected" or not am[0].get("amends"):
    bad.append("2: the amended H2: %s" % [(x["class"], x["verdict"], x.get("amends")) for x in am])
print("\n".join("FAIL: " + b for b in bad) or "amended hypothesis ok")
sys.exit(1 if bad else 0)
PY
expect 0 report "$cs" report "$S" --out "$T/R"
sed -n '/At a glance/,/Contents/p' "$T/R/report.md" > "$T/glance"
for s in "Amended after the holdout was seen: H2" "the study plan" "against the amended threshold 0.99 the score would PASS" \
	"Holdout: FAIL"; do
	grep -qF "$s" "$T/glance" || die "report first screen lacks: $s"
done

# 3: a different index cloned into the planned clone path: the run is exploratory, and says why
rm -rf clone
expect 0 "3: clone another index into the planned path" "$cs" clone other clone --study "$S"
expect 0 "3: D2 on the other clone" "$cs" run "$S" D2.json --no-progress
grep -q "source content" "$T/err" || die "3: no line says why the run is exploratory: $(cat "$T/err")"
[ "$(q "$S" "select json_extract(payload,'\$.class') from records where kind='run' order by seq desc limit 1")" = exploratory ] ||
	die "3: a run on other content is not exploratory"
expect 0 "log verify" "$cs" log verify "$S"
exit $fail
