#!/bin/sh
# Tampering through raw SQLite is caught by `coldstudy log verify` (exit 4,
# naming the first bad seq or the checkpoint), each case on a fresh copy:
# drop the triggers and change one payload byte; delete a row; swap two
# payloads; change a timestamp (two ways); change a hash; change a raw
# blob; append records whose payload breaks its kind's schema; check that
# checkpoint, prove and export refuse an edited log; append a record with a
# correct hash but without the key; rewrite the log below its signed size;
# truncate the tail (all caught by the signed checkpoint); a bogus signature;
# another study's checkpoint; a pinned key; a study made before keys (caught against a saved checkpoint); replace the
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
# signed checkpoints (the study's key): a record appended with raw SQL, with a
# correct chain hash but no key, is caught without any checkpoint saved elsewhere
ra note '{"text":"slipped in"}'
out=$("$cs" log verify "$d/t" 2>&1); rc=$?
case "$rc $out" in "4 "*"records 11..11 are covered by no signed checkpoint"*) echo "ok: raw append: $out" ;;
*) echo "FAIL: raw append without the key: exit $rc: $out"; fail=1 ;; esac
# ... and the next honest append refuses to sign over it (no laundering)
out=$("$cs" register "$d/t" "$src/tests/ledger/data/H1.json" 2>&1); rc=$?
case "$rc $out" in "4 "*"appended without the study's key"*) echo "ok: no signing over it: $out" ;;
*) echo "FAIL: an append signed over a raw record: exit $rc: $out"; fail=1 ;; esac
# a log rewritten below the signed size (every hash recomputed: a valid chain)
rm -rf "$d/t"; cp -r "$d/s" "$d/t"
python3 "$src/tests/ledger/raw_append.py" --rewrite "$d/t/ledger.db" 5 '{"k":99,"raw":"x","tag":"a"}'
sqlite3 "$d/t/ledger.db" "PRAGMA integrity_check" >/dev/null
out=$("$cs" log verify "$d/t" 2>&1); rc=$?
case "$rc $out" in "4 "*"rewritten below the signed size 10"*) echo "ok: rewrite below the signed size: $out" ;;
*) echo "FAIL: rewrite below the signed size: exit $rc: $out"; fail=1 ;; esac
# truncating the tail leaves a valid chain, below the signed size
case_ "truncate the tail" "truncated or rewritten below a signed size" "$NODEL DELETE FROM records WHERE seq > 8"
case_ "truncate the tail (saved checkpoint)" "truncated" "$NODEL DELETE FROM records WHERE seq > 8" --checkpoint "$d/cp"
# a bogus signature line on a checkpoint by the study's name is refused
python3 - "$d/s/checkpoint" "$d/bogus" <<'PY'
import base64, sys
t = open(sys.argv[1], encoding="utf-8").read()
body, sig = t.rsplit("\n\n", 1)
dash, name, b = sig.split(" ")
raw = bytearray(base64.b64decode(b)); raw[10] ^= 1  # keep the key hash, break the signature
open(sys.argv[2], "w", encoding="utf-8").write(body + "\n\n" + " ".join([dash, name, base64.b64encode(bytes(raw)).decode()]) + "\n")
PY
out=$("$cs" log verify "$d/s" --checkpoint "$d/bogus" 2>&1); rc=$?
case "$rc $out" in "4 "*"does not verify"*) echo "ok: bogus signature: $out" ;;
*) echo "FAIL: bogus signature: exit $rc: $out"; fail=1 ;; esac
# a signed checkpoint of another study (another origin and key) is refused as DIR/checkpoint
rm -rf "$d/t"; cp -r "$d/s" "$d/t"; "$cs" init "$d/o2" >/dev/null; cp "$d/o2/checkpoint" "$d/t/checkpoint"
out=$("$cs" log verify "$d/t" 2>&1); rc=$?
case "$rc $out" in "4 "*"not signed by"*) echo "ok: another study's checkpoint: $out" ;;
*) echo "FAIL: another study's checkpoint: exit $rc: $out"; fail=1 ;; esac
# a pinned key that is not the study's: exit 4; the right one: 0
out=$("$cs" log verify "$d/s" --key "$("$cs" log key "$d/o2")" 2>&1); rc=$?
[ $rc -eq 4 ] && echo "ok: wrong pinned key: $out" || { echo "FAIL: wrong pinned key: exit $rc: $out"; fail=1; }
"$cs" log verify "$d/s" --key "$("$cs" log key "$d/s")" >/dev/null || { echo "FAIL: right pinned key"; fail=1; }
# a crash between a commit and the copy to DIR/checkpoint leaves the copy one commit behind:
# not an alarm (the ledger's signed table holds the newer one), and log checkpoint prints the newer
rm -rf "$d/t"; cp -r "$d/s" "$d/t"; cp "$d/t/checkpoint" "$d/older"
"$w" "$d/t" lag 1 >/dev/null || { echo "FAIL: append for the lag case"; fail=1; }
cp "$d/older" "$d/t/checkpoint"
out=$("$cs" log verify "$d/t" 2>&1) || { echo "FAIL: a lagging DIR/checkpoint raised an alarm: $out"; fail=1; }
[ "$("$cs" log checkpoint "$d/t" | sed -n 2p)" = 11 ] || { echo "FAIL: log checkpoint is not the newest"; fail=1; }
# a study made before keys (no vkey): verifies, saying it is unsigned
rm -rf "$d/t"; cp -r "$d/s" "$d/t"; rm -f "$d/t/checkpoint" "$d/t/signing.key"
sqlite3 "$d/t/ledger.db" "DROP TRIGGER meta_no_delete; DELETE FROM meta WHERE key IN ('vkey', 'study_id')"
out=$("$cs" log verify "$d/t" 2>&1); rc=$?
case "$rc $out" in "0 "*"unsigned: "*) echo "ok: a study without a key: $(echo "$out" | tail -n 1)" ;;
*) echo "FAIL: a study without a key: exit $rc: $out"; fail=1 ;; esac
"$w" "$d/t" more 2 >/dev/null || { echo "FAIL: appending to an unsigned study"; fail=1; }
out=$("$cs" log key "$d/t" 2>&1); rc=$?
[ $rc -eq 5 ] || { echo "FAIL: log key of an unsigned study: exit $rc: $out"; fail=1; }
# a whole other log of the same size: valid alone, not an extension of the checkpoint
"$cs" init "$d/o" >/dev/null && "$w" "$d/o" b 12 >/dev/null
out=$("$cs" log verify "$d/o" --checkpoint "$d/cp" 2>&1); rc=$?
case "$rc $out" in "4 "*"no longer extends"*) echo "ok: rewritten log: $out" ;;
*) echo "FAIL: rewritten log: exit $rc: $out"; fail=1 ;; esac
exit $fail
