#!/bin/sh
# `coldstudy schema KIND` prints draft 2020-12 JSON Schemas that Debian's
# python3-jsonschema accepts, and they agree with coldstudy's validators on
# every example and fuzz-corpus file and on mutations of them
# (schema_agree.py). Skips (77) where no python3 has jsonschema >= 4.
set -u
cs=${COLDSTUDY:?}
src=${COLDSTUDY_SRC:?}
py=""
for p in python3 /usr/bin/python3; do
	"$p" -c 'import jsonschema; jsonschema.Draft202012Validator' 2>/dev/null && { py=$p; break; }
done
[ -n "$py" ] || { echo "no python3 with jsonschema (Debian: python3-jsonschema)"; exit 77; }
T=$(mktemp -d /var/tmp/cs-schema-XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
# not exec: the shell must stay to run the trap that removes $T
"$py" "$src/tests/harness/schema_agree.py" "$cs" "$src" "$T"
