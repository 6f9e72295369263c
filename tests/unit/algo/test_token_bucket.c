/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_token_bucket.c - token bucket decisions: literal numbers, and
 * equality with GCRA on generated timelines.
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

/* A few literal numbers first: capacity 5, one token per 100 ms. */
static void test_token_bucket_literal(void **state)
{
	struct tk_decision d;
	struct fx f;
	uint64_t k;

	(void)state;
	fx_open(&f, "token-bucket:capacity=5,refill=10/1s", B0);
	d = peek(&f, "k");
	assert_decision(d, true, 5, 5, B0, 0);
	for (k = 1; k <= 5; k++) {
		d = chk(&f, "k", 1);
		assert_decision(d, true, 5, 5 - k, B0 + k * 100 * MS, 0);
	}
	d = chk(&f, "k", 1);
	assert_decision(d, false, 5, 0, B0 + 500 * MS, 100 * MS);
	fx_at(&f, B0 + 100 * MS - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 5, 0, B0 + 500 * MS, 1);
	fx_at(&f, B0 + 100 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 5, 0, B0 + 600 * MS, 0);
	/* A cost above the capacity can never pass. */
	assert_rc(check_rc(f.l, "k", 6, &d), -ERANGE);
	assert_rc(check_rc(f.l, "k", 0, &d), -EINVAL);
	fx_close(&f);
}

/*
 * token-bucket:capacity=C,refill=R/P and gcra:R/P,burst=C side by side on
 * one clock, over random timelines with several keys, backward jumps,
 * peeks, resets and too-large costs: every return code and every field
 * must be identical.  Before a backward jump, keys whose state had expired
 * at a time the stores have seen since it was written are reset in both
 * (a store may or may not have dropped such state).
 */
static void test_token_bucket_matches_gcra(void **state)
{
	enum { NK = 3 };
	static const char *const keys[NK] = { "a", "bb", "ccc" };
	const int nseeds = 10, nops = 3000;
	struct tk_clock *clk;
	struct tk_limiter *tb, *gc;
	struct tk_decision dt, dg;
	char ptb[128], pgc[128];
	uint64_t seed, C, R, P, T, now, r, cost, back;
	uint64_t tat[NK], seen[NK];
	bool has[NK];
	uint64_t checks = 0, denied = 0;
	int s, i, j, kk, rct, rcg;
	const char *what;

	(void)state;
	for (s = 0; s < nseeds; s++) {
		seed = 0x70cb0000ull + (uint64_t)s;
		R = rnd_range(&seed, 1, 50);
		C = rnd_range(&seed, 1, 50);
		if (s % 3 == 0)
			P = rnd_range(&seed, 1, 5000) * MS;
		else
			P = rnd_range(&seed, R, 10 * SEC);
		T = P / R;
		snprintf(ptb, sizeof(ptb),
			 "token-bucket:capacity=%llu,refill=%llu/%lluns",
			 (unsigned long long)C, (unsigned long long)R,
			 (unsigned long long)P);
		snprintf(pgc, sizeof(pgc), "gcra:%llu/%lluns,burst=%llu",
			 (unsigned long long)R, (unsigned long long)P,
			 (unsigned long long)C);
		now = B0 + rnd_range(&seed, 0, 100 * SEC);
		assert_rc(tk_clock_manual_new(&clk, now), 0);
		if ((rct = open_on(&tb, ptb, clk)) != 0)
			fail_msg("open(\"%s\") = %d (%s)", ptb, rct,
				 tk_strerrorname(rct));
		assert_rc(open_on(&gc, pgc, clk), 0);
		memset(has, 0, sizeof(has));
		memset(seen, 0, sizeof(seen));
		memset(tat, 0, sizeof(tat));

		for (i = 0; i < nops; i++) {
			r = rnd_range(&seed, 0, 99);
			if (r < 20)
				; /* the same instant */
			else if (r < 55)
				now += rnd_range(&seed, 1, 2 * T);
			else if (r < 65)
				now += T * rnd_range(&seed, 1, 3);
			else if (r < 80)
				now += rnd_range(&seed, 1, T * C + T);
			else if (r < 84)
				now += rnd_range(&seed, T * C, 3 * T * C + 1);
			else if (r < 94) {
				back = rnd_range(&seed, 1, T * (C + 2));
				back = min_u64(back, now - (B0 - 10 * SEC));
				for (kk = 0; kk < NK; kk++) {
					if (!has[kk] || tat[kk] > seen[kk])
						continue;
					assert_rc(tk_limiter_reset(
							  tb, keys[kk],
							  strlen(keys[kk])),
						  0);
					assert_rc(tk_limiter_reset(
							  gc, keys[kk],
							  strlen(keys[kk])),
						  0);
					has[kk] = false;
				}
				now -= back;
			}
			assert_rc(tk_clock_set(clk, now), 0);
			for (kk = 0; kk < NK; kk++)
				seen[kk] = max_u64(seen[kk], now);

			kk = (int)rnd_range(&seed, 0, NK - 1);
			r = rnd_range(&seed, 0, 99);
			cost = 0;
			if (r < 75) {
				what = "check";
				j = (int)rnd_range(&seed, 0, 99);
				cost = j < 60 ? 1
				       : j < 97
					       ? rnd_range(&seed, 1, C)
					       : rnd_range(&seed, C + 1, C + 3);
				rct = check_rc(tb, keys[kk], cost, &dt);
				rcg = check_rc(gc, keys[kk], cost, &dg);
			} else if (r < 95) {
				what = "peek";
				rct = peek_rc(tb, keys[kk], &dt);
				rcg = peek_rc(gc, keys[kk], &dg);
			} else {
				what = "reset";
				rct = tk_limiter_reset(tb, keys[kk],
						       strlen(keys[kk]));
				rcg = tk_limiter_reset(gc, keys[kk],
						       strlen(keys[kk]));
				has[kk] = false;
				dt = dg;
			}
			if (rct != rcg)
				fail_msg("seed %d [%s] vs [%s] op %d %s key %s "
					 "cost %llu at B0%+lld: rc %d (%s), "
					 "gcra "
					 "%d (%s)",
					 s, ptb, pgc, i, what, keys[kk],
					 (unsigned long long)cost,
					 (long long)(now - B0), rct,
					 tk_strerrorname(rct), rcg,
					 tk_strerrorname(rcg));
			if (rct != 0)
				continue;
			if (!same_decision(&dt, &dg))
				fail_msg("seed %d [%s] vs [%s] op %d %s key %s "
					 "cost %llu at B0%+lld: token bucket "
					 "{%d, %llu, %llu, %llu, %llu}, gcra "
					 "{%d, %llu, %llu, %llu, %llu}",
					 s, ptb, pgc, i, what, keys[kk],
					 (unsigned long long)cost,
					 (long long)(now - B0), dt.allowed,
					 (unsigned long long)dt.limit,
					 (unsigned long long)dt.remaining,
					 (unsigned long long)dt.reset_at,
					 (unsigned long long)dt.retry_after,
					 dg.allowed,
					 (unsigned long long)dg.limit,
					 (unsigned long long)dg.remaining,
					 (unsigned long long)dg.reset_at,
					 (unsigned long long)dg.retry_after);
			if (strcmp(what, "check") == 0) {
				assert_int_equal(dt.limit, C);
				checks++;
				if (dt.allowed) {
					has[kk] = true;
					tat[kk] = dt.reset_at;
					seen[kk] = now;
				} else {
					denied++;
				}
			}
		}
		tk_limiter_close(tb);
		tk_limiter_close(gc);
		tk_clock_free(clk);
	}
	assert_true(denied > checks / 20 && denied < checks * 19 / 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_bucket_literal),
		cmocka_unit_test(test_token_bucket_matches_gcra),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
