#!/bin/sh
# Make the pg-pgvector study's "production" cluster, the seed's shape on real
# pgvector: initdb (as postgres) in W/prod/data, a server on the private socket
# directory W/prodsock and PORT (no TCP), a table `items` of fashion-mnist's
# first N training images (784-d, make_data.py) hash-partitioned into 64
# partitions (items_0..items_63), an HNSW index on each (m 16,
# ef_construction 64, vector_l2_ops), then a clean stop. W must be walkable by
# the postgres user. Run as root; pgvector must be installed.
#
# usage: make_cluster.sh BINDIR W PORT [N]
set -eu
B=$1 W=$2 PORT=$3 N=${4:-60000}
P=64
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$W/prod" "$W/prodsock"
chown postgres "$W/prod" "$W/prodsock"
chmod 700 "$W/prodsock"
runuser -u postgres -- "$B/initdb" -D "$W/prod/data" -A trust -U postgres >"$W/initdb.log" 2>&1
runuser -u postgres -- "$B/pg_ctl" -D "$W/prod/data" -l "$W/prod/log" -w -t 60 \
	-o "-k $W/prodsock -p $PORT -c listen_addresses='' -c maintenance_work_mem=256MB -c max_wal_size=4GB" \
	start >/dev/null
python3 "$here/make_data.py" "$W" "$N"
{
	echo "CREATE EXTENSION vector;"
	echo "CREATE TABLE items (id int, v vector(784)) PARTITION BY HASH (id);"
	i=0
	while [ $i -lt $P ]; do
		echo "CREATE TABLE items_$i PARTITION OF items FOR VALUES WITH (MODULUS $P, REMAINDER $i);"
		i=$((i + 1))
	done
	printf '%s\n' "\\copy items FROM '$W/base.csv' WITH (FORMAT csv)"
	# one index a partition, as the seed's: the parent's index makes one on each
	echo "CREATE INDEX ON items USING hnsw (v vector_l2_ops) WITH (m = 16, ef_construction = 64);"
	echo "VACUUM ANALYZE items;"
} | "$B/psql" -X -q -v ON_ERROR_STOP=1 -h "$W/prodsock" -p "$PORT" -U postgres -d postgres
rm -f "$W/base.csv"
runuser -u postgres -- "$B/pg_ctl" -D "$W/prod/data" -m fast -w stop >/dev/null
