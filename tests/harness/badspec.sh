#!/bin/sh
# Bad specs a new user writes, through the command line: each is exit 5
# with the file and the JSON path, and changes nothing. An unknown key
# names the valid ones and the nearest; a misspelt dataset spec and a
# dataset file that is not there are refused at `study register`; a
# partition the index does not have is refused at `run`, before run_start.
set -u
. "$(dirname "$0")/common.sh"
fail=0
setup_study "synth:n=2000,d=16,clusters=8,seed=1" 4
expect5() { # description needle command...
	what=$1 needle=$2; shift 2
	"$@" >"$T/out" 2>"$T/err"; rc=$?
	[ $rc = 5 ] || { echo "FAIL: $what: exit $rc, expected 5: $(cat "$T/err")"; fail=1; return; }
	grep -qF -- "$needle" "$T/err" || { echo "FAIL: $what: message lacks '$needle': $(cat "$T/err")"; fail=1; }
	[ "$(wc -l < "$T/err")" = 1 ] || { echo "FAIL: $what: not one line"; fail=1; }
}
n0=$("$cs" log export "$S" | wc -l)
q='"queries":{"spec":"synth:n=20,d=16,clusters=8,seed=7","count":4}'
printf '{"index":"%s",%s,"cold":true,"clinets":2}' "$T/clone" "$q" > "$T/typo.json"
expect5 "unknown key" '$.clinets: unknown key (did you mean "clients"? expected one of: index, queries' \
	"$cs" run "$S" "$T/typo.json"
printf '{"index":"%s",%s,"cold":true,"partitions":[1,99]}' "$T/clone" "$q" > "$T/parts.json"
expect5 "partition out of range" '$.partitions[1]: partition 99 is out of range' "$cs" run "$S" "$T/parts.json"
grep -q "4 partitions (0..3)" "$T/err" || { echo "FAIL: range not named: $(cat "$T/err")"; fail=1; }
printf '{"id":"t2","production":{"paths":["/srv/x"]},"datasets":{"base":"fashion-mnst:train"}}' > "$T/s1.json"
expect5 "misspelt dataset" '$.datasets.base: expected a dataset spec' "$cs" study register "$S" "$T/s1.json"
grep -q '"fashion-mnst:train"' "$T/err" || { echo "FAIL: the bad spec is not quoted"; fail=1; }
printf '{"id":"t2","production":{"paths":["/srv/x"]},"datasets":{"q":"fvecs:%s/none.fvecs[0:10]"}}' "$T" > "$T/s2.json"
expect5 "missing dataset file" "\$.datasets.q: $T/none.fvecs: No such file" "$cs" study register "$S" "$T/s2.json"
printf '{"id":"t2","production":{"paths":["/srv/x"]},"defaults":{"k":10,"duration_s":5,"query_count":3}}' > "$T/s3.json"
expect5 "count and duration" '$.defaults.duration_s: give either' "$cs" study register "$S" "$T/s3.json"
"$cs" schema run --check "$T/typo.json" >/dev/null 2>&1; rc=$?
[ $rc = 5 ] || { echo "FAIL: schema --check of a bad run spec: exit $rc"; fail=1; }
"$cs" schema run --check "$T/parts.json" >/dev/null || { echo "FAIL: schema --check refuses a well-formed spec"; fail=1; }
"$cs" schema nonsense >/dev/null 2>&1; rc=$?
[ $rc = 2 ] || { echo "FAIL: schema nonsense: exit $rc, expected 2"; fail=1; }
n1=$("$cs" log export "$S" | wc -l)
[ "$n0" = "$n1" ] || { echo "FAIL: refused inputs changed the ledger ($n0 -> $n1 records)"; fail=1; }
[ $fail = 0 ] || exit 1
echo "ok: unknown key with suggestion, partitions, dataset specs and files, exit 5 each, ledger unchanged"
