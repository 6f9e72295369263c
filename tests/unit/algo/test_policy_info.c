/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_policy_info.c - tk_policy_info(): each dimension's algorithm, its
 * limit (the limit its decisions report), whether it shapes, and the
 * composite it belongs to, without opening a limiter.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <throttlekit.h>

#include "asserts.h"

static const struct {
	const char *policy, *algorithm;
	uint64_t limit;
	bool shaper;
} simple[] = {
	{ "gcra:10/s,burst=5", "gcra", 5, false },
	{ "gcra:10/s", "gcra", 10, false },
	{ "token-bucket:capacity=20,refill=5/s", "token-bucket", 20, false },
	{ "fixed-window:100/1m", "fixed-window", 100, false },
	{ "sliding-window:60/1m,buckets=6", "sliding-window", 60, false },
	{ "sliding-log:7/1s", "sliding-log", 7, false },
	{ "quota:1000/month", "quota", 1000, false },
	{ "quota:50/1h", "quota", 50, false },
	{ "leaky:10/s,max-queue=1s", "leaky", 11, true },
};

#define N_SIMPLE (sizeof(simple) / sizeof(simple[0]))

static struct tk_policy *parse(const char *text)
{
	struct tk_policy *p = NULL;

	assert_rc(tk_policy_parse(&p, text, NULL), 0);
	return p;
}

static void test_simple(void **state)
{
	struct tk_policy_info info;
	struct tk_policy *p;
	size_t i;

	(void)state;
	for (i = 0; i < N_SIMPLE; i++) {
		p = parse(simple[i].policy);
		memset(&info, 0x5a, sizeof(info));
		assert_rc(tk_policy_info(p, 0, &info, sizeof(info)), 0);
		assert_string_equal(info.algorithm, simple[i].algorithm);
		assert_string_equal(info.composite, "");
		if (info.limit != simple[i].limit)
			fail_msg("%s: limit %llu, want %llu", simple[i].policy,
				 (unsigned long long)info.limit,
				 (unsigned long long)simple[i].limit);
		assert_int_equal(info.shaper, simple[i].shaper);
		assert_int_equal(info.dimensions, 1);
		assert_rc(tk_policy_info(p, 1, &info, sizeof(info)), -EINVAL);
		tk_policy_free(p);
	}
}

/* The limit is the one every decision of the policy reports. */
static void test_limit_is_the_decisions(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_policy_info info;
	struct tk_limiter *l;
	struct tk_decision d;
	size_t i;

	(void)state;
	o.flags = TK_OPT_NO_RECLAIMER;
	for (i = 0; i < N_SIMPLE; i++) {
		assert_rc(tk_limiter_open(&l, simple[i].policy, "memory", &o),
			  0);
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_rc(tk_policy_info(tk_limiter_policy(l), 0, &info,
					 sizeof(info)),
			  0);
		assert_int_equal(info.limit, d.limit);
		tk_limiter_close(l);
	}
}

static void test_composites(void **state)
{
	struct tk_policy_info info;
	struct tk_policy *p;

	(void)state;
	p = parse("all(gcra:10/s,burst=3,fixed-window:100/1h,leaky:1/s,"
		  "max-queue=2s)");
	assert_rc(tk_policy_info(p, 0, &info, sizeof(info)), 0);
	assert_string_equal(info.algorithm, "gcra");
	assert_string_equal(info.composite, "all");
	assert_int_equal(info.limit, 3);
	assert_int_equal(info.dimensions, 3);
	assert_false(info.shaper);
	assert_rc(tk_policy_info(p, 1, &info, sizeof(info)), 0);
	assert_string_equal(info.algorithm, "fixed-window");
	assert_int_equal(info.limit, 100);
	assert_rc(tk_policy_info(p, 2, &info, sizeof(info)), 0);
	assert_string_equal(info.algorithm, "leaky");
	assert_true(info.shaper);
	assert_rc(tk_policy_info(p, 3, &info, sizeof(info)), -EINVAL);
	tk_policy_free(p);

	p = parse("any(sliding-log:5/1s,quota:9/day)");
	assert_rc(tk_policy_info(p, 1, &info, sizeof(info)), 0);
	assert_string_equal(info.algorithm, "quota");
	assert_string_equal(info.composite, "any");
	assert_int_equal(info.limit, 9);
	assert_int_equal(info.dimensions, 2);
	tk_policy_free(p);
}

static void test_hostile_arguments(void **state)
{
	_Alignas(8) unsigned char buf[sizeof(struct tk_policy_info) + 8];
	struct tk_policy_info info;
	struct tk_policy *p = parse("gcra:1/s");

	(void)state;
	assert_rc(tk_policy_info(NULL, 0, &info, sizeof(info)), -EINVAL);
	assert_rc(tk_policy_info(p, 0, NULL, sizeof(info)), -EINVAL);
	assert_rc(tk_policy_info(p, (size_t)-1, &info, sizeof(info)), -EINVAL);
	/* An older, shorter structure gets its prefix and nothing more. */
	memset(buf, 0xee, sizeof(buf));
	assert_rc(tk_policy_info(p, 0, (struct tk_policy_info *)buf, 5), 0);
	assert_memory_equal(buf, "gcra", 5);
	assert_int_equal(buf[5], 0xee);
	assert_rc(tk_policy_info(p, 0, (struct tk_policy_info *)buf, 0), 0);
	tk_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple),
		cmocka_unit_test(test_limit_is_the_decisions),
		cmocka_unit_test(test_composites),
		cmocka_unit_test(test_hostile_arguments),
	};

	return cmocka_run_group_tests_name("policy_info", tests, NULL, NULL);
}
