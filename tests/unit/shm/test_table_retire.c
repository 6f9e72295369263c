/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_table_retire.c - the tables a private table's growths retire are
 * freed after grace periods (shm/grow.c, tk__table_reclaim()):
 *
 * - once growths complete, a reclaim frees every retired table, and only
 *   after two grace periods: at the first none is unlinked, at the
 *   second every one is unlinked and none freed yet;
 * - the event counters stay exact across the frees (a freed table's
 *   counters are kept, counted once);
 * - a key that moved is reset, and stays reset, once the table it moved
 *   from is freed;
 * - threads inserting, growing the table, resetting and reading its
 *   counters inside read-side sections while another thread reclaims:
 *   every state kept, every reset made, no access to a freed table (run
 *   under ASan and TSan, the latter seeing grace periods through
 *   lib/rcu.h);
 * - a memory store's reclaimer thread frees them; without the thread
 *   they stay until the store is closed.
 *
 * White-box (statically linked): the table has no public interface.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include <throttlekit.h>

#include "../../shm/word.h"
#include "store/store-ops.h"
#include "test-hooks.h"
#include "rcu.h"
#include "table-kit.h"

#define T0 KIT_T0

static const uint64_t seed[2] = { 7, 8 };

#define key kit_word_key
#define count_fn kit_count_fn
#define count kit_count

static void bump(struct tk__table *t, uint64_t i)
{
	struct tk__zone_key k = key(i);

	assert_int_equal(tk__table_apply(t, &k, T0, 1, count_fn, NULL),
			 TK__ZONE_PERSIST);
}

/* Insert keys from *@i on until @g growths have happened and the last
 * has completed (the newest table has no old). */
static void grow_to(struct tk__table *t, uint64_t *i, uint64_t g)
{
	while (tk__table_growths(t) < g ||
	       tk__zone_old(tk__table_zone(t)) != NULL)
		bump(t, (*i)++);
}

/* The grace periods a reclaim waits for, and what it has done by each. */
static struct tk__table *seen_table;
static int syncs;
static uint64_t retired_at[2], freed_at[2], inserts_at[2];

static void counting_sync(void)
{
	uint64_t n[TKZ_COUNTERS];

	assert_true(syncs < 2);
	retired_at[syncs] = tk__table_retired(seen_table);
	freed_at[syncs] = tk__table_freed(seen_table);
	tk__table_counters(seen_table, n);
	inserts_at[syncs] = n[TKZ_INSERTS];
	syncs++;
	tk__rcu_synchronize();
}

static uint64_t reclaim(struct tk__table *t)
{
	seen_table = t;
	syncs = 0;
	return tk__table_reclaim(t, counting_sync);
}

static void test_retired_freed_after_grace(void **state)
{
	struct tk__table *t = kit_table(64, UINT64_C(1) << 20, seed, T0);
	uint64_t i = 0, g;

	(void)state;
	/* Nothing retired: nothing to wait for. */
	assert_int_equal(reclaim(t), 0);
	assert_int_equal(syncs, 0);
	grow_to(t, &i, 4);
	g = tk__table_growths(t);
	assert_int_equal(tk__table_retired(t), g);
	assert_int_equal(reclaim(t), g);
	assert_int_equal(syncs, 2);
	/* First grace period: nothing unlinked yet.  Second: every one
	 * unlinked, none freed.  Then all freed. */
	assert_int_equal(retired_at[0], g);
	assert_int_equal(freed_at[0], 0);
	assert_int_equal(retired_at[1], 0);
	assert_int_equal(freed_at[1], 0);
	assert_int_equal(tk__table_freed(t), g);
	assert_int_equal(tk__table_retired(t), 0);
	/* Freed once: the next reclaim has nothing to do. */
	assert_int_equal(reclaim(t), 0);
	assert_int_equal(syncs, 0);
	/* A growth under way keeps its old: not retired, not freed. */
	while (tk__zone_old(tk__table_zone(t)) == NULL)
		bump(t, i++);
	assert_int_equal(reclaim(t), 0);
	grow_to(t, &i, tk__table_growths(t));
	assert_int_equal(reclaim(t), 1);
	assert_int_equal(tk__table_freed(t), g + 1);
	/* Every key kept its state. */
	while (i-- > 0)
		assert_int_equal(count(t, i), 1);
	tk__table_free(t);
}

static void test_counters_exact_across_frees(void **state)
{
	struct tk__table *t = kit_table(64, UINT64_C(1) << 20, seed, T0);
	uint64_t n[TKZ_COUNTERS], i = 0, j, resets = 0;
	struct tk__zone_key k;

	(void)state;
	grow_to(t, &i, 3);
	/* Updates count no insert; resets count in the table of the key. */
	for (j = 0; j < i; j += 3)
		bump(t, j);
	for (j = 1; j < i; j += 7) {
		k = key(j);
		assert_int_equal(tk__table_reset(t, &k, T0), 0);
		resets++;
	}
	tk__table_counters(t, n);
	assert_int_equal(n[TKZ_INSERTS], i);
	assert_int_equal(n[TKZ_RESETS], resets);
	assert_int_equal(tk__table_keys(t), i - resets);
	assert_true(reclaim(t) >= 3);
	/* The same, read at each grace period and after the free. */
	assert_int_equal(inserts_at[0], i);
	assert_int_equal(inserts_at[1], i);
	tk__table_counters(t, n);
	assert_int_equal(n[TKZ_INSERTS], i);
	assert_int_equal(n[TKZ_RESETS], resets);
	assert_int_equal(tk__table_keys(t), i - resets);
	/* And on, through growths of tables whose predecessors are gone. */
	j = i;
	grow_to(t, &i, tk__table_growths(t) + 2);
	assert_int_equal(reclaim(t), 2);
	tk__table_counters(t, n);
	assert_int_equal(n[TKZ_INSERTS], i);
	assert_int_equal(n[TKZ_RESETS], resets);
	assert_int_equal(tk__table_keys(t), i - resets);
	assert_true(i > j);
	tk__table_free(t);
}

static void test_reset_of_moved_key_after_free(void **state)
{
	struct tk__table *t = kit_table(64, UINT64_C(1) << 20, seed, T0);
	uint64_t i = 1000, n;
	struct tk__zone_key k = key(1);

	(void)state;
	for (n = 0; n < 5; n++)
		bump(t, 1);
	grow_to(t, &i, 2);
	assert_int_equal(count(t, 1), 5);
	assert_int_equal(reclaim(t), 2);
	/* The table it moved from, and the last one retired, are freed. */
	assert_int_equal(tk__table_reset(t, &k, T0), 0);
	assert_int_equal(count(t, 1), 0);
	bump(t, 1);
	assert_int_equal(count(t, 1), 1);
	/* Reset again while the next growth moves it. */
	while (tk__zone_old(tk__table_zone(t)) == NULL)
		bump(t, i++);
	assert_int_equal(tk__table_reset(t, &k, T0), 0);
	grow_to(t, &i, tk__table_growths(t));
	assert_int_equal(reclaim(t), 1);
	assert_int_equal(count(t, 1), 0);
	tk__table_free(t);
}

/*
 * Threads racing with a reclaiming thread.  Each inserter owns keys
 * [base, base + KEYS) and applies each one twice; the resetter resets
 * keys of its own and reads the counters; the reclaimer frees retired
 * tables until the others are done.
 */
#define INSERTERS 2
#define KEYS 6000

struct race {
	struct tk__table *t;
	atomic_int running; /* threads that are not the reclaimer */
	atomic_int errors;
	uint64_t resets; /* the resetter's */
};

struct inserter {
	struct race *r;
	uint64_t base;
};

static int in_section_apply(struct tk__table *t, uint64_t i)
{
	struct tk__zone_key k = key(i);
	int rc;

	tk__rcu_read_lock();
	rc = tk__table_apply(t, &k, T0, 1, count_fn, NULL);
	tk__rcu_read_unlock();
	return rc;
}

static void *inserter_main(void *arg)
{
	struct inserter *in = arg;
	struct tk__table *t = in->r->t;
	uint64_t j;
	int bad = 0;

	/* Each key inserted, then updated 64 keys later. */
	for (j = 0; j < KEYS + 64; j++) {
		if (j < KEYS)
			bad |= in_section_apply(t, in->base + j) !=
			       TK__ZONE_PERSIST;
		if (j >= 64)
			bad |= in_section_apply(t, in->base + j - 64) !=
			       TK__ZONE_PERSIST;
	}
	if (bad)
		atomic_fetch_add(&in->r->errors, 1);
	atomic_fetch_sub(&in->r->running, 1);
	return NULL;
}

#define RESET_BASE (UINT64_C(1) << 30)

static void *resetter_main(void *arg)
{
	struct race *r = arg;
	uint64_t n[TKZ_COUNTERS], j = 0;
	struct tk__zone_key k;
	int bad = 0;

	while (atomic_load(&r->running) > 1) {
		bad |= in_section_apply(r->t, RESET_BASE + j) !=
		       TK__ZONE_PERSIST;
		k = key(RESET_BASE + j);
		tk__rcu_read_lock();
		bad |= tk__table_reset(r->t, &k, T0) != 0;
		tk__table_counters(r->t, n);
		(void)tk__table_keys(r->t);
		tk__rcu_read_unlock();
		r->resets++;
		j++;
	}
	if (bad)
		atomic_fetch_add(&r->errors, 1);
	atomic_fetch_sub(&r->running, 1);
	return NULL;
}

static void test_reclaim_races_growth(void **state)
{
	struct race r = { .t = kit_table(64, UINT64_C(1) << 20, seed, T0) };
	struct inserter in[INSERTERS];
	pthread_t th[INSERTERS + 1];
	uint64_t n[TKZ_COUNTERS], i, freed = 0;
	int j;

	(void)state;
	atomic_init(&r.running, INSERTERS + 1);
	atomic_init(&r.errors, 0);
	for (j = 0; j < INSERTERS; j++) {
		in[j].r = &r;
		in[j].base = (uint64_t)j * KEYS;
		assert_int_equal(
			pthread_create(&th[j], NULL, inserter_main, &in[j]), 0);
	}
	assert_int_equal(
		pthread_create(&th[INSERTERS], NULL, resetter_main, &r), 0);
	while (atomic_load(&r.running) > 0)
		freed += tk__table_reclaim(r.t, tk__rcu_synchronize);
	for (j = 0; j <= INSERTERS; j++)
		assert_int_equal(pthread_join(th[j], NULL), 0);
	assert_int_equal(atomic_load(&r.errors), 0);
	assert_true(tk__table_growths(r.t) >= 5);
	/* Reads finish the last growth; then every growth's table is
	 * freed. */
	while (tk__zone_old(tk__table_zone(r.t)) != NULL)
		(void)count(r.t, 0);
	freed += tk__table_reclaim(r.t, tk__rcu_synchronize);
	assert_int_equal(freed, tk__table_growths(r.t));
	assert_int_equal(tk__table_freed(r.t), freed);
	/* Every state kept, every reset made and counted once, every
	 * insert counted once (a key whose insert committed "no state" in
	 * a table that froze before its first write inserts again in the
	 * successor, carried over: test_table_counts.c). */
	for (i = 0; i < INSERTERS * KEYS; i++)
		assert_int_equal(count(r.t, i), 2);
	tk__table_counters(r.t, n);
	assert_int_equal(n[TKZ_INSERTS], INSERTERS * KEYS + r.resets);
	assert_int_equal(n[TKZ_RESETS], r.resets);
	assert_int_equal(tk__table_keys(r.t), INSERTERS * KEYS);
	tk__table_free(r.t);
}

/* A memory store grown by @n keys' checks, its last growth completed. */
static struct tk_store *grown_store(unsigned int flags, uint64_t n)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_decision d;
	struct tk_limiter *lim;
	struct tk_store *st;
	struct tk__table *t;
	char key[32];
	uint64_t i;
	int moving;

	o.flags = flags;
	o.reclaim_interval = UINT64_C(1000000); /* 1 ms */
	assert_int_equal(tk_store_open(&st, "memory", &o), 0);
	o.store = st;
	assert_int_equal(tk_limiter_open(&lim, "gcra:100/1h", NULL, &o), 0);
	t = tk__memory_table(st);
	for (i = 0;; i++) {
		snprintf(key, sizeof(key), "k%llu",
			 (unsigned long long)(i % n));
		assert_int_equal(tk_limiter_check(lim, key, strlen(key), 1, &d),
				 0);
		tk__rcu_read_lock();
		moving = tk__zone_old(tk__table_zone(t)) != NULL;
		tk__rcu_read_unlock();
		if (i >= n && !moving)
			break;
	}
	tk_limiter_close(lim);
	assert_true(tk__table_growths(t) >= 3);
	return st;
}

static void test_store_reclaimer_frees(void **state)
{
	struct timespec ms = { 0, 1000000 };
	struct tk_store *st = grown_store(0, 5000);
	struct tk_stats s;
	struct tk__table *t = tk__memory_table(st);
	int waited;

	(void)state;
	/* Its thread's passes, every millisecond: well within 10 s. */
	for (waited = 0; waited < 10000; waited++) {
		if (tk__table_freed(t) == tk__table_growths(t))
			break;
		nanosleep(&ms, NULL);
	}
	assert_int_equal(tk__table_freed(t), tk__table_growths(t));
	assert_int_equal(tk__table_retired(t), 0);
	/* Nothing held but the table in use. */
	assert_int_equal(tk_store_stats(st, &s, sizeof(s)), 0);
	assert_true(s.live > 0);
	assert_int_equal(s.reserved, s.live);
	tk_store_close(st);
}

static void test_store_without_reclaimer_keeps(void **state)
{
	struct tk_store *st = grown_store(TK_OPT_NO_RECLAIMER, 5000);
	struct tk__table *t = tk__memory_table(st);
	const struct tkz_geo *g = tk__zone_geo(tk__table_zone(t));
	uint64_t slots = g->capacity * sizeof(struct tkz_slot);
	struct tk_stats s;

	(void)state;
	/* Until close (which frees them: the sanitizers' leak check). */
	assert_int_equal(tk__table_freed(t), 0);
	assert_int_equal(tk__table_retired(t), tk__table_growths(t));
	/* Held, not in use: grown for their windows (word keys), their
	 * slot tables halve, so together they have fewer slots than the
	 * newest, and each the newest's arena at most (what is not slots,
	 * with its header). */
	assert_int_equal(tk_store_stats(st, &s, sizeof(s)), 0);
	assert_int_equal(s.live, g->segment_size);
	assert_true(s.reserved > s.live);
	assert_true(s.reserved - s.live <
		    slots + tk__table_growths(t) * (s.live - slots));
	tk_store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retired_freed_after_grace),
		cmocka_unit_test(test_counters_exact_across_frees),
		cmocka_unit_test(test_reset_of_moved_key_after_free),
		cmocka_unit_test(test_reclaim_races_growth),
		cmocka_unit_test(test_store_reclaimer_frees),
		cmocka_unit_test(test_store_without_reclaimer_keeps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
