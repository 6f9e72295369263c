#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# throttlectl on a real PostgreSQL server (tests/kit/pg-server.sh: initdb
# into a temporary directory, 127.0.0.1 and a free port, run as the user
# postgres when this runs as root): simulate gives byte-identical output
# to the memory store on generated timelines, for every algorithm, alone
# and in composites; check takes the spec, and its password never shows.
# Skipped without the server's binaries or a build without the PostgreSQL
# store, unless TK_REQUIRE_POSTGRES=1 (tools/run-tests.sh): then either
# is a failure.
: "${top_builddir:=.}"
: "${srcdir:=.}"
ctl="$top_builddir/tools/throttlectl"
. "$srcdir/tests/kit/pg-server.sh"
pg_ctl_begin "$ctl"
store=$PG_SPEC
port=$PG_PORT
fails=0
timelines=0

# Timeline $1: 80 steps of nothing to an hour, and back by up to 30 s
# (within the grace both stores keep states for), three keys, peeks and
# resets among checks of 1 to 3 units.
steps() {
	awk -v seed="$1" 'BEGIN {
		srand(seed); t = 1700000000000000000
		for (i = 0; i < 80; i++) {
			r = rand()
			if (r < 0.2) t -= int(rand() * 30e9)
			else if (r < 0.6) t += int(rand() * 1e9)
			else t += int(rand() * 3600e9)
			k = "k" int(rand() * 3); op = rand()
			if (op < 0.1) printf "{\"t\":%.0f,\"key\":\"%s\",\"op\":\"peek\"}\n", t, k
			else if (op < 0.13) printf "{\"t\":%.0f,\"key\":\"%s\",\"op\":\"reset\"}\n", t, k
			else printf "{\"t\":%.0f,\"key\":\"%s\",\"cost\":%d}\n", t, k, int(rand() * 3) + 1
		}
	}'
}

seed=0
for policy in gcra:5/1s,burst=3 token-bucket:capacity=6,refill=3/1s \
	leaky:2/100ms,max-queue=300ms fixed-window:4/1s quota:20/day \
	sliding-log:4/2s sliding-window:6/2s,buckets=3 \
	'all(fixed-window:5/1s,gcra:20/1m)' \
	'any(sliding-window:3/1m,buckets=6,quota:2/day)'; do
	for n in 1 2 3; do
		seed=$((seed + 1))
		steps "$seed" >"$tmp/in"
		"$ctl" simulate --policy "$policy" <"$tmp/in" >"$tmp/mem" 2>&1
		"$ctl" simulate --policy "$policy" \
			--store "$store?table=s$seed" <"$tmp/in" >"$tmp/pg" 2>&1
		timelines=$((timelines + 1))
		if ! cmp -s "$tmp/mem" "$tmp/pg"; then
			echo "FAIL: $policy seed $seed:"
			diff "$tmp/mem" "$tmp/pg" | head -5
			fails=$((fails + 1))
		fi
	done
done
echo "simulate: $timelines timelines identical on PostgreSQL"

# check takes the spec; a password reaches no message.
"$ctl" check "$store?table=c" k \
	--policy fixed-window:2/1h --repeat 3 >"$tmp/out" 2>&1
if [ $? -ne 1 ] || ! grep -q "allowed=2 denied=1" "$tmp/out"; then
	echo "FAIL: check: $(cat "$tmp/out")"
	fails=$((fails + 1))
fi
"$ctl" check "postgresql://tk:s3cr3t@127.0.0.1:1/postgres" k \
	--policy fixed-window:2/1h >"$tmp/out" 2>&1
if grep -q -e s3cr3t -e "$PG_PASS" "$tmp/out"; then
	echo "FAIL: the password shows: $(cat "$tmp/out")"
	fails=$((fails + 1))
fi
[ "$fails" -eq 0 ]
