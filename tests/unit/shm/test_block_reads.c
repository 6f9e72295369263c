/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_block_reads.c - a block state is read only if every cell of it
 * carries the block's gen.
 *
 * A state larger than one word lives in a block of the zone's arena
 * (shm/blocks.c), each word in a cell tagged with the gen of the block's
 * incarnation that wrote it.  A cell of another gen (a writer stopped
 * while the block was given to another key, or a corrupt zone) makes the
 * whole state unreadable: a check takes it as no state and replaces
 * it (the broken reference, not a state valid() refused: no corrupt
 * count).  Checked for the first, a middle and
 * the last word of a sliding window's 22, whose cells a read visits in
 * one loop and tests together at its end.  The checks within the tick of
 * the state's last write read its memo and hot word alone (the last
 * word, here): a cell of another gen elsewhere is found by the first
 * check that reads the state, the next tick's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <throttlekit.h>

#include "../kit/asserts.h"
#include "workers.h"

#define T0 UINT64_C(1700000000000000000)

static char dir[] = "/tmp/tk-blockreads-XXXXXX";

static void test_cell_of_another_gen(void **unused)
{
	static const unsigned int words[] = { 0, 11, 21 };
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_zone_info info;
	struct tk_limiter *l;
	struct tk_clock *clock;
	struct tk_decision d;
	struct tk_store *s;
	uint64_t reset;
	unsigned int k;
	off_t off;
	int rc;

	(void)unused;
	for (k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
		rc = tk_zone_destroy("blockreads");
		assert_true(rc == 0 || rc == -ENOENT);
		assert_rc(tk_clock_manual_new(&clock, T0), 0);
		o.clock = clock;
		o.zone_capacity = 256;
		o.flags = TK_OPT_NO_RECLAIMER;
		assert_rc(tk_store_open(&s, "shm:blockreads", &o), 0);
		o.store = s;
		assert_rc(tk_limiter_open(&l, "sliding-window:10/1h", NULL, &o),
			  0);
		o.store = NULL;
		assert_rc(tk_limiter_check(l, "k", 1, 3, &d), 0);
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		/* reset_at: the end of tick floor(T0 / 360 s), plus 1 h. */
		assert_decision(d, true, 10, 6, T0 + 3880 * SEC, 0);
		assert_rc(tk_zone_verify("blockreads", &info, sizeof(info)), 0);
		/* The cell's gen one past the block's, its value kept. */
		off = kit_block_word_offset("blockreads", words[k]);
		kit_zone_poke("blockreads", off,
			      kit_zone_peek("blockreads", off) + 1);
		/* The hot word: the 21st, the count of T0's bucket (tick
		 * T0 / 360 s, ring index 10 of 11).  Any other word is
		 * read at the next tick. */
		reset = T0 + 3880 * SEC;
		if (words[k] != 21) {
			assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
			assert_decision(d, true, 10, 5, reset, 0);
			assert_rc(tk_clock_set(clock, T0 + 360 * SEC), 0);
			reset += 360 * SEC;
		}
		/* No state: a cold key's decision, the state replaced. */
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_decision(d, true, 10, 9, reset, 0);
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_decision(d, true, 10, 8, reset, 0);
		assert_rc(tk_zone_verify("blockreads", &info, sizeof(info)), 0);
		tk_limiter_close(l);
		tk_store_close(s);
		tk_clock_free(clock);
	}
}

static int setup(void **state)
{
	(void)state;
	return kit_zone_dir(dir);
}

static int teardown(void **state)
{
	(void)state;
	tk_zone_destroy("blockreads");
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cell_of_another_gen),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
