#!/bin/sh
# Several processes appending at once neither lose nor duplicate a record,
# and several `coldstudy register` at once of different ids all land once.
set -u
cs=${COLDSTUDY:?}; w=${LEDGER_WRITER:?}; src=${COLDSTUDY_SRC:?}
d=$(mktemp -d /tmp/cs-conc-XXXXXX); trap 'rm -rf "$d"' EXIT
"$cs" init "$d/s" >/dev/null || exit 1
P=4; N=40
for p in $(seq 1 $P); do "$w" "$d/s" "w$p" $N > "$d/out$p" & done
wait
cat "$d"/out* > "$d/report"
[ "$(wc -l < "$d/report")" -eq $((P * N)) ] || { echo "FAIL: a writer failed"; exit 1; }
"$w" --check "$d/s" "$d/report" || exit 1
[ "$(sqlite3 "$d/s/ledger.db" 'SELECT count(*) FROM records')" -eq $((P * N)) ] || { echo "FAIL: count"; exit 1; }
# concurrent registrations: 6 ids, each registered by two processes at once
for i in 1 2 3 4 5 6; do
	sed "s/\"H1\"/\"H1$i\"/" "$src/tests/ledger/data/H1.json" > "$d/H1$i.json"
done
for i in 1 2 3 4 5 6; do
	"$cs" register "$d/s" "$d/H1$i.json" > "$d/reg$i.a" 2>&1 &
	"$cs" register "$d/s" "$d/H1$i.json" > "$d/reg$i.b" 2>&1 &
done
wait
n=$(sqlite3 "$d/s/ledger.db" "SELECT count(*) FROM records WHERE kind='hypothesis'")
[ "$n" -eq 6 ] || { echo "FAIL: $n hypothesis records, expected 6"; cat "$d"/reg*; exit 1; }
"$cs" log verify "$d/s" >/dev/null || { echo "FAIL: verify"; exit 1; }
echo "ok: $((P * N)) concurrent appends and 6 ids registered twice at once, each exactly once"
