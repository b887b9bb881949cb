#!/bin/sh
# A PostgreSQL target's knobs and leftovers (issue 32, items 5 and 6), on
# the pg-cube study's cluster (contrib cube GiST, 4 hash partitions):
#   - a running cluster cloned with --pg-socket and no --pg-port uses the
#     port its server registered (postmaster.pid), not 5432;
#   - repeat and warmup_queries: each repeat its own metrics (cold again
#     between them), the run's their means, rows tagged by repeat;
#   - replicates: one run record a replicate, one group;
#   - inflight_median / inflight_max from the block device's reads in
#     flight, and mem_peak_bytes from the server's own memory cgroup, not
#     null (the cgroup holds the postmaster: checked while it runs);
#   - postgres.prewarm (pg_prewarm of "all indexes") cuts the blocks read
#     from disk against the same run without it, timed as prewarm_s;
#   - competing readers (load) and bulk writes (bulkwrite) beside the
#     server, recorded under treatments;
#   - a run killed with SIGKILL leaves its private socket directory and
#     server cgroup, which the next command on the study removes (and
#     records the dead run's deviation).
# Skips (77) without root, the postgres user, the server binaries or cube.
. "$(dirname "$0")/pg_common.sh"
src=${COLDSTUDY_SRC:?}
pg_ext cube "contrib cube missing"
pg_ext pg_prewarm "contrib pg_prewarm missing"

pg_tmp cs-pgk
PORT=5851
bg=""
cleanup() {
	[ -n "$bg" ] && kill -9 "$bg" 2>/dev/null
	[ -f "$T/prod/data/postmaster.pid" ] &&
		runuser -u postgres -- "$B/pg_ctl" -D "$T/prod/data" -m immediate stop >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

sh "$src/studies/pg-cube/make_cluster.sh" "$B" "$T" $PORT >"$T/make.log" 2>&1 ||
	{ echo "FAIL: making the production cluster: $(tail -5 "$T/make.log")"; exit 1; }
S=$T/S
"$cs" init "$S" >/dev/null || exit 1
cat > "$T/study.json" <<J
{"id":"pgk","production":{"paths":["$T/prod/data"],"sockets":["$T/prodsock"],"ports":[$PORT]},
 "datasets":{"base":"fvecs:$T/base.fvecs","queries":"fvecs:$T/queries.fvecs"},
 "indexes":{"items":{"kind":"postgres","source":"$T/prod/data","clone":"$T/clone/data"}},
 "scratch_dir":"$T/scratch"}
J
"$cs" study register "$S" "$T/study.json" >/dev/null || { echo "FAIL: study register"; exit 1; }

# ---- --pg-socket without --pg-port: the port the running server registered ----
pg "$B/pg_ctl" -D "$T/prod/data" -l "$T/prod/log" -w -t 60 \
	-o "-k $T/prodsock -p $PORT -c listen_addresses=''" start >/dev/null ||
	{ echo "FAIL: production start"; exit 1; }
"$cs" clone "$T/prod/data" "$T/clone/data" --study "$S" --pg-socket "$T/prodsock" >"$T/out" 2>&1 ||
	FAILED "online clone without --pg-port (production on port $PORT): $(cat "$T/out")"
grep -q "^LABEL: coldstudy clone" "$T/clone/data/backup_label" 2>/dev/null ||
	FAILED "the online clone has no backup_label"
[ -d "$T/clone/data" ] || { echo "FAIL: no clone to run on"; exit 1; }
echo "online clone with --pg-socket alone: the server's registered port $PORT used"
"$cs" validate "$S" --quiet --allow-no-device-stats >"$T/out" 2>&1 ||
	{ echo "FAIL: validate: $(tail -5 "$T/out")"; exit 1; }

SQL="SELECT id FROM items ORDER BY v <-> cube(\$1::float8[]) LIMIT 10"
runspec() { # file pg-extra run-extra
	cat > "$1" <<J
{"target":"postgres","index":"$T/clone/data",
 "postgres":{"port":5852,"sql":"$SQL","session":["SET enable_seqscan = off"],
             "shared_buffers":"64MB"$2},
 "queries":{"spec":"queries","count":3},"base":"base","k":10,"cold":true$3}
J
}
rec() { # run-id python-expression-over-r (the record): prints its value
	python3 - "$S/ledger.db" "$1" "$2" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for (p,) in db.execute("select payload from records where kind='run'"):
    r = json.loads(p)
    if r["run_id"] == sys.argv[2]:
        print(eval(sys.argv[3]))
PY
}
check() { # what run-id python-condition-over-r
	python3 - "$S/ledger.db" "$2" "$3" <<'PY' || FAILED "$1: $3"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
r = [json.loads(p) for (p,) in db.execute("select payload from records where kind='run'") if json.loads(p)["run_id"] == sys.argv[2]]
assert r, "no run record %s" % sys.argv[2]
r = r[0]
m = r["metrics"]
ok = eval(sys.argv[3])
if not ok:
    print("  metrics: %s" % {k: m.get(k) for k in ("engine_reads", "inflight_median", "inflight_max", "mem_peak_bytes", "prewarm_s", "queries", "wall_s")})
sys.exit(0 if ok else 1)
PY
}

# ---- repeat 2 with 2 warm-up queries, cold: each repeat measured on its own, cold again ----
runspec "$T/rep.json" "" ',"repeat":2,"warmup_queries":2'
r1=$("$cs" run "$S" "$T/rep.json" -q 2>"$T/err") || { echo "FAIL: repeat run: $(cat "$T/err")"; exit 1; }
check "repeat: two repeats' metrics" "$r1" 'len(r["repeats"]) == 2 and all(x["queries"] == 3 for x in r["repeats"])'
check "repeat: the run's metrics are the repeats' means" "$r1" \
	'abs(m["engine_reads"] - sum(x["engine_reads"] for x in r["repeats"]) / 2) < 1e-9 and m["queries"] == 3'
check "repeat: cold again before each repeat (and after the warm-up)" "$r1" 'r["postgres"]["restarts"] == 3'
check "repeat: the plans' blocks read equal pg_statio's over both repeats" "$r1" 'r["postgres"]["statio_agrees"]'
python3 - "$S" "$r1" "$cs" <<'PY' || FAILED "repeat: rows tagged by repeat"
import json, subprocess, sys
s, rid, cs = sys.argv[1:4]
rows = [json.loads(l) for l in subprocess.run([cs, "run", "show", s, rid, "--queries", "--jsonl"], capture_output=True, text=True, check=True).stdout.splitlines() if l.strip()]
assert sorted(r["repeat"] for r in rows) == [0, 0, 0, 1, 1, 1], rows
PY
# the server's memory and the device's queue, measured (a cold run reads from the disk)
check "mem_peak_bytes from the server's cgroup" "$r1" \
	'isinstance(m["mem_peak_bytes"], int) and m["mem_peak_bytes"] > 1 << 20 and "cgroup" in r["mem_peak"]["source"]'
if [ "$(rec "$r1" 'r["metrics"]["device_reads"]')" != None ]; then
	check "inflight_* from the block device" "$r1" \
		'm["inflight_max"] is not None and m["inflight_max"] >= 1 and m["inflight_median"] is not None and m["inflight_median"] >= 1'
	echo "repeat run $r1: inflight_median $(rec "$r1" 'r["metrics"]["inflight_median"]'), inflight_max $(rec "$r1" 'r["metrics"]["inflight_max"]'), mem_peak_bytes $(rec "$r1" 'r["metrics"]["mem_peak_bytes"]')"
else
	check "inflight_* null without a block device" "$r1" 'm["inflight_median"] is None'
	echo "no block device under $T: inflight_* null (said so)"
fi

# ---- replicates 2: a record each, one group; drawn rows labelled as read ----
runspec "$T/repl.json" "" ',"replicates":2'
sed -i 's/"queries":{"spec":"queries","count":3}/"queries":{"spec":"queries","first":2,"count":3,"draw":30}/' "$T/repl.json"
grep -q '"draw":30' "$T/repl.json" || FAILED "repl.json has no queries.draw"
out=$("$cs" run "$S" "$T/repl.json" 2>"$T/err") || FAILED "replicates run: $(cat "$T/err")"
python3 - "$S/ledger.db" <<'PY' || FAILED "replicates: two records, one group"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
runs = [json.loads(p) for (p,) in db.execute("select payload from records where kind='run'")]
reps = [r for r in runs if r["spec_file"].endswith("repl.json")]
assert [r["replicate"]["index"] for r in reps] == [1, 2], [r["replicate"] for r in reps]
assert len({r["replicate"]["group"] for r in reps}) == 1 and reps[0]["replicate"]["of"] == 2, [r["replicate"] for r in reps]
print("replicates: %s and %s, group %s" % (reps[0]["run_id"], reps[1]["run_id"], reps[0]["replicate"]["group"]))
PY
python3 - "$S" "$cs" <<'PY' || FAILED "replicates: each row labelled with the drawn query row it read"
import json, sqlite3, subprocess, sys
s, cs = sys.argv[1:]
db = sqlite3.connect(s + "/ledger.db")
runs = [json.loads(p) for (p,) in db.execute("select payload from records where kind='run'")]
reps = [r for r in runs if r["spec_file"].endswith("repl.json")]
firsts = [r["replicate"]["queries_first"] for r in reps]
assert all(2 <= f <= 2 + 30 - 3 for f in firsts) and firsts[0] != firsts[1], firsts
for r, f in zip(reps, firsts):
    rows = [json.loads(l) for l in subprocess.run([cs, "run", "show", s, r["run_id"], "--queries", "--jsonl"],
            capture_output=True, text=True, check=True).stdout.splitlines() if l.strip()]
    assert sorted(x["q"] for x in rows) == [f, f + 1, f + 2], (f, [x["q"] for x in rows])
print("drawn rows: replicate 1 reads %d-%d, replicate 2 %d-%d, as its rows say" % (firsts[0], firsts[0] + 2, firsts[1], firsts[1] + 2))
PY

# ---- prewarm: every index into shared_buffers after each cold start ----
runspec "$T/base.json" "" ',"cold_each_query":true'
runspec "$T/pw.json" ',"prewarm":["all indexes"]' ',"cold_each_query":true'
b=$("$cs" run "$S" "$T/base.json" -q 2>"$T/err") || FAILED "baseline run: $(cat "$T/err")"
p=$("$cs" run "$S" "$T/pw.json" -q 2>"$T/err") || FAILED "prewarm run: $(cat "$T/err")"
if [ -n "${b:-}" ] && [ -n "${p:-}" ]; then
	br=$(rec "$b" 'r["metrics"]["engine_reads"]')
	check "prewarm: blocks loaded, timed apart" "$p" \
		'r["postgres"]["prewarm"]["blocks"] > 0 and m["prewarm_s"] > 0 and r["postgres"]["restarts"] == 3'
	check "prewarm: fewer blocks read from disk than without ($br)" "$p" "m['engine_reads'] < $br"
	check "no prewarm: prewarm_s null" "$b" 'm["prewarm_s"] is None'
	echo "prewarm of all indexes: $(rec "$p" 'r["metrics"]["engine_reads"]') blocks read against $br without, $(rec "$p" 'r["postgres"]["prewarm"]["blocks"]') blocks prewarmed in $(rec "$p" 'round(r["metrics"]["prewarm_s"], 3)') s"
fi
# refused: prewarm on a warm run, prewarm_mode alone
runspec "$T/pwwarm.json" ',"prewarm":["all indexes"]' ''
sed -i 's/"cold":true/"cold":false/' "$T/pwwarm.json"
"$cs" run "$S" "$T/pwwarm.json" -q >"$T/out" 2>&1; got=$?
[ $got = 5 ] && grep -q "postgres.prewarm" "$T/out" || FAILED "prewarm on a warm run: exit $got: $(cat "$T/out")"
runspec "$T/pwinj.json" ',"prewarm":["items; DROP TABLE items"]' ''
"$cs" run "$S" "$T/pwinj.json" -q >"$T/out" 2>&1; got=$?
[ $got = 5 ] && grep -q "postgres.prewarm" "$T/out" || FAILED "a prewarm relation that is not a name: exit $got: $(cat "$T/out")"

# ---- competing readers and bulk writes beside the server ----
runspec "$T/load.json" "" ',"load":{"readers":2},"bulkwrite":{"max_bytes":8388608,"chunk_bytes":1048576}'
l=$("$cs" run "$S" "$T/load.json" -q 2>"$T/err") || FAILED "competing-load run: $(cat "$T/err")"
[ -n "${l:-}" ] && check "load and bulkwrite ran beside the server" "$l" \
	'r["treatments"]["load"]["reads"] > 0 and r["treatments"]["bulkwrite"]["bytes_written"] > 0 and r["features"]["load_readers"] == 2'
[ -n "${l:-}" ] && echo "competing load: $(rec "$l" 'r["treatments"]["load"]["reads"]') competing reads, $(rec "$l" 'r["treatments"]["bulkwrite"]["bytes_written"]') bytes written"

# ---- a run killed with SIGKILL: the next command removes its socket directory and cgroup ----
runspec "$T/long.json" "" ',"cold_each_query":true'
sed -i 's/"count":3/"count":40/' "$T/long.json"
"$cs" run "$S" "$T/long.json" -q >"$T/kout" 2>"$T/kerr" &
bg=$!
sockdir="" cg=""
for i in $(seq 1 300); do
	m=$(ls "$S/running" 2>/dev/null | head -1)
	if [ -n "$m" ]; then
		sockdir=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("postgres", {}).get("sockdir", ""))' "$S/running/$m" 2>/dev/null)
		cg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("postgres", {}).get("cgroup", ""))' "$S/running/$m" 2>/dev/null)
	fi
	[ -n "$sockdir" ] && [ -S "$sockdir/.s.PGSQL.5852" ] && break
	sleep 0.1
done
if [ -z "$sockdir" ] || [ ! -S "$sockdir/.s.PGSQL.5852" ]; then
	FAILED "the long run's server never came up: $(cat "$T/kerr")"
else
	if [ -n "$cg" ]; then
		n=$(wc -l < "$cg/cgroup.procs")
		[ "$n" -ge 2 ] || FAILED "the server's cgroup $cg holds $n processes (the postmaster and its children expected)"
		grep -qx "$(head -1 "$T/clone/data/postmaster.pid")" "$cg/cgroup.procs" ||
			FAILED "the postmaster is not in the server's cgroup $cg"
	fi
	kill -9 $bg
	wait $bg 2>/dev/null
	bg=""
	[ -d "$sockdir" ] || FAILED "the killed run's socket directory was already gone (nothing to show)"
	"$cs" runs "$S" >"$T/out" 2>"$T/err" || FAILED "runs after the kill: $(cat "$T/err")"
	[ -d "$sockdir" ] && FAILED "the next command left the killed run's socket directory $sockdir: $(cat "$T/err")"
	[ -n "$cg" ] && [ -d "$cg" ] && FAILED "the next command left the killed run's server cgroup $cg"
	grep -q "private socket directory .* removed" "$T/err" || FAILED "the removal was not said: $(cat "$T/err")"
	python3 - "$S/ledger.db" <<'PY' || FAILED "no deviation for the killed run"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
d = [json.loads(p) for (p,) in db.execute("select payload from records where kind='deviation'")]
assert any(x.get("cause") == "killed or crashed" for x in d), d
PY
	echo "a run killed with SIGKILL: its socket directory $sockdir and server cgroup removed by the next command"
	# the clone runs again after the killed server (its postmaster.pid is stale)
	r5=$("$cs" run "$S" "$T/rep.json" -q 2>"$T/err") || FAILED "a run on the clone after the kill: $(cat "$T/err")"
fi

"$cs" log verify "$S" >"$T/out" 2>&1 || FAILED "log verify: $(tail -3 "$T/out")"
[ $fail = 0 ] && echo "ok: repeat, warm-up, replicates, inflight and mem_peak, prewarm, competing load, killed-run leftovers, --pg-socket's port"
exit $fail
