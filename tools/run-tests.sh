#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every test, from a fresh Debian 12 machine: installs what is missing,
# then builds out of tree three times and runs the whole suite in each:
#   build/plain   -Werror, make check (the spin model checks too),
#                 make distcheck, and the tarball against git ls-files
#   the Debian packages, built, linted, installed and smoke-tested
#                 (tools/test-packages.sh), then purged
#   build/asan    AddressSanitizer + UndefinedBehaviorSanitizer, then
#   build/tsan    ThreadSanitizer, both beside the plain build's
#                 distcheck, packages and fuzz steps (the fuzzers
#                 beside the packages)
# and short libFuzzer runs of the parsers and decoders (with clang).
# Any failure stops the run with a non-zero exit.  Each step prints the
# time since the start, and the end the CPU time used.
#
# distcheck builds the library, the tool, the module and the extension
# from the tarball (the static library too, which the other builds leave
# out: --disable-static), installs and uninstalls, and runs only the
# tests about the tarball itself (install, a static link, man pages,
# README); it builds no test program: the suite already ran on these
# sources, and the tarball is checked file by file against git.
# The sanitizer builds leave out what their tests cannot load: the PHP
# extension (php loads no sanitized extension), and under ThreadSanitizer
# the Apache module (httpd forks children it cannot follow).
# make check runs -j(4 x CPUs): most tests wait on servers, not CPUs (a
# sanitizer suite at -j(2 x CPUs) kept as many tests running as it had
# slots, for two minutes, while the CPUs had room); and in the plain
# build the seven spin model checks, first in the list and CPU-bound,
# would otherwise hold most of the slots for two minutes.
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
	tsan:tests/unit/store/test_memory_store | tsan:tests/unit/shm/test_zone_counters)
		echo "one case each: ThreadSanitizer cannot start threads in a fork() child of a threaded process" ;;
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

start=$(date +%s)
step() {
	echo "=== $* [$(($(date +%s) - start)) s]"
}

# Every file git tracks is in the release tarball, or below with why not.
check_dist() {
	tarball=$(ls build/plain/throttlekit-*.tar.gz)
	if ! git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		echo "dist: not a git checkout; the tarball's contents are not compared"
		return 0
	fi
	tar tzf "$tarball" | sed 's|^[^/]*/||' | sort >build/plain/dist.files
	git -C "$top" ls-files | sort | comm -23 - build/plain/dist.files |
		while read -r f; do
			case $f in
			.ci/* | .gitignore) ;; # CI's and git's own
			bench/recorded/*) ;; # figures of past runs, not sources
			*) echo "NOT IN THE TARBALL: $f" ;;
			esac
		done >build/plain/dist.missing
	if [ -s build/plain/dist.missing ]; then
		cat build/plain/dist.missing
		return 1
	fi
	echo "dist: every tracked file is in $(basename "$tarball")"
}

step setup
sh tools/setup-debian.sh
autoreconf -fi >/dev/null 2>&1
jobs=$(nproc 2>/dev/null || echo 2)

build() {
	name=$1
	shift
	step "$name: configure $*"
	rm -rf "build/$name"
	mkdir -p "build/$name"
	# --enable-tests: a machine without cmocka fails here, not later.
	(cd "build/$name" && "$top/configure" --enable-werror --enable-tests \
		--with-redis --with-postgresql --with-apache --with-php "$@" >configure.out ||
		{ cat configure.out; exit 1; })
	step "$name: make"
	make -C "build/$name" -j"$jobs" >/dev/null
	step "$name: make check"
	if ! make -C "build/$name" -j"$check_jobs" check; then
		find "build/$name" -name '*.log' -exec grep -l -E '^(not ok|FAIL|ERROR)|(ThreadSanitizer|AddressSanitizer|runtime error)' {} + |
			while read -r log; do echo "--- $log"; tail -n 60 "$log"; done
		exit 1
	fi
	step "$name: skips"
	audit_skips "$name" || exit 1
}

check_jobs=$((4 * jobs))
build plain --disable-static
# The sanitizer builds run one after the other beside the plain build's
# other steps (style, distcheck, the packages, fuzz), which leave CPUs
# idle while they configure, link and wait on dpkg; their output follows.
step "asan, then tsan: started beside the next steps (their output below)"
(
	set -e # not inside an && list, where set -e does not hold
	build asan --enable-sanitizers=address,undefined --disable-model-check \
		--disable-static --without-php
	build tsan --enable-sanitizers=thread --disable-model-check \
		--disable-static --without-apache --without-php
) >build/sanitizers.out 2>&1 &
sanitizers=$!
step "plain: make check-style"
make -C build/plain check-style
step "plain: make distcheck"
make -C build/plain -j"$jobs" distcheck \
	DISTCHECK_CONFIGURE_FLAGS="--enable-werror --disable-model-check" \
	TESTS="tests/meta/check-install.sh tests/meta/check-man.sh tests/meta/check-readme.sh" \
	check_PROGRAMS= \
	>build/plain/distcheck.out 2>&1 ||
	{ tail -n 80 build/plain/distcheck.out; exit 1; }
echo "distcheck: ok"
check_dist || exit 1
# The fuzzers run for a fixed time each, one at a time: beside the
# packages, which wait on dpkg and servers much of theirs.
step "fuzz: the parsers and decoders, beside the packages (output below)"
sh tests/fuzz/run.sh "$top/build/plain" 30 >build/fuzz.out 2>&1 &
fuzz=$!
step "packages: build, lintian, install, smoke tests, purge"
sh tools/test-packages.sh
step "fuzz: waiting for it"
rc=0
wait "$fuzz" || rc=$?
cat build/fuzz.out
[ "$rc" -eq 0 ] || { echo "run-tests: fuzzing failed"; exit 1; }
step "asan, tsan: waiting for them"
rc=0
wait "$sanitizers" || rc=$?
cat build/sanitizers.out
[ "$rc" -eq 0 ] || { echo "run-tests: a sanitizer build failed"; exit 1; }
step "run-tests: all builds passed"
times
