#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Two tiers (shm:NAME+redis://...) against plain Redis and a zone alone,
# in one run (part of make bench; also on its own):
#   sh bench/tier.sh BUILDDIR [ROUNDS [CHECKS]]
# Builds bench/tier-bench.c against BUILDDIR's library and hiredis,
# starts a redis-server on a free port of 127.0.0.1 (no persistence, in
# a temporary directory, which holds the zones too), runs, and stops it
# by its pid.  Exits 77 (and says why) without redis-server, hiredis or a
# library with the Redis store.
set -eu
bench=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BUILDDIR [ROUNDS [CHECKS]]" >&2; exit 2; }
. "$bench/common.sh"
bench_server tier "$1"
command -v redis-server >/dev/null || bench_skip "no redis-server"
grep -q '^#am__append_[0-9]* = lib/redis/store-none.c' "$build/Makefile" ||
	bench_skip "the library in $build has no Redis store"
hiredis=$(pkg-config --cflags --libs hiredis 2>/dev/null) || bench_skip "no hiredis"
# shellcheck disable=SC2086 # $hiredis is a list of options
${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -I"$src/include" -o "$build/bench/tier-bench" \
	"$bench/tier-bench.c" -L"$libdir" -lthrottlekit \
	-Wl,-rpath,"$libdir" $hiredis ||
	{ echo "bench: cannot build tier-bench" >&2; exit 1; }

bench_redis_start tk-tier-bench
TK_SHM_DIR=$dir "$build/bench/tier-bench" 127.0.0.1 "$port" "${2:-3}" \
	"${3:-20000}"
