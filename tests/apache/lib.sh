# SPDX-License-Identifier: BSD-2-Clause
# lib.sh - helpers of the Apache module's tests, sourced by them.
#
# Each test starts a real httpd (APACHE_HTTPD, modules from
# APACHE_MODULES) on 127.0.0.1 with a free port, in a temporary ServerRoot
# of mode 0755 (the children, which run as www-data when the test runs as
# root, must read it), with its zones in a directory of its own
# (TK_SHM_DIR; the module keeps its own in ZONES).  It stops the server by the pid it started, and nothing
# else.  Results are plain: exit 0 pass, 1 fail, 77 skip.  With
# TK_REQUIRE_APACHE=1 (as tools/run-tests.sh sets) a missing httpd, module
# or tool fails instead of skipping; with TK_REQUIRE_REDIS=1 so does a
# missing redis-server.  Only a ThreadSanitizer build skips regardless:
# httpd forks its children, which TSan cannot follow (skip_by_design).


me=${0##*/}
failures=0

say() { printf '%s: %s\n' "$me" "$*"; }
fail()
{
	printf '%s: FAIL: %s\n' "$me" "$*"
	failures=$((failures + 1))
}
skip_by_design()
{
	printf '%s: SKIP: %s\n' "$me" "$*"
	exit 77
}
# skip [VAR] WHY: skip, or fail if $VAR (default TK_REQUIRE_APACHE) is 1.
skip()
{
	req=TK_REQUIRE_APACHE
	case $1 in TK_REQUIRE_*) req=$1; shift ;; esac
	if [ "$(eval echo "\${$req:-}")" = 1 ]; then
		printf '%s: FAIL: %s (%s=1)\n' "$me" "$*" "$req"
		exit 1
	fi
	skip_by_design "$@"
}
# check WHAT EXPECTED ACTUAL
check()
{
	if [ "$2" = "$3" ]; then
		say "ok: $1 ($3)"
	else
		fail "$1: expected $2, got $3"
	fi
}
finish()
{
	[ "$failures" -eq 0 ] || exit 1
	exit 0
}

: "${APACHE_HTTPD:=/usr/sbin/apache2}"
: "${APACHE_MODULES:=/usr/lib/apache2/modules}"
MODULE=${abs_top_builddir:-.}/apache/.libs/mod_throttlekit.so

[ -x "$APACHE_HTTPD" ] || skip "no httpd ($APACHE_HTTPD)"
[ -f "$MODULE" ] || skip "no module built ($MODULE)"
command -v curl >/dev/null 2>&1 || skip "curl is needed"
# A module built with AddressSanitizer or UBSan needs their runtimes
# loaded first, which the uninstrumented httpd does not do: preload them
# into httpd (only).  ThreadSanitizer cannot run under a forking httpd.
HTTPD_PRELOAD=
case ${SAN_CFLAGS:-} in
*thread*) skip_by_design "a ThreadSanitizer build: httpd cannot run the module" ;;
esac
for rt in address:libasan.so undefined:libubsan.so; do
	case ${SAN_CFLAGS:-} in
	*"${rt%%:*}"*)
		f=$(${CC:-cc} -print-file-name="${rt#*:}" 2>/dev/null)
		case $f in
		/*) [ -f "$f" ] || skip "no ${rt#*:} to preload into httpd" ;;
		*) skip "no ${rt#*:} to preload into httpd (compiler ${CC:-cc})" ;;
		esac
		HTTPD_PRELOAD="$HTTPD_PRELOAD $f"
		;;
	esac
done

# httpd ARGS: run httpd, with the sanitizers' runtimes if the module needs
# them (httpd frees nothing at exit by design: no leak check).
httpd()
{
	if [ -n "$HTTPD_PRELOAD" ]; then
		LD_PRELOAD="$HTTPD_PRELOAD" \
			ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" \
			"$APACHE_HTTPD" "$@"
	else
		"$APACHE_HTTPD" "$@"
	fi
}
for m in mpm_prefork mpm_event authz_core remoteip; do
	[ -f "$APACHE_MODULES/mod_$m.so" ] || skip "no mod_$m in $APACHE_MODULES"
done

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/tk-apache.XXXXXX") || exit 1
chmod 755 "$ROOT"
mkdir -p "$ROOT/htdocs" "$ROOT/run" "$ROOT/logs" "$ROOT/shm"
TK_SHM_DIR=$ROOT/shm
export TK_SHM_DIR
# The module's own directory of zones (DefaultRuntimeDir is $ROOT/run):
# a zone of shm:NAME is the file $ZONES/NAME.
ZONES=$ROOT/run/throttlekit
CONF=$ROOT/httpd.conf
PIDFILE=$ROOT/run/httpd.pid
PID=
PORT=

USERS=
if [ "$(id -u)" -eq 0 ]; then
	id www-data >/dev/null 2>&1 || skip "running as root without www-data"
	USERS="User www-data
Group www-data"
fi

cleanup()
{
	stop_server
	rm -rf "$ROOT"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# mpm_block MPM: the process layout of the tests.
mpm_block()
{
	case $1 in
	prefork)
		cat <<-EOF
		LoadModule mpm_prefork_module $APACHE_MODULES/mod_mpm_prefork.so
		StartServers 4
		MinSpareServers 4
		MaxSpareServers 4
		ServerLimit 4
		MaxRequestWorkers 4
		EOF
		;;
	prefork1)
		# One child: what a child logs and counts is all there is.
		cat <<-EOF
		LoadModule mpm_prefork_module $APACHE_MODULES/mod_mpm_prefork.so
		StartServers 1
		MinSpareServers 1
		MaxSpareServers 1
		ServerLimit 1
		MaxRequestWorkers 1
		EOF
		;;
	event)
		cat <<-EOF
		LoadModule mpm_event_module $APACHE_MODULES/mod_mpm_event.so
		StartServers 2
		ServerLimit 2
		ThreadLimit 8
		ThreadsPerChild 8
		MinSpareThreads 16
		MaxSpareThreads 16
		MaxRequestWorkers 16
		EOF
		;;
	esac
}

# write_conf MPM PORT BODY: a self-contained configuration (without
# mod_throttlekit when STOCK is set, to compare with a stock httpd).
write_conf()
{
	tk_log=" throttlekit:info"
	tk_load=
	if [ -n "${STOCK:-}" ]; then
		tk_log=
		tk_load="#"
	fi
	{
		cat <<-EOF
		ServerRoot $ROOT
		ServerName 127.0.0.1
		Listen 127.0.0.1:$2
		PidFile $PIDFILE
		DefaultRuntimeDir $ROOT/run
		ErrorLog $ROOT/logs/error.log
		LogLevel warn$tk_log
		$USERS
		EOF
		mpm_block "$1"
		cat <<-EOF
		LoadModule authz_core_module $APACHE_MODULES/mod_authz_core.so
		LoadModule remoteip_module $APACHE_MODULES/mod_remoteip.so
		${tk_load}LoadModule throttlekit_module $MODULE
		KeepAlive Off
		Timeout 30
		DocumentRoot $ROOT/htdocs
		<Directory $ROOT/htdocs>
		    Require all granted
		</Directory>
		LogFormat "%P %>s %{THROTTLE_STATUS}e %U %{Host}i %{tid}P" tk
		CustomLog $ROOT/logs/access.log tk
		EOF
		printf '%s\n' "$3"
	} >"$CONF"
}

# port_free PORT: nothing accepts connections there (curl: 7 = refused).
port_free()
{
	curl -s -o /dev/null --connect-timeout 2 "http://127.0.0.1:$1/"
	[ $? -eq 7 ]
}

# start_server MPM BODY: start httpd; BODY may use @PORT@, @ROOT@ (the
# ServerRoot) and @MODULES@ (APACHE_MODULES).
start_server()
{
	tries=0
	while [ $tries -lt 20 ]; do
		tries=$((tries + 1))
		PORT=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000))
		port_free "$PORT" || continue
		write_conf "$1" "$PORT" "$(printf '%s\n' "$2" |
			sed "s|@PORT@|$PORT|g; s|@ROOT@|$ROOT|g; s|@MODULES@|$APACHE_MODULES|g")"
		rm -f "$PIDFILE"
		# A port taken since port_free: the error goes to stderr when
		# httpd gives up before it opens its error log.
		if ! httpd -f "$CONF" -k start 2>"$ROOT/logs/start.err"; then
			grep -q "Address already in use" "$ROOT/logs/error.log" \
				"$ROOT/logs/start.err" 2>/dev/null && continue
			cat "$ROOT/logs/start.err" "$ROOT/logs/error.log" 2>/dev/null
			return 1
		fi
		cat "$ROOT/logs/start.err" >&2
		wait_started && return 0
		cat "$ROOT/logs/error.log"
		return 1
	done
	return 1
}

# wait_started: the pid file names a live process and the port answers.
wait_started()
{
	i=0
	while [ $i -lt 100 ]; do
		i=$((i + 1))
		if [ -s "$PIDFILE" ]; then
			PID=$(cat "$PIDFILE")
			if kill -0 "$PID" 2>/dev/null &&
				curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then
				return 0
			fi
		fi
		sleep 0.1
	done
	return 1
}

stop_server()
{
	[ -n "$PID" ] || return 0
	kill -TERM "$PID" 2>/dev/null
	i=0
	while kill -0 "$PID" 2>/dev/null && [ $i -lt 100 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	kill -0 "$PID" 2>/dev/null && fail "httpd $PID did not stop"
	PID=
}

# restart_server: a full stop and start with the same configuration.
restart_server()
{
	stop_server
	httpd -f "$CONF" -k start || return 1
	wait_started
}

# graceful: SIGUSR1, then wait until the new generation serves.
graceful()
{
	n=$(grep -c "resuming normal operations" "$ROOT/logs/error.log")
	kill -USR1 "$PID"
	i=0
	while [ $i -lt 100 ]; do
		i=$((i + 1))
		m=$(grep -c "resuming normal operations" "$ROOT/logs/error.log")
		[ "$m" -gt "$n" ] && sleep 0.5 && return 0
		sleep 0.1
	done
	return 1
}

# urls N PATH: a curl config of N requests of PATH, answers discarded.
urls()
{
	i=0
	while [ $i -lt "$1" ]; do
		i=$((i + 1))
		printf 'url = "http://127.0.0.1:%s%s"\noutput = "/dev/null"\n' \
			"$PORT" "$2"
	done >"$ROOT/curl.cfg"
}

# fire N PATH [curl options]: N concurrent requests; prints one line per
# response: "CODE|Retry-After|RateLimit|RateLimit-Policy|X-RateLimit-Remaining".
fire()
{
	urls "$1" "$2"
	shift 2
	curl -s --no-progress-meter -Z --parallel-immediate --parallel-max 200 \
		"$@" -K "$ROOT/curl.cfg" \
		-w '%{http_code}|%header{retry-after}|%header{ratelimit}|%header{ratelimit-policy}|%header{x-ratelimit-remaining}\n'
}

# seq_get N PATH [curl options]: N requests one after the other; codes.
seq_get()
{
	urls "$1" "$2"
	shift 2
	curl -s "$@" -K "$ROOT/curl.cfg" -w '%{http_code}\n'
}

# seq_status N PATH: N requests one after the other; how many of their
# access log entries had each code and status ("N CODE STATUS" lines).
seq_status()
{
	before=$(grep -c " $2 " "$ROOT/logs/access.log")
	seq_get "$1" "$2" >/dev/null
	wait_log "$2" $((before + $1)) || fail "the access log lacks $2"
	awk -v p="$2" '$4 == p { print $2, $3 }' "$ROOT/logs/access.log" |
		tail -n "$1" | sort | uniq -c | awk '{ print $1, $2, $3 }'
}

# server_body NAME SPEC: a configuration of a server's store NAME: rule
# burst (gcra:1/1h,burst=50, headers=both) at /api, fo (fail=open) at
# /open and fc (fail=closed) at /closed, the status page at /tk-status.
server_body()
{
	cat <<-EOF
	ThrottleStore $1 $2
	ThrottleRule burst "gcra:1/1h,burst=50" store=$1 headers=both
	ThrottleRule fo "gcra:1/1h,burst=100" store=$1 fail=open
	ThrottleRule fc "gcra:1/1h,burst=100" store=$1 fail=closed
	<Location /api>
	    Throttle burst
	</Location>
	<Location /open>
	    Throttle fo
	</Location>
	<Location /closed>
	    Throttle fc
	</Location>
	<Location /tk-status>
	    SetHandler throttlekit-status
	</Location>
	EOF
}

# status_names NAME SHOWN WHAT: the status page, as text and as JSON,
# names the store NAME by SHOWN, its spec without the password.
status_names()
{
	curl -s "http://127.0.0.1:$PORT/tk-status" >"$ROOT/status.txt"
	curl -s "http://127.0.0.1:$PORT/tk-status?json" >"$ROOT/status.json"
	line=$(grep -n "^ThrottleStore $1 " "$CONF" | cut -d: -f1)
	check "status page: $3" 1 \
		"$(grep -cxF "store $1 spec=$2 declared=$CONF:$line open=ok" "$ROOT/status.txt")"
	check "status page (json): $3" 1 \
		"$(grep -cF "{\"name\":\"$1\",\"spec\":\"$2\"," "$ROOT/status.json")"
}

# docs DIR...: an index page, and a file x in each DIR of the htdocs.
docs()
{
	echo ok >"$ROOT/htdocs/index.html"
	for d in "$@"; do
		mkdir -p "$ROOT/htdocs/$d"
		echo "$d" >"$ROOT/htdocs/$d/x"
	done
}

# basic_auth USER:PASSWORD...: Basic authentication for the tests that
# need it: skips without its modules or htpasswd, writes $ROOT/htpasswd,
# and sets BASIC_AUTH, the configuration that loads the modules and asks
# a valid user of every request under the DocumentRoot.
basic_auth()
{
	for m in auth_basic authn_core authn_file authz_user; do
		[ -f "$APACHE_MODULES/mod_$m.so" ] || skip "no mod_$m in $APACHE_MODULES"
	done
	command -v htpasswd >/dev/null 2>&1 || skip "htpasswd is needed"
	c=-bcB
	for u in "$@"; do
		htpasswd $c "$ROOT/htpasswd" "${u%%:*}" "${u#*:}" >/dev/null 2>&1 ||
			{ fail "htpasswd failed"; finish; }
		c=-bB
	done
	chmod 644 "$ROOT/htpasswd"
	BASIC_AUTH='
LoadModule auth_basic_module @MODULES@/mod_auth_basic.so
LoadModule authn_core_module @MODULES@/mod_authn_core.so
LoadModule authn_file_module @MODULES@/mod_authn_file.so
LoadModule authz_user_module @MODULES@/mod_authz_user.so
<Directory @ROOT@/htdocs>
    AuthType Basic
    AuthName tk
    AuthBasicProvider file
    AuthUserFile @ROOT@/htpasswd
    Require valid-user
</Directory>'
}

# as USER:PASSWORD PATH N: N requests; the codes.
as()
{
	i=0
	while [ $i -lt "$3" ]; do
		i=$((i + 1))
		curl -s -o /dev/null -u "$1" -w '%{http_code}\n' \
			"http://127.0.0.1:$PORT$2"
	done | paste -s -d' ' -
}

# as_counted CREDENTIALS PATH N: as(), each request's access log line
# awaited before the next.  A count= rule counts a request in the log
# phase, after the client has its response, and before the line is
# written (mod_throttlekit's hook runs first): without the wait the next
# request may be checked before the last one is counted.
as_counted()
{
	logged=$(grep -c " $2 " "$ROOT/logs/access.log" 2>/dev/null)
	logged=${logged:-0}
	sent=0
	while [ $sent -lt "$3" ]; do
		sent=$((sent + 1))
		curl -s -o /dev/null -u "$1" -w '%{http_code}\n' \
			"http://127.0.0.1:$PORT$2"
		wait_log "$2" $((logged + sent)) || echo unlogged
	done | paste -s -d' ' -
}

# count PATTERN: lines of stdin matching PATTERN.
count() { grep -c -- "$1" || true; }

# log_lines PATH: the access log lines of PATH, once N of them are written.
wait_log()
{
	i=0
	while [ $i -lt 50 ]; do
		i=$((i + 1))
		[ "$(grep -c " $1 " "$ROOT/logs/access.log" 2>/dev/null)" -ge "$2" ] &&
			return 0
		sleep 0.1
	done
	return 1
}

# burst_check MPM PATH: 200 concurrent requests from one client against a
# rule "gcra:1/1h,burst=50" with headers=both: exactly 50 pass, the 429s
# carry the fields of their decision, and several children served.
burst_check()
{
	out=$ROOT/burst.out
	fire 200 "$2" >"$out"
	check "$1: 200s of 200 concurrent requests" 50 "$(count '^200|' <"$out")"
	check "$1: 429s of 200 concurrent requests" 150 "$(count '^429|' <"$out")"
	# A denial's Retry-After is its decision's (GCRA 1/1h): the next unit
	# in one emission interval, less the seconds the burst took.  A
	# request that read the clock before the burst's first admission and
	# reached the store after others decides at that earlier time: one
	# unit short (Retry-After 1, its RateLimit t= 49 units due) or a
	# second past the interval (3601).  Either way Retry-After = t less
	# 49 x 3600, rounded up, and never 0.
	check "$1: 429s whose Retry-After is t= less 49 units" 150 \
		"$(awk -F'|' '$1 == 429 {
			t = $3; sub(/.*;t=/, "", t); sub(/;.*/, "", t)
			d = $2 - (t - 176400)
			if ($2 >= 1 && d >= 0 && d <= 1) print }' "$out" | wc -l)"
	check "$1: 429s whose RateLimit says r=0" 150 \
		"$(awk -F'|' '$1 == 429 && $3 ~ /;r=0(;|$)/' "$out" | wc -l)"
	# q/w is the rate, 1/1h; the burst of 50 is the decisions' limit.
	check "$1: responses whose RateLimit-Policy says q=1;w=3600" 200 \
		"$(awk -F'|' '$4 ~ /;q=1;w=3600$/' "$out" | wc -l)"
	# Each admitted request reports its own decision's remaining count:
	# the first to commit 49, the last 0, all in between.  (Not exactly
	# 49..0 once each: a child that read the clock just before another
	# committed sees a key a little further ahead, and one less.)
	for f in 3 5; do
		awk -F'|' -v f=$f '$1 == 200 {
			v = $f; if (f == 3) { sub(/.*;r=/, "", v); sub(/;.*/, "", v) }
			print v }' "$out" | sort -n | uniq >"$ROOT/remaining"
		check "$1: remaining of the 200s (field $f): first, last, in 0..49" \
			"0 49 ok" "$(head -n 1 "$ROOT/remaining") $(tail -n 1 "$ROOT/remaining") $(
				awk '$1 !~ /^[0-9]+$/ || $1 > 49 { bad = 1 } END { print bad ? "bad" : "ok" }' "$ROOT/remaining")"
		n=$(wc -l <"$ROOT/remaining")
		[ "$n" -ge 40 ] || fail "$1: only $n distinct remaining counts (field $f)"
	done
	[ "$failures" -eq 0 ] || cat "$out"
	wait_log "$2" 200 || fail "$1: the access log lacks requests"
	check "$1: REJECTED in the access log" 150 \
		"$(awk -v p="$2" '$4 == p && $3 == "REJECTED"' "$ROOT/logs/access.log" | wc -l)"
	check "$1: PASSED in the access log" 50 \
		"$(awk -v p="$2" '$4 == p && $2 == 200 && $3 == "PASSED"' "$ROOT/logs/access.log" | wc -l)"
	children=$(awk -v p="$2" '$4 == p { print $1 }' "$ROOT/logs/access.log" | sort -u | wc -l)
	workers=$(awk -v p="$2" '$4 == p { print $1, $6 }' "$ROOT/logs/access.log" | sort -u | wc -l)
	# prefork: several children.  event: several threads, in one child
	# or more (which child accepts is the kernel's choice: on a loaded
	# machine one may take them all).
	if [ "$1" = event ] && [ "$workers" -ge 2 ]; then
		say "ok: $1: served by $workers threads in $children child(ren)"
	elif [ "$1" != event ] && [ "$children" -ge 2 ]; then
		say "ok: $1: served by $children children"
	else
		fail "$1: served by $children child(ren), $workers thread(s), expected several"
	fi
}

# no_crashes: no child died of a signal and no sanitizer reported.
no_crashes()
{
	if grep -E "exit signal|AddressSanitizer|runtime error:" \
		"$ROOT/logs/error.log"; then
		fail "a child crashed or a sanitizer reported"
	else
		say "ok: no child crashed"
	fi
}

# stock_threads MPM: STOCK_THREADS, the threads of the parent of a stock
# httpd (without mod_throttlekit) of MPM once it has served a request.
stock_threads()
{
	STOCK=1
	STOCK_THREADS="none (a stock httpd did not start)"
	if start_server "$1" ""; then
		STOCK_THREADS=$(ls "/proc/$PID/task" | wc -l)
	fi
	STOCK=
	stop_server
}

# parent_threads WHAT: the parent runs as many threads as a stock
# httpd's (STOCK_THREADS): the library starts none there.
parent_threads()
{
	check "$1: threads of the parent $PID" "$STOCK_THREADS" \
		"$(ls "/proc/$PID/task" | wc -l)"
}

# redis_tools: skip (or fail, with TK_REQUIRE_REDIS=1) without a
# redis-server, a redis-cli ($REDIS_SERVER, $REDIS_CLI: make check passes
# configure's, else those on the PATH) or a library built with hiredis;
# then start_redis starts a server with the password $PASS, rcli talks
# to it, and the EXIT trap stops it by its pid.
redis_tools()
{
	REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server)}
	REDIS_CLI=${REDIS_CLI:-$(command -v redis-cli)}
	[ -x "$REDIS_SERVER" ] || skip TK_REQUIRE_REDIS "no redis-server ($REDIS_SERVER)"
	[ -x "$REDIS_CLI" ] || skip TK_REQUIRE_REDIS "no redis-cli ($REDIS_CLI)"
	write_conf prefork 1 "ThrottleStore red redis://127.0.0.1"
	case $(httpd -t -f "$CONF" 2>&1) in
	*"Not supported by this build"*) skip TK_REQUIRE_REDIS "libthrottlekit was built without hiredis" ;;
	esac
	RPID=
	RPORT=
	mkdir -p "$ROOT/redis"
	trap 'stop_redis; cleanup' EXIT
}

stop_redis()
{
	[ -n "$RPID" ] || return 0
	kill -CONT "$RPID" 2>/dev/null
	kill -TERM "$RPID" 2>/dev/null
	wait "$RPID" 2>/dev/null
	RPID=
}

rcli() { "$REDIS_CLI" -p "$RPORT" --no-auth-warning -a "$PASS" "$@"; }

# start_redis: a redis-server with the password $PASS on a free loopback
# port $RPORT.
start_redis()
{
	tries=0
	while [ $tries -lt 20 ]; do
		tries=$((tries + 1))
		RPORT=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000))
		port_free "$RPORT" || continue
		"$REDIS_SERVER" --port "$RPORT" --bind 127.0.0.1 --save '' \
			--appendonly no --dir "$ROOT/redis" --daemonize no \
			--requirepass "$PASS" >"$ROOT/redis/log" 2>&1 &
		RPID=$!
		i=0
		while [ $i -lt 50 ]; do
			i=$((i + 1))
			[ "$(rcli ping 2>/dev/null)" = PONG ] && return 0
			kill -0 "$RPID" 2>/dev/null || break
			sleep 0.1
		done
		stop_redis
	done
	return 1
}
