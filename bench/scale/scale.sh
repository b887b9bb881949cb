#!/bin/sh
# How cost grows with n (issue 17 item 5): HNSW and HFresh built and queried
# through the shipped `coldstudy` CLI on synth N x 128 at each N, one build
# and one query job a point. Prints one JSON line a point and, at the end,
# the fitted exponent b of cost = a * n^b (least squares on logs) per
# figure. QPS is at a fixed recall: each index is swept (`index sweep`, HNSW
# over ef, HFresh over its search probe) and the point's QPS is that of the
# smallest setting whose recall@10 reaches RECALL (default 0.95); the whole
# sweep is kept in OUTDIR/sweep-KIND-N.jsonl. CPU time (user + system, from wait4's rusage) is the figure to
# read on a shared machine; wall time is printed beside it. index_rss_mb is
# the query process's index_rss_kb (the index's own anonymous resident memory:
# what opening it and the passes added, datasets and page cache excluded).
#
#   bench/scale/scale.sh build/cli/coldstudy OUTDIR "250000 1000000 4000000" [KINDS]
#
# KINDS: "hnsw hfresh" by default. Query: 1,000 synth queries of the same
# clusters, k 10, HNSW ef 10..640, HFresh search probe 1..48 (every one to 8; its default
# rescoring), --warmup 1 --repeat 3 a setting; ground truth by exact search
# (cached in OUTDIR).
set -eu
CS=$1 OUT=$2 NS=$3 KINDS=${4:-hnsw hfresh}
RECALL=${RECALL:-0.95}
mkdir -p "$OUT"
export COLDSTUDY_CACHE="$OUT/cache"
res="$OUT/points.jsonl"
: > "$res"
timed() { # out-json-file command...: run it, write {"wall_s","cpu_s","maxrss_kb"} of the child
	f=$1; shift
	python3 - "$f" "$@" <<'PY'
import json, os, resource, subprocess, sys, time
t0 = time.monotonic()
p = subprocess.Popen(sys.argv[2:], stdout=subprocess.PIPE)
out, _ = p.communicate()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # the one child, waited for
wall = time.monotonic() - t0
if p.returncode:
    sys.exit("failed: %s" % " ".join(sys.argv[2:]))
json.dump({"wall_s": wall, "out": out.decode(), "ru_cpu_s": ru.ru_utime + ru.ru_stime, "ru_maxrss_kb": ru.ru_maxrss}, open(sys.argv[1], "w"))
PY
}
for n in $NS; do
	# queries: 1,000 more rows of the same generator (the same clusters); another
	# seed draws other cluster centres, queries no base point is near
	data="synth:n=$((n + 1000)),d=128,clusters=256,seed=7[0:$n]"
	queries="synth:n=$((n + 1000)),d=128,clusters=256,seed=7[$n:$((n + 1000))]"
	for kind in $KINDS; do
		dir="$OUT/$kind-$n"
		rm -rf "$dir"
		extra=""
		[ "$kind" = hnsw ] && extra="--m 16 --ef-construction 200"
		# shellcheck disable=SC2086
		timed "$OUT/b.json" "$CS" index build --kind "$kind" --data "$data" --metric l2 --threads 2 $extra --out "$dir" -q --json
		if [ "$kind" = hnsw ]; then
			sweep="--ef-search 10,15,20,30,40,60,80,120,160,240,320,480,640"
		else
			sweep="--search-probe 1,2,3,4,5,6,7,8,10,12,16,24,32,48"
		fi
		# shellcheck disable=SC2086
		timed "$OUT/q.json" "$CS" index sweep "$dir" --queries "$queries" --data "$data" --k 10 $sweep --warmup 1 --repeat 3 --json
		python3 - "$OUT/b.json" "$OUT/q.json" "$kind" "$n" "$dir" "$RECALL" "$OUT/sweep-$kind-$n.jsonl" >> "$res" <<'PY'
import json, os, sys
b = json.load(open(sys.argv[1])); q = json.load(open(sys.argv[2]))
rows = [json.loads(l) for l in q["out"].splitlines() if l.strip()]
with open(sys.argv[7], "w") as f:
    f.write("".join(json.dumps(r) + "\n" for r in rows))
target = float(sys.argv[6])
knob = "ef_search" if sys.argv[3] == "hnsw" else "search_probe"
hit = [r for r in sorted(rows, key=lambda r: r[knob]) if r["recall_at_k"] >= target]
top = max(rows, key=lambda r: r["recall_at_k"])
size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(sys.argv[5]) for f in fs)
n = int(sys.argv[4])
print(json.dumps({"kind": sys.argv[3], "n": n, "build_wall_s": round(b["wall_s"], 2),
                  "build_cpu_s": round(b["ru_cpu_s"], 2), "build_maxrss_mb": round(b["ru_maxrss_kb"] / 1024, 1),
                  "index_mb": round(size / 2**20, 1), "vectors_mb": round(n * 128 * 4 / 2**20, 1),
                  "recall_target": target, "knob": knob,
                  # None where no setting of the sweep reaches the target (its best is kept)
                  "setting": hit[0][knob] if hit else None,
                  "qps": round(hit[0]["qps"], 1) if hit else None,
                  "recall": round(hit[0]["recall_at_k"], 4) if hit else None,
                  "best_recall": round(top["recall_at_k"], 4), "best_setting": top[knob],
                  "query_maxrss_mb": round(q["ru_maxrss_kb"] / 1024, 1)}))
PY
		tail -1 "$res"
		[ "${KEEP:-0}" = 1 ] || rm -rf "$dir"
	done
done
python3 - "$res" <<'PY'
import json, math, sys
pts = [json.loads(l) for l in open(sys.argv[1])]
for kind in sorted({p["kind"] for p in pts}):
    ps = sorted((p for p in pts if p["kind"] == kind), key=lambda p: p["n"])
    if len(ps) < 2:
        continue
    for fig in ("build_cpu_s", "build_wall_s", "build_maxrss_mb", "index_mb", "query_maxrss_mb",
                "qps"):
        xs = [math.log(p["n"]) for p in ps if p.get(fig)]; ys = [math.log(p[fig]) for p in ps if p.get(fig)]
        if len(xs) < 2:
            continue
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        print("%s %s%s: exponent %.2f over n = %s" % (kind, fig, " at recall %.2f" % ps[0]["recall_target"]
              if fig == "qps" else "", b, [p["n"] for p in ps if p.get(fig)]))
PY
