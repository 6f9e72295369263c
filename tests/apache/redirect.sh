#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# redirect.sh - rules follow a request to the place it ends up, in a real
# httpd (prefork, 4 children): a per-directory RewriteRule front
# controller, a DirectoryIndex file under <Files>, candidates that
# DirectoryIndex only probes, and an ErrorDocument, each rule counted
# once per client request however many internal redirects it takes.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

for m in rewrite dir; do
	[ -f "$APACHE_MODULES/mod_$m.so" ] || skip "no mod_$m in $APACHE_MODULES"
done

echo ok >"$ROOT/htdocs/index.html"
mkdir -p "$ROOT/htdocs/target" "$ROOT/htdocs/app" "$ROOT/htdocs/fc" \
	"$ROOT/htdocs/di" "$ROOT/htdocs/probe" "$ROOT/htdocs/ed" \
	"$ROOT/htdocs/edr"
echo target >"$ROOT/htdocs/target/index.html"
echo front >"$ROOT/htdocs/app/index.php"
echo front >"$ROOT/htdocs/fc/index.php"
echo secret >"$ROOT/htdocs/di/secret.txt"
echo second >"$ROOT/htdocs/probe/second.txt"
echo error >"$ROOT/htdocs/ed/404.html"

BODY='
LoadModule rewrite_module @MODULES@/mod_rewrite.so
LoadModule dir_module @MODULES@/mod_dir.so
ThrottleStore local shm:tk-redirect capacity=1024
ThrottleRule tgt "gcra:1/1h,burst=3"
ThrottleRule front "gcra:1/1h,burst=3"
ThrottleRule whole "gcra:1/1h,burst=3"
ThrottleRule secret "gcra:1/1h,burst=3"
ThrottleRule probed "gcra:1/1h,burst=1"
ThrottleRule second "gcra:1/1h,burst=3"
ThrottleRule ed "gcra:1/1h,burst=3"
<Location /target>
    Throttle tgt
</Location>
<Directory @ROOT@/htdocs>
    RewriteEngine On
    RewriteRule ^to-target$ /target/index.html [L]
</Directory>
# A front controller: every path that is not a file goes to index.php.
<Directory @ROOT@/htdocs/app>
    RewriteEngine On
    RewriteCond %{REQUEST_FILENAME} !-f
    RewriteRule ^ index.php [L]
</Directory>
<Location /app/index.php>
    Throttle front
</Location>
# The same with the rule on the whole directory: counted once, not on
# the path asked and again on index.php.
<Directory @ROOT@/htdocs/fc>
    RewriteEngine On
    RewriteCond %{REQUEST_FILENAME} !-f
    RewriteRule ^ index.php [L]
    Throttle whole
</Directory>
<Directory @ROOT@/htdocs/di>
    DirectoryIndex secret.txt
    <Files secret.txt>
        Throttle secret
    </Files>
</Directory>
# first.txt does not exist: DirectoryIndex probes it and serves second.txt.
<Directory @ROOT@/htdocs/probe>
    DirectoryIndex first.txt second.txt
    <Files first.txt>
        Throttle probed
    </Files>
    <Files second.txt>
        Throttle second
    </Files>
</Directory>
<Location /ed>
    Throttle ed
</Location>
ErrorDocument 404 /ed/404.html
<Directory @ROOT@/htdocs/edr>
    RewriteEngine On
    RewriteRule ^ /ed/missing.html [L]
</Directory>
'
start_server prefork "$BODY" || { fail "httpd did not start"; finish; }
say "httpd $PID on port $PORT"

# codes PATH...: one request per PATH, one after the other; the codes.
codes()
{
	for p in "$@"; do
		curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$PORT$p"
	done | paste -s -d' ' -
}

check "direct requests of /target" "200 200 200 429 429" \
	"$(codes /target/ /target/ /target/ /target/ /target/)"
stop_server
# A fresh zone for the same rule, reached by a RewriteRule this time.
rm -f "$ZONES"/*
restart_server || { fail "httpd did not restart"; finish; }
check "/target reached through a RewriteRule" "200 200 200 429 429" \
	"$(codes /to-target /to-target /to-target /to-target /to-target)"
check "a front controller: a rule on index.php" "200 200 200 429 429" \
	"$(codes /app/a /app/b /app/c/d /app/e /app/index.php)"
check "a rule on the whole directory counts once per request" \
	"200 200 200 429 429" "$(codes /fc/a /fc/b /fc/c /fc/d /fc/index.php)"
check "DirectoryIndex secret.txt with <Files secret.txt>" \
	"200 200 200 429 429" "$(codes /di/ /di/ /di/ /di/ /di/secret.txt)"
check "DirectoryIndex: a probed file never counts" \
	"200 200 200 429" "$(codes /probe/ /probe/ /probe/ /probe/)"
check "ErrorDocument: a missing file in the rule's place" \
	"404 404 404 429" "$(codes /ed/a /ed/b /ed/c /ed/d)"
stop_server
rm -f "$ZONES"/*
restart_server || { fail "httpd did not restart"; finish; }
check "ErrorDocument after a RewriteRule: counted once" "404 404 404 429" \
	"$(codes /edr/a /edr/b /edr/c /edr/d)"
wait_log /edr/d 1 || fail "the access log lacks /edr/d"
# Each request's status beside its THROTTLE_STATUS, in any order (a child
# logs after its response: the next request may be logged first).
check "access log: THROTTLE_STATUS of the redirected requests" \
	"404:PASSED 404:PASSED 404:PASSED 429:REJECTED" \
	"$(awk '$4 ~ /^\/edr\// { print $2 ":" $3 }' "$ROOT/logs/access.log" |
		sort | paste -s -d' ' -)"
no_crashes
finish
