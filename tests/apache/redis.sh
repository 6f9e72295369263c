#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# redis.sh - mod_throttlekit on a Redis store, in a real httpd with the
# prefork MPM (4 children) and a real redis-server that this test starts
# on 127.0.0.1 with a free port and stops by its pid: exact counts across
# children, fail=open and fail=closed with the server stopped and then
# gone, and the status page, none of which shows the password.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

redis_tools

# Every character a URL gives a meaning to.  The spec encodes those its
# parser needs encoded and leaves '@' and ':' raw, which redaction must
# hide up to the last '@'.
PASS='sek@:/?%ret-4711'
PASS_URL='sek@:%2F%3F%25ret-4711'

start_redis || { cat "$ROOT/redis/log"; fail "redis-server did not start"; finish; }
say "redis-server $RPID on port $RPORT"

docs api open closed

SPEC="redis://default:$PASS_URL@127.0.0.1:$RPORT/3?timeout=200ms&connect_timeout=200ms&key_prefix=tkapache:"
SHOWN="redis://default:***@127.0.0.1:$RPORT/3?timeout=200ms&connect_timeout=200ms&key_prefix=tkapache:"
BODY=$(server_body red "$SPEC")

start_server prefork "$BODY" || { fail "httpd did not start"; finish; }

burst_check prefork /api/x
# The counts were kept by the server, not in each child.
check "keys on the Redis server under key_prefix" 1 \
	"$(rcli -n 3 --scan --pattern 'tkapache:*' | wc -l)"
# One connection per child at most (prefork: one thread each), none of
# the parent's; the client list holds redis-cli's own too.
conns=$(rcli client list | grep -vc 'cmd=client')
if [ "$conns" -ge 1 ] && [ "$conns" -le 4 ]; then
	say "ok: $conns connections from httpd"
else
	fail "$conns connections from httpd, expected 1 to 4"
fi

# Every child has connected (the burst) before the server fails.
check "fail=open, server up" "4 200 PASSED" "$(seq_status 4 /open/x)"
check "fail=closed, server up" "4 200 PASSED" "$(seq_status 4 /closed/x)"

# The status page names the store without its password; no check of
# this child failed yet (later, a child's page says whether its own last
# check failed, and which child answers is the kernel's choice).
status_names red "$SHOWN" "the Redis store"

# Stopped (SIGSTOP): connections hang, each command times out.
kill -STOP "$RPID"
check "fail=open, server stopped" "6 200 DEGRADED" "$(seq_status 6 /open/x)"
check "fail=closed, server stopped" "6 503 DEGRADED" "$(seq_status 6 /closed/x)"
kill -CONT "$RPID"
# Back: a child that failed to connect waits out its backoff (at most
# 1 s), then connects again.
sleep 1.5
check "fail=closed, server back" "4 200 PASSED" "$(seq_status 4 /closed/x)"

# Gone (killed): connects are refused at once.
{
	kill -KILL "$RPID"
	wait "$RPID"
} 2>/dev/null
RPID=
check "fail=open, server killed" "6 200 DEGRADED" "$(seq_status 6 /open/x)"
check "fail=closed, server killed" "6 503 DEGRADED" "$(seq_status 6 /closed/x)"

# The 24 degraded answers above were logged, but not a line each: at
# most one per child every 10 s (failures.sh counts them exactly), and
# the log says why.
n=$(grep -c "ThrottleStore red (redis://default:\*\*\*@.*): checks fail: " "$ROOT/logs/error.log")
if [ "$n" -ge 1 ] && [ "$n" -le 8 ]; then
	say "ok: $n error log lines for 24 degraded answers"
else
	fail "$n error log lines for 24 degraded answers, expected 1 to 8"
fi
check "error log: the reason of a child's first failure" yes \
	"$(grep -q 'checks fail: Store server timed out (ETIMEDOUT); first failure in process' \
		"$ROOT/logs/error.log" && echo yes)"

stop_server
for f in "$ROOT/logs/error.log" "$ROOT/logs/access.log" "$ROOT/status.txt" \
	"$ROOT/status.json"; do
	if grep -F -e "$PASS" -e "$PASS_URL" -e ret-4711 "$f"; then
		fail "the password shows in ${f##*/}"
	else
		say "ok: no password in ${f##*/}"
	fi
done
no_crashes
finish
