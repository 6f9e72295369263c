/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_block_class.c - the size class of a block state (white-box,
 * linked statically).
 *
 * shm/blocks.c computes the class of a state of n words, the smallest k
 * with n + 2 cells (header, expiry) <= 4 << k, in a few instructions.
 * Here it must agree with that definition for every word count up to the
 * largest a block holds, and refuse everything above it and above the
 * largest class (-E2BIG), at both ends of 32 bits.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>

#include "../../shm/zone.h"
#include "../../shm/layout.h"

/* The class by its definition: a walk over the classes. */
static int by_definition(uint32_t words)
{
	int k;

	if (words > TKZ_BLK_WORDS_MAX)
		return -E2BIG;
	for (k = 0; k < TKZ_CLASSES; k++)
		if (words + TKZ_BLK_OVERHEAD <= (uint64_t)TKZ_CLASS_MIN << k)
			return k;
	return -E2BIG;
}

static void test_every_size(void **unused)
{
	uint32_t w;
	int seen_last = 0;

	(void)unused;
	for (w = 0; w <= 4 * TKZ_BLK_WORDS_MAX; w++) {
		if (tk__blk_class(w) != by_definition(w))
			fail_msg("%u words: class %d, by definition %d", w,
				 tk__blk_class(w), by_definition(w));
		seen_last |= by_definition(w) == TKZ_CLASSES - 1;
	}
	assert_true(seen_last);
	for (w = UINT32_MAX - 4096; w != 0; w++)
		assert_int_equal(tk__blk_class(w), -E2BIG);
	/* The edges: 2 words fill the smallest class, 3 need the next. */
	assert_int_equal(tk__blk_class(2), 0);
	assert_int_equal(tk__blk_class(3), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
