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

for m in auth_basic authn_core authn_file authz_user; do
	[ -f "$APACHE_MODULES/mod_$m.so" ] || skip "no mod_$m in $APACHE_MODULES"
done
command -v htpasswd >/dev/null 2>&1 || skip "htpasswd is needed"

htpasswd -bcB "$ROOT/htpasswd" alice apw >/dev/null 2>&1 &&
	htpasswd -bB "$ROOT/htpasswd" bob bpw >/dev/null 2>&1 ||
	{ fail "htpasswd failed"; finish; }
chmod 644 "$ROOT/htpasswd"
echo ok >"$ROOT/htdocs/index.html"
for d in user early addr; do
	mkdir -p "$ROOT/htdocs/$d"
	echo "$d" >"$ROOT/htdocs/$d/x"
done

BODY='
LoadModule auth_basic_module @MODULES@/mod_auth_basic.so
LoadModule authn_core_module @MODULES@/mod_authn_core.so
LoadModule authn_file_module @MODULES@/mod_authn_file.so
LoadModule authz_user_module @MODULES@/mod_authz_user.so
ThrottleStore local shm:tk-auth capacity=1024
ThrottleRule user "gcra:1/1h,burst=2" key=%{REMOTE_USER}
ThrottleRule early "gcra:1/1h,burst=2" key=%{REMOTE_USER} phase=early
ThrottleRule addr "gcra:1/1h,burst=2"
<Directory @ROOT@/htdocs>
    AuthType Basic
    AuthName tk
    AuthBasicProvider file
    AuthUserFile @ROOT@/htpasswd
    Require valid-user
</Directory>
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

# as USER:PASSWORD PATH N: N requests; the codes.
as()
{
	i=0
	while [ $i -lt "$3" ]; do
		i=$((i + 1))
		curl -s -o /dev/null -u "$1" -w '%{http_code}\n' \
			"http://127.0.0.1:$PORT$2"
	done | paste -s -d' ' -
}

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
check "access log: THROTTLE_STATUS of /user/x" \
	"PASSED PASSED REJECTED PASSED PASSED REJECTED" \
	"$(awk '$4 == "/user/x" { print $3 }' "$ROOT/logs/access.log" | paste -s -d' ' -)"
no_crashes
finish
