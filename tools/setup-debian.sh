#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Install what building and testing throttlekit needs on Debian 12, and
# nothing that is already there.  Safe to run again.
set -eu
pkgs="build-essential autoconf automake libtool pkg-config
liburcu-dev libck-dev libcmocka-dev mandoc g++ clang
clang-format spin gnuplot-nox valgrind
redis-server redis-tools libhiredis-dev
postgresql libpq-dev
apache2 apache2-dev apache2-utils wrk jq
php8.2-dev php8.2-cli php8.2-fpm php8.2-apcu php8.2-redis libfcgi-bin
curl"
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "setup-debian: installing$missing"
$SUDO apt-get update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
