#!/bin/sh
# Virtual time and the treatment knobs, end to end through `coldstudy run`:
# a hdd-pool run replayed in virtual time records the device's figures
# beside the real ones; prewarm of this query's blocks removes most device
# reads in the replay and prewarm of another query's does not, and the
# prewarm's own reads are timed apart (prewarm_s, modelled); competing
# readers, bulk writes and client placement are each recorded; in virtual
# time competing readers and bulk writes are modelled in the device's
# queues and slow the replayed reads; the refused combinations say why
# (exit 5). Skips (77) while the phnsw kind is not built.
set -u
. "$(dirname "$0")/common.sh"
fail=0
base="synth:n=4000,d=32,clusters=16,seed=1"
setup_study "$base" 4
spec() { # name json-body
	printf '{"index":"%s","queries":{"spec":"%s","first":0,"count":4},"cold":true,"k":10,%s}' \
		"$T/clone" "synth:n=40,d=32,clusters=16,seed=7" "$2" > "$T/$1.json"
}
runit() { # want name -> sets id
	"$cs" run "$S" "$T/$2.json" --no-progress >"$T/out" 2>"$T/err"; got=$?
	[ "$got" = "$1" ] || { echo "FAIL: run $2: exit $got, expected $1: $(cat "$T/err")"; fail=1; }
}
# The modelled runs register their seeds, so the comparisons below see the same draws on
# every machine (an unseeded run draws from a hash of its run id and spec, which holds the
# temporary path).
spec virt '"partitions":[0],"device":"hdd-pool","seed":101,"device_time":"virtual","tags":["virtual"]'
spec pw '"partitions":[0],"device":"hdd-pool","seed":102,"device_time":"virtual","prewarm":{"of":"self"},"tags":["prewarm"]'
spec pwo '"partitions":[0],"device":"hdd-pool","seed":103,"device_time":"virtual","prewarm":{"of":"other","offset":20},"tags":["prewarm-other"]'
spec load '"partitions":[0],"device":"sata-ssd","load":{"readers":2},"tags":["load"]'
spec bw '"partitions":[0],"bulkwrite":{"max_bytes":16777216,"sync_bytes":4194304},"tags":["bulkwrite"]'
spec alt '"partitions":[0],"client_cpus":[0],"tags":["client-alt"]'
spec bad1 '"device_time":"virtual"'
spec vload '"partitions":[0],"device":"hdd-pool","seed":104,"device_time":"virtual","load":{"readers":4},"tags":["vload"]'
spec vbw '"partitions":[0],"device":"hdd-pool","seed":105,"device_time":"virtual","bulkwrite":{"sync_bytes":8388608},"tags":["vbulkwrite"]'
spec bad2 '"device":"hdd-pool","device_time":"virtual","prewarm":{"of":"self"},"clients":2'
spec bad3 '"device":"hdd-pool","prewarm":{"of":"self"}'
spec bad4 '"client_cpus":[1023]'
for r in virt pw pwo load bw alt vload vbw; do runit 0 $r; done
for r in bad1 bad2 bad3 bad4; do runit 5 $r; done
grep -q 'client_cpus' "$T/err" || { echo "FAIL: cpu message: $(cat "$T/err")"; fail=1; }
"$cs" log verify "$S" >/dev/null || { echo "FAIL: log verify"; fail=1; }
python3 - "$S/ledger.db" <<'PY' || fail=1
import json, sqlite3, sys
runs = {}
for (p,) in sqlite3.connect(sys.argv[1]).execute("select payload from records where kind='run' order by seq"):
    r = json.loads(p)
    runs[(r.get("labels") or r["tags"])[0]] = r  # the spec's own tags; "tags" are derived
bad = []
v = runs["virtual"]
m, mr = v["metrics"], v["metrics_real"]
if v["device_time"] != "virtual" or v["features"]["device_time"] != "virtual": bad.append("virtual not marked")
# hdd-pool reads average ~39 ms; this machine's reads are far faster
if not (5 < m["engine_read_ms_mean"] < 200): bad.append("virtual read ms %s" % m["engine_read_ms_mean"])
if not m["wall_s"] > 5 * mr["wall_s"]: bad.append("virtual wall %s vs real %s" % (m["wall_s"], mr["wall_s"]))
if m["engine_reads"] != mr["engine_reads"]: bad.append("reads differ")
if m["device_reads"] is not None: bad.append("virtual run claims device counters")
if not (0.5 < m["io_over_wall"] <= 1.0001): bad.append("virtual io_over_wall %s" % m["io_over_wall"])
if abs(m["qps"] - m["queries"] / m["wall_s"]) > 1e-6 * m["qps"]: bad.append("qps")
pw, pwo = runs["prewarm"], runs["prewarm-other"]
if pw["virtual"]["prewarm_hit_reads"] < 0.9 * pw["metrics"]["engine_reads"]: bad.append("prewarm hits %s of %s" % (pw["virtual"]["prewarm_hit_reads"], pw["metrics"]["engine_reads"]))
if not pwo["metrics"]["wall_s"] > 3 * pw["metrics"]["wall_s"]: bad.append("prewarm-other %s vs prewarm %s" % (pwo["metrics"]["wall_s"], pw["metrics"]["wall_s"]))
if pw["treatments"]["prewarm"]["of"] != "self" or pwo["features"]["prewarm"] != "other": bad.append("prewarm record")
# the prewarm's own cost (issue 14, H18): its blocks read one at a time, replayed on hdd-pool in
# virtual time (about 39 ms a block), the real disk's figure beside it; none without a prewarm
ps, psr = pw["metrics"]["prewarm_s"], pw["metrics_real"]["prewarm_s"]
nb = pw["treatments"]["prewarm"]["blocks_mean"] * pw["metrics"]["queries"]
if ps is None or not (0.5 < ps / (nb * 0.0393) < 2): bad.append("prewarm_s %s for %s blocks" % (ps, nb))
if psr is None or not (0 < psr < ps / 5): bad.append("prewarm_s real %s vs modelled %s" % (psr, ps))
if m.get("prewarm_s") is not None: bad.append("prewarm_s %s in a run without prewarm" % m.get("prewarm_s"))
ld = runs["load"]["treatments"]["load"]
if ld["readers"] != 2 or ld["reads"] <= 0 or not ld["through_model"]: bad.append("load %s" % ld)
bw = runs["bulkwrite"]["treatments"]["bulkwrite"]
if bw["bytes_written"] <= 0 or not bw["removed"]: bad.append("bulkwrite %s" % bw)
vl, vb = runs["vload"], runs["vbulkwrite"]
l = vl["treatments"]["load"]
if not (l["through_model"] and l["device_time"] == "virtual" and l["readers"] == 4 and l["reads"] > 0): bad.append("virtual load %s" % l)
w = vb["treatments"]["bulkwrite"]
if not (w["through_model"] and w["device_time"] == "virtual" and w["bytes_written"] > 0): bad.append("virtual bulkwrite %s" % w)
# one partition's few queries: a noisy mean, so only a clear rise is asked (the unit test has the 1.2x)
if not vl["metrics"]["engine_read_ms_mean"] > m["engine_read_ms_mean"]: bad.append("virtual load did not slow reads: %s vs %s" % (vl["metrics"]["engine_read_ms_mean"], m["engine_read_ms_mean"]))
if not vb["metrics"]["engine_read_ms_mean"] > m["engine_read_ms_mean"]: bad.append("virtual bulkwrite did not slow reads: %s vs %s" % (vb["metrics"]["engine_read_ms_mean"], m["engine_read_ms_mean"]))
cp = runs["client-alt"]["client_placement"]
if cp["clients"] != [[0]]: bad.append("placement %s" % cp)
print("\n".join("FAIL: " + b for b in bad) or "ok")
sys.exit(1 if bad else 0)
PY
exit $fail
