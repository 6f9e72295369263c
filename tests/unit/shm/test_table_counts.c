/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_table_counts.c - a private table's insert counter across a growth
 * (shm/grow.c), in the race that used to count a key twice, staged by
 * hand through the insert hook: a key is committed "no state yet" in a
 * table, the table grows and the key's slot is frozen before its first
 * write (by a chunk mover, or by the pull of a read that inserts
 * nothing), and the key's insert goes on in the successor.  Its commit
 * there is the same key carried over, counted once; a rival's insert in
 * the successor carries it instead, an insert after a reset there counts
 * again, and a reset that finds the key only frozen with no state leaves
 * it carried (it counts no reset).  And a sweep between the commit and
 * the first write leaves the key alone: no expiration of no state, no
 * second insert.
 *
 * And a copy of a key's state to the successor, whose insert there
 * counts nothing (the key was counted before), in the two races that
 * used to count the key twice: a second copy that lands on the copy's
 * MEM and takes the frozen state before the copy's commit asked for it,
 * and a reset between the copy's decision to write and its insert, which
 * left the key counted and with no state.  A copy's insert asks before
 * it commits, and goes once its state is taken; so does a helper's
 * commit of it.
 *
 * White-box (statically linked): the table has no public interface.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../shm/word.h"
#include "table-kit.h"

#define T0 KIT_T0
#define FILLER UINT64_C(1000) /* fillers are keys FILLER, FILLER + 1, .. */

static const uint64_t seed[2] = { 7, 8 };

#define key kit_word_key
#define count_fn kit_count_fn
#define count kit_count

/* What happens to the staged key between its commit and its write. */
enum stage {
	MOVER,	/* the growth's chunk mover freezes it (and completes) */
	PEEK,	/* a read in the successor pulls it, inserting nothing */
	RIVAL,	/* then a rival inserts it in the successor */
	RESET,	/* then a rival inserts it there, and resets it */
	FORGET, /* then a reset finds it only frozen: it stays carried, and
		 * counts no reset */
};

static struct {
	struct tk__table *t;
	uint64_t fp, fillers, resets;
	enum stage stage;
	int fired;
} st;

static void apply_ok(uint64_t i)
{
	struct tk__zone_key k = key(i);

	assert_int_equal(tk__table_apply(st.t, &k, T0, 1, count_fn, NULL),
			 TK__ZONE_PERSIST);
}

/* After the staged key's commit in the first table, before its write. */
static void hook(struct tk__zone *z, const struct tk__zone_key *k, int at,
		 int settled)
{
	struct tk__zone_key sk = key(0);
	uint64_t g = tk__table_growths(st.t), n[TKZ_COUNTERS];

	(void)at;
	if (st.fired || !settled || k->fp != st.fp)
		return;
	st.fired = 1;
	tk__table_counters(st.t, n);
	assert_int_equal(n[TKZ_INSERTS], 1); /* committed, no state yet */
	/* Fillers until the table grows; the last one's retry in the
	 * successor moves a chunk. */
	while (tk__table_growths(st.t) == g)
		apply_ok(FILLER + st.fillers++);
	assert_non_null(tk__zone_next(z));
	if (st.stage == MOVER) /* grown, and the table retired */
		assert_null(tk__zone_old(tk__table_zone(st.t)));
	else
		assert_int_equal(count(st.t, 0), 0); /* pulled: no state */
	if (st.stage == RIVAL || st.stage == RESET)
		apply_ok(0);
	if (st.stage == RESET || st.stage == FORGET)
		assert_int_equal(tk__table_reset(st.t, &sk, T0), 0);
	st.resets += st.stage == RESET;
}

/* A stage, and the size of the first table: with one chunk, the
 * growth's first user moves all of it and completes the growth, so the
 * key comes back after its table was retired. */
struct staging {
	enum stage stage;
	uint64_t capacity;
};

static void test_staged(void **state)
{
	const struct staging *sg = *state;
	enum stage stage = sg->stage;
	uint64_t n[TKZ_COUNTERS], i;

	memset(&st, 0, sizeof(st));
	st.t = kit_table(sg->capacity, UINT64_C(1) << 20, seed, T0);
	st.fp = key(0).fp;
	st.stage = stage;
	tk__zone_insert_hook = hook;
	apply_ok(0);
	tk__zone_insert_hook = NULL;
	assert_true(st.fired);
	assert_int_equal(tk__table_growths(st.t), 1);
	/* The staged key's write went to the successor. */
	assert_int_equal(count(st.t, 0), stage == RIVAL ? 2 : 1);
	for (i = 0; i < st.fillers; i++)
		assert_int_equal(count(st.t, FILLER + i), 1);
	tk__table_counters(st.t, n);
	assert_int_equal(n[TKZ_INSERTS], 1 + st.fillers + st.resets);
	assert_int_equal(n[TKZ_RESETS], st.resets);
	assert_int_equal(tk__table_keys(st.t), 1 + st.fillers);
	tk__table_free(st.t);
}

static struct staging by_mover = { MOVER, 64 }, by_peek = { PEEK, 1024 },
		      rival = { RIVAL, 1024 }, reset = { RESET, 1024 },
		      reset_carried = { FORGET, 1024 };

/*
 * A sweep between a key's commit ("no state yet") and its first write:
 * in a private table the key is left to its inserter, so the sweep
 * counts no expiration and the key no second insert; a state that has
 * expired is reclaimed, and counted, as before.
 */
static uint64_t sweep_at;

static void sweep_between(struct tk__zone *z, const struct tk__zone_key *k,
			  int at, int settled)
{
	(void)at;
	if (!settled || k->fp != st.fp || st.fired)
		return;
	st.fired = 1;
	tk__zone_sweep_all(z, sweep_at);
}

static void test_sweep_leaves_key_to_inserter(void **state)
{
	uint64_t n[TKZ_COUNTERS];

	(void)state;
	memset(&st, 0, sizeof(st));
	st.t = kit_table(1024, 1024, seed, T0);
	st.fp = key(1).fp;
	sweep_at = KIT_BASE + UINT64_C(3600000000000);
	tk__zone_insert_hook = sweep_between;
	apply_ok(0);
	apply_ok(1);
	tk__zone_insert_hook = NULL;
	assert_true(st.fired);
	tk__table_counters(st.t, n);
	/* The sweep took key 0's long expired state, not key 1. */
	assert_int_equal(n[TKZ_RECLAIMS], 1);
	assert_int_equal(n[TKZ_INSERTS], 2);
	assert_int_equal(count(st.t, 1), 1);
	assert_int_equal(tk__table_keys(st.t), 1);
	tk__table_free(st.t);
}

/*
 * A copy of a key's frozen state, made by the pull of a read, and its
 * insert in the successor (a copy's: it brings over a key counted in the
 * first table, so it counts no insert), with another operation of the
 * key in between, staged through the hooks:
 */
enum copy_stage {
	/* Between the copy's commit and its count, a second copy writes
	 * its state over the copy's MEM of no state and takes the frozen
	 * one: the commit, asking only then, found no frozen state and
	 * counted the key again. */
	COPY_LANDED,
	/* Between the copy's decision to write (the key had no slot in the
	 * successor) and its insert, a reset pulls the key (its own copy
	 * lands and takes the frozen state) and drops it: the copy's insert
	 * committed the key, counted it, and left it with no state. */
	COPY_RESET,
	/* The same reset, then an insert of the key, before the copy
	 * settles its INS, commits it for the copy (or collides it): the
	 * insert counts once, and the key holds its state. */
	COPY_HELPED,
};

static struct {
	struct tk__table *t;
	struct tk__zone *to; /* the successor */
	struct tk__zone_key k;
	uint64_t j; /* the key's number */
	int fired, reset, helped;
} cs;

static void bump_ok(uint64_t i)
{
	struct tk__zone_key k = key(i);

	assert_int_equal(tk__table_apply(cs.t, &k, T0, 1, count_fn, NULL),
			 TK__ZONE_PERSIST);
}

/* COPY_LANDED: after the copy's commit in the successor. */
static void land_second(struct tk__zone *z, uint64_t fp)
{
	if (z != cs.to || fp != cs.k.fp || cs.fired)
		return;
	cs.fired = 1;
	/* Its pull finds the copy's MEM of no state, and its own copy
	 * writes the state there and takes the frozen one. */
	bump_ok(cs.j);
}

/* COPY_RESET, COPY_HELPED: the copy has decided to write, and the key
 * has no slot in the successor. */
static void reset_first(struct tk__zone *nz, const struct tk__zone_key *k,
			int landed)
{
	if (nz != cs.to || k->fp != cs.k.fp || landed || cs.fired)
		return;
	cs.fired = 1;
	assert_int_equal(tk__table_reset(cs.t, &cs.k, T0), 0);
	cs.reset = 1;
}

/* COPY_HELPED: the copy has claimed its INS, after the reset. */
static void insert_before_settle(struct tk__zone *z,
				 const struct tk__zone_key *k, int at,
				 int settled)
{
	(void)at;
	if (z != cs.to || k->fp != cs.k.fp || settled || !cs.reset || cs.helped)
		return;
	cs.helped = 1;
	bump_ok(cs.j);
}

static void test_copy_staged(void **state)
{
	enum copy_stage stage = *(const enum copy_stage *)*state;
	uint64_t n[TKZ_COUNTERS], i = 0, g, idx, w0, w1;
	int resets = stage != COPY_LANDED, again = stage == COPY_HELPED;

	memset(&cs, 0, sizeof(cs));
	cs.t = kit_table(1024, UINT64_C(1) << 20, seed, T0);
	for (g = tk__table_growths(cs.t); tk__table_growths(cs.t) == g; i++)
		bump_ok(FILLER + i);
	cs.to = tk__table_zone(cs.t);
	/* A key that has not moved yet: the growth's first user moved one
	 * chunk at most. */
	for (cs.j = FILLER;; cs.j++) {
		assert_true(cs.j < FILLER + i);
		cs.k = key(cs.j);
		if (tk__zone_locate(tk__zone_old(cs.to), &cs.k, T0, 0, &idx,
				    &w0, &w1) == 0)
			break;
	}
	if (stage == COPY_LANDED)
		tk__zone_commit_hook = land_second;
	else
		tk__table_copy_hook = reset_first;
	if (stage == COPY_HELPED)
		tk__zone_insert_hook = insert_before_settle;
	assert_int_equal(count(cs.t, cs.j), stage == COPY_LANDED ? 2 : again);
	tk__zone_commit_hook = NULL;
	tk__table_copy_hook = NULL;
	tk__zone_insert_hook = NULL;
	assert_true(cs.fired);
	assert_int_equal(cs.helped, again);
	/* Every key counted once, and the reset one once more if inserted
	 * again after the reset. */
	tk__table_counters(cs.t, n);
	assert_int_equal(n[TKZ_INSERTS], i + again);
	assert_int_equal(n[TKZ_RESETS], resets);
	/* Nothing of the key left but what its operations wrote. */
	assert_int_equal(tk__table_keys(cs.t), i - resets + again);
	if (resets && !again)
		assert_int_equal(tk__zone_locate(tk__table_zone(cs.t), &cs.k,
						 T0, 0, &idx, &w0, &w1),
				 -ENOENT);
	tk__table_free(cs.t);
}

static const enum copy_stage copy_landed = COPY_LANDED, copy_reset = COPY_RESET,
			     copy_helped = COPY_HELPED;

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_staged, &by_mover),
		cmocka_unit_test_prestate(test_staged, &by_peek),
		cmocka_unit_test_prestate(test_staged, &rival),
		cmocka_unit_test_prestate(test_staged, &reset),
		cmocka_unit_test_prestate(test_staged, &reset_carried),
		cmocka_unit_test(test_sweep_leaves_key_to_inserter),
		cmocka_unit_test_prestate_setup_teardown(test_copy_staged, NULL,
							 kit_no_hooks,
							 (void *)&copy_landed),
		cmocka_unit_test_prestate_setup_teardown(test_copy_staged, NULL,
							 kit_no_hooks,
							 (void *)&copy_reset),
		cmocka_unit_test_prestate_setup_teardown(test_copy_staged, NULL,
							 kit_no_hooks,
							 (void *)&copy_helped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
