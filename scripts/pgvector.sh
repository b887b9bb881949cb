#!/bin/sh
# Build pgvector from an unmodified release archive (../shared/vendor/, or
# PGVECTOR_VENDOR) against Debian's PostgreSQL 15 (postgresql-server-dev-15).
#
#   scripts/pgvector.sh install [VERSION]     into the system's PostgreSQL
#                                             (a no-op when that version is there)
#   scripts/pgvector.sh private VERSION DIR   into a private copy of PostgreSQL's
#                                             tree under DIR; prints its bindir
#
# The private copy is PostgreSQL's own bin, lib and share trees copied under
# DIR/usr/...: its binaries find share/ and lib/ relative to where they sit,
# so several pgvector versions can live side by side without touching the
# system. Exit 77 when the archive or the server headers are missing (the
# callers are tests, which skip then); 1 when the build fails.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
vendor=${PGVECTOR_VENDOR:-$here/../shared/vendor}
PGC=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
cmd=${1:-}
ver=${2:-0.5.1}
tarball=$vendor/pgvector-$ver.tar.gz
[ -f "$tarball" ] || { echo "pgvector.sh: no $tarball" >&2; exit 77; }
[ -x "$PGC" ] && [ -d "$("$PGC" --includedir-server)" ] ||
	{ echo "pgvector.sh: no PostgreSQL server headers (apt-get install postgresql-server-dev-15)" >&2; exit 77; }
src=$(mktemp -d /tmp/pgvector-src-XXXXXX)
trap 'rm -rf "$src"' EXIT INT TERM
build() {
	tar -xzf "$tarball" -C "$src"
	# OPTFLAGS: pgvector's default -march=native, kept explicit
	make -s -C "$src/pgvector-$ver" PG_CONFIG="$PGC" OPTFLAGS="-march=native" >"$src/make.log" 2>&1 ||
		{ tail -20 "$src/make.log" >&2; echo "pgvector.sh: pgvector $ver failed to build" >&2; exit 1; }
}
case "$cmd" in
install)
	ext=$("$PGC" --sharedir)/extension
	[ -f "$ext/vector--$ver.sql" ] && [ -f "$("$PGC" --pkglibdir)/vector.so" ] && exit 0
	build
	make -s -C "$src/pgvector-$ver" PG_CONFIG="$PGC" install >>"$src/make.log" 2>&1 ||
		{ tail -20 "$src/make.log" >&2; exit 1; }
	echo "installed pgvector $ver into $("$PGC" --pkglibdir)"
	;;
private)
	dir=${3:?usage: pgvector.sh private VERSION DIR}
	bindir=$("$PGC" --bindir)
	pkglib=$("$PGC" --pkglibdir)
	share=$("$PGC" --sharedir)
	# Debian: bindir /usr/lib/postgresql/15/bin, pkglibdir its sibling lib/
	base=$(dirname "$bindir")
	mkdir -p "$dir$(dirname "$base")" "$dir$(dirname "$share")"
	cp -a "$base" "$dir$(dirname "$base")/"
	cp -a "$share" "$dir$(dirname "$share")/"
	[ -d "$dir$pkglib" ] || { echo "pgvector.sh: $pkglib is not beside $bindir" >&2; exit 1; }
	rm -f "$dir$share/extension/vector"* "$dir$pkglib/vector.so"
	build
	make -s -C "$src/pgvector-$ver" PG_CONFIG="$PGC" install DESTDIR="$dir" >>"$src/make.log" 2>&1 ||
		{ tail -20 "$src/make.log" >&2; exit 1; }
	echo "$dir$bindir"
	;;
*)
	echo "usage: pgvector.sh install [VERSION] | private VERSION DIR" >&2
	exit 2
	;;
esac
