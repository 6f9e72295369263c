#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# prefork.sh - mod_throttlekit in a real httpd with the prefork MPM (4
# children): exact counts across children, the header fields, restarts,
# killed children, virtual hosts, X-Forwarded-For, ErrorDocument,
# dry-run, delay=, fail=open|closed and the status handler.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

MPM=prefork
mkdir -p "$ROOT/htdocs/api" "$ROOT/htdocs/err"
echo ok >"$ROOT/htdocs/index.html"
for d in api kill v xff v6 err dry shape short fo fc lo lc key g g/only5 ht any; do
	mkdir -p "$ROOT/htdocs/$d"
	echo "$d" >"$ROOT/htdocs/$d/x"
done
echo "error page" >"$ROOT/htdocs/err/doc.html"
echo "Throttle ht" >"$ROOT/htdocs/ht/.htaccess"

BODY='
ThrottleStore local shm:tk-local capacity=1024
ThrottleStore fragile shm:tk-fragile capacity=64
ThrottleStore late shm:tk-late capacity=64
ThrottleRule burst "gcra:1/1h,burst=50" store=local headers=both
ThrottleRule kill "gcra:1/1h,burst=20" store=local
ThrottleRule va "gcra:1/1h,burst=5" store=local
ThrottleRule vb "gcra:1/1h,burst=3" store=local
ThrottleRule xff "gcra:1/1h,burst=3" store=local
ThrottleRule v6 "gcra:1/1h,burst=3" store=local
ThrottleRule err "gcra:1/1h,burst=5" store=local
ThrottleRule dry "gcra:1/1h,burst=2" store=local dry-run
ThrottleRule shape "leaky:5/1s,max-queue=10s" store=local delay=10s
ThrottleRule short "leaky:2/1s,max-queue=10s" store=local delay=700ms
ThrottleRule fo "gcra:1/1h,burst=100" store=fragile fail=open
ThrottleRule fc "gcra:1/1h,burst=100" store=fragile fail=closed
ThrottleRule lo "gcra:1/1h,burst=100" store=late fail=open headers=both
ThrottleRule lc "gcra:1/1h,burst=100" store=late fail=closed headers=both
ThrottleRule key "gcra:1/1h,burst=2" store=local "key=%{HTTP:X-Api-Key}"
ThrottleRule g3 "gcra:1/1h,burst=3" store=local
ThrottleRule g5 "gcra:1/1h,burst=5" store=local
ThrottleRule ht "gcra:1/1h,burst=4" store=local
ThrottleRule anyr "any(gcra:1/1h,burst=2,gcra:1/1h,burst=3)" store=local
<Directory @ROOT@/htdocs/ht>
    AllowOverrideList Throttle
</Directory>
RemoteIPHeader X-Forwarded-For
RemoteIPTrustedProxy 10.9.9.9
<Location /api>
    Throttle burst
</Location>
<Location /lo>
    Throttle lo
</Location>
<Location /lc>
    Throttle lc
</Location>
<Location /kill>
    Throttle kill
</Location>
<Location /xff>
    Throttle xff
</Location>
<Location /v6>
    Throttle v6
</Location>
<Location /err>
    Throttle err
</Location>
ErrorDocument 404 /err/doc.html
ErrorDocument 429 /err/doc.html
<Location /dry>
    Throttle dry
</Location>
<Location /shape>
    Throttle shape
</Location>
<Location /short>
    Throttle short
</Location>
<Location /fo>
    Throttle fo
</Location>
<Location /fc>
    Throttle fc
</Location>
<Location /key>
    Throttle key
</Location>
<Location /g>
    Throttle g5 g3
</Location>
<Location /g/only5>
    Throttle g5
</Location>
<Location /any>
    Throttle anyr
</Location>
<Location /tk-status>
    SetHandler throttlekit-status
</Location>
<VirtualHost 127.0.0.1:@PORT@>
    ServerName default.test
</VirtualHost>
<VirtualHost 127.0.0.1:@PORT@>
    ServerName a.test
    <Location /v>
        Throttle va
    </Location>
</VirtualHost>
<VirtualHost 127.0.0.1:@PORT@>
    ServerName b.test
    <Location /v>
        Throttle vb
    </Location>
</VirtualHost>
<VirtualHost 127.0.0.1:@PORT@>
    ServerName proxied.test
    RemoteIPInternalProxy 127.0.0.1
</VirtualHost>
'

BODY=$(printf '%s\n' "$BODY" | sed "s|@ROOT@|$ROOT|g")
stock_threads prefork
start_server prefork "$BODY" || { fail "httpd did not start"; finish; }
say "httpd $PID on port $PORT"

# 1. Exact counts across the four children, and the fields.
burst_check prefork /api/x
parent_threads "after 200 requests"

# 2. Zones belong to User, and a graceful restart keeps the counts.
if [ -n "$USERS" ]; then
	check "zone owner" www-data "$(stat -c %U "$ZONES/tk-local" 2>/dev/null)"
fi
graceful || fail "no new generation after SIGUSR1"
check "429s after a graceful restart" 5 "$(seq_get 5 /api/x | count 429)"
parent_threads "after a graceful restart"

# 3. A full stop and start reattaches the existing zones (owned by User,
# reopened by a root parent) and keeps the counts.
restart_server || fail "no restart after a full stop"
check "429s after a stop and start" 5 "$(seq_get 5 /api/x | count 429)"
parent_threads "after a stop and start"

# 4. A child killed with SIGKILL loses nothing: 10 admitted, one child
# killed, then exactly 10 more of the burst of 20.
check "200s before the kill" 10 "$(seq_get 10 /kill/x | count 200)"
wait_log /kill/x 10
victim=$(awk '$4 == "/kill/x" { print $1 }' "$ROOT/logs/access.log" | tail -n 1)
if [ -n "$victim" ] && [ "$victim" != "$PID" ] && kill -KILL "$victim"; then
	say "killed child $victim"
else
	fail "no child to kill ($victim)"
fi
sleep 1.5
check "200s after the kill" 10 "$(seq_get 15 /kill/x | count 200)"

# 5. Two virtual hosts with different rules stay independent.
check "vhost a: 200s" 5 "$(seq_get 8 /v/x -H 'Host: a.test' | count 200)"
check "vhost b: 200s" 3 "$(seq_get 8 /v/x -H 'Host: b.test' | count 200)"

# 6. X-Forwarded-For from an untrusted client does not change the key;
# from a trusted proxy (the proxied.test host) it does.
n=0
for i in 1 2 3 4 5 6; do
	c=$(curl -s -o /dev/null -w '%{http_code}' \
		-H "X-Forwarded-For: 192.0.2.$i" "http://127.0.0.1:$PORT/xff/x")
	[ "$c" = 200 ] && n=$((n + 1))
done
check "untrusted X-Forwarded-For: 200s" 3 "$n"
n=0
for i in 1 2 3 4 5 6; do
	c=$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: proxied.test' \
		-H "X-Forwarded-For: 198.51.100.$i" "http://127.0.0.1:$PORT/xff/x")
	[ "$c" = 200 ] && n=$((n + 1))
done
check "X-Forwarded-For through a trusted proxy: 200s" 6 "$n"

# 6b. The default key is the client's IPv6 /64: addresses rotated inside
# one /64 share its limit, another /64 has its own.
v6()
{
	curl -s -o /dev/null -w '%{http_code}' -H 'Host: proxied.test' \
		-H "X-Forwarded-For: $1" "http://127.0.0.1:$PORT/v6/x"
}
n=0
for a in 2001:db8:1:2::a 2001:db8:1:2::b 2001:db8:1:2:ffff::1 \
	2001:db8:1:2:aaaa:bbbb:cccc:dddd 2001:db8:1:2::f; do
	[ "$(v6 "$a")" = 200 ] && n=$((n + 1))
done
check "five addresses of one /64: 200s" 3 "$n"
check "another /64" 200 "$(v6 2001:db8:1:3::a)"

# 7. An ErrorDocument never counts twice: five 404s (each redirected to
# the error page under the same rule), then 429s with their fields.
codes=$(seq_get 8 /err/missing)
check "404s under ErrorDocument" 5 "$(printf '%s\n' "$codes" | count 404)"
check "429s under ErrorDocument" 3 "$(printf '%s\n' "$codes" | count 429)"
ra=$(curl -s -o "$ROOT/errdoc.out" -w '%{http_code} %header{retry-after}' \
	"http://127.0.0.1:$PORT/err/missing")
case $ra in
"429 "[0-9]*) say "ok: the ErrorDocument 429 keeps Retry-After ($ra)" ;;
*) fail "ErrorDocument 429: $ra" ;;
esac
check "ErrorDocument body" "error page" "$(cat "$ROOT/errdoc.out")"
wait_log /err/missing 9
check "REJECTED logged for redirected 429s" 4 \
	"$(awk '$4 == "/err/missing" && $3 == "REJECTED"' "$ROOT/logs/access.log" | wc -l)"

# 8. Dry-run admits everything and logs what it would have refused.
check "dry-run: 200s" 5 "$(seq_get 5 /dry/x | count 200)"
wait_log /dry/x 5
check "dry-run: DRY_RUN logged" 3 \
	"$(awk '$4 == "/dry/x" && $3 == "DRY_RUN"' "$ROOT/logs/access.log" | wc -l)"
check "dry-run: PASSED logged" 2 \
	"$(awk '$4 == "/dry/x" && $3 == "PASSED"' "$ROOT/logs/access.log" | wc -l)"

# 9. delay=: five requests at once under leaky:5/1s leave 200 ms apart,
# so the last one is answered about 800 ms after the first arrived.  Only
# the lower bound is checked (a loaded machine is slow, never fast).
t0=$(date +%s%N)
out=$(fire 5 /shape/x)
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
check "delay=: 200s" 5 "$(printf '%s\n' "$out" | count '^200|')"
if [ "$ms" -ge 600 ]; then
	say "ok: delay=: five requests took $ms ms (>= 600)"
else
	fail "delay=: five requests took $ms ms, expected >= 600"
fi
wait_log /shape/x 5
n=$(awk '$4 == "/shape/x" && $3 == "DELAYED"' "$ROOT/logs/access.log" | wc -l)
if [ "$n" -ge 3 ]; then
	say "ok: delay=: $n DELAYED logged"
else
	fail "delay=: $n DELAYED logged, expected 3 or more"
fi
# A delay beyond the bound is refused: leaky:2/1s delays 0, 500, 1000 ms
# ... and delay=700ms takes only the first two.
out=$(fire 5 /short/x)
check "delay beyond the bound: 200s" 2 "$(printf '%s\n' "$out" | count '^200|')"
check "delay beyond the bound: 429s" 3 "$(printf '%s\n' "$out" | count '^429|')"

# 10. An empty key (no X-Api-Key) falls back to the client's address:
# two clients without the header do not share one bucket.
check "key=: header A" 2 "$(seq_get 3 /key/x -H 'X-Api-Key: A' | count 200)"
check "key=: header B" 2 "$(seq_get 3 /key/x -H 'X-Api-Key: B' | count 200)"
check "key=: no header, 127.0.0.1" 2 "$(seq_get 3 /key/x | count 200)"
check "key=: no header, 127.0.0.2" 2 \
	"$(seq_get 3 /key/x --interface 127.0.0.2 | count 200)"

# 11. Rules of one store are checked atomically: under g5 and g3 three
# pass, and the refusals of g3 do not consume g5 (two left of five).
check "g5+g3: 200s" 3 "$(seq_get 6 /g/x | count 200)"
check "g5 after g5+g3: 200s" 2 "$(seq_get 4 /g/only5/x | count 200)"

# 12. Throttle in .htaccess (AllowOverrideList Throttle, its only way in).
check ".htaccess: 200s" 4 "$(seq_get 6 /ht/x | count 200)"

# 13. An any() rule admits while one dimension does, and reports both.
out=$(fire 1 /any/x; fire 1 /any/x; fire 1 /any/x; fire 1 /any/x)
check "any(): 200s" 3 "$(printf '%s\n' "$out" | count '^200|')"
check "any(): 429 with both dimensions" 1 \
	"$(printf '%s\n' "$out" | grep -c '^429|[0-9][0-9]*|"anyr.0";r=0;t=[0-9]*, "anyr.1";r=0;t=[0-9]*|')"

# 14. The status handler, as text and JSON.
st=$(curl -s "http://127.0.0.1:$PORT/tk-status")
for w in "store local spec=shm:tk-local" "rule burst policy=gcra:" \
	"rule shape policy=leaky:" "zone capacity=1024"; do
	case $st in
	*"$w"*) say "ok: status text has \"$w\"" ;;
	*) fail "status text lacks \"$w\": $st" ;;
	esac
done
js=$(curl -s "http://127.0.0.1:$PORT/tk-status?json")
if command -v jq >/dev/null 2>&1; then
	check "status json: rules" 19 "$(printf '%s' "$js" | jq '.rules | length')"
	check "status json: zone inserts > 0" true \
		"$(printf '%s' "$js" | jq ".stores[0].zone.inserts > 0")"
else
	case $js in
	'{"version":'*'"rules":[{"name":"burst"'*) say "ok: status json" ;;
	*) fail "status json: $js" ;;
	esac
fi

# 15. fail=open|closed when the store breaks under the running server
# (its zone's file truncated: the checks meet -EPROTO).
check "fail=open before" 200 "$(seq_get 1 /fo/x)"
check "fail=closed before" 200 "$(seq_get 1 /fc/x)"
: >"$ZONES/tk-fragile"
check "fail=open with a broken store" 200 "$(seq_get 1 /fo/x)"
check "fail=closed with a broken store" 503 "$(seq_get 1 /fc/x)"
wait_log /fc/x 2
check "DEGRADED logged" 2 \
	"$(awk '($4 == "/fo/x" || $4 == "/fc/x") && $3 == "DEGRADED"' "$ROOT/logs/access.log" | wc -l)"
check "the other store still works" 429 "$(seq_get 1 /api/x)"

# 16. A store that children cannot open (its zone's file moved away when
# they start): its rules answer by their fail policy with the library's
# degraded decision (503 and Retry-After: 1, no quota fields), and each
# child opens the zone within a second of its return.
check "late store before" 200 "$(seq_get 1 /lc/x)"
mv "$ZONES/tk-late" "$ROOT/tk-late.away"
for c in $(ps -o pid= --ppid "$PID"); do
	kill -KILL "$c"
done
i=0
until [ "$(ps -o pid= --ppid "$PID" | wc -l)" -ge 4 ] || [ $i -ge 100 ]; do
	i=$((i + 1))
	sleep 0.1
done
check "fail=open, zone gone at child start" 200 "$(seq_get 1 /lo/x)"
r=$(curl -s -o /dev/null -D - "http://127.0.0.1:$PORT/lc/x" | tr -d '\r')
check "fail=closed, zone gone at child start" 503 \
	"$(printf '%s\n' "$r" | awk 'NR == 1 { print $2 }')"
check "its Retry-After" 1 \
	"$(printf '%s\n' "$r" | awk -F': ' 'tolower($1) == "retry-after" { print $2 }')"
check "no RateLimit fields without a quota" 0 \
	"$(printf '%s\n' "$r" | grep -ci '^x\{0,1\}-\{0,1\}ratelimit')"
case $(curl -s "http://127.0.0.1:$PORT/tk-status") in
*"store late spec=shm:tk-late"*"open=failed: No such zone (ENOENT)"*)
	say "ok: the status page says the store failed" ;;
*) fail "the status page does not say the late store failed" ;;
esac
check "the error log says why" 1 \
	"$(grep -c 'ThrottleStore late: cannot open shm:tk-late: No such zone; its rules answer by their fail policy until it opens' "$ROOT/logs/error.log" | awk '{ print ($1 > 0) }')"
mv "$ROOT/tk-late.away" "$ZONES/tk-late"
sleep 1.2
check "fail=closed, zone back" "4 200" \
	"$(seq_get 4 /lc/x | sort | uniq -c | awk '{ print $1, $2 }')"
wait_log /lc/x 6
check "PASSED again" 5 \
	"$(awk '$4 == "/lc/x" && $3 == "PASSED"' "$ROOT/logs/access.log" | wc -l)"

stop_server
no_crashes
finish
