#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# count.sh - count=: a rule that counts only responses of some statuses,
# in a real httpd (prefork, 4 children) with Basic authentication, as
# brute-force protection does: failed logins (401, answered by an
# ErrorDocument or reached through an internal redirect too) consume,
# right passwords never do, and once the
# limit is spent the client is refused before authentication runs, right
# password or not.  A status outside the set (404) counts nothing.
#
# Each request waits for the last one's access log line (as_counted):
# a count= rule counts after the response, so only then is the last
# request surely counted.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

[ -f "$APACHE_MODULES/mod_rewrite.so" ] || skip "no mod_rewrite in $APACHE_MODULES"
basic_auth alice:apw
docs login errdoc rw go
echo "denied" >"$ROOT/htdocs/401.html"

BODY="$BASIC_AUTH"'
LoadModule rewrite_module @MODULES@/mod_rewrite.so
ThrottleStore local shm:tk-count capacity=1024
ThrottleRule login "gcra:1/1h,burst=5" count=401,403 headers=both
ThrottleRule errdoc "gcra:1/1h,burst=2" count=401
ThrottleRule rw "gcra:1/1h,burst=2" count=401
<Directory @ROOT@/htdocs/login>
    Throttle login
</Directory>
<Directory @ROOT@/htdocs/errdoc>
    Throttle errdoc
    ErrorDocument 401 /401.html
</Directory>
<Directory @ROOT@/htdocs/rw>
    Throttle rw
</Directory>
<Directory @ROOT@/htdocs/go>
    Require all granted
    RewriteEngine On
    RewriteRule ^ /rw/x [L]
</Directory>
<Files 401.html>
    Require all granted
</Files>
'
start_server prefork "$BODY" || { fail "httpd did not start"; finish; }
say "httpd $PID on port $PORT"

check "right passwords never consume" "200 200 200 200 200 200 200 200" \
	"$(as_counted alice:apw /login/x 8)"
check "a status outside the set counts nothing" "404 404 404 404 404 404" \
	"$(as_counted alice:apw /login/nosuch 6)"
check "five wrong passwords consume the limit" "401 401 401 401 401" \
	"$(as_counted alice:wrong /login/x 5)"
check "then a right password is refused, before authentication" "429" \
	"$(as_counted alice:apw /login/x 1)"
check "and a wrong one too" "429" "$(as_counted alice:wrong /login/x 1)"
# The refusal carries the rule's fields: nothing left.
curl -s -o /dev/null -D "$ROOT/h" -u alice:apw "http://127.0.0.1:$PORT/login/x"
check "the refusal's X-RateLimit-Remaining" 0 \
	"$(tr -d '\r' <"$ROOT/h" | sed -n 's/^X-RateLimit-Remaining: //p')"
# An ErrorDocument answers the 401 with a page: the status the client got
# still counts, once per client request.
check "wrong passwords answered by an ErrorDocument" "401 401 429" \
	"$(as_counted alice:wrong /errdoc/x 3)"
# A front controller's internal redirect to a place that asks for a
# password: the redirected request's 401 is the client's status (the
# first request_rec still says 200).
check "wrong passwords through an internal redirect" "401 401 429" \
	"$(as_counted alice:wrong /go/x 3)"
wait_log /login/x 15 || fail "the access log lacks /login/x"
check "access log: THROTTLE_STATUS of the refusals" "REJECTED REJECTED REJECTED" \
	"$(awk '$4 == "/login/x" && $2 == 429 { print $3 }' "$ROOT/logs/access.log" | paste -s -d' ' -)"
no_crashes
finish
