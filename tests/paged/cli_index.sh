#!/bin/sh
# coldstudy index end to end: build paged and phnsw on synth data, query
# --json (recall, reads), verify, a damaged page (exit 4), bad input (exit 5),
# usage errors (exit 2), a refused overwrite (exit 3).
set -u
cs=${COLDSTUDY:?}
T=$(mktemp -d /tmp/cvpcliXXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
check() { # expected-exit description command...
	exp=$1; what=$2; shift 2
	"$@" >"$T/out" 2>"$T/err"; got=$?
	if [ "$got" != "$exp" ]; then
		echo "FAIL: $what: exit $got, expected $exp"; cat "$T/err"; fail=1
	fi
}
D='synth:n=1500,d=16,clusters=8,seed=4'
Q='synth:n=20,d=16,clusters=8,seed=5'
check 0 "build paged" "$cs" index build --kind paged --data "$D" --metric l2 --m 8 --ef-construction 32 --out "$T/p"
check 0 "build phnsw" "$cs" index build --kind phnsw --data "$D" --metric cosine --m 8 --ef-construction 32 --partitions 4 --threads 2 --out "$T/h"
check 3 "build over an index" "$cs" index build --kind paged --data "$D" --metric l2 --out "$T/p"
check 0 "query paged" "$cs" index query "$T/p" --queries "$Q" --k 10 --ef-search 40 --cold --json
grep -q '"recall_at_k":[01]\.' "$T/out" || { echo "FAIL: no recall in $(cat "$T/out")"; fail=1; }
reads=$(sed 's/.*"engine_reads":\([0-9]*\).*/\1/' "$T/out")
[ "${reads:-0}" -gt 0 ] || { echo "FAIL: no reads in cold query"; fail=1; }
check 0 "query phnsw fanout" "$cs" index query "$T/h" --queries "$Q" --mode fanout:4 --merge sort --strategy uring --cold --buffers 4M --json
grep -q '"partitions":4' "$T/out" || { echo "FAIL: partitions in $(cat "$T/out")"; fail=1; }
grep -q '"fanout_via":"uring"' "$T/out" || { echo "FAIL: uring fan-out not said: $(cat "$T/out")"; fail=1; }
# without io_uring the fan-out runs synchronous readers (threads), and says so;
# the device model delays every read, so the readers' reads overlap
for st in pread direct mmap; do
	check 0 "query phnsw fanout $st" "$cs" index query "$T/h" --queries "$Q" --nq 3 --mode fanout:4 --strategy $st --device nvme --cold --json
	grep -q '"fanout_via":"threads"' "$T/out" || { echo "FAIL: $st fan-out: $(cat "$T/out")"; fail=1; }
	infl=$(sed 's/.*"inflight_max":\([0-9]*\).*/\1/' "$T/out")
	[ "${infl:-0}" -ge 2 ] && [ "${infl:-0}" -le 4 ] || { echo "FAIL: $st fan-out inflight_max $infl"; fail=1; }
done
check 0 "query serial says no fan-out" "$cs" index query "$T/h" --queries "$Q" --nq 2 --json
grep -q '"fanout_via":null' "$T/out" || { echo "FAIL: serial fanout_via: $(cat "$T/out")"; fail=1; }
# --repeat N --warmup W: N timed passes (each pass's QPS listed), the queries counted once per pass
check 0 "query repeat" "$cs" index query "$T/p" --queries "$Q" --nq 5 --repeat 3 --warmup 2 --json
grep -q '"repeat":3,"warmup":2,' "$T/out" || { echo "FAIL: repeat: $(cat "$T/out")"; fail=1; }
grep -q '"qps_passes":\[[0-9.]*,[0-9.]*,[0-9.]*\]' "$T/out" || { echo "FAIL: passes: $(cat "$T/out")"; fail=1; }
grep -q '"lat_samples":15,' "$T/out" || { echo "FAIL: lat samples: $(cat "$T/out")"; fail=1; }
grep -q '"queries":5,' "$T/out" || { echo "FAIL: queries per pass: $(cat "$T/out")"; fail=1; }
python3 - "$T/out" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
p = sorted(r["qps_passes"])
ok = p[0] == r["qps_min"] and p[-1] == r["qps_best"] == r["qps_max"] and r["qps"] == p[1]
# warm, one buffer pool: reads per query are a pass's, not the sum of the passes'
if not ok or r["recall_at_k"] is None:
    print("FAIL: repeat summary", r); sys.exit(1)
PY
check 0 "query repeat text" "$cs" index query "$T/p" --queries "$Q" --nq 5 --repeat 2
grep -q 'median of 2 passes' "$T/out" || { echo "FAIL: repeat text: $(cat "$T/out")"; fail=1; }
check 2 "repeat with trace" "$cs" index query "$T/p" --queries "$Q" --repeat 2 --trace "$T/rt"
check 2 "repeat 0" "$cs" index query "$T/p" --queries "$Q" --repeat 0
check 0 "query phnsw subset, blocks" "$cs" index query "$T/h" --queries "$Q" --nq 2 --partitions 0,2-3 --record-blocks "$T/bl"
[ -s "$T/bl.part-000" ] || { echo "FAIL: no block list written"; fail=1; }
check 0 "query text" "$cs" index query "$T/h" --queries "$Q" --nq 3 --simulate hdd-pool
grep -q 'virtual time' "$T/out" || { echo "FAIL: no virtual time line"; fail=1; }
# a trace written by --trace replays in virtual time with the same read count
check 0 "query fanout, trace" "$cs" index query "$T/h" --queries "$Q" --nq 1 --mode fanout:4 --strategy uring --cold --trace "$T/q.cvtrace" --json
qreads=$(sed 's/.*"engine_reads":\([0-9]*\).*/\1/' "$T/out")
check 0 "replay" "$cs" device replay "$T/q.cvtrace" --device hdd-pool --json
rreads=$(sed 's/.*"reads":\([0-9]*\).*/\1/' "$T/out")
[ -n "$qreads" ] && [ "$qreads" = "$rreads" ] || { echo "FAIL: replay reads $rreads, query $qreads"; fail=1; }
grep -q '"wall_ms":[1-9]' "$T/out" || { echo "FAIL: replay wall: $(cat "$T/out")"; fail=1; }
check 0 "query, traces per query" "$cs" index query "$T/p" --queries "$Q" --nq 2 --trace "$T/s"
[ -s "$T/s.0" ] && [ -s "$T/s.1" ] || { echo "FAIL: per-query traces missing"; fail=1; }
check 0 "replay text" "$cs" device replay "$T/s.1" --device nvme
grep -q '^virtual wall' "$T/out" || { echo "FAIL: replay text: $(cat "$T/out")"; fail=1; }
head -c 100 "$T/s.0" > "$T/trunc"
check 5 "replay truncated" "$cs" device replay "$T/trunc" --device hdd-pool
grep -q 'byte' "$T/err" || { echo "FAIL: no byte offset: $(cat "$T/err")"; fail=1; }
check 5 "replay unknown device" "$cs" device replay "$T/s.0" --device floppy
check 2 "replay without device" "$cs" device replay "$T/s.0"
check 0 "verify" "$cs" index verify "$T/h"
grep -q 'ok: 4 partitions, 1500 rows' "$T/out" || { echo "FAIL: verify says $(cat "$T/out")"; fail=1; }
check 5 "queries of the wrong dimension" "$cs" index query "$T/p" --queries 'synth:n=5,d=8,seed=1'
check 5 "bad data spec" "$cs" index build --kind paged --data 'synth:n=x' --metric l2 --out "$T/bad"
check 5 "partition past the end" "$cs" index query "$T/h" --queries "$Q" --partitions 9
check 2 "bad mode" "$cs" index query "$T/p" --queries "$Q" --mode fanout:x
check 2 "bad kind" "$cs" index build --kind btree --data "$D" --metric l2 --out "$T/x"
check 2 "no subcommand" "$cs" index
check 5 "not an index" "$cs" index verify "$T"
check 3 "insert into paged" "$cs" index insert "$T/p" --data "$Q"
# index_rss_kb: the index's own resident memory. The in-memory HNSW holds every
# vector (20,000 x 128 floats, 10,000 kB); HFresh holds centroids and maps and
# reads postings and vectors from files, so a small fraction of that
V='synth:n=20000,d=128,clusters=32,seed=6'
check 0 "build hnsw 20k" "$cs" index build --kind hnsw --data "$V" --metric l2 --m 8 --ef-construction 32 -q --out "$T/hn"
check 0 "build hfresh 20k" "$cs" index build --kind hfresh --data "$V" --metric l2 -q --out "$T/hf"
for k in hn hf; do
	check 0 "query $k rss" "$cs" index query "$T/$k" --queries 'synth:n=50,d=128,clusters=32,seed=9' --json
	rss=$(sed -n 's/.*"index_rss_kb":\([0-9]*\).*/\1/p' "$T/out")
	case $k in
	hn) [ "${rss:-0}" -ge 10000 ] || { echo "FAIL: hnsw index_rss_kb ${rss:-none} < 10000"; fail=1; } ;;
	hf) [ "${rss:-0}" -gt 0 ] && [ "${rss:-0}" -lt 2500 ] ||
		{ echo "FAIL: hfresh index_rss_kb ${rss:-none}, want 1..2499 (a quarter of the vectors)"; fail=1; } ;;
	esac
done
# vector_storage: float L2 data stays float32 with its byte sketch; whole numbers 0..255 (a bvecs file of
# random bytes) are held as bytes, exact8; HFresh reads vectors from disk (null)
grep -q '"vector_storage":null' "$T/out" || { echo "FAIL: hfresh vector_storage: $(cat "$T/out")"; fail=1; }
check 0 "query hn storage" "$cs" index query "$T/hn" --queries 'synth:n=5,d=128,clusters=32,seed=9'
grep -q 'vectors float32+sketch8' "$T/out" || { echo "FAIL: hnsw float storage: $(head -1 "$T/out")"; fail=1; }
i=0
while [ $i -lt 1500 ]; do printf '\200\000\000\000'; head -c 128 /dev/urandom; i=$((i + 1)); done >"$T/b.bvecs"
check 0 "build hnsw bytes" "$cs" index build --kind hnsw --data "bvecs:$T/b.bvecs" --metric l2 --m 8 --ef-construction 32 -q --out "$T/hb"
check 0 "query hnsw bytes" "$cs" index query "$T/hb" --queries "bvecs:$T/b.bvecs" --nq 20 --ef-search 400 --json
grep -q '"vector_storage":"exact8"' "$T/out" || { echo "FAIL: bytes not exact8: $(cat "$T/out")"; fail=1; }
grep -Eq '"recall_at_k":(1\.0|0\.99)' "$T/out" || { echo "FAIL: bytes recall: $(cat "$T/out")"; fail=1; }
# damage one byte of a partition's meta page: verify and query say so (exit 4)
printf 'Z' | dd of="$T/h/part-001" bs=1 seek=200 conv=notrunc 2>/dev/null
check 4 "verify damaged" "$cs" index verify "$T/h"
grep -q 'part-001' "$T/err" || { echo "FAIL: damage not located: $(cat "$T/err")"; fail=1; }
check 4 "query damaged" "$cs" index query "$T/h" --queries "$Q" --nq 1 --cold
exit $fail
