#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/flood.sh BUILDDIR - memory under a flood of unique keys (what
# `make bench-flood` runs): see flood.c.  Writes bench/results/flood.txt.
set -eu

bench=$(cd "$(dirname "$0")" && pwd)
. "$bench/common.sh"
bench_setup "$@"
bench_results
bench_tool flood
