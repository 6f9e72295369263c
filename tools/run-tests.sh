#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every test, from a fresh Debian 12 machine: installs what is missing,
# then builds out of tree three times and runs the whole suite in each:
#   build/plain   -Werror, make check and make distcheck
#   build/asan    AddressSanitizer + UndefinedBehaviorSanitizer
#   build/tsan    ThreadSanitizer
# and a short libFuzzer run of the policy parser (with clang).
# Any failure stops the run with a non-zero exit.
#
# Tests that need a program this machine lacks skip (exit 77, TAP SKIP),
# which automake counts as no failure; here the Redis and Apache tests
# must run: configure must find hiredis and apxs, and with
# TK_REQUIRE_REDIS=1 and TK_REQUIRE_APACHE=1 a missing redis-server,
# redis-cli, httpd or module fails the test instead.  One skip remains by
# design: the ThreadSanitizer build skips the Apache tests, since httpd
# forks children that TSan cannot follow (tests/apache/lib.sh).
set -eu
TK_REQUIRE_REDIS=1
TK_REQUIRE_APACHE=1
export TK_REQUIRE_REDIS TK_REQUIRE_APACHE
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
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
		--with-redis --with-apache "$@" >configure.out ||
		{ cat configure.out; exit 1; })
	echo "=== $name: make check"
	make -C "build/$name" -j"$jobs" >/dev/null
	if ! make -C "build/$name" -j"$jobs" check; then
		find "build/$name/tests" -name '*.log' -exec grep -l -E '^(not ok|FAIL|ERROR)|(ThreadSanitizer|AddressSanitizer|runtime error)' {} + |
			while read -r log; do echo "--- $log"; tail -n 60 "$log"; done
		exit 1
	fi
}

build plain
echo "=== plain: make check-style"
make -C build/plain check-style
echo "=== plain: make distcheck"
make -C build/plain -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror >build/plain/distcheck.out 2>&1 ||
	{ tail -n 80 build/plain/distcheck.out; exit 1; }
echo "distcheck: ok"
echo "=== fuzz: the policy parser, 30 s"
sh tests/fuzz/run.sh "$top/build/plain" 30
build asan --enable-sanitizers=address,undefined
# The Apache tests skip here, by design (see above).
build tsan --enable-sanitizers=thread
echo "run-tests: all builds passed"
