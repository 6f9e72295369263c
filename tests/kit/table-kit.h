/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * table-kit.h - a private table that grows (shm/grow.c) for the
 * white-box table tests: every word of its configuration but the sizes
 * zero, its clock at @now.
 *
 * Include after <cmocka.h> and shm/word.h: it asserts.
 */
#ifndef TK_TESTS_KIT_TABLE_H
#define TK_TESTS_KIT_TABLE_H

#include <string.h>

/* A table of @capacity slots that grows up to @max, keys placed under
 * @seed, 64 bytes of arena per slot. */
static inline struct tk__table *kit_table(uint64_t capacity, uint64_t max,
					  const uint64_t seed[2], uint64_t now)
{
	struct tk__zone_config cfg;
	struct tk__table *t;

	memset(&cfg, 0, sizeof(cfg));
	cfg.capacity = capacity;
	cfg.arena = capacity * 64;
	cfg.now = now;
	assert_int_equal(tk__table_new(&t, &cfg, max, seed), 0);
	return t;
}

/* @t's newest table holds @keys keys, each in one slot, and nothing
 * half done: no insert, no collision, no move under way. */
static inline void kit_census_clean(struct tk__table *t, uint64_t keys)
{
	struct tk__zone_census c;

	memset(&c, 0, sizeof(c));
	assert_int_equal(tk__zone_census(tk__table_zone(t), &c), 0);
	assert_int_equal(c.violations, 0);
	assert_int_equal(c.ins + c.col, 0);
	assert_int_equal(c.mem, keys);
	assert_null(tk__zone_old(tk__table_zone(t)));
	assert_int_equal(tk__table_keys(t), keys);
}

/* Word key @i (algorithm 1), at its place in the table. */
static inline struct tk__zone_key kit_word_key(uint64_t i)
{
	struct tk__zone_key k;

	/* fmix64, not a multiple of a constant: tk__table_pos() multiplies
	 * by TKZ_POS_MUL, and keys in arithmetic progression would then sit
	 * evenly spaced, never crowding a window as real keys do. */
	k.fp = tk__zone_mix(i + 1) & TKZ_FP_KEY;
	k.fp |= UINT64_C(1) << TKZ_FP_ALG_SHIFT;
	k.pos = tk__table_pos(k.fp);
	return k;
}

/* The clock the table tests run at, and the base of a count: a count n
 * is kept as the state KIT_BASE + n, a time an hour past KIT_T0. */
#define KIT_T0 UINT64_C(1700000000000000000)
#define KIT_BASE (KIT_T0 + UINT64_C(3600) * 1000000000)

/* Count one more for the key (its state expires at the count's time). */
static inline int kit_count_fn(void *ctx, const uint64_t *old, uint64_t *next,
			       uint64_t *expires)
{
	(void)ctx;
	next[0] = old ? old[0] + 1 : KIT_BASE + 1;
	*expires = next[0];
	return TK__ZONE_PERSIST;
}

/* The key's count in *(uint64_t *)@ctx, 0 for none; changes nothing. */
static inline int kit_read_fn(void *ctx, const uint64_t *old, uint64_t *next,
			      uint64_t *expires)
{
	(void)next;
	(void)expires;
	*(uint64_t *)ctx = old ? old[0] - KIT_BASE : 0;
	return TK__ZONE_KEEP;
}

/* A teardown: no test hook of the tables left set by a test that
 * failed while it had one. */
static inline int kit_no_hooks(void **state)
{
	(void)state;
	tk__zone_insert_hook = NULL;
	tk__zone_commit_hook = NULL;
	tk__table_complete_hook = NULL;
	tk__table_copy_hook = NULL;
	tk__table_freeze_hook = NULL;
	return 0;
}

/* Word key @i's count in @t at KIT_T0, read without a write. */
static inline uint64_t kit_count(struct tk__table *t, uint64_t i)
{
	struct tk__zone_key k = kit_word_key(i);
	uint64_t n = UINT64_MAX;

	assert_int_equal(tk__table_apply(t, &k, KIT_T0, 1, kit_read_fn, &n),
			 TK__ZONE_KEEP);
	return n;
}

/* Block key @i (algorithm 2): word key @i's key bits, another shape. */
static inline struct tk__zone_key kit_block_key(uint64_t i)
{
	struct tk__zone_key k = kit_word_key(i);

	k.fp = (k.fp & TKZ_FP_KEY) | TKZ_FP_BLOCK |
	       UINT64_C(2) << TKZ_FP_ALG_SHIFT;
	return k;
}

/* The first key from @i on (a block key with @block, else a word key)
 * whose first candidate in an empty table of @t's newest size lies in
 * its second half: a move reaches it late. */
static inline uint64_t kit_late_key(struct tk__table *t, uint64_t i, int block)
{
	struct tk__zone *z = tk__table_zone(t);
	struct tk__zone_key k;
	struct tkz_cand c;

	for (;; i++) {
		k = block ? kit_block_key(i) : kit_word_key(i);
		tkz_candidates(z, &k, &c);
		if (tkz_at(&c, 0) >= tk__zone_geo(z)->capacity / 2)
			return i;
	}
}

/*
 * A count kept in a block state of @words words: word 0 the count, word
 * j (j > 0) count * j + j, so that a state torn or mixed up with another
 * key's fails (-EBADMSG).  It expires at KIT_BASE.  @add: 1 to count one
 * more, 0 to read the count into @seen (UINT64_MAX: no state).
 */
struct kit_blk {
	uint32_t words;
	int add;
	uint64_t seen;
};

static inline int kit_blk_fn(void *ctx, const uint64_t *old, uint64_t *next,
			     uint64_t *expires)
{
	struct kit_blk *b = ctx;
	uint64_t n = old ? old[0] : 0, j;

	for (j = 1; old && j < b->words; j++)
		if (old[j] != n * j + j)
			return -EBADMSG;
	b->seen = old ? n : UINT64_MAX;
	if (!b->add)
		return TK__ZONE_KEEP;
	next[0] = n + 1;
	for (j = 1; j < b->words; j++)
		next[j] = (n + 1) * j + j;
	*expires = KIT_BASE;
	return TK__ZONE_PERSIST;
}

/* Count one more for block key @i of @words words: the apply's result. */
static inline int kit_blk_bump(struct tk__table *t, uint64_t i, uint32_t words)
{
	struct tk__zone_key k = kit_block_key(i);
	struct kit_blk b = { words, 1, 0 };

	return tk__table_apply(t, &k, KIT_T0, words, kit_blk_fn, &b);
}

/* Block key @i's count (0: no state), read without a write. */
static inline uint64_t kit_blk_count(struct tk__table *t, uint64_t i,
				     uint32_t words)
{
	struct tk__zone_key k = kit_block_key(i);
	struct kit_blk b = { words, 0, 0 };

	assert_int_equal(tk__table_apply(t, &k, KIT_T0, words, kit_blk_fn, &b),
			 TK__ZONE_KEEP);
	return b.seen == UINT64_MAX ? 0 : b.seen;
}

#endif
