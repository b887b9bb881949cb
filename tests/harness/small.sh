#!/bin/sh
# The small things a new user trips on, each asserted: the run's progress
# line (no "?0 s left"; a virtual-time run shows the modelled QPS), the
# build bar's elapsed time and estimate (drawn in a pseudo-terminal), -q
# silencing both, numbers printed as numbers ("200", not "2e+02"),
# --json on validate, study show, index build and run, and the holdout
# message when the design runs are too few.
set -u
. "$(dirname "$0")/common.sh"
fail=0
no() { echo "FAIL: $*"; fail=1; }
setup_study "synth:n=2000,d=16,clusters=8,seed=1" 4
q='"queries":{"spec":"synth:n=40,d=16,clusters=8,seed=7","count":30}'

# holdout predict with too few design runs: one whole message
printf '{"index":"%s",%s,"cold":true}' "$T/clone" "$q" > "$T/one.json"
"$cs" run "$S" "$T/one.json" -q >/dev/null || no "one design run"
printf '{"targets":[{"run":"one.json","metrics":["wall_s"]}]}' > "$T/targets.json"
"$cs" holdout predict "$S" --targets "$T/targets.json" >/dev/null 2>"$T/err"; rc=$?
[ $rc = 5 ] || no "holdout predict with too few runs: exit $rc"
grep -q 'neither model fits: io model: .*; loglinear: ' "$T/err" || no "holdout message: $(cat "$T/err")"
grep -Eq 'and $' "$T/err" && no "holdout message ends in 'and'"

# run progress: forced on (stderr is not a terminal here)
printf '{"index":"%s",%s,"cold":true,"device":"hdd-pool","device_time":"virtual","tags":["v"]}' "$T/clone" "$q" > "$T/v.json"
"$cs" run "$S" "$T/v.json" --progress >"$T/out" 2>"$T/err" || no "virtual run: $(tail -1 "$T/err")"
grep -q '?' "$T/err" && no "progress shows an unknown as '?': $(tr '\r' '\n' < "$T/err" | grep '?' | head -1)"
grep -q 'qps modelled (' "$T/err" || no "virtual-time progress lacks the modelled QPS: $(tr '\r' '\n' < "$T/err" | tail -1)"
tr '\r' '\n' < "$T/err" | tail -1 | grep -q 'elapsed, done' || no "progress does not end with done"
"$cs" run "$S" "$T/v.json" -q >"$T/out" 2>"$T/err" || no "run -q"
[ -s "$T/err" ] && no "run -q wrote to stderr: $(head -c 200 "$T/err")"
[ "$(wc -l < "$T/out")" = 1 ] || no "run -q printed more than the id"

# build bar in a pseudo-terminal: elapsed and an estimate; -q: none; --json
if script -qec "true" /dev/null >/dev/null 2>&1; then
	script -qec "$cs index build --kind phnsw --data synth:n=3000,d=16,seed=2 --metric l2 --partitions 2 --out $T/b1" /dev/null >"$T/tty" 2>&1 ||
		no "index build in a pty: $(tail -2 "$T/tty")"
	grep -q 's elapsed, ' "$T/tty" || no "build bar without elapsed time: $(tr '\r' '\n' < "$T/tty" | tail -2)"
	grep -Eq 'about [0-9]+ s left|elapsed, done' "$T/tty" || no "build bar without an estimate or done"
	script -qec "$cs index build --kind hnsw --data synth:n=500,d=8,seed=2 --metric l2 --out $T/b2 -q" /dev/null >"$T/tty2" 2>&1 ||
		no "index build -q"
	grep -q 'building' "$T/tty2" && no "index build -q drew a bar"
else
	echo "no pseudo-terminal (script): build bar not checked"
fi
"$cs" index build --kind hnsw --data synth:n=500,d=8,seed=2 --metric l2 --out "$T/b3" --json >"$T/b3.json" || no "index build --json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["n"]==500 and d["d"]==8 and d["kind"]=="hnsw", d' "$T/b3.json" || no "index build --json output"

# --json on validate and study show
"$cs" validate "$S" --allow-no-device-stats --json >"$T/val.json"; rc=$?
[ $rc = 0 ] || [ $rc = 4 ] || no "validate --json exit $rc"
python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); assert a[-1]["check"]=="all" and len(a)>3, a' "$T/val.json" || no "validate --json output"
"$cs" study show "$S" --json >"$T/study.json2" || no "study show --json exit $?"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["id"]=="t"' "$T/study.json2" || no "study show --json output"

# numbers as numbers
cp "$COLDSTUDY_SRC/studies/cold-query/hypotheses/H7.json" "$T/H7.json"
python3 - "$T/H7.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["prediction"] = {"value": 150.0, "band95": [100.0, 200.0]}
json.dump(d, open(sys.argv[1], "w"))
d["id"] = "H8"; d["prediction"] = {"value": 150.0, "band95": [200.0, 10.0]}
json.dump(d, open(sys.argv[1] + ".bad", "w"))
PY
"$cs" register "$S" "$T/H7.json" >/dev/null || no "register H7"
"$cs" hypotheses "$S" >"$T/hyps" || no "hypotheses"
grep -q '\[100, 200\]' "$T/hyps" || no "band not readable: $(grep H7 "$T/hyps")"
grep -q 'e+0' "$T/hyps" && no "hypotheses print exponents: $(grep 'e+0' "$T/hyps")"
"$cs" register "$S" "$T/H7.json.bad" >/dev/null 2>"$T/err"
grep -q 'expected low <= high, got \[200, 10\]' "$T/err" || no "band message: $(cat "$T/err")"

[ $fail = 0 ] || exit 1
echo "ok: progress, build bar, -q, --json, readable numbers, holdout message"
