#!/bin/sh
# Cold: 32 clients, searchProbe 64 / rescoreLimit 350, page cache evicted
# first; --io concurrent:64 over io_uring, --io serial over io_uring, and
# mmap; then `coldstudy probe` at queue depth 64 and the workload's median
# read size (4 KiB: rescoring reads outnumber posting reads) on vectors.dat.
#   bench/hfresh/cold.sh BUILD DIR [NQ]
set -eu
B=$1
DIR=$2
NQ=${3:-640}
Q=fashion-mnist:test
"$B/bench/hfresh/bench_hfresh" cold "$DIR" "$Q" "$NQ" uring concurrent:64 32 64 350
"$B/bench/hfresh/bench_hfresh" cold "$DIR" "$Q" "$NQ" uring serial 32 64 350
"$B/bench/hfresh/bench_hfresh" cold "$DIR" "$Q" "$NQ" mmap serial 32 64 350
"$B/cli/coldstudy" cache evict "$DIR/vectors.dat" >/dev/null 2>&1 || true
"$B/cli/coldstudy" probe "$DIR/vectors.dat" --qd 64 --bs 4k --reads 20000 --strategy uring --json
