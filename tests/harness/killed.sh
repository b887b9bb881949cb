#!/bin/sh
# Issue 16 finding 7, runs that die: a run killed outright (kill -9, or the
# kernel's OOM killer under its memory cap) cannot record itself; the next
# command that opens the study finds its run_start without a run record,
# sees its liveness marker unlocked, and records one deviation naming the
# run and the cause ("oom_kill" from its memory cgroup's count, else
# "killed or crashed"), said on stderr. A live run is left alone, and the
# deviation is written once.
set -u
. "$(dirname "$0")/common.sh"
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT INT TERM
setup_study "synth:n=20000,d=64,clusters=16,seed=1" 8
fail=0
devs() { # run-id: its deviations as JSON lines
	python3 - "$S/ledger.db" "$1" <<'PY'
import json, sqlite3, sys
for (p,) in sqlite3.connect(sys.argv[1]).execute("select payload from records where kind='deviation' order by seq"):
    d = json.loads(p)
    if d.get("run_id") == sys.argv[2]:
        print(json.dumps(d, sort_keys=True))
PY
}
wait_marker() { # run-id: until the run holds its marker and has a run_start
	i=0
	while [ ! -s "$S/running/$1" ] || ! "$cs" runs "$S" --csv 2>/dev/null | grep -q "^$1,"; do
		i=$((i + 1)); [ $i -gt 100 ] && { echo "FAIL: $1 did not start"; exit 1; }
		sleep 0.1
	done
}
printf '{"index":"%s","queries":{"spec":"synth:n=400,d=64,clusters=16,seed=7"},"cold":true,"device":"sata-ssd","query_count":100000,"buffers_bytes":1048576}' "$T/clone" > "$T/long.json"

# 1. kill -9 mid-run
"$cs" run "$S" "$T/long.json" --no-progress >/dev/null 2>&1 &
pid=$!
wait_marker R0001
# commands on the study while it runs leave it alone
"$cs" runs "$S" >/dev/null 2>"$T/live.err"
"$cs" log verify "$S" >/dev/null 2>>"$T/live.err" || { echo "FAIL: log verify during the run"; fail=1; }
[ -z "$(devs R0001)" ] || { echo "FAIL: a live run got a deviation: $(devs R0001)"; fail=1; }
kill -0 "$pid" 2>/dev/null || { echo "FAIL: the run ended before kill -9"; fail=1; }
kill -9 "$pid"; wait "$pid" 2>/dev/null; pid=
"$cs" runs "$S" >/dev/null 2>"$T/next.err" || { echo "FAIL: runs after the kill"; fail=1; }
grep -q "run R0001 did not finish: killed or crashed" "$T/next.err" ||
	{ echo "FAIL: the next command did not say it: $(cat "$T/next.err")"; fail=1; }
"$cs" log verify "$S" >/dev/null 2>"$T/again.err" || { echo "FAIL: log verify after"; fail=1; }
[ ! -s "$T/again.err" ] || { echo "FAIL: said twice: $(cat "$T/again.err")"; fail=1; }
d=$(devs R0001)
[ "$(printf '%s\n' "$d" | grep -c .)" = 1 ] || { echo "FAIL: R0001 has $(printf '%s\n' "$d" | grep -c .) deviations"; fail=1; }
printf '%s\n' "$d" | grep -q '"cause": "killed or crashed"' || { echo "FAIL: cause: $d"; fail=1; }
[ ! -e "$S/running/R0001" ] || { echo "FAIL: the marker is still there"; fail=1; }
echo "kill -9: $d"

# 2. the OOM killer under the run's cap: the cap is lowered under the live
# run to just above its usage, as an operator (or a tight spec) would, so
# the next pages the buffer pool takes are over it. Where this machine
# makes no writable memory cgroup, this part is skipped.
printf '{"index":"%s","queries":{"spec":"synth:n=400,d=64,clusters=16,seed=7"},"cold":true,"device":"sata-ssd","query_count":100000,"buffers_bytes":134217728,"mem_cap_bytes":1073741824}' "$T/clone" > "$T/cap.json"
"$cs" run "$S" "$T/cap.json" --no-progress >/dev/null 2>&1 &
pid=$!
wait_marker R0002
cg=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1])).get('mem_cap',{}); print(m.get('path','') if m.get('applied') else '')" "$S/running/R0002" 2>/dev/null)
i=0
while [ -z "$cg" ] && [ $i -lt 50 ] && kill -0 "$pid" 2>/dev/null; do
	sleep 0.1; i=$((i + 1))
	cg=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1])).get('mem_cap',{}); print(m.get('path','') if m.get('applied') else '')" "$S/running/R0002" 2>/dev/null)
done
if [ -n "$cg" ] && { [ -w "$cg/memory.limit_in_bytes" ] || [ -w "$cg/memory.max" ]; }; then
	sleep 1
	if [ -f "$cg/memory.max" ]; then f=memory.max; u=$(cat "$cg/memory.current"); else f=memory.limit_in_bytes; u=$(cat "$cg/memory.usage_in_bytes"); fi
	echo $((u + 1048576)) > "$cg/$f" 2>/dev/null || echo $((u + 8388608)) > "$cg/$f"
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	if kill -0 "$pid" 2>/dev/null; then
		echo "FAIL: the run outlived a cap just above its usage"; fail=1
		kill -9 "$pid"
	fi
	wait "$pid" 2>/dev/null; rc=$?; pid=
	echo "the capped run ended with exit $rc"
	"$cs" runs "$S" >/dev/null 2>"$T/oom.err"
	grep -q "run R0002 did not finish: OOM kill under mem_cap_bytes 1073741824" "$T/oom.err" ||
		{ echo "FAIL: the OOM kill was not said: $(cat "$T/oom.err")"; fail=1; }
	d=$(devs R0002)
	printf '%s\n' "$d" | grep -q '"cause": "oom_kill"' || { echo "FAIL: cause: $d"; fail=1; }
	printf '%s\n' "$d" | grep -q '"oom_kill": [1-9]' || { echo "FAIL: no oom_kill count: $d"; fail=1; }
	[ ! -d "$cg" ] || { echo "FAIL: the dead run's cgroup $cg is still there"; fail=1; }
	echo "OOM: $d"
else
	echo "no writable memory cgroup for the run here: the OOM part is skipped"
	kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
	"$cs" runs "$S" >/dev/null 2>&1
fi
"$cs" log verify "$S" >/dev/null || { echo "FAIL: log verify at the end"; fail=1; }
exit $fail
