/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_retry.c - a store that cannot be opened (TK_OPT_RETRY_OPEN,
 * and tk_limiter_open() under fail open or closed): its limiters answer
 * by their fail policy, the store reports its error, caller errors stay
 * errors, and the store is opened again at most once a second until it
 * works, from when on it decides as any store does.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <throttlekit.h>

#include "asserts.h"
#include "workers.h"

#define T0 (UINT64_C(1700000000) * SEC)

static char dir[] = "/tmp/tk-retry-XXXXXX";
static char long_key[TK_KEY_MAX + 1];
static struct tk_clock *clock_;

static void options(struct tk_options *o, unsigned int fail)
{
	*o = (struct tk_options)TK_OPTIONS_INIT;
	o->clock = clock_;
	o->fail = fail;
	o->flags = TK_OPT_ZONE_NO_CREATE;
	o->zone_capacity = 256;
}

static void create(const char *name)
{
	struct tk_options o = TK_OPTIONS_INIT;

	o.zone_capacity = 256;
	assert_rc(tk_zone_create(name, &o), 0);
}

static void assert_degraded(const struct tk_decision *d, bool allowed,
			    uint64_t limit)
{
	assert_true(d->degraded);
	assert_int_equal(d->allowed, allowed);
	assert_int_equal(d->limit, limit);
	assert_int_equal(d->retry_after, allowed ? 0 : SEC);
}

static void test_error_fails_the_open(void **state)
{
	struct tk_options o;
	struct tk_limiter *l = NULL;

	(void)state;
	options(&o, TK_FAIL_ERROR);
	assert_rc(tk_limiter_open(&l, "gcra:1/s", "shm:absent", &o), -ENOENT);
	assert_null(l);
}

/* Absent at open, created later: degraded, then exact from the retry. */
static void test_limiter_recovers(void **state)
{
	static const unsigned int fails[] = { TK_FAIL_OPEN, TK_FAIL_CLOSED };
	struct tk_options o;
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_stats st;
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		bool open = fails[i] == TK_FAIL_OPEN;

		tk_clock_set(clock_, T0);
		options(&o, fails[i]);
		tk_zone_destroy("late");
		assert_rc(tk_limiter_open(&l, "gcra:10/1s,burst=2", "shm:late",
					  &o),
			  0);
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_degraded(&d, open, 2);
		assert_rc(tk_limiter_peek(l, "k", 1, &d), 0);
		assert_degraded(&d, open, 2);
		assert_rc(tk_limiter_stats(l, &st, sizeof(st)), -ENOENT);
		assert_rc(tk_limiter_reset(l, "k", 1), -ENOENT);
		/* Caller errors stay errors on a failed store too. */
		assert_rc(tk_limiter_check(l, long_key, TK_KEY_MAX + 1, 1, &d),
			  -ENAMETOOLONG);
		assert_rc(tk_limiter_check(l, "", 0, 1, &d), -EINVAL);

		create("late");
		/* Not before a second has passed since the last try. */
		assert_rc(tk_clock_advance(clock_, SEC - 1), 0);
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_true(d.degraded);
		assert_rc(tk_clock_advance(clock_, 1), 0);
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_false(d.degraded);
		assert_decision(d, true, 2, 1, T0 + SEC + 100 * MS, 0);
		assert_admits(l, "k", 1, true);
		assert_admits(l, "k", 1, false);
		assert_rc(tk_limiter_stats(l, &st, sizeof(st)), 0);
		assert_int_equal(st.keys, 1);
		assert_rc(tk_limiter_reset(l, "k", 1), 0);
		assert_admits(l, "k", 1, true);
		tk_limiter_close(l);
		assert_rc(tk_zone_destroy("late"), 0);
	}
}

/* A shared store opened with TK_OPT_RETRY_OPEN, and a group on it. */
static void test_shared_store(void **state)
{
	struct tk_key k[2] = { { "a", 1 }, { "b", 1 } };
	struct tk_decision d, dims[2];
	struct tk_limiter *ls[2];
	struct tk_store_ping ping;
	struct tk_options o;
	struct tk_stats st;
	struct tk_store *s = NULL;

	(void)state;
	tk_clock_set(clock_, T0);
	options(&o, TK_FAIL_ERROR);
	tk_zone_destroy("shared");
	assert_rc(tk_store_open(&s, "shm:shared", &o), -ENOENT);
	assert_null(s);
	o.flags |= TK_OPT_RETRY_OPEN;
	assert_rc(tk_store_open(&s, "shm:shared", &o), 0);
	assert_rc(tk_store_stats(s, &st, sizeof(st)), -ENOENT);
	assert_rc(tk_store_ping(s, &ping, sizeof(ping)), -ENOENT);

	o.flags = 0;
	o.store = s;
	o.fail = TK_FAIL_OPEN;
	assert_rc(tk_limiter_open(&ls[0], "gcra:10/1s,burst=3", NULL, &o), 0);
	o.fail = TK_FAIL_CLOSED;
	assert_rc(tk_limiter_open(&ls[1], "fixed-window:5/1m", NULL, &o), 0);
	/* The strictest policy of the group decides; the first's limit. */
	assert_rc(tk_limiter_check_group(ls, k, 2, 1, &d, dims, 2), 0);
	assert_degraded(&d, false, 3);
	o.fail = TK_FAIL_ERROR;
	tk_limiter_close(ls[1]);
	assert_rc(tk_limiter_open(&ls[1], "fixed-window:5/1m", NULL, &o), 0);
	assert_rc(tk_limiter_check_group(ls, k, 2, 1, &d, dims, 2), -ENOENT);

	create("shared");
	/* A ping tries too (on the store's clock), not before its second. */
	assert_rc(tk_store_ping(s, &ping, sizeof(ping)), -ENOENT);
	assert_rc(tk_clock_advance(clock_, SEC), 0);
	assert_rc(tk_store_ping(s, &ping, sizeof(ping)), 0);
	assert_string_equal(ping.store, "shm");
	assert_string_equal(ping.engine, "zone");
	assert_rc(tk_store_stats(s, &st, sizeof(st)), 0);
	assert_rc(tk_limiter_check_group(ls, k, 2, 1, &d, dims, 2), 0);
	assert_false(d.degraded);
	assert_true(d.allowed);
	assert_int_equal(dims[1].remaining, 4);
	tk_limiter_close(ls[0]);
	tk_limiter_close(ls[1]);
	tk_store_close(s);
	assert_rc(tk_zone_destroy("shared"), 0);
}

/*
 * A zone absent, then there but refused by the trust rules (-EACCES),
 * then put right: each failed try says its own error, and the fail
 * policy decides until the store opens.
 */
static void test_refused_zone(void **state)
{
	struct tk_options o;
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_stats st;
	char path[256];

	(void)state;
	tk_clock_set(clock_, T0);
	tk_zone_destroy("open-to-all");
	options(&o, TK_FAIL_CLOSED);
	assert_rc(tk_limiter_open(&l, "gcra:1/s", "shm:open-to-all", &o), 0);
	assert_rc(tk_limiter_stats(l, &st, sizeof(st)), -ENOENT);
	create("open-to-all");
	kit_zone_path(path, sizeof(path), "open-to-all");
	assert_int_equal(chmod(path, 0666), 0);
	options(&o, TK_FAIL_ERROR);
	assert_rc(tk_limiter_open(&l, "gcra:1/s", "shm:open-to-all", &o),
		  -EACCES);
	/* A try that fails again, for another reason. */
	assert_rc(tk_clock_advance(clock_, SEC), 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_degraded(&d, false, 1);
	assert_rc(tk_limiter_stats(l, &st, sizeof(st)), -EACCES);
	/* Put right: the next try a second on takes it. */
	assert_int_equal(chmod(path, 0600), 0);
	assert_rc(tk_clock_advance(clock_, SEC), 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_false(d.degraded);
	tk_limiter_close(l);
	assert_rc(tk_zone_destroy("open-to-all"), 0);
}

/*
 * The clock steps back an hour after a failed try: the store is tried
 * again at once, not an hour later; a step back within the second of
 * the last try still waits for it.
 */
static void test_clock_stepped_back(void **state)
{
	struct tk_options o;
	struct tk_limiter *l;
	struct tk_decision d;

	(void)state;
	tk_clock_set(clock_, T0);
	tk_zone_destroy("stepped");
	options(&o, TK_FAIL_CLOSED);
	assert_rc(tk_limiter_open(&l, "gcra:1/s", "shm:stepped", &o), 0);
	create("stepped");
	tk_clock_set(clock_, T0 - SEC / 2);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_degraded(&d, false, 1);
	tk_clock_set(clock_, T0 - 3600 * SEC);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_false(d.degraded);
	assert_true(d.allowed);
	tk_limiter_close(l);
	assert_rc(tk_zone_destroy("stepped"), 0);
}

/* The caller's own errors are never a failed store. */
static void test_caller_errors_are_errors(void **state)
{
	struct tk_options o;
	struct tk_limiter *l = NULL;
	struct tk_store *s = NULL;

	(void)state;
	options(&o, TK_FAIL_OPEN);
	o.flags |= TK_OPT_RETRY_OPEN;
	assert_rc(tk_limiter_open(&l, "gcra:1/s", "shm:.bad", &o), -EINVAL);
	assert_rc(tk_limiter_open(&l, "gcra:1/s", "nonsense", &o), -EINVAL);
	assert_rc(tk_limiter_open(&l, "gcra:1/x", "shm:absent", &o), -EINVAL);
	assert_rc(tk_limiter_open(&l, "gcra:1/s", "redis://h:0", &o), -EINVAL);
	assert_null(l);
	assert_rc(tk_store_open(&s, "shm:.bad", &o), -EINVAL);
	assert_rc(tk_store_open(&s, "", &o), -EINVAL);
	assert_null(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_fails_the_open),
		cmocka_unit_test(test_limiter_recovers),
		cmocka_unit_test(test_shared_store),
		cmocka_unit_test(test_refused_zone),
		cmocka_unit_test(test_clock_stepped_back),
		cmocka_unit_test(test_caller_errors_are_errors),
	};
	int rc;

	memset(long_key, 'k', sizeof(long_key));
	if (kit_zone_dir(dir) != 0)
		return 99;
	if (tk_clock_manual_new(&clock_, T0) != 0)
		return 99;
	rc = cmocka_run_group_tests_name("store_retry", tests, NULL,
					 kit_zone_dir_remove);
	tk_clock_free(clock_);
	return rc;
}
