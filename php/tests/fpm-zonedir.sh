#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A real php-fpm pool keeps its zones in a directory of its own
# (throttlekit.zone_dir), where no other user can take their names first:
#  1. another user (nobody) creates the zone's name first in the shared
#     directory (/dev/shm; here TK_SHM_DIR): a pool without zone_dir is
#     refused (EACCES, naming that owner), a pool with zone_dir is not
#     affected: its workers create the zone there and share one limit;
#  2. a zone_dir that every user may write is refused, saying so;
#  3. a relative throttlekit.zone_dir is not taken.
set -eu
: "${srcdir:=.}"
. "$srcdir/php/tests/lib.sh"
fpm_preflight
command -v setpriv >/dev/null 2>&1 || { echo "SKIP: setpriv is needed"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody"; exit 77; }
fpm_setup

# 3. Only an absolute directory.
v=$("$PHP" -n -d "extension=$TK_PHP_EXT" -d throttlekit.zone_dir=rel/dir \
	-r 'echo ini_get("throttlekit.zone_dir");' 2>/dev/null)
[ -z "$v" ] || fail "a relative throttlekit.zone_dir was taken: $v"

# 1. The squatter, in a shared directory like /dev/shm.
chown root:root "$work/zones"
chmod 1777 "$work/zones"
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	sh -c ": >'$work/zones/throttlekit.sq'" || fail "nobody could not squat"
# The pool's directory: www-data's, 0700, in root's 0755 $work.
install -d -o www-data -g www-data -m 0700 "$work/pool"
fpm_start "php_admin_value[throttlekit.zone_dir] = $work/pool
php_admin_value[throttlekit.default_store] = shm:sq"
line=$(fcgi "op=check&key=a&store=shm:sq")
echo "zone_dir, squatted name elsewhere: $line"
case $line in
*allowed=1*) ;;
*) fail "a pool with throttlekit.zone_dir: $line" ;;
esac
[ "$(stat -c '%U %a' "$work/pool/sq")" = "www-data 600" ] ||
	fail "the pool's zone: $(ls -la "$work/pool")"
burst_step burst
fpm_stop
fpm_start "php_admin_value[throttlekit.default_store] = shm:sq"
line=$(fcgi "op=check&key=b&store=shm:sq&fail=error")
echo "without zone_dir: $line"
case $line in
*StoreException*EACCES*"owned by uid $(id -u nobody)"*) ;;
*) fail "a pool without zone_dir on the squatted name: $line" ;;
esac
fpm_stop

# 2. A directory that every user may write.
chmod 0777 "$work/pool"
fpm_start "php_admin_value[throttlekit.zone_dir] = $work/pool"
line=$(fcgi "op=check&key=c&store=shm:sq&fail=error")
echo "zone_dir writable by every user: $line"
case $line in
*StoreException*EACCES*"$work/pool is writable by every user"*) ;;
*) fail "a world-writable throttlekit.zone_dir: $line" ;;
esac
fpm_stop
echo "PASS"
