/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_slots_shapes.c - one key, one state, in either shape
 * (docs/shm-protocol.md, "One state, two shapes").
 *
 * A one-word state lives in its key's slot for single updates (a word
 * key) and in a 1-word block for the multi-key step (a block key).  The
 * multi-key step makes a word key a block key of the same state, and
 * single updates go on on the block; another algorithm's state, or a
 * block of other words, stays another policy's.  A conversion's claim is
 * bound to a word, which may come back after the slot moved on (a refund
 * restores one): the collector keeps it while the slot holds a word key.
 * A private table that grows moves each key in its shape.
 *
 * White-box (statically linked): the slot table has no public interface.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <throttlekit.h>

#include "../../shm/blocks.h"
#include "table-kit.h"

#define NOW KIT_T0

static const uint64_t seed[2] = { 7, 8 };

static struct tk__zone *zone_open(void)
{
	struct tk__zone_config cfg;
	struct tk__zone *z;

	memset(&cfg, 0, sizeof(cfg));
	cfg.capacity = 64;
	cfg.now = NOW;
	assert_int_equal(tk__zone_private(&z, &cfg, seed), 0);
	return z;
}

/* Key @k as the multi-key step names it: a block key. */
static struct tk__zone_key as_block(struct tk__zone_key k)
{
	k.fp |= TKZ_FP_BLOCK;
	return k;
}

/* kit_count_fn() as a multi-key step of one key. */
static int count_multi(void *ctx, const uint64_t *const *old,
		       uint64_t *const *next, int *persist, uint64_t *expires)
{
	(void)ctx;
	persist[0] = 1;
	return kit_count_fn(NULL, old[0], next[0], &expires[0]);
}

static uint64_t count_of(struct tk__zone *z, const struct tk__zone_key *k)
{
	uint64_t n = UINT64_MAX;

	assert_int_equal(tk__zone_apply(z, k, NOW, 1, kit_read_fn, &n),
			 TK__ZONE_KEEP);
	return n;
}

static int count_word(struct tk__zone *z, const struct tk__zone_key *k)
{
	return tk__zone_apply(z, k, NOW, 1, kit_count_fn, NULL);
}

static int count_block(struct tk__zone *z, const struct tk__zone_key *k,
		       uint32_t words)
{
	struct tk__zone_key b = as_block(*k);

	return tk__zone_apply_multi(z, 1, &b, &words, NOW, count_multi, NULL);
}

/* The key's one slot, and whether it holds a block key now. */
static int block_shaped(struct tk__zone *z, const struct tk__zone_key *k)
{
	uint64_t idx, w0, w1;

	assert_int_equal(tk__zone_locate(z, k, NOW, 0, &idx, &w0, &w1), 0);
	return (w0 & TKZ_FP_BLOCK) != 0;
}

static void assert_census(struct tk__zone *z, uint64_t keys, uint64_t blocks)
{
	struct tk__zone_census c;

	memset(&c, 0, sizeof(c));
	assert_int_equal(tk__zone_census(z, &c), 0);
	assert_int_equal(c.violations, 0);
	assert_int_equal(c.mem, keys);
	assert_int_equal(c.blocks, blocks);
}

/*
 * Words first, then the multi-key step (which converts), then words
 * again: one count throughout.  And a key the multi-key step wrote first
 * is counted on by single updates in its block.
 */
static void test_one_count_either_shape(void **unused)
{
	struct tk__zone *z = zone_open();
	struct tk__zone_key a = kit_word_key(1), b = kit_word_key(2);
	int i;

	(void)unused;
	for (i = 0; i < 3; i++)
		assert_int_equal(count_word(z, &a), TK__ZONE_PERSIST);
	assert_false(block_shaped(z, &a));
	assert_census(z, 1, 0);
	assert_int_equal(count_block(z, &a, 1), TK__ZONE_PERSIST);
	assert_true(block_shaped(z, &a));
	assert_int_equal(count_of(z, &a), 4);
	assert_int_equal(count_word(z, &a), TK__ZONE_PERSIST);
	assert_int_equal(count_of(z, &a), 5);
	assert_true(block_shaped(z, &a)); /* never a word key again */

	assert_int_equal(count_block(z, &b, 1), TK__ZONE_PERSIST);
	assert_int_equal(count_word(z, &b), TK__ZONE_PERSIST);
	assert_int_equal(count_block(z, &b, 1), TK__ZONE_PERSIST);
	assert_int_equal(count_of(z, &b), 3);
	assert_census(z, 2, 2);
	tk__zone_detach(z);
}

/* A word key committed with no state yet becomes a block key of none. */
static void test_no_state_converts(void **unused)
{
	struct tk__zone *z = zone_open();
	struct tk__zone_key a = kit_word_key(3);
	uint64_t idx, w0, w1;

	(void)unused;
	assert_int_equal(tk__zone_locate(z, &a, NOW, 1, &idx, &w0, &w1), 0);
	assert_int_equal(w1, 0);
	assert_int_equal(tk__zone_to_block(z, &a, idx, w0, w1, NOW), 0);
	assert_int_equal(tk__zone_locate(z, &a, NOW, 0, &idx, &w0, &w1), 0);
	assert_true(w0 & TKZ_FP_BLOCK);
	assert_true(w1 & TKZ_NOSTATE);
	assert_int_equal(count_of(z, &a), 0);
	assert_census(z, 1, 0);
	assert_int_equal(count_block(z, &a, 1), TK__ZONE_PERSIST);
	assert_int_equal(count_of(z, &a), 1);
	tk__zone_detach(z);
}

/* Another algorithm's word, or a state of other words, is another
 * policy's: refused, and left as it was. */
static void test_other_policies_refused(void **unused)
{
	struct tk__zone *z = zone_open();
	struct tk__zone_key a = kit_word_key(4), other = a;

	(void)unused;
	other.fp ^= UINT64_C(3) << TKZ_FP_ALG_SHIFT; /* algorithm 2 */
	assert_int_equal(count_word(z, &a), TK__ZONE_PERSIST);
	assert_int_equal(count_block(z, &other, 1), -EPROTO);
	assert_int_equal(tk__zone_apply(z, &other, NOW, 1, kit_count_fn, NULL),
			 -EPROTO);
	assert_int_equal(count_block(z, &a, 2), -EPROTO);
	assert_false(block_shaped(z, &a));
	assert_int_equal(count_block(z, &a, 1), TK__ZONE_PERSIST);
	/* Now a block of one word: a block key of two is refused too. */
	assert_int_equal(count_block(z, &a, 2), -EPROTO);
	assert_int_equal(count_of(z, &a), 2);
	tk__zone_detach(z);
}

/* Write the state *(uint64_t *)@ctx, whatever was there (a refund). */
static int put_fn(void *ctx, const uint64_t *old, uint64_t *next,
		  uint64_t *expires)
{
	(void)old;
	next[0] = *(const uint64_t *)ctx;
	*expires = next[0];
	return TK__ZONE_PERSIST;
}

/*
 * A converter stopped between its claim and its publish while the word
 * changes and comes back: a sweep in between must not free its block,
 * or the publish that then succeeds references a freed block, and the
 * state is lost.
 */
static void test_collector_keeps_conversion(void **unused)
{
	struct tk__zone *z = zone_open();
	struct tk__zone_key a = kit_word_key(5);
	uint64_t idx, w0, w1, v0, v1, back;
	struct tk__blk b;

	(void)unused;
	assert_int_equal(count_word(z, &a), TK__ZONE_PERSIST);
	assert_int_equal(count_word(z, &a), TK__ZONE_PERSIST);
	assert_int_equal(tk__zone_locate(z, &a, NOW, 0, &idx, &w0, &w1), 0);
	/* The converter's claim and write (tk__zone_to_block()). */
	assert_int_equal(tk__blk_claim(z, 1, idx, w1, NOW, &b), 0);
	assert_int_equal(tk__blk_write(z, &b, w1 | TKZ_WORD_SLACK, &w1, 0, NULL), 0);
	/* The word moves on, a sweep passes, the word comes back. */
	assert_int_equal(count_word(z, &a), TK__ZONE_PERSIST);
	tk__zone_sweep_all(z, NOW);
	back = w1;
	assert_int_equal(tk__zone_apply(z, &a, NOW, 1, put_fn, &back),
			 TK__ZONE_PERSIST);
	assert_int_equal(tk__zone_locate(z, &a, NOW, 0, &idx, &v0, &v1), 0);
	assert_true(v0 == w0 && v1 == w1);
	/* The publish succeeds: its block must be the state. */
	assert_true(tkz_cas_slot(&tk__zone_slots(z)[idx], w0, w1,
				 w0 | TKZ_FP_BLOCK, tk__blk_ref(&b)));
	assert_int_equal(count_of(z, &a), 2);
	assert_census(z, 1, 1);
	/* Once the slot holds a block key, an unpublished claim goes. */
	assert_int_equal(tk__blk_claim(z, 1, idx, w1, NOW, &b), 0);
	tk__zone_sweep_all(z, NOW);
	assert_census(z, 1, 1);
	tk__zone_detach(z);
}

/*
 * A full turn over a class notes when a block it may not free (a claim
 * whose publish may come) expires, by its expiry cell alone; a hot mark
 * above the cell's gen (docs/shm-protocol.md, "In-place updates") changes
 * nothing: without the note, a "full" verdict would outlast the state.
 */
static void test_turn_reads_marked_expiry(void **unused)
{
	struct tk__zone *z = zone_open();
	uint64_t words[22] = { 0 }, until[2];
	const uint32_t marks[2] = { 0, 2 };
	struct tk__blk b;
	struct want w;
	int i;

	(void)unused;
	for (i = 0; i < 2; i++) {
		assert_int_equal(
			tk__blk_claim(z, 22, 3, TKZ_NOSTATE | 1, NOW, &b), 0);
		assert_int_equal(tk__blk_write(z, &b,
					       NOW + UINT64_C(5000000000),
					       words, marks[i], NULL),
				 0);
		memset(&w, 0, sizeof(w));
		w.k = tk__blk_class(22);
		w.mark = 22;
		w.bind = (uint64_t)5 << 32;
		w.now = NOW;
		w.until = UINT64_MAX;
		assert_int_equal(tk__blk_press(z, b.cell, b.h0, b.h1, TURN, &w),
				 0);
		until[i] = w.until;
		tk__blk_release(z, &b);
	}
	assert_true(until[0] < UINT64_MAX);
	assert_int_equal(until[1], until[0]);
	tk__zone_detach(z);
}

/* The count of @k in table @t, through either shape. */
static uint64_t table_count(struct tk__table *t, const struct tk__zone_key *k)
{
	uint64_t n = UINT64_MAX;

	assert_int_equal(tk__table_apply(t, k, NOW, 1, kit_read_fn, &n),
			 TK__ZONE_KEEP);
	return n;
}

/*
 * A private table that grows moves each key in the shape its state has:
 * a word key and a converted one keep their counts across growths, and
 * go on counting in either shape.
 */
static void test_shapes_survive_growth(void **unused)
{
	struct tk__table *t = kit_table(64, 1 << 14, seed, NOW);
	struct tk__zone_key w = kit_word_key(10), b = kit_word_key(11), f;
	struct tk__zone_key wb = as_block(w), bb = as_block(b);
	uint32_t one = 1;
	uint64_t i;

	(void)unused;
	assert_int_equal(tk__table_apply(t, &w, NOW, 1, kit_count_fn, NULL),
			 TK__ZONE_PERSIST);
	assert_int_equal(tk__table_apply(t, &b, NOW, 1, kit_count_fn, NULL),
			 TK__ZONE_PERSIST);
	assert_int_equal(
		tk__table_apply_multi(t, 1, &bb, &one, NOW, count_multi, NULL),
		TK__ZONE_PERSIST);
	for (i = 100; i < 600; i++) {
		f = kit_word_key(i);
		assert_int_equal(
			tk__table_apply(t, &f, NOW, 1, kit_count_fn, NULL),
			TK__ZONE_PERSIST);
	}
	assert_true(tk__table_growths(t) >= 2);
	assert_int_equal(table_count(t, &w), 1);
	assert_int_equal(table_count(t, &b), 2);
	assert_int_equal(
		tk__table_apply_multi(t, 1, &wb, &one, NOW, count_multi, NULL),
		TK__ZONE_PERSIST);
	assert_int_equal(tk__table_apply(t, &b, NOW, 1, kit_count_fn, NULL),
			 TK__ZONE_PERSIST);
	assert_int_equal(table_count(t, &w), 2);
	assert_int_equal(table_count(t, &b), 3);
	tk__table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_count_either_shape),
		cmocka_unit_test(test_no_state_converts),
		cmocka_unit_test(test_other_policies_refused),
		cmocka_unit_test(test_collector_keeps_conversion),
		cmocka_unit_test(test_turn_reads_marked_expiry),
		cmocka_unit_test(test_shapes_survive_growth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
