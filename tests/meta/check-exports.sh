#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every dynamic symbol libthrottlekit exports is a tk_ function under the
# version node THROTTLEKIT_0 (lib/libthrottlekit.map), each TK_API function
# of the header is exported, and the map names exactly those functions:
# one left out of the map would not be exported at all.  The Debian
# symbols file (debian/libthrottlekit0.symbols) names them too, so that a
# new function fails here rather than in the package build.  And the
# library needs no libpq: it loads libpq.so.5 at run time (lib/pg/libpq.c),
# so that a program that never opens a postgresql:// store maps none of
# it, nor Kerberos, LDAP or OpenSSL for it.
: "${srcdir:=.}"
: "${top_builddir:=.}"
: "${NM:=nm}"
so="$top_builddir/lib/.libs/libthrottlekit.so"
map="$srcdir/lib/libthrottlekit.map"
if [ ! -f "$so" ]; then
	echo "SKIP: no shared library at $so (static-only build)"
	exit 77
fi
fails=0
failed() {
	echo "FAIL: $1"
	shift
	printf '  %s\n' "$@"
	fails=$((fails + 1))
}
# "tk_x@@THROTTLEKIT_0" with symbol versions, "tk_x" without.
tmp=$(mktemp) || exit 99
trap 'rm -f "$tmp"' EXIT
$NM -D --defined-only "$so" | awk '$2 ~ /^[TDBRW]$/ {print $3}' | sort >"$tmp"
exported=$(sed 's/@.*//' "$tmp")
bad=$(printf '%s\n' "$exported" | grep -v '^tk_')
[ -z "$bad" ] || failed "exports outside the tk_ namespace:" $bad
declared=$(awk '/TK_API/ { s = $0; if (s !~ /\(/) { getline n; s = s " " n }
		if (match(s, /tk_[a-z0-9_]+\(/)) print substr(s, RSTART, RLENGTH - 1) }' \
	"$srcdir/include/throttlekit.h" | sort -u)
missing=$(printf '%s\n' "$declared" | while read -r f; do
	printf '%s\n' "$exported" | grep -qx "$f" || echo "$f"
done)
[ -z "$missing" ] || failed "declared with TK_API but not exported:" $missing
if [ "$TK_VERSION_SCRIPT" = no ]; then
	echo "note: the linker takes no version script; versions not checked"
else
	unversioned=$(grep -v '@@THROTTLEKIT_0$' "$tmp")
	[ -z "$unversioned" ] ||
		failed "exported without the version THROTTLEKIT_0:" $unversioned
	mapped=$(awk '/^[ \t]*tk_[a-z0-9_]+;/ { sub(/^[ \t]*/, ""); sub(/;.*/, "");
		print }' "$map" | sort)
	unmapped=$(printf '%s\n' "$declared" | while read -r f; do
		printf '%s\n' "$mapped" | grep -qx "$f" || echo "$f"
	done)
	[ -z "$unmapped" ] ||
		failed "declared with TK_API but not in $map:" $unmapped
	stale=$(printf '%s\n' "$mapped" | while read -r f; do
		printf '%s\n' "$declared" | grep -qx "$f" || echo "$f"
	done)
	[ -z "$stale" ] || failed "in $map but not declared with TK_API:" $stale
fi
symbols="$srcdir/debian/libthrottlekit0.symbols"
if [ -f "$symbols" ]; then
	listed=$(sed -n 's/^ \(tk_[a-z0-9_]*\)@THROTTLEKIT_0 .*/\1/p' "$symbols" |
		sort)
	unlisted=$(printf '%s\n' "$declared" | while read -r f; do
		printf '%s\n' "$listed" | grep -qx "$f" || echo "$f"
	done)
	[ -z "$unlisted" ] ||
		failed "declared with TK_API but not in $symbols (add \" NAME@THROTTLEKIT_0 VERSION\"):" $unlisted
	gone=$(printf '%s\n' "$listed" | while read -r f; do
		printf '%s\n' "$declared" | grep -qx "$f" || echo "$f"
	done)
	[ -z "$gone" ] || failed "in $symbols but not declared with TK_API:" $gone
fi
if command -v "${READELF:=readelf}" >/dev/null 2>&1; then
	needed=$("$READELF" -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
	pq=$(printf '%s\n' "$needed" | grep '^libpq')
	[ -z "$pq" ] || failed "the library links libpq (NEEDED), which it must dlopen():" $pq
else
	echo "note: no readelf; NEEDED not checked"
fi
[ "$fails" -eq 0 ] || exit 1
echo "ok: $(printf '%s\n' "$exported" | wc -l) exports, all tk_, all declared ones present, all versioned, no libpq NEEDED"
