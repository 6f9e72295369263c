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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_staged, &by_mover),
		cmocka_unit_test_prestate(test_staged, &by_peek),
		cmocka_unit_test_prestate(test_staged, &rival),
		cmocka_unit_test_prestate(test_staged, &reset),
		cmocka_unit_test_prestate(test_staged, &reset_carried),
		cmocka_unit_test(test_sweep_leaves_key_to_inserter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
