/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_table_complete.c - what a private table's growth (shm/grow.c)
 * shows while it completes, staged by hand with the completion and
 * insert hooks:
 *
 * - the event counters read at every step of a completion count every
 *   key inserted so far, once: no table is missing from them while the
 *   successor becomes where lookups start;
 * - a key whose move is in flight counts once before its move ends and
 *   after: a counter read never goes down;
 * - a key whose state was copied, then reclaimed in the successor, and
 *   inserted again counts as inserted again;
 * - a reset made while a completer stalls before any of its steps, alone
 *   or while a second completer completes the growth as far as it can,
 *   stays made although a pull of the key was in flight: the reset finds
 *   the table the key left (as the successor's old, or among the
 *   retired) and marks the key's frozen state there gone, so the pull
 *   brings nothing back;
 * - the same reset while one copy of the key has landed and not taken
 *   the frozen state yet, and another, which read it before, is in
 *   flight (two threads stalled in hooks): the reset itself must mark
 *   the frozen state gone, at whatever step the completion is.
 *
 * White-box (statically linked): the table has no public interface.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>

#include "../../shm/word.h"
#include "table-kit.h"

#define T0 KIT_T0

static const uint64_t seed[2] = { 11, 12 };

#define key kit_word_key
#define count kit_count

static uint64_t inserts_of(struct tk__table *t)
{
	uint64_t n[TKZ_COUNTERS];

	tk__table_counters(t, n);
	return n[TKZ_INSERTS];
}

static int bump(struct tk__table *t, uint64_t i)
{
	struct tk__zone_key k = key(i);

	return tk__table_apply(t, &k, T0, 1, kit_count_fn, NULL);
}

/* Insert keys from *@i on until a growth is under way; its successor. */
static struct tk__zone *grow_once(struct tk__table *t, uint64_t *i)
{
	uint64_t g = tk__table_growths(t);

	while (tk__table_growths(t) == g)
		assert_int_equal(bump(t, (*i)++), TK__ZONE_PERSIST);
	assert_non_null(tk__zone_old(tk__table_zone(t)));
	return tk__table_zone(t);
}

/* A key of 0 .. @n - 1 that has not moved out of @oz yet. */
static uint64_t unmoved(struct tk__zone *oz, uint64_t n)
{
	struct tk__zone_key k;
	uint64_t j, idx, w0, w1;

	for (j = 0; j < n; j++) {
		k = key(j);
		if (tk__zone_locate(oz, &k, T0, 0, &idx, &w0, &w1) == 0)
			return j;
	}
	fail_msg("every key has moved");
	return 0;
}

/* Test 1: the counters at each step of every completion. */
static struct tk__table *watched;
static uint64_t expected, steps_seen;

static void check_counters(struct tk__table *t, int step)
{
	(void)step;
	assert_ptr_equal(t, watched);
	assert_int_equal(inserts_of(t), expected);
	steps_seen++;
}

static void test_counters_whole_while_completing(void **state)
{
	struct tk__table *t = kit_table(1024, UINT64_C(1) << 20, seed, T0);
	uint64_t i;

	(void)state;
	watched = t;
	steps_seen = 0;
	tk__table_complete_hook = check_counters;
	/* The completing operation runs before its own key's insert: the
	 * keys inserted so far are those before it. */
	for (i = 0; tk__table_growths(t) < 4; i++) {
		expected = i;
		assert_int_equal(bump(t, i), TK__ZONE_PERSIST);
	}
	while (tk__zone_old(tk__table_zone(t)) != NULL) {
		expected = i;
		assert_int_equal(bump(t, i++), TK__ZONE_PERSIST);
	}
	tk__table_complete_hook = NULL;
	assert_true(steps_seen >= 2 * 4);
	assert_int_equal(inserts_of(t), i);
	tk__table_free(t);
}

/* Test 2: the counters while a key's move is in flight. */
static struct tk__zone_key moving;
static struct tk__zone *moving_to;
static uint64_t inserts_in_flight;
static int seen_in_flight;

static void watch_move(struct tk__zone *z, const struct tk__zone_key *k, int at,
		       int settled)
{
	(void)at;
	/* Its copy's insert in the successor, committed, its state not
	 * written yet. */
	if (z != moving_to || k->fp != moving.fp || !settled || seen_in_flight)
		return;
	seen_in_flight = 1;
	inserts_in_flight = inserts_of(watched);
}

static void test_counters_while_key_moves(void **state)
{
	struct tk__table *t = kit_table(1024, UINT64_C(1) << 20, seed, T0);
	struct tk__zone *nz;
	uint64_t i = 0, j;

	(void)state;
	nz = grow_once(t, &i);
	j = unmoved(tk__zone_old(nz), i);
	watched = t;
	moving = key(j);
	moving_to = nz;
	seen_in_flight = 0;
	tk__zone_insert_hook = watch_move;
	assert_int_equal(bump(t, j), TK__ZONE_PERSIST);
	tk__zone_insert_hook = NULL;
	assert_true(seen_in_flight);
	/* Neither counted twice while it moved, nor less after. */
	assert_int_equal(inserts_in_flight, i);
	assert_int_equal(inserts_of(t), i);
	assert_int_equal(count(t, j), 2);
	tk__table_free(t);
}

/* Test 3: a key moved, reclaimed in the successor and inserted again. */
static void test_moved_key_inserted_again_counts(void **state)
{
	struct tk__table *t = kit_table(1024, UINT64_C(1) << 20, seed, T0);
	uint64_t n[TKZ_COUNTERS], i = 0,
				  late = KIT_BASE + UINT64_C(3600000000000);

	(void)state;
	grow_once(t, &i);
	while (tk__zone_old(tk__table_zone(t)) != NULL)
		assert_int_equal(bump(t, i++), TK__ZONE_PERSIST);
	/* Every state expired long ago: all reclaimed. */
	tk__zone_sweep_all(tk__table_zone(t), late);
	assert_int_equal(tk__table_keys(t), 0);
	assert_int_equal(bump(t, 0), TK__ZONE_PERSIST);
	tk__table_counters(t, n);
	assert_int_equal(n[TKZ_RECLAIMS], i);
	assert_int_equal(n[TKZ_INSERTS], i + 1);
	tk__table_free(t);
}

/*
 * Test 4: a reset while a completer stalls before step @step, and while
 * a pull of the key is in flight.  The pull of key j stalls at its
 * insert in the successor; meanwhile other operations move every chunk
 * (the one holding j commits the stalled insert and copies j's state),
 * and the first to complete the growth stalls before step @step, while
 * (with @second) a second completer completes it as far as it can, and
 * j is reset.  Then the stalled pull goes on.
 */
#define STEPS 5 /* of complete(), shm/grow.c */

static struct tk__table *racing;
static struct tk__zone_key victim;
static struct tk__zone *victim_to;
static uint64_t next_key;
static int stall_at, second, staged, completions, reset_rc;

static void then_reset(struct tk__table *t, int step)
{
	if (t != racing || step != stall_at || completions++ > 0)
		return;
	if (second)
		assert_int_equal(bump(t, next_key++), TK__ZONE_PERSIST);
	reset_rc = tk__table_reset(t, &victim, T0);
}

static void stall_pull(struct tk__zone *z, const struct tk__zone_key *k, int at,
		       int settled)
{
	(void)at;
	if (z != victim_to || k->fp != victim.fp || settled || staged)
		return;
	staged = 1;
	while (tk__zone_old(victim_to) != NULL)
		assert_int_equal(bump(racing, next_key++), TK__ZONE_PERSIST);
}

static void reset_while_completing(int step, int with_second)
{
	struct tk__table *t = kit_table(1024, UINT64_C(1) << 20, seed, T0);
	struct tk__zone *nz;
	uint64_t i = 0, j;

	nz = grow_once(t, &i);
	j = unmoved(tk__zone_old(nz), i);
	racing = t;
	victim = key(j);
	victim_to = nz;
	next_key = UINT64_C(1) << 32;
	stall_at = step;
	second = with_second;
	staged = completions = 0;
	reset_rc = 1;
	tk__zone_insert_hook = stall_pull;
	tk__table_complete_hook = then_reset;
	assert_int_equal(bump(t, j), TK__ZONE_PERSIST);
	tk__zone_insert_hook = NULL;
	tk__table_complete_hook = NULL;
	assert_true(staged);
	assert_true(completions > 0);
	assert_int_equal(reset_rc, 0);
	/* Reset, then counted once by the stalled operation's own apply;
	 * not the state from before the reset plus one. */
	assert_int_equal(count(t, j), 1);
	/* Every key counted once, the reset one twice. */
	assert_int_equal(inserts_of(t), next_key - (UINT64_C(1) << 32) + i + 1);
	tk__table_free(t);
}

static void test_reset_during_completion_stays(void **state)
{
	int step;

	(void)state;
	for (step = 0; step < STEPS; step++) {
		reset_while_completing(step, 0);
		reset_while_completing(step, 1);
	}
}

/*
 * Test 5: the same reset while one copy of the key has landed and not
 * taken its frozen state yet, and another copy, which read the frozen
 * state before, is in flight: threads B (stalled at its insert in the
 * successor) and A (which commits B's insert, lands the copy, and
 * stalls before its take).  The reset, made by the completer stalled
 * before step @step, must mark the frozen state itself: else B, going
 * on, finds it still there and copies it back.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t a, b;
	int b_stalled, a_landed, go;
} two = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

/* Say @flag, then wait for the main thread's go. */
static void stall_until_go(int *flag)
{
	pthread_mutex_lock(&two.lock);
	*flag = 1;
	pthread_cond_broadcast(&two.cond);
	while (!two.go)
		pthread_cond_wait(&two.cond, &two.lock);
	pthread_mutex_unlock(&two.lock);
}

static void wait_for_flag(const int *flag)
{
	pthread_mutex_lock(&two.lock);
	while (!*flag)
		pthread_cond_wait(&two.cond, &two.lock);
	pthread_mutex_unlock(&two.lock);
}

/* Is this thread *@th?  Read under the lock pthread_create() was
 * called with, so that a thread that runs at once sees its own id. */
static int is_thread(const pthread_t *th)
{
	int yes;

	pthread_mutex_lock(&two.lock);
	yes = pthread_equal(pthread_self(), *th);
	pthread_mutex_unlock(&two.lock);
	return yes;
}

static void stall_b(struct tk__zone *z, const struct tk__zone_key *k, int at,
		    int settled)
{
	(void)at;
	if (z == victim_to && k->fp == victim.fp && !settled &&
	    !two.b_stalled && is_thread(&two.b))
		stall_until_go(&two.b_stalled);
}

static void stall_a(struct tk__zone *nz, const struct tk__zone_key *k,
		    int landed)
{
	if (nz == victim_to && k->fp == victim.fp && landed && !two.a_landed &&
	    is_thread(&two.a))
		stall_until_go(&two.a_landed);
}

static void *read_victim(void *arg)
{
	uint64_t n;

	(void)arg;
	assert_int_equal(
		tk__table_apply(racing, &victim, T0, 1, kit_read_fn, &n),
		TK__ZONE_KEEP);
	return NULL;
}

static void reset_between_copies(int step)
{
	struct tk__table *t = kit_table(1024, UINT64_C(1) << 20, seed, T0);
	uint64_t i = 0, j;

	grow_once(t, &i);
	victim_to = tk__table_zone(t);
	j = unmoved(tk__zone_old(victim_to), i);
	racing = t;
	victim = key(j);
	next_key = UINT64_C(1) << 32;
	stall_at = step;
	second = 0;
	completions = 0;
	reset_rc = 1;
	two.b_stalled = two.a_landed = two.go = 0;
	tk__zone_insert_hook = stall_b;
	tk__table_copy_hook = stall_a;
	tk__table_complete_hook = then_reset;
	/* Set before either can reach its hook. */
	pthread_mutex_lock(&two.lock);
	assert_int_equal(pthread_create(&two.b, NULL, read_victim, NULL), 0);
	pthread_mutex_unlock(&two.lock);
	wait_for_flag(&two.b_stalled);
	pthread_mutex_lock(&two.lock);
	assert_int_equal(pthread_create(&two.a, NULL, read_victim, NULL), 0);
	pthread_mutex_unlock(&two.lock);
	wait_for_flag(&two.a_landed);
	/* Every chunk moved (j's copy is there), then the completion. */
	while (tk__zone_old(victim_to) != NULL)
		assert_int_equal(bump(t, next_key++), TK__ZONE_PERSIST);
	pthread_mutex_lock(&two.lock);
	two.go = 1;
	pthread_cond_broadcast(&two.cond);
	pthread_mutex_unlock(&two.lock);
	assert_int_equal(pthread_join(two.b, NULL), 0);
	assert_int_equal(pthread_join(two.a, NULL), 0);
	tk__zone_insert_hook = NULL;
	tk__table_copy_hook = NULL;
	tk__table_complete_hook = NULL;
	assert_int_equal(completions > 0, 1);
	assert_int_equal(reset_rc, 0);
	assert_int_equal(count(t, j), 0);
	tk__table_free(t);
}

static void test_reset_between_copies_stays(void **state)
{
	int step;

	(void)state;
	for (step = 0; step < STEPS; step++)
		reset_between_copies(step);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_counters_whole_while_completing,
					  kit_no_hooks),
		cmocka_unit_test_teardown(test_counters_while_key_moves,
					  kit_no_hooks),
		cmocka_unit_test(test_moved_key_inserted_again_counts),
		cmocka_unit_test_teardown(test_reset_during_completion_stays,
					  kit_no_hooks),
		cmocka_unit_test_teardown(test_reset_between_copies_stays,
					  kit_no_hooks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
