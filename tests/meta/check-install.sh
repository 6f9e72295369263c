#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# "make install DESTDIR=..." puts the Apache module where httpd looks for
# modules (apxs -q LIBEXECDIR, or --with-apache-moddir) and the PHP
# extension where PHP looks (php-config --extension-dir, or
# --with-php-extdir), with no libtool .la beside either; throttlekit.pc
# links a program with -static, and names no libpq (loaded at run time);
# and "make uninstall" leaves no file.
: "${top_builddir:=.}"
: "${MAKE:=make}"
: "${CC:=cc}"
: "${PKG_CONFIG:=pkg-config}"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
fails=0
failed() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
if ! $MAKE -C "$top_builddir" install DESTDIR="$dest" >"$tmp/install.out" 2>&1; then
	cat "$tmp/install.out"
	echo "FAIL: make install DESTDIR=$dest"
	exit 1
fi
(cd "$dest" && find . ! -type d | sed 's/^\.//' | sort) >"$tmp/files"

# installed PATH: PATH is among the installed files.
installed() {
	if grep -qx "$1" "$tmp/files"; then
		echo "ok: installed $1"
	else
		failed "$1 not installed; installed:"
		sed 's/^/  /' "$tmp/files"
	fi
}
if [ -n "$APXS" ]; then
	moddir=${APACHE_MODDIR_GIVEN:-$("$APXS" -q LIBEXECDIR)}
	installed "$moddir/mod_throttlekit.so"
fi
case $TK_BUILD_PHP in
yes*)
	extdir=${PHP_EXTDIR_GIVEN:-$("$PHP_CONFIG" --extension-dir)}
	installed "$extdir/throttlekit.so"
	;;
esac
installed "$TK_LIBDIR/libthrottlekit.so"
installed "$TK_PKGCONFIGDIR/throttlekit.pc"
# Only the library keeps its .la (libtool links against it); modules do
# not need one.
la=$(grep '\.la$' "$tmp/files" | grep -vx "$TK_LIBDIR/libthrottlekit.la")
[ -z "$la" ] || failed "libtool archives installed:" $la

# A static program, with only what throttlekit.pc says.  The installed
# .pc, its prefix moved to where DESTDIR put it.
if [ -n "$SAN_CFLAGS" ]; then
	# The sanitizers' runtimes do not link statically; the plain build
	# checks the .pc.
	echo "note: a sanitizer build: no static link"
elif grep -qx "$TK_LIBDIR/libthrottlekit.a" "$tmp/files"; then
	mkdir "$tmp/pc"
	sed "s|^prefix=.*|prefix=$dest$TK_PREFIX|" \
		"$dest$TK_PKGCONFIGDIR/throttlekit.pc" >"$tmp/pc/throttlekit.pc"
	case $TK_LIBDIR in "$TK_PREFIX"/*) ;; *)
		failed "libdir $TK_LIBDIR outside the prefix: not tested" ;;
	esac
	cat >"$tmp/use.c" <<'SRC'
#include <string.h>
#include <throttlekit.h>
int main(void)
{
	struct tk_limiter *l;
	struct tk_decision d;
	char why[128];

	/* Every store the build has, so that every library is linked. */
	if (tk_store_validate("redis://127.0.0.1:1", why, sizeof(why)) < 0 &&
	    strstr(why, "hiredis") == NULL)
		return 1;
	/* libpq is loaded at run time, if at all: nothing to link. */
	if (tk_store_validate("postgresql://h/db", why, sizeof(why)) < 0 &&
	    strstr(why, "libpq") == NULL)
		return 1;
	if (tk_limiter_open(&l, "gcra:1/1s", "memory", NULL) != 0)
		return 1;
	if (tk_limiter_check(l, "k", 1, 1, &d) != 0 || !d.allowed)
		return 1;
	tk_limiter_close(l);
	return 0;
}
SRC
	# libpq is dlopen()ed: a static link must not need libpq.a and its
	# dependencies' archives (Debian ships none for Kerberos or LDAP).
	if PKG_CONFIG_PATH="$tmp/pc" $PKG_CONFIG --print-requires-private \
		throttlekit | grep -q '^libpq'; then
		failed "throttlekit.pc requires libpq"
	fi
	flags=$(PKG_CONFIG_PATH="$tmp/pc" $PKG_CONFIG --static --cflags --libs throttlekit) ||
		failed "pkg-config --static --libs throttlekit"
	# shellcheck disable=SC2086
	if $CC -static -o "$tmp/use" "$tmp/use.c" $flags 2>"$tmp/cc.err" &&
		"$tmp/use"; then
		echo "ok: cc -static ... $flags"
	else
		failed "cc -static ... $flags:"
		grep -v 'statically linked applications' "$tmp/cc.err" | head -n 20
	fi
else
	echo "note: no static library installed (--disable-static): no static link"
fi

if ! $MAKE -C "$top_builddir" uninstall DESTDIR="$dest" >"$tmp/uninstall.out" 2>&1; then
	cat "$tmp/uninstall.out"
	failed "make uninstall DESTDIR=$dest"
fi
left=$(cd "$dest" && find . ! -type d)
[ -z "$left" ] || failed "make uninstall left:" $left
[ "$fails" -eq 0 ]
