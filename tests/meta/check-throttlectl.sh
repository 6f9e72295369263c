#!/bin/sh
# throttlectl: exit codes, and simulate's output byte for byte.
: "${top_builddir:=.}"
ctl="$top_builddir/tools/throttlectl"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0
expect_rc() {
	want=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	got=$?
	if [ "$got" -ne "$want" ]; then
		echo "FAIL: $* exited $got, want $want"
		fails=$((fails + 1))
	else
		echo "ok: $* -> $want"
	fi
}
expect_rc 0 "$ctl" --version
grep -q "^throttlectl .* (libthrottlekit .*)$" "$tmp/out" ||
	{ echo "FAIL: --version text"; fails=$((fails + 1)); }
expect_rc 2 "$ctl"
expect_rc 2 "$ctl" nosuch
expect_rc 2 "$ctl" simulate
expect_rc 2 "$ctl" simulate --policy gcra:0/s
expect_rc 2 "$ctl" simulate --policy gcra:1/s --store bogus

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
[ "$rc" -eq 3 ] || { echo "FAIL: malformed line gave exit $rc"; fails=$((fails + 1)); }
grep -q "line 7: column" "$tmp/err" ||
	{ echo "FAIL: no line/column for the bad line"; fails=$((fails + 1)); }
echo "simulate: checked $(wc -l <"$tmp/want") lines"

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
	cat "$tmp/in" "$tmp/long" >"$tmp/both"
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

# Zone commands and their exit codes.
expect_rc 0 "$ctl" create z --capacity 256 --mode 0640
expect_rc 3 "$ctl" create z
expect_rc 2 "$ctl" create z --capacity nope
expect_rc 0 "$ctl" check z alice --policy gcra:2/1h
expect_rc 1 "$ctl" check z alice --policy gcra:2/1h --repeat 3
grep -qx "allowed=1 denied=2" "$tmp/out" ||
	{ echo "FAIL: --repeat summary"; cat "$tmp/out"; fails=$((fails + 1)); }
expect_rc 1 "$ctl" get z alice --policy gcra:2/1h
expect_rc 0 "$ctl" ls z
grep -q "^slot=[0-9]* fingerprint=[0-9a-f]* state=[0-9]*$" "$tmp/out" ||
	{ echo "FAIL: ls output"; fails=$((fails + 1)); }
expect_rc 0 "$ctl" info z
for kv in capacity=256 keys=1 checks=4 denies=2 mode=0640; do
	grep -qx "$kv" "$tmp/out" ||
		{ echo "FAIL: info lacks $kv"; fails=$((fails + 1)); }
done
expect_rc 0 "$ctl" stats z --json
grep -q '^{"zone":"z","capacity":256,' "$tmp/out" ||
	{ echo "FAIL: stats --json"; fails=$((fails + 1)); }
expect_rc 0 "$ctl" stats z --prometheus
grep -q '^throttlekit_zone_keys{zone="z"} 1$' "$tmp/out" ||
	{ echo "FAIL: stats --prometheus"; fails=$((fails + 1)); }
expect_rc 0 "$ctl" verify z
# A sliding window's state lives in a block of the arena (6 words: 128 B).
expect_rc 0 "$ctl" check z team --policy sliding-window:2/1h,buckets=2 \
	--repeat 2
expect_rc 1 "$ctl" check z team --policy sliding-window:2/1h,buckets=2
# A fixed window of an hour packs into its slot.
expect_rc 0 "$ctl" check z crew --policy fixed-window:2/1h
expect_rc 0 "$ctl" info z
for kv in keys=3 blocks=1 arena_used=128 arena_size=65536; do
	grep -qx "$kv" "$tmp/out" ||
		{ echo "FAIL: info lacks $kv"; fails=$((fails + 1)); }
done
expect_rc 0 "$ctl" reset z team
expect_rc 0 "$ctl" sweep z
grep -qx "swept=z" "$tmp/out" || { echo "FAIL: sweep"; fails=$((fails + 1)); }
expect_rc 0 "$ctl" info z
grep -qx "blocks=0" "$tmp/out" ||
	{ echo "FAIL: reset left a block"; fails=$((fails + 1)); }
expect_rc 3 "$ctl" sweep nosuch
expect_rc 2 "$ctl" sweep
expect_rc 2 "$ctl" create big --arena nope
expect_rc 3 "$ctl" create big --arena 99999999999999
# Block references hold 25 bits: 2 GiB of arena is one page too many.
expect_rc 3 "$ctl" create big --arena 2147483648
expect_rc 0 "$ctl" create big --capacity 64 --arena 100000
expect_rc 0 "$ctl" info big
grep -qx "arena_size=114688" "$tmp/out" ||
	{ echo "FAIL: arena not rounded up to pages"; fails=$((fails + 1)); }
expect_rc 0 "$ctl" destroy big
expect_rc 0 "$ctl" reset z alice
expect_rc 0 "$ctl" check z alice --policy gcra:2/1h
expect_rc 0 "$ctl" destroy z
expect_rc 3 "$ctl" info z
expect_rc 3 "$ctl" check z alice --policy gcra:2/1h
# A corrupt zone fails verify and info with a typed error.
expect_rc 0 "$ctl" create bad --capacity 64
printf 'XXXXXXXX' | dd of="$TK_SHM_DIR/throttlekit.bad" bs=1 seek=0 \
	conv=notrunc 2>/dev/null
expect_rc 3 "$ctl" verify bad
expect_rc 3 "$ctl" info bad
[ "$fails" -eq 0 ]
