#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A real php-fpm (pm = static, 4 workers running as www-data) on 127.0.0.1,
# driven with cgi-fcgi, shares one limit through a zone:
#  1. a zone created by root for www-data (throttlekit.zone_owner) is used
#     by the workers; one created by root for root is refused with the
#     library's reason, or decided by the pool's throttlekit.fail;
#  2. 8 parallel loops x 25 requests on one key at burst 50: exactly 50
#     admitted, served by several workers, each with one mapping of the
#     zone, and none in the master (setup is lazy, in the children);
#  3. a worker killed with kill -9 after admitting a request and before
#     answering: that admission still counts (49 more, not 50), and the
#     worker php-fpm starts in its place denies too;
#  4. 100,000 requests in one worker (one kept-alive FastCGI connection)
#     leave its private memory (RssAnon) flat;
#  5. a pool without throttlekit.default_store: Limiters built without a
#     store share the pool's zone (php-fpm.POOL, made by a worker as
#     www-data, mode 0600): exactly 50 of 8 x 25 at burst 50; a zone of
#     that name made by another user (root) is refused; the pool's name
#     comes from the worker's title, so fpm_get_status() disabled changes
#     nothing (the zone is still php-fpm.test, not php-fpm.uid-UID); a
#     pool "a b/c" gets php-fpm.a_20b_2Fc;
#  6. failures the fail policy absorbs are logged: 6 checks at burst 3 on
#     a zone the workers may not open, under fail=open, are all admitted
#     (degraded) and leave one line per worker in the php-fpm log, with
#     the reason;
#  7. a mistyped throttlekit.fail warns: php -m, php-fpm -t, and a pool's
#     php_admin_value in the php-fpm log.
set -eu
: "${srcdir:=.}"
. "$srcdir/php/tests/lib.sh"
fpm_preflight
fpm_setup

# 1. Zones made by root: for www-data, and (refused) for root.
"$PHP" -n -d "extension=$TK_PHP_EXT" -d throttlekit.zone_owner=www-data -r '
	(new ThrottleKit\Limiter("gcra:1/1h,burst=50", "shm:fpm"))->peek("x");
	(new ThrottleKit\Limiter("gcra:1/1h,burst=50", "shm:fpm"))->peek("x");'
owner=$(stat -c %U "$work/zones/throttlekit.fpm")
[ "$owner" = www-data ] || fail "zone created by root for www-data is owned by $owner"
"$PHP" -n -d "extension=$TK_PHP_EXT" -r '
	(new ThrottleKit\Limiter("gcra:1/1h,burst=50", "shm:rootonly"))->peek("x");
	(new ThrottleKit\Limiter("gcra:1/1h,burst=50", "shm:rootonly2"))->peek("x");'
fpm_start "php_admin_value[throttlekit.default_store] = shm:fpm
php_admin_value[throttlekit.zone_owner] = www-data
php_admin_value[throttlekit.fail] = closed"
master_maps=$(grep -c "$work/zones/throttlekit\." "/proc/$fpm_pid/maps" || :)
[ "$master_maps" -eq 0 ] || fail "the php-fpm master maps $master_maps zone(s)"
line=$(fcgi "op=check&key=p&store=shm:rootonly&fail=error")
echo "root's own zone: $line"
case $line in
*StoreException*EACCES*zone_owner*) ;;
*) fail "a www-data worker on root's 0600 zone: $line" ;;
esac
# The pool's throttlekit.fail (closed) decides when the Limiter does not.
line=$(fcgi "op=check&key=p&store=shm:rootonly")
echo "root's own zone, the pool's fail policy: $line"
case $line in
*allowed=0*degraded=1*) ;;
*) fail "php_admin_value[throttlekit.fail] = closed: $line" ;;
esac

# 2. One limit for every worker.
burst_step burst
for i in 1 2 3 4 5 6 7 8; do fcgi "op=maps"; done >"$work/maps"
if grep -v 'zone_mappings=1$' "$work/maps"; then
	fail "a worker maps the zone more than once, or not at all"
fi

# 3. kill -9 of a worker that admitted a request and has not answered.
kill_step kill

# 4. 100,000 requests in one worker: private memory stays flat.
out=$("$PHP" -n "$srcdir/php/tests/fpm/fcgi.php" "127.0.0.1:$port" "$work/app.php" \
	"10000:op=check&key=rss{m}" "90000:op=check&key=rss{m}" "1:op=maps")
echo "$out" | grep -q "errors=0" || fail "fcgi.php: $out"
rpid=$(echo "$out" | sed -n 's/^pid=\([0-9]*\).*/\1/p' | sort -u)
[ "$(echo "$rpid" | wc -l)" -eq 1 ] || fail "several workers served one connection: $out"
echo "$out" | grep -q "^pid=$rpid zone_mappings=1$" || fail "zone mappings: $out"
rss_warm=$(echo "$out" | sed -n 's/^rss=//p' | sed -n 1p)
rss_end=$(echo "$out" | sed -n 's/^rss=//p' | sed -n 2p)
echo "RSS: worker $rpid RssAnon ${rss_warm} kB after 10,000 requests, ${rss_end} kB after 100,000"
[ $((rss_end - rss_warm)) -le 256 ] || fail "RssAnon grew by $((rss_end - rss_warm)) kB"

fpm_stop

# 5. The default store of a pool is the pool's, not each worker's own.
"$PHP" -n -d "extension=$TK_PHP_EXT" -r '
	(new ThrottleKit\Limiter("gcra:1/1h,burst=50", "shm:php-fpm.test"))->peek("x");'
fpm_start ""
line=$(fcgi "op=check&key=squat")
echo "the pool's zone made by root: $line"
case $line in
*StoreException*shm:php-fpm.test*EACCES*) ;;
*) fail "a www-data worker on the pool's zone made by root: $line" ;;
esac
rm "$work/zones/throttlekit.php-fpm.test"
burst_step pooldefault
zone="$work/zones/throttlekit.php-fpm.test"
[ -f "$zone" ] || fail "no zone php-fpm.test for the pool's default store"
perm=$(stat -c '%U %a' "$zone")
echo "pool's default zone: $perm"
[ "$perm" = "www-data 600" ] || fail "the pool's zone is $perm, not www-data 600"
# The pool's name is read from the worker's title, not asked of
# fpm_get_status() (which crashes a worker that finds another's slot
# locked): disabled, it changes nothing.
fpm_stop
rm "$zone"
fpm_start "php_admin_value[disable_functions] = fpm_get_status"
fcgi "op=check&key=nostatus" >/dev/null
uid=$(id -u www-data)
[ -f "$zone" ] && [ ! -e "$work/zones/throttlekit.php-fpm.uid-$uid" ] ||
	fail "fpm_get_status() disabled: not the zone php-fpm.test: $(ls "$work/zones")"
echo "fpm_get_status() disabled: still the zone php-fpm.test"
# A pool name with bytes a zone name cannot hold.
fpm_stop
fpm_pool="a b/c"
fpm_start ""
fpm_pool=
fcgi "op=check&key=name" >/dev/null
[ -f "$work/zones/throttlekit.php-fpm.a_20b_2Fc" ] ||
	fail "pool \"a b/c\": no zone php-fpm.a_20b_2Fc: $(ls "$work/zones")"
echo "pool \"a b/c\": the zone php-fpm.a_20b_2Fc"

# 6. Absorbed failures are logged, once per store and worker in 10 s.
for i in 1 2 3 4 5 6; do
	fcgi "op=check&key=p&store=shm:rootonly2&fail=open&policy=gcra:1/1h,burst%3D3"
done >"$work/absorbed"
allowed=$(count 'allowed=1 remaining=0 degraded=1' "$work/absorbed")
workers=$(pids "$work/absorbed" | wc -l)
fpm_stop
grep 'throttlekit: store "shm:rootonly2" failed' "$work/fpm.log" >"$work/absorbed.log" || :
lines=$(wc -l <"$work/absorbed.log")
echo "fail=open on a refused zone: $allowed of 6 admitted by $workers workers, $lines log lines"
[ "$allowed" -eq 6 ] || fail "$allowed of 6 admitted (degraded) under fail=open"
[ "$lines" -eq "$workers" ] || fail "$lines log lines from $workers workers (one each)"
grep -q '(EACCES): it belongs to uid 0.*1 admitted by fail=open' \
	"$work/absorbed.log" || fail "no reason or count: $(head -n 1 "$work/absorbed.log")"

# 7. throttlekit.fail=opne: php -m, php-fpm -t (log_errors on, as in
# Debian's php.ini) and a pool's php_admin_value all say so.
warning='throttlekit.fail=opne is not error, open or closed'
"$PHP" -n -d "extension=$TK_PHP_EXT" -d throttlekit.fail=opne -m 2>&1 |
	grep -q "$warning" || fail "php -m does not warn of throttlekit.fail=opne"
"$PHP_FPM" -n -d "extension=$TK_PHP_EXT" -d log_errors=1 -d throttlekit.fail=opne \
	-y "$work/fpm.conf" -t >"$work/fpm-t.out" 2>&1 || fail "php-fpm -t: $(cat "$work/fpm-t.out")"
grep -q "$warning" "$work/fpm-t.out" || fail "php-fpm -t does not warn: $(cat "$work/fpm-t.out")"
fpm_start "php_admin_value[throttlekit.fail] = opne"
fpm_stop
grep -q "child [0-9]* said into std.*$warning" "$work/fpm.log" || fail "php_admin_value[throttlekit.fail] = opne: no warning in the php-fpm log"
echo "throttlekit.fail=opne: php -m, php-fpm -t and the pool's workers warn"

if grep -E 'SIGSEGV|SIGBUS|SIGABRT|exited on signal (6|7|11)' "$work/fpm.log"; then
	fail "a worker crashed"
fi
echo "PASS"
