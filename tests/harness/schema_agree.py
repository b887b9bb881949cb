"""The JSON Schemas `coldstudy schema KIND` prints and coldstudy's own
validators agree on accept / reject, for every example under studies/, the
fuzz corpora of the hypothesis and spec decoders, and mutations of the
accepted ones (each key dropped, retyped, pushed out of range; an unknown
key). The only disagreements allowed are the checks the schema's $comment
names as beyond JSON Schema (band order, rule depth and size, bytes against
characters), and then the validator must be the stricter one.

usage: schema_agree.py COLDSTUDY SRC WORKDIR
"""
import copy
import glob
import json
import os
import subprocess
import sys

import jsonschema

cs, src, work = sys.argv[1:4]
# What the C validator checks beyond the schema (the schemas' $comment).
BEYOND = ["outside band95", "expected low <= high", "nested too deep", "rule too large",
          "NUL characters", "bytes, got", "a range larger than it"]


def load_strict(path):
    """Parse as coldstudy's loader does: UTF-8, no duplicate keys, one object; None if not."""
    def no_dups(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate key")
        return dict(pairs)
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"), object_pairs_hook=no_dups)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def c_check(kind, paths):
    """{path: None (accepted) or the validator's message} from `coldstudy schema KIND --check`."""
    out = {}
    for i in range(0, len(paths), 200):
        chunk = paths[i:i + 200]
        p = subprocess.run([cs, "schema", kind, "--check"] + chunk, capture_output=True, text=True)
        ok = {l[:-len(": ok")] for l in p.stdout.splitlines() if l.endswith(": ok")}
        errs = p.stderr.splitlines()
        for path in chunk:
            if path in ok:
                out[path] = None
            else:
                msg = [l for l in errs if l.startswith(path + ":")]
                out[path] = msg[0] if msg else "(refused: %s)" % p.stderr.strip()[:200]
    return out


def mutations(doc):
    """Variants of an accepted document: each top-level key dropped, retyped, out of range."""
    for k, v in doc.items():
        d = copy.deepcopy(doc); del d[k]; yield "drop " + k, d
        for bad in ("x", "", -1, 0, 10**15, 1.5, True, None, [], {}, [1, 1], ["a", "a"]):
            if bad == v and type(bad) is type(v):
                continue
            d = copy.deepcopy(doc); d[k] = bad; yield "%s=%r" % (k, bad), d
        if isinstance(v, dict):
            for k2 in list(v):
                d = copy.deepcopy(doc); del d[k][k2]; yield "drop %s.%s" % (k, k2), d
                for bad in ("x", -1, 0, 10**15, None, [], {}):
                    d = copy.deepcopy(doc); d[k][k2] = bad; yield "%s.%s=%r" % (k, k2, bad), d
            d = copy.deepcopy(doc); d[k]["zz_unknown"] = 1; yield k + ".zz_unknown", d
    d = copy.deepcopy(doc); d["zz_unknown"] = 1; yield "zz_unknown", d


def files_of(kind):
    if kind == "hypothesis":
        fs = glob.glob(src + "/studies/*/hypotheses/*.json") + glob.glob(src + "/tests/hypotheses/corpus/*")
    elif kind == "study":
        fs = glob.glob(src + "/studies/*/runs/study.json") + \
            [f for f in glob.glob(src + "/tests/harness/corpus/*") if "study" in os.path.basename(f)]
    else:
        fs = [f for f in glob.glob(src + "/studies/*/runs/*.json") + glob.glob(src + "/studies/*/runs/holdout/*.json")
              if os.path.basename(f) != "study.json"] + \
            [f for f in glob.glob(src + "/tests/harness/corpus/*") if "study" not in os.path.basename(f)]
    return sorted(f for f in fs if os.path.isfile(f))


def key_names(s, prefix=""):
    """Every key a schema documents, nested ones as a.b (map members as a.NAME.b)."""
    if "anyOf" in s and "properties" not in s:
        for x in s["anyOf"]:
            yield from key_names(x, prefix)
        return
    for k, v in s.get("properties", {}).items():
        yield prefix + k
        yield from key_names(v, prefix + k + ".")
    ap = s.get("additionalProperties")
    if isinstance(ap, dict):
        yield from key_names(ap, prefix + "NAME.")


docs = open(src + "/docs/specs.md").read()
bad = 0
total = {}
for kind in ("hypothesis", "study", "run"):
    p = subprocess.run([cs, "schema", kind], capture_output=True, text=True)
    if p.returncode != 0:
        print("FAIL: coldstudy schema %s: exit %d: %s" % (kind, p.returncode, p.stderr)); bad = 1; continue
    schema = json.loads(p.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
        print("FAIL: %s schema is not draft 2020-12" % kind); bad = 1
    val = jsonschema.Draft202012Validator(schema)
    for k in key_names(schema):
        if "`%s`" % k not in docs:
            print("FAIL: docs/specs.md does not document %s key %s" % (kind, k)); bad = 1
    files = files_of(kind)
    if not files:
        print("FAIL: no %s examples found" % kind); bad = 1
    # Mutations of every accepted example, written beside the originals' copies.
    cases = list(files)
    first = c_check(kind, files)
    os.makedirs(os.path.join(work, kind), exist_ok=True)
    n = 0
    for f in files:
        if first[f] is not None:
            continue
        doc = load_strict(f)
        for what, d in mutations(doc):
            n += 1
            path = os.path.join(work, kind, "m%05d.json" % n)
            with open(path, "w") as out:
                json.dump(d, out)
            cases.append(path)
            if n % 97 == 0:  # keep a name for the report
                pass
    c = c_check(kind, cases)
    acc = rej = 0
    for f in cases:
        doc = load_strict(f)
        s_ok = doc is not None and val.is_valid(doc)
        c_ok = c[f] is None
        acc += c_ok
        rej += not c_ok
        if s_ok == c_ok:
            continue
        if s_ok and not c_ok and any(b in c[f] for b in BEYOND):
            continue
        bad = 1
        why = "" if s_ok else "; schema: " + next(iter(val.iter_errors(doc))).message[:200] if doc is not None else "; not loadable"
        print("FAIL: %s %s: validator %s%s, schema %s%s" % (
            kind, f, "accepts" if c_ok else "refuses", "" if c_ok else " (" + c[f][:300] + ")",
            "accepts" if s_ok else "refuses", why))
        if f.startswith(work):
            print("      document: " + json.dumps(load_strict(f))[:400])
    total[kind] = (len(files), len(cases) - len(files), acc, rej)
for kind, (nf, nm, acc, rej) in total.items():
    print("%s: %d files + %d mutations; validator and schema agree (%d accepted, %d refused)" %
          (kind, nf, nm, acc, rej))
sys.exit(bad)
