/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_shaper.c - the leaky-bucket shaper: it delays instead of denying.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <time.h>

#include <throttlekit.h>

#define T0 UINT64_C(1700000000000000000)
#define MS UINT64_C(1000000)
#define SEC UINT64_C(1000000000)

static struct tk_limiter *open_manual(const char *policy,
				      struct tk_clock **clock)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;

	assert_int_equal(tk_clock_manual_new(clock, T0), 0);
	o.clock = *clock;
	assert_int_equal(tk_limiter_open(&l, policy, "memory", &o), 0);
	return l;
}

/* 10/s is one departure every 100 ms; a queue of 1 s holds 11. */
static void test_pacing_and_queue(void **state)
{
	struct tk_clock *clock;
	struct tk_limiter *l = open_manual("leaky:10/1s,max-queue=1s", &clock);
	struct tk_decision d;
	uint64_t i;

	(void)state;
	for (i = 0; i < 11; i++) {
		assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_true(d.allowed);
		assert_int_equal(d.delay, i * 100 * MS);
		assert_int_equal(d.retry_after, 0);
		assert_int_equal(d.limit, 11);
		assert_int_equal(d.remaining, 10 - i);
		assert_int_equal(d.reset_at, T0 + (i + 1) * 100 * MS);
	}
	/* The twelfth would wait 1.1 s: rejected, nothing changes. */
	for (i = 0; i < 3; i++) {
		assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_false(d.allowed);
		assert_int_equal(d.delay, 0);
		assert_int_equal(d.retry_after, 100 * MS);
		assert_int_equal(d.remaining, 0);
		assert_int_equal(d.reset_at, T0 + 1100 * MS);
	}
	/* 100 ms later one more fits, at the back of the queue. */
	assert_int_equal(tk_clock_advance(clock, 100 * MS), 0);
	assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.delay, 1000 * MS);
	/* A backward step does not reopen the queue. */
	assert_int_equal(tk_clock_set(clock, T0 - 10 * SEC), 0);
	assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	tk_limiter_close(l);
	tk_clock_free(clock);
}

static void test_cost_and_peek(void **state)
{
	struct tk_clock *clock;
	struct tk_limiter *l =
		open_manual("leaky:10/1s,max-queue=500ms", &clock);
	struct tk_decision d;

	(void)state;
	/* An idle key takes a large cost at once; it fills the queue. */
	assert_int_equal(tk_limiter_check(l, "k", 1, 8, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.delay, 0);
	assert_int_equal(d.reset_at, T0 + 800 * MS);
	assert_int_equal(tk_limiter_peek(l, "k", 1, &d), 0);
	assert_false(d.allowed);
	assert_int_equal(d.retry_after, 300 * MS);
	assert_int_equal(tk_limiter_peek(l, "k", 1, &d), 0);
	assert_int_equal(d.retry_after, 300 * MS);
	/* max-queue defaults to 0: pure pacing. */
	tk_limiter_close(l);
	tk_clock_free(clock);
	l = open_manual("leaky:10/1s", &clock);
	assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	assert_int_equal(d.retry_after, 100 * MS);
	tk_limiter_close(l);
	tk_clock_free(clock);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static int never(void *ctx)
{
	++*(int *)ctx;
	return 0;
}

/*
 * A wait longer than one sleep chunk (100 ms) still lasts its whole
 * delay: the lower bound is the contract (never return early); nothing
 * here bounds how long it may take.
 */
static void test_wait_sleeps_the_whole_delay(void **state)
{
	struct tk_limiter *l;
	struct tk_decision d;
	uint64_t start;
	int calls = 0;

	(void)state;
	assert_int_equal(
		tk_limiter_open(&l, "leaky:4/1s,max-queue=1s", "memory", NULL),
		0);
	assert_int_equal(tk_limiter_wait(l, "k", 1, 1, never, &calls, &d), 0);
	assert_true(d.allowed);
	start = mono_ns();
	/* Departs 250 ms after the first (up to scheduling). */
	assert_int_equal(tk_limiter_wait(l, "k", 1, 1, never, &calls, &d), 0);
	assert_true(d.allowed);
	assert_true(d.delay > 200 * MS);
	assert_true(mono_ns() - start >= d.delay);
	/* Over 100 ms: more than one chunk, asked between chunks. */
	assert_true(calls >= 2);
	tk_limiter_close(l);
}

static int cancel_now(void *ctx)
{
	++*(int *)ctx;
	return 1;
}

static void test_wait_cancel_and_errors(void **state)
{
	struct tk_limiter *l, *g;
	struct tk_decision d;
	int calls = 0;

	(void)state;
	assert_int_equal(
		tk_limiter_open(&l, "leaky:1/10s,max-queue=1m", "memory", NULL),
		0);
	assert_int_equal(tk_limiter_wait(l, "k", 1, 1, NULL, NULL, &d), 0);
	assert_int_equal(d.delay, 0);
	assert_int_equal(tk_limiter_wait(l, "k", 1, 1, cancel_now, &calls, &d),
			 -ECANCELED);
	assert_int_equal(calls, 1);
	/* Queue full (departures at +20 s .. +70 s, max-queue 60 s):
	 * no sleep, allowed false. */
	assert_int_equal(tk_limiter_check(l, "k", 1, 5, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(tk_limiter_wait(l, "k", 1, 1, cancel_now, &calls, &d),
			 0);
	assert_false(d.allowed);
	assert_true(d.retry_after > 0);
	assert_int_equal(calls, 1);
	tk_limiter_close(l);
	/* Every policy waits; one that can never admit the cost says so
	 * at once (tests/kit/capi-kit.c waits on each algorithm). */
	assert_int_equal(tk_limiter_open(&g, "gcra:1/s", "memory", NULL), 0);
	assert_int_equal(tk_limiter_wait(g, "k", 1, 2, NULL, NULL, &d),
			 -ERANGE);
	assert_int_equal(tk_limiter_wait(g, "k", 1, 1, cancel_now, &calls, &d),
			 0);
	assert_true(d.allowed);
	/* Denied now: the hook is asked before the first sleep. */
	assert_int_equal(tk_limiter_wait(g, "k", 1, 1, cancel_now, &calls, &d),
			 -ECANCELED);
	assert_false(d.allowed);
	assert_int_equal(calls, 2);
	tk_limiter_close(g);
}

/*
 * Random timelines against a straightforward model of the shaper written
 * from the contract: departure = max(next, now), accepted iff the wait is
 * at most Q, then next = departure + T * cost.
 */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_property_vs_model(void **state)
{
	struct tk_clock *clock;
	struct tk_limiter *l;
	struct tk_decision d;
	char policy[96];
	uint64_t seed = 0x9e3779b97f4a7c15ULL, now, next, t, q, r, p, cost;
	uint64_t dep, delay;
	int round, i;

	(void)state;
	for (round = 0; round < 12; round++) {
		r = 1 + rnd(&seed) % 20;
		p = (1 + rnd(&seed) % 2000) * MS;
		q = (rnd(&seed) % 3000) * MS;
		snprintf(policy, sizeof(policy),
			 "leaky:%llu/%llums,max-queue=%llums",
			 (unsigned long long)r, (unsigned long long)(p / MS),
			 (unsigned long long)(q / MS));
		t = p / r;
		l = open_manual(policy, &clock);
		now = T0;
		next = 0;
		for (i = 0; i < 3000; i++) {
			switch (rnd(&seed) % 8) {
			case 0:
				break;
			case 7:
				now -= rnd(&seed) % (2 * t + 1);
				break;
			default:
				now += rnd(&seed) % (2 * t + 1);
			}
			assert_int_equal(tk_clock_set(clock, now), 0);
			cost = 1 + rnd(&seed) % 3;
			assert_int_equal(tk_limiter_check(l, "k", 1, cost, &d),
					 0);
			dep = next > now ? next : now;
			delay = dep - now;
			assert_int_equal(d.limit, q / t + 1);
			if (delay <= q) {
				next = dep + t * cost;
				assert_true(d.allowed);
				assert_int_equal(d.delay, delay);
				assert_int_equal(d.retry_after, 0);
				assert_int_equal(d.reset_at, next);
				assert_int_equal(
					d.remaining,
					next - now <= q
						? (q - (next - now)) / t + 1
						: 0);
			} else {
				assert_false(d.allowed);
				assert_int_equal(d.delay, 0);
				assert_int_equal(d.retry_after, delay - q);
				assert_int_equal(d.reset_at, dep);
				assert_int_equal(d.remaining, 0);
			}
		}
		tk_limiter_close(l);
		tk_clock_free(clock);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pacing_and_queue),
		cmocka_unit_test(test_cost_and_peek),
		cmocka_unit_test(test_wait_sleeps_the_whole_delay),
		cmocka_unit_test(test_wait_cancel_and_errors),
		cmocka_unit_test(test_property_vs_model),
	};

	return cmocka_run_group_tests_name("shaper", tests, NULL, NULL);
}
