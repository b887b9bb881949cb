#!/bin/sh
# The report over real harness records: a small phnsw index, a serial cold
# run on the hdd-pool device model and a fan-out run, then `coldstudy
# report`; the tables carry each run's recorded metrics (formatted as the
# report formats them), the per-device table and the latency strips count
# the raw per-query rows, and the report is byte-identical twice.
# Skips (77) while the phnsw kind is not built.
set -u
cs=${COLDSTUDY:?}; bi=${BUILD_INDEX:?}
command -v python3 >/dev/null 2>&1 || exit 77
T=$(mktemp -d /var/tmp/cs-report-real-XXXXXX); trap 'rm -rf "$T"' EXIT INT TERM
base="synth:n=3000,d=32,clusters=16,seed=1"
queries="synth:n=20,d=32,clusters=16,seed=7"
"$bi" phnsw "$base" "$T/src" 4; rc=$?
[ $rc = 77 ] && { echo "phnsw not built yet"; exit 77; }
[ $rc = 0 ] || { echo "FAIL: build exit $rc"; exit 1; }
cat > "$T/study.json" <<J
{"id":"report-real","production":{"paths":["$T/src"],"hosts":["pg-prod-1"]},
 "datasets":{"base":"$base","queries":"$queries"},
 "indexes":{"p":{"kind":"phnsw","dataset":"base","source":"$T/src","clone":"$T/clone"}},
 "scratch_dir":"$T/scratch","defaults":{"k":10,"strategy":"pread","samplers":{"iostat_s":0.2,"memory_s":0.2}}}
J
printf '{"index":"%s","queries":{"spec":"queries","first":0,"count":8},"cold":true,"device":"hdd-pool","tags":["cold","serial"]}' "$T/clone" > "$T/serial.json"
printf '{"index":"%s","queries":{"spec":"queries","first":0,"count":8},"cold":true,"mode":"fanout","fanout":4,"tags":["cold","fanout"]}' "$T/clone" > "$T/fan.json"
{ "$cs" init "$T/S" && "$cs" study register "$T/S" "$T/study.json" && "$cs" clone "$T/src" "$T/clone" --study "$T/S" &&
  "$cs" validate "$T/S" --allow-no-device-stats && "$cs" run "$T/S" "$T/serial.json" --no-progress &&
  "$cs" run "$T/S" "$T/fan.json" --no-progress; } >"$T/log" 2>&1 || { echo "FAIL: study: $(tail -5 "$T/log")"; exit 1; }
{ "$cs" report "$T/S" --out "$T/R1" && "$cs" report "$T/S" --out "$T/R2"; } >"$T/log" 2>&1 ||
	{ echo "FAIL: report: $(tail -5 "$T/log")"; exit 1; }
diff -r "$T/R1" "$T/R2" >/dev/null || { echo "FAIL: two reports differ"; exit 1; }
"$cs" log export "$T/S" > "$T/export"
# each run's memory samples, for the figure's one line a run of three samples or more
for id in $("$cs" runs "$T/S" --jsonl | python3 -c 'import json,sys; [print(json.loads(l)["run_id"]) for l in sys.stdin]'); do
	"$cs" run show "$T/S" "$id" --series memory --jsonl | wc -l
done > "$T/memrows"
python3 - "$T/R1" "$T/export" "$T/memrows" <<'PY'
import json, math, sys
R, ex, memrows = sys.argv[1:]
md = open(R + "/report.md").read()
svg = open(R + "/read-latency.svg").read()
runs = [r["payload"] for r in map(json.loads, open(ex)) if r["kind"] == "run"]
def fmt(x):  # what report_fmt_num prints, for the cases used here
    if x is None: return "n/a"
    if float(x).is_integer(): return "{:,}".format(int(x))
    mag = math.floor(math.log10(abs(x))); dec = max(0, 3 - mag)
    s = "%.*f" % (dec, x)
    if "." in s: s = s.rstrip("0").rstrip(".")
    i, _, f = s.partition(".")
    return "{:,}".format(int(i)) + ("." + f if f else "")
bad = 0
if len(runs) != 2:
    print("FAIL: %d runs" % len(runs)); sys.exit(1)
for r in runs:
    m = r["metrics"]
    row = "| %s | %s | %s | %s | %s |" % (r["run_id"], fmt(m["wall_s"]), fmt(m["queries"]),
                                         fmt(m["engine_reads"]), fmt(m["device_reads"]))
    if row not in md:
        print("FAIL: Table 5 lacks %r" % row); bad = 1
    if m["engine_reads"] == 0:
        print("FAIL: run %s read nothing" % r["run_id"]); bad = 1
for dev in ("hdd-pool (n=8)", "host device (n=8)"):
    if dev not in svg:
        print("FAIL: read-latency.svg lacks %r" % dev); bad = 1
if "| hdd-pool | 1 |" not in md or "Serial against fan-out." not in md:
    print("FAIL: device or fan-out table missing"); bad = 1
# how each run's numbers were made, from its record's device_time
for r in runs:
    want = {"virtual": "virtual time", "realtime": "modelled real time", None: "real disk"}[r.get("device_time")]
    if "| %s | " % r["run_id"] not in md or ("| %s | exploratory | %s |" % (r["run_id"], want)) not in md:
        print("FAIL: run %s is not marked %r" % (r["run_id"], want)); bad = 1
# the samplers' memory series is plotted, one line per run with three samples or more (issue 27:
# fewer carry no shape), from the raw table; with none, a sentence says so
import os, re
mem = R + "/series-memory.svg"
want = sum(1 for n in open(memrows).read().split() if int(n) >= 3)
if want and not os.path.exists(mem):
    print("FAIL: no series-memory.svg"); bad = 1
elif want:
    lines = re.findall(r"<polyline", open(mem).read())
    if len(lines) != want:
        print("FAIL: series-memory.svg draws %d lines, expected one per run with 3+ samples (%d)" % (len(lines), want)); bad = 1
elif "Memory over time: no run on record has this sampler's series with three samples or more" not in md:
    print("FAIL: no memory figure and no sentence saying why"); bad = 1
sys.exit(bad)
PY
rc=$?
# the report of real runs in headless Chromium: no console message, not too tall
if [ $rc = 0 ] && command -v chromium >/dev/null 2>&1; then
	python3 "${COLDSTUDY_SRC:?}/tests/report/chromium_check.py" "$T/R1/report.html" --max-height 9000 \
		--shot "${REPORT_ARTEFACTS:-$T}/report-real-runs.png" || rc=1
fi
[ $rc = 0 ] && echo "ok: report over real runs"
exit $rc
