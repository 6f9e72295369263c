#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Two tiers from PHP (shm:NAME?lease=1+redis://..., throttlekit(7) "Two
# tiers"), on a redis-server this test starts on a free port of 127.0.0.1
# and PHP CLI processes loading the extension from the build tree:
#  1. 2 hosts (zones of their own) x 3 processes, 30 checks each, on one
#     key of a limit of 50, at lease=1: exactly 50 admitted, a fixed
#     window's and a GCRA's, and Redis ran a script for each admission;
#  2. a bad two-tier spec throws ThrottleKit\Exception with the
#     library's reason, and a spec of no form names the two-tier one.
set -eu
: "${srcdir:=.}"
. "$srcdir/php/tests/lib.sh"
skip_if_sanitized
if [ -z "${PHP:-}" ] || [ -z "${TK_PHP_EXT:-}" ]; then
	echo "SKIP: no PHP or TK_PHP_EXT (run through make check)"
	exit 77
fi
redis_preflight
use_build_lib
work=$(mktemp -d)
trap 'redis_stop; rm -rf "$work"' EXIT
TK_SHM_DIR="$work/zones"
mkdir "$TK_SHM_DIR"
export TK_SHM_DIR
redis_start
php() {
	"$PHP" -n -d "extension=$TK_PHP_EXT" "$@"
}
# One process: CHECKS checks of key "k" under POLICY on STORE; prints
# how many it admitted.
cat >"$work/checks.php" <<'EOF'
<?php
[, $policy, $store, $checks] = $argv;
$l = new ThrottleKit\Limiter($policy, $store, ["fail" => "error"]);
$n = 0;
for ($i = 0; $i < (int)$checks; $i++)
    $n += $l->check("k")->allowed ? 1 : 0;
echo "$n\n";
EOF

# 1. lease=1: the global limiter's decisions, whatever the hosts.
for policy in fixed-window:50/1h gcra:50/1h; do
	rcli flushall >/dev/null
	rcli config resetstat >/dev/null
	: >"$work/out"
	pids=
	for h in a a a b b b; do
		php "$work/checks.php" "$policy" \
			"shm:tier-$h?lease=1+redis://127.0.0.1:$rport" 30 \
			>>"$work/out" 2>&1 &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086 # the pids, one word each
	wait $pids
	[ "$(grep -c '^[0-9][0-9]*$' "$work/out")" = 6 ] ||
		fail "$policy: $(cat "$work/out")"
	total=$(awk '{ s += $1 } END { print s }' "$work/out")
	[ "$total" = 50 ] || fail "$policy: $total admitted of 50 ($(tr '\n' ' ' <"$work/out"))"
	calls=$(rcli info commandstats | awk -F'[=,]' \
		'/^cmdstat_(fcall|evalsha):/ { s += $2 } END { print s + 0 }')
	[ "$calls" -ge 50 ] || fail "$policy: $calls script calls for 50 admissions"
	echo "ok: $policy at lease=1: $total admitted by 2 hosts x 3 processes ($calls script calls)"
done

# 2. Messages of bad specs.
cat >"$work/bad.php" <<'EOF'
<?php
try {
    new ThrottleKit\Limiter("gcra:1/s", $argv[1]);
    echo "no exception\n";
} catch (ThrottleKit\Exception $e) {
    echo $e->getCode(), ": ", $e->getMessage(), "\n";
}
EOF
out=$(php "$work/bad.php" "shm:t?lease=0+redis://127.0.0.1:$rport")
case $out in
"22: "*"lease=N or lease_max=N"*) ;;
*) fail "a bad lease: $out" ;;
esac
out=$(php "$work/bad.php" "shm:.t+redis://127.0.0.1:$rport")
case $out in
"22: "*"a zone's name before '+redis'"*) ;;
*) fail "a bad zone name: $out" ;;
esac
out=$(php "$work/bad.php" "nothing:at-all")
case $out in
"22: "*'"shm:NAME[?lease=N&lease_max=N]+redis://..." (two tiers'*) ;;
*) fail "no form: $out" ;;
esac
echo "ok: bad two-tier specs say why"
