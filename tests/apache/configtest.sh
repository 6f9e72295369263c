#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# configtest.sh - "apache2 -t" refuses a bad ThrottleStore, ThrottleRule
# or Throttle with the file and the line, accepts a good configuration,
# and creates no zone while only checking.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

GOOD='ThrottleStore local shm:tk-conf capacity=1024 mode=0660
ThrottleRule r1 "gcra:10/1s,burst=20" store=local "key=%{HTTP:X-Api-Key}" status=503 headers=both fail=closed
ThrottleRule r2 "all(gcra:10/1s,quota:1000/day)" dry-run
ThrottleRule r3 "leaky:10/s,max-queue=2s" delay=1s
ThrottleRule rm "leaky:1/1m,max-queue=2m" delay=1m
ThrottleRule rc "gcra:5/1h" count=401,403
<Location /a>
    Throttle r1 r2 r3
</Location>
<Location /a/b>
    Throttle off
</Location>'

# expect_error NAME BODY MESSAGE [LINE]: -t fails, naming the line of
# BODY's last line (or the line holding LINE) and MESSAGE.
expect_error()
{
	write_conf prefork 1 "$GOOD
$2"
	line=$(wc -l <"$CONF")
	[ -z "${4:-}" ] || line=$(grep -n -F -- "$4" "$CONF" | cut -d: -f1)
	if out=$(httpd -t -f "$CONF" 2>&1); then
		fail "$1: apache2 -t accepted it"
		return
	fi
	case $out in
	*sekret* | *sek/ret* | *sek\?ret* | *ret@*) fail "$1: the password shows: $out" ;;
	*"line $line of $CONF"*"$3"*) say "ok: $1: $(printf '%s' "$out" | tail -n 2 | tr '\n' ' ')" ;;
	*) fail "$1: expected line $line of $CONF and \"$3\", got: $out" ;;
	esac
}

write_conf prefork 1 "$GOOD"
if out=$(httpd -t -f "$CONF" 2>&1); then
	say "ok: a good configuration passes ($out)"
else
	fail "a good configuration: $out"
fi
check "zones created by apache2 -t" "" "$(find "$TK_SHM_DIR" "$ROOT/run" -mindepth 1)"

# Redis stores: a server that is absent is no configuration error (a
# store connects on its first check, in a child).
# passes WHAT LIBRARY BODY: apache2 -t accepts BODY after $GOOD (HAVE=yes),
# or the library was built without LIBRARY (HAVE=no); else a failure.
passes()
{
	write_conf prefork 1 "$GOOD
$3"
	HAVE=yes
	if out=$(httpd -t -f "$CONF" 2>&1); then
		say "ok: $1 pass ($out)"
	elif [ "${out#*Not supported by this build}" != "$out" ]; then
		HAVE=no
		say "the library has no $1 (built without $2): $out"
	else
		fail "$1: $out"
	fi
}

passes "Redis stores" hiredis "
ThrottleStore remote redis://u:sekret@127.0.0.1:1/2?timeout=50ms&key_prefix=t:
ThrottleStore sock redis+unix:///nonexistent/redis.sock
ThrottleRule r4 \"gcra:10/1s\" store=remote fail=closed
ThrottleRule r5 \"gcra:10/1s\" store=sock
<Location /r>
    Throttle r4 r5
</Location>"
redis=$HAVE

# PostgreSQL stores: likewise.
passes "PostgreSQL stores" libpq "
ThrottleStore pgs postgresql://u:sekret@127.0.0.1:1/db?timeout=50ms&table=tk_t
ThrottleRule r6 \"gcra:10/1s\" store=pgs fail=closed
<Location /p>
    Throttle r6
</Location>"
pg=$HAVE
if [ $pg = yes ]; then
	expect_error "bad PostgreSQL spec" 'ThrottleStore p postgresql://u:sekret@127.0.0.1/db?table=Bad' \
		'postgresql://u:***@127.0.0.1/db?table=Bad: Invalid argument'
	# libpq's own password= option is hidden as well.
	expect_error "PostgreSQL password option" 'ThrottleStore p postgresql://u@127.0.0.1/db?password=sekret&timeout=0' \
		'postgresql://u@127.0.0.1/db?password=***&timeout=0: Invalid argument'
	expect_error "capacity on PostgreSQL" 'ThrottleStore p postgresql://u:sekret@127.0.0.1/db capacity=1024' \
		'capacity=1024 is for a zone (shm:NAME), not a server'\''s store'
fi

expect_error "bad policy" 'ThrottleRule bad "gcra:10/1x"' 'bad policy "gcra:10/1x": expected a unit'
expect_error "unknown algorithm" 'ThrottleRule bad "nosuch:1/s"' 'bad policy'
# A CA file that is not there: refused at configtest whether or not the
# library has TLS (hiredis_ssl), and saying which.
expect_error "TLS Redis store" 'ThrottleStore r rediss://:sekret@127.0.0.1?tls_ca=/nonexistent.pem' \
	'rediss://:***@127.0.0.1?tls_ca=/nonexistent.pem: '
if [ $redis = yes ]; then
	expect_error "bad Redis spec" 'ThrottleStore r redis://u:sekret@127.0.0.1:99999' \
		'Invalid argument (byte 27: expected a port from 1 to 65535)'
	expect_error "bad Redis option" 'ThrottleStore r redis://127.0.0.1?timeout=0' 'Invalid argument'
	# A password with a raw '/' or '?', or a spec missing a '/' of
	# "://": the message still hides it (tk_spec_redact()).
	expect_error "raw '/' in a password" 'ThrottleStore r redis://u:sek/ret@127.0.0.1' \
		'redis://u:***@127.0.0.1: Invalid argument'
	expect_error "raw '?' in a password" 'ThrottleStore r redis://u:sek?ret@127.0.0.1' \
		'redis://u:***@127.0.0.1: Invalid argument'
	expect_error "mistyped scheme" 'ThrottleStore r redis:/u:sekret@127.0.0.1' \
		'redis:***@127.0.0.1: Invalid argument'
	# Raw '@', ':', '/', '?' and '%' together: hidden to the last '@'.
	expect_error "raw '@:/?%' in a password" 'ThrottleStore r redis://:sek@:/?%ret@127.0.0.1' \
		'redis://:***@127.0.0.1: Invalid argument'
	# Two tiers: parsed, no zone created by apache2 -t; a bad option
	# named, the password hidden.
	passes "two tiers" hiredis "
ThrottleStore tier \"shm:tk-tier?lease_max=64+redis://u:sekret@127.0.0.1:1\"
ThrottleRule r7 \"gcra:10/1s\" store=tier
<Location /t>
    Throttle r7
</Location>"
	check "zones created by apache2 -t (two tiers)" "" "$(find "$TK_SHM_DIR" "$ROOT/run" -mindepth 1)"
	expect_error "bad two-tier option" 'ThrottleStore t shm:tk-t?lease=0+redis://u:sekret@127.0.0.1' \
		'Invalid argument (options lease=N or lease_max=N'
	expect_error "capacity on Redis" 'ThrottleStore r redis://u:sekret@127.0.0.1 capacity=1024' \
		'capacity=1024 is for a zone (shm:NAME), not a server'\''s store'
	expect_error "mode on Redis" 'ThrottleStore r redis+unix:///tmp/r.sock mode=0600' 'not a server'\''s store'
fi
expect_error "memory store" 'ThrottleStore m memory' 'count in each child alone'
expect_error "bad zone name" 'ThrottleStore z shm:.hidden' 'ThrottleStore z'
# A Redis spec typed after "shm:" is a bad zone name, shown redacted.
expect_error "bad zone name with a password" 'ThrottleStore z shm:redis://:sek@ret@x' \
	'ThrottleStore z: shm:redis://:***@x: '
expect_error "bad capacity" 'ThrottleStore z shm:z capacity=1000' 'power of two'
expect_error "mode writable by others" 'ThrottleStore z shm:z mode=0666' 'not writable by others'
expect_error "unknown store option" 'ThrottleStore z shm:z size=1' 'unknown option size=1'
expect_error "store declared twice" 'ThrottleStore local shm:other' 'declared twice'
expect_error "unknown store" 'ThrottleRule x "gcra:1/s" store=nosuch' 'no ThrottleStore'
expect_error "unknown rule" 'Throttle nosuch' 'no ThrottleRule nosuch'
expect_error "rule named twice" 'Throttle r1 r1' 'named twice'
expect_error "bad status" 'ThrottleRule x "gcra:1/s" status=404' 'expected 429 or 503'
expect_error "bad key" 'ThrottleRule x "gcra:1/s" "key=%{HTTP:X" ' 'key='
expect_error "leaky without delay" 'ThrottleRule x "leaky:1/s,max-queue=1s"' 'delay=DURATION'
expect_error "delay without leaky" 'ThrottleRule x "gcra:1/s" delay=1s' 'needs a shaper'
# delay= reads durations as policies do: "mi" and a bare number are no
# durations there ("1m" is a minute in both, see GOOD).
expect_error "count= not a status" 'ThrottleRule x "gcra:1/s" count=401,abc' 'expected HTTP statuses'
expect_error "count= out of range" 'ThrottleRule x "gcra:1/s" count=99' 'expected HTTP statuses'
expect_error "count= with a shaper" 'ThrottleRule x "leaky:1/s,max-queue=1s" delay=1s count=401' 'count= needs a simple policy'
expect_error "count= with a composite" 'ThrottleRule x "all(gcra:1/s,quota:5/day)" count=401' 'count= needs a simple policy'
expect_error "delay=1mi" 'ThrottleRule x "leaky:1/s,max-queue=1s" delay=1mi' 'as policies write one'
expect_error "delay=5" 'ThrottleRule x "leaky:1/s,max-queue=1s" delay=5' 'as policies write one'
expect_error "delay=0s" 'ThrottleRule x "leaky:1/s,max-queue=1s" delay=0s' 'positive duration'
expect_error "any() in a group" 'ThrottleRule y "any(gcra:1/s,gcra:5/m)"
<Location /c>
    Throttle r1 y
</Location>' 'any() rule cannot' 'Throttle r1 y'
finish
