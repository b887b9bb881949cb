#!/bin/sh
# An overlay mount is its layers too (issue 31, item 5): a mount whose lower
# layer is a production folder shows production's files under another
# device and inode, and a mount whose upper layer lies inside production
# writes into it. Both are production: evicting a file, building an index,
# writing a trace or naming TMPDIR there is refused (exit 3), production's
# page-cache residency and bytes unchanged; an overlay of other folders is
# used as before. Skips (77) without root or the overlay file system.
set -u
cs=${COLDSTUDY:?}
[ "$(id -u)" = 0 ] || exit 77
command -v python3 >/dev/null 2>&1 || exit 77
grep -qw overlay /proc/filesystems 2>/dev/null || modprobe overlay 2>/dev/null || exit 77
T=$(mktemp -d /var/tmp/cs-govl-XXXXXX)
export COLDSTUDY_PRODUCTION_REGISTRY="$T/registry.json"
cleanup() {
	for m in m1 m2 m3; do mountpoint -q "$T/$m" 2>/dev/null && umount "$T/$m"; done
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
fail=0
FAILED() { echo "FAIL: $*"; fail=1; }
mkdir -p "$T/P" "$T/P2/up" "$T/L" "$T/L3" "$T/u1" "$T/w1" "$T/u2" "$T/w2" "$T/w3" "$T/m1" "$T/m2" "$T/m3"
head -c 1048576 /dev/urandom > "$T/P/heap"
head -c 65536 /dev/urandom > "$T/L/data"
"$cs" production add "$T/P" >/dev/null || { echo "FAIL: production add"; exit 1; }
"$cs" production add "$T/P2" >/dev/null || { echo "FAIL: production add P2"; exit 1; }
mount -t overlay overlay -o "lowerdir=$T/P,upperdir=$T/u1,workdir=$T/w1" "$T/m1" 2>"$T/err" ||
	{ echo "overlay mount unavailable: $(cat "$T/err")"; exit 77; }
mount -t overlay overlay -o "lowerdir=$T/L,upperdir=$T/u2,workdir=$T/w2" "$T/m2" ||
	{ echo "FAIL: second overlay mount"; exit 1; }
mount -t overlay overlay -o "lowerdir=$T/L3,upperdir=$T/P2/up,workdir=$T/w3" "$T/m3" ||
	{ echo "FAIL: third overlay mount"; exit 1; }
state() { (cd "$T" && find P P2 -printf '%p %y %s\n' | sort && find P P2 -type f | sort | xargs -r sha256sum); }
resident() { "$cs" cache residency "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["resident"])'; }
cat "$T/m1/heap" > /dev/null
full=$(resident "$T/P/heap")
[ "$full" -gt 0 ] || FAILED "production's heap is not resident after a read through the overlay"
before=$(state)
echo "production's heap: $full pages resident before"
expect() { # code what command...
	want=$1; what=$2; shift 2
	"$@" >"$T/out" 2>"$T/err"; got=$?
	echo "$what: exit $got: $(head -c 220 "$T/err")"
	[ "$got" = "$want" ] || FAILED "$what: exit $got, expected $want"
	[ "$(resident "$T/P/heap")" = "$full" ] || FAILED "$what: production's heap was evicted"
	[ "$(state)" = "$before" ] || { FAILED "$what: production changed"; before=$(state); }
}
D="synth:n=500,d=8,clusters=4,seed=1"
expect 3 "cache evict, lower layer production" "$cs" cache evict "$T/m1/heap"
expect 3 "cache evict of the overlay's root, lower layer production" "$cs" cache evict "$T/m1"
expect 3 "index build --out, lower layer production" "$cs" index build --kind hnsw --data "$D" \
	--metric l2 --out "$T/m1/idx" -q
expect 3 "index build --out, upper layer inside production" "$cs" index build --kind hnsw \
	--data "$D" --metric l2 --out "$T/m3/idx" -q
expect 3 "TMPDIR on an overlay whose upper layer is inside production" env TMPDIR="$T/m3" \
	"$cs" cache evict "$T/m2/data"
ln -s "$T/m1" "$T/link"
expect 3 "cache evict through a symlink to the overlay" "$cs" cache evict "$T/link/heap"
# an overlay of folders that are not production is not refused
expect 0 "cache evict, an overlay of other folders" "$cs" cache evict "$T/m2/data"
expect 0 "index build --out, an overlay of other folders" "$cs" index build --kind hnsw --data "$D" \
	--metric l2 --out "$T/m2/idx" -q
echo "production's heap: $(resident "$T/P/heap") pages resident after"
[ $fail = 0 ] && echo "ok: overlays over production refused, production resident and unchanged"
exit $fail
