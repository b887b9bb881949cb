#!/bin/sh
# Issue 16 finding 7, the samplers: `run show --series` prints a run's
# iostat / memory / Prometheus series (table, --csv, --json, and every
# scraped sample with --series prometheus); a sampler that fails (nothing
# listening, HTTP 404, an HTML page instead of metrics) is counted in the
# run record's "samplers" and said on stderr; with samplers.fatal the
# first failed sample stops the load and the run is not recorded (exit 1,
# a deviation names it).
set -u
. "$(dirname "$0")/common.sh"
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT INT TERM
setup_study "synth:n=6000,d=32,clusters=16,seed=1" 8
mkdir -p "$T/www"
printf '# TYPE coldstudy_test_gauge gauge\ncoldstudy_test_gauge 7\nother{a="b c"} 3\n' > "$T/www/metrics"
printf '<html><body><h1>node exporter</h1><a href="/metrics">Metrics</a></body></html>\n' > "$T/www/index.html"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$T/www" >/dev/null 2>&1 &
pid=$!
i=0
while ! python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/metrics')" 2>/dev/null; do
	i=$((i + 1)); [ $i -gt 50 ] && { echo "FAIL: the metrics server did not start"; exit 1; }
	sleep 0.1
done
fail=0
spec() { # file url [extra] [query_count]
	printf '{"index":"%s","queries":{"spec":"synth:n=40,d=32,clusters=16,seed=7"},"cold":true,"query_count":%s,"buffers_bytes":1048576,"samplers":{"iostat_s":0.05,"memory_s":0.05,"prometheus_s":0.05,"prometheus_url":"%s"%s}}' "$T/clone" "${4:-40}" "$2" "${3:-}" > "$T/$1"
}
spec good.json "http://127.0.0.1:$port/metrics"
spec e404.json "http://127.0.0.1:$port/nothing-here"
spec html.json "http://127.0.0.1:$port/index.html"
# (100,000 queries: half an hour here, unless the first failed scrape stops the load)
spec fatal.json "http://127.0.0.1:$port/nothing-here" ',"fatal":true' 100000

# A healthy run: nothing failed, nothing said.
"$cs" run "$S" "$T/good.json" --no-progress >/dev/null 2>"$T/good.err" || { echo "FAIL: good run"; cat "$T/good.err"; exit 1; }
if grep -q "sampler" "$T/good.err"; then echo "FAIL: a healthy run warned: $(cat "$T/good.err")"; fail=1; fi
"$cs" run show "$S" R0001 --series > "$T/series.txt" || { echo "FAIL: run show --series"; fail=1; }
for b in "iostat:" "memory:" "prometheus:"; do
	grep -q "^$b" "$T/series.txt" || { echo "FAIL: no $b block in run show --series"; cat "$T/series.txt"; fail=1; }
done
"$cs" run show "$S" R0001 --series --csv > "$T/series.csv" || { echo "FAIL: --series --csv"; fail=1; }
"$cs" run show "$S" R0001 --series --json > "$T/series.json" || { echo "FAIL: --series --json"; fail=1; }
"$cs" run show "$S" R0001 --series prometheus --json > "$T/prom.json" || { echo "FAIL: --series prometheus"; fail=1; }
"$cs" run show "$S" R0001 --json > "$T/rec.json" || { echo "FAIL: run show --json"; fail=1; }
python3 - "$T" "$S/ledger.db" <<'PY' || fail=1
import csv, json, sqlite3, sys
T, db = sys.argv[1], sys.argv[2]
bad = 0
rec = json.load(open(T + "/rec.json"))
con = sqlite3.connect(db)
def blob(name):
    (b,) = con.execute("select body from raw where sha=?", (rec["raw"][name],)).fetchone()
    return json.loads(b)
rows = json.load(open(T + "/series.json"))
for name in ("iostat", "memory", "prometheus"):
    mine = [r for r in rows if r["series"] == name]
    kept = blob(name)
    if len(mine) != len(kept) or not mine:
        print("FAIL: %s: %d rows shown, %d kept" % (name, len(mine), len(kept))); bad = 1
    elif any(abs(a["t_s"] - b["t_s"]) > 1e-9 for a, b in zip(mine, kept)):
        print("FAIL: %s: t_s differ from the raw blob" % name); bad = 1
io = [r for r in rows if r["series"] == "iostat"]
if sum(r["reads"] for r in io) <= 0 and rec["device_stats"]["available"]:
    print("FAIL: the iostat series saw no reads"); bad = 1
c = list(csv.DictReader(open(T + "/series.csv")))
if len(c) != len(rows) or "series" not in c[0] or "r_s" not in c[0] or "rss_bytes" not in c[0]:
    print("FAIL: the CSV is not the JSON's rows (%d vs %d, columns %s)" % (len(c), len(rows), list(c[0]))); bad = 1
prom = json.load(open(T + "/prom.json"))
g = [r for r in prom if r.get("metric") == "coldstudy_test_gauge"]
scrapes = len([r for r in rows if r["series"] == "prometheus"])
if len(g) != scrapes or any(r["value"] != 7 for r in g):
    print("FAIL: --series prometheus: %d gauge rows for %d scrapes" % (len(g), scrapes)); bad = 1
if not any(r.get("metric") == 'other{a="b c"}' and r["value"] == 3 for r in prom):
    print("FAIL: the labelled sample is not there"); bad = 1
s = rec["samplers"]
if s["failed"] != 0 or s["prometheus"]["tries"] != scrapes or s["fatal"] is not False:
    print("FAIL: healthy samplers counted as %s" % s); bad = 1
print("R0001: %d iostat, %d memory, %d prometheus rows; %d scraped samples" %
      (len(io), len([r for r in rows if r["series"] == "memory"]), scrapes, len(prom)))
sys.exit(bad)
PY

# Failing samplers: the run completes, the failures are counted and said.
for f in e404 html; do
	"$cs" run "$S" "$T/$f.json" --no-progress >/dev/null 2>"$T/$f.err" || { echo "FAIL: $f run exit $?"; cat "$T/$f.err"; fail=1; }
	grep -q "sampler prometheus failed" "$T/$f.err" || { echo "FAIL: $f: no word on stderr"; cat "$T/$f.err"; fail=1; }
done
grep -q "HTTP 404" "$T/e404.err" || { echo "FAIL: the 404 is not named"; fail=1; }
grep -q "no Prometheus sample" "$T/html.err" || { echo "FAIL: the HTML page is not named"; fail=1; }
for r in R0002 R0003; do
	"$cs" run show "$S" $r --json > "$T/$r.json" || fail=1
	python3 - "$T/$r.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
p = r["samplers"]["prometheus"]
if r["status"] != "complete" or p["failed"] < 2 or p["failed"] != p["tries"] or r["samplers"]["failed"] < p["failed"]:
    print("FAIL: %s: samplers %s" % (r["run_id"], r["samplers"])); sys.exit(1)
print("%s: prometheus failed %d of %d (%s)" % (r["run_id"], p["failed"], p["tries"], p["last_error"]))
PY
done

# samplers.fatal: no run record, exit 1, a deviation naming the run.
t0=$(date +%s)
"$cs" run "$S" "$T/fatal.json" --no-progress >/dev/null 2>"$T/fatal.err"; rc=$?
t1=$(date +%s)
[ $((t1 - t0)) -lt 60 ] || { echo "FAIL: the fatal sampler did not stop the load ($((t1 - t0)) s)"; fail=1; }
[ $rc = 1 ] || { echo "FAIL: a fatal sampler failure exited $rc"; cat "$T/fatal.err"; fail=1; }
grep -q "samplers.fatal" "$T/fatal.err" || { echo "FAIL: fatal not said"; cat "$T/fatal.err"; fail=1; }
python3 - "$S/ledger.db" <<'PY' || fail=1
import json, sqlite3, sys
rows = [(k, json.loads(p)) for k, p in sqlite3.connect(sys.argv[1]).execute("select kind, payload from records order by seq")]
if any(k == "run" and p["run_id"] == "R0004" for k, p in rows):
    print("FAIL: the fatal run has a run record"); sys.exit(1)
d = [p for k, p in rows if k == "deviation" and p.get("run_id") == "R0004"]
if len(d) != 1 or "samplers.fatal" not in d[0]["because"] or "HTTP 404" not in d[0]["because"]:
    print("FAIL: deviations for R0004: %s" % d); sys.exit(1)
print("R0004: %s" % d[0]["because"])
PY
"$cs" run show "$S" R0004 --series >/dev/null 2>&1; rc=$?
[ $rc = 5 ] || { echo "FAIL: --series of a run with no record exited $rc"; fail=1; }
"$cs" run show "$S" R0001 --series bogus >/dev/null 2>&1; rc=$?
[ $rc = 2 ] || { echo "FAIL: --series bogus exited $rc"; fail=1; }
"$cs" log verify "$S" >/dev/null || { echo "FAIL: log verify"; fail=1; }
exit $fail
