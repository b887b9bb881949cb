#!/bin/sh
# coldstudy log publish against a real HTTP server on 127.0.0.1 (python3's
# http.server, accepting POST and saving each request): the server receives
# the exact checkpoint text and the exact export; a `note` record names the
# URL (without its password), the checkpoint and the status; HTTP 500 is
# exit 1 with the status in one line and records nothing; an unreachable
# port is exit 1; --dry-run prints the checkpoint and sends and records
# nothing; a non-http URL is exit 2; a tampered ledger is exit 4 before
# anything is sent; a redirect (3xx) is not followed and is exit 1. Uses
# `coldstudy log publish` once the log verb dispatches it,
# else the same cmd_log_publish through publish_main.
set -u
cs=${COLDSTUDY:?}; fx=${REPORT_FIXTURE:?}; pm=${PUBLISH_MAIN:?}
command -v python3 >/dev/null 2>&1 || { echo "no python3"; exit 77; }
T=$(mktemp -d /tmp/cs-publish-XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT INT TERM
fail=0
die() { echo "FAIL: $*"; fail=1; }

if "$cs" log publish --help >/dev/null 2>&1; then pub() { "$cs" log publish "$@"; }
else pub() { "$pm" publish "$@"; }; fi

cat > "$T/server.py" <<'PY'
import http.server, os, sys
out = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    n = 0
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        H.n += 1
        base = os.path.join(out, "req%d" % H.n)
        with open(base + ".head", "w") as f:
            f.write("path: %s\n" % self.path)
            for k, v in self.headers.items():
                f.write("%s: %s\n" % (k, v))
        with open(base + ".body", "wb") as f:
            f.write(body)
        code, msg = (500, b"boom: the log store is down\n") if self.path.startswith("/fail") else (201, b"stored\n")
        if self.path.startswith("/moved"):
            code, msg = 301, b"moved\n"
        self.send_response(code)
        if code == 301:
            self.send_header("Location", "/log")
        self.send_header("Content-Length", str(len(msg)))
        self.end_headers()
        self.wfile.write(msg)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(os.path.join(out, "port.tmp"), "w") as f:
    f.write(str(s.server_address[1]))
os.rename(os.path.join(out, "port.tmp"), os.path.join(out, "port"))
s.serve_forever()
PY
mkdir "$T/srv"
python3 "$T/server.py" "$T/srv" & pid=$!
i=0; while [ ! -s "$T/srv/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$T/srv/port" ] || { echo "FAIL: the test server did not start"; exit 1; }
port=$(cat "$T/srv/port")

"$cs" init "$T/S" >/dev/null && "$fx" "$T/S" || { echo "FAIL: study setup"; exit 1; }
"$cs" log checkpoint "$T/S" > "$T/cp" && "$cs" log export "$T/S" > "$T/export" || exit 1
n0=$(wc -l < "$T/export")

# dry run: prints the checkpoint, sends and records nothing
pub "$T/S" --url "http://127.0.0.1:$port/log" --dry-run > "$T/dry" 2>"$T/err" || die "dry run: exit $?: $(cat "$T/err")"
grep -qxF "$(sed -n 3p "$T/cp")" "$T/dry" || die "dry run does not print the checkpoint"
[ ! -e "$T/srv/req1.body" ] || die "dry run sent a request"
[ "$("$cs" log export "$T/S" | wc -l)" = "$n0" ] || die "dry run recorded something"

# publish: the server gets exactly the checkpoint and the export
"$cs" log checkpoint "$T/S" --origin "example.org/cold" > "$T/cp2" || die "log checkpoint --origin"
pub "$T/S" --url "http://alice:s3cret@127.0.0.1:$port/log?study=1" --origin "example.org/cold" \
	> "$T/out" 2>"$T/err" || die "publish: exit $?: $(cat "$T/err")"
python3 - "$T/srv/req1" "$T/cp2" "$T/export" <<'PY' || fail=1
import email.parser, email.policy, sys
base, cpf, exf = sys.argv[1:]
head = open(base + ".head").read()
body = open(base + ".body", "rb").read()
ctype = [l.split(": ", 1)[1] for l in head.splitlines() if l.lower().startswith("content-type:")][0]
msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
    b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
parts = {p.get_param("name", header="content-disposition"): p.get_payload(decode=True)
         for p in msg.iter_parts()}
bad = 0
if parts.get("checkpoint") != open(cpf, "rb").read():
    print("FAIL: the server got checkpoint %r, expected %r" % (parts.get("checkpoint"), open(cpf, "rb").read())); bad = 1
if parts.get("records") != open(exf, "rb").read():
    print("FAIL: the server's records part is not the export"); bad = 1
if "path: /log?study=1" not in head or "X-Coldstudy-Tree-Size:" not in head:
    print("FAIL: request line or headers: " + head); bad = 1
sys.exit(bad)
PY
"$cs" log export "$T/S" | tail -n 1 > "$T/note"
python3 - "$T/note" "$T/cp2" "$port" <<'PY' || fail=1
import json, sys
r = json.loads(open(sys.argv[1]).read())
p = r["payload"]
want_url = "http://127.0.0.1:%s/log?study=1" % sys.argv[3]
ok = (r["kind"] == "note" and p["published"] == want_url and p["status"] == 201
      and p["checkpoint"] == open(sys.argv[2]).read() and "s3cret" not in json.dumps(r))
if not ok:
    print("FAIL: note record: %r" % r); sys.exit(1)
PY
grep -q "s3cret" "$T/out" && die "the password was printed"

# HTTP 500: exit 1, status in one line, nothing recorded
n1=$("$cs" log export "$T/S" | wc -l)
pub "$T/S" --url "http://127.0.0.1:$port/fail" > "$T/out" 2>"$T/err"; rc=$?
[ $rc = 1 ] || die "HTTP 500: exit $rc, expected 1"
[ "$(wc -l < "$T/err")" = 1 ] && grep -q "HTTP 500: boom" "$T/err" || die "HTTP 500 message: $(cat "$T/err")"
[ "$("$cs" log export "$T/S" | wc -l)" = "$n1" ] || die "a failed publish recorded something"

# a redirect is not followed and is not success
pub "$T/S" --url "http://127.0.0.1:$port/moved" > "$T/out" 2>"$T/err"; rc=$?
[ $rc = 1 ] && grep -q "HTTP 301 (a redirect)" "$T/err" || die "redirect: exit $rc: $(cat "$T/err")"
[ "$("$cs" log export "$T/S" | wc -l)" = "$n1" ] || die "a redirected publish recorded something"

# nothing listening: exit 1 within the timeout
kill "$pid"; wait "$pid" 2>/dev/null; pid=
pub "$T/S" --url "http://127.0.0.1:$port/log" --timeout 5 > "$T/out" 2>"$T/err"; rc=$?
[ $rc = 1 ] || die "unreachable: exit $rc, expected 1: $(cat "$T/err")"

# usage and refusals
pub "$T/S" --url "ftp://127.0.0.1/x" >/dev/null 2>&1; [ $? = 2 ] || die "ftp URL: expected exit 2"
pub "$T/S" >/dev/null 2>&1; [ $? = 2 ] || die "no --url: expected exit 2"
if command -v sqlite3 >/dev/null 2>&1; then
	sqlite3 "$T/S/ledger.db" "DROP TRIGGER records_no_update; UPDATE records SET payload = replace(payload, 'fixture', 'fixturf') WHERE seq = 1"
	pub "$T/S" --url "http://127.0.0.1:$port/log" >/dev/null 2>"$T/err"; rc=$?
	[ $rc = 4 ] || die "tampered: exit $rc, expected 4: $(cat "$T/err")"
fi
[ $fail = 0 ] && echo "ok: publish"
exit $fail
