#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# htaccess.sh - Throttle in .htaccess files, in a real httpd (prefork, 4
# children): AllowOverride Limit, which many sites grant for Order and
# Allow, does not let a .htaccess switch a limit off (the directive is
# refused, or ignored under Nonfatal=Override, and the limit holds); only
# AllowOverrideList Throttle lets it, and then it works as in the server
# configuration.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

docs limit nonfatal optin optrule
for d in limit nonfatal optin; do
	echo "Throttle off" >"$ROOT/htdocs/$d/.htaccess"
done
echo "Throttle other" >"$ROOT/htdocs/optrule/.htaccess"
chmod -R a+rX "$ROOT/htdocs"

BODY='
ThrottleStore local shm:tk-htaccess capacity=1024
ThrottleRule limit "gcra:1/1h,burst=3"
ThrottleRule nonfatal "gcra:1/1h,burst=3"
ThrottleRule optin "gcra:1/1h,burst=3"
ThrottleRule optrule "gcra:1/1h,burst=3"
ThrottleRule other "gcra:1/1h,burst=1"
AccessFileName .htaccess
<Directory @ROOT@/htdocs/limit>
    AllowOverride Limit
    Throttle limit
</Directory>
<Directory @ROOT@/htdocs/nonfatal>
    AllowOverride Limit Nonfatal=Override
    Throttle nonfatal
</Directory>
<Directory @ROOT@/htdocs/optin>
    AllowOverride Limit
    AllowOverrideList Throttle
    Throttle optin
</Directory>
<Directory @ROOT@/htdocs/optrule>
    AllowOverride None
    AllowOverrideList Throttle
    Throttle optrule
</Directory>
'
start_server prefork "$BODY" || { fail "httpd did not start"; finish; }
say "httpd $PID on port $PORT"

codes() { seq_get "$1" "$2" | paste -s -d' ' -; }

# AllowOverride Limit: the .htaccess is refused as a whole (httpd's answer
# to any directive its AllowOverride does not grant), never unlimited.
check "AllowOverride Limit: Throttle off refused" "500 500 500 500" \
	"$(codes 4 /limit/x)"
check "AllowOverride Limit: the error log says why" yes \
	"$(grep -q 'Throttle not allowed here' "$ROOT/logs/error.log" &&
		echo yes || echo no)"
# Nonfatal=Override: the directive is ignored and the limit holds.
check "AllowOverride Limit Nonfatal=Override: still limited" \
	"200 200 200 429 429" "$(codes 5 /nonfatal/x)"
# The opt-in: AllowOverrideList Throttle.
check "AllowOverrideList Throttle: Throttle off" "200 200 200 200 200" \
	"$(codes 5 /optin/x)"
check "AllowOverrideList Throttle: another rule" "200 429 429" \
	"$(codes 3 /optrule/x)"
stop_server
no_crashes
finish
