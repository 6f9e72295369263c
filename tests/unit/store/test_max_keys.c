/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_max_keys.c - max_keys bounds a memory store's live keys: a new
 * key beyond it evicts the coldest key (a key used once before one used
 * again; of those, the one whose state expires first), and the table
 * holds max_keys keys, never more, whether or not its slots are full; a
 * composite or group with more dimensions than max_keys is refused
 * (-ENOTSUP), never left to fail or pass under the fail policy.
 *
 * The victim is the coldest of a sample (tk_store_open(3), "Sizing the
 * memory store"): in a table of 64 slots the sample is every slot, so
 * the coldest there is the coldest of all.
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

#include "memory-kit.h"

#define BURST 1000
/* Cost c holds a key's state c hours: expiry follows the cost. */
#define POLICY "gcra:1/1h,burst=1000"

static void open_bounded(struct fixture *f, uint64_t max_keys)
{
	open_fixture(f, POLICY, max_keys, TK_OPT_NO_RECLAIMER, 0);
}

static void use(struct fixture *f, const char *key, uint64_t cost)
{
	assert_true(check(f, key, cost));
}

/* What @key could still admit: BURST for a key the store does not hold
 * (a peek inserts nothing). */
static uint64_t left(struct fixture *f, const char *key)
{
	struct tk_decision d;

	assert_int_equal(tk_limiter_peek(f->lim, key, strlen(key), &d), 0);
	return d.remaining;
}

/* Keys, inserts and evictions as the store counts them. */
static void expect_counts(struct fixture *f, uint64_t keys, uint64_t inserts,
			  uint64_t evictions)
{
	struct tk_stats st = stats_of(f);

	assert_int_equal(st.keys, keys);
	assert_int_equal(st.inserts, inserts);
	assert_int_equal(st.evictions, evictions);
}

/*
 * max_keys N, N keys used once at distinct costs (their states expire in
 * another order than they came): each new key evicts exactly one, the
 * one that expires first of those left, and the store holds N keys.  For
 * N = 1 the new key's candidates do not hold the old one half the time.
 */
static void test_one_more_evicts_the_coldest(void **state)
{
	static const unsigned int bound[] = { 1, 2, 7, 20 };
	struct fixture f;
	char key[32];
	unsigned int b, n, i, j;

	(void)state;
	for (b = 0; b < sizeof(bound) / sizeof(bound[0]); b++) {
		n = bound[b];
		open_bounded(&f, n);
		for (i = 0; i < n; i++) {
			snprintf(key, sizeof(key), "old-%u", i);
			use(&f, key, (i * 3) % n + 1);
		}
		expect_counts(&f, n, n, 0);
		for (j = 0; j < n; j++) {
			snprintf(key, sizeof(key), "new-%u-%u", b, j);
			use(&f, key, BURST - j);
			expect_counts(&f, n, n + j + 1, j + 1);
		}
		close_fixture(&f);
		/* Gone in the order their states expire: cost 1 first. */
		for (j = 0; j < n; j++) {
			open_bounded(&f, n);
			for (i = 0; i < n; i++) {
				snprintf(key, sizeof(key), "old-%u", i);
				use(&f, key, (i * 3) % n + 1);
			}
			for (i = 0; i < j; i++) {
				snprintf(key, sizeof(key), "new-%u", i);
				use(&f, key, BURST - i);
			}
			for (i = 0; i < n; i++) {
				snprintf(key, sizeof(key), "old-%u", i);
				assert_int_equal(left(&f, key),
						 (i * 3) % n < j
							 ? BURST
							 : BURST - (i * 3) % n -
								   1);
			}
			close_fixture(&f);
		}
	}
}

/*
 * A key used again outlives one used once, even one whose state
 * expires last: the new key takes the key used once.
 */
static void test_used_again_outlives_used_once(void **state)
{
	struct fixture f;
	char key[32];
	unsigned int i;

	(void)state;
	open_bounded(&f, 20);
	for (i = 0; i < 19; i++) {
		snprintf(key, sizeof(key), "hot-%u", i);
		use(&f, key, 1);
		use(&f, key, 1);
	}
	use(&f, "once", 500);
	use(&f, "new", 1);
	expect_counts(&f, 20, 21, 1);
	assert_int_equal(left(&f, "once"), BURST);
	for (i = 0; i < 19; i++) {
		snprintf(key, sizeof(key), "hot-%u", i);
		assert_int_equal(left(&f, key), BURST - 2);
	}
	assert_int_equal(left(&f, "new"), BURST - 1);
	close_fixture(&f);
}

/*
 * A table that grows: the bound holds while it grows from 1024 slots
 * (up to the 8192 that 3000 keys may take), and after: three times as
 * many keys as the bound leave it holding the bound, every key beyond it
 * an eviction.
 */
static void test_bound_while_growing(void **state)
{
	struct fixture f;
	struct tk_stats st;
	char key[32];
	unsigned int i;

	(void)state;
	open_bounded(&f, 3000);
	for (i = 0; i < 9000; i++) {
		snprintf(key, sizeof(key), "k-%u", i);
		use(&f, key, 1 + i % 50);
		if (i % 500 == 499) {
			st = stats_of(&f);
			assert_int_equal(st.keys, i < 3000 ? i + 1 : 3000);
		}
	}
	expect_counts(&f, 3000, 9000, 6000);
	st = stats_of(&f);
	assert_true(st.capacity == 8192);
	close_fixture(&f);
}

#define THREADS 4
#define PER_THREAD 5000
#define BOUND 500

struct worker {
	struct fixture *f;
	unsigned int id;
	int errors;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct tk_decision d;
	char key[32];
	unsigned int i;

	for (i = 0; i < PER_THREAD; i++) {
		snprintf(key, sizeof(key), "t%u-%u", w->id, i);
		if (tk_limiter_check(w->f->lim, key, strlen(key), 1, &d) != 0 ||
		    !d.allowed)
			w->errors++;
	}
	return NULL;
}

/*
 * Threads inserting new keys together: each insert counts the keys
 * before it takes a slot or evicts one, so the store may hold one key
 * more, or fewer, per insert in flight with it, never more; the counts
 * add up.
 */
static void test_bound_under_threads(void **state)
{
	struct worker w[THREADS];
	pthread_t th[THREADS];
	struct fixture f;
	struct tk_stats st;
	unsigned int i;

	(void)state;
	open_bounded(&f, BOUND);
	for (i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ &f, i, 0 };
		assert_int_equal(
			pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].errors, 0);
	}
	st = stats_of(&f);
	assert_true(st.keys > BOUND - THREADS && st.keys < BOUND + THREADS);
	assert_int_equal(st.inserts, THREADS * PER_THREAD);
	assert_int_equal(st.evictions, st.inserts - st.keys);
	close_fixture(&f);
}

/*
 * A composite's dimensions are keys updated in one step: with fewer
 * max_keys than dimensions they could never all be held, so the limiter
 * does not open (-ENOTSUP, as for any policy a store cannot run; before,
 * each check's inserts evicted each other until it gave up with -EIO a
 * second later), nor does tk_limiter_set_policy() take such a policy.
 * As many max_keys as dimensions is enough.
 */
static void test_more_dimensions_than_keys(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;
	struct fixture f;
	int i;

	(void)state;
	open_fixture(&f, "gcra:5/s", 1, TK_OPT_NO_RECLAIMER, 0);
	o.clock = f.clock;
	o.store = f.store;
	assert_int_equal(
		tk_limiter_open(&l, "all(gcra:5/s,gcra:10/s)", NULL, &o),
		-ENOTSUP);
	assert_null(l);
	assert_int_equal(
		tk_limiter_set_policy(f.lim, "all(gcra:5/s,gcra:10/s)"),
		-ENOTSUP);
	expect_counts(&f, 0, 0, 0);
	close_fixture(&f);
	open_fixture(&f, "all(gcra:5/s,gcra:10/s)", 2, TK_OPT_NO_RECLAIMER,
		     0);
	for (i = 0; i < 5; i++)
		assert_true(check(&f, "k", 1));
	assert_false(check(&f, "k", 1));
	expect_counts(&f, 2, 2, 0);
	close_fixture(&f);
}

/*
 * So is a group of two limiters on a store of max_keys 1, at its check
 * (the group is known only then): -ENOTSUP, inserting nothing, and not
 * a degraded admission under fail=open, which would stop limiting.
 */
static void test_group_larger_than_keys(void **state)
{
	const struct tk_key keys[2] = { { "a", 1 }, { "b", 1 } };
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *ls[2];
	struct tk_decision d;
	struct fixture f;

	(void)state;
	open_fixture(&f, "gcra:5/s", 1, TK_OPT_NO_RECLAIMER, 0);
	o.clock = f.clock;
	o.store = f.store;
	o.fail = TK_FAIL_OPEN;
	assert_int_equal(tk_limiter_open(&ls[0], "gcra:5/s", NULL, &o), 0);
	assert_int_equal(tk_limiter_open(&ls[1], "gcra:10/s", NULL, &o), 0);
	assert_int_equal(tk_limiter_check_group(ls, keys, 2, 1, &d, NULL, 0),
			 -ENOTSUP);
	expect_counts(&f, 0, 0, 0);
	tk_limiter_close(ls[1]);
	tk_limiter_close(ls[0]);
	close_fixture(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_more_evicts_the_coldest),
		cmocka_unit_test(test_used_again_outlives_used_once),
		cmocka_unit_test(test_bound_while_growing),
		cmocka_unit_test(test_bound_under_threads),
		cmocka_unit_test(test_more_dimensions_than_keys),
		cmocka_unit_test(test_group_larger_than_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
