#!/bin/sh
# Paired HNSW builds with 2 threads, alternated (which peer goes first flips
# each round): `coldstudy index build --kind hnsw` (the shipped CLI; its
# "seconds" cover the build and writing the index) against hnswlib
# (bench_hnsw --hnswlib-only on an empty cache: its build_s is the
# addPoint loop only, the index not saved yet), fashion-mnist train, M 16,
# ef_construction 200. A pair's ratio is coldstudy / hnswlib (at most 1.0
# is the target); the median of the ROUNDS pairs is printed last.
#   bench/hnsw/build_pairs.sh CS BENCH_HNSW [ROUNDS]
set -eu
CS=$1 BH=$2 ROUNDS=${3:-3}
OUT=${OUT:-/tmp/hnsw-build-pairs.$$}
mkdir -p "$OUT"
uptime
cs() {
	rm -rf "$OUT/cs"
	"$CS" index build --kind hnsw --data fashion-mnist:train --metric l2 --m 16 \
		--ef-construction 200 --threads 2 -q --json --out "$OUT/cs" >"$OUT/cs.$1.json"
}
hl() {
	rm -rf "$OUT/hl" && mkdir -p "$OUT/hl"
	"$BH" --hnswlib-only "$OUT/hl" --threads 2 --ef 10 --runs 1 --warmup 0 --nq 100 >"$OUT/hl.$1.json"
}
r=1
while [ "$r" -le "$ROUNDS" ]; do
	if [ $((r % 2)) -eq 1 ]; then cs $r; hl $r; else hl $r; cs $r; fi
	r=$((r + 1))
done
rm -rf "$OUT/cs" "$OUT/hl"
uptime
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
c = [json.load(open('%s/cs.%d.json' % (out, r)))['seconds'] for r in range(1, n + 1)]
h = [json.load(open('%s/hl.%d.json' % (out, r)))['build_s'] for r in range(1, n + 1)]
rat = [a / b for a, b in zip(c, h)]
print('build s, 2 threads: coldstudy %s; hnswlib %s; ratio per pair %s; median %.3f' % (
    ','.join('%.1f' % x for x in c), ','.join('%.1f' % x for x in h),
    ','.join('%.2f' % x for x in rat), statistics.median(rat)))
PY
