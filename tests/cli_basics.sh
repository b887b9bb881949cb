#!/bin/sh
# The command's surface: help, --help on every verb, exit code 2 on usage errors.
set -u
cs=${COLDSTUDY:?}
fail=0
check() { # expected-exit description command...
	exp=$1; what=$2; shift 2
	"$@" >/dev/null 2>&1; got=$?
	if [ "$got" != "$exp" ]; then echo "FAIL: $what: exit $got, expected $exp"; fail=1; fi
}
check 0 "help" "$cs" help
check 2 "no verb" "$cs"
check 2 "unknown verb" "$cs" frobnicate
for v in $("$cs" help | awk '/^  [a-z]/ {print $1}'); do
	out=$("$cs" "$v" --help 2>&1); rc=$?
	if [ $rc -ne 0 ]; then echo "FAIL: $v --help exit $rc"; fail=1; fi
	case "$out" in *usage*) ;; *) echo "FAIL: $v --help prints no usage"; fail=1 ;; esac
done
# A verb's unknown option is a usage error, never ignored.
check 2 "device list --bogus" "$cs" device list --bogus
check 2 "device list extra" "$cs" device list extra
check 2 "runs --bogus" "$cs" runs --bogus
check 2 "schema without a kind" "$cs" schema
check 2 "run -q --progress" "$cs" run S r.json -q --progress
exit $fail
