#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/callgrind.sh BUILDDIR - instructions per check on the hot paths,
# counted by valgrind's callgrind (what `make bench-callgrind` runs).
#
# Unlike time, an instruction count does not depend on the machine's load,
# so it is the figure to watch for regressions.  Each case runs in its own
# valgrind: tk-bench populates the store and warms up, then makes exactly
# N checks inside cg_measured(), the only function callgrind counts in
# (--toggle-collect).  Ir/check includes the harness loop (its own row)
# and clock_gettime()'s user-space part (the vDSO is not instrumented
# under valgrind, which makes the clock a system call there).
#
# Valgrind's emulated CPU reports a 256 KiB level 2 cache, so a store
# counts a table of more than 16384 slots as far (lib/store/slot-store.h) and
# hashes before reading the clock, where the machines we time on (2 MiB)
# read the clock first up to 131072 slots.  So that the hot-key cases
# count the path they take there, zones here are opened with 16384 slots
# at least (TK_BENCH_ZONE_MIN), not 65536: a hot key's check is the same
# on either (the 100k-key cases still take the far path, as they do
# natively).
#
# Environment: TK_BENCH_CG_CHECKS (checks per case, default 100000),
# TK_BENCH_CG_CASES (space-separated case names, tk-bench's naming),
# TK_BENCH_CG_ANNOTATE=1 (also print the top functions of each case).
# Writes bench/results/callgrind.txt.
set -eu

bench=$(cd "$(dirname "$0")" && pwd)
. "$bench/common.sh"
command -v valgrind >/dev/null 2>&1 ||
	bench_die "valgrind not found (Debian: valgrind)"
bench_setup "$@"
bench_results

checks=${TK_BENCH_CG_CHECKS:-100000}
default_cases="harness/hot/1p
floor/hot/1p
floor/100k-uniform/1p
tk-shm/gcra/allow/hot/1p
tk-shm/gcra/deny/hot/1p
tk-shm/gcra/allow/100k-uniform/1p
tk-shm/gcra/allow/hot/1p/batch16
tk-mem/gcra/allow/hot/1t
tk-mem/gcra/deny/hot/1t
tk-mem/gcra/allow/100k-uniform/1t
tk-mem/fixed-window/allow/hot/1t
tk-mem/sliding-window/allow/hot/1t
tk-shm/fixed-window/allow/hot/1p
tk-shm/sliding-window/allow/hot/1p
tk-mem/sliding-window-100/allow/hot/1t
tk-shm/sliding-window-100/allow/hot/1p
tk-mem/sliding-window/deny/hot/1t
tk-shm/sliding-window/deny/hot/1p
mutex/gcra/allow/hot/1p
mutex/gcra/allow/100k-uniform/1p
per-process/gcra/allow/hot/1p"
cases=${TK_BENCH_CG_CASES:-$default_cases}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-callgrind.XXXXXX")
trap 'rm -rf "$tmp" ${bench_own_shm:+"$bench_own_shm"}' EXIT

out=$results/callgrind.txt
{
	echo "# instructions per check (callgrind Ir), $checks checks per case"
	echo "# libthrottlekit $TK_BENCH_LIB_ID, CFLAGS: $TK_BENCH_LIB_CFLAGS"
	printf '%-44s %12s\n' "case" "Ir/check"
} >"$out"
cat "$out"
for c in $cases; do
	if ! TK_BENCH_FILTER=$c TK_BENCH_ZONE_MIN=${TK_BENCH_ZONE_MIN:-16384} \
		valgrind --tool=callgrind \
		--callgrind-out-file="$tmp/cg.out" \
		--toggle-collect=cg_measured \
		"$tkb" --callgrind "$checks" >"$tmp/stdout" 2>"$tmp/stderr"; then
		cat "$tmp/stderr" >&2
		bench_die "callgrind failed on $c"
	fi
	n=$(awk -v c="$c" '$1 == c { print $2 }' "$tmp/stdout")
	if [ -z "$n" ] || [ "$n" -eq 0 ]; then
		printf '%-44s %12s\n' "$c" "not run" | tee -a "$out"
		continue
	fi
	ir=$(sed -n 's/^totals: *//p' "$tmp/cg.out" | head -n 1)
	[ -n "$ir" ] || ir=$(sed -n 's/^summary: *//p' "$tmp/cg.out" | head -n 1)
	awk -v c="$c" -v ir="$ir" -v n="$n" \
		'BEGIN { printf "%-44s %12.1f\n", c, ir / n }' | tee -a "$out"
	if [ "${TK_BENCH_CG_ANNOTATE:-0}" = 1 ]; then
		callgrind_annotate --auto=no --threshold=98 "$tmp/cg.out" 2>/dev/null |
			sed -n '/file:function/,$p' | sed -n '3,20p'
	fi
done
bench_lib_check
echo "bench: written to $out" >&2
