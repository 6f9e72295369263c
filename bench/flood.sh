#!/bin/sh
# bench/flood.sh BUILDDIR - memory under a flood of unique keys (what
# `make bench-flood` runs): see flood.c.  Writes bench/results/flood.txt.
set -eu

bench=$(cd "$(dirname "$0")" && pwd)
. "$bench/common.sh"
bench_setup "$@"
bench_results

# shellcheck disable=SC2086
${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Wstrict-prototypes \
	-Wmissing-prototypes -I"$src/include" -o "$build/bench/flood" \
	"$bench/flood.c" -L"$libdir" -lthrottlekit -Wl,-rpath,"$libdir" ||
	bench_die "cannot build flood"
"$build/bench/flood" | tee "$results/flood.txt"
bench_lib_check
