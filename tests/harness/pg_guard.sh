#!/bin/sh
# A PostgreSQL run never reaches production's server or files (issue 31):
# - a run spec whose `database` or `user` carries conninfo keywords
#   ("postgres' host='PRODSOCK' port='PRODPORT") is refused (exit 5, naming
#   the JSON path) before any connection: production's session count
#   (pg_stat_database.sessions) is unchanged;
# - a clone whose own postgresql.conf names production as data_directory, or
#   includes a file outside the clone, is refused (exit 3, a refusal record)
#   and production (stopped) is never started: no postmaster.pid, pg_control
#   and the relation files byte for byte the same;
# - a clone whose configuration includes a file of its own still runs.
# Skips (77) without root, the postgres user, the server binaries or cube.
. "$(dirname "$0")/pg_common.sh"
pg_ext cube "contrib cube missing"

pg_tmp cs-pgg
PORT=5497
cleanup() {
	[ -f "$T/prod/data/postmaster.pid" ] &&
		runuser -u postgres -- "$B/pg_ctl" -D "$T/prod/data" -m immediate stop >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
prod_start() {
	pg "$B/pg_ctl" -D "$T/prod/data" -l "$T/prod/log" -w -t 60 \
		-o "-k $T/prodsock -p $PORT -c listen_addresses=''" start >/dev/null ||
		{ echo "FAIL: production start: $(tail -3 "$T/prod/log")"; exit 1; }
}
prod_stop() { pg "$B/pg_ctl" -D "$T/prod/data" -m fast -w stop >/dev/null; }
sessions() { # every database's sessions so far, as production counts them
	sleep 1
	"$B/psql" -X -q -At -h "$T/prodsock" -p $PORT -U postgres -d postgres \
		-c "SELECT sum(sessions) FROM pg_stat_database"
}
refusals() { python3 - "$S/ledger.db" <<'PY'
import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("select count(*) from records where kind='refusal'").fetchone()[0])
PY
}
prodsum() { # production's control file and relation files, hashed
	(cd "$T/prod/data" && find global base -type f | sort | xargs sha256sum | sha256sum)
}

src=${COLDSTUDY_SRC:?}
sh "$src/studies/pg-cube/make_cluster.sh" "$B" "$T" $PORT >"$T/make.log" 2>&1 ||
	{ echo "FAIL: making the production cluster: $(tail -5 "$T/make.log")"; exit 1; }
# production's configuration includes a file of its own (a clone of it keeps both)
echo "work_mem = '5MB'" > "$T/prod/data/extra.conf"
chown postgres "$T/prod/data/extra.conf"
echo "include 'extra.conf'" >> "$T/prod/data/postgresql.conf"

S=$T/S
"$cs" init "$S" >/dev/null || exit 1
cat > "$T/study.json" <<J
{"id":"pg31","production":{"paths":["$T/prod/data"],"sockets":["$T/prodsock"],"ports":[$PORT]},
 "datasets":{"base":"fvecs:$T/base.fvecs","queries":"fvecs:$T/queries.fvecs"},
 "indexes":{"items":{"kind":"postgres","source":"$T/prod/data","clone":"$T/clone/data"}},
 "scratch_dir":"$T/scratch"}
J
"$cs" study register "$S" "$T/study.json" >/dev/null || { echo "FAIL: study register"; exit 1; }
"$cs" clone "$T/prod/data" "$T/clone/data" --study "$S" >"$T/out" 2>&1 ||
	{ echo "FAIL: clone: $(cat "$T/out")"; exit 1; }
# clones whose own configuration points at production (made while production is stopped)
cp "$T/prod/data/postgresql.conf" "$T/conf.keep"
echo "data_directory = '$T/prod/data'" >> "$T/prod/data/postgresql.conf"
"$cs" clone "$T/prod/data" "$T/ddclone/data" --study "$S" >"$T/out" 2>&1 ||
	{ echo "FAIL: clone (data_directory): $(cat "$T/out")"; exit 1; }
cp "$T/conf.keep" "$T/prod/data/postgresql.conf"
echo "port = 5111" > "$T/outside.conf"
echo "include '$T/outside.conf'" >> "$T/prod/data/postgresql.conf"
"$cs" clone "$T/prod/data" "$T/incclone/data" --study "$S" >"$T/out" 2>&1 ||
	{ echo "FAIL: clone (include): $(cat "$T/out")"; exit 1; }
cp "$T/conf.keep" "$T/prod/data/postgresql.conf"
"$cs" validate "$S" --quiet --allow-no-device-stats >"$T/out" 2>&1 ||
	{ echo "FAIL: validate: $(tail -5 "$T/out")"; exit 1; }

SQL="SELECT id FROM items ORDER BY v <-> cube(\$1::float8[]) LIMIT 10"
runspec() { # file clone-data-directory extra-postgres-keys
	python3 - "$1" "$2" "$SQL" "$3" <<'PY'
import json, sys
f, d, sql, extra = sys.argv[1:5]
pg = {"port": 5434, "sql": sql, "shared_buffers": "16MB"}
pg.update(json.loads("{" + extra + "}"))
json.dump({"target": "postgres", "index": d, "postgres": pg,
           "queries": {"spec": "queries", "count": 2}, "base": "base", "k": 10, "cold": False},
          open(f, "w"))
PY
}

# ---- conninfo injection through database and user: refused before any connection ----
prod_start
prodpid=$(head -1 "$T/prod/data/postmaster.pid")
s1=$(sessions); s2=$(sessions)
for key in database user; do
	runspec "$T/inj-$key.json" "$T/clone/data" "\"$key\": \"postgres' host='$T/prodsock' port='$PORT\""
	"$cs" run "$S" "$T/inj-$key.json" -q >"$T/out" 2>"$T/err"; got=$?
	[ $got = 5 ] || FAILED "$key injection: exit $got, expected 5: $(head -c 300 "$T/err")"
	grep -q "\$.postgres.$key" "$T/err" || FAILED "$key injection: the message does not name \$.postgres.$key: $(cat "$T/err")"
done
s3=$(sessions)
echo "production's sessions: $s1, $s2 (one psql), after both injections $s3"
[ $((s3 - s2)) = $((s2 - s1)) ] ||
	FAILED "production's session count moved by $((s3 - s2 - (s2 - s1))) beyond the test's own psql"
[ "$(head -1 "$T/prod/data/postmaster.pid")" = "$prodpid" ] || FAILED "production's server changed"

# ---- a clone whose configuration points outside it: refused, production untouched ----
prod_stop
before=$(prodsum)
for c in ddclone incclone; do
	runspec "$T/$c.json" "$T/$c/data" ""
	r0=$(refusals)
	"$cs" run "$S" "$T/$c.json" -q >"$T/out" 2>"$T/err"; got=$?
	echo "$c: exit $got: $(head -c 300 "$T/err")"
	[ $got = 3 ] || FAILED "$c: exit $got, expected 3"
	[ "$(refusals)" -gt "$r0" ] || FAILED "$c: no refusal record"
	grep -q "points outside the clone" "$T/err" || FAILED "$c: the refusal does not say why"
	[ -e "$T/prod/data/postmaster.pid" ] && FAILED "$c: production's server was started"
	[ "$(prodsum)" = "$before" ] || FAILED "$c: production's files changed"
done

# ---- the good clone (its configuration includes a file of its own) runs ----
runspec "$T/good.json" "$T/clone/data" ""
r=$("$cs" run "$S" "$T/good.json" -q 2>"$T/err") || FAILED "run on the clone: $(cat "$T/err")"
echo "good clone: run ${r:-none}"
[ -e "$T/prod/data/postmaster.pid" ] && FAILED "production's server was started by the run"
[ "$(prodsum)" = "$before" ] || FAILED "production's files changed during the run"

[ $fail = 0 ] && echo "ok: conninfo injections refused before connecting, clone configurations naming production refused"
exit $fail
