#!/bin/sh
# ann-benchmarks data: an HDF5 file with train, test, neighbors and
# distances, made here with h5py, read as hdf5:FILE[:member]; the same
# vectors hash as they do from .npy; `neighbors` serves as ground truth
# (index query --gt hdf5:FILE) and gives the recall the computed truth
# gives; bad files and members are exit 5; study register accepts the
# spec. Recall is never made of a truth of another base: in every metric
# an index over the first rows queried with the whole file's neighbours
# (hdf5 or ivecs) is exit 5 naming both sizes, never a recall. The file's
# `distance` is the default metric and one that disagrees is exit 5;
# float neighbours are exit 5 naming the member and its type, int64 ones
# are read; a relative --data is kept absolute in DIR/DATA.
# Skips (77) without h5py or when built without libhdf5.
set -u
cs=${COLDSTUDY:?}
py=""
for p in python3 /usr/bin/python3; do
	"$p" -c 'import h5py, numpy' 2>/dev/null && { py=$p; break; }
done
[ -n "$py" ] || { echo "no python3 with h5py (Debian: python3-h5py)"; exit 77; }
T=$(mktemp -d /var/tmp/cs-hdf5-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
export COLDSTUDY_CACHE="$T/cache"
fail=0
no() { echo "FAIL: $*"; fail=1; }
"$py" - "$T" <<'PY' || { echo "FAIL: making the test files"; exit 1; }
import sys, h5py, numpy as np
T = sys.argv[1]
rng = np.random.default_rng(7)
train = rng.normal(size=(300, 8)).astype(np.float32)
test = rng.normal(size=(12, 8)).astype(np.float32)
d2 = ((test[:, None, :].astype(np.float64) - train[None, :, :]) ** 2).sum(-1)
nb = np.argsort(d2, axis=1, kind="stable")[:, :10].astype(np.int32)
with h5py.File(T + "/ab.hdf5", "w") as f:
    f.attrs["distance"] = "euclidean"
    f["train"] = train; f["test"] = test; f["neighbors"] = nb
    f["distances"] = np.sqrt(np.take_along_axis(d2, nb, 1)).astype(np.float32)
np.save(T + "/train.npy", train)
with h5py.File(T + "/f64.hdf5", "w") as f:
    f["train"] = train.astype(np.float64)
bad = train.copy(); bad[5, 3] = np.nan
with h5py.File(T + "/nan.hdf5", "w") as f:
    f["train"] = bad
with h5py.File(T + "/flat.hdf5", "w") as f:
    f["train"] = train[:, 0]
open(T + "/not.hdf5", "wb").write(b"not an hdf5 file at all\n" * 10)
# one file per metric (the neighbours by l2 serve the refusal cases alike)
for name, dist in (("ang", "angular"), ("dot", "dot")):
    with h5py.File(T + "/" + name + ".hdf5", "w") as f:
        f.attrs["distance"] = dist
        f["train"] = train; f["test"] = test; f["neighbors"] = nb
with h5py.File(T + "/nbf64.hdf5", "w") as f:
    f.attrs["distance"] = "euclidean"
    f["train"] = train; f["test"] = test; f["neighbors"] = nb.astype(np.float64)
with h5py.File(T + "/nbi64.hdf5", "w") as f:
    f.attrs["distance"] = "euclidean"
    f["train"] = train; f["test"] = test; f["neighbors"] = nb.astype(np.int64)
with open(T + "/nb.ivecs", "wb") as f:
    for row in nb:
        np.array([len(row)], np.int32).tofile(f); row.astype(np.int32).tofile(f)
PY
out=$("$cs" data info "hdf5:$T/ab.hdf5" --json 2>"$T/err"); rc=$?
if [ $rc != 0 ] && grep -q "without libhdf5" "$T/err"; then echo "built without libhdf5"; exit 77; fi
[ $rc = 0 ] || { echo "FAIL: data info hdf5: exit $rc: $(cat "$T/err")"; exit 1; }
sha=$("$cs" data info "npy:$T/train.npy" --json | "$py" -c 'import json,sys; print(json.load(sys.stdin)["sha256"])')
echo "$out" | "$py" -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["n"]==300 and d["d"]==8 and d["sha256"]==sys.argv[1] else 1)' "$sha" ||
	no "hdf5 train is not the npy's vectors: $out"
"$cs" data info "hdf5:$T/f64.hdf5" --json | "$py" -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["sha256"]==sys.argv[1] else 1)' "$sha" ||
	no "float64 train not converted to the same float32 vectors"
"$cs" data info "hdf5:$T/ab.hdf5:test" --json | grep -q '"n":12' || no "test member"
"$cs" data info "hdf5:$T/ab.hdf5:neighbors" --json | grep -q '"d":10' || no "neighbors member"
for bad in "$T/none.hdf5" "$T/not.hdf5" "$T/nan.hdf5" "$T/flat.hdf5" "$T/ab.hdf5:distances:x"; do
	"$cs" data info "hdf5:$bad" >/dev/null 2>"$T/err"; rc=$?
	[ $rc = 5 ] || no "hdf5:$bad: exit $rc, expected 5: $(cat "$T/err")"
	[ "$(wc -l < "$T/err")" = 1 ] || no "hdf5:$bad: not one line: $(cat "$T/err")"
done
grep -q "not finite" "$T/err" 2>/dev/null || true
"$cs" data info "hdf5:$T/nan.hdf5" 2>&1 | grep -q "row 5 column 3: value NaN" || no "NaN not located"
"$cs" index build --kind hnsw --data "hdf5:$T/ab.hdf5" --metric l2 --out "$T/ix" -q >/dev/null || no "index build from hdf5"
r1=$("$cs" index query "$T/ix" --queries "hdf5:$T/ab.hdf5:test" --gt "hdf5:$T/ab.hdf5" --k 10 --json | "$py" -c 'import json,sys; print(json.loads(sys.stdin.read())["recall_at_k"])') || no "query with hdf5 neighbors"
r2=$("$cs" index query "$T/ix" --queries "hdf5:$T/ab.hdf5:test" --k 10 --json | "$py" -c 'import json,sys; print(json.loads(sys.stdin.read())["recall_at_k"])') || no "query with computed truth"
[ -n "$r1" ] && [ "$r1" = "$r2" ] || no "recall against the file's neighbors ($r1) differs from the computed truth's ($r2)"
"$py" -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 0.9 else 1)' "${r1:-0}" || no "recall $r1 < 0.9"
"$cs" init "$T/S" >/dev/null || no init
mkdir -p "$T/prod"
printf '{"id":"h","production":{"paths":["'"$T/prod"'"]},"datasets":{"base":"hdf5:%s/ab.hdf5:train","q":"hdf5:%s/ab.hdf5:test"}}' "$T" "$T" > "$T/study.json"
"$cs" study register "$T/S" "$T/study.json" >/dev/null 2>"$T/err" || no "study register with hdf5 datasets: $(cat "$T/err")"
# the percentiles, one definition: p50 <= p90 <= p95 <= p99 <= p99.9 in index query's output
"$cs" index query "$T/ix" --queries "hdf5:$T/ab.hdf5:test" --k 10 --repeat 3 --json | "$py" -c '
import json, sys
d = json.load(sys.stdin)
p = [d[k] for k in ("lat_p50_ms", "lat_p90_ms", "lat_p95_ms", "lat_p99_ms", "lat_p999_ms")]
sys.exit(0 if p == sorted(p) and p[0] > 0 and d["lat_samples"] == 36 else 1)' || no "index query percentiles p50..p99.9"
# the truth of another base: exit 5 naming both sizes, nothing on stdout, in every metric
for m in l2:ab cosine:ang ip:dot; do
	metric=${m%%:*} f=$T/${m#*:}.hdf5
	"$cs" index build --kind hnsw --data "hdf5:$f[0:100]" --metric "$metric" --out "$T/ix-$metric" -q >/dev/null ||
		no "index build over hdf5:$f[0:100] --metric $metric"
	for gt in "hdf5:$f" "$T/nb.ivecs"; do
		"$cs" index query "$T/ix-$metric" --queries "hdf5:$f:test" --gt "$gt" --k 10 --json >"$T/out" 2>"$T/err"; rc=$?
		[ $rc = 5 ] || no "$metric: --gt $gt of a 300-row base on a 100-row index: exit $rc, expected 5: $(cat "$T/out" "$T/err")"
		[ -s "$T/out" ] && no "$metric: --gt $gt: printed a result: $(cat "$T/out")"
		grep -q "100" "$T/err" && grep -q "30[0-9]\|29[0-9]\|2[0-9][0-9]" "$T/err" ||
			no "$metric: --gt $gt: the message names not both sizes: $(cat "$T/err")"
		[ "$(wc -l < "$T/err")" = 1 ] || no "$metric: --gt $gt: not one line: $(cat "$T/err")"
	done
done
grep -q "base of 300 rows" "$T/err" 2>/dev/null || true
"$cs" index query "$T/ix-l2" --queries "hdf5:$T/ab.hdf5:test" --gt "hdf5:$T/ab.hdf5" --k 10 2>&1 | grep -q "300 rows.*100" ||
	no "hdf5 truth's base size (300) and the index's (100) not both named"
# the file's distance: the default metric, and a different --metric is refused
"$cs" index build --kind hnsw --data "hdf5:$T/ang.hdf5" --out "$T/ix-ang" -q --json >"$T/out" 2>"$T/err" ||
	no "index build without --metric from an angular file: $(cat "$T/err")"
grep -q '"metric":"cosine"' "$T/out" || no "angular file did not give cosine: $(cat "$T/out")"
"$cs" index build --kind hnsw --data "hdf5:$T/ang.hdf5" --metric l2 --out "$T/ix-ang2" -q >/dev/null 2>"$T/err"; rc=$?
[ $rc = 5 ] && grep -q "angular" "$T/err" && grep -q "l2" "$T/err" ||
	no "angular file with --metric l2: exit $rc: $(cat "$T/err")"
[ -e "$T/ix-ang2" ] && [ -n "$(ls "$T/ix-ang2")" ] && no "refused build left files in $T/ix-ang2"
"$cs" index query "$T/ix-l2" --queries "hdf5:$T/ang.hdf5:test" >/dev/null 2>"$T/err"; rc=$?
[ $rc = 5 ] && grep -q "angular" "$T/err" || no "angular queries on an l2 index: exit $rc: $(cat "$T/err")"
"$cs" index build --kind hnsw --data "hdf5:$T/f64.hdf5" --out "$T/ix-nodist" -q >/dev/null 2>"$T/err"; rc=$?
[ $rc = 5 ] && grep -q "distance" "$T/err" || no "file without distance and no --metric: exit $rc: $(cat "$T/err")"
# neighbours must be integer: float64 refused naming the member and type, int64 read
"$cs" index query "$T/ix" --queries "hdf5:$T/ab.hdf5:test" --gt "hdf5:$T/nbf64.hdf5" >/dev/null 2>"$T/err"; rc=$?
[ $rc = 5 ] && grep -q "'neighbors' is float64; expected an integer type" "$T/err" ||
	no "float64 neighbours: exit $rc: $(cat "$T/err")"
r3=$("$cs" index query "$T/ix" --queries "hdf5:$T/ab.hdf5:test" --gt "hdf5:$T/nbi64.hdf5" --k 10 --json | "$py" -c 'import json,sys; print(json.loads(sys.stdin.read())["recall_at_k"])') || no "int64 neighbours"
[ "$r3" = "$r1" ] || no "int64 neighbours' recall $r3 differs from int32's $r1"
# a relative --data is kept absolute: the index answers from another directory
mkdir -p "$T/rel" && cp "$T/ab.hdf5" "$T/rel/" &&
	(cd "$T/rel" && "$cs" index build --kind hnsw --data "hdf5:ab.hdf5[0:200]" --out ix -q >/dev/null) ||
	no "build with a relative --data"
grep -qx "hdf5:$(cd "$T/rel" && pwd -P)/ab.hdf5\[0:200\]" "$T/rel/ix/DATA" || no "DATA not absolute: $(cat "$T/rel/ix/DATA")"
(cd / && "$cs" index query "$T/rel/ix" --queries "hdf5:$T/ab.hdf5:test" --k 10 --json) | grep -q '"recall_at_k":[01]' ||
	no "query from / of an index built with a relative --data"
echo "fvecs:nowhere/x.fvecs" > "$T/rel/ix/DATA"
"$cs" index query "$T/rel/ix" --queries "hdf5:$T/ab.hdf5:test" >/dev/null 2>"$T/err"; rc=$?
[ $rc = 5 ] && grep -q "$T/rel/ix/DATA" "$T/err" || no "a DATA that names no file: exit $rc: $(cat "$T/err")"
[ $fail = 0 ] || exit 1
echo "ok: hdf5 train/test/neighbors read, same hash as npy, neighbors as ground truth (recall $r1), bad files exit 5, another base's truth exit 5 in every metric, distance checked, integer neighbours, absolute DATA"
