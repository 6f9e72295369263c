/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_table_moves.c - a private table's growth (shm/grow.c) in the
 * states a race leaves it in, staged by hand:
 *
 * - a mover stalled between marking its chunk done and counting it: the
 *   growth still completes without it, so the table grows again when
 *   full instead of failing its inserts with -EIO;
 * - a key already moved to the successor is absent from the table it
 *   left (its slot frozen there): an operation that reads the old table
 *   goes to the successor (TK__ZONE_MOVED) instead of deciding on "no
 *   state", alone or as one key of a multi-key update, and a reset
 *   there does not report the key reset.
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

#define T0 UINT64_C(1700000000000000000)
#define HOUR (UINT64_C(3600) * 1000000000)

static const uint64_t seed[2] = { 5, 6 };

/* Key @i: a word key of algorithm 1, or a block key of algorithm 2. */
static struct tk__zone_key key(uint64_t i, int block)
{
	struct tk__zone_key k;

	k.fp = tk__zone_mix(i + 1) & TKZ_FP_KEY; /* why: table-kit.h */
	k.fp |= block ? TKZ_FP_BLOCK | (UINT64_C(2) << TKZ_FP_ALG_SHIFT)
		      : UINT64_C(1) << TKZ_FP_ALG_SHIFT;
	k.pos = tk__table_pos(k.fp);
	return k;
}

static struct tk__table *table(uint64_t capacity)
{
	return kit_table(capacity, UINT64_C(1) << 20, seed, T0);
}

/* A word key's count: the state is T0 + HOUR + count. */
static int count_fn(void *ctx, const uint64_t *old, uint64_t *next,
		    uint64_t *expires)
{
	(void)ctx;
	next[0] = old ? old[0] + 1 : T0 + HOUR + 1;
	*expires = next[0];
	return TK__ZONE_PERSIST;
}

/* Insert keys from *@i on until a growth is under way. */
static struct tk__zone *grow_once(struct tk__table *t, uint64_t *i)
{
	struct tk__zone_key k;
	uint64_t g = tk__table_growths(t);

	while (tk__table_growths(t) == g) {
		k = key((*i)++, 0);
		assert_int_equal(tk__table_apply(t, &k, T0, 1, count_fn, NULL),
				 TK__ZONE_PERSIST);
	}
	return tk__table_zone(t);
}

static void test_growth_completes_without_count(void **state)
{
	struct tk__table *t = table(1024);
	struct tk__zone *nz;
	struct tk__zone_key k;
	uint64_t i = 0, n, g;
	int rc;

	(void)state;
	nz = grow_once(t, &i);
	assert_non_null(tk__zone_old(nz));
	/* Movers stalled before counting every chunk moved so far. */
	ck_pr_store_64(&((struct tk__zone_head *)(void *)nz)->move_done, 0);
	g = tk__table_growths(t);
	for (n = 0; n < 20000; n++) {
		k = key(i++, 0);
		rc = tk__table_apply(t, &k, T0, 1, count_fn, NULL);
		if (rc != TK__ZONE_PERSIST)
			fprintf(stderr, "insert %llu: %d\n",
				(unsigned long long)n, rc);
		assert_int_equal(rc, TK__ZONE_PERSIST);
	}
	/* The stalled growth ended, and the table grew on. */
	assert_null(tk__zone_old(nz));
	assert_true(tk__table_growths(t) > g);
	assert_int_equal(tk__table_keys(t), i);
	tk__table_free(t);
}

/* Counts its calls; a read-only answer (the state as seen). */
struct peek {
	int calls;
	size_t n; /* keys of a multi-key update */
	const uint64_t *seen[2];
};

static int peek_fn(void *ctx, const uint64_t *old, uint64_t *next,
		   uint64_t *expires)
{
	struct peek *p = ctx;

	(void)next;
	(void)expires;
	p->calls++;
	p->seen[0] = old;
	return TK__ZONE_KEEP;
}

static int peek_multi_fn(void *ctx, const uint64_t *const *old,
			 uint64_t *const *next, int *persist, uint64_t *expires)
{
	struct peek *p = ctx;

	(void)next;
	(void)persist;
	(void)expires;
	p->calls++;
	p->seen[0] = old[0];
	p->seen[1] = p->n > 1 ? old[1] : NULL;
	return TK__ZONE_KEEP;
}

/* Three words: n, 3n, ~n (as test_table_grow.c's block states). */
static int block_fn(void *ctx, const uint64_t *old, uint64_t *next,
		    uint64_t *expires)
{
	uint64_t n = old ? old[0] + 1 : 1;

	(void)ctx;
	next[0] = n;
	next[1] = 3 * n;
	next[2] = ~n;
	*expires = T0 + HOUR;
	return TK__ZONE_PERSIST;
}

static void test_moved_key_not_absent(void **state)
{
	static const uint32_t words[2] = { 3, 3 };
	struct tk__table *t = table(1024);
	struct tk__zone_key w = key(1000000, 0), b[2];
	struct tk__zone *oz, *nz;
	struct peek p;
	uint64_t i = 0;

	(void)state;
	b[0] = key(2000000, 1);
	b[1] = key(2000001, 1);
	oz = tk__table_zone(t);
	assert_int_equal(tk__table_apply(t, &w, T0, 1, count_fn, NULL),
			 TK__ZONE_PERSIST);
	assert_int_equal(tk__table_apply(t, &b[0], T0, 3, block_fn, NULL),
			 TK__ZONE_PERSIST);
	assert_int_equal(tk__table_apply(t, &b[1], T0, 3, block_fn, NULL),
			 TK__ZONE_PERSIST);
	nz = grow_once(t, &i);
	assert_true(nz != oz);
	/* A use in the successor moves the key (its old slot frozen). */
	memset(&p, 0, sizeof(p));
	assert_int_equal(tk__table_apply(t, &w, T0, 1, peek_fn, &p),
			 TK__ZONE_KEEP);
	assert_int_equal(p.calls, 1);
	assert_non_null(p.seen[0]);
	assert_int_equal(tk__table_apply(t, &b[1], T0, 3, peek_fn, &p),
			 TK__ZONE_KEEP);
	assert_non_null(p.seen[0]);
	/* In the old table: gone, as far as a scan can tell, but moved. */
	memset(&p, 0, sizeof(p));
	assert_int_equal(tk__zone_apply(oz, &w, T0, 1, peek_fn, &p),
			 TK__ZONE_MOVED);
	assert_int_equal(tk__zone_apply(oz, &b[1], T0, 3, peek_fn, &p),
			 TK__ZONE_MOVED);
	assert_int_equal(p.calls, 0);
	/* Nor does a reset there report it reset. */
	assert_int_equal(tk__zone_reset(oz, &w), TK__ZONE_MOVED);
	/* A pair, one key still here unless its chunk moved, one moved:
	 * never decided on the view "first as it was, second absent". */
	p.n = 2;
	assert_int_equal(
		tk__zone_apply_multi(oz, 2, b, words, T0, peek_multi_fn, &p),
		TK__ZONE_MOVED);
	assert_int_equal(p.calls, 0);
	/* Through the table, both as they are. */
	assert_int_equal(
		tk__table_apply_multi(t, 2, b, words, T0, peek_multi_fn, &p),
		TK__ZONE_KEEP);
	assert_int_equal(p.calls, 1);
	assert_non_null(p.seen[0]);
	assert_non_null(p.seen[1]);
	tk__table_free(t);
}

/*
 * The key absent when the update looked, but inserted, and moved by a
 * growth, while it decided: the decision on "absent" does not stand (the
 * key has a state by then), and the update goes to the successor.
 */
struct meanwhile {
	struct tk__table *t;
	struct tk__zone_key k;
	uint64_t next_key;
	struct peek p;
};

static int meanwhile_fn(void *ctx, const uint64_t *const *old,
			uint64_t *const *next, int *persist, uint64_t *expires)
{
	struct meanwhile *m = ctx;
	struct peek p;

	if (m->p.calls == 0) {
		assert_int_equal(
			tk__table_apply(m->t, &m->k, T0, 3, block_fn, NULL),
			TK__ZONE_PERSIST);
		grow_once(m->t, &m->next_key);
		memset(&p, 0, sizeof(p));
		assert_int_equal(
			tk__table_apply(m->t, &m->k, T0, 3, peek_fn, &p),
			TK__ZONE_KEEP);
		assert_non_null(p.seen[0]); /* moved, with its state */
	}
	return peek_multi_fn(&m->p, old, next, persist, expires);
}

static void test_moved_while_deciding(void **state)
{
	static const uint32_t words[2] = { 3, 3 };
	struct meanwhile m;
	struct tk__zone_key b[2];
	struct tk__zone *oz;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.t = table(1024);
	b[0] = key(3000000, 1);
	b[1] = key(3000001, 1);
	m.k = b[1];
	m.p.n = 2;
	assert_int_equal(tk__table_apply(m.t, &b[0], T0, 3, block_fn, NULL),
			 TK__ZONE_PERSIST);
	oz = tk__table_zone(m.t);
	assert_int_equal(
		tk__zone_apply_multi(oz, 2, b, words, T0, meanwhile_fn, &m),
		TK__ZONE_MOVED);
	assert_int_equal(m.p.calls, 1);
	/* The absent key alone: no other part's change gives it away. */
	m.k = key(3000002, 1);
	m.p.calls = 0;
	m.p.n = 1;
	oz = tk__table_zone(m.t);
	assert_int_equal(
		tk__zone_apply_multi(oz, 1, &m.k, words, T0, meanwhile_fn, &m),
		TK__ZONE_MOVED);
	assert_int_equal(m.p.calls, 1);
	tk__table_free(m.t);
}

static int hot_read(void *ctx, const uint64_t *old, uint64_t *next,
		    uint64_t *expires)
{
	(void)next;
	(void)expires;
	*(uint64_t *)ctx = old ? old[1] : 0;
	return TK__ZONE_KEEP;
}

static uint64_t hot_count(struct tk__table *t, const struct tk__zone_key *k)
{
	uint64_t n = UINT64_MAX;

	assert_int_equal(tk__table_apply(t, k, T0, 2, hot_read, &n),
			 TK__ZONE_KEEP);
	return n;
}

/* A block state {0, count} whose count changes in place
 * (docs/shm-protocol.md, "In-place updates"): the full transition and
 * the hot one. */
static int hot_full(void *ctx, const uint64_t *old, uint64_t *next,
		    uint64_t *expires)
{
	(void)ctx;
	next[0] = 0;
	next[1] = old ? old[1] + 1 : 1;
	*expires = T0 + HOUR;
	return TK__ZONE_PERSIST;
}

static int hot_step(void *ctx, const uint64_t *old, uint32_t *word,
		    uint64_t *value, uint64_t *expires)
{
	(void)ctx;
	*word = 1;
	if (!old)
		return TK__ZONE_NOT_HOT;
	*value = old[1] + 1;
	*expires = T0 + HOUR;
	return TK__ZONE_PERSIST;
}

static const struct tk__zone_inplace hot_ops = { hot_step, NULL, NULL };

static struct {
	struct tk__zone_key k;
	uint64_t cell, gen, value; /* the hot cell in the old table */
	int fired, landed;
} hc;

/* The copy of hc.k's state is about to be written: an in-place update
 * that read the slot before the growth froze it tries its CAS now. */
static void cas_behind_copy(struct tk__zone *nz, const struct tk__zone_key *k,
			    int landed)
{
	struct tkz_cell *c;

	if (landed || k->fp != hc.k.fp)
		return;
	c = &tk__zone_cells(tk__zone_old(nz))[hc.cell];
	hc.fired = 1;
	/* (The copy's transition may run again: any landing counts.) */
	hc.landed |= tkz_cas(c->w, hc.gen, hc.value, hc.gen, hc.value + 1);
}

/*
 * A key's move to a grown table reads its state with the hot word
 * frozen: an in-place update of the old block after that read fails
 * (else it would be lost: the copy carries the value before it).
 */
static void test_move_freezes_hot_word(void **state)
{
	struct tk__table *t = table(1024);
	struct tk__zone *z;
	uint64_t i = 1000000, idx, w0, w1, ref; /* word keys: other bits */
	int n;

	(void)state;
	memset(&hc, 0, sizeof(hc));
	hc.k = key(kit_late_key(t, 7, 1), 1);
	for (n = 0; n < 5; n++)
		assert_int_equal(tk__table_apply_hot(t, &hc.k, T0, 2, hot_full,
						     &hot_ops, NULL),
				 TK__ZONE_PERSIST);
	z = tk__table_zone(t);
	assert_int_equal(tk__zone_locate(z, &hc.k, T0, 0, &idx, &w0, &w1), 0);
	ref = tkz_ref_cell(w1);
	/* Marked hot (word 1) by the first write, then changed in place. */
	assert_int_equal(tk__zone_cells(z)[ref + 1].w[0] >> TKZ_CELL_HOT_SHIFT,
			 2);
	hc.cell = ref + 3;
	hc.gen = tk__zone_cells(z)[ref].w[0] & TKZ_BLK_GEN_MASK;
	hc.value = tk__zone_cells(z)[hc.cell].w[1];
	assert_int_equal(hc.value, 5);
	tk__table_copy_hook = cas_behind_copy;
	grow_once(t, &i);
	assert_int_equal(
		tk__table_apply_hot(t, &hc.k, T0, 2, hot_full, &hot_ops, NULL),
		TK__ZONE_PERSIST);
	tk__table_copy_hook = NULL;
	assert_true(hc.fired);
	assert_false(hc.landed);
	assert_int_equal(hot_count(t, &hc.k), 6);
	tk__table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_growth_completes_without_count),
		cmocka_unit_test(test_moved_key_not_absent),
		cmocka_unit_test(test_moved_while_deciding),
		cmocka_unit_test_teardown(test_move_freezes_hot_word,
					  kit_no_hooks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
