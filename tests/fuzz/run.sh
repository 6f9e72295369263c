#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Build the libFuzzer harnesses with clang (AddressSanitizer and UBSan on)
# and run each for a short while from its seed corpus.  Without clang it
# skips (exit 77), or fails with TK_REQUIRE_FUZZ=1 (tools/run-tests.sh).
# Usage: tests/fuzz/run.sh BUILDDIR [SECONDS]
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$1
secs=${2:-30}
if ! command -v clang >/dev/null 2>&1; then
	if [ "${TK_REQUIRE_FUZZ:-0}" = 1 ]; then
		echo "fuzz: FAIL: no clang (TK_REQUIRE_FUZZ=1; apt-get install clang)"
		exit 1
	fi
	echo "fuzz: SKIP: no clang"
	exit 77
fi
out="$build/fuzz"
mkdir -p "$out"
libs="$(pkg-config --libs liburcu-bp liburcu-cds) -lck -lpthread"
# The library with the Redis store of a build without hiredis (the
# real one needs hiredis and a generated script): the harnesses reach no
# server.
lib_sources=$(echo "$src"/lib/*.c "$src"/lib/algo/*.c "$src"/lib/store/*.c \
	"$src"/lib/hash/*.c "$src"/lib/redis/spec.c "$src"/lib/redis/store-none.c)
for h in "$src"/tests/fuzz/fuzz-*.c; do
	name=$(basename "$h" .c)
	extra=
	time=$secs
	if [ "$name" = fuzz-redis-state ]; then
		# The Redis store's decoders: they need hiredis' reply type and
		# the build's script; a few seconds cover their few formats.
		if [ ! -f "$build/lib/redis/check-lua.inc" ] ||
			! pkg-config --exists hiredis; then
			echo "fuzz: $name skipped (a build without hiredis)"
			continue
		fi
		extra="-I$build/lib $(pkg-config --cflags hiredis)
			$src/lib/redis/scripts.c $src/lib/redis/verdict.c"
		[ "$time" -gt 5 ] && time=5
	fi
	corpus="$out/corpus-${name#fuzz-}"
	rm -rf "$corpus" "$corpus.gen"
	cp -r "$src/tests/fuzz/corpus-${name#fuzz-}" "$corpus" 2>/dev/null ||
		mkdir -p "$corpus"
	clang -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -std=gnu11 \
		-DTK_BUILDING_LIBRARY -I"$build" -I"$src/include" -I"$src/lib" \
		"$h" $lib_sources $extra "$src"/shm/*.c $libs -o "$out/$name"
	work="$out/$name-corpus"
	mkdir -p "$work" "$corpus.gen"
	if [ "$name" = fuzz-zone ]; then
		# Seeds: real zones, made by the tool itself.
		TK_SHM_DIR="$corpus.gen" "$build/tools/throttlectl" create seed \
			--capacity 64 >/dev/null 2>&1 || true
		TK_SHM_DIR="$corpus.gen" "$build/tools/throttlectl" check seed k \
			--policy gcra:1/1s >/dev/null 2>&1 || true
		TK_SHM_DIR="$corpus.gen" "$build/tools/throttlectl" check seed t \
			--policy sliding-window:5/1s,buckets=4 >/dev/null 2>&1 || true
		corpus="$corpus.gen"
	fi
	echo "fuzz: $name for ${time}s"
	# A run of one input longer than 10 s is a hang, and fails.
	"$out/$name" -max_total_time="$time" -seed=1 -print_final_stats=1 \
		-timeout=10 \
		"$work" "$corpus" 2>"$out/$name.log" ||
		{ tail -n 40 "$out/$name.log"; exit 1; }
	grep -E "stat::number_of_executed_units|Done" "$out/$name.log" || true
done
