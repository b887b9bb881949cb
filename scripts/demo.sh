#!/bin/sh
# The main job: the bundled demo study, end to end, on generated and packaged data.
# Usage: scripts/demo.sh [BUILD_DIR]   (default: build)
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
CS="$B/cli/coldstudy"
S=demo/study
rm -rf demo && mkdir -p demo
echo "== create the study and register its hypotheses (frozen before any run)"
"$CS" init "$S"
"$CS" register "$S" studies/cold-query/hypotheses/H*.json
"$CS" hypotheses "$S"
echo "== verify the experiment log"
"$CS" log verify "$S"
"$CS" log checkpoint "$S"
