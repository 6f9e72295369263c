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
	struct tk_decision d = { 0 };
	(void)o;
	return d.allowed ? 1 : 0;
}
SRC
cat > "$tmp/use.cc" <<'SRC'
#include <throttlekit.h>
int main()
{
	struct tk_decision d = {};
	return d.allowed ? 1 : 0;
}
SRC
for std in c99 c11; do
	$CC -std=$std -pedantic -Wall -Wextra -Werror -I"$srcdir/include" \
		-c "$tmp/use.c" -o "$tmp/use-$std.o" || { echo "FAIL: $std"; exit 1; }
	echo "ok: compiles as $std"
done
if [ -n "$CXX_FOR_META" ]; then
	$CXX_FOR_META -std=c++11 -pedantic -Wall -Wextra -Werror \
		-I"$srcdir/include" -c "$tmp/use.cc" -o "$tmp/use-cxx.o" ||
		{ echo "FAIL: C++"; exit 1; }
	nm "$tmp/use-cxx.o" >/dev/null
	echo "ok: compiles as C++11"
else
	echo "note: no C++ compiler, C++ check skipped"
fi
