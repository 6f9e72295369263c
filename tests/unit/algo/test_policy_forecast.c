/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_policy_forecast.c - tk_policy_forecast(), a check's forecast on a
 * key never seen, against tk_limiter_forecast() of a new key on a memory
 * store at the same time: every algorithm, composites, costs from 1 to
 * past what the policy can admit (-ERANGE), times across the calendar.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <throttlekit.h>

#include "rnd.h"

static const char *const policies[] = {
	"gcra:10/1s",
	"gcra:5/1m,burst=7",
	"token-bucket:capacity=5,refill=10/100ms",
	"fixed-window:100/1500ms",
	"sliding-window:20/1m",
	"sliding-window:20/1m,buckets=6",
	"sliding-log:4/800ms",
	"quota:1000/day",
	"quota:30/month",
	"leaky:2/1s,max-queue=5s",
	"all(gcra:10/1s,quota:25/day)",
	"all(fixed-window:3/1s,sliding-log:9/1m)",
	"any(gcra:2/1s,fixed-window:50/1h)",
	"any(sliding-window:4/1s,quota:2/day)",
};

#define NOW0 UINT64_C(1700000000000000000)

/* The library's forecast through a store, for a key never used. */
static int store_forecast(const char *policy, uint64_t now, uint64_t cost,
			  struct tk_decision *d)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_clock *c;
	int rc;

	assert_int_equal(tk_clock_manual_new(&c, now), 0);
	o.clock = c;
	assert_int_equal(tk_limiter_open(&l, policy, "memory", &o), 0);
	rc = tk_limiter_forecast(l, "k", 1, cost, d);
	tk_limiter_close(l);
	tk_clock_free(c);
	return rc;
}

static void same(const char *policy, uint64_t now, uint64_t cost)
{
	struct tk_decision a, b;
	struct tk_policy *p;
	int ra, rb;

	assert_int_equal(tk_policy_parse(&p, policy, NULL), 0);
	memset(&a, 0x5a, sizeof(a));
	memset(&b, 0x5a, sizeof(b));
	ra = tk_policy_forecast(p, now, cost, &a);
	rb = store_forecast(policy, now, cost, &b);
	if (ra != rb || (ra == 0 && memcmp(&a, &b, sizeof(a)) != 0))
		fail_msg("%s at %llu, cost %llu: %d (allowed %d remaining "
			 "%llu) vs the store's %d (allowed %d remaining %llu)",
			 policy, (unsigned long long)now,
			 (unsigned long long)cost, ra, a.allowed,
			 (unsigned long long)a.remaining, rb, b.allowed,
			 (unsigned long long)b.remaining);
	tk_policy_free(p);
}

/* Every cost up to twice the largest limit, at one time. */
static void test_costs(void **state)
{
	struct tk_policy_info info;
	struct tk_policy *p;
	uint64_t most, cost;
	size_t i, d;

	(void)state;
	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		assert_int_equal(tk_policy_parse(&p, policies[i], NULL), 0);
		for (d = 0, most = 0; d < tk_policy_dimensions(p); d++) {
			assert_int_equal(
				tk_policy_info(p, d, &info, sizeof(info)), 0);
			most = info.limit > most ? info.limit : most;
		}
		tk_policy_free(p);
		for (cost = 1; cost <= 2 * most + 1; cost++)
			same(policies[i], NOW0, cost);
	}
}

/* Random times over years (calendar quotas change with them) and costs
 * around the limits. */
static void test_times(void **state)
{
	uint64_t seed = 20261127, now, cost;
	int n;

	(void)state;
	for (n = 0; n < 3000; n++) {
		now = NOW0 + rnd_next(&seed) % (UINT64_C(1) << 60);
		cost = 1 + rnd_next(&seed) % 1100;
		same(policies[rnd_next(&seed) %
			      (sizeof(policies) / sizeof(policies[0]))],
		     now, cost);
	}
}

/* The refusals: a cost no state could admit, and bad arguments. */
static void test_errors(void **state)
{
	struct tk_decision d;
	struct tk_policy *p;

	(void)state;
	assert_int_equal(tk_policy_parse(&p, "gcra:5/1s,burst=3", NULL), 0);
	/* The other fields are the state's, as a peek of a new key. */
	assert_int_equal(tk_policy_forecast(p, NOW0, 3, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.limit, 3);
	assert_int_equal(d.remaining, 3);
	assert_int_equal(tk_policy_forecast(p, NOW0, 4, &d), -ERANGE);
	assert_int_equal(tk_policy_forecast(p, NOW0, 0, &d), -EINVAL);
	assert_int_equal(tk_policy_forecast(NULL, NOW0, 1, &d), -EINVAL);
	assert_int_equal(tk_policy_forecast(p, NOW0, 1, NULL), -EINVAL);
	assert_int_equal(tk_policy_forecast(p, UINT64_C(1) << 63, 1, &d),
			 -EOVERFLOW);
	tk_policy_free(p);
	/* all() refuses what any dimension can never admit; any() only
	 * what none can. */
	assert_int_equal(
		tk_policy_parse(&p, "all(gcra:5/1s,quota:9/day)", NULL), 0);
	assert_int_equal(tk_policy_forecast(p, NOW0, 6, &d), -ERANGE);
	tk_policy_free(p);
	assert_int_equal(
		tk_policy_parse(&p, "any(gcra:5/1s,quota:9/day)", NULL), 0);
	assert_int_equal(tk_policy_forecast(p, NOW0, 6, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.limit, 9);
	assert_int_equal(tk_policy_forecast(p, NOW0, 10, &d), -ERANGE);
	tk_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_costs),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
