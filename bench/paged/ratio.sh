#!/bin/sh
# bench/paged/ratio.sh: the fan-out target in one short run. Probe QD1 and
# QD16 on part-000 (before and after), then serial and fanout:16 on NQ cold
# queries of the 200k x 768 index made by run.sh; prints the pooled probe
# ratio (sum QD16 / sum QD1), the speed-up, and their quotient (target >= 0.8).
# Point IX at a copy of the index directory without its DATA file (links to
# the same part files) to skip loading the base for recall.
#
# usage: bench/paged/ratio.sh CS IX [NQ]    (COLDSTUDY_FANOUT_THREADS=N passes through)
# Q=SPEC: the queries (default the 200k x 768 index's); STRATEGY: the queries'
# read strategy (default pread, the CLI's default: the fan-out then runs 16
# synchronous readers; uring: 16 reads in flight from one thread); DEVICE=PROFILE:
# probes and queries through that device model in real time (a disk-bound
# regime where the host's own disk is cached).
set -eu
CS=${1:?usage: ratio.sh CS IX [NQ]}; IX=${2:?usage: ratio.sh CS IX [NQ]}; NQ=${3:-2}
Q=${Q:-'synth:n=200100,d=768,clusters=64,seed=1[200000:200100]'}
ST=${STRATEGY:-pread}
DV=""
[ -n "${DEVICE:-}" ] && DV="--device $DEVICE"
g() { tr -d " \n" | grep -o "\"$1\":[0-9.]*" | head -1 | cut -d: -f2; }
uptime
p1=$($CS probe $IX/part-000 --qd 1 --bs 8k --reads 2000 --strategy uring $DV --json | g iops)
p16=$($CS probe $IX/part-000 --qd 16 --bs 8k --reads 8000 --strategy uring $DV --json | g iops)
s=$($CS index query $IX --queries "$Q" --nq $NQ --mode serial --strategy $ST $DV --cold --json)
f=$($CS index query $IX --queries "$Q" --nq $NQ --mode fanout:16 --strategy $ST $DV --cold --json)
q1=$($CS probe $IX/part-000 --qd 1 --bs 8k --reads 2000 --strategy uring $DV --json | g iops)
q16=$($CS probe $IX/part-000 --qd 16 --bs 8k --reads 8000 --strategy uring $DV --json | g iops)
uptime
python3 - "$p1" "$p16" "$q1" "$q16" "$s" "$f" <<'PY'
import sys,json
p1,p16,q1,q16=map(float,sys.argv[1:5]); s=json.loads(sys.argv[5]); f=json.loads(sys.argv[6])
pr=(p16+q16)/(p1+q1)
sp=s['wall_s']/f['wall_s']
print(f"probe qd1 {p1:.0f}/{q1:.0f} qd16 {p16:.0f}/{q16:.0f} ratio {p16/p1:.2f}/{q16/q1:.2f} pooled {pr:.2f}")
print(f"serial {s['wall_s']/s['queries']:.3f} s/q reads {s['reads_per_query']} cpu_us/read {s['cpu_us_per_read']}")
print(f"fanout {f['wall_s']/f['queries']:.3f} s/q reads {f['reads_per_query']} cpu_us/read {f['cpu_us_per_read']} via {f.get('fanout_via')} inflight_max {f['inflight_max']}")
print(f"speedup {sp:.2f}x = {sp/pr:.2f} of pooled probe ratio")
PY
