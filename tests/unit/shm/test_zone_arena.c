/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_zone_arena.c - the arena of state blocks when it is full: eviction
 * of blocks by second chance, pages going back to a common pool when they
 * empty, what a zone that refuses does, and exact counts across forked
 * processes meanwhile.
 *
 * Arenas here are the smallest there is, 64 KiB: 4 pages of 16 KiB.  A
 * sliding log of limit 100 takes a block of 128 cells (2 KiB), so the
 * arena holds 32 of them; a sliding window of 3 buckets one of 16 cells.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <throttlekit.h>

#include "workers.h"

/* White-box: the multi-key update met with a hostile slot value. */
#include "../../shm/zone.h"

#define T0 UINT64_C(1700000000000000000)
#define SEC UINT64_C(1000000000)
#define ARENA (64 * 1024)
#define LOG "sliding-log:100/1h"	       /* 32 blocks fill the arena */
#define WINDOW "sliding-window:5/1h,buckets=3" /* another size */
#define BLOCKS 32
/* A composite over two more sizes: 16 cells and 4 cells. */
#define COMBO "all(sliding-window:5/1h,buckets=3,fixed-window:5/1ms)"
/* Where the page table of a zone of 4096 slots starts in its file. */
#define PAGETABLE (4096 + 4096 * 16)
#define CELLS (PAGETABLE + 64) /* and its arena */

static char dir[] = "/tmp/tk-arena-XXXXXX";

static struct kit_shared *sh; /* kit_shared() */
static struct tk_clock *clk;  /* a manual clock at T0: nothing expires */

static struct tk_limiter *open_on(const char *zone, const char *policy,
				  unsigned int flags)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;
	char spec[64];

	o.clock = clk;
	o.zone_capacity = 4096;
	o.zone_arena = ARENA;
	o.flags = flags | TK_OPT_NO_RECLAIMER;
	snprintf(spec, sizeof(spec), "shm:%s", zone);
	if (tk_limiter_open(&l, policy, spec, &o) != 0)
		l = NULL;
	return l;
}

/* Check @key once: its rc, with *allowed set. */
static int check(struct tk_limiter *l, const char *key, int *allowed)
{
	struct tk_decision d;
	int rc = tk_limiter_check(l, key, strlen(key), 1, &d);

	*allowed = rc == 0 && d.allowed;
	return rc;
}

static void check_ok(struct tk_limiter *l, const char *key)
{
	int allowed;

	assert_int_equal(check(l, key, &allowed), 0);
	assert_true(allowed);
}

/* Keys @prefix0 .. @prefix(n-1), each checked @times times (admitted). */
static void fill(struct tk_limiter *l, const char *prefix, int n, int times)
{
	char key[32];
	int i, t;

	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s%d", prefix, i);
		for (t = 0; t < times; t++)
			check_ok(l, key);
	}
}

static void verify(const char *zone, struct tk_zone_info *info)
{
	assert_int_equal(tk_zone_verify(zone, info, sizeof(*info)), 0);
	assert_int_equal(info->violations, 0);
}

/*
 * Every block of a size referenced (each key used twice, the last use of
 * the last key needing a block more than the arena has): keys still get
 * blocks, by eviction of the coldest, with the ref bits cleared when all
 * are set, never the key being updated.  Then hot keys keep exact counts
 * while a flood of keys used once evicts itself.
 */
static void test_full_class_evicts(void **state)
{
	struct tk_limiter *l = open_on("evict", LOG, 0);
	struct tk_zone_info info;
	char key[32];
	int i, h, allowed, admitted[4] = { 0 };

	(void)state;
	assert_non_null(l);
	fill(l, "c", BLOCKS, 2);
	check_ok(l, "new");
	/* Used twice in a row: they earn their second chance. */
	for (h = 0; h < 4; h++) {
		snprintf(key, sizeof(key), "hot%d", h);
		check_ok(l, key);
		check_ok(l, key);
		admitted[h] = 2;
	}
	for (i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "f%d", i);
		check_ok(l, key);
		for (h = 0; h < 4; h++) {
			snprintf(key, sizeof(key), "hot%d", h);
			assert_int_equal(check(l, key, &allowed), 0);
			admitted[h] += allowed;
		}
	}
	for (h = 0; h < 4; h++)
		assert_int_equal(admitted[h], 100);
	tk_limiter_close(l);
	verify("evict", &info);
	assert_true(info.evictions >= 200);
	assert_true(info.blocks <= BLOCKS);
	assert_int_equal(tk_zone_destroy("evict"), 0);
}

/* A shared hot key amid this worker's flood of keys used once. */
static void flood_worker(int i)
{
	struct tk_limiter *l = open_on("evictp", LOG, 0);
	char key[32];
	int k, allowed;

	if (!l)
		_exit(2);
	for (k = 0; k < 150; k++) {
		snprintf(key, sizeof(key), "f%d-%d", i, k);
		if (check(l, key, &allowed) != 0 || !allowed)
			atomic_fetch_add(&sh->errors, 1);
		if (k % 3)
			continue;
		if (check(l, "hot", &allowed) != 0)
			atomic_fetch_add(&sh->errors, 1);
		else if (allowed)
			atomic_fetch_add(&sh->allowed, 1);
	}
	tk_limiter_close(l);
}

/* Four processes evict all the time; the hot key's count stays exact. */
static void test_eviction_across_processes(void **state)
{
	struct tk_limiter *l = open_on("evictp", LOG, 0);
	struct tk_zone_info info;

	(void)state;
	assert_non_null(l);
	kit_shared_reset(0);
	/* Used twice: it earned its second chance before the flood. */
	check_ok(l, "hot");
	check_ok(l, "hot");
	kit_run_workers(4, flood_worker);
	assert_int_equal(atomic_load(&sh->errors), 0);
	/* 2 + 4 x 50 checks, at most 100 admitted: exactly 100. */
	assert_int_equal(atomic_load(&sh->allowed) + 2, 100);
	tk_limiter_close(l);
	verify("evictp", &info);
	assert_true(info.evictions > 0);
	assert_int_equal(tk_zone_destroy("evictp"), 0);
}

static void reset_all(struct tk_limiter *l, const char *prefix, int n)
{
	char key[32];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s%d", prefix, i);
		assert_int_equal(tk_limiter_reset(l, key, strlen(key)), 0);
	}
}

/* A composite check of keys @a and @b: its rc, with *allowed set. */
static int check2(struct tk_limiter *l, const char *a, const char *b,
		  int *allowed)
{
	struct tk_key k[2] = { { a, strlen(a) }, { b, strlen(b) } };
	struct tk_decision d;
	int rc = tk_limiter_check_keys(l, k, 2, 1, &d);

	*allowed = rc == 0 && d.allowed;
	return rc;
}

/*
 * The arena filled by one policy's keys, which are then reset and swept:
 * a policy of another block size, and a composite over two more sizes,
 * get blocks (the empty pages went back to the pool), exactly counted;
 * in a zone that refuses as in one that evicts.
 */
static void test_pages_return_to_pool(void **state)
{
	struct tk_limiter *log, *win, *combo;
	struct tk_zone_info info;
	char key[32], other[32];
	int i, t, refuse, allowed, n;

	(void)state;
	for (refuse = 0; refuse < 2; refuse++) {
		log = open_on("pool", LOG,
			      refuse ? TK_OPT_ZONE_REFUSE_FULL : 0);
		win = open_on("pool", WINDOW, 0);
		combo = open_on("pool", COMBO, 0);
		assert_non_null(log);
		assert_non_null(win);
		assert_non_null(combo);
		fill(log, "l", BLOCKS, 1);
		verify("pool", &info);
		assert_int_equal(info.blocks, BLOCKS);
		reset_all(log, "l", BLOCKS);
		assert_int_equal(tk_zone_sweep("pool", T0), 0);
		for (i = 0; i < 100; i++) {
			snprintf(key, sizeof(key), "w%d", i);
			for (t = n = 0; t < 7; t++) {
				assert_int_equal(check(win, key, &allowed), 0);
				n += allowed;
			}
			assert_int_equal(n, 5);
		}
		for (i = 0; i < 50; i++) {
			snprintf(key, sizeof(key), "x%d", i);
			snprintf(other, sizeof(other), "y%d", i);
			for (t = n = 0; t < 6; t++) {
				assert_int_equal(
					check2(combo, key, other, &allowed), 0);
				n += allowed;
			}
			assert_int_equal(n, 5);
		}
		verify("pool", &info);
		assert_int_equal(info.evictions, 0);
		/* And back: the first policy gets pages again. */
		reset_all(win, "w", 100);
		for (i = 0; i < 50; i++) {
			snprintf(key, sizeof(key), "x%d", i);
			snprintf(other, sizeof(other), "y%d", i);
			assert_int_equal(
				tk_limiter_reset(combo, key, strlen(key)), 0);
			assert_int_equal(
				tk_limiter_reset(combo, other, strlen(other)),
				0);
		}
		assert_int_equal(tk_zone_sweep("pool", T0), 0);
		fill(log, "m", BLOCKS - 1, 2);
		verify("pool", &info);
		assert_int_equal(info.evictions, 0);
		tk_limiter_close(log);
		tk_limiter_close(win);
		tk_limiter_close(combo);
		assert_int_equal(tk_zone_destroy("pool"), 0);
	}
}

/*
 * A zone that refuses, every block of a size live: a new key of that size
 * is refused, and so is an update of a key that exists (an update writes
 * a new block before it frees the old one), which changes nothing: once a
 * block is free again the key goes on from the same count.  Reads need no
 * block.
 */
static void test_refuse_full_arena(void **state)
{
	struct tk_limiter *l = open_on("refuse", LOG, TK_OPT_ZONE_REFUSE_FULL);
	struct tk_zone_info info;
	struct tk_decision d;
	int allowed;

	(void)state;
	assert_non_null(l);
	fill(l, "k", BLOCKS, 1);
	assert_int_equal(check(l, "new", &allowed), -ENOSPC);
	assert_int_equal(check(l, "k0", &allowed), -ENOSPC);
	assert_int_equal(tk_limiter_peek(l, "k0", 2, &d), 0);
	assert_int_equal(d.remaining, 99);
	assert_int_equal(tk_limiter_reset(l, "k31", 3), 0);
	check_ok(l, "k0");
	assert_int_equal(tk_limiter_peek(l, "k0", 2, &d), 0);
	assert_int_equal(d.remaining, 98);
	tk_limiter_close(l);
	verify("refuse", &info);
	assert_int_equal(info.evictions, 0);
	assert_int_equal(tk_zone_destroy("refuse"), 0);
}

/* Write @v at @off of zone @name's file. */
static void poke64(const char *name, off_t off, uint64_t v)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/throttlekit.%s", dir, name);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &v, sizeof(v), off), sizeof(v));
	close(fd);
}

/*
 * A process killed while it returned pages to the pool: right after it
 * marked them CLOSING (variant 0: while a key still had a block in one,
 * which must stay); after it closed every block and marked them FORMAT;
 * half-way through formatting.  The next allocation that needs a page
 * finishes the job, or reopens the page in use.  (Each key of the first
 * policy was used once, "keep" three times: formatting writes gen 4.)
 */
static void test_page_return_left_half_done(void **state)
{
	struct tk_limiter *log, *win;
	struct tk_zone_info info;
	struct tk_decision d;
	uint64_t cell;
	int i, p;

	(void)state;
	for (i = 0; i < 4; i++) {
		log = open_on("half", LOG, 0);
		win = open_on("half", WINDOW, 0);
		assert_non_null(log);
		assert_non_null(win);
		fill(log, "l", BLOCKS - 2, 1);
		fill(log, "keep", 1, 3);
		reset_all(log, "l", BLOCKS - 2);
		if (i > 0)
			reset_all(log, "keep", 1);
		/* Not swept: every page is still of the first size. */
		for (p = 0; p < 4; p++) {
			poke64("half", PAGETABLE + 8 * p,
			       128 | (i < 2 ? 1u << 11 : 1u << 12));
			for (cell = 0; i >= 2 && cell < 1024; cell += 128)
				poke64("half",
				       CELLS + 16 * (p * 1024 + cell) + 8,
				       UINT64_C(1) << 63);
			for (cell = 0; i == 3 && cell < 300; cell++) {
				poke64("half", CELLS + 16 * (p * 1024 + cell),
				       4);
				poke64("half",
				       CELLS + 16 * (p * 1024 + cell) + 8, 0);
			}
		}
		fill(win, "w", (i ? 4 : 3) * 64 - 1, 1);
		verify("half", &info);
		assert_int_equal(info.evictions, 0);
		if (i == 0) {
			assert_int_equal(tk_limiter_peek(log, "keep0", 5, &d),
					 0);
			assert_int_equal(d.remaining, 97);
		}
		tk_limiter_close(log);
		tk_limiter_close(win);
		assert_int_equal(tk_zone_destroy("half"), 0);
	}
}

/* What hostile_fn() plants, and where. */
static struct tk__zone *hz;
static struct tk__zone_key hk[2];
static int hcalls;

/*
 * Put into slot @idx a reference to a valid, decided descriptor of
 * another update that does not list that slot, in a block of a page of
 * the pool: what a process with write access to the zone could leave
 * there while an update runs.
 */
static void plant_foreign(uint64_t idx)
{
	struct tkz_cell *c = tk__zone_cells(hz);
	uint64_t cell = 3 * TKZ_PAGE_CELLS, g = 5, i;
	const uint64_t v[7][2] = {
		{ TKZ_BLK_USED | (uint64_t)TKZ_BLK_DESC << TKZ_BLK_WORDS_SHIFT |
			  g,
		  0 },
		{ g, 2 }, /* FAILED */
		{ g, 1 }, /* one key */
		{ g, 0 },
		{ g, 0 }, /* slot 0 (not the key's), its w0 */
		{ g, 0 },
		{ g, 0 }, /* expected and new w1 */
	};

	tk__zone_pagetable(hz)[3] = 16; /* open, 16-cell blocks */
	for (i = 0; i < 7; i++) {
		c[cell + i].w[0] = v[i][0];
		c[cell + i].w[1] = v[i][1];
	}
	tk__zone_slots(hz)[idx].w[1] = tkz_ref(cell, g) | TKZ_DESC;
}

/* A transition of two 2-word states (blocks of 4 cells) that, the second
 * time it runs (the keys exist then), plants a foreign descriptor in the
 * first key's slot. */
static int hostile_fn(void *ctx, const uint64_t *const *old,
		      uint64_t *const *next, int *persist, uint64_t *expires)
{
	uint64_t idx, w0, w1, i;

	(void)ctx;
	(void)old;
	for (i = 0; i < 2; i++) {
		next[i][0] = next[i][1] = 1;
		persist[i] = 1;
		expires[i] = T0 + 3600 * SEC;
	}
	if (++hcalls == 2 &&
	    tk__zone_locate(hz, &hk[0], T0, 0, &idx, &w0, &w1) == 0 && idx != 0)
		plant_foreign(idx);
	return TK__ZONE_PERSIST;
}

static int one_fn(void *ctx, const uint64_t *old, uint64_t *next,
		  uint64_t *expires)
{
	(void)ctx;
	(void)old;
	next[0] = next[1] = 1;
	*expires = T0 + 3600 * SEC;
	return TK__ZONE_PERSIST;
}

/*
 * @body in a child (so that a hang fails the test instead of hanging it)
 * on zone @name, a fresh one attached as hz, with block keys hk[0] and
 * hk[1]: it must return 0, else the number of the step that failed.
 */
static void in_zone_child(const char *name, int (*body)(void))
{
	struct tk_options o = TK_OPTIONS_INIT;
	pid_t pid;
	int rc;

	o.zone_capacity = 4096;
	o.zone_arena = ARENA;
	assert_int_equal(tk_zone_create(name, &o), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(20);
		if (tk__zone_attach(&hz, name, NULL, 0) != 0)
			_exit(2);
		hk[0].fp = TKZ_FP_BLOCK | 0x1234;
		hk[0].pos = UINT64_C(0x9e3779b97f4a7c15);
		hk[1].fp = TKZ_FP_BLOCK | 0x5678;
		hk[1].pos = UINT64_C(0xc2b2ae3d27d4eb4f);
		rc = body();
		tk__zone_detach(hz);
		_exit(rc);
	}
	kit_wait_exit(pid, 0);
	assert_int_equal(tk_zone_destroy(name), 0);
}

static int foreign_single_key(void)
{
	uint64_t idx, w0, w1;

	if (tk__zone_apply(hz, &hk[0], T0, 2, one_fn, NULL) !=
		    TK__ZONE_PERSIST ||
	    tk__zone_locate(hz, &hk[0], T0, 0, &idx, &w0, &w1) != 0 || idx == 0)
		return 3;
	plant_foreign(idx);
	if (tk__zone_apply(hz, &hk[0], T0, 2, one_fn, NULL) !=
		    TK__ZONE_PERSIST ||
	    tk__zone_locate(hz, &hk[0], T0, 0, &idx, &w0, &w1) != 0 ||
	    !tkz_is_ref(w1))
		return 4;
	plant_foreign(idx);
	if (tk__zone_reset(hz, &hk[0]) != 0 ||
	    tk__zone_locate(hz, &hk[0], T0, 0, &idx, &w0, &w1) != -ENOENT)
		return 5;
	return 0;
}

/*
 * The same foreign descriptor met by a single-key update, a reset and a
 * sweep: each replaces or frees it as a broken reference, never answers
 * -EIO for the key for ever.
 */
static void test_foreign_descriptor_single_key(void **state)
{
	(void)state;
	in_zone_child("foreign1", foreign_single_key);
}

static int foreign_in_slot(void)
{
	const uint32_t words[2] = { 2, 2 };
	uint64_t idx, w0, w1;

	if (tk__zone_apply_multi(hz, 2, hk, words, T0, hostile_fn, NULL) !=
		    TK__ZONE_PERSIST ||
	    hcalls < 2)
		return 3;
	/* The key's slot holds its new state, not the descriptor. */
	if (tk__zone_locate(hz, &hk[0], T0, 0, &idx, &w0, &w1) != 0 ||
	    !tkz_is_ref(w1))
		return 4;
	return 0;
}

/*
 * A slot holding a descriptor that does not list it: completing that
 * update never takes it out, so a multi-key update that met it looped
 * for ever.  It is a broken reference: the update replaces it.
 */
static void test_foreign_descriptor_in_slot(void **state)
{
	(void)state;
	in_zone_child("foreign", foreign_in_slot);
}

/* A churn worker's failure, counted and told (which call, its key, its
 * result), so that a failure under load says what failed. */
static void churn_error(int i, const char *what, const char *key, int rc)
{
	fprintf(stderr, "churn worker %d: %s %s: rc %d\n", i, what, key, rc);
	atomic_fetch_add(&sh->errors, 1);
}

/* Phase 1: fill and reset keys of one size; phase 2: other sizes. */
static void churn_worker(int i)
{
	struct tk_limiter *log = open_on("churn", LOG, 0);
	struct tk_limiter *win = open_on("churn", WINDOW, 0);
	struct tk_limiter *combo = open_on("churn", COMBO, 0);
	char key[32], other[32];
	int k, t, allowed, n, rc;

	if (!log || !win || !combo)
		_exit(2);
	for (k = 0; k < 7; k++) {
		snprintf(key, sizeof(key), "l%d-%d", i, k);
		if ((rc = check(log, key, &allowed)) != 0 || !allowed)
			churn_error(i, "log", key, rc);
		if ((rc = check(log, "hot", &allowed)) != 0)
			churn_error(i, "log", "hot", rc);
		else if (allowed)
			atomic_fetch_add(&sh->allowed, 1);
	}
	for (k = 0; k < 7; k++) {
		snprintf(key, sizeof(key), "l%d-%d", i, k);
		tk_limiter_reset(log, key, strlen(key));
	}
	atomic_fetch_add(&sh->phase, 1);
	while (atomic_load(&sh->phase) < 4)
		;
	for (k = 0; k < 12; k++) {
		snprintf(key, sizeof(key), "w%d-%d", i, k);
		for (t = n = 0; t < 7; t++) {
			if ((rc = check(win, key, &allowed)) != 0)
				churn_error(i, "window", key, rc);
			n += allowed;
		}
		snprintf(key, sizeof(key), "x%d-%d", i, k);
		snprintf(other, sizeof(other), "y%d", k);
		if ((rc = check2(combo, key, other, &allowed)) != 0)
			churn_error(i, "composite", key, rc);
		if (n != 5)
			churn_error(i, "window admitted not 5 of", key, n);
		if (allowed)
			atomic_fetch_add(&sh->per_key[k], 1);
		if ((rc = check(log, "hot", &allowed)) != 0)
			churn_error(i, "log", "hot", rc);
		else if (allowed)
			atomic_fetch_add(&sh->allowed, 1);
		if (k % 4 == 3)
			tk_zone_sweep("churn", T0);
	}
	tk_limiter_close(log);
	tk_limiter_close(win);
	tk_limiter_close(combo);
}

/*
 * Four processes fill the arena with one size, reset, then use two other
 * sizes and a composite while sweeps return pages to the pool: every
 * count exact, no -ENOSPC, nothing evicted.
 */
static void test_pages_change_hands_across_processes(void **state)
{
	struct tk_limiter *l = open_on("churn", LOG, 0);
	struct tk_zone_info info;
	struct tk_decision d;
	int k;

	(void)state;
	assert_non_null(l);
	kit_shared_reset(0);
	kit_run_workers(4, churn_worker);
	assert_int_equal(atomic_load(&sh->errors), 0);
	/* 4 x (7 + 12) checks of the hot key, all admitted, all counted. */
	assert_int_equal(atomic_load(&sh->allowed), 76);
	assert_int_equal(tk_limiter_peek(l, "hot", 3, &d), 0);
	assert_int_equal(d.remaining, 100 - 76);
	/* y_k is shared by the four workers' composites: limit 5. */
	for (k = 0; k < 12; k++)
		assert_int_equal(atomic_load(&sh->per_key[k]), 4);
	tk_limiter_close(l);
	verify("churn", &info);
	assert_int_equal(info.evictions, 0);
	assert_int_equal(tk_zone_destroy("churn"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_class_evicts),
		cmocka_unit_test(test_eviction_across_processes),
		cmocka_unit_test(test_pages_return_to_pool),
		cmocka_unit_test(test_refuse_full_arena),
		cmocka_unit_test(test_page_return_left_half_done),
		cmocka_unit_test(test_pages_change_hands_across_processes),
		cmocka_unit_test(test_foreign_descriptor_in_slot),
		cmocka_unit_test(test_foreign_descriptor_single_key),
	};
	int rc;

	sh = kit_shared();
	if (kit_zone_dir(dir) != 0 || !sh || tk_clock_manual_new(&clk, T0) != 0)
		return 99;
	rc = cmocka_run_group_tests_name("zone_arena", tests, NULL, NULL);
	tk_clock_free(clk);
	rmdir(dir);
	return rc;
}
