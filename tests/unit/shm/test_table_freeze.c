/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_table_freeze.c - a growth's freeze of a slot (shm/grow.c) that
 * loses its CAS to a rival's update, staged by tk__table_freeze_hook
 * between the freeze's read of the slot and its CAS.  The freeze must
 * read the slot again and freeze what the rival wrote, however many
 * times in a row it loses: the update moves with the key, and nothing
 * is left unfrozen behind the move.  The spin model (tests/model/
 * grow.pml) proves the protocol; this runs the code's own retry.
 *
 * White-box (statically linked): the table has no public interface.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "../../shm/word.h"
#include "table-kit.h"

#define T0 KIT_T0
#define FILLER UINT64_C(1000)

static const uint64_t seed[2] = { 11, 12 };

#define KEYS 16 /* keys before the growth, one of them the rival's */

static struct {
	uint64_t fp; /* the rival's key */
	int losses;  /* CASes the freeze of its slot is to lose */
	int fired;
	int freezes; /* freezes of its slot seen by the hook */
} st;

/* A rival's check of the key lands on its slot of the old table, which
 * takes updates until the slot is frozen. */
static void rival(struct tk__zone *z, uint64_t idx)
{
	struct tkz_slot *s = &tk__zone_slots(z)[idx];
	struct tk__zone_key k;
	uint64_t w0, w1;

	tkz_read_slot(s, &w0, &w1);
	if (tkz_state(w0) != TKZ_MEM || tkz_frozen(w0) || tkz_fp(w0) != st.fp)
		return;
	st.freezes++;
	if (st.fired == st.losses)
		return;
	st.fired++;
	k.fp = st.fp;
	k.pos = tk__table_pos(k.fp);
	assert_int_equal(tk__zone_apply(z, &k, T0, 1, kit_count_fn, NULL),
			 TK__ZONE_PERSIST);
}

/* One of the first keys whose slot in the old table no move has frozen
 * yet: its own pull will be the first to freeze it. */
static uint64_t unmoved_key(struct tk__table *t)
{
	struct tk__zone *oz = tk__zone_old(tk__table_zone(t));
	struct tk__zone_key k;
	uint64_t i, idx, w0, w1;

	assert_non_null(oz);
	for (i = 0; i < KEYS; i++) {
		k = kit_word_key(i);
		if (tk__zone_locate(oz, &k, T0, 0, &idx, &w0, &w1) == 0 &&
		    !tkz_frozen(w0))
			return i;
	}
	fail_msg("every key moved with the growth's first chunk");
	return 0;
}

/*
 * Keys, then fillers until the table grows; then a check of a key not
 * moved yet, whose pull freezes its slot while a rival's checks land
 * there @losses times.
 */
static void grow_with_rival(int losses)
{
	struct tk__table *t = kit_table(1024, 4096, seed, T0);
	struct tk__zone_key k;
	uint64_t i, n, key;

	memset(&st, 0, sizeof(st));
	st.losses = losses;
	for (i = 0; i < KEYS; i++) {
		k = kit_word_key(i);
		assert_int_equal(
			tk__table_apply(t, &k, T0, 1, kit_count_fn, NULL),
			TK__ZONE_PERSIST);
	}
	for (n = 0; tk__table_growths(t) == 0; n++) {
		k = kit_word_key(FILLER + n);
		assert_int_equal(
			tk__table_apply(t, &k, T0, 1, kit_count_fn, NULL),
			TK__ZONE_PERSIST);
	}
	key = unmoved_key(t);
	k = kit_word_key(key);
	st.fp = k.fp;
	tk__table_freeze_hook = rival;
	assert_int_equal(tk__table_apply(t, &k, T0, 1, kit_count_fn, NULL),
			 TK__ZONE_PERSIST);
	tk__table_freeze_hook = NULL;

	/* Each loss was followed by another try, and the freeze that won
	 * took every rival's unit along: 1 before, the rival's, this one. */
	assert_int_equal(st.fired, losses);
	assert_int_equal(st.freezes, losses + 1);
	assert_int_equal(kit_count(t, key), 2 + (uint64_t)losses);
	while (tk__table_move(t, T0))
		;
	assert_int_equal(kit_count(t, key), 2 + (uint64_t)losses);
	kit_census_clean(t, KEYS + n);
	tk__table_free(t);
}

static void test_freeze_after_one_lost_cas(void **state)
{
	(void)state;
	grow_with_rival(1);
}

static void test_freeze_after_many_lost_cas(void **state)
{
	(void)state;
	grow_with_rival(5);
}

/* The control: no rival, one freeze, the count as it was. */
static void test_freeze_unopposed(void **state)
{
	(void)state;
	grow_with_rival(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_freeze_unopposed, kit_no_hooks),
		cmocka_unit_test_teardown(test_freeze_after_one_lost_cas,
					  kit_no_hooks),
		cmocka_unit_test_teardown(test_freeze_after_many_lost_cas,
					  kit_no_hooks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
