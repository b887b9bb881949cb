#!/bin/sh
# Kill -9 of a run at random moments, and SIGTERM once: afterwards the
# ledger verifies, every run record is whole (status complete, every
# metric, raw blobs covered by verify), every killed run got one deviation
# from the next command (log verify), and the terminated run left a
# deviation and no run record.
set -u
. "$(dirname "$0")/common.sh"
setup_study "synth:n=6000,d=32,clusters=16,seed=1" 8
printf '{"index":"%s","queries":{"spec":"synth:n=40,d=32,clusters=16,seed=7"},"cold":true,"device":"sata-ssd","query_count":120,"buffers_bytes":1048576,"samplers":{"iostat_s":0.05,"memory_s":0.05}}' "$T/clone" > "$T/r.json"
fail=0
for i in 1 2 3 4 5 6; do
	"$cs" run "$S" "$T/r.json" --no-progress >/dev/null 2>&1 &
	pid=$!
	sleep "$(python3 -c "import random; print(round(random.uniform(0.2, 3.0), 3))")"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	"$cs" log verify "$S" >/dev/null 2>&1 || { echo "FAIL: log verify after kill -9 #$i"; fail=1; }
done
# A run under a memory cap killed -9 leaves its cgroup behind; the next
# capped run removes it (where this process may make memory cgroups).
cgparent() { # the directory our coldstudy-PID cgroups go in
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		echo "/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup | sed 's|^/$||')"
	else
		echo "/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup | sed 's|^/$||')"
	fi
}
printf '{"index":"%s","queries":{"spec":"synth:n=40,d=32,clusters=16,seed=7"},"cold":true,"device":"sata-ssd","query_count":%s,"buffers_bytes":1048576,"mem_cap_bytes":1073741824}' "$T/clone" 400 > "$T/cap.json"
printf '{"index":"%s","queries":{"spec":"synth:n=40,d=32,clusters=16,seed=7"},"cold":true,"query_count":%s,"buffers_bytes":1048576,"mem_cap_bytes":1073741824}' "$T/clone" 5 > "$T/cap2.json"
"$cs" run "$S" "$T/cap.json" --no-progress >/dev/null 2>&1 &
pid=$!
sleep 1.5
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
left="$(cgparent)/coldstudy-$pid"
if [ -d "$left" ]; then
	"$cs" run "$S" "$T/cap2.json" --no-progress >/dev/null || { echo "FAIL: capped run after kill -9"; fail=1; }
	if [ -d "$left" ]; then
		echo "FAIL: $left is still there after the next capped run"; fail=1
		rmdir "$left" 2>/dev/null
	else
		echo "the killed run's cgroup $left was removed by the next capped run"
	fi
else
	echo "no cgroup left by the killed capped run (no memory cgroup here, or it had not started)"
fi
"$cs" log verify "$S" >/dev/null 2>&1 || { echo "FAIL: log verify after the capped kill"; fail=1; }
printf '{"index":"%s","queries":{"spec":"synth:n=40,d=32,clusters=16,seed=7"},"cold":true,"device":"sata-ssd","query_count":400,"buffers_bytes":1048576}' "$T/clone" > "$T/long.json"
before=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"select count(*) from records where kind='run_start'\").fetchone()[0])" "$S/ledger.db")
"$cs" run "$S" "$T/long.json" --no-progress >/dev/null 2>"$T/term.err" &
pid=$!
sleep 1.5
kill -TERM "$pid"
wait "$pid"; rc=$?
[ $rc != 0 ] || { echo "FAIL: the long run finished before SIGTERM"; fail=1; }
"$cs" log verify "$S" >/dev/null 2>&1 || { echo "FAIL: log verify after SIGTERM"; fail=1; }
python3 - "$S/ledger.db" "$before" <<'PY' || fail=1
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = [(k, json.loads(p)) for (k, p) in db.execute("select kind, payload from records order by seq")]
starts = [p["run_id"] for k, p in rows if k == "run_start"]
runs = [p for k, p in rows if k == "run"]
devs = [p for k, p in rows if k == "deviation"]
bad = 0
for r in runs:
    if r.get("status") != "complete" or len(r["metrics"]) < 18 or set(r["raw"]) != {"queries", "iostat", "memory", "prometheus"}:
        print("FAIL: run %s is not whole" % r["run_id"]); bad = 1
print("%d run_start, %d complete runs, %d deviations" % (len(starts), len(runs), len(devs)))
done = {r["run_id"] for r in runs} | {d.get("run_id") for d in devs}
# A run killed -9 is found by the next command on the study (log verify
# here): one deviation naming it, cause "killed or crashed".
mid = [d["run_id"] for d in devs if d.get("found_by") and d.get("cause") == "killed or crashed"]
print("kill -9 landed mid-run %d times: %s" % (len(mid), mid))
if not mid:
    print("FAIL: no kill -9 landed between run_start and the run record"); bad = 1
if len(mid) != len(set(mid)):
    print("FAIL: a killed run got two deviations: %s" % mid); bad = 1
left = [s for s in starts if s not in done]
if left:
    print("FAIL: runs with neither a run record nor a deviation: %s" % left); bad = 1
if len(starts) != int(sys.argv[2]) + 1:
    print("FAIL: the SIGTERM run did not start"); bad = 1
else:
    last = starts[-1]
    if any(r["run_id"] == last for r in runs):
        print("FAIL: the terminated run %s has a run record" % last); bad = 1
    if not any(d.get("run_id") == last and "SIGTERM" in d["because"] for d in devs):
        print("FAIL: no deviation for the terminated run %s" % last); bad = 1
sys.exit(bad)
PY
exit $fail
