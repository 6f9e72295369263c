#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# fpm.sh's pool on a Redis store: a real php-fpm (pm = static, 4 workers
# as www-data) and a redis-server this test starts (with a password), both
# on free ports of 127.0.0.1:
#  1. 8 parallel loops x 25 requests on one key at burst 50: exactly 50
#     admitted, served by several workers; with three Limiters' parameters
#     in use, each worker holds one connection (one store per spec);
#  2. a worker killed with kill -9 after admitting a request and before
#     answering: that admission still counts, and its replacement denies;
#  3. redis-server stopped (kill -STOP): under fail "open" a check admits
#     and under "closed" denies, degraded, within the spec's timeouts and
#     without an exception; under "error" it throws StoreException; none
#     shows the password; after kill -CONT checks are exact again.
set -eu
: "${srcdir:=.}"
. "$srcdir/php/tests/lib.sh"
fpm_preflight
redis_preflight
fpm_setup
trap 'fpm_stop; redis_stop; rm -rf "$work"' EXIT
redis_start s3cret
spec="redis://:s3cret@127.0.0.1:$rport?timeout=200ms&connect_timeout=200ms"
fpm_start "php_admin_value[throttlekit.default_store] = \"$spec\""

# 1. One limit for every worker, one connection per worker.
for f in open closed error; do
	loops_start 4 4 "op=peek&key=warm&fail=$f" "$work/warm"
	loops_wait "$work/warm"
done
burst_step burst
clients=$(($(rcli info clients | sed -n 's/^connected_clients://p') - 1))
echo "connections to redis-server: $clients"
if [ "$clients" -lt 1 ] || [ "$clients" -gt 4 ]; then
	fail "$clients connections from 4 workers (a store per Limiter?)"
fi

# 2. kill -9 of a worker that admitted a request and has not answered.
kill_step kill

# 3. The server stopped: each fail policy, in bounded time.
kill -STOP "$redis_pid"
for f in open closed error; do
	for i in 1 2 3 4 5 6; do
		t0=$(date +%s%N)
		line=$(fcgi "op=check&key=stop&fail=$f")
		ms=$((($(date +%s%N) - t0) / 1000000))
		echo "redis stopped, fail=$f, ${ms} ms: $line"
		[ "$ms" -le 2000 ] || fail "a check took $ms ms with timeouts of 200 ms"
		case $f:$line in
		*s3cret*) fail "the password is in the answer" ;;
		open:*allowed=1*degraded=1*) ;;
		closed:*allowed=0*degraded=1*) ;;
		error:*StoreException*ETIMEDOUT* | error:*StoreException*ECONNREFUSED*) ;;
		*) fail "fail=$f with redis-server stopped: $line" ;;
		esac
	done
done
kill -CONT "$redis_pid"
line=
i=0
until case $line in *degraded=0*) true ;; *) false ;; esac do
	i=$((i + 1))
	[ $i -lt 50 ] || fail "no exact decision after redis-server resumed: $line"
	sleep 0.1
	line=$(fcgi "op=check&key=stop&fail=error")
done
echo "redis resumed: $line"

fpm_stop
if grep -E 'SIGSEGV|SIGBUS|SIGABRT|exited on signal (6|7|11)|Uncaught' "$work/fpm.log"; then
	fail "a worker crashed"
fi
grep -q s3cret "$work/fpm.log" && fail "the password is in php-fpm's log"
echo "PASS"
