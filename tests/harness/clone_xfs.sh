#!/bin/sh
# A true reflink clone: an XFS file system with reflink=1 on a loop device,
# an index-like directory cloned with `coldstudy clone`, and the proof that
# the clone shares its extents (FICLONE: method "reflink", filefrag shows
# shared extents, and the file system's used space does not grow by the
# clone's size). Skips (77) where a loop device cannot be mounted.
set -u
cs=${COLDSTUDY:?}
command -v mkfs.xfs >/dev/null 2>&1 || { echo "no mkfs.xfs"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "not root"; exit 77; }
d=$(mktemp -d /var/tmp/cs-xfs-XXXXXX)
loop=
cleanup() {
	mountpoint -q "$d/mnt" 2>/dev/null && umount "$d/mnt"
	[ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
	rm -rf "$d"
}
trap cleanup EXIT INT TERM
truncate -s 512M "$d/img" || exit 77
mkfs.xfs -q -m reflink=1 "$d/img" >/dev/null 2>&1 || { echo "mkfs.xfs failed"; exit 77; }
loop=$(losetup -f --show "$d/img" 2>/dev/null) || { echo "no loop device"; exit 77; }
mkdir -p "$d/mnt"
mount "$loop" "$d/mnt" 2>/dev/null || { echo "cannot mount xfs"; exit 77; }
mkdir "$d/mnt/idx"
echo phnsw > "$d/mnt/idx/KIND"
dd if=/dev/urandom of="$d/mnt/idx/part0.dat" bs=1M count=64 status=none
sync
used0=$(df -k --output=used "$d/mnt" | tail -1)
out=$("$cs" clone "$d/mnt/idx" "$d/mnt/clone") || { echo "FAIL: clone exited $?"; exit 1; }
sync
used1=$(df -k --output=used "$d/mnt" | tail -1)
echo "$out"
fail=0
case "$out" in *": reflink of 2 files"*) ;; *) echo "FAIL: not a reflink clone: $out"; fail=1 ;; esac
grep -q '"method":"reflink"' "$d/mnt/clone/.coldstudy-clone" || { echo "FAIL: marker method"; fail=1; }
if command -v filefrag >/dev/null 2>&1; then
	filefrag -v "$d/mnt/clone/part0.dat" | grep -q shared || { echo "FAIL: no shared extents"; fail=1; }
fi
grow=$((used1 - used0))
echo "used space grew by $grow KiB for a 65536 KiB clone"
[ "$grow" -lt 8192 ] || { echo "FAIL: the clone copied data ($grow KiB)"; fail=1; }
cmp -s "$d/mnt/idx/part0.dat" "$d/mnt/clone/part0.dat" || { echo "FAIL: contents differ"; fail=1; }
# A full copy where reflink cannot work (across file systems), recorded as such.
out=$("$cs" clone "$d/mnt/idx" "$d/copy") || { echo "FAIL: copy clone exited $?"; exit 1; }
case "$out" in *": copy of 2 files"*) ;; *) echo "FAIL: cross-fs clone not a copy: $out"; fail=1 ;; esac
exit $fail
