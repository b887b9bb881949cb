#!/bin/sh
# A production cluster whose indexes live in their own tablespace (issue 32
# item 6, as the seed's did): the pg-cube cluster with every index moved to
# a tablespace in a folder outside the data directory (pg_tblspc/OID a
# symlink to it). Cloned: the tablespace cloned beside the clone's data
# directory (DST.tblspc/OID), the clone's link repointed there, the marker
# naming it; run cold (its files evicted and proven cold with the data
# directory's; validate's eviction check samples them as base/'s), engine
# reads equal to pg_statio's, recall 1. Refused (exit
# 3, a refusal record): the clone's link pointed back at production's
# tablespace or at a copy the clone did not make, and a tablespace folder
# that is production. Production's
# tablespace is never written. Skips (77) as harness-postgres.
. "$(dirname "$0")/pg_common.sh"
src=${COLDSTUDY_SRC:?}
pg_ext cube "contrib cube missing"

pg_tmp cs-pgts
PORT=5853
cleanup() {
	[ -f "$T/prod/data/postmaster.pid" ] &&
		runuser -u postgres -- "$B/pg_ctl" -D "$T/prod/data" -m immediate stop >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
psqlp() { "$B/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$T/prodsock" -p $PORT -U postgres -d postgres "$@"; }

sh "$src/studies/pg-cube/make_cluster.sh" "$B" "$T" $PORT >"$T/make.log" 2>&1 ||
	{ echo "FAIL: making the production cluster: $(tail -5 "$T/make.log")"; exit 1; }
mkdir "$T/prodts" && chown postgres "$T/prodts" && chmod 700 "$T/prodts"
pg "$B/pg_ctl" -D "$T/prod/data" -l "$T/prod/log" -w -t 60 \
	-o "-k $T/prodsock -p $PORT -c listen_addresses=''" start >/dev/null ||
	{ echo "FAIL: production start"; exit 1; }
psqlp -c "CREATE TABLESPACE ixspace LOCATION '$T/prodts'" \
	-c "ALTER INDEX ALL IN TABLESPACE pg_default SET TABLESPACE ixspace" >"$T/out" 2>&1 ||
	{ echo "FAIL: moving the indexes to a tablespace: $(cat "$T/out")"; exit 1; }
nix=$(psqlp -c "SELECT count(*) FROM pg_class c JOIN pg_tablespace t ON t.oid = c.reltablespace WHERE t.spcname = 'ixspace' AND c.relkind = 'i'")
[ "${nix:-0}" -ge 4 ] || { echo "FAIL: $nix indexes in the tablespace, expected the 4 partitions'"; exit 1; }
pg "$B/pg_ctl" -D "$T/prod/data" -m fast -w stop >/dev/null || { echo "FAIL: production stop"; exit 1; }
oid=$(ls "$T/prod/data/pg_tblspc")
[ -L "$T/prod/data/pg_tblspc/$oid" ] || { echo "FAIL: no tablespace link in production"; exit 1; }
prod_ts_sum=$(find "$T/prodts" -type f -exec md5sum {} + | sort | md5sum)

S=$T/S
"$cs" init "$S" >/dev/null || exit 1
cat > "$T/study.json" <<J
{"id":"pgts","production":{"paths":["$T/prod/data","$T/prodts"],"sockets":["$T/prodsock"],"ports":[$PORT]},
 "datasets":{"base":"fvecs:$T/base.fvecs","queries":"fvecs:$T/queries.fvecs"},
 "indexes":{"items":{"kind":"postgres","source":"$T/prod/data","clone":"$T/clone/data"}}}
J
"$cs" study register "$S" "$T/study.json" >/dev/null || { echo "FAIL: study register"; exit 1; }
"$cs" clone "$T/prod/data" "$T/clone/data" --study "$S" >"$T/out" 2>&1 ||
	{ echo "FAIL: clone of a cluster with a tablespace: $(cat "$T/out")"; exit 1; }
tsc="$T/clone/data.tblspc/$oid"
[ -d "$tsc" ] || FAILED "the tablespace was not cloned beside the data directory ($tsc)"
[ "$(readlink "$T/clone/data/pg_tblspc/$oid")" = "$tsc" ] ||
	FAILED "the clone's pg_tblspc/$oid leads to $(readlink "$T/clone/data/pg_tblspc/$oid"), not $tsc"
nf=$(find "$tsc" -type f | wc -l)
[ "$nf" -ge 4 ] && [ "$nf" = "$(find "$T/prodts" -type f | wc -l)" ] ||
	FAILED "the tablespace's clone holds $nf files, production's $(find "$T/prodts" -type f | wc -l)"
[ "$(stat -c %U:%a "$tsc")" = "postgres:700" ] || FAILED "the tablespace's clone is $(stat -c %U:%a "$tsc")"
echo "cloned: tablespace $oid ($nf files) at $tsc, the clone's link repointed"
# validate's eviction check covers the tablespace's files as well as base/'s:
# made resident first, then a sample of them evicted and proven non-resident
cat "$tsc"/*/*/* >/dev/null 2>&1
"$cs" validate "$S" --json --allow-no-device-stats >"$T/validate.json" 2>"$T/out" ||
	{ echo "FAIL: validate: $(tail -5 "$T/out")"; exit 1; }
python3 - "$T/validate.json" "$T/clone/data" "$tsc" "$oid" "$nf" <<'PY' || FAILED "validate's eviction sample of the tablespace"
import json, sys
checks, clone, tsc, oid, nf = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
ev = [c for c in checks if c["check"] == "eviction"][0]
assert ev["passed"], ev
ts = ev["detail"]["clusters"][clone]["tablespaces"]
assert len(ts) == 1 and ts[0]["oid"] == oid and ts[0]["of"] == nf and ts[0]["evicted"] >= min(nf, 4), ts
print("validate: %d of the tablespace's %d files evicted and proven non-resident" % (ts[0]["evicted"], nf))
PY
# and the kernel agrees: none of the tablespace's pages is resident now
if command -v fincore >/dev/null 2>&1; then
	res=$(fincore --bytes --noheadings --output RES "$tsc"/*/*/* 2>/dev/null | awk '{s += $1} END {print s + 0}')
	[ "$res" = 0 ] || FAILED "after validate $res bytes of the tablespace's files are resident"
fi

SQL="SELECT id FROM items ORDER BY v <-> cube(\$1::float8[]) LIMIT 10"
cat > "$T/run.json" <<J
{"target":"postgres","index":"$T/clone/data",
 "postgres":{"port":5854,"sql":"$SQL","session":["SET enable_seqscan = off"],"shared_buffers":"16MB"},
 "queries":{"spec":"queries","count":3},"base":"base","k":10,"cold":true,"cold_each_query":true}
J
# the tablespace's files made resident first: the run's cold proof must cover them
cat "$tsc"/*/*/* >/dev/null 2>&1
r=$("$cs" run "$S" "$T/run.json" -q 2>"$T/err") || { echo "FAIL: run on the clone: $(cat "$T/err")"; exit 1; }
python3 - "$S/ledger.db" "$r" "$oid" <<'PY' || FAILED "the run on a clone with a tablespace"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
r = [json.loads(p) for (p,) in db.execute("select payload from records where kind='run'") if json.loads(p)["run_id"] == sys.argv[2]][0]
m, g = r["metrics"], r["postgres"]
assert m["engine_reads"] > 0 and g["statio_agrees"], (m["engine_reads"], g["statio_blocks_read"])
assert m["recall_at_k"] >= 0.99, m["recall_at_k"]
assert m["resident_fraction_before"] == 0, m["resident_fraction_before"]
ts = g.get("tablespaces") or []
assert [t["oid"] for t in ts] == [sys.argv[3]] and ts[0]["files"] >= 4, ts
print("run %s: %d blocks read cold (pg_statio agrees), recall %.2f, tablespace %s's %d files held, evicted and proven cold" % (r["run_id"], m["engine_reads"], m["recall_at_k"], ts[0]["oid"], ts[0]["files"]))
PY

refusals() { python3 - "$S/ledger.db" <<'PY'
import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("select count(*) from records where kind='refusal'").fetchone()[0])
PY
}
expect_refused() { # what
	r0=$(refusals)
	"$cs" run "$S" "$T/run.json" -q >"$T/out" 2>"$T/err"; got=$?
	[ $got = 3 ] || FAILED "$1: exit $got, expected 3: $(head -c 300 "$T/err")"
	[ "$(refusals)" -gt "$r0" ] || FAILED "$1: no refusal record"
	echo "refused ($1): $(head -c 200 "$T/err")"
}
# the clone's link pointed back at production's tablespace
ln -sfn "$T/prodts" "$T/clone/data/pg_tblspc/$oid"
expect_refused "the clone's tablespace link leads to production's tablespace"
# ... or at a copy made by hand, which is not the folder the clone made (its marker says which)
cp -a "$tsc" "$T/bycopy"
ln -sfn "$T/bycopy" "$T/clone/data/pg_tblspc/$oid"
expect_refused "the clone's tablespace link leads to a folder the clone did not make"
grep -q "does not lead to the folder its clone marker names" "$T/err" ||
	FAILED "the copy's refusal does not name the clone marker: $(cat "$T/err")"
ln -sfn "$tsc" "$T/clone/data/pg_tblspc/$oid"
# a tablespace folder that is production
python3 - "$T/study.json" "$T/study2.json" "$T/clone/data.tblspc" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["production"]["paths"].append(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
PY
"$cs" study register "$S" "$T/study2.json" --amend --rationale "the tablespace's folder is production" >"$T/out" 2>&1 ||
	FAILED "study amendment: $(cat "$T/out")"
expect_refused "a tablespace that is production"
[ "$(find "$T/prodts" -type f -exec md5sum {} + | sort | md5sum)" = "$prod_ts_sum" ] ||
	FAILED "production's tablespace changed"
"$cs" log verify "$S" >"$T/out" 2>&1 || FAILED "log verify: $(tail -3 "$T/out")"
[ $fail = 0 ] && echo "ok: a cluster with a tablespace cloned, run cold, production tablespaces refused"
exit $fail
