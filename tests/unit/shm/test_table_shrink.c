/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_table_shrink.c - a private table that holds few keys shrinks
 * (shm/grow.c, tk__table_shrink(); "Shrinking a private table" in
 * docs/shm-protocol.md):
 *
 * - once its keys expire, a table grown to 8192 slots shrinks to its
 *   first size, every live key keeps its state, and the bytes held come
 *   back once the reclaim frees the large one;
 * - its arena shrinks to twice the pages its blocks take, and one per
 *   size class;
 * - below an eighth of the slots, not at it; to a quarter for the keys
 *   it holds, so that it does not shrink again until they halve
 *   (hysteresis), and every key moves;
 * - new keys flooding the small table while its keys move leave room
 *   for them: the move finishes;
 * - threads that keep updating their keys, and inserting new ones,
 *   while the reclaimer shrinks the table under them: every update kept;
 * - more tables than retired[] has entries, growing and shrinking in
 *   turn: the counters stay exact;
 * - a memory store whose keys expired gives its memory back, its
 *   reclaimer thread shrinking the table (tk_stats reserved and live).
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
#include <string.h>
#include <time.h>

#include <throttlekit.h>

#include "../../shm/word.h"
#include "store/store-ops.h"
#include "test-hooks.h"
#include "fork.h"
#include "rcu.h"
#include "table-kit.h"

#define T0 KIT_T0
#define HOUR (UINT64_C(3600) * 1000000000)
/* Past KIT_BASE, when the states of kit_count_fn() expire, and the
 * default grace of 60 s. */
#define LATER (KIT_BASE + 2 * UINT64_C(60000000000))
/* The base of the counts that outlive the test. */
#define LONG (T0 + 100 * HOUR)

static const uint64_t seed[2] = { 31, 32 };

/* No operation runs in another thread: no grace period to wait for. */
static void no_readers(void)
{
}

static const struct tkz_geo *geo(struct tk__table *t)
{
	return tk__zone_geo(tk__table_zone(t));
}

/* Count one more in word key @i whose state is @base + its count (it
 * expires then); the apply's result. */
static int count_from(void *ctx, const uint64_t *old, uint64_t *next,
		      uint64_t *expires)
{
	next[0] = old ? old[0] + 1 : *(const uint64_t *)ctx + 1;
	*expires = next[0];
	return TK__ZONE_PERSIST;
}

static int bump_from(struct tk__table *t, uint64_t i, uint64_t base,
		     uint64_t now)
{
	struct tk__zone_key k = kit_word_key(i);

	return tk__table_apply(t, &k, now, 1, count_from, &base);
}

/* Word key @i's count above @base (0: no state). */
static uint64_t count_of(struct tk__table *t, uint64_t i, uint64_t base)
{
	struct tk__zone_key k = kit_word_key(i);
	uint64_t n = UINT64_MAX;

	assert_int_equal(tk__table_apply(t, &k, T0, 1, kit_read_fn, &n),
			 TK__ZONE_KEEP);
	return n ? n + KIT_BASE - base : 0;
}

/* A reclaimer's pass at @now, alone (as lib/store/store-memory.c's): finish a
 * move, sweep, free, and shrink the table if it holds few keys.  Whether
 * it shrank. */
static int pass(struct tk__table *t, uint64_t now)
{
	int rc;

	assert_int_equal(tk__table_move(t, now), 0);
	tk__zone_sweep_all(tk__table_zone(t), now);
	tk__table_reclaim(t, no_readers);
	tk__table_clear(t, no_readers);
	rc = tk__table_shrink(t);
	assert_true(rc >= 0);
	assert_int_equal(tk__table_move(t, now), 0);
	return rc;
}

static void test_shrinks_once_keys_expire(void **state)
{
	struct tk__table *t = kit_table(64, UINT64_C(1) << 20, seed, T0);
	uint64_t n[TKZ_COUNTERS], i;

	(void)state;
	/* 5000 that expire, 10 that do not (key i counts to i + 1). */
	for (i = 0; i < 5000; i++)
		assert_int_equal(bump_from(t, i, KIT_BASE, T0),
				 TK__ZONE_PERSIST);
	for (i = 5000; i < 5010; i++)
		while (count_of(t, i, LONG) < i - 4999)
			assert_int_equal(bump_from(t, i, LONG, T0),
					 TK__ZONE_PERSIST);
	assert_true(geo(t)->capacity >= 8192);
	/* Not while a growth's table waits to be freed (and its entry of
	 * retired[] to be emptied): then the pass frees it, and shrinks. */
	assert_int_equal(tk__table_move(t, LATER), 0);
	tk__zone_sweep_all(tk__table_zone(t), LATER);
	assert_true(tk__table_retired(t) > 0);
	assert_int_equal(tk__table_shrink(t), 0);
	assert_int_equal(pass(t, LATER), 1);
	assert_int_equal(tk__table_shrinks(t), 1);
	assert_int_equal(geo(t)->capacity, 64);
	assert_int_equal(geo(t)->pages, 4);
	for (i = 5000; i < 5010; i++)
		assert_int_equal(count_of(t, i, LONG), i - 4999);
	kit_census_clean(t, 10);
	/* The next pass frees the large table: only the small one held. */
	assert_int_equal(pass(t, LATER), 0);
	assert_int_equal(tk__table_freed(t), tk__table_growths(t));
	assert_int_equal(tk__table_reserved(t), tk__table_live(t));
	assert_int_equal(tk__table_live(t), tkz_segment_size(64, 4));
	tk__table_counters(t, n);
	assert_int_equal(n[TKZ_INSERTS], 5010);
	assert_int_equal(n[TKZ_RECLAIMS], 5000);
	tk__table_free(t);
}

/* Pages of @t's newest table that are not in the pool. */
static uint64_t pages_taken(struct tk__table *t)
{
	const uint64_t *pt = tk__zone_pagetable(tk__table_zone(t));
	uint64_t p, n = 0;

	for (p = 0; p < geo(t)->pages; p++)
		n += (pt[p] & (TKZ_PAGE_SIZE_MASK | TKZ_PAGE_CLOSING |
			       TKZ_PAGE_FORMAT)) != 0;
	return n;
}

/* 100 block states fill 25 of 32 pages; 98 expire (reset here): the
 * arena shrinks to twice what the two left take, and 9 pages, once the
 * keys, which move with it, fill a quarter of the 1024 slots at most. */
static void test_arena_shrinks_to_its_blocks(void **state)
{
	struct tk__table *t = kit_table(1024, UINT64_C(1) << 20, seed, T0);
	struct tk__zone_key k;
	uint64_t i, taken;

	(void)state;
	for (i = 0; i < 100; i++)
		assert_int_equal(kit_blk_bump(t, i, 200), TK__ZONE_PERSIST);
	assert_int_equal(pass(t, T0), 0);
	assert_int_equal(geo(t)->pages, 32);
	for (i = 2; i < 100; i++) {
		k = kit_block_key(i);
		assert_int_equal(tk__table_reset(t, &k, T0), 0);
	}
	/* Sweeps give the empty pages back to the pool. */
	tk__zone_sweep_all(tk__table_zone(t), T0);
	taken = pages_taken(t);
	assert_true(taken >= 1 && taken <= 2);
	/* 257 keys: no shrink; 256: the shrink. */
	for (i = 1000; i < 1255; i++)
		assert_int_equal(bump_from(t, i, LONG, T0), TK__ZONE_PERSIST);
	assert_int_equal(pass(t, T0), 0);
	assert_int_equal(geo(t)->pages, 32);
	k = kit_word_key(1254);
	assert_int_equal(tk__table_reset(t, &k, T0), 0);
	assert_int_equal(pass(t, T0), 1);
	assert_int_equal(geo(t)->capacity, 1024);
	assert_int_equal(geo(t)->pages, 2 * taken + TKZ_CLASSES);
	for (i = 0; i < 2; i++)
		assert_int_equal(kit_blk_count(t, i, 200), 1);
	for (i = 1000; i < 1254; i++)
		assert_int_equal(count_of(t, i, LONG), 1);
	kit_census_clean(t, 256);
	tk__table_free(t);
}

/*
 * A table of 8192 slots or more shrinks to 64 for its ten keys, which
 * lie where its move reaches them late (a use of the small table moves
 * one chunk of 64 slots of its 128 or more).  New keys, one per check, would
 * fill the 64 slots before, and the move could never finish; the budget lets a
 * few in, and then a new key moves everything first.  Every check is admitted,
 * every state kept.
 */
static void test_new_keys_leave_room_for_moved(void **state)
{
	struct tk__table *t = kit_table(64, UINT64_C(1) << 20, seed, T0);
	uint64_t live[10], i;

	(void)state;
	for (i = 0; i < 5000; i++)
		assert_int_equal(bump_from(t, 100000 + i, KIT_BASE, T0),
				 TK__ZONE_PERSIST);
	assert_int_equal(tk__table_move(t, T0), 0);
	assert_true(geo(t)->capacity >= 8192);
	for (i = 0; i < 10; i++) {
		live[i] = kit_late_key(t, i ? live[i - 1] + 1 : 0, 0);
		assert_int_equal(bump_from(t, live[i], LONG, T0),
				 TK__ZONE_PERSIST);
	}
	tk__zone_sweep_all(tk__table_zone(t), LATER);
	tk__table_reclaim(t, no_readers);
	tk__table_clear(t, no_readers);
	assert_int_equal(tk__table_shrink(t), 1);
	assert_int_equal(geo(t)->capacity, 64);
	for (i = 0; i < 200; i++)
		assert_int_equal(bump_from(t, 200000 + i, LONG, LATER),
				 TK__ZONE_PERSIST);
	assert_int_equal(tk__table_move(t, LATER), 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(count_of(t, live[i], LONG), 1);
	for (i = 0; i < 200; i++)
		assert_int_equal(count_of(t, 200000 + i, LONG), 1);
	tk__table_free(t);
}

/* Reset word keys from *@n down to @keys. */
static void reset_down_to(struct tk__table *t, uint64_t *n, uint64_t keys)
{
	struct tk__zone_key k;

	while (*n > keys) {
		k = kit_word_key(--*n);
		assert_int_equal(tk__table_reset(t, &k, T0), 0);
	}
}

/*
 * Key i counts i % 5 + 1.  At an eighth of 32768 slots, no shrink; one
 * key fewer, a table of a quarter for them: 16384 slots.  Not again at
 * the same keys (an eighth of 16384 is half of them), and at an eighth
 * of 16384 less one, 8192.  Every state moves.
 */
static void test_shrink_has_hysteresis(void **state)
{
	struct tk__table *t = kit_table(64, UINT64_C(1) << 20, seed, T0);
	uint64_t i, j, n = 0;

	(void)state;
	while (geo(t)->capacity < 32768 || tk__zone_old(tk__table_zone(t))) {
		for (j = 0; j <= n % 5; j++)
			assert_int_equal(bump_from(t, n, LONG, T0),
					 TK__ZONE_PERSIST);
		n++;
	}
	reset_down_to(t, &n, 32768 / 8);
	assert_int_equal(pass(t, T0), 0);
	assert_int_equal(geo(t)->capacity, 32768);
	reset_down_to(t, &n, 32768 / 8 - 1);
	assert_int_equal(pass(t, T0), 1);
	assert_int_equal(geo(t)->capacity, 16384);
	assert_int_equal(pass(t, T0), 0);
	assert_int_equal(pass(t, T0), 0);
	assert_int_equal(geo(t)->capacity, 16384);
	reset_down_to(t, &n, 16384 / 8 - 1);
	assert_int_equal(pass(t, T0), 1);
	assert_int_equal(geo(t)->capacity, 8192);
	for (i = 0; i < n; i++)
		assert_int_equal(count_of(t, i, LONG), i % 5 + 1);
	kit_census_clean(t, n);
	assert_int_equal(tk__table_shrinks(t), 2);
	tk__table_free(t);
}

/*
 * Threads update their own keys, and insert a few new ones, in read-side
 * sections, while the main thread runs the reclaimer's passes (grace
 * periods and all) on a table of 20000 expired keys: it shrinks under
 * them, and every update of theirs is kept, once.
 */
#define THREADS 3
#define OWN 64
#define FRESH 256

struct worker {
	struct tk__table *t;
	atomic_int *stop;
	uint64_t first;	    /* its keys: first .. first + OWN + FRESH */
	uint64_t made[OWN]; /* updates of each of its own keys */
	uint64_t fresh;	    /* new keys inserted */
	int errors;
};

static int in_section(struct tk__table *t, uint64_t i)
{
	int rc;

	tk__rcu_read_lock();
	rc = bump_from(t, i, LONG, LATER);
	tk__rcu_read_unlock();
	return rc;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t round, j;

	for (round = 0; !atomic_load(w->stop); round++) {
		for (j = 0; j < OWN; j++) {
			w->errors += in_section(w->t, w->first + j) !=
				     TK__ZONE_PERSIST;
			w->made[j]++;
		}
		if (round % 4 == 0 && w->fresh < FRESH)
			w->errors +=
				in_section(w->t, w->first + OWN + w->fresh++) !=
				TK__ZONE_PERSIST;
	}
	return NULL;
}

/* The store's pass, with grace periods: threads run meanwhile. */
static int pass_among_threads(struct tk__table *t, uint64_t now)
{
	int rc;

	tk__rcu_read_lock();
	(void)tk__table_move(t, now);
	tk__zone_sweep_all(tk__table_zone(t), now);
	tk__rcu_read_unlock();
	tk__table_reclaim(t, tk__rcu_synchronize);
	tk__table_clear(t, tk__rcu_synchronize);
	tk__rcu_read_lock();
	rc = tk__table_shrink(t);
	(void)tk__table_move(t, now);
	tk__rcu_read_unlock();
	return rc;
}

static void test_shrink_under_threads(void **state)
{
	static struct worker w[THREADS];
	struct tk__table *t = kit_table(64, UINT64_C(1) << 20, seed, T0);
	pthread_t th[THREADS];
	atomic_int stop;
	uint64_t i, j, shrinks = 0, passes;
	int n;

	(void)state;
	tk__rcu_setup();
	atomic_init(&stop, 0);
	for (i = 0; i < 20000; i++)
		assert_int_equal(bump_from(t, 1000000 + i, KIT_BASE, T0),
				 TK__ZONE_PERSIST);
	for (n = 0; n < THREADS; n++) {
		memset(&w[n], 0, sizeof(w[n]));
		w[n].t = t;
		w[n].stop = &stop;
		w[n].first = (uint64_t)n * (OWN + FRESH);
		assert_int_equal(
			pthread_create(&th[n], NULL, worker_main, &w[n]), 0);
	}
	/* Until it has shrunk, and freed what it shrank from. */
	for (passes = 0; passes < 100000; passes++) {
		shrinks += pass_among_threads(t, LATER) == 1;
		if (shrinks && tk__table_freed(t) == tk__table_growths(t))
			break;
	}
	atomic_store(&stop, 1);
	for (n = 0; n < THREADS; n++)
		assert_int_equal(pthread_join(th[n], NULL), 0);
	assert_true(shrinks >= 1);
	for (n = 0; n < THREADS; n++) {
		assert_int_equal(w[n].errors, 0);
		for (j = 0; j < OWN; j++)
			assert_int_equal(count_of(t, w[n].first + j, LONG),
					 w[n].made[j]);
		for (j = 0; j < w[n].fresh; j++)
			assert_int_equal(
				count_of(t, w[n].first + OWN + j, LONG), 1);
	}
	tk__table_free(t);
}

/*
 * Twenty rounds of 3000 keys that grow the table from 64 slots and
 * expire, each followed by a shrink: many more tables than retired[] has
 * entries.  Ten keys live throughout; the counters count every key once.
 */
static void test_entries_come_round_again(void **state)
{
	struct tk__table *t = kit_table(64, UINT64_C(1) << 20, seed, T0);
	uint64_t n[TKZ_COUNTERS], i, round, now, key = 100;

	(void)state;
	for (i = 0; i < 10; i++)
		assert_int_equal(bump_from(t, i, LONG, T0), TK__ZONE_PERSIST);
	for (round = 0; round < 20; round++) {
		now = T0 + round * 4 * HOUR;
		for (i = 0; i < 3000; i++)
			assert_int_equal(bump_from(t, key++, now + HOUR, now),
					 TK__ZONE_PERSIST);
		/* Frees the growths' tables, then the one it shrank from. */
		assert_int_equal(pass(t, now + 2 * HOUR), 1);
		assert_int_equal(pass(t, now + 2 * HOUR), 0);
		assert_int_equal(geo(t)->capacity, 64);
		assert_int_equal(tk__table_freed(t), tk__table_growths(t));
	}
	assert_true(tk__table_growths(t) > 2 * 64);
	assert_int_equal(tk__table_shrinks(t), 20);
	for (i = 0; i < 10; i++)
		assert_int_equal(count_of(t, i, LONG), 1);
	tk__table_counters(t, n);
	assert_int_equal(n[TKZ_INSERTS], 10 + 20 * 3000);
	assert_int_equal(n[TKZ_RECLAIMS], 20 * 3000);
	kit_census_clean(t, 10);
	tk__table_free(t);
}

/*
 * A memory store of 20000 sliding windows (a block each) whose states
 * expire: its reclaimer thread, every millisecond, shrinks the table
 * and frees the large one, and the store holds a table of its first
 * 1024 slots again.
 */
static void test_store_gives_memory_back(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct timespec ms = { 0, 1000000 };
	struct tk_decision d;
	struct tk_limiter *lim;
	struct tk_clock *clock;
	struct tk_store *st;
	struct tk_stats peak, s;
	struct tk__table *t;
	char key[32];
	int i, waited;

	(void)state;
	assert_int_equal(tk_clock_manual_new(&clock, T0), 0);
	o.clock = clock;
	o.reclaim_interval = UINT64_C(1000000);
	assert_int_equal(tk_store_open(&st, "memory", &o), 0);
	o.store = st;
	assert_int_equal(
		tk_limiter_open(&lim, "sliding-window:10/1m", NULL, &o), 0);
	t = tk__memory_table(st);
	for (i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_int_equal(tk_limiter_check(lim, key, strlen(key), 1, &d),
				 0);
	}
	assert_int_equal(tk_store_stats(st, &peak, sizeof(peak)), 0);
	assert_int_equal(tk_clock_advance(clock, HOUR), 0);
	/* Its passes, every millisecond: well within 10 s.  Every table
	 * but the newest freed: no move under way either. */
	for (waited = 0; waited < 10000; waited++) {
		if (tk__table_shrinks(t) &&
		    tk__table_freed(t) == tk__table_growths(t))
			break;
		nanosleep(&ms, NULL);
	}
	assert_true(tk__table_shrinks(t) >= 1);
	assert_int_equal(tk__table_freed(t), tk__table_growths(t));
	assert_int_equal(tk_store_stats(st, &s, sizeof(s)), 0);
	assert_int_equal(s.keys, 0);
	assert_int_equal(s.reserved, s.live);
	assert_int_equal(s.live, tkz_segment_size(1024, geo(t)->pages));
	assert_true(s.live * 32 < peak.live);
	tk_limiter_close(lim);
	tk_store_close(st);
	tk_clock_free(clock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shrinks_once_keys_expire),
		cmocka_unit_test(test_arena_shrinks_to_its_blocks),
		cmocka_unit_test(test_shrink_has_hysteresis),
		cmocka_unit_test(test_new_keys_leave_room_for_moved),
		cmocka_unit_test(test_shrink_under_threads),
		cmocka_unit_test(test_entries_come_round_again),
		cmocka_unit_test(test_store_gives_memory_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
