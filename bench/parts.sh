#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/parts.sh BUILDDIR - what the parts of a zone check cost, side by
# side (what `make bench-parts` runs, after building bench/parts): see
# parts.c.
set -eu

bench=$(cd "$(dirname "$0")" && pwd)
. "$bench/common.sh"
bench_setup "$@"
bench_results
[ -x "$build/bench/parts" ] || bench_die "$build/bench/parts is missing"
"$build/bench/parts" | tee "$results/parts.txt"
bench_lib_check
