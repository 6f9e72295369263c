/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_fail_policy.c - what a check answers when its store or clock
 * cannot decide: the error (TK_FAIL_ERROR), or a degraded admission or
 * denial (TK_FAIL_OPEN, TK_FAIL_CLOSED); and that a caller's own mistake
 * stays an error whatever the fail policy says.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <throttlekit.h>

#include "asserts.h"
#include "workers.h"

#define T0 (UINT64_C(1700000000) * SEC)

/* A clock that fails while *ctx is non-zero, else reads T0. */
static int flaky_now(void *ctx, uint64_t *ns)
{
	if (*(int *)ctx)
		return -1;
	*ns = T0;
	return 0;
}

struct fx {
	int broken;
	struct tk_clock *clock;
	struct tk_limiter *l;
};

static void fx_open(struct fx *f, const char *policy, unsigned int fail)
{
	struct tk_options o = TK_OPTIONS_INIT;

	f->broken = 0;
	assert_rc(tk_clock_custom_new(&f->clock, flaky_now, &f->broken), 0);
	o.clock = f->clock;
	o.fail = fail;
	assert_rc(tk_limiter_open(&f->l, policy, "memory", &o), 0);
}

static void fx_close(struct fx *f)
{
	tk_limiter_close(f->l);
	tk_clock_free(f->clock);
}

static void assert_degraded(const struct tk_decision *d, bool allowed,
			    uint64_t limit)
{
	assert_true(d->degraded);
	assert_int_equal(d->allowed, allowed);
	assert_int_equal(d->limit, limit);
	assert_int_equal(d->remaining, 0);
	assert_int_equal(d->delay, 0);
	assert_int_equal(d->retry_after, allowed ? 0 : SEC);
}

static void test_error_is_the_default(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "gcra:10/1s,burst=5", TK_FAIL_ERROR);
	f.broken = 1;
	assert_rc(tk_limiter_check(f.l, "k", 1, 1, &d), -EIO);
	assert_rc(tk_limiter_peek(f.l, "k", 1, &d), -EIO);
	assert_rc(tk_limiter_forecast(f.l, "k", 1, 1, &d), -EIO);
	fx_close(&f);
}

static void test_open_admits_and_closed_denies(void **state)
{
	static const unsigned int fails[] = { TK_FAIL_OPEN, TK_FAIL_CLOSED };
	struct tk_decision d;
	struct fx f;
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		bool open = fails[i] == TK_FAIL_OPEN;

		fx_open(&f, "gcra:10/1s,burst=5", fails[i]);
		f.broken = 1;
		memset(&d, 0xa5, sizeof(d));
		assert_rc(tk_limiter_check(f.l, "k", 1, 1, &d), 0);
		assert_degraded(&d, open, 5);
		assert_rc(tk_limiter_peek(f.l, "k", 1, &d), 0);
		assert_degraded(&d, open, 5);
		assert_rc(tk_limiter_forecast(f.l, "k", 1, 3, &d), 0);
		assert_degraded(&d, open, 5);
		/* The store works again: a real decision, not degraded. */
		f.broken = 0;
		assert_rc(tk_limiter_check(f.l, "k", 1, 1, &d), 0);
		assert_false(d.degraded);
		assert_decision(d, true, 5, 4, T0 + 100 * MS, 0);
		fx_close(&f);
	}
}

/* Admitting or denying a bad call would hide the caller's bug. */
static void test_caller_errors_stay_errors(void **state)
{
	char key[TK_KEY_MAX + 1];
	struct tk_decision d;
	struct fx f;

	(void)state;
	memset(key, 'k', sizeof(key));
	fx_open(&f, "gcra:10/1s,burst=5", TK_FAIL_OPEN);
	f.broken = 1;
	assert_rc(tk_limiter_check(f.l, "k", 1, 0, &d), -EINVAL);
	assert_rc(tk_limiter_check(f.l, NULL, 1, 1, &d), -EINVAL);
	assert_rc(tk_limiter_check(f.l, "k", 0, 1, &d), -EINVAL);
	assert_rc(tk_limiter_check(f.l, "k", 1, 1, NULL), -EINVAL);
	f.broken = 0;
	assert_rc(tk_limiter_check(f.l, key, sizeof(key), 1, &d),
		  -ENAMETOOLONG);
	assert_rc(tk_limiter_check(f.l, "k", 1, 6, &d), -ERANGE);
	fx_close(&f);
}

static void test_fail_option_is_checked(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;

	(void)state;
	o.fail = TK_FAIL_CLOSED + 1;
	assert_rc(tk_limiter_open(&l, "gcra:1/1s", "memory", &o), -EINVAL);
	assert_null(l);
}

static void test_check_many_degrades_each_request(void **state)
{
	struct tk_request r[3] = { { "a", 1, 1 },
				   { "b", 1, 0 },
				   { "c", 1, 2 } };
	struct tk_decision d[3];
	int rcs[3] = { 7, 7, 7 };
	struct fx f;

	(void)state;
	fx_open(&f, "gcra:10/1s,burst=5", TK_FAIL_CLOSED);
	f.broken = 1;
	assert_rc(tk_limiter_check_many(f.l, r, 3, d, rcs), -EINVAL);
	assert_rc(rcs[0], 0);
	assert_rc(rcs[1], -EINVAL);
	assert_rc(rcs[2], 0);
	assert_degraded(&d[0], false, 5);
	assert_degraded(&d[2], false, 5);
	fx_close(&f);

	/* Without a fail policy nothing is checked and rcs stay unwritten. */
	fx_open(&f, "gcra:10/1s,burst=5", TK_FAIL_ERROR);
	f.broken = 1;
	rcs[0] = 7;
	assert_rc(tk_limiter_check_many(f.l, r, 3, d, rcs), -EIO);
	assert_int_equal(rcs[0], 7);
	fx_close(&f);
}

/* A composite's degraded decision, and tk_limiter_check_keys(). */
static void test_composite_and_keys(void **state)
{
	struct tk_key k[2] = { { "ip", 2 }, { "user", 4 } };
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "all(fixed-window:3/1m,gcra:10/1s)", TK_FAIL_OPEN);
	f.broken = 1;
	assert_rc(tk_limiter_check_keys(f.l, k, 2, 1, &d), 0);
	assert_degraded(&d, true, 3);
	assert_rc(tk_limiter_check(f.l, "ip", 2, 1, &d), 0);
	assert_degraded(&d, true, 3);
	fx_close(&f);
}

/*
 * A policy that replaced another on a key is no store failure, even under
 * fail closed: the key's first check under it is a decision of its own
 * (a fresh budget), not the fail policy's, and the other policy's state
 * is left as it was (tk_limiter_open(3)).
 */
static void test_policy_change_is_decided(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *gcra, *win;
	struct tk_store *s;
	struct tk_decision d;

	(void)state;
	assert_rc(tk_store_open(&s, "memory", NULL), 0);
	o.store = s;
	assert_rc(tk_limiter_open(&gcra, "gcra:10/1s,burst=5", NULL, &o), 0);
	o.fail = TK_FAIL_CLOSED;
	assert_rc(tk_limiter_open(&win, "sliding-window:3/1s", NULL, &o), 0);
	assert_rc(tk_limiter_check(gcra, "k", 1, 1, &d), 0);
	assert_rc(tk_limiter_check(win, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_false(d.degraded);
	assert_int_equal(d.remaining, 2);
	/* The GCRA state is intact: four of its five units are left. */
	assert_rc(tk_limiter_check(gcra, "k", 1, 4, &d), 0);
	assert_true(d.allowed);
	assert_false(d.degraded);
	assert_int_equal(d.remaining, 0);
	tk_limiter_close(gcra);
	tk_limiter_close(win);
	tk_store_close(s);
}

/* A zone whose file is cut under it: -EPROTO from the SIGBUS guard,
 * decided by the fail policy.  In a child: the zone stays broken. */
static void test_truncated_zone_is_decided(void **state)
{
	char path[4096];
	pid_t pid;

	(void)state;
	kit_zone_path(path, sizeof(path), "failzone");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct tk_options o = TK_OPTIONS_INIT;
		struct tk_limiter *l;
		struct tk_decision d;

		o.fail = TK_FAIL_OPEN;
		if (tk_limiter_open(&l, "gcra:1/1h", "shm:failzone", &o))
			_exit(1);
		if (tk_limiter_check(l, "k", 1, 1, &d) || !d.allowed ||
		    d.degraded)
			_exit(2);
		if (truncate(path, 0))
			_exit(3);
		if (tk_limiter_check(l, "k", 1, 1, &d) || !d.allowed ||
		    !d.degraded)
			_exit(4);
		tk_limiter_close(l);
		_exit(0);
	}
	kit_wait_exit(pid, 0);
}

static int setup(void **state)
{
	static char dir[] = "/tmp/tk-fail-XXXXXX";

	(void)state;
	return kit_zone_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_is_the_default),
		cmocka_unit_test(test_open_admits_and_closed_denies),
		cmocka_unit_test(test_caller_errors_stay_errors),
		cmocka_unit_test(test_fail_option_is_checked),
		cmocka_unit_test(test_check_many_degrades_each_request),
		cmocka_unit_test(test_composite_and_keys),
		cmocka_unit_test(test_policy_change_is_decided),
		cmocka_unit_test(test_truncated_zone_is_decided),
	};

	return cmocka_run_group_tests(tests, setup, kit_zone_dir_remove);
}
