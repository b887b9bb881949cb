#!/bin/sh
# Cold: 32 clients, searchProbe 64 / rescoreLimit 350, page cache evicted
# first; --io concurrent:64 over io_uring, --io serial over io_uring, and
# mmap; then `coldstudy probe` at queue depth 64 on the index's largest
# file (vectors.dat) at 4 KiB and at the concurrent run's median read size
# (rounded up to 4 KiB).
#   bench/hfresh/cold.sh BUILD DIR [NQ]
set -eu
B=$1
DIR=$2
NQ=${3:-640}
Q=fashion-mnist:test
R=$("$B/bench/hfresh/bench_hfresh" cold "$DIR" "$Q" "$NQ" uring concurrent:64 32 64 350)
echo "$R"
"$B/bench/hfresh/bench_hfresh" cold "$DIR" "$Q" "$NQ" uring serial 32 64 350
"$B/bench/hfresh/bench_hfresh" cold "$DIR" "$Q" "$NQ" mmap serial 32 64 350
MED=$(echo "$R" | python3 -c 'import json,sys; m=json.loads(sys.stdin.read())["median_read_bytes"]; print(int((m + 4095)//4096*4096))')
P="$DIR/vectors.dat"
for BS in 4096 "$MED"; do
	"$B/cli/coldstudy" cache evict "$P" >/dev/null 2>&1 || true
	"$B/cli/coldstudy" probe "$P" --qd 64 --bs "$BS" --reads 20000 --strategy uring --json
done
