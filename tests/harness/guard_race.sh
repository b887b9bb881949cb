#!/bin/sh
# The check-then-use race, attacked: a swapper flips a symlink (atomically,
# by rename) between a clone C and production P, and another renames
# directories under it, while `run`, `clone` and `cache evict` are started
# RACE_N times each (default 200) through the flipping name. Afterwards:
# no run read P (each completed run's record names the inode it read, and
# it is C's), P's bytes are unchanged, P is still resident (>= 0.99), and
# nothing was written inside P.
set -u
cs=${COLDSTUDY:?}
bi=${BUILD_INDEX:?}
N=${RACE_N:-200}
command -v python3 >/dev/null 2>&1 || exit 77
T=$(mktemp -d /var/tmp/cs-grace-XXXXXX)
export COLDSTUDY_PRODUCTION_REGISTRY="$T/registry.json"
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
fail=0
base="synth:n=3000,d=16,clusters=8,seed=1"
queries="synth:n=10,d=16,clusters=8,seed=7"
mkdir -p "$T/w"
"$bi" phnsw "$base" "$T/w/P" 4 >/dev/null; rc=$?
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || { echo "FAIL: build exit $rc"; exit 1; }
"$cs" init "$T/S" >/dev/null || exit 1
cat > "$T/study.json" <<J
{"id":"race","production":{"paths":["../w/P"]},"datasets":{"base":"$base","queries":"$queries"},
 "indexes":{"p":{"kind":"phnsw","dataset":"base","source":"../w/P","clone":"../w/C"}},
 "scratch_dir":"../w/scratch"}
J
"$cs" study register "$T/S" "$T/study.json" >/dev/null || { echo "FAIL: study register"; exit 1; }
"$cs" clone "$T/w/P" "$T/w/C" --study "$T/S" >/dev/null || { echo "FAIL: clone"; exit 1; }
"$cs" validate "$T/S" --quiet --allow-no-device-stats || { echo "FAIL: validate"; exit 1; }
mkdir "$T/w/B"
ln -s "$T/w/C" "$T/L"    # runs and evictions go through L
ln -s "$T/w/B" "$T/D"    # clones go through D (into B, or into P)
printf '{"index":"%s","queries":{"spec":"queries","first":0,"count":1},"cold":true}' "$T/L" > "$T/run.json"
sum_p() { (cd "$T/w" && find P -type f ! -name '.*' -print0 | sort -z | xargs -0 sha256sum); }
sum_p > "$T/before.sha"
c_ino=$(stat -c %i "$T/w/C")

# The swappers: L and D flip between their benign target and P by atomic
# rename; a third moves directories under names the flipping links use.
( while :; do
	ln -sfn "$T/w/P" "$T/L.n" && mv -T "$T/L.n" "$T/L"
	ln -sfn "$T/w/C" "$T/L.n" && mv -T "$T/L.n" "$T/L"
done ) & pids="$pids $!"
( while :; do
	ln -sfn "$T/w/P" "$T/D.n" && mv -T "$T/D.n" "$T/D"
	ln -sfn "$T/w/B" "$T/D.n" && mv -T "$T/D.n" "$T/D"
done ) & pids="$pids $!"
mkdir "$T/w/R"
ln -s "$T/w/R/x" "$T/M"   # M/KIND: sometimes C's, sometimes P's, sometimes nothing
( while :; do
	ln -sfn "$T/w/C" "$T/w/R/x" 2>/dev/null
	mv -T "$T/w/R/x" "$T/w/R/y" 2>/dev/null
	ln -sfn "$T/w/P" "$T/w/R/x" 2>/dev/null
	mv -T "$T/w/R/y" "$T/w/R/x" 2>/dev/null
done ) & pids="$pids $!"

# P warm: every refused attempt must leave it so.
find "$T/w/P" -type f -exec cat {} + > /dev/null
ok_run=0; ref_run=0; ok_cl=0; ref_cl=0; ok_ev=0; ref_ev=0; other=0
i=0
while [ $i -lt "$N" ]; do
	"$cs" run "$T/S" "$T/run.json" --no-progress >/dev/null 2>"$T/err"
	case $? in 0) ok_run=$((ok_run + 1)) ;; 3) ref_run=$((ref_run + 1)) ;;
		*) other=$((other + 1)); echo "run $i: $(head -c 300 "$T/err")" ;; esac
	"$cs" clone "$T/w/C" "$T/D/c$i" >/dev/null 2>"$T/err"
	case $? in 0) ok_cl=$((ok_cl + 1)); rm -rf "$T/w/B/c$i" ;; 3) ref_cl=$((ref_cl + 1)) ;;
		*) other=$((other + 1)); echo "clone $i: $(head -c 300 "$T/err")" ;; esac
	"$cs" cache evict "$T/L/KIND" "$T/M/KIND" >/dev/null 2>"$T/err"
	case $? in 0) ok_ev=$((ok_ev + 1)) ;; 3) ref_ev=$((ref_ev + 1)) ;;
		5) ok_ev=$((ok_ev + 1)) ;;  # M/KIND missing at that instant: nothing done
		*) other=$((other + 1)); echo "evict $i: $(head -c 300 "$T/err")" ;; esac
	i=$((i + 1))
done
for p in $pids; do kill "$p" 2>/dev/null; done
wait 2>/dev/null
pids=""
echo "run: $ok_run completed, $ref_run refused; clone: $ok_cl made, $ref_cl refused; evict: $ok_ev done, $ref_ev refused; other exits: $other"
[ $other = 0 ] || fail=1
[ $ok_run -gt 0 ] && [ $ref_run -gt 0 ] || { echo "FAIL: the race did not exercise both sides of run"; fail=1; }
[ $ok_cl -gt 0 ] && [ $ref_cl -gt 0 ] || { echo "FAIL: the race did not exercise both sides of clone"; fail=1; }
# Every completed run read C (by inode), never P.
python3 - "$T/S/ledger.db" "$c_ino" <<'PY' || fail=1
import json, sqlite3, sys
rows = [json.loads(p) for (p,) in sqlite3.connect(sys.argv[1]).execute(
    "select payload from records where kind='run'")]
bad = [r["run_id"] for r in rows if r["index"]["ino"] != int(sys.argv[2])]
print(f"{len(rows)} run records, {len(bad)} read another inode than the clone's")
sys.exit(1 if bad else 0)
PY
sum_p > "$T/after.sha"
cmp -s "$T/before.sha" "$T/after.sha" || { echo "FAIL: P's bytes changed"; fail=1; }
extra=$(find "$T/w/P" -mindepth 1 -name 'c[0-9]*' | head -3)
[ -z "$extra" ] || { echo "FAIL: a clone landed inside P: $extra"; fail=1; }
"$cs" cache residency $(find "$T/w/P" -type f) --json > "$T/res.json" 2>/dev/null
python3 - "$T/res.json" <<'PY' || fail=1
import json, sys
rows = json.load(open(sys.argv[1]))
pages = sum(r["pages"] for r in rows); res = sum(r["resident"] for r in rows)
print(f"P residency after the race: {res / pages:.4f}")
sys.exit(0 if res / pages >= 0.99 else 1)
PY
exit $fail
