#!/bin/sh
# The pg-cube study end to end: a "production" PostgreSQL cluster (contrib
# cube, GiST, 20,000 64-d vectors in 4 hash partitions) made here, the
# hypotheses registered before any run, a clone of the stopped cluster,
# validate, cold serial / cold fan-out / warm serial runs on the clone's
# private server while production runs beside it, verdicts, a report and a
# verified log. Run as root (the servers run as postgres).
#
#   studies/pg-cube/run.sh BUILD_DIR [WORK_DIR]     (defaults: build, BUILD_DIR/pg-cube)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "pg-cube: build directory '${1:-build}' not found" >&2; exit 2; }
CS="$B/cli/coldstudy"
[ -x "$CS" ] || { echo "pg-cube: $CS is not built" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "pg-cube: run as root (the servers run as postgres)" >&2; exit 2; }
PGB=${COLDSTUDY_PG_BINDIR:-$(pg_config --bindir 2>/dev/null || true)}
[ -x "$PGB/postgres" ] || PGB=/usr/lib/postgresql/15/bin
[ -x "$PGB/postgres" ] || { echo "pg-cube: no PostgreSQL server binaries (apt-get install postgresql)" >&2; exit 2; }
export COLDSTUDY_PG_BINDIR="$PGB"
W=${2:-$B/pg-cube}
PORT=5499
step() { printf '\n== %s\n' "$*"; }
die() { echo "pg-cube: $*" >&2; exit 1; }

rm -rf "$W"
mkdir -p "$W"
chmod 755 "$W"
cp -r "$top/studies/pg-cube/runs" "$W/runs"
chmod -R a+rX "$W/runs"
cd "$W/runs"
S=../S
mkdir -p work
chmod 755 work
# The study's own registry: deleting the work folder leaves nothing in /var/lib/coldstudy.
export COLDSTUDY_PRODUCTION_REGISTRY="${COLDSTUDY_PRODUCTION_REGISTRY:-$W/production-registry.json}"
prod_up() {
	runuser -u postgres -- "$PGB/pg_ctl" -D "$PWD/work/prod/data" -l "$PWD/work/prod/log" -w \
		-o "-k $PWD/work/prodsock -p $PORT -c listen_addresses=''" start >/dev/null
}
prod_down() {
	[ -f "$W/runs/work/prod/data/postmaster.pid" ] &&
		runuser -u postgres -- "$PGB/pg_ctl" -D "$W/runs/work/prod/data" -m fast -w stop >/dev/null
	return 0
}
trap prod_down EXIT INT TERM

step "make the production cluster: cube GiST over 20,000 64-d vectors, 4 hash partitions"
t0=$(date +%s)
sh "$top/studies/pg-cube/make_cluster.sh" "$PGB" "$PWD/work" $PORT
echo "made in $(( $(date +%s) - t0 )) s"

step "create the study; register H1, H2 and the study spec before any run"
"$CS" init "$S"
"$CS" register "$S" "$top/studies/pg-cube/hypotheses/H1.json" "$top/studies/pg-cube/hypotheses/H2.json"
"$CS" study register "$S" study.json
"$CS" production list

step "clone the stopped cluster, start production beside the study, validate"
"$CS" clone work/prod/data work/clone/data --study "$S"
prod_up
vrc=0
"$CS" validate "$S" --json >../validate.json || vrc=$?
if [ $vrc != 0 ]; then
	# Name what failed: only a device without block-device stats earns the waiver.
	failed=$(python3 -c '
import json, sys
for c in json.load(open(sys.argv[1])):
    if not c.get("passed") and c.get("check") != "all":
        d = c.get("detail") or {}
        print("%s%s" % (c["check"], (": " + "; ".join(d["findings"])) if d.get("findings") else ""))
' ../validate.json 2>/dev/null)
	[ -n "$failed" ] || failed="exit $vrc"
	[ "$failed" = engine_vs_device ] || die "validate failed: $failed"
	echo "validate: the device has no block-device stats; retrying with --allow-no-device-stats (recorded as a deviation)"
	"$CS" validate "$S" --quiet --allow-no-device-stats || die "validate failed: see '$CS validate $S'"
fi

step "runs on the clone's private server"
for r in cold-serial cold-fanout warm-serial sceptic/cold-serial-q20 sceptic/cold-fanout-q20 sceptic/warm-serial-q20; do
	printf '%s: ' "$r"
	"$CS" run "$S" "$r.json" -q || die "run $r failed (exit $?)"
done
"$CS" runs "$S"
"$CS" runs "$S" --csv > ../runs.csv

step "a run that names production is refused (exit 3, recorded)"
sed 's|"work/clone/data"|"work/prod/data"|' cold-serial.json > prod-attempt.json
grep -q '"work/prod/data"' prod-attempt.json || die "prod-attempt.json does not name production"
if "$CS" run "$S" prod-attempt.json -q; then die "a run on production was not refused"; else echo "refused (exit $?)"; fi

step "verdicts, report, log"
"$CS" verdicts "$S" | tee ../verdicts.txt
"$CS" report "$S" --out ../report && echo "report: $W/report/report.md"
"$CS" log verify "$S"
