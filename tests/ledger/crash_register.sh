#!/bin/sh
# Crash-clean registration: `coldstudy register` of hypothesis files in
# varying formatting (the same hypothesis pretty, compact and reordered, so
# its canonical form is one and its file bytes are three) is killed KILLS
# times with SIGKILL and INTS times with SIGINT, at moments spread over the
# command's life (before the lock, while freezing, inside the transaction,
# after the commit). Each id is tried twice, from different formattings.
# Asserts, every 25 kills and at the end: every registration the command
# acknowledged ("registered H.. at seq N") is in the ledger at that seq with
# that id; `coldstudy log verify` passes (no false tamper alarm: a
# frozen copy left by a killed register is never taken for another file's
# copy); PRAGMA integrity_check is ok. At the end every id registers (or is
# a no-op) from a third formatting, no temporary file is left and every
# frozen copy is named by a record (leftovers swept). Some kills must land
# before and some after the commit, or the test proves nothing.
# Arguments (or REG_KILLS / REG_INTS) set the counts (default 300 and 50):
# meson runs 80 + 20 in the unit suite and 300 + 50 in the slow suite.
set -u
cs=${COLDSTUDY:?}; src=${COLDSTUDY_SRC:?}
KILLS=${1:-${REG_KILLS:-300}}; INTS=${2:-${REG_INTS:-50}}
command -v sqlite3 >/dev/null || { echo "no sqlite3 CLI"; exit 77; }
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
d=$(mktemp -d /tmp/cs-crashreg-XXXXXX); trap 'rm -rf "$d"' EXIT
"$cs" init "$d/s" >/dev/null || exit 1
total=$((KILLS + INTS)); nids=$((total / 2 + 1))
mkdir "$d/h"
python3 - "$src/tests/ledger/data/H1.json" "$d/h" "$nids" <<'PY' || exit 1
import json, sys
base = json.load(open(sys.argv[1]))
for i in range(1, int(sys.argv[3]) + 1):
    doc = dict(base, id="H%d" % i, title="%s (%d)" % (base["title"], i))
    open("%s/H%d.0.json" % (sys.argv[2], i), "w").write(json.dumps(doc, indent=2) + "\n")
    open("%s/H%d.1.json" % (sys.argv[2], i), "w").write(json.dumps(doc, separators=(",", ":")))
    rev = {k: doc[k] for k in reversed(list(doc))}
    open("%s/H%d.2.json" % (sys.argv[2], i), "w").write(json.dumps(rev, indent="\t") + "\n\n")
PY
: > "$d/acks"
check() {
	out=$("$cs" log verify "$d/s" 2>&1) || { echo "FAIL after $1 kills: log verify (a false alarm): $out"; exit 1; }
	ic=$(sqlite3 "$d/s/ledger.db" 'PRAGMA integrity_check')
	[ "$ic" = ok ] || { echo "FAIL after $1 kills: integrity_check: $ic"; exit 1; }
	while read -r id seq; do
		got=$(sqlite3 "$d/s/ledger.db" "SELECT json_extract(payload, '\$.id') FROM records WHERE seq = $seq AND kind = 'hypothesis'")
		[ "$got" = "$id" ] || { echo "FAIL after $1 kills: acknowledged $id at seq $seq, ledger has '$got'"; exit 1; }
	done < "$d/acks"
}
k=0; ints=0; acked=0; lost=0; per=$(( INTS > 0 ? total / INTS : total + 1 ))
while [ $k -lt $total ]; do
	id=$((k / 2 + 1)); f=$(( (k + id) % 3 ))
	sig=KILL
	if [ $ints -lt $INTS ] && [ $((k % per)) -eq $((per / 2)) ]; then sig=INT; ints=$((ints + 1)); fi
	"$cs" register "$d/s" "$d/h/H$id.$f.json" > "$d/out" 2>&1 &
	pid=$!
	# 0..159 ms, spread: the command lives some tens of ms (more under sanitizers)
	ms=$(( (k * 37 + k / 5) % 160 ))
	sleep "0.$(printf '%03d' $ms)"
	kill -s $sig $pid 2>/dev/null
	wait $pid 2>/dev/null
	if s=$(sed -n "s/.*: registered H$id at seq \([0-9]*\),.*/\1/p" "$d/out") && [ -n "$s" ]; then
		echo "H$id $s" >> "$d/acks"; acked=$((acked + 1))
	else
		lost=$((lost + 1))
	fi
	k=$((k + 1))
	[ $((k % 25)) -eq 0 ] && check $k
done
[ $ints -eq "$INTS" ] || [ "$INTS" -eq 0 ] || { echo "FAIL: sent $ints SIGINTs, wanted $INTS"; exit 1; }
check $k
# every id again from a third formatting, undisturbed: registered or a no-op
i=1
while [ $i -le "$nids" ]; do
	"$cs" register "$d/s" "$d/h/H$i.$(( (i + 2) % 3 )).json" > "$d/out" 2>&1 || { echo "FAIL: clean register of H$i: $(cat "$d/out")"; exit 1; }
	i=$((i + 1))
done
check $k
left=$(find "$d/s" -name '*.tmp.*' | wc -l)
[ "$left" -eq 0 ] || { echo "FAIL: $left temporary files left"; exit 1; }
for f in "$d"/s/frozen/*.json; do
	n=$(sqlite3 "$d/s/ledger.db" "SELECT count(*) FROM records WHERE json_extract(payload, '\$.frozen') = 'frozen/$(basename "$f")'")
	[ "$n" -gt 0 ] || { echo "FAIL: orphan frozen copy $(basename "$f") not swept"; exit 1; }
done
n=$(sqlite3 "$d/s/ledger.db" "SELECT count(DISTINCT json_extract(payload, '\$.id')) FROM records WHERE kind = 'hypothesis'")
[ "$n" -eq "$nids" ] || { echo "FAIL: $n ids registered, expected $nids"; exit 1; }
[ $acked -gt 0 ] && [ $lost -gt 0 ] || { echo "FAIL: kills did not spread (acknowledged $acked, interrupted $lost)"; exit 1; }
echo "$KILLS SIGKILLs + $ints SIGINTs during register: $acked acknowledged registrations all present, $lost interrupted, verify ok (no false alarm), no leftovers"
