#!/bin/sh
# Progress lines (issue 27): `data gt` and `index query` (its ground truth
# and its query passes) draw one on a terminal, redrawn with \r and never
# wider than the terminal (at 50 and at 120 columns); -q draws none, and
# neither does stderr that is not a terminal. Runs under script(1) for a
# pseudo-terminal; skips (77) without it.
set -u
cs=${COLDSTUDY:?}
command -v script >/dev/null 2>&1 || { echo "no script(1)"; exit 77; }
T=$(mktemp -d /var/tmp/cs-progress-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
fail=0
no() { echo "FAIL: $*"; fail=1; }
base="synth:n=20000,d=64,seed=1"
# widest progress segment of a typescript, escape sequences left out
widest() { tr '\r' '\n' < "$1" | sed 's/\x1b\[K//g' | grep '^computing \|^querying ' | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }'; }
for cols in 50 120; do
	export COLDSTUDY_CACHE="$T/cache$cols"
	script -qec "stty cols $cols; \"$cs\" data gt --base '$base' --queries 'synth:n=1500,d=64,seed=2' --k 10 --metric l2 --out '$T/g.ivecs'" "$T/ts-gt" >/dev/null 2>&1 ||
		no "data gt under a terminal"
	grep -q "computing ground truth" "$T/ts-gt" || no "$cols columns: data gt drew no progress"
	w=$(widest "$T/ts-gt")
	[ "$w" -lt "$cols" ] || no "$cols columns: data gt's progress is $w wide"
done
# progress is drawn once a run has taken 200 ms: a run of about a second even
# on a fast core (3,000 x 16 with 3 passes took 70 ms on a Zen 5 and drew none)
"$cs" index build --kind hnsw --data "synth:n=20000,d=64,seed=1" --metric l2 --out "$T/ix" -q >/dev/null || no "index build"
export COLDSTUDY_CACHE="$T/cacheq"
script -qec "stty cols 60; \"$cs\" index query '$T/ix' --queries 'synth:n=2000,d=64,seed=2' --repeat 30" "$T/ts-q" >/dev/null 2>&1 || no "index query under a terminal"
grep -q "computing ground truth" "$T/ts-q" || no "index query drew no ground-truth progress"
grep -q "querying" "$T/ts-q" || no "index query drew no query progress"
w=$(widest "$T/ts-q")
[ "$w" -lt 60 ] || no "60 columns: index query's progress is $w wide"
script -qec "stty cols 60; \"$cs\" index query '$T/ix' --queries 'synth:n=2000,d=64,seed=3' --repeat 3 -q" "$T/ts-qq" >/dev/null 2>&1 || no "index query -q"
grep -q "querying\|computing" "$T/ts-qq" && no "-q still drew progress"
"$cs" data gt --base "$base" --queries "synth:n=300,d=64,seed=4" --k 5 --metric l2 --out "$T/g2.ivecs" 2>"$T/err" || no "data gt, piped"
grep -q "$(printf '\r')" "$T/err" && no "progress drawn to a stderr that is not a terminal"
[ $fail = 0 ] || exit 1
echo "ok: progress on data gt and index query, fitted to 50, 60 and 120 columns; none with -q or off a terminal"
