#!/bin/sh
# bench/io: `coldstudy probe` beside fio on the same file at queue depth 1,
# 8 and 32 (IOPS ratio; fio gets the probe's submission batching, see
# harness/probe.c harness_fio_run), and read amplification of 4 KB random reads with
# and without read-ahead, counted on the block device after eviction.
#   BUILD=build-bench-io FILE=/tmp/coldstudy-io-bench.bin SIZE_MB=512 READS=20000 REPS=3 bench/io/run.sh
set -eu
cd "$(dirname "$0")/../.."
B=${BUILD:-build-bench-io}
F=${FILE:-/tmp/coldstudy-io-bench.bin}
SIZE_MB=${SIZE_MB:-512}
READS=${READS:-20000}
REPS=${REPS:-3}
[ -f "$B/build.ninja" ] || meson setup "$B" -Dbench=true -Dtests=false >/dev/null
ninja -C "$B" -j2 cli/coldstudy bench/io/readamp >/dev/null
C=$B/cli/coldstudy
made=0
if [ ! -f "$F" ]; then
	dd if=/dev/urandom of="$F" bs=1M count="$SIZE_MB" status=none
	made=1
fi
cleanup() { [ "$made" = 1 ] && rm -f "$F"; }
trap cleanup EXIT INT TERM
command -v fio >/dev/null || { echo "fio not installed: probe comparison skipped"; }

num() { sed -n "s/^ *\"$1\": \([0-9.e+-]*\),*$/\1/p" | head -1; }

echo "== probe vs fio: $F (${SIZE_MB} MiB), 4 KiB random reads, io_uring + O_DIRECT, $READS reads, $REPS reps"
"$C" probe "$F" --qd 32 --bs 4k --reads "$READS" >/dev/null # warm-up, discarded
printf '%4s %4s %12s %12s %8s\n' qd rep coldstudy fio ratio
for qd in 1 8 32; do
	for rep in $(seq 1 "$REPS"); do
		out=$("$C" probe "$F" --qd "$qd" --bs 4k --reads "$READS" --seed "$rep" --fio --json)
		cs=$(printf '%s\n' "$out" | num iops)
		fio=$(printf '%s\n' "$out" | sed -n '/"fio"/,/}/p' | num iops)
		ratio=$(printf '%s\n' "$out" | num iops_ratio)
		printf '%4s %4s %12.0f %12.0f %8.3f\n' "$qd" "$rep" "$cs" "$fio" "$ratio"
	done
done
echo
echo "== read amplification (block-device counters, after eviction)"
"$B/bench/io/readamp" "$F" --reads 2000 --repeat 3
