#!/bin/sh
# bench/paged: a 64-partition paged HNSW of 200,000 x 768 synthetic vectors.
# Cold serial (Merge Append, one read in flight) against fanout:16 (16
# partition scans in flight from one thread over io_uring), beside the
# disk's own QD16/QD1 IOPS ratio from `coldstudy probe` on the same file in
# the same run; then virtual time under hdd-pool for serial and fan-out 16,
# 32, 64 (the seed's Table 3). Also the fashion-mnist fidelity setting.
#
# Every query line carries cpu_us_per_read (process CPU per read: robust to
# the machine's load, unlike wall time). uptime before and after.
#
# usage: bench/paged/run.sh [WORKDIR] [NQ]   (COLDSTUDY = the built CLI)
set -eu
CS=${COLDSTUDY:-build-paged/cli/coldstudy}
W=${1:-/tmp/pbench}
NQ=${2:-3}
mkdir -p "$W"
GEN='synth:n=200100,d=768,clusters=64,seed=1'
IX="$W/synth768"
if [ ! -f "$IX/KIND" ]; then
	rm -rf "$IX"
	/usr/bin/time -f "build %e s wall, %M KB peak" "$CS" index build --kind phnsw \
		--data "$GEN[0:200000]" --metric l2 --m 16 --ef-construction 64 --partitions 64 \
		--threads 2 --out "$IX"
fi
Q="$GEN[200000:200100]"
uptime
echo "== cold, real device (io_uring, O_DIRECT)"
"$CS" probe "$IX/part-000" --qd 1 --bs 8k --reads 2000 --strategy uring --json
"$CS" probe "$IX/part-000" --qd 16 --bs 8k --reads 8000 --strategy uring --json
"$CS" index query "$IX" --queries "$Q" --nq "$NQ" --mode serial --strategy uring --cold --json
"$CS" index query "$IX" --queries "$Q" --nq "$NQ" --mode fanout:16 --strategy uring --cold --json
# two driver threads (8 scans and one io_uring each), for comparison
COLDSTUDY_FANOUT_THREADS=2 "$CS" index query "$IX" --queries "$Q" --nq "$NQ" --mode fanout:16 \
	--strategy uring --cold --json
"$CS" probe "$IX/part-000" --qd 1 --bs 8k --reads 2000 --strategy uring --json
"$CS" probe "$IX/part-000" --qd 16 --bs 8k --reads 8000 --strategy uring --json
uptime
echo "== virtual time, hdd-pool"
for m in serial fanout:16 fanout:32 fanout:64; do
	"$CS" index query "$IX" --queries "$Q" --nq "$NQ" --mode "$m" --strategy uring --cold \
		--simulate hdd-pool --json
done
