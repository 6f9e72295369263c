#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# throttlectl on a real redis-server (on a unix socket in a temporary
# directory): simulate gives byte-identical output to the memory store
# on generated timelines, for policies of every algorithm, alone and in
# composites; server_time=1 is refused before any replay; get, check and
# reset take the store spec for a zone name, and a password never shows.  Skipped without redis-server or
# a build without the Redis store, unless TK_REQUIRE_REDIS=1 (as
# tools/run-tests.sh sets): then either is a failure.
: "${top_builddir:=.}"
ctl="$top_builddir/tools/throttlectl"
skip() {
	if [ "${TK_REQUIRE_REDIS:-}" = 1 ]; then
		echo "FAIL: $* (TK_REQUIRE_REDIS=1)"
		exit 1
	fi
	echo "SKIP: $*"
	exit 77
}
server=${REDIS_SERVER:-$(command -v redis-server)} || skip "no redis-server"
[ -x "$server" ] || skip "no redis-server ($server)"
tmp=$(mktemp -d) || exit 99
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
"$server" --port 0 --unixsocket "$tmp/sock" --dir "$tmp" --save '' \
	--appendonly no >/dev/null 2>&1 &
pid=$!
i=0
while [ ! -S "$tmp/sock" ] && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
[ -S "$tmp/sock" ] || { echo "redis-server did not start"; exit 99; }
store="redis+unix://$tmp/sock"
if "$ctl" simulate --policy gcra:1/s --store "$store" </dev/null 2>&1 |
	grep -q "Not supported by this build"; then
	skip "throttlectl was built without the Redis store"
fi
fails=0
timelines=0
lines=0

# A timeline from seed $1 starting at $2 ns: steps of nothing to a year,
# and back by up to the grace (60 s, within which both stores hold every
# state that matters), three keys, checks of 1 to 3 units and sometimes far more, peeks,
# resets.  Times are a base (leading digits) and 17 digits of offset,
# printed with %.0f as mawk's %d stops at 2^31.
timeline() {
	awk -v seed="$1" -v base="$2" 'BEGIN {
		srand(seed); off = 0
		for (i = 0; i < 80; i++) {
			r = rand()
			if (r < 0.15) off += 0
			else if (r < 0.2) off -= int(rand() * 60e9)
			else if (r < 0.5) off += int(rand() * 1000000)
			else if (r < 0.8) off += int(rand() * 1000000000)
			else if (r < 0.95) off += int(rand() * 3600e9)
			else off += int(rand() * 31536000e9)
			if (off > 99e15) off = 99e15
			if (off < 0) off = 0
			key = "k" int(rand() * 3)
			cost = rand() < 0.1 ? int(rand() * 40) + 1 : int(rand() * 3) + 1
			op = rand()
			t = sprintf("%s%017.0f", base, off)
			sub(/^0+/, "", t); if (t == "") t = "0"
			if (op < 0.1)
				printf "{\"t\":%s,\"key\":\"%s\",\"op\":\"peek\"}\n", t, key
			else if (op < 0.13)
				printf "{\"t\":%s,\"key\":\"%s\",\"op\":\"reset\"}\n", t, key
			else
				printf "{\"t\":%s,\"key\":\"%s\",\"cost\":%d}\n", t, key, cost
		}
	}'
}

same() {
	policy=$1
	seed=$2
	base=$3
	timeline "$seed" "$base" >"$tmp/in"
	"$ctl" simulate --policy "$policy" <"$tmp/in" >"$tmp/mem" 2>&1
	"$ctl" simulate --policy "$policy" \
		--store "$store?key_prefix=s$seed:" <"$tmp/in" >"$tmp/red" 2>&1
	timelines=$((timelines + 1))
	lines=$((lines + $(wc -l <"$tmp/mem")))
	if ! cmp -s "$tmp/mem" "$tmp/red"; then
		echo "FAIL: $policy seed $seed base $base:"
		diff "$tmp/mem" "$tmp/red" | head -5
		fails=$((fails + 1))
	fi
}

seed=0
for policy in gcra:10/1s gcra:5/1s,burst=20 gcra:1099511627776/1d \
	gcra:3/3650d,burst=7 gcra:1/365d \
	token-bucket:capacity=30,refill=5/1m \
	token-bucket:capacity=3,refill=1/3650d \
	leaky:5/1s,max-queue=2s leaky:1/1d,max-queue=3650d leaky:100/1s \
	fixed-window:5/1s fixed-window:1099511627776/1d fixed-window:3/7ns \
	fixed-window:20/3650d 'all(gcra:5/1s,fixed-window:20/1m)' \
	'any(leaky:5/1s,max-queue=1s,gcra:3/1d,burst=2)' \
	'all(token-bucket:capacity=9,refill=1/1h,gcra:1099511627776/365d)' \
	quota:5/month,offset=+09:00 quota:1099511627776/day quota:3/7d \
	'any(quota:2/week,fixed-window:3/1h)' sliding-log:7/1s \
	sliding-log:512/3650d 'all(sliding-log:3/1m,gcra:2/1s)' \
	sliding-window:10/1s sliding-window:1099511627776/1d,buckets=100 \
	sliding-window:4/3650d,buckets=3 \
	'any(sliding-window:3/1m,buckets=6,quota:2/day)'; do
	# Bases: near the epoch, now, and near 2^62 (prefixes of t).
	for base in 0 17 46; do
		seed=$((seed + 1))
		same "$policy" "$seed" "$base"
	done
done
echo "simulate: $timelines timelines, $lines lines identical on Redis"

# Refused before any replay: the server's clock cannot follow it.
"$ctl" simulate --policy gcra:1/s --store "$store?server_time=1" \
	</dev/null >"$tmp/out" 2>"$tmp/err"
if [ $? -ne 2 ] || ! grep -q "not server_time=1" "$tmp/err"; then
	echo "FAIL: server_time=1: $(cat "$tmp/err")"
	fails=$((fails + 1))
fi

# expect_rc RC COMMAND...: COMMAND exits RC; its output in $tmp/out.
expect_rc() {
	want=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	got=$?
	if [ "$got" -ne "$want" ]; then
		echo "FAIL: $* exited $got, want $want: $(cat "$tmp/err")"
		fails=$((fails + 1))
	fi
}
p=gcra:1/1h
expect_rc 0 "$ctl" check "$store" alice --policy "$p" --prefix ctl:
expect_rc 1 "$ctl" check "$store" alice --policy "$p" --prefix ctl:
expect_rc 1 "$ctl" get "$store" alice --policy "$p" --prefix ctl:
grep -q '^{"allowed":false,"limit":1,"remaining":0,' "$tmp/out" ||
	{ echo "FAIL: get on Redis: $(cat "$tmp/out")"; fails=$((fails + 1)); }
expect_rc 0 "$ctl" reset "$store" alice --prefix ctl:
expect_rc 1 "$ctl" check "$store" alice --policy "$p" --prefix ctl: \
	--repeat 3
grep -qx "allowed=1 denied=2" "$tmp/out" ||
	{ echo "FAIL: --repeat on Redis: $(cat "$tmp/out")"; fails=$((fails + 1)); }
# Another algorithm on that key: a key of its own, a fresh budget.
expect_rc 0 "$ctl" check "$store" alice --policy fixed-window:5/1h --prefix ctl:
grep -q '^{"allowed":true,"limit":5,"remaining":4,' "$tmp/out" ||
	{ echo "FAIL: another policy on Redis: $(cat "$tmp/out")"; fails=$((fails + 1)); }
# A value no policy wrote: EPROTO, or the fail policy's answer.
if cli=$(command -v redis-cli); then
	printf '%s\n' 'SET "tk:{\x00\x04ctl:alice}" junk' |
		"$cli" -s "$tmp/sock" >/dev/null
	expect_rc 3 "$ctl" check "$store" alice --policy "$p" --prefix ctl:
	expect_rc 0 "$ctl" check "$store" alice --policy "$p" \
		--prefix ctl: --fail open
	grep -q '"degraded":true}$' "$tmp/out" ||
		{ echo "FAIL: --fail open on Redis: $(cat "$tmp/out")"; fails=$((fails + 1)); }
fi
expect_rc 2 "$ctl" check "$store" alice --policy "$p" --owner 0
# Two tiers: a zone in front of this server, by the same spec string.
TK_SHM_DIR=$tmp
export TK_SHM_DIR
expect_rc 1 "$ctl" check "shm:ctl-tier?lease_max=4+$store" \
	bob --policy fixed-window:40/1h --repeat 45
grep -qx "allowed=40 denied=5" "$tmp/out" && [ -f "$tmp/throttlekit.ctl-tier" ] ||
	{ echo "FAIL: two tiers: $(cat "$tmp/out")"; fails=$((fails + 1)); }
# No server there: a typed error, and never the password.
dead="redis://user:s3cret@127.0.0.1:1?connect_timeout=200ms"
expect_rc 3 "$ctl" check "$dead" k --policy "$p"
if grep -q s3cret "$tmp/err" || ! grep -q ECONNREFUSED "$tmp/err"; then
	echo "FAIL: a password in the error: $(cat "$tmp/err")"
	fails=$((fails + 1))
fi
expect_rc 1 "$ctl" check "$dead" k --policy "$p" --fail closed
grep -q '"allowed":false,.*"degraded":true}$' "$tmp/out" ||
	{ echo "FAIL: --fail closed, no server: $(cat "$tmp/out")"; fails=$((fails + 1)); }
# A spec that does not parse: bad usage (throttlectl(1), EXIT STATUS),
# named, with its password hidden.
expect_rc 2 "$ctl" check "redis://u:s3cret@h:99999" k --policy "$p"
if grep -q s3cret "$tmp/err" || ! grep -q 'redis://u:\*\*\*@h:99999' "$tmp/err"; then
	echo "FAIL: a bad spec's error: $(cat "$tmp/err")"
	fails=$((fails + 1))
fi
echo "get, check, reset on Redis: checked"

# ping: the server's version as redis-cli reads it, the engine the checks
# use (Redis 7: functions, which FCALL then shows), and with a password
# set, the password in no output.
cli=$(command -v redis-cli) || cli=
expect_rc 0 "$ctl" ping "$store"
if [ -n "$cli" ]; then
	v=$("$cli" -s "$tmp/sock" INFO server | tr -d '\r' |
		sed -n 's/^redis_version://p')
	printf 'store=redis\nserver=%s\nversion=%s\nengine=functions\n' \
		"$tmp/sock" "$v" >"$tmp/want"
	head -n 4 "$tmp/out" | cmp -s "$tmp/want" - ||
		{ echo "FAIL: ping: $(cat "$tmp/out")"; fails=$((fails + 1)); }
	grep -Eqx 'rtt_ns=[1-9][0-9]*' "$tmp/out" ||
		{ echo "FAIL: ping rtt: $(cat "$tmp/out")"; fails=$((fails + 1)); }
	"$cli" -s "$tmp/sock" CONFIG SET requirepass s3cret >/dev/null
	expect_rc 0 "$ctl" ping "redis+unix://:s3cret@$tmp/sock"
	if grep -q s3cret "$tmp/out" "$tmp/err" ||
		! grep -qx engine=functions "$tmp/out"; then
		echo "FAIL: ping with a password: $(cat "$tmp/out" "$tmp/err")"
		fails=$((fails + 1))
	fi
	expect_rc 3 "$ctl" ping "redis+unix://:wrong-s3cret@$tmp/sock"
	if grep -q s3cret "$tmp/out" "$tmp/err" || [ -s "$tmp/out" ] ||
		! grep -q EACCES "$tmp/err"; then
		echo "FAIL: ping, wrong password: $(cat "$tmp/out" "$tmp/err")"
		fails=$((fails + 1))
	fi
	"$cli" -s "$tmp/sock" -a s3cret --no-auth-warning \
		CONFIG SET requirepass '' >/dev/null
	# Eviction drops live states: any policy but noeviction is warned
	# about, as is one the server will not tell; the ping still succeeds.
	expect_rc 0 "$ctl" ping "$store"
	grep -q warning "$tmp/err" &&
		{ echo "FAIL: ping warned under noeviction: $(cat "$tmp/err")"; fails=$((fails + 1)); }
	for policy in allkeys-lru volatile-ttl; do
		"$cli" -s "$tmp/sock" CONFIG SET maxmemory-policy $policy >/dev/null
		expect_rc 0 "$ctl" ping "$store"
		grep -q "^throttlectl: warning: maxmemory-policy is $policy: .*noeviction" "$tmp/err" ||
			{ echo "FAIL: ping under $policy: $(cat "$tmp/err")"; fails=$((fails + 1)); }
	done
	"$cli" -s "$tmp/sock" ACL SETUSER noconfig on '>s3cret' '~*' '+@all' '-config' >/dev/null
	expect_rc 0 "$ctl" ping "redis+unix://noconfig:s3cret@$tmp/sock"
	grep -q "^throttlectl: warning: could not check the server's maxmemory-policy" "$tmp/err" ||
		{ echo "FAIL: ping without CONFIG: $(cat "$tmp/err")"; fails=$((fails + 1)); }
	"$cli" -s "$tmp/sock" ACL DELUSER noconfig >/dev/null
	"$cli" -s "$tmp/sock" CONFIG SET maxmemory-policy noeviction >/dev/null
	echo "ping on Redis: checked"
fi
[ "$fails" -eq 0 ]
