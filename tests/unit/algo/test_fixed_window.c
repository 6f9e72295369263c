/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_fixed_window.c - fixed window decisions, by hand and against
 * the reference model.
 *
 * Expectations come from shared/design/semantics.md, never from the
 * library's code (see algo-kit.h for the details it leaves open).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <throttlekit.h>

#include "algo-kit.h"

static void test_fixed_window_basics(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "fixed-window:5/1s", B0 + 300 * MS);
	d = peek(&f, "k");
	assert_decision(d, true, 5, 5, B0 + SEC, 0);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 5, 3, B0 + SEC, 0);
	/* count + cost == L allows. */
	d = chk(&f, "k", 3);
	assert_decision(d, true, 5, 0, B0 + SEC, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 5, 0, B0 + SEC, 700 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 5, 0, B0 + SEC, 700 * MS);
	fx_at(&f, B0 + SEC - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 5, 0, B0 + SEC, 1);

	/* Exactly ws + W starts a fresh window. */
	fx_at(&f, B0 + SEC);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 5, 4, B0 + 2 * SEC, 0);
	d = chk(&f, "k", 3);
	assert_decision(d, true, 5, 1, B0 + 2 * SEC, 0);
	/* A denial consumes nothing: 2 > 1 is denied, then 1 passes. */
	d = chk(&f, "k", 2);
	assert_decision(d, false, 5, 1, B0 + 2 * SEC, SEC);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 5, 1, B0 + 2 * SEC, SEC);
	d = peek(&f, "k");
	assert_decision(d, true, 5, 1, B0 + 2 * SEC, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 5, 0, B0 + 2 * SEC, 0);
	/* Another key has its own window. */
	d = chk(&f, "other", 5);
	assert_decision(d, true, 5, 0, B0 + 2 * SEC, 0);
	/* A whole empty window later, the count starts over. */
	fx_at(&f, B0 + 3 * SEC + 5);
	d = chk(&f, "k", 5);
	assert_decision(d, true, 5, 0, B0 + 4 * SEC, 0);
	fx_close(&f);
}

/* Windows are aligned on the epoch, not on the first request. */
static void test_fixed_window_epoch_aligned(void **state)
{
	/* W = 13 s + 7 ns; floor(now / W) * W worked out exactly. */
	const uint64_t now = B0 + 123456789;
	const uint64_t ws = 1699999990915384610ull;
	const uint64_t W = 13000000007ull;
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "fixed-window:2/13000000007ns", now);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 2, 0, ws + W, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 2, 0, ws + W, 3791927828ull);
	fx_at(&f, ws + W - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 2, 0, ws + W, 1);
	fx_at(&f, ws + W);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 2, 1, ws + 2 * W, 0);
	fx_close(&f);

	/* 1700000005 s with W = 7 s: the window is [1700000001, ...008). */
	fx_open(&f, "fixed-window:3/7s", AT(1700000005));
	d = chk(&f, "k", 3);
	assert_decision(d, true, 3, 0, AT(1700000008), 0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, AT(1700000008), 3 * SEC);
	fx_at(&f, AT(1700000008));
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, AT(1700000015), 0);
	fx_close(&f);
}

static void test_fixed_window_cost_range(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "fixed-window:5/1s", B0);
	assert_rc(check_rc(f.l, "k", 6, &d), -ERANGE);
	assert_rc(check_rc(f.l, "k", UINT64_MAX, &d), -ERANGE);
	assert_rc(check_rc(f.l, "k", 0, &d), -EINVAL);
	/* Nothing was consumed. */
	d = peek(&f, "k");
	assert_decision(d, true, 5, 5, B0 + SEC, 0);
	d = chk(&f, "k", 5);
	assert_decision(d, true, 5, 0, B0 + SEC, 0);
	/* -ERANGE, not a denial, even on a full window. */
	assert_rc(check_rc(f.l, "k", 6, &d), -ERANGE);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 5, 0, B0 + SEC, SEC);
	fx_close(&f);
}

/*
 * A window stamped later than now still counts: start' = max(ws,
 * state.start).  Fill the window at t, go back one window: still denied,
 * with the later window's reset time.
 */
static void test_fixed_window_backward_jump(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "fixed-window:3/1s", B0 + 1500 * MS);
	d = chk(&f, "k", 3);
	assert_decision(d, true, 3, 0, B0 + 2 * SEC, 0);

	fx_at(&f, B0 + 500 * MS); /* one window back */
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + 2 * SEC, 1500 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 3, 0, B0 + 2 * SEC, 1500 * MS);
	fx_at(&f, B0 - 3 * SEC); /* several windows back */
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + 2 * SEC, 5 * SEC);
	fx_at(&f, B0 + 1200 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + 2 * SEC, 800 * MS);

	fx_at(&f, B0 + 2 * SEC);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, B0 + 3 * SEC, 0);
	/* Back into the earlier window: the later one (count 1) counts. */
	fx_at(&f, B0 + 1999 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 1, B0 + 3 * SEC, 0);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 3, 1, B0 + 3 * SEC, 1001 * MS);
	fx_at(&f, B0 + 2500 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, B0 + 3 * SEC, 0);
	fx_close(&f);
}

static void test_property_fixed_window(void **state)
{
	const int nseeds = 8, nops = 4000;
	struct prop_stats ps = { 0 };
	uint64_t seed, L, W;
	int s;

	(void)state;
	for (s = 0; s < nseeds; s++) {
		seed = 0xf1c3d000ull + (uint64_t)s;
		L = rnd_range(&seed, 1, 20);
		W = draw_window(&seed, s, 2000, 10, 1000, 5 * SEC);
		run_window_seed(M_FIXED, "fixed-window", L, W, seed, nops, &ps);
	}
	assert_coverage("fixed-window", &ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed_window_basics),
		cmocka_unit_test(test_fixed_window_epoch_aligned),
		cmocka_unit_test(test_fixed_window_cost_range),
		cmocka_unit_test(test_fixed_window_backward_jump),
		cmocka_unit_test(test_property_fixed_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
