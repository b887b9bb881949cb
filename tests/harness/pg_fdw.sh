#!/bin/sh
# A PostgreSQL run over N servers (issue 32 item 4): the partitions as
# postgres_fdw foreign tables over 4 shard servers, fanned out by
# PostgreSQL's own async Append, against one server's serial Merge Append
# over the same partitions, both cold.
# "Production" here: one server holding 4 pgvector HNSW partitions (4 x
# 2,000 128-d vectors), and a coordinator plus 4 shards holding the same 4
# partitions, one a shard, the coordinator's foreign servers async_capable.
# Every cluster is cloned (stopped) with coldstudy clone; then:
# - the fan-out run (coordinator clone + 4 shard clones, each started
#   privately, each evicted and proven cold before every query) reads the
#   shards' blocks, its EXPLAIN has an Async Foreign Scan a shard, its
#   foreign servers were repointed at the clones' private sockets, and it
#   returns the serial run's top-k (both recall 1.0 against exact ground
#   truth, query for query; the same ids from both SQL forms on production);
# - a run whose shard points at production (a shard's index is production's
#   data directory, or its port production's), or whose coordinator has a
#   foreign server the spec does not name, is refused (exit 3, a refusal
#   record), and production's servers never change.
# Prints the cold figures (latency, reads a query, io/wall) of both runs.
# Skips (77) without root, the postgres user, the server binaries, pgvector
# or postgres_fdw.
. "$(dirname "$0")/pg_common.sh"
pg_ext vector "pgvector is not installed (scripts/pgvector.sh, issue 32 item 1)"
pg_ext postgres_fdw "contrib postgres_fdw missing"
N=${FDW_ROWS:-8000} D=${FDW_DIM:-128} NQ=${FDW_QUERIES:-8} EF=${FDW_EF:-100}

pg_tmp cs-pgfdw
# production's servers: one (5901), the coordinator (5902), shards 0-3 (5903-5906)
SERVERS="one coord s0 s1 s2 s3"
port_of() { case $1 in one) echo 5901 ;; coord) echo 5902 ;; s*) echo $((5903 + ${1#s})) ;; esac; }
start() { pg "$B/pg_ctl" -D "$T/$1/data" -l "$T/$1/log" -w -t 60 \
	-o "-k $T/$1/sock -p $(port_of $1) -c listen_addresses=''" start >/dev/null ||
	{ echo "FAIL: start $1: $(tail -3 "$T/$1/log")"; exit 1; }; }
stop() { pg "$B/pg_ctl" -D "$T/$1/data" -m fast -w stop >/dev/null; }
cleanup() {
	for s in $SERVERS; do
		[ -f "$T/$s/data/postmaster.pid" ] &&
			runuser -u postgres -- "$B/pg_ctl" -D "$T/$s/data" -m immediate stop >/dev/null 2>&1
	done
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
q() { s=$1; shift; "$B/psql" -X -q -v ON_ERROR_STOP=1 -h "$T/$s/sock" -p "$(port_of $s)" -U postgres -d postgres "$@"; }

# ---- data: N clustered D-d vectors (id = row), partition id % 4; queries ----
python3 - "$T" "$N" "$D" "$NQ" <<'PY' || { echo "FAIL: data"; exit 1; }
import random, struct, sys
out, n, d, nq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(32)
centres = [[rnd.gauss(0, 1) for _ in range(d)] for _ in range(16)]
def vec():
    c = centres[rnd.randrange(16)]
    return [struct.unpack("f", struct.pack("f", x + rnd.gauss(0, 0.3)))[0] for x in c]
parts = [open(f"{out}/part{p}.csv", "w") for p in range(4)]
with open(f"{out}/base.fvecs", "wb") as fb:
    for i in range(n):
        v = vec()
        fb.write(struct.pack("<i", d) + struct.pack(f"<{d}f", *v))
        parts[i % 4].write(f'{i},{i % 4},"[' + ",".join(repr(x) for x in v) + ']"\n')
for f in parts:
    f.close()
with open(f"{out}/queries.fvecs", "wb") as fq:
    for _ in range(nq):
        fq.write(struct.pack("<i", d) + struct.pack(f"<{d}f", *vec()))
PY
chmod 644 "$T"/part*.csv

# ---- production: one server with 4 partitions; a coordinator over 4 shards ----
for s in $SERVERS; do
	mkdir -p "$T/$s/sock" && chown postgres "$T/$s" "$T/$s/sock" && chmod 700 "$T/$s/sock"
	pg "$B/initdb" -D "$T/$s/data" -A trust -U postgres >"$T/$s.initdb" 2>&1 ||
		{ echo "FAIL: initdb $s: $(tail -3 "$T/$s.initdb")"; exit 1; }
	start $s
done
HNSW="USING hnsw (v vector_l2_ops) WITH (m = 16, ef_construction = 64)"
q one <<SQL || { echo "FAIL: the one server's table"; exit 1; }
CREATE EXTENSION vector;
CREATE TABLE items (id int, part int, v vector($D)) PARTITION BY LIST (part);
CREATE TABLE items_0 PARTITION OF items FOR VALUES IN (0);
CREATE TABLE items_1 PARTITION OF items FOR VALUES IN (1);
CREATE TABLE items_2 PARTITION OF items FOR VALUES IN (2);
CREATE TABLE items_3 PARTITION OF items FOR VALUES IN (3);
\copy items FROM '$T/part0.csv' WITH (FORMAT csv)
\copy items FROM '$T/part1.csv' WITH (FORMAT csv)
\copy items FROM '$T/part2.csv' WITH (FORMAT csv)
\copy items FROM '$T/part3.csv' WITH (FORMAT csv)
CREATE INDEX ON items $HNSW;
VACUUM ANALYZE items;
SQL
for p in 0 1 2 3; do
	q s$p <<SQL || { echo "FAIL: shard $p's table"; exit 1; }
CREATE EXTENSION vector;
CREATE TABLE items_$p (id int, part int, v vector($D));
\copy items_$p FROM '$T/part$p.csv' WITH (FORMAT csv)
CREATE INDEX ON items_$p $HNSW;
VACUUM ANALYZE items_$p;
SQL
done
{
	echo "CREATE EXTENSION vector; CREATE EXTENSION postgres_fdw;"
	for p in 0 1 2 3; do
		echo "CREATE SERVER shard$p FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$T/s$p/sock', port '$(port_of s$p)', dbname 'postgres', async_capable 'true', extensions 'vector', options '-c hnsw.ef_search=$EF');"
		echo "CREATE USER MAPPING FOR postgres SERVER shard$p OPTIONS (user 'postgres');"
		echo "CREATE FOREIGN TABLE items_$p (id int, part int, v vector($D)) SERVER shard$p OPTIONS (table_name 'items_$p');"
	done
} | q coord || { echo "FAIL: the coordinator's foreign tables"; exit 1; }

SERIAL_SQL="SELECT id FROM items ORDER BY v <-> \$1::vector LIMIT 10"
branch() { echo "(SELECT id, v <-> \$1::vector AS d FROM items_$1 ORDER BY v <-> \$1::vector LIMIT 10)"; }
FDW_SQL="SELECT id FROM ($(branch 0) UNION ALL $(branch 1) UNION ALL $(branch 2) UNION ALL $(branch 3)) s ORDER BY d, id LIMIT 10"

# The two SQL forms on production itself: the same ids, and the fan-out plan asynchronous.
python3 - "$T" "$NQ" "$D" <<'PY' >"$T/qvec.txt" || { echo "FAIL: query vectors"; exit 1; }
import struct, sys
t, nq, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
b = open(f"{t}/queries.fvecs", "rb").read()
for i in range(nq):
    v = struct.unpack(f"<{d}f", b[i * (4 + 4 * d) + 4:(i + 1) * (4 + 4 * d)])
    print("[" + ",".join(repr(x) for x in v) + "]")
PY
i=0
while read -r vec; do
	a=$(q one -At -c "SET hnsw.ef_search = $EF" -c "$(echo "$SERIAL_SQL" | sed "s|\\\$1|'$vec'|g")" | tr '\n' ' ')
	b=$(q coord -At -c "$(echo "$FDW_SQL" | sed "s|\\\$1|'$vec'|g")" | tr '\n' ' ')
	[ -n "$a" ] && [ "$a" = "$b" ] || FAILED "production, query $i: serial ids '$a', fan-out ids '$b'"
	i=$((i + 1))
done <"$T/qvec.txt"
vec=$(head -1 "$T/qvec.txt")
q coord -At -c "EXPLAIN $(echo "$FDW_SQL" | sed "s|\\\$1|'$vec'|g")" >"$T/plan.txt"
[ "$(grep -c 'Async Foreign Scan' "$T/plan.txt")" = 4 ] ||
	FAILED "the coordinator's plan has no 4 Async Foreign Scans: $(cat "$T/plan.txt")"
for s in $SERVERS; do stop $s; done

# ---- the study: every production server by identity ----
S=$T/S
"$cs" init "$S" >/dev/null || exit 1
paths="" socks="" ports=""
for s in $SERVERS; do
	paths="$paths${paths:+,}\"$T/$s/data\""
	socks="$socks${socks:+,}\"$T/$s/sock\""
	ports="$ports${ports:+,}$(port_of $s)"
done
cat >"$T/study.json" <<J
{"id":"pgfdw","production":{"paths":[$paths],"sockets":[$socks],"ports":[$ports]},
 "datasets":{"base":"fvecs:$T/base.fvecs","queries":"fvecs:$T/queries.fvecs"},
 "scratch_dir":"$T/scratch"}
J
"$cs" study register "$S" "$T/study.json" >"$T/out" 2>&1 || { echo "FAIL: study register: $(cat "$T/out")"; exit 1; }
for s in $SERVERS; do
	"$cs" clone "$T/$s/data" "$T/clone/$s" --study "$S" >"$T/out" 2>&1 ||
		{ echo "FAIL: clone $s: $(cat "$T/out")"; exit 1; }
done
for s in $SERVERS; do start $s; done # production runs beside the study from here on
pids() { for s in $SERVERS; do head -1 "$T/$s/data/postmaster.pid"; done | tr '\n' ' '; }
prodpids=$(pids)
"$cs" validate "$S" --quiet --allow-no-device-stats >"$T/out" 2>&1 ||
	{ echo "FAIL: validate: $(tail -5 "$T/out")"; exit 1; }

shards() { # the shards object; $1: a replacement for shard 2's index, $2: for its port
	o=""
	for p in 0 1 2 3; do
		ix="$T/clone/s$p" pt=$((5913 + p))
		[ $p = 2 ] && ix=${1:-$ix} && pt=${2:-$pt}
		o="$o${o:+,}\"shard$p\":{\"index\":\"$ix\",\"port\":$pt,\"shared_buffers\":\"16MB\"}"
	done
	echo "{$o}"
}
cat >"$T/serial.json" <<J
{"target":"postgres","index":"$T/clone/one",
 "postgres":{"port":5911,"vector_text":"pgvector","sql":"$SERIAL_SQL","shared_buffers":"16MB",
             "session":["SET hnsw.ef_search = $EF","SET max_parallel_workers_per_gather = 0"]},
 "queries":{"spec":"queries","count":$NQ},"base":"base","k":10,"cold":true,"cold_each_query":true}
J
fdwspec() { # file [shard-2 index] [shard-2 port]
	cat >"$1" <<J
{"target":"postgres","index":"$T/clone/coord",
 "postgres":{"port":5912,"vector_text":"pgvector","sql":"$FDW_SQL","shared_buffers":"16MB",
             "shards":$(shards "${2:-}" "${3:-}")},
 "queries":{"spec":"queries","count":$NQ},"base":"base","k":10,"cold":true,"cold_each_query":true}
J
}
fdwspec "$T/fdw.json"
r1=$("$cs" run "$S" "$T/serial.json" -q 2>"$T/err") || { echo "FAIL: serial run: $(cat "$T/err")"; exit 1; }
r2=$("$cs" run "$S" "$T/fdw.json" -q 2>"$T/err") || { echo "FAIL: fan-out run: $(cat "$T/err")"; exit 1; }
python3 - "$S" "$cs" "$r1" "$r2" "$T" <<'PY' || FAILED "the runs' records"
import json, subprocess, sys
s, cs, r1, r2, t = sys.argv[1:6]
def rec(rid):
    return json.loads(subprocess.run([cs, "run", "show", s, rid, "--json"], capture_output=True, text=True, check=True).stdout)
def rows(rid):
    out = subprocess.run([cs, "run", "show", s, rid, "--queries", "--jsonl"], capture_output=True, text=True, check=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.strip()]
a, b = rec(r1), rec(r2)
ra, rb = rows(r1), rows(r2)
ma, mb = a["metrics"], b["metrics"]
print("serial %s: %.1f reads a query, lat p50 %.2f ms, mean %.2f ms, io/wall %.2f" % (r1, ma["reads_per_query"], ma["lat_p50_ms"], ma["lat_mean_ms"], ma["io_over_wall"]))
print("fan-out %s (postgres_fdw, 4 shards): %.1f reads a query, lat p50 %.2f ms, mean %.2f ms, io/wall %.2f" % (r2, mb["reads_per_query"], mb["lat_p50_ms"], mb["lat_mean_ms"], mb["io_over_wall"]))
print("fan-out / serial: latency p50 %.2f, reads %.2f" % (mb["lat_p50_ms"] / ma["lat_p50_ms"], mb["reads_per_query"] / ma["reads_per_query"]))
print("shards:", [(x["server"], x["data_blocks_read"], x["catalog_blocks_read"], round(x["read_ms"], 1)) for x in b["postgres"]["shards"]])
assert len(ra) == len(rb) == ma["queries"] == mb["queries"], (len(ra), len(rb))
# the same top-k: each query's ids are the exact top-k on both (recall 1.0 query for query)
for x, y in zip(ra, rb):
    assert x["recall"] == 1.0 and y["recall"] == 1.0 and x["n"] == y["n"] == 10, (x, y)
g = b["postgres"]
sh = g["shards"]
assert len(sh) == 4, sh
for i, x in enumerate(sh):
    assert x["server"] == "shard%d" % i and x["port"] == 5913 + i, x
    assert x["data_blocks_read"] > 0, x                  # every shard read its partition cold
    assert x["catalog_blocks_read"] == 0, x              # catalogs were read in setup (remote plan)
    assert x["repointed_from"] == "host %s/s%d/sock, port %d" % (t, i, 5903 + i), x
assert mb["fanout_via"] == "postgres_fdw", mb["fanout_via"]
assert g["plan"]["async_foreign_scans"] == 4, g["plan"]
assert g["restarts"] == ma["queries"], g["restarts"]
assert mb["resident_fraction_before"] == 0.0
# the run's reads are the shards' own: their data blocks add up to the rows' reads
assert mb["engine_reads"] == sum(r["reads"] for r in rb) == sum(x["data_blocks_read"] for x in sh) + 0, (mb["engine_reads"], [x["data_blocks_read"] for x in sh])
assert g["statio_agrees"], g
assert ma["engine_reads"] > 0 and a["postgres"]["statio_agrees"]
# the reads are the same work: within a factor 1.5 a query (different graphs, same rows)
ratio = mb["reads_per_query"] / ma["reads_per_query"]
assert 0.67 < ratio < 1.5, ratio
PY

# ---- refused: a shard at production (its data directory, its port), an unnamed server ----
refusals() { python3 - "$S/ledger.db" <<'PY'
import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("select count(*) from records where kind='refusal'").fetchone()[0])
PY
}
expect_refused() { # what spec [stderr pattern]
	r0=$(refusals)
	"$cs" run "$S" "$2" -q >"$T/out" 2>"$T/err"; got=$?
	[ $got = 3 ] || FAILED "$1: exit $got, expected 3: $(head -c 300 "$T/err")"
	[ "$(refusals)" -gt "$r0" ] || FAILED "$1: no refusal record"
	[ -z "${3:-}" ] || grep -q "$3" "$T/err" || FAILED "$1: $(head -c 300 "$T/err")"
}
fdwspec "$T/prod-ix.json" "$T/s2/data"
expect_refused "a shard whose index is production's data directory" "$T/prod-ix.json"
fdwspec "$T/prod-port.json" "" 5905
expect_refused "a shard on production's port" "$T/prod-port.json"
# a coordinator whose fifth foreign server the spec does not name (it points at production)
stop coord
"$cs" clone "$T/coord/data" "$T/clone/coord5" --study "$S" >/dev/null 2>&1 || FAILED "clone coord5"
start coord
prodpids=$(pids)
mkdir -p "$T/c5sock" && chown postgres "$T/c5sock"
pg "$B/pg_ctl" -D "$T/clone/coord5" -l "$T/c5sock/log" -w -t 60 \
	-o "-k $T/c5sock -p 5920 -c listen_addresses=''" start >/dev/null || FAILED "coord5 start"
"$B/psql" -X -q -h "$T/c5sock" -p 5920 -U postgres -d postgres -c \
	"CREATE SERVER prod FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$T/s1/sock', port '5904')" ||
	FAILED "coord5: a fifth server"
pg "$B/pg_ctl" -D "$T/clone/coord5" -m fast -w stop >/dev/null
sed "s|$T/clone/coord\"|$T/clone/coord5\"|" "$T/fdw.json" >"$T/unnamed.json"
expect_refused "a coordinator foreign server the spec does not name" "$T/unnamed.json" "server prod"
[ "$(pids)" = "$prodpids" ] || FAILED "production's servers changed while the study ran"

"$cs" log verify "$S" >"$T/out" 2>&1 || FAILED "log verify: $(tail -3 "$T/out")"
[ $fail = 0 ] && echo "ok: cold fan-out over 4 postgres_fdw shards against one server's serial Merge Append; shards at production refused"
exit $fail
