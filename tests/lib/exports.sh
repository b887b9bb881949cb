#!/bin/sh
# The installed libraries' namespace: every global the shared library
# exports (its version map) and every global the static library defines
# (engine/prelink.sh) is part of the cv_* API, the same functions in both; the engine's internals
# (data_hash, hnsw_*, hfr_*, rd_*, pg_*, ...) are local to it.
# usage: exports.sh LIBCOLDVEC.so LIBCOLDVEC.a
set -u
so=$1 a=$2
command -v nm >/dev/null 2>&1 || { echo "no nm"; exit 77; }
fail=0
n=$(nm -D --defined-only "$so" | awk 'NF == 3 && $2 ~ /[A-Z]/ && $2 != "A" {print $3}' | grep -v '^cv_')
[ -z "$n" ] || { echo "FAIL: the shared library exports: $n" | head -c 2000; echo; fail=1; }
n=$(nm -g --defined-only "$a" 2>/dev/null | awk 'NF == 3 && $2 ~ /[A-Z]/ {print $3}' | grep -v '^cv_')
[ -z "$n" ] || { echo "FAIL: the static library defines globals outside cv_*: $(echo $n | head -c 2000)"; fail=1; }
api_so=$(nm -D --defined-only "$so" | awk 'NF == 3 && $2 ~ /[TW]/ {sub(/@.*/, "", $3); print $3}' | sort | tee "${TMPDIR:-/tmp}/cs-exports-so.$$" | grep -c '^cv_')
api_a=$(nm -g --defined-only "$a" | awk 'NF == 3 && $2 ~ /[TW]/ {print $3}' | sort | tee "${TMPDIR:-/tmp}/cs-exports-a.$$" | grep -c '^cv_')
cmp -s "${TMPDIR:-/tmp}/cs-exports-so.$$" "${TMPDIR:-/tmp}/cs-exports-a.$$" ||
	{ echo "FAIL: the libraries' functions differ: $(diff "${TMPDIR:-/tmp}/cs-exports-so.$$" "${TMPDIR:-/tmp}/cs-exports-a.$$" | grep '^[<>]' | tr '\n' ' ')"; fail=1; }
rm -f "${TMPDIR:-/tmp}/cs-exports-so.$$" "${TMPDIR:-/tmp}/cs-exports-a.$$"
[ "$api_so" -gt 50 ] || { echo "FAIL: the shared library exports only $api_so cv_* functions"; fail=1; }
[ "$api_so" = "$api_a" ] || { echo "FAIL: cv_* functions: shared $api_so, static $api_a"; fail=1; }
# internal names the engine uses are still there, local (the check above saw something)
nm "$a" | grep -q ' t hfr_build$' || { echo "FAIL: hfr_build is not a local symbol of the static library"; fail=1; }
[ $fail = 0 ] && echo "ok: the same $api_so cv_* functions in both libraries, nothing else global"
exit $fail
