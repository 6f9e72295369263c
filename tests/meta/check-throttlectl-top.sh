#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# throttlectl top: the most denied keys of a zone with their names, rules
# and counts (--json, and text), remaining and retry peeked under the
# policy named for a rule, hostile key bytes printed escaped, the live
# view redrawn until its count of views or an interrupt, exit codes, and
# the example of throttlectl(1) as printed.
: "${top_builddir:=.}"
: "${srcdir:=.}"
ctl="$top_builddir/tools/throttlectl"
command -v jq >/dev/null 2>&1 || {
	echo "jq not found (Debian: jq)"
	exit 99
}
tmp=$(mktemp -d) || exit 99
TK_SHM_DIR=$(mktemp -d /dev/shm/tk-top.XXXXXX) || exit 99
export TK_SHM_DIR
trap 'rm -rf "$tmp" "$TK_SHM_DIR"' EXIT
fails=0
failed() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
# is WHAT GOT WANT
is() {
	if [ "$2" = "$3" ]; then
		echo "ok: $1 = $3"
	else
		failed "$1: got '$2', want '$3'"
	fi
}
# runs RC COMMAND...: COMMAND exits with RC (output in $tmp/out, err).
runs() {
	want=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	got=$?
	is "exit status of $*" "$got" "$want"
}

esc=$(printf 'evil\033]0;pwned\007\033[2J')
runs 0 "$ctl" create z --capacity 1024
runs 1 "$ctl" check z 'a:127.0.0.1/32' --prefix 'per_ip|gcra|' \
	--policy gcra:3/1h --repeat 10
runs 1 "$ctl" check z "$esc" --policy gcra:1/1h --repeat 5
runs 1 "$ctl" check z b --prefix 'per_path|gcra|' --policy gcra:1/1h \
	--repeat 3
runs 0 "$ctl" check z quiet --policy gcra:100/1h --repeat 50

runs 0 "$ctl" top z --json
cp "$tmp/out" "$tmp/top.json"
jq -e . "$tmp/top.json" >/dev/null || failed "top --json is not JSON"
q() {
	jq -r "$1" "$tmp/top.json"
}
is "denies" "$(q .denies)" 13
is "recent_denials" "$(q .recent_denials)" 13
is "most denied" "$(q '.most_denied[0].name')" 'per_ip|gcra|a:127.0.0.1/32'
is "its rule" "$(q '.most_denied[0].rule')" per_ip
is "its prefix" "$(q '.most_denied[0].prefix')" 'per_ip|gcra|'
is "its key" "$(q '.most_denied[0].key')" 'a:127.0.0.1/32'
is "its denials" "$(q '.most_denied[0].denied')" 7
is "no policy: remaining" "$(q '.most_denied[0].remaining')" null
is "second" "$(q '.most_denied[1].name')" "$esc"
is "its denials" "$(q '.most_denied[1].denied')" 4
is "its rule" "$(q '.most_denied[1].rule')" null
is "third" "$(q '.most_denied[2].denied')" 2
is "allowed only: not denied" "$(q '[.most_denied[].key] | index("quiet")')" \
	null
# Escaped: JSON's \u001b, never the byte.
grep -q 'evil\\u001b]0;pwned\\u0007\\u001b\[2J' "$tmp/top.json" ||
	failed "ESC not escaped in --json"
if LC_ALL=C grep -q "$(printf '\033')" "$tmp/top.json"; then
	failed "an ESC byte in --json"
fi

runs 0 "$ctl" top z --json --count 1 --policy per_ip=gcra:3/1h
cp "$tmp/out" "$tmp/top.json"
is "--count 1" "$(q '.most_denied | length')" 1
is "peeked remaining" "$(q '.most_denied[0].remaining')" 0
retry=$(q '.most_denied[0].retry_after')
# 3 an hour: the next in 20 minutes, less what the test took.
if [ "$retry" -le 1200000000000 ] && [ "$retry" -gt 1100000000000 ]; then
	echo "ok: retry_after $retry"
else
	failed "retry_after $retry"
fi

runs 0 "$ctl" top z --iterations 1 --policy gcra:1/1h
grep -q '^       7 .*  per_ip  *per_ip|gcra|a:127\.0\.0\.1/32$' "$tmp/out" ||
	failed "text row of the most denied key"
grep -q ' -  *evil\\x1b\]0;pwned\\x07\\x1b\[2J$' "$tmp/out" ||
	failed "ESC not escaped in text"
if LC_ALL=C grep -q "$(printf '\033')" "$tmp/out"; then
	failed "an ESC byte in text output"
fi

# Live: a view per interval, until the count of views or an interrupt.
runs 0 "$ctl" top z --interval 0.1 --iterations 3
is "views" "$(grep -c '^MOST DENIED$' "$tmp/out")" 3
"$ctl" top z --interval 0.1 >"$tmp/out" 2>&1 </dev/null &
pid=$!
sleep 1
kill -INT "$pid"
wait "$pid"
is "exit status after an interrupt" "$?" 0

# On a terminal: the screen cleared for each view, and q quits.
if command -v script >/dev/null 2>&1; then
	abs=$(cd "$(dirname "$ctl")" && pwd)/throttlectl
	(
		sleep 1
		printf q
	) | timeout 5 script -qec "$abs top z --interval 0.2" /dev/null \
		>"$tmp/out" 2>&1
	is "exit status after q" "$?" 0
	grep -q "$(printf '\033\\[H\033\\[2J')zone=z " "$tmp/out" ||
		failed "no cleared screen on a terminal"
else
	echo "note: no script(1): q on a terminal not tried"
fi

# Exit codes: usage 2, a zone's error 3.
runs 2 "$ctl" top
runs 2 "$ctl" top 'bad/name'
runs 2 "$ctl" top z --interval 0
runs 2 "$ctl" top z --policy 'per_ip=nonsense'
runs 2 "$ctl" top z --count 0
runs 3 "$ctl" top absent --json
grep -q '(ENOENT)' "$tmp/err" || failed "absent zone: $(cat "$tmp/err")"
# A zone of the previous layout version (9) is refused, typed.
runs 0 "$ctl" create old --capacity 1024
printf '\011\000\000\000' |
	dd of="$TK_SHM_DIR/throttlekit.old" bs=1 seek=8 conv=notrunc 2>/dev/null
runs 3 "$ctl" top old --json
grep -q '(EPROTO)' "$tmp/err" || failed "old layout: $(cat "$tmp/err")"

# The example of throttlectl(1), run as printed: each command's output,
# but for what is sampled (counts, and the order of MOST CHECKED) and the
# times.
man_example() {
	awk '/^Who is limited: mod_throttlekit/ { f = 1 }
		f && /^\.EX/ { x = 1; next }
		x && /^\.EE/ { exit }
		x' "$srcdir/man/throttlectl.1" |
		sed -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" -e 's/\\e/\\/g'
}
normalise() {
	awk '/^MOST CHECKED$/ { skip = 1; next }
		/^(\$ |[a-z]+=)/ { skip = 0 }
		!skip' "$1" |
		sed -E -e 's/,"most_checked":.*\}$/}/' \
			-e 's/"sampled(_checks)?":[0-9]+/"sampled\1":S/g' \
			-e 's/sampled_checks=[0-9]+/sampled_checks=S/' \
			-e 's/^( +[0-9]+) +[0-9]+ /\1 S /' \
			-e 's/[0-9]+\.[0-9]{3}s/Rs/' -e 's/[0-9]{10,}/T/g'
}
man_example >"$tmp/example"
mkdir -p "$tmp/bin" "$tmp/example-zones"
abs_ctl=$(cd "$(dirname "$ctl")" && pwd)/throttlectl
printf '#!/bin/sh\nexec "%s" "$@"\n' "$abs_ctl" >"$tmp/bin/throttlectl"
chmod +x "$tmp/bin/throttlectl"
# Each "$ " line (and the lines a '\\' continues) printed, then run.
awk '
	function flush() { if (cmd != "") print "{\n" cmd "\n} 2>&1"; cmd = "" }
	/^\$ / { flush(); c = substr($0, 3); more = /\\$/
		print "cat <<\047TK_EOF\047\n" $0 "\nTK_EOF"; cmd = c; next }
	more { print "cat <<\047TK_EOF\047\n" $0 "\nTK_EOF"
		cmd = cmd "\n" $0; more = /\\$/ }
	END { flush() }' "$tmp/example" >"$tmp/example.sh"
grep -q '^cat <<' "$tmp/example.sh" || failed "no top example in throttlectl(1)"
PATH="$tmp/bin:$PATH" TK_SHM_DIR="$tmp/example-zones" \
	sh "$tmp/example.sh" >"$tmp/example.out" 2>&1
normalise "$tmp/example" >"$tmp/example.want"
normalise "$tmp/example.out" >"$tmp/example.got"
if cmp -s "$tmp/example.want" "$tmp/example.got"; then
	echo "ok: the top example of throttlectl(1), as printed"
else
	failed "the top example of throttlectl(1) (- printed, + got):"
	diff -u "$tmp/example.want" "$tmp/example.got" | tail -n +3
fi

[ "$fails" -eq 0 ] || exit 1
echo "all top checks passed"
