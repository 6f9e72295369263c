#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The demo, from a fresh Debian 12 machine: installs what is missing,
# builds, then shows a policy at work through throttlectl simulate, and
# two processes sharing one limit through a zone.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh tools/setup-debian.sh
autoreconf -fi >/dev/null 2>&1
mkdir -p build/demo
(cd build/demo && "$top/configure" >/dev/null && make -j"$(nproc)" >/dev/null)
ctl=build/demo/tools/throttlectl
s=1000000000

# A private directory: a fixed name in /tmp is anyone's to plant.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "Policy gcra:10/1s,burst=5: ten requests per second, bursts of five."
echo "Seven requests at t=1s, one at t=1.1s, one costing 6 (more than a burst):"
{
	for i in 1 2 3 4 5 6 7; do
		echo "{\"t\": $s, \"key\": \"client-42\"}"
	done
	echo "{\"t\": $((s + 100000000)), \"key\": \"client-42\"}"
	echo "{\"t\": $((s + 100000000)), \"key\": \"client-42\", \"cost\": 6}"
} >"$work/in.jsonl"
# The whole input is written before paste reads it beside the output.
"$ctl" simulate --policy gcra:10/1s,burst=5 <"$work/in.jsonl" >"$work/out.jsonl" || true
paste -d ' ' "$work/in.jsonl" "$work/out.jsonl" | sed 's/^/  /'
echo "Five pass at once, the sixth and seventh are told to retry in 100 ms,"
echo "one more passes 100 ms later, and a cost above the burst is -ERANGE."

echo
echo "A zone shared by two processes (what preforked workers do): policy"
echo "gcra:5/1h, each process checks the same key 10 times."
TK_SHM_DIR=$(mktemp -d)
export TK_SHM_DIR
"$ctl" create demo --capacity 1024 >/dev/null
"$ctl" check demo client-42 --policy gcra:5/1h --repeat 10 >"$TK_SHM_DIR/a" &
"$ctl" check demo client-42 --policy gcra:5/1h --repeat 10 >"$TK_SHM_DIR/b" &
wait
echo "  process 1: $(cat "$TK_SHM_DIR/a")"
echo "  process 2: $(cat "$TK_SHM_DIR/b")"
"$ctl" info demo | grep -E '^(keys|checks|denies)=' | sed 's/^/  zone: /'
echo "Together they admitted exactly 5: one limit, not one per process."
"$ctl" destroy demo >/dev/null
rm -rf "$TK_SHM_DIR"
