/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_table_grow.c - a private table that grows (shm/grow.c) loses no
 * key and no update while it doubles under threads that keep using it:
 * every key keeps its exact state across growths, word keys and block
 * keys; threads racing on a table that starts at the smallest size admit
 * exactly the limit per key, never one more; a table at its largest size
 * evicts instead of growing; a reset during a growth is not undone by the
 * move; and no table left behind is still in use.
 *
 * White-box (statically linked): the table has no public interface yet.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../shm/word.h"
#include "table-kit.h"

#define T0 UINT64_C(1700000000000000000)
#define HOUR (UINT64_C(3600) * 1000000000)

static const uint64_t seed[2] = { 1, 2 };

static uint64_t mix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* Key @i: a word key of algorithm 1, or a block key of algorithm 2. */
static struct tk__zone_key key(uint64_t i, int block)
{
	struct tk__zone_key k;

	k.fp = mix(i) & TKZ_FP_KEY;
	if (!k.fp)
		k.fp = 1;
	k.fp |= block ? TKZ_FP_BLOCK | (UINT64_C(2) << TKZ_FP_ALG_SHIFT)
		      : UINT64_C(1) << TKZ_FP_ALG_SHIFT;
	k.pos = 0; /* the table sets it */
	return k;
}

static struct tk__table *table(uint64_t capacity, uint64_t max)
{
	return kit_table(capacity, max, seed, T0);
}

/*
 * A counter state that never expires within the test: a word is its own
 * expiry time, so it counts up from T0 + HOUR.  A block state is three
 * words: the count, and two that check it (count * 3, ~count).  Up to
 * @limit; at the limit it writes nothing (a denial).
 */
struct count {
	uint64_t limit;
	int words;
	uint64_t seen; /* the count before this apply */
};

static int count_fn(void *ctx, const uint64_t *old, uint64_t *next,
		    uint64_t *expires)
{
	struct count *c = ctx;
	uint64_t n = 0;

	if (old && c->words == 1)
		n = old[0] - (T0 + HOUR);
	else if (old) {
		n = old[0];
		if (old[1] != n * 3 || old[2] != ~n)
			return -EBADMSG;
	}
	c->seen = n;
	if (n >= c->limit)
		return TK__ZONE_KEEP;
	n++;
	if (c->words == 1) {
		next[0] = T0 + HOUR + n;
	} else {
		next[0] = n;
		next[1] = n * 3;
		next[2] = ~n;
	}
	*expires = T0 + HOUR;
	return TK__ZONE_PERSIST;
}

/* Apply a count of @words words to key @i: the count it saw, or
 * UINT64_MAX if the apply failed. */
static uint64_t try_bump(struct tk__table *t, uint64_t i, int words,
			 uint64_t limit)
{
	struct tk__zone_key k = key(i, words > 1);
	struct count c = { limit, words, 0 };
	int rc = tk__table_apply(t, &k, T0, (uint32_t)words, count_fn, &c);

	if (rc != TK__ZONE_PERSIST && rc != TK__ZONE_KEEP) {
		fprintf(stderr, "key %lu: apply: %d\n", (unsigned long)i, rc);
		return UINT64_MAX;
	}
	return c.seen;
}

static uint64_t bump(struct tk__table *t, uint64_t i, int words, uint64_t limit)
{
	uint64_t seen = try_bump(t, i, words, limit);

	assert_true(seen != UINT64_MAX);
	return seen;
}

/* Finish any growth under way: a move advances with every use. */
static void settle_moves(struct tk__table *t, int words)
{
	int n = 0;

	/* Read-only uses of a key: they move chunks all the same. */
	while (tk__zone_old(tk__table_zone(t)) && n++ < 1000000)
		bump(t, 0, words, 0);
}

static void every_key_keeps_its_state(int words)
{
	struct tk__table *t = table(64, UINT64_C(1) << 20);
	const uint64_t n = 5000;
	uint64_t i, round;

	/* Key i counts to i % 7 + 1: distinct states, moved many times. */
	for (round = 0; round < 7; round++)
		for (i = 0; i < n; i++)
			if (round <= i % 7)
				assert_int_equal(bump(t, i, words, 100), round);
	settle_moves(t, words);
	for (i = 0; i < n; i++)
		assert_int_equal(bump(t, i, words, 0), i % 7 + 1);
	assert_true(tk__table_growths(t) >= 6); /* 64 -> 8192 at least */
	assert_true(tk__zone_geo(tk__table_zone(t))->capacity >= 8192);
	kit_census_clean(t, n);
	tk__table_free(t);
}

static void word_keys_keep_state(void **state)
{
	(void)state;
	every_key_keeps_its_state(1);
}

static void block_keys_keep_state(void **state)
{
	(void)state;
	every_key_keeps_its_state(3);
}

/* At its largest size the table evicts: it never grows past it. */
static void largest_size_evicts(void **state)
{
	struct tk__table *t = table(64, 256);
	uint64_t i;

	(void)state;
	for (i = 0; i < 2000; i++)
		bump(t, i, 1, 100);
	assert_int_equal(tk__zone_geo(tk__table_zone(t))->capacity, 256);
	assert_int_equal(tk__table_growths(t), 2);
	tk__table_free(t);
}

/*
 * Threads race on KEYS keys, each applying every key ROUNDS times with
 * limit LIMIT, on a table that starts at 64 slots and grows throughout:
 * exactly LIMIT admissions per key, and the states say LIMIT.
 */
#define THREADS 4
#define KEYS 6000
#define ROUNDS 4
#define LIMIT 3

struct race {
	struct tk__table *t;
	int words;
	int id;
	_Atomic uint64_t *admitted; /* per key */
	_Atomic uint64_t errors;
};

static void *racer(void *arg)
{
	struct race *r = arg;
	uint64_t i, j, round, seen;

	for (round = 0; round < ROUNDS; round++)
		for (j = 0; j < KEYS; j++) {
			/* Each thread walks the keys in its own order. */
			i = (j * (2 * (uint64_t)r->id + 1) + round) % KEYS;
			/* No cmocka assertion off the main thread. */
			seen = try_bump(r->t, i, r->words, LIMIT);
			if (seen == UINT64_MAX)
				atomic_fetch_add(&r->errors, 1);
			else if (seen < LIMIT)
				atomic_fetch_add(&r->admitted[i], 1);
		}
	return NULL;
}

static void race(int words)
{
	static _Atomic uint64_t admitted[KEYS];
	struct race r[THREADS];
	pthread_t th[THREADS];
	struct tk__table *t = table(64, UINT64_C(1) << 20);
	uint64_t i;
	int n;

	for (i = 0; i < KEYS; i++)
		atomic_store(&admitted[i], 0);
	for (n = 0; n < THREADS; n++) {
		r[n] = (struct race){ t, words, n, admitted, 0 };
		assert_int_equal(pthread_create(&th[n], NULL, racer, &r[n]), 0);
	}
	for (n = 0; n < THREADS; n++) {
		pthread_join(th[n], NULL);
		assert_int_equal(atomic_load(&r[n].errors), 0);
	}
	for (i = 0; i < KEYS; i++) {
		assert_int_equal(atomic_load(&admitted[i]), LIMIT);
		assert_int_equal(bump(t, i, words, 0), LIMIT);
	}
	assert_true(tk__table_growths(t) >= 5);
	settle_moves(t, words);
	kit_census_clean(t, KEYS);
	tk__table_free(t);
}

/* Races are rare: each test runs several. */
#define RACES 6

static void threads_admit_exactly_word(void **state)
{
	int n;

	(void)state;
	for (n = 0; n < RACES; n++)
		race(1);
}

static void threads_admit_exactly_block(void **state)
{
	int n;

	(void)state;
	for (n = 0; n < RACES; n++)
		race(3);
}

/*
 * One atomic step over two block keys (a composite's dimensions, shm/
 * mcas.c) while the table grows: both count up together or neither does,
 * so each pair admits exactly LIMIT and its two states agree.
 */
static int pair_fn(void *ctx, const uint64_t *const *old, uint64_t *const *next,
		   int *persist, uint64_t *expires)
{
	uint64_t *seen = ctx, n[2];
	int i;

	for (i = 0; i < 2; i++) {
		n[i] = old[i] ? old[i][0] : 0;
		if (old[i] && (old[i][1] != n[i] * 3 || old[i][2] != ~n[i]))
			return -EBADMSG;
	}
	seen[0] = n[0];
	seen[1] = n[1];
	if (n[0] >= LIMIT || n[1] >= LIMIT)
		return TK__ZONE_KEEP;
	for (i = 0; i < 2; i++) {
		next[i][0] = n[i] + 1;
		next[i][1] = (n[i] + 1) * 3;
		next[i][2] = ~(n[i] + 1);
		persist[i] = 1;
		expires[i] = T0 + HOUR;
	}
	return TK__ZONE_PERSIST;
}

#define PAIRS 1500

static void *pair_racer(void *arg)
{
	static const uint32_t words[2] = { 3, 3 };
	struct race *r = arg;
	struct tk__zone_key k[2];
	uint64_t i, j, round, seen[2];
	int rc;

	for (round = 0; round < ROUNDS; round++)
		for (j = 0; j < PAIRS; j++) {
			i = (j * (2 * (uint64_t)r->id + 1) + round) % PAIRS;
			k[0] = key(2 * i, 1);
			k[1] = key(2 * i + 1, 1);
			rc = tk__table_apply_multi(r->t, 2, k, words, T0,
						   pair_fn, seen);
			if (rc != TK__ZONE_PERSIST && rc != TK__ZONE_KEEP)
				atomic_fetch_add(&r->errors, 1);
			else if (rc == TK__ZONE_PERSIST)
				atomic_fetch_add(&r->admitted[i], 1);
			else if (seen[0] != seen[1])
				atomic_fetch_add(&r->errors, 1);
		}
	return NULL;
}

static void pairs_move_together(void **state)
{
	static _Atomic uint64_t admitted[PAIRS];
	struct race r[THREADS];
	pthread_t th[THREADS];
	struct tk__table *t = table(64, UINT64_C(1) << 20);
	uint64_t i;
	int n;

	(void)state;
	for (i = 0; i < PAIRS; i++)
		atomic_store(&admitted[i], 0);
	for (n = 0; n < THREADS; n++) {
		r[n] = (struct race){ t, 3, n, admitted, 0 };
		assert_int_equal(
			pthread_create(&th[n], NULL, pair_racer, &r[n]), 0);
	}
	for (n = 0; n < THREADS; n++) {
		pthread_join(th[n], NULL);
		assert_int_equal(atomic_load(&r[n].errors), 0);
	}
	for (i = 0; i < PAIRS; i++) {
		assert_int_equal(atomic_load(&admitted[i]), LIMIT);
		assert_int_equal(bump(t, 2 * i, 3, 0), LIMIT);
		assert_int_equal(bump(t, 2 * i + 1, 3, 0), LIMIT);
	}
	assert_true(tk__table_growths(t) >= 5);
	tk__table_free(t);
}

/*
 * A reset of a key whose state is still in the old table: the move must
 * not bring the old state back afterwards.  The old table is large (128
 * chunks), so most reset keys' chunks are moved after their reset.
 */
static void reset_during_growth_stays(void **state)
{
	struct tk__table *t = table(64, UINT64_C(1) << 20);
	struct tk__zone_key k;
	uint64_t i, n, reset_ok = 0;

	(void)state;
	/* Grow until the move from 8192 slots is under way. */
	for (n = 0; n < 100000; n++) {
		bump(t, n, 1, 100);
		if (tk__zone_old(tk__table_zone(t)) &&
		    tk__zone_geo(tk__table_zone(t))->capacity == 16384)
			break;
	}
	assert_non_null(tk__zone_old(tk__table_zone(t)));
	for (i = 0; i < 64; i++) {
		k = key(i, 0);
		reset_ok += tk__table_reset(t, &k, T0) == 0;
	}
	assert_int_equal(reset_ok, 64);
	settle_moves(t, 1);
	for (i = 0; i < 64; i++)
		assert_int_equal(bump(t, i, 1, 0), 0);
	for (i = 64; i <= n; i++)
		assert_int_equal(bump(t, i, 1, 0), 1);
	tk__table_free(t);
}

/*
 * Where keys sit: a key is inserted in its first free candidate, and a
 * window's candidates start at the key's own slot, so at a load of 3/4
 * most keys are found at their first probe (from each window's first
 * slot, only a window's first key would be: about 1 in 12).
 */
static void keys_found_first(void **state)
{
	struct tk__table *t = table(4096, 4096);
	struct tk__zone *z = tk__table_zone(t);
	struct tk__zone_key k;
	struct tkz_cand c;
	uint64_t i, idx, w0, w1, first = 0, found = 0, n = 3072;

	(void)state;
	for (i = 0; i < n; i++)
		assert_int_equal(try_bump(t, i, 1, 5), 0);
	/* A few may have been evicted: the table is at its largest size. */
	for (i = 0; i < n; i++) {
		k = key(i, 0);
		k.pos = tk__table_pos(k.fp);
		if (tk__zone_locate(z, &k, T0, 0, &idx, &w0, &w1) != 0)
			continue;
		found++;
		tkz_candidates(z, &k, &c);
		first += idx == tkz_at(&c, 0);
	}
	assert_true(found > n * 9 / 10);
	assert_true(first > found / 2);
	tk__table_free(t);
}

/*
 * A table at its bound on live keys while keys move into a larger one:
 * a new key there ends the move before it evicts (a move in flight could
 * bring an evicted state back), then evicts one key and keeps the bound.
 * The bound is set on the newest table as the move starts, at the keys
 * it holds then (white-box: the store sets it at creation).
 */
static void bound_ends_move_first(void **state)
{
	struct tk__table *t = table(64, UINT64_C(1) << 20);
	struct tk__zone_head *h;
	struct tk__zone_census c;
	uint64_t n[TKZ_COUNTERS], i, keys;

	(void)state;
	for (i = 0; i < 100000; i++) {
		bump(t, i, 1, 100);
		if (tk__zone_old(tk__table_zone(t)) &&
		    tk__zone_geo(tk__table_zone(t))->capacity >= 2048)
			break;
	}
	assert_non_null(tk__zone_old(tk__table_zone(t)));
	keys = i + 1;
	h = (struct tk__zone_head *)(void *)tk__table_zone(t);
	h->max_keys = keys;
	assert_int_equal(tk__table_keys_counted(tk__table_zone(t)), keys);
	assert_int_equal(bump(t, keys, 1, 100), 0);
	assert_null(tk__zone_old(tk__table_zone(t)));
	assert_int_equal(tk__table_keys_counted(tk__table_zone(t)), keys);
	tk__table_counters(t, n);
	assert_int_equal(n[TKZ_EVICTIONS], 1);
	memset(&c, 0, sizeof(c));
	assert_int_equal(tk__zone_census(tk__table_zone(t), &c), 0);
	assert_int_equal(c.violations, 0);
	assert_int_equal(c.mem, keys);
	/* The new key is there, and all but one of the others. */
	assert_int_equal(bump(t, keys, 1, 100), 1);
	tk__table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(word_keys_keep_state),
		cmocka_unit_test(block_keys_keep_state),
		cmocka_unit_test(largest_size_evicts),
		cmocka_unit_test(threads_admit_exactly_word),
		cmocka_unit_test(threads_admit_exactly_block),
		cmocka_unit_test(pairs_move_together),
		cmocka_unit_test(reset_during_growth_stays),
		cmocka_unit_test(keys_found_first),
		cmocka_unit_test(bound_ends_move_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
