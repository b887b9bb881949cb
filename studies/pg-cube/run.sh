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
NAME=pg-cube PORT=5499
. "$top/studies/pg_common.sh"

pg_study_begin

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
pg_study_validate

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
