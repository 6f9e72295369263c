#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/contention.sh BUILDDIR - two workers on one hot key, against the
# floor's own two-worker figure, repeated (what `make bench-contention`
# runs).
#
# What two workers pay for one key is mostly the key's cache line going
# back and forth between the cores, and what that costs depends on where
# the two CPUs sit (hyperthreads of one core, two cores, or wherever a
# hypervisor put them this minute): on our 2-CPU VM the floor's own
# two-worker figure has ranged from 88 to 134 ns.  A ratio taken from one
# run of the suite says as much about that as about the store.  So each
# run here measures the floor and the stores back to back, a few seconds
# apart, and the script prints every run's ratios and their medians.
# A run during which other processes took more than 10% of the CPUs is
# marked `~` (tk-bench's mark: a busy neighbour makes two workers
# time-share one CPU) and left out of the medians.
#
# Environment: TK_BENCH_CONTENTION_RUNS (runs, default 7), and the usual
# tk-bench knobs (TK_BENCH_ROUNDS defaults to 3 here).  Writes
# bench/results/contention.txt.
set -eu

bench=$(cd "$(dirname "$0")" && pwd)
. "$bench/common.sh"
bench_setup "$@"
bench_results

runs=${TK_BENCH_CONTENTION_RUNS:-7}
TK_BENCH_ROUNDS=${TK_BENCH_ROUNDS:-3}
export TK_BENCH_ROUNDS
cases="floor/hot/2p
tk-shm/gcra/allow/hot/2p
tk-shm/gcra/deny/hot/2p
tk-mem/gcra/allow/hot/2t
tk-mem/gcra/deny/hot/2t"
filter=$(echo "$cases" | paste -sd, -)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-contention.XXXXXX")
trap 'rm -rf "$tmp" ${bench_own_shm:+"$bench_own_shm"}' EXIT

out=$results/contention.txt
{
	echo "# two workers, one hot key: ns per check (median of" \
		"$TK_BENCH_ROUNDS rounds) and x the floor's figure of the same run"
	echo "# libthrottlekit $TK_BENCH_LIB_ID"
	printf '%-4s %8s' run floor
	echo "$cases" | sed 1d | while read -r c; do
		printf ' %24s' "${c%/hot/*}"
	done
	echo
	i=1
	while [ "$i" -le "$runs" ]; do
		TK_BENCH_FILTER=$filter "$tkb" >"$tmp/run" 2>&1 ||
			bench_die "tk-bench failed: $(tail -3 "$tmp/run")"
		awk -v run="$i" -v cases="$cases" '
			/ ns\/check / { ns[$1] = $2 }
			/^  [a-z-]+\/[^ ]* .* ~ *$/ { busy = 1 }
			END {
				n = split(cases, c, "\n")
				f = ns[c[1]]
				if (f == "") { print "no floor figure" > "/dev/stderr"; exit 1 }
				printf "%-4s %8.1f", run, f
				for (j = 2; j <= n; j++)
					printf " %14.1f ns %5.2fx", ns[c[j]], ns[c[j]] / f
				printf busy ? " ~\n" : "\n"
			}' "$tmp/run"
		i=$((i + 1))
	done | tee "$tmp/table"
	# The median of each column, in the column's own format, over the
	# runs no busy neighbour marked (all runs if every one was).
	quiet=$(grep -cv ' ~$' "$tmp/table" || true)
	if [ "$quiet" -gt 0 ]; then
		grep -v ' ~$' "$tmp/table" >"$tmp/median"
	else
		echo "# every run shared the CPUs with other processes (~)"
		sed 's/ ~$//' "$tmp/table" >"$tmp/median"
	fi
	awk '
		{ for (j = 2; j <= NF; j++) v[j, NR] = $j; rows = NR; cols = NF }
		END {
			printf "%-4s", "med"
			for (j = 2; j <= cols; j++) {
				if (v[j, 1] == "ns") { printf " ns"; continue }
				for (r = 1; r <= rows; r++) {
					a[r] = v[j, r]
					sub(/x$/, "", a[r])
				}
				for (x = 1; x <= rows; x++)
					for (y = x + 1; y <= rows; y++)
						if (a[y] + 0 < a[x] + 0) { t = a[x]; a[x] = a[y]; a[y] = t }
				m = rows % 2 ? a[(rows + 1) / 2] : (a[rows / 2] + a[rows / 2 + 1]) / 2
				if (j == 2)
					printf " %8.1f", m
				else if (v[j, 1] ~ /x$/)
					printf " %5.2fx", m
				else
					printf " %14.1f", m
			}
			printf "\n"
		}' "$tmp/median"
} | tee "$out"
echo "bench: written to $out"
bench_lib_check
