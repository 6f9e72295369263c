#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# failures.sh - store failures that the rules' fail policies absorb are
# logged at a bounded rate and shown on the status page, in a real httpd
# with one prefork child (what it logs and counts is all there is) and a
# real redis-server:
#   - a Redis store with a wrong password: every check fails (EACCES);
#     fail=open admits, fail=closed refuses with 503 and Retry-After; the
#     error log has one line for the first failure, then none until 10 s
#     have passed, then one with the counts since; the status page says
#     open=failed with the reason and the counts; once the password is
#     right, the page says open=ok;
#   - a zone the child cannot open (owner=nobody, mode 0600: the child
#     runs as www-data): its rules answer by their fail policy, open
#     admits and closed refuses.
# Needs root (User www-data, owner=).
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

[ "$(id -u)" -eq 0 ] || skip_by_design "needs root (owner=, User)"
redis_tools

PASS=right-4711
WRONG=wrong-4711
start_redis || { cat "$ROOT/redis/log"; fail "redis-server did not start"; finish; }
say "redis-server $RPID on port $RPORT"

docs ro rc zo zc

SHOWN="redis://default:***@127.0.0.1:$RPORT?timeout=500ms"
BODY="
ThrottleStore red redis://default:$WRONG@127.0.0.1:$RPORT?timeout=500ms
ThrottleStore z shm:tk-fail owner=nobody
ThrottleRule ro \"gcra:1/1h,burst=100\" store=red fail=open
ThrottleRule rc \"gcra:1/1h,burst=100\" store=red fail=closed
ThrottleRule zo \"gcra:1/1h,burst=100\" store=z fail=open
ThrottleRule zc \"gcra:1/1h,burst=100\" store=z fail=closed
<Location /ro>
    Throttle ro
</Location>
<Location /rc>
    Throttle rc
</Location>
<Location /zo>
    Throttle zo
</Location>
<Location /zc>
    Throttle zc
</Location>
<Location /tk-status>
    SetHandler throttlekit-status
</Location>"

start_server prefork1 "$BODY" || { fail "httpd did not start"; finish; }
LOG=$ROOT/logs/error.log

# codes N PATH: "COUNT CODE" lines of N requests one after the other.
codes() { seq_get "$1" "$2" | sort | uniq -c | awk '{ print $1, $2 }'; }

check "wrong password, fail=open" "12 200" "$(codes 12 /ro/x)"
check "wrong password, fail=closed" "6 503" "$(codes 6 /rc/x)"
check "its Retry-After" 1 "$(curl -s -o /dev/null -w '%header{retry-after}' \
	"http://127.0.0.1:$PORT/rc/x")"
wait_log /rc/x 7 || fail "the access log lacks /rc/x"
check "access log: DEGRADED" 19 \
	"$(awk '$3 == "DEGRADED"' "$ROOT/logs/access.log" | wc -l)"

# One line at once, naming the error, the store without its password,
# and what answered the first failure; none for the 18 after it.
red_lines() { grep -F "ThrottleStore red ($SHOWN): checks fail: " "$LOG"; }
first=$(red_lines)
check "error log: lines for 19 failed checks" 1 "$(red_lines | wc -l)"
case $first in
*"checks fail: Zone not trusted or not accessible, or server login refused (EACCES); first failure in process "*": 1 admitted (fail=open), 0 refused (fail=closed) (at most a line per store every 10 s in each child)")
	say "ok: the line says why and what answered" ;;
*) fail "the first line: $first" ;;
esac

# The status page of the one child: the store failed, why, and how often.
status=$(curl -s "http://127.0.0.1:$PORT/tk-status")
json=$(curl -s "http://127.0.0.1:$PORT/tk-status?json")
line=$(grep -n "^ThrottleStore red " "$CONF" | cut -d: -f1)
check "status page: the Redis store failed" 1 \
	"$(printf '%s\n' "$status" | grep -cxF "store red spec=$SHOWN declared=$CONF:$line open=failed: Zone not trusted or not accessible, or server login refused (EACCES)")"
check "status page: its failures" 1 \
	"$(printf '%s\n' "$status" | grep -cE '^  failures checks=19 admitted=12 refused=7 last="[^"]+ GMT" error=EACCES reason="Zone not trusted or not accessible, or server login refused"$')"
check "status page (json): the Redis store failed" 1 \
	"$(printf '%s\n' "$json" | grep -cF "\"spec\":\"$SHOWN\",\"file\":\"$CONF\",\"line\":$line,\"open\":\"failed: Zone not trusted or not accessible, or server login refused (EACCES)\",\"failures\":{\"checks\":19,\"admitted\":12,\"refused\":7,\"last_error\":\"EACCES\",\"last_reason\":\"Zone not trusted or not accessible, or server login refused\",\"last_at\":\"")"

if command -v python3 >/dev/null 2>&1; then
	check "status page (json): parses, the failures of each store" \
		"red 19 12 7 EACCES; z 0 0 0 None" \
		"$(printf '%s\n' "$json" | python3 -c '
import json, sys
print("; ".join("%s %d %d %d %s" % (s["name"], s["failures"]["checks"],
    s["failures"]["admitted"], s["failures"]["refused"],
    s["failures"]["last_error"]) for s in json.load(sys.stdin)["stores"]))')"
fi

# The zone the child cannot open: failed before any check asked it.
case $status in
*"store z spec=shm:tk-fail declared="*"open=failed: "*"(EACCES)
  zone "*) say "ok: the status page says the zone failed to open" ;;
*) fail "the status page on the zone before a check: $status" ;;
esac
# Its rules answer by their fail policy.
check "zone not opened, fail=open" "3 200" "$(codes 3 /zo/x)"
check "zone not opened, fail=closed" "3 503" "$(codes 3 /zc/x)"
status=$(curl -s "http://127.0.0.1:$PORT/tk-status")
case $status in
*"store z spec=shm:tk-fail declared="*"open=failed: "*"(EACCES)"*"  failures checks=6 admitted=3 refused=3 "*)
	say "ok: the status page says the zone failed" ;;
*) fail "the status page on the zone: $status" ;;
esac
check "error log: the zone's failures" 1 \
	"$(grep -c "ThrottleStore z (shm:tk-fail): checks fail: .*(EACCES); first failure in process .*: 1 admitted (fail=open), 0 refused (fail=closed)" "$LOG")"

# 10 s after the first line, the next failure writes the second: what
# was absorbed since the first (18 checks before, this one after).
sleep 10
check "10 s later, fail=open" 200 "$(seq_get 1 /ro/x)"
check "error log: a second line" 2 "$(red_lines | wc -l)"
case $(red_lines | tail -n 1) in
*"checks fail: "*"(EACCES); in the last 1"[0-9]" s: 19 failed check(s), 12 admitted (fail=open), 7 refused (fail=closed); 20 in all in process "*)
	say "ok: the second line counts what came since the first" ;;
*) fail "the second line: $(red_lines | tail -n 1)" ;;
esac

# The password the store has: checks work, and the page says so.
rcli config set requirepass "$WRONG" >/dev/null
PASS=$WRONG
# The child's connection waits out its backoff (at most 1 s) first.
sleep 1.2
check "right password" "2 200" "$(codes 2 /rc/x)"
wait_log /rc/x 9 || fail "the access log lacks /rc/x"
check "access log: PASSED" 2 \
	"$(awk '$4 == "/rc/x" && $3 == "PASSED"' "$ROOT/logs/access.log" | wc -l)"
check "status page: the Redis store works" 1 \
	"$(curl -s "http://127.0.0.1:$PORT/tk-status" | grep -cxF "store red spec=$SHOWN declared=$CONF:$line open=ok")"

stop_server
if grep -F -e "$WRONG" -e right-4711 "$LOG" "$ROOT/logs/access.log"; then
	fail "a password shows in the logs"
else
	say "ok: no password in the logs"
fi
no_crashes
finish
