#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# throttlectl: exit codes and messages on standard error, help, simulate's
# output byte for byte, and the zone example of throttlectl(1) as printed.
: "${top_builddir:=.}"
: "${srcdir:=.}"
ctl="$top_builddir/tools/throttlectl"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0
failed() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
# expect RC STDERR COMMAND...: COMMAND (stdin from $in, /dev/null by
# default) exits with RC and writes exactly STDERR ("" for nothing) to
# standard error; a last line "..." in STDERR matches any further lines.
expect() {
	want=$1
	want_err=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err" <"${in:-/dev/null}"
	got=$?
	printf '%s' "$want_err" >"$tmp/want_err"
	[ -z "$want_err" ] || echo >>"$tmp/want_err"
	if [ "$(tail -n 1 "$tmp/want_err")" = "..." ]; then
		n=$(($(wc -l <"$tmp/want_err") - 1))
		head -n "$n" "$tmp/want_err" >"$tmp/want_head"
		mv "$tmp/want_head" "$tmp/want_err"
		head -n "$n" "$tmp/err" >"$tmp/got_err"
	else
		cp "$tmp/err" "$tmp/got_err"
	fi
	if [ "$got" -ne "$want" ]; then
		failed "$* exited $got, want $want"
		cat "$tmp/err"
	elif ! cmp -s "$tmp/want_err" "$tmp/got_err"; then
		failed "$*: standard error differs (- want, + got):"
		diff -u "$tmp/want_err" "$tmp/got_err" | tail -n +3
	else
		echo "ok: $* -> $want"
	fi
}
# usage_of CMD: the usage line CMD prints for bad usage (help CMD's first).
usage_of() {
	"$ctl" help "$1" | head -n 1
}
usage_check='usage: throttlectl check NAME KEY --policy P [--cost N] [--repeat N] [--prefix P] [--fail error|open|closed] [--owner U] [--group G]'
usage_create='usage: throttlectl create NAME [--capacity N] [--arena BYTES] [--mode OCTAL] [--owner U] [--group G] [--grace SECONDS] [--refuse-full]'
usage_simulate='usage: throttlectl simulate --policy SPEC [--store memory|shm:NAME|redis://...|postgresql://...] < replay.jsonl'
not_zone='an invalid zone name, or a file that is not a zone'
bad_name="a zone's name is 1 to 200 letters, digits, '.', '_' and '-', not beginning with '.', or an absolute path ending in one"

expect 0 "" "$ctl" --version
cp "$tmp/out" "$tmp/version"
grep -q "^throttlectl .* (libthrottlekit .*)$" "$tmp/out" ||
	failed "--version text"
expect 2 "usage: throttlectl COMMAND [ARGS]
..." "$ctl"
# An extra argument is bad usage for --version and help too.
expect 2 "usage: throttlectl COMMAND [ARGS]
..." "$ctl" --version extra
expect 2 "throttlectl: unknown command 'extra'
usage: throttlectl COMMAND [ARGS]
..." "$ctl" help extra
expect 0 "" "$ctl" help
# Help: the whole usage, or one command's, always to standard output.
for h in help --help -h; do
	expect 0 "" "$ctl" $h
	grep -q '^usage: throttlectl COMMAND \[ARGS\]$' "$tmp/out" ||
		failed "$h: no usage on standard output"
	grep -q '^  destroy NAME \[--owner U\] \[--group G\]$' "$tmp/out" ||
		failed "$h: no destroy in the usage"
done
printf '%s\n' "usage: throttlectl destroy NAME [--owner U] [--group G]" \
	"remove a zone; see throttlectl(1)" >"$tmp/want_help"
for h in "help destroy" "--help destroy" "-h destroy" "destroy --help" \
	"destroy -h" "destroy z --help" "destroy --owner nobody -h"; do
	# shellcheck disable=SC2086
	expect 0 "" "$ctl" $h
	cmp -s "$tmp/want_help" "$tmp/out" ||
		{ failed "$h: output (- want, + got):"; diff -u "$tmp/want_help" "$tmp/out"; }
done
for cmd in simulate create info ls get check reset stats verify sweep destroy ping; do
	expect 0 "" "$ctl" "$cmd" --help
	head -n 1 "$tmp/out" | grep -q "^usage: throttlectl $cmd " ||
		failed "$cmd --help: $(head -n 1 "$tmp/out")"
done
expect 2 "throttlectl: unknown command 'nosuch'
usage: throttlectl COMMAND [ARGS]
..." "$ctl" help nosuch
expect 2 "usage: throttlectl COMMAND [ARGS]
..." "$ctl" help destroy extra
# After "--", --help is an argument (here a third one: bad usage).
expect 2 "usage: throttlectl reset NAME KEY [--policy P] [--prefix P] [--owner U] [--group G] | reset NAME --rule R --client C [--owner U] [--group G]" \
	"$ctl" reset z k -- --help
expect 2 "throttlectl: unknown command 'nosuch'
usage: throttlectl COMMAND [ARGS]
..." "$ctl" nosuch
expect 2 "$usage_simulate" "$ctl" simulate
expect 2 "throttlectl: policy 'gcra:0/s': expected a positive rate of at most 1 per ns, burst tolerance below 2^62 ns at position 5" \
	"$ctl" simulate --policy gcra:0/s
# An unknown algorithm is a parse error at its position.
expect 2 "throttlectl: policy 'gcrx:1/s': expected a known algorithm at position 0" \
	"$ctl" simulate --policy gcrx:1/s
expect 2 "throttlectl: policy 'all(gcra:1/s,gcrx:1/s)': expected a known algorithm at position 13" \
	"$ctl" simulate --policy 'all(gcra:1/s,gcrx:1/s)'
expect 2 "throttlectl: store 'bogus': expected memory, shm:NAME, redis://, redis+unix://, redis+cluster://, redis+sentinel://, rediss:// or postgresql://" \
	"$ctl" simulate --policy gcra:1/s --store bogus
# TLS to Redis (rediss://) needs hiredis_ssl: a build without it refuses
# the spec and says why (configure's answer is in config.h).
if ! grep -q '^#define TK_HAVE_REDIS 1' "$top_builddir/config.h"; then
	no_tls="a Redis store needs a library built with hiredis (libhiredis-dev); this one was built without it"
elif ! grep -q '^#define TK_HAVE_HIREDIS_SSL 1' "$top_builddir/config.h"; then
	no_tls="rediss:// (TLS) needs a library built with hiredis_ssl (hiredis 1.0 or later); this one was built without it"
else
	no_tls=
fi
if [ -n "$no_tls" ]; then
	expect 2 "throttlectl: store 'rediss://127.0.0.1:1': Not supported by this build (ENOTSUP): $no_tls" \
		"$ctl" simulate --policy gcra:1/s --store rediss://127.0.0.1:1
	expect 2 "throttlectl: rediss://u:***@127.0.0.1:1: Not supported by this build (ENOTSUP): $no_tls" \
		"$ctl" ping rediss://u:s3cret@127.0.0.1:1
fi
expect 2 "throttlectl: store 'redis://u:***@127.0.0.1:1?server_time=1': simulate needs the replay's clock, not server_time=1" \
	"$ctl" simulate --policy gcra:1/s \
	--store 'redis://u:s3cret@127.0.0.1:1?server_time=1'
# A password never reaches a message, whatever is wrong with the spec:
# also one typed with a raw '/', '?' or '@' (hidden to the last '@'), and a
# spec missing a '/' of "://".
for spec in 'redis://u:s3cret@127.0.0.1:1?bogus=1' \
	'redis://:s3cret@127.0.0.1:1/x' 'redis+unix://u:s3cret@/tmp/x?a=b' \
	'rediss://u:s3cret@127.0.0.1:1?tls_ca=/nonexistent/ca.pem' \
	'redis://u:s3cret@[::1' 'redis://u:s3/cret@127.0.0.1:1' \
	'redis://u:s3?cret@127.0.0.1:1' 'redis:/u:s3cret@127.0.0.1:1' \
	'redis://:Sup3r/s3cret@127.0.0.1:1' 'redis://:s3cr@t/cret@127.0.0.1:1' \
	'redis://u:s3@:/?%cret@127.0.0.1:1' \
	'redis://u:s3%40%3A%2F%3F%25cret@127.0.0.1:1?bogus=1' \
	'redis+unix://u:s3@:/?%cret@/tmp/x' \
	'redis+cluster://:s3@:/?%cret@127.0.0.1:1,127.0.0.1:2/x'; do
	"$ctl" simulate --policy gcra:1/s --store "$spec" </dev/null \
		>"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -ne 2 ] || grep -q cret "$tmp/err" "$tmp/out" ||
		! grep -q "u*:\*\*\*@" "$tmp/err"; then
		failed "simulate --store $spec: exit $got, stderr:"
		cat "$tmp/err"
	else
		echo "ok: password hidden: $(cat "$tmp/err")"
	fi
done
# Every command that takes a store or a zone: the same spec, hidden.
spec='redis://u:s3cr@t/:?%cret@127.0.0.1:1'
for cmd in info ls stats verify sweep destroy create ping; do
	"$ctl" "$cmd" "$spec" >"$tmp/out" 2>"$tmp/err" </dev/null
	grep -q -e cret -e 's3cr' "$tmp/err" "$tmp/out" ||
		! grep -q 'redis://u:\*\*\*@127.0.0.1:1' "$tmp/err" &&
		failed "$cmd $spec: $(cat "$tmp/err")"
done
for cmd in get check reset; do
	"$ctl" "$cmd" "$spec" k --policy gcra:1/s >"$tmp/out" 2>"$tmp/err" </dev/null
	grep -q -e cret -e 's3cr' "$tmp/err" "$tmp/out" ||
		! grep -q 'redis://u:\*\*\*@127.0.0.1:1' "$tmp/err" &&
		failed "$cmd $spec: $(cat "$tmp/err")"
done

cat >"$tmp/in" <<'IN'
{"t": 1000000000, "key": "k"}
{"t": 1000000000, "key": "k", "cost": 5}
{"t": 1000000000, "key": "k", "cost": 99}
{"t": 1100000000, "key": "k", "op": "peek"}
{"t": 1100000000, "key": "k", "op": "reset"}
{"t":1100000000,"key":"k"}
{"t": 1, "key": "k",}
{"t": 1200000000, "key": "k\u0000x", "cost": 0}
IN
cat >"$tmp/want" <<'OUT'
{"allowed":true,"limit":5,"remaining":4,"reset_at":1100000000,"retry_after":0}
{"allowed":false,"limit":5,"remaining":4,"reset_at":1100000000,"retry_after":100000000}
{"error":"ERANGE"}
{"allowed":true,"limit":5,"remaining":5,"reset_at":1100000000,"retry_after":0}
{"reset":true}
{"allowed":true,"limit":5,"remaining":4,"reset_at":1200000000,"retry_after":0}
{"error":"EINVAL"}
{"error":"EINVAL"}
OUT
"$ctl" simulate --policy gcra:10/1s,burst=5 <"$tmp/in" >"$tmp/got" 2>"$tmp/err"
rc=$?
if ! cmp -s "$tmp/want" "$tmp/got"; then
	echo "FAIL: simulate output differs:"
	diff "$tmp/want" "$tmp/got"
	fails=$((fails + 1))
fi
[ "$rc" -eq 3 ] || failed "malformed line gave exit $rc"
echo "throttlectl: line 7: column 21: expected a member after ','" >"$tmp/want_err"
cmp -s "$tmp/want_err" "$tmp/err" ||
	{ failed "simulate: standard error:"; cat "$tmp/err"; }
echo "simulate: checked $(wc -l <"$tmp/want") lines"
cp "$tmp/in" "$tmp/in0"

# simulate_case NAME POLICY: replays $tmp/in through POLICY; output and
# standard error must be $tmp/want and $tmp/want_err, the exit code $want.
simulate_case() {
	"$ctl" simulate --policy "$2" <"$tmp/in" >"$tmp/got" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq "$want" ] || failed "simulate $1: exit $rc, want $want"
	cmp -s "$tmp/want" "$tmp/got" ||
		{ failed "simulate $1: output (- want, + got):"; diff -u "$tmp/want" "$tmp/got" | tail -n +3; }
	cmp -s "$tmp/want_err" "$tmp/err" ||
		{ failed "simulate $1: standard error (- want, + got):"; diff -u "$tmp/want_err" "$tmp/err" | tail -n +3; }
	echo "ok: simulate $1"
}

# The reader is strict: a NUL inside op, a CR or LF between tokens, an
# over-long op or member name are malformed, with a precise message; a
# CR ending the line is not.
cr=$(printf '\r')
printf '%s\n' '{"t":1,"key":"k","op":"peek\u0000zzz"}' \
	'{"t":1,"key":"k",'"$cr"'"op":"peek"}' \
	'{"t":1,"key":"k","op":"peek"}'"$cr" \
	'{"t":1,"key":"k","op":"peekpeekpeek"}' \
	'{"t":1,"key":"k","costcostcost":2}' \
	'{"t":1,"key":"k","t":2}' \
	'{"t":1,"key":"k","tt":2}' \
	'{"t":1,"key":"k"}'"$cr$cr" \
	'{"t":1,"key":"k"' '}' \
	'{"t":1,"key":"k","op":"chec"}' >"$tmp/in"
printf '{"t":1,"key":"k\000x"}\n' >>"$tmp/in"
k1024=$(head -c 1024 /dev/zero | tr '\0' k)
printf '{"t":1,"key":"%s"}\n' "${k1024}k" "$k1024" >>"$tmp/in"
cat >"$tmp/want" <<'OUT'
{"error":"EINVAL"}
{"error":"EINVAL"}
{"allowed":true,"limit":1,"remaining":1,"reset_at":1,"retry_after":0}
{"error":"EINVAL"}
{"error":"EINVAL"}
{"error":"EINVAL"}
{"error":"EINVAL"}
{"error":"EINVAL"}
{"error":"EINVAL"}
{"error":"EINVAL"}
{"error":"EINVAL"}
{"error":"EINVAL"}
{"error":"EINVAL"}
{"allowed":true,"limit":1,"remaining":0,"reset_at":1000000001,"retry_after":0}
OUT
cat >"$tmp/want_err" <<'ERR'
throttlectl: line 1: column 23: expected op "check", "peek" or "reset"
throttlectl: line 2: column 18: expected a member after ','
throttlectl: line 4: column 23: expected op "check", "peek" or "reset"
throttlectl: line 5: column 18: expected a member "t", "key", "cost" or "op"
throttlectl: line 6: column 18: expected each member at most once
throttlectl: line 7: column 18: expected a member "t", "key", "cost" or "op"
throttlectl: line 8: column 18: expected the end of the line
throttlectl: line 9: column 17: expected ',' or '}'
throttlectl: line 10: column 1: expected '{'
throttlectl: line 11: column 23: expected op "check", "peek" or "reset"
throttlectl: line 12: column 16: expected no NUL byte
throttlectl: line 13: column 14: expected a key of at most 1024 bytes
ERR
want=3 simulate_case "strict reader" gcra:1/s

# A policy with a shaper dimension prints the delay: the longest of the
# admitting dimensions, whichever dimension reports the other fields.
for i in 1 2 3 4; do echo '{"t":1000000000,"key":"k"}'; done >"$tmp/in"
echo '{"t":1000000000,"key":"k","op":"peek"}' >>"$tmp/in"
cat >"$tmp/want" <<'OUT'
{"allowed":true,"limit":3,"remaining":2,"reset_at":1010000000,"retry_after":0,"delay":0}
{"allowed":true,"limit":3,"remaining":1,"reset_at":1020000000,"retry_after":0,"delay":100000000}
{"allowed":true,"limit":3,"remaining":0,"reset_at":1030000000,"retry_after":0,"delay":200000000}
{"allowed":false,"limit":3,"remaining":0,"reset_at":1030000000,"retry_after":10000000,"delay":0}
{"allowed":false,"limit":3,"remaining":0,"reset_at":1030000000,"retry_after":10000000,"delay":0}
OUT
: >"$tmp/want_err"
want=0 simulate_case "shaper delay" \
	'all(leaky:10/1s,max-queue=1s,gcra:100/1s,burst=3)'
cat >"$tmp/want" <<'OUT'
{"allowed":true,"limit":11,"remaining":10,"reset_at":1100000000,"retry_after":0,"delay":0}
{"allowed":true,"limit":11,"remaining":9,"reset_at":1200000000,"retry_after":0,"delay":100000000}
{"allowed":true,"limit":11,"remaining":8,"reset_at":1300000000,"retry_after":0,"delay":200000000}
{"allowed":true,"limit":11,"remaining":7,"reset_at":1400000000,"retry_after":0,"delay":300000000}
{"allowed":true,"limit":11,"remaining":7,"reset_at":1400000000,"retry_after":0,"delay":400000000}
OUT
want=0 simulate_case "leaky delay" 'leaky:10/1s,max-queue=1s'

# Zones: the same replay gives byte-identical output on every store.
TK_SHM_DIR="$tmp/zones"
export TK_SHM_DIR
mkdir -p "$TK_SHM_DIR"
# A longer timeline: 600 events on 5 keys, costs 1-3, some peeks and
# resets, time moving by 0-400 ms (deterministic).
awk 'BEGIN {
	srand(7); t = 1700000000000000000
	for (i = 0; i < 600; i++) {
		t += int(rand() * 400) * 1000000
		k = "k" int(rand() * 5); r = rand()
		if (r < 0.05)
			printf "{\"t\":%.0f,\"key\":\"%s\",\"op\":\"reset\"}\n", t, k
		else if (r < 0.15)
			printf "{\"t\":%.0f,\"key\":\"%s\",\"op\":\"peek\"}\n", t, k
		else
			printf "{\"t\":%.0f,\"key\":\"%s\",\"cost\":%d}\n", t, k, 1 + int(rand() * 3)
	}
}' >"$tmp/long"
for policy in gcra:10/1s,burst=5 token-bucket:capacity=4,refill=3/1s \
	leaky:10/1s,max-queue=300ms fixed-window:7/2s \
	sliding-window:9/3s,buckets=6 sliding-log:6/2s quota:40/hour \
	quota:25/10s,anchor=1700000000000000000 fixed-window:3/16777216ns \
	fixed-window:3/16777215ns quota:20000000/hour \
	'all(gcra:10/1s,burst=4,fixed-window:30/1m)' \
	'any(sliding-log:3/1s,quota:50/hour)' \
	'all(token-bucket:capacity=5,refill=2/1s,sliding-window:12/4s,leaky:8/1s,max-queue=0s)'; do
	cat "$tmp/in0" "$tmp/long" >"$tmp/both"
	"$ctl" simulate --policy "$policy" <"$tmp/both" >"$tmp/mem" 2>/dev/null
	"$ctl" destroy sim >/dev/null 2>&1
	"$ctl" simulate --policy "$policy" --store shm:sim <"$tmp/both" \
		>"$tmp/shm" 2>/dev/null
	if grep -q '"error":"E[A-Z]*"' "$tmp/shm" &&
		[ "$(grep -c '"allowed":true' "$tmp/shm")" -lt 50 ]; then
		echo "FAIL: simulate $policy: too few decisions on shm:sim"
		fails=$((fails + 1))
	fi
	if cmp -s "$tmp/mem" "$tmp/shm"; then
		echo "ok: simulate $policy: memory and shm:sim identical"
	else
		echo "FAIL: simulate $policy differs between stores:"
		diff "$tmp/mem" "$tmp/shm"
		fails=$((fails + 1))
	fi
done

# One exit status for one kind of error, whatever the command: a name or
# spec the library refuses as text is bad usage (2), with its reason; a
# file that is not a zone is a zone's error (3).
expect 2 "throttlectl: store 'shm:': $bad_name" \
	"$ctl" simulate --policy gcra:1/s --store shm:
expect 2 "throttlectl: store 'shm:a/b': $bad_name" \
	"$ctl" simulate --policy gcra:1/s --store shm:a/b
for cmd in create info ls stats verify sweep destroy; do
	expect 2 "throttlectl: a/b: Invalid argument (EINVAL): $bad_name
$(usage_of "$cmd")" "$ctl" "$cmd" a/b
done
for cmd in get check reset; do
	expect 2 "throttlectl: a/b: Invalid argument (EINVAL): $bad_name
$(usage_of "$cmd")" "$ctl" "$cmd" a/b k --policy gcra:1/s
done
expect 2 "throttlectl: redis://:***@h:99999: Invalid argument (EINVAL): byte 14: expected a port from 1 to 65535
$usage_check" "$ctl" check 'redis://:pw@h:99999' k --policy gcra:1/s
expect 2 "throttlectl: shm:a/b: Invalid argument (EINVAL): $bad_name" \
	"$ctl" ping shm:a/b
head -c 65536 /dev/zero | tr '\0' X >"$TK_SHM_DIR/throttlekit.text"
expect 3 "throttlectl: store 'shm:text': Invalid argument (EINVAL)" \
	"$ctl" simulate --policy gcra:1/s --store shm:text
expect 3 "throttlectl: text: Invalid argument (EINVAL)" "$ctl" info text
expect 3 "throttlectl: shm:text: Invalid argument (EINVAL)" "$ctl" ping shm:text

# Zone commands, their exit codes and messages.
expect 0 "" "$ctl" create z --capacity 256 --mode 0640
expect 3 "throttlectl: z: Zone exists (EEXIST)" "$ctl" create z
# A zone command takes its arguments and no more: one too many is bad
# usage, and the command does nothing.
for cmd in destroy sweep verify info stats ls create; do
	expect 2 "$(usage_of "$cmd")" "$ctl" "$cmd" z extra
	expect 2 "$(usage_of "$cmd")" "$ctl" "$cmd" z -- extra
done
for cmd in get check reset; do
	expect 2 "$(usage_of "$cmd")" "$ctl" "$cmd" z k extra --policy gcra:2/1h
done
expect 0 "" "$ctl" info z
grep -qx "checks=0" "$tmp/out" || failed "an extra argument did something"
# --mode is octal, as chmod(1) takes it: with or without the leading 0.
expect 0 "" "$ctl" create m --capacity 64 --mode 640
expect 0 "" "$ctl" info m
grep -qx "mode=0640" "$tmp/out" || failed "--mode 640 is not 0640"
expect 0 "" "$ctl" destroy m
for bad in 0x1a0 8 '' 0o640 -640; do
	expect 2 "throttlectl: --mode '$bad': expected an octal mode from 0 to 0777
$usage_create" "$ctl" create m --mode "$bad"
done
# A zone the trust rules refuse: the message names the option that trusts
# it.  Root can give a zone a group it is not in.
if [ "$(id -u)" -eq 0 ] && ! getent group 54321 >/dev/null; then
	expect 0 "" "$ctl" create gz --capacity 64 --mode 0660 --group 54321
	expect 3 "throttlectl: gz: Zone not trusted or not accessible, or server login refused (EACCES): it is writable by group 54321 (mode 0660), not one of this process's groups; name that group to trust it
throttlectl: gz: give --group 54321 to this command and every later one on this zone to trust it" \
		"$ctl" info gz
	expect 0 "" "$ctl" info gz --group 54321
	expect 0 "" "$ctl" destroy gz --group 54321
else
	echo "note: not root: the trust hint is not checked"
fi
# Output that cannot be written is an error, not a success with nothing.
if [ -w /dev/full ]; then
	for cmd in "info z" "ls z --json" "verify z" "--version" "help"; do
		expect 3 "throttlectl: I/O error" \
			sh -c "exec \"\$0\" $cmd >/dev/full" "$ctl"
	done
	expect 0 "" sh -c "exec \"\$0\" info z --json >/dev/null" "$ctl"
fi
expect 2 "throttlectl: --capacity 'nope': expected an integer from 0 to 4294967296
$usage_create" "$ctl" create z --capacity nope
expect 0 "" "$ctl" check z alice --policy gcra:2/1h
expect 1 "" "$ctl" check z alice --policy gcra:2/1h --repeat 3
grep -qx "allowed=1 denied=2" "$tmp/out" ||
	{ failed "--repeat summary"; cat "$tmp/out"; }
expect 1 "" "$ctl" get z alice --policy gcra:2/1h
expect 0 "" "$ctl" ls z
grep -q "^slot=[0-9]* fingerprint=[0-9a-f]* state=[0-9]*$" "$tmp/out" ||
	failed "ls output"
# alice's GCRA state is a time in ns, above 2^53: a string in JSON, every
# digit kept.
state=$(sed -n 's/.* state=//p' "$tmp/out")
[ "$state" -gt 9007199254740992 ] || failed "ls: state not above 2^53"
expect 0 "" "$ctl" ls z --json
grep -q "^\[{\"slot\":[0-9]*,\"fingerprint\":\"[0-9a-f]*\",\"state\":\"$state\"}\]\$" \
	"$tmp/out" || failed "ls --json: state as a string"
expect 0 "" "$ctl" info z
for kv in capacity=256 keys=1 checks=4 denies=2 mode=0640; do
	grep -qx "$kv" "$tmp/out" || failed "info lacks $kv"
done
# The key hash the creator chose: AES-CMAC only with AES-NI (x86-64).
hash=siphash-1-3
if [ "$(uname -m)" = x86_64 ] && grep -qw aes /proc/cpuinfo &&
	grep -qw sse4_1 /proc/cpuinfo; then
	hash=aes-cmac
fi
tail -n 1 "$tmp/out" | grep -qx "key_hash=$hash" || failed "info key_hash"
expect 0 "" "$ctl" info z --json
grep -q '^{"zone":"z","capacity":256,' "$tmp/out" || failed "info --json"
grep -q "\"key_hash\":\"$hash\",\"rules\":\[\]}\$" "$tmp/out" || failed "info --json key_hash"
# Nanoseconds in JSON are strings: created is above 2^53, where a JSON
# number loses digits in jq and JavaScript; every digit is kept.
created=$("$ctl" info z | sed -n 's/^created=//p')
[ "$created" -gt 9007199254740992 ] || failed "created not above 2^53"
grep -q "\"created\":\"$created\",\"grace\":\"60000000000\"," "$tmp/out" ||
	failed "info --json: created and grace as strings"
expect 0 "" "$ctl" stats z --json
grep -q '^{"zone":"z","checks":4,"denies":2,.*"keys":1,.*"rules":\[\]}$' \
	"$tmp/out" || failed "stats --json"
expect 0 "" "$ctl" stats z --prometheus
grep -q '^throttlekit_zone_keys{zone="z"} 1$' "$tmp/out" ||
	failed "stats --prometheus keys"
grep -q '^throttlekit_zone_checks_total{zone="z"} 4$' "$tmp/out" ||
	failed "stats --prometheus checks"
sh "$srcdir/tests/meta/prom-lint.sh" "$tmp/out" || failed "stats --prometheus format"
expect 0 "" "$ctl" info z --prometheus
sh "$srcdir/tests/meta/prom-lint.sh" "$tmp/out" || failed "info --prometheus format"
grep -qx "throttlekit_zone_info{zone=\"z\",key_hash=\"$hash\",mode=\"0640\",uid=\"$(id -u)\",gid=\"$(id -g)\"} 1" \
	"$tmp/out" || failed "info --prometheus key_hash"
grep -qx 'throttlekit_zone_grace_seconds{zone="z"} 60.000000000' "$tmp/out" ||
	failed "info --prometheus grace in seconds"
# The linter itself refuses what the format forbids.
printf '# HELP a_total x\n# TYPE a_total counter\na_total{zone="a\\q"} 1\n' >"$tmp/bad"
sh "$srcdir/tests/meta/prom-lint.sh" "$tmp/bad" >/dev/null && failed "prom-lint: bad escape"
printf '# HELP a x\n# TYPE a counter\na 1\n' >"$tmp/bad"
sh "$srcdir/tests/meta/prom-lint.sh" "$tmp/bad" >/dev/null && failed "prom-lint: counter without _total"
printf 'a 1\n' >"$tmp/bad"
sh "$srcdir/tests/meta/prom-lint.sh" "$tmp/bad" >/dev/null && failed "prom-lint: no TYPE"
# A rule the zone does not have: the error lists those it has.
expect 3 "throttlectl: z: no rule 'per_ip' in the zone; its rules: none" \
	"$ctl" reset z --rule per_ip --client 127.0.0.1
expect 2 "usage: throttlectl stats NAME [--json|--prometheus] [--owner U] [--group G]" "$ctl" stats
expect 2 "usage: throttlectl info NAME [--json|--prometheus] [--owner U] [--group G]" "$ctl" info
expect 0 "" "$ctl" verify z
# alice holds a GCRA state: a sliding window is another policy, whose
# states live under keys of their own (tk_limiter_open(3)): a fresh
# budget, and the GCRA state stays as it was.
sw='sliding-window:5/1h'
expect 0 "" "$ctl" check z alice --policy "$sw"
grep -q '^{"allowed":true,"limit":5,"remaining":4,' "$tmp/out" ||
	{ failed "another policy's fresh budget"; cat "$tmp/out"; }
expect 1 "" "$ctl" get z alice --policy gcra:2/1h
expect 0 "" "$ctl" reset z alice --policy "$sw"
expect 0 "" "$ctl" sweep z
# A store that fails each check: --fail decides it, saying so.
expect 0 "" "$ctl" check nozone k --policy gcra:5/1s --fail open --repeat 2
grep -qx "allowed=2 denied=0 degraded=2" "$tmp/out" ||
	{ failed "--fail --repeat summary"; cat "$tmp/out"; }
expect 2 "throttlectl: --fail: expected error, open or closed, not \"maybe\"
$usage_check" "$ctl" check z alice --policy "$sw" --fail maybe
# A zone that is not there: the error under --fail error, the fail
# policy's degraded decision under open or closed (tk_limiter_open(3)).
expect 3 "throttlectl: nozone: No such zone (ENOENT)" \
	"$ctl" check nozone k --policy gcra:5/1s
expect 1 "" "$ctl" check nozone k --policy gcra:5/1s --fail closed
grep -qx '{"allowed":false,"limit":5,"remaining":0,"reset_at":"[0-9]*","retry_after":"1000000000","degraded":true}' \
	"$tmp/out" || { failed "--fail closed, no zone"; cat "$tmp/out"; }
expect 0 "" "$ctl" get nozone k --policy gcra:5/1s --fail open
grep -q '"allowed":true,"limit":5,.*"degraded":true}$' "$tmp/out" ||
	{ failed "--fail open, no zone"; cat "$tmp/out"; }
[ -e "$TK_SHM_DIR/throttlekit.nozone" ] && failed "a check created a zone"
# Normal decisions carry no "degraded" field.
expect 1 "" "$ctl" get z alice --policy gcra:2/1h --fail open
grep -q degraded "$tmp/out" && failed "a normal decision says degraded"
# A sliding window's state lives in a block of the arena (6 words: 128 B).
expect 0 "" "$ctl" check z team --policy sliding-window:2/1h,buckets=2 \
	--repeat 2
expect 1 "" "$ctl" check z team --policy sliding-window:2/1h,buckets=2
# A fixed window of an hour packs into its slot.
expect 0 "" "$ctl" check z crew --policy fixed-window:2/1h
expect 0 "" "$ctl" info z
for kv in keys=3 blocks=1 arena_used=128 arena_size=65536; do
	grep -qx "$kv" "$tmp/out" || failed "info lacks $kv"
done
# A sliding window's state is under its policy's key: --policy names it.
expect 0 "" "$ctl" reset z team
expect 0 "" "$ctl" info z
grep -qx "blocks=1" "$tmp/out" || failed "a reset without the policy"
expect 0 "" "$ctl" reset z team --policy sliding-window:2/1h,buckets=2
expect 0 "" "$ctl" sweep z
grep -qx "swept=z" "$tmp/out" || failed "sweep"
expect 0 "" "$ctl" info z
grep -qx "blocks=0" "$tmp/out" || failed "reset left a block"
expect 3 "throttlectl: nosuch: No such zone (ENOENT)" "$ctl" sweep nosuch
expect 2 "usage: throttlectl sweep NAME [--owner U] [--group G]" "$ctl" sweep
expect 2 "throttlectl: --arena 'nope': expected an integer from 1 to 2147467264
$usage_create" "$ctl" create big --arena nope
# Out of the documented range (less than 2 GiB) is bad usage that names
# the range, as for every number option.
expect 2 "throttlectl: --arena '99999999999999': expected an integer from 1 to 2147467264
$usage_create" "$ctl" create big --arena 99999999999999
# Block references hold 25 bits: 2 GiB of arena is one page too many.
expect 2 "throttlectl: --arena '2147483648': expected an integer from 1 to 2147467264
$usage_create" "$ctl" create big --arena 2147483648
expect 2 "throttlectl: --arena '2147467265': expected an integer from 1 to 2147467264
$usage_create" "$ctl" create big --arena 2147467265
expect 0 "" "$ctl" create big --capacity 64 --arena 2147467264
expect 0 "" "$ctl" destroy big
expect 0 "" "$ctl" create big --capacity 64 --arena 100000
expect 0 "" "$ctl" info big
grep -qx "arena_size=114688" "$tmp/out" || failed "arena not rounded up to pages"
expect 0 "" "$ctl" destroy big
expect 0 "" "$ctl" reset z alice
expect 0 "" "$ctl" check z alice --policy gcra:2/1h

# Numbers: one strict reader for every option.  No space, no sign, no
# overflow (2^64 and 2^64 + 1 do not wrap to 0 and 1); 2^64 - 1 is read
# where the option allows it.
any_u64='an integer from 1 to 18446744073709551615'
for bad in ' -1' '-1' ' 1' '1 ' '+1' '' 0 18446744073709551616 \
	18446744073709551617 99999999999999999999 0x 08 1e3 '1 2'; do
	expect 2 "throttlectl: --cost '$bad': expected $any_u64
$usage_check" "$ctl" check z alice --policy gcra:2/1h --cost "$bad"
done
expect 2 "throttlectl: --repeat ' -1': expected $any_u64
$usage_check" timeout 10 "$ctl" check z alice --policy gcra:2/1h --repeat ' -1'
expect 2 "throttlectl: --arena ' -1': expected an integer from 1 to 2147467264
$usage_create" "$ctl" create big --arena ' -1'
# A cost the policy never admits is the command line's error: usage.
expect 2 "throttlectl: alice: Cost exceeds what the policy can ever admit (ERANGE)" \
	"$ctl" check z alice --policy gcra:2/1h --cost 18446744073709551615
expect 2 "throttlectl: alice: Cost exceeds what the policy can ever admit (ERANGE)" \
	"$ctl" check z alice --policy gcra:2/1h --cost 0x10
expect 1 "" "$ctl" check z alice --policy gcra:2/1h --cost 02
expect 2 "throttlectl: --grace '18446744074': expected an integer from 1 to 18446744073
$usage_create" "$ctl" create big --grace 18446744074
expect 2 "throttlectl: --mode '0800': expected an octal mode from 0 to 0777
$usage_create" "$ctl" create big --mode 0800
expect 2 "throttlectl: --mode '01000': expected an octal mode from 0 to 0777
$usage_create" "$ctl" create big --mode 01000
# A mode writable by every user makes a zone no one may trust: bad usage
# that says so, not the library's bare EINVAL.
expect 2 "throttlectl: --mode '0666': expected a mode without the bit 0002: a zone writable by every user is never trusted
$usage_create" "$ctl" create big --mode 0666
expect 2 "throttlectl: --capacity '96': expected 0 or a power of two from 64 to 2^32
$usage_create" "$ctl" create big --capacity 96
expect 2 "throttlectl: --capacity '8589934592': expected an integer from 0 to 4294967296
$usage_create" "$ctl" create big --capacity 8589934592
expect 0 "" "$ctl" create big --grace 18446744073 --capacity 0 --mode 0
expect 0 "" "$ctl" info big
for kv in capacity=65536 grace=18446744073000000000 mode=0600; do
	grep -qx "$kv" "$tmp/out" || failed "info big lacks $kv"
done
expect 0 "" "$ctl" destroy big
expect 2 "throttlectl: empty key
$usage_check" "$ctl" check z "" --policy gcra:2/1h
long=$(head -c 1025 /dev/zero | tr '\0' k)
expect 2 "throttlectl: key longer than 1024 bytes
usage: throttlectl reset NAME KEY [--policy P] [--prefix P] [--owner U] [--group G] | reset NAME --rule R --client C [--owner U] [--group G]" "$ctl" reset z "$long"
expect 0 "" "$ctl" reset z "${long%k}"
# A key that begins with '-' follows "--".
expect 0 "" "$ctl" reset z --policy gcra:2/1h -- -42
grep -qx "reset=-42" "$tmp/out" || failed "reset -- -42"
# A prefix too long is bad usage too, named as such (not the zone's error).
longp=$(head -c 257 /dev/zero | tr '\0' p)
expect 2 "throttlectl: prefix longer than 256 bytes
$usage_check" "$ctl" check z alice --policy gcra:2/1h --prefix "$longp"
expect 0 "" "$ctl" reset z alice --prefix "${longp%p}"

# reset forgets the key's gcra states, a simple policy's and a
# composite's (each dimension under its own store key); with --policy,
# exactly that policy's keys (the only way to name another algorithm's).
both='all(gcra:1/1h,gcra:2/1h)'
expect 0 "" "$ctl" check z bob --policy "$both"
expect 1 "" "$ctl" check z bob --policy "$both"
expect 0 "" "$ctl" check z bob --policy gcra:1/1h
expect 0 "" "$ctl" reset z bob
grep -qx "reset=bob" "$tmp/out" || failed "reset output"
expect 0 "" "$ctl" check z bob --policy "$both"
expect 0 "" "$ctl" check z bob --policy gcra:1/1h
expect 0 "" "$ctl" reset z bob --policy gcra:1/1h
expect 1 "" "$ctl" check z bob --policy "$both"
expect 0 "" "$ctl" check z bob --policy gcra:1/1h
expect 0 "" "$ctl" reset z bob --policy "$both"
expect 0 "" "$ctl" check z bob --policy "$both"
expect 1 "" "$ctl" check z bob --policy gcra:1/1h
# The eighth dimension too.
eight='all(gcra:9/1h,gcra:9/1h,gcra:9/1h,gcra:9/1h,gcra:9/1h,gcra:9/1h,gcra:9/1h,gcra:1/1h)'
expect 0 "" "$ctl" check z carol --policy "$eight"
expect 1 "" "$ctl" check z carol --policy "$eight"
expect 0 "" "$ctl" reset z carol
expect 0 "" "$ctl" check z carol --policy "$eight"
# get and check print the delay of a shaper.
expect 0 "" "$ctl" check z dave --policy 'leaky:1/1h,max-queue=2h' --repeat 2
expect 0 "" "$ctl" get z dave --policy 'leaky:1/1h,max-queue=2h'
# Two queued an hour apart: the next waits about 2 h (less what passed).
grep -Eq '"retry_after":"0","delay":"71[0-9]{11}"}$' "$tmp/out" ||
	{ failed "get: no delay"; cat "$tmp/out"; }

expect 0 "" "$ctl" destroy z
expect 3 "throttlectl: z: No such zone (ENOENT)" "$ctl" info z
expect 3 "throttlectl: z: No such zone (ENOENT)" \
	"$ctl" check z alice --policy gcra:2/1h
# A corrupt zone fails verify and info with a typed error.
expect 0 "" "$ctl" create bad --capacity 64
printf 'XXXXXXXX' | dd of="$TK_SHM_DIR/throttlekit.bad" bs=1 seek=0 \
	conv=notrunc 2>/dev/null
expect 3 "throttlectl: bad: Invalid argument (EINVAL)" "$ctl" verify bad
expect 3 "throttlectl: bad: Invalid argument (EINVAL)" "$ctl" info bad

# ping: a store in this host answers itself; one that is not there is a
# typed error (status 3), its password hidden, and creates nothing.
expect 0 "" "$ctl" ping memory
printf 'store=memory\nserver=\nversion=%s\nengine=memory\nrtt_ns=0\n' \
	"$(sed -n 's/^throttlectl .* (libthrottlekit \(.*\))$/\1/p' \
		"$tmp/version")" >"$tmp/want"
cmp -s "$tmp/want" "$tmp/out" || { failed "ping memory:"; cat "$tmp/out"; }
expect 0 "" "$ctl" create pz --capacity 64
expect 0 "" "$ctl" ping shm:pz
grep -qx 'engine=zone' "$tmp/out" || { failed "ping shm:pz:"; cat "$tmp/out"; }
expect 3 "throttlectl: shm:nosuch: No such zone (ENOENT)" "$ctl" ping shm:nosuch
[ ! -e "$TK_SHM_DIR/throttlekit.nosuch" ] || failed "ping created a zone"
expect 2 "usage: throttlectl ping STORE" "$ctl" ping
expect 2 "usage: throttlectl ping STORE" "$ctl" ping memory extra
expect 2 "usage: throttlectl ping STORE" "$ctl" ping --json
expect 2 "throttlectl: bogus: Invalid argument (EINVAL): expected memory, shm:NAME, redis://, redis+unix://, redis+cluster://, redis+sentinel://, rediss:// or postgresql://" \
	"$ctl" ping bogus
if "$ctl" ping redis://127.0.0.1:1 2>&1 |
	grep -q ENOTSUP; then
	echo "ok: no Redis store in this build"
else
	expect 3 "throttlectl: redis://u:***@127.0.0.1:1?connect_timeout=200ms: Store server refused the connection (ECONNREFUSED)" \
		"$ctl" ping 'redis://u:s3cret@127.0.0.1:1?connect_timeout=200ms'
	! grep -q s3cret "$tmp/out" "$tmp/err" || failed "ping showed a password"
fi

# throttlectl(1) lints clean at every level, style included (check-man.sh
# holds the other pages to warnings).
mandoc=${MANDOC:-mandoc}
if command -v "$mandoc" >/dev/null 2>&1; then
	"$mandoc" -Tlint "$srcdir/man/throttlectl.1" >"$tmp/lint" 2>&1
	if [ -s "$tmp/lint" ]; then
		failed "mandoc -Tlint throttlectl.1:"
		cat "$tmp/lint"
	else
		echo "ok: mandoc -Tlint throttlectl.1"
	fi
else
	echo "note: no mandoc: throttlectl(1) not linted"
fi

# The example of throttlectl(1) for a www-data server, run as printed:
# each command's output, the times, slots and fingerprints aside, and the
# key hash, which depends on the CPU.
man_example() {
	awk '/^A zone for a server whose workers run in the group/ { f = 1 }
		f && /^\.EX/ { x = 1; next }
		x && /^\.EE/ { exit }
		x' "$srcdir/man/throttlectl.1" |
		sed -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" -e 's/\\e/\\/g'
}
normalise() {
	sed -e 's/fingerprint=[0-9a-f]\{16\}/fingerprint=F/' \
		-e 's/[0-9]\{10,\}/T/g' -e 's/^slot=[0-9]* /slot=S /' \
		-e 's/^key_hash=.*/key_hash=H/' "$1" | sort
}
if [ "$(id -u)" -eq 0 ] && getent group www-data >/dev/null; then
	man_example >"$tmp/example"
	mkdir -p "$tmp/bin" "$tmp/example-zones"
	abs_ctl=$(cd "$(dirname "$ctl")" && pwd)/throttlectl
	printf '#!/bin/sh\nexec "%s" "$@"\n' "$abs_ctl" >"$tmp/bin/throttlectl"
	chmod +x "$tmp/bin/throttlectl"
	# Each "$ " line (and the lines a '\\' or '|' continues) printed,
	# then run.
	awk '
		function flush() { if (cmd != "") print "{\n" cmd "\n} 2>&1"; cmd = "" }
		/^\$ / { flush(); c = substr($0, 3); more = /[\\|]$/
			print "cat <<\047TK_EOF\047\n" $0 "\nTK_EOF"; cmd = c; next }
		more { print "cat <<\047TK_EOF\047\n" $0 "\nTK_EOF"
			cmd = cmd "\n" $0; more = /[\\|]$/ }
		END { flush() }' "$tmp/example" >"$tmp/example.sh"
	if ! grep -q '^cat <<' "$tmp/example.sh"; then
		failed "no www-data example in throttlectl(1)"
	fi
	PATH="$tmp/bin:$PATH" TK_SHM_DIR="$tmp/example-zones" \
		sh "$tmp/example.sh" >"$tmp/example.out" 2>&1
	normalise "$tmp/example" >"$tmp/example.want"
	normalise "$tmp/example.out" >"$tmp/example.got"
	if cmp -s "$tmp/example.want" "$tmp/example.got"; then
		echo "ok: the www-data example of throttlectl(1), as printed"
	else
		failed "the www-data example of throttlectl(1), normalised and sorted (- printed, + got):"
		diff -u "$tmp/example.want" "$tmp/example.got" | tail -n +3
	fi
else
	echo "note: not root or no group www-data: the man page's example is not run"
fi
[ "$fails" -eq 0 ]
