/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_sliding_log.c - sliding log decisions, by hand and against the
 * reference model.
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

static void test_sliding_log_exact(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-log:3/1s", B0);
	d = peek(&f, "k");
	assert_decision(d, true, 3, 3, B0, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, B0 + SEC, 0);
	fx_at(&f, B0 + 100 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 1, B0 + SEC, 0);
	fx_at(&f, B0 + 200 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, B0 + SEC, 0);

	/* Full: the k-th oldest stamp decides, k = count + cost - L. */
	fx_at(&f, B0 + 999 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + SEC, 1 * MS);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 3, 0, B0 + SEC, 101 * MS);
	d = chk(&f, "k", 3);
	assert_decision(d, false, 3, 0, B0 + SEC, 201 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 3, 0, B0 + SEC, 1 * MS);
	fx_at(&f, B0 + SEC - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + SEC, 1);

	/* At t + W the stamp t no longer counts. */
	fx_at(&f, B0 + SEC);
	d = peek(&f, "k");
	assert_decision(d, true, 3, 1, B0 + 1100 * MS, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, B0 + 1100 * MS, 0);
	d = peek(&f, "k");
	assert_decision(d, false, 3, 0, B0 + 1100 * MS, 100 * MS);
	/* Stamps B0+100ms, B0+200ms, B0+1s; cost 2: k = 2 -> 200 ms. */
	d = chk(&f, "k", 2);
	assert_decision(d, false, 3, 0, B0 + 1100 * MS, 200 * MS);

	/* All stamps dead: as a new key. */
	fx_at(&f, B0 + 5 * SEC);
	d = peek(&f, "k");
	assert_decision(d, true, 3, 3, B0 + 5 * SEC, 0);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 3, 1, B0 + 6 * SEC, 0);
	fx_at(&f, B0 + 5500 * MS);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 3, 1, B0 + 6 * SEC, 500 * MS);
	/* Stamps {5 s, 5 s, 5.5 s}: reset_at is still the oldest + W. */
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, B0 + 6 * SEC, 0);
	d = chk(&f, "k", 3);
	assert_decision(d, false, 3, 0, B0 + 6 * SEC, 1 * SEC);

	/* -ERANGE changes nothing. */
	assert_rc(check_rc(f.l, "k", 4, &d), -ERANGE);
	assert_rc(check_rc(f.l, "k", 0, &d), -EINVAL);
	d = peek(&f, "k");
	assert_decision(d, false, 3, 0, B0 + 6 * SEC, 500 * MS);
	fx_close(&f);
}

/* Stamps later than now (after a backward jump) are live. */
static void test_sliding_log_backward_jump(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-log:3/1s", B0 + 5 * SEC);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 3, 1, B0 + 6 * SEC, 0);
	fx_at(&f, B0 + 4500 * MS);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 3, 1, B0 + 6 * SEC, 1500 * MS);
	/* The new stamp is the oldest one now. */
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, B0 + 5500 * MS, 0);
	d = peek(&f, "k");
	assert_decision(d, false, 3, 0, B0 + 5500 * MS, 1 * SEC);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 3, 0, B0 + 5500 * MS, 1500 * MS);
	fx_at(&f, B0 + 5500 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, B0 + 6 * SEC, 0);
	fx_close(&f);
}

/*
 * The log keeps one stamp per admitted unit, so L is bounded; the bound
 * is documented in throttlekit(7).  100 must open and work exactly.
 */
static void test_sliding_log_limit_bound(void **state)
{
	struct tk_decision d;
	struct fx f;
	uint64_t k;

	(void)state;
	fx_open(&f, "sliding-log:100/1s", B0);
	for (k = 1; k <= 100; k++) {
		fx_at(&f, B0 + k * MS);
		d = chk(&f, "k", 1);
		assert_decision(d, true, 100, 100 - k, B0 + MS + SEC, 0);
	}
	d = chk(&f, "k", 1);
	assert_decision(d, false, 100, 0, B0 + MS + SEC, 901 * MS);
	d = chk(&f, "k", 100);
	assert_decision(d, false, 100, 0, B0 + MS + SEC, SEC);
	fx_at(&f, B0 + 1001 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 100, 0, B0 + 2 * MS + SEC, 0);
	fx_close(&f);

	assert_rc(open_rc("sliding-log:100000/1s"), -EINVAL);
	assert_rc(open_rc("sliding-log:18446744073709551615/1s"), -EINVAL);
	assert_rc(open_rc("sliding-log:0/1s"), -EINVAL);
	assert_rc(open_rc("sliding-log:5/0s"), -EINVAL);
}

static void test_property_sliding_log(void **state)
{
	const int nseeds = 8, nops = 4000;
	struct prop_stats ps = { 0 };
	uint64_t seed, L, W;
	int s;

	(void)state;
	for (s = 0; s < nseeds; s++) {
		seed = 0x106e0000ull + (uint64_t)s;
		L = s == 0 ? 1 : rnd_range(&seed, 1, 50);
		W = draw_window(&seed, s, 3000, 5, 100, 2 * SEC);
		run_window_seed(M_LOG, "sliding-log", L, W, seed, nops, &ps);
	}
	assert_coverage("sliding-log", &ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sliding_log_exact),
		cmocka_unit_test(test_sliding_log_backward_jump),
		cmocka_unit_test(test_sliding_log_limit_bound),
		cmocka_unit_test(test_property_sliding_log),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
