#!/bin/sh
# Paired warm runs: faiss IndexIVFFlat and HFresh, query phases only,
# alternated ROUNDS times on the same pinned CPU, so the shared machine's
# drift (+-35% between minutes here) hits both peers of a pair alike. Each
# pair's ratio is best HFresh QPS at recall@10 >= 0.95 over best faiss QPS
# at recall@10 >= 0.95; the median of the pairs is printed last.
#   bench/hfresh/pairs.sh BUILD BASE QUERIES NQ NLIST FAISS_INDEX HFRESH_DIR ROUNDS \
#       NPROBES [HFRESH_OPTS...]
# FAISS_INDEX is made on the first round when missing; HFRESH_DIR must be
# built (bench_hfresh warm ... DIR code_bits=4 ...). Example (synth 1M x 128):
#   S='synth:n=1001000,d=128,clusters=64,seed=1'
#   bench/hfresh/pairs.sh build-bench "$S[0:1000000]" "$S[1000000:1001000]" 1000 1000 \
#       /tmp/faiss1m.index /tmp/bxA.idx 5 10,12,14,16,20 probes=14,16,18 rescores=20 strategy=mmap
set -eu
B=$1 BASE=$2 QS=$3 NQ=$4 NLIST=$5 FI=$6 DIR=$7 ROUNDS=$8 NPROBES=$9
shift 9
BENCH_CPU=${BENCH_CPU:-$(($(nproc) - 1))}
export BENCH_CPU
OUT=${OUT:-/tmp/bench-pairs.$$}
mkdir -p "$OUT"
i=1
while [ "$i" -le "$ROUNDS" ]; do
	"$B/bench/hfresh/bench_faiss" "$BASE" "$QS" "$NQ" "$NLIST" "$FI" "$NPROBES" >"$OUT/faiss.$i.jsonl"
	"$B/bench/hfresh/bench_hfresh" warm "$BASE" "$QS" "$NQ" "$DIR" build=0 "$@" >"$OUT/hfresh.$i.jsonl"
	i=$((i + 1))
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
def best(path):
    rows = [json.loads(l) for l in open(path)]
    ok = [r for r in rows if r.get('recall_at_10', 0) >= 0.95]
    return max(ok, key=lambda r: r['qps']) if ok else None
ratios = []
for i in range(1, n + 1):
    f, h = best('%s/faiss.%d.jsonl' % (out, i)), best('%s/hfresh.%d.jsonl' % (out, i))
    if not (f and h):
        print('round %d: no point at recall >= 0.95 (faiss %s, hfresh %s)' % (i, f, h))
        continue
    ratios.append(h['qps'] / f['qps'])
    print('round %d: faiss %.0f QPS (nprobe %d, recall %.4f)  hfresh %.0f QPS (probe %d, rescore %d, '
          'recall %.4f)  ratio %.2f' % (i, f['qps'], f['nprobe'], f['recall_at_10'], h['qps'],
          h['search_probe'], h['rescore_limit'], h['recall_at_10'], ratios[-1]))
if ratios:
    print('median ratio over %d pairs: %.2f (min %.2f, max %.2f)' % (len(ratios),
          statistics.median(ratios), min(ratios), max(ratios)))
PY
