/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_peek.c - tk_limiter_peek() on every algorithm: it reports
 * what a check would, and changes nothing.
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
 * For each algorithm: peeking twice gives the same, never changes what a
 * later check says (a twin limiter sees the same checks without the
 * peeks), allowed = remaining >= 1, retry_after = 0 exactly when allowed,
 * remaining is the largest cost a check admits now, and retry_after is
 * when one unit becomes available (exactly, except for the sliding
 * window's next-bucket case, which is only a lower bound).
 */
static void test_peek_each_algorithm(void **state)
{
	static const struct {
		const char *policy;
		uint64_t L;
		bool exact_retry;
	} cases[] = {
		{ "token-bucket:capacity=5,refill=10/1s", 5, true },
		{ "fixed-window:5/1s", 5, true },
		{ "sliding-window:5/1s", 5, false },
		{ "sliding-window:7/1s,buckets=4", 7, false },
		{ "sliding-log:5/1s", 5, true },
		{ "quota:5/day,offset=+02:00", 5, true },
		{ "quota:5/700ms,anchor=1699999999999999999", 5, true },
	};
	struct tk_clock *clk;
	struct tk_limiter *a, *b;
	struct tk_decision p1, p2, da, db;
	uint64_t seed, now, L, cost, r;
	size_t i;
	int step;

#define BOTH_CHECK(c)                                                          \
	do {                                                                   \
		assert_rc(check_rc(a, "k", (c), &da), 0);                      \
		assert_rc(check_rc(b, "k", (c), &db), 0);                      \
		if (!same_decision(&da, &db))                                  \
			fail_msg("%s step %d cost %llu at B0%+lld: peeks "     \
				 "changed a check: {%d,%llu,%llu,%llu,%llu}"   \
				 " vs {%d,%llu,%llu,%llu,%llu}",               \
				 cases[i].policy, step,                        \
				 (unsigned long long)(c),                      \
				 (long long)(now - B0), da.allowed,            \
				 (unsigned long long)da.limit,                 \
				 (unsigned long long)da.remaining,             \
				 (unsigned long long)da.reset_at,              \
				 (unsigned long long)da.retry_after,           \
				 db.allowed, (unsigned long long)db.limit,     \
				 (unsigned long long)db.remaining,             \
				 (unsigned long long)db.reset_at,              \
				 (unsigned long long)db.retry_after);          \
	} while (0)

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		seed = 0x9ee4ull + i;
		L = cases[i].L;
		now = B0 + 17 * MS;
		assert_rc(tk_clock_manual_new(&clk, now), 0);
		assert_rc(open_on(&a, cases[i].policy, clk), 0);
		assert_rc(open_on(&b, cases[i].policy, clk), 0);

		/* A key never seen: everything is available. */
		assert_rc(peek_rc(a, "k", &p1), 0);
		assert_true(p1.allowed);
		assert_int_equal(p1.limit, L);
		assert_int_equal(p1.remaining, L);
		assert_int_equal(p1.retry_after, 0);

		for (step = 0; step < 300; step++) {
			r = rnd_range(&seed, 0, 9);
			now += r < 3   ? 0
			       : r < 8 ? rnd_range(&seed, 1, 150 * MS)
				       : rnd_range(&seed, 300 * MS, 1500 * MS);
			assert_rc(tk_clock_set(clk, now), 0);

			assert_rc(peek_rc(a, "k", &p1), 0);
			assert_rc(peek_rc(a, "k", &p2), 0);
			assert_same_decision(p2, p1);
			assert_int_equal(p1.limit, L);
			assert_true(p1.remaining <= L);
			assert_int_equal(p1.allowed, p1.remaining >= 1);
			assert_int_equal(p1.retry_after == 0, p1.allowed);

			switch (step % 3) {
			case 0: /* any cost */
				cost = rnd_range(&seed, 1, L);
				BOTH_CHECK(cost);
				break;
			case 1: /* remaining is the largest admissible cost */
				if (p1.remaining < L) {
					BOTH_CHECK(p1.remaining + 1);
					if (da.allowed)
						fail_msg(
							"%s step %d: peek "
							"remaining %llu but "
							"cost %llu passed",
							cases[i].policy, step,
							(unsigned long long)
								p1.remaining,
							(unsigned long long)p1
									.remaining +
								1);
				}
				if (p1.remaining >= 1) {
					BOTH_CHECK(p1.remaining);
					if (!da.allowed)
						fail_msg("%s step %d: peek "
							 "remaining %llu but "
							 "that cost was denied",
							 cases[i].policy, step,
							 (unsigned long long)
								 p1.remaining);
				}
				break;
			default: /* retry_after: one unit then, not before */
				if (p1.allowed)
					break;
				now += p1.retry_after - 1;
				assert_rc(tk_clock_set(clk, now), 0);
				BOTH_CHECK(1);
				if (da.allowed)
					fail_msg("%s step %d: allowed 1 ns "
						 "before peek's retry_after",
						 cases[i].policy, step);
				if (!cases[i].exact_retry)
					break;
				now += 1;
				assert_rc(tk_clock_set(clk, now), 0);
				BOTH_CHECK(1);
				if (!da.allowed)
					fail_msg("%s step %d: denied at peek's "
						 "retry_after",
						 cases[i].policy, step);
				break;
			}
		}
		tk_limiter_close(a);
		tk_limiter_close(b);
		tk_clock_free(clk);
	}
#undef BOTH_CHECK
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peek_each_algorithm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
