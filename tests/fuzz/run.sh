#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Build the libFuzzer harnesses with clang (AddressSanitizer and UBSan on)
# and run each for a short while from its seed corpus.  Without clang it
# skips (exit 77), or fails with TK_REQUIRE_FUZZ=1 (tools/run-tests.sh).
# Usage: tests/fuzz/run.sh BUILDDIR [SECONDS]
#
# The library's sources are compiled once for every harness, and the
# harnesses run one per CPU at a time: each still gets SECONDS of a CPU.
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
jobs=$(nproc 2>/dev/null || echo 2)
rm -rf "$out/obj"
mkdir -p "$out/obj"
libs="$(pkg-config --libs liburcu-bp liburcu-cds) -lck -lpthread"
san="-g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined"
cflags="$san -std=gnu11 -DTK_BUILDING_LIBRARY -I$build -I$src/include -I$src/lib"
redis_ok=0
if [ -f "$build/lib/redis/check-lua.inc" ] && pkg-config --exists hiredis; then
	redis_ok=1
fi
# The PostgreSQL store's spec parser, as the build has it (with libpq's
# header, libpq.c loading libpq at run time), and no store.
pg_sources=lib/pg/spec.c
if grep -q '^#define TK_HAVE_POSTGRESQL 1' "$build/config.h"; then
	pg_sources="$pg_sources lib/pg/libpq.c"
	cflags="$cflags $(pkg-config --cflags libpq 2>/dev/null ||
		echo -I/usr/include/postgresql)"
fi

# One object per source, named by its path (lib/store/store.c and
# lib/redis/store.c must not meet), instrumented for libFuzzer's coverage.
{
	ls "$src"/lib/*.c "$src"/lib/algo/*.c "$src"/lib/store/*.c \
		"$src"/lib/hash/*.c "$src"/lib/redis/spec.c \
		"$src"/lib/redis/store-none.c "$src"/lib/pg/store-none.c \
		"$src"/shm/*.c
	for f in $pg_sources; do echo "$src/$f"; done
	[ $redis_ok = 1 ] && ls "$src"/lib/redis/scripts.c "$src"/lib/redis/verdict.c \
		"$src"/lib/redis/occ-state.c
} | sed "s|^$src/||" >"$out/obj/sources"
# shellcheck disable=SC2086 # $cflags is a list of flags
xargs -P "$jobs" -I{} sh -c 'o=$(echo "$1" | tr / _); o=${o%.c}.o
	clang $2 -fsanitize=fuzzer-no-link $3 -c "$4/$1" -o "$5/$o"' _ {} "$cflags" \
	"-I$build/lib $( [ $redis_ok = 1 ] && pkg-config --cflags hiredis)" \
	"$src" "$out/obj" <"$out/obj/sources"
objs() { # the objects of every source but $1's extras
	sed -e 's|/|_|g' -e 's|\.c$|.o|' -e "s|^|$out/obj/|" "$out/obj/sources" |
		grep -v -e 'lib_redis_scripts.o' -e 'lib_redis_verdict.o' \
			-e 'lib_redis_occ-state.o'
}

# fuzz NAME SECONDS: runs the harness NAME from its corpus; its output
# goes to $out/NAME.log, its exit status to $out/NAME.rc.
fuzz() {
	name=$1 time=$2
	corpus="$out/corpus-${name#fuzz-}"
	work="$out/$name-corpus"
	mkdir -p "$work"
	echo "fuzz: $name for ${time}s"
	# A run of one input longer than 10 s is a hang, and fails.
	rc=0
	"$out/$name" -max_total_time="$time" -seed=1 -print_final_stats=1 \
		-timeout=10 "$work" "$corpus" >"$out/$name.log" 2>&1 || rc=$?
	echo $rc >"$out/$name.rc"
}

running=0
names=
for h in "$src"/tests/fuzz/fuzz-*.c; do
	name=$(basename "$h" .c)
	extra= time=$secs
	if [ "$name" = fuzz-redis-state ]; then
		# The Redis store's decoders: they need hiredis' reply type and
		# the build's script; a few seconds cover their few formats.
		if [ $redis_ok = 0 ]; then
			echo "fuzz: $name skipped (a build without hiredis)"
			continue
		fi
		extra="$out/obj/lib_redis_scripts.o $out/obj/lib_redis_verdict.o
			$out/obj/lib_redis_occ-state.o
			-I$build/lib $(pkg-config --cflags --libs hiredis)"
		[ "$time" -gt 5 ] && time=5
	fi
	corpus="$out/corpus-${name#fuzz-}"
	rm -rf "$corpus" "$corpus.gen" "$out/$name-corpus" "$out/$name.rc"
	cp -r "$src/tests/fuzz/corpus-${name#fuzz-}" "$corpus" 2>/dev/null ||
		mkdir -p "$corpus"
	# shellcheck disable=SC2046,SC2086 # lists of flags and objects
	clang $cflags -fsanitize=fuzzer "$h" $(objs) $extra $libs -o "$out/$name"
	if [ "$name" = fuzz-zone ]; then
		# Seeds: real zones, made by the tool itself.
		mkdir -p "$corpus.gen"
		TK_SHM_DIR="$corpus.gen" "$build/tools/throttlectl" create seed \
			--capacity 64 >/dev/null 2>&1 || true
		TK_SHM_DIR="$corpus.gen" "$build/tools/throttlectl" check seed k \
			--policy gcra:1/1s >/dev/null 2>&1 || true
		TK_SHM_DIR="$corpus.gen" "$build/tools/throttlectl" check seed t \
			--policy sliding-window:5/1s,buckets=4 >/dev/null 2>&1 || true
		cp "$corpus.gen"/* "$corpus/" 2>/dev/null || true
	fi
	fuzz "$name" "$time" &
	names="$names $name"
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait
		running=0
	fi
done
wait
failed=0
for name in $names; do
	if [ "$(cat "$out/$name.rc" 2>/dev/null)" != 0 ]; then
		tail -n 40 "$out/$name.log"
		echo "fuzz: FAIL: $name"
		failed=1
	else
		grep -E "stat::number_of_executed_units|Done" "$out/$name.log" || true
	fi
done
exit $failed
