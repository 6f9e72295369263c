#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# throttlectl ping, check, get and reset on a real PostgreSQL server
# (tests/kit/pg-server.sh: initdb into a temporary directory, 127.0.0.1
# and a free port, a password login): what each prints and exits with,
# what it leaves in the server's table, the fail policies and exit
# statuses with the server shut down, a wrong password, and no password
# in any output or message, whichever way the spec gives it.
# Skipped without the server's binaries or a build without the PostgreSQL
# store, unless TK_REQUIRE_POSTGRES=1 (tools/run-tests.sh): then either
# is a failure.
: "${top_builddir:=.}"
: "${srcdir:=.}"
ctl="$top_builddir/tools/throttlectl"
. "$srcdir/tests/kit/pg-server.sh"
pg_ctl_begin "$ctl"
S="$PG_SPEC?table=ctl"
WRONG=wr0ng-pw-5517
fails=0

# run STATUS ARGS...: throttlectl ARGS exits with STATUS; its output (and
# messages) in $tmp/out, and kept for the password check at the end.
run() {
	want=$1
	shift
	"$ctl" "$@" >"$tmp/out" 2>&1
	got=$?
	cat "$tmp/out" >>"$tmp/all"
	if [ "$got" -ne "$want" ]; then
		echo "FAIL: throttlectl $1 ... $3: exit $got, expected $want: $(cat "$tmp/out")"
		fails=$((fails + 1))
	fi
}

# has WHAT PATTERN: the last output matches the extended regex PATTERN.
has() {
	if ! grep -Eq -- "$2" "$tmp/out"; then
		echo "FAIL: $1: no /$2/ in: $(cat "$tmp/out")"
		fails=$((fails + 1))
	fi
}

# same WHAT EXPECTED ACTUAL
same() {
	if [ "$2" != "$3" ]; then
		echo "FAIL: $1: expected '$2', got '$3'"
		fails=$((fails + 1))
	fi
}

versions() { pg_sql "SELECT version FROM ctl ORDER BY version" | paste -s -d' ' -; }

# ping: one connection, the table made sure of, the server's address.
run 0 ping "$S"
has "ping" "^store=postgresql$"
has "ping" "^server=127\.0\.0\.1:$PG_PORT$"
has "ping" "^version=15\."
has "ping" "^engine=cas$"
has "ping" "^rtt_ns=[1-9][0-9]*$"
same "the table after ping" ctl "$(pg_sql "SELECT to_regclass('ctl')")"

# check: each admission one write of the key's row, in every process.  A
# new row starts at a random version (docs/postgresql.md): count from it.
P=fixed-window:3/1h
run 0 check "$S" k --policy $P
has "check, first" '"allowed":true,"limit":3,"remaining":2,'
B=$(versions)
run 0 check "$S" k --policy $P --repeat 2
has "check --repeat 2" "^allowed=2 denied=0$"
same "rows after 3 admissions" $((B + 2)) "$(versions)"
run 1 check "$S" k --policy $P
has "check, fourth" '"allowed":false,"limit":3,"remaining":0,'
same "rows after a denial" $((B + 2)) "$(versions)"

# get consumes nothing.
run 1 get "$S" k --policy $P
has "get" '"allowed":false,"limit":3,"remaining":0,'
same "rows after get" $((B + 2)) "$(versions)"

# reset reaches the server: the row expired, a fresh budget.
run 0 reset "$S" k --policy $P
has "reset" "^reset=k$"
same "the row after reset (expires_at, version)" "0|$((B + 3))" \
	"$(pg_sql "SELECT expires_at, version FROM ctl")"
run 0 get "$S" k --policy $P
has "get after reset" '"allowed":true,"limit":3,"remaining":3,'

# reset without --policy: the gcra layouts it knows.
run 0 check "$S" g --policy gcra:1/1h
run 1 check "$S" g --policy gcra:1/1h
run 0 reset "$S" g
run 0 check "$S" g --policy gcra:1/1h

# --prefix: another key space.
run 0 check "$S" p --policy fixed-window:1/1h --prefix a:
run 0 check "$S" p --policy fixed-window:1/1h --prefix b:
run 1 check "$S" p --policy fixed-window:1/1h --prefix a:

# The server shut down: the fail policies decide a check; without one
# every command fails with the error's name, exit status 3.
pg_server_stop
run 0 check "$S" k --policy $P --fail open
has "check --fail open, server down" '"allowed":true,.*"degraded":true'
run 1 check "$S" k --policy $P --fail closed
has "check --fail closed, server down" '"allowed":false,.*"degraded":true'
run 0 check "$S" k --policy $P --repeat 3 --fail open
has "check --repeat --fail open, server down" "^allowed=3 denied=0 degraded=3$"
for c in "check $S k --policy $P" "get $S k --policy $P" \
	"reset $S k --policy $P" "ping $S"; do
	# shellcheck disable=SC2086 # the words of $c
	run 3 $c
	has "${c%% *}, server down" "ECONNREFUSED"
done
pg_server_again || { echo "FAIL: postgres did not start again"; exit 1; }
run 0 check "$S" k --policy $P
has "check, server back" '"allowed":true,"limit":3,"remaining":2,'

# A wrong password: refused by the server, EACCES, exit status 3, and
# the message shows the spec with *** in its place.
BAD="postgresql://tk:$WRONG@127.0.0.1:$PG_PORT/postgres"
for c in "ping $BAD" "check $BAD k --policy $P" "get $BAD k --policy $P" \
	"reset $BAD k --policy $P"; do
	# shellcheck disable=SC2086 # the words of $c
	run 3 $c
	has "${c%% *}, wrong password" "postgresql://tk:\*\*\*@127\.0\.0\.1:$PG_PORT/postgres.*EACCES"
done
check_fail_open_login() {
	run 0 check "$1" k --policy $P --fail open
	has "check --fail open, $2" '"degraded":true'
}
check_fail_open_login "$BAD" "wrong password"
# libpq's password= option: the right one logs in, a wrong one is
# refused, and either is *** in messages.
OPT="postgresql://tk@127.0.0.1:$PG_PORT/postgres?table=ctl&password"
run 0 ping "$OPT=$PG_PASS"
run 0 get "$OPT=$PG_PASS" k --policy $P
has "get, password=" '"remaining":2,'
run 3 ping "$OPT=$WRONG&application_name=tk"
has "ping, wrong password=" "table=ctl&password=\*\*\*&application_name=tk: .*EACCES"
check_fail_open_login "$OPT=$WRONG" "wrong password="
# libpq decodes an option's name: pass%77ord= is a password as well.
ENC="postgresql://tk@127.0.0.1:$PG_PORT/postgres?pass%77ord"
run 0 ping "$ENC=$PG_PASS"
run 3 ping "$ENC=$WRONG"
has "ping, wrong pass%77ord=" "postgres\?pass%77ord=\*\*\*: .*EACCES"
# A spec the store refuses is bad usage, with the byte and the reason.
run 2 check "$PG_SPEC?table=Ctl" k --policy $P
has "check, bad table" "^throttlectl: postgresql://tk:\*\*\*@.*EINVAL.*byte [0-9]+: expected a table name"
run 2 check "$PG_SPEC" k --policy $P --owner root
has "check --owner" "for zones, not PostgreSQL stores"

n=$(grep -c -F -e "$PG_PASS" -e "$WRONG" "$tmp/all")
same "outputs and messages that show a password" 0 "$n"
[ "$n" -eq 0 ] || grep -F -e "$PG_PASS" -e "$WRONG" "$tmp/all"
echo "$(wc -l <"$tmp/all") lines of output checked; $fails failures"
[ "$fails" -eq 0 ]
