#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# rules.sh - the zone's rule directory as mod_throttlekit fills it, in a
# real httpd (prefork, 4 children): each ThrottleRule's checks and
# denials add up exactly over the children, on the status page and in
# throttlectl stats (text, JSON, Prometheus); and throttlectl reset
# --rule R --client C resets one client of a rule by its address or its
# key= value, composing the key as the module does: that client is
# refused before and admitted after, every other client is untouched.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

CTL=${abs_top_builddir:-.}/tools/throttlectl
own=
[ "$(id -u)" -eq 0 ] && own="--owner www-data --group www-data"
ctl() { "$CTL" "$@" $own; } # shellcheck disable=SC2086
docs a k
BODY='ThrottleStore local shm:tk-rules capacity=1024
ThrottleRule per_ip "gcra:1/1h,burst=30" store=local
ThrottleRule per_key "gcra:1/1h,burst=10" store=local "key=%{HTTP:X-Api-Key}"
RemoteIPHeader X-Forwarded-For
RemoteIPInternalProxy 127.0.0.1
<Location /a>
    Throttle per_ip
</Location>
<Location /k>
    Throttle per_key
</Location>
<Location /st>
    SetHandler throttlekit-status
</Location>'
start_server prefork "$BODY" || { fail "httpd did not start"; finish; }
say "httpd $PID on port $PORT"
codes() { fire "$@" | cut -d'|' -f1 | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }'; }

check "per_ip: 50 requests of one client" "200:30 429:20 " "$(codes 50 /a/x)"
check "per_key: 25 requests of one key" "200:10 429:15 " \
	"$(codes 25 /k/x -H 'X-Api-Key: alice')"
check "the children that served" yes \
	"$(awk '{ print $1 }' "$ROOT/logs/access.log" | sort -u | wc -l |
		awk '{ print ($1 >= 2 ? "yes" : "no") }')"
st=$(curl -s "http://127.0.0.1:$PORT/st")
check "status page: per_ip" "checks=50 denies=20" \
	"$(printf '%s\n' "$st" | sed -n 's/^rule per_ip .*\(checks=[0-9]* denies=[0-9]*\)$/\1/p')"
check "status page: per_key" "checks=25 denies=15" \
	"$(printf '%s\n' "$st" | sed -n 's/^rule per_key .*\(checks=[0-9]* denies=[0-9]*\)$/\1/p')"
curl -s "http://127.0.0.1:$PORT/st?json" | grep -q '"name":"per_ip",.*"checks":50,"denies":20}' ||
	fail "status page JSON: per_ip"
zone=$ZONES/tk-rules
ctl stats "$zone" >"$ROOT/stats" 2>&1 || fail "throttlectl stats: $(cat "$ROOT/stats")"
check "throttlectl stats: per_ip" 1 "$(grep -cx 'rule=per_ip checks=50 denies=20' "$ROOT/stats")"
check "throttlectl stats: per_key" 1 "$(grep -cx 'rule=per_key checks=25 denies=15' "$ROOT/stats")"
ctl stats "$zone" --json >"$ROOT/stats.json"
grep -q '"rules":\[.*{"rule":"per_key","checks":25,"denies":15}' "$ROOT/stats.json" ||
	fail "throttlectl stats --json: $(cat "$ROOT/stats.json")"
ctl stats "$zone" --prometheus >"$ROOT/stats.prom"
sh "${srcdir:-.}/tests/meta/prom-lint.sh" "$ROOT/stats.prom" || fail "stats --prometheus format"
check "Prometheus: per_ip" 1 \
	"$(grep -cx "throttlekit_checks_total{zone=\"$zone\",rule=\"per_ip\"} 50" "$ROOT/stats.prom")"
check "Prometheus: per_key denies" 1 \
	"$(grep -cx "throttlekit_denies_total{zone=\"$zone\",rule=\"per_key\"} 15" "$ROOT/stats.prom")"

# Reset by address: two clients (X-Forwarded-For from a trusted proxy)
# spent; one is reset.
for c in 198.51.100.1 198.51.100.2; do
	codes 30 /a/x -H "X-Forwarded-For: $c" >/dev/null
done
one() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
check "before: client .1 refused" 429 "$(one -H 'X-Forwarded-For: 198.51.100.1' "http://127.0.0.1:$PORT/a/x")"
check "before: client .2 refused" 429 "$(one -H 'X-Forwarded-For: 198.51.100.2' "http://127.0.0.1:$PORT/a/x")"
check "reset by rule and address" "reset=198.51.100.1 rule=per_ip keys=1" \
	"$(ctl reset "$zone" --rule per_ip --client 198.51.100.1)"
check "after: client .1 admitted" 200 "$(one -H 'X-Forwarded-For: 198.51.100.1' "http://127.0.0.1:$PORT/a/x")"
check "after: client .2 still refused" 429 "$(one -H 'X-Forwarded-For: 198.51.100.2' "http://127.0.0.1:$PORT/a/x")"
check "after: 127.0.0.1 still refused" 429 "$(one "http://127.0.0.1:$PORT/a/x")"
# Reset by key: alice (spent above) and bob.
codes 10 /k/x -H 'X-Api-Key: bob' >/dev/null
check "before: bob refused" 429 "$(one -H 'X-Api-Key: bob' "http://127.0.0.1:$PORT/k/x")"
check "reset by rule and key" "reset=alice rule=per_key keys=1" \
	"$(ctl reset "$zone" --rule per_key --client alice)"
check "after: alice admitted" 200 "$(one -H 'X-Api-Key: alice' "http://127.0.0.1:$PORT/k/x")"
check "after: bob still refused" 429 "$(one -H 'X-Api-Key: bob' "http://127.0.0.1:$PORT/k/x")"
# An unknown rule: the error names the rules the zone has.
ctl reset "$zone" --rule nope --client alice >/dev/null 2>"$ROOT/err"
check "unknown rule: exit status" 3 $?
grep -q "no rule 'nope' in the zone; its rules: .*per_ip" "$ROOT/err" &&
	grep -q "per_key" "$ROOT/err" || fail "unknown rule: $(cat "$ROOT/err")"
# What info shows of each rule: how reset composes its keys.
ctl info "$zone" >"$ROOT/info"
check "info: per_ip" 1 "$(grep -cxF 'rule=per_ip policy=gcra:1/1h,burst=30 prefix=per_ip|gcra| address=a: key=- v6_prefix=64 v4_prefix=32' "$ROOT/info")"
check "info: per_key" 1 "$(grep -cxF 'rule=per_key policy=gcra:1/1h,burst=10 prefix=per_key|gcra| address=a: key=k: v6_prefix=64 v4_prefix=32' "$ROOT/info")"
# A reload that changes a rule's policy updates its entry; its counts go on.
before=$(sed -n 's/^rule=per_ip checks=\([0-9]*\) .*/\1/p' "$ROOT/stats")
BODY=$(printf '%s\n' "$BODY" | sed 's|gcra:1/1h,burst=30|gcra:1/1h,burst=40|')
write_conf prefork "$PORT" "$(printf '%s\n' "$BODY" | sed "s|@ROOT@|$ROOT|g")"
graceful || fail "no new generation after SIGUSR1"
one "http://127.0.0.1:$PORT/a/x" >/dev/null
ctl info "$zone" >"$ROOT/info"
check "info after the reload: per_ip's new policy" 1 \
	"$(grep -c '^rule=per_ip policy=gcra:1/1h,burst=40 ' "$ROOT/info")"
check "one entry per rule after the reload" 2 "$(grep -c '^rule=' "$ROOT/info")"
after=$(ctl stats "$zone" | sed -n 's/^rule=per_ip checks=\([0-9]*\) .*/\1/p')
check "per_ip's counts go on over the reload" yes \
	"$([ "$after" -gt "$before" ] && echo yes || echo "no: $before then $after")"
no_crashes
finish
