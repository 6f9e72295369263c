#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The PostgreSQL store over loopback, and the fixed window users write by
# hand (one UPDATE ... RETURNING), in one run (part of make bench; also
# on its own):
#   sh bench/pg.sh BUILDDIR [ROUNDS [ROUND_MS]]
# Builds bench/pg-bench.c against BUILDDIR's library and libpq, starts a
# PostgreSQL server with tests/kit/pg-server.sh (initdb in a temporary
# directory, a free port of 127.0.0.1, fsync off, pg_stat_statements
# loaded), runs, and stops it by its pid.  Exits 77 (and says why)
# without the server, libpq or a library with the PostgreSQL store.
set -eu
bench=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BUILDDIR [ROUNDS [ROUND_MS]]" >&2; exit 2; }
. "$bench/common.sh"
bench_server postgresql "$1"
. "$src/tests/kit/pg-server.sh"
why=$(pg_server_missing) && bench_skip "$why"
[ -f "$PG_BINDIR/../lib/pg_stat_statements.so" ] ||
	bench_skip "no pg_stat_statements in $PG_BINDIR/../lib"
grep -q '^#am__append_[0-9]* = lib/pg/store-none.c' "$build/Makefile" ||
	bench_skip "the library in $build has no PostgreSQL store"
libpq=$(pkg-config --cflags --libs libpq 2>/dev/null) || bench_skip "no libpq (libpq-dev)"
# shellcheck disable=SC2086 # $libpq is a list of options
${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -I"$src/include" -o "$build/bench/pg-bench" \
	"$bench/pg-bench.c" -L"$libdir" -lthrottlekit -Wl,-rpath,"$libdir" \
	$libpq || { echo "bench: cannot build pg-bench" >&2; exit 1; }

trap 'pg_server_destroy' EXIT
trap 'exit 130' INT TERM
PG_OPTIONS="-c shared_preload_libraries=pg_stat_statements" pg_server_start ||
	{ echo "bench: the PostgreSQL server did not start" >&2; exit 1; }
"$build/bench/pg-bench" \
	"host=127.0.0.1 port=$PG_PORT user=tk dbname=postgres password=$PG_PASS" \
	"$PG_SPEC?table=tk_bench" "${2:-5}" "${3:-300}"
