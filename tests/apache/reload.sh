#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# reload.sh - rules whose policies change over a graceful restart, in a
# real httpd (prefork, a zone): the checks go on deciding (no fail policy
# answers, fail=closed gives no 503), counts carry over where
# tk_limiter_open(3) says and every other key gets one fresh budget, and
# the error log says so once per changed rule.
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

docs log dims win closed same

# body LOG DIMS WIN CLOSED: the rules of one generation.
body()
{
	cat <<-EOF
	ThrottleStore local shm:tk-reload
	ThrottleRule log "$1"
	ThrottleRule dims "$2"
	ThrottleRule win "$3"
	ThrottleRule closed "$4" fail=closed
	ThrottleRule same "gcra:3/1h"
	<Location /log>
	    Throttle log
	</Location>
	<Location /dims>
	    Throttle dims
	</Location>
	<Location /win>
	    Throttle win
	</Location>
	<Location /closed>
	    Throttle closed
	</Location>
	<Location /same>
	    Throttle same
	</Location>
	EOF
}

# codes N PATH: the statuses of N requests one after the other, counted.
codes()
{
	seq_get "$1" "$2" | sort | uniq -c | awk '{ printf "%s%sx%s", s, $2, $1; s = " " }'
}

start_server prefork "$(body "sliding-log:5/1h" "all(gcra:5/1h,quota:5/day)" \
	"fixed-window:3/1h" "sliding-log:5/1h")" ||
	{ fail "httpd did not start"; finish; }
say "httpd $PID on port $PORT"
check "sliding-log:5/1h" "200x5 429x2" "$(codes 7 /log/x)"
check "all(gcra,quota), 3 of 5" "200x3" "$(codes 3 /dims/x)"
check "fixed-window:3/1h" "200x3 429x1" "$(codes 4 /win/x)"
check "sliding-log:5/1h, fail=closed" "200x5 429x1" "$(codes 6 /closed/x)"
check "an unchanged rule" "200x3 429x1" "$(codes 4 /same/x)"

# The issue's changes, and a window's limit; the same port.
write_conf prefork "$PORT" "$(body "sliding-log:10/1h" \
	"all(gcra:5/1h,fixed-window:5/1h)" "fixed-window:8/1h" \
	"sliding-log:10/1h")"
graceful || fail "no new generation after SIGUSR1"
# A log's length: one fresh budget of 10, then 429s.
check "sliding-log:10/1h after the change" "200x10 429x3" "$(codes 13 /log/x)"
# The composite keeps its GCRA dimension's state: 2 of 5 left.
check "all(gcra,fixed-window) after the change" "200x2 429x3" \
	"$(codes 5 /dims/x)"
# A window's limit: the count carries over, 5 more.
check "fixed-window:8/1h after the change" "200x5 429x2" "$(codes 7 /win/x)"
check "fail=closed after the change: no 503" "200x10 429x2" \
	"$(codes 12 /closed/x)"
check "an unchanged rule after the change" "429x2" "$(codes 2 /same/x)"

log=$ROOT/logs/error.log
check "log line for log" 1 "$(count 'ThrottleRule log: policy changed from sliding-log:5/1h to sliding-log:10/1h; every key starts afresh, once' <"$log")"
check "log line for dims" 1 "$(count 'ThrottleRule dims: policy changed from all(gcra:5/1h,quota:5/day) to all(gcra:5/1h,fixed-window:5/1h); some of its dimensions start' <"$log")"
check "log line for win" 1 "$(count 'ThrottleRule win: policy changed from fixed-window:3/1h to fixed-window:8/1h; every key keeps its count' <"$log")"
check "log lines in all" 4 "$(count 'policy changed' <"$log")"
check "no degraded decisions" 0 "$(count DEGRADED <"$ROOT/logs/access.log")"

# A second restart with nothing changed logs nothing more.
graceful || fail "no new generation after a second SIGUSR1"
check "log lines after an unchanged restart" 4 "$(count 'policy changed' <"$log")"
check "sliding-log:10/1h after an unchanged restart" "429x2" "$(codes 2 /log/x)"
stop_server
no_crashes
finish
