#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/run.sh BUILDDIR - build tk-bench against BUILDDIR's library and run
# the default matrix (what `make bench` runs).
#
# Writes, in bench/results/ (TK_BENCH_RESULTS overrides it):
#   latest.txt   the table printed on stdout
#   latest.json  every case, the memory and admission figures, the targets
#   chart.png    ns/check by scenario, throughput by workers (gnuplot)
#   *.dat        the chart's data
#   redis.txt    the Redis store and its hand-written baselines (redis.sh)
#   tier.txt     two tiers against plain Redis and a zone (tier.sh)
#   pg.txt       the PostgreSQL store and a hand-written UPDATE (pg.sh)
#
# Tuning (environment): TK_BENCH_ROUNDS, TK_BENCH_ROUND_MS,
# TK_BENCH_WARMUP_MS, TK_BENCH_ADMIT_MS, TK_BENCH_MID_KEYS,
# TK_BENCH_BIG_KEYS, TK_BENCH_ZIPF_S, TK_BENCH_BATCH, TK_BENCH_FILTER,
# TK_BENCH_REDIS_ROUND_MS, TK_BENCH_PG_ROUND_MS; see bench/README.md.
set -eu

bench=$(cd "$(dirname "$0")" && pwd)
. "$bench/common.sh"
bench_setup "$@"
bench_results

echo "bench: tk-bench built as $tkb; zones in $TK_SHM_DIR" >&2
rc=0
"$tkb" --json "$results/latest.json" --dat "$results" \
	>"$results/latest.txt" || rc=$?
cat "$results/latest.txt"
[ "$rc" -eq 0 ] || bench_die "tk-bench failed ($rc)"
bench_lib_check

# The Redis store and the hand-written Redis baselines (bench/redis.sh;
# skipped without redis-server or a library with the Redis store, and by
# a filter that does not name redis).
rc=0
case ${TK_BENCH_FILTER:-redis} in
*redis*) sh "$bench/redis.sh" "$build" "${TK_BENCH_ROUNDS:-5}" \
	"${TK_BENCH_REDIS_ROUND_MS:-300}" >"$results/redis.txt" || rc=$? ;;
*) rc=77 ;;
esac
case $rc in
0) cat "$results/redis.txt" ;;
77) rm -f "$results/redis.txt" ;;
*) bench_die "redis.sh failed ($rc)" ;;
esac

# Two tiers against plain Redis and a zone alone (bench/tier.sh; skipped
# as redis.sh is, and by a filter that does not name tier).
rc=0
case ${TK_BENCH_FILTER:-tier} in
*tier*) sh "$bench/tier.sh" "$build" "${TK_BENCH_ROUNDS:-3}" \
	>"$results/tier.txt" || rc=$? ;;
*) rc=77 ;;
esac
case $rc in
0) cat "$results/tier.txt" ;;
77) rm -f "$results/tier.txt" ;;
*) bench_die "tier.sh failed ($rc)" ;;
esac

# The PostgreSQL store and a hand-written UPDATE ... RETURNING fixed
# window (bench/pg.sh; skipped without a PostgreSQL server or a library
# with the PostgreSQL store, and by a filter that does not name pg).
rc=0
case ${TK_BENCH_FILTER:-pg} in
*pg*) sh "$bench/pg.sh" "$build" "${TK_BENCH_ROUNDS:-5}" \
	"${TK_BENCH_PG_ROUND_MS:-300}" >"$results/pg.txt" || rc=$? ;;
*) rc=77 ;;
esac
case $rc in
0) cat "$results/pg.txt" ;;
77) rm -f "$results/pg.txt" ;;
*) bench_die "pg.sh failed ($rc)" ;;
esac

if [ -n "${TK_BENCH_FILTER:-}" ]; then
	echo "bench: a filtered run draws no chart" >&2
elif command -v gnuplot >/dev/null 2>&1; then
	# Warnings go to gnuplot.log.
	if gnuplot -e "datadir='$results'" "$bench/plot.gp" \
		2>"$results/gnuplot.log"; then
		echo "bench: chart in $results/chart.png" >&2
	else
		cat "$results/gnuplot.log" >&2
		echo "bench: gnuplot failed; no chart" >&2
	fi
else
	echo "bench: gnuplot not found (Debian: gnuplot-nox); no chart" >&2
fi
echo "bench: results in $results/latest.txt and $results/latest.json" >&2
