# SPDX-License-Identifier: BSD-2-Clause
# pg-server.sh - a real PostgreSQL server for the shell tests and the
# bench (sourced; the C tests have pg-kit.c): a cluster made by initdb in
# a fresh temporary directory, the server on 127.0.0.1 and a free port
# (its socket in that directory), run as the user postgres when the
# caller is root (the server refuses root), stopped by its pid.
#
# Logins over TCP need a password (scram-sha-256): the superuser tk's is
# $PG_PASS, so a spec's password really travels, and a wrong one is
# refused.  The socket trusts every local login, for pg_sql.
#
#   pg_server_missing      prints why there is no server to run, and
#                          succeeds; fails (prints nothing) if there is one
#   pg_skip WHY            exit 77, or 1 under TK_REQUIRE_POSTGRES=1
#   pg_ctl_preflight CTL   pg_skip without a server, or if throttlectl
#                          CTL was built without the PostgreSQL store
#   pg_server_start        initdb and start; sets PG_DIR, PG_PORT, PG_PID,
#                          PG_SPEC (postgresql://tk:PASS@127.0.0.1:PORT/
#                          postgres); 0, or 1 with the log on stderr
#   pg_server_stop         fast shutdown by its pid (the cluster stays)
#   pg_server_again        start the stopped cluster on the same port
#   pg_server_destroy      stop, and remove PG_DIR
#   pg_sql SQL             psql over the socket: rows unaligned, no header
#
# PG_BINDIR overrides Debian's /usr/lib/postgresql/15/bin; PG_OPTIONS adds
# the server's options (-c NAME=VALUE ...).

PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
# Characters a URI gives a meaning to stay out: the specs embed it raw.
PG_PASS=${PG_PASS:-pg-s3cr3t-8271}
PG_DIR=
PG_PORT=
PG_PID=

pg_server_missing()
{
	for b in initdb postgres pg_isready; do
		if [ ! -x "$PG_BINDIR/$b" ]; then
			echo "no $PG_BINDIR/$b (postgresql-15)"
			return 0
		fi
	done
	if ! command -v psql >/dev/null 2>&1; then
		echo "no psql (postgresql-client-15)"
		return 0
	fi
	if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
		echo "running as root without the user postgres"
		return 0
	fi
	return 1
}

pg_skip()
{
	if [ "${TK_REQUIRE_POSTGRES:-}" = 1 ]; then
		echo "FAIL: $* (TK_REQUIRE_POSTGRES=1)"
		exit 1
	fi
	echo "SKIP: $*"
	exit 77
}

pg_ctl_preflight()
{
	why=$(pg_server_missing) && pg_skip "$why"
	if "$1" check postgresql://h/db k --policy gcra:1/s 2>&1 |
		grep -q "Not supported by this build"; then
		pg_skip "throttlectl was built without the PostgreSQL store"
	fi
}

# pg_ctl_begin THROTTLECTL: the preflight, then a temporary directory
# $tmp and a server, both gone at exit; a server that does not start is
# a hard error (99), never a skip.
pg_ctl_begin()
{
	pg_ctl_preflight "$1"
	tmp=$(mktemp -d) || exit 99
	trap 'pg_server_destroy; rm -rf "$tmp"' EXIT
	pg_server_start || { echo "postgres did not start"; exit 99; }
}

# As the server's user: setpriv execs the program itself, so that $! is
# the server's pid and its signals reach it.
PG_AS=
[ "$(id -u)" -eq 0 ] &&
	PG_AS="setpriv --reuid=postgres --regid=postgres --clear-groups"

pg_server_spawn()
{
	# exec: $! is the server's pid, not a shell's.
	(exec $PG_AS "$PG_BINDIR/postgres" -D "$PG_DIR/data" -k "$PG_DIR" \
		-p "$PG_PORT" -c listen_addresses=127.0.0.1 -c fsync=off \
		-c synchronous_commit=off ${PG_OPTIONS:-}) >>"$PG_DIR/log" 2>&1 &
	PG_PID=$!
	i=0
	while [ $i -lt 300 ]; do
		i=$((i + 1))
		"$PG_BINDIR/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && return 0
		kill -0 "$PG_PID" 2>/dev/null || break
		sleep 0.05
	done
	kill -INT "$PG_PID" 2>/dev/null
	wait "$PG_PID" 2>/dev/null
	PG_PID=
	return 1
}

pg_server_start()
{
	PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/tk-pg.XXXXXX") || return 1
	chmod 755 "$PG_DIR"
	printf '%s\n' "$PG_PASS" >"$PG_DIR/pw"
	[ "$(id -u)" -eq 0 ] && chown -R postgres: "$PG_DIR"
	if ! $PG_AS "$PG_BINDIR/initdb" -D "$PG_DIR/data" -U tk \
		--pwfile="$PG_DIR/pw" --auth-local=trust \
		--auth-host=scram-sha-256 --no-sync >"$PG_DIR/log" 2>&1; then
		cat "$PG_DIR/log" >&2
		return 1
	fi
	rm -f "$PG_DIR/pw"
	tries=0
	while [ $tries -lt 10 ]; do
		tries=$((tries + 1))
		PG_PORT=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000))
		if pg_server_spawn; then
			PG_SPEC="postgresql://tk:$PG_PASS@127.0.0.1:$PG_PORT/postgres"
			return 0
		fi
	done
	cat "$PG_DIR/log" >&2
	return 1
}

pg_server_stop()
{
	[ -n "$PG_PID" ] || return 0
	kill -CONT "$PG_PID" 2>/dev/null
	# SIGINT: the fast shutdown, which ends every session.
	kill -INT "$PG_PID" 2>/dev/null
	wait "$PG_PID" 2>/dev/null
	PG_PID=
}

pg_server_again()
{
	pg_server_spawn || { cat "$PG_DIR/log" >&2; return 1; }
}

pg_server_destroy()
{
	pg_server_stop
	[ -n "$PG_DIR" ] && rm -rf "$PG_DIR"
	PG_DIR=
}

pg_sql()
{
	psql -X -q -At -h "$PG_DIR" -p "$PG_PORT" -U tk -d postgres -c "$1"
}
