#!/bin/sh
# Side by side: HFresh and Debian's faiss IndexIVFFlat on the same data in
# one run, then the summary (best warm single-thread QPS at recall@10 >=
# 0.95 for each, and the ratio). Usage:
#   bench/hfresh/run.sh [BUILD] [BASE] [QUERIES] [NQ] [NLIST]
# defaults: build-bench, fashion-mnist:train, fashion-mnist:test, 1000, 245.
# Environment:
#   HFRESH_OPTS  bench_hfresh warm KEY=VALUE options (code_bits=4,
#                max_posting_kb=256, strategy=mmap, probes=..., ...)
#   BENCH_CPU    the CPU both peers' query threads are pinned to after their
#                builds (default: the last one; on these 2-vCPU guests the
#                first one ran the same queries 20-27% slower, cause not found)
#   FAISS_INDEX  a file to keep faiss's trained index in between runs
set -eu
B=${1:-build-bench}
BASE=${2:-fashion-mnist:train}
QS=${3:-fashion-mnist:test}
NQ=${4:-1000}
NLIST=${5:-245}
OUT=${OUT:-/tmp/bench-hfresh.$$}
DIR=${DIR:-$OUT.idx}
BENCH_CPU=${BENCH_CPU:-$(($(nproc) - 1))}
export BENCH_CPU
mkdir -p "$OUT"
rm -rf "$DIR"
# shellcheck disable=SC2086
"$B/bench/hfresh/bench_faiss" "$BASE" "$QS" "$NQ" "$NLIST" ${FAISS_INDEX:-} | tee "$OUT/faiss.jsonl"
# shellcheck disable=SC2086
"$B/bench/hfresh/bench_hfresh" warm "$BASE" "$QS" "$NQ" "$DIR" ${HFRESH_OPTS:-} | tee "$OUT/hfresh.jsonl"
python3 - "$OUT/faiss.jsonl" "$OUT/hfresh.jsonl" <<'PY'
import json, sys
f = [json.loads(l) for l in open(sys.argv[1])]
h = [json.loads(l) for l in open(sys.argv[2])]
fb = max((r for r in f if r.get('recall_at_10', 0) >= 0.95), key=lambda r: r['qps'], default=None)
hb = max((r for r in h if r.get('recall_at_10', 0) >= 0.95), key=lambda r: r['qps'], default=None)
print('faiss  best at recall>=0.95:', fb)
print('hfresh best at recall>=0.95:', hb)
if fb and hb:
    print('QPS ratio hfresh/faiss: %.2f' % (hb['qps'] / fb['qps']))
PY
