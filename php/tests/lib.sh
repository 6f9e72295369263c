# SPDX-License-Identifier: BSD-2-Clause
# Shell functions for the PHP tests (sourced): the sanitizer skip, and a
# throwaway php-fpm with one static pool of www-data workers on 127.0.0.1,
# loading the extension from the build tree, and requests through
# cgi-fcgi.

# Exit 77 (skip) in a sanitizer build, with the reason.
skip_if_sanitized() {
	if [ -n "${SAN_CFLAGS:-}" ]; then
		echo "SKIP: sanitizer build: the extension is instrumented and" \
			"Debian's php is not; it needs the sanitizer runtime loaded first," \
			"and with it preloaded php's dlopen(RTLD_DEEPBIND) is refused by" \
			"the runtime; the plain build runs this test, and with" \
			"TK_PHP_VALGRIND=1 the .phpt tests under valgrind"
		exit 77
	fi
}

# The library the extension needs, from the build tree.
use_build_lib() {
	LD_LIBRARY_PATH="$(dirname "$TK_PHP_EXT")/../../lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export LD_LIBRARY_PATH
}

fail() {
	echo "FAIL: $*"
	[ -n "${work:-}" ] && [ -r "$work/fpm.log" ] && tail -n 20 "$work/fpm.log"
	exit 1
}

# Exit 77 (skip) with the reason when this machine cannot run the test.
fpm_preflight() {
	skip_if_sanitized
	for v in PHP PHP_FPM CGI_FCGI TK_PHP_EXT; do
		eval "val=\${$v:-}"
		[ -n "$val" ] || { echo "SKIP: no $v (php8.2-fpm, libfcgi-bin;" \
			"tools/setup-debian.sh installs them)"; exit 77; }
	done
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: php-fpm workers as www-data need root"; exit 77; }
	id www-data >/dev/null 2>&1 || { echo "SKIP: no user www-data"; exit 77; }
	use_build_lib
}

# A private directory the www-data workers can read, with their zones.
fpm_setup() {
	work=$(mktemp -d)
	trap 'fpm_stop; rm -rf "$work"' EXIT
	chmod 755 "$work"
	cp "$srcdir/php/tests/fpm/app.php" "$work/app.php"
	chmod 644 "$work/app.php"
	mkdir "$work/zones" "$work/run"
	chown www-data:www-data "$work/zones" "$work/run"
	TK_SHM_DIR="$work/zones"
	export TK_SHM_DIR
}

free_port() {
	"$PHP" -n -r '$s = stream_socket_server("tcp://127.0.0.1:0");
		echo substr(strrchr(stream_socket_get_name($s, false), ":"), 1);'
}

# fpm_start EXTRA-POOL-LINES: start php-fpm and wait until it answers.
fpm_start() {
	port=$(free_port)
	cat >"$work/fpm.conf" <<CONF
[global]
pid = $work/fpm.pid
error_log = $work/fpm.log
daemonize = no
process_control_timeout = 5

[${fpm_pool:-test}]
user = www-data
group = www-data
listen = 127.0.0.1:$port
pm = static
pm.max_children = 4
catch_workers_output = yes
env[TK_SHM_DIR] = $work/zones
env[TK_TEST_DIR] = $work/run
$1
CONF
	"$PHP_FPM" -n -d "extension=$TK_PHP_EXT" -y "$work/fpm.conf" -F -R \
		>"$work/fpm.out" 2>&1 &
	fpm_pid=$!
	i=0
	until fcgi "op=peek&key=ready" | grep -q '^pid='; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "php-fpm did not answer on port $port: $(cat "$work/fpm.out")"
		kill -0 "$fpm_pid" 2>/dev/null || fail "php-fpm exited: $(cat "$work/fpm.out")"
		sleep 0.1
	done
}

fpm_stop() {
	if [ -n "${fpm_pid:-}" ]; then
		kill -QUIT "$fpm_pid" 2>/dev/null || :
		wait "$fpm_pid" 2>/dev/null || :
		fpm_pid=
	fi
}

# fcgi QUERY: one request to app.php; prints its "pid=..." line.
fcgi() {
	env -i SCRIPT_FILENAME="$work/app.php" SCRIPT_NAME=/app.php \
		REQUEST_METHOD=GET QUERY_STRING="$1" \
		"$CGI_FCGI" -bind -connect "127.0.0.1:$port" 2>/dev/null |
		grep '^pid=' || :
}

# loops_start N M QUERY OUT: N parallel loops of M requests in the
# background, each printing into OUT.J; loops_wait waits for them (not for
# php-fpm, also a child of this shell) and gathers their lines into OUT.
loops_start() {
	loop_pids=
	j=0
	while [ $j -lt "$1" ]; do
		(k=0; while [ $k -lt "$2" ]; do fcgi "$3"; k=$((k + 1)); done) >"$4.$j" &
		loop_pids="$loop_pids $!"
		j=$((j + 1))
	done
}

loops_wait() {
	for p in $loop_pids; do
		wait "$p" || :
	done
	cat "$1".* >"$1"
	rm -f "$1".*
}

# count PATTERN FILE: lines of FILE matching PATTERN.
count() {
	grep -c -- "$1" "$2" || :
}

# pids FILE: the distinct worker pids in FILE.
pids() {
	sed -n 's/^pid=\([0-9]*\).*/\1/p' "$1" | sort -u
}

# burst_step KEY: 8 parallel loops x 25 checks of KEY (reset first) on the
# pool's default store at burst 50: exactly 50 admitted, by several workers.
burst_step() {
	fcgi "op=reset&key=$1" >/dev/null
	loops_start 8 25 "op=check&key=$1" "$work/$1"
	loops_wait "$work/$1"
	total=$(wc -l <"$work/$1")
	allowed=$(count 'allowed=1' "$work/$1")
	denied=$(count 'allowed=0' "$work/$1")
	workers=$(pids "$work/$1" | wc -l)
	echo "burst: $total answers, $allowed admitted, $denied denied, by $workers workers"
	[ "$total" -eq 200 ] || { grep -v 'allowed=' "$work/$1" | head -5; fail "$total answers of 200"; }
	[ "$allowed" -eq 50 ] || fail "$allowed admitted at burst 50 (a store per worker?)"
	[ "$denied" -eq 150 ] || fail "$denied denied, expected 150"
	[ "$workers" -ge 2 ] || fail "only $workers worker served the loops"
}

# kill_step KEY: a worker killed with kill -9 after admitting a check of
# KEY and before answering: that admission still counts (49 more, not
# 50), and the worker php-fpm starts in its place denies too.
kill_step() {
	fcgi "op=reset&key=$1" >/dev/null
	before=$(for i in 1 2 3 4 5 6 7 8 9 10 11 12; do fcgi "op=peek&key=none"; done |
		sed -n 's/^pid=\([0-9]*\).*/\1/p' | sort -u)
	rm -f "$work/run/victim.pid"
	fcgi "op=victim&key=$1" >/dev/null &
	victim_req=$!
	i=0
	until [ -s "$work/run/victim.pid" ]; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "the victim request did not start"
		sleep 0.1
	done
	read -r victim victim_allowed <"$work/run/victim.pid"
	[ "$victim_allowed" = 1 ] || fail "the victim request was not admitted"
	loops_start 8 25 "op=check&key=$1" "$work/$1"
	sleep 0.3
	kill -9 "$victim"
	loops_wait "$work/$1"
	wait "$victim_req" || :
	allowed=$(count 'allowed=1' "$work/$1")
	total=$(wc -l <"$work/$1")
	echo "kill -9: worker $victim killed holding an admission; $total answers, $allowed admitted"
	[ "$allowed" -eq 49 ] || fail "$allowed admitted after the victim's 1, expected 49"
	grep -q "pid=$victim " "$work/$1" && fail "the killed worker answered a loop request"
	fresh=
	i=0
	while [ -z "$fresh" ] && [ $i -lt 200 ]; do
		line=$(fcgi "op=check&key=$1")
		pid=$(echo "$line" | sed -n 's/^pid=\([0-9]*\).*/\1/p')
		case $line in *allowed=1*) fail "admitted past the limit after the kill: $line" ;; esac
		if [ -n "$pid" ] && ! echo "$before" | grep -qx "$pid"; then
			fresh=$line
		fi
		i=$((i + 1))
	done
	[ -n "$fresh" ] || fail "no request reached the replacement worker"
	echo "replacement worker: $fresh"
	case $fresh in *allowed=0*remaining=0*) ;; *) fail "replacement: $fresh" ;; esac
}

# Exit 77 (skip) without redis-server or redis-cli ($REDIS_SERVER and
# $REDIS_CLI: make check passes configure's, else those on the PATH);
# under TK_REQUIRE_REDIS=1 (tools/run-tests.sh) a failure, not a skip.
redis_preflight() {
	REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || :)}
	REDIS_CLI=${REDIS_CLI:-$(command -v redis-cli || :)}
	for b in "$REDIS_SERVER" "$REDIS_CLI"; do
		[ -n "$b" ] && [ -x "$b" ] && continue
		[ "${TK_REQUIRE_REDIS:-}" = 1 ] &&
			{ echo "FAIL: no $b (TK_REQUIRE_REDIS=1)"; exit 1; }
		echo "SKIP: no $b (redis-server, redis-tools)"
		exit 77
	done
}

# redis_start [PASSWORD]: a redis-server on a free port ($rport) of
# 127.0.0.1, its files in $work/redis, its pid in $redis_pid; rcli runs
# redis-cli on it.  Returns once it answers.
redis_start() {
	redis_pass=${1:-}
	rport=$(free_port)
	mkdir -p "$work/redis"
	"$REDIS_SERVER" --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$work/redis" ${redis_pass:+--requirepass "$redis_pass"} \
		--daemonize no >"$work/redis.log" 2>&1 &
	redis_pid=$!
	i=0
	until [ "$(rcli ping 2>/dev/null)" = PONG ]; do
		i=$((i + 1))
		[ $i -lt 100 ] || fail "redis-server did not answer on port $rport: $(cat "$work/redis.log")"
		sleep 0.1
	done
}

rcli() {
	"$REDIS_CLI" -p "$rport" ${redis_pass:+-a "$redis_pass" --no-auth-warning} "$@" |
		tr -d '\r'
}

# Stop the server redis_start started (stopped or not), if it runs.
redis_stop() {
	if [ -n "${redis_pid:-}" ]; then
		kill -CONT "$redis_pid" 2>/dev/null || :
		kill "$redis_pid" 2>/dev/null || :
		wait "$redis_pid" 2>/dev/null || :
		redis_pid=
	fi
}
