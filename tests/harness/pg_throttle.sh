#!/bin/sh
# A PostgreSQL run on a kernel IOPS cap (issue 32, "runs also on a kernel
# IOPS cap"), on the pg-cube study's cluster (contrib cube GiST, 4 hash
# partitions), cloned and run cold, serial:
#   - under "riops=300" the postmaster is in the throttle's cgroup while it
#     runs (its backends follow), the throttle passed at least the bytes of
#     the run's pg_statio blocks read (every block the server read passed
#     the cap; its count of requests can be lower, readahead making one
#     request of several blocks), and the requests it passed, over the
#     queries' wall, are at most 300 x 1.1 a second;
#   - the same run under "uncapped" (the same cgroup, no limit) is faster;
#   - no throttle cgroup is left after either, nor after a capped run
#     killed with SIGKILL once the next command on the study has run.
# Skips (77) without root, the postgres user, the server binaries or cube,
# and where the block throttle is missing (as harness-throttle does).
. "$(dirname "$0")/pg_common.sh"
src=${COLDSTUDY_SRC:?}
pg_ext cube "contrib cube missing"

pg_tmp cs-pgt
PORT=5861
RPORT=5862
CAP=300
V1=/sys/fs/cgroup/blkio
bg=""
left() { # pid: the throttle cgroups that process made, if still there
	ls -d "$V1/coldstudy-throttle-$1-"* /sys/fs/cgroup/coldstudy-throttle-"$1"-* \
		/sys/fs/cgroup/unified/coldstudy-throttle-"$1"-* 2>/dev/null
}
cleanup() {
	[ -n "$bg" ] && kill -9 "$bg" 2>/dev/null
	# a server a killed run left: its postmaster.pid names it
	for d in "$T/prod/data" "$T/clone/data"; do
		[ -f "$d/postmaster.pid" ] &&
			runuser -u postgres -- "$B/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1
	done
	for p in $(cat "$T"/pid* 2>/dev/null); do
		for c in $(left "$p"); do rmdir "$c" 2>/dev/null; done
	done
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

# the throttle's controller and a block device under the scratch folder, or skip
head -c 4194304 /dev/urandom > "$T/f" || exit 1
sh -c 'echo $$ > "$1"; exec "$2" probe "$3" --qd 1 --reads 10 --throttle uncapped' sh \
	"$T/pid0" "$cs" "$T/f" > "$T/cap.out" 2> "$T/cap.err"
rc=$?
if [ $rc = 5 ] && grep -q "no writable block-throttle controller\|no block device to throttle" "$T/cap.err"; then
	echo "skip: $(cat "$T/cap.err")"
	exit 77
fi
[ $rc = 0 ] || { echo "FAIL: uncapped probe exit $rc: $(cat "$T/cap.err")"; exit 1; }
rm -f "$T/f"

sh "$src/studies/pg-cube/make_cluster.sh" "$B" "$T" $PORT >"$T/make.log" 2>&1 ||
	{ echo "FAIL: making the production cluster: $(tail -5 "$T/make.log")"; exit 1; }
S=$T/S
"$cs" init "$S" >/dev/null || exit 1
cat > "$T/study.json" <<J
{"id":"pgt","production":{"paths":["$T/prod/data"],"sockets":["$T/prodsock"],"ports":[$PORT]},
 "datasets":{"base":"fvecs:$T/base.fvecs","queries":"fvecs:$T/queries.fvecs"},
 "indexes":{"items":{"kind":"postgres","source":"$T/prod/data","clone":"$T/clone/data"}},
 "scratch_dir":"$T/scratch"}
J
"$cs" study register "$S" "$T/study.json" >/dev/null || { echo "FAIL: study register"; exit 1; }
"$cs" clone "$T/prod/data" "$T/clone/data" --study "$S" >"$T/out" 2>&1 ||
	{ echo "FAIL: clone: $(cat "$T/out")"; exit 1; }
"$cs" validate "$S" --quiet --allow-no-device-stats >"$T/out" 2>&1 ||
	{ echo "FAIL: validate: $(tail -5 "$T/out")"; exit 1; }

SQL="SELECT id FROM items ORDER BY v <-> cube(\$1::float8[]) LIMIT 10"
runspec() { # file throttle count
	cat > "$1" <<J
{"target":"postgres","index":"$T/clone/data",
 "postgres":{"port":$RPORT,"sql":"$SQL","session":["SET enable_seqscan = off"],
             "shared_buffers":"16MB"},
 "queries":{"spec":"queries","count":$3},"base":"base","k":10,"cold":true,
 "throttle":"$2"}
J
}
check() { # what run-id python-condition-over-r (the record), m its metrics, t its throttle
	python3 - "$S/ledger.db" "$2" "$3" <<'PY' || FAILED "$1: $3"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
r = [json.loads(p) for (p,) in db.execute("select payload from records where kind='run'") if json.loads(p)["run_id"] == sys.argv[2]]
assert r, "no run record %s" % sys.argv[2]
r = r[0]
m, t = r["metrics"], r.get("throttle") or {}
ok = eval(sys.argv[3])
if not ok:
    print("  metrics: %s; throttle: %s; statio %s" % ({k: m.get(k) for k in ("engine_reads", "engine_iops", "wall_s", "queries")}, t, r["postgres"]["statio_blocks_read"]))
sys.exit(0 if ok else 1)
PY
}
rec() { # run-id python-expression-over-r
	python3 - "$S/ledger.db" "$1" "$2" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for (p,) in db.execute("select payload from records where kind='run'"):
    r = json.loads(p)
    if r["run_id"] == sys.argv[2]:
        m, t = r["metrics"], r.get("throttle") or {}
        print(eval(sys.argv[3]))
PY
}

# ---- capped: the postmaster in the throttle's cgroup, every read through the cap ----
runspec "$T/cap.json" "riops=$CAP" 5
sh -c 'echo $$ > "$1"; exec "$2" run "$3" "$4" -q' sh "$T/pid1" "$cs" "$S" "$T/cap.json" \
	>"$T/cap.id" 2>"$T/err" &
bg=$!
seen=""
for _ in $(seq 1 600); do
	pm=$(head -1 "$T/clone/data/postmaster.pid" 2>/dev/null)
	cg=$(left "$(cat "$T/pid1" 2>/dev/null)" | head -1)
	if [ -n "$pm" ] && [ -n "$cg" ] && grep -qx "$pm" "$cg/cgroup.procs" 2>/dev/null; then
		seen=$(wc -l < "$cg/cgroup.procs")
		break
	fi
	kill -0 $bg 2>/dev/null || break
	sleep 0.05
done
wait $bg
rc=$?
bg=""
[ $rc = 0 ] || { echo "FAIL: capped run exit $rc: $(cat "$T/err")"; exit 1; }
c=$(cat "$T/cap.id")
[ -n "$seen" ] || FAILED "the postmaster was never seen in the throttle's cgroup"
[ -n "$seen" ] && echo "capped run $c: the postmaster and $((seen - 1)) more of its processes in the throttle's cgroup"
[ -z "$(left "$(cat "$T/pid1")")" ] || FAILED "throttle cgroup left after a capped run: $(left "$(cat "$T/pid1")")"
check "the cap recorded" "$c" 't["riops"] == '$CAP' and t["cgroup"].find("coldstudy-throttle-") >= 0'
# Every block pg_statio counts as read reached the server through the cap: the clone was
# proven cold and only the server reads it, so the throttle passed at least those bytes. Its
# count of requests can be lower than pg_statio's blocks: the kernel's readahead makes one
# request of several blocks, and the blocks it brought are page-cache reads to PostgreSQL.
check "the throttle passed every block the server read (bytes >= pg_statio's blocks x block size)" "$c" \
	't["throttle_bytes"] >= r["postgres"]["statio_blocks_read"] * r["postgres"]["block_size"] > 0 and t["throttle_reads"] > 0'
# The throttle counts the whole run's requests (every cold restart's catalog
# and recovery reads too), so its rate is taken over the run's span, from
# started to ended, not over the queries' wall alone (setup excluded).
check "requests/s over the run's span under the cap ($CAP x 1.1)" "$c" \
	't["throttle_reads"] / (lambda d: (d(r["ended"]) - d(r["started"])).total_seconds())(__import__("datetime").datetime.fromisoformat) <= '$CAP' * 1.1'

# ---- the same, uncapped: the same cgroup and counters, faster ----
runspec "$T/free.json" "uncapped" 5
sh -c 'echo $$ > "$1"; exec "$2" run "$3" "$4" -q' sh "$T/pid2" "$cs" "$S" "$T/free.json" \
	>"$T/free.id" 2>"$T/err" || { echo "FAIL: uncapped run: $(cat "$T/err")"; exit 1; }
u=$(cat "$T/free.id")
[ -z "$(left "$(cat "$T/pid2")")" ] || FAILED "throttle cgroup left after an uncapped run"
check "uncapped: every block through the (unlimited) throttle" "$u" \
	't["riops"] is None and t["throttle_bytes"] >= r["postgres"]["statio_blocks_read"] * r["postgres"]["block_size"] > 0'
cw=$(rec "$c" 'm["wall_s"]')
check "uncapped is faster than capped ($cw s)" "$u" "m['wall_s'] < $cw"
say() { # run-id label
	echo "$2 $(rec "$1" 'r["postgres"]["statio_blocks_read"]') blocks read (pg_statio, 5 queries), $(rec "$1" 'round(m["engine_iops"], 1)') blocks/s, wall $(rec "$1" 'round(m["wall_s"], 3)') s; the throttle passed $(rec "$1" 't["throttle_reads"]') requests ($(rec "$1" 'round(t["throttle_reads"] / m["wall_s"], 1)')/s over the wall), $(rec "$1" 't["throttle_bytes"]') bytes"
}
say "$c" "riops=$CAP:"
say "$u" "uncapped: "

# ---- a capped run killed with SIGKILL: the next command removes its throttle cgroup ----
runspec "$T/long.json" "riops=$CAP" 40
sh -c 'echo $$ > "$1"; exec "$2" run "$3" "$4" -q' sh "$T/pid3" "$cs" "$S" "$T/long.json" \
	>/dev/null 2>"$T/kerr" &
bg=$!
cg=""
for _ in $(seq 1 600); do
	pm=$(head -1 "$T/clone/data/postmaster.pid" 2>/dev/null)
	cg=$(left "$(cat "$T/pid3" 2>/dev/null)" | head -1)
	[ -n "$pm" ] && [ -n "$cg" ] && grep -qx "$pm" "$cg/cgroup.procs" 2>/dev/null && break
	cg=""
	sleep 0.05
done
if [ -z "$cg" ]; then
	FAILED "the long capped run's server never joined the throttle: $(cat "$T/kerr")"
	kill -9 $bg 2>/dev/null
	wait $bg 2>/dev/null
	bg=""
else
	kill -9 $bg
	wait $bg 2>/dev/null
	bg=""
	[ -d "$cg" ] || FAILED "the killed run's throttle cgroup was already gone (nothing to show)"
	"$cs" runs "$S" >"$T/out" 2>"$T/err" || FAILED "runs after the kill: $(cat "$T/err")"
	[ -d "$cg" ] && FAILED "the next command left the killed run's throttle cgroup $cg ($(cat "$cg/cgroup.procs" | wc -l) processes in it)"
	[ -d "$cg" ] || echo "a capped run killed with SIGKILL: its throttle cgroup removed by the next command"
fi

"$cs" log verify "$S" >"$T/out" 2>&1 || FAILED "log verify: $(tail -3 "$T/out")"
[ $fail = 0 ] && echo "ok: a postgres run under a kernel IOPS cap"
exit $fail
