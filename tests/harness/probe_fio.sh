#!/bin/sh
# Issue 16 findings 4 and 7, `probe --fio`: fio's whole JSON output is kept
# with the probe's record (fio_output), and the latencies set beside the
# probe's are fio's `lat` (issue to completion, the interval the probe
# times), not `clat` (which leaves the submission out). Skips without fio.
set -u
cs=${COLDSTUDY:?}
command -v fio >/dev/null 2>&1 || { echo "fio is not installed"; exit 77; }
command -v python3 >/dev/null 2>&1 || exit 77
T=$(mktemp -d /var/tmp/cs-fio-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
head -c 16777216 /dev/urandom > "$T/data"
"$cs" probe "$T/data" --qd 1 --bs 4k --reads 400 --strategy pread --fio --json > "$T/p.json" 2>"$T/p.err" ||
	{ echo "FAIL: probe --fio exit $?"; cat "$T/p.err"; exit 1; }
"$cs" probe "$T/data" --qd 1 --bs 4k --reads 200 --strategy pread --fio > "$T/p.txt" 2>&1 ||
	{ echo "FAIL: probe --fio (text)"; exit 1; }
grep -q "fio's latencies are its lat" "$T/p.txt" || { echo "FAIL: the text does not say which fio latency"; cat "$T/p.txt"; exit 1; }
# the probe's own result is still a device profile
"$cs" device show "probe:$T/p.json" >/dev/null || { echo "FAIL: probe:FILE no longer reads the result"; exit 1; }
python3 - "$T/p.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
out = p.get("fio_output")
bad = 0
if not isinstance(out, dict) or "fio version" not in out or not out.get("jobs"):
    print("FAIL: fio's output is not kept whole: %s" % (list(out) if isinstance(out, dict) else out)); sys.exit(1)
rd = out["jobs"][0]["read"]
f = p["fio"]
if f.get("latency") != "lat":
    print("FAIL: the record does not say lat: %s" % f.get("latency")); bad = 1
lat, clat = rd["lat_ns"], rd["clat_ns"]
if abs(f["lat_mean_ms"] - lat["mean"] / 1e6) > 1e-9 * max(1, lat["mean"]):
    print("FAIL: lat_mean_ms %s is not fio's lat_ns mean %s" % (f["lat_mean_ms"], lat["mean"])); bad = 1
if abs(f["lat_p50_ms"] - lat["percentile"]["50.000000"] / 1e6) > 1e-9 * max(1, lat["mean"]):
    print("FAIL: lat_p50_ms is not fio's lat_ns p50"); bad = 1
if abs(f["clat_mean_ms"] - clat["mean"] / 1e6) > 1e-9 * max(1, clat["mean"]):
    print("FAIL: clat_mean_ms is not fio's clat_ns mean"); bad = 1
if lat["mean"] < clat["mean"]:
    print("FAIL: fio's lat below its clat (%s < %s)" % (lat["mean"], clat["mean"])); bad = 1
if rd["total_ios"] < 400 or p["reads"] != 400:
    print("FAIL: reads: probe %s, fio %s" % (p["reads"], rd["total_ios"])); bad = 1
print("probe mean %.4f ms; fio lat %.4f ms (clat %.4f ms, slat %.4f ms); IOPS ratio %.3f" %
      (p["lat_mean_ms"], f["lat_mean_ms"], f["clat_mean_ms"], f["slat_mean_ms"], p["iops_ratio"]))
sys.exit(bad)
PY
