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
[ "$fails" -eq 0 ]
