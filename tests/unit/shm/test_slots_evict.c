/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_slots_evict.c - which key a full zone evicts (shm/slots.c).
 *
 * The victim is the coldest state among the candidates: an expired one,
 * else one of a key used once, else any; of those, the one that expires
 * first.  Never a key between its insert and its first write.  A table
 * bounded on live keys makes room so before it takes a free slot.  Staged on
 * a private table of 64 slots whose new key finds its 32 candidates taken
 * by keys of known states; then the issue that made the rule (hot keys
 * evicted into fresh budgets by a flood of one-time keys) on a memory
 * store, with threads.
 *
 * White-box (statically linked): the slot table has no public interface.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <throttlekit.h>

#include "../../shm/word.h"
#include "table-kit.h"

#define SEC UINT64_C(1000000000)
#define NOW KIT_T0
#define FULL TKZ_CANDIDATES

static const uint64_t seed[2] = { 5, 6 };

/* Write the state *(uint64_t *)@ctx, expiring then. */
static int put_fn(void *ctx, const uint64_t *old, uint64_t *next,
		  uint64_t *expires)
{
	(void)old;
	next[0] = *(const uint64_t *)ctx;
	*expires = next[0];
	return TK__ZONE_PERSIST;
}

/* A block key's state of two words, *(uint64_t *)@ctx its expiry. */
static int put2_fn(void *ctx, const uint64_t *old, uint64_t *next,
		   uint64_t *expires)
{
	(void)old;
	next[0] = next[1] = *(const uint64_t *)ctx;
	*expires = next[0];
	return TK__ZONE_PERSIST;
}

struct stage {
	struct tk__zone *z;
	struct tk__zone_key key[FULL + 8]; /* one candidate set, all */
	int n;				   /* keys placed so far */
};

static int same_windows(struct tk__zone *z, const struct tk__zone_key *a,
			const struct tk__zone_key *b)
{
	struct tkz_cand x, y;

	tkz_candidates(z, a, &x);
	tkz_candidates(z, b, &y);
	return (x.a == y.a && x.b == y.b) || (x.a == y.b && x.b == y.a);
}

/* A zone of 64 slots, @flags, a bound of @max_keys live keys (0: none),
 * and keys that all share one candidate set of 32 slots: a 33rd of them
 * finds every candidate taken. */
static void stage_open_bounded(struct stage *st, uint64_t flags,
			       uint64_t max_keys)
{
	struct tk__zone_config cfg;
	struct tk__zone_key k;
	uint64_t i;
	int n = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.capacity = 64;
	cfg.flags = flags;
	cfg.max_keys = max_keys;
	cfg.now = NOW;
	assert_int_equal(tk__zone_private(&st->z, &cfg, seed), 0);
	st->key[n++] = kit_word_key(0);
	for (i = 1; n < FULL + 8; i++) {
		assert_true(i < 100000);
		k = kit_word_key(i);
		if (same_windows(st->z, &st->key[0], &k))
			st->key[n++] = k;
	}
	st->n = 0;
}

static void stage_open(struct stage *st, uint64_t flags)
{
	stage_open_bounded(st, flags, 0);
}

/* Key @i's state, 0 for none: read as it is, where a check that
 * decides nothing would count as a use (tkz_confirm()). */
static uint64_t state_of(struct stage *st, int i)
{
	uint64_t idx, w0, w1;
	int rc;

	rc = tk__zone_locate(st->z, &st->key[i], NOW, 0, &idx, &w0, &w1);
	if (rc == -ENOENT)
		return 0;
	assert_int_equal(rc, 0);
	return w1;
}

/* Write state @v for key @i, @uses times (a second use sets its ref
 * bit). */
static void put(struct stage *st, int i, uint64_t v, int uses)
{
	while (uses--)
		assert_int_equal(
			tk__zone_apply(st->z, &st->key[i], NOW, 1, put_fn, &v),
			TK__ZONE_PERSIST);
}

static uint64_t evictions(struct stage *st)
{
	uint64_t n[TKZ_COUNTERS];

	tk__zone_counters(st->z, n);
	return n[TKZ_EVICTIONS];
}

/* Census: no violation, and @mem keys. */
static void stage_close(struct stage *st, uint64_t mem)
{
	struct tk__zone_census c;

	memset(&c, 0, sizeof(c));
	assert_int_equal(tk__zone_census(st->z, &c), 0);
	assert_int_equal(c.violations, 0);
	assert_int_equal(c.mem, mem);
	tk__zone_detach(st->z);
}

/* The hour past NOW plus @n s: a live state, later for a larger @n. */
static uint64_t at(uint64_t n)
{
	return KIT_BASE + n * SEC;
}

/* Keys @from to 31, used once, expiring after those a test stages. */
static void put_rest(struct stage *st, int from)
{
	int i;

	for (i = from; i < FULL; i++)
		put(st, i, at(100 + (uint64_t)i), 1);
}

/*
 * Keys of 32 distinct states, placed in another order than their
 * expiries, all used once or all used again: each new key evicts the one
 * that expires first of those left, and no other.
 */
static void test_victim_expires_first(void **state)
{
	struct stage st;
	int uses, i, j, n;

	(void)state;
	for (uses = 1; uses <= 2; uses++) {
		stage_open(&st, 0);
		for (i = 0; i < FULL; i++)
			put(&st, i, at((uint64_t)(i * 7 % FULL) + 1), uses);
		for (n = 0; n < 8; n++) {
			put(&st, FULL + n, at(1000), 2);
			assert_int_equal(evictions(&st), (uint64_t)n + 1);
			for (i = 0; i < FULL; i++) {
				/* Gone: the n + 1 that expire first. */
				j = i * 7 % FULL;
				assert_int_equal(state_of(&st, i),
						 j <= n ? 0
							: at((uint64_t)j + 1));
			}
		}
		stage_close(&st, FULL);
	}
}

/*
 * A key used again stays while a key used once is there, even if its
 * state expires first; an expired state (kept for the grace) goes before
 * either.  With each of the two first among the candidates in turn.
 */
static void test_key_used_again_stays(void **state)
{
	struct stage st;
	int again;

	(void)state;
	for (again = 0; again < 2; again++) {
		stage_open(&st, 0);
		put_rest(&st, 3);
		put(&st, again, at(1), 2);
		put(&st, !again, at(50), 1);
		put(&st, 2, NOW - SEC, 2);
		put(&st, FULL, at(1000), 1);
		assert_int_equal(state_of(&st, 2), 0);
		put(&st, FULL + 1, at(1000), 1);
		assert_int_equal(state_of(&st, !again), 0);
		assert_int_equal(state_of(&st, again), at(1));
		assert_int_equal(evictions(&st), 2);
		stage_close(&st, FULL);
	}
}

/*
 * At a bound on live keys (a memory store's max_keys) a new key makes
 * room before it takes one of the free slots among its candidates: it
 * evicts the coldest key, as a full zone does, and the table keeps the
 * bound.  Key 0 expires first but was used again: it stays while keys
 * used once go, the one that expires first first.
 */
static void test_bound_evicts_before_free_slots(void **state)
{
	struct stage st;
	int i, j, n;

	(void)state;
	stage_open_bounded(&st, 0, 8);
	for (i = 0; i < 8; i++)
		put(&st, i, at((uint64_t)(i * 3 % 8) + 1), i == 0 ? 2 : 1);
	assert_int_equal(evictions(&st), 0);
	for (n = 0; n < 7; n++) {
		put(&st, FULL + n, at(1000), 2);
		assert_int_equal(evictions(&st), (uint64_t)n + 1);
		assert_int_equal(state_of(&st, 0), at(1));
		for (i = 1; i < 8; i++) {
			j = i * 3 % 8;
			assert_int_equal(state_of(&st, i),
					 j <= n + 1 ? 0 : at((uint64_t)j + 1));
		}
	}
	put(&st, FULL + n, at(1000), 2);
	assert_int_equal(state_of(&st, 0), 0);
	stage_close(&st, 8);
}

/*
 * A word ranks by itself, not by its expiry, which rounds it up to
 * 2^24 ns (TKZ_WORD_SLACK): TATs a microsecond apart, or counts of one
 * packed window, still tell the colder one, which key @later (0 or 1)
 * is not.
 */
static void word_pair(int later)
{
	struct stage st;

	stage_open(&st, 0);
	put_rest(&st, 2);
	put(&st, later, at(1) + 1000, 1);
	put(&st, !later, at(1), 1);
	put(&st, FULL, at(1000), 1);
	assert_int_equal(state_of(&st, later), at(1) + 1000);
	assert_int_equal(state_of(&st, !later), 0);
	stage_close(&st, FULL);
}

static void test_word_ranks_to_the_ns(void **state)
{
	(void)state;
	word_pair(0);
	word_pair(1);
}

/*
 * Keys committed with no state yet, whose inserters are about to write
 * them (tk__zone_locate() leaves them so), are never evicted, however
 * late the one live state expires; with none live, the new key waits
 * for one (and gives up, here, where none comes).
 */
static void test_key_being_inserted_stays(void **state)
{
	struct stage st;
	uint64_t idx, w0, w1, v;
	int i, live;

	(void)state;
	for (live = 1; live >= 0; live--) {
		stage_open(&st, 0);
		for (i = live; i < FULL; i++)
			assert_int_equal(tk__zone_locate(st.z, &st.key[i], NOW,
							 1, &idx, &w0, &w1),
					 0);
		if (live)
			put(&st, 0, at(1000000), 2);
		v = at(1);
		assert_int_equal(
			tk__zone_apply(st.z, &st.key[FULL], NOW, 1, put_fn, &v),
			live ? TK__ZONE_PERSIST : -EIO);
		assert_int_equal(evictions(&st), (uint64_t)live);
		for (i = 1; i < FULL; i++)
			assert_int_equal(tk__zone_locate(st.z, &st.key[i], NOW,
							 0, &idx, &w0, &w1),
					 0);
		stage_close(&st, FULL);
	}
}

/*
 * A key reset is inserted again, and its first write leaves it a key
 * used once: it goes before keys used again, but not before keys used
 * once whose states expire first, even where it is the first candidate
 * of the new key.
 */
static void test_reset_key_stays(void **state)
{
	struct tk__zone_key k;
	struct tkz_cand c;
	struct stage st;
	uint64_t idx, w0, w1, i, v = at(1000);

	(void)state;
	stage_open(&st, 0);
	for (i = 1; i < FULL; i++)
		put(&st, (int)i, at(i), 1);
	put(&st, 0, at(5000), 2);
	assert_int_equal(tk__zone_reset(st.z, &st.key[0]), 0);
	put(&st, 0, at(500), 1);
	assert_int_equal(
		tk__zone_locate(st.z, &st.key[0], NOW, 0, &idx, &w0, &w1), 0);
	/* A new key whose first candidate is the reset key's slot. */
	for (i = 1000000;; i++) {
		assert_true(i < 2000000);
		k = kit_word_key(i);
		tkz_candidates(st.z, &k, &c);
		if (same_windows(st.z, &st.key[0], &k) && tkz_at(&c, 0) == idx)
			break;
	}
	assert_int_equal(tk__zone_apply(st.z, &k, NOW, 1, put_fn, &v),
			 TK__ZONE_PERSIST);
	assert_int_equal(state_of(&st, 0), at(500));
	assert_int_equal(state_of(&st, 1), 0);
	stage_close(&st, FULL);
}

/* A block state ranks by the expiry its block records, and goes with
 * its block. */
static void test_block_state_ranks_by_expiry(void **state)
{
	struct tk__zone_census c;
	struct tk__zone_key bk;
	struct stage st;
	uint64_t v = at(3);
	int i;

	(void)state;
	stage_open(&st, 0);
	for (i = 1; i < FULL; i++)
		put(&st, i, at(i == 5 ? 4 : 10 + (uint64_t)i), 1);
	bk = st.key[0];
	bk.fp |= TKZ_FP_BLOCK;
	assert_int_equal(tk__zone_apply(st.z, &bk, NOW, 2, put2_fn, &v),
			 TK__ZONE_PERSIST);
	put(&st, FULL, at(1000), 1);
	memset(&c, 0, sizeof(c));
	assert_int_equal(tk__zone_census(st.z, &c), 0);
	assert_int_equal(c.blocks, 0);
	assert_int_equal(state_of(&st, 5), at(4));
	put(&st, FULL + 1, at(1000), 1);
	assert_int_equal(state_of(&st, 5), 0);
	stage_close(&st, FULL);
}

/* A zone that refuses when full still evicts nothing. */
static void test_refusing_zone_evicts_nothing(void **state)
{
	struct stage st;
	uint64_t v = at(1);
	int i;

	(void)state;
	stage_open(&st, TKZ_FLAG_REFUSE_FULL);
	for (i = 0; i < FULL; i++)
		put(&st, i, at(10 + (uint64_t)i), 1);
	assert_int_equal(
		tk__zone_apply(st.z, &st.key[FULL], NOW, 1, put_fn, &v),
		-ENOSPC);
	assert_int_equal(evictions(&st), 0);
	stage_close(&st, FULL);
}

/*
 * Issue 24: a memory store of 1024 slots, 8 threads checking 32 hot
 * keys each at gcra:1/1h,burst=500 while 2 threads check one-time keys
 * under the same policy.  A hot key evicted with a state starts afresh
 * and admits more than 500.  Two ways to make every hot key warmer than
 * the flood's keys, so that each must admit exactly its limit:
 *  - hot keys first checked amid the flood, whose keys are checked on a
 *    clock a second behind (on a real clock, most one-time keys around a
 *    hot key at its first use were checked before it): a hot key used
 *    once expires after them, and so does one reset and used again;
 *  - hot keys checked twice before the flood, on one clock: keys used
 *    again.
 * A hot key used once at the instant of the flood's keys is as cold as
 * they are, and may go like them: that is the bound, not tested here.
 */
#define HOT_THREADS 8
#define HOT_KEYS 32
#define LIMIT 500
#define FLOOD_THREADS 2
#define FILLED (4 * 1024) /* one-time keys checked before the hot ones */

struct flood_run {
	struct tk_limiter *hot, *flood;
	int pre;		  /* rounds of hot checks before the flood */
	int rounds;		  /* in all */
	int reset;		  /* reset each hot key halfway */
	_Atomic int ready;	  /* hot threads done with their first rounds */
	_Atomic uint64_t flooded; /* one-time keys checked */
	_Atomic int hot_left;	  /* hot threads still checking */
	_Atomic int errors;
	unsigned int admitted[HOT_THREADS][HOT_KEYS];
};

struct flood_arg {
	struct flood_run *r;
	int id;
};

static int allowed(struct flood_run *r, struct tk_limiter *l, const char *key)
{
	struct tk_decision d;

	if (tk_limiter_check(l, key, strlen(key), 1, &d) != 0) {
		atomic_fetch_add(&r->errors, 1);
		return 0;
	}
	return d.allowed;
}

/* One round of thread @a's hot keys: reset each first if @reset. */
static void hot_round(struct flood_arg *a, int reset)
{
	struct flood_run *r = a->r;
	char key[32];
	int k;

	for (k = 0; k < HOT_KEYS; k++) {
		snprintf(key, sizeof(key), "hot-%d-%d", a->id, k);
		if (reset && tk_limiter_reset(r->hot, key, strlen(key)) != 0)
			atomic_fetch_add(&r->errors, 1);
		r->admitted[a->id][k] += allowed(r, r->hot, key);
	}
}

static void *hot_main(void *arg)
{
	struct flood_arg *a = arg;
	struct flood_run *r = a->r;
	int round;

	for (round = 0; round < r->pre; round++)
		hot_round(a, 0);
	atomic_fetch_add(&r->ready, 1);
	/* Into a table the flood already fills. */
	while (atomic_load(&r->flooded) < FILLED)
		sched_yield();
	for (; round < r->rounds; round++)
		hot_round(a, r->reset && round == r->rounds / 2);
	atomic_fetch_sub(&r->hot_left, 1);
	return NULL;
}

static void *flood_main(void *arg)
{
	struct flood_arg *a = arg;
	struct flood_run *r = a->r;
	char key[32];
	uint64_t i;

	while (atomic_load(&r->ready) < HOT_THREADS)
		sched_yield();
	for (i = 0; atomic_load(&r->hot_left) > 0; i++) {
		snprintf(key, sizeof(key), "once-%d-%llu", a->id,
			 (unsigned long long)i);
		if (!allowed(r, r->flood, key))
			atomic_fetch_add(&r->errors, 1);
		atomic_fetch_add(&r->flooded, 1);
	}
	return NULL;
}

static struct tk_limiter *open_on(struct tk_store *s, struct tk_clock *c)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;

	o.store = s;
	o.clock = c;
	assert_int_equal(tk_limiter_open(&l, "gcra:1/1h,burst=500", NULL, &o),
			 0);
	return l;
}

/* Run @r's threads; the flood's clock @lag ns behind the hot keys'. */
static void flood_run(struct flood_run *r, uint64_t lag)
{
	struct flood_arg arg[HOT_THREADS + FLOOD_THREADS];
	pthread_t th[HOT_THREADS + FLOOD_THREADS];
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_clock *hot_clock, *flood_clock;
	struct tk_store *s;
	struct tk_stats st;
	int i;

	atomic_store(&r->hot_left, HOT_THREADS);
	assert_int_equal(tk_clock_manual_new(&hot_clock, NOW + SEC), 0);
	assert_int_equal(tk_clock_manual_new(&flood_clock, NOW + SEC - lag), 0);
	o.clock = hot_clock;
	o.max_keys = 400; /* 1024 slots */
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_int_equal(tk_store_open(&s, "memory", &o), 0);
	r->hot = open_on(s, hot_clock);
	r->flood = open_on(s, flood_clock);
	for (i = 0; i < HOT_THREADS + FLOOD_THREADS; i++) {
		arg[i] = (struct flood_arg){ r, i % HOT_THREADS };
		assert_int_equal(
			pthread_create(&th[i], NULL,
				       i < HOT_THREADS ? hot_main : flood_main,
				       &arg[i]),
			0);
	}
	for (i = 0; i < HOT_THREADS + FLOOD_THREADS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&r->errors), 0);
	assert_int_equal(tk_store_stats(s, &st, sizeof(st)), 0);
	assert_int_equal(st.capacity, 1024);
	assert_true(st.evictions > 0);
	tk_limiter_close(r->hot);
	tk_limiter_close(r->flood);
	tk_store_close(s);
	tk_clock_free(hot_clock);
	tk_clock_free(flood_clock);
}

/* Every hot key of @r admitted @limit: say how far off those that did
 * not were. */
static void expect_admitted(const struct flood_run *r, unsigned int limit)
{
	int i, k, wrong = 0;
	long extra = 0;

	for (i = 0; i < HOT_THREADS; i++)
		for (k = 0; k < HOT_KEYS; k++)
			if (r->admitted[i][k] != limit) {
				wrong++;
				extra += (long)r->admitted[i][k] - (long)limit;
			}
	if (wrong)
		fprintf(stderr, "%d hot keys admitted %ld more than %u\n",
			wrong, extra, limit);
	assert_int_equal(wrong, 0);
}

static void test_hot_keys_exact_amid_flood(void **state)
{
	static struct flood_run r;
	int run;

	(void)state;
	for (run = 0; run < 3; run++) {
		memset(&r, 0, sizeof(r));
		r.rounds = LIMIT + 20;
		flood_run(&r, SEC);
		expect_admitted(&r, LIMIT);
	}
	/* Reset halfway: each key admits its limit twice. */
	memset(&r, 0, sizeof(r));
	r.rounds = 2 * (LIMIT + 10);
	r.reset = 1;
	flood_run(&r, SEC);
	expect_admitted(&r, 2 * LIMIT);
	/* Used twice before the flood, on its clock. */
	memset(&r, 0, sizeof(r));
	r.pre = 2;
	r.rounds = LIMIT + 20;
	flood_run(&r, 0);
	expect_admitted(&r, LIMIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_victim_expires_first),
		cmocka_unit_test(test_key_used_again_stays),
		cmocka_unit_test(test_word_ranks_to_the_ns),
		cmocka_unit_test(test_bound_evicts_before_free_slots),
		cmocka_unit_test(test_key_being_inserted_stays),
		cmocka_unit_test(test_reset_key_stays),
		cmocka_unit_test(test_block_state_ranks_by_expiry),
		cmocka_unit_test(test_refusing_zone_evicts_nothing),
		cmocka_unit_test(test_hot_keys_exact_amid_flood),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
