#!/bin/sh
# The demo study, end to end: the cold-query study (studies/cold-query)
# at this machine's scale, from an empty ledger to scored holdout
# predictions, verdicts, a report and a checkpoint of the log.
#
#   ./scripts/deps.sh && meson setup build --buildtype=release && ninja -C build && ./scripts/demo.sh build
#
# Usage: scripts/demo.sh [BUILD_DIR] [cold-query|disk-tier] [WORK_DIR]
#        (defaults: build, cold-query, BUILD_DIR/demo)
# The device-profile runs replay their reads in virtual time
# ("device_time": "virtual"), so the seed's hard-disk gate (minutes per
# query at ~39 ms a read) costs seconds here; competing readers and bulk
# writes are modelled in the same replay. validate's can-fail checks
# refuse a hypothesis whose runs could not have rejected it: H6 is
# registered descriptive, the others compare like with like (issue 14).
#
# Environment, for smaller runs (tests/study uses them): DEMO_BASE and
# DEMO_QUERIES (dataset specs), DEMO_PARTITIONS (default 64; holdout
# partitions 37 and 51 become 37 % P and 51 % P), DEMO_EF_CONSTRUCTION (64).
set -eu
# Which study: `demo.sh BUILD disk-tier [WORK]` runs the blog seed's study
# (scripts/demo-disk-tier.sh); `demo.sh BUILD cold-query [WORK]` or no name
# runs this one.
case "${2:-}" in
disk-tier) exec "$(dirname "$0")/demo-disk-tier.sh" "${1:-build}" ${3:+"$3"} ;;
cold-query) set -- "${1:-build}" ${3:+"$3"} ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "demo: build directory '${1:-build}' not found (meson setup build && ninja -C build)" >&2; exit 2; }
CS="$B/cli/coldstudy"
[ -x "$CS" ] || { echo "demo: $CS is not built (ninja -C $B)" >&2; exit 2; }
W=${2:-$B/demo}
BASE=${DEMO_BASE:-fashion-mnist:train}
QUERIES=${DEMO_QUERIES:-fashion-mnist:test}
P=${DEMO_PARTITIONS:-64}
EFC=${DEMO_EF_CONSTRUCTION:-64}
t_start=$(date +%s)

. "$top/scripts/demo-lib.sh"

rm -rf "$W"
mkdir -p "$W"
cp -r "$top/studies/cold-query/runs" "$W/runs"
cd "$W/runs"
S=../S
mkdir -p work
# The study's datasets and, for a smaller index, its holdout partitions.
sed -e "s|\"fashion-mnist:train\"|\"$BASE\"|" -e "s|\"fashion-mnist:test\"|\"$QUERIES\"|" \
	study.json > study.demo.json
if [ "$P" != 64 ]; then
	for f in holdout/*.json; do
		sed -i -e "s/\"partitions\": \[37\]/\"partitions\": [$((37 % P))]/" \
			-e "s/\"partitions\": \[51\]/\"partitions\": [$((51 % P))]/" \
			-e "s/\"partitions\": \[44\]/\"partitions\": [$((44 % P))]/" "$f"
	done
	sed -i "s/\"partitions\": \[12\]/\"partitions\": [$((12 % P))]/" partition-spread-p12-ssd.json
	sed -i "s/\"partitions\": \[25\]/\"partitions\": [$((25 % P))]/" partition-spread-p25-hdd.json
	for q in 58:hdd 27:ssd 29:nvme 16:hdd; do
		sed -i "s/\"partitions\": \[${q%%:*}\]/\"partitions\": [$((${q%%:*} % P))]/" \
			"partition-spread-p${q%%:*}-${q#*:}.json"
	done
	for f in sceptic/partition9-*.json; do
		sed -i "s/\"partitions\": \[9\]/\"partitions\": [$((9 % P))]/" "$f"
	done
fi

step "build the production stand-in: phnsw over $BASE, $P partitions, m 16, ef_construction $EFC"
t0=$(date +%s)
"$CS" index build --kind phnsw --data "$BASE" --metric l2 --partitions "$P" --m 16 \
	--ef-construction "$EFC" --out work/prod-index
echo "built in $(( $(date +%s) - t0 )) s"

step "create the study; register H1..H10 (H6 descriptive) and the study spec with its plan (frozen at the first run)"
# study.json's paths are resolved against the study folder, and production must exist:
# the stand-in is registered (by device and inode) in the production registry, which
# every verb on this machine checks. The demo keeps its own registry, so deleting the
# demo folder leaves nothing behind in /var/lib/coldstudy.
export COLDSTUDY_PRODUCTION_REGISTRY="${COLDSTUDY_PRODUCTION_REGISTRY:-$W/production-registry.json}"
"$CS" init "$S"
hyps=""
for i in 1 2 3 4 5 6 7 8 9 10; do hyps="$hyps $top/studies/cold-query/hypotheses/H$i.json"; done
# shellcheck disable=SC2086
"$CS" register "$S" $hyps
# the plan (study.json "plan"): design runs, the runs deciding each hypothesis, the sceptic
# runs, the holdout targets and the scoring rule (threshold 0.35, the seed's); every run spec
# it names is hashed now
"$CS" study register "$S" study.demo.json
"$CS" production list

step "clone it (runs never touch production) and validate (each hypothesis must be able to fail: can-fail:Hn)"
"$CS" clone work/prod-index work/clone --study "$S"
validate_study

step "design runs"
# the plan's design runs, in its order (study.json is the one list)
# shellcheck disable=SC2046
run_specs run $(python3 -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1]))["plan"]["design"]))' study.demo.json)

step "sceptic runs (the plan's attempts to refute H1, H2, H5, H7, H8, H10)"
run_specs "sceptic run" sceptic/*.json

step "post hoc: H11 registered after the design runs, and one exploratory run (not in the plan)"
"$CS" register "$S" "$top/studies/cold-query/hypotheses/post-hoc/H11.json"
run_specs "exploratory run" explore/*.json

step "holdout predictions: the plan's targets and metrics (frozen at the first holdout run)"
"$CS" holdout predict "$S"

step "holdout runs (partitions and queries no design run used; holdout by the plan, no flag)"
run_specs "holdout run" holdout/*.json

finish_study

step "key figures"
grep -iE 'median|mdape|inside|pass|fail|independent' score.txt || true
cat verdicts.txt
sed -n '/^## At a glance/,/^Contents:/p' ../report/report.md 2>/dev/null | grep -v '^Contents:' || true
echo "demo finished in $(( $(date +%s) - t_start )) s; study in $W/S"
