/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_tier_return.c - two tiers giving a lease's unused credit
 * back to Redis (throttlekit(7), "Two tiers"), on a real redis-server
 * (tests/kit/redis-kit.c; skipped without one, failed with
 * TK_REQUIRE_REDIS=1), on a clock the test moves:
 *
 * - a sliding log's or sliding window's lease, expired, gives its unused
 *   credit back: the global remaining is exact again, also when the
 *   host does not check its key again;
 * - past the window's edge (a log's stamps expired, a fixed window
 *   ended) it is dropped, without a Redis call;
 * - of 4 processes of a host that find the same expired lease, one gives
 *   it back.
 *
 * A check on the same zone opened with lease=1 asks Redis for its own
 * cost: its remaining is the global one, after what the check gave back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <throttlekit.h>

#include "redis-kit.h"
#include "workers.h"

#define T0 UINT64_C(1700000000000000000)
#define SEC UINT64_C(1000000000)
#define MS UINT64_C(1000000)

static struct redis_kit kit;
static char dir[] = "/tmp/tk-tier-ret-XXXXXX";
static struct kit_shared *sh;
static struct tk_clock *clock_;
static const char *policy_;
static int zone_;

/* The time is sh->now, which forked processes share. */
static int now_of(void *ctx, uint64_t *ns)
{
	(void)ctx;
	*ns = atomic_load(&sh->now);
	return 0;
}

/* A limiter of policy_ on zone ret-<zone_ + @host> with @opts. */
static struct tk_limiter *tier(int host, const char *opts)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;
	char spec[600];

	snprintf(spec, sizeof(spec), "shm:ret-%d%s+%s", zone_ + host, opts,
		 redis_kit_manual(kit.spec));
	o.clock = clock_;
	o.zone_capacity = 1024;
	o.flags = TK_OPT_NO_RECLAIMER;
	return tk_limiter_open(&l, policy_, spec, &o) == 0 ? l : NULL;
}

/* @n checks of @l, each admitted; the last decision in *@d. */
static void admit(struct tk_limiter *l, int n, struct tk_decision *d)
{
	assert_non_null(l);
	while (n-- > 0) {
		assert_int_equal(tk_limiter_check(l, "k", 1, 1, d), 0);
		assert_true(d->allowed);
	}
}

/* Scripts the server ran since the last CONFIG RESETSTAT. */
static long long scripts(void)
{
	char info[8192];
	const char *at;
	long long n = 0, calls;

	assert_true(redis_kit_cmd(&kit, info, sizeof(info),
				  "INFO commandstats") >= 0);
	for (at = strstr(info, "cmdstat_"); at; at = strstr(at + 1, "cmdstat_"))
		if ((!strncmp(at, "cmdstat_fcall:", 14) ||
		     !strncmp(at, "cmdstat_evalsha:", 16)) &&
		    sscanf(strchr(at, ':') + 1, "calls=%lld", &calls) == 1)
			n += calls;
	return n;
}

static void fresh(const char *policy)
{
	redis_kit_need(&kit);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "FLUSHALL"), 0);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "CONFIG RESETSTAT"), 0);
	kit_shared_reset(T0);
	policy_ = policy;
	zone_ += 4;
}

/*
 * Host 0 under @policy leases 10 at T0 and admits 3; the time moves to
 * @end, the lease's: a limiter on host 0 at lease=1, which asks Redis
 * for each check's own cost.
 */
static struct tk_limiter *expired(const char *policy, uint64_t end)
{
	struct tk_limiter *a;
	struct tk_decision d;

	fresh(policy);
	a = tier(0, "?lease=10");
	admit(a, 3, &d);
	tk_limiter_close(a);
	atomic_store(&sh->now, end);
	return tier(0, "?lease=1");
}

/*
 * At the end of host 0's lease a check on host 0 finds the 7 left and
 * gives them back before its own: the global remaining is L - 3 - 1, not
 * L - 10 - 1.  (Leases of these live a second at most.)
 */
static void test_exact(void **state)
{
	const char *policies[] = { "sliding-log:100/10s",
				   "sliding-window:100/10s" };
	struct tk_limiter *b;
	struct tk_decision d;
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		b = expired(policies[i], T0 + SEC);
		admit(b, 1, &d);
		print_message("# %s: %llu remaining\n", policy_,
			      (unsigned long long)d.remaining);
		assert_int_equal(d.remaining, 100 - 3 - 1);
		/* Given back once: the next check finds none. */
		admit(b, 1, &d);
		assert_int_equal(d.remaining, 100 - 3 - 2);
		tk_limiter_close(b);
	}
}

/*
 * Host 0 leases 10 of "k" and admits 3, then never checks "k" again: a
 * check of another key on host 0, once the lease has ended, gives the 7
 * back (the process remembered its lease), so host 1, asking Redis for
 * its own cost, finds L - 3 - 1.  Only once: a second check of another
 * key gives nothing back.
 */
static void test_unchecked(void **state)
{
	const char *policies[] = { "sliding-log:100/10s",
				   "sliding-window:100/10s" };
	struct tk_limiter *a, *b;
	struct tk_decision d;
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		fresh(policies[i]);
		a = tier(0, "?lease=10");
		b = tier(1, "?lease=1");
		admit(a, 3, &d);
		atomic_store(&sh->now, T0 + SEC);
		assert_int_equal(tk_limiter_check(a, "other", 5, 1, &d), 0);
		assert_int_equal(tk_limiter_check(a, "other", 5, 1, &d), 0);
		admit(b, 1, &d);
		print_message("# %s: %llu remaining\n", policy_,
			      (unsigned long long)d.remaining);
		assert_int_equal(d.remaining, 100 - 3 - 1);
		tk_limiter_close(b);
		tk_limiter_close(a);
	}
}

/*
 * Past the window's edge the credit is dropped: no call gives it back
 * (a log of 500 ms, whose lease lives as long; a fixed window, whose
 * lease lives to its end, T0 + 10 s: T0 is a multiple of 10 s); the
 * check's own call is the only one.
 */
static void test_edge(void **state)
{
	struct tk_limiter *b;
	struct tk_decision d;
	long long calls;
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		b = i == 0 ? expired("sliding-log:100/500ms", T0 + 500 * MS)
			   : expired("fixed-window:100/10s", T0 + 10 * SEC);
		calls = scripts();
		admit(b, 1, &d);
		print_message("# %s: %lld calls\n", policy_, scripts() - calls);
		assert_int_equal(scripts() - calls, 1);
		assert_int_equal(d.remaining, 99);
		tk_limiter_close(b);
	}
}

static void once(int i)
{
	struct tk_limiter *l = tier(0, "?lease=1");
	struct tk_decision d;

	(void)i;
	KIT_CHILD_CHECK(10, l != NULL);
	KIT_CHILD_CHECK(11, tk_limiter_check(l, "k", 1, 1, &d) == 0);
	KIT_CHILD_CHECK(12, d.allowed);
	tk_limiter_close(l);
}

/*
 * Host 0 leases 10 and admits 3, host 1 leases 50 in the same bucket;
 * at the end of host 0's lease 4 processes of host 0 check at once: one
 * gives the 7 back, so the bucket counts 53 + 4, never 46 + 4 or less.
 */
static void test_once(void **state)
{
	struct tk_limiter *a, *b;
	struct tk_decision d;

	(void)state;
	fresh("sliding-window:1000/10s");
	a = tier(0, "?lease=10");
	admit(a, 3, &d);
	b = tier(1, "?lease=50");
	admit(b, 1, &d);
	assert_int_equal(d.remaining, 1000 - 60);
	tk_limiter_close(a);
	tk_limiter_close(b);
	atomic_store(&sh->now, T0 + SEC);
	kit_run_workers(4, once);
	/* Host 2, no lease of its own: the global remaining. */
	b = tier(2, "?lease=1");
	admit(b, 1, &d);
	print_message("# %llu remaining\n", (unsigned long long)d.remaining);
	assert_int_equal(d.remaining, 1000 - 53 - 4 - 1);
	tk_limiter_close(b);
}

static int setup(void **state)
{
	(void)state;
	sh = kit_shared();
	if (!sh || kit_zone_dir(dir) != 0)
		return -1;
	return tk_clock_custom_new(&clock_, now_of, NULL) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	redis_kit_destroy(&kit);
	tk_clock_free(clock_);
	return kit_zone_dir_remove(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_unchecked),
		cmocka_unit_test(test_edge),
		cmocka_unit_test(test_once),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
