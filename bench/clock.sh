#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/clock.sh BUILDDIR - what a read of the system, the coarse and the
# TSC clock costs (what `make bench-clock` runs): see clock.c.
set -eu

bench=$(cd "$(dirname "$0")" && pwd)
. "$bench/common.sh"
bench_setup "$@"
bench_results
bench_tool clock
