#!/bin/sh
# Cross-check with the Go reference implementation (golang.org/x/mod/sumdb,
# Debian's golang-golang-x-mod-dev): gotlog/main.go, built here with Debian's
# GOPATH and no network, opens the log's signed checkpoint with note.Open and
# the key `coldstudy log key` prints, authenticates `coldstudy log tiles`
# output with tlog.TileHashReader, checks every entry's RecordHash against the
# tiles with ProveRecord/CheckRecord, and proves an earlier signed checkpoint
# is a prefix of the later one (ProveTree/CheckTree) after the log grew past
# two full tiles (level 1 appears). A flipped bit in a tile, a checkpoint
# checked with another study's key, and a tile directory of another log are
# refused. Skips (77) without go or the module source.
set -u
cs=${COLDSTUDY:?}; w=${LEDGER_WRITER:?}; src=${COLDSTUDY_SRC:?}
GOSRC=/usr/share/gocode/src/golang.org/x/mod/sumdb
command -v go >/dev/null 2>&1 || { echo "no go"; exit 77; }
[ -f "$GOSRC/note/note.go" ] && [ -f "$GOSRC/tlog/tile.go" ] || { echo "no golang-golang-x-mod-dev"; exit 77; }
d=$(mktemp -d /tmp/cs-gotlog-XXXXXX); trap 'chmod -R u+w "$d" 2>/dev/null; rm -rf "$d"' EXIT
fail=0
cp "$src/tests/ledger/gotlog/main.go" "$d/main.go"
(cd "$d" && GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS=-mod=mod GOCACHE="$d/cache" \
	GOPROXY=off GOTOOLCHAIN=local go build -o "$d/gotlog" main.go) || { echo "FAIL: go build"; exit 1; }
"$cs" init "$d/s" >/dev/null || exit 1
for i in 1 2 3; do sed "s/\"H1\"/\"H$i\"/" "$src/tests/ledger/data/H1.json" > "$d/h$i.json"; done
"$cs" register "$d/s" "$d/h1.json" "$d/h2.json" "$d/h3.json" >/dev/null || exit 1
vk=$("$cs" log key "$d/s") || exit 1
"$cs" log tiles "$d/s" --out "$d/t" >/dev/null || { echo "FAIL: log tiles"; exit 1; }
"$d/gotlog" "$d/t" "$vk" || fail=1
cp "$d/t/checkpoint" "$d/old"
# past two full tiles: tile/0/000 and 001 full, a partial 002, and level 1
"$w" "$d/s" grow 600 >/dev/null || exit 1
out=$("$cs" log tiles "$d/s" --out "$d/t") || { echo "FAIL: log tiles again: $out"; exit 1; }
echo "$out" | head -n 1
for f in tile/0/000 tile/0/001 tile/0/002.p/91 tile/1/000.p/2 tile/entries/000 tile/entries/002.p/91; do
	[ -f "$d/t/$f" ] || { echo "FAIL: $f missing"; fail=1; }
done
"$d/gotlog" "$d/t" "$vk" "$d/old" || fail=1
# the same directory again: nothing new to write
out=$("$cs" log tiles "$d/s" --out "$d/t" | head -n 1)
case "$out" in *": 0 tiles written"*) echo "ok: unchanged: $out" ;; *) echo "FAIL: rewrote tiles: $out"; fail=1 ;; esac
# a flipped bit in a level-0 tile: Go's tlog refuses the tiles
cp -r "$d/t" "$d/bad"; chmod u+w "$d/bad/tile/0/001"
printf '\001' | dd of="$d/bad/tile/0/001" bs=1 seek=100 conv=notrunc 2>/dev/null
if "$d/gotlog" "$d/bad" "$vk" >/dev/null; then echo "FAIL: Go accepted a changed tile"; fail=1; else echo "ok: Go refuses a changed tile"; fi
# another study's key: note.Open refuses the checkpoint
"$cs" init "$d/o" >/dev/null
if "$d/gotlog" "$d/t" "$("$cs" log key "$d/o")" >/dev/null; then echo "FAIL: Go accepted another key"; fail=1; else echo "ok: Go refuses another study's key"; fi
# tiles of another log in the output directory are not replaced (exit 4)
"$w" "$d/o" other 5 >/dev/null
out=$("$cs" log tiles "$d/o" --out "$d/t" 2>&1); rc=$?
case "$rc $out" in "4 "*"not signed by"*) echo "ok: other log's tiles refused: $out" ;; *) echo "FAIL: tiles over another log: exit $rc: $out"; fail=1 ;; esac
exit $fail
