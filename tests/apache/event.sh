#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# event.sh - mod_throttlekit in a real httpd with the event MPM (2
# children of 8 threads): exact counts across children and threads, the
# header fields, a graceful restart and a full stop and start.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

mkdir -p "$ROOT/htdocs/api"
echo ok >"$ROOT/htdocs/index.html"
echo api >"$ROOT/htdocs/api/x"

BODY='
ThrottleStore local shm:tk-event
ThrottleRule burst "gcra:1/1h,burst=50" headers=both
<Location /api>
    Throttle burst
</Location>
<Location /tk-status>
    SetHandler throttlekit-status
</Location>
'

stock_threads event
start_server event "$BODY" || { fail "httpd did not start"; finish; }
say "httpd $PID on port $PORT"

burst_check event /api/x
parent_threads "after 200 requests"
graceful || fail "no new generation after SIGUSR1"
check "429s after a graceful restart" 5 "$(seq_get 5 /api/x | count 429)"
parent_threads "after a graceful restart"
case $(curl -s "http://127.0.0.1:$PORT/tk-status") in
*"generation=2"*"rule burst policy=gcra:1/1h,burst=50 store=local"*)
	say "ok: status after a graceful restart" ;;
*) fail "status after a graceful restart" ;;
esac
restart_server || fail "no restart after a full stop"
check "429s after a stop and start" 5 "$(seq_get 5 /api/x | count 429)"
parent_threads "after a stop and start"
stop_server
no_crashes
finish
