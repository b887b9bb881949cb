#!/bin/sh
# `coldstudy log publish S --to URL` against a real web server: Debian's nginx
# with its DAV module (PUT), started here on 127.0.0.1 on a free port with a
# private prefix and config, stopped by the trap. Asserts: the first publish
# PUTs every tile and then the checkpoint; the published log, read back over
# HTTP, is byte for byte what `log tiles` writes and its checkpoint verifies
# against the study (`log verify --checkpoint`); a second publish with nothing
# new sends nothing; after the log grows, a publish sends only new tiles (the
# full tile tile/0/000 is PUT once in all) and the checkpoint last; a publish
# interrupted before its checkpoint (the server's checkpoint put back) is
# resumed: the same tiles again, then the checkpoint; a log whose history
# diverged from the server's (same key) and another study's log are refused
# with exit 4 and send nothing; an unreachable server is exit 1; a C2SP
# tlog-witness (a small Python one here) is asked with the consistency proof
# from the size it holds (after its 409) and its cosignature is stored in
# S/checkpoint.witnessed. Skips (77) without nginx or python3.
set -u
cs=${COLDSTUDY:?}; w=${LEDGER_WRITER:?}; src=${COLDSTUDY_SRC:?}
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "no nginx"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "no python3"; exit 77; }
T=$(mktemp -d /tmp/cs-pubtiles-XXXXXX)
npid=; wpid=
cleanup() {
	[ -n "$npid" ] && kill "$npid" 2>/dev/null && wait "$npid" 2>/dev/null
	[ -n "$wpid" ] && kill "$wpid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
fail=0
die() { echo "FAIL: $*"; fail=1; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

port=$(freeport)
mkdir -p "$T/www/log" "$T/tmp" "$T/logs"; chmod 755 "$T"   # nginx workers run as nobody
chmod -R a+rwx "$T/www" "$T/tmp" "$T/logs"
cat > "$T/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $T/nginx.pid;
error_log $T/logs/error.log;
events { worker_connections 64; }
http {
    access_log $T/logs/access.log;
    client_body_temp_path $T/tmp/body;
    proxy_temp_path $T/tmp/proxy;
    fastcgi_temp_path $T/tmp/fastcgi;
    uwsgi_temp_path $T/tmp/uwsgi;
    scgi_temp_path $T/tmp/scgi;
    client_max_body_size 16m;
    server {
        listen 127.0.0.1:$port;
        root $T/www;
        location / {
            dav_methods PUT;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
        }
    }
}
CONF
"$NGINX" -p "$T" -c "$T/nginx.conf" -e "$T/logs/error.log" & npid=$!
i=0; while ! python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/')" 2>/dev/null && [ $i -lt 50 ]; do
	# 403 or 404 for / still means it is up
	python3 -c "
import sys, urllib.request, urllib.error
try: urllib.request.urlopen('http://127.0.0.1:$port/')
except urllib.error.HTTPError: sys.exit(0)
except Exception: sys.exit(1)" && break
	sleep 0.1; i=$((i + 1))
done
kill -0 "$npid" 2>/dev/null || { echo "FAIL: nginx did not start: $(cat "$T/logs/error.log" 2>/dev/null)"; exit 1; }
U=http://127.0.0.1:$port/log/
puts() { grep -c '"PUT ' "$T/logs/access.log"; }
fetch() { # fetch the published log into $1 (the files `log tiles` writes)
	python3 - "$U" "$1" "$2" <<'PY'
import os, sys, urllib.request
base, out, ref = sys.argv[1:4]
for dp, _, fs in os.walk(ref):
    for f in fs:
        rel = os.path.relpath(os.path.join(dp, f), ref)
        os.makedirs(os.path.dirname(os.path.join(out, rel)), exist_ok=True)
        with urllib.request.urlopen(base + rel) as r, open(os.path.join(out, rel), "wb") as o:
            o.write(r.read())
PY
}

"$cs" init "$T/S" >/dev/null || exit 1
for i in 1 2 3; do sed "s/\"H1\"/\"H$i\"/" "$src/tests/ledger/data/H1.json" > "$T/h$i.json"; done
"$cs" register "$T/S" "$T/h1.json" "$T/h2.json" "$T/h3.json" >/dev/null || exit 1
cp -r "$T/S" "$T/S-fork"   # the same study (key, origin) before it grows: a history to diverge

# 1. first publish: 2 tiles (tile/0, entries) and the checkpoint
out=$("$cs" log publish "$T/S" --to "$U" 2>&1) || die "publish: $out"
echo "$out"
[ "$(puts)" = 3 ] || die "first publish: $(puts) PUTs, expected 3"
"$cs" log tiles "$T/S" --out "$T/local" >/dev/null || exit 1
rm -rf "$T/got"; fetch "$T/got" "$T/local" || die "fetching the published log"
diff -r "$T/local" "$T/got" >/dev/null || die "the published log differs from log tiles"
"$cs" log verify "$T/S" --checkpoint "$T/got/checkpoint" >/dev/null || die "the published checkpoint does not verify"

# 2. nothing new: nothing sent
out=$("$cs" log publish "$T/S" --to "$U" 2>&1) || die "publish again: $out"
case "$out" in *"up to date"*) ;; *) die "second publish: $out" ;; esac
[ "$(puts)" = 3 ] || die "a publish with nothing new sent $(($(puts) - 3)) PUTs"

# 3. the log grows past a full tile: only new tiles, the checkpoint last
"$w" "$T/S" grow 300 >/dev/null || exit 1
n0=$(puts)
out=$("$cs" log publish "$T/S" --to "$U" 2>&1) || die "publish after growth: $out"
echo "$out"
sent=$(($(puts) - n0))
# new at size 303 from 3: tile/0/000, 001.p/47, entries 000, 001.p/47, tile/1/000.p/1, checkpoint
[ "$sent" = 6 ] || die "publish after growth sent $sent PUTs, expected 6"
[ "$(tail -n 1 "$T/logs/access.log" | grep -c '"PUT /log/checkpoint ')" = 1 ] || die "the checkpoint was not sent last"
[ "$(grep -c '"PUT /log/tile/0/000 ' "$T/logs/access.log")" = 1 ] || die "tile/0/000 sent more than once"
rm -rf "$T/local" "$T/got"; "$cs" log tiles "$T/S" --out "$T/local" >/dev/null
fetch "$T/got" "$T/local" && diff -r "$T/local" "$T/got" >/dev/null || die "the grown published log differs from log tiles"
"$cs" log verify "$T/S" --checkpoint "$T/got/checkpoint" >/dev/null || die "the grown published checkpoint does not verify"

# 4. resumable: an upload interrupted before its checkpoint is completed by the next run
cp "$T/www/log/checkpoint" "$T/cp303"
"$w" "$T/S" more 10 >/dev/null || exit 1
"$cs" log publish "$T/S" --to "$U" >/dev/null 2>&1 || die "publish 313"
cp "$T/cp303" "$T/www/log/checkpoint"   # as if the run died before its last PUT
n0=$(puts)
out=$("$cs" log publish "$T/S" --to "$U" 2>&1) || die "resumed publish: $out"
case "$out" in *"the server had 303"*) ;; *) die "resumed publish did not start from 303: $out" ;; esac
[ "$(($(puts) - n0))" -gt 1 ] || die "the resumed publish sent no tiles"
rm -rf "$T/local" "$T/got"; "$cs" log tiles "$T/S" --out "$T/local" >/dev/null
fetch "$T/got" "$T/local" && diff -r "$T/local" "$T/got" >/dev/null || die "the resumed published log differs from log tiles"

# 5. refused: a diverged history of the same study, another study (exit 4, nothing sent)
"$w" "$T/S-fork" fork 330 >/dev/null || exit 1   # 333 records, the server has 313 of another history
n0=$(puts)
out=$("$cs" log publish "$T/S-fork" --to "$U" 2>&1); rc=$?
case "$rc $out" in "4 "*"not an ancestor"*) echo "ok: diverged history refused: $out" ;; *) die "diverged history: exit $rc: $out" ;; esac
"$cs" init "$T/O" >/dev/null && "$cs" register "$T/O" "$T/h1.json" >/dev/null
out=$("$cs" log publish "$T/O" --to "$U" 2>&1); rc=$?
[ $rc = 4 ] || die "another study's log: exit $rc: $out"
[ "$(puts)" = "$n0" ] || die "a refused publish sent something"

# 6. an unreachable server: exit 1
dead=$(freeport)
out=$("$cs" log publish "$T/S" --to "http://127.0.0.1:$dead/log/" --timeout 5 2>&1); rc=$?
[ $rc = 1 ] || die "unreachable server: exit $rc: $out"

# 7. a witness (C2SP tlog-witness add-checkpoint): 409 with its size, then the proof from there
wport=$(freeport)
cat > "$T/witness.py" <<'PY'
import base64, http.server, sys
state = {"size": None}
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        head, note = body.split("\n\n", 1)
        lines = head.split("\n")
        old = int(lines[0].split(" ")[1]); proof = lines[1:]
        size = int(note.split("\n")[1])
        ok = all(len(base64.b64decode(p)) == 32 for p in proof)
        if state["size"] is not None and old != state["size"]:
            self.reply(409, "%d\n" % state["size"]); return
        if not ok or (0 < old < size) != (len(proof) > 0) or not note.rstrip("\n").split("\n")[-1].startswith("\u2014 "):
            self.reply(422, "bad proof\n"); return
        state["size"] = size
        sig = base64.b64encode(b"\x01\x02\x03\x04" + size.to_bytes(8, "big") + bytes(64)).decode()
        self.reply(200, "\u2014 witness.test/w1 %s\n" % sig)
    def reply(self, code, text):
        b = text.encode()
        self.send_response(code); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
s.serve_forever()
PY
python3 "$T/witness.py" "$wport" & wpid=$!
i=0; until python3 -c "import socket; socket.create_connection(('127.0.0.1', $wport), 1)" 2>/dev/null || [ $i -ge 50 ]; do sleep 0.1; i=$((i + 1)); done
out=$("$cs" log publish "$T/S" --to "$U" --witness "http://127.0.0.1:$wport/" 2>&1) || die "publish with a witness: $out"
grep -q "^— witness.test/w1 " "$T/S/checkpoint.witnessed" || die "no cosignature stored"
"$w" "$T/S" wit 5 >/dev/null
out=$("$cs" log publish "$T/S" --to "$U" --witness "http://127.0.0.1:$wport/" 2>&1) || die "second publish with a witness (409, then a proof): $out"
echo "$out" | tail -n 1
"$cs" log verify "$T/S" --checkpoint "$T/S/checkpoint.witnessed" >/dev/null || die "the witnessed checkpoint does not verify"
exit $fail
