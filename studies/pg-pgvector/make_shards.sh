#!/bin/sh
# Make the pg-pgvector study's second "production": the same rows spread
# over 4 servers, PostgreSQL's own scale-out (postgres_fdw). Partitions
# items_0..items_{P-1} of the production cluster that make_cluster.sh made
# in W/prod (started here on its PORT for the copy, then stopped again) go to 4
# shard clusters W/shard0..3 (items_p on shard p % 4, an HNSW index each,
# m 16, ef_construction 64, as production's), and a coordinator cluster
# W/coord holds them as postgres_fdw foreign tables, one foreign server a
# shard, async_capable, hnsw.ef_search 40 set on the shards' sessions. The
# coordinator listens on SPORT, shard i on SPORT+1+i, each on its own socket
# directory W/NAME/sock (no TCP). Every server is stopped at the end.
# Run as root; pgvector and postgres_fdw must be installed.
#
# usage: make_shards.sh BINDIR W PORT SPORT [P]   (P: partitions moved, default 16)
set -eu
B=$1 W=$2 PORT=$3 SPORT=$4 P=${5:-16}
N=4
pg() { runuser -u postgres -- "$@"; }
port_of() { case $1 in coord) echo "$SPORT" ;; shard*) echo $((SPORT + 1 + ${1#shard})) ;; esac; }
SERVERS="coord shard0 shard1 shard2 shard3"
up=""
down() {
	for s in $up; do
		d="$W/$s/data"
		[ "$s" = prod ] && d="$W/prod/data"
		[ -f "$d/postmaster.pid" ] && pg "$B/pg_ctl" -D "$d" -m fast -w stop >/dev/null 2>&1
	done
	return 0
}
trap down EXIT INT TERM
q() { # server, psql arguments: over its private socket directory
	case $1 in prod) h="$W/prodsock" p=$PORT ;; *) h="$W/$1/sock" p=$(port_of "$1") ;; esac
	shift
	"$B/psql" -X -q -v ON_ERROR_STOP=1 -h "$h" -p "$p" -U postgres -d postgres "$@"
}

# the rows of the partitions moved, copied out of production
mkdir -p "$W/rows"
chown postgres "$W/rows"
pg "$B/pg_ctl" -D "$W/prod/data" -l "$W/prod/log" -w -t 60 \
	-o "-k $W/prodsock -p $PORT -c listen_addresses=''" start >/dev/null
up="prod"
i=0
while [ $i -lt "$P" ]; do
	q prod -c "\\copy items_$i TO '$W/rows/items_$i.csv' WITH (FORMAT csv)"
	i=$((i + 1))
done
pg "$B/pg_ctl" -D "$W/prod/data" -m fast -w stop >/dev/null
up=""

for s in $SERVERS; do
	mkdir -p "$W/$s/sock"
	chown postgres "$W/$s" "$W/$s/sock"
	chmod 700 "$W/$s/sock"
	pg "$B/initdb" -D "$W/$s/data" -A trust -U postgres >"$W/$s/initdb.log" 2>&1
	pg "$B/pg_ctl" -D "$W/$s/data" -l "$W/$s/log" -w -t 60 \
		-o "-k $W/$s/sock -p $(port_of "$s") -c listen_addresses='' -c maintenance_work_mem=128MB" start >/dev/null
	up="$up $s"
done
HNSW="USING hnsw (v vector_l2_ops) WITH (m = 16, ef_construction = 64)"
h=0
while [ $h -lt $N ]; do
	{
		echo "CREATE EXTENSION vector;"
		i=$h
		while [ $i -lt "$P" ]; do
			echo "CREATE TABLE items_$i (id int, v vector(784));"
			printf '%s\n' "\\copy items_$i FROM '$W/rows/items_$i.csv' WITH (FORMAT csv)"
			echo "CREATE INDEX ON items_$i $HNSW;"
			i=$((i + N))
		done
		echo "VACUUM ANALYZE;"
	} | q shard$h
	h=$((h + 1))
done
{
	echo "CREATE EXTENSION vector; CREATE EXTENSION postgres_fdw;"
	h=0
	while [ $h -lt $N ]; do
		echo "CREATE SERVER shard$h FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$W/shard$h/sock', port '$(port_of shard$h)', dbname 'postgres', async_capable 'true', extensions 'vector', options '-c hnsw.ef_search=40');"
		echo "CREATE USER MAPPING FOR postgres SERVER shard$h OPTIONS (user 'postgres');"
		h=$((h + 1))
	done
	i=0
	while [ $i -lt "$P" ]; do
		echo "CREATE FOREIGN TABLE items_$i (id int, v vector(784)) SERVER shard$((i % N)) OPTIONS (table_name 'items_$i');"
		i=$((i + 1))
	done
} | q coord
rm -rf "$W/rows"
down
up=""
