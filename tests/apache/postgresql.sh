#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# postgresql.sh - mod_throttlekit on a PostgreSQL store, in a real httpd
# with the prefork MPM (4 children) and a real PostgreSQL server that
# this test starts (tests/kit/pg-server.sh: initdb in a temporary
# directory, 127.0.0.1 and a free port, a password login) and stops by
# its pid: exact counts across children (prefork, then event) with the
# RateLimit headers of each decision, at most one connection per child
# (per thread under event) and none of the parent's, a wrong password
# (EACCES) under fail=closed, fail=open and fail=closed with the server
# shut down, exact again once it is back, and no password in any log or
# status page.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip (or fail
# with TK_REQUIRE_POSTGRES=1).

. "${srcdir:-.}/tests/apache/lib.sh"
. "${srcdir:-.}/tests/kit/pg-server.sh"

why=$(pg_server_missing) && skip TK_REQUIRE_POSTGRES "$why"
write_conf prefork 1 "ThrottleStore pg postgresql://tk@127.0.0.1/postgres"
case $(httpd -t -f "$CONF" 2>&1) in
*"Not supported by this build"*)
	skip TK_REQUIRE_POSTGRES "libthrottlekit was built without libpq" ;;
esac
trap 'pg_server_destroy; cleanup' EXIT

pg_server_start || { fail "the PostgreSQL server did not start"; finish; }
say "postgres $PG_PID on port $PG_PORT"

docs api open closed bad

SPEC="$PG_SPEC?table=tk_apache&timeout=500ms&connect_timeout=1s"
SHOWN="postgresql://tk:***@127.0.0.1:$PG_PORT/postgres?table=tk_apache&timeout=500ms&connect_timeout=1s"
# A store whose password the server refuses.
WRONG=wr0ng-pw-5517
BODY="$(server_body pg "$SPEC")
ThrottleStore pgbad postgresql://tk:$WRONG@127.0.0.1:$PG_PORT/postgres
ThrottleRule bad \"gcra:1/1h,burst=100\" store=pgbad fail=closed
<Location /bad>
    Throttle bad
</Location>"

start_server prefork "$BODY" || { fail "httpd did not start"; finish; }
# The parent checked the spec and connected nothing.
check "sessions before any request" 0 \
	"$(pg_sql "SELECT count(*) FROM pg_stat_activity WHERE client_addr IS NOT NULL")"

burst_check prefork /api/x
check "prefork: checks failed" 0 "$(grep -c 'checks fail' "$ROOT/logs/error.log")"
# The counts were kept by the server, not in each child: one row (a new
# row starts at a random version, docs/postgresql.md, so the writes are
# counted from a snapshot below).
check "rows on the server" 1 "$(pg_sql "SELECT count(*) FROM tk_apache")"
# One connection per child at most (prefork: one thread each), none of
# the parent's; psql's own comes through the socket (no client_addr).
conns=$(pg_sql "SELECT count(*) FROM pg_stat_activity WHERE client_addr IS NOT NULL")
if [ "$conns" -ge 1 ] && [ "$conns" -le 4 ]; then
	say "ok: $conns sessions from httpd"
else
	fail "$conns sessions from httpd, expected 1 to 4"
fi

check "fail=open, server up" "4 200 PASSED" "$(seq_status 4 /open/x)"
check "fail=closed, server up" "4 200 PASSED" "$(seq_status 4 /closed/x)"

status_names pg "$SHOWN" "the PostgreSQL store"

# A wrong password: every check of that store fails (EACCES), and
# fail=closed answers.
check "wrong password, fail=closed" "4 503 DEGRADED" "$(seq_status 4 /bad/x)"
check "error log: the wrong password's reason" yes \
	"$(grep -q 'ThrottleStore pgbad (postgresql://tk:\*\*\*@.*): checks fail: .*(EACCES); first failure in process' \
		"$ROOT/logs/error.log" && echo yes)"

# The rows' versions before the outage, to count the writes after it.
pg_sql "CREATE TABLE snap AS SELECT key, alg, version FROM tk_apache" >/dev/null

# Shut down (the fast shutdown ends every session): each child's idle
# connection is gone, and connecting again is refused at once.
pg_server_stop
check "fail=open, server down" "6 200 DEGRADED" "$(seq_status 6 /open/x)"
check "fail=closed, server down" "6 503 DEGRADED" "$(seq_status 6 /closed/x)"
check "error log: the reason of a child's first failure" yes \
	"$(grep -q 'ThrottleStore pg (postgresql://tk:\*\*\*@.*): checks fail: .*(ECONNREFUSED); first failure in process' \
		"$ROOT/logs/error.log" && echo yes)"

# Back on the same port: the next check connects again, exactly.
pg_server_again || { fail "the PostgreSQL server did not start again"; finish; }
check "fail=closed, server back" "4 200 PASSED" "$(seq_status 4 /closed/x)"
# Written once per admission that reached the server: /closed/x 4 times
# since the snapshot, /open/x and /api/x not at all (the 12 degraded
# answers never did).
check "the rows' writes since the outage" "0 0 4" \
	"$(pg_sql "SELECT t.version - s.version FROM tk_apache t JOIN snap s USING (key, alg) ORDER BY 1" | paste -s -d' ' -)"
burst=$(fire 3 /api/x | cut -d'|' -f1 | sort | uniq -c | awk '{ print $1, $2 }')
check "the burst's limit survived the outage" "3 429" "$burst"

stop_server

# The event MPM: the worker threads of a child check at once, each on a
# connection of the child's pool.  A table of its own: a fresh budget.
echo y >"$ROOT/htdocs/api/y"
start_server event "$(server_body pg "$PG_SPEC?table=tk_event")" ||
	{ fail "httpd (event) did not start"; finish; }
burst_check event /api/y
n=$(grep -c 'table=tk_event): checks fail' "$ROOT/logs/error.log")
check "event: checks failed" 0 "$n"
[ "$n" -eq 0 ] || grep 'table=tk_event): checks fail' "$ROOT/logs/error.log"
conns=$(pg_sql "SELECT count(*) FROM pg_stat_activity WHERE client_addr IS NOT NULL")
if [ "$conns" -ge 1 ] && [ "$conns" -le 16 ]; then
	say "ok: event: $conns sessions from 2 children of 8 threads"
else
	fail "event: $conns sessions from httpd, expected 1 to 16"
fi
stop_server
for f in "$ROOT/logs/error.log" "$ROOT/logs/access.log" "$ROOT/status.txt" \
	"$ROOT/status.json"; do
	if grep -F -e "$PG_PASS" -e "$WRONG" "$f"; then
		fail "the password shows in ${f##*/}"
	else
		say "ok: no password in ${f##*/}"
	fi
done
no_crashes
finish
