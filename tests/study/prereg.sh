#!/bin/sh
# Issue 13: pre-registration that cannot be bent. Each numbered finding of
# the issue, reproduced on a small synthetic study with a plan, and now
# refused or marked:
#  1 a holdout target run without --holdout before predictions: refused
#    (the plan makes it a holdout run); after predictions it is one;
#  2 a hypothesis registered after the first run: post_hoc, exploratory;
#  3 the study spec and plan changed after the first run: refused (exit 3,
#    recorded) unless --amend --rationale (access state recorded); a design
#    spec edited after registration runs as exploratory;
#  4 --threshold other than the plan's: refused; a missed registered
#    threshold exits 6 in `holdout score` and `verdicts`, a met one 0;
#  5 a score before every target ran: refused, or interim; a holdout target
#    run again: a deviation, the first run stays the observation; a later
#    score is a re-score;
#  6 a tag its settings contradict: refused (exit 5); an exploratory run
#    tagged like the deciding runs does not move a confirmatory verdict;
#  7 refusals are records; `refute H99` and `deviate --run R9999`: exit 5,
#    nothing written;
#  8 the sceptic step: provisional until the plan's sceptic runs are done,
#    then accepted, or refuted when they refute;
#  9 scores per metric and relative; a two-sided coverage check over rows
#    and over the independent runs behind them.
set -u
cs=${COLDSTUDY:?}
command -v python3 >/dev/null 2>&1 || exit 77
command -v sqlite3 >/dev/null 2>&1 || { echo "no sqlite3 shell"; exit 77; }
T=$(mktemp -d /var/tmp/cs-prereg-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
fail=0
die() { echo "FAIL: $*"; fail=1; }
expect() { # code description command...
	want=$1; what=$2; shift 2
	"$@" >"$T/out" 2>"$T/err"; got=$?
	[ "$got" = "$want" ] || die "$what: exit $got, expected $want: $(head -c 600 "$T/err")"
}
q() { sqlite3 "$1/ledger.db" "$2"; }
nrec() { q "$1" "select count(*) from records"; }
BASE="synth:n=4000,d=16,clusters=8,seed=3"
QUER="synth:n=200,d=16,clusters=8,seed=5"
mkdir -p "$T/w" "$T/hyp"
cd "$T/w" || exit 1

# ---- hypotheses: rules over run counts and read counts that come out one way for sure
hyp() { # id kind accept-json reject-json
	printf '{"id":"%s","title":"t %s","statement":"s","kind":"%s","metric":"reads_per_query","unit":"x","prediction":{"value":1,"band95":[0.5,2]},"accept":%s,"reject":%s}\n' \
		"$1" "$1" "$2" "$3" "$4" > "$T/hyp/$1.json"
}
sel='{"tags":["partition","cold","serial","hdd","baseline"]}'
# H1: the deciding run made at least 2 queries (D1: 3; its sceptic replicate S1: 2): accepted
hyp H1 confirmatory "{\"cmp\":{\"left\":{\"agg\":\"median\",\"metric\":\"queries\",\"select\":$sel},\"op\":\">=\",\"right\":2}}" \
	"{\"cmp\":{\"left\":{\"agg\":\"median\",\"metric\":\"queries\",\"select\":$sel},\"op\":\"<\",\"right\":2}}"
# H4: at least 3 queries: true on D1, false on the sceptic replicate: refuted by it
hyp H4 confirmatory "{\"cmp\":{\"left\":{\"agg\":\"median\",\"metric\":\"queries\",\"select\":$sel},\"op\":\">=\",\"right\":3}}" \
	"{\"cmp\":{\"left\":{\"agg\":\"median\",\"metric\":\"queries\",\"select\":$sel},\"op\":\"<\",\"right\":3}}"
# H2: cold hdd baseline runs differ by more than 2x in reads per query; only D1 decides it: rejected.
# A gate run (all 8 partitions) tagged like D1 would make it accepted if it counted.
sel2='{"tags":["cold","serial","hdd","baseline"]}'
r2="{\"ratio\":[{\"agg\":\"max\",\"metric\":\"reads_per_query\",\"select\":$sel2},{\"agg\":\"min\",\"metric\":\"reads_per_query\",\"select\":$sel2}]}"
hyp H2 confirmatory "{\"cmp\":{\"left\":$r2,\"op\":\">\",\"right\":2}}" "{\"cmp\":{\"left\":$r2,\"op\":\"<=\",\"right\":2}}"
hyp H3 confirmatory "{\"cmp\":{\"left\":{\"agg\":\"median\",\"metric\":\"queries\",\"select\":$sel},\"op\":\">=\",\"right\":1}}" \
	"{\"cmp\":{\"left\":{\"agg\":\"median\",\"metric\":\"queries\",\"select\":$sel},\"op\":\"<\",\"right\":1}}"

# ---- run specs
spec() { # file partitions first count extra tags
	printf '{"index":"%s","queries":{"spec":"queries","first":%s,"count":%s},"cold":true,"mode":"serial",%s"tags":%s}\n' \
		"$T/w/clone" "$2" "$3" "$4" "$5" > "$1"
}
hdd='"device":"hdd-pool","device_time":"virtual",'
tg='["partition","cold","serial","hdd","virtual","baseline"]'
# Every modelled run registers its seed: the model's draws (and so the holdout's
# score against the 0.35 threshold) are the same on every machine and every
# temporary folder; an unseeded run draws from a hash of its run id and spec.
spec D1.json 0 3 "\"partitions\":[0],$hdd\"seed\":11,\"hypotheses\":[\"H1\",\"H2\",\"H4\"]," "$tg"
spec D2.json 20 3 "\"partitions\":[1],$hdd\"seed\":12," "$tg"
spec D3.json 30 3 "\"partitions\":[4],$hdd\"seed\":13," "$tg"
printf '{"index":"%s","queries":{"spec":"queries","first":0,"count":3},"cold":false,"partitions":[0],"tags":["partition","warm"]}\n' "$T/w/clone" > D4.json
spec S1.json 40 2 "\"partitions\":[5],$hdd\"seed\":14," "$tg"
spec T1.json 100 3 "\"partitions\":[2],$hdd\"seed\":15," '["partition","cold","serial","hdd","virtual","holdout"]'
spec T2.json 110 3 "\"partitions\":[3],$hdd\"seed\":16," '["partition","cold","serial","hdd","virtual","holdout"]'
# exploratory: the gate (8 partitions) tagged like D1, claiming to serve H2
printf '{"index":"%s","queries":{"spec":"queries","first":60,"count":1},"cold":true,"mode":"serial",%s"hypotheses":["H2"],"tags":["cold","serial","hdd","virtual","baseline","fast"]}\n' "$T/w/clone" "$hdd" > X.json
# a tag its settings contradict: "hdd" on a run without a device
printf '{"index":"%s","queries":{"spec":"queries","first":70,"count":1},"cold":true,"partitions":[6],"tags":["partition","cold","hdd"]}\n' "$T/w/clone" > lie.json

study() { # file threshold [defaults-ef]
	cat > "$1" <<J
{"id":"prereg","production":{"paths":["$T/w/prod"]},
 "datasets":{"base":"$BASE","queries":"$QUER"},
 "indexes":{"p":{"kind":"phnsw","dataset":"base","source":"$T/w/prod","clone":"$T/w/clone"}},
 "scratch_dir":"$T/w/scratch","defaults":{"k":10,"strategy":"pread","ef_search":${3:-40}},
 "plan":{"design":["D1.json","D2.json","D3.json","D4.json"],
   "hypotheses":{"H1":{"runs":["D1.json"],"sceptic":["S1.json"]},"H2":{"runs":["D1.json"]},
                 "H4":{"runs":["D1.json"],"sceptic":["S1.json"]}},
   "holdout":{"targets":["T1.json","T2.json"],"metrics":["wall_s","engine_reads","engine_read_ms_mean"],
              "threshold":$2,"band_level":0.95}}}
J
}
study study.json 0.35
study strict.json 0.0001
study ef10.json 0.35 10

# production must exist to be registered (it is recorded by device and inode)
expect 0 "index build" "$cs" index build --kind phnsw --data "$BASE" --metric l2 --partitions 8 --m 8 --ef-construction 32 --out prod
S=$T/S
expect 0 init "$cs" init "$S"
expect 0 "register H1 H2 H4" "$cs" register "$S" "$T/hyp/H1.json" "$T/hyp/H2.json" "$T/hyp/H4.json"
expect 0 "study register with a plan" "$cs" study register "$S" study.json
n=$(q "$S" "select json_array_length(payload, '\$.plan_specs') from records where kind='study'")
[ "$n" = 7 ] || die "the plan's run specs are not all hashed: $n of 7"
expect 0 "same study again" "$cs" study register "$S" study.json
[ "$(q "$S" "select count(*) from records where kind='study'")" = 1 ] || die "the same study again wrote a record"
expect 0 clone "$cs" clone prod clone --study "$S"
"$cs" validate "$S" --quiet >/dev/null 2>&1 || expect 0 validate "$cs" validate "$S" --quiet --allow-no-device-stats
cp -r "$S" "$T/SB"

# 1: a holdout target without the flag, before predictions
expect 3 "finding 1: holdout target without --holdout before predictions" "$cs" run "$S" T1.json --no-progress
grep -q "refused (holdout-predictions)" "$T/err" || die "finding 1: message: $(cat "$T/err")"
[ "$(q "$S" "select count(*) from records where kind='run_start'")" = 0 ] || die "finding 1: a run started"
# 6a: a tag the settings contradict
expect 5 "finding 6: tag hdd on a run without a device" "$cs" run "$S" lie.json --no-progress
grep -q '\$.tags\[2\]: tag "hdd" contradicts' "$T/err" || die "finding 6: message: $(cat "$T/err")"

# a registered seed: --seed may repeat it, not change it (exit 2, nothing written)
expect 2 "run --seed against the spec's registered seed" "$cs" run "$S" D1.json --seed 99 --no-progress
grep -q 'registers seed 11' "$T/err" || die "registered seed: message: $(cat "$T/err")"
[ "$(q "$S" "select count(*) from records where kind='run_start'")" = 0 ] || die "registered seed: a run started"
for r in D1 D2 D3 D4; do expect 0 "design run $r" "$cs" run "$S" $r.json --no-progress; done
[ "$(q "$S" "select json_extract(payload,'\$.device_seed') from records where kind='run' limit 1")" = 11 ] ||
	die "D1 did not draw from its registered seed 11"
[ "$(q "$S" "select count(*) from records where kind='run' and json_extract(payload,'\$.class')='design'")" = 4 ] ||
	die "design runs not classed design"
q "$S" "select json_extract(payload,'\$.tags') from records where kind='run' limit 1" | grep -q '"baseline"' ||
	die "D1 lacks its derived baseline tag"

# 3: the study spec and its plan after the first run
cp -r "$S" "$T/S3"
expect 3 "finding 3: plain re-registration after runs" "$cs" study register "$T/S3" ef10.json
[ "$(q "$T/S3" "select json_extract(payload,'\$.guard') from records where kind='refusal' order by seq desc limit 1")" = registered-frozen ] ||
	die "finding 3: no refusal record"
[ "$(q "$T/S3" "select count(*) from records where kind='study'")" = 1 ] || die "finding 3: a study record was written"
expect 0 "finding 3: amendment" "$cs" study register "$T/S3" ef10.json --amend --rationale "ef 10 after all"
[ "$(q "$T/S3" "select json_extract(payload,'\$.amendment.access_state') from records where kind='study' order by seq desc limit 1")" = "results seen" ] ||
	die "finding 3: the amendment lacks its access state"
sed 's/"count":3/"count":2/' D2.json > D2e.json && cp D2e.json D2.json
expect 0 "finding 3: an edited design spec" "$cs" run "$T/S3" D2.json --no-progress
[ "$(q "$T/S3" "select json_extract(payload,'\$.class') from records where kind='run' order by seq desc limit 1")" = exploratory ] ||
	die "finding 3: an edited design spec was not exploratory"
spec D2.json 20 3 "\"partitions\":[1],$hdd\"seed\":12," "$tg"

# 2: a hypothesis after the first run
expect 0 "finding 2: register H3 after runs" "$cs" register "$S" "$T/hyp/H3.json"
[ "$(q "$S" "select json_extract(payload,'\$.post_hoc') || '|' || json_extract(payload,'\$.access_state') from records where kind='hypothesis' and json_extract(payload,'\$.id')='H3'")" = "1|results seen" ] ||
	die "finding 2: H3 is not marked post hoc with its access state"

# 8: sceptic pending -> provisional
expect 7 "verdicts before the sceptic run (the holdout unfinished)" "$cs" verdicts "$S" --json
cp "$T/out" "$T/v1.json"
expect 0 "sceptic run" "$cs" run "$S" S1.json --no-progress
# 6b: an exploratory run tagged like the deciding run, claiming H2
expect 0 "finding 6: exploratory run" "$cs" run "$S" X.json --no-progress
[ "$(q "$S" "select json_extract(payload,'\$.class') from records where kind='run' order by seq desc limit 1")" = exploratory ] ||
	die "finding 6: X is not exploratory"
q "$S" "select json_extract(payload,'\$.tags') from records where kind='run' order by seq desc limit 1" | grep -q fast &&
	die "finding 6: a free label of an exploratory run reached its tags"
expect 7 "verdicts after the sceptic run (the holdout unfinished)" "$cs" verdicts "$S" --json
cp "$T/out" "$T/v2.json"
expect 7 "verdicts (text; the holdout unfinished)" "$cs" verdicts "$S"
cp "$T/out" "$T/v2.txt"
python3 - "$T/v1.json" "$T/v2.json" "$T/v2.txt" <<'PY' || fail=1
import json, sys
v1 = {v["hypothesis"]: v for v in json.load(open(sys.argv[1]))}
v2 = {v["hypothesis"]: v for v in json.load(open(sys.argv[2]))}
txt = open(sys.argv[3]).read()
bad = []
def want(c, what):
    if not c: bad.append(what)
want(v1["H1"]["verdict"] == "provisional", "finding 8: H1 before its sceptic run: %s" % v1["H1"]["verdict"])
want(v2["H1"]["verdict"] == "accepted", "finding 8: H1 after its sceptic run: %s" % v2["H1"]["verdict"])
want(v2["H4"]["verdict"] == "refuted", "finding 8: H4 with a refuting sceptic run: %s" % v2["H4"]["verdict"])
want(v2["H1"]["sceptic"]["done"] == 1, "finding 8: sceptic runs done %s" % v2["H1"].get("sceptic"))
want(v2["H2"]["verdict"] == "rejected" and len(v2["H2"]["runs"]) == 1,
     "finding 6: H2 %s on %d runs (the exploratory gate run counted?)" % (v2["H2"]["verdict"], len(v2["H2"]["runs"])))
want(v2["H3"]["post_hoc"] is True and v2["H3"]["class"] == "exploratory", "finding 2: H3 %s" % v2["H3"])
want(all(v2[h]["class"] == "confirmatory" and not v2[h]["post_hoc"] for h in ("H1", "H2", "H4")), "finding 2: classes")
want("exploratory (" in txt and "post hoc" in txt.split("exploratory (")[1], "finding 2: verdicts text does not list H3 apart")
print("\n".join("FAIL: " + b for b in bad) or "verdicts ok")
sys.exit(1 if bad else 0)
PY

# 4, 5: predictions, the holdout by the plan, scoring by the rule
expect 0 "holdout predict (the plan's targets)" "$cs" holdout predict "$S"
[ "$(q "$S" "select count(*) from records where kind='prediction'")" = 6 ] || die "6 predictions expected"
# 3 (the issue's case): the study's ef_search amended after predictions; the holdout runs use the
# new settings, so they are not the runs predicted, and no score is made of them
cp -r "$S" "$T/S4"
expect 0 "finding 3: amend ef_search after predictions" "$cs" study register "$T/S4" ef10.json --amend --rationale "ef 10"
for r in T1 T2; do expect 0 "finding 3: holdout $r after the amendment" "$cs" run "$T/S4" $r.json --no-progress; done
expect 3 "finding 3: score of runs whose settings differ from the predictions'" "$cs" holdout score "$T/S4"
grep -q "settings differ" "$T/err" || die "finding 3: the refusal does not say why: $(cat "$T/err")"
[ "$(q "$T/S4" "select count(*) from records where kind='score'")" = 0 ] || die "finding 3: a score was recorded"
expect 0 "holdout target without the flag" "$cs" run "$S" T1.json --no-progress
[ "$(q "$S" "select json_extract(payload,'\$.holdout') || json_extract(payload,'\$.class') from records where kind='run' order by seq desc limit 1")" = 1holdout ] ||
	die "finding 1: T1 is not a holdout run"
t1=$(q "$S" "select json_extract(payload,'\$.run_id') from records where kind='run' order by seq desc limit 1")
expect 3 "finding 5: a score before every target ran" "$cs" holdout score "$S"
expect 7 "finding 5: an interim score (unfinished)" "$cs" holdout score "$S" --interim --json
[ "$(q "$S" "select json_extract(payload,'\$.interim') from records where kind='score' order by seq desc limit 1")" = 1 ] || die "finding 5: not interim"
expect 0 "holdout target 2" "$cs" run "$S" T2.json --no-progress
expect 0 "finding 5: holdout target again" "$cs" run "$S" T1.json --no-progress
[ "$(q "$S" "select json_extract(payload,'\$.holdout_repeat') from records where kind='run' order by seq desc limit 1")" = 1 ] || die "finding 5: the repeat is not marked"
q "$S" "select json_extract(payload,'\$.because') from records where kind='deviation'" | grep -q "run again" || die "finding 5: no deviation for the repeat"
expect 3 "finding 4: --threshold other than the plan's" "$cs" holdout score "$S" --threshold 0.9
[ "$(q "$S" "select json_extract(payload,'\$.guard') from records where kind='refusal' order by seq desc limit 1")" = scoring-rule ] || die "finding 4: no refusal record"
expect 0 "finding 4: score by the plan (met)" "$cs" holdout score "$S" --json
cp "$T/out" "$T/score.json"
expect 0 "a re-score" "$cs" holdout score "$S" --threshold 0.35 --json
cp "$T/out" "$T/rescore.json"
expect 0 "verdicts with the registered test met" "$cs" verdicts "$S"
python3 - "$T/score.json" "$T/rescore.json" "$t1" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2])); t1 = sys.argv[3]
bad = []
def want(c, what):
    if not c: bad.append(what)
want(s["passed"] and s["threshold"] == 0.35 and s["threshold_source"] == "plan", "finding 4: %s" % {k: s[k] for k in ("passed", "threshold", "threshold_source", "mdape")})
want(not s["interim"] and "rescore" not in s and r.get("rescore") is True and r["score_of_record"] > 0, "finding 5: re-score labels")
want(all(row["runs"] != [] for row in s["rows"]) and
     all(row["runs"] == [t1] for row in s["rows"] if row["run_spec"] == "T1.json"), "finding 5: T1's rows use its first run only")
want(len(s["repeated_runs"]) == 1, "finding 5: repeated runs %s" % s["repeated_runs"])
want(sorted(s["per_metric"]) == ["engine_read_ms_mean", "engine_reads", "wall_s"], "finding 9: per metric %s" % list(s["per_metric"]))
want(all("mean_interval_score" in m and "mean_relative_interval_score" in m for m in s["per_metric"].values()), "finding 9: per-metric scores")
want("mean_interval_score" not in s and "mean_relative_interval_score" in s, "finding 9: a mean over mixed units")
want(s["independent_runs"] == 2 and s["n"] == 6, "finding 9: independent runs %s of %s rows" % (s["independent_runs"], s["n"]))
want(0 <= s["coverage_p_two_sided"] <= 1 and "coverage_p_high" in s and "coverage_p_two_sided_runs" in s, "finding 9: two-sided check")
print("\n".join("FAIL: " + b for b in bad) or "score ok: mdape %.3f, %d of %d inside" % (s["mdape"], s["inside"], s["n"]))
sys.exit(1 if bad else 0)
PY

# 4: a registered threshold missed: exit 6 (the same study, registered with 0.0001 before its first run)
SB=$T/SB
expect 0 "strict plan before any run" "$cs" study register "$SB" strict.json
# a plan registered after the last validation is checked before the first run (issue 14)
expect 3 "strict: a run before validating the new plan" "$cs" run "$SB" D1.json --no-progress
expect 0 "strict: validate the new plan" "$cs" validate "$SB" --quiet --allow-no-device-stats
for r in D1 D2 D3 D4; do expect 0 "strict: design run $r" "$cs" run "$SB" $r.json --no-progress; done
expect 0 "strict: predict" "$cs" holdout predict "$SB"
for r in T1 T2; do expect 0 "strict: holdout $r" "$cs" run "$SB" $r.json --no-progress; done
expect 6 "finding 4: holdout score, registered threshold missed" "$cs" holdout score "$SB"
grep -q "FAIL" "$T/out" || die "finding 4: FAIL not said"
expect 6 "finding 4: verdicts, registered threshold missed" "$cs" verdicts "$SB"

# 7: references and refusals
n0=$(nrec "$S")
expect 5 "finding 7: refute H99" "$cs" refute "$S" H99 --because "x"
expect 5 "finding 7: deviate --run R9999" "$cs" deviate "$S" --because "x" --run R9999
[ "$(nrec "$S")" = "$n0" ] || die "finding 7: an unknown reference wrote a record"
expect 0 "deviate --run R0001" "$cs" deviate "$S" --because "checked" --run R0001
sed 's/"t H1"/"t H1 changed"/' "$T/hyp/H1.json" > "$T/hyp/H1b.json"
expect 3 "finding 7: a changed hypothesis without --amend" "$cs" register "$S" "$T/hyp/H1b.json"
[ "$(q "$S" "select json_extract(payload,'\$.guard') from records where kind='refusal' order by seq desc limit 1")" = registered-frozen ] ||
	die "finding 7: the refused change left no refusal record"
expect 0 "log verify" "$cs" log verify "$S"
expect 0 report "$cs" report "$S" --out "$T/R"
for s in "Provisional (the accept rule holds" "Exploratory hypotheses, never counted as confirmatory: 1 (1 post hoc" \
	"runs: 4 design, 1 sceptic, 3 holdout, 1 exploratory" "Holdout (the score of record"; do
	grep -qF "$s" "$T/R/report.md" || die "report summary lacks: $s"
done
exit $fail
