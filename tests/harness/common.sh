# Shared by the harness shell tests: a study over a freshly built small
# partitioned index, validated, with a clone. Sets T, S, cs; skips (77)
# while the phnsw kind is not built.
cs=${COLDSTUDY:?}
bi=${BUILD_INDEX:?}
command -v python3 >/dev/null 2>&1 || exit 77
T=$(mktemp -d /var/tmp/cs-harness-XXXXXX)
S=$T/S
trap 'rm -rf "$T"' EXIT INT TERM
setup_study() { # base-spec partitions
	"$bi" phnsw "$1" "$T/src" "$2"; rc=$?
	[ $rc = 77 ] && { echo "phnsw not built yet"; exit 77; }
	[ $rc = 0 ] || { echo "FAIL: build exit $rc"; exit 1; }
	"$cs" init "$S" >/dev/null || exit 1
	cat > "$T/study.json" <<J
{"id":"t","production":{"paths":["$T/src"]},"datasets":{"base":"$1"},
 "indexes":{"p":{"kind":"phnsw","dataset":"base","source":"$T/src","clone":"$T/clone"}},
 "scratch_dir":"$T/scratch"}
J
	"$cs" study register "$S" "$T/study.json" >/dev/null || exit 1
	"$cs" clone "$T/src" "$T/clone" --study "$S" >/dev/null || exit 1
	# The block device counts every process's reads: a test reading the same disk
	# beside this one can push engine_vs_device outside [0.9, 1.1] for one
	# validation (seen once in a full parallel suite). That check alone failing
	# earns one more validation (its own record); anything else fails here.
	if ! "$cs" validate "$S" --json --allow-no-device-stats > "$T/validate.json" 2>"$T/validate.err"; then
		failed=$(python3 -c 'import json, sys
print(" ".join(r["check"] for r in json.load(open(sys.argv[1])) if r.get("passed") is False and r.get("check") != "all" and not (r.get("detail") or {}).get("waived")))' \
			"$T/validate.json" 2>/dev/null)
		if [ "$failed" != engine_vs_device ]; then
			echo "FAIL: validate (failed: ${failed:-?})"; cat "$T/validate.err"; exit 1
		fi
		echo "validate: engine_vs_device alone missed ($(cat "$T/validate.err")); validating again"
		"$cs" validate "$S" --quiet --allow-no-device-stats || { echo "FAIL: validate"; exit 1; }
	fi
}
metric() { # run-id metric
	python3 - "$S/ledger.db" "$1" "$2" <<'PY'
import json, sqlite3, sys
for (p,) in sqlite3.connect(sys.argv[1]).execute("select payload from records where kind='run'"):
    r = json.loads(p)
    if r["run_id"] == sys.argv[2]:
        v = r["metrics"][sys.argv[3]]
        print("null" if v is None else v)
PY
}
