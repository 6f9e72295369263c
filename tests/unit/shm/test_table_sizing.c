/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_table_sizing.c - a private table's successor is sized by what was
 * full (shm/grow.c, "Sizing a successor" in docs/shm-protocol.md):
 *
 * - a full arena doubles the pages and keeps the slots, which hold few
 *   keys;
 * - full windows double the slots and keep an arena its blocks do not
 *   need more of, or give it twice the pages they take;
 * - new keys inserted while keys move in take no room the moved keys
 *   need: once the successor's budget is spent, a new key moves every
 *   chunk first, so the move finishes and every state is kept;
 * - the bytes held are those of the tables' sizes (reserved, live).
 *
 * White-box (statically linked): the table has no public interface.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../../shm/word.h"
#include "table-kit.h"

#define T0 KIT_T0
#define LOG 200	  /* words: a block of 256 cells, four to a page */
#define PAGE 1000 /* words: a block of 1024 cells, a whole page */

static const uint64_t seed[2] = { 21, 22 };

/* No operation runs in another thread: no grace period to wait for. */
static void no_readers(void)
{
}

static const struct tkz_geo *geo(struct tk__table *t)
{
	return tk__zone_geo(tk__table_zone(t));
}

/* Read block key 0 until no move is under way: reads move chunks. */
static void settle(struct tk__table *t, uint32_t words)
{
	while (tk__zone_old(tk__table_zone(t)))
		(void)kit_blk_count(t, 0, words);
}

/* Every retired table freed: what is held is the newest table. */
static void held_is_newest(struct tk__table *t)
{
	tk__table_reclaim(t, no_readers);
	assert_int_equal(tk__table_retired(t), 0);
	assert_int_equal(tk__table_reserved(t), tk__table_live(t));
	assert_int_equal(tk__table_live(t),
			 tkz_segment_size(geo(t)->capacity, geo(t)->pages));
}

/* 100 states of four to a page fill 25 pages: the arena doubles from 4
 * to 32 pages in three growths, and the 1024 slots stay. */
static void test_full_arena_keeps_slots(void **state)
{
	struct tk__table *t = kit_table(1024, UINT64_C(1) << 20, seed, T0);
	uint64_t i;

	(void)state;
	assert_int_equal(geo(t)->pages, 4);
	for (i = 0; i < 100; i++)
		assert_int_equal(kit_blk_bump(t, i, LOG), TK__ZONE_PERSIST);
	settle(t, LOG);
	assert_int_equal(geo(t)->capacity, 1024);
	assert_int_equal(geo(t)->pages, 32);
	assert_int_equal(tk__table_growths(t), 3);
	for (i = 0; i < 100; i++)
		assert_int_equal(kit_blk_count(t, i, LOG), 1);
	held_is_newest(t);
	tk__table_free(t);
}

/* Word keys take no block: the slots double, the arena keeps its 4
 * pages. */
static void test_full_windows_keep_arena(void **state)
{
	struct tk__table *t = kit_table(64, UINT64_C(1) << 20, seed, T0);
	struct tk__zone_key k;
	uint64_t i;

	(void)state;
	for (i = 0; i < 5000; i++) {
		k = kit_word_key(i);
		assert_int_equal(
			tk__table_apply(t, &k, T0, 1, kit_count_fn, NULL),
			TK__ZONE_PERSIST);
	}
	while (tk__zone_old(tk__table_zone(t)))
		(void)kit_count(t, 0);
	assert_true(geo(t)->capacity >= 8192);
	assert_int_equal(geo(t)->pages, 4);
	for (i = 0; i < 5000; i++)
		assert_int_equal(kit_count(t, i), 1);
	held_is_newest(t);
	tk__table_free(t);
}

/* Insert word keys from *@i on until a growth is under way. */
static void fill_until_growth(struct tk__table *t, uint64_t *i)
{
	struct tk__zone_key k;

	while (!tk__zone_old(tk__table_zone(t))) {
		k = kit_word_key((*i)++);
		assert_int_equal(
			tk__table_apply(t, &k, T0, 1, kit_count_fn, NULL),
			TK__ZONE_PERSIST);
	}
}

/* Blocks on 3 of the 4 pages when the windows fill: twice the slots,
 * and twice the 3 pages the blocks take. */
static void test_slot_growth_sizes_arena_by_blocks(void **state)
{
	struct tk__table *t = kit_table(1024, UINT64_C(1) << 20, seed, T0);
	uint64_t i, w = 1000;

	(void)state;
	for (i = 0; i < 12; i++)
		assert_int_equal(kit_blk_bump(t, i, LOG), TK__ZONE_PERSIST);
	assert_int_equal(geo(t)->pages, 4);
	fill_until_growth(t, &w);
	assert_int_equal(geo(t)->capacity, 2048);
	assert_int_equal(geo(t)->pages, 6);
	settle(t, LOG);
	for (i = 0; i < 12; i++)
		assert_int_equal(kit_blk_count(t, i, LOG), 1);
	for (i = 1000; i < w; i++)
		assert_int_equal(kit_count(t, i), 1);
	held_is_newest(t);
	tk__table_free(t);
}

/*
 * Two whole-page states, in the chunks a move reaches last, on a table
 * of 4 pages whose windows fill: the successor has 4 pages too, 2 of
 * them for the states that move.  New keys of a page each, one per
 * check, would take all 4 before the move reaches the two (a check moves
 * one chunk of 64 slots of 1024), and the move could never finish; the
 * successor's budget lets the first in, and the second moves everything
 * first, and then the arena grows.  Every check is admitted, every state
 * kept.
 */
static void test_new_keys_leave_room_for_moved(void **state)
{
	struct tk__table *t = kit_table(1024, UINT64_C(1) << 20, seed, T0);
	uint64_t old[2], i, w = 1000;

	(void)state;
	old[0] = kit_late_key(t, 100000, 1);
	old[1] = kit_late_key(t, old[0] + 1, 1);
	for (i = 0; i < 2; i++)
		assert_int_equal(kit_blk_bump(t, old[i], PAGE),
				 TK__ZONE_PERSIST);
	fill_until_growth(t, &w);
	assert_int_equal(geo(t)->pages, 4);
	for (i = 0; i < 8; i++)
		assert_int_equal(kit_blk_bump(t, 200000 + i, PAGE),
				 TK__ZONE_PERSIST);
	/* The move ended, and the arena grew since. */
	assert_true(tk__table_growths(t) >= 2);
	settle(t, PAGE);
	for (i = 0; i < 2; i++)
		assert_int_equal(kit_blk_count(t, old[i], PAGE), 1);
	for (i = 0; i < 8; i++)
		assert_int_equal(kit_blk_count(t, 200000 + i, PAGE), 1);
	for (i = 1000; i < w; i++)
		assert_int_equal(kit_count(t, i), 1);
	held_is_newest(t);
	tk__table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_arena_keeps_slots),
		cmocka_unit_test(test_full_windows_keep_arena),
		cmocka_unit_test(test_slot_growth_sizes_arena_by_blocks),
		cmocka_unit_test(test_new_keys_leave_room_for_moved),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
