/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_fail_api.c - the fail policy as bindings call it: tk_fail_parse(),
 * tk_error_is_caller() and tk_decision_degraded(), and that the decision
 * the last one builds is the one a limiter gives.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <string.h>

#include <throttlekit.h>

#include "asserts.h"

#define T0 (UINT64_C(1700000000) * SEC)

static void test_fail_parse(void **state)
{
	static const struct {
		const char *text;
		size_t len;
	} bad[] = {
		{ "", 0 },	 { "Open", 4 },	   { "OPEN", 4 },
		{ "open ", 5 },	 { " open", 5 },   { "ope", 3 },
		{ "opened", 6 }, { "close", 5 },   { "closed\n", 7 },
		{ "err", 3 },	 { "open\0x", 6 }, { "errors", 6 },
		{ "fail", 4 },	 { "0", 1 },	   { "1", 1 },
	};
	unsigned int fail;
	size_t i;

	(void)state;
	assert_rc(tk_fail_parse("error", 5, &fail), 0);
	assert_int_equal(fail, TK_FAIL_ERROR);
	assert_rc(tk_fail_parse("open", 4, &fail), 0);
	assert_int_equal(fail, TK_FAIL_OPEN);
	assert_rc(tk_fail_parse("closed", 6, &fail), 0);
	assert_int_equal(fail, TK_FAIL_CLOSED);
	/* Only the @len bytes count. */
	assert_rc(tk_fail_parse("openly", 4, &fail), 0);
	assert_int_equal(fail, TK_FAIL_OPEN);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fail = 77;
		if (tk_fail_parse(bad[i].text, bad[i].len, &fail) != -EINVAL)
			fail_msg("\"%s\" (%zu bytes) was taken", bad[i].text,
				 bad[i].len);
		assert_int_equal(fail, 77);
	}
	assert_rc(tk_fail_parse("open", 4, NULL), -EINVAL);
	assert_rc(tk_fail_parse(NULL, 4, &fail), -EINVAL);
	assert_rc(tk_fail_parse(NULL, 0, &fail), -EINVAL);
	assert_int_equal(fail, 77);
}

static void test_error_is_caller(void **state)
{
	static const int caller[] = { EINVAL, ENAMETOOLONG, ERANGE, ENOTSUP };
	static const int store[] = { 0,		EIO,	      ENOMEM,
				     EPROTO,	ENOSPC,	      EOVERFLOW,
				     ETIMEDOUT, ECONNREFUSED, ECONNRESET,
				     EACCES,	ENOENT,	      EAGAIN,
				     ECANCELED, EBADMSG,      EEXIST };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(caller) / sizeof(caller[0]); i++) {
		assert_true(tk_error_is_caller(-caller[i]));
		assert_true(tk_error_is_caller(caller[i]));
	}
	for (i = 0; i < sizeof(store) / sizeof(store[0]); i++)
		if (tk_error_is_caller(-store[i]))
			fail_msg("%s is taken for the caller's",
				 tk_strerrorname(-store[i]));
	assert_false(tk_error_is_caller(INT_MIN));
	assert_false(tk_error_is_caller(INT_MAX));
}

static struct tk_policy *parse(const char *text)
{
	struct tk_policy *p = NULL;

	assert_rc(tk_policy_parse(&p, text, NULL), 0);
	return p;
}

static void test_decision_degraded(void **state)
{
	struct tk_policy *p = parse("all(gcra:10/1s,burst=4,quota:9/day)");
	struct tk_decision d, before;

	(void)state;
	memset(&d, 0xa5, sizeof(d));
	assert_rc(tk_decision_degraded(p, TK_FAIL_OPEN, T0, &d), 0);
	assert_decision(d, true, 4, 0, T0, 0);
	assert_int_equal(d.delay, 0);
	assert_true(d.degraded);
	memset(&d, 0xa5, sizeof(d));
	assert_rc(tk_decision_degraded(p, TK_FAIL_CLOSED, T0, &d), 0);
	assert_decision(d, false, 4, 0, T0, SEC);
	assert_int_equal(d.delay, 0);
	assert_true(d.degraded);

	/* No decision without a fail policy that decides. */
	memset(&before, 0x3c, sizeof(before));
	d = before;
	assert_rc(tk_decision_degraded(p, TK_FAIL_ERROR, T0, &d), -EINVAL);
	assert_rc(tk_decision_degraded(p, TK_FAIL_CLOSED + 1, T0, &d), -EINVAL);
	assert_rc(tk_decision_degraded(p, ~0u, T0, &d), -EINVAL);
	assert_rc(tk_decision_degraded(NULL, TK_FAIL_OPEN, T0, &d), -EINVAL);
	assert_memory_equal(&d, &before, sizeof(d));
	assert_rc(tk_decision_degraded(p, TK_FAIL_OPEN, T0, NULL), -EINVAL);
	tk_policy_free(p);
}

/* A clock that always fails: every check goes to the fail policy. */
static int broken_now(void *ctx, uint64_t *ns)
{
	(void)ctx;
	(void)ns;
	return -1;
}

/* The limiter's degraded decisions are tk_decision_degraded()'s. */
static void test_limiter_decides_alike(void **state)
{
	static const char *const policies[] = {
		"gcra:10/1s,burst=5",
		"fixed-window:7/1m",
		"leaky:10/s,max-queue=1s",
		"any(sliding-log:3/1s,quota:100/month)",
	};
	static const unsigned int fails[] = { TK_FAIL_OPEN, TK_FAIL_CLOSED };
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_decision got, want;
	struct tk_limiter *l;
	struct tk_clock *c;
	size_t i, j;

	(void)state;
	assert_rc(tk_clock_custom_new(&c, broken_now, NULL), 0);
	o.clock = c;
	o.flags = TK_OPT_NO_RECLAIMER;
	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		for (j = 0; j < 2; j++) {
			o.fail = fails[j];
			assert_rc(
				tk_limiter_open(&l, policies[i], "memory", &o),
				0);
			assert_rc(tk_limiter_check(l, "k", 1, 1, &got), 0);
			/* A clock that failed has no time: 0. */
			assert_rc(tk_decision_degraded(tk_limiter_policy(l),
						       fails[j], 0, &want),
				  0);
			assert_memory_equal(&got, &want, sizeof(got));
			tk_limiter_close(l);
		}
	}
	tk_clock_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fail_parse),
		cmocka_unit_test(test_error_is_caller),
		cmocka_unit_test(test_decision_degraded),
		cmocka_unit_test(test_limiter_decides_alike),
	};

	return cmocka_run_group_tests_name("fail_api", tests, NULL, NULL);
}
