/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_zone_sweep.c - a full sweep (tk_zone_sweep()) collects every state
 * block that a dead process left behind, wherever the arena's sweep cursor
 * stands when it starts.
 *
 * The cursor is shared by every sweep of the zone: the incremental sweeps
 * of checks take 64 cells of it at a time, a full sweep takes 256.  When
 * a sweep stopped at the end of a page instead of sweeping the cells it
 * had taken, a full sweep that started off a multiple of 256 cells missed
 * the first blocks of every page, and a block leaked there stayed leaked
 * (tests/unit/shm/test_zone.c's kill -9 chaos found one, rarely, under load).
 *
 * The leftover is staged exactly: the library's own claim and write of a
 * block for a key's update, then no publish, as a process killed there
 * leaves it; the key is then updated by a live process, so the claim can
 * never be published.  A live block sits before it in the page, so that
 * returning the page to the pool does not collect it by the way.
 *
 * White-box (statically linked): the claim and the cursor are internal.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <throttlekit.h>

#include "workers.h"

#include "../../shm/zone.h"

#define T0 UINT64_C(1700000000000000000)
#define NONE UINT64_MAX /* no slot */

static char dir[] = "/tmp/tk-sweep-XXXXXX";

static struct tk_clock *clk; /* a manual clock at T0: nothing expires */

static struct tk_limiter *open_on(const char *policy)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;

	o.clock = clk;
	o.zone_capacity = 4096;
	o.zone_arena = 64 * 1024; /* 4 pages */
	o.flags = TK_OPT_NO_RECLAIMER;
	if (tk_limiter_open(&l, policy, "shm:sweep", &o) != 0)
		l = NULL;
	return l;
}

static void check_ok(struct tk_limiter *l, const char *key)
{
	struct tk_decision d;

	assert_int_equal(tk_limiter_check(l, key, strlen(key), 1, &d), 0);
	assert_true(d.allowed);
}

/* The one MEM slot of zone "sweep" that is neither @x nor @y. */
struct find {
	uint64_t x, y, found;
	int n;
};

static int other_slot(void *ctx, uint64_t slot, uint64_t fp, uint64_t w1)
{
	struct find *f = ctx;

	(void)fp;
	(void)w1;
	if (slot != f->x && slot != f->y) {
		f->found = slot;
		f->n++;
	}
	return 0;
}

static uint64_t new_slot(uint64_t x, uint64_t y)
{
	struct find f = { x, y, 0, 0 };

	assert_int_equal(tk_zone_walk("sweep", other_slot, &f), 0);
	assert_int_equal(f.n, 1);
	return f.found;
}

/*
 * A process that froze the hot word of the key in slot @idx (if its state
 * has one), claimed and wrote a block for its next update, and was killed
 * before publishing it: the key's next update replaces its state, and
 * the claim is left to collect.
 */
static void claim_and_die(struct tk__zone *z, uint64_t idx)
{
	struct tkz_slot *s = &tk__zone_slots(z)[idx];
	uint64_t words[TKZ_STATE_WORDS_MAX], w0 = s->w[0], w1 = s->w[1], exp;
	struct tk__blk b;
	int n;

	n = tk__blk_read_carried(z, s, w0, w1, words, TKZ_STATE_WORDS_MAX,
				 &exp);
	assert_true(n > 0);
	assert_int_equal(tk__blk_claim(z, (uint32_t)n, idx, w1, T0, &b), 0);
	assert_int_equal(tk__blk_write(z, &b, exp, words, 0, NULL), 0);
}

/* Blocks in use in zone "sweep", after checking that it verifies. */
static uint64_t blocks(void)
{
	struct tk_zone_info info;

	assert_int_equal(tk_zone_verify("sweep", &info, sizeof(info)), 0);
	assert_int_equal(info.keys, 3);
	return info.blocks;
}

/*
 * For policies whose blocks are 4, 8 and 256 cells: key "o" of another
 * size takes the first page; keys "a" and "k" have the first two blocks
 * of the second; a dead claim for "k", left behind once "k" is updated
 * again, is the third.  A full sweep started at any of the cursor
 * positions a zone's sweeps leave collects it, and only it: the ranges
 * its steps take cross from an open page into the next one.
 */
static void test_full_sweep_from_any_cursor(void **state)
{
	static const char *const policies[] = {
		"fixed-window:5/1ms",
		"sliding-window:200/1h,buckets=4",
		"sliding-log:200/1h",
	};
	/* Cells: multiples of 64 (where checks' sweeps leave it), the last
	 * range of the arena (a sweep that wraps), and aligned ones. */
	static const uint64_t cursors[] = { 0, 64, 128, 192, 256, 960, 4032 };
	const size_t np = sizeof(policies) / sizeof(policies[0]);
	struct tk__zone *z;
	struct tk_limiter *l, *other;
	uint64_t a, o;
	size_t p, c;

	(void)state;
	for (p = 0; p < np; p++)
		for (c = 0; c < sizeof(cursors) / sizeof(cursors[0]); c++) {
			other = open_on(policies[(p + 1) % np]);
			l = open_on(policies[p]);
			assert_non_null(other);
			assert_non_null(l);
			check_ok(other, "o");
			o = new_slot(NONE, NONE);
			check_ok(l, "a");
			a = new_slot(o, NONE);
			check_ok(l, "k");
			assert_int_equal(tk__zone_attach(&z, "sweep", NULL, 0),
					 0);
			claim_and_die(z, new_slot(o, a));
			check_ok(l, "k");
			/* The dead claim is there, nothing else leaked. */
			assert_int_equal(blocks(), 4);
			ck_pr_store_64(&tk__zone_header(z)->arena_sweep.v,
				       cursors[c]);
			tk__zone_detach(z);
			assert_int_equal(tk_zone_sweep("sweep", T0), 0);
			assert_int_equal(blocks(), 3);
			/* The keys kept their states. */
			check_ok(other, "o");
			check_ok(l, "a");
			check_ok(l, "k");
			tk_limiter_close(l);
			tk_limiter_close(other);
			assert_int_equal(tk_zone_destroy("sweep"), 0);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_sweep_from_any_cursor),
	};
	int rc;

	if (kit_zone_dir(dir) != 0 || tk_clock_manual_new(&clk, T0) != 0)
		return 99;
	rc = cmocka_run_group_tests_name("zone_sweep", tests, NULL, NULL);
	tk_clock_free(clk);
	rmdir(dir);
	return rc;
}
