#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# check-man.sh - meta test for the hand-written man pages in man/.
#
# Checks that
#   (a) every function the public header exports (TK_API) has man/NAME.3,
#       and that NAME appears in the NAME section of the page that documents
#       it (directly or through a ".so" alias), so whatis/apropos find it;
#   (b) every page has a NAME section; a ".so" alias page must point at an
#       existing, real page of the same section instead;
#   (c) if mandoc(1) is installed ($MANDOC, as configure found it, or
#       mandoc in $PATH), "mandoc -Tlint -Wwarning" reports nothing (no
#       WARNING, ERROR or worse) for any page that is not a ".so" alias;
#   (d) the examples of tk_zone_create(3) and tk_strategy_register(3),
#       built against the library of $top_builddir and run, print what
#       their pages show (in a temporary directory);
#   (e) throttlekit(7) and docs/shm-protocol.md name the zone layout
#       version shm/layout.h defines.
#
# Run by "make check" as a plain test (not TAP): exit 0 pass, 1 fail.  It
# never skips (77): without mandoc it still runs (a) and (b).  The working
# directory is the build directory and $srcdir the source directory
# (automake exports it; default "."), so the script works in VPATH builds
# such as "make distcheck": it reads only from $srcdir and writes nothing.
#
# Usage: srcdir=/path/to/source sh tests/meta/check-man.sh

srcdir=${srcdir:-.}
header=$srcdir/include/throttlekit.h
mandir=$srcdir/man
me=check-man
failures=0

say()
{
	printf '%s: %s\n' "$me" "$*"
}

fail()
{
	printf '%s: FAIL: %s\n' "$me" "$*"
	failures=$((failures + 1))
}

# is_alias FILE: true if FILE is a ".so" alias page, that is, its only line
# other than comments and blank lines is a ".so" request.  Prints the
# target as written after ".so".
is_alias()
{
	awk '
		/^\.\\"/ || /^'\''\\"/ || /^[ \t]*$/ { next }
		{ n++; if (n == 1 && $1 == ".so" && NF == 2) target = $2 }
		END {
			if (n == 1 && target != "") { print target; exit 0 }
			exit 1
		}
	' "$1"
}

# alias_file TARGET: the file in $mandir that a ".so" target names.
# Installed pages say ".so man3/page.3"; in the source tree all pages sit
# flat in man/, so only the last path component counts.
alias_file()
{
	printf '%s/%s\n' "$mandir" "${1##*/}"
}

# has_name_section FILE
has_name_section()
{
	grep -Eq '^\.SH[ 	]+"?NAME"?[ 	]*$' "$1"
}

# name_section_mentions FILE WORD: WORD appears as a whole word in the
# text of FILE's NAME section.
name_section_mentions()
{
	awk -v word="$2" '
		/^\.SH[ \t]/ {
			if (in_name) exit
			if ($0 ~ /^\.SH[ \t]+"?NAME"?[ \t]*$/) { in_name = 1; next }
		}
		in_name {
			line = $0
			gsub(/\\-/, " ", line)      # roff minus
			gsub(/\\[&c]/, "", line)    # zero-width escapes
			gsub(/[^A-Za-z0-9_]+/, " ", line)
			n = split(line, w, " ")
			for (i = 1; i <= n; i++)
				if (w[i] == word) { found = 1; exit }
		}
		END { exit found ? 0 : 1 }
	' "$1"
}

# exported_functions HEADER: print the name of every function declared with
# TK_API, one per line.  The whole header is read at once, so a prototype
# may span any number of lines (the name may sit on the TK_API line or on a
# later one).  Comments and preprocessor lines (with their continuation
# lines) are dropped first, so "#define TK_API ..." and comments that
# mention TK_API do not count.
exported_functions()
{
	awk '
		{ text = text $0 "\n" }
		END {
			# 1. Strip /* */ and // comments.
			out = ""
			while (length(text) > 0) {
				a = index(text, "/*")
				b = index(text, "//")
				if (a == 0 && b == 0) {
					out = out text
					break
				}
				if (b == 0 || (a > 0 && a < b)) {
					out = out substr(text, 1, a - 1) " "
					text = substr(text, a + 2)
					e = index(text, "*/")
					text = e ? substr(text, e + 2) : ""
				} else {
					out = out substr(text, 1, b - 1) " "
					text = substr(text, b + 2)
					e = index(text, "\n")
					text = e ? substr(text, e) : ""
				}
			}

			# 2. Drop preprocessor lines and their continuations.
			nl = split(out, lines, "\n")
			code = ""
			cont = 0
			for (i = 1; i <= nl; i++) {
				l = lines[i]
				if (cont || l ~ /^[ \t]*#/) {
					cont = (l ~ /\\[ \t]*$/)
					continue
				}
				code = code " " l
			}

			# 3. Split into declarations; keep those starting with
			#    TK_API and print the declarator name before the
			#    parameter list.
			gsub(/[ \t\r\n]+/, " ", code)
			nd = split(code, decl, /[;{}]/)
			for (i = 1; i <= nd; i++) {
				d = decl[i]
				sub(/^ +/, "", d)
				if (d !~ /^TK_API /)
					continue
				d = substr(d, 8)
				gsub(/__attribute__ *\(\([^)]*\)\)/, " ", d)
				p = index(d, "(")
				if (p == 0)
					continue        # not a function
				head = substr(d, 1, p - 1)
				tail = substr(d, p + 1)
				if (tail ~ /^ *\*/) {
					# Function returning a function
					# pointer: T (*name(args))(args).
					sub(/^ *\** */, "", tail)
					if (match(tail, /^[A-Za-z_][A-Za-z0-9_]*/))
						print substr(tail, 1, RLENGTH)
					else
						print "?" d
					continue
				}
				sub(/ +$/, "", head)
				if (match(head, /[A-Za-z_][A-Za-z0-9_]*$/))
					print substr(head, RSTART, RLENGTH)
				else
					print "?" d
			}
		}
	' "$1"
}

say "srcdir: $srcdir"

if [ ! -r "$header" ]; then
	fail "cannot read $header"
	exit 1
fi
if [ ! -d "$mandir" ]; then
	fail "no man page directory $mandir"
	exit 1
fi

# ---------------------------------------------------------------------------
# (a) Every exported function has a page.

funcs=$(exported_functions "$header" | sort -u)
if [ -z "$funcs" ]; then
	fail "found no TK_API functions in $header (parser broken?)"
	exit 1
fi
nfuncs=$(printf '%s\n' "$funcs" | wc -l | tr -d ' ')
say "(a) $nfuncs functions exported by $header need man/NAME.3"

for fn in $funcs; do
	case $fn in
	\?*)
		fail "cannot find the function name in TK_API declaration: ${fn#?}"
		continue
		;;
	esac
	page=$mandir/$fn.3
	if [ ! -f "$page" ]; then
		fail "$fn has no man page (expected $page)"
		continue
	fi
	doc=$page
	if target=$(is_alias "$page"); then
		doc=$(alias_file "$target")
		if [ ! -f "$doc" ]; then
			# Reported again, in detail, by check (b).
			fail "$fn: man/$fn.3 is an alias of missing $target"
			continue
		fi
		if is_alias "$doc" >/dev/null; then
			fail "$fn: man/$fn.3 is an alias of an alias ($target)"
			continue
		fi
	fi
	if name_section_mentions "$doc" "$fn"; then
		say "  ok: $fn -> ${doc#"$srcdir"/}"
	else
		fail "$fn is not listed in the NAME section of $doc"
	fi
done

# ---------------------------------------------------------------------------
# (b) Every page has a NAME section; aliases point at a real page.

say "(b) every page in $mandir has a NAME section or is a .so alias"
pages=
npages=0
for f in "$mandir"/*; do
	[ -f "$f" ] || continue
	base=${f##*/}
	case $base in
	*.[1-9]|*.[1-9][a-z]*) ;;
	*) continue ;;
	esac
	npages=$((npages + 1))
	if target=$(is_alias "$f"); then
		file=$(alias_file "$target")
		dir=${target%/*}
		if [ ! -f "$file" ]; then
			fail "$base: .so target $target does not exist ($file)"
		elif is_alias "$file" >/dev/null; then
			fail "$base: .so target $target is itself an alias"
		elif [ "$dir" != "$target" ] && [ "$dir" != "man${base##*.}" ]; then
			fail "$base: .so target $target is not in man${base##*.}/"
		elif ! has_name_section "$file"; then
			fail "$base: .so target $target has no NAME section"
		else
			say "  ok: $base is an alias of $target"
		fi
	else
		pages="$pages $base"
		if has_name_section "$f"; then
			say "  ok: $base has a NAME section"
		else
			fail "$base has no NAME section"
		fi
	fi
done
say "    $npages pages checked"
if [ "$npages" -eq 0 ]; then
	fail "no man pages in $mandir"
fi

# ---------------------------------------------------------------------------
# (c) mandoc -Tlint, on real pages only.

# configure exports MANDOC (empty if it found none); else look in PATH.
mandoc=${MANDOC:-mandoc}
if ! command -v "$mandoc" >/dev/null 2>&1; then
	mandoc=mandoc
fi
if command -v "$mandoc" >/dev/null 2>&1; then
	say "(c) $mandoc -Tlint -Wwarning on every page that is not an alias"
	for base in $pages; do
		out=$("$mandoc" -Tlint -Wwarning "$mandir/$base" 2>&1)
		st=$?
		if [ -n "$out" ] || [ "$st" -ge 2 ]; then
			fail "$base: mandoc -Tlint -Wwarning (exit $st):"
			printf '%s\n' "$out" | sed 's/^/    /'
		else
			say "  ok: $base lints clean"
		fi
	done
else
	say "(c) mandoc not installed: skipping the lint check"
fi

# ---------------------------------------------------------------------------
# (d) tk_zone_create(3) and tk_strategy_register(3): each example, built
#     and run, prints what the page shows after it.

. "$srcdir/tests/meta/example.sh"
# run_example NAME: the example of man/NAME.3.
run_example()
{
	page=$mandir/$1.3
	say "(d) the example of $1(3) prints what the page shows"
	tmp=$(mktemp -d) || exit 1
	# roff escapes in examples: \e is a backslash, \- a minus.
	unroff() { sed -e 's/\\-/-/g' -e 's/\\e/\\/g'; }
	awk '/^\.SH EXAMPLES/ { f = 1 } f && /^\.EX/ { x = 1; next }
		x && /^\.EE/ { exit } x' "$page" | unroff >"$tmp/ex.c"
	awk '/^Built and run/ { f = 1 } f && /^\.EX/ { x = 1; next }
		x && /^\.EE/ { exit } x && !/^\$ /' "$page" | unroff >"$tmp/want"
	if ! example_build "$tmp/ex.c" "$tmp/ex"; then
		fail "$1.3: the example does not build:"
		sed 's/^/    /' "$tmp/ex.cc"
	elif ! (mkdir "$tmp/zones" && TK_SHM_DIR=$tmp/zones "$tmp/ex") \
		>"$tmp/got" 2>&1 || ! cmp -s "$tmp/want" "$tmp/got"; then
		fail "$1.3: the example's output (- page, + run):"
		example_diff "$tmp/want" "$tmp/got"
	else
		say "  ok: $(tail -n 1 "$tmp/got")"
	fi
	rm -rf "$tmp"
}
if [ -n "$SAN_CFLAGS" ]; then
	# The pages' text is the same in every build; the plain one runs it.
	say "(d) a sanitizer build: the examples are not run"
elif example_libdir >/dev/null; then
	run_example tk_zone_create
	run_example tk_strategy_register
else
	say "(d) no shared library in ${top_builddir:-.}/lib/.libs: the examples are not run"
fi

# ---------------------------------------------------------------------------
# (e) the zone layout version throttlekit(7) and docs/shm-protocol.md name
#     is shm/layout.h's TKZ_VERSION: an upgrade across it takes a zone
#     made again, and the pages say which release that is.

layout=$(sed -n 's/^#define TKZ_VERSION \([0-9][0-9]*\).*/\1/p' \
	"$srcdir/shm/layout.h")
say "(e) the pages name zone layout version ${layout:-?}"
man7=$(tr '\n' ' ' <"$mandir/throttlekit.7" |
	sed -n 's/.*layout version (\([0-9][0-9]*\) in this release).*/\1/p')
proto=$(sed -n 's/.*| layout version (\([0-9][0-9]*\);.*/\1/p' \
	"$srcdir/docs/shm-protocol.md")
if [ -z "$layout" ]; then
	fail "shm/layout.h: no TKZ_VERSION"
elif [ "$man7" != "$layout" ]; then
	fail "throttlekit.7 names layout version '${man7}', layout.h $layout"
elif [ "$proto" != "$layout" ]; then
	fail "docs/shm-protocol.md names layout version '${proto}', layout.h $layout"
fi

# ---------------------------------------------------------------------------

if [ "$failures" -gt 0 ]; then
	say "$failures failure(s)"
	exit 1
fi
say "all checks passed"
exit 0
