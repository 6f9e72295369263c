#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# check-license.sh - throttlekit is under the BSD 2-Clause license, and
# every source file says so.
#
# Checks that
#   (a) LICENSE is the BSD 2-Clause license, word for word, under one
#       "Copyright (c) YEAR HOLDER" line;
#   (b) every source file has the SPDX line that names BSD-2-Clause in a
#       comment among its first five lines (a .phpt: on the line after the
#       "<?php" that opens its --FILE-- section), and no file has an SPDX
#       line that names another license.
#
# The source files are, in a git checkout, the files git tracks; in a tree
# unpacked from the dist tarball (make distcheck, which has no .git), the
# files under the source directories.  Of those, by name: C (.c, .h), spin
# models (.pml), shell (.sh, and in a checkout any tracked file without a
# suffix that starts with "#!"), Lua, m4, configure.ac and Makefile.am,
# PHP and phpt, gnuplot, sanitizer suppressions, pkg-config templates and
# man pages.  Data (JSON, fuzz corpora, recorded figures, images), the
# Markdown documents and generated files (php/throttlekit_arginfo.h, what
# phpize and run-tests.php leave in php/) are not sources here.
#
# Run by "make check" as a plain test (not TAP): exit 0 pass, 1 fail; it
# never skips.  It reads only from $srcdir (automake exports it; default
# ".") and writes nothing there.
#
# Usage: srcdir=/path/to/source sh tests/meta/check-license.sh

srcdir=${srcdir:-.}
me=check-license
failures=0
# Spelled in two parts so that this script's code does not count as a tag.
tag=SPDX-License-Identifier
want="$tag: BSD-2-Clause"

say()
{
	printf '%s: %s\n' "$me" "$*"
}

fail()
{
	printf '%s: FAIL: %s\n' "$me" "$*"
	failures=$((failures + 1))
}

top=$(cd "$srcdir" && pwd -P) || {
	fail "cannot enter $srcdir"
	exit 1
}
say "srcdir: $top"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# ---------------------------------------------------------------------------
# (a) LICENSE

say "(a) LICENSE is the BSD 2-Clause license"
cat >"$tmp/body" <<'EOF'
All rights reserved.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice, this
   list of conditions and the following disclaimer.

2. Redistributions in binary form must reproduce the above copyright notice,
   this list of conditions and the following disclaimer in the documentation
   and/or other materials provided with the distribution.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE
FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR
SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER
CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY,
OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
EOF
lic=$top/LICENSE
if [ ! -r "$lic" ]; then
	fail "no $lic"
else
	if [ "$(sed -n 1p "$lic")" != "BSD 2-Clause License" ] ||
		[ -n "$(sed -n 2p "$lic")" ]; then
		fail "LICENSE does not open with \"BSD 2-Clause License\" and a blank line"
	fi
	if ! sed -n 3p "$lic" |
		grep -Eq '^Copyright \(c\) [0-9]{4}(-[0-9]{4})? [^ ].*$'; then
		fail "line 3 of LICENSE is not \"Copyright (c) YEAR HOLDER\""
	fi
	sed 1,3d "$lic" >"$tmp/have"
	if diff -u "$tmp/body" "$tmp/have" >"$tmp/diff"; then
		say "  ok: $(sed -n 3p "$lic")"
	else
		fail "the text of LICENSE is not the BSD 2-Clause license's:"
		sed 's/^/    /' "$tmp/diff"
	fi
fi

# ---------------------------------------------------------------------------
# (b) The SPDX line in every source file

top_real=
if command -v git >/dev/null 2>&1; then
	top_real=$(git -C "$top" rev-parse --show-toplevel 2>/dev/null) &&
		top_real=$(cd "$top_real" && pwd -P)
fi
if [ -n "$top_real" ] && [ "$top_real" = "$top" ]; then
	mode=git
	git -C "$top" ls-files >"$tmp/files" || {
		fail "git ls-files failed in $top"
		exit 1
	}
	git -C "$top" ls-files --error-unmatch LICENSE >/dev/null 2>&1 ||
		fail "LICENSE is not tracked by git"
else
	# No checkout of its own (a tarball's tree, perhaps inside another
	# checkout): the directories the sources live in.
	mode=tree
	(
		cd "$top" &&
			for f in configure.ac Makefile.am; do
				[ -f "$f" ] && printf '%s\n' "$f"
			done &&
			find apache bench include lib man php shm tests tools \
				\( -name .libs -o -name .deps \) -prune -o \
				-type f -print 2>/dev/null
	) | sort >"$tmp/files"
fi
say "(b) $want in every source file ($mode: $(wc -l <"$tmp/files" | tr -d ' ') files)"

checked=0
while IFS= read -r f; do
	case $f in
	# Generated: gen_stub.php's header; what phpize and run-tests.php
	# leave in php/.
	php/throttlekit_arginfo.h | php/build/* | php/modules/* | \
		php/acinclude.m4 | php/configure.ac | php/config.h | \
		php/run-tests.php) continue ;;
	php/tests/*/*) ;;
	php/tests/*.php | php/tests/*.sh.orig) continue ;;
	# dh_php's list of the package's ini files, not PHP: a line per
	# file, no comments.
	debian/php-throttlekit.php) continue ;;
	esac
	case ${f##*/} in
	*.c | *.h | *.pml | *.sh | *.lua | *.m4 | configure.ac | Makefile.am | \
		*.php | *.phpt | *.gp | *.supp | *.pc.in | *.[1-8]) ;;
	*.*) continue ;;
	*)
		# A script without a suffix (.ci/run); only in a checkout,
		# where a build leaves no libtool wrapper scripts behind.
		[ "$mode" = git ] && [ "$(head -c 2 "$top/$f")" = "#!" ] ||
			continue
		;;
	esac
	checked=$((checked + 1))
	file=$top/$f
	if [ ! -r "$file" ]; then
		fail "$f: cannot read it"
		continue
	fi
	case $f in
	*.phpt)
		awk -v want="$want" '
			state == 2 { found = index($0, want) > 0; exit }
			state == 1 { if ($0 == "<?php") state = 2; else exit }
			$0 == "--FILE--" { state = 1 }
			END { exit found ? 0 : 1 }
		' "$file" ||
			fail "$f: no \"// $want\" after the <?php of --FILE--"
		;;
	*)
		head -n 5 "$file" | grep -qF "$want" ||
			fail "$f: no \"$want\" among its first 5 lines"
		;;
	esac
	if grep -F "$tag:" "$file" | grep -vqF "$want"; then
		fail "$f: names a license other than BSD-2-Clause:"
		grep -nF "$tag:" "$file" | grep -vF "$want" | sed 's/^/    /'
	fi
done <"$tmp/files"
say "    $checked source files checked"
# A listing that went wrong must not pass for a clean tree.
if [ "$checked" -lt 200 ]; then
	fail "only $checked source files found in $top"
fi

# ---------------------------------------------------------------------------

if [ "$failures" -gt 0 ]; then
	say "$failures failure(s)"
	exit 1
fi
say "all checks passed"
exit 0
