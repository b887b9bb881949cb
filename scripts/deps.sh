#!/bin/sh
# Install what coldstudy needs on Debian 12 (run as root); a no-op when all is there.
set -eu
PKGS="build-essential clang libclang-rt-14-dev meson ninja-build pkg-config python3
libsqlite3-dev sqlite3 libjansson-dev libcurl4-openssl-dev libssl-dev liburing-dev zlib1g-dev
libcmocka-dev dataset-fashion-mnist fio xfsprogs util-linux valgrind chromium fonts-liberation
python3-pandas python3-matplotlib python3-jsonschema libhdf5-dev python3-h5py
golang-go golang-golang-x-mod-dev nginx-light
libpq-dev postgresql postgresql-contrib postgresql-server-dev-15 python3-psycopg2"
# The benches' peers (meson -Dbench=true): hnswlib headers and Python module, Debian's faiss.
if [ "${BENCH:-0}" = 1 ]; then
	PKGS="$PKGS libhnswlib-dev python3-hnswlib libfaiss-dev"
fi
missing=""
for p in $PKGS; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "installing:$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi
# pgvector, which Debian 12 does not package: built from the unmodified release
# archive in ../shared/vendor/ where that folder exists (the seed's 0.5.1), so
# the PostgreSQL tests run against it; elsewhere they run without it and say so.
if [ -f "$(dirname "$0")/../../shared/vendor/pgvector-0.5.1.tar.gz" ]; then
	"$(dirname "$0")/pgvector.sh" install 0.5.1
fi
