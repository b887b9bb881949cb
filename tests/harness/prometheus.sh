#!/bin/sh
# The Prometheus sampler against a real HTTP server on loopback: python's
# http.server serves a metrics file; the sampler test must read its gauge.
set -u
t=${TEST_SAMPLE:?}
command -v python3 >/dev/null 2>&1 || exit 77
d=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$d"; }
trap cleanup EXIT INT TERM
printf '# TYPE coldstudy_test_gauge gauge\ncoldstudy_test_gauge 7\nother{a="b"} 3\n' > "$d/metrics"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$d" >/dev/null 2>&1 &
pid=$!
i=0
while ! python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/metrics')" 2>/dev/null; do
	i=$((i + 1)); [ $i -gt 50 ] && { echo "server did not start"; exit 1; }
	sleep 0.1
done
PROM_URL="http://127.0.0.1:$port/metrics" "$t"
