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

#endif
