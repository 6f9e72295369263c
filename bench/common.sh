# SPDX-License-Identifier: BSD-2-Clause
# bench/common.sh - sourced by run.sh and callgrind.sh (POSIX sh).
#
# bench_setup BUILDDIR sets: bench (this directory), src (the source tree),
# build (BUILDDIR, absolute), tkb (the tk-bench binary, freshly built
# against BUILDDIR's library), and exports TK_SHM_DIR (a private tmpfs
# directory for the zones, removed on exit) unless it is already set.

bench_die() {
	echo "bench: $*" >&2
	exit 1
}

# shellcheck disable=SC2154 # $bench is set by the sourcing script
bench_setup() {
	[ $# -eq 1 ] || {
		echo "usage: $0 BUILDDIR" >&2
		exit 2
	}
	build=$(cd "$1" && pwd) || bench_die "no build directory $1"
	src=$(dirname "$bench")
	libdir=$build/lib/.libs
	[ -f "$libdir/libthrottlekit.so" ] ||
		bench_die "$libdir/libthrottlekit.so is missing; run make first"

	# Which library binary is measured: the tree may move between runs.
	TK_BENCH_LIB_ID=$(bench_lib_id)
	export TK_BENCH_LIB_ID

	lib_cflags=$(sed -n 's/^CFLAGS = //p' "$build/Makefile" 2>/dev/null)
	san_cflags=$(sed -n 's/^SAN_CFLAGS = //p' "$build/Makefile" 2>/dev/null)
	TK_BENCH_LIB_CFLAGS="$lib_cflags $san_cflags"
	export TK_BENCH_LIB_CFLAGS
	case " $lib_cflags " in
	*" -O2 "* | *" -O3 "*) ;;
	*) echo "bench: warning: the library was built with CFLAGS" \
		"'$lib_cflags'; numbers from an unoptimised build mean little" >&2 ;;
	esac
	[ -z "$(echo "$san_cflags" | tr -d ' ')" ] ||
		bench_die "the library in $build is built with sanitizers" \
			"($san_cflags); configure a plain build for benchmarks"

	mkdir -p "$build/bench"
	tkb=$build/bench/tk-bench
	# The library links liburcu and Concurrency Kit itself.
	# shellcheck disable=SC2086
	${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Wshadow \
		-Wstrict-prototypes -Wmissing-prototypes \
		-I"$src/include" -I"$bench" \
		-o "$tkb" \
		"$bench/driver.c" "$bench/keys.c" "$bench/engines.c" \
		"$bench/scenarios.c" "$bench/report.c" \
		"$bench/baselines/floor.c" \
		"$bench/baselines/mutex-table.c" \
		"$bench/baselines/per-process.c" \
		-L"$libdir" -lthrottlekit -Wl,-rpath,"$libdir" \
		-lpthread -lm || bench_die "cannot build tk-bench"

	if [ -z "${TK_SHM_DIR:-}" ]; then
		shm_base=/dev/shm
		[ -d "$shm_base" ] && [ -w "$shm_base" ] || shm_base=${TMPDIR:-/tmp}
		TK_SHM_DIR=$(mktemp -d "$shm_base/tk-bench.XXXXXX") ||
			bench_die "cannot make a directory for zones"
		bench_own_shm=$TK_SHM_DIR
		trap 'rm -rf "$bench_own_shm"' EXIT
		trap 'exit 130' INT TERM
	fi
	export TK_SHM_DIR
}

# "sha256:<first 16 hex digits> <build time>" of the library binary.
bench_lib_id() {
	so=$(readlink -f "$libdir/libthrottlekit.so")
	sum=$(sha256sum "$so" 2>/dev/null | cut -c1-16)
	when=$(date -u -r "$so" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo unknown)
	echo "sha256:${sum:-unknown} built $when"
}

# Warn if the library was rebuilt while the benchmark ran.
bench_lib_check() {
	now_id=$(bench_lib_id)
	[ "$now_id" = "$TK_BENCH_LIB_ID" ] ||
		echo "bench: warning: the library changed during the run" \
			"($TK_BENCH_LIB_ID, now $now_id); the figures are for" \
			"the first" >&2
}

# The results directory: TK_BENCH_RESULTS, else bench/results in the
# source tree, else (read-only sources) bench/results in the build tree.
bench_results() {
	results=${TK_BENCH_RESULTS:-$bench/results}
	if ! mkdir -p "$results" 2>/dev/null || ! [ -w "$results" ]; then
		results=$build/bench/results
		mkdir -p "$results" || bench_die "cannot create $results"
	fi
}

# bench_tool NAME: build the one-file benchmark bench/NAME.c against the
# library, run it, and keep its output in $results/NAME.txt.
bench_tool() {
	# shellcheck disable=SC2086
	${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Wstrict-prototypes \
		-Wmissing-prototypes -I"$src/include" -o "$build/bench/$1" \
		"$bench/$1.c" -L"$libdir" -lthrottlekit -Wl,-rpath,"$libdir" ||
		bench_die "cannot build $1"
	"$build/bench/$1" | tee "$results/$1.txt"
	bench_lib_check
}

# bench_server NAME BUILDDIR: the start of a benchmark against a server
# (redis.sh, pg.sh): sets build, src and libdir; defines bench_skip WHY
# (says it, exits 77); refuses a missing or sanitized library.
bench_server() {
	bench_name=$1
	build=$(cd "$2" && pwd) || bench_die "no build directory $2"
	src=$(dirname "$bench")
	libdir=$build/lib/.libs
	[ -f "$libdir/libthrottlekit.so" ] ||
		bench_die "$libdir/libthrottlekit.so is missing; run make first"
	san=$(sed -n 's/^SAN_CFLAGS = //p' "$build/Makefile")
	[ -z "$(echo "$san" | tr -d ' ')" ] ||
		bench_die "$build is a sanitizer build; use a plain one"
	mkdir -p "$build/bench"
}

bench_skip() {
	echo "bench: $bench_name: $*; skipped" >&2
	exit 77
}

# bench_redis_start STEM: a redis-server on a free port of 127.0.0.1 (no
# persistence), in a fresh temporary directory $TMPDIR/STEM.XXXXXX: sets
# dir, port and pid, and traps that stop it by its pid and remove the
# directory.  Exits 1 if no server starts in five tries.
bench_redis_start() {
	dir=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
	pid=
	trap '[ -z "$pid" ] || { kill "$pid"; wait "$pid"; } 2>/dev/null; rm -rf "$dir"' EXIT
	trap 'exit 130' INT TERM
	for try in 1 2 3 4 5; do
		port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 30000))
		redis-server --port "$port" --bind 127.0.0.1 --save '' \
			--appendonly no --dir "$dir" >"$dir/redis.log" 2>&1 &
		pid=$!
		i=0
		while [ $i -lt 50 ] && kill -0 "$pid" 2>/dev/null; do
			redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
			sleep 0.1
			i=$((i + 1))
		done
		kill -0 "$pid" 2>/dev/null && break
		wait "$pid" 2>/dev/null || true
		pid=
	done
	[ -n "$pid" ] || { echo "bench: redis-server did not start" >&2; exit 1; }
}
