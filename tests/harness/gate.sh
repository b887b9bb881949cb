#!/bin/sh
# The seed's gate on the partitioned index: a serial cold run is its reads
# (io_over_wall >= 0.95) and, where the device has stats, device and
# engine read counts agree within 10%; the same run through the hdd-pool
# device profile in real time stays I/O-bound (io_over_wall >= 0.95).
# Each query of the gate run starts cold (cold_each_query), as pgvector's
# measurement dropped the OS cache before each query. The io_over_wall
# bounds are asserted only without sanitizers: under ASan the non-I/O share
# is the sanitizer's, so such a build runs every check and then skips (77).
set -u
san=${SANITIZE:-none}
. "$(dirname "$0")/common.sh"
base="synth:n=20000,d=32,clusters=16,seed=1"
setup_study "$base" 16
q='"queries":{"spec":"synth:n=20,d=32,clusters=16,seed=7","count":5}'
printf '{"index":"%s",%s,"cold":true,"cold_each_query":true,"tags":["gate","serial"]}' "$T/clone" "$q" > "$T/gate.json"
printf '{"index":"%s",%s,"cold":true,"query_count":1,"partitions":[0,1,2],"device":"hdd-pool","tags":["partition","hdd"]}' "$T/clone" "$q" > "$T/hdd.json"
fail=0 low=0
id=$("$cs" run "$S" "$T/gate.json" -q) || { echo "FAIL: gate run"; exit 1; }
iow=$(metric "$id" io_over_wall); er=$(metric "$id" engine_reads); dr=$(metric "$id" device_reads)
echo "serial cold gate: io_over_wall $iow, engine reads $er, device reads $dr, wall $(metric "$id" wall_s) s"
python3 -c "import sys; sys.exit(0 if $iow >= 0.95 else 1)" || { echo "io_over_wall $iow < 0.95"; low=1; }
if [ "$dr" != null ]; then
	python3 -c "import sys; sys.exit(0 if abs($dr / $er - 1) <= 0.10 else 1)" ||
		{ echo "FAIL: device reads $dr vs engine reads $er differ by more than 10%"; fail=1; }
fi
id=$("$cs" run "$S" "$T/hdd.json" -q) || { echo "FAIL: hdd-pool run"; exit 1; }
iow=$(metric "$id" io_over_wall)
echo "hdd-pool profile, real time: io_over_wall $iow, engine read ms $(metric "$id" engine_read_ms_mean), reads $(metric "$id" engine_reads), wall $(metric "$id" wall_s) s"
python3 -c "import sys; sys.exit(0 if $iow >= 0.95 else 1)" || { echo "hdd io_over_wall $iow < 0.95"; low=1; }
"$cs" log verify "$S" >/dev/null || { echo "FAIL: log verify"; fail=1; }
[ $fail = 0 ] || exit 1
if [ "$san" != none ]; then
	echo "SKIP: io_over_wall not judged in a $san build (meson test -C build --suite slow harness-gate)"
	exit 77
fi
[ $low = 0 ] || { echo FAIL; exit 1; }
exit 0
