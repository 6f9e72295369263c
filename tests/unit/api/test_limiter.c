/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_limiter.c - options, store ownership, key composition and error
 * propagation of the limiter front door.  (GCRA math is in test_gcra.)
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

#define T0 UINT64_C(1700000000000000000)

static void test_options_validation(void **state)
{
	struct tk_limiter *l = NULL;
	struct tk_store *s;
	char prefix[TK_PREFIX_MAX + 2];
	struct {
		struct tk_options o;
		uint64_t future_field;
	} bigger;
	struct tk_options o = TK_OPTIONS_INIT;

	(void)state;
	o.size = 0;
	assert_int_equal(tk_limiter_open(&l, "gcra:1/s", "memory", &o),
			 -EINVAL);
	o = (struct tk_options)TK_OPTIONS_INIT;
	o.flags = 0x80;
	assert_int_equal(tk_limiter_open(&l, "gcra:1/s", "memory", &o),
			 -EINVAL);
	/* A newer caller's unknown field must be zero to be ignored. */
	memset(&bigger, 0, sizeof(bigger));
	bigger.o.size = sizeof(bigger);
	bigger.future_field = 1;
	assert_int_equal(tk_limiter_open(&l, "gcra:1/s", "memory", &bigger.o),
			 -EINVAL);
	bigger.future_field = 0;
	assert_int_equal(tk_limiter_open(&l, "gcra:1/s", "memory", &bigger.o),
			 0);
	tk_limiter_close(l);
	o = (struct tk_options)TK_OPTIONS_INIT;
	memset(prefix, 'p', sizeof(prefix) - 1);
	prefix[sizeof(prefix) - 1] = '\0';
	o.prefix = prefix;
	assert_int_equal(tk_limiter_open(&l, "gcra:1/s", "memory", &o),
			 -ENAMETOOLONG);
	/* Exactly one of a spec and opts->store. */
	assert_int_equal(tk_limiter_open(&l, "gcra:1/s", NULL, NULL), -EINVAL);
	assert_int_equal(tk_store_open(&s, "memory", NULL), 0);
	o = (struct tk_options)TK_OPTIONS_INIT;
	o.store = s;
	assert_int_equal(tk_limiter_open(&l, "gcra:1/s", "memory", &o),
			 -EINVAL);
	tk_store_close(s);
	assert_int_equal(tk_limiter_open(NULL, "gcra:1/s", "memory", NULL),
			 -EINVAL);
	assert_int_equal(tk_limiter_open(&l, NULL, "memory", NULL), -EINVAL);
}

static void test_store_specs(void **state)
{
	struct tk_store *s;
	struct tk_limiter *l;

	(void)state;
	assert_int_equal(tk_store_open(&s, "bogus", NULL), -EINVAL);
	assert_int_equal(tk_store_open(&s, "", NULL), -EINVAL);
	/* Zone names are checked before anything touches the disk. */
	assert_int_equal(tk_store_open(&s, "shm:", NULL), -EINVAL);
	assert_int_equal(tk_store_open(&s, "shm:a/b", NULL), -EINVAL);
	assert_int_equal(tk_store_open(&s, "shm:.hidden", NULL), -EINVAL);
	/* TLS Redis: not yet, with or without hiredis. */
	assert_int_equal(tk_store_open(&s, "rediss://127.0.0.1:1", NULL),
			 -ENOTSUP);
	assert_int_equal(tk_limiter_open(&l, "gcra:1/s", "bogus", NULL),
			 -EINVAL);
}

/* A limiter never closes a store it did not open (ASan would see it). */
static void test_shared_store_outlives_limiters(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *a, *b;
	struct tk_decision d;
	struct tk_store *s;
	struct tk_stats st;

	(void)state;
	assert_int_equal(tk_store_open(&s, "memory", NULL), 0);
	o.store = s;
	assert_int_equal(tk_limiter_open(&a, "gcra:1/1h", NULL, &o), 0);
	assert_int_equal(tk_limiter_check(a, "k", 1, 1, &d), 0);
	tk_limiter_close(a);
	assert_int_equal(tk_limiter_open(&b, "gcra:1/1h", NULL, &o), 0);
	/* Same store, same (empty) prefix: the state is still there. */
	assert_int_equal(tk_limiter_check(b, "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	assert_int_equal(tk_limiter_stats(b, &st, sizeof(st)), 0);
	assert_int_equal(st.keys, 1);
	tk_limiter_close(b);
	assert_int_equal(tk_store_stats(s, &st, sizeof(st)), 0);
	assert_int_equal(st.keys, 1);
	tk_store_close(s);
}

static void test_prefix_boundaries_do_not_collide(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *a, *b;
	struct tk_store *s;

	(void)state;
	assert_int_equal(tk_store_open(&s, "memory", NULL), 0);
	o.store = s;
	o.prefix = "a";
	assert_int_equal(tk_limiter_open(&a, "gcra:1/1h", NULL, &o), 0);
	o.prefix = "a:b";
	assert_int_equal(tk_limiter_open(&b, "gcra:1/1h", NULL, &o), 0);
	/* "a" + "b:c" and "a:b" + "c" are different keys. */
	assert_admits(a, "b:c", 3, true);
	assert_admits(b, "c", 1, true);
	/* Binary keys: embedded NUL bytes are part of the key. */
	assert_admits(a, "x\0y", 3, true);
	assert_admits(a, "x\0z", 3, true);
	assert_admits(a, "x\0y", 3, false);
	tk_limiter_close(a);
	tk_limiter_close(b);
	tk_store_close(s);
}

static int broken_clock(void *ctx, uint64_t *ns)
{
	(void)ctx;
	(void)ns;
	return -EIO;
}

static void test_clock_errors_propagate(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_request r = { "k", 1, 1 };
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_store *s;
	struct tk_clock *c;
	int rc = 0;

	(void)state;
	assert_int_equal(tk_clock_custom_new(&c, broken_clock, NULL), 0);
	o.clock = c;
	/* The memory store reads its clock at open. */
	assert_int_equal(tk_limiter_open(&l, "gcra:1/s", "memory", &o), -EIO);
	/* A limiter whose clock fails reports it on every call. */
	assert_int_equal(tk_store_open(&s, "memory", NULL), 0);
	o.store = s;
	assert_int_equal(tk_limiter_open(&l, "gcra:1/s", NULL, &o), 0);
	assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), -EIO);
	assert_int_equal(tk_limiter_peek(l, "k", 1, &d), -EIO);
	assert_int_equal(tk_limiter_forecast(l, "k", 1, 1, &d), -EIO);
	assert_int_equal(tk_limiter_check_many(l, &r, 1, &d, &rc), -EIO);
	tk_limiter_close(l);
	tk_store_close(s);
	tk_clock_free(c);
}

static void test_check_many_reports_each(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_clock *c;
	struct tk_decision d[4];
	char longkey[TK_KEY_MAX + 1];
	int rcs[4];
	struct tk_request r[4] = {
		{ "a", 1, 1 },
		{ "b", 1, 0 }, /* cost 0 */
		{ longkey, sizeof(longkey), 1 },
		{ "a", 1, 5 }, /* above the burst */
	};

	(void)state;
	memset(longkey, 'k', sizeof(longkey));
	assert_int_equal(tk_clock_manual_new(&c, T0), 0);
	o.clock = c;
	assert_int_equal(tk_limiter_open(&l, "gcra:2/1s", "memory", &o), 0);
	assert_int_equal(tk_limiter_check_many(l, r, 4, d, rcs), -EINVAL);
	assert_int_equal(rcs[0], 0);
	assert_true(d[0].allowed);
	assert_int_equal(d[0].remaining, 1);
	assert_int_equal(rcs[1], -EINVAL);
	assert_int_equal(rcs[2], -ENAMETOOLONG);
	assert_int_equal(rcs[3], -ERANGE);
	/* A failed request consumed nothing: "a" has one unit left. */
	assert_int_equal(tk_limiter_check(l, "a", 1, 1, d), 0);
	assert_true(d[0].allowed);
	assert_int_equal(tk_limiter_check_many(l, r, 0, NULL, NULL), 0);
	tk_limiter_close(l);
	tk_clock_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options_validation),
		cmocka_unit_test(test_store_specs),
		cmocka_unit_test(test_shared_store_outlives_limiters),
		cmocka_unit_test(test_prefix_boundaries_do_not_collide),
		cmocka_unit_test(test_clock_errors_propagate),
		cmocka_unit_test(test_check_many_reports_each),
	};

	return cmocka_run_group_tests_name("limiter", tests, NULL, NULL);
}
