#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The public header stands alone and compiles as C99, C11 and C++.
: "${srcdir:=.}"
: "${CC:=cc}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/use.c" <<'SRC'
#include <throttlekit.h>
int main(void)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_options p = tk_options_init();
	struct tk_decision d = { 0 };
	return d.allowed || o.size != sizeof(o) || p.flags ? 1 : 0;
}
SRC
# C++ before C++20 has no designated initializers, and C++20 warns about
# each field they leave out: TK_OPTIONS_INIT must be neither.
cat > "$tmp/use.cc" <<'SRC'
#include <throttlekit.h>
int main()
{
	struct tk_options o = TK_OPTIONS_INIT;
	tk_options p = tk_options_init();
	struct tk_decision d = {};
	return d.allowed || o.size != sizeof(o) || p.flags ? 1 : 0;
}
SRC
for std in c99 c11; do
	$CC -std=$std -pedantic -Wall -Wextra -Werror -I"$srcdir/include" \
		-c "$tmp/use.c" -o "$tmp/use-$std.o" || { echo "FAIL: $std"; exit 1; }
	echo "ok: compiles as $std"
done
if [ -z "$CXX_FOR_META" ]; then
	echo "SKIP: no C++ compiler (configure's CXX_FOR_META: g++ or clang++)"
	exit 77
fi
for std in c++11 c++17 c++20; do
	$CXX_FOR_META -std=$std -pedantic -Wall -Wextra -Werror \
		-I"$srcdir/include" -c "$tmp/use.cc" -o "$tmp/use-$std.o" ||
		{ echo "FAIL: $std"; exit 1; }
	nm "$tmp/use-$std.o" >/dev/null
	echo "ok: compiles as $std"
done
