#!/bin/sh
# Crash safety: a writer appending records (each with a raw blob, one
# transaction each) is killed with SIGKILL at random moments, KILLS times.
# After every kill: every append it reported committed is in the ledger
# exactly once, `coldstudy log verify` passes and PRAGMA integrity_check is ok.
set -u
cs=${COLDSTUDY:?}; w=${LEDGER_WRITER:?}
KILLS=${KILLS:-60}
command -v sqlite3 >/dev/null || { echo "no sqlite3 CLI"; exit 77; }
d=$(mktemp -d /tmp/cs-crash-XXXXXX); trap 'rm -rf "$d"' EXIT
"$cs" init "$d/s" >/dev/null || exit 1
: > "$d/report"
i=0
while [ $i -lt $KILLS ]; do
	"$w" "$d/s" "r$i" 100000 > "$d/cur" &
	pid=$!
	# Odd runs: wait for the first commit (slow starts under sanitizers would
	# otherwise eat the delay), so the kill lands inside the stream.
	if [ $((i % 2)) -eq 1 ]; then
		t=0
		while [ ! -s "$d/cur" ] && [ $t -lt 200 ]; do sleep 0.02; t=$((t + 1)); done
	fi
	# then 20..299 ms, spread: lands before the first append, inside
	# transactions, between a commit and its report, after several commits
	ms=$(( 20 + (i * 97 + $$) % 280 ))
	sleep "0.$(printf '%03d' $ms)"
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	cat "$d/cur" >> "$d/report"
	i=$((i + 1))
	if [ $((i % 10)) -eq 0 ] || [ $i -eq $KILLS ]; then
		"$w" --check "$d/s" "$d/report" >/dev/null || { echo "FAIL after kill $i"; exit 1; }
		"$cs" log verify "$d/s" >/dev/null || { echo "FAIL: log verify after kill $i"; exit 1; }
		ic=$(sqlite3 "$d/s/ledger.db" 'PRAGMA integrity_check')
		[ "$ic" = ok ] || { echo "FAIL: integrity_check after kill $i: $ic"; exit 1; }
	fi
done
n=$(wc -l < "$d/report")
[ "$n" -gt 0 ] || { echo "FAIL: no append ever committed"; exit 1; }
"$w" --check "$d/s" "$d/report" || exit 1
echo "$KILLS kills, $n committed appends all present, verify ok, integrity ok"
