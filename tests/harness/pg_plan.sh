#!/bin/sh
# A PostgreSQL study's plan at validate (issue 32 item 6), on a real cluster
# made by initdb (never started): can-fail takes serial Merge Append against
# a fan-out that lists the partitions as the mode's own difference; a SET
# in postgres.session and postgres.shared_buffers are each one factor
# (postgres.session:hnsw.ef_search, postgres.shared_buffers) that the tags
# ef<N> and sb<size> stand for, so hypotheses on ef_search and
# shared_buffers pass as confirmatory, and "ef20" is a tag a postgres run
# may carry; a pair that also differs in another SET is refused (exit 3)
# with a finding that names that SET, and one serial-against-fan-out pair
# whose fan-out covers the partitions differently is still named by
# partitions when the serial side lists them too; validate's eviction
# check covers the clone's base/ and global/ (a sample of the relation
# files, evicted and proven non-resident), not only its top-level files.
# Skips (77) without root, the postgres user or the server binaries.
set -u
cs=${COLDSTUDY:?}
[ "$(id -u)" = 0 ] || { echo "needs root (initdb runs as postgres)"; exit 77; }
id postgres >/dev/null 2>&1 || { echo "no postgres user"; exit 77; }
command -v python3 >/dev/null 2>&1 || exit 77
B=$(pg_config --bindir 2>/dev/null)
[ -x "$B/initdb" ] || B=/usr/lib/postgresql/15/bin
[ -x "$B/initdb" ] || { echo "PostgreSQL server binaries missing"; exit 77; }
export COLDSTUDY_PG_BINDIR="$B"

T=$(mktemp -d /var/tmp/cs-pgplan-XXXXXX)
chmod 755 "$T"
export COLDSTUDY_PRODUCTION_REGISTRY="$T/registry.json"
trap 'rm -rf "$T"' EXIT INT TERM
fail=0
FAILED() { echo "FAIL: $*"; fail=1; }

mkdir -p "$T/prod"
chown postgres "$T/prod"
runuser -u postgres -- "$B/initdb" -D "$T/prod/data" -A trust -U postgres >"$T/initdb.log" 2>&1 ||
	{ echo "FAIL: initdb: $(tail -3 "$T/initdb.log")"; exit 1; }
python3 - "$T" <<'PY'
import struct, sys
t = sys.argv[1]
for name, n in (("base", 64), ("queries", 8)):
    with open(f"{t}/{name}.fvecs", "wb") as f:
        for i in range(n):
            f.write(struct.pack("<i", 4) + struct.pack("<4f", i, i + 1, i + 2, i + 3))
PY

spec() { # file mode session shared_buffers tags extra
	cat > "$T/$1" <<J
{"target":"postgres","index":"$T/clone/data",
 "postgres":{"port":5733,"vector_text":"pgvector",
             "sql":"SELECT id FROM items ORDER BY v <-> \$1::vector LIMIT 10",
             "partition_sql":"SELECT id, v <-> \$1::vector FROM items_{p} ORDER BY v <-> \$1::vector LIMIT 10",
             "session":[$3],"shared_buffers":"$4"},
 "queries":{"spec":"queries","count":4},"base":"base","k":10,
 "cold":true,"cold_each_query":true,"mode":"$2","tags":[$5],"hypotheses":["H1","H2","H3","H4","H5"]$6}
J
}
EF40='"SET enable_seqscan = off","SET hnsw.ef_search = 40"'
EF20='"SET enable_seqscan = off","SET hnsw.ef_search TO 20"'
PARTS=',"fanout":4,"partitions":[0,1,2,3,4,5,6,7]'
spec serial.json serial "$EF40" 128MB '"pg"' ""
spec fanout.json fanout "$EF40" 128MB '"pg"' "$PARTS"
spec ef20.json serial "$EF20" 128MB '"pg","ef20"' ""
spec sb16.json serial "$EF40" 16MB '"pg","sb16MB"' ""
# ef_search halved, and enable_seqscan changed beside it: not one factor
spec ef20-seq.json serial '"SET enable_seqscan = on","SET hnsw.ef_search = 20"' 128MB '"pg","ef20","seqscan"' ""
# a serial run that names the partitions it reads: a fan-out over other partitions differs in them
spec serial-p4.json serial "$EF40" 128MB '"pg","p4"' ',"partitions":[0,1,2,3]'

hyp() { # id metric treatment-tags baseline-tags
	cat > "$T/$1.json" <<J
{"id":"$1","title":"$1","statement":"$1 on PostgreSQL","kind":"confirmatory","metric":"$2","unit":"x",
 "prediction":{"value":1.5,"band95":[1.1,3]},
 "accept":{"cmp":{"left":{"ratio":[{"agg":"median","metric":"$2","select":{"tags":[$3]}},
                                  {"agg":"median","metric":"$2","select":{"tags":[$4]}}]},"op":">=","right":1.1}},
 "reject":{"cmp":{"left":{"ratio":[{"agg":"median","metric":"$2","select":{"tags":[$3]}},
                                  {"agg":"median","metric":"$2","select":{"tags":[$4]}}]},"op":"<","right":1.0}}}
J
}
hyp H1 lat_mean_ms '"pg","serial"' '"pg","fanout"'
hyp H2 reads_per_query '"pg","ef40"' '"pg","ef20"'
hyp H3 lat_mean_ms '"pg","sb128MB"' '"pg","sb16MB"'
hyp H4 reads_per_query '"pg","ef40"' '"pg","ef20"'
hyp H5 lat_mean_ms '"pg","serial"' '"pg","fanout"'

cat > "$T/study.json" <<J
{"id":"pgplan","production":{"paths":["$T/prod/data"]},
 "datasets":{"base":"fvecs:$T/base.fvecs","queries":"fvecs:$T/queries.fvecs"},
 "indexes":{"items":{"kind":"postgres","source":"$T/prod/data","clone":"$T/clone/data"}},
 "scratch_dir":"$T/scratch",
 "plan":{"design":["serial.json","fanout.json","ef20.json","sb16.json","ef20-seq.json","serial-p4.json"],
  "hypotheses":{"H1":{"runs":["serial.json","fanout.json"]},
                "H2":{"runs":["serial.json","ef20.json"]},
                "H3":{"runs":["serial.json","sb16.json"]},
                "H4":{"runs":["serial.json","ef20-seq.json"]},
                "H5":{"runs":["serial-p4.json","fanout.json"]}}}}
J
S=$T/S
"$cs" init "$S" >/dev/null || exit 1
"$cs" register "$S" "$T/H1.json" "$T/H2.json" "$T/H3.json" "$T/H4.json" "$T/H5.json" >"$T/out" 2>&1 ||
	{ echo "FAIL: register: $(cat "$T/out")"; exit 1; }
"$cs" study register "$S" "$T/study.json" >"$T/out" 2>&1 || { echo "FAIL: study register: $(cat "$T/out")"; exit 1; }
"$cs" clone "$T/prod/data" "$T/clone/data" --study "$S" >"$T/out" 2>&1 || { echo "FAIL: clone: $(cat "$T/out")"; exit 1; }

"$cs" validate "$S" --json --allow-no-device-stats >"$T/val.json" 2>"$T/val.err"
got=$?
[ $got = 3 ] || FAILED "validate: exit $got, expected 3 (H4 and H5 refused): $(cat "$T/val.err")"
python3 - "$T/val.json" "$T/clone/data" <<'PY' || fail=1
import json, sys
recs = {r["check"]: r for r in json.load(open(sys.argv[1]))}
bad = 0
def check(ok, what):
    global bad
    if not ok:
        print("FAIL: " + what)
        bad = 1
for h in ("H1", "H2", "H3"):
    r = recs["can-fail:" + h]
    check(r["passed"] and not r["detail"]["findings"], "%s: can-fail %s" % (h, r["detail"]["findings"]))
    c = r["detail"]["contrasts"]
    check(len(c) == 1 and c[0]["reaches_metric"], "%s: its contrast %s" % (h, c))
f4 = recs["can-fail:H4"]["detail"]["findings"]
check(not recs["can-fail:H4"]["passed"] and any("postgres.session:enable_seqscan" in f for f in f4) and
      not any("hnsw.ef_search" in f for f in f4), "H4's findings name enable_seqscan alone: %s" % f4)
f5 = recs["can-fail:H5"]["detail"]["findings"]
check(not recs["can-fail:H5"]["passed"] and any("differ in partitions" in f for f in f5),
      "H5's findings name the partitions: %s" % f5)
for r in recs.values():
    check("device" not in " ".join(r.get("detail", {}).get("findings", []) if isinstance(r.get("detail"), dict) else []),
          "a can-fail finding blames the device: %s" % r)
print("can-fail: H1-H3 pass; H4: %s; H5: %s" % (f4, f5))
ev = recs["eviction"]
files = [f["path"] for f in ev["detail"]["files"]]
clone = sys.argv[2]
check(ev["passed"], "eviction failed: %s" % [f for f in ev["detail"]["files"] if f.get("resident") or f.get("error")])
base = [p for p in files if "/base/" in p]
glob = [p for p in files if "/global/" in p]
sampled = list(ev["detail"]["clusters"].values())[0]
check(len(base) >= 16 and len(glob) >= 16, "eviction covers base/ %d and global/ %d files" % (len(base), len(glob)))
check(sampled["base/"]["of"] > sampled["base/"]["evicted"] >= 16, "base/ sample %s" % sampled)
check(all(f.get("resident") == 0 for f in ev["detail"]["files"] if "/base/" in f["path"]), "base/ files resident")
print("eviction: base/ %s, global/ %s" % (sampled["base/"], sampled["global/"]))
sys.exit(bad)
PY
[ $fail = 0 ] && echo "ok: serial against fan-out, ef_search and shared_buffers factors, their refusals, eviction of base/ and global/"
exit $fail
