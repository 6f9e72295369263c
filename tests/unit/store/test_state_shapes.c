/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_state_shapes.c - a key's state is read only as what wrote it.
 *
 * A policy of another algorithm or layout names its states under other
 * store keys (its tag), so a key used under such a policy starts afresh
 * there and the first policy's state stays as it was, on the memory store
 * and on zones alike; a state that does not validate is taken as no state
 * and counted;
 * state words with high bits set are never taken for references; keys of
 * different prefixes never meet.
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
#include <unistd.h>

#include <throttlekit.h>

#include "../kit/asserts.h"
#include "workers.h"

#define T0 UINT64_C(1700000000000000000)

static char dir[] = "/tmp/tk-shapes-XXXXXX";

/* A limiter of @policy on @store (NULL: a zone "shapes"), on @clock. */
static struct tk_limiter *open_on(const char *policy, struct tk_store *store,
				  struct tk_clock *clock, const char *prefix)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;

	o.clock = clock;
	o.store = store;
	o.prefix = prefix;
	assert_rc(tk_limiter_open(&l, policy, NULL, &o), 0);
	return l;
}

static struct tk_store *open_store(const char *spec, struct tk_clock *clock,
				   uint64_t grace)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_store *s = NULL;

	o.clock = clock;
	o.zone_capacity = 256;
	o.reclaim_grace = grace;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_store_open(&s, spec, &o), 0);
	return s;
}

static const char *const specs[] = { "memory", "shm:shapes" };
#define N_SPECS (sizeof(specs) / sizeof(specs[0]))

/*
 * Policies of pairwise different shapes: another algorithm, or another
 * number of state words, including the pairs of equal size that once
 * read each other's words (2 words: an unpacked fixed window and a log of
 * one; 22: ten sliding-window buckets and a log of 21).
 */
static const char *const shapes[] = {
	"gcra:5/1h",
	"token-bucket:capacity=5,refill=5/1h",
	"leaky:5/1h,max-queue=1h",
	"fixed-window:5/1h",
	"quota:5/day",
	"fixed-window:16777216/1h",
	"sliding-log:1/1h",
	"sliding-window:100/1h",
	"sliding-log:21/1h",
	"sliding-log:5/1h",
	"quota:16777216/day",
};
#define N_SHAPES (sizeof(shapes) / sizeof(shapes[0]))

static void fresh_zone(void)
{
	int rc = tk_zone_destroy("shapes");

	assert_true(rc == 0 || rc == -ENOENT);
}

/* Two limiters on one store of a fresh zone, with a manual clock at T0. */
struct pair {
	const char *prefix_a, *prefix_b; /* set by the caller, or NULL */
	struct tk_clock *clock;
	struct tk_store *s;
	struct tk_limiter *a, *b;
};

static void pair_open(struct pair *p, const char *spec, const char *policy_a,
		      const char *policy_b)
{
	fresh_zone();
	assert_rc(tk_clock_manual_new(&p->clock, T0), 0);
	p->s = open_store(spec, p->clock, 0);
	p->a = open_on(policy_a, p->s, p->clock, p->prefix_a);
	p->b = open_on(policy_b, p->s, p->clock, p->prefix_b);
}

static void pair_close(struct pair *p)
{
	tk_limiter_close(p->a);
	tk_limiter_close(p->b);
	tk_store_close(p->s);
	tk_clock_free(p->clock);
}

/*
 * Policy b on a key a wrote: b's own fresh budget, for check, peek and
 * forecast, on every store; a's state untouched by all of it.
 */
static void test_other_shape_apart(void **state)
{
	struct tk_decision d, before, after, fresh;
	struct pair p = { 0 };
	size_t i, j, k;

	(void)state;
	for (k = 0; k < N_SPECS; k++) {
		for (i = 0; i < N_SHAPES; i++) {
			for (j = 0; j < N_SHAPES; j++) {
				if (i == j)
					continue;
				pair_open(&p, specs[k], shapes[i], shapes[j]);
				assert_rc(
					tk_limiter_peek(p.b, "new", 3, &fresh),
					0);
				assert_rc(tk_limiter_check(p.a, "k", 1, 1, &d),
					  0);
				assert_true(d.allowed);
				assert_rc(tk_limiter_peek(p.a, "k", 1, &before),
					  0);
				assert_rc(tk_limiter_peek(p.b, "k", 1, &d), 0);
				assert_same_decision(d, fresh);
				assert_rc(
					tk_limiter_forecast(p.b, "k", 1, 1, &d),
					0);
				assert_true(d.allowed);
				assert_rc(tk_limiter_check(p.b, "k", 1, 1, &d),
					  0);
				assert_true(d.allowed);
				assert_int_equal(d.remaining,
						 fresh.remaining - 1);
				assert_rc(tk_limiter_peek(p.a, "k", 1, &after),
					  0);
				assert_same_decision(after, before);
				pair_close(&p);
			}
		}
	}
}

/* Another policy of the same algorithm and shape reads the state: a
 * live change of the limit works. */
static void test_same_shape_shared(void **state)
{
	struct tk_decision d;
	struct pair p = { 0 };
	size_t k;

	(void)state;
	for (k = 0; k < N_SPECS; k++) {
		pair_open(&p, specs[k], "gcra:5/1h", "gcra:10/1h");
		assert_rc(tk_limiter_check(p.a, "k", 1, 5, &d), 0);
		assert_true(d.allowed);
		/* b reads a's TAT, an hour ahead: one more of b's units
		 * (6 min) must wait for it. */
		assert_rc(tk_limiter_check(p.b, "k", 1, 1, &d), 0);
		assert_decision(d, false, 10, 0, T0 + 3600 * SEC, 360 * SEC);
		pair_close(&p);
	}
}

/* Composites: each dimension's state is its policy's, under its index
 * and tag. */
static void test_composite_dimensions_apart(void **state)
{
	struct tk_decision d;
	struct tk_limiter *c;
	struct tk_key keys[2] = { { "ip", 2 }, { "user", 4 } };
	struct pair p = { 0 };
	size_t k;

	(void)state;
	for (k = 0; k < N_SPECS; k++) {
		pair_open(&p, specs[k], "all(gcra:5/1h,sliding-log:5/1h)",
			  "all(sliding-log:5/1h,gcra:5/1h)");
		c = open_on("any(gcra:5/1h,sliding-log:1/1h)", p.s, p.clock,
			    NULL);
		assert_rc(tk_limiter_check_keys(p.a, keys, 2, 4, &d), 0);
		assert_true(d.allowed);
		assert_rc(tk_limiter_check_keys(p.b, keys, 2, 1, &d), 0);
		assert_decision(d, true, 5, 4, T0 + 3600 * SEC, 0);
		/* Its gcra dimension reads a's: 4 of 5 used. */
		assert_rc(tk_limiter_check_keys(c, keys, 2, 1, &d), 0);
		assert_true(d.allowed);
		assert_rc(tk_limiter_check_keys(c, keys, 2, 1, &d), 0);
		assert_decision(d, false, 5, 0, T0 + 3600 * SEC, 720 * SEC);
		/* A composite's keys never meet a simple policy's. */
		tk_limiter_close(c);
		c = open_on("sliding-log:5/1h", p.s, p.clock, NULL);
		assert_rc(tk_limiter_check(c, "ip", 2, 1, &d), 0);
		assert_decision(d, true, 5, 4, T0 + 3600 * SEC, 0);
		tk_limiter_close(c);
		pair_close(&p);
	}
}

/*
 * One-word states of 2^62 ns and more (a TAT a century ahead) are times,
 * never references: a sweep keeps them and the key stays limited, as on
 * the memory store.
 */
static void test_high_word_states_kept(void **state)
{
	struct tk_clock *clock;
	struct tk_decision d;
	struct tk_limiter *l;
	struct tk_store *s;
	uint64_t now = UINT64_C(1790000000) * SEC;
	size_t k;

	(void)state;
	assert_rc(tk_clock_manual_new(&clock, now), 0);
	for (k = 0; k < N_SPECS; k++) {
		fresh_zone();
		s = open_store(specs[k], clock, 1);
		l = open_on("gcra:1/36500d", s, clock, NULL);
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_true(d.allowed);
		assert_true(d.reset_at >= UINT64_C(1) << 62);
		if (k == 1) {
			assert_rc(tk_zone_sweep("shapes", now + SEC), 0);
			struct tk_zone_info info;

			assert_rc(tk_zone_verify("shapes", &info, sizeof(info)),
				  0);
			assert_int_equal(info.keys, 1);
		}
		assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
		assert_false(d.allowed);
		tk_limiter_close(l);
		tk_store_close(s);
	}
	tk_clock_free(clock);
}

/* xorshift64*: reproducible timelines. */
static uint64_t rnd(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * UINT64_C(2685821657736338717);
}

/*
 * Times in [2^62, 2^63): the zone decides as the memory store does, with
 * full sweeps between steps (which once freed such states as broken
 * descriptor references).
 */
static void test_high_times_same_as_memory(void **state)
{
	static const char *const policies[] = {
		"gcra:3/1s",
		"token-bucket:capacity=4,refill=2/1s",
		"leaky:2/1s,max-queue=2s",
		"fixed-window:3/1s",
	};
	struct tk_clock *clock;
	struct tk_decision dm, dz;
	struct tk_limiter *m, *z;
	struct tk_store *sm, *sz;
	uint64_t x = 42, now, base = UINT64_C(1) << 62;
	size_t p;
	int i, rm, rz;
	char key[8];

	(void)state;
	for (p = 0; p < sizeof(policies) / sizeof(policies[0]); p++) {
		fresh_zone();
		assert_rc(tk_clock_manual_new(&clock, base), 0);
		/* The default grace (60 s) keeps every state the
		 * backward steps (< 1 s) return to. */
		sm = open_store("memory", clock, 0);
		sz = open_store("shm:shapes", clock, 0);
		m = open_on(policies[p], sm, clock, NULL);
		z = open_on(policies[p], sz, clock, NULL);
		now = base;
		for (i = 0; i < 3000; i++) {
			/* Mostly forward, small steps; sometimes back. */
			uint64_t r = rnd(&x);

			if (r % 16 == 0 && now > base + SEC)
				now -= r % SEC;
			else
				now += (r >> 8) % (SEC / 2);
			assert_rc(tk_clock_set(clock, now), 0);
			snprintf(key, sizeof(key), "k%d", (int)(r >> 40) % 3);
			rm = tk_limiter_check(m, key, strlen(key), 1, &dm);
			rz = tk_limiter_check(z, key, strlen(key), 1, &dz);
			assert_rc(rz, rm);
			if (rm == 0) {
				assert_same_decision(dz, dm);
				assert_int_equal(dz.delay, dm.delay);
			}
			if (i % 50 == 0)
				assert_rc(tk_zone_sweep("shapes", now), 0);
		}
		tk_limiter_close(m);
		tk_limiter_close(z);
		tk_store_close(sm);
		tk_store_close(sz);
		tk_clock_free(clock);
	}
}

/* Prefix "ab" + key "c" and prefix "a" + key "bc" are two keys. */
static void test_prefix_boundary(void **state)
{
	struct pair p = { .prefix_a = "ab", .prefix_b = "a" };
	size_t k;

	(void)state;
	for (k = 0; k < N_SPECS; k++) {
		pair_open(&p, specs[k], "gcra:1/1h", "gcra:1/1h");
		assert_admits(p.a, "c", 1, true);
		assert_admits(p.b, "bc", 2, true);
		assert_admits(p.a, "c", 1, false);
		pair_close(&p);
	}
}

/*
 * Two processes hammer one word key at one instant: every lost slot CAS
 * must be retried, never taken for a success, so exactly the burst is
 * admitted.
 */
#define HAMMER_BURST 100000
#define HAMMER_EACH 80000

static void hammer_worker(int i)
{
	struct kit_shared *sh = kit_shared();
	struct tk_decision d;
	struct tk_limiter *l;
	struct tk_clock *clock;
	struct tk_store *s;
	int n;

	(void)i;
	if (tk_clock_manual_new(&clock, T0))
		_exit(2);
	s = open_store("shm:shapes", clock, 0);
	l = open_on("gcra:100000/1h", s, clock, NULL);
	/* Opening takes a while: start the checks together. */
	atomic_fetch_add(&sh->phase, 1);
	while (atomic_load(&sh->phase) < 2)
		;
	for (n = 0; n < HAMMER_EACH; n++) {
		if (tk_limiter_check(l, "hot", 3, 1, &d))
			_exit(3);
		if (d.allowed)
			atomic_fetch_add(&sh->allowed, 1);
	}
	tk_limiter_close(l);
	tk_store_close(s);
}

static void test_word_key_contended(void **state)
{
	(void)state;
	fresh_zone();
	assert_non_null(kit_shared());
	kit_shared_reset(T0);
	kit_run_workers(2, hammer_worker);
	assert_int_equal(atomic_load(&kit_shared()->allowed), HAMMER_BURST);
}

/*
 * A corrupt block state (a sliding log's count of 10^12) is found by
 * verify, and a check takes it as no state: a cold key's decision, the
 * state replaced, the store's corrupt counter up by one.
 */
static void test_corrupt_state_is_cold(void **state)
{
	struct tk_zone_info info;
	struct tk_clock *clock;
	struct tk_decision d;
	struct tk_stats st;
	struct tk_limiter *l;
	struct tk_store *s;

	(void)state;
	fresh_zone();
	assert_rc(tk_clock_manual_new(&clock, T0), 0);
	s = open_store("shm:shapes", clock, 0);
	l = open_on("sliding-log:5/1h", s, clock, NULL);
	assert_rc(tk_limiter_check(l, "k", 1, 3, &d), 0);
	assert_decision(d, true, 5, 2, T0 + 3600 * SEC, 0);
	assert_rc(tk_zone_verify("shapes", &info, sizeof(info)), 0);
	assert_int_equal(info.corrupt, 0);
	kit_zone_poke("shapes", kit_block_word_offset("shapes", 0) + 8,
		      UINT64_C(1000000000000));
	assert_rc(tk_zone_verify("shapes", &info, sizeof(info)), -EBADMSG);
	assert_int_equal(info.corrupt, 1);
	assert_rc(tk_limiter_peek(l, "k", 1, &d), 0);
	assert_decision(d, true, 5, 5, T0, 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_decision(d, true, 5, 4, T0 + 3600 * SEC, 0);
	assert_rc(tk_store_stats(s, &st, sizeof(st)), 0);
	assert_int_equal(st.corrupt, 2);
	assert_rc(tk_zone_verify("shapes", &info, sizeof(info)), 0);
	assert_int_equal(info.corrupt, 0);
	tk_limiter_close(l);
	tk_store_close(s);
	tk_clock_free(clock);
}

/*
 * A live key's limit lowered (same algorithm, same state size): the key
 * is over its new limit, denied, never taken for corrupt and reset.
 */
static void test_lowered_limit_stays_over(void **state)
{
	static const struct {
		const char *from, *to;
		uint64_t used; /* by from, more than to's limit */
	} pairs[] = {
		{ "fixed-window:10/1h", "fixed-window:5/1h", 8 },
		{ "fixed-window:20000000/1h", "fixed-window:16777216/1h",
		  17000000 },
		{ "quota:10/day", "quota:5/day", 8 },
		{ "sliding-window:10/1h,buckets=4",
		  "sliding-window:5/1h,buckets=4", 8 },
	};
	struct tk_decision d;
	struct tk_stats st;
	struct pair p = { 0 };
	size_t i, k;

	(void)state;
	for (k = 0; k < N_SPECS; k++) {
		for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
			pair_open(&p, specs[k], pairs[i].from, pairs[i].to);
			assert_rc(tk_limiter_check(p.a, "k", 1, pairs[i].used,
						   &d),
				  0);
			assert_true(d.allowed);
			assert_rc(tk_limiter_check(p.b, "k", 1, 1, &d), 0);
			assert_false(d.allowed);
			assert_int_equal(d.remaining, 0);
			assert_rc(tk_limiter_peek(p.b, "k", 1, &d), 0);
			assert_false(d.allowed);
			assert_int_equal(d.remaining, 0);
			assert_rc(tk_store_stats(p.s, &st, sizeof(st)), 0);
			assert_int_equal(st.corrupt, 0);
			pair_close(&p);
		}
	}
}

static int setup(void **state)
{
	(void)state;
	return kit_zone_dir(dir);
}

static int teardown(void **state)
{
	(void)state;
	tk_zone_destroy("shapes");
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_other_shape_apart),
		cmocka_unit_test(test_same_shape_shared),
		cmocka_unit_test(test_composite_dimensions_apart),
		cmocka_unit_test(test_high_word_states_kept),
		cmocka_unit_test(test_high_times_same_as_memory),
		cmocka_unit_test(test_prefix_boundary),
		cmocka_unit_test(test_word_key_contended),
		cmocka_unit_test(test_corrupt_state_is_cold),
		cmocka_unit_test(test_lowered_limit_stays_over),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
