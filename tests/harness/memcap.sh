#!/bin/sh
# Issue 16 finding 7, memory: a mem_cap_bytes below what the run must map
# (its buffer pool, ...) is refused before the run (exit 5 naming
# $.mem_cap_bytes and the figure needed; nothing recorded), and
# mem_peak_bytes has one definition, capped or not: the run's own memory
# cgroup's peak counter where the kernel has one (else the sampler's
# largest reading), said in the record's mem_peak.source.
set -u
. "$(dirname "$0")/common.sh"
setup_study "synth:n=6000,d=32,clusters=16,seed=1" 8
fail=0
base='"queries":{"spec":"synth:n=40,d=32,clusters=16,seed=7"},"cold":true,"query_count":40,"samplers":{"memory_s":0.05}'
printf '{"index":"%s",%s,"buffers_bytes":67108864,"mem_cap_bytes":4194304}' "$T/clone" "$base" > "$T/low.json"
printf '{"index":"%s",%s,"buffers_bytes":1048576}' "$T/clone" "$base" > "$T/free.json"
printf '{"index":"%s",%s,"buffers_bytes":1048576,"mem_cap_bytes":1073741824}' "$T/clone" "$base" > "$T/capped.json"
n0=$("$cs" log export "$S" | wc -l)
"$cs" run "$S" "$T/low.json" --no-progress >/dev/null 2>"$T/low.err"; rc=$?
[ $rc = 5 ] || { echo "FAIL: a cap below the pool exited $rc"; fail=1; }
grep -q '\$\.mem_cap_bytes: 4194304 bytes is below what the run must map' "$T/low.err" ||
	{ echo "FAIL: no JSON path / figure: $(cat "$T/low.err")"; fail=1; }
need=$(sed -n 's/.*raise it to at least \([0-9]*\) .*/\1/p' "$T/low.err")
[ -n "$need" ] && [ "$need" -gt 67108864 ] || { echo "FAIL: the figure needed ($need) is not above the 64 MiB pool"; fail=1; }
n1=$("$cs" log export "$S" | wc -l)
[ "$n0" = "$n1" ] || { echo "FAIL: the refused run wrote $((n1 - n0)) records"; fail=1; }
echo "refused: $(cat "$T/low.err")"

"$cs" run "$S" "$T/free.json" --no-progress >/dev/null || { echo "FAIL: uncapped run"; exit 1; }
"$cs" run "$S" "$T/capped.json" --no-progress >/dev/null || { echo "FAIL: capped run"; exit 1; }
for r in R0001 R0002; do "$cs" run show "$S" $r --json > "$T/$r.json" || fail=1; done
"$cs" run show "$S" R0002 --series memory --json > "$T/mem.json" || fail=1
python3 - "$T" <<'PY' || fail=1
import json, sys
T = sys.argv[1]
bad = 0
recs = [json.load(open("%s/%s.json" % (T, r))) for r in ("R0001", "R0002")]
kinds = set()
for r in recs:
    mp, m = r["mem_peak"], r["metrics"]
    if m["mem_peak_bytes"] != mp["bytes"] or mp["bytes"] <= 0:
        print("FAIL: %s: mem_peak_bytes %s, mem_peak %s" % (r["run_id"], m["mem_peak_bytes"], mp)); bad = 1
    own = r["mem_cap"].get("own_cgroup")
    if not own and not mp["source"].startswith("sampler: largest RSS"):
        print("FAIL: %s: no cgroup of its own, peak from %s" % (r["run_id"], mp["source"])); bad = 1
    if mp["source"].startswith("cgroup memory.") and mp.get("cgroup") != r["mem_cap"].get("path"):
        print("FAIL: %s: a peak counter of another cgroup: %s" % (r["run_id"], mp)); bad = 1
    kinds.add(mp["source"])
    print("%s: mem_peak_bytes %d from %s (cap %s)" % (r["run_id"], mp["bytes"], mp["source"], r["mem_cap"].get("requested_bytes")))
if len(kinds) != 1:
    print("FAIL: two definitions of peak memory: %s" % kinds); bad = 1
if recs[1]["mem_cap"].get("applied"):
    series = [x["cgroup_bytes"] for x in json.load(open(T + "/mem.json")) if x.get("cgroup_bytes") is not None]
    if recs[1]["mem_peak"]["source"].startswith("cgroup memory.") and series and max(series) > recs[1]["mem_peak"]["bytes"]:
        print("FAIL: a sampled usage %d is above the peak counter %d" % (max(series), recs[1]["mem_peak"]["bytes"])); bad = 1
else:
    print("no memory cgroup could be made here: the cap was not applied (%s)" % recs[1]["mem_cap"].get("why"))
sys.exit(bad)
PY
exit $fail
