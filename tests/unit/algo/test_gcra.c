/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_gcra.c - GCRA decisions through the public API.
 *
 * Every expectation here comes from shared/design/semantics.md ("GCRA"),
 * never from the library's code.  With T = floor(P / L), tau = T * B and
 * one TAT per key, a check at `now` with `cost` does:
 *
 *	tat     = max(state or now, now)
 *	new     = tat + T * cost
 *	allowAt = new - tau
 *	allowed iff now >= allowAt
 *	  allowed: state = new; remaining = floor((tau - (new - now)) / T);
 *	           reset_at = new; retry_after = 0
 *	  denied:  remaining = max(0, floor((tau - (tat - now)) / T));
 *	           reset_at = tat; retry_after = allowAt - now
 *	limit = B
 *
 * The hand-worked cases pin literal numbers (worked out on paper, so an
 * error shared by the library and a model cannot cancel out).  The
 * property test compares every field of thousands of random decisions
 * (checks, peeks and forecasts) with ref_*(), an independent model of the
 * formulas above in 128-bit arithmetic, including backward clock jumps.
 *
 * All timelines use a manual clock (or a counting custom clock), so every
 * run is deterministic; the random ones use a fixed-seed generator.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <throttlekit.h>

#include "asserts.h"
#include "rnd.h"

/* A realistic epoch time (2023-11-14), so sums exercise large values. */
#define T0 (1700000000ull * SEC)

/* A limiter on a private memory store, driven by its own manual clock. */
struct fx {
	struct tk_clock *clk;
	struct tk_limiter *l;
};

/*
 * The memory store keeps an expired state for reclaim_grace before it
 * reclaims it, and backward clock steps of up to the grace are exact.
 * The timelines here step back by up to hours, so they ask for a day.
 */
#define GRACE (UINT64_C(86400) * SEC)

static void fx_open_grace(struct fx *f, const char *policy, uint64_t start,
			  unsigned int flags, uint64_t grace)
{
	struct tk_options o = TK_OPTIONS_INIT;

	assert_rc(tk_clock_manual_new(&f->clk, start), 0);
	o.clock = f->clk;
	o.flags = flags;
	o.reclaim_grace = grace;
	f->l = NULL;
	if (tk_limiter_open(&f->l, policy, "memory", &o) != 0)
		fail_msg("tk_limiter_open(\"%s\") failed", policy);
	assert_non_null(f->l);
}

static void fx_open_flags(struct fx *f, const char *policy, uint64_t start,
			  unsigned int flags)
{
	fx_open_grace(f, policy, start, flags, GRACE);
}

static void fx_open(struct fx *f, const char *policy, uint64_t start)
{
	fx_open_flags(f, policy, start, 0);
}

static void fx_close(struct fx *f)
{
	tk_limiter_close(f->l);
	tk_clock_free(f->clk);
}

static void fx_at(struct fx *f, uint64_t ns)
{
	assert_rc(tk_clock_set(f->clk, ns), 0);
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

static struct tk_decision chk(struct fx *f, const char *key, uint64_t cost)
{
	struct tk_decision d;

	poison(&d);
	assert_rc(tk_limiter_check(f->l, key, strlen(key), cost, &d), 0);
	return d;
}

static struct tk_decision peek(struct fx *f, const char *key)
{
	struct tk_decision d;

	poison(&d);
	assert_rc(tk_limiter_peek(f->l, key, strlen(key), &d), 0);
	return d;
}

static struct tk_decision forecast(struct fx *f, const char *key, uint64_t cost)
{
	struct tk_decision d;

	poison(&d);
	assert_rc(tk_limiter_forecast(f->l, key, strlen(key), cost, &d), 0);
	return d;
}

/*
 * The reference model: semantics.md's GCRA formulas, evaluated exactly.
 * Differences are signed 128-bit, so "tau - (tat - now)" may go negative
 * without wrapping and no product can overflow.
 */
struct ref {
	uint64_t T;	/* ns per unit: floor(P / L) */
	uint64_t B;	/* burst */
	uint64_t tau;	/* ns: T * B */
	bool has_state; /* false: the key is cold */
	uint64_t state; /* the TAT, ns since the epoch */
};

typedef __int128 i128;

static void ref_init(struct ref *r, uint64_t L, uint64_t P, uint64_t B)
{
	r->T = P / L;
	r->B = B;
	r->tau = r->T * B;
	r->has_state = false;
	r->state = 0;
}

/* Evaluates a check at @now; @commit applies an admission to the state. */
static int ref_eval(struct ref *r, uint64_t now, uint64_t cost, bool commit,
		    struct tk_decision *d)
{
	i128 tat, nw, allow_at, rem;

	if (cost == 0)
		return -EINVAL;
	if (cost > r->B)
		return -ERANGE;
	tat = r->has_state && r->state > now ? (i128)r->state : (i128)now;
	nw = tat + (i128)r->T * (i128)cost;
	allow_at = nw - (i128)r->tau;
	d->limit = r->B;
	if ((i128)now >= allow_at) {
		d->allowed = true;
		d->remaining =
			(uint64_t)(((i128)r->tau - (nw - (i128)now)) / r->T);
		d->reset_at = (uint64_t)nw;
		d->retry_after = 0;
		if (commit) {
			r->has_state = true;
			r->state = (uint64_t)nw;
		}
	} else {
		d->allowed = false;
		rem = ((i128)r->tau - (tat - (i128)now)) / (i128)r->T;
		d->remaining = rem > 0 ? (uint64_t)rem : 0;
		d->reset_at = (uint64_t)tat;
		d->retry_after = (uint64_t)(allow_at - (i128)now);
	}
	return 0;
}

/*
 * Peek per semantics.md: remaining as a denial computes it (units that
 * fit now), allowed = remaining >= 1, reset_at = the (clamped) TAT, and
 * retry_after = ns until one unit is available.
 */
static void ref_peek(const struct ref *r, uint64_t now, struct tk_decision *d)
{
	i128 tat, rem, one_at;

	tat = r->has_state && r->state > now ? (i128)r->state : (i128)now;
	rem = ((i128)r->tau - (tat - (i128)now)) / (i128)r->T;
	one_at = tat + (i128)r->T - (i128)r->tau;
	d->limit = r->B;
	d->remaining = rem > 0 ? (uint64_t)rem : 0;
	d->allowed = d->remaining >= 1;
	d->reset_at = (uint64_t)tat;
	d->retry_after =
		one_at > (i128)now ? (uint64_t)(one_at - (i128)now) : 0;
}

/*
 * forecast(@cost): allowed and retry_after as a check of @cost would say,
 * the other fields the key's current state as a peek reports it
 * (tk_limiter_forecast(3)).
 */
static int ref_forecast(struct ref *r, uint64_t now, uint64_t cost,
			struct tk_decision *d)
{
	struct tk_decision c;
	int rc = ref_eval(r, now, cost, false, &c);

	if (rc != 0)
		return rc;
	ref_peek(r, now, d);
	d->allowed = c.allowed;
	d->retry_after = c.retry_after;
	return 0;
}

/* A cold key admits exactly B units at one instant, then denies. */
static void test_cold_burst_exactly_b(void **state)
{
	static const uint64_t bursts[] = { 1, 2, 3, 5, 17, 100 };
	const uint64_t T = 100 * MS; /* gcra:10/s */
	struct tk_decision d;
	struct fx f;
	char policy[64];
	size_t i;
	uint64_t B, k;

	(void)state;
	for (i = 0; i < sizeof(bursts) / sizeof(bursts[0]); i++) {
		B = bursts[i];
		snprintf(policy, sizeof(policy), "gcra:10/s,burst=%llu",
			 (unsigned long long)B);
		fx_open(&f, policy, T0);
		for (k = 1; k <= B; k++) {
			d = chk(&f, "k", 1);
			assert_decision(d, true, B, B - k, T0 + k * T, 0);
		}
		/* The next one waits for one emission interval. */
		d = chk(&f, "k", 1);
		assert_decision(d, false, B, 0, T0 + B * T, T);
		d = chk(&f, "k", 1);
		assert_decision(d, false, B, 0, T0 + B * T, T);
		/* Another key has its own, untouched burst. */
		d = chk(&f, "other", 1);
		assert_decision(d, true, B, B - 1, T0 + T, 0);
		fx_close(&f);
	}
}

/* Without ",burst=", B defaults to L. */
static void test_default_burst_is_limit(void **state)
{
	const uint64_t T = 200 * MS; /* gcra:5/s */
	struct tk_decision d;
	struct fx f;
	uint64_t k;

	(void)state;
	fx_open(&f, "gcra:5/s", T0);
	for (k = 1; k <= 5; k++) {
		d = chk(&f, "k", 1);
		assert_decision(d, true, 5, 5 - k, T0 + k * T, 0);
	}
	d = chk(&f, "k", 1);
	assert_decision(d, false, 5, 0, T0 + 5 * T, T);
	fx_close(&f);

	/* A whole burst in one request is allowed on equality. */
	fx_open(&f, "gcra:5/1s", T0);
	d = chk(&f, "k", 5);
	assert_decision(d, true, 5, 0, T0 + 5 * T, 0);
	fx_close(&f);
}

/*
 * After the burst, exactly one unit per T: at t0 + k*T - 1 the check is
 * denied with retry_after 1, at t0 + k*T it is allowed (allow on
 * equality).  Includes T that do not divide P (3/1s, 7/1s).
 */
static void test_pacing_one_per_t(void **state)
{
	static const struct {
		const char *policy;
		uint64_t T;
		uint64_t B;
	} cases[] = {
		{ "gcra:10/s,burst=3", 100 * MS, 3 },
		{ "gcra:3/1s", 333333333, 3 },
		{ "gcra:7/1s,burst=1", 142857142, 1 },
		{ "gcra:1000/s,burst=4", 1 * MS, 4 },
		{ "gcra:1/1ns,burst=2", 1, 2 },
		{ "gcra:2/1h,burst=2", 1800 * SEC, 2 },
	};
	struct tk_decision d;
	struct fx f;
	size_t i;
	uint64_t k, T, B;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		T = cases[i].T;
		B = cases[i].B;
		fx_open(&f, cases[i].policy, T0);
		for (k = 0; k < B; k++)
			assert_true(chk(&f, "k", 1).allowed);
		for (k = 1; k <= 25; k++) {
			/* tat = T0 + (B+k-1)T, so allowAt = T0 + kT. */
			fx_at(&f, T0 + k * T - 1);
			d = chk(&f, "k", 1);
			assert_decision(d, false, B, 0, T0 + (B + k - 1) * T,
					1);
			fx_at(&f, T0 + k * T);
			d = chk(&f, "k", 1);
			assert_decision(d, true, B, 0, T0 + (B + k) * T, 0);
		}
		/* A long idle refills to B and no further. */
		fx_at(&f, T0 + 1000 * (B + 25) * T);
		d = chk(&f, "k", 1);
		assert_decision(d, true, B, B - 1, T0 + 1000 * (B + 25) * T + T,
				0);
		fx_close(&f);
	}
}

/* Hand-worked numbers for gcra:3/1s: T = 333333333 ns, tau = 999999999. */
static void test_hand_worked_fractional_t(void **state)
{
	const uint64_t t0 = 1 * SEC;
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "gcra:3/1s", t0);

	/* Cold: everything is available, and the key is already full. */
	d = peek(&f, "k");
	assert_decision(d, true, 3, 3, t0, 0);

	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, 1333333333, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 1, 1666666666, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, 1999999999, 0);
	/* tat 1999999999: allowAt = tat + T - tau = 1333333333. */
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, 1999999999, 333333333);

	fx_at(&f, 1333333332);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 3, 0, 1999999999, 1);
	fx_at(&f, 1333333333);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, 2333333332, 0);

	/*
	 * At 1833333333, tat - now = 499999999, so one unit fits:
	 * remaining floor(500000000 / T) = 1.  Cost 2 needs allowAt =
	 * 2333333332 + 2T - tau = 1999999999: retry 166666666.
	 */
	fx_at(&f, 1833333333);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 3, 1, 2333333332, 166666666);
	d = peek(&f, "k");
	assert_decision(d, true, 3, 1, 2333333332, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 0, 2666666665, 0);
	fx_close(&f);
}

/* Hand-worked numbers for gcra:7/1s,burst=2: T = 142857142, tau = 2T. */
static void test_hand_worked_cost_gt_1(void **state)
{
	const uint64_t t0 = 5 * SEC;
	const uint64_t T = 142857142;
	struct tk_decision d;
	struct fx f;

	(void)state;
	fx_open(&f, "gcra:7/1s,burst=2", t0);
	d = chk(&f, "k", 2);
	assert_decision(d, true, 2, 0, t0 + 2 * T, 0);
	fx_at(&f, t0 + T);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 2, 0, t0 + 3 * T, 0);
	d = chk(&f, "k", 2);
	assert_decision(d, false, 2, 0, t0 + 3 * T, 2 * T);
	/* One ns back: the TAT holds, the wait grows by that ns. */
	fx_at(&f, t0 + T - 1);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 2, 0, t0 + 3 * T, T + 1);
	fx_close(&f);
}

/* A denial writes nothing: floods of denials leave the schedule alone. */
static void test_deny_never_consumes(void **state)
{
	const uint64_t T = 100 * MS; /* gcra:10/s,burst=4 */
	struct tk_decision a, b;
	struct fx f;
	uint64_t i, k;

	(void)state;
	fx_open(&f, "gcra:10/s,burst=4", T0);
	for (k = 0; k < 4; k++) {
		assert_true(chk(&f, "a", 1).allowed);
		assert_true(chk(&f, "b", 1).allowed); /* the control */
	}
	for (i = 0; i < 1000; i++) {
		/* Spread over [T0, T0 + T - 1], costs 1..4. */
		fx_at(&f, T0 + i * (T - 1) / 999);
		a = chk(&f, "a", 1 + i % 4);
		assert_false(a.allowed);
		assert_int_equal(a.reset_at, T0 + 4 * T);
		/* allowAt = T0 + cost * T */
		assert_int_equal(a.retry_after,
				 (1 + i % 4) * T - i * (T - 1) / 999);
	}
	fx_at(&f, T0 + T);
	a = chk(&f, "a", 1);
	b = chk(&f, "b", 1);
	assert_decision(a, true, 4, 0, T0 + 5 * T, 0);
	assert_same_decision(a, b);
	a = chk(&f, "a", 1);
	b = chk(&f, "b", 1);
	assert_decision(a, false, 4, 0, T0 + 5 * T, T);
	assert_same_decision(a, b);
	fx_close(&f);
}

/* Setting the clock back 10 s after exhausting a key admits nothing. */
static void test_backward_jump_stays_denied(void **state)
{
	const uint64_t T = 100 * MS; /* gcra:10/s,burst=5 */
	struct tk_decision d;
	struct fx f;
	int i;

	(void)state;
	fx_open(&f, "gcra:10/s,burst=5", T0);
	for (i = 0; i < 5; i++)
		assert_true(chk(&f, "k", 1).allowed);
	fx_at(&f, T0 - 10 * SEC);
	for (i = 0; i < 3; i++) {
		/* tat stays T0 + 5T: allowAt = T0 + T is 10 s + T away. */
		d = chk(&f, "k", 1);
		assert_decision(d, false, 5, 0, T0 + 5 * T, 10 * SEC + T);
	}
	d = peek(&f, "k");
	assert_decision(d, false, 5, 0, T0 + 5 * T, 10 * SEC + T);
	/* Back at the latest time, the schedule is the one it would be. */
	fx_at(&f, T0 + T - 1);
	assert_false(chk(&f, "k", 1).allowed);
	fx_at(&f, T0 + T);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 5, 0, T0 + 6 * T, 0);
	fx_close(&f);
}

/*
 * Reading a key (or serving another key) at a time past its TAT does not
 * license forgetting the TAT: once the clock steps back below it, the key
 * is still bound by it (tat = max(state, now)), so it admits no more than
 * if the clock had stood still.  A store that drops state it judges
 * expired at a later reading admits a cold burst here.  No reclaimer
 * thread, so that any reclaiming happens deterministically inside the
 * calls.
 */
static void test_backward_jump_after_expiry(void **state)
{
	struct tk_decision d;
	struct fx f;
	int i;

	(void)state;
	/* T = tau = 1 s. */
	fx_open_flags(&f, "gcra:1/s,burst=1", 10 * SEC, TK_OPT_NO_RECLAIMER);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, 11 * SEC, 0);
	d = chk(&f, "j", 1);
	assert_decision(d, true, 1, 0, 11 * SEC, 0);

	/* The same key read at 11.5 s: full again at that time. */
	fx_at(&f, 11500 * MS);
	d = peek(&f, "k");
	assert_decision(d, true, 1, 1, 11500 * MS, 0);
	/* Another key served at 11.5 s, and later still. */
	for (i = 0; i < 10; i++) {
		fx_at(&f, 11500 * MS + (uint64_t)i * 3600 * SEC);
		assert_true(chk(&f, "other", 1).allowed);
	}

	/* Back to 10.2 s: both TATs (11 s) still count. */
	fx_at(&f, 10200 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 1, 0, 11 * SEC, 800 * MS);
	d = chk(&f, "j", 1);
	assert_decision(d, false, 1, 0, 11 * SEC, 800 * MS);
	fx_close(&f);
}

/*
 * Past the grace the state is gone: a step back further than reclaim_grace
 * finds a key that was reclaimed cold again (documented in
 * tk_store_open(3)).  This pins that trade-off so it cannot change silently.
 */
static void test_backward_jump_beyond_grace(void **state)
{
	struct tk_decision d;
	struct fx f;
	char key[16];
	int i;

	(void)state;
	fx_open_grace(&f, "gcra:1/s,burst=1", 10 * SEC, TK_OPT_NO_RECLAIMER,
		      SEC);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, 11 * SEC, 0);
	/* Within the grace (expired at 11 s, kept until 12 s): exact. */
	fx_at(&f, 11900 * MS);
	assert_true(chk(&f, "other", 1).allowed);
	fx_at(&f, 10200 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, false, 1, 0, 11 * SEC, 800 * MS);
	/* Well past it: other keys' checks sweep "k" away (a chunk of the
	 * table each, once one is due: a whole pass within a grace). */
	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "other-%d", i % 16);
		fx_at(&f, 20 * SEC + (uint64_t)i * 30 * MS);
		chk(&f, key, 1);
	}
	fx_at(&f, 10200 * MS);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 1, 0, 11200 * MS, 0);
	fx_close(&f);
}

/*
 * Over random timelines with backward jumps, a key never admits more than
 * the same requests on the monotonic timeline (the clock standing still at
 * the latest time seen).  Unit costs: with mixed costs a cumulative count
 * of units is not monotone in time even for a correct GCRA.  Each step
 * also checks the per-decision form: whatever is admitted at a jumped-back
 * time would also have been admitted at the latest time.
 */
static void test_backward_jumps_never_over_admit(void **state)
{
	static const struct {
		const char *policy;
		uint64_t T;
	} cases[] = {
		{ "gcra:10/s,burst=5", 100 * MS },
		{ "gcra:3/1s", 333333333 },
		{ "gcra:1/100ms,burst=1", 100 * MS },
		{ "gcra:50/7s,burst=50", 140 * MS },
	};
	struct tk_decision dj, dm, fc;
	struct fx jumpy, mono;
	uint64_t seed, now, latest, T, admitted_j, admitted_m, total_j;
	size_t p;
	int i;

	(void)state;
	total_j = 0;
	for (p = 0; p < sizeof(cases) / sizeof(cases[0]); p++) {
		seed = 0x5eed0000 + p;
		T = cases[p].T;
		/*
		 * Two separate stores, so neither key can affect the other;
		 * no reclaimer threads, so a failure reproduces.
		 */
		fx_open_flags(&jumpy, cases[p].policy, T0, TK_OPT_NO_RECLAIMER);
		fx_open_flags(&mono, cases[p].policy, T0, TK_OPT_NO_RECLAIMER);
		now = latest = T0;
		admitted_j = admitted_m = 0;
		for (i = 0; i < 3000; i++) {
			if (rnd_range(&seed, 0, 99) < 12 && now > T0)
				now -= rnd_range(&seed, 1, now - T0);
			else
				now += rnd_range(&seed, 0, 2 * T);
			if (now > latest)
				latest = now;
			fx_at(&jumpy, latest);
			fc = forecast(&jumpy, "k", 1);
			fx_at(&jumpy, now);
			fx_at(&mono, latest);
			dj = chk(&jumpy, "k", 1);
			dm = chk(&mono, "k", 1);
			if (dj.allowed && !fc.allowed)
				fail_msg("%s step %d: admitted at %llu but not "
					 "at the latest time %llu",
					 cases[p].policy, i,
					 (unsigned long long)(now - T0),
					 (unsigned long long)(latest - T0));
			admitted_j += dj.allowed;
			admitted_m += dm.allowed;
			if (admitted_j > admitted_m)
				fail_msg("%s step %d: backward jumps admitted "
					 "%llu, monotonic clock %llu",
					 cases[p].policy, i,
					 (unsigned long long)admitted_j,
					 (unsigned long long)admitted_m);
		}
		/* The timeline must have admitted and denied something. */
		assert_true(admitted_j > 0 && admitted_j < 3000);
		total_j += admitted_j;
		fx_close(&jumpy);
		fx_close(&mono);
	}
	assert_true(total_j > 0);
}

/* A cost above the burst can never pass: -ERANGE, and nothing changes. */
/*
 * A TAT written just below 2^63 and read after a step back to 0 stands
 * more than 2^63 ns ahead: the unit count must not take that difference
 * as signed (UB, fatal in the sanitizer build).  Token bucket and
 * composites share the arithmetic.
 */
static void test_tat_above_2_63(void **state)
{
	static const struct {
		const char *policy;
		uint64_t T; /* the reported dimension's */
	} cases[] = {
		{ "gcra:1/1h", 3600 * SEC },
		{ "token-bucket:capacity=1,refill=1/1h", 3600 * SEC },
		{ "all(gcra:1/1h,gcra:2/1h)", 3600 * SEC },
		{ "gcra:1/4611686018427387904ns", UINT64_C(1) << 62 },
	};
	const uint64_t top = (UINT64_C(1) << 63) - 1;
	struct tk_decision d;
	struct fx f;
	uint64_t T;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		T = cases[i].T;
		fx_open_flags(&f, cases[i].policy, top, TK_OPT_NO_RECLAIMER);
		d = chk(&f, "k", 1);
		assert_decision(d, true, 1, 0, top + T, 0);
		fx_at(&f, 0);
		d = chk(&f, "k", 1);
		assert_decision(d, false, 1, 0, top + T, top + T);
		d = peek(&f, "k");
		assert_decision(d, false, 1, 0, top + T, top + T);
		d = forecast(&f, "k", 1);
		assert_decision(d, false, 1, 0, top + T, top + T);
		fx_at(&f, top);
		d = chk(&f, "k", 1);
		assert_decision(d, false, 1, 0, top + T, T);
		fx_close(&f);
	}
}

static void test_cost_over_burst_is_erange(void **state)
{
	const uint64_t T = 100 * MS; /* gcra:10/s,burst=5 */
	struct tk_decision d, c;
	struct fx f;

	(void)state;
	fx_open(&f, "gcra:10/s,burst=5", T0);
	poison(&d);
	assert_rc(tk_limiter_check(f.l, "k", 1, 6, &d), -ERANGE);
	assert_rc(tk_limiter_forecast(f.l, "k", 1, 6, &d), -ERANGE);
	d = peek(&f, "k");
	assert_decision(d, true, 5, 5, T0, 0);

	assert_true(chk(&f, "k", 2).allowed);
	assert_true(chk(&f, "control", 2).allowed);
	assert_rc(tk_limiter_check(f.l, "k", 1, 6, &d), -ERANGE);
	assert_rc(tk_limiter_check(f.l, "k", 1, 1ull << 32, &d), -ERANGE);
	assert_rc(tk_limiter_check(f.l, "k", 1, 1ull << 63, &d), -ERANGE);
	/* T * cost would wrap 64 bits here; it must still be -ERANGE. */
	assert_rc(tk_limiter_check(f.l, "k", 1, UINT64_MAX, &d), -ERANGE);
	d = chk(&f, "k", 3);
	c = chk(&f, "control", 3);
	assert_decision(d, true, 5, 0, T0 + 5 * T, 0);
	assert_same_decision(d, c);
	fx_close(&f);
}

/* Argument errors: -EINVAL / -ENAMETOOLONG, and none of them consumes. */
static void test_invalid_arguments(void **state)
{
	struct tk_decision d;
	struct fx f;
	char *big;

	(void)state;
	big = malloc(TK_KEY_MAX + 2);
	assert_non_null(big);
	memset(big, 'x', TK_KEY_MAX + 1);
	big[TK_KEY_MAX + 1] = '\0';

	fx_open(&f, "gcra:10/s,burst=5", T0);
	assert_rc(tk_limiter_check(f.l, "k", 1, 0, &d), -EINVAL);
	assert_rc(tk_limiter_forecast(f.l, "k", 1, 0, &d), -EINVAL);
	assert_rc(tk_limiter_check(f.l, NULL, 1, 1, &d), -EINVAL);
	assert_rc(tk_limiter_check(f.l, NULL, 0, 1, &d), -EINVAL);
	assert_rc(tk_limiter_check(f.l, "k", 1, 1, NULL), -EINVAL);
	assert_rc(tk_limiter_check(NULL, "k", 1, 1, &d), -EINVAL);
	assert_rc(tk_limiter_check(f.l, "", 0, 1, &d), -EINVAL);
	assert_rc(tk_limiter_check(f.l, "k", 0, 1, &d), -EINVAL);
	assert_rc(tk_limiter_peek(f.l, "k", 0, &d), -EINVAL);
	assert_rc(tk_limiter_peek(f.l, NULL, 1, &d), -EINVAL);
	assert_rc(tk_limiter_peek(f.l, "k", 1, NULL), -EINVAL);
	assert_rc(tk_limiter_forecast(f.l, "k", 1, 1, NULL), -EINVAL);
	assert_rc(tk_limiter_reset(f.l, NULL, 1), -EINVAL);
	assert_rc(tk_limiter_reset(f.l, "k", 0), -EINVAL);

	/* TK_KEY_MAX bytes is the longest key; one more is too long. */
	assert_rc(tk_limiter_check(f.l, big, TK_KEY_MAX + 1, 1, &d),
		  -ENAMETOOLONG);
	assert_rc(tk_limiter_peek(f.l, big, TK_KEY_MAX + 1, &d), -ENAMETOOLONG);
	assert_rc(tk_limiter_forecast(f.l, big, TK_KEY_MAX + 1, 1, &d),
		  -ENAMETOOLONG);
	assert_rc(tk_limiter_reset(f.l, big, TK_KEY_MAX + 1), -ENAMETOOLONG);
	assert_rc(tk_limiter_check(f.l, big, TK_KEY_MAX, 1, &d), 0);
	assert_decision(d, true, 5, 4, T0 + 100 * MS, 0);
	/* The rejected long key did not alias its TK_KEY_MAX prefix. */
	assert_rc(tk_limiter_check(f.l, big, TK_KEY_MAX, 1, &d), 0);
	assert_int_equal(d.remaining, 3);

	/* Nothing above touched "k". */
	d = peek(&f, "k");
	assert_decision(d, true, 5, 5, T0, 0);
	fx_close(&f);
	free(big);
}

/* Keys are byte strings of key_len bytes, not C strings. */
static void test_keys_are_counted_bytes(void **state)
{
	struct fx f;

	(void)state;
	fx_open(&f, "gcra:1/s,burst=1", T0);
	assert_admits(f.l, "ab", 1, true);
	/* "a" is now spent; "ab" is another key. */
	assert_admits(f.l, "ab", 2, true);
	assert_admits(f.l, "ax", 1, false);
	/* Bytes after an embedded NUL still distinguish keys. */
	assert_admits(f.l, "a\0b", 3, true);
	assert_admits(f.l, "a\0c", 3, true);
	assert_admits(f.l, "a\0b", 3, false);
	fx_close(&f);
}

/* Policies that must be refused when the limiter is opened. */
static void test_invalid_policies(void **state)
{
	static const char *const einval[] = {
		"gcra:0/s",	     /* L = 0 */
		"gcra:10/0s",	     /* P = 0 */
		"gcra:2/1ns",	     /* T = floor(1/2) = 0 < 1 */
		"gcra:10/s,burst=0", /* B = 0 */
		"gcra:",
		"gcra",
		"gcra:10",
		"gcra:10/",
		"gcra:/s",
		"gcra:10/5x", /* unknown unit */
		"gcra:10/s,",
		"gcra:10/s,burst=",
		"gcra:10/s,burst=x",
		"gcra:10/s,bogus=1",
		"gcra:-1/s",
		"gcra:10/s extra",
		"",
		"gcra:18446744073709551616/s", /* 2^64 overflows */
		"gcra:10/18446744073709551616ns",
		"gcra:10/s,burst=18446744073709551616",
		"gcra:1/18446744073709551615d", /* P in ns overflows */
	};
	struct tk_limiter *l;
	size_t i;
	int rc;

	(void)state;
	for (i = 0; i < sizeof(einval) / sizeof(einval[0]); i++) {
		l = NULL;
		rc = tk_limiter_open(&l, einval[i], "memory", NULL);
		if (rc != -EINVAL) {
			tk_limiter_close(rc == 0 ? l : NULL);
			fail_msg("policy \"%s\": %d (%s), want -EINVAL",
				 einval[i], rc, tk_strerrorname(rc));
		}
	}
	l = NULL;
	rc = tk_limiter_open(&l, "nosuch:1/s", "memory", NULL);
	if (rc != -EINVAL) {
		tk_limiter_close(rc == 0 ? l : NULL);
		fail_msg("\"nosuch:1/s\": %d (%s), want -EINVAL", rc,
			 tk_strerrorname(rc));
	}
	assert_rc(tk_limiter_open(&l, NULL, "memory", NULL), -EINVAL);
	assert_rc(tk_limiter_open(NULL, "gcra:1/s", "memory", NULL), -EINVAL);

	/* The edges that are valid must open. */
	assert_rc(tk_limiter_open(&l, "gcra:1/1ns", "memory", NULL), 0);
	tk_limiter_close(l);
	assert_rc(tk_limiter_open(&l, "gcra:2/2ns,burst=1", "memory", NULL), 0);
	tk_limiter_close(l);
	assert_rc(tk_limiter_open(&l, "gcra:1/d", "memory", NULL), 0);
	tk_limiter_close(l);
}

/* Peeking twice then checking equals one check. */
static void test_peek_does_not_consume(void **state)
{
	const uint64_t T = 100 * MS; /* gcra:10/s,burst=5 */
	struct tk_decision a, b, p;
	struct fx f;
	int i;

	(void)state;
	fx_open(&f, "gcra:10/s,burst=5", T0);
	p = peek(&f, "a");
	p = peek(&f, "a");
	a = chk(&f, "a", 1);
	b = chk(&f, "b", 1);
	assert_same_decision(a, b);
	assert_decision(a, true, 5, 4, T0 + T, 0);

	assert_true(chk(&f, "a", 1).allowed);
	p = peek(&f, "a");
	assert_decision(p, true, 5, 3, T0 + 2 * T, 0);
	for (i = 0; i < 3; i++)
		assert_true(chk(&f, "a", 1).allowed);
	/* Exhausted: one unit is T away. */
	for (i = 0; i < 10; i++) {
		p = peek(&f, "a");
		assert_decision(p, false, 5, 0, T0 + 5 * T, T);
	}
	fx_at(&f, T0 + T / 2);
	p = peek(&f, "a");
	assert_decision(p, false, 5, 0, T0 + 5 * T, T / 2);
	fx_at(&f, T0 + T);
	p = peek(&f, "a");
	assert_decision(p, true, 5, 1, T0 + 5 * T, 0);
	a = chk(&f, "a", 1);
	assert_decision(a, true, 5, 0, T0 + 6 * T, 0);
	fx_close(&f);
}

/* forecast(cost) says exactly when a check of that cost will pass. */
static void test_forecast_matches_later_check(void **state)
{
	static const struct {
		const char *policy;
		uint64_t T;
		uint64_t B;
	} cases[] = {
		{ "gcra:10/s,burst=5", 100 * MS, 5 },
		{ "gcra:3/1s,burst=4", 333333333, 4 },
	};
	struct tk_decision d, fc;
	struct fx f;
	uint64_t cost, T, B, t;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		T = cases[i].T;
		B = cases[i].B;
		for (cost = 1; cost <= B; cost++) {
			fx_open(&f, cases[i].policy, T0);
			/* Available now: allowed, no wait, nothing consumed. */
			fc = forecast(&f, "k", cost);
			assert_true(fc.allowed);
			assert_int_equal(fc.retry_after, 0);
			assert_int_equal(fc.limit, B);
			assert_int_equal(peek(&f, "k").remaining, B);

			assert_true(chk(&f, "k", B).allowed);
			fx_at(&f, T0 + T / 3);
			fc = forecast(&f, "k", cost);
			assert_false(fc.allowed);
			assert_int_equal(fc.limit, B);
			/* tat = T0 + B*T: allowAt = T0 + cost*T. */
			assert_int_equal(fc.retry_after,
					 T0 + cost * T - (T0 + T / 3));
			t = T0 + T / 3 + fc.retry_after;
			fx_at(&f, t - 1);
			d = chk(&f, "k", cost);
			assert_false(d.allowed);
			assert_int_equal(d.retry_after, 1);
			fx_at(&f, t);
			d = chk(&f, "k", cost);
			assert_true(d.allowed);
			fx_close(&f);
		}
	}
}

/* Reset forgets a key: the next check sees a cold key. */
static void test_reset_makes_key_cold(void **state)
{
	const uint64_t T = 100 * MS; /* gcra:10/s,burst=3 */
	struct tk_decision d;
	struct fx f;
	int i;

	(void)state;
	fx_open(&f, "gcra:10/s,burst=3", T0);
	for (i = 0; i < 3; i++) {
		assert_true(chk(&f, "k", 1).allowed);
		assert_true(chk(&f, "other", 1).allowed);
	}
	assert_false(chk(&f, "k", 1).allowed);
	assert_rc(tk_limiter_reset(f.l, "k", 1), 0);
	d = peek(&f, "k");
	assert_decision(d, true, 3, 3, T0, 0);
	d = chk(&f, "k", 1);
	assert_decision(d, true, 3, 2, T0 + T, 0);
	/* Only "k" was reset. */
	d = chk(&f, "other", 1);
	assert_decision(d, false, 3, 0, T0 + 3 * T, T);
	/* Resetting an unknown key, or twice, is fine. */
	assert_rc(tk_limiter_reset(f.l, "never-seen", 10), 0);
	assert_rc(tk_limiter_reset(f.l, "k", 1), 0);
	assert_rc(tk_limiter_reset(f.l, "k", 1), 0);
	d = chk(&f, "k", 3);
	assert_decision(d, true, 3, 0, T0 + 3 * T, 0);
	fx_close(&f);
}

/* Prefixes partition one shared store; the same prefix shares state. */
static void test_prefix_isolation(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *la, *lb, *la2;
	struct tk_store *s;
	struct tk_clock *clk;
	struct tk_decision d;
	int i;

	(void)state;
	assert_rc(tk_clock_manual_new(&clk, T0), 0);
	o.clock = clk;
	/* The store's reclaimer on the limiters' clock (tk_store_open(3),
	 * NOTES): on the system clock, far past T0, it would reclaim their
	 * states as expired between two checks. */
	assert_rc(tk_store_open(&s, "memory", &o), 0);
	o.store = s;
	o.prefix = "a";
	assert_rc(tk_limiter_open(&la, "gcra:10/s,burst=3", NULL, &o), 0);
	assert_rc(tk_limiter_open(&la2, "gcra:10/s,burst=3", NULL, &o), 0);
	o.prefix = "b";
	assert_rc(tk_limiter_open(&lb, "gcra:10/s,burst=3", NULL, &o), 0);

	for (i = 0; i < 3; i++) {
		assert_rc(tk_limiter_check(la, "k", 1, 1, &d), 0);
		assert_true(d.allowed);
	}
	/* Same prefix, same key: the state is shared. */
	assert_rc(tk_limiter_check(la2, "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	/* Other prefix: a cold key of its own. */
	assert_rc(tk_limiter_check(lb, "k", 1, 1, &d), 0);
	assert_decision(d, true, 3, 2, T0 + 100 * MS, 0);
	/* A reset through one prefix leaves the other alone. */
	assert_rc(tk_limiter_reset(lb, "k", 1), 0);
	assert_rc(tk_limiter_check(la, "k", 1, 1, &d), 0);
	assert_false(d.allowed);
	assert_rc(tk_limiter_reset(la2, "k", 1), 0);
	assert_rc(tk_limiter_check(la, "k", 1, 1, &d), 0);
	assert_decision(d, true, 3, 2, T0 + 100 * MS, 0);

	/* Limiters given opts.store never close it. */
	tk_limiter_close(la);
	tk_limiter_close(la2);
	tk_limiter_close(lb);
	tk_store_close(s);
	tk_clock_free(clk);
}

/* A custom clock that counts its readings. */
struct counting_clock {
	uint64_t ns;
	int error;	    /* returned instead of a time if set */
	atomic_ulong calls; /* readings; the library may read from any thread */
};

static int counting_now(void *ctx, uint64_t *ns)
{
	struct counting_clock *c = ctx;

	atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
	if (c->error)
		return c->error;
	*ns = c->ns;
	return 0;
}

/*
 * Opens a limiter on a counting clock, without a reclaimer thread, so
 * every clock reading is one the call under test made.
 */
static struct tk_limiter *open_counted(struct counting_clock *cc,
				       struct tk_clock **clk,
				       const char *policy)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;

	cc->ns = T0;
	cc->error = 0;
	atomic_init(&cc->calls, 0);
	assert_rc(tk_clock_custom_new(clk, counting_now, cc), 0);
	o.clock = *clk;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_limiter_open(&l, policy, "memory", &o), 0);
	return l;
}

/* A batch is decided at one clock reading, each request in order. */
static void test_check_many_one_clock_read(void **state)
{
	const uint64_t T = 100 * MS; /* gcra:10/s,burst=5 */
	struct counting_clock cc;
	struct tk_clock *clk;
	struct tk_limiter *l;
	struct tk_request reqs[10];
	struct tk_decision out[10], d;
	int rcs[10];
	size_t i;

	(void)state;
	l = open_counted(&cc, &clk, "gcra:10/s,burst=5");
	for (i = 0; i < 10; i++) {
		reqs[i].key = i % 2 ? "odd" : "even";
		reqs[i].key_len = i % 2 ? 3 : 4;
		reqs[i].cost = 1;
		rcs[i] = 12345;
		poison(&out[i]);
	}
	reqs[8].cost = 3; /* the fifth "even" request: 4 + 3 > 5 */

	atomic_store(&cc.calls, 0);
	assert_rc(tk_limiter_check_many(l, reqs, 10, out, rcs), 0);
	assert_int_equal(atomic_load(&cc.calls), 1);
	for (i = 0; i < 8; i++) {
		assert_int_equal(rcs[i], 0);
		assert_decision(out[i], true, 5, 4 - i / 2,
				T0 + (i / 2 + 1) * T, 0);
	}
	assert_int_equal(rcs[8], 0);
	assert_decision(out[8], false, 5, 1, T0 + 4 * T, 2 * T);
	assert_int_equal(rcs[9], 0);
	assert_decision(out[9], true, 5, 0, T0 + 5 * T, 0);

	/* One reading per single check too. */
	atomic_store(&cc.calls, 0);
	assert_rc(tk_limiter_check(l, "even", 4, 1, &d), 0);
	assert_int_equal(atomic_load(&cc.calls), 1);
	assert_decision(d, true, 5, 0, T0 + 5 * T, 0);

	/*
	 * Failing requests report their own codes, the call returns the
	 * first, and the requests after them are still decided.
	 */
	cc.ns = T0 + 10 * SEC;
	reqs[0] = (struct tk_request){ "x", 1, 1 };
	reqs[1] = (struct tk_request){ "x", 1, 0 };
	reqs[2] = (struct tk_request){ "x", 1, 6 };
	reqs[3] = (struct tk_request){ "", 0, 1 };
	reqs[4] = (struct tk_request){ "x", 1, 4 };
	atomic_store(&cc.calls, 0);
	assert_rc(tk_limiter_check_many(l, reqs, 5, out, rcs), -EINVAL);
	assert_int_equal(atomic_load(&cc.calls), 1);
	assert_int_equal(rcs[0], 0);
	assert_int_equal(rcs[1], -EINVAL);
	assert_int_equal(rcs[2], -ERANGE);
	assert_int_equal(rcs[3], -EINVAL);
	assert_int_equal(rcs[4], 0);
	assert_decision(out[4], true, 5, 0, T0 + 10 * SEC + 5 * T, 0);

	/* Without rcs, the return code alone. */
	reqs[0] = (struct tk_request){ "y", 1, 6 };
	reqs[1] = (struct tk_request){ "y", 1, 0 };
	assert_rc(tk_limiter_check_many(l, reqs, 2, out, NULL), -ERANGE);

	tk_limiter_close(l);
	tk_clock_free(clk);
}

/* A clock error is the call's error, and nothing is consumed. */
static void test_clock_error_propagates(void **state)
{
	struct counting_clock cc;
	struct tk_clock *clk;
	struct tk_limiter *l;
	struct tk_decision d;

	(void)state;
	l = open_counted(&cc, &clk, "gcra:10/s,burst=2");
	cc.error = -EIO;
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), -EIO);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), -EIO);
	cc.error = 0;
	assert_rc(tk_limiter_check(l, "k", 1, 2, &d), 0);
	assert_decision(d, true, 2, 0, T0 + 200 * MS, 0);
	tk_limiter_close(l);
	tk_clock_free(clk);
}

/*
 * Random policies and timelines against the reference model: every field
 * of every check, peek and forecast must match.  Time mostly moves forward by
 * up to a few T, sometimes stands still, sometimes idles for a while, and
 * sometimes jumps back.  No reclaimer thread: a background sweep reads the
 * clock at moments the test does not control, and a failure must reproduce from
 * its seed alone.  (For a correct store the thread changes no decision.)
 */
static void test_property_vs_reference(void **state)
{
	const int nseeds = 16, nops = 2000;
	struct tk_decision got, want;
	struct ref ref;
	struct fx f;
	char policy[96];
	const char *what;
	uint64_t seed, L, P, B, now, cost, r, back, checked, denied;
	int s, i, rc, want_rc;

	(void)state;
	checked = denied = 0;
	for (s = 0; s < nseeds; s++) {
		seed = 0x7e57c0de00ull + (uint64_t)s;
		L = rnd_range(&seed, 1, 50);
		B = rnd_range(&seed, 1, 50);
		switch (rnd_range(&seed, 0, 3)) {
		case 0: /* whole ms, default burst */
			P = rnd_range(&seed, 1, 10000) * MS;
			B = L;
			snprintf(policy, sizeof(policy), "gcra:%llu/%llums",
				 (unsigned long long)L,
				 (unsigned long long)(P / MS));
			break;
		case 1: /* whole ms */
			P = rnd_range(&seed, 1, 10000) * MS;
			snprintf(policy, sizeof(policy),
				 "gcra:%llu/%llums,burst=%llu",
				 (unsigned long long)L,
				 (unsigned long long)(P / MS),
				 (unsigned long long)B);
			break;
		default: /* any ns: T rarely divides P */
			P = rnd_range(&seed, 1 * MS, 10 * SEC);
			snprintf(policy, sizeof(policy),
				 "gcra:%llu/%lluns,burst=%llu",
				 (unsigned long long)L, (unsigned long long)P,
				 (unsigned long long)B);
			break;
		}
		ref_init(&ref, L, P, B);
		now = T0 + rnd_range(&seed, 0, 100 * SEC);
		fx_open_flags(&f, policy, now, TK_OPT_NO_RECLAIMER);

		for (i = 0; i < nops; i++) {
			back = 0;
			r = rnd_range(&seed, 0, 99);
			if (r < 25)
				; /* same instant: bursts */
			else if (r < 85)
				now += rnd_range(&seed, 1, 3 * ref.T);
			else if (r < 92)
				now += rnd_range(&seed, 1, 2 * ref.tau + ref.T);
			else if (r < 99)
				back = rnd_range(&seed, 1,
						 2 * ref.tau + 2 * ref.T);
			else
				back = rnd_range(&seed, 1, 10 * SEC);
			if (r >= 92)
				now = now - T0 > back ? now - back : T0;
			fx_at(&f, now);

			r = rnd_range(&seed, 0, 99);
			poison(&got);
			memset(&want, 0, sizeof(want));
			if (r < 80) {
				what = "check";
				cost = rnd_range(&seed, 1, B);
				want_rc =
					ref_eval(&ref, now, cost, true, &want);
				rc = tk_limiter_check(f.l, "k", 1, cost, &got);
			} else if (r < 82) {
				what = "check";
				cost = rnd_range(&seed, B + 1, B + 3);
				want_rc =
					ref_eval(&ref, now, cost, true, &want);
				rc = tk_limiter_check(f.l, "k", 1, cost, &got);
			} else if (r < 90) {
				what = "peek";
				cost = 0;
				ref_peek(&ref, now, &want);
				want_rc = 0;
				rc = tk_limiter_peek(f.l, "k", 1, &got);
			} else if (r < 99) {
				what = "forecast";
				cost = rnd_range(&seed, 1, B);
				want_rc = ref_forecast(&ref, now, cost, &want);
				rc = tk_limiter_forecast(f.l, "k", 1, cost,
							 &got);
			} else {
				what = "reset";
				cost = 0;
				ref.has_state = false;
				want_rc = 0;
				rc = tk_limiter_reset(f.l, "k", 1);
				got = want;
			}
			if (rc != want_rc)
				fail_msg("seed %d (%s) op %d %s cost %llu at "
					 "T0+%lluns: rc %d (%s), want %d (%s)",
					 s, policy, i, what,
					 (unsigned long long)cost,
					 (unsigned long long)(now - T0), rc,
					 tk_strerrorname(rc), want_rc,
					 tk_strerrorname(want_rc));
			if (rc != 0)
				continue;
			if (got.allowed != want.allowed ||
			    got.limit != want.limit ||
			    got.remaining != want.remaining ||
			    got.reset_at != want.reset_at ||
			    got.retry_after != want.retry_after)
				fail_msg("seed %d (%s) op %d %s cost %llu at "
					 "T0+%lluns: got {%d, %llu, %llu, "
					 "T0+%lld, %llu}, want {%d, %llu, "
					 "%llu, T0+%lld, %llu}",
					 s, policy, i, what,
					 (unsigned long long)cost,
					 (unsigned long long)(now - T0),
					 got.allowed,
					 (unsigned long long)got.limit,
					 (unsigned long long)got.remaining,
					 (long long)(got.reset_at - T0),
					 (unsigned long long)got.retry_after,
					 want.allowed,
					 (unsigned long long)want.limit,
					 (unsigned long long)want.remaining,
					 (long long)(want.reset_at - T0),
					 (unsigned long long)want.retry_after);
			checked++;
			denied += !got.allowed;
		}
		fx_close(&f);
	}
	/* The timelines must have exercised both outcomes substantially. */
	assert_true(checked > (uint64_t)nseeds * nops * 9 / 10);
	assert_true(denied > checked / 20 && denied < checked * 19 / 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cold_burst_exactly_b),
		cmocka_unit_test(test_default_burst_is_limit),
		cmocka_unit_test(test_pacing_one_per_t),
		cmocka_unit_test(test_hand_worked_fractional_t),
		cmocka_unit_test(test_hand_worked_cost_gt_1),
		cmocka_unit_test(test_deny_never_consumes),
		cmocka_unit_test(test_backward_jump_stays_denied),
		cmocka_unit_test(test_backward_jump_after_expiry),
		cmocka_unit_test(test_backward_jump_beyond_grace),
		cmocka_unit_test(test_tat_above_2_63),
		cmocka_unit_test(test_backward_jumps_never_over_admit),
		cmocka_unit_test(test_cost_over_burst_is_erange),
		cmocka_unit_test(test_invalid_arguments),
		cmocka_unit_test(test_keys_are_counted_bytes),
		cmocka_unit_test(test_invalid_policies),
		cmocka_unit_test(test_peek_does_not_consume),
		cmocka_unit_test(test_forecast_matches_later_check),
		cmocka_unit_test(test_reset_makes_key_cold),
		cmocka_unit_test(test_prefix_isolation),
		cmocka_unit_test(test_check_many_one_clock_read),
		cmocka_unit_test(test_clock_error_propagates),
		cmocka_unit_test(test_property_vs_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
