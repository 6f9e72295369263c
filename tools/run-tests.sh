#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every test, from a fresh Debian 12 machine: installs what is missing,
# then builds out of tree three times and runs the whole suite in each:
#   build/plain   -Werror, make check (the spin model checks too) and
#                 make distcheck
#   build/asan    AddressSanitizer + UndefinedBehaviorSanitizer
#   build/tsan    ThreadSanitizer
# and short libFuzzer runs of the parsers and decoders (with clang).
# Any failure stops the run with a non-zero exit.
#
# Nothing may skip quietly: configure must find hiredis, apxs and PHP
# (--with-redis --with-apache --with-php), TK_REQUIRE_REDIS=1 and
# TK_REQUIRE_APACHE=1 turn a missing server into a failure, and after
# each build every test that skipped is listed with its reason; one
# outside the allowlist below fails the run.  The spin models prove the
# zone protocols, which no compiler flag changes: they run once, in the
# plain build (--disable-model-check elsewhere).
set -eu
TK_REQUIRE_REDIS=1
TK_REQUIRE_POSTGRES=1
TK_REQUIRE_APACHE=1
TK_REQUIRE_FUZZ=1
export TK_REQUIRE_REDIS TK_REQUIRE_POSTGRES TK_REQUIRE_APACHE TK_REQUIRE_FUZZ
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# The golden vectors, for every build and for distcheck's copy of the tree.
if [ -d "$top/../shared" ]; then
	TK_SHARED_DIR=$(cd "$top/../shared" && pwd)
	export TK_SHARED_DIR
fi

# The skips allowed, as BUILD:TEST-PATH-PATTERN, and why.
allowed() {
	case "$1:$2" in
	tsan:tests/apache/*)
		echo "httpd forks children that ThreadSanitizer cannot follow" ;;
	tsan:tests/unit/store/test_memory_store | tsan:tests/unit/shm/test_zone_counters)
		echo "one case each: ThreadSanitizer cannot start threads in a fork() child of a threaded process" ;;
	asan:php/tests/* | tsan:php/tests/*)
		echo "php cannot load a sanitized extension; the plain build runs these" ;;
	*:tests/unit/algo/test_vectors)
		[ -z "${TK_SHARED_DIR:-}" ] &&
			echo "no ../shared beside this clone: the golden vectors are not here" ;;
	*) return 1 ;;
	esac
}

# Every test of build $1 that skipped, with its reason; 1 if one is not
# allowed.
audit_skips() {
	name=$1 bad=0
	for trs in $(find "build/$name" -name '*.trs' | sort); do
		grep -q '^:test-result: SKIP' "$trs" || continue
		t=${trs#build/$name/}
		t=${t%.trs}
		log=${trs%.trs}.log
		why=$(grep -m1 -E 'SKIP' "$log" 2>/dev/null | cut -c1-160)
		if reason=$(allowed "$name" "$t") && [ -n "$reason" ]; then
			echo "skip (allowed: $reason): $t"
		else
			echo "SKIP NOT ALLOWED: $t: ${why:-no reason given}"
			bad=1
		fi
	done
	return $bad
}

sh tools/setup-debian.sh
autoreconf -fi >/dev/null 2>&1
jobs=$(nproc 2>/dev/null || echo 2)

build() {
	name=$1
	shift
	echo "=== $name: configure $*"
	rm -rf "build/$name"
	mkdir -p "build/$name"
	# --enable-tests: a machine without cmocka fails here, not later.
	(cd "build/$name" && "$top/configure" --enable-werror --enable-tests \
		--with-redis --with-postgresql --with-apache --with-php "$@" >configure.out ||
		{ cat configure.out; exit 1; })
	echo "=== $name: make check"
	make -C "build/$name" -j"$jobs" >/dev/null
	if ! make -C "build/$name" -j"$jobs" check; then
		find "build/$name" -name '*.log' -exec grep -l -E '^(not ok|FAIL|ERROR)|(ThreadSanitizer|AddressSanitizer|runtime error)' {} + |
			while read -r log; do echo "--- $log"; tail -n 60 "$log"; done
		exit 1
	fi
	echo "=== $name: skips"
	audit_skips "$name" || exit 1
}

build plain
echo "=== plain: make check-style"
make -C build/plain check-style
echo "=== plain: make distcheck"
make -C build/plain -j"$jobs" distcheck \
	DISTCHECK_CONFIGURE_FLAGS="--enable-werror --disable-model-check" \
	>build/plain/distcheck.out 2>&1 ||
	{ tail -n 80 build/plain/distcheck.out; exit 1; }
echo "distcheck: ok"
echo "=== fuzz: the parsers and decoders"
sh tests/fuzz/run.sh "$top/build/plain" 30
build asan --enable-sanitizers=address,undefined --disable-model-check
build tsan --enable-sanitizers=thread --disable-model-check
echo "run-tests: all builds passed"
