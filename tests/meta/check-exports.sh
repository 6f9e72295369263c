#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every dynamic symbol libthrottlekit exports is a tk_ function, and each
# TK_API function of the header is exported.
: "${srcdir:=.}"
: "${top_builddir:=.}"
: "${NM:=nm}"
so="$top_builddir/lib/.libs/libthrottlekit.so"
if [ ! -f "$so" ]; then
	echo "SKIP: no shared library at $so (static-only build)"
	exit 77
fi
exported=$($NM -D --defined-only "$so" | awk '$2 ~ /^[TDBRW]$/ {print $3}' | sort)
bad=$(printf '%s\n' "$exported" | grep -v '^tk_' || true)
if [ -n "$bad" ]; then
	echo "FAIL: exports outside the tk_ namespace:"
	printf '  %s\n' $bad
	exit 1
fi
declared=$(awk '/TK_API/ { s = $0; if (s !~ /\(/) { getline n; s = s " " n }
		if (match(s, /tk_[a-z0-9_]+\(/)) print substr(s, RSTART, RLENGTH - 1) }' \
	"$srcdir/include/throttlekit.h" | sort -u)
missing=$(printf '%s\n' "$declared" | while read -r f; do
	printf '%s\n' "$exported" | grep -qx "$f" || echo "$f"
done)
if [ -n "$missing" ]; then
	echo "FAIL: declared with TK_API but not exported:"
	printf '  %s\n' $missing
	exit 1
fi
echo "ok: $(printf '%s\n' "$exported" | wc -l) exports, all tk_, all declared ones present"
