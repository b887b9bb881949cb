#!/bin/sh
# Make the pg-cube study's "production" cluster: initdb (as postgres) in
# W/prod/data, a server on the private socket directory W/prodsock and PORT
# (no TCP), a contrib cube table `items` of 20,000 64-d vectors in 4 hash
# partitions (items_0..items_3) with a GiST index each, then a clean stop.
# W must be walkable by the postgres user. Also writes W/base.fvecs and
# W/queries.fvecs. Run as root.
#
# usage: make_cluster.sh BINDIR W PORT
set -eu
B=$1 W=$2 PORT=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$W/prod" "$W/prodsock"
chown postgres "$W/prod" "$W/prodsock"
chmod 700 "$W/prodsock"
runuser -u postgres -- "$B/initdb" -D "$W/prod/data" -A trust -U postgres >"$W/initdb.log" 2>&1
runuser -u postgres -- "$B/pg_ctl" -D "$W/prod/data" -l "$W/prod/log" -w -t 60 \
	-o "-k $W/prodsock -p $PORT -c listen_addresses=''" start >/dev/null
python3 "$here/make_data.py" "$W"
"$B/psql" -X -q -v ON_ERROR_STOP=1 -h "$W/prodsock" -p "$PORT" -U postgres -d postgres <<SQL
CREATE EXTENSION cube;
CREATE TABLE items (id int, v cube) PARTITION BY HASH (id);
CREATE TABLE items_0 PARTITION OF items FOR VALUES WITH (MODULUS 4, REMAINDER 0);
CREATE TABLE items_1 PARTITION OF items FOR VALUES WITH (MODULUS 4, REMAINDER 1);
CREATE TABLE items_2 PARTITION OF items FOR VALUES WITH (MODULUS 4, REMAINDER 2);
CREATE TABLE items_3 PARTITION OF items FOR VALUES WITH (MODULUS 4, REMAINDER 3);
\copy items FROM '$W/base.csv' WITH (FORMAT csv)
CREATE INDEX ON items USING gist (v);
VACUUM ANALYZE items;
SQL
rm -f "$W/base.csv"
runuser -u postgres -- "$B/pg_ctl" -D "$W/prod/data" -m fast -w stop >/dev/null
