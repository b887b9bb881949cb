#!/bin/sh
# Paired warm runs through the shipped CLI: Debian's faiss IndexIVFFlat
# (bench_faiss, one warm-up pass and REPEAT timed passes per nprobe) and
# `coldstudy index query --repeat REPEAT --warmup 1` on an HFresh index built
# by `coldstudy index build --kind hfresh` with the default shape, alternated
# ROUNDS times on one pinned CPU (the first peer flips each round). Each peer's
# QPS is its median pass; a pair's ratio is HFresh's best such QPS at recall@10
# >= 0.95 over faiss's; the median of the pairs is printed last.
#   bench/hfresh/cli_pairs.sh CS BENCH_FAISS BASE QUERIES NQ NLIST FAISS_INDEX DIR ROUNDS \
#       NPROBES PROBES [RESCORES] [REPEAT]
# PROBES and RESCORES are comma lists: HFresh runs every searchProbe x
# rescoreLimit (faiss has one knob, nprobe; HFresh has two, and each side's
# best point at recall >= 0.95 is taken from its own grid).
# PREREAD=1, before each HFresh run, evicts DIR's files (`coldstudy cache
# evict`) and reads them once, sequentially: the index is then in the page
# cache as a sequential load leaves it, in the large folios readahead makes,
# whatever a proactive reclaimer (DAMON on these machines) paged out since and
# however 4 KiB rereads brought it back. A pread's page-cache lookups depend on
# it: five pairs of the same binary gave 3.57x and 4.2x Debian's faiss by the
# state the earlier runs had left (bench/hfresh/README.md, "AVX-512 round").
# STRATEGY=auto|mmap|pread|... is HFresh's --strategy; unset, no --strategy is given and the
# CLI's default (auto) reads, as a user who leaves the flag out gets.
# Example (fashion-mnist): cli_pairs.sh build/cli/coldstudy build/bench/hfresh/bench_faiss \
#   fashion-mnist:train fashion-mnist:test 1000 245 /tmp/faiss_fm.index /tmp/hfm 3 3,4,5,6 4,6,8
set -eu
CS=$1 BF=$2 BASE=$3 QS=$4 NQ=$5 NLIST=$6 FI=$7 DIR=$8 ROUNDS=$9
shift 9
NPROBES=$1 PROBES=$2 RESCORES=${3:-20} REP=${4:-5}
CPU=${BENCH_CPU:-$(($(nproc) - 1))}
STRATEGY=${STRATEGY:-}
OUT=${OUT:-/tmp/hfresh-cli-pairs.$$}
mkdir -p "$OUT"
fa() { BENCH_CPU=$CPU BENCH_REPEAT=$REP "$BF" "$BASE" "$QS" "$NQ" "$NLIST" "$FI" "$NPROBES" >"$OUT/faiss.$1.jsonl"; }
hf() {
	: >"$OUT/hfresh.$1.jsonl"
	if [ "${PREREAD:-0}" = 1 ]; then
		"$CS" cache evict "$DIR"/* >/dev/null
		cat "$DIR"/* >/dev/null
	fi
	for p in $(echo "$PROBES" | tr , ' '); do
		for rs in $(echo "$RESCORES" | tr , ' '); do # not r: the rounds' counter
			taskset -c "$CPU" "$CS" index query "$DIR" --queries "$QS" --nq "$NQ" --k 10 \
				--search-probe "$p" --rescore-limit "$rs" \
				${STRATEGY:+--strategy "$STRATEGY"} --repeat "$REP" --warmup 1 \
				--json >>"$OUT/hfresh.$1.jsonl"
		done
	done
}
uptime
r=1
while [ "$r" -le "$ROUNDS" ]; do
	if [ $((r % 2)) -eq 1 ]; then fa $r; hf $r; else hf $r; fa $r; fi
	r=$((r + 1))
done
uptime
python3 - "$OUT" "$ROUNDS" "$PROBES" "$RESCORES" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
grid = [(int(p), int(r)) for p in sys.argv[3].split(',') for r in sys.argv[4].split(',')]
ratios, cpu = [], []
for i in range(1, n + 1):
    f = [json.loads(l) for l in open('%s/faiss.%d.jsonl' % (out, i)) if '"nprobe"' in l]
    h = [dict(json.loads(l), probe=g[0], rescore=g[1])
         for l, g in zip(open('%s/hfresh.%d.jsonl' % (out, i)), grid)]
    fo = [r for r in f if r['recall_at_10'] >= 0.95]
    ho = [r for r in h if r['recall_at_k'] >= 0.95]
    if not (fo and ho):
        print('round %d: no point at recall >= 0.95' % i); continue
    fb = max(fo, key=lambda r: r['qps_median']); hb = max(ho, key=lambda r: r['qps'])
    ratios.append(hb['qps'] / fb['qps_median'])
    fc = min(fo, key=lambda r: r['cpu_ms_per_query']); hc = min(ho, key=lambda r: r['cpu_ms_per_query'])
    cpu.append(fc['cpu_ms_per_query'] / hc['cpu_ms_per_query'])
    print('round %d: faiss %.0f QPS (nprobe %d, recall %.4f)  hfresh %.0f QPS (probe %d rescore %d,'
          ' recall %.4f)  ratio %.2f;  CPU ms/query faiss %.3f (nprobe %d) hfresh %.3f (probe %d'
          ' rescore %d): ratio %.2f' % (
              i, fb['qps_median'], fb['nprobe'], fb['recall_at_10'], hb['qps'], hb['probe'],
              hb['rescore'], hb['recall_at_k'], ratios[-1], fc['cpu_ms_per_query'], fc['nprobe'],
              hc['cpu_ms_per_query'], hc['probe'], hc['rescore'], cpu[-1]))
if ratios:
    print('median ratio over %d pairs: %.2f (min %.2f, max %.2f); by CPU time: %.2f (min %.2f, max %.2f)' % (
          len(ratios), statistics.median(ratios), min(ratios), max(ratios),
          statistics.median(cpu), min(cpu), max(cpu)))
PY
