# Steps both demo studies take (sourced by scripts/demo.sh and
# scripts/demo-disk-tier.sh, with CS, S and W set and the cwd the study's
# run specs' folder).

step() { printf '\n== %s\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }

# run_specs WHAT FILE...: one run a spec, its id beside its file (and in $W/run-ids.txt, one
# "FILE RUN_ID" line a run, for figures that name a run by its spec); WHAT names them in a failure.
run_specs() {
	what=$1
	shift
	for f in "$@"; do
		printf '%-40s ' "$f"
		rid=$("$CS" run "$S" "$f" -q) || die "$what $f failed (exit $?)"
		# a spec with "replicates": N prints N ids, one a line
		# shellcheck disable=SC2086
		echo $rid
		for r in $rid; do echo "$f $r" >> "$W/run-ids.txt"; done
	done
}

# seed_plan FILE: with DEMO_SEED set, the study spec's plan.seed (every run's random stream and
# every bootstrap mix it in), so that a rerun with another seed draws afresh from the same specs.
seed_plan() {
	[ -n "${DEMO_SEED:-}" ] || return 0
	python3 - "$1" "$DEMO_SEED" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d.setdefault("plan", {})["seed"] = int(sys.argv[2])
json.dump(d, open(sys.argv[1], "w"), indent=2)
PY
	echo "plan.seed $DEMO_SEED (DEMO_SEED)"
}

# validate_study: validate; a refusal (exit 3: a hypothesis cannot fail, or a guard) ends
# the demo; another failed check is retried with --allow-no-device-stats (a deviation).
validate_study() {
	vrc=0
	"$CS" validate "$S" --quiet || vrc=$?
	if [ "$vrc" = 0 ]; then
		echo "validate: all checks passed"
	elif [ "$vrc" = 3 ]; then
		die "validate refused (a hypothesis cannot fail, or a guard): see '$CS validate $S'"
	else
		echo "validate: a check failed; retrying with --allow-no-device-stats (recorded as a deviation)"
		"$CS" validate "$S" --quiet --allow-no-device-stats || die "validate failed: see '$CS validate $S'"
	fi
}

# finish_study: the runs table and CSV, the score, the verdicts, the report and the log.
# Exit 6 from score or verdicts is the registered test failing (the study's result, not
# the demo's failure).
finish_study() {
	step "the runs (every column: $W/runs.csv; one run: coldstudy run show S R0001)"
	"$CS" runs "$S"
	"$CS" runs "$S" --csv > ../runs.csv

	step "score, verdicts, report"
	score_rc=0
	"$CS" holdout score "$S" > score.txt || score_rc=$?
	cat score.txt
	[ "$score_rc" = 0 ] || [ "$score_rc" = 6 ] || die "holdout score failed (exit $score_rc)"
	verdicts_rc=0
	"$CS" verdicts "$S" > verdicts.txt || verdicts_rc=$?
	cat verdicts.txt
	[ "$verdicts_rc" = 0 ] || [ "$verdicts_rc" = 6 ] || die "verdicts failed (exit $verdicts_rc)"
	"$CS" report "$S" --out ../report && echo "report: $W/report/report.md"

	step "the log"
	"$CS" log verify "$S"
	"$CS" log checkpoint "$S" > ../checkpoint.txt
	cat ../checkpoint.txt
}
