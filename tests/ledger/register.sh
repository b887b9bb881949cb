#!/bin/sh
# `coldstudy init / register / hypotheses / log` end to end: exit codes,
# no-op on the same content, refusal and amendment, all-or-nothing on a bad
# file, frozen copies (mode 0444, the original bytes), listings, proofs,
# byte-identical export, --help on every verb and log subcommand.
set -u
cs=${COLDSTUDY:?}; src=${COLDSTUDY_SRC:?}; data=$src/tests/ledger/data
d=$(mktemp -d /tmp/cs-reg-XXXXXX); trap 'rm -rf "$d"' EXIT
fail=0
expect() { # exit-code description command...
	want=$1; what=$2; shift 2
	"$@" > "$d/out" 2>&1; got=$?
	if [ "$got" != "$want" ]; then echo "FAIL: $what: exit $got, expected $want"; cat "$d/out"; fail=1; fi
}
count() { sqlite3 "$d/s/ledger.db" "SELECT count(*) FROM records $1"; }

expect 0 "init" "$cs" init "$d/s"
expect 3 "init again" "$cs" init "$d/s"
expect 5 "register into a non-study" "$cs" register "$d/nope" "$data/H1.json"
expect 2 "register without files" "$cs" register "$d/s"
expect 0 "register two" "$cs" register "$d/s" "$data/H1.json" "$data/H2.json"
[ "$(count "WHERE kind='hypothesis'")" = 2 ] || { echo "FAIL: 2 records expected"; fail=1; }
expect 0 "same content again" "$cs" register "$d/s" "$data/H1.json"
grep -q "nothing to do" "$d/out" || { echo "FAIL: no-op not said"; fail=1; }
[ "$(count "")" = 2 ] || { echo "FAIL: the no-op wrote"; fail=1; }
expect 3 "same id, other content" "$cs" register "$d/s" "$data/H1-amended.json"
grep -q "already registered" "$d/out" || { echo "FAIL: refusal message"; fail=1; }
# the refusal is itself a record (issue 13, finding 7), and the only one written
[ "$(count "WHERE kind='refusal'")" = 1 ] && [ "$(count "")" = 3 ] || { echo "FAIL: the refused change left no refusal record (or more)"; fail=1; }
expect 5 "invalid file" "$cs" register "$d/s" "$data/bad-band.json"
grep -q "band95" "$d/out" || { echo "FAIL: bad-file message lacks the path"; fail=1; }
sed 's/"H1"/"H7"/' "$data/H1.json" > "$d/H7.json"
expect 5 "good + bad file" "$cs" register "$d/s" "$d/H7.json" "$data/bad-band.json"
[ "$(count "")" = 3 ] || { echo "FAIL: a bad file let another be written"; fail=1; }
expect 2 "amend without rationale" "$cs" register "$d/s" --amend "$data/H1-amended.json"
expect 0 "amend" "$cs" register "$d/s" --amend --rationale "pilot runs narrowed the band" "$data/H1-amended.json"
[ "$(sqlite3 "$d/s/ledger.db" "SELECT json_extract(payload, '\$.access_state') || '|' || json_extract(payload, '\$.rationale') FROM records WHERE kind='amendment'")" = "none|pilot runs narrowed the band" ] \
	|| { echo "FAIL: amendment lacks access state or rationale"; fail=1; }
# frozen copies: the original bytes, read-only
for f in "$d"/s/frozen/*.json; do
	[ "$(stat -c %a "$f")" = 444 ] || { echo "FAIL: $f mode"; fail=1; }
done
# named by the SHA-256 of the file's own bytes
cmp -s "$d/s/frozen/H1-$(sha256sum "$data/H1.json" | cut -d' ' -f1).json" "$data/H1.json" || { echo "FAIL: frozen copy differs"; fail=1; }
[ "$(sqlite3 "$d/s/ledger.db" "SELECT json_extract(payload, '\$.frozen') FROM records WHERE seq = 1")" = "frozen/H1-$(sha256sum "$data/H1.json" | cut -d' ' -f1).json" ] || { echo "FAIL: frozen name in the record"; fail=1; }
fsha=$(sqlite3 "$d/s/ledger.db" "SELECT json_extract(payload, '\$.file_sha256') FROM records WHERE seq = 1")
[ "$fsha" = "$(sha256sum "$data/H1.json" | cut -d' ' -f1)" ] || { echo "FAIL: file_sha256"; fail=1; }
# a changed or missing frozen copy fails verify
f1=$(ls "$d"/s/frozen/H2-*.json)
cp "$f1" "$d/keep"; chmod u+w "$f1"; sed -i 's/lat_p50_ms/lat_p99_ms/' "$f1"
expect 4 "frozen copy changed" "$cs" log verify "$d/s"
grep -q "frozen copy of seq 2 was changed" "$d/out" || { echo "FAIL: frozen message"; cat "$d/out"; fail=1; }
rm -f "$f1"
expect 4 "frozen copy missing" "$cs" log verify "$d/s"
cp "$d/keep" "$f1"; chmod 444 "$f1"
expect 0 "frozen copy restored" "$cs" log verify "$d/s"
# listings
expect 0 "hypotheses" "$cs" hypotheses "$d/s"
grep -q "^H1 .*0.85" "$d/out" && grep -q "^H2 " "$d/out" || { echo "FAIL: hypotheses table"; cat "$d/out"; fail=1; }
expect 0 "hypotheses --json" "$cs" hypotheses "$d/s" --json
python3 -c "
import json,sys
a=json.load(open('$d/out'))
assert [h['id'] for h in a]==['H1','H2'], a
assert a[0]['versions']==2 and a[0]['prediction']==0.85 and a[0]['band95']==[0.75,1], a[0]
assert a[0]['record']=='amendment' and len(a[0]['sha256'])==64 and a[0]['ts'].endswith('Z')
" || { echo "FAIL: hypotheses --json"; fail=1; }
# log: verify, checkpoint, prove, verify-proof, export
expect 0 "log verify" "$cs" log verify "$d/s"
expect 0 "log checkpoint" "$cs" log checkpoint "$d/s" --origin example.org/s; cp "$d/out" "$d/cp"
[ "$(sed -n 1p "$d/cp")" = example.org/s ] && [ "$(sed -n 2p "$d/cp")" = 4 ] || { echo "FAIL: checkpoint text"; fail=1; }
expect 0 "log verify --checkpoint" "$cs" log verify "$d/s" --checkpoint "$d/cp"
expect 0 "log prove" "$cs" log prove "$d/s" 2; cp "$d/out" "$d/p.json"
expect 0 "verify-proof" "$cs" log verify-proof "$d/p.json" --checkpoint "$d/cp"
# --key: the checkpoint must carry that verifier key's signature and name its origin
expect 0 "log checkpoint (signed)" "$cs" log checkpoint "$d/s"; cp "$d/out" "$d/cps"
expect 0 "log key" "$cs" log key "$d/s"; key=$(cat "$d/out")
expect 0 "verify-proof --key" "$cs" log verify-proof "$d/p.json" --checkpoint "$d/cps" --key "$key"
expect 4 "verify-proof --key, an unsigned checkpoint" "$cs" log verify-proof "$d/p.json" --checkpoint "$d/cp" --key "$key"
sed 's/^\(— [^ ]* \)./\1A/' "$d/cps" > "$d/cpx"
expect 4 "verify-proof --key, a damaged signature" "$cs" log verify-proof "$d/p.json" --checkpoint "$d/cpx" --key "$key"
expect 0 "init another study" "$cs" init "$d/s-other"
expect 0 "its key" "$cs" log key "$d/s-other"; okey=$(cat "$d/out")
expect 4 "verify-proof --key of another study" "$cs" log verify-proof "$d/p.json" --checkpoint "$d/cps" --key "$okey"
expect 5 "verify-proof --key, not a key" "$cs" log verify-proof "$d/p.json" --checkpoint "$d/cps" --key "nonsense"
expect 2 "verify-proof --key without --checkpoint" "$cs" log verify-proof "$d/p.json" --key "$key"
sed 's/"leaf_index":1/"leaf_index":0/; s/"seq":2/"seq":1/' "$d/p.json" > "$d/p2.json"
expect 4 "verify-proof, wrong index" "$cs" log verify-proof "$d/p2.json" --checkpoint "$d/cp"
# without a trust anchor a proof only agrees with itself: refused, saying why
expect 2 "verify-proof without an anchor" "$cs" log verify-proof "$d/p.json"
grep -q "trust anchor" "$d/out" || { echo "FAIL: no-anchor message"; cat "$d/out"; fail=1; }
r64=$(sed -n 3p "$d/cp")
expect 0 "verify-proof --root (base64)" "$cs" log verify-proof "$d/p.json" --root "$r64"
rhex=$(python3 -c "import base64,sys; print(base64.b64decode(sys.argv[1]).hex())" "$r64")
expect 0 "verify-proof --root (hex)" "$cs" log verify-proof "$d/p.json" --root "$rhex"
expect 4 "verify-proof --root of another tree" "$cs" log verify-proof "$d/p.json" --root "$(printf '%064d' 0)"
# a proof with a raised size and a root of its own: self-consistent, refused against the anchor
python3 - "$d/p.json" "$d/p3.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["tree_size"] = 4; p["hashes"] = p["hashes"] + ["00" * 32]
json.dump(p, open(sys.argv[2], "w"))
PY
expect 4 "verify-proof, raised size" "$cs" log verify-proof "$d/p3.json" --checkpoint "$d/cp"
expect 5 "verify-proof, garbage" "$cs" log verify-proof "$data/H1.json" --checkpoint "$d/cp"
"$cs" register "$d/s" "$d/H7.json" >/dev/null
expect 0 "log prove --old-size" "$cs" log prove "$d/s" --old-size 4; cp "$d/out" "$d/c.json"
"$cs" log checkpoint "$d/s" --origin example.org/s > "$d/cp4"
expect 0 "consistency proof between checkpoints" "$cs" log verify-proof "$d/c.json" --old-checkpoint "$d/cp" --checkpoint "$d/cp4"
expect 4 "consistency proof, wrong old checkpoint" "$cs" log verify-proof "$d/c.json" --old-checkpoint "$d/cp4" --checkpoint "$d/cp4"
expect 5 "log prove beyond the log" "$cs" log prove "$d/s" 99
expect 2 "log prove without SEQ" "$cs" log prove "$d/s"
"$cs" log export "$d/s" > "$d/e1"; "$cs" log export "$d/s" > "$d/e2"
cmp -s "$d/e1" "$d/e2" && [ "$(wc -l < "$d/e1")" = 5 ] || { echo "FAIL: export"; fail=1; }
# what a register killed before its commit leaves (a frozen copy of one formatting, a
# temporary file) is never taken for another file's copy, and the next register sweeps it
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['id']='H5'; open(sys.argv[2],'w').write(json.dumps(d))" "$data/H1.json" "$d/H5-compact.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['id']='H5'; open(sys.argv[2],'w').write(json.dumps(d, indent=4))" "$data/H1.json" "$d/H5-pretty.json"
orphan="$d/s/frozen/H5-$(sha256sum "$d/H5-compact.json" | cut -d' ' -f1).json"
cp "$d/H5-compact.json" "$orphan"; chmod 444 "$orphan"; echo junk > "$d/s/frozen/H5-x.json.tmp.99999"
expect 0 "register after a killed register (another formatting)" "$cs" register "$d/s" "$d/H5-pretty.json"
expect 0 "log verify after the orphan (no false alarm)" "$cs" log verify "$d/s"
[ ! -e "$orphan" ] && [ ! -e "$d/s/frozen/H5-x.json.tmp.99999" ] || { echo "FAIL: the orphan or the temporary file was not swept"; fail=1; }
# help and usage
for v in init register hypotheses log "log verify" "log checkpoint" "log prove" "log verify-proof" "log export"; do
	# shellcheck disable=SC2086
	out=$("$cs" $v --help 2>&1) || { echo "FAIL: $v --help exit"; fail=1; }
	case "$out" in *usage*) ;; *) echo "FAIL: $v --help prints no usage"; fail=1 ;; esac
done
expect 2 "log with no subcommand" "$cs" log
expect 2 "log frob" "$cs" log frob
expect 2 "hypotheses --bogus" "$cs" hypotheses "$d/s" --bogus
exit $fail
