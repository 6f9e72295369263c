#!/bin/sh
# ns per check from PHP (make php-bench; not part of make check):
#   sh bench/php.sh BUILDDIR [CHECKS [ROUNDS]]
# The extension built in BUILDDIR, on a zone and on the memory store, and
# an APCu GCRA written the way PHP users do, in the same php process.
set -eu
bench=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BUILDDIR [CHECKS [ROUNDS]]" >&2; exit 2; }
build=$(cd "$1" && pwd)
ext=$build/php/.libs/throttlekit.so
[ -f "$ext" ] || { echo "bench: no $ext (configure found no php-config?)" >&2; exit 1; }
san=$(sed -n 's/^SAN_CFLAGS = //p' "$build/Makefile")
[ -z "$(echo "$san" | tr -d ' ')" ] ||
	{ echo "bench: $build is a sanitizer build; use a plain one" >&2; exit 1; }
php=$(sed -n 's/^PHP_BIN = //p' "$build/Makefile")
TK_SHM_DIR=$(mktemp -d /dev/shm/tk-php-bench.XXXXXX)
export TK_SHM_DIR
trap 'rm -rf "$TK_SHM_DIR"' EXIT
LD_LIBRARY_PATH=$build/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
apcu=
[ -f "$("$php" -n -r 'echo ini_get("extension_dir");')/apcu.so" ] &&
	apcu="-d extension=apcu -d apc.enable_cli=1 -d apc.shm_size=64M"
echo "php: $("$php" -n -r 'echo PHP_VERSION;'), libthrottlekit $("$php" -n -d "extension=$ext" -r 'echo phpversion("throttlekit");'), $(nproc) CPUs"
# shellcheck disable=SC2086 # $apcu is a list of options
"$php" -n -d "extension=$ext" $apcu "$bench/php-bench.php" "${2:-1000000}" "${3:-5}"
