#!/bin/sh
# The io verbs end to end: cache evict/residency/prewarm, probe (and its
# JSON as a device profile), device list/show/under, and their exit codes.
set -u
C=${COLDSTUDY:?}
D=$(mktemp -d /tmp/cvio-cli-XXXXXX)
trap 'rm -rf "$D"' EXIT INT TERM
F=$D/data.bin
head -c 2097152 /dev/zero | tr '\0' 'x' > "$F"
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() { want=$1; shift; "$@" >"$D/out" 2>"$D/err"; rc=$?; [ $rc -eq "$want" ] || { cat "$D/err"; fail "$* exited $rc, wanted $want"; }; }

case $(stat -f -c %T "$D") in tmpfs|overlayfs) echo "skip: $D is on a virtual file system"; exit 77;; esac

expect_rc 0 "$C" cache evict "$F"
expect_rc 0 "$C" cache residency "$F" --json
grep -q '"resident": 0' "$D/out" || fail "resident after evict: $(cat "$D/out")"
grep -q '"pages": 512' "$D/out" || fail "pages: $(cat "$D/out")"
expect_rc 0 "$C" cache prewarm "$F" --blocks 0,5,9 --block-size 8192
expect_rc 0 "$C" cache residency "$F"
grep -q '^         6        512' "$D/out" || fail "prewarm of 3 blocks should leave 6 pages: $(cat "$D/out")"
cat "$F" > /dev/null
expect_rc 0 "$C" cache residency "$F" --json
grep -q '"fraction": 1.0' "$D/out" || fail "after reading: $(cat "$D/out")"
expect_rc 5 "$C" cache prewarm "$F" --blocks 1,x
grep -q 'byte 2' "$D/err" || fail "bad block list message: $(cat "$D/err")"
expect_rc 5 "$C" cache prewarm "$F" --blocks 100000
expect_rc 5 "$C" cache residency "$D/missing"
expect_rc 2 "$C" cache evict
expect_rc 2 "$C" cache frob

expect_rc 0 "$C" probe "$F" --qd 4 --bs 4k --reads 200 --strategy pread --json
grep -q '"reads": 200' "$D/out" || fail "probe json: $(cat "$D/out")"
cp "$D/out" "$D/probe.json"
expect_rc 0 "$C" device show "probe:$D/probe.json"
grep -q '^servers' "$D/out" || fail "probe profile: $(cat "$D/out")"
expect_rc 0 "$C" probe "$F" --qd 2 --bs 4k --reads 50 --strategy pread --device nvme
grep -q 'device model nvme' "$D/out" || fail "probe with a device: $(cat "$D/out")"
expect_rc 2 "$C" probe "$F" --bs 3000
expect_rc 2 "$C" probe "$F" --qd 0
expect_rc 5 "$C" probe "$D/missing" --qd 1
expect_rc 0 "$C" device list
grep -q '^hdd-pool' "$D/out" || fail "device list"
expect_rc 0 "$C" device show hdd-pool
grep -q 'servers      12' "$D/out" || fail "hdd-pool show"
expect_rc 5 "$C" device show floppy
expect_rc 3 "$C" device under /dev/shm
grep -q 'not available' "$D/err" || fail "virtual device message"
echo ok
