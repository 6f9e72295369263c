#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Run the extension's .phpt tests with PHP's run-tests.php against the
# extension in the build tree.  run-tests.php writes its results beside the
# tests, so they run from a copy (the source tree may be read-only, as in
# make distcheck).  A test that is skipped because the extension did not
# load does not pass silently: guard.phpt fails then.  TK_PHP_VALGRIND=1
# runs every test under valgrind's memcheck (run-tests.php -m).
set -eu
: "${srcdir:=.}"
. "$srcdir/php/tests/lib.sh"
skip_if_sanitized
for v in PHP PHP_RUN_TESTS TK_PHP_EXT; do
	eval "val=\${$v:-}"
	[ -n "$val" ] || { echo "FAIL: $v is not set (run through make check)"; exit 1; }
done
[ -r "$PHP_RUN_TESTS" ] || { echo "FAIL: no $PHP_RUN_TESTS (php8.2-dev)"; exit 1; }
[ -r "$TK_PHP_EXT" ] || { echo "FAIL: no $TK_PHP_EXT (make)"; exit 1; }
# The committed arginfo header must come from the stub as it is now
# (gen_stub.php records the stub's SHA-1; sh php/gen-arginfo.sh redoes it).
stub_hash=$("$PHP" -n -r 'echo sha1(str_replace("\r\n", "\n", file_get_contents($argv[1])));' \
	"$srcdir/php/throttlekit.stub.php")
grep -q "Stub hash: $stub_hash" "$srcdir/php/throttlekit_arginfo.h" ||
	{ echo "FAIL: php/throttlekit_arginfo.h is not generated from the stub as it is (sh php/gen-arginfo.sh)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$srcdir"/php/tests/*.phpt "$work/"
chmod u+w "$work"/*
TK_SHM_DIR="$work/zones"
mkdir "$TK_SHM_DIR"
export TK_SHM_DIR
# throttlectl of this build, for the tests that read a zone as operators do.
TK_CTL=${abs_top_builddir:-$PWD}/tools/throttlectl
export TK_CTL
use_build_lib
vg=
[ "${TK_PHP_VALGRIND:-0}" = 1 ] && vg=-m
# shellcheck disable=SC2086 # $vg is empty or one option
NO_INTERACTION=1 TEST_PHP_EXECUTABLE="$PHP" \
	"$PHP" -n "$PHP_RUN_TESTS" -n -q --show-diff $vg \
	-d "extension=$TK_PHP_EXT" "$work" >"$work/out" 2>&1 || rc=$?
cat "$work/out"
# run-tests.php exits 1 on a failure; a run that tested nothing is one too.
grep -q "^Tests passed *: *[1-9]" "$work/out" || { echo "FAIL: nothing passed"; exit 1; }
exit "${rc:-0}"
