/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_composite.c - all(...) and any(...): no partial consumption, the
 * representative decision, and atomicity under threads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <throttlekit.h>

#define T0 UINT64_C(1700000000000000000)
#define SEC UINT64_C(1000000000)

struct fx {
	struct tk_clock *clock;
	struct tk_limiter *l;
};

static void fx_open(struct fx *f, const char *policy)
{
	struct tk_options o = TK_OPTIONS_INIT;

	assert_int_equal(tk_clock_manual_new(&f->clock, T0), 0);
	o.clock = f->clock;
	assert_int_equal(tk_limiter_open(&f->l, policy, "memory", &o), 0);
}

static void fx_close(struct fx *f)
{
	tk_limiter_close(f->l);
	tk_clock_free(f->clock);
}

static struct tk_decision two(struct fx *f, const char *a, const char *b,
			      uint64_t cost)
{
	struct tk_key k[2] = { { a, strlen(a) }, { b, strlen(b) } };
	struct tk_decision d;

	assert_int_equal(tk_limiter_check_keys(f->l, k, 2, cost, &d), 0);
	return d;
}

/* A per-IP and a per-user dimension, each with its own key. */
static void test_all_denies_without_consuming(void **state)
{
	struct fx f;
	int i;

	(void)state;
	fx_open(&f, "all(gcra:3/1h,fixed-window:1/1h)");
	assert_true(two(&f, "ip1", "alice", 1).allowed);
	/* alice is out of quota: ip2 must not pay for the denied try. */
	for (i = 0; i < 5; i++)
		assert_false(two(&f, "ip2", "alice", 1).allowed);
	assert_true(two(&f, "ip2", "bob", 1).allowed);
	assert_true(two(&f, "ip2", "carol", 1).allowed);
	assert_true(two(&f, "ip2", "dave", 1).allowed);
	/* Now ip2's burst of 3 is spent. */
	assert_false(two(&f, "ip2", "erin", 1).allowed);
	/* ...and erin was not charged either. */
	assert_true(two(&f, "ip3", "erin", 1).allowed);
	fx_close(&f);
}

static void test_any_consumes_only_admitting(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "any(fixed-window:1/1h,fixed-window:2/1h)");
	/* Both admit: both consume; the loosest (most remaining) reports. */
	d = two(&f, "k", "k", 1);
	assert_true(d.allowed);
	assert_int_equal(d.limit, 2);
	assert_int_equal(d.remaining, 1);
	/* Only the second admits: it alone consumes. */
	d = two(&f, "k", "k", 1);
	assert_true(d.allowed);
	assert_int_equal(d.limit, 2);
	assert_int_equal(d.remaining, 0);
	/* Neither: the soonest-ready reports; both windows end together,
	 * so the tie goes to the first dimension. */
	d = two(&f, "k", "k", 1);
	assert_false(d.allowed);
	assert_int_equal(d.limit, 1);
	fx_close(&f);
}

static void test_representative_decisions(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	/* all(): allowed reports the least remaining... */
	fx_open(&f, "all(gcra:10/1s,fixed-window:4/1m)");
	d = two(&f, "a", "a", 1);
	assert_true(d.allowed);
	assert_int_equal(d.limit, 4);
	assert_int_equal(d.remaining, 3);
	/* ...denied reports the largest retry_after among the deniers. */
	d = two(&f, "a", "a", 4);
	assert_false(d.allowed);
	assert_int_equal(d.limit, 4);
	assert_int_equal(d.retry_after, 60 * SEC - (T0 % (60 * SEC)));
	fx_close(&f);

	/* Ties go to the first dimension in declaration order. */
	fx_open(&f, "all(fixed-window:5/1m,fixed-window:5/1h)");
	d = two(&f, "a", "a", 1);
	assert_int_equal(d.remaining, 4);
	assert_int_equal(d.reset_at, T0 - T0 % (60 * SEC) + 60 * SEC);
	fx_close(&f);
}

static void test_one_key_for_every_dimension(void **state)
{
	struct tk_decision d;
	struct fx f;
	int i;

	(void)state;
	fx_open(&f, "all(gcra:100/1s,burst=3,fixed-window:5/1h)");
	for (i = 0; i < 3; i++) {
		assert_int_equal(tk_limiter_check(f.l, "k", 1, 1, &d), 0);
		assert_true(d.allowed);
	}
	assert_int_equal(tk_limiter_check(f.l, "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	/* Peek does not consume and reports the binding dimension. */
	assert_int_equal(tk_limiter_peek(f.l, "k", 1, &d), 0);
	assert_false(d.allowed);
	assert_int_equal(tk_limiter_reset(f.l, "k", 1), 0);
	assert_int_equal(tk_limiter_check(f.l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 2);
	fx_close(&f);
}

/*
 * A shaper that admits queues the request: the reported delay is the
 * longest of the admitting dimensions, whichever dimension reports.
 */
static void test_shaper_delay(void **state)
{
	static const uint64_t MS = SEC / 1000;
	struct tk_decision d;
	struct fx f;
	uint64_t i;

	(void)state;
	/* gcra (less remaining) reports; leaky queues 100 ms per request. */
	fx_open(&f, "all(leaky:10/1s,max-queue=1s,gcra:100/1s,burst=3)");
	for (i = 0; i < 3; i++) {
		assert_int_equal(tk_limiter_check(f.l, "k", 1, 1, &d), 0);
		assert_true(d.allowed);
		assert_int_equal(d.limit, 3);
		assert_int_equal(d.remaining, 2 - i);
		assert_int_equal(d.delay, i * 100 * MS);
	}
	/* gcra denies: nothing is queued, whatever leaky would say. */
	assert_int_equal(tk_limiter_check(f.l, "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	assert_int_equal(d.delay, 0);
	fx_close(&f);

	/* any(): the fixed window (more remaining) reports. */
	fx_open(&f, "any(leaky:10/1s,max-queue=1s,fixed-window:100/1h)");
	for (i = 0; i < 3; i++) {
		assert_int_equal(tk_limiter_check(f.l, "k", 1, 1, &d), 0);
		assert_true(d.allowed);
		assert_int_equal(d.limit, 100);
		assert_int_equal(d.delay, i * 100 * MS);
	}
	fx_close(&f);

	/* Two shapers: the longer queue. */
	fx_open(&f, "all(leaky:10/1s,max-queue=1s,leaky:4/1s,max-queue=1s)");
	assert_int_equal(tk_limiter_check(f.l, "k", 1, 1, &d), 0);
	assert_int_equal(tk_limiter_check(f.l, "k", 1, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.delay, 250 * MS);
	fx_close(&f);
}

/* Looking is free: a peek or a denial on unseen keys stores nothing. */
static void test_reads_create_no_keys(void **state)
{
	struct tk_key k[2] = { { "new-ip", 6 }, { "new-user", 8 } };
	struct tk_decision d;
	struct tk_stats st;
	struct fx f;

	(void)state;
	fx_open(&f, "all(gcra:10/1s,fixed-window:5/1h)");
	assert_int_equal(tk_limiter_peek(f.l, "k", 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(tk_limiter_forecast(f.l, "k", 1, 5, &d), 0);
	assert_int_equal(tk_limiter_stats(f.l, &st, sizeof(st)), 0);
	assert_int_equal(st.keys, 0);
	assert_int_equal(tk_limiter_check_keys(f.l, k, 2, 1, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(tk_limiter_stats(f.l, &st, sizeof(st)), 0);
	assert_int_equal(st.keys, 2);
	fx_close(&f);
}

static void test_errors(void **state)
{
	struct tk_key k[3] = { { "a", 1 }, { "b", 1 }, { "c", 1 } };
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "all(gcra:10/1s,burst=2,fixed-window:5/1h)");
	/* A cost one dimension can never admit: all() never can. */
	assert_int_equal(tk_limiter_check_keys(f.l, k, 2, 3, &d), -ERANGE);
	/* One key per dimension, exactly. */
	assert_int_equal(tk_limiter_check_keys(f.l, k, 3, 1, &d), -EINVAL);
	assert_int_equal(tk_limiter_check_keys(f.l, k, 1, 1, &d), -EINVAL);
	fx_close(&f);
	fx_open(&f, "any(gcra:10/1s,burst=2,fixed-window:5/1h)");
	/* any(): the dimension that can admit decides. */
	assert_int_equal(tk_limiter_check_keys(f.l, k, 2, 3, &d), 0);
	assert_true(d.allowed);
	assert_int_equal(d.limit, 5);
	assert_int_equal(tk_limiter_check_keys(f.l, k, 2, 6, &d), -ERANGE);
	fx_close(&f);
}

struct worker {
	struct tk_limiter *l;
	char user[16];
	unsigned int allowed;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct tk_key k[2] = { { "ip", 2 }, { w->user, strlen(w->user) } };
	struct tk_decision d;
	int i;

	for (i = 0; i < 400; i++)
		if (tk_limiter_check_keys(w->l, k, 2, 1, &d) == 0 && d.allowed)
			w->allowed++;
	return NULL;
}

/*
 * Four users behind one IP: the IP allows 1000, each user 300.  The step
 * is atomic, so the IP admits exactly 1000, and each user was charged for
 * exactly what it was admitted (measured afterwards from a fresh IP).
 */
static void test_all_is_atomic_under_threads(void **state)
{
	struct tk_decision d;
	struct worker w[4];
	pthread_t th[4];
	unsigned int i, total = 0, more;
	struct fx f;

	(void)state;
	fx_open(&f, "all(fixed-window:1000/1h,fixed-window:300/1h)");
	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){ f.l, "", 0 };
		snprintf(w[i].user, sizeof(w[i].user), "user%u", i);
		assert_int_equal(
			pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		total += w[i].allowed;
	}
	assert_int_equal(total, 1000);
	for (i = 0; i < 4; i++) {
		for (more = 0;; more++) {
			d = two(&f, "fresh-ip", w[i].user, 1);
			if (!d.allowed)
				break;
		}
		assert_int_equal(more, 300 - w[i].allowed);
	}
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_denies_without_consuming),
		cmocka_unit_test(test_any_consumes_only_admitting),
		cmocka_unit_test(test_representative_decisions),
		cmocka_unit_test(test_one_key_for_every_dimension),
		cmocka_unit_test(test_shaper_delay),
		cmocka_unit_test(test_reads_create_no_keys),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_all_is_atomic_under_threads),
	};

	return cmocka_run_group_tests_name("composite", tests, NULL, NULL);
}
