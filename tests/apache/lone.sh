#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# lone.sh - a rule that no Throttle checks beside another takes the plain
# check (tk_limiter_check(), a third of a group check's cost), in a real
# httpd (prefork, 4 children), and answers exactly as a rule of the same
# policy that takes the group check: the same statuses and fields.  A
# rule that some Throttle checks beside another stays on the group check
# everywhere, so that it counts in one bucket per key.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

docs solo grp pair

BODY='
LogLevel warn throttlekit:trace1
ThrottleStore local shm:tk-lone capacity=1024
ThrottleRule solo "gcra:1/1h,burst=3" headers=both
ThrottleRule grp "gcra:1/1h,burst=3" headers=both
ThrottleRule other "gcra:1/1h,burst=100" headers=none
<Location /solo>
    Throttle solo
</Location>
<Location /grp>
    Throttle grp
</Location>
<Location /pair>
    Throttle grp other
</Location>
'
start_server prefork "$BODY" || { fail "httpd did not start"; finish; }
say "httpd $PID on port $PORT"

# answers PATH NAME: four requests; per request its status and rate
# limit fields, sorted, with the rule's name as RULE.
answers()
{
	i=0
	while [ $i -lt 4 ]; do
		i=$((i + 1))
		c=$(curl -s -o /dev/null -D "$ROOT/h" -w '%{http_code}' \
			"http://127.0.0.1:$PORT$1")
		f=$(tr -d '\r' <"$ROOT/h" |
			awk 'tolower($1) ~ /^(x-ratelimit-|ratelimit|retry-after)/' | sort |
			sed "s/\"$2\"/RULE/g" | paste -s -d'|' -)
		printf '%s %s\n' "$c" "$f"
	done
}

answers /solo/x solo >"$ROOT/solo.out"
answers /grp/x grp >"$ROOT/grp.out"
check "plain and group checks: statuses" "200 200 200 429" \
	"$(cut -d' ' -f1 "$ROOT/solo.out" | paste -s -d' ' -)"
if cmp -s "$ROOT/solo.out" "$ROOT/grp.out"; then
	say "ok: plain and group checks: the same fields"
else
	fail "plain and group checks differ:"
	diff "$ROOT/solo.out" "$ROOT/grp.out"
fi
grep -q 'X-RateLimit-Remaining: 0' "$ROOT/solo.out" ||
	fail "no fields compared: $(cat "$ROOT/solo.out")"
check "a lone rule takes the plain check" 4 \
	"$(grep -c 'ThrottleRule solo: plain check' "$ROOT/logs/error.log")"
check "a rule grouped elsewhere takes the group check alone too" 4 \
	"$(grep -c 'ThrottleRule grp: group check' "$ROOT/logs/error.log")"
check "no rule took the other path" 0 \
	"$(grep -c -e 'solo: group check' -e 'grp: plain check' "$ROOT/logs/error.log")"
# What the store holds: a key has one state however it is checked, so
# both the plain and the group check keep it where tk_limiter_peek()
# (throttlectl get) reads it.
CTL=${abs_top_builddir:-.}/tools/throttlectl
own=
[ "$(id -u)" -eq 0 ] && own="--owner www-data --group www-data"
peek() # PREFIX: the remaining count of this client's key under PREFIX
{
	# shellcheck disable=SC2086 # $own is empty or two options
	"$CTL" get "$ZONES/tk-lone" a:127.0.0.1/32 --policy "gcra:1/1h,burst=3" \
		--prefix "$1" $own 2>&1 | sed -n 's/.*"remaining":\([0-9]*\).*/\1/p'
}
check "the plain check's state: solo" 0 "$(peek 'solo|gcra|')"
check "the group check's state: grp (the same key)" 0 "$(peek 'grp|gcra|')"
# The group's counts are the rule's: /pair meets the bucket /grp used.
check "a grouped rule counts in one bucket" 429 \
	"$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/pair/x")"
stop_server
no_crashes
finish
