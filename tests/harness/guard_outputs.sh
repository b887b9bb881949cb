#!/bin/sh
# Every verb and option that writes a file (issue 31, items 2 and 6), from
# the help texts: init DIR, data gt --out / --cache-dir / COLDSTUDY_CACHE /
# the $HOME fallback, index build --out, index query --trace /
# --record-blocks / --per-query, index sweep --out / COLDSTUDY_CACHE / the $HOME fallback, report --out,
# log tiles --out. Each is given an output inside a registered production
# folder through every spelling: the path itself, a symlink to the folder,
# a dangling symlink into it, /proc/self/fd/N and /proc/self/cwd, and $HOME
# whose .cache is a symlink into it. Every one is refused (exit 3) and
# production's bytes and names are unchanged; each verb with an output
# outside production still succeeds (the refusals are not a general failure).
set -u
cs=${COLDSTUDY:?}
command -v python3 >/dev/null 2>&1 || exit 77
T=$(mktemp -d /var/tmp/cs-out-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
export COLDSTUDY_PRODUCTION_REGISTRY="$T/registry.json"
fail=0
FAILED() { echo "FAIL: $*"; fail=1; }
P=$T/prod
mkdir -p "$P/sub" "$T/ok" "$T/home"
head -c 524288 /dev/urandom > "$P/heap"
head -c 4096 /dev/urandom > "$P/sub/part-000"
"$cs" production add "$P" >/dev/null || { echo "FAIL: production add"; exit 1; }
state() { (cd "$P" && find . -printf '%p %y %s\n' | sort && find . -type f | sort | xargs sha256sum); }
before=$(state)

D="synth:n=2000,d=8,clusters=4,seed=1"
Q="synth:n=3,d=8,clusters=4,seed=2"
"$cs" index build --kind hnsw --data "$D" --metric l2 --out "$T/idx" -q >/dev/null 2>"$T/err" ||
	{ echo "FAIL: index build: $(cat "$T/err")"; exit 1; }
"$cs" init "$T/S" >/dev/null || { echo "FAIL: init"; exit 1; }

# the spellings of a place inside production: NAME is the file or folder to write
ln -s "$P" "$T/link"
exec 7<"$P"
spellings() { # NAME -> one path per line
	echo "$P/$1"
	echo "$T/link/$1"
	ln -sfn "$P/$1" "$T/dangling-$1"
	echo "$T/dangling-$1"
	echo "/proc/self/fd/7/$1"
	echo "/proc/self/cwd/prod/$1"
}
n=0
try() { # what command... : must be refused, run from $T (for /proc/self/cwd)
	what=$1
	shift
	n=$((n + 1))
	(cd "$T" && "$@") >"$T/out" 2>"$T/err"
	got=$?
	[ $got = 3 ] || FAILED "$what: exit $got, expected 3: $(head -c 300 "$T/err")"
	[ $n -le 12 ] && echo "$what: $(head -c 240 "$T/err")"
	[ "$(state)" = "$before" ] || { FAILED "$what: production changed"; before=$(state); }
}
ok() { # what command...: must succeed
	what=$1
	shift
	(cd "$T" && "$@") >"$T/out" 2>"$T/err" || FAILED "$what outside production: $(head -c 300 "$T/err")"
}
gt() { "$cs" data gt --base "$D" --queries "$Q" --k 5 --metric l2 "$@"; }
query() { "$cs" index query "$T/idx" --queries "$Q" --data "$D" "$@"; }

for p in $(spellings newstudy); do try "init $p" "$cs" init "$p"; done
for p in $(spellings gt.ivecs); do try "data gt --out $p" gt --out "$p" --cache-dir "$T/ok/c"; done
for p in $(spellings cache); do
	try "data gt --cache-dir $p" gt --out "$T/ok/gt.ivecs" --cache-dir "$p"
	try "data gt COLDSTUDY_CACHE=$p" env COLDSTUDY_CACHE="$p" "$cs" data gt --base "$D" \
		--queries "$Q" --k 5 --metric l2 --out "$T/ok/gt.ivecs"
	try "index query COLDSTUDY_CACHE=$p" env COLDSTUDY_CACHE="$p" "$cs" index query "$T/idx" \
		--queries "$Q" --data "$D"
done
ln -s "$P" "$T/home/.cache"
try "data gt, HOME's .cache a symlink into production" env -u COLDSTUDY_CACHE HOME="$T/home" \
	"$cs" data gt --base "$D" --queries "$Q" --k 5 --metric l2 --out "$T/ok/gt.ivecs"
try "index query, HOME's .cache a symlink into production" env -u COLDSTUDY_CACHE HOME="$T/home" \
	"$cs" index query "$T/idx" --queries "$Q" --data "$D"
for p in $(spellings newidx); do
	try "index build --out $p" "$cs" index build --kind hnsw --data "$D" --metric l2 --out "$p" -q
done
for p in $(spellings trace); do try "index query --trace $p" query --nq 1 --trace "$p"; done
for p in $(spellings blocks); do try "index query --record-blocks $p" query --record-blocks "$p"; done
for p in $(spellings perq.csv); do try "index query --per-query $p" query --nq 2 --per-query "$p"; done
# a sweep writes PREFIX.csv, .jsonl and .svg: the dangling spelling plants all three
for x in csv jsonl svg; do ln -sfn "$P/sweep.$x" "$T/dangling-sweep.$x"; done
for p in $(spellings sweep); do
	try "index sweep --out $p" "$cs" index sweep "$T/idx" --queries "$Q" --data "$D" \
		--ef-search 10,20 --repeat 1 --out "$p" -q
done
for p in $(spellings report); do try "report --out $p" "$cs" report "$T/S" --out "$p"; done
for p in $(spellings tiles); do try "log tiles --out $p" "$cs" log tiles "$T/S" --out "$p"; done
echo "$n outputs inside production tried (each must be refused, production unchanged)"

# the same verbs with their outputs elsewhere still write
export COLDSTUDY_CACHE="$T/ok/cache"
ok "init" "$cs" init "$T/ok/S2"
ok "data gt" gt --out "$T/ok/gt.ivecs" --cache-dir "$T/ok/c"
[ -s "$T/ok/gt.ivecs" ] || FAILED "data gt wrote no --out"
ok "index query --trace" query --nq 1 --trace "$T/ok/trace"
[ -s "$T/ok/trace" ] || FAILED "index query wrote no --trace"
ok "index query --record-blocks" query --record-blocks "$T/ok/blocks"
ok "index query --per-query" query --nq 2 --per-query "$T/ok/perq.csv"
[ -s "$T/ok/perq.csv" ] || FAILED "index query wrote no --per-query"
ok "index sweep --out" "$cs" index sweep "$T/idx" --queries "$Q" --data "$D" --ef-search 10,20 \
	--repeat 1 --out "$T/ok/sweep" -q
[ -s "$T/ok/sweep.csv" ] && [ -s "$T/ok/sweep.svg" ] || FAILED "index sweep wrote no --out files"
ok "report" "$cs" report "$T/S" --out "$T/ok/report"
[ -s "$T/ok/report/report.md" ] || FAILED "report wrote no report.md"
ok "log tiles" "$cs" log tiles "$T/S" --out "$T/ok/tiles"
[ -s "$T/ok/tiles/checkpoint" ] || FAILED "log tiles wrote no checkpoint"
ls "$T/ok/cache"/gt-*.ivecs >/dev/null 2>&1 || FAILED "no ground truth cached in COLDSTUDY_CACHE"

# a dangling catalog.tmp symlink into production inside an empty --out folder is
# replaced, never followed; a partition name linked to production's file is refused
mkdir "$T/ok/phnsw"
ln -s "$P/new-catalog" "$T/ok/phnsw/catalog.tmp"
"$cs" index build --kind phnsw --partitions 2 --data "$D" --metric l2 --out "$T/ok/phnsw" -q \
	>"$T/out" 2>"$T/err" || FAILED "phnsw build beside a dangling catalog.tmp: $(head -c 300 "$T/err")"
[ -L "$T/ok/phnsw/catalog.tmp" ] && FAILED "the dangling catalog.tmp is still there"
[ -e "$P/new-catalog" ] && FAILED "the build wrote production's new-catalog"
mkdir "$T/ok/phnsw2"
ln -s "$P/sub/part-000" "$T/ok/phnsw2/part-000"
"$cs" index build --kind phnsw --partitions 2 --data "$D" --metric l2 --out "$T/ok/phnsw2" -q \
	>"$T/out" 2>"$T/err"
echo "phnsw build into a folder whose part-000 links to production: exit $?: $(head -c 200 "$T/err")"
[ "$(state)" = "$before" ] || FAILED "a build through planted symlinks changed production"

[ "$(state)" = "$before" ] || FAILED "production changed"
[ $fail = 0 ] && echo "ok: every output inside production refused, production unchanged"
exit $fail
