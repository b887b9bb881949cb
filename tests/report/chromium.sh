#!/bin/sh
# The report as a person sees it: the fixture study of report.sh (runs in
# virtual time, modelled real time and on the real disk, a holdout score,
# verdicts, a deviation and a refutation) rendered in headless Chromium
# (Debian's chromium) by chromium_check.py, which fails on any console
# message (the report's CSP logs every script or remote load it blocks),
# on any error seen from inside the page, on a page taller than the bound
# or wider than the window; its self-test shows each check failing on a
# page made to fail it. The full-page screenshot is kept as the test's
# artefact: REPORT_ARTEFACTS/report-chromium.png (the build's meson-logs).
# Skips (77) where chromium or python3 is absent.
set -u
cs=${COLDSTUDY:?}; fx=${REPORT_FIXTURE:?}; src=${COLDSTUDY_SRC:?}
command -v python3 >/dev/null 2>&1 || { echo "no python3"; exit 77; }
command -v chromium >/dev/null 2>&1 || { echo "no chromium (apt-get install chromium)"; exit 77; }
T=$(mktemp -d /tmp/cs-report-chromium-XXXXXX); trap 'rm -rf "$T"' EXIT INT TERM
# The fixture report is about 5,000 px at 1280 px wide; the bound leaves room
# for wording, not for a table or a validation dump left unfolded.
MAX_HEIGHT=${REPORT_MAX_HEIGHT:-7000}
{ "$cs" init "$T/S" && "$cs" register "$T/S" "$src"/studies/cold-query/hypotheses/H[1-9].json "$src"/studies/cold-query/hypotheses/H10.json &&
  "$fx" "$T/S" && "$cs" holdout score "$T/S" && "$cs" verdicts "$T/S" &&
  "$cs" deviate "$T/S" --because "the first cold gate attempt was lost and rerun" --hypothesis H1 &&
  "$cs" refute "$T/S" H3 --because "ef_search changes recall too" &&
  "$cs" report "$T/S" --out "$T/R"; } >"$T/log" 2>&1 || { echo "FAIL: study: $(tail -5 "$T/log")"; exit 1; }
out=${REPORT_ARTEFACTS:-$T}
mkdir -p "$out"
python3 "$src/tests/report/chromium_check.py" "$T/R/report.html" --max-height "$MAX_HEIGHT" \
	--shot "$out/report-chromium.png" --self-test || exit 1
echo "ok: report in chromium"
