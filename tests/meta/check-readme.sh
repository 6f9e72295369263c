#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# check-readme.sh - every code block of README.md is run, as the comment
# before its fence says:
#
#   <!-- test: c -->            built against this build's header and
#                               library (tests/meta/example.sh) without a
#                               warning, and run in a temporary directory:
#                               exit 0
#   <!-- test: php -->          run by php with this build's extension:
#                               exit 0, no warning
#   <!-- test: output -->       what the c or php block just before prints
#                               ("..." in a line stands for any text)
#   <!-- test: sh -->           a shell session, in a temporary directory
#                               with this build's throttlectl first in
#                               PATH: each "$ " line (with its "\"
#                               continuations) is run, and what it prints
#                               (stdout and stderr) must be the lines
#                               under it ("..." as above)
#   <!-- test: sh redis -->     the same, with a redis-server of its own:
#                               127.0.0.1:6379 in the text is its address
#   <!-- test: apache-conf -->  passes "httpd -t" with the built module
#                               loaded (tests/apache/lib.sh)
#   <!-- test: php-ini -->      "php_admin_value[NAME] = VALUE" lines: php
#                               with the extension takes each, no warning
#   <!-- test: none (REASON) --> not run: what installs or runs the rest
#
# A fenced block without a marker fails, and so does an indented code
# block (code is fenced, so that it is marked).  A part that needs what
# this machine lacks (httpd, php, redis-server) is skipped with its
# reason, and the test exits 77 unless something failed; TK_REQUIRE_APACHE=1
# and TK_REQUIRE_REDIS=1 (tools/run-tests.sh) make those failures.  A
# sanitizer build checks the markers only: the README is the same in every
# build and the plain one runs it (as check-man.sh does its example).
#
# Run by "make check" from the build directory with $srcdir and
# $top_builddir set; it reads only $srcdir and writes only in a
# temporary directory, so it works out of tree and in distcheck.

srcdir=${srcdir:-.}
readme=$srcdir/README.md
me=check-readme
failures=0
skipped=

say() { printf '%s: %s\n' "$me" "$*"; }
fail()
{
	printf '%s: FAIL: %s\n' "$me" "$*"
	failures=$((failures + 1))
}
# not_here VAR WHY: a part this machine cannot run: skipped, or a failure
# when $VAR is 1.
not_here()
{
	if [ "$(eval echo "\${$1:-}")" = 1 ]; then
		fail "$2 ($1=1)"
	else
		say "SKIP: $2"
		skipped="$skipped
  $2"
	fi
}

[ -r "$readme" ] || { fail "cannot read $readme"; exit 1; }
. "$srcdir/tests/meta/example.sh"
tmp=$(mktemp -d) || exit 99
rpid=
cleanup()
{
	[ -z "$rpid" ] || { kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null; }
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Split README.md into $tmp/N (block N's text) and $tmp/list (one line
# "N LINE KIND" per block; KIND "?" if unmarked, "indented" for an
# indented code block).
awk -v dir="$tmp" '
	function marker(s) {
		if (s !~ /^<!-- test: .* -->$/)
			return "?"
		sub(/^<!-- test: /, "", s)
		sub(/ -->$/, "", s)
		return s
	}
	fence != "" {
		if (substr($0, 1, length(fence)) == fence && $0 ~ /^[`~]+[ \t]*$/) {
			fence = ""
			close(file)
			last = $0
			blank = 0
		} else {
			print > file
		}
		next
	}
	/^(```|~~~)/ {
		fence = substr($0, 1, 3)
		n++
		file = dir "/" n
		printf "" > file
		print n, NR, marker(last) > (dir "/list")
		next
	}
	/^(    |\t)/ && blank {
		n++
		print n, NR, "indented" > (dir "/list")
	}
	{ blank = ($0 ~ /^[ \t]*$/) }
	!blank { last = $0 }
' "$readme"
[ -s "$tmp/list" ] || { fail "no code block in $readme"; exit 1; }

# The markers, and what they ask for.
prev=
while read -r n line kind; do
	case $kind in
	output)
		case $prev in
		c | php) ;;
		*) fail "README.md:$line: an output block after no c or php block" ;;
		esac
		;;
	\?) fail "README.md:$line: a code block with no <!-- test: ... --> before it" ;;
	indented) fail "README.md:$line: an indented code block: fence and mark it" ;;
	c | php | sh | "sh redis" | apache-conf | php-ini) ;;
	"none ("*")") ;;
	*) fail "README.md:$line: unknown marker \"test: $kind\"" ;;
	esac
	prev=$kind
done <"$tmp/list"
say "$(wc -l <"$tmp/list") code blocks, $(grep -c ' none (' "$tmp/list") not run"
if [ -n "$SAN_CFLAGS" ]; then
	say "a sanitizer build: the blocks are not run (the plain build runs them)"
	[ "$failures" -eq 0 ] || exit 1
	exit 0
fi

ctl_dir=$(cd "${top_builddir:-.}/tools" && pwd)
lib_dir=$(example_libdir) || { fail "the library is not built"; exit 1; }
REMOTE_ADDR=203.0.113.7
export REMOTE_ADDR
# An example that warns teaches the warning: none may.
EXAMPLE_CFLAGS="-std=c11 -Wall -Wextra -Werror"

# run_output N LINE WHAT: compare $tmp/got with block N+1 if it is the
# "output" block; else WHAT's output must hold no PHP diagnostic.
run_output()
{
	next=$(awk -v n="$1" '$1 == n + 1 { print $3 }' "$tmp/list")
	if [ "$next" = output ]; then
		if ! example_same "$tmp/$(($1 + 1))" "$tmp/got"; then
			fail "README.md:$2: $3 prints (- README, + run):"
			example_diff "$tmp/$(($1 + 1))" "$tmp/got"
			return
		fi
	elif grep -Eq '(Warning|Notice|Deprecated|Fatal error|Parse error):' "$tmp/got"; then
		fail "README.md:$2: $3 warns:"
		sed 's/^/    /' "$tmp/got"
		return
	fi
	say "ok: README.md:$2: $3"
}

run_c()
{
	cp "$tmp/$1" "$tmp/ex.c"
	if ! example_build "$tmp/ex.c" "$tmp/ex"; then
		fail "README.md:$2: the C example does not build:"
		sed 's/^/    /' "$tmp/ex.cc"
	elif ! (cd "$tmp/run" && "$tmp/ex") >"$tmp/got" 2>&1; then
		fail "README.md:$2: the C example exits $?:"
		sed 's/^/    /' "$tmp/got"
	else
		run_output "$1" "$2" "the C example"
	fi
}

# php_ready: PHP and the built extension are here (else not_here, 1).
php_ready()
{
	if [ -z "${PHP:-}" ] || [ ! -r "${TK_PHP_EXT:-}" ]; then
		case ${TK_BUILD_PHP:-no} in
		yes*) fail "the PHP extension is configured but not built ($TK_PHP_EXT)" ;;
		*) not_here TK_REQUIRE_PHP "PHP blocks: configure found no php-config (--with-php)" ;;
		esac
		return 1
	fi
}

php_run()
{
	(cd "$tmp/run" && LD_LIBRARY_PATH=$lib_dir "$PHP" -n \
		-d "extension=$TK_PHP_EXT" "$@")
}

run_php()
{
	php_ready || return
	if ! php_run "$tmp/$1" >"$tmp/got" 2>&1; then
		fail "README.md:$2: the PHP example exits non-zero:"
		sed 's/^/    /' "$tmp/got"
	else
		run_output "$1" "$2" "the PHP example"
	fi
}

# run_php_ini N LINE: every setting of the block, given with -d, is what
# ini_get() reads, and php says nothing about it.
run_php_ini()
{
	php_ready || return
	at=$2
	sed -n 's/^[a-z_]*\[\([^]]*\)\] *= *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1=\2/p' \
		"$tmp/$1" >"$tmp/ini"
	[ -s "$tmp/ini" ] || { fail "README.md:$at: no setting in the block"; return; }
	set --
	while IFS= read -r kv; do set -- "$@" -d "$kv"; done <"$tmp/ini"
	php_run "$@" -r 'foreach (file($argv[1], FILE_IGNORE_NEW_LINES) as $kv) {
		[$k, $v] = explode("=", $kv, 2); echo $k, "=", ini_get($k), "\n"; }' \
		"$tmp/ini" >"$tmp/got" 2>&1
	if cmp -s "$tmp/ini" "$tmp/got"; then
		say "ok: README.md:$at: php takes $(wc -l <"$tmp/ini") settings"
	else
		fail "README.md:$at: the settings as php reads them (- README, + php):"
		example_diff "$tmp/ini" "$tmp/got"
	fi
}

# start_redis: a redis-server of this test's on a free loopback port
# ($rport); 1 if there is none to start.
start_redis()
{
	[ -n "$rpid" ] && return 0
	server=${REDIS_SERVER:-$(command -v redis-server)}
	if [ ! -x "$server" ]; then
		not_here TK_REQUIRE_REDIS "Redis blocks: no redis-server"
		return 1
	fi
	if "$ctl_dir/throttlectl" ping redis://127.0.0.1:1 2>&1 |
		grep -q "Not supported by this build"; then
		not_here TK_REQUIRE_REDIS "Redis blocks: built without the Redis store"
		return 1
	fi
	mkdir -p "$tmp/redis"
	tries=0
	while [ $tries -lt 20 ]; do
		tries=$((tries + 1))
		rport=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000))
		"$server" --port "$rport" --bind 127.0.0.1 --save '' \
			--appendonly no --dir "$tmp/redis" >"$tmp/redis/log" 2>&1 &
		rpid=$!
		i=0
		while [ $i -lt 50 ]; do
			i=$((i + 1))
			"$ctl_dir/throttlectl" ping "redis://127.0.0.1:$rport" \
				>/dev/null 2>&1 && return 0
			kill -0 "$rpid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$rpid" 2>/dev/null
		wait "$rpid" 2>/dev/null
		rpid=
	done
	fail "redis-server did not start:"
	sed 's/^/    /' "$tmp/redis/log"
	return 1
}

# run_sh N LINE [redis]: the session of block N.
run_sh()
{
	if [ "${3:-}" = redis ]; then
		start_redis || return
		sed "s/127\.0\.0\.1:6379/127.0.0.1:$rport/g" "$tmp/$1" >"$tmp/session"
	else
		cp "$tmp/$1" "$tmp/session"
	fi
	# Each command prints a mark first, and so does the text before the
	# lines it shows, so that output is compared command by command.
	awk -v script="$tmp/script" -v want="$tmp/want" '
		cont { print substr($0, 1) > script; cont = /\\$/; next }
		/^\$ / {
			k++
			print "echo \"@@ " k "\"" > script
			print "@@ " k > want
			print substr($0, 3) > script
			cont = /\\$/
			next
		}
		{ print > want }
	' "$tmp/session"
	[ -s "$tmp/script" ] || { fail "README.md:$2: a session with no \"\$ \" line"; return; }
	: >>"$tmp/want"
	rm -rf "$tmp/run" && mkdir "$tmp/run" "$tmp/run/zones"
	(cd "$tmp/run" && PATH="$ctl_dir:$PATH" TK_SHM_DIR="$tmp/run/zones" \
		sh "$tmp/script") >"$tmp/got" 2>&1
	if example_same "$tmp/want" "$tmp/got"; then
		say "ok: README.md:$2: a session of $(grep -c '^@@' "$tmp/want") commands"
	else
		fail "README.md:$2: the session prints (- README, + run):"
		example_diff "$tmp/want" "$tmp/got"
	fi
	rm -f "$tmp/script" "$tmp/want"
}

# run_apache N LINE: the fragment passes httpd -t with the module loaded.
run_apache()
{
	(
		. "$srcdir/tests/apache/lib.sh"
		trap - EXIT
		# What a stock Debian httpd loads too, for "Require local".
		host=
		[ ! -f "$APACHE_MODULES/mod_authz_host.so" ] ||
			host="LoadModule authz_host_module $APACHE_MODULES/mod_authz_host.so"
		write_conf prefork 1 "$host
$(cat "$tmp/$1")"
		out=$(httpd -t -f "$CONF" 2>&1)
		st=$?
		rm -rf "$ROOT"
		if [ $st -eq 0 ]; then
			say "ok: README.md:$2: httpd -t: $out"
		else
			fail "README.md:$2: httpd -t refuses it:"
			printf '%s\n' "$out" | sed 's/^/    /'
		fi
		finish
	) >"$tmp/apache" 2>&1
	st=$?
	case $st in
	0) cat "$tmp/apache" ;;
	77) not_here TK_REQUIRE_APACHE "Apache blocks: $(tail -n 1 "$tmp/apache" | sed "s/.*SKIP: //")" ;;
	*) cat "$tmp/apache"; failures=$((failures + 1)) ;;
	esac
}

# The list on descriptor 3: what the blocks run reads no line of it.
while read -r n line kind <&3; do
	rm -rf "$tmp/run" && mkdir "$tmp/run" "$tmp/run/zones"
	TK_SHM_DIR=$tmp/run/zones
	export TK_SHM_DIR
	case $kind in
	c) run_c "$n" "$line" ;;
	php) run_php "$n" "$line" ;;
	php-ini) run_php_ini "$n" "$line" ;;
	sh) run_sh "$n" "$line" ;;
	"sh redis") run_sh "$n" "$line" redis ;;
	apache-conf) run_apache "$n" "$line" ;;
	esac
done 3<"$tmp/list" </dev/null

if [ "$failures" -gt 0 ]; then
	say "$failures failure(s)"
	exit 1
fi
if [ -n "$skipped" ]; then
	say "SKIP: every block that ran passed; not run here:$skipped"
	exit 77
fi
say "all blocks passed"
exit 0
