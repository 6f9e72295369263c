#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# auth.sh - a rule keyed by the authenticated user, in a real httpd
# (prefork, 4 children) with Basic authentication: two users behind one
# address get a bucket each (the rule is checked after authentication
# because its key reads REMOTE_USER), phase=early forces the check
# before authentication (every user then falls back to the address),
# and an address rule still refuses before authentication is asked.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

basic_auth alice:apw bob:bpw
docs user early addr

BODY="$BASIC_AUTH"'
ThrottleStore local shm:tk-auth capacity=1024
ThrottleRule user "gcra:1/1h,burst=2" key=%{REMOTE_USER}
ThrottleRule early "gcra:1/1h,burst=2" key=%{REMOTE_USER} phase=early
ThrottleRule addr "gcra:1/1h,burst=2"
<Directory @ROOT@/htdocs/user>
    Throttle user
</Directory>
<Directory @ROOT@/htdocs/early>
    Throttle early
</Directory>
<Directory @ROOT@/htdocs/addr>
    Throttle addr
</Directory>
'
start_server prefork "$BODY" || { fail "httpd did not start"; finish; }
say "httpd $PID on port $PORT"

check "key=%{REMOTE_USER}: alice" "200 200 429" "$(as alice:apw /user/x 3)"
check "key=%{REMOTE_USER}: bob, same address" "200 200 429" \
	"$(as bob:bpw /user/x 3)"
check "key=%{REMOTE_USER} phase=early: alice" "200 200 429" \
	"$(as alice:apw /early/x 3)"
check "key=%{REMOTE_USER} phase=early: bob shares the address key" "429" \
	"$(as bob:bpw /early/x 1)"
# An address rule is checked before authentication: once refused, a
# wrong password gets 429, not 401.
check "address rule: wrong passwords" "401 401 429 429" \
	"$(as alice:wrong /addr/x 4)"
check "address rule: right password after the refusals" "429" \
	"$(as alice:apw /addr/x 1)"
wait_log /user/x 6 || fail "the access log lacks /user/x"
# Each request's status beside its THROTTLE_STATUS, in any order: a child
# logs a request after its response, so the next one, served by another
# child, may be logged first.
check "access log: THROTTLE_STATUS of /user/x" \
	"200:PASSED 200:PASSED 200:PASSED 200:PASSED 429:REJECTED 429:REJECTED" \
	"$(awk '$4 == "/user/x" { print $2 ":" $3 }' "$ROOT/logs/access.log" |
		sort | paste -s -d' ' -)"
no_crashes
finish
