/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_window_direct.c - the window's direct path (try_window(): window()
 * in lib/store/store-slot.c, shm/direct.c) decides and writes exactly as
 * the generic apply() with its transition callback.
 *
 * The comparisons of test_direct_path.c, run on window policies: a
 * sliding window of 10 buckets and one of 100 (block keys), a fixed
 * window that packs into its slot's word and one whose 10 ms windows do
 * not (a block of two words).  The same generated timeline runs on a
 * direct-path zone and a generic copy of it (clock steps both ways,
 * sweeps, a flood of keys evicting blocks, resets, slots damaged by
 * hand: broken references, another algorithm's shape, "no state yet"),
 * and after every step the slot tables are byte-identical and every
 * answer equal; at the end the whole files (the block arena included)
 * are.  Also on two memory stores, with tables near and far.  Then
 * exactness under contention: threads (zone and memory store) and
 * processes (a zone) checking one hot key at limit L admit exactly L,
 * whichever path each takes.
 *
 * White-box: linked statically for tk__limiter_generic().
 */
#define DIRECT_POLICIES                                                        \
	"sliding-window:10/1s", "sliding-window:50/10s,buckets=100",           \
		"fixed-window:4/2s", "fixed-window:7/10ms"
#define DIRECT_LIMITS 10, 50, 4, 7
/* Admissions all along (the limit is most of the checks), and long
 * enough that the threads overlap on a loaded machine: a few ms of
 * checks fit in one time slice. */
#define DIRECT_RACE_POLICY "sliding-window:60000/1h"
#define DIRECT_RACE_LIMIT 60000
#define DIRECT_RACE_CHECKS 30000
#define DIRECT_BLOCKS 1
/* Checks the direct side's try_window() decided: about half to three
 * quarters of them on these timelines (the rest met an insert, a sweep
 * due, damage, a flood key's expired state), so a path that declined
 * every check would fail. */
#define DIRECT_TAKEN(n) (tk__window_direct_decided > (n) / 3)
#define DIRECT_RESET() (tk__window_direct_decided = 0)
/* Unbounded: a memory store bounded this tight answers -EIO to block
 * keys after a second of retries (either path: the generic one too). */
#define DIRECT_MAX_KEYS 0
#define DIRECT_EXTRA_TESTS                                                     \
	cmocka_unit_test(test_processes_exact),                                \
		cmocka_unit_test(test_fixed_block_exact),
static void test_processes_exact(void **state);
static void test_fixed_block_exact(void **state);

#include "test_direct_path.c"

#define PROCS 3
#define PROC_CHECKS 30000

static void proc_worker(int i)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_clock *c;
	struct tk_store *s;
	uint64_t n = 0;
	int k;

	KIT_CHILD_CHECK(1, tk_clock_manual_new(&c, T0) == 0);
	o.clock = c;
	o.flags = TK_OPT_NO_RECLAIMER;
	KIT_CHILD_CHECK(2, tk_store_open(&s, "shm:race-p", &o) == 0);
	o.store = s;
	KIT_CHILD_CHECK(3,
			tk_limiter_open(&l, DIRECT_RACE_POLICY, NULL, &o) == 0);
	/* One process the long way: both paths race on one state. */
	if (i == PROCS - 1)
		tk__limiter_generic(l);
	for (k = 0; k < PROC_CHECKS; k++) {
		KIT_CHILD_CHECK(4, tk_limiter_check(l, "hot", 3, 1, &d) == 0);
		n += d.allowed;
	}
	atomic_fetch_add(&kit_shared()->allowed, n);
	tk_limiter_close(l);
	tk_store_close(s);
	tk_clock_free(c);
}

/* Processes on one zone check one hot key of a sliding window whose
 * window no check leaves (a manual clock that stands still): exactly
 * L admitted in all. */
static void test_processes_exact(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;

	(void)state;
	tk_zone_destroy("race-p");
	o.zone_capacity = CAP;
	assert_rc(tk_zone_create("race-p", &o), 0);
	assert_non_null(kit_shared());
	kit_shared_reset(T0);
	kit_run_workers(PROCS, proc_worker);
	assert_int_equal(atomic_load(&kit_shared()->allowed),
			 DIRECT_RACE_LIMIT);
	assert_rc(tk_zone_destroy("race-p"), 0);
}

/* A fixed window in a block (windows of 10 ms do not pack), raced by
 * threads as contended() races the sliding window; the first thread the
 * long way. */
static void fixed_block_race(const char *spec)
{
	race_on(spec, "fixed-window:60000/10ms", 0);
}

static void test_fixed_block_exact(void **state)
{
	(void)state;
	fixed_block_race("shm:race");
	fixed_block_race("memory");
}
