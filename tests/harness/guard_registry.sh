#!/bin/sh
# The machine-wide registry fails closed (issue 31, item 5): once coldstudy
# has written it, a registry deleted, replaced by {"items":[]} or shrunk by
# hand, or holding an item the guards cannot read (no ident, an ino that is a
# string, an unknown kind), stops every guarded verb (exit 5 naming the file
# and JSON path) instead of protecting nothing; production's pages stay
# resident. `production remove` still removes items. A production folder
# renamed (same file system) or reached through a hard link to one of its
# files stays production (item 4). A study's dataset inside production is
# refused at study register and validate; a registry of the verb's own never
# hides the machine's (items 4 and 6 of the third pass).
set -u
cs=${COLDSTUDY:?}
command -v python3 >/dev/null 2>&1 || exit 77
T=$(mktemp -d /var/tmp/cs-reg-XXXXXX)
machine=""
cleanup() {
	# an item this test put into the machine's registry leaves it again
	[ -n "$machine" ] && env -u COLDSTUDY_PRODUCTION_REGISTRY "$cs" production remove "$machine" \
		>/dev/null 2>&1
	[ -n "$machine" ] && [ "${made_machine_dir:-0}" = 1 ] && rm -rf /var/lib/coldstudy
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
R=$T/registry.json
export COLDSTUDY_PRODUCTION_REGISTRY="$R"
fail=0
FAILED() { echo "FAIL: $*"; fail=1; }
mkdir -p "$T/P/sub"
head -c 1048576 /dev/urandom > "$T/P/sub/heap"
"$cs" production add "$T/P" >/dev/null || { echo "FAIL: production add"; exit 1; }
cp "$R" "$T/good.json"
resident() { "$cs" cache residency "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["resident"])'; }
cat "$T/P/sub/heap" > /dev/null
full=$(resident "$T/P/sub/heap")
echo "production's heap: $full pages resident before the cases (each case checks it is still)"
expect() { # code what file [production's heap now]
	"$cs" cache evict "$3" >"$T/out" 2>"$T/err"; got=$?
	echo "$2: exit $got: $(head -c 200 "$T/err")"
	[ $got = "$1" ] || FAILED "$2: exit $got, expected $1"
	[ "$(resident "${4:-$T/P/sub/heap}")" = "$full" ] || FAILED "$2: production was evicted"
}
expect 3 "registered" "$T/P/sub/heap"
rm "$R"
expect 5 "registry deleted" "$T/P/sub/heap"
grep -q "registry is missing" "$T/err" || FAILED "the refusal does not say the registry is missing"
echo '{"format":1,"items":[]}' > "$R"
expect 5 "registry emptied" "$T/P/sub/heap"
python3 - "$T/good.json" "$R" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["items"][0].pop("ident"); json.dump(d, open(sys.argv[2], "w"))
PY
expect 5 "an item without ident" "$T/P/sub/heap"
grep -q '\$.items\[0\].ident' "$T/err" || FAILED "the refusal does not name \$.items[0].ident"
python3 - "$T/good.json" "$R" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["items"][0]["ident"]["ino"] = str(d["items"][0]["ident"]["ino"])
json.dump(d, open(sys.argv[2], "w"))
PY
expect 5 "an ino that is a string" "$T/P/sub/heap"
python3 - "$T/good.json" "$R" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["items"][0]["kind"] = "folder"; json.dump(d, open(sys.argv[2], "w"))
PY
expect 5 "an unknown kind" "$T/P/sub/heap"
grep -q '\$.items\[0\].kind' "$T/err" || FAILED "the refusal does not name \$.items[0].kind"
cp "$T/good.json" "$R"
expect 3 "registry restored" "$T/P/sub/heap"

# renamed on the same file system, and a hard link to one of its files
mv "$T/P" "$T/moved"
expect 3 "a file of the renamed production folder" "$T/moved/sub/heap" "$T/moved/sub/heap"
ln "$T/moved/sub/heap" "$T/hardlink"
expect 3 "a hard link to a file of the renamed folder" "$T/hardlink" "$T/moved/sub/heap"
rm "$T/hardlink"
mv "$T/moved" "$T/P"

echo "production's heap: $(resident "$T/P/sub/heap") pages resident after the refused cases"
# removing an item the ordinary way still works, and then it is not production
"$cs" production remove "$T/P" >/dev/null || FAILED "production remove"
"$cs" cache evict "$T/P/sub/heap" >"$T/out" 2>"$T/err" ||
	FAILED "after production remove: exit $?: $(cat "$T/err")"
# a study's own dataset (datasets.*, used directly or through indexes.*.dataset)
# inside production: study register refuses it (item 4), naming the JSON path
"$cs" init "$T/S" >/dev/null || FAILED "init"
cat > "$T/study.json" <<J
{"id":"ds","production":{"paths":["$T/P"]},"datasets":{"base":"fvecs:$T/P/sub/heap"},
 "scratch_dir":"$T/scratch"}
J
"$cs" study register "$T/S" "$T/study.json" >"$T/out" 2>"$T/err"; got=$?
echo "study register, the study's base dataset a production file: exit $got: $(head -c 200 "$T/err")"
[ $got = 3 ] || FAILED "study register with a production dataset: exit $got, expected 3"
grep -q 'datasets.base' "$T/err" || FAILED "the refusal does not name \$.datasets.base"
# the same through a symlink, and as an index's dataset: refused
ln -s "$T/P/sub/heap" "$T/heap-link"
cat > "$T/study.json" <<J
{"id":"ds","production":{"paths":["$T/P"]},"datasets":{"q":"fvecs:$T/heap-link[0:10]"},
 "indexes":{"i":{"kind":"hnsw","dataset":"q","clone":"$T/clone"}},"scratch_dir":"$T/scratch"}
J
"$cs" study register "$T/S" "$T/study.json" >"$T/out" 2>"$T/err"; got=$?
echo "study register, an index's dataset a symlink to production: exit $got: $(head -c 200 "$T/err")"
[ $got = 3 ] || FAILED "study register with an index's dataset in production: exit $got, expected 3"
grep -q 'datasets.q' "$T/err" || FAILED "the refusal does not name \$.datasets.q"
# registered while it was not production, then made production: validate refuses it
mkdir -p "$T/D"
head -c 4096 /dev/urandom > "$T/D/base.fvecs"
cat > "$T/study.json" <<J
{"id":"ds","production":{"paths":["$T/P"]},"datasets":{"base":"fvecs:$T/D/base.fvecs"},
 "scratch_dir":"$T/scratch"}
J
"$cs" study register "$T/S" "$T/study.json" >/dev/null 2>"$T/err" || FAILED "study register: $(cat "$T/err")"
"$cs" production add "$T/D" >/dev/null || FAILED "production add D"
"$cs" validate "$T/S" --quiet --allow-no-device-stats >"$T/out" 2>"$T/err"; got=$?
echo "validate, the study's base dataset a production file: exit $got: $(head -c 200 "$T/err")"
[ $got = 3 ] || FAILED "validate with a production dataset: exit $got, expected 3"
grep -q 'datasets.base' "$T/err" || FAILED "the refusal does not name \$.datasets.base"
"$cs" production remove "$T/D" >/dev/null || FAILED "production remove D"

# a study's own COLDSTUDY_PRODUCTION_REGISTRY never hides the machine's (item 6):
# an item of the machine's registry (/var/lib/coldstudy/production.json) is
# production for a verb pointed at another, empty registry (root only)
if [ "$(id -u)" = 0 ] && [ ! -e /var/lib/coldstudy ] || [ -w /var/lib/coldstudy ]; then
	[ -e /var/lib/coldstudy ] || made_machine_dir=1
	mkdir -p "$T/M"
	head -c 65536 /dev/urandom > "$T/M/data"
	machine="$T/M"
	env -u COLDSTUDY_PRODUCTION_REGISTRY "$cs" production add "$T/M" >/dev/null ||
		FAILED "production add to the machine's registry"
	cat "$T/M/data" > /dev/null
	mfull=$(resident "$T/M/data")
	echo '{"format":1,"items":[]}' > "$T/own.json"
	COLDSTUDY_PRODUCTION_REGISTRY="$T/own.json" "$cs" cache evict "$T/M/data" >"$T/out" 2>"$T/err"
	got=$?
	echo "a machine's item, the verb's own registry empty: exit $got: $(head -c 200 "$T/err")"
	[ $got = 3 ] || FAILED "a machine registry item with another registry named: exit $got, expected 3"
	[ "$(resident "$T/M/data")" = "$mfull" ] || FAILED "the machine's production item was evicted"
	env -u COLDSTUDY_PRODUCTION_REGISTRY "$cs" production remove "$T/M" >/dev/null ||
		FAILED "production remove from the machine's registry"
	machine=""
	[ "${made_machine_dir:-0}" = 1 ] && rm -rf /var/lib/coldstudy
	COLDSTUDY_PRODUCTION_REGISTRY="$T/own.json" "$cs" cache evict "$T/M/data" >"$T/out" 2>"$T/err" ||
		FAILED "after its removal from the machine's registry: exit $?: $(cat "$T/err")"
else
	echo "the machine's registry is not writable here: its case is not tried"
fi
[ $fail = 0 ] && echo "ok: a deleted, emptied or malformed registry fails closed; renamed and hard-linked production refused"
exit $fail
