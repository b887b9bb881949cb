#!/bin/sh
# Build coldstudy with clang, ASan + UBSan and the libFuzzer targets, and run
# the default suites (unit, integration, recall, fuzz). The closing line is
# "N passed, N failed, N skipped". SUITES overrides the suites (e.g. "slow").
set -u
cd "$(dirname "$0")/.."
B=${BUILD:-build-test}
if [ ! -f "$B/build.ninja" ]; then
	CC=clang meson setup "$B" --buildtype=debugoptimized \
		-Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=true \
		-Dwerror="${WERROR:-false}" || exit 1
fi
ninja -C "$B" || { echo "0 passed, 1 failed"; exit 1; }
set --
for s in ${SUITES:-unit integration recall fuzz}; do set -- "$@" --suite "$s"; done
meson test -C "$B" "$@" --print-errorlogs --num-processes 2 --timeout-multiplier 3
python3 scripts/summary.py "$B/meson-logs/testlog.json"
