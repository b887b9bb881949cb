#!/bin/sh
# Side by side: HFresh and Debian's faiss IndexIVFFlat on the same data in
# one run, then the summary (best warm single-thread QPS at recall@10 >=
# 0.95 for each, and the ratio). Usage:
#   bench/hfresh/run.sh [BUILD] [BASE] [QUERIES] [NQ] [NLIST]
# defaults: build-bench, fashion-mnist:train, fashion-mnist:test, 1000, 245.
set -eu
B=${1:-build-bench}
BASE=${2:-fashion-mnist:train}
QS=${3:-fashion-mnist:test}
NQ=${4:-1000}
NLIST=${5:-245}
OUT=${OUT:-/tmp/bench-hfresh.$$}
DIR=${DIR:-$OUT.idx}
mkdir -p "$OUT"
rm -rf "$DIR"
"$B/bench/hfresh/bench_faiss" "$BASE" "$QS" "$NQ" "$NLIST" | tee "$OUT/faiss.jsonl"
"$B/bench/hfresh/bench_hfresh" warm "$BASE" "$QS" "$NQ" "$DIR" | tee "$OUT/hfresh.jsonl"
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
