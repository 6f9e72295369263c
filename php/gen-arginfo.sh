#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Regenerate throttlekit_arginfo.h from throttlekit.stub.php with PHP's own
# gen_stub.php, offline: gen_stub.php would download PHP-Parser, so it runs
# from a copy beside Debian's php-parser package (apt-get install
# php-parser).  The generated header is committed; builds never run this.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
gen=$(php-config --extension-dir)/build/gen_stub.php
[ -f "$gen" ] || { echo "gen-arginfo: no $gen (php8.2-dev)" >&2; exit 1; }
[ -d /usr/share/php/PhpParser ] ||
	{ echo "gen-arginfo: no /usr/share/php/PhpParser (php-parser)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$gen" "$tmp/gen_stub.php"
# gen_stub.php looks for PHP-Parser-4.15.1/lib/PhpParser beside itself.
mkdir -p "$tmp/PHP-Parser-4.15.1/lib"
ln -s /usr/share/php/PhpParser "$tmp/PHP-Parser-4.15.1/lib/PhpParser"
php "$tmp/gen_stub.php" -f "$here/throttlekit.stub.php"
