#!/bin/sh
# `coldstudy data info` and `data gt` end to end: shape and hash, JSON,
# exact neighbours of queries drawn from the base (each query's nearest is
# itself), the cache hit on a second run, exit 5 on a bad file, 2 on usage.
set -u
cs=${COLDSTUDY:?}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
export COLDSTUDY_CACHE="$t/cache"
fail=0
no() { echo "FAIL: $*"; fail=1; }

out=$("$cs" data info "synth:n=1000,d=16,clusters=4,seed=7") || no "info exit $?"
echo "$out" | grep -q '^n *1000 (rows)$' || no "info n: $out"
echo "$out" | grep -q '^d *16 (dimensions)$' || no "info d: $out"
# text and --json name the same fields
"$cs" data info "synth:n=1000,d=16,clusters=4,seed=7" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["n"]==1000 and d["d"]==16 else 1)' || no "info --json n/d"

echo "$out" | grep -q 'sha256 *5db66d1ef885c4b40782bde2ff982b305624dfb5e137e49821b2c6a285235894' || no "info hash: $out"
json=$("$cs" data info "synth:n=10,d=3" --json) || no "info --json exit $?"
case "$json" in '{'*'"n":10'*) ;; *) no "info json: $json" ;; esac
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["d"]==3 and len(d["sha256"])==64' "$json" || no "info json parse: $json"

base="synth:n=400,d=8,seed=3"
"$cs" data gt --base "$base" --queries "$base[100:120]" --k 5 --metric l2 --out "$t/gt.ivecs" 2>"$t/err1" || no "gt exit $?"
grep -q computed "$t/err1" || no "gt first run not computed: $(cat "$t/err1")"
size=$(wc -c < "$t/gt.ivecs")
[ "$size" -eq $((20 * (4 + 4 * 5))) ] || no "gt size $size"
# row i: k=5, then the nearest id must be 100+i
python3 - "$t/gt.ivecs" <<'PY' || no "gt nearest is not the query itself"
import struct, sys
b = open(sys.argv[1], 'rb').read()
for i in range(20):
    row = struct.unpack_from('<6i', b, i * 24)
    assert row[0] == 5 and row[1] == 100 + i, (i, row)
PY
"$cs" data gt --base "$base" --queries "$base[100:120]" --k 5 --metric l2 --out "$t/gt2.ivecs" 2>"$t/err2" || no "gt rerun exit $?"
grep -q "from cache" "$t/err2" || no "gt rerun not from cache: $(cat "$t/err2")"
cmp -s "$t/gt.ivecs" "$t/gt2.ivecs" || no "cached gt differs"

# bad input: exit 5, one line naming the file and the byte offset
printf '\005\000\000\000abcdefghij' > "$t/bad.fvecs"
"$cs" data info "fvecs:$t/bad.fvecs" 2>"$t/err3" >/dev/null; rc=$?
[ $rc -eq 5 ] || no "bad fvecs exit $rc"
grep -q "bad.fvecs: byte 4: truncated" "$t/err3" || no "bad fvecs message: $(cat "$t/err3")"
[ "$(wc -l < "$t/err3")" -eq 1 ] || no "bad fvecs message is not one line"
"$cs" data gt --base "fvecs:$t/bad.fvecs" --queries "$base" --k 1 --metric l2 --out "$t/x.ivecs" 2>/dev/null; rc=$?
[ $rc -eq 5 ] || no "gt on bad base exit $rc"
[ -e "$t/x.ivecs" ] && no "gt on bad base wrote its output"
"$cs" data info "nosuch:spec" 2>/dev/null; [ $? -eq 5 ] || no "unknown spec not exit 5"
"$cs" data gt --base "$base" --queries "synth:n=3,d=9" --k 1 --metric l2 --out "$t/y.ivecs" 2>/dev/null; rc=$?
[ $rc -eq 5 ] || no "dimension mismatch exit $rc"

# usage: exit 2
"$cs" data gt --base "$base" --k 5 2>/dev/null; [ $? -eq 2 ] || no "gt without --queries not exit 2"
"$cs" data gt --base "$base" --queries "$base" --k 5 --metric hamming --out "$t/z" 2>/dev/null; [ $? -eq 2 ] || no "bad metric not exit 2"
"$cs" data frob 2>/dev/null; [ $? -eq 2 ] || no "unknown subcommand not exit 2"
"$cs" data --help | grep -q usage || no "--help prints no usage"
exit $fail
