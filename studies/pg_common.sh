# Sourced by the PostgreSQL studies' run.sh (pg-cube, pg-pgvector), with
# `top` (the source tree), NAME (the study's folder) and PORT (production's
# port) set and the run.sh's own arguments BUILD_DIR [WORK_DIR] in place:
#   . "$top/studies/pg_common.sh"
# checks that the CLI is built, that this runs as root and that the server's
# binaries are there (exit 2, with a line), and sets B, CS and PGB (also as
# COLDSTUDY_PG_BINDIR). It defines:
#   step TEXT, die TEXT    a heading; a line and exit 1
#   pg_study_begin         the work folder W (WORK_DIR, or BUILD_DIR/NAME)
#                          made afresh with a copy of the study's runs/, cd
#                          into it, S=../S, a work/ folder, the study's own
#                          production registry (deleting W leaves nothing in
#                          /var/lib/coldstudy), prod_down trapped on exit
#   prod_up, prod_down     production's server (work/prod/data) on PORT
#   pg_study_validate      validate --json into ../validate.json; a device
#                          without block-device stats alone earns the waiver
#                          (--allow-no-device-stats, recorded as a deviation)
B=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "$NAME: build directory '${1:-build}' not found" >&2; exit 2; }
CS="$B/cli/coldstudy"
[ -x "$CS" ] || { echo "$NAME: $CS is not built" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "$NAME: run as root (the servers run as postgres)" >&2; exit 2; }
PGB=${COLDSTUDY_PG_BINDIR:-$(pg_config --bindir 2>/dev/null || true)}
[ -x "$PGB/postgres" ] || PGB=/usr/lib/postgresql/15/bin
[ -x "$PGB/postgres" ] || { echo "$NAME: no PostgreSQL server binaries (apt-get install postgresql)" >&2; exit 2; }
export COLDSTUDY_PG_BINDIR="$PGB"
W=${2:-$B/$NAME}
step() { printf '\n== %s\n' "$*"; }
die() { echo "$NAME: $*" >&2; exit 1; }

pg_study_begin() {
	rm -rf "$W"
	mkdir -p "$W"
	chmod 755 "$W"
	cp -r "$top/studies/$NAME/runs" "$W/runs"
	chmod -R a+rX "$W/runs"
	cd "$W/runs"
	S=../S
	mkdir -p work
	chmod 755 work
	export COLDSTUDY_PRODUCTION_REGISTRY="${COLDSTUDY_PRODUCTION_REGISTRY:-$W/production-registry.json}"
	trap prod_down EXIT INT TERM
}
prod_up() {
	runuser -u postgres -- "$PGB/pg_ctl" -D "$PWD/work/prod/data" -l "$PWD/work/prod/log" -w \
		-o "-k $PWD/work/prodsock -p $PORT -c listen_addresses=''" start >/dev/null
}
prod_down() {
	[ -f "$W/runs/work/prod/data/postmaster.pid" ] &&
		runuser -u postgres -- "$PGB/pg_ctl" -D "$W/runs/work/prod/data" -m fast -w stop >/dev/null
	return 0
}
pg_study_validate() {
	vrc=0
	"$CS" validate "$S" --json >../validate.json || vrc=$?
	[ $vrc = 0 ] && return 0
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
}
