/*
 * test_algorithms.c - token bucket, fixed window, sliding window, sliding
 * log and quota decisions through the public API.
 *
 * Every expectation comes from shared/design/semantics.md, never from the
 * library's code.  The hand-worked cases pin literal numbers worked out on
 * paper; the property tests compare every field of thousands of random
 * decisions with small reference models written below from the same
 * document (exact integer arithmetic, 128-bit where products can
 * overflow; calendar boundaries from the C library's timegm()/gmtime_r()).
 *
 * Details semantics.md leaves open are decided as follows (the project's
 * decisions, tested here):
 *   - fixed window and quota peek: remaining = L - count, retry_after =
 *     0 if remaining >= 1, else start' + W - now (quota: next boundary -
 *     now); reset_at = start' + W (the next boundary).
 *   - sliding window peek: remaining = max(0, floor(L - est)); retry_after
 *     = the deny formula for cost 1 (0 if est + 1 <= L); reset_at = (c + 1)
 *     * w + W, except that after a backward jump, if a bucket with a count
 *     has a tick above c, (the highest such tick + 1) * w + W.  Since
 *     semantics.md gives peek the reset_at of a check ("as above"), checks
 *     report the same: the time the key is really fully replenished.
 *   - sliding window allowed: remaining = max(0, floor(L - est - cost)).
 *   - sliding log peek on a key without live stamps: remaining = L,
 *     reset_at = now, retry_after 0; stamps later than now (after a
 *     backward jump) are live.
 *   - a key reset with tk_limiter_reset() behaves as never seen; a cost
 *     above L is -ERANGE and changes nothing.
 *
 * Backward jumps and several keys: a store may drop a key's state once it
 * has expired (is equivalent to no state) at a time the store has seen,
 * and a sliding algorithm may forget buckets or stamps that were dead at
 * the latest time the key has seen.  After a backward jump such forgotten
 * state could count again, and whether it does is not specified.  So
 * before each backward jump the property tests reset (in the library and
 * in the model alike) every key whose outcome could depend on that
 * freedom; all other keys keep their state across the jump and must
 * match the model exactly, including "a later window still counts".
 *
 * All timelines use manual clocks and fixed-seed generators, so every run
 * is deterministic and every failure message says how to reproduce it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <throttlekit.h>

#include "asserts.h"
#include "parse-kit.h"
#include "rnd.h"

#define MINUTE (60ull * SEC)
#define HOUR (3600ull * SEC)
#define DAY (86400ull * SEC)

/* 2023-11-14T22:13:20Z: a multiple of 1 s (and of 100 ms, 250 ms...). */
#define B0 (1700000000ull * SEC)

/* Seconds since the epoch to ns. */
#define AT(s) ((uint64_t)(s)*SEC)

typedef unsigned __int128 u128;
typedef __int128 i128;

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static bool same_decision(const struct tk_decision *a,
			  const struct tk_decision *b)
{
	return a->allowed == b->allowed && a->limit == b->limit &&
	       a->remaining == b->remaining && a->reset_at == b->reset_at &&
	       a->retry_after == b->retry_after;
}

/* ------------------------------------------------------------------ */
/* Fixture: a limiter on a private memory store and a manual clock.     */

struct fx {
	struct tk_clock *clk;
	struct tk_limiter *l;
};

static int open_on(struct tk_limiter **l, const char *policy,
		   struct tk_clock *clk)
{
	struct tk_options o = TK_OPTIONS_INIT;

	o.clock = clk;
	o.flags = TK_OPT_NO_RECLAIMER;
	*l = NULL;
	return tk_limiter_open(l, policy, "memory", &o);
}

static void fx_open(struct fx *f, const char *policy, uint64_t start)
{
	int rc;

	assert_rc(tk_clock_manual_new(&f->clk, start), 0);
	rc = open_on(&f->l, policy, f->clk);
	if (rc != 0)
		fail_msg("tk_limiter_open(\"%s\") = %d (%s), want 0", policy,
			 rc, tk_strerrorname(rc));
	assert_non_null(f->l);
}

static void fx_close(struct fx *f)
{
	tk_limiter_close(f->l);
	tk_clock_free(f->clk);
	f->l = NULL;
	f->clk = NULL;
}

static void fx_at(struct fx *f, uint64_t ns)
{
	assert_rc(tk_clock_set(f->clk, ns), 0);
}

/* tk_limiter_open()'s return code for @policy (closing it on success). */
static int open_rc(const char *policy)
{
	struct tk_clock *clk;
	struct tk_limiter *l;
	int rc;

	assert_rc(tk_clock_manual_new(&clk, B0), 0);
	rc = open_on(&l, policy, clk);
	if (rc == 0)
		tk_limiter_close(l);
	tk_clock_free(clk);
	return rc;
}

/* Poisons the output first, so a field the library forgets shows up. */
static void poison(struct tk_decision *d)
{
	d->allowed = false;
	d->limit = 0xdeadbeefdeadbeefull;
	d->remaining = 0xdeadbeefdeadbeefull;
	d->reset_at = 0xdeadbeefdeadbeefull;
	d->retry_after = 0xdeadbeefdeadbeefull;
}

static int check_rc(struct tk_limiter *l, const char *key, uint64_t cost,
		    struct tk_decision *d)
{
	poison(d);
	return tk_limiter_check(l, key, strlen(key), cost, d);
}

static int peek_rc(struct tk_limiter *l, const char *key, struct tk_decision *d)
{
	poison(d);
	return tk_limiter_peek(l, key, strlen(key), d);
}

static struct tk_decision chk(struct fx *f, const char *key, uint64_t cost)
{
	struct tk_decision d;

	assert_rc(check_rc(f->l, key, cost, &d), 0);
	return d;
}

static struct tk_decision peek(struct fx *f, const char *key)
{
	struct tk_decision d;

	assert_rc(peek_rc(f->l, key, &d), 0);
	return d;
}

/* ------------------------------------------------------------------ */
/* 1. Token bucket == GCRA                                             */

/* A few literal numbers first: capacity 5, one token per 100 ms. */
static void test_token_bucket_literal(void **state)
{
	struct tk_decision d;
	struct fx f;
	uint64_t k;

	(void)state;
	fx_open(&f, "token-bucket:capacity=5,refill=10/1s", B0);
	d = peek(&f, "k");
	assert_decision(d, true, 5, 5, B0, 0);
	for (k = 1; k <= 5; k++) {
		d = chk(&f, "k", 1);
		assert_decision(d, true, 5, 5 - k, B0 + k * 100 * MS, 0);
	}
	d = chk(&f, "k", 1);
	assert_decision(d, false, 5, 0, B0 + 500 * MS, 100 * MS);
	fx_at(&f, B0 + 100 * MS - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 5, 0, B0 + 500 * MS, 1);
	fx_at(&f, B0 + 100 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 5, 0, B0 + 600 * MS, 0);
	/* A cost above the capacity can never pass. */
	assert_rc(check_rc(f.l, "k", 6, &d), -ERANGE);
	assert_rc(check_rc(f.l, "k", 0, &d), -EINVAL);
	fx_close(&f);
}

/*
 * token-bucket:capacity=C,refill=R/P and gcra:R/P,burst=C side by side on
 * one clock, over random timelines with several keys, backward jumps,
 * peeks, resets and too-large costs: every return code and every field
 * must be identical.  Before a backward jump, keys whose state had expired
 * at a time the stores have seen since it was written are reset in both
 * (a store may or may not have dropped such state).
 */
static void test_token_bucket_matches_gcra(void **state)
{
	enum { NK = 3 };
	static const char *const keys[NK] = { "a", "bb", "ccc" };
	const int nseeds = 10, nops = 3000;
	struct tk_clock *clk;
	struct tk_limiter *tb, *gc;
	struct tk_decision dt, dg;
	char ptb[128], pgc[128];
	uint64_t seed, C, R, P, T, now, r, cost, back;
	uint64_t tat[NK], seen[NK];
	bool has[NK];
	uint64_t checks = 0, denied = 0;
	int s, i, j, kk, rct, rcg;
	const char *what;

	(void)state;
	for (s = 0; s < nseeds; s++) {
		seed = 0x70cb0000ull + (uint64_t)s;
		R = rnd_range(&seed, 1, 50);
		C = rnd_range(&seed, 1, 50);
		if (s % 3 == 0)
			P = rnd_range(&seed, 1, 5000) * MS;
		else
			P = rnd_range(&seed, R, 10 * SEC);
		T = P / R;
		snprintf(ptb, sizeof(ptb),
			 "token-bucket:capacity=%llu,refill=%llu/%lluns",
			 (unsigned long long)C, (unsigned long long)R,
			 (unsigned long long)P);
		snprintf(pgc, sizeof(pgc), "gcra:%llu/%lluns,burst=%llu",
			 (unsigned long long)R, (unsigned long long)P,
			 (unsigned long long)C);
		now = B0 + rnd_range(&seed, 0, 100 * SEC);
		assert_rc(tk_clock_manual_new(&clk, now), 0);
		if ((rct = open_on(&tb, ptb, clk)) != 0)
			fail_msg("open(\"%s\") = %d (%s)", ptb, rct,
				 tk_strerrorname(rct));
		assert_rc(open_on(&gc, pgc, clk), 0);
		memset(has, 0, sizeof(has));
		memset(seen, 0, sizeof(seen));
		memset(tat, 0, sizeof(tat));

		for (i = 0; i < nops; i++) {
			r = rnd_range(&seed, 0, 99);
			if (r < 20)
				; /* the same instant */
			else if (r < 55)
				now += rnd_range(&seed, 1, 2 * T);
			else if (r < 65)
				now += T * rnd_range(&seed, 1, 3);
			else if (r < 80)
				now += rnd_range(&seed, 1, T * C + T);
			else if (r < 84)
				now += rnd_range(&seed, T * C, 3 * T * C + 1);
			else if (r < 94) {
				back = rnd_range(&seed, 1, T * (C + 2));
				back = min_u64(back, now - (B0 - 10 * SEC));
				for (kk = 0; kk < NK; kk++) {
					if (!has[kk] || tat[kk] > seen[kk])
						continue;
					assert_rc(tk_limiter_reset(
							  tb, keys[kk],
							  strlen(keys[kk])),
						  0);
					assert_rc(tk_limiter_reset(
							  gc, keys[kk],
							  strlen(keys[kk])),
						  0);
					has[kk] = false;
				}
				now -= back;
			}
			assert_rc(tk_clock_set(clk, now), 0);
			for (kk = 0; kk < NK; kk++)
				seen[kk] = max_u64(seen[kk], now);

			kk = (int)rnd_range(&seed, 0, NK - 1);
			r = rnd_range(&seed, 0, 99);
			cost = 0;
			if (r < 75) {
				what = "check";
				j = (int)rnd_range(&seed, 0, 99);
				cost = j < 60 ? 1
				       : j < 97
					       ? rnd_range(&seed, 1, C)
					       : rnd_range(&seed, C + 1, C + 3);
				rct = check_rc(tb, keys[kk], cost, &dt);
				rcg = check_rc(gc, keys[kk], cost, &dg);
			} else if (r < 95) {
				what = "peek";
				rct = peek_rc(tb, keys[kk], &dt);
				rcg = peek_rc(gc, keys[kk], &dg);
			} else {
				what = "reset";
				rct = tk_limiter_reset(tb, keys[kk],
						       strlen(keys[kk]));
				rcg = tk_limiter_reset(gc, keys[kk],
						       strlen(keys[kk]));
				has[kk] = false;
				dt = dg;
			}
			if (rct != rcg)
				fail_msg("seed %d [%s] vs [%s] op %d %s key %s "
					 "cost %llu at B0%+lld: rc %d (%s), "
					 "gcra "
					 "%d (%s)",
					 s, ptb, pgc, i, what, keys[kk],
					 (unsigned long long)cost,
					 (long long)(now - B0), rct,
					 tk_strerrorname(rct), rcg,
					 tk_strerrorname(rcg));
			if (rct != 0)
				continue;
			if (!same_decision(&dt, &dg))
				fail_msg("seed %d [%s] vs [%s] op %d %s key %s "
					 "cost %llu at B0%+lld: token bucket "
					 "{%d, %llu, %llu, %llu, %llu}, gcra "
					 "{%d, %llu, %llu, %llu, %llu}",
					 s, ptb, pgc, i, what, keys[kk],
					 (unsigned long long)cost,
					 (long long)(now - B0), dt.allowed,
					 (unsigned long long)dt.limit,
					 (unsigned long long)dt.remaining,
					 (unsigned long long)dt.reset_at,
					 (unsigned long long)dt.retry_after,
					 dg.allowed,
					 (unsigned long long)dg.limit,
					 (unsigned long long)dg.remaining,
					 (unsigned long long)dg.reset_at,
					 (unsigned long long)dg.retry_after);
			if (strcmp(what, "check") == 0) {
				assert_int_equal(dt.limit, C);
				checks++;
				if (dt.allowed) {
					has[kk] = true;
					tat[kk] = dt.reset_at;
					seen[kk] = now;
				} else {
					denied++;
				}
			}
		}
		tk_limiter_close(tb);
		tk_limiter_close(gc);
		tk_clock_free(clk);
	}
	assert_true(denied > checks / 20 && denied < checks * 19 / 20);
}

/* ------------------------------------------------------------------ */
/* 2. Fixed window                                                      */

static void test_fixed_window_basics(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "fixed-window:5/1s", B0 + 300 * MS);
	d = peek(&f, "k");
	assert_decision(d, true, 5, 5, B0 + SEC, 0);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 5, 3, B0 + SEC, 0);
	/* count + cost == L allows. */
	d = chk(&f, "k", 3);
	assert_decision(d, true, 5, 0, B0 + SEC, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 5, 0, B0 + SEC, 700 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 5, 0, B0 + SEC, 700 * MS);
	fx_at(&f, B0 + SEC - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 5, 0, B0 + SEC, 1);

	/* Exactly ws + W starts a fresh window. */
	fx_at(&f, B0 + SEC);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 5, 4, B0 + 2 * SEC, 0);
	d = chk(&f, "k", 3);
	assert_decision(d, true, 5, 1, B0 + 2 * SEC, 0);
	/* A denial consumes nothing: 2 > 1 is denied, then 1 passes. */
	d = chk(&f, "k", 2);
	assert_decision(d, false, 5, 1, B0 + 2 * SEC, SEC);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 5, 1, B0 + 2 * SEC, SEC);
	d = peek(&f, "k");
	assert_decision(d, true, 5, 1, B0 + 2 * SEC, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 5, 0, B0 + 2 * SEC, 0);
	/* Another key has its own window. */
	d = chk(&f, "other", 5);
	assert_decision(d, true, 5, 0, B0 + 2 * SEC, 0);
	/* A whole empty window later, the count starts over. */
	fx_at(&f, B0 + 3 * SEC + 5);
	d = chk(&f, "k", 5);
	assert_decision(d, true, 5, 0, B0 + 4 * SEC, 0);
	fx_close(&f);
}

/* Windows are aligned on the epoch, not on the first request. */
static void test_fixed_window_epoch_aligned(void **state)
{
	/* W = 13 s + 7 ns; floor(now / W) * W worked out exactly. */
	const uint64_t now = B0 + 123456789;
	const uint64_t ws = 1699999990915384610ull;
	const uint64_t W = 13000000007ull;
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "fixed-window:2/13000000007ns", now);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 2, 0, ws + W, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 2, 0, ws + W, 3791927828ull);
	fx_at(&f, ws + W - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 2, 0, ws + W, 1);
	fx_at(&f, ws + W);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 2, 1, ws + 2 * W, 0);
	fx_close(&f);

	/* 1700000005 s with W = 7 s: the window is [1700000001, ...008). */
	fx_open(&f, "fixed-window:3/7s", AT(1700000005));
	d = chk(&f, "k", 3);
	assert_decision(d, true, 3, 0, AT(1700000008), 0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, AT(1700000008), 3 * SEC);
	fx_at(&f, AT(1700000008));
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, AT(1700000015), 0);
	fx_close(&f);
}

static void test_fixed_window_cost_range(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "fixed-window:5/1s", B0);
	assert_rc(check_rc(f.l, "k", 6, &d), -ERANGE);
	assert_rc(check_rc(f.l, "k", UINT64_MAX, &d), -ERANGE);
	assert_rc(check_rc(f.l, "k", 0, &d), -EINVAL);
	/* Nothing was consumed. */
	d = peek(&f, "k");
	assert_decision(d, true, 5, 5, B0 + SEC, 0);
	d = chk(&f, "k", 5);
	assert_decision(d, true, 5, 0, B0 + SEC, 0);
	/* -ERANGE, not a denial, even on a full window. */
	assert_rc(check_rc(f.l, "k", 6, &d), -ERANGE);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 5, 0, B0 + SEC, SEC);
	fx_close(&f);
}

/*
 * A window stamped later than now still counts: start' = max(ws,
 * state.start).  Fill the window at t, go back one window: still denied,
 * with the later window's reset time.
 */
static void test_fixed_window_backward_jump(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "fixed-window:3/1s", B0 + 1500 * MS);
	d = chk(&f, "k", 3);
	assert_decision(d, true, 3, 0, B0 + 2 * SEC, 0);

	fx_at(&f, B0 + 500 * MS); /* one window back */
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + 2 * SEC, 1500 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 3, 0, B0 + 2 * SEC, 1500 * MS);
	fx_at(&f, B0 - 3 * SEC); /* several windows back */
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + 2 * SEC, 5 * SEC);
	fx_at(&f, B0 + 1200 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + 2 * SEC, 800 * MS);

	fx_at(&f, B0 + 2 * SEC);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, B0 + 3 * SEC, 0);
	/* Back into the earlier window: the later one (count 1) counts. */
	fx_at(&f, B0 + 1999 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 1, B0 + 3 * SEC, 0);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 3, 1, B0 + 3 * SEC, 1001 * MS);
	fx_at(&f, B0 + 2500 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, B0 + 3 * SEC, 0);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* 3. Sliding window                                                    */

/*
 * sliding-window:10/1s: S = 10, w = 100 ms.  With c0 = B0 / w:
 *   B0+50ms   cost 4 -> bucket c0 = 4
 *   B0+320ms  cost 5 -> bucket c0+3 = 5
 *   B0+1050ms (c = c0+10, e = 50ms): old = bucket c0 = 4, full = 5,
 *             est = 5 + 4 * 50/100 = 7
 */
static void test_sliding_window_estimate(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-window:10/1s", B0 + 50 * MS);
	d = chk(&f, "k", 4);
	assert_decision(d, true, 10, 6, B0 + 1100 * MS, 0);
	fx_at(&f, B0 + 320 * MS);
	d = chk(&f, "k", 5);
	assert_decision(d, true, 10, 1, B0 + 1400 * MS, 0);

	fx_at(&f, B0 + 1050 * MS);
	d = peek(&f, "k");
	assert_decision(d, true, 10, 3, B0 + 2100 * MS, 0);
	/* est + cost == L allows. */
	d = chk(&f, "k", 3);
	assert_decision(d, true, 10, 0, B0 + 2100 * MS, 0);
	/*
	 * Now full = 8, old = 4, est = 10.  Cost 1: D = 1 <= old * (w-e)/w
	 * = 2, retry = ceil(D * w / old) = 25 ms.  Cost 2: D = 2, 50 ms.
	 * Cost 3: D = 3 > 2, the next bucket: (c+1)*w - now = 50 ms.
	 */
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 25 * MS);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 50 * MS);
	d = chk(&f, "k", 3);
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 50 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 25 * MS);

	/* e = 74 ms: est = 8 + 4 * 0.26 = 9.04; D = 0.04 -> 1 ms. */
	fx_at(&f, B0 + 1074 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 1 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 1 * MS);
	/* e = 75 ms: est = 9, est + 1 == L allows. */
	fx_at(&f, B0 + 1075 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 10, 0, B0 + 2100 * MS, 0);

	/* c = c0+11, e = 0: old = bucket c0+1 (none), full = 5 + 4. */
	fx_at(&f, B0 + 1100 * MS);
	d = peek(&f, "k");
	assert_decision(d, true, 10, 1, B0 + 2200 * MS, 0);

	/*
	 * c = c0+13, e = 50ms: old = bucket c0+3 = 5, full = 4, est = 6.5.
	 * Cost 4: D = 0.5 <= 2.5: retry = ceil(0.5 * w / 5) = 10 ms.
	 */
	fx_at(&f, B0 + 1350 * MS);
	d = peek(&f, "k");
	assert_decision(d, true, 10, 3, B0 + 2400 * MS, 0);
	d = chk(&f, "k", 4);
	assert_decision(d, false, 10, 3, B0 + 2400 * MS, 10 * MS);
	fx_at(&f, B0 + 1360 * MS);
	d = chk(&f, "k", 4);
	assert_decision(d, true, 10, 0, B0 + 2400 * MS, 0);
	fx_close(&f);
}

/*
 * Fractional estimates and a retry that is not a whole ms.
 *   B0        cost 3 -> bucket c0 = 3
 *   B0+500ms  cost 5 -> bucket c0+5 = 5
 *   B0+1010ms (c = c0+10, e = 10ms): full 5, old 3, est = 5 + 2.7 = 7.7
 */
static void test_sliding_window_fractions(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-window:10/1s", B0);
	d = chk(&f, "k", 3);
	assert_decision(d, true, 10, 7, B0 + 1100 * MS, 0);
	fx_at(&f, B0 + 500 * MS);
	d = chk(&f, "k", 5);
	assert_decision(d, true, 10, 2, B0 + 1600 * MS, 0);

	fx_at(&f, B0 + 1010 * MS);
	/* floor(10 - 7.7) = 2 */
	d = peek(&f, "k");
	assert_decision(d, true, 10, 2, B0 + 2100 * MS, 0);
	/* Cost 3: D = 0.7 <= 2.7: ceil(0.7 * 100ms / 3) = 23333334 ns. */
	d = chk(&f, "k", 3);
	assert_decision(d, false, 10, 2, B0 + 2100 * MS, 23333334);
	/* Cost 6: D = 3.7 > 2.7: the next bucket, 90 ms. */
	d = chk(&f, "k", 6);
	assert_decision(d, false, 10, 2, B0 + 2100 * MS, 90 * MS);
	/* Cost 2 fits: floor(10 - 7.7 - 2) = 0. */
	d = chk(&f, "k", 2);
	assert_decision(d, true, 10, 0, B0 + 2100 * MS, 0);
	/* est = 9.7: cost 1 has D = 0.7 again. */
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 23333334);
	fx_at(&f, B0 + 1010 * MS + 23333333);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2100 * MS, 1);
	fx_at(&f, B0 + 1010 * MS + 23333334);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 10, 0, B0 + 2100 * MS, 0);
	fx_close(&f);
}

/* S defaults to 10; buckets=S sets w = W / S; W must be a multiple of S. */
static void test_sliding_window_buckets(void **state)
{
	struct tk_clock *clk;
	struct tk_limiter *a, *b;
	struct tk_decision da, db;
	struct fx f;
	uint64_t seed = 0x5b0c4e75ull, now = B0, cost;
	int i;

	(void)state;
	fx_open(&f, "sliding-window:10/1s", B0 + 250 * MS);
	da = chk(&f, "k", 1);
	assert_decision(da, true, 10, 9, B0 + 1300 * MS, 0);
	fx_close(&f);
	fx_open(&f, "sliding-window:10/1s,buckets=4", B0 + 250 * MS);
	da = chk(&f, "k", 1);
	assert_decision(da, true, 10, 9, B0 + 1500 * MS, 0);
	fx_close(&f);
	fx_open(&f, "sliding-window:10/1s,buckets=1", B0 + 250 * MS);
	da = chk(&f, "k", 4);
	assert_decision(da, true, 10, 6, B0 + 2 * SEC, 0);
	/* S = 1: at B0 + 1.25 s the old bucket weighs 0.75: est = 3. */
	fx_at(&f, B0 + 1250 * MS);
	da = peek(&f, "k");
	assert_decision(da, true, 10, 7, B0 + 3 * SEC, 0);
	fx_close(&f);

	/* The default and an explicit buckets=10 decide alike. */
	assert_rc(tk_clock_manual_new(&clk, now), 0);
	assert_rc(open_on(&a, "sliding-window:6/1s", clk), 0);
	assert_rc(open_on(&b, "sliding-window:6/1s,buckets=10", clk), 0);
	for (i = 0; i < 500; i++) {
		now += rnd_range(&seed, 0, 150 * MS);
		assert_rc(tk_clock_set(clk, now), 0);
		cost = rnd_range(&seed, 1, 3);
		assert_rc(check_rc(a, "k", cost, &da), 0);
		assert_rc(check_rc(b, "k", cost, &db), 0);
		assert_same_decision(db, da);
		assert_rc(peek_rc(a, "k", &da), 0);
		assert_rc(peek_rc(b, "k", &db), 0);
		assert_same_decision(db, da);
	}
	tk_limiter_close(a);
	tk_limiter_close(b);
	tk_clock_free(clk);

	/* Invalid: W not a multiple of S ns, S = 0, L = 0, W = 0. */
	assert_rc(open_rc("sliding-window:10/1s,buckets=3"), -EINVAL);
	assert_rc(open_rc("sliding-window:10/1000000001ns"), -EINVAL);
	assert_rc(open_rc("sliding-window:10/10ns,buckets=20"), -EINVAL);
	assert_rc(open_rc("sliding-window:10/1s,buckets=0"), -EINVAL);
	assert_rc(open_rc("sliding-window:0/1s"), -EINVAL);
	assert_rc(open_rc("sliding-window:10/0s"), -EINVAL);
	/* Valid corner cases: w = 1 ns. */
	assert_rc(open_rc("sliding-window:10/10ns"), 0);
	assert_rc(open_rc("sliding-window:10/7ns,buckets=7"), 0);
}

static void test_sliding_window_cost_range(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-window:10/1s", B0);
	assert_rc(check_rc(f.l, "k", 11, &d), -ERANGE);
	assert_rc(check_rc(f.l, "k", 0, &d), -EINVAL);
	d = chk(&f, "k", 10);
	assert_decision(d, true, 10, 0, B0 + 1100 * MS, 0);
	assert_rc(check_rc(f.l, "k", 11, &d), -ERANGE);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 1100 * MS, 100 * MS);
	fx_close(&f);
}

/*
 * Buckets stamped later than now count in full after a backward jump.
 * sliding-window:10/1s, cost 10 at B0 + 500 ms (bucket c0+5).
 */
static void test_sliding_window_backward_jump(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-window:10/1s", B0 + 500 * MS);
	d = chk(&f, "k", 10);
	assert_decision(d, true, 10, 0, B0 + 1600 * MS, 0);

	/*
	 * c = c0+4: full = 10 (tick c0+5 > c), old = 0: the next bucket.
	 * reset_at is when the later bucket leaves the window, (c0+6)w + W,
	 * not (c+1)w + W.
	 */
	fx_at(&f, B0 + 450 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 1600 * MS, 50 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 10, 0, B0 + 1600 * MS, 50 * MS);
	fx_at(&f, B0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 1600 * MS, 100 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 10, 0, B0 + 1600 * MS, 100 * MS);

	/* Forward again: bucket c0+5 is full weight up to c0+14. */
	fx_at(&f, B0 + 1500 * MS - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2500 * MS, 1);
	/* c = c0+15, e = 0: old = 10 at full weight; D = 1: 10 ms. */
	fx_at(&f, B0 + 1500 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2600 * MS, 10 * MS);
	fx_at(&f, B0 + 1510 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 10, 0, B0 + 2600 * MS, 0);
	fx_close(&f);
}

/*
 * Far back: the ring holds S + 1 buckets, and tick c0 shares its slot
 * with tick c0 + 11 (S = 10).  A request admitted at c0 while the slot
 * holds the later bucket must not make the ring forget that bucket
 * (nothing counted may be forgotten early): at the latest time the key has
 * seen, everything admitted since still counts, as it would have if the
 * clock had stood still there.
 */
static void test_sliding_window_far_backward_jump(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-window:10/1s", B0 + 1100 * MS);
	d = chk(&f, "k", 5);
	assert_decision(d, true, 10, 5, B0 + 2200 * MS, 0);
	/* c = c0: full = 5 (the later bucket), old = 0: est = 5. */
	fx_at(&f, B0);
	d = chk(&f, "k", 5);
	assert_decision(d, true, 10, 0, B0 + 2200 * MS, 0);
	/* Ten units are booked now, wherever the ring keeps them. */
	d = chk(&f, "k", 1);
	assert_decision(d, false, 10, 0, B0 + 2200 * MS, 100 * MS);
	fx_at(&f, B0 + 50 * MS);
	d = peek(&f, "k");
	assert_false(d.allowed);
	assert_int_equal(d.remaining, 0);
	/* Back at the latest time: still ten, so denied. */
	fx_at(&f, B0 + 1100 * MS);
	d = chk(&f, "k", 1);
	assert_false(d.allowed);
	assert_int_equal(d.remaining, 0);
	fx_at(&f, B0 + 1199 * MS);
	d = chk(&f, "k", 1);
	assert_false(d.allowed);
	fx_close(&f);
}

/*
 * semantics.md: what no longer counts at the latest time the key has seen
 * is gone for good.  4 units at t1, 1 at B0 + 950 ms (which keeps the
 * state live), 1 at B0 + 1250 ms when t1's units count nothing any more
 * (the sliding window's tick c0 + 12 sits in another ring slot than
 * c0's), then back to t1: t1's units must not count again.
 */
static void test_dead_units_stay_dead(void **state)
{
	static const struct {
		const char *policy;
		uint64_t remaining, reset_at; /* back at t1 */
	} cases[] = {
		/* Only the later window's unit counts. */
		{ "fixed-window:5/1s", 4, B0 + 2 * SEC },
		{ "quota:5/1s", 4, B0 + 2 * SEC },
		/* The two later units count. */
		{ "sliding-window:5/1s", 3, B0 + 2300 * MS },
		{ "sliding-log:5/1s", 3, B0 + 1950 * MS },
	};
	const uint64_t t1 = B0 + 20 * MS;
	struct tk_decision d;
	struct fx f;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		fx_open(&f, cases[i].policy, t1);
		assert_true(chk(&f, "k", 4).allowed);
		fx_at(&f, B0 + 950 * MS);
		assert_true(chk(&f, "k", 1).allowed);
		fx_at(&f, B0 + 1250 * MS);
		assert_true(chk(&f, "k", 1).allowed);
		fx_at(&f, t1 + 10 * MS);
		d = peek(&f, "k");
		if (d.remaining != cases[i].remaining)
			fail_msg("%s: back at t1, remaining %llu, want %llu",
				 cases[i].policy,
				 (unsigned long long)d.remaining,
				 (unsigned long long)cases[i].remaining);
		assert_int_equal(d.reset_at, cases[i].reset_at);
		assert_true(chk(&f, "k", cases[i].remaining).allowed);
		assert_false(chk(&f, "k", 1).allowed);
		fx_close(&f);
	}
}

/* ------------------------------------------------------------------ */
/* 4. Sliding log                                                       */

static void test_sliding_log_exact(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-log:3/1s", B0);
	d = peek(&f, "k");
	assert_decision(d, true, 3, 3, B0, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, B0 + SEC, 0);
	fx_at(&f, B0 + 100 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 1, B0 + SEC, 0);
	fx_at(&f, B0 + 200 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, B0 + SEC, 0);

	/* Full: the k-th oldest stamp decides, k = count + cost - L. */
	fx_at(&f, B0 + 999 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + SEC, 1 * MS);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 3, 0, B0 + SEC, 101 * MS);
	d = chk(&f, "k", 3);
	assert_decision(d, false, 3, 0, B0 + SEC, 201 * MS);
	d = peek(&f, "k");
	assert_decision(d, false, 3, 0, B0 + SEC, 1 * MS);
	fx_at(&f, B0 + SEC - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + SEC, 1);

	/* At t + W the stamp t no longer counts. */
	fx_at(&f, B0 + SEC);
	d = peek(&f, "k");
	assert_decision(d, true, 3, 1, B0 + 1100 * MS, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, B0 + 1100 * MS, 0);
	d = peek(&f, "k");
	assert_decision(d, false, 3, 0, B0 + 1100 * MS, 100 * MS);
	/* Stamps B0+100ms, B0+200ms, B0+1s; cost 2: k = 2 -> 200 ms. */
	d = chk(&f, "k", 2);
	assert_decision(d, false, 3, 0, B0 + 1100 * MS, 200 * MS);

	/* All stamps dead: as a new key. */
	fx_at(&f, B0 + 5 * SEC);
	d = peek(&f, "k");
	assert_decision(d, true, 3, 3, B0 + 5 * SEC, 0);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 3, 1, B0 + 6 * SEC, 0);
	fx_at(&f, B0 + 5500 * MS);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 3, 1, B0 + 6 * SEC, 500 * MS);
	/* Stamps {5 s, 5 s, 5.5 s}: reset_at is still the oldest + W. */
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, B0 + 6 * SEC, 0);
	d = chk(&f, "k", 3);
	assert_decision(d, false, 3, 0, B0 + 6 * SEC, 1 * SEC);

	/* -ERANGE changes nothing. */
	assert_rc(check_rc(f.l, "k", 4, &d), -ERANGE);
	assert_rc(check_rc(f.l, "k", 0, &d), -EINVAL);
	d = peek(&f, "k");
	assert_decision(d, false, 3, 0, B0 + 6 * SEC, 500 * MS);
	fx_close(&f);
}

/* Stamps later than now (after a backward jump) are live. */
static void test_sliding_log_backward_jump(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "sliding-log:3/1s", B0 + 5 * SEC);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 3, 1, B0 + 6 * SEC, 0);
	fx_at(&f, B0 + 4500 * MS);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 3, 1, B0 + 6 * SEC, 1500 * MS);
	/* The new stamp is the oldest one now. */
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, B0 + 5500 * MS, 0);
	d = peek(&f, "k");
	assert_decision(d, false, 3, 0, B0 + 5500 * MS, 1 * SEC);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 3, 0, B0 + 5500 * MS, 1500 * MS);
	fx_at(&f, B0 + 5500 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, B0 + 6 * SEC, 0);
	fx_close(&f);
}

/*
 * The log keeps one stamp per admitted unit, so L is bounded; the bound
 * is documented in throttlekit(7).  100 must open and work exactly.
 */
static void test_sliding_log_limit_bound(void **state)
{
	struct tk_decision d;
	struct fx f;
	uint64_t k;

	(void)state;
	fx_open(&f, "sliding-log:100/1s", B0);
	for (k = 1; k <= 100; k++) {
		fx_at(&f, B0 + k * MS);
		d = chk(&f, "k", 1);
		assert_decision(d, true, 100, 100 - k, B0 + MS + SEC, 0);
	}
	d = chk(&f, "k", 1);
	assert_decision(d, false, 100, 0, B0 + MS + SEC, 901 * MS);
	d = chk(&f, "k", 100);
	assert_decision(d, false, 100, 0, B0 + MS + SEC, SEC);
	fx_at(&f, B0 + 1001 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 100, 0, B0 + 2 * MS + SEC, 0);
	fx_close(&f);

	assert_rc(open_rc("sliding-log:100000/1s"), -EINVAL);
	assert_rc(open_rc("sliding-log:18446744073709551615/1s"), -EINVAL);
	assert_rc(open_rc("sliding-log:0/1s"), -EINVAL);
	assert_rc(open_rc("sliding-log:5/0s"), -EINVAL);
}

/* ------------------------------------------------------------------ */
/* 5. Quota                                                             */

/* semantics.md's example: L = 3, 2026-05-28T12:00Z, month. */
static void test_quota_month_example(void **state)
{
	const uint64_t now = AT(1779969600);  /* 2026-05-28T12:00Z */
	const uint64_t june = AT(1780272000); /* 2026-06-01T00:00Z */
	const uint64_t july = AT(1782864000); /* 2026-07-01T00:00Z */
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "quota:3/month", now);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, june, 0);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 3, 0, june, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, june, june - now);
	d = peek(&f, "k");
	assert_decision(d, false, 3, 0, june, june - now);
	assert_rc(check_rc(f.l, "k", 4, &d), -ERANGE);
	fx_at(&f, june - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, june, 1);
	fx_at(&f, june);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, july, 0);
	/* Deny never consumes. */
	d = chk(&f, "k", 3);
	assert_decision(d, false, 3, 2, july, july - june);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 3, 0, july, 0);
	fx_close(&f);
}

static void test_quota_month_lengths(void **state)
{
	static const struct {
		uint64_t now, reset;
	} cases[] = {
		/* 2024-02-01T00:00Z: leap February ends 2024-03-01. */
		{ AT(1706745600), AT(1709251200) },
		/* 2024-02-29T12:00Z */
		{ AT(1709208000), AT(1709251200) },
		/* 2024-01-31T23:59:59.999999999Z */
		{ AT(1706745600) - 1, AT(1706745600) },
		/* 2100-02-15T00:00Z: 2100 is not a leap year. */
		{ AT(4106332800), AT(4107542400) },
		/* 2100-02-28T23:59:59.999999999Z */
		{ AT(4107542400) - 1, AT(4107542400) },
		/* 2100-03-15T00:00Z and 2101-01-15T00:00Z: past the century */
		{ AT(4108752000), AT(4110220800) },
		{ AT(4135190400), AT(4136659200) },
		/* 2000-02-10T00:00Z: 2000 is (divisible by 400). */
		{ AT(950140800), AT(951868800) },
		/* 2000-02-29T12:00Z: the last day of a 400-year era. */
		{ AT(951825600), AT(951868800) },
		/* 2000-03-01T00:00Z: the first day of the next era. */
		{ AT(951868800), AT(954547200) },
		/* 2023-12-31T12:00Z: the year rolls over. */
		{ AT(1704024000), AT(1704067200) },
	};
	struct tk_decision d;
	struct fx f;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		fx_open(&f, "quota:1/month", cases[i].now);
		d = chk(&f, "k", 1);
		assert_decision(d, true, 1, 0, cases[i].reset, 0);
		d = chk(&f, "k", 1);
		assert_decision(d, false, 1, 0, cases[i].reset,
				cases[i].reset - cases[i].now);
		fx_close(&f);
	}
	/* February 2100 has exactly 28 days. */
	fx_open(&f, "quota:1/month", AT(4105123200)); /* 2100-02-01 */
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, AT(4105123200) + 28 * DAY, 0);
	fx_close(&f);
	fx_open(&f, "quota:1/month", AT(1706745600)); /* 2024-02-01 */
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, AT(1706745600) + 29 * DAY, 0);
	fx_close(&f);
}

static void test_quota_offsets(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	/* +14:00: June starts at 2026-05-31T10:00Z. */
	fx_open(&f, "quota:1/month,offset=+14:00", AT(1780221600) - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, AT(1780221600), 0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 1, 0, AT(1780221600), 1);
	fx_at(&f, AT(1780221600));
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, AT(1782813600), 0);
	fx_close(&f);

	/* -14:00: June starts at 2026-06-01T14:00Z. */
	fx_open(&f, "quota:1/month,offset=-14:00", AT(1780322400) - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, AT(1780322400), 0);
	fx_at(&f, AT(1780322400));
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, AT(1782914400), 0);
	fx_close(&f);

	/* +05:30, days: 2026-05-28 ends at 18:30Z. */
	fx_open(&f, "quota:2/day,offset=+05:30", AT(1779993000) - 1);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 2, 0, AT(1779993000), 0);
	fx_at(&f, AT(1779993000));
	d = chk(&f, "k", 1);
	assert_decision(d, true, 2, 1, AT(1779993000) + DAY, 0);
	fx_close(&f);

	/* -03:45 days; +00:00 is UTC. */
	fx_open(&f, "quota:2/day,offset=-03:45", AT(1779969600));
	d = chk(&f, "k", 1);
	assert_decision(d, true, 2, 1,
			AT(1779969600) + 12 * HOUR + 3 * HOUR + 45 * MINUTE, 0);
	fx_close(&f);
	fx_open(&f, "quota:2/day,offset=+00:00", AT(1779969600));
	d = chk(&f, "k", 1);
	assert_decision(d, true, 2, 1, AT(1779969600) + 12 * HOUR, 0);
	fx_close(&f);
	fx_open(&f, "quota:2/day", B0); /* 2023-11-14T22:13:20Z */
	d = chk(&f, "k", 1);
	assert_decision(d, true, 2, 1, AT(1700006400), 0);
	fx_close(&f);

	assert_rc(open_rc("quota:1/month,offset=+14:01"), -EINVAL);
	assert_rc(open_rc("quota:1/month,offset=-14:01"), -EINVAL);
	assert_rc(open_rc("quota:1/day,offset=+15:00"), -EINVAL);
	assert_rc(open_rc("quota:1/day,offset=+05:60"), -EINVAL);
	assert_rc(open_rc("quota:1/day,offset=+14:00"), 0);
	assert_rc(open_rc("quota:1/day,offset=-14:00"), 0);
}

static void test_quota_weeks(void **state)
{
	const uint64_t thu = AT(1779969600);	 /* Thu 2026-05-28T12:00Z */
	const uint64_t sat0 = AT(1780099200);	 /* Sat 2026-05-30T00:00Z */
	const uint64_t sun0 = AT(1780185600);	 /* Sun 2026-05-31T00:00Z */
	const uint64_t mon0 = AT(1780272000);	 /* Mon 2026-06-01T00:00Z */
	const uint64_t sun12 = sun0 + 12 * HOUR; /* Sun 2026-05-31T12:00Z */
	struct tk_decision d;
	struct fx f;

	(void)state;
	/* Weeks start on Monday by default. */
	fx_open(&f, "quota:1/week", thu);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, mon0, 0);
	fx_at(&f, sun12);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 1, 0, mon0, 12 * HOUR);
	fx_at(&f, mon0);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, mon0 + 7 * DAY, 0);
	fx_close(&f);

	fx_open(&f, "quota:1/week,week-start=mon", thu);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, mon0, 0);
	fx_close(&f);

	/* week-start=sun moves the boundary to Sunday 00:00. */
	fx_open(&f, "quota:1/week,week-start=sun", thu);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, sun0, 0);
	fx_at(&f, sun0 - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 1, 0, sun0, 1);
	fx_at(&f, sun12);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, sun0 + 7 * DAY, 0);
	fx_close(&f);

	fx_open(&f, "quota:1/week,week-start=sat", thu);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, sat0, 0);
	fx_close(&f);
	/* On the first day of the week itself. */
	fx_open(&f, "quota:1/week,week-start=thu", thu);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, thu - 12 * HOUR + 7 * DAY, 0);
	fx_close(&f);
	/* With an offset: Monday 00:00 at +02:00 is Sunday 22:00Z. */
	fx_open(&f, "quota:1/week,offset=+02:00", thu);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, mon0 - 2 * HOUR, 0);
	fx_close(&f);

	assert_rc(open_rc("quota:1/week,week-start=xyz"), -EINVAL);
}

static void test_quota_anchored(void **state)
{
	struct tk_decision d;
	struct fx f;

	(void)state;
	/* start = anchor + floor((now - anchor) / P) * P */
	fx_open(&f, "quota:3/10s,anchor=1700000003000000000", B0 + 25 * SEC);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, B0 + 33 * SEC, 0);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 3, 0, B0 + 33 * SEC, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + 33 * SEC, 8 * SEC);
	fx_at(&f, B0 + 33 * SEC - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, B0 + 33 * SEC, 1);
	fx_at(&f, B0 + 33 * SEC);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, B0 + 43 * SEC, 0);
	/* Other keys, at other times: the period just before the anchor
	 * is [anchor - P, anchor). */
	fx_at(&f, B0 + 1 * SEC);
	d = chk(&f, "a", 1);
	assert_decision(d, true, 3, 2, B0 + 3 * SEC, 0);
	fx_at(&f, B0 + 3 * SEC - 1);
	d = chk(&f, "b", 1);
	assert_decision(d, true, 3, 2, B0 + 3 * SEC, 0);
	fx_at(&f, B0 + 3 * SEC);
	d = chk(&f, "c", 1);
	assert_decision(d, true, 3, 2, B0 + 13 * SEC, 0);
	assert_rc(check_rc(f.l, "c", 4, &d), -ERANGE);
	fx_close(&f);

	/* A period that does not divide anything round. */
	fx_open(&f, "quota:2/7777ns,anchor=5", B0);
	/* (B0 - 5) mod 7777 worked out: B0 = 1.7e18. */
	{
		uint64_t start = 5 + (B0 - 5) / 7777 * 7777;

		d = chk(&f, "k", 2);
		assert_decision(d, true, 2, 0, start + 7777, 0);
		d = chk(&f, "k", 1);
		assert_decision(d, false, 2, 0, start + 7777,
				start + 7777 - B0);
	}
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* 6. Peek                                                              */

/*
 * For each algorithm: peeking twice gives the same, never changes what a
 * later check says (a twin limiter sees the same checks without the
 * peeks), allowed = remaining >= 1, retry_after = 0 exactly when allowed,
 * remaining is the largest cost a check admits now, and retry_after is
 * when one unit becomes available (exactly, except for the sliding
 * window's next-bucket case, which is only a lower bound).
 */
static void test_peek_each_algorithm(void **state)
{
	static const struct {
		const char *policy;
		uint64_t L;
		bool exact_retry;
	} cases[] = {
		{ "token-bucket:capacity=5,refill=10/1s", 5, true },
		{ "fixed-window:5/1s", 5, true },
		{ "sliding-window:5/1s", 5, false },
		{ "sliding-window:7/1s,buckets=4", 7, false },
		{ "sliding-log:5/1s", 5, true },
		{ "quota:5/day,offset=+02:00", 5, true },
		{ "quota:5/700ms,anchor=1699999999999999999", 5, true },
	};
	struct tk_clock *clk;
	struct tk_limiter *a, *b;
	struct tk_decision p1, p2, da, db;
	uint64_t seed, now, L, cost, r;
	size_t i;
	int step;

#define BOTH_CHECK(c)                                                          \
	do {                                                                   \
		assert_rc(check_rc(a, "k", (c), &da), 0);                      \
		assert_rc(check_rc(b, "k", (c), &db), 0);                      \
		if (!same_decision(&da, &db))                                  \
			fail_msg("%s step %d cost %llu at B0%+lld: peeks "     \
				 "changed a check: {%d,%llu,%llu,%llu,%llu}"   \
				 " vs {%d,%llu,%llu,%llu,%llu}",               \
				 cases[i].policy, step,                        \
				 (unsigned long long)(c),                      \
				 (long long)(now - B0), da.allowed,            \
				 (unsigned long long)da.limit,                 \
				 (unsigned long long)da.remaining,             \
				 (unsigned long long)da.reset_at,              \
				 (unsigned long long)da.retry_after,           \
				 db.allowed, (unsigned long long)db.limit,     \
				 (unsigned long long)db.remaining,             \
				 (unsigned long long)db.reset_at,              \
				 (unsigned long long)db.retry_after);          \
	} while (0)

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		seed = 0x9ee4ull + i;
		L = cases[i].L;
		now = B0 + 17 * MS;
		assert_rc(tk_clock_manual_new(&clk, now), 0);
		assert_rc(open_on(&a, cases[i].policy, clk), 0);
		assert_rc(open_on(&b, cases[i].policy, clk), 0);

		/* A key never seen: everything is available. */
		assert_rc(peek_rc(a, "k", &p1), 0);
		assert_true(p1.allowed);
		assert_int_equal(p1.limit, L);
		assert_int_equal(p1.remaining, L);
		assert_int_equal(p1.retry_after, 0);

		for (step = 0; step < 300; step++) {
			r = rnd_range(&seed, 0, 9);
			now += r < 3   ? 0
			       : r < 8 ? rnd_range(&seed, 1, 150 * MS)
				       : rnd_range(&seed, 300 * MS, 1500 * MS);
			assert_rc(tk_clock_set(clk, now), 0);

			assert_rc(peek_rc(a, "k", &p1), 0);
			assert_rc(peek_rc(a, "k", &p2), 0);
			assert_same_decision(p2, p1);
			assert_int_equal(p1.limit, L);
			assert_true(p1.remaining <= L);
			assert_int_equal(p1.allowed, p1.remaining >= 1);
			assert_int_equal(p1.retry_after == 0, p1.allowed);

			switch (step % 3) {
			case 0: /* any cost */
				cost = rnd_range(&seed, 1, L);
				BOTH_CHECK(cost);
				break;
			case 1: /* remaining is the largest admissible cost */
				if (p1.remaining < L) {
					BOTH_CHECK(p1.remaining + 1);
					if (da.allowed)
						fail_msg(
							"%s step %d: peek "
							"remaining %llu but "
							"cost %llu passed",
							cases[i].policy, step,
							(unsigned long long)
								p1.remaining,
							(unsigned long long)p1
									.remaining +
								1);
				}
				if (p1.remaining >= 1) {
					BOTH_CHECK(p1.remaining);
					if (!da.allowed)
						fail_msg("%s step %d: peek "
							 "remaining %llu but "
							 "that cost was denied",
							 cases[i].policy, step,
							 (unsigned long long)
								 p1.remaining);
				}
				break;
			default: /* retry_after: one unit then, not before */
				if (p1.allowed)
					break;
				now += p1.retry_after - 1;
				assert_rc(tk_clock_set(clk, now), 0);
				BOTH_CHECK(1);
				if (da.allowed)
					fail_msg("%s step %d: allowed 1 ns "
						 "before peek's retry_after",
						 cases[i].policy, step);
				if (!cases[i].exact_retry)
					break;
				now += 1;
				assert_rc(tk_clock_set(clk, now), 0);
				BOTH_CHECK(1);
				if (!da.allowed)
					fail_msg("%s step %d: denied at peek's "
						 "retry_after",
						 cases[i].policy, step);
				break;
			}
		}
		tk_limiter_close(a);
		tk_limiter_close(b);
		tk_clock_free(clk);
	}
#undef BOTH_CHECK
}

/* ------------------------------------------------------------------ */
/* 7. Policy strings                                                    */

static void test_policy_parse_errors(void **state)
{
	static const struct {
		const char *text;
		int rc;
		size_t lo, hi; /* err.position within [lo, hi] */
	} cases[] = {
		{ "gcra:10/5x", -EINVAL, 8, 9 },
		{ "fixed-window:10/1q", -EINVAL, 16, 17 },
		{ "quota:5/fortnight", -EINVAL, 8, 8 },
		{ "sliding-log:5/1s,color=red", -EINVAL, 16, 17 },
		{ "quota:5/month,offset=+15:00", -EINVAL, 14, 26 },
		{ "quota:5/month,offset=+14:01", -EINVAL, 14, 26 },
		{ "quota:5/week,week-start=xyz", -EINVAL, 13, 24 },
		{ "fixed-window:10/0s", -EINVAL, 0, 18 },
		{ "fixed-window:0/1s", -EINVAL, 0, 17 },
		{ "sliding-window:10/1s,buckets=3", -EINVAL, 0, 30 },
		{ "sliding-log:100000/1s", -EINVAL, 0, 21 },
		{ "token-bucket:capacity=0,refill=1/s", -EINVAL, 0, 34 },
		{ "token-bucket:capacity=5,refill=3/2ns", -EINVAL, 0, 36 },
		{ "quota:0/day", -EINVAL, 0, 11 },
		{ "nosuch:1/s", -EINVAL, 0, 0 },
	};
	struct tk_parse_error err;
	struct tk_policy *p;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(&err, 0, sizeof(err));
		err.position = 12345;
		kit_parse_fails(cases[i].text, cases[i].rc, &err);
		if (cases[i].rc == -EINVAL &&
		    (err.position < cases[i].lo || err.position > cases[i].hi))
			fail_msg("tk_policy_parse(\"%s\"): position %zu, want "
				 "within [%zu, %zu] (message \"%s\")",
				 cases[i].text, err.position, cases[i].lo,
				 cases[i].hi, err.message);
		if (cases[i].rc == -EINVAL && err.message[0] == '\0')
			fail_msg("tk_policy_parse(\"%s\"): empty message",
				 cases[i].text);
	}
	/* err may be NULL. */
	p = NULL;
	assert_rc(tk_policy_parse(&p, "gcra:10/5x", NULL), -EINVAL);
	tk_policy_free(p);
}

static void test_policy_round_trip(void **state)
{
	static const char *const texts[] = {
		"gcra:10/1s",
		"gcra:100/s",
		"gcra:10/1s,burst=5",
		"gcra:5/15m",
		"token-bucket:capacity=20,refill=5/1s",
		"token-bucket:capacity=3,refill=7/250ms",
		"fixed-window:100/1m",
		"fixed-window:5/13000000007ns",
		"sliding-window:10/1s",
		"sliding-window:10/1s,buckets=5",
		"sliding-window:10/7ns,buckets=7",
		"sliding-log:5/1s",
		"sliding-log:100/1h",
		"quota:1000/month",
		"quota:10/week",
		"quota:10/week,week-start=sun",
		"quota:10/day,offset=+05:30",
		"quota:10/day,offset=-14:00",
		"quota:10/month,offset=+14:00",
		"quota:7/1h,anchor=1700000000000000000",
		"quota:7/7777ns,anchor=5",
		"all(gcra:10/1s,burst=5,fixed-window:100/1m)",
		"any(sliding-log:5/1s,quota:100/day,offset=+01:00)",
		"all(sliding-window:10/1s,buckets=5,token-bucket:capacity=2,"
		"refill=1/s)",
	};
	struct tk_parse_error err;
	struct tk_policy *p, *q;
	char a[512], b[512], small[4];
	size_t i;
	int n, m, rc;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(texts); i++) {
		p = q = NULL;
		rc = tk_policy_parse(&p, texts[i], &err);
		if (rc != 0)
			fail_msg("tk_policy_parse(\"%s\") = %d (%s) at %zu: %s",
				 texts[i], rc, tk_strerrorname(rc),
				 err.position, err.message);
		n = tk_policy_format(p, a, sizeof(a));
		if (n <= 0 || (size_t)n != strlen(a))
			fail_msg("tk_policy_format(\"%s\") = %d, \"%s\"",
				 texts[i], n, a);
		rc = tk_policy_parse(&q, a, &err);
		if (rc != 0)
			fail_msg("\"%s\" formats as \"%s\", which does not "
				 "parse: %d (%s) at %zu: %s",
				 texts[i], a, rc, tk_strerrorname(rc),
				 err.position, err.message);
		m = tk_policy_format(q, b, sizeof(b));
		if (m != n || strcmp(a, b) != 0)
			fail_msg("\"%s\" formats as \"%s\", which formats as "
				 "\"%s\"",
				 texts[i], a, b);
		assert_int_equal(tk_policy_dimensions(p),
				 strncmp(texts[i], "all(", 4) == 0 ||
						 strncmp(texts[i], "any(", 4) ==
							 0
					 ? 2
					 : 1);
		/* snprintf semantics on a short buffer. */
		memset(small, 'x', sizeof(small));
		assert_int_equal(tk_policy_format(p, small, sizeof(small)), n);
		assert_int_equal(small[3], '\0');
		assert_memory_equal(small, a, 3);
		/* The formatted string opens a limiter too. */
		assert_rc(open_rc(a), 0);
		tk_policy_free(p);
		tk_policy_free(q);
	}

	/* A bare unit formats with an explicit count. */
	p = NULL;
	assert_rc(tk_policy_parse(&p, "gcra:100/s", &err), 0);
	tk_policy_format(p, a, sizeof(a));
	if (strstr(a, "100/1s") == NULL)
		fail_msg("\"gcra:100/s\" formats as \"%s\"", a);
	tk_policy_free(p);
	p = NULL;
	assert_rc(tk_policy_parse(&p, "sliding-log:5/s", &err), 0);
	tk_policy_format(p, a, sizeof(a));
	if (strstr(a, "5/1s") == NULL)
		fail_msg("\"sliding-log:5/s\" formats as \"%s\"", a);
	tk_policy_free(p);
}

/* ------------------------------------------------------------------ */
/* 8. Reference models and property tests                               */

enum model_kind { M_FIXED, M_SLIDING, M_LOG, M_QUOTA };
enum cadence { CAD_ANCHORED, CAD_DAY, CAD_WEEK, CAD_MONTH };

#define NKEYS 4
#define SW_SMAX 32
#define SW_MAXB (2 * SW_SMAX + 8)

static const char *const key_names[NKEYS] = { "k0", "key-1", "\x01k2",
					      "a much longer key number 3" };

struct sw_bucket {
	uint64_t tick, count;
};

struct mkey {
	/* fixed window, quota: the window state */
	bool has;
	uint64_t start, end, count;
	/* latest op time since the state was last written (FW, SW, quota) */
	uint64_t seen;
	/* sliding window: buckets with a count, by tick */
	struct sw_bucket b[SW_MAXB];
	size_t nb;
	uint64_t h; /* highest tick written since the key was reset */
	/* sliding log: stamps, ascending, all live at the latest op time */
	uint64_t *st;
	size_t n, cap;
	/* latest t + W of a stamp the library may have forgotten */
	uint64_t dead_max;
};

struct model {
	enum model_kind kind;
	uint64_t L, W;
	uint64_t S, w;	  /* sliding window */
	enum cadence cad; /* quota */
	int64_t off_ns;
	int wstart; /* tm_wday of a week's first day (0 = Sunday) */
	uint64_t anchor;
	struct mkey k[NKEYS];
};

static void model_init(struct model *m, enum model_kind kind, uint64_t L,
		       uint64_t W)
{
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->L = L;
	m->W = W;
}

static void model_reset_key(struct model *m, int key)
{
	struct mkey *k = &m->k[key];
	uint64_t *st = k->st;
	size_t cap = k->cap;

	memset(k, 0, sizeof(*k));
	k->st = st;
	k->cap = cap;
}

static void model_free(struct model *m)
{
	int i;

	for (i = 0; i < NKEYS; i++)
		free(m->k[i].st);
}

/* The window containing @now: [*start, *end). */
static void model_period(const struct model *m, uint64_t now, uint64_t *start,
			 uint64_t *end)
{
	struct tm tm, a, b;
	time_t secs, ts, te;
	int64_t local;
	i128 d, q;

	if (m->kind == M_FIXED) {
		*start = now / m->W * m->W;
		*end = *start + m->W;
		return;
	}
	if (m->cad == CAD_ANCHORED) {
		d = (i128)now - (i128)m->anchor;
		q = d / (i128)m->W;
		if (d % (i128)m->W < 0)
			q--;
		*start = (uint64_t)((i128)m->anchor + q * (i128)m->W);
		*end = *start + m->W;
		return;
	}
	/* Civil time at the offset: the UTC calendar of now + offset. */
	local = (int64_t)now + m->off_ns;
	secs = (time_t)(local / (int64_t)SEC);
	if (gmtime_r(&secs, &tm) == NULL)
		fail_msg("gmtime_r(%lld) failed", (long long)secs);
	a = tm;
	a.tm_hour = a.tm_min = a.tm_sec = 0;
	a.tm_isdst = 0;
	if (m->cad == CAD_WEEK)
		a.tm_mday -= (tm.tm_wday - m->wstart + 7) % 7;
	else if (m->cad == CAD_MONTH)
		a.tm_mday = 1;
	b = a;
	if (m->cad == CAD_DAY)
		b.tm_mday += 1;
	else if (m->cad == CAD_WEEK)
		b.tm_mday += 7;
	else
		b.tm_mon += 1;
	ts = timegm(&a);
	te = timegm(&b);
	*start = (uint64_t)((int64_t)ts * (int64_t)SEC - m->off_ns);
	*end = (uint64_t)((int64_t)te * (int64_t)SEC - m->off_ns);
}

/* Fixed window and quota: semantics.md's fixed-window rule. */
static int window_eval(struct model *m, int key, uint64_t now, uint64_t cost,
		       bool is_peek, bool commit, struct tk_decision *d)
{
	struct mkey *k = &m->k[key];
	uint64_t ws, we, s, e, count;

	model_period(m, now, &ws, &we);
	/* start' = max(ws, state.start) */
	if (k->has && k->start > ws) {
		s = k->start;
		e = k->end;
	} else {
		s = ws;
		e = we;
	}
	count = k->has && k->start == s ? k->count : 0;
	d->limit = m->L;
	d->reset_at = e;
	if (is_peek) {
		d->remaining = m->L - count;
		d->allowed = d->remaining >= 1;
		d->retry_after = d->allowed ? 0 : e - now;
		return 0;
	}
	if (cost > m->L)
		return -ERANGE;
	if (count + cost <= m->L) {
		d->allowed = true;
		d->remaining = m->L - count - cost;
		d->retry_after = 0;
		if (!commit)
			return 0;
		k->has = true;
		k->start = s;
		k->end = e;
		k->count = count + cost;
		k->seen = now;
	} else {
		d->allowed = false;
		d->remaining = m->L - count;
		d->retry_after = e - now;
	}
	return 0;
}

/* Sliding window: full (ticks >= c - S + 1, later ones included), old. */
static void sw_sums(const struct model *m, const struct mkey *k, uint64_t c,
		    uint64_t *full, uint64_t *old)
{
	size_t i;

	*full = *old = 0;
	for (i = 0; i < k->nb; i++) {
		if (k->b[i].tick + m->S >= c + 1)
			*full += k->b[i].count;
		else if (k->b[i].tick + m->S == c)
			*old += k->b[i].count;
	}
}

/* max(0, floor(L - est - extra)) with est = full + old * (w - e) / w. */
static uint64_t sw_floor_left(const struct model *m, uint64_t full,
			      uint64_t old, uint64_t e, uint64_t extra)
{
	i128 num = (i128)m->L * (i128)m->w - (i128)(full + extra) * (i128)m->w -
		   (i128)old * (i128)(m->w - e);

	return num <= 0 ? 0 : (uint64_t)(num / (i128)m->w);
}

/* The deny retry formula of semantics.md, over the integers. */
static uint64_t sw_retry(const struct model *m, uint64_t full, uint64_t old,
			 uint64_t cost, uint64_t c, uint64_t e, uint64_t now)
{
	/* Dw = D * w = (est + cost - L) * w, positive on a denial. */
	i128 dw = (i128)(full + cost) * (i128)m->w +
		  (i128)old * (i128)(m->w - e) - (i128)m->L * (i128)m->w;
	i128 r;

	if (dw <= 0)
		fail_msg("model: sw_retry on an admissible request");
	/* D <= old * (w - e) / w  <=>  D * w <= old * (w - e) */
	if (old > 0 && dw <= (i128)old * (i128)(m->w - e))
		r = (dw + (i128)old - 1) / (i128)old; /* ceil(D * w / old) */
	else
		r = (i128)((c + 1) * m->w) - (i128)now;
	return r < 1 ? 1 : (uint64_t)r;
}

static int sliding_eval(struct model *m, int key, uint64_t now, uint64_t cost,
			bool is_peek, bool commit, struct tk_decision *d)
{
	struct mkey *k = &m->k[key];
	uint64_t c = now / m->w, e = now - c * m->w, full, old, hi;
	size_t i, j;
	bool found;

	sw_sums(m, k, c, &full, &old);
	d->limit = m->L;
	/* (c + 1) * w + W, or later if a bucket above c has a count. */
	hi = c;
	for (i = 0; i < k->nb; i++)
		hi = max_u64(hi, k->b[i].tick);
	d->reset_at = (hi + 1) * m->w + m->W;
	if (is_peek) {
		d->remaining = sw_floor_left(m, full, old, e, 0);
		d->allowed = d->remaining >= 1;
		d->retry_after =
			d->allowed ? 0 : sw_retry(m, full, old, 1, c, e, now);
		return 0;
	}
	if (cost > m->L)
		return -ERANGE;
	/* allowed iff (full + cost) * w + old * (w - e) <= L * w */
	if ((u128)(full + cost) * m->w + (u128)old * (m->w - e) <=
	    (u128)m->L * m->w) {
		d->allowed = true;
		d->remaining = sw_floor_left(m, full, old, e, cost);
		d->retry_after = 0;
		if (!commit)
			return 0;
		found = false;
		for (i = 0; i < k->nb; i++) {
			if (k->b[i].tick == c) {
				k->b[i].count += cost;
				found = true;
			}
		}
		if (!found) {
			if (k->nb == SW_MAXB)
				fail_msg("model: too many buckets");
			k->b[k->nb].tick = c;
			k->b[k->nb].count = cost;
			k->nb++;
		}
		k->h = max_u64(k->h, c);
		k->seen = now;
		/* Ticks below h - 2S - 2 can never matter again. */
		for (i = j = 0; i < k->nb; i++)
			if (k->b[i].tick + 2 * m->S + 2 >= k->h)
				k->b[j++] = k->b[i];
		k->nb = j;
	} else {
		d->allowed = false;
		d->remaining = sw_floor_left(m, full, old, e, 0);
		d->retry_after = sw_retry(m, full, old, cost, c, e, now);
	}
	return 0;
}

/* Sliding log: forget stamps dead at @now (they stay dead unless the
 * clock goes back below dead_max, which resets the key first). */
static void log_age(struct model *m, struct mkey *k, uint64_t now)
{
	size_t i = 0;

	while (i < k->n && k->st[i] + m->W <= now) {
		k->dead_max = max_u64(k->dead_max, k->st[i] + m->W);
		i++;
	}
	if (i > 0) {
		memmove(k->st, k->st + i, (k->n - i) * sizeof(k->st[0]));
		k->n -= i;
	}
}

static int log_eval(struct model *m, int key, uint64_t now, uint64_t cost,
		    bool is_peek, bool commit, struct tk_decision *d)
{
	struct mkey *k = &m->k[key];
	uint64_t count, kth, need = is_peek ? 1 : cost;
	size_t pos, i;

	log_age(m, k, now); /* every stamp left has now < t + W */
	count = k->n;
	d->limit = m->L;
	if (!is_peek && cost > m->L)
		return -ERANGE;
	if (count + need <= m->L) {
		d->allowed = true;
		d->remaining = m->L - count - (is_peek ? 0 : cost);
		d->retry_after = 0;
		if (is_peek || !commit) {
			d->reset_at = count ? k->st[0] + m->W : now;
			return 0;
		}
		if (k->n + cost > k->cap) {
			k->cap = 2 * (k->n + cost) + 16;
			k->st = realloc(k->st, k->cap * sizeof(k->st[0]));
			assert_non_null(k->st);
		}
		/* Insert cost stamps "now", keeping the order. */
		for (pos = 0; pos < k->n && k->st[pos] <= now; pos++)
			;
		memmove(k->st + pos + cost, k->st + pos,
			(k->n - pos) * sizeof(k->st[0]));
		for (i = 0; i < cost; i++)
			k->st[pos + i] = now;
		k->n += cost;
		d->reset_at = k->st[0] + m->W;
		return 0;
	}
	/* Denied (or a peek with nothing available). */
	d->allowed = false;
	d->remaining = m->L > count ? m->L - count : 0;
	kth = k->st[count + need - m->L - 1];
	d->retry_after = max_u64(1, kth + m->W - now);
	d->reset_at = k->st[0] + m->W;
	return 0;
}

/* A check (@commit: the model takes it), or a peek (@is_peek). */
static int model_eval_as(struct model *m, int key, uint64_t now, uint64_t cost,
			 bool is_peek, bool commit, struct tk_decision *d)
{
	memset(d, 0, sizeof(*d));
	switch (m->kind) {
	case M_FIXED:
	case M_QUOTA:
		return window_eval(m, key, now, cost, is_peek, commit, d);
	case M_SLIDING:
		return sliding_eval(m, key, now, cost, is_peek, commit, d);
	default:
		return log_eval(m, key, now, cost, is_peek, commit, d);
	}
}

static int model_eval(struct model *m, int key, uint64_t now, uint64_t cost,
		      bool is_peek, struct tk_decision *d)
{
	return model_eval_as(m, key, now, cost, is_peek, !is_peek, d);
}

/*
 * forecast(@cost): allowed and retry_after as a check of @cost would say,
 * the other fields as a peek reports them (tk_limiter_forecast(3)).
 */
static int model_forecast(struct model *m, int key, uint64_t now, uint64_t cost,
			  struct tk_decision *d)
{
	struct tk_decision c;
	int rc = model_eval_as(m, key, now, cost, false, false, &c);

	if (rc != 0)
		return rc;
	model_eval_as(m, key, now, 0, true, false, d);
	d->allowed = c.allowed;
	d->retry_after = c.retry_after;
	return 0;
}

/* Every operation at @now is a time the store has seen. */
static void model_observe(struct model *m, uint64_t now)
{
	int i;

	for (i = 0; i < NKEYS; i++) {
		m->k[i].seen = max_u64(m->k[i].seen, now);
		if (m->kind == M_LOG)
			log_age(m, &m->k[i], now);
	}
}

/*
 * Before going back to @to: could @key's outcome depend on state the
 * library was free to forget?  (See the comment at the top.)
 */
static bool model_must_reset(const struct model *m, int key, uint64_t to)
{
	const struct mkey *k = &m->k[key];
	uint64_t hi = 0, c;
	size_t i;

	switch (m->kind) {
	case M_FIXED:
	case M_QUOTA:
		/* Expired at a time seen since written: maybe dropped. */
		return k->has && k->end <= k->seen;
	case M_SLIDING:
		if (k->nb == 0)
			return false;
		for (i = 0; i < k->nb; i++)
			hi = max_u64(hi, k->b[i].tick);
		if ((u128)(hi + m->S + 1) * m->w <= k->seen)
			return true; /* expired: maybe dropped */
		c = to / m->w;
		/* The ring holds S + 1 buckets: ticks below h - S may have
		 * been overwritten; any that would count at c make it
		 * ambiguous, and so does writing below h - S. */
		if (c + m->S < k->h)
			return true;
		for (i = 0; i < k->nb; i++)
			if (k->b[i].tick + m->S >= c &&
			    k->b[i].tick + m->S + 1 <= k->h)
				return true;
		return false;
	default:
		return k->dead_max > to;
	}
}

/* Does @key hold state that still matters at @t? (for statistics) */
static bool model_live(const struct model *m, int key, uint64_t t)
{
	const struct mkey *k = &m->k[key];
	size_t i;

	switch (m->kind) {
	case M_FIXED:
	case M_QUOTA:
		return k->has && k->end > t;
	case M_SLIDING:
		for (i = 0; i < k->nb; i++)
			if ((u128)(k->b[i].tick + m->S + 1) * m->w > t)
				return true;
		return false;
	default:
		return k->n > 0;
	}
}

/* A boundary after @now worth landing on exactly. */
static uint64_t model_boundary(const struct model *m, uint64_t now,
			       uint64_t *seed)
{
	uint64_t s, e;
	const struct mkey *k;
	int key;

	switch (m->kind) {
	case M_FIXED:
	case M_QUOTA:
		model_period(m, now, &s, &e);
		return e;
	case M_SLIDING:
		if (rnd_range(seed, 0, 2) == 0)
			return (now / m->W + 1) * m->W;
		return (now / m->w + 1) * m->w;
	default:
		key = (int)rnd_range(seed, 0, NKEYS - 1);
		k = &m->k[key];
		if (k->n == 0)
			return now + m->W;
		s = k->st[rnd_range(seed, 0, k->n - 1)] + m->W;
		return s > now ? s : now + 1;
	}
}

struct prop_stats {
	uint64_t checks, denied, peeks, forecasts, eranges, jumps, live_jumps,
		jump_resets;
};

/*
 * Runs @nops random operations on @policy against @m.  Time moves by
 * @gran-sized steps (inside a bucket or window), by multiples of @scale,
 * lands exactly on (or next to) boundaries, idles, and jumps back (never
 * below @floor).  Every return code and decision field must match.
 */
static void run_property(struct model *m, const char *policy, uint64_t start,
			 uint64_t floor, uint64_t gran, uint64_t scale,
			 int nops, uint64_t seed, struct prop_stats *ps)
{
	const uint64_t seed0 = seed;
	const uint64_t ceiling = (1ull << 63) - 400ull * 366 * DAY;
	struct tk_decision got, want;
	char gs[200], ws[200];
	struct fx f;
	uint64_t now = start, to, back, r, cost, step, b;
	const char *what;
	int i, key, rc, want_rc, kk;
	bool live;

	fx_open(&f, policy, start);
	for (i = 0; i < nops; i++) {
		r = rnd_range(&seed, 0, 99);
		step = 0;
		if (r < 14) {
			; /* the same instant */
		} else if (r < 40) {
			step = rnd_range(&seed, 1, gran);
		} else if (r < 55) {
			b = model_boundary(m, now, &seed);
			r = rnd_range(&seed, 0, 9);
			step = (r < 7 ? b : r < 9 ? b - 1 : b + 1) - now;
		} else if (r < 75) {
			step = rnd_range(&seed, 1, scale);
		} else if (r < 83) {
			step = rnd_range(&seed, scale, 3 * scale);
		} else if (r < 85) {
			step = rnd_range(&seed, 3 * scale, 40 * scale);
		} else if (r < 95) {
			r = rnd_range(&seed, 0, 9);
			back = r < 5   ? rnd_range(&seed, 1, gran)
			       : r < 7 ? rnd_range(&seed, 1, scale)
			       : r < 8 ? m->W
				       : rnd_range(&seed, m->W, 2 * m->W);
			to = now - floor > back ? now - back : floor;
			if (to < now) {
				ps->jumps++;
				live = false;
				for (kk = 0; kk < NKEYS; kk++) {
					if (model_must_reset(m, kk, to)) {
						model_reset_key(m, kk);
						assert_rc(
							tk_limiter_reset(
								f.l,
								key_names[kk],
								strlen(key_names
									       [kk])),
							0);
						ps->jump_resets++;
					} else if (model_live(m, kk, to)) {
						live = true;
					}
				}
				ps->live_jumps += live;
				now = to;
			}
		}
		if (now + step < ceiling)
			now += step;
		fx_at(&f, now);
		model_observe(m, now);

		r = rnd_range(&seed, 0, 9);
		key = r < 4 ? 0 : r < 6 ? 1 : r < 8 ? 2 : 3;
		r = rnd_range(&seed, 0, 99);
		cost = 0;
		if (r < 72 || r >= 93) {
			what = "check";
			if (r >= 93) {
				cost = m->L;
			} else {
				r = rnd_range(&seed, 0, 99);
				cost = r < 55	? 1
				       : r < 80 ? rnd_range(&seed, 1,
							    min_u64(m->L, 4))
				       : r < 97 ? rnd_range(&seed, 1, m->L)
						: rnd_range(&seed, m->L + 1,
							    m->L + 3);
			}
			want_rc = model_eval(m, key, now, cost, false, &want);
			rc = check_rc(f.l, key_names[key], cost, &got);
			if (want_rc == 0) {
				ps->checks++;
				ps->denied += !want.allowed;
			} else {
				ps->eranges++;
			}
		} else if (r < 80) {
			what = "forecast";
			r = rnd_range(&seed, 0, 99);
			cost = r < 30 ? 1
			       : r < 60
				       ? rnd_range(&seed, 2,
						   max_u64(2, min_u64(m->L, 4)))
			       : r < 95 ? rnd_range(&seed, 1, m->L)
					: m->L + 1;
			want_rc = model_forecast(m, key, now, cost, &want);
			poison(&got);
			rc = tk_limiter_forecast(f.l, key_names[key],
						 strlen(key_names[key]), cost,
						 &got);
			ps->forecasts++;
		} else if (r < 90) {
			what = "peek";
			want_rc = model_eval(m, key, now, 0, true, &want);
			rc = peek_rc(f.l, key_names[key], &got);
			ps->peeks++;
		} else {
			what = "reset";
			model_reset_key(m, key);
			want_rc = 0;
			rc = tk_limiter_reset(f.l, key_names[key],
					      strlen(key_names[key]));
			memset(&want, 0, sizeof(want));
			got = want;
		}
		if (rc != want_rc)
			fail_msg("[%s] seed %#llx op %d: %s key %d cost %llu "
				 "at %llu: rc %d (%s), want %d (%s)",
				 policy, (unsigned long long)seed0, i, what,
				 key, (unsigned long long)cost,
				 (unsigned long long)now, rc,
				 tk_strerrorname(rc), want_rc,
				 tk_strerrorname(want_rc));
		if (rc == 0 && !same_decision(&got, &want)) {
			show_decision(&got, gs, sizeof(gs));
			show_decision(&want, ws, sizeof(ws));
			fail_msg("[%s] seed %#llx op %d: %s key %d cost %llu "
				 "at %llu:\n  got  %s\n  want %s",
				 policy, (unsigned long long)seed0, i, what,
				 key, (unsigned long long)cost,
				 (unsigned long long)now, gs, ws);
		}
	}
	fx_close(&f);
}

static void assert_coverage(const char *name, const struct prop_stats *ps)
{
	print_message(
		"# %s: %llu checks (%llu denied), %llu peeks, %llu "
		"-ERANGE, %llu backward jumps (%llu kept live state, "
		"%llu keys reset first)\n",
		name, (unsigned long long)ps->checks,
		(unsigned long long)ps->denied, (unsigned long long)ps->peeks,
		(unsigned long long)ps->eranges, (unsigned long long)ps->jumps,
		(unsigned long long)ps->live_jumps,
		(unsigned long long)ps->jump_resets);
	assert_true(ps->denied > ps->checks / 20);
	assert_true(ps->denied < ps->checks * 19 / 20);
	assert_true(ps->peeks > 100);
	assert_true(ps->forecasts > 100);
	assert_true(ps->eranges > 10);
	assert_true(ps->live_jumps > 50);
}

static int fmt_duration(char *buf, size_t len, uint64_t ns)
{
	if (ns % SEC == 0)
		return snprintf(buf, len, "%llus",
				(unsigned long long)(ns / SEC));
	if (ns % MS == 0)
		return snprintf(buf, len, "%llums",
				(unsigned long long)(ns / MS));
	return snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

static void test_property_fixed_window(void **state)
{
	const int nseeds = 8, nops = 4000;
	struct prop_stats ps = { 0 };
	struct model m;
	char policy[128], dur[48];
	uint64_t seed, L, W, start;
	int s;

	(void)state;
	for (s = 0; s < nseeds; s++) {
		seed = 0xf1c3d000ull + (uint64_t)s;
		L = rnd_range(&seed, 1, 20);
		switch (s % 3) {
		case 0:
			W = rnd_range(&seed, 1, 2000) * MS;
			break;
		case 1:
			W = rnd_range(&seed, 1, 10) * SEC;
			break;
		default:
			W = rnd_range(&seed, 1000, 5 * SEC);
			break;
		}
		fmt_duration(dur, sizeof(dur), W);
		snprintf(policy, sizeof(policy), "fixed-window:%llu/%s",
			 (unsigned long long)L, dur);
		model_init(&m, M_FIXED, L, W);
		start = B0 + rnd_range(&seed, 0, 100 * SEC);
		run_property(&m, policy, start, start - 3 * W, W / (L + 1) + 1,
			     W, nops, seed, &ps);
		model_free(&m);
	}
	assert_coverage("fixed-window", &ps);
}

static void test_property_sliding_window(void **state)
{
	static const uint64_t buckets[] = { 1, 2, 3, 5, 10, 10, 16, 20, 32 };
	const int nseeds = 9, nops = 4000;
	struct prop_stats ps = { 0 };
	struct model m;
	char policy[128], dur[48];
	uint64_t seed, L, S, w, W, start;
	int s;

	(void)state;
	for (s = 0; s < nseeds; s++) {
		seed = 0x51d3e000ull + (uint64_t)s;
		L = rnd_range(&seed, 1, 30);
		S = buckets[s];
		if (s % 2 == 0)
			w = rnd_range(&seed, 1, 200) * MS;
		else
			w = rnd_range(&seed, 1, 50 * MS);
		W = S * w;
		fmt_duration(dur, sizeof(dur), W);
		if (S == 10 && s % 4 == 0)
			snprintf(policy, sizeof(policy),
				 "sliding-window:%llu/%s",
				 (unsigned long long)L, dur);
		else
			snprintf(policy, sizeof(policy),
				 "sliding-window:%llu/%s,buckets=%llu",
				 (unsigned long long)L, dur,
				 (unsigned long long)S);
		model_init(&m, M_SLIDING, L, W);
		m.S = S;
		m.w = w;
		start = B0 + rnd_range(&seed, 0, 100 * SEC);
		run_property(&m, policy, start, start - 3 * W,
			     max_u64(1, w / 2), W / 2 + 1, nops, seed, &ps);
		model_free(&m);
	}
	assert_coverage("sliding-window", &ps);
}

static void test_property_sliding_log(void **state)
{
	const int nseeds = 8, nops = 4000;
	struct prop_stats ps = { 0 };
	struct model m;
	char policy[128], dur[48];
	uint64_t seed, L, W, start;
	int s;

	(void)state;
	for (s = 0; s < nseeds; s++) {
		seed = 0x106e0000ull + (uint64_t)s;
		L = s == 0 ? 1 : rnd_range(&seed, 1, 50);
		switch (s % 3) {
		case 0:
			W = rnd_range(&seed, 1, 3000) * MS;
			break;
		case 1:
			W = rnd_range(&seed, 1, 5) * SEC;
			break;
		default:
			W = rnd_range(&seed, 100, 2 * SEC);
			break;
		}
		fmt_duration(dur, sizeof(dur), W);
		snprintf(policy, sizeof(policy), "sliding-log:%llu/%s",
			 (unsigned long long)L, dur);
		model_init(&m, M_LOG, L, W);
		start = B0 + rnd_range(&seed, 0, 100 * SEC);
		run_property(&m, policy, start, start - 3 * W, W / (L + 1) + 1,
			     W, nops, seed, &ps);
		model_free(&m);
	}
	assert_coverage("sliding-log", &ps);
}

/* Calendar quotas: days with offsets (most seeds), weeks and months. */
static void test_property_quota_calendar(void **state)
{
	static const char *const wdays[] = { "sun", "mon", "tue", "wed",
					     "thu", "fri", "sat" };
	const int nseeds = 10, nops = 4000;
	struct prop_stats ps = { 0 };
	struct model m;
	char policy[160], opt[64];
	uint64_t seed, L, start, gran, scale, W;
	int64_t off_min;
	enum cadence cad;
	int s, wstart;
	size_t n;

	(void)state;
	for (s = 0; s < nseeds; s++) {
		seed = 0x9a07a000ull + (uint64_t)s;
		cad = s < 5 ? CAD_DAY : s < 8 ? CAD_WEEK : CAD_MONTH;
		switch (s) {
		case 0:
			off_min = 14 * 60;
			break;
		case 1:
			off_min = -14 * 60;
			break;
		case 5:
			off_min = 0;
			break;
		default:
			off_min = (int64_t)rnd_range(&seed, 0, 1680) - 840;
			break;
		}
		wstart = 1;
		switch (cad) {
		case CAD_DAY:
			L = rnd_range(&seed, 1, 10);
			gran = 30 * MINUTE;
			scale = 6 * HOUR;
			W = DAY;
			n = (size_t)snprintf(policy, sizeof(policy),
					     "quota:%llu/day",
					     (unsigned long long)L);
			break;
		case CAD_WEEK:
			L = rnd_range(&seed, 1, 8);
			gran = 3 * HOUR;
			scale = DAY;
			W = 7 * DAY;
			n = (size_t)snprintf(policy, sizeof(policy),
					     "quota:%llu/week",
					     (unsigned long long)L);
			if (s != 5) {
				wstart = (int)rnd_range(&seed, 0, 6);
				snprintf(policy + n, sizeof(policy) - n,
					 ",week-start=%s", wdays[wstart]);
				n = strlen(policy);
			}
			break;
		default:
			L = rnd_range(&seed, 1, 4);
			gran = 12 * HOUR;
			scale = 4 * DAY;
			W = 31 * DAY;
			n = (size_t)snprintf(policy, sizeof(policy),
					     "quota:%llu/month",
					     (unsigned long long)L);
			break;
		}
		if (off_min != 0 || s == 2) {
			snprintf(opt, sizeof(opt), ",offset=%c%02d:%02d",
				 off_min < 0 ? '-' : '+',
				 (int)(llabs(off_min) / 60),
				 (int)(llabs(off_min) % 60));
			snprintf(policy + n, sizeof(policy) - n, "%s", opt);
		}
		model_init(&m, M_QUOTA, L, W);
		m.cad = cad;
		m.off_ns = off_min * (int64_t)MINUTE;
		m.wstart = wstart;
		/* The last seed crosses 2100-03-01 (no leap day in 2100). */
		start = (s == nseeds - 1 ? AT(4083955200) : B0) +
			rnd_range(&seed, 0, 400 * DAY);
		run_property(&m, policy, start, start - 2 * W, gran, scale,
			     nops, seed, &ps);
		model_free(&m);
	}
	assert_coverage("quota (calendar)", &ps);
}

static void test_property_quota_anchored(void **state)
{
	const int nseeds = 8, nops = 4000;
	struct prop_stats ps = { 0 };
	struct model m;
	char policy[160];
	uint64_t seed, L, P, start, floor, anchor;
	int s;

	(void)state;
	for (s = 0; s < nseeds; s++) {
		seed = 0xa2c40000ull + (uint64_t)s;
		L = rnd_range(&seed, 1, 20);
		if (s % 2 == 0)
			P = rnd_range(&seed, 1, 5000) * MS;
		else
			P = rnd_range(&seed, 1000, 10 * SEC);
		start = B0 + rnd_range(&seed, 0, 100 * SEC);
		floor = start - 3 * P;
		anchor = s == 0 ? 0 : floor - rnd_range(&seed, 0, 1000 * P);
		snprintf(policy, sizeof(policy),
			 "quota:%llu/%lluns,anchor=%llu", (unsigned long long)L,
			 (unsigned long long)P, (unsigned long long)anchor);
		model_init(&m, M_QUOTA, L, P);
		m.cad = CAD_ANCHORED;
		m.anchor = anchor;
		run_property(&m, policy, start, floor, P / (L + 1) + 1, P, nops,
			     seed, &ps);
		model_free(&m);
	}
	assert_coverage("quota (anchored)", &ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_bucket_literal),
		cmocka_unit_test(test_token_bucket_matches_gcra),
		cmocka_unit_test(test_fixed_window_basics),
		cmocka_unit_test(test_fixed_window_epoch_aligned),
		cmocka_unit_test(test_fixed_window_cost_range),
		cmocka_unit_test(test_fixed_window_backward_jump),
		cmocka_unit_test(test_sliding_window_estimate),
		cmocka_unit_test(test_sliding_window_fractions),
		cmocka_unit_test(test_sliding_window_buckets),
		cmocka_unit_test(test_sliding_window_cost_range),
		cmocka_unit_test(test_sliding_window_backward_jump),
		cmocka_unit_test(test_sliding_window_far_backward_jump),
		cmocka_unit_test(test_dead_units_stay_dead),
		cmocka_unit_test(test_sliding_log_exact),
		cmocka_unit_test(test_sliding_log_backward_jump),
		cmocka_unit_test(test_sliding_log_limit_bound),
		cmocka_unit_test(test_quota_month_example),
		cmocka_unit_test(test_quota_month_lengths),
		cmocka_unit_test(test_quota_offsets),
		cmocka_unit_test(test_quota_weeks),
		cmocka_unit_test(test_quota_anchored),
		cmocka_unit_test(test_peek_each_algorithm),
		cmocka_unit_test(test_policy_parse_errors),
		cmocka_unit_test(test_policy_round_trip),
		cmocka_unit_test(test_property_fixed_window),
		cmocka_unit_test(test_property_sliding_window),
		cmocka_unit_test(test_property_sliding_log),
		cmocka_unit_test(test_property_quota_calendar),
		cmocka_unit_test(test_property_quota_anchored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
