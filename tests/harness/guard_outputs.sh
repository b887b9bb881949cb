#!/bin/sh
# Every verb and option that writes a file (issue 31, items 2 and 6), from
# the help texts: init DIR, data gt --out / --cache-dir / COLDSTUDY_CACHE /
# the $HOME fallback, index build --out, index query --trace /
# --record-blocks / --per-query, index sweep --out / COLDSTUDY_CACHE / the $HOME fallback, report --out,
# log tiles --out, replicate --out, and TMPDIR for each. Each is given an output inside a
# registered production folder through every spelling: the path itself, a
# symlink to the folder, a dangling symlink into it, /proc/self/fd/N and
# /proc/self/cwd, and $HOME whose .cache is a symlink into it. Every one is
# refused (exit 3) and production's bytes and names are unchanged; each verb
# with an output outside production still succeeds (the refusals are not a
# general failure), /proc spellings of places outside production included.
# The writer's own open: an existing file overwritten, a symlink at the name
# replaced, a FIFO or hard-linked file refused, and the name swapped with a
# symlink to production every 2 ms during OUT_SWAP_N (100) writes.
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
# replicate S --out S2 makes a study folder as init does
cat > "$T/h1.json" <<J
{"id":"H1","title":"t","statement":"s","kind":"confirmatory","metric":"engine_read_ms_mean",
 "unit":"ms","prediction":{"value":4,"band95":[1,40]},
 "accept":{"cmp":{"left":{"agg":"median","metric":"engine_read_ms_mean","select":{"tags":["a"]}},"op":">=","right":2}},
 "reject":{"cmp":{"left":{"agg":"median","metric":"engine_read_ms_mean","select":{"tags":["a"]}},"op":"<","right":2}}}
J
echo '{"id":"rep","production":{"paths":["'"$P"'"]},"datasets":{"base":"'"$D"'"}}' > "$T/rs.json"
{ "$cs" init "$T/R" && "$cs" register "$T/R" "$T/h1.json" && "$cs" study register "$T/R" "$T/rs.json"; } \
	>/dev/null 2>"$T/err" || FAILED "a study to replicate: $(head -c 300 "$T/err")"
for p in $(spellings newrep); do
	try "replicate --out $p" "$cs" replicate "$T/R" --out "$p" --seed 1
	grep -q "refused (production)" "$T/err" || FAILED "replicate --out $p: not the production guard: $(head -c 200 "$T/err")"
done

# TMPDIR, where a verb's scratch and its children's go, inside production: every
# verb a guard may stop refuses it before it starts (issue 31, item 3)
for p in "$P" $(spellings tmpdir); do
	try "init, TMPDIR=$p" env TMPDIR="$p" "$cs" init "$T/ok/tmpS"
	try "data gt, TMPDIR=$p" env TMPDIR="$p" "$cs" data gt --base "$D" --queries "$Q" --k 5 \
		--metric l2 --out "$T/ok/tmpgt.ivecs" --cache-dir "$T/ok/c"
	try "index build, TMPDIR=$p" env TMPDIR="$p" "$cs" index build --kind hnsw --data "$D" \
		--metric l2 --out "$T/ok/tmpidx" -q
	try "index query, TMPDIR=$p" env TMPDIR="$p" "$cs" index query "$T/idx" --queries "$Q" --data "$D"
	try "index sweep, TMPDIR=$p" env TMPDIR="$p" "$cs" index sweep "$T/idx" --queries "$Q" \
		--data "$D" --ef-search 10 --repeat 1 --out "$T/ok/tmpsweep" -q
	try "report, TMPDIR=$p" env TMPDIR="$p" "$cs" report "$T/S" --out "$T/ok/tmpreport"
	try "log tiles, TMPDIR=$p" env TMPDIR="$p" "$cs" log tiles "$T/S" --out "$T/ok/tmptiles"
	try "cache evict, TMPDIR=$p" env TMPDIR="$p" "$cs" cache evict "$T/idx"
done
# a magic link straight to a production file, and one to a folder since deleted
exec 6<"$P/heap"
try "index query --trace /proc/self/fd/6 (production's heap)" query --nq 1 --trace /proc/self/fd/6
mkdir "$T/gone"
exec 5<"$T/gone"
rmdir "$T/gone"
try "index query --per-query /proc/self/fd/5/x.csv (a deleted folder)" query --nq 1 \
	--per-query /proc/self/fd/5/x.csv
exec 5<&- 6<&-
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
ok "replicate --out" "$cs" replicate "$T/R" --out "$T/ok/R2" --seed 1
[ -s "$T/ok/R2/study.json" ] || FAILED "replicate wrote no study.json"
[ -s "$T/ok/tiles/checkpoint" ] || FAILED "log tiles wrote no checkpoint"
ls "$T/ok/cache"/gt-*.ivecs >/dev/null 2>&1 || FAILED "no ground truth cached in COLDSTUDY_CACHE"
ok "index query, TMPDIR outside production" env TMPDIR="$T/ok" "$cs" index query "$T/idx" \
	--queries "$Q" --data "$D"
ok "index query, TMPDIR holding production below it" env TMPDIR="$T" "$cs" index query "$T/idx" \
	--queries "$Q" --data "$D"

# /proc spellings of places outside production are resolved and used, not refused
exec 8<"$T/ok"
ok "index query --per-query /proc/self/fd/8/perq-proc.csv" query --nq 2 \
	--per-query /proc/self/fd/8/perq-proc.csv
[ -s "$T/ok/perq-proc.csv" ] || FAILED "--per-query through /proc/self/fd wrote nothing"
ok "data gt, COLDSTUDY_CACHE=/proc/self/cwd/ok/pcache" env COLDSTUDY_CACHE=/proc/self/cwd/ok/pcache \
	"$cs" data gt --base "$D" --queries "$Q" --k 5 --metric l2 --out /proc/self/fd/8/gt-proc.ivecs
ls "$T/ok/pcache"/gt-*.ivecs >/dev/null 2>&1 || FAILED "no ground truth cached through /proc/self/cwd"
[ -s "$T/ok/gt-proc.ivecs" ] || FAILED "data gt --out through /proc/self/fd wrote nothing"
exec 8<&-

# the one way a writer opens its file (guard_output_fopen): an existing file is
# overwritten, a symlink at the name replaced (where it points is kept), a FIFO
# or a file with a second hard link refused
echo old > "$T/ok/over.csv"
ok "--per-query over an existing file" query --nq 2 --per-query "$T/ok/over.csv"
grep -q '^old$' "$T/ok/over.csv" && FAILED "the existing --per-query file was not overwritten"
echo keep > "$T/ok/elsewhere"
ln -s "$T/ok/elsewhere" "$T/ok/link.csv"
ok "--per-query at a symlink" query --nq 2 --per-query "$T/ok/link.csv"
[ -L "$T/ok/link.csv" ] && FAILED "the symlink at the --per-query name was followed, not replaced"
[ "$(cat "$T/ok/elsewhere")" = keep ] || FAILED "the file a symlink at the output name points to changed"
mkfifo "$T/ok/fifo.csv"
(cd "$T" && timeout 120 "$cs" index query "$T/idx" --queries "$Q" --data "$D" --nq 2 \
	--per-query "$T/ok/fifo.csv") >"$T/out" 2>"$T/err"
got=$?
echo "--per-query at a FIFO: exit $got: $(head -c 200 "$T/err")"
[ $got = 3 ] || FAILED "--per-query at a FIFO: exit $got, expected 3"
ln "$T/ok/elsewhere" "$T/ok/hardlink.csv"
(cd "$T" && "$cs" index query "$T/idx" --queries "$Q" --data "$D" --nq 2 \
	--per-query "$T/ok/hardlink.csv") >"$T/out" 2>"$T/err"
got=$?
echo "--per-query at a file with a second hard link: exit $got: $(head -c 200 "$T/err")"
[ $got = 3 ] || FAILED "--per-query at a hard-linked file: exit $got, expected 3"
[ "$(cat "$T/ok/elsewhere")" = keep ] || FAILED "a hard-linked file at the output name was written"

# log tiles makes its folders beneath the held output folder: a symlink planted as
# one of them (here to a folder outside production) is refused, never followed
mkdir -p "$T/ok/tiles2" "$T/ok/elsewhere-dir"
"$cs" deviate "$T/S" --because "a record, so that the log has tiles" >/dev/null ||
	FAILED "deviate (a record for the tiles)"
ln -s "$T/ok/elsewhere-dir" "$T/ok/tiles2/tile"
(cd "$T" && "$cs" log tiles "$T/S" --out "$T/ok/tiles2") >"$T/out" 2>"$T/err"
got=$?
echo "log tiles with a symlink planted as tile/: exit $got: $(head -c 200 "$T/err")"
[ $got = 3 ] || FAILED "log tiles through a planted symlink: exit $got, expected 3"
[ -z "$(ls -A "$T/ok/elsewhere-dir")" ] || FAILED "log tiles wrote through a planted symlink"

# the output's name swapped (renameat2 RENAME_EXCHANGE every 2 ms) with a symlink to
# production's heap while OUT_SWAP_N queries write --per-query there: production unchanged
NS=${OUT_SWAP_N:-100}
echo x > "$T/ok/race.csv"
ln -s "$P/heap" "$T/ok/race-evil"
python3 - "$T/ok/race.csv" "$T/ok/race-evil" "$P/heap" <<'PY' &
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, prod = sys.argv[1], sys.argv[2], sys.argv[3]
while True:
    # the writer replaces a symlink it finds at its name: plant it again
    if not os.path.islink(a) and not os.path.islink(b):
        try:
            os.symlink(prod, b + ".new"); os.rename(b + ".new", b)
        except OSError:
            pass
    libc.renameat2(-100, a.encode(), -100, b.encode(), 2)
    time.sleep(0.002)
PY
swp=$!
oks=0 refs=0 others=0 i=0
while [ $i -lt "$NS" ]; do
	(cd "$T" && "$cs" index query "$T/idx" --queries "$Q" --data "$D" --nq 1 \
		--per-query "$T/ok/race.csv") >/dev/null 2>"$T/err"
	case $? in 0) oks=$((oks + 1)) ;; 3) refs=$((refs + 1)) ;;
		*) others=$((others + 1)); [ $others -le 2 ] && echo "  swap run $i: $(head -c 200 "$T/err")" ;; esac
	i=$((i + 1))
done
kill $swp 2>/dev/null
wait $swp 2>/dev/null
echo "--per-query swapped with a symlink to production: $NS runs: $oks written, $refs refused, $others failed closed"
[ $oks -gt 0 ] || FAILED "no swapped run wrote its file: the race was not exercised"
[ "$(state)" = "$before" ] || FAILED "production changed during the output swap"

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
