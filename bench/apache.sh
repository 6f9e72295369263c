#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/apache.sh BUILDDIR - requests per second of a static file served
# by a real httpd (event MPM) without and with mod_throttlekit's check, in
# the same run and the same server: /plain/ has no Throttle, /limited/ a
# rule that admits everything (so every request pays one check of a zone).
# Rounds alternate between the two so that drift in the machine's load
# hits both.  Prints each round and the ratio limited/plain of the sums.
#
# Not run by "make check".  Needs wrk and curl.  Tuning (environment):
# TK_BENCH_APACHE_SECONDS (per round, default 5), TK_BENCH_APACHE_ROUNDS
# (default 3), TK_BENCH_APACHE_CONNECTIONS (default 32).  Every request
# comes from 127.0.0.1: one hot key, the worst case for contention.
set -u

[ $# -eq 1 ] || {
	echo "usage: $0 BUILDDIR" >&2
	exit 2
}
bench=$(cd "$(dirname "$0")" && pwd)
srcdir=$(dirname "$bench")
abs_top_builddir=$(cd "$1" && pwd) || exit 1
export srcdir abs_top_builddir
command -v wrk >/dev/null 2>&1 || {
	echo "bench/apache.sh: wrk is needed (apt-get install wrk)" >&2
	exit 1
}
. "$srcdir/tests/apache/lib.sh"

secs=${TK_BENCH_APACHE_SECONDS:-5}
rounds=${TK_BENCH_APACHE_ROUNDS:-3}
conns=${TK_BENCH_APACHE_CONNECTIONS:-32}

mkdir -p "$ROOT/htdocs/plain" "$ROOT/htdocs/limited"
head -c 1024 /dev/zero | tr '\0' x >"$ROOT/htdocs/plain/x"
cp "$ROOT/htdocs/plain/x" "$ROOT/htdocs/limited/x"
echo ok >"$ROOT/htdocs/index.html"

BODY='
ThrottleStore bench shm:tk-bench
ThrottleRule all "gcra:1000000000/1s,burst=1000000000"
<Location /limited>
    Throttle all
</Location>
'
start_server event "$BODY" || {
	echo "bench/apache.sh: httpd did not start" >&2
	exit 1
}
# The access log would measure the disk, new connections the kernel.
sed -i -e 's|^CustomLog .*|CustomLog /dev/null tk|' \
	-e 's|^KeepAlive Off|KeepAlive On\nMaxKeepAliveRequests 0|' "$CONF"
graceful

rps()
{
	wrk -t2 -c"$conns" -d"${secs}s" "http://127.0.0.1:$PORT$1" |
		awk '/^Requests\/sec:/ { printf "%d\n", $2 }'
}

plain=0
limited=0
i=0
echo "bench/apache.sh: event MPM, $conns connections, ${secs}s rounds, keep-alive on"
printf '%-8s %12s %12s\n' round plain/s limited/s
while [ $i -lt "$rounds" ]; do
	i=$((i + 1))
	p=$(rps /plain/x)
	l=$(rps /limited/x)
	plain=$((plain + ${p:-0}))
	limited=$((limited + ${l:-0}))
	printf '%-8s %12s %12s\n' "$i" "$p" "$l"
done
[ "$plain" -gt 0 ] || {
	echo "bench/apache.sh: no requests served" >&2
	exit 1
}
awk -v p="$plain" -v l="$limited" \
	'BEGIN { printf "ratio limited/plain: %.3f (overhead %.1f%%)\n", l / p, (1 - l / p) * 100 }'
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/limited/x")
[ "$code" = 200 ] || echo "bench/apache.sh: warning: /limited/x answered $code" >&2
stop_server
exit 0
