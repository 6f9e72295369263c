#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# zonedir.sh - zones in the server's own directory, and restarts that
# change the server's user (issue 26, items 6, 7 and 12):
#   1. a local user who creates the zone's name first in /dev/shm (here
#      TK_SHM_DIR), or tries to in the module's directory, blocks
#      nothing: the zones live in DefaultRuntimeDir/throttlekit, root's,
#      0755, made by the parent;
#   2. a module directory that others may write is refused at start and
#      by apache2 -t, saying why;
#   3. changing User and Group: apache2 -t says the zone is taken over,
#      the graceful restart gives it to the new user and the counts go on;
#   4. a zone outside that directory made by root for the old user is
#      refused by apache2 -t, naming its owner and the owner= that fixes
#      it; with owner= the server uses it;
#   5. owner=, group= and mode= give a new zone that owner, group and mode;
#   6. ThrottleZoneDir: a link among its ancestors is resolved (as Debian's
#      /var/run), the directory itself a link is refused;
#   7. in a ThrottleZoneDir that is not root's, nothing is taken over.
# Needs root (User, Group, chown) and the users www-data and nobody.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

[ "$(id -u)" -eq 0 ] || skip_by_design "needs root: User, Group, chown"
id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null 2>&1 ||
	skip "no user nobody or group nogroup"
command -v setpriv >/dev/null 2>&1 || skip "setpriv is needed"
CTL=${abs_top_builddir:-.}/tools/throttlectl
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
codes() { seq_get "$1" "$2" | paste -s -d' ' -; }
# refuses WHAT PATTERN: apache2 -t fails with a message matching PATTERN.
refuses()
{
	if out=$(httpd -t -f "$CONF" 2>&1); then
		fail "apache2 -t accepts $1"
		return
	fi
	# shellcheck disable=SC2254 # PATTERN is a pattern
	case $out in
	$2) say "ok: apache2 -t refuses $1" ;;
	*) fail "apache2 -t, $1: $out" ;;
	esac
}

BODY='ThrottleStore local shm:zd
ThrottleRule r "gcra:1/1h,burst=3" store=local
<Location /z>
    Throttle r
</Location>
<Location /st>
    SetHandler throttlekit-status
</Location>'
docs z o

# 1. The squatter.
chmod 1777 "$TK_SHM_DIR"
as_nobody sh -c ": >'$TK_SHM_DIR/throttlekit.zd'" ||
	fail "nobody could not squat $TK_SHM_DIR"
as_nobody mkdir "$ZONES" 2>/dev/null && fail "nobody made $ZONES"
start_server prefork "$BODY" || { fail "httpd did not start"; finish; }
check "a squatter blocks nothing" "200 200 200 429 429" "$(codes 5 /z/x)"
check "the module's directory" "root root 755" "$(stat -c '%U %G %a' "$ZONES")"
check "its zone" "www-data www-data 600" "$(stat -c '%U %G %a' "$ZONES/zd")"
as_nobody sh -c ": >'$ZONES/x'" 2>/dev/null && fail "nobody wrote in $ZONES"
case $(curl -s "http://127.0.0.1:$PORT/st") in
*"store local spec=shm:zd"*" path=$ZONES/zd"*) say "ok: the status page shows the zone's path" ;;
*) fail "the status page does not show the zone's path" ;;
esac
case $(curl -s "http://127.0.0.1:$PORT/st?json") in
*"\"path\":\"$ZONES/zd\""*) say "ok: and its JSON" ;;
*) fail "the status page's JSON does not show the zone's path" ;;
esac

# 3. A new User and Group: taken over on the graceful restart.
USERS="User nobody
Group nogroup"
write_conf prefork "$PORT" "$BODY"
if out=$(httpd -t -f "$CONF" 2>&1); then
	case $out in
	*"zone $ZONES/zd belongs to www-data; the server gives it to nobody"*)
		say "ok: apache2 -t says the zone is taken over" ;;
	*) fail "apache2 -t does not say the zone is taken over: $out" ;;
	esac
else
	fail "apache2 -t refuses the new User: $out"
fi
graceful || fail "no new generation after the User change"
kill -0 "$PID" 2>/dev/null || { fail "the parent exited: $(tail -n 3 "$ROOT/logs/error.log")"; finish; }
check "counts kept over the User change" "429" "$(codes 1 /z/x)"
check "the zone's owner now" "nobody nogroup" "$(stat -c '%U %G' "$ZONES/zd")"
check "the error log says so" 1 \
	"$(grep -c "zone $ZONES/zd belonged to www-data; given to nobody" "$ROOT/logs/error.log")"
# And back, by a full stop and start (nothing retained).
stop_server
USERS="User www-data
Group www-data"
write_conf prefork "$PORT" "$BODY"
httpd -f "$CONF" -k start && wait_started || { fail "no start as www-data again"; finish; }
check "counts kept over a stop and start" "429" "$(codes 1 /z/x)"
check "the zone's owner again" "www-data www-data" "$(stat -c '%U %G' "$ZONES/zd")"
stop_server

# 2. A module directory others may write: refused, by -t too.
chmod 1777 "$ZONES"
refuses "a world-writable zone directory" \
	"*directory $ZONES is writable by every user*a start or restart would refuse it*"
httpd -f "$CONF" -k start 2>/dev/null && wait_started &&
	fail "httpd started with a world-writable zone directory"
stop_server
chmod 755 "$ZONES"

# 4. A zone a root script made for www-data, outside the module's
# directory, under a server now running as nobody.
mkdir -m 755 "$ROOT/ext"
"$CTL" create "$ROOT/ext/z" --capacity 64 --owner www-data >/dev/null ||
	fail "throttlectl create $ROOT/ext/z"
EXT="ThrottleStore ext shm:$ROOT/ext/z
ThrottleRule o \"gcra:1/1h,burst=2\" store=ext
<Location /o>
    Throttle o
</Location>"
USERS="User nobody
Group nogroup"
write_conf prefork "$PORT" "$BODY
$EXT"
refuses "another user's zone, naming the owner and owner=" \
	"*zone $ROOT/ext/z*it belongs to www-data: *add owner=www-data to this ThrottleStore*a start or restart would refuse it*"
check "nothing was taken outside the module's directory" www-data \
	"$(stat -c %U "$ROOT/ext/z")"

# 5. owner=, group=, mode=: a zone of www-data's that the nobody children
# share through the group nogroup.
"$CTL" destroy "$ROOT/ext/z" --owner www-data >/dev/null
write_conf prefork "$PORT" "$BODY
$(printf '%s\n' "$EXT" | sed 's|^ThrottleStore ext .*|& owner=www-data group=nogroup mode=0660|')"
httpd -t -f "$CONF" >/dev/null 2>&1 || fail "apache2 -t refuses owner=: $(httpd -t -f "$CONF" 2>&1)"
httpd -f "$CONF" -k start && wait_started || { fail "no start with owner="; cat "$ROOT/logs/error.log"; finish; }
check "owner=, group=, mode=" "www-data nogroup 660" "$(stat -c '%U %G %a' "$ROOT/ext/z")"
check "the nobody children use it" "200 200 429" "$(codes 3 /o/x)"
stop_server

# 6. ThrottleZoneDir through a linked ancestor; a linked directory.
ln -s "$ROOT/run" "$ROOT/runlink"
write_conf prefork "$PORT" "ThrottleZoneDir $ROOT/runlink/other
$BODY"
httpd -f "$CONF" -k start && wait_started || { fail "no start with ThrottleZoneDir"; finish; }
check "ThrottleZoneDir through a linked ancestor" "200 200 200 429" "$(codes 4 /z/x)"
check "its zone, by its real path" "nobody 600" "$(stat -c '%U %a' "$ROOT/run/other/zd")"
stop_server
ln -s "$ROOT/run/other" "$ROOT/run/linked"
write_conf prefork "$PORT" "ThrottleZoneDir $ROOT/run/linked
$BODY"
refuses "a linked zone directory" "*$ROOT/run/linked is a symbolic link*"

# 7. A zone directory of www-data's: its zones may be anybody's.
install -d -o www-data -g www-data -m 0755 "$ROOT/wdir"
"$CTL" create "$ROOT/wdir/zd" --capacity 64 --owner www-data >/dev/null ||
	fail "throttlectl create $ROOT/wdir/zd"
write_conf prefork "$PORT" "ThrottleZoneDir $ROOT/wdir
$BODY"
refuses "a zone directory of another user's" \
	"*directory $ROOT/wdir is owned by uid $(id -u www-data)*a start or restart would refuse it*"
httpd -f "$CONF" -k start 2>/dev/null && wait_started &&
	fail "httpd started with a zone directory of another user's"
stop_server
check "nothing taken in a directory of another user's" www-data \
	"$(stat -c %U "$ROOT/wdir/zd")"
no_crashes
finish
