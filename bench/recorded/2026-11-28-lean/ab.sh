#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# ab.sh LIB_A LIB_B ROUNDS [FILTER] - alternate tk-bench runs against two
# library directories (LD_LIBRARY_PATH), one line per run: each case's
# ns/check (the run's median over its rounds).  CLK=tsc runs on the TSC
# clock; TKB is the tk-bench binary (bench/run.sh builds it).
A=$1 B=$2 R=${3:-5}
F=${4:-floor/hot/1p,tk-shm/gcra/allow/hot/1p,tk-mem/gcra/allow/hot/1t}
TKB=${TKB:-build/w/bench/tk-bench}
TK_SHM_DIR=$(mktemp -d /dev/shm/ab.XXXXXX)
export TK_SHM_DIR
for i in $(seq 1 "$R"); do
	for lib in A B; do
		eval d=\$$lib
		out=$(env TK_BENCH_CLOCK="${CLK:-system}" LD_LIBRARY_PATH="$d" \
			TK_BENCH_FILTER="$F" "$TKB" 2>/dev/null |
			grep -E "^  (floor|tk-)[^ ]* +[0-9.]+ +[0-9.]+-" |
			awk '{printf "%s=%s ", $1, $2}')
		echo "$lib $out"
	done
done
rm -rf "$TK_SHM_DIR"
