#!/bin/sh
# Tampering through raw SQLite is caught by `coldstudy log verify` (exit 4,
# naming the first bad seq or the checkpoint), each case on a fresh copy:
# drop the triggers and change one payload byte; delete a row; swap two
# payloads; change a timestamp (two ways); change a hash; change a raw
# blob; append records whose payload breaks its kind's schema; check that
# checkpoint, prove and export refuse an edited log; truncate the tail (caught against a saved checkpoint); replace the
# whole log with a valid other one (caught against the checkpoint).
set -u
cs=${COLDSTUDY:?}; w=${LEDGER_WRITER:?}; src=${COLDSTUDY_SRC:?}
command -v sqlite3 >/dev/null || { echo "no sqlite3 CLI"; exit 77; }
d=$(mktemp -d /tmp/cs-tamper-XXXXXX); trap 'rm -rf "$d"' EXIT
fail=0
"$cs" init "$d/s" >/dev/null && "$w" "$d/s" a 10 >/dev/null || exit 1
"$cs" log checkpoint "$d/s" > "$d/cp" || exit 1
"$cs" log verify "$d/s" --checkpoint "$d/cp" >/dev/null || { echo "FAIL: pristine ledger does not verify"; exit 1; }

# case NAME EXPECTED-MESSAGE-PART SQL [verify args...]
case_() {
	name=$1; want=$2; sql=$3; shift 3
	rm -rf "$d/t"; cp -r "$d/s" "$d/t"
	if ! sqlite3 "$d/t/ledger.db" "$sql"; then echo "FAIL: $name: sql failed"; fail=1; return; fi
	out=$("$cs" log verify "$d/t" "$@" 2>&1); rc=$?
	if [ $rc -ne 4 ]; then echo "FAIL: $name: exit $rc, expected 4 ($out)"; fail=1; return; fi
	case "$out" in *"$want"*) echo "ok: $name: $out" ;;
	*) echo "FAIL: $name: message lacks '$want': $out"; fail=1 ;; esac
}
NOUPD='DROP TRIGGER records_no_update;'
NODEL='DROP TRIGGER records_no_delete;'
case_ "one payload byte" "seq 5: hash mismatch" \
	"$NOUPD UPDATE records SET payload = replace(payload, '\"k\":4', '\"k\":5') WHERE seq = 5"
case_ "delete a row" "seq 4: missing" "$NODEL DELETE FROM records WHERE seq = 4"
case_ "swap two payloads" "seq 3: hash mismatch" \
	"$NOUPD UPDATE records SET payload = CASE seq WHEN 3 THEN (SELECT payload FROM records WHERE seq = 6)
	 ELSE (SELECT payload FROM records WHERE seq = 3) END WHERE seq IN (3, 6)"
case_ "change a timestamp (still increasing)" "seq 7: hash mismatch" \
	"$NOUPD UPDATE records SET ts = (SELECT ts FROM records WHERE seq = 8) WHERE seq = 7;
	 UPDATE records SET ts = substr(ts, 1, 20) || '000000Z' WHERE seq = 7 AND ts <= (SELECT ts FROM records WHERE seq = 6)"
case_ "timestamp goes back" "seq 7: ts" \
	"$NOUPD UPDATE records SET ts = (SELECT ts FROM records WHERE seq = 6) WHERE seq = 7"
case_ "change a stored hash" "seq 10: hash mismatch" \
	"$NOUPD UPDATE records SET hash = zeroblob(32) WHERE seq = 10"
case_ "change a kind" "seq 2: hash mismatch" "$NOUPD UPDATE records SET kind = 'run' WHERE seq = 2"
case_ "change a raw blob" "raw blob" \
	"DROP TRIGGER raw_no_update; UPDATE raw SET body = replace(body, '\"k\":2', '\"k\":3') WHERE body LIKE '%\"k\":2,%'"
# a record appended with a correct chain hash, whose payload breaks its kind's schema
ra() { rm -rf "$d/t"; cp -r "$d/s" "$d/t"; python3 "$src/tests/ledger/raw_append.py" "$d/t/ledger.db" "$@" >/dev/null; }
schema_() {
	name=$1; want=$2; shift 2
	ra "$@" || { echo "FAIL: $name: raw append"; fail=1; return; }
	out=$("$cs" log verify "$d/t" 2>&1); rc=$?
	case "$rc $out" in "4 "*"$want"*) echo "ok: $name: $out" ;;
	*) echo "FAIL: $name: exit $rc: $out"; fail=1 ;; esac
}
schema_ "payload not JSON" "seq 11: note payload: not JSON" note 'hello'
schema_ "payload not an object" "seq 11: note payload: \$: expected a JSON object" note '[1,2]'
schema_ "payload not canonical" "not in canonical form" note '{"b":1, "a":2}'
schema_ "hypothesis without doc" "seq 11: hypothesis payload: \$.doc: missing" hypothesis '{"id":"H9"}'
schema_ "validation, passed not a bool" "\$.passed: expected true or false" validation '{"batch":1,"check":"all","passed":"yes"}'
schema_ "run_start, bad spec hash" "\$.spec_sha256: expected 64 lowercase hex" run_start '{"holdout":false,"run_id":"R1","spec_sha256":"xyz"}'
# item 2: an edited payload is not served: checkpoint, prove and export refuse (exit 4)
rm -rf "$d/t"; cp -r "$d/s" "$d/t"
sqlite3 "$d/t/ledger.db" "$NOUPD UPDATE records SET payload = replace(payload, '\"k\":4', '\"k\":5') WHERE seq = 5"
for v in "checkpoint" "prove SEQ5" "prove SEQ9" "prove OLD" "export"; do
	case $v in "prove SEQ5") a="prove $d/t 5" ;; "prove SEQ9") a="prove $d/t 9" ;;
	"prove OLD") a="prove $d/t --old-size 3" ;; *) a="$v $d/t" ;; esac
	# shellcheck disable=SC2086
	out=$("$cs" log $a 2>&1); rc=$?
	case "$rc $out" in "4 "*"seq 5: hash mismatch"*) echo "ok: log $v on an edited log: exit 4" ;;
	*) echo "FAIL: log $v on an edited log: exit $rc: $out"; fail=1 ;; esac
done
# truncating the tail leaves a valid chain: only the checkpoint sees it
rm -rf "$d/t"; cp -r "$d/s" "$d/t"
sqlite3 "$d/t/ledger.db" "$NODEL DELETE FROM records WHERE seq > 8"
"$cs" log verify "$d/t" >/dev/null 2>&1 || { echo "FAIL: a truncated chain should still be self-consistent"; fail=1; }
case_ "truncate the tail" "truncated" "$NODEL DELETE FROM records WHERE seq > 8" --checkpoint "$d/cp"
# a whole other log of the same size: valid alone, not an extension of the checkpoint
"$cs" init "$d/o" >/dev/null && "$w" "$d/o" b 12 >/dev/null
out=$("$cs" log verify "$d/o" --checkpoint "$d/cp" 2>&1); rc=$?
case "$rc $out" in "4 "*"no longer extends"*) echo "ok: rewritten log: $out" ;;
*) echo "FAIL: rewritten log: exit $rc: $out"; fail=1 ;; esac
exit $fail
