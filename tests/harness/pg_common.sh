# Sourced by the PostgreSQL tests (pg_*.sh here) for what each needs before
# its own work:
#   . "$(dirname "$0")/pg_common.sh"
# sets -u, cs (the CLI) and B (the server's binaries, also as
# COLDSTUDY_PG_BINDIR), and skips (77) without root, the postgres user,
# python3 or the server binaries. Then:
#   pg_ext NAME MESSAGE  skips (77) with MESSAGE unless extension NAME is
#                        installed (SH: the share folder that has it)
#   pg_tmp PREFIX        T: a new folder /var/tmp/PREFIX-XXXXXX the server
#                        can walk through, with a production registry of the
#                        test's own (COLDSTUDY_PRODUCTION_REGISTRY)
#   FAILED MESSAGE       says FAIL: MESSAGE and sets fail=1
#   pg ARGS...           runs ARGS as the postgres user
set -u
cs=${COLDSTUDY:?}
[ "$(id -u)" = 0 ] || { echo "needs root (the server runs as postgres)"; exit 77; }
id postgres >/dev/null 2>&1 || { echo "no postgres user"; exit 77; }
command -v python3 >/dev/null 2>&1 || exit 77
B=$(pg_config --bindir 2>/dev/null)
[ -x "$B/postgres" ] || B=/usr/lib/postgresql/15/bin
[ -x "$B/postgres" ] && [ -x "$B/initdb" ] && [ -x "$B/pg_ctl" ] && [ -x "$B/psql" ] ||
	{ echo "PostgreSQL server binaries missing"; exit 77; }
export COLDSTUDY_PG_BINDIR="$B"
SH=$(pg_config --sharedir 2>/dev/null)
pg_ext() {
	[ -f "$SH/extension/$1.control" ] || SH=/usr/share/postgresql/15
	[ -f "$SH/extension/$1.control" ] || { echo "$2"; exit 77; }
}
pg_tmp() {
	T=$(mktemp -d "/var/tmp/$1-XXXXXX")
	chmod 755 "$T" # the server (user postgres) walks to its data directory through here
	export COLDSTUDY_PRODUCTION_REGISTRY="$T/registry.json"
}
fail=0
FAILED() { echo "FAIL: $*"; fail=1; }
pg() { runuser -u postgres -- "$@"; }
