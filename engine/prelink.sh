#!/bin/sh
# Make the installed static libcoldvec.a from the internal archive: link all
# of its objects into one relocatable object (ld -r), keep global exactly
# the symbols the shared library exports (its version map: the CV_API
# functions) and make every other symbol local, so a program that links the
# static library sees the same namespace as one that links the shared one
# (no data_hash, hnsw_*, rd_* to collide with).
# usage: prelink.sh LD OBJCOPY AR NM INTERNAL.a LIBCOLDVEC.so OUT.a
set -eu
ld=$1 objcopy=$2 ar=$3 nm=$4 in=$5 so=$6 out=$7
tmp=$(mktemp -d "$out.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$nm" -D --defined-only "$so" | awk 'NF == 3 && $2 ~ /[TWDBRVi]/ {sub(/@.*/, "", $3); print $3}' \
	> "$tmp/keep"
[ -s "$tmp/keep" ] || { echo "prelink.sh: $so exports nothing" >&2; exit 1; }
"$ld" -r --whole-archive "$in" -o "$tmp/all.o"
"$objcopy" --keep-global-symbols="$tmp/keep" "$tmp/all.o" "$tmp/coldvec.o"
rm -f "$out"
"$ar" rcsD "$out" "$tmp/coldvec.o"
