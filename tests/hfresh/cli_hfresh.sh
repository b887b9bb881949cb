#!/bin/sh
# coldstudy index build/query/verify/insert/delete for --kind hfresh, end
# to end through the CLI: exit codes, the posting and rescoring counters,
# and exit 4 on a corrupted posting.
set -u
C=${COLDSTUDY:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$C" index build --kind hfresh --data synth:n=3000,d=16,clusters=8,seed=1 --metric l2 \
	--max-posting-kb 8 --replicas 3 --threads 2 --code-bits 1 --out "$T/ix" >/dev/null 2>&1 ||
	fail "build exited $?"
"$C" index verify "$T/ix" >"$T/v" 2>&1 || fail "verify of a fresh index exited $?"
grep -q '1-bit codes, 3 replicas, 8 KB postings' "$T/v" || fail "verify summary: $(cat "$T/v")"
# the default shape comes from the dimension: 4-bit codes, 1 replica, 96 KB postings up to
# 256 dimensions, HFresh's 1-bit codes, 4 replicas, 48 KB above
for d in 16 257; do
	"$C" index build --kind hfresh --data synth:n=600,d=$d,clusters=4,seed=1 --metric l2 \
		--threads 2 --out "$T/auto$d" >/dev/null 2>&1 || fail "default build d=$d exited $?"
	"$C" index verify "$T/auto$d" >"$T/v" 2>&1 || fail "verify d=$d exited $?"
	case $d in
	16) want='4-bit codes, 1 replicas, 96 KB postings' ;;
	*) want='1-bit codes, 4 replicas, 48 KB postings' ;;
	esac
	grep -q "$want" "$T/v" || fail "default shape at d=$d: $(cat "$T/v"), want $want"
done
"$C" index build --kind hfresh --data synth:n=600,d=16,clusters=4,seed=1 --metric l2 \
	--threads 2 --code-bits 2 --out "$T/auto2" >/dev/null 2>&1 || fail "--code-bits 2 exited $?"
"$C" index verify "$T/auto2" >"$T/v" 2>&1 || fail "verify --code-bits 2 exited $?"
grep -q '2-bit codes, 1 replicas, 96 KB' "$T/v" || fail "--code-bits 2 shape: $(cat "$T/v")"
out=$("$C" index query "$T/ix" --queries synth:n=3000,d=16,clusters=8,seed=1 --nq 50 \
	--data synth:n=3000,d=16,clusters=8,seed=1 --search-probe 8 --rescore-limit 50 \
	--io concurrent:8 --json 2>&1) || fail "query exited $?: $out"
echo "$out" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["posting_reads_per_query"] == 8, d
assert 10 <= d["rescore_reads_per_query"] <= 50, d
assert d["recall_at_k"] >= 0.95, d
' || fail "query figures: $out"
# block lists for `cache prewarm`: the postings and vector store read, 4 KiB blocks
"$C" index query "$T/ix" --queries synth:n=3000,d=16,clusters=8,seed=1 --nq 5 \
	--search-probe 8 --rescore-limit 50 --io concurrent:8 --record-blocks "$T/bl" \
	>/dev/null 2>&1 || fail "query --record-blocks exited $?"
for f in postings.0.dat vectors.dat; do
	[ -s "$T/bl.$f" ] || fail "no block list for $f"
	"$C" cache prewarm "$T/ix/$f" --block-size 4096 --blocks "@$T/bl.$f" >/dev/null 2>&1 ||
		fail "cache prewarm of $f exited $?"
done
# extended codes: --code-bits 4 builds, verifies, answers with fewer rescoring reads
# (and --code-bits 5 is a usage error)
"$C" index build --kind hfresh --data synth:n=3000,d=16,clusters=8,seed=1 --metric l2 \
	--code-bits 5 --out "$T/ix5" >"$T/err" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "--code-bits 5 exited $rc, want 2"
grep -q "code-bits" "$T/err" || fail "no reason given for --code-bits 5: $(cat "$T/err")"
"$C" index build --kind hfresh --data synth:n=3000,d=16,clusters=8,seed=1 --metric l2 \
	--max-posting-kb 8 --replicas 3 --threads 2 --code-bits 4 --out "$T/ix4" >/dev/null 2>&1 ||
	fail "build --code-bits 4 exited $?"
"$C" index verify "$T/ix4" >/dev/null 2>&1 || fail "verify of a 4-bit index exited $?"
out4=$("$C" index query "$T/ix4" --queries synth:n=3000,d=16,clusters=8,seed=1 --nq 50 \
	--data synth:n=3000,d=16,clusters=8,seed=1 --search-probe 8 --rescore-limit 50 \
	--io concurrent:8 --strategy mmap --json 2>&1) || fail "query of a 4-bit index exited $?: $out4"
printf '%s\n%s\n' "$out" "$out4" | python3 -c '
import json, sys
one, four = (json.loads(l) for l in sys.stdin.read().splitlines())
assert four["recall_at_k"] >= 0.95, four
assert four["rescore_reads_per_query"] < one["rescore_reads_per_query"], (one, four)
' || fail "4-bit query figures: $out4"
"$C" index insert "$T/ix" --data synth:n=300,d=16,clusters=8,seed=2 --first-id 3000 \
	>/dev/null 2>&1 || fail "insert exited $?"
"$C" index insert "$T/ix" --data synth:n=10,d=16,clusters=8,seed=2 --first-id 0 \
	>/dev/null 2>&1 && fail "re-insert of live ids succeeded"
"$C" index delete "$T/ix" --data synth:n=100,d=16,clusters=8,seed=2 --first-id 3000 \
	>/dev/null 2>&1 || fail "delete exited $?"
"$C" index verify "$T/ix" >/dev/null 2>&1 || fail "verify after updates exited $?"
# flip byte 100 of every 4 KiB block (records are block-aligned, so live ones are hit)
python3 - "$T/ix" <<'PY'
import glob, os, sys
p = glob.glob(sys.argv[1] + "/postings.*.dat")[0]
with open(p, "r+b") as f:
    for off in range(100, os.path.getsize(p), 4096):
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0x20]))
PY
"$C" index verify "$T/ix" >"$T/err" 2>&1
rc=$?
[ $rc -eq 4 ] || fail "verify of a corrupt posting exited $rc, want 4"
grep -q "checksum" "$T/err" || fail "no reason given: $(cat "$T/err")"
echo "ok"
