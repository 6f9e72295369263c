#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# fpm.sh's pool on a PostgreSQL store: a real php-fpm (pm = static, 4
# workers as www-data) and a PostgreSQL server this test starts
# (tests/kit/pg-server.sh: initdb in a temporary directory, a password
# login), both on free ports of 127.0.0.1:
#  1. 8 parallel loops x 25 requests on one key at burst 50: exactly 50
#     admitted, served by several workers; with three Limiters'
#     parameters in use, each worker holds one session (one store per
#     spec), opened after the fork;
#  2. a worker killed with kill -9 after admitting a request and before
#     answering: that admission still counts, and its replacement denies;
#  3. the server shut down: under fail "open" a check admits and under
#     "closed" denies, degraded, without an exception; under "error" it
#     throws StoreException; none shows the password; once the server is
#     back, checks are exact again.
set -eu
: "${srcdir:=.}"
. "$srcdir/php/tests/lib.sh"
. "$srcdir/tests/kit/pg-server.sh"
fpm_preflight
why=$(pg_server_missing) && pg_skip "$why"
fpm_setup
trap 'fpm_stop; pg_server_destroy; rm -rf "$work"' EXIT
pg_server_start || fail "the PostgreSQL server did not start"
spec="$PG_SPEC?table=tk_fpm&timeout=500ms&connect_timeout=1s"
fpm_start "php_admin_value[throttlekit.default_store] = \"$spec\""
sessions() {
	pg_sql "SELECT count(*) FROM pg_stat_activity WHERE client_addr IS NOT NULL"
}

# 1. One limit for every worker, one session per worker.
for f in open closed error; do
	loops_start 4 4 "op=peek&key=warm&fail=$f" "$work/warm"
	loops_wait "$work/warm"
done
grep -v 'degraded=0' "$work/warm" && fail "a peek failed with the server up"
burst_step burst
n=$(sessions)
echo "sessions from php-fpm: $n"
[ "$n" -ge 1 ] && [ "$n" -le 4 ] || fail "$n sessions from 4 workers (a store per Limiter?)"

# 2. kill -9 of a worker that admitted a request and has not answered.
kill_step kill

# 3. The server shut down: each fail policy.
pg_server_stop
for f in open closed error; do
	for i in 1 2 3 4 5 6; do
		line=$(fcgi "op=check&key=down&fail=$f")
		case $f:$line in
		*"$PG_PASS"*) fail "the password is in the answer" ;;
		open:*allowed=1*degraded=1*) ;;
		closed:*allowed=0*degraded=1*) ;;
		error:*StoreException*ECONNREFUSED*) ;;
		*) fail "fail=$f with the server down: $line" ;;
		esac
	done
	echo "server down, fail=$f: $line"
done
pg_server_again || fail "the PostgreSQL server did not start again"
for i in 1 2 3 4 5 6 7 8; do
	line=$(fcgi "op=check&key=down&fail=error")
	# A new row starts at a random version (docs/postgresql.md): count
	# the writes from the first.
	[ $i = 1 ] && pg_sql "CREATE TABLE snap AS SELECT key, alg, version FROM tk_fpm" >/dev/null
	case $line in
	*allowed=1*degraded=0*) ;;
	*) fail "server back, check $i: $line" ;;
	esac
done
echo "server back: $line"
# The key's row: written once per admission that reached the server.
n=$(pg_sql "SELECT count(*) FROM tk_fpm t JOIN snap s USING (key, alg) WHERE t.version = s.version + 7")
[ "$n" = 1 ] || fail "no row written by exactly the 8 checks after the outage"

fpm_stop
if grep -E 'SIGSEGV|SIGBUS|SIGABRT|exited on signal (6|7|11)|Uncaught' "$work/fpm.log"; then
	fail "a worker crashed"
fi
grep -qF "$PG_PASS" "$work/fpm.log" && fail "the password is in php-fpm's log"
echo "PASS"
