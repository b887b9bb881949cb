#!/usr/bin/env python3
"""Every export of a study against its JSON Schema (coldstudy schema KIND).

exports_check.py COLDSTUDY STUDY_DIR [DOCS_RECORDS_MD]

Validates with python3-jsonschema: `runs --jsonl` and `--json` row by row;
`runs --csv` (its header names only schema columns; booleans are true or
false; an empty cell only where the column may be null); each run's
`run show --queries --jsonl` and `--series --jsonl`. Checks that no time
column of the query rows leaves its clock unnamed. With DOCS_RECORDS_MD,
every column of every schema (and every enum value) must be named in it
in backticks. Exit 1 with a line per failure.
"""
import csv
import io
import json
import re
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    print("no python3-jsonschema (scripts/deps.sh)")
    sys.exit(77)

cs, study = sys.argv[1], sys.argv[2]
docs = open(sys.argv[3]).read() if len(sys.argv) > 3 else None
bad = 0


def fail(msg):
    global bad
    print("FAIL: " + msg)
    bad = 1


def out(*args):
    return subprocess.run([cs] + list(args), check=True, capture_output=True, text=True).stdout


schemas = {k: json.loads(out("schema", k)) for k in ("runs", "queries", "series")}
validators = {}
for k, s in schemas.items():
    jsonschema.Draft202012Validator.check_schema(s)
    validators[k] = jsonschema.Draft202012Validator(s)


def check_rows(kind, rows, where):
    for i, row in enumerate(rows):
        errs = sorted(validators[kind].iter_errors(row), key=lambda e: list(e.path))
        for e in errs[:3]:
            fail("%s row %d: %s at %s" % (where, i, e.message[:200], "/".join(map(str, e.path))))


runs = [json.loads(l) for l in out("runs", study, "--jsonl").splitlines()]
if not runs:
    fail("no runs in " + study)
check_rows("runs", runs, "runs --jsonl")
check_rows("runs", json.loads(out("runs", study, "--json")), "runs --json")
props = schemas["runs"]["properties"]
for i, row in enumerate(csv.DictReader(io.StringIO(out("runs", study, "--csv")))):
    for col, cell in row.items():
        p = props.get(col)
        if p is None:
            fail("runs --csv: column %s is not in the schema" % col)
            continue
        t = p["type"]
        if cell == "" and "null" not in t and "string" not in t and "array" not in t:
            fail("runs --csv row %d: %s empty, the schema has no null" % (i, col))
        if t[0] == "boolean" and cell not in ("true", "false") and not (cell == "" and "null" in t):
            fail("runs --csv row %d: %s is %r, not true or false" % (i, col, cell))
        if "boolean" in t and row["status"] == "complete" and cell == "" and col in ("cold", "cold_each_query"):
            fail("runs --csv row %d: %s is empty for a recorded run" % (i, col))
nq = nseries = 0
for r in runs:
    if r["status"] != "complete":
        continue
    q = [json.loads(l) for l in out("run", "show", study, r["run_id"], "--queries", "--jsonl").splitlines()]
    nq += len(q)
    check_rows("queries", q, r["run_id"] + " --queries")
    for row in q[:1]:
        loose = [c for c in row if re.search(r"_(ms|s)$", c) and not re.search(r"_(real|virtual)_(ms|s)$", c)]
        if loose:
            fail("%s --queries: time columns without a clock: %s" % (r["run_id"], loose))
        if r["clock"] == "virtual" and "lat_virtual_ms" not in row:
            fail("%s: a virtual-time run's rows lack lat_virtual_ms" % r["run_id"])
    s = [json.loads(l) for l in out("run", "show", study, r["run_id"], "--series", "--jsonl").splitlines()]
    nseries += len(s)
    check_rows("series", s, r["run_id"] + " --series")
if docs is not None:
    for k, s in schemas.items():
        for col, p in s["properties"].items():
            if "`%s`" % col not in docs and not re.search(r"_(sd|ci95_lo|ci95_hi|real|real_ms|real_s)$", col):
                fail("docs/records.md does not name the %s column `%s`" % (k, col))
            for v in p.get("enum", []):
                if v is not None and "`%s`" % v not in docs:
                    fail("docs/records.md does not name %s.%s's value `%s`" % (k, col, v))
print("%d runs, %d query rows, %d series rows checked against their schemas" % (len(runs), nq, nseries))
sys.exit(bad)
