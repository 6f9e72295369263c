#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The Redis store over loopback, and the two scripts users write by hand,
# in one run (part of make bench; also on its own):
#   sh bench/redis.sh BUILDDIR [ROUNDS [ROUND_MS]]
#   TK_REDIS_COST_ONLY=1 sh bench/redis.sh BUILDDIR [CHECKS [POLICY...]]
# then the server's time per check of each policy against a hand-written
# Lua GCRA (bench/redis-cost.c; the second form runs only that).
# Builds bench/redis-bench.c against BUILDDIR's library and hiredis,
# starts a redis-server on a free port of 127.0.0.1 (no persistence, in
# a temporary directory), runs, and stops it by its pid.  Exits 77 (and
# says why) without redis-server, hiredis or a library with the Redis
# store.
set -eu
bench=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BUILDDIR [ROUNDS [ROUND_MS]]" >&2; exit 2; }
. "$bench/common.sh"
bench_server redis "$1"
command -v redis-server >/dev/null || bench_skip "no redis-server"
grep -q '^#am__append_[0-9]* = lib/redis/store-none.c' "$build/Makefile" ||
	bench_skip "the library in $build has no Redis store"
hiredis=$(pkg-config --cflags --libs hiredis 2>/dev/null) || bench_skip "no hiredis"
rb=$build/bench/redis-bench
for prog in redis-bench redis-cost; do
	# shellcheck disable=SC2086 # $hiredis is a list of options
	${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Wshadow \
		-Wstrict-prototypes -Wmissing-prototypes -I"$src/include" \
		-o "$build/bench/$prog" "$bench/$prog.c" -L"$libdir" \
		-lthrottlekit -Wl,-rpath,"$libdir" $hiredis -lpthread ||
		{ echo "bench: cannot build $prog" >&2; exit 1; }
done

bench_redis_start tk-redis-bench
if [ -n "${TK_REDIS_COST_ONLY:-}" ]; then
	shift
	"$build/bench/redis-cost" 127.0.0.1 "$port" "$@"
	exit
fi
"$rb" 127.0.0.1 "$port" "${2:-5}" "${3:-300}"
echo
"$build/bench/redis-cost" 127.0.0.1 "$port"
