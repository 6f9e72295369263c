#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# options.sh - the options of ThrottleRule and the places of Throttle in
# a real httpd (prefork, 4 children): status=503 on a refusal, exactly
# which fields each headers= mode sends on success and on refusal,
# Throttle inside <Directory>, and the warning about a zone's capacity.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

[ -f "$APACHE_MODULES/mod_alias.so" ] || skip "no mod_alias in $APACHE_MODULES"

echo ok >"$ROOT/htdocs/index.html"
for d in s503 hdef hietf hlegacy hnone hboth dir dir/sub plain \
	rgcra rburst rtb rfw rsw rlog rquota rleaky both2; do
	mkdir -p "$ROOT/htdocs/$d"
	echo "$d" >"$ROOT/htdocs/$d/x"
done

BODY='
LoadModule alias_module @MODULES@/mod_alias.so
ThrottleStore local shm:tk-options capacity=1024
ThrottleRule s503 "gcra:1/1h,burst=2" status=503
ThrottleRule hdef "gcra:1/1h,burst=3"
ThrottleRule hietf "gcra:1/1h,burst=3" headers=ietf
ThrottleRule hlegacy "gcra:1/1h,burst=3" headers=legacy
ThrottleRule hnone "gcra:1/1h,burst=3" headers=none
ThrottleRule hboth "gcra:1/1h,burst=3" headers=both
ThrottleRule dir "gcra:1/1h,burst=4"
ThrottleRule wide "gcra:10000/30d" headers=both
ThrottleRule tight "gcra:1/1h,burst=3" headers=none
<Location /both2>
    Throttle tight wide
</Location>
ThrottleRule rgcra "gcra:3/1s,burst=1" headers=ietf
ThrottleRule rburst "gcra:10/1s,burst=15" headers=ietf
ThrottleRule rtb "token-bucket:capacity=5,refill=10/100ms" headers=ietf
ThrottleRule rfw "fixed-window:100/1500ms" headers=ietf
ThrottleRule rsw "sliding-window:100/1m" headers=ietf
ThrottleRule rlog "sliding-log:4/800ms" headers=ietf
ThrottleRule rquota "quota:1000/day" headers=ietf
ThrottleRule rleaky "leaky:2/1s,max-queue=5s" headers=ietf delay=5s
ThrottleRule rminute "leaky:1/1m,max-queue=2m" delay=1m
<Location /tk-status>
    SetHandler throttlekit-status
</Location>
<Location /rgcra>
    Throttle rgcra
</Location>
<Location /rburst>
    Throttle rburst
</Location>
<Location /rtb>
    Throttle rtb
</Location>
<Location /rfw>
    Throttle rfw
</Location>
<Location /rsw>
    Throttle rsw
</Location>
<Location /rlog>
    Throttle rlog
</Location>
<Location /rquota>
    Throttle rquota
</Location>
<Location /rleaky>
    Throttle rleaky
</Location>
<Location /s503>
    Throttle s503
</Location>
<Location /hdef>
    Throttle hdef
</Location>
<Location /hietf>
    Throttle hietf
</Location>
<Location /hlegacy>
    Throttle hlegacy
</Location>
<Location /hnone>
    Throttle hnone
</Location>
<Location /hboth>
    Throttle hboth
</Location>
Alias /aliased @ROOT@/htdocs/dir
<Directory @ROOT@/htdocs/dir>
    Throttle dir
</Directory>
'
BODY=$(printf '%s\n' "$BODY" | sed "s|@ROOT@|$ROOT|g; s|@MODULES@|$APACHE_MODULES|g")
start_server prefork "$BODY" || { fail "httpd did not start"; finish; }
say "httpd $PID on port $PORT"

# get PATH: one request; prints "CODE NAMES" where NAMES are the rate
# limit fields of the answer, lower case, sorted, comma separated (a
# field sent twice is listed twice), and keeps the header in $ROOT/h.
get()
{
	c=$(curl -s -o /dev/null -D "$ROOT/h" -w '%{http_code}' \
		"http://127.0.0.1:$PORT$1")
	tr -d '\r' <"$ROOT/h" >"$ROOT/h.tmp" && mv "$ROOT/h.tmp" "$ROOT/h"
	n=$(awk -F: 'tolower($1) ~ /^(x-ratelimit-|ratelimit|retry-after)/ {
		print tolower($1) }' "$ROOT/h" | sort | paste -s -d, -)
	printf '%s %s\n' "$c" "${n:--}"
}

# field NAME: the value of header field NAME in $ROOT/h.
field()
{
	awk -v n="$1" 'index(tolower($0), tolower(n) ":") == 1 {
		sub(/^[^:]*: */, ""); print }' "$ROOT/h"
}

# near V HI: "ok" when V is an integer in HI-100..HI (seconds that run
# down while the test runs; a loaded machine is slow, never fast).
near()
{
	case $1 in
	'' | *[!0-9]*) echo "bad($1)" ;;
	*) [ "$1" -le "$2" ] && [ "$1" -ge $(($2 - 100)) ] && echo ok ||
		echo "bad($1)" ;;
	esac
}

# values R T: the values of the fields in $ROOT/h, normalised: the
# remaining count as sent, the durations as "ok" when near what a
# decision leaving R with its bucket full again in T seconds says.
values()
{
	out=
	v=$(field RateLimit-Policy)
	[ -z "$v" ] || out="$out policy=$v"
	v=$(field RateLimit)
	if [ -n "$v" ]; then
		r=${v#*;r=}
		out="$out rl=${v%%;*},r=${r%%;*},t=$(near "${v##*;t=}" "$2")"
	fi
	v=$(field X-RateLimit-Limit)
	[ -z "$v" ] || out="$out limit=$v"
	v=$(field X-RateLimit-Remaining)
	[ -z "$v" ] || out="$out remaining=$v"
	v=$(field X-RateLimit-Reset)
	[ -z "$v" ] || out="$out reset=$(near "$v" "$2")"
	v=$(field Retry-After)
	[ -z "$v" ] || out="$out retry-after=$(near "$v" 3600)"
	echo "${out# }"
}

# 1. headers=: under "gcra:1/1h,burst=3" three requests pass (remaining
# 2, 1, 0; the bucket full again in 1, 2, 3 hours) and the fourth is
# refused (retry in an hour).  Each mode sends exactly its fields:
# without headers= a refusal carries the IETF fields and Retry-After and
# a success nothing; with it successes and refusals carry the fields it
# names, and a refusal Retry-After besides.
ietf="ratelimit,ratelimit-policy"
legacy="x-ratelimit-limit,x-ratelimit-remaining,x-ratelimit-reset"
for m in hdef hietf hlegacy hnone hboth; do
	case $m in
	hdef) ok=- no=$ietf,retry-after ;;
	hietf) ok=$ietf no=$ietf,retry-after ;;
	hlegacy) ok=$legacy no=retry-after,$legacy ;;
	hnone) ok=- no=retry-after ;;
	hboth) ok=$ietf,$legacy no=$ietf,retry-after,$legacy ;;
	esac
	for i in 1 2 3 4; do
		if [ $i -le 3 ]; then
			code=200 names=$ok r=$((3 - i)) t=$((i * 3600))
		else
			code=429 names=$no r=0 t=10800
		fi
		check "$m: request $i: status and fields" "$code $names" \
			"$(get /$m/x)"
		want=
		case $names in
		*ratelimit-policy*)
			want="$want policy=\"$m\";q=1;w=3600 rl=\"$m\",r=$r,t=ok" ;;
		esac
		case $names in
		*x-ratelimit*) want="$want limit=3 remaining=$r reset=ok" ;;
		esac
		case $names in
		*retry-after*) want="$want retry-after=ok" ;;
		esac
		check "$m: request $i: values" "${want# }" "$(values $r $t)"
	done
done
# Both sets of one decision agree.
rl=$(field RateLimit)
check "hboth: RateLimit t= is X-RateLimit-Reset" "${rl##*;t=}" \
	"$(field X-RateLimit-Reset)"

# 2. status=503 on a real refusal (not fail=closed): two pass, then 503
# with Retry-After and the RateLimit fields, logged REJECTED.
for i in 1 2; do
	check "status=503: request $i" "200 -" "$(get /s503/x)"
done
for i in 3 4; do
	check "status=503: request $i" "503 $ietf,retry-after" "$(get /s503/x)"
	check "status=503: request $i: values" \
		"policy=\"s503\";q=1;w=3600 rl=\"s503\",r=0,t=ok retry-after=ok" \
		"$(values 0 7200)"
done
wait_log /s503/x 4 || fail "the access log lacks /s503/x"
check "status=503: logged" "PASSED PASSED REJECTED REJECTED" \
	"$(awk '$4 == "/s503/x" { printf "%s%s", s, $3; s = " " }' "$ROOT/logs/access.log")"
check "status=503: statuses logged" "200 200 503 503" \
	"$(awk '$4 == "/s503/x" { printf "%s%s", s, $2; s = " " }' "$ROOT/logs/access.log")"

# 3. Throttle in <Directory> limits the files of the directory and of
# its subdirectories, whichever URL maps to them (here an Alias besides
# the DocumentRoot path), in one bucket: four of "gcra:1/1h,burst=4".
check "<Directory>: 200s by its path" 3 "$(seq_get 3 /dir/x | count 200)"
check "<Directory>: 200s by an Alias" 1 "$(seq_get 1 /aliased/x | count 200)"
check "<Directory>: 429s in a subdirectory" 2 \
	"$(seq_get 2 /dir/sub/x | count 429)"
check "<Directory>: 429s by an Alias" 1 "$(seq_get 1 /aliased/x | count 429)"
check "outside <Directory>: 200s" 6 "$(seq_get 6 /plain/x | count 200)"
wait_log /plain/x 6 || fail "the access log lacks /plain/x"
check "outside <Directory>: no THROTTLE_STATUS" 6 \
	"$(awk '$4 == "/plain/x" && $3 == "-"' "$ROOT/logs/access.log" | wc -l)"

# 4. RateLimit-Policy states the sustained rate as q/w, never the burst
# over the time to earn it (gcra:3/1s,burst=1 once said q=1;w=1).
for pq in 'rgcra "rgcra";q=3;w=1' 'rburst "rburst";q=10;w=1' \
	'rtb "rtb";q=100;w=1' 'rfw "rfw";q=200;w=3' 'rsw "rsw";q=100;w=60' \
	'rlog "rlog";q=5;w=1' 'rquota "rquota";q=1000;w=86400' \
	'rleaky "rleaky";q=2;w=1'; do
	get "/${pq%% *}/x" >/dev/null
	check "RateLimit-Policy of ${pq%% *}" "${pq#* }" \
		"$(field RateLimit-Policy)"
done

# 5. headers=both beside a tighter rule: the X-RateLimit-* fields are
# those of the rule that asked for them, as its RateLimit-Policy member
# is, not the tightest rule's.  The wide rule's period is long enough that
# no unit comes back between requests however slow the machine.
for i in 1 2 3 4; do
	get /both2/x >/dev/null
	check "both2: request $i: the asking rule's fields" \
		"\"wide\";q=10000;w=2592000 10000 $((10000 - (i < 4 ? i : 3)))" \
		"$(field RateLimit-Policy) $(field X-RateLimit-Limit) $(field X-RateLimit-Remaining)"
done

# 6. delay= reads durations as policies write them: 1m is a minute.
check "delay=1m is 60 s" yes \
	"$(curl -s "http://127.0.0.1:$PORT/tk-status" |
		grep -q '^rule rminute .* delay=60000000us' && echo yes || echo no)"

stop_server

# 7. A zone that exists with another capacity is used as it is, and the
# warning names both capacities as numbers (APR's formatter once printed
# a literal "%lu").
start_server prefork "$(printf '%s\n' "$BODY" |
	sed 's|shm:tk-options capacity=1024|shm:tk-options capacity=2048|')" ||
	fail "httpd did not start with capacity=2048"
check "capacity warning with numbers" 1 \
	"$(grep -c "zone $ZONES/tk-options exists with capacity 1024, not 2048;" \
		"$ROOT/logs/error.log")"
check "capacity warning: no format left" 0 \
	"$(grep -c 'capacity %' "$ROOT/logs/error.log")"
stop_server
no_crashes
finish
