#!/bin/sh
# Help = README = behaviour. README's "Exit codes" table is the reference:
# `coldstudy help` lists every code of it with its meaning; every verb's
# --help (and each subcommand's) ends with one "exit codes:" line whose
# meanings are the table's words for those codes, and that line names
# every "exit N" the help text itself mentions. --json is taken by the
# verbs that report (device list, log checkpoint among them).
set -u
cs=${COLDSTUDY:?}
src=${COLDSTUDY_SRC:?}
py=/usr/bin/python3
[ -x "$py" ] || py=python3
T=$(mktemp -d /var/tmp/cs-help-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
fail=0
"$cs" help > "$T/help" || { echo "FAIL: help"; exit 1; }
for v in $(awk '/^  [a-z]/ {print $1}' "$T/help"); do
	"$cs" "$v" --help > "$T/v-$v" 2>&1 || { echo "FAIL: $v --help exit $?"; fail=1; }
done
# subcommands whose help the verb prints on its own
for sv in "index query" "log verify" "log publish" "holdout score" "run show" "device list" "cache evict"; do
	"$cs" $sv --help > "$T/s-$(echo "$sv" | tr ' ' -)" 2>&1 || { echo "FAIL: $sv --help exit $?"; fail=1; }
done
"$py" - "$src/README.md" "$T" <<'PY' || fail=1
import os, re, sys
readme, T = sys.argv[1], sys.argv[2]
text = open(readme).read()
sec = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
table = {int(m.group(1)): m.group(2).strip() for m in re.finditer(r"^\| (\d) \| (.+?) \|$", sec, re.M)}
bad = 0
def fail(msg):
    global bad
    print("FAIL: " + msg); bad = 1
if sorted(table) != list(range(8)):
    fail("README's exit-code table has codes %s" % sorted(table))
def codes_line(name, body):
    lines = [l for l in body.splitlines() if l.startswith("exit codes:")]
    if len(lines) != 1:
        fail("%s: %d 'exit codes:' lines" % (name, len(lines))); return {}
    got = {}
    for part in lines[0][len("exit codes:"):].split(","):
        m = re.match(r"\s*(\d) (.+)$", part)
        if not m:
            fail("%s: unreadable exit code '%s'" % (name, part)); continue
        got[int(m.group(1))] = m.group(2).strip()
    for c, meaning in got.items():
        if c not in table:
            fail("%s: exit %d is not in README's table" % (name, c))
        elif not table[c].startswith(meaning):
            fail("%s: exit %d '%s', README says '%s'" % (name, c, meaning, table[c]))
    return got
allc = codes_line("coldstudy help", open(os.path.join(T, "help")).read())
if sorted(allc) != sorted(table):
    fail("coldstudy help lists %s, README %s" % (sorted(allc), sorted(table)))
for f in sorted(os.listdir(T)):
    if not f.startswith(("v-", "s-")):
        continue
    body = open(os.path.join(T, f)).read()
    name = f[2:].replace("-", " ")
    got = codes_line(name, body)
    for c in {0, 1, 2}:
        if c not in got:
            fail("%s: exit %d not listed" % (name, c))
    for m in re.finditer(r"[Ee]xit (\d)", body.split("exit codes:")[0]):
        if int(m.group(1)) not in got:
            fail("%s: the help mentions exit %s but its exit codes leave it out" % (name, m.group(1)))
sys.exit(bad)
PY
# the verbs that report take --json
"$cs" device list --json | "$py" -c 'import json,sys; d=json.load(sys.stdin); assert d and all("profile" in x and x["mean_ms_qd1"] > 0 for x in d)' ||
	{ echo "FAIL: device list --json"; fail=1; }
"$cs" init "$T/S" >/dev/null 2>&1 || { echo "FAIL: init"; fail=1; }
"$cs" log checkpoint "$T/S" --json | "$py" -c '
import json, sys
d = json.load(sys.stdin)
assert d["size"] >= 0 and len(d["root_hex"]) == 64 and d["origin"] and d["note"].startswith(d["origin"] + "\n")' ||
	{ echo "FAIL: log checkpoint --json"; fail=1; }
# the text form is unchanged beside it
"$cs" log checkpoint "$T/S" | head -1 | grep -q "^coldstudy/" || { echo "FAIL: log checkpoint text"; fail=1; }
exit $fail
