/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_block_claims.c - finding a free state block, whatever the arena's
 * history: a claim says "full" only when its class has no free block,
 * so a private table grows only when full and its growths end, and a
 * zone that refuses refuses only when full.
 *
 * The arenas here hold more blocks of a class than one visit looks at
 * (4096), so a claim that looked only near its class's cursor would take
 * a fresh page for each block, then call the arena full with most of it
 * free.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <throttlekit.h>

#include "workers.h"

#define T0 UINT64_C(1700000000000000000)
#define SEC UINT64_C(1000000000)
#define COMBO "all(fixed-window:1000/1h,fixed-window:8000/1h)"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifdef SANITIZED
#define COMBO_CHECKS 200000 /* far past where claims used to stall */
#else
#define COMBO_CHECKS 1000000
#endif

static char dir[] = "/tmp/tk-claims-XXXXXX";
static struct tk_clock *clk; /* a manual clock at T0 */

/* Check the composite on the new keys a@i and b@i: rc 0, admitted. */
static void check_new_pair(struct tk_limiter *l, long i)
{
	struct tk_decision d;
	struct tk_key k[2];
	char a[32], b[32];

	k[0].key = a;
	k[0].key_len = (size_t)snprintf(a, sizeof(a), "a%ld", i);
	k[1].key = b;
	k[1].key_len = (size_t)snprintf(b, sizeof(b), "b%ld", i);
	assert_int_equal(tk_limiter_check_keys(l, k, 2, 1, &d), 0);
	assert_true(d.allowed);
}

/*
 * The memory store, one thread, composites on new key pairs: every one
 * is decided, through all the growths it takes, and each key holds its
 * one admission afterwards.  Claims that looked only near the cursor
 * stalled here, then failed with -EIO after some 60,000 checks.
 */
static void test_growth_never_stalls(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_stats st;
	long i;

	(void)state;
	o.clock = clk;
	o.reclaim_interval = 20000000; /* 20 ms, as in the report */
	assert_int_equal(tk_limiter_open(&l, COMBO, "memory", &o), 0);
	for (i = 0; i < COMBO_CHECKS; i++)
		check_new_pair(l, i);
	assert_int_equal(tk_limiter_stats(l, &st, sizeof(st)), 0);
	assert_int_equal(st.keys, 2 * (uint64_t)COMBO_CHECKS);
	assert_int_equal(tk_limiter_peek(l, "a7", 2, &d), 0);
	assert_int_equal(d.remaining, 999);
	tk_limiter_close(l);
}

static struct tk_limiter *open_zone(const char *zone, const char *policy,
				    uint64_t capacity, unsigned int flags)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;
	char spec[64];

	o.clock = clk;
	o.zone_capacity = capacity;
	o.flags = flags | TK_OPT_NO_RECLAIMER;
	snprintf(spec, sizeof(spec), "shm:%s", zone);
	if (tk_limiter_open(&l, policy, spec, &o) != 0)
		l = NULL;
	return l;
}

/*
 * A zone that refuses when full, with room for every key: composites on
 * new keys are never refused (their descriptors come and go), where the
 * claims that looked only near the cursor refused after a few thousand
 * with most of the arena free.
 */
static void test_refusing_zone_refuses_only_when_full(void **state)
{
	struct tk_limiter *l =
		open_zone("refuse", COMBO, 1 << 17, TK_OPT_ZONE_REFUSE_FULL);
	struct tk_zone_info info;
	long i;

	(void)state;
	assert_non_null(l);
	for (i = 0; i < 20000; i++)
		check_new_pair(l, i);
	tk_limiter_close(l);
	assert_int_equal(tk_zone_verify("refuse", &info, sizeof(info)), 0);
	assert_int_equal(info.violations, 0);
	assert_int_equal(info.keys, 40000);
	assert_int_equal(info.evictions, 0);
	assert_int_equal(tk_zone_destroy("refuse"), 0);
}

/* Check key @prefix@i once: its rc. */
static int check_key(struct tk_limiter *l, const char *prefix, long i)
{
	struct tk_decision d;
	char key[32];
	int n = snprintf(key, sizeof(key), "%s%ld", prefix, i);

	return tk_limiter_check(l, key, (size_t)n, 1, &d);
}

static void reset_key(struct tk_limiter *l, const char *prefix, long i)
{
	char key[32];
	int n = snprintf(key, sizeof(key), "%s%ld", prefix, i);

	assert_int_equal(tk_limiter_reset(l, key, (size_t)n), 0);
}

/*
 * A refusing zone filled with sliding windows, one block each: a key is
 * refused only once every block of the class is in use, however the
 * blocks were claimed.  Then resets free blocks far from the cursor and
 * from each other, and new keys get every one of them.
 */
static void test_refusal_means_full(void **state)
{
	struct tk_limiter *l =
		open_zone("full", "sliding-window:5/1h,buckets=3", 1 << 17,
			  TK_OPT_ZONE_REFUSE_FULL);
	struct tk_zone_info info;
	uint64_t blocks;
	long i;
	int rc = 0;

	(void)state;
	assert_non_null(l);
	for (i = 0; i < (1 << 17) && rc == 0; i++)
		rc = check_key(l, "k", i);
	assert_int_equal(rc, -ENOSPC);
	assert_int_equal(tk_zone_info("full", &info, sizeof(info)), 0);
	/* A window of 3 buckets takes a block of 16 cells (256 bytes). */
	blocks = info.arena_size / 256;
	assert_int_equal(blocks, 16384);
	assert_int_equal(info.blocks, blocks);
	/* The key refused holds a slot of no state yet, until a sweep. */
	assert_int_equal(info.keys, blocks + 1);
	/* Refused again at once (the class is known full); then resets
	 * free eight blocks 2048 apart, more than the spares hold and
	 * farther apart than one visit looks (4096 blocks): eight new keys
	 * get them, and the ninth is refused. */
	assert_int_equal(check_key(l, "x", 0), -ENOSPC);
	for (i = 0; i < 8; i++)
		reset_key(l, "k", i * 2048 + 17);
	for (i = 0; i < 8; i++)
		assert_int_equal(check_key(l, "y", i), 0);
	assert_int_equal(check_key(l, "z", 0), -ENOSPC);
	tk_limiter_close(l);
	assert_int_equal(tk_zone_verify("full", &info, sizeof(info)), 0);
	assert_int_equal(info.violations, 0);
	assert_int_equal(tk_zone_destroy("full"), 0);
}

/*
 * The class's cursor wrapped round to blocks all in use, and the free
 * blocks are in pages of the pool: every new key takes a page, and each
 * page then fills before the next is taken.  Claims that left the cursor
 * where it was took a page per key and refused with a fifth of the arena
 * free.  Then the time passes every window's end and its grace: the new
 * keys reclaim the expired states, never refused.
 */
static void test_pages_fill_before_refusal(void **state)
{
	struct tk_limiter *l =
		open_zone("wrap", "sliding-window:5/1h,buckets=3", 1 << 16,
			  TK_OPT_ZONE_REFUSE_FULL);
	long i, got;

	(void)state;
	assert_non_null(l);
	/* 8192 blocks of 16 cells, in key order: 64 to a page. */
	for (i = 0; i < 8192; i++)
		assert_int_equal(check_key(l, "k", i), 0);
	for (i = 6400; i < 8192; i++)
		reset_key(l, "k", i);
	assert_int_equal(tk_zone_sweep("wrap", T0), 0);
	for (got = 0; got < 4000 && check_key(l, "n", got) == 0; got++)
		;
	assert_int_equal(got, 8192 - 6400);
	/* Two hours on, past every window and the grace of 60 s: as many
	 * new keys as the arena has blocks. */
	assert_int_equal(tk_clock_advance(clk, 7200 * SEC), 0);
	for (i = 0; i < 8192; i++)
		assert_int_equal(check_key(l, "later", i), 0);
	tk_limiter_close(l);
	assert_int_equal(tk_zone_destroy("wrap"), 0);
	assert_int_equal(tk_clock_set(clk, T0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_growth_never_stalls),
		cmocka_unit_test(test_refusing_zone_refuses_only_when_full),
		cmocka_unit_test(test_refusal_means_full),
		cmocka_unit_test(test_pages_fill_before_refusal),
	};
	int rc;

	if (kit_zone_dir(dir) != 0 || tk_clock_manual_new(&clk, T0) != 0)
		return 99;
	rc = cmocka_run_group_tests_name("block_claims", tests, NULL, NULL);
	tk_clock_free(clk);
	rmdir(dir);
	return rc;
}
