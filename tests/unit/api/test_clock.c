/* SPDX-License-Identifier: BSD-2-Clause */
/* test_clock.c - the injected clocks. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <time.h>

#include <throttlekit.h>

static void test_manual_set_and_advance(void **state)
{
	struct tk_clock *c;
	uint64_t now;

	(void)state;
	assert_int_equal(tk_clock_manual_new(&c, 1000), 0);
	assert_int_equal(tk_clock_now(c, &now), 0);
	assert_int_equal(now, 1000);
	assert_int_equal(tk_clock_advance(c, 500), 0);
	assert_int_equal(tk_clock_now(c, &now), 0);
	assert_int_equal(now, 1500);
	/* set may go backwards: that is how tests make clock jumps. */
	assert_int_equal(tk_clock_set(c, 10), 0);
	assert_int_equal(tk_clock_now(c, &now), 0);
	assert_int_equal(now, 10);
	/* Times stay below 2^63; an overflowing advance changes nothing. */
	assert_int_equal(tk_clock_advance(c, UINT64_C(1) << 63), -ERANGE);
	assert_int_equal(tk_clock_set(c, UINT64_C(1) << 63), -ERANGE);
	assert_int_equal(tk_clock_now(c, &now), 0);
	assert_int_equal(now, 10);
	tk_clock_free(c);
}

static void test_system_clock_is_realtime(void **state)
{
	struct timespec ts;
	uint64_t now, ref;

	(void)state;
	clock_gettime(CLOCK_REALTIME, &ts);
	ref = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	assert_int_equal(tk_clock_now(tk_clock_system(), &now), 0);
	assert_true(now >= ref);
	assert_true(now - ref < UINT64_C(60) * 1000000000u);
	/* Not a manual clock. */
	assert_int_equal(tk_clock_set(tk_clock_system(), 5), -EINVAL);
	assert_int_equal(tk_clock_advance(tk_clock_system(), 5), -EINVAL);
	tk_clock_free(tk_clock_system()); /* ignored */
	assert_int_equal(tk_clock_now(tk_clock_system(), &now), 0);
}

static uint64_t read_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME_COARSE: between the kernel's coarse readings around it,
 * and as coarse (repeated values), unlike CLOCK_REALTIME. */
static void test_coarse_clock(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_decision d;
	uint64_t before, now, after, prev = 0;
	int i, repeats = 0;

	(void)state;
	assert_non_null(tk_clock_coarse());
	assert_true(tk_clock_coarse() != tk_clock_system());
	for (i = 0; i < 1000; i++) {
		before = read_ns(CLOCK_REALTIME_COARSE);
		assert_int_equal(tk_clock_now(tk_clock_coarse(), &now), 0);
		after = read_ns(CLOCK_REALTIME_COARSE);
		assert_true(before <= now && now <= after);
		if (now == prev)
			repeats++;
		prev = now;
	}
	/* 1000 readings within a few ticks: most repeat. */
	assert_true(repeats > 500);
	assert_int_equal(tk_clock_set(tk_clock_coarse(), 5), -EINVAL);
	tk_clock_free(tk_clock_coarse()); /* ignored */

	o.clock = tk_clock_coarse();
	assert_int_equal(tk_limiter_open(&l, "gcra:2/1h", "memory", &o), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_int_equal(d.allowed, i < 2);
	}
	tk_limiter_close(l);
}

static int failing(void *ctx, uint64_t *ns)
{
	(void)ns;
	++*(int *)ctx;
	return -EIO;
}

static int fixed(void *ctx, uint64_t *ns)
{
	*ns = *(uint64_t *)ctx;
	return 0;
}

static void test_custom_clock(void **state)
{
	struct tk_clock *c;
	uint64_t v = 42, now;
	int calls = 0;

	(void)state;
	assert_int_equal(tk_clock_custom_new(&c, fixed, &v), 0);
	assert_int_equal(tk_clock_now(c, &now), 0);
	assert_int_equal(now, 42);
	assert_int_equal(tk_clock_set(c, 1), -EINVAL);
	tk_clock_free(c);
	assert_int_equal(tk_clock_custom_new(&c, failing, &calls), 0);
	assert_int_equal(tk_clock_now(c, &now), -EIO);
	assert_int_equal(calls, 1);
	tk_clock_free(c);
	/* A reading at or past 2^63 is refused, not wrapped. */
	v = UINT64_C(1) << 63;
	assert_int_equal(tk_clock_custom_new(&c, fixed, &v), 0);
	assert_int_equal(tk_clock_now(c, &now), -EOVERFLOW);
	tk_clock_free(c);
}

static void test_bad_arguments(void **state)
{
	struct tk_clock *c;
	uint64_t now;

	(void)state;
	assert_int_equal(tk_clock_manual_new(NULL, 0), -EINVAL);
	assert_int_equal(tk_clock_custom_new(&c, NULL, NULL), -EINVAL);
	assert_int_equal(tk_clock_now(NULL, &now), -EINVAL);
	assert_int_equal(tk_clock_now(tk_clock_system(), NULL), -EINVAL);
	assert_int_equal(tk_clock_set(NULL, 0), -EINVAL);
	tk_clock_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_manual_set_and_advance),
		cmocka_unit_test(test_system_clock_is_realtime),
		cmocka_unit_test(test_coarse_clock),
		cmocka_unit_test(test_custom_clock),
		cmocka_unit_test(test_bad_arguments),
	};

	return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
