# SPDX-License-Identifier: BSD-2-Clause
# example.sh - build a documented C example against this build's header
# and library, and compare what it prints with what the text shows.
# Sourced by check-man.sh (the man pages' examples) and check-readme.sh
# (the README's); both run from the build directory with $srcdir and
# $top_builddir set by "make check", so VPATH builds and distcheck work.

# example_libdir: the absolute directory of this build's
# libthrottlekit.so; false if the library is not built.
example_libdir()
{
	_so=${top_builddir:-.}/lib/.libs/libthrottlekit.so
	[ -f "$_so" ] || return 1
	(cd "${_so%/*}" && pwd)
}

# example_build SRC EXE: compile and link SRC into EXE against the public
# header of $srcdir and the library of $top_builddir (found at run time
# through an rpath), with $EXAMPLE_CFLAGS; the compiler's messages go to
# EXE.cc.
example_build()
{
	_lib=$(example_libdir) || {
		echo "no libthrottlekit.so in ${top_builddir:-.}/lib/.libs" >"$2.cc"
		return 1
	}
	# shellcheck disable=SC2086 # CC and EXAMPLE_CFLAGS are word lists
	${CC:-cc} ${EXAMPLE_CFLAGS:-} -o "$2" "$1" -I"${srcdir:-.}/include" -L"$_lib" \
		-Wl,-rpath,"$_lib" -lthrottlekit 2>"$2.cc"
}

# example_same WANT GOT: GOT's lines are WANT's, where "..." in a line of
# WANT stands for any text (times, pids: what changes from run to run).
example_same()
{
	awk '
		NR == FNR { want[++n] = $0; next }
		{ got[++m] = $0 }
		function like(w, g,    k, piece, np, i, at) {
			if (index(w, "...") == 0)
				return w == g
			np = split(w, piece, /\.\.\./)
			if (substr(g, 1, length(piece[1])) != piece[1])
				return 0
			g = substr(g, length(piece[1]) + 1)
			for (i = 2; i < np; i++) {
				at = index(g, piece[i])
				if (at == 0)
					return 0
				g = substr(g, at + length(piece[i]))
			}
			k = length(piece[np])
			return length(g) >= k && substr(g, length(g) - k + 1) == piece[np]
		}
		END {
			if (n != m)
				exit 1
			for (i = 1; i <= n; i++)
				if (!like(want[i], got[i]))
					exit 1
		}
	' "$1" "$2"
}

# example_diff WANT GOT: the difference, indented (- text, + run).
example_diff()
{
	diff -u "$1" "$2" | tail -n +3 | sed 's/^/    /'
}
