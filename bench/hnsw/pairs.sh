#!/bin/sh
# Paired runs through the shipped CLI: `coldstudy index query --repeat N --warmup W`
# on a coldstudy HNSW graph against hnswlib (bench_hnsw --hnswlib-only, headers
# compiled -O3 -march=native) on fashion-mnist (60,000 x 784 base, the first NQ
# test images, k 10, M 16, ef_construction 200), at ef 10/20/40/80, alternated
# (which peer goes first flips each round) on one pinned CPU. fashion-mnist's
# pixels are whole numbers, so coldstudy holds them as exact bytes (the run
# prints "vector storage"); COLDSTUDY_HNSW_STORE=float32 in the environment
# measures the float32 graph instead. BASE and QUERIES (dataset specs) run
# it on other data: the float data of issue 30 are fashion-mnist scaled to
# [0, 1] (bench/hnsw/fmnist01.py writes it as fvecs) and clustered synth
# 128-d (synth:...[0:N] and [N:N+Q] of one spec). IDX must be built from
# BASE, and CACHE must be that data's own. Each run's QPS is
# its median timed pass; each pair's ratio is coldstudy / hnswlib; the median of
# the ROUNDS pairs per ef is printed last, with the recalls.
#   bench/hnsw/pairs.sh CS BENCH_HNSW IDX CACHE [ROUNDS] [NQ] [REPEAT] [WARMUP]
# IDX: coldstudy index build --kind hnsw --data fashion-mnist:train --metric l2 --m 16
#      --ef-construction 200 --threads 2 --out IDX
# CACHE: a directory holding hnswlib.bin (bench_hnsw --hnswlib-only CACHE builds it there).
set -eu
CS=$1 BH=$2 IX=$3 CACHE=$4 ROUNDS=${5:-3} NQ=${6:-5000} REP=${7:-5} WU=${8:-1}
CPU=${BENCH_CPU:-$(($(nproc) - 1))}
BASE=${BASE:-fashion-mnist:train} QUERIES=${QUERIES:-fashion-mnist:test}
OUT=${OUT:-/tmp/hnsw-pairs.$$}
mkdir -p "$OUT"
uptime
cs() { taskset -c "$CPU" "$CS" index query "$IX" --queries "$QUERIES" --nq "$NQ" \
	--k 10 --ef-search "$1" --repeat "$REP" --warmup "$WU" --json >"$OUT/cs.$2.$1.json"; }
hl() { taskset -c "$CPU" "$BH" --hnswlib-only "$CACHE" --ef "$1" --runs "$REP" --warmup "$WU" \
	--nq "$NQ" --base "$BASE" --queries "$QUERIES" >"$OUT/hl.$2.$1.json"; }
r=1
while [ "$r" -le "$ROUNDS" ]; do
	for ef in 10 20 40 80; do
		if [ $((r % 2)) -eq 1 ]; then cs $ef $r; hl $ef $r; else hl $ef $r; cs $ef $r; fi
	done
	r=$((r + 1))
done
uptime
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
print('QPS: each run\'s median timed pass (wall); best: its best timed pass (ann-benchmarks); cpu: 1 / CPU ms a query, over the timed passes')
first = json.load(open('%s/cs.1.10.json' % out))
print('coldstudy vector storage: %s (COLDSTUDY_HNSW_STORE=float32 keeps float32)' % first.get('vector_storage'))
print('ef  coldstudy recall  hnswlib recall  coldstudy QPS (per pair)  hnswlib QPS  ratio per pair  median ratio  cpu ratio per pair  median cpu ratio  best-pass ratio per pair  median')
for ef in (10, 20, 40, 80):
    c = [json.load(open('%s/cs.%d.%d.json' % (out, r, ef))) for r in range(1, n + 1)]
    h = [json.load(open('%s/hl.%d.%d.json' % (out, r, ef))) for r in range(1, n + 1)]
    ratios = [a['qps'] / b['qps'] for a, b in zip(c, h)]
    cpu = [b['cpu_ms_per_query'] / a['cpu_ms_per_query'] for a, b in zip(c, h)]
    best = [a['qps_best'] / b['qps_best'] for a, b in zip(c, h)]
    print('%-3d %.4f            %.4f          %-24s %-24s %-18s %.3f  %-18s %.3f  %-18s %.3f' % (
        ef, c[0]['recall_at_k'], h[0]['recall_at_k'],
        ','.join('%.0f' % a['qps'] for a in c), ','.join('%.0f' % b['qps'] for b in h),
        ','.join('%.2f' % x for x in ratios), statistics.median(ratios),
        ','.join('%.2f' % x for x in cpu), statistics.median(cpu),
        ','.join('%.2f' % x for x in best), statistics.median(best)))
PY
