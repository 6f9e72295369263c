#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# cluster.sh - mod_throttlekit on a real 3-master Redis Cluster that this
# test starts on 127.0.0.1 (free ports below 55535, bus ports free too,
# redis-cli --cluster create) and stops by its pids, under prefork with 4
# children.  "Throttle wide narrow" names two rules of the cluster store
# whose keys are on different masters, so one request is one script per
# slot, consumed in slot order and refunded when a later slot refuses:
# exact 200/429 counts for the pair, and afterwards for "wide" alone
# (what the refusals consumed of "wide" was given back).
#
# Run by "make check" (see lib.sh); exit 0 pass, 1 fail, 77 skip.

. "${srcdir:-.}/tests/apache/lib.sh"

command -v redis-server >/dev/null 2>&1 || skip "no redis-server"
command -v redis-cli >/dev/null 2>&1 || skip "no redis-cli"
write_conf prefork 1 "ThrottleStore cl redis+cluster://127.0.0.1:1"
case $(httpd -t -f "$CONF" 2>&1) in
*"Not supported by this build"*) skip "libthrottlekit was built without hiredis" ;;
esac

NPID=""
NPORT=""

stop_cluster()
{
	for p in $NPID; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	NPID=""
}
trap 'stop_cluster; cleanup' EXIT

# start_node DIR PORT: a cluster-enabled redis-server, answering PING;
# 1 if it exits first (its port taken after all: another is tried).
start_node()
{
	mkdir -p "$1"
	(cd "$1" && exec redis-server --port "$2" --bind 127.0.0.1 \
		--cluster-enabled yes --cluster-config-file nodes.conf \
		--save '' --appendonly no --daemonize no >log 2>&1) &
	pid=$!
	i=0
	while [ $i -lt 50 ]; do
		i=$((i + 1))
		if [ "$(redis-cli -p "$2" ping 2>/dev/null)" = PONG ]; then
			NPID="$NPID $pid"
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rm -rf "$1" # its nodes.conf names the port it could not have
	return 1
}

# start_cluster: three masters, slots split in port order (the first
# node serves 0-5460, the second 5461-10922, the third the rest).
start_cluster()
{
	n=0
	tries=0
	while [ $n -lt 3 ] && [ $tries -lt 60 ]; do
		tries=$((tries + 1))
		p=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 35000))
		port_free "$p" && port_free $((p + 10000)) || continue
		case " $NPORT " in *" $p "* | *" $((p + 10000)) "* | *" $((p - 10000)) "*) continue ;; esac
		start_node "$ROOT/redis$((n + 1))" "$p" || continue
		n=$((n + 1))
		NPORT="$NPORT $p"
	done
	[ $n -eq 3 ] || return 1
	set -- $NPORT
	redis-cli --cluster create 127.0.0.1:$1 127.0.0.1:$2 127.0.0.1:$3 \
		--cluster-replicas 0 --cluster-yes >"$ROOT/create.log" 2>&1 ||
		return 1
	i=0
	while [ $i -lt 100 ]; do
		i=$((i + 1))
		ok=0
		for p in $NPORT; do
			redis-cli -p "$p" cluster info 2>/dev/null |
				grep -q '^cluster_state:ok' && ok=$((ok + 1))
		done
		[ $ok -eq 3 ] && return 0
		sleep 0.1
	done
	return 1
}

start_cluster || {
	cat "$ROOT"/redis*/log "$ROOT/create.log" 2>/dev/null
	fail "the cluster did not start"
	finish
}
set -- $NPORT
say "cluster on ports $*"

for d in both wide narrow; do
	mkdir -p "$ROOT/htdocs/$d"
	echo "$d" >"$ROOT/htdocs/$d/x"
done

# One key per rule (key=x2; the rule name is in its hash tag): "wide" and
# "narrow" hash to slots on different masters, "wide" first.
BODY="
ThrottleStore cl \"redis+cluster://127.0.0.1:$1,127.0.0.1:$2?key_prefix=tkc:\"
ThrottleRule wide \"fixed-window:50/1h\" store=cl key=x2 headers=both
ThrottleRule narrow \"fixed-window:30/1h\" store=cl key=x2 headers=both
<Location /both>
    Throttle wide narrow
</Location>
<Location /wide>
    Throttle wide
</Location>
<Location /narrow>
    Throttle narrow
</Location>"

start_server prefork "$BODY" || { fail "httpd did not start"; finish; }

out=$ROOT/both.out
fire 200 /both/x >"$out"
check "200s of 200 concurrent requests under both rules" 30 \
	"$(count '^200|' <"$out")"
check "429s of 200 concurrent requests under both rules" 170 \
	"$(count '^429|' <"$out")"
check "429s with a Retry-After" 170 \
	"$(awk -F'|' '$1 == 429 && $2 > 0' "$out" | wc -l)"

# node_of RULE: which master (1, 2, 3: ascending slots) holds its key.
node_of()
{
	i=0
	for p in $NPORT; do
		i=$((i + 1))
		[ -n "$(redis-cli -p "$p" --scan --pattern "tkc:{*$1|*")" ] &&
			echo $i
	done
}
w=$(node_of wide)
n=$(node_of narrow)
say "wide on master $w, narrow on master $n"
if [ -n "$w" ] && [ -n "$n" ] && [ "$w" -lt "$n" ]; then
	say "ok: two slots on two masters, wide consumed first"
else
	fail "the rules' keys are not on two masters with wide first"
fi

# Each refusal consumed "wide" and gave it back: 50 - 30 are left.
fire 100 /wide/x >"$out"
check "200s of 100 concurrent requests under wide alone" 20 \
	"$(count '^200|' <"$out")"
check "429s of 100 concurrent requests under wide alone" 80 \
	"$(count '^429|' <"$out")"
fire 10 /narrow/x >"$out"
check "200s of 10 requests under narrow alone" 0 "$(count '^200|' <"$out")"

wait_log /wide/x 100 || fail "the access log lacks requests"
children=$(awk '$4 == "/both/x" { print $1 }' "$ROOT/logs/access.log" | sort -u | wc -l)
if [ "$children" -ge 2 ]; then
	say "ok: served by $children children"
else
	fail "served by $children child(ren), expected several"
fi

stop_server
no_crashes
finish
