#!/bin/sh
# The same image behind a second loop device is production too: a file
# system on a loop device is named by the device's backing file (device,
# inode, offset), not by the loop device's number or name. Skips (77)
# without root, losetup, mkfs.ext4 or a free loop device.
set -u
cs=${COLDSTUDY:?}
[ "$(id -u)" = 0 ] || exit 77
command -v losetup >/dev/null 2>&1 || exit 77
command -v mkfs.ext4 >/dev/null 2>&1 || exit 77
T=$(mktemp -d /var/tmp/cs-gloop-XXXXXX)
export COLDSTUDY_PRODUCTION_REGISTRY="$T/registry.json"
A=""; B=""; C=""
cleanup() {
	mountpoint -q "$T/m3" 2>/dev/null && umount "$T/m3"
	[ -n "$C" ] && losetup -d "$C" 2>/dev/null
	mountpoint -q "$T/m2" 2>/dev/null && umount "$T/m2"
	mountpoint -q "$T/m1" 2>/dev/null && umount "$T/m1"
	[ -n "$B" ] && losetup -d "$B" 2>/dev/null
	[ -n "$A" ] && losetup -d "$A" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
fail=0
expect() { # code description command...
	want=$1; what=$2; shift 2
	"$@" >"$T/out" 2>"$T/err"; got=$?
	if [ "$got" != "$want" ]; then
		echo "FAIL: $what: exit $got, expected $want: $(head -c 300 "$T/err")"; fail=1
	fi
}
truncate -s 64M "$T/img" && mkfs.ext4 -q -F "$T/img" >/dev/null 2>&1 || exit 77
A=$(losetup -f --show "$T/img" 2>/dev/null) || { A=""; echo "no loop device"; exit 77; }
mkdir "$T/m1" "$T/m2"
mount "$A" "$T/m1" 2>/dev/null || { echo "mount failed"; exit 77; }
mkdir "$T/m1/P" "$T/m1/other"
head -c 65536 /dev/urandom > "$T/m1/P/data"
head -c 65536 /dev/urandom > "$T/m1/other/data"
sync
B=$(losetup -f --show -r "$T/img" 2>/dev/null) || { B=""; echo "no second loop device"; exit 77; }
mount -o ro,noload "$B" "$T/m2" 2>/dev/null || { echo "second mount failed"; exit 77; }
[ "$(stat -c %d "$T/m1/P")" != "$(stat -c %d "$T/m2/P")" ] || { echo "FAIL: the mounts share a device number"; fail=1; }

# A path on the image: the same file through the second loop device is that path.
expect 0 "production add (a path on loop A)" "$cs" production add "$T/m1/P"
expect 3 "P through loop B" "$cs" cache evict "$T/m2/P/data"
expect 3 "probe P through loop B" "$cs" probe "$T/m2/P/data" --qd 1 --bs 4k --reads 4 --strategy pread
expect 0 "another file of the image (control)" "$cs" cache evict "$T/m2/other/data"

# A loop device stacked on loop A (its backing "file" is /dev/loopA): followed down to the image.
mkdir "$T/m3"
if C=$(losetup -f --show -r "$A" 2>/dev/null) && mount -o ro,noload "$C" "$T/m3" 2>/dev/null; then
	expect 3 "P through a loop device stacked on loop A" "$cs" cache evict "$T/m3/P/data"
	expect 0 "another file through the stacked loop (control)" "$cs" cache evict "$T/m3/other/data"
else
	echo "no third loop device: the stacked case is not run"
fi

# The device itself: loop B is the same storage as production's loop A.
expect 0 "production add (loop A, the device)" "$cs" production add "$A"
expect 3 "probe loop B" "$cs" probe "$B" --qd 1 --bs 4k --reads 4 --strategy pread
grep -q "production block device" "$T/err" || { echo "FAIL: message: $(cat "$T/err")"; fail=1; }
expect 3 "a file on loop B" "$cs" cache evict "$T/m2/other/data"
expect 3 "loop A itself" "$cs" probe "$A" --qd 1 --bs 4k --reads 4 --strategy pread
[ -n "$C" ] && expect 3 "the loop device stacked on loop A" "$cs" probe "$C" --qd 1 --bs 4k --reads 4 --strategy pread
[ $fail = 0 ] && echo "the second loop device was recognised as production"
exit $fail
