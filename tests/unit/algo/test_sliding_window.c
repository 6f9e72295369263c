/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_sliding_window.c - sliding window decisions, by hand and against
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

/*
 * sliding-window:10/1s: S = 10, w = 100 ms.  With c0 = B0 / w:
 *   B0+50ms   cost 4 -> bucket c0 = 4
 *   B0+320ms  cost 5 -> bucket c0+3 = 5
 *   B0+1050ms (c = c0+10, e = 50ms): old = bucket c0 = 4, full = 5,
 *             est = 5 + 4 * 50/100 = 7
 */
static void test_sliding_window_estimate(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-window:10/1s", B0 + 50 * MS);
	d = chk(&f, "k", 4);
	assert_decision(d, true, 10, 6, B0 + 1100 * MS, 0);
	fx_at(&f, B0 + 320 * MS);
	d = chk(&f, "k", 5);
	assert_decision(d, true, 10, 1, B0 + 1400 * MS, 0);

	fx_at(&f, B0 + 1050 * MS);
	d = peek(&f, "k");
	assert_decision(d, true, 10, 3, B0 + 2100 * MS, 0);
	/* est + cost == L allows. */
	d = chk(&f, "k", 3);
	assert_decision(d, true, 10, 0, B0 + 2100 * MS, 0);
	/*
	 * Now full = 8, old = 4, est = 10.  Cost 1: D = 1 <= old * (w-e)/w
	 * = 2, retry = ceil(D * w / old) = 25 ms.  Cost 2: D = 2, 50 ms.
	 * Cost 3: D = 3 > 2, the next bucket: (c+1)*w - now = 50 ms.
	 */
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 25 * MS);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 50 * MS);
	d = chk(&f, "k", 3);
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 50 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 25 * MS);

	/* e = 74 ms: est = 8 + 4 * 0.26 = 9.04; D = 0.04 -> 1 ms. */
	fx_at(&f, B0 + 1074 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 1 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 1 * MS);
	/* e = 75 ms: est = 9, est + 1 == L allows. */
	fx_at(&f, B0 + 1075 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 10, 0, B0 + 2100 * MS, 0);

	/* c = c0+11, e = 0: old = bucket c0+1 (none), full = 5 + 4. */
	fx_at(&f, B0 + 1100 * MS);
	d = peek(&f, "k");
	assert_decision(d, true, 10, 1, B0 + 2200 * MS, 0);

	/*
	 * c = c0+13, e = 50ms: old = bucket c0+3 = 5, full = 4, est = 6.5.
	 * Cost 4: D = 0.5 <= 2.5: retry = ceil(0.5 * w / 5) = 10 ms.
	 */
	fx_at(&f, B0 + 1350 * MS);
	d = peek(&f, "k");
	assert_decision(d, true, 10, 3, B0 + 2400 * MS, 0);
	d = chk(&f, "k", 4);
	assert_decision(d, false, 10, 3, B0 + 2400 * MS, 10 * MS);
	fx_at(&f, B0 + 1360 * MS);
	d = chk(&f, "k", 4);
	assert_decision(d, true, 10, 0, B0 + 2400 * MS, 0);
	fx_close(&f);
}

/*
 * Fractional estimates and a retry that is not a whole ms.
 *   B0        cost 3 -> bucket c0 = 3
 *   B0+500ms  cost 5 -> bucket c0+5 = 5
 *   B0+1010ms (c = c0+10, e = 10ms): full 5, old 3, est = 5 + 2.7 = 7.7
 */
static void test_sliding_window_fractions(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-window:10/1s", B0);
	d = chk(&f, "k", 3);
	assert_decision(d, true, 10, 7, B0 + 1100 * MS, 0);
	fx_at(&f, B0 + 500 * MS);
	d = chk(&f, "k", 5);
	assert_decision(d, true, 10, 2, B0 + 1600 * MS, 0);

	fx_at(&f, B0 + 1010 * MS);
	/* floor(10 - 7.7) = 2 */
	d = peek(&f, "k");
	assert_decision(d, true, 10, 2, B0 + 2100 * MS, 0);
	/* Cost 3: D = 0.7 <= 2.7: ceil(0.7 * 100ms / 3) = 23333334 ns. */
	d = chk(&f, "k", 3);
	assert_decision(d, false, 10, 2, B0 + 2100 * MS, 23333334);
	/* Cost 6: D = 3.7 > 2.7: the next bucket, 90 ms. */
	d = chk(&f, "k", 6);
	assert_decision(d, false, 10, 2, B0 + 2100 * MS, 90 * MS);
	/* Cost 2 fits: floor(10 - 7.7 - 2) = 0. */
	d = chk(&f, "k", 2);
	assert_decision(d, true, 10, 0, B0 + 2100 * MS, 0);
	/* est = 9.7: cost 1 has D = 0.7 again. */
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 23333334);
	fx_at(&f, B0 + 1010 * MS + 23333333);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 1);
	fx_at(&f, B0 + 1010 * MS + 23333334);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 10, 0, B0 + 2100 * MS, 0);
	fx_close(&f);
}

/* S defaults to 10; buckets=S sets w = W / S; W must be a multiple of S. */
static void test_sliding_window_buckets(void **state)
{
	struct tk_clock *clk;
	struct tk_limiter *a, *b;
	struct tk_decision da, db;
	struct fx f;
	uint64_t seed = 0x5b0c4e75ull, now = B0, cost;
	int i;

	(void)state;
	fx_open(&f, "sliding-window:10/1s", B0 + 250 * MS);
	da = chk(&f, "k", 1);
	assert_decision(da, true, 10, 9, B0 + 1300 * MS, 0);
	fx_close(&f);
	fx_open(&f, "sliding-window:10/1s,buckets=4", B0 + 250 * MS);
	da = chk(&f, "k", 1);
	assert_decision(da, true, 10, 9, B0 + 1500 * MS, 0);
	fx_close(&f);
	fx_open(&f, "sliding-window:10/1s,buckets=1", B0 + 250 * MS);
	da = chk(&f, "k", 4);
	assert_decision(da, true, 10, 6, B0 + 2 * SEC, 0);
	/* S = 1: at B0 + 1.25 s the old bucket weighs 0.75: est = 3. */
	fx_at(&f, B0 + 1250 * MS);
	da = peek(&f, "k");
	assert_decision(da, true, 10, 7, B0 + 3 * SEC, 0);
	fx_close(&f);

	/* The default and an explicit buckets=10 decide alike. */
	assert_rc(tk_clock_manual_new(&clk, now), 0);
	assert_rc(open_on(&a, "sliding-window:6/1s", clk), 0);
	assert_rc(open_on(&b, "sliding-window:6/1s,buckets=10", clk), 0);
	for (i = 0; i < 500; i++) {
		now += rnd_range(&seed, 0, 150 * MS);
		assert_rc(tk_clock_set(clk, now), 0);
		cost = rnd_range(&seed, 1, 3);
		assert_rc(check_rc(a, "k", cost, &da), 0);
		assert_rc(check_rc(b, "k", cost, &db), 0);
		assert_same_decision(db, da);
		assert_rc(peek_rc(a, "k", &da), 0);
		assert_rc(peek_rc(b, "k", &db), 0);
		assert_same_decision(db, da);
	}
	tk_limiter_close(a);
	tk_limiter_close(b);
	tk_clock_free(clk);

	/* Invalid: W not a multiple of S ns, S = 0, L = 0, W = 0. */
	assert_rc(open_rc("sliding-window:10/1s,buckets=3"), -EINVAL);
	assert_rc(open_rc("sliding-window:10/1000000001ns"), -EINVAL);
	assert_rc(open_rc("sliding-window:10/10ns,buckets=20"), -EINVAL);
	assert_rc(open_rc("sliding-window:10/1s,buckets=0"), -EINVAL);
	assert_rc(open_rc("sliding-window:0/1s"), -EINVAL);
	assert_rc(open_rc("sliding-window:10/0s"), -EINVAL);
	/* Valid corner cases: w = 1 ns. */
	assert_rc(open_rc("sliding-window:10/10ns"), 0);
	assert_rc(open_rc("sliding-window:10/7ns,buckets=7"), 0);
}

static void test_sliding_window_cost_range(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-window:10/1s", B0);
	assert_rc(check_rc(f.l, "k", 11, &d), -ERANGE);
	assert_rc(check_rc(f.l, "k", 0, &d), -EINVAL);
	d = chk(&f, "k", 10);
	assert_decision(d, true, 10, 0, B0 + 1100 * MS, 0);
	assert_rc(check_rc(f.l, "k", 11, &d), -ERANGE);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 1100 * MS, 100 * MS);
	fx_close(&f);
}

/*
 * Buckets stamped later than now count in full after a backward jump.
 * sliding-window:10/1s, cost 10 at B0 + 500 ms (bucket c0+5).
 */
static void test_sliding_window_backward_jump(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-window:10/1s", B0 + 500 * MS);
	d = chk(&f, "k", 10);
	assert_decision(d, true, 10, 0, B0 + 1600 * MS, 0);

	/*
	 * c = c0+4: full = 10 (tick c0+5 > c), old = 0: the next bucket.
	 * reset_at is when the later bucket leaves the window, (c0+6)w + W,
	 * not (c+1)w + W.
	 */
	fx_at(&f, B0 + 450 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 1600 * MS, 50 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 10, 0, B0 + 1600 * MS, 50 * MS);
	fx_at(&f, B0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 1600 * MS, 100 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 10, 0, B0 + 1600 * MS, 100 * MS);

	/* Forward again: bucket c0+5 is full weight up to c0+14. */
	fx_at(&f, B0 + 1500 * MS - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2500 * MS, 1);
	/* c = c0+15, e = 0: old = 10 at full weight; D = 1: 10 ms. */
	fx_at(&f, B0 + 1500 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2600 * MS, 10 * MS);
	fx_at(&f, B0 + 1510 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 10, 0, B0 + 2600 * MS, 0);
	fx_close(&f);
}

/*
 * Far back: the ring holds S + 1 buckets, and tick c0 shares its slot
 * with tick c0 + 11 (S = 10).  A request admitted at c0 while the slot
 * holds the later bucket must not make the ring forget that bucket
 * (nothing counted may be forgotten early): at the latest time the key has
 * seen, everything admitted since still counts, as it would have if the
 * clock had stood still there.
 */
static void test_sliding_window_far_backward_jump(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-window:10/1s", B0 + 1100 * MS);
	d = chk(&f, "k", 5);
	assert_decision(d, true, 10, 5, B0 + 2200 * MS, 0);
	/* c = c0: full = 5 (the later bucket), old = 0: est = 5. */
	fx_at(&f, B0);
	d = chk(&f, "k", 5);
	assert_decision(d, true, 10, 0, B0 + 2200 * MS, 0);
	/* Ten units are booked now, wherever the ring keeps them. */
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2200 * MS, 100 * MS);
	fx_at(&f, B0 + 50 * MS);
	d = peek(&f, "k");
	assert_false(d.allowed);
	assert_int_equal(d.remaining, 0);
	/* Back at the latest time: still ten, so denied. */
	fx_at(&f, B0 + 1100 * MS);
	d = chk(&f, "k", 1);
	assert_false(d.allowed);
	assert_int_equal(d.remaining, 0);
	fx_at(&f, B0 + 1199 * MS);
	d = chk(&f, "k", 1);
	assert_false(d.allowed);
	fx_close(&f);
}

/*
 * semantics.md: what no longer counts at the latest time the key has seen
 * is gone for good.  4 units at t1, 1 at B0 + 950 ms (which keeps the
 * state live), 1 at B0 + 1250 ms when t1's units count nothing any more
 * (the sliding window's tick c0 + 12 sits in another ring slot than
 * c0's), then back to t1: t1's units must not count again.
 */
static void test_dead_units_stay_dead(void **state)
{
	static const struct {
		const char *policy;
		uint64_t remaining, reset_at; /* back at t1 */
	} cases[] = {
		/* Only the later window's unit counts. */
		{ "fixed-window:5/1s", 4, B0 + 2 * SEC },
		{ "quota:5/1s", 4, B0 + 2 * SEC },
		/* The two later units count. */
		{ "sliding-window:5/1s", 3, B0 + 2300 * MS },
		{ "sliding-log:5/1s", 3, B0 + 1950 * MS },
	};
	const uint64_t t1 = B0 + 20 * MS;
	struct tk_decision d;
	struct fx f;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		fx_open(&f, cases[i].policy, t1);
		assert_true(chk(&f, "k", 4).allowed);
		fx_at(&f, B0 + 950 * MS);
		assert_true(chk(&f, "k", 1).allowed);
		fx_at(&f, B0 + 1250 * MS);
		assert_true(chk(&f, "k", 1).allowed);
		fx_at(&f, t1 + 10 * MS);
		d = peek(&f, "k");
		if (d.remaining != cases[i].remaining)
			fail_msg("%s: back at t1, remaining %llu, want %llu",
				 cases[i].policy,
				 (unsigned long long)d.remaining,
				 (unsigned long long)cases[i].remaining);
		assert_int_equal(d.reset_at, cases[i].reset_at);
		assert_true(chk(&f, "k", cases[i].remaining).allowed);
		assert_false(chk(&f, "k", 1).allowed);
		fx_close(&f);
	}
}

static void test_property_sliding_window(void **state)
{
	static const uint64_t buckets[] = { 1, 2, 3, 5, 10, 10, 16, 20, 32 };
	const int nseeds = 9, nops = 4000;
	struct prop_stats ps = { 0 };
	struct model m;
	char policy[128], dur[48];
	uint64_t seed, L, S, w, W, start;
	int s;

	(void)state;
	for (s = 0; s < nseeds; s++) {
		seed = 0x51d3e000ull + (uint64_t)s;
		L = rnd_range(&seed, 1, 30);
		S = buckets[s];
		if (s % 2 == 0)
			w = rnd_range(&seed, 1, 200) * MS;
		else
			w = rnd_range(&seed, 1, 50 * MS);
		W = S * w;
		fmt_duration(dur, sizeof(dur), W);
		if (S == 10 && s % 4 == 0)
			snprintf(policy, sizeof(policy),
				 "sliding-window:%llu/%s",
				 (unsigned long long)L, dur);
		else
			snprintf(policy, sizeof(policy),
				 "sliding-window:%llu/%s,buckets=%llu",
				 (unsigned long long)L, dur,
				 (unsigned long long)S);
		model_init(&m, M_SLIDING, L, W);
		m.S = S;
		m.w = w;
		start = B0 + rnd_range(&seed, 0, 100 * SEC);
		run_property(&m, policy, start, start - 3 * W,
			     max_u64(1, w / 2), W / 2 + 1, nops, seed, &ps);
		model_free(&m);
	}
	assert_coverage("sliding-window", &ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sliding_window_estimate),
		cmocka_unit_test(test_sliding_window_fractions),
		cmocka_unit_test(test_sliding_window_buckets),
		cmocka_unit_test(test_sliding_window_cost_range),
		cmocka_unit_test(test_sliding_window_backward_jump),
		cmocka_unit_test(test_sliding_window_far_backward_jump),
		cmocka_unit_test(test_dead_units_stay_dead),
		cmocka_unit_test(test_property_sliding_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
