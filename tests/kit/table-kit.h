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

/* Word key @i (algorithm 1), at its place in the table. */
static inline struct tk__zone_key kit_word_key(uint64_t i)
{
	struct tk__zone_key k;

	k.fp = ((i + 1) * UINT64_C(0x9e3779b97f4a7c15)) & TKZ_FP_KEY;
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

#endif
