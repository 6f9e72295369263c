#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# ns per check from PHP (make php-bench; not part of make check):
#   sh bench/php.sh BUILDDIR [CHECKS [ROUNDS]]
# The extension built in BUILDDIR, on a zone and on the memory store, and
# an APCu GCRA written the way PHP users do, in the same php process; with
# redis-server, also the extension on a Redis store and a Lua GCRA sent
# with phpredis, on a redis-server started here on a free port of
# 127.0.0.1 and stopped at the end.
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
redis_pid=
trap '[ -z "$redis_pid" ] || kill "$redis_pid"; rm -rf "$TK_SHM_DIR"' EXIT
LD_LIBRARY_PATH=$build/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
apcu=
[ -f "$("$php" -n -r 'echo ini_get("extension_dir");')/apcu.so" ] &&
	apcu="-d extension=apcu -d apc.enable_cli=1 -d apc.shm_size=64M"
redis=
phpredis=
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
	port=$("$php" -n -r '$s = stream_socket_server("tcp://127.0.0.1:0");
		echo substr(strrchr(stream_socket_get_name($s, false), ":"), 1);')
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$TK_SHM_DIR" --daemonize no >"$TK_SHM_DIR/redis.log" 2>&1 &
	redis_pid=$!
	i=0
	until [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "bench: redis-server did not start" >&2; exit 1; }
		sleep 0.1
	done
	redis=127.0.0.1:$port
	echo "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') on $redis"
	# phpredis (php8.2-redis) needs igbinary loaded before it.
	[ -f "$("$php" -n -r 'echo ini_get("extension_dir");')/redis.so" ] &&
		phpredis="-d extension=igbinary -d extension=redis"
fi
echo "php: $("$php" -n -r 'echo PHP_VERSION;'), libthrottlekit $("$php" -n -d "extension=$ext" -r 'echo phpversion("throttlekit");'), $(nproc) CPUs"
# shellcheck disable=SC2086 # $apcu and $phpredis are lists of options
"$php" -n -d "extension=$ext" $apcu $phpredis "$bench/php-bench.php" \
	"${2:-1000000}" "${3:-5}" $redis
