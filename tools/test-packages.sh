#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Build the Debian packages of this tree, lint them, install them and
# smoke-test what got installed, then purge them; as root on Debian 12
# (CI: after tools/run-tests.sh's suites).  In order:
#  1. installs what building and the smoke tests need (debian/control's
#     Build-Depends, lintian, apache2, php, php-fpm, cgi-fcgi, curl),
#     which stays installed, as tools/setup-debian.sh's does;
#  2. builds with dpkg-buildpackage -us -uc -b in a copy of the tree (the
#     files git knows, as they are on disk), never in the tree itself;
#  3. runs lintian on the build, and fails on any error (E:);
#  4. installs the five packages with apt-get;
#  5. throttlectl --help; a C program built with pkg-config's flags;
#     a2enmod throttlekit, then apache2 -t of the system's configuration,
#     and an httpd on 127.0.0.1 (a free port, a temporary ServerRoot)
#     loading the module through the packaged .load file, whose fourth
#     request beyond a burst of 3 gets 429; phpenmod throttlekit, php -m,
#     a CLI script that is denied past its limit, also from a second
#     process on one zone; a php-fpm pool (the system's php.ini and
#     conf.d) on 127.0.0.1 whose workers share one limit;
#  6. purges the packages and checks that none of their files is left.
# Servers are stopped by the pid this script started.  Exits non-zero,
# naming the step, on any failure; the packages are purged then too.
# shellcheck disable=SC2016 # PHP code in single quotes
set -eu

me=test-packages
pkgs="libthrottlekit0 libthrottlekit-dev throttlectl libapache2-mod-throttlekit php-throttlekit"
step="start"
work=
httpd_pid=
fpm_pid=
installed=no

say() { printf '%s: %s\n' "$me" "$*"; }
die()
{
	printf '%s: FAIL (%s): %s\n' "$me" "$step" "$*" >&2
	exit 1
}
begin()
{
	step=$1
	say "== $step"
}

stop_pid()
{
	[ -n "$2" ] || return 0
	kill "-$1" "$2" 2>/dev/null || return 0
	i=0
	while kill -0 "$2" 2>/dev/null && [ $i -lt 100 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	if kill -0 "$2" 2>/dev/null; then
		say "process $2 ignored SIG$1; killing it"
		kill -KILL "$2" 2>/dev/null || :
	fi
}

purge()
{
	# shellcheck disable=SC2086 # a list of package names
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $pkgs >"$work/purge.log" 2>&1 ||
		{ cat "$work/purge.log"; return 1; }
	left=$(ls -d /etc/apache2/mods-*/throttlekit.* /etc/php/*/mods-available/throttlekit.ini \
		/etc/php/*/*/conf.d/*-throttlekit.ini /usr/lib/*/libthrottlekit.so* \
		/usr/lib/apache2/modules/mod_throttlekit.so /usr/lib/php/*/throttlekit.so \
		/usr/bin/throttlectl /usr/include/throttlekit.h 2>/dev/null || :)
	[ -z "$left" ] || { say "left after the purge: $left"; return 1; }
	say "purged: $pkgs"
}

cleanup()
{
	rc=$?
	set +e
	failed=$step
	stop_pid QUIT "$fpm_pid"
	stop_pid TERM "$httpd_pid"
	if [ "$installed" = yes ]; then
		step="purge"
		purge || { say "FAIL (purge): the packages were not purged cleanly"; rc=1; }
	fi
	[ -n "$work" ] && rm -rf "$work"
	if [ $rc -eq 0 ]; then
		say "PASS"
	else
		say "FAILED at step: $failed"
	fi
	exit $rc
}

[ "$(id -u)" -eq 0 ] || die "run as root (it installs and purges packages)"
top=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$top/debian/control" ] || die "no debian/control in $top"
work=$(mktemp -d "${TMPDIR:-/tmp}/tk-packages.XXXXXX")
# The www-data workers of httpd and php-fpm read their files here.
chmod 755 "$work"
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
for p in $pkgs; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		die "$p is installed already; this test installs and purges it: remove it first"
	fi
done

# apt_install PACKAGE...: install what is missing, updating the lists once
# if the first try fails (a fresh machine's may be stale).
apt_install()
{
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >"$work/apt.log" 2>&1 ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq "$@" >"$work/apt.log" 2>&1; } ||
		{ cat "$work/apt.log"; die "apt-get install $*"; }
}

copy_tree()
{
	mkdir "$work/src"
	if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
		# What git tracks, and new files it does not ignore, as on disk:
		# no build directory, no generated configure.
		(cd "$top" && git ls-files -z -c -o --exclude-standard |
			tar --null -T - --ignore-failed-read -cf - 2>/dev/null) |
			tar -C "$work/src" -xf -
	else
		(cd "$top" && tar --exclude=./build --exclude=./.git -cf - .) |
			tar -C "$work/src" -xf -
	fi
}

build_packages()
{
	begin "1. build dependencies"
	apt_install dpkg-dev debhelper lintian apache2 curl php-cli php-fpm \
		libfcgi-bin build-essential pkg-config
	copy_tree
	DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -qq "$work/src" \
		>"$work/apt.log" 2>&1 || { cat "$work/apt.log"; die "apt-get build-dep"; }

	begin "2. dpkg-buildpackage -us -uc -b"
	t0=$(date +%s)
	(cd "$work/src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
		dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 ||
		{ tail -n 40 "$work/build.log"; die "dpkg-buildpackage failed"; }
	say "built in $(($(date +%s) - t0)) s:" "$(cd "$work" && echo ./*.deb)"

	begin "3. lintian"
	lintian --fail-on error --pedantic -I "$work"/throttlekit_*.changes \
		>"$work/lintian.out" 2>&1 || lint_rc=$?
	sed 's/^/  /' "$work/lintian.out"
	say "lintian: $(grep -c '^E:' "$work/lintian.out" || :) error(s)," \
		"$(grep -c '^W:' "$work/lintian.out" || :) warning(s)," \
		"$(grep -c '^[IP]:' "$work/lintian.out" || :) info/pedantic"
	! grep -q '^E:' "$work/lintian.out" || die "lintian reports errors"
	[ "${lint_rc:-0}" -eq 0 ] || die "lintian exited ${lint_rc}"
}

install_packages()
{
	begin "4. apt-get install ./*.deb"
	debs=
	for p in $pkgs; do
		debs="$debs $(ls "$work/${p}_"*.deb)"
	done
	installed=yes
	# shellcheck disable=SC2086 # a list of paths without blanks
	apt_install $debs
	# shellcheck disable=SC2086 # a list of package names
	dpkg-query -W $pkgs | sed 's/^/  /'
}

# free_port: a TCP port of 127.0.0.1 that nothing listens on now.
free_port()
{
	php -n -r '$s = stream_socket_server("tcp://127.0.0.1:0");
		echo substr(strrchr(stream_socket_get_name($s, false), ":"), 1);'
}

smoke_c()
{
	begin "5a. throttlectl and a C program"
	throttlectl --help >"$work/help.out" 2>&1 || die "throttlectl --help: $(cat "$work/help.out")"
	grep -qi usage "$work/help.out" || die "throttlectl --help prints no usage"
	say "ok: throttlectl --help; $(throttlectl --version | head -n 1)"
	cat >"$work/smoke.c" <<-'EOF'
	#include <stdio.h>
	#include <string.h>
	#include <throttlekit.h>

	int main(void)
	{
		struct tk_limiter *l;
		struct tk_decision d;
		int i, rc, allowed = 0;

		rc = tk_limiter_open(&l, "gcra:1/1h,burst=3", "memory", NULL);
		if (rc != 0) {
			fprintf(stderr, "open: %s\n", tk_strerror(rc));
			return 1;
		}
		for (i = 0; i < 5; i++) {
			rc = tk_limiter_check(l, "k", 1, 1, &d);
			if (rc != 0) {
				fprintf(stderr, "check: %s\n", tk_strerror(rc));
				return 1;
			}
			allowed += d.allowed;
		}
		tk_limiter_close(l);
		printf("%s %d\n", tk_version(), allowed);
		return 0;
	}
	EOF
	# shellcheck disable=SC2046 # pkg-config prints several flags
	cc -Wall -Werror -o "$work/smoke" "$work/smoke.c" \
		$(pkg-config --cflags --libs throttlekit) || die "cc with pkg-config's flags"
	out=$("$work/smoke") || die "the C program failed: $out"
	[ "$out" = "$(pkg-config --modversion throttlekit) 3" ] ||
		die "the C program printed '$out', expected version $(pkg-config --modversion throttlekit) and 3 admitted of 5"
	say "ok: a C program built with pkg-config: version and 3 of 5 admitted ($out)"
}

# httpd_conf PORT: a self-contained httpd configuration that loads the
# module through the .load and .conf files a2enmod enabled.
httpd_conf()
{
	r=$work/httpd
	cat <<-EOF
	ServerRoot $r
	ServerName 127.0.0.1
	Listen 127.0.0.1:$1
	PidFile $r/run/httpd.pid
	DefaultRuntimeDir $r/run
	ErrorLog $r/error.log
	LogLevel warn
	User www-data
	Group www-data
	LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so
	StartServers 2
	MinSpareServers 2
	MaxSpareServers 2
	ServerLimit 2
	MaxRequestWorkers 2
	LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
	Include /etc/apache2/mods-enabled/throttlekit.load
	Include /etc/apache2/mods-enabled/throttlekit.conf
	KeepAlive Off
	DocumentRoot $r/htdocs
	<Directory $r/htdocs>
	    Require all granted
	</Directory>
	ThrottleStore local shm:pkgtest capacity=1024
	ThrottleRule burst3 "gcra:1/1h,burst=3" store=local
	<Location />
	    Throttle burst3
	</Location>
	<Location /ping.html>
	    Throttle off
	</Location>
	EOF
}

# start_httpd: httpd on a free port of 127.0.0.1; sets port and httpd_pid.
start_httpd()
{
	tries=0
	while [ $tries -lt 5 ]; do
		tries=$((tries + 1))
		port=$(free_port)
		httpd_conf "$port" >"$work/httpd/httpd.conf"
		rm -f "$work/httpd/run/httpd.pid"
		if ! /usr/sbin/apache2 -f "$work/httpd/httpd.conf" -k start \
			>"$work/httpd/start.out" 2>&1; then
			grep -q "Address already in use" "$work/httpd/start.out" \
				"$work/httpd/error.log" 2>/dev/null && continue
			cat "$work/httpd/start.out" "$work/httpd/error.log" 2>/dev/null
			die "apache2 did not start"
		fi
		i=0
		while [ $i -lt 100 ]; do
			i=$((i + 1))
			httpd_pid=$(cat "$work/httpd/run/httpd.pid" 2>/dev/null || :)
			[ -n "$httpd_pid" ] && curl -s -o /dev/null \
				"http://127.0.0.1:$port/ping.html" && return 0
			sleep 0.1
		done
		cat "$work/httpd/error.log"
		die "apache2 did not answer on 127.0.0.1:$port"
	done
	die "no free port for apache2 after $tries tries"
}

smoke_apache()
{
	begin "5b. Apache httpd: a2enmod throttlekit, 429 past the limit"
	a2enmod throttlekit >"$work/a2enmod.out" 2>&1 || die "a2enmod throttlekit: $(cat "$work/a2enmod.out")"
	[ -e /etc/apache2/mods-enabled/throttlekit.load ] || die "a2enmod left no mods-enabled/throttlekit.load"
	# The system's own configuration (apache2.conf, envvars) with it.
	apache2ctl -M >"$work/apache2ctl.out" 2>&1 ||
		die "apache2ctl -M: $(cat "$work/apache2ctl.out")"
	grep -q 'throttlekit_module' "$work/apache2ctl.out" ||
		die "the system's configuration does not load throttlekit_module"
	say "ok: a2enmod throttlekit; apache2ctl -M lists throttlekit_module"
	mkdir -p "$work/httpd/htdocs" "$work/httpd/run"
	echo ok >"$work/httpd/htdocs/index.html"
	echo ok >"$work/httpd/htdocs/ping.html"
	start_httpd
	codes=$(for i in 1 2 3 4 5; do
		curl -s -o /dev/null -w '%{http_code} ' "http://127.0.0.1:$port/index.html"
	done)
	[ "$codes" = "200 200 200 429 429 " ] ||
		{ cat "$work/httpd/error.log"; die "codes of 5 requests at burst 3: $codes"; }
	retry=$(curl -s -o /dev/null -D - "http://127.0.0.1:$port/index.html" | tr -d '\r' |
		sed -n 's/^[Rr]etry-[Aa]fter: *//p')
	case $retry in
	3[0-9][0-9][0-9]) ;;
	*) die "a 429 without a Retry-After near 3600: '$retry'" ;;
	esac
	say "ok: httpd on 127.0.0.1:$port: $codes(Retry-After: $retry)"
	stop_pid TERM "$httpd_pid"
	httpd_pid=
}

smoke_php_cli()
{
	begin "5c. PHP: phpenmod throttlekit, a CLI script denied past its limit"
	phpenmod throttlekit >"$work/phpenmod.out" 2>&1 || die "phpenmod throttlekit: $(cat "$work/phpenmod.out")"
	php -m 2>&1 | grep -qx throttlekit || die "php -m does not list throttlekit: $(php -m 2>&1 | tail -n 5)"
	say "ok: phpenmod throttlekit; php -m lists throttlekit"
	out=$(php -r '$l = new ThrottleKit\Limiter("gcra:1/1h,burst=2");
		for ($i = 0; $i < 3; $i++) echo $l->check("k")->allowed ? 1 : 0;') ||
		die "the CLI script failed: $out"
	[ "$out" = 110 ] || die "memory store: 3 checks at burst 2 gave $out, expected 110"
	# Two processes on one zone share its limit.
	mkdir "$work/zones"
	zone='$l = new ThrottleKit\Limiter("gcra:1/1h,burst=2", "shm:pkgcli");'
	a=$(TK_SHM_DIR=$work/zones php -r "$zone"' echo (int)$l->check("k")->allowed, (int)$l->check("k")->allowed;') ||
		die "a zone from the CLI: $a"
	b=$(TK_SHM_DIR=$work/zones php -r "$zone"' $d = $l->check("k");
		echo (int)$d->allowed, " ", $d->retryAfter > 0 ? "retry" : "none";') ||
		die "a zone from a second CLI process: $b"
	[ "$a $b" = "11 0 retry" ] || die "one zone, two processes at burst 2: '$a $b', expected '11 0 retry'"
	say "ok: php CLI: 2 of 3 admitted (memory); a second process denied on the same zone"
}

# fcgi QUERY: one request to app.php of the php-fpm pool.
fcgi()
{
	env -i SCRIPT_FILENAME="$work/fpm/app.php" SCRIPT_NAME=/app.php \
		REQUEST_METHOD=GET QUERY_STRING="$1" \
		cgi-fcgi -bind -connect "127.0.0.1:$port" 2>/dev/null | grep '^tk ' || :
}

start_fpm()
{
	port=$(free_port)
	cat >"$work/fpm/fpm.conf" <<-EOF
	[global]
	pid = $work/fpm/fpm.pid
	error_log = $work/fpm/fpm.log
	daemonize = no
	process_control_timeout = 5

	[pkgtest]
	user = www-data
	group = www-data
	listen = 127.0.0.1:$port
	pm = static
	pm.max_children = 2
	catch_workers_output = yes
	env[TK_SHM_DIR] = $work/fpm/zones
	EOF
	# The system's php.ini and conf.d: the extension phpenmod enabled.
	"$1" -y "$work/fpm/fpm.conf" -F -R >"$work/fpm/fpm.out" 2>&1 &
	fpm_pid=$!
	i=0
	until fcgi "op=ping" | grep -q '^tk pong'; do
		i=$((i + 1))
		kill -0 "$fpm_pid" 2>/dev/null || die "php-fpm exited: $(cat "$work/fpm/fpm.out")"
		[ $i -lt 100 ] || die "php-fpm did not answer on 127.0.0.1:$port: $(cat "$work/fpm/fpm.out")"
		sleep 0.1
	done
}

smoke_php_fpm()
{
	begin "5d. php-fpm: a pool's workers share one limit"
	v=$(php -r 'echo PHP_MAJOR_VERSION, ".", PHP_MINOR_VERSION;')
	fpm=$(command -v "php-fpm$v" || ls "/usr/sbin/php-fpm$v" 2>/dev/null || :)
	[ -n "$fpm" ] || die "no php-fpm$v"
	command -v cgi-fcgi >/dev/null 2>&1 || die "no cgi-fcgi (libfcgi-bin)"
	mkdir -p "$work/fpm/zones"
	chown www-data:www-data "$work/fpm/zones"
	cat >"$work/fpm/app.php" <<-'EOF'
	<?php
	if (($_GET["op"] ?? "") === "ping") {
		echo "tk pong\n";
		exit;
	}
	$l = new ThrottleKit\Limiter("gcra:1/1h,burst=3", "shm:pkgfpm");
	echo "tk allowed=", (int)$l->check("k")->allowed, " pid=", getmypid(), "\n";
	EOF
	chmod 644 "$work/fpm/app.php"
	start_fpm "$fpm"
	out=$(for i in 1 2 3 4 5 6; do fcgi "op=check"; done)
	allowed=$(printf '%s\n' "$out" | grep -c 'allowed=1' || :)
	denied=$(printf '%s\n' "$out" | grep -c 'allowed=0' || :)
	[ "$allowed $denied" = "3 3" ] ||
		{ printf '%s\n' "$out"; cat "$work/fpm/fpm.log"; die "php-fpm: $allowed admitted, $denied denied of 6 at burst 3"; }
	workers=$(printf '%s\n' "$out" | sed -n 's/.*pid=//p' | sort -u | wc -l)
	say "ok: php-fpm pool on 127.0.0.1:$port: 3 of 6 admitted, by $workers worker(s)"
	stop_pid QUIT "$fpm_pid"
	fpm_pid=
}

t_start=$(date +%s)
build_packages
install_packages
smoke_c
smoke_apache
smoke_php_cli
smoke_php_fpm
begin "6. purge"
installed=no
purge || die "the packages were not purged cleanly"
step="done"
say "all steps passed in $(($(date +%s) - t_start)) s"
