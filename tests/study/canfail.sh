#!/bin/sh
# Issue 14, item 2: `validate` checks that every hypothesis can fail
# (harness/canfail.c), one `can-fail:Hn` validation record each, and
# refuses (exit 3, a `refusal` record) a confirmatory or non-cause one that
# cannot, before any run. On a small synthetic study:
#  H1 the old H9: client placement against the default, per-read latency in
#     virtual time, both runs on seed 42 (one shared stream): the ratio is
#     exactly 1, the reject rule (< 0.67 or > 1.5) cannot hold: refused;
#  H4 the same on independent streams: the factor does not enter the model,
#     so the ratio stays within the streams' noise band: refused;
#  H3 the old H2: cold once against prewarm (cold before every query):
#     not like for like: refused;
#  H5 cold against warm over different query sets: refused;
#  H2 competing readers against the quiet baseline, independent streams:
#     passes;
# then the same H1 registered `descriptive` passes, and its verdict is
# never confirmatory; and results_digest (H8's identity over every query's
# ids) is equal over the same queries and differs over others; a hypothesis
# registered after the last validation stops runs until validate runs again.
set -u
cs=${COLDSTUDY:?}
command -v python3 >/dev/null 2>&1 || exit 77
command -v sqlite3 >/dev/null 2>&1 || { echo "no sqlite3 shell"; exit 77; }
T=$(mktemp -d /var/tmp/cs-canfail-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
fail=0
die() { echo "FAIL: $*"; fail=1; }
expect() { # code description command...
	want=$1; what=$2; shift 2
	"$@" >"$T/out" 2>"$T/err"; got=$?
	[ "$got" = "$want" ] || die "$what: exit $got, expected $want: $(head -c 600 "$T/err")"
}
q() { sqlite3 "$1/ledger.db" "$2"; }
check() { # study check -> "passed|findings json"
	q "$1" "select json_extract(payload,'\$.passed')||'|'||json_extract(payload,'\$.detail.findings') from records where kind='validation' and json_extract(payload,'\$.check')='$2' order by seq desc limit 1"
}
BASE="synth:n=3000,d=16,clusters=8,seed=3"
QUER="synth:n=100,d=16,clusters=8,seed=5"
mkdir -p "$T/w" "$T/hyp"
cd "$T/w" || exit 1

ratio() { # treatment-tags baseline-tags metric
	printf '{"ratio":[{"agg":"median","metric":"%s","select":{"tags":%s}},{"agg":"median","metric":"%s","select":{"tags":%s}}]}' \
		"$3" "$1" "$3" "$2"
}
hyp() { # id kind metric accept reject
	printf '{"id":"%s","title":"t %s","statement":"s","kind":"%s","metric":"%s","unit":"x","prediction":{"value":1,"band95":[0.5,2]},"accept":%s,"reject":%s}\n' \
		"$1" "$1" "$2" "$3" "$4" "$5" > "$T/hyp/$1.json"
}
cmp() { printf '{"cmp":{"left":%s,"op":"%s","right":%s}}' "$1" "$2" "$3"; }
P='"partition","cold","serial","hdd"'
alt=$(ratio "[$P,\"client-alt\"]" "[$P,\"baseline\"]" engine_read_ms_mean)
noncause_acc="{\"all\":[$(cmp "$alt" ">=" 0.8),$(cmp "$alt" "<=" 1.25)]}"
noncause_rej="{\"any\":[$(cmp "$alt" "<" 0.67),$(cmp "$alt" ">" 1.5)]}"
hyp H1 non-cause engine_read_ms_mean "$noncause_acc" "$noncause_rej"
hyp H4 non-cause engine_read_ms_mean "$noncause_acc" "$noncause_rej"
load=$(ratio "[$P,\"load\"]" "[$P,\"baseline\"]" engine_read_ms_mean)
hyp H2 confirmatory engine_read_ms_mean "$(cmp "$load" ">=" 1.2)" "$(cmp "$load" "<" 1.05)"
pw=$(ratio "[$P,\"baseline\"]" '["partition","prewarm","serial","hdd"]' wall_s)
hyp H3 confirmatory wall_s "$(cmp "$pw" ">=" 5)" "$(cmp "$pw" "<" 2)"
cw=$(ratio "[$P,\"baseline\"]" '["partition","warm","serial","hdd"]' wall_s)
hyp H5 confirmatory wall_s "$(cmp "$cw" ">=" 100)" "$(cmp "$cw" "<" 10)"
sed 's/"kind":"non-cause"/"kind":"descriptive"/' "$T/hyp/H1.json" > "$T/hyp/H1d.json"

spec() { # file first extra tags
	printf '{"index":"%s","queries":{"spec":"queries","first":%s,"count":3},"cold":true,"mode":"serial","partitions":[0],"device":"hdd-pool","device_time":"virtual",%s"tags":%s}\n' \
		"$T/w/clone" "$2" "$3" "$4" > "$1"
}
spec A.json 0 '"seed":42,' "[$P,\"virtual\",\"baseline\"]"
spec B.json 0 '"seed":42,"client_cpus":[0],' "[$P,\"virtual\",\"client-alt\"]"
spec A2.json 10 '"seed":43,' "[$P,\"virtual\",\"baseline\"]"
spec B2.json 10 '"seed":44,"client_cpus":[0],' "[$P,\"virtual\",\"client-alt\"]"
spec C.json 0 '"seed":7,"load":{"readers":2},' "[$P,\"virtual\",\"load\"]"
spec W.json 20 '"prewarm":{"of":"self"},' '["partition","prewarm","serial","hdd","virtual"]'
spec A3.json 20 '' "[$P,\"virtual\",\"baseline\"]"
printf '{"index":"%s","queries":{"spec":"queries","first":0,"count":1},"cold":false,"mode":"serial","partitions":[0],"device":"hdd-pool","device_time":"virtual","tags":["partition","warm","serial","hdd"]}\n' \
	"$T/w/clone" > Wm.json

study() { # file hypotheses-json
	cat > "$1" <<J
{"id":"canfail","production":{"paths":["$T/w/prod"]},
 "datasets":{"base":"$BASE","queries":"$QUER"},
 "indexes":{"p":{"kind":"phnsw","dataset":"base","source":"$T/w/prod","clone":"$T/w/clone"}},
 "scratch_dir":"$T/w/scratch","defaults":{"k":10,"strategy":"pread","ef_search":40},
 "plan":{"design":["A.json"],"hypotheses":$2}}
J
}
study bad.json '{"H1":{"runs":["A.json","B.json"]},"H2":{"runs":["A.json","C.json"]},
   "H3":{"runs":["A3.json","W.json"]},"H4":{"runs":["A2.json","B2.json"]},"H5":{"runs":["A.json","Wm.json"]}}'
study good.json '{"H1":{"runs":["A.json","B.json"]},"H2":{"runs":["A.json","C.json"]}}'

expect 0 "index build" "$cs" index build --kind phnsw --data "$BASE" --metric l2 --partitions 4 --m 8 --ef-construction 32 --out prod

# ---- the study with hypotheses that cannot fail
S=$T/S
expect 0 init "$cs" init "$S"
expect 0 register "$cs" register "$S" "$T/hyp/H1.json" "$T/hyp/H2.json" "$T/hyp/H3.json" "$T/hyp/H4.json" "$T/hyp/H5.json"
expect 0 "study register" "$cs" study register "$S" bad.json
expect 0 clone "$cs" clone prod clone --study "$S"
n0=$(q "$S" "select count(*) from records where kind='refusal'")
expect 3 "validate refuses hypotheses that cannot fail" "$cs" validate "$S" --quiet --allow-no-device-stats
grep -q "refused (can-fail): 4 hypotheses cannot fail" "$T/err" || die "validate's message: $(cat "$T/err")"
[ "$(q "$S" "select count(*) from records where kind='refusal'")" = $((n0 + 1)) ] || die "no refusal record"
[ "$(q "$S" "select json_extract(payload,'\$.guard')||' '||json_extract(payload,'\$.target') from records where kind='refusal' order by seq desc limit 1")" = "can-fail H1, H3, H4, H5" ] ||
	die "the refusal record: $(q "$S" "select payload from records where kind='refusal' order by seq desc limit 1")"
c=$(check "$S" can-fail:H1)
case $c in 0\|*"register the same seed 42"*"stays within [1, 1]"*) ;; *) die "can-fail:H1 (shared stream): $c" ;; esac
c=$(check "$S" can-fail:H4)
case $c in 0\|*"the factor does not enter the model"*) ;; *) die "can-fail:H4 (noise): $c" ;; esac
case $c in *"same seed"*) die "can-fail:H4 names a shared seed: $c" ;; esac
c=$(check "$S" can-fail:H3)
case $c in 0\|*"A3.json (cold once) and W.json (cold before every query): not like for like"*) ;; *) die "can-fail:H3: $c" ;; esac
c=$(check "$S" can-fail:H5)
case $c in 0\|*"run different query sets"*) ;; *) die "can-fail:H5: $c" ;; esac
c=$(check "$S" can-fail:H2)
[ "$c" = "1|[]" ] || die "can-fail:H2 (a sound contrast) did not pass: $c"
[ "$(q "$S" "select json_extract(payload,'\$.passed') from records where kind='validation' order by seq desc limit 1")" = 0 ] ||
	die "the batch's closing record passed"
expect 3 "a run after the refusal" "$cs" run "$S" A.json --no-progress
grep -q "refused (validated)" "$T/err" || die "run after refusal: $(cat "$T/err")"
[ "$(q "$S" "select count(*) from records where kind='run_start'")" = 0 ] || die "a run started"

# ---- the same H1 registered as descriptive: validated, never confirmatory
rm -rf clone scratch
S=$T/S2
expect 0 init2 "$cs" init "$S"
expect 0 register2 "$cs" register "$S" "$T/hyp/H1d.json" "$T/hyp/H2.json"
expect 0 "study register 2" "$cs" study register "$S" good.json
expect 0 clone2 "$cs" clone prod clone --study "$S"
expect 0 "validate with H1 descriptive" "$cs" validate "$S" --quiet --allow-no-device-stats
c=$(check "$S" can-fail:H1)
case $c in 1\|*"same seed 42"*) ;; *) die "can-fail:H1 descriptive: $c" ;; esac
[ "$(q "$S" "select json_extract(payload,'\$.detail.allowed') from records where kind='validation' and json_extract(payload,'\$.check')='can-fail:H1'")" != "" ] ||
	die "can-fail:H1 descriptive: no 'allowed' note"
# a hypothesis registered after the passing validation, before the first run, was never
# checked: runs are refused until validate runs again (which refuses it: no planned run)
cp -r "$S" "$T/S3"
expect 0 "register H3 after validate" "$cs" register "$T/S3" "$T/hyp/H3.json"
expect 3 "a run after an unchecked registration" "$cs" run "$T/S3" A.json --no-progress
grep -q "came after the latest validation" "$T/err" || die "unchecked registration: $(cat "$T/err")"
expect 3 "validate again refuses it" "$cs" validate "$T/S3" --quiet --allow-no-device-stats
c=$(check "$T/S3" can-fail:H3)
case $c in 0\|*"the plan maps no run to it"*) ;; *) die "can-fail:H3 unmapped: $c" ;; esac
for r in A B C; do expect 0 "run $r" "$cs" run "$S" $r.json --no-progress; done
rc=0
"$cs" verdicts "$S" --json >"$T/v.json" 2>"$T/err" || rc=$?
[ $rc = 0 ] || [ $rc = 6 ] || die "verdicts: exit $rc: $(cat "$T/err")"
python3 - "$T/v.json" <<'PY' || die "verdicts: a descriptive hypothesis counted as confirmatory"
import json, sys
v = {x["hypothesis"]: x for x in json.load(open(sys.argv[1]))}
assert v["H1"]["kind"] == "descriptive" and v["H1"]["class"] == "exploratory", v["H1"]
assert v["H2"]["class"] == "confirmatory", v["H2"]
PY
"$cs" verdicts "$S" >"$T/v.txt" 2>&1
grep -A3 '^exploratory (kind exploratory or descriptive' "$T/v.txt" | grep -q '^H1 *descriptive' ||
	die "verdicts does not list H1 apart: $(cat "$T/v.txt")"
# results_digest (H8's identity): the same queries on the same index give the same ids whatever
# the device, load or placement; other queries give other ids
expect 0 "run A2 (exploratory: other queries)" "$cs" run "$S" A2.json --no-progress
dig() { q "$S" "select json_extract(payload,'\$.metrics.results_digest') from records where kind='run' and json_extract(payload,'\$.run_id')='$1'"; }
da=$(dig R0001); db=$(dig R0002); dc=$(dig R0003); d2=$(dig R0004)
[ -n "$da" ] && [ "$da" = "$db" ] && [ "$da" = "$dc" ] || die "results_digest differs over the same queries: $da $db $dc"
[ -n "$d2" ] && [ "$d2" != "$da" ] || die "results_digest of other queries equals: $d2 $da"
expect 0 "log verify" "$cs" log verify "$S"

[ $fail = 0 ] && echo "ok: can-fail refuses H1 (shared stream), H3 (cold mode), H4 (noise), H5 (query sets), passes H2; descriptive H1 passes and is never confirmatory; results_digest"
exit $fail
