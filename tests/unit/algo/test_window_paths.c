/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_window_paths.c - the window algorithms' short cuts against the
 * long way round (white-box, linked statically).
 *
 * A check of a fixed or sliding window takes short cuts the contract in
 * lib/algo/algo.h allows but does not spell out:
 *   - the sliding window's divisions are multiplies by reciprocals made at
 *     parse, its ring-slot test of valid() a multiply by an inverse, and
 *     its copy of the state into the next one happens while it sums it;
 *     here it is compared, state by state and field by field, with a
 *     plain transcription of shared/design/semantics.md that divides
 *     (ref_*), on states it writes, states one step off and corrupt ones;
 *   - check_unvalidated() must be valid() then check(): TK__INVALID
 *     exactly where valid() refuses, else check()'s result, decision and
 *     next state;
 *   - expires_at_reset: after a check that persists a cost of 1 or more,
 *     expires(next) must be the decision's reset_at, for every algorithm
 *     that says so;
 *   - tk__div128() must be the 128-bit division wherever its quotient fits;
 *   - check_hot() (both windows) and the sliding window's check_memo()
 *     must be check() wherever they answer, changing the hot word alone.
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
#include <cmocka.h>

#include <throttlekit.h>

#include "algo/algo.h"
#include "store/store-ops.h"
#include "clock.h"

#include "rnd.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SW_LIMIT_MAX (UINT64_C(1) << 48)
#define WORDS 202 /* 2 * (100 + 1): the largest sliding-window state */

typedef __int128 i128;

/* ------------------------------------------------------------------ */
/* The sliding window, the long way                                     */

struct ref_view {
	uint64_t c, e, full, old, top;
};

static void ref_look(const struct tk__policy *p, const uint64_t *state,
		     uint64_t now, struct ref_view *v)
{
	uint64_t w = p->u.sliding.width, s = p->u.sliding.buckets, i, t, n;

	v->c = now / w;
	v->e = now % w;
	v->full = v->old = 0;
	v->top = v->c;
	for (i = 0; i <= s; i++) {
		t = state[2 * i];
		n = state[2 * i + 1];
		if (n == 0)
			continue;
		if (t + s - 1 >= v->c)
			v->full += n;
		else if (t + s == v->c)
			v->old += n;
		if (t > v->top)
			v->top = t;
	}
}

static i128 ref_room(const struct tk__policy *p, const struct ref_view *v,
		     uint64_t cost)
{
	uint64_t w = p->u.sliding.width;

	return (i128)p->limit * w - (i128)(v->full + cost) * w -
	       (i128)v->old * (w - v->e);
}

static uint64_t ref_units(const struct tk__policy *p, i128 r)
{
	return r > 0 ? (uint64_t)(r / p->u.sliding.width) : 0;
}

static uint64_t ref_wait(const struct tk__policy *p, const struct ref_view *v,
			 uint64_t now, uint64_t cost)
{
	uint64_t w = p->u.sliding.width, retry;
	i128 dw = -ref_room(p, v, cost);

	if (v->old > 0 && dw <= (i128)v->old * (w - v->e))
		retry = (uint64_t)((dw + v->old - 1) / v->old);
	else
		retry = (v->c + 1) * w - now;
	return retry > 0 ? retry : 1;
}

static int ref_check(const struct tk__policy *p, const uint64_t *state,
		     uint64_t now, uint64_t cost, uint64_t *next,
		     struct tk_decision *d)
{
	uint64_t s = p->u.sliding.buckets, i, words = 2 * (s + 1);
	struct ref_view v;

	if (cost > p->limit)
		return -ERANGE;
	ref_look(p, state, now, &v);
	d->limit = p->limit;
	d->reset_at = (v.top + 1) * p->u.sliding.width + p->u.sliding.window;
	if (ref_room(p, &v, cost) < 0) {
		d->allowed = false;
		d->remaining = ref_units(p, ref_room(p, &v, 0));
		d->retry_after = ref_wait(p, &v, now, cost);
		return TK__KEEP;
	}
	d->allowed = true;
	d->remaining = ref_units(p, ref_room(p, &v, cost));
	d->retry_after = 0;
	for (i = 0; i < words; i += 2) {
		if (state[i + 1] > 0 && state[i] + s < v.c) {
			next[i] = next[i + 1] = 0;
		} else {
			next[i] = state[i];
			next[i + 1] = state[i + 1];
		}
	}
	i = 2 * (v.c % (s + 1));
	if (next[i] == v.c || (next[i] > v.c && next[i + 1] > 0)) {
		next[i + 1] += cost;
	} else {
		next[i] = v.c;
		next[i + 1] = cost;
	}
	return TK__PERSIST;
}

static int ref_forecast(const struct tk__policy *p, const uint64_t *state,
			uint64_t now, uint64_t cost, struct tk_decision *d)
{
	struct ref_view v;
	uint64_t one = cost ? cost : 1;

	if (cost > p->limit)
		return -ERANGE;
	ref_look(p, state, now, &v);
	d->limit = p->limit;
	d->reset_at = (v.top + 1) * p->u.sliding.width + p->u.sliding.window;
	d->remaining = ref_units(p, ref_room(p, &v, 0));
	d->allowed = ref_room(p, &v, one) >= 0;
	d->retry_after = d->allowed ? 0 : ref_wait(p, &v, now, one);
	return TK__KEEP;
}

/* valid(), with a policy of width @w (1 without one). */
static int ref_valid(uint32_t words, const uint64_t *state, uint64_t w,
		     uint32_t want)
{
	uint64_t s = words / 2 - 1, i;

	if (words < 4 || words % 2 || s > 100 || (want && words != want))
		return 0;
	for (i = 0; i <= s; i++) {
		if (state[2 * i + 1] == 0)
			continue;
		if (state[2 * i + 1] > SW_LIMIT_MAX ||
		    state[2 * i] % (s + 1) != i ||
		    state[2 * i] > (TK__NOW_LIMIT - 1) / w)
			return 0;
	}
	return 1;
}

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

static const struct tk__policy *open_policy(struct tk_policy **pol,
					    const char *text)
{
	struct tk_parse_error err;

	if (tk_policy_parse(pol, text, &err) != 0)
		fail_msg("\"%s\" does not parse", text);
	return &(*pol)->dim[0];
}

static void assert_same_decision(const struct tk_decision *a,
				 const struct tk_decision *b, const char *what)
{
	if (a->allowed != b->allowed || a->limit != b->limit ||
	    a->remaining != b->remaining || a->reset_at != b->reset_at ||
	    a->retry_after != b->retry_after || a->delay != b->delay)
		fail_msg("%s: decision {%d %llu %llu %llu %llu} != reference "
			 "{%d %llu %llu %llu %llu}",
			 what, a->allowed, (unsigned long long)a->limit,
			 (unsigned long long)a->remaining,
			 (unsigned long long)a->reset_at,
			 (unsigned long long)a->retry_after, b->allowed,
			 (unsigned long long)b->limit,
			 (unsigned long long)b->remaining,
			 (unsigned long long)b->reset_at,
			 (unsigned long long)b->retry_after);
}

/* A clock reading of tick @c (clamped below 2^63). */
static uint64_t at_tick(uint64_t *seed, const struct tk__policy *p, uint64_t c)
{
	uint64_t w = p->u.sliding.width, now;

	if (c > (TK__NOW_LIMIT - 1) / w)
		c = (TK__NOW_LIMIT - 1) / w;
	now = c * w + rnd_range(seed, 0, w - 1);
	return now < TK__NOW_LIMIT ? now : TK__NOW_LIMIT - 1;
}

/* A tick to work around: near 0, near the top of the clock, or anywhere. */
static uint64_t some_tick(uint64_t *seed, const struct tk__policy *p)
{
	uint64_t top = (TK__NOW_LIMIT - 1) / p->u.sliding.width;

	switch (rnd_range(seed, 0, 3)) {
	case 0:
		return rnd_range(seed, 0, min_u64(top, 300));
	case 1:
		return top - rnd_range(seed, 0, min_u64(top, 300));
	default:
		return rnd_range(seed, 0, top);
	}
}

/*
 * A state for @p around tick @c: one its checks write along a timeline
 * with steps back, sometimes with one word then disturbed.
 */
static void some_state(uint64_t *seed, const struct tk__policy *p, uint64_t c,
		       uint64_t *state)
{
	uint32_t words = p->state_words, i, steps = rnd_range(seed, 0, 12);
	uint64_t s = p->u.sliding.buckets, next[WORDS], t = c, cost, top;
	struct tk_decision d;

	top = (TK__NOW_LIMIT - 1) / p->u.sliding.width;
	memset(state, 0, words * sizeof(*state));
	t = c > 2 * s + 2 ? c - rnd_range(seed, 0, 2 * s + 2) : 0;
	for (i = 0; i < steps; i++) {
		cost = rnd_range(seed, 1, min_u64(p->limit, 3));
		memset(&d, 0, sizeof(d));
		if (ref_check(p, state, at_tick(seed, p, t), cost, next, &d) ==
		    TK__PERSIST)
			memcpy(state, next, words * sizeof(*state));
		/* Forward mostly, sometimes back (a clock step). */
		if (rnd_range(seed, 0, 5) == 0)
			t = t > s ? t - rnd_range(seed, 0, s) : t;
		else
			t = min_u64(top, t + rnd_range(seed, 0, 2));
	}
	i = (uint32_t)rnd_range(seed, 0, words - 1);
	switch (rnd_range(seed, 0, 9)) {
	case 0: /* a tick one off its ring index, or a ring away */
		state[i & ~1u] += rnd_range(seed, 0, 1) ? 1 : s + 1;
		state[(i & ~1u) + 1] |= 1;
		break;
	case 1:
		state[i & ~1u] -= rnd_range(seed, 0, 1) ? 1 : s + 1;
		state[(i & ~1u) + 1] |= 1;
		break;
	case 2: /* the highest tick at its index, and the one above */
		state[i & ~1u] = top - (top % (s + 1)) + (i / 2);
		if (state[i & ~1u] > top)
			state[i & ~1u] -= s + 1;
		state[i & ~1u] += rnd_range(seed, 0, 1) * (s + 1);
		state[(i & ~1u) + 1] = 1;
		break;
	case 3: /* counts at the bound and above */
		state[i | 1] = SW_LIMIT_MAX + rnd_range(seed, 0, 1);
		break;
	case 4:
		state[i] = rnd_next(seed);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Tests                                                                */

static const char *const sliding[] = {
	"sliding-window:10/1s",
	"sliding-window:7/9s,buckets=3",
	"sliding-window:5/3ns,buckets=3",
	"sliding-window:3/1ns,buckets=1",
	"sliding-window:9/8ns,buckets=8",
	"sliding-window:9/63ns,buckets=63",
	"sliding-window:1000/1s,buckets=64",
	"sliding-window:2/1h,buckets=100",
	"sliding-window:4/4611686018427387904ns,buckets=4",
	"sliding-window:281474976710656/1s,buckets=100",
	"sliding-window:1000000000000/1s",
};

/* The sliding window's decisions, states and validity, as the reference
 * has them. */
static void test_sliding_against_reference(void **unused)
{
	uint64_t seed = 0x5eed0001, state[WORDS], next[WORDS], rnext[WORDS];
	uint64_t c, now, cost;
	struct tk_decision d, rd;
	const struct tk__policy *p;
	struct tk_policy *pol;
	size_t k;
	int n, rc, rrc, valid, seen[4] = { 0 };

	(void)unused;
	for (k = 0; k < ARRAY_SIZE(sliding); k++) {
		p = open_policy(&pol, sliding[k]);
		for (n = 0; n < 20000; n++) {
			c = some_tick(&seed, p);
			some_state(&seed, p, c, state);
			valid = ref_valid(p->state_words, state,
					  p->u.sliding.width, p->state_words);
			if (p->alg->valid(p, p->state_words, state) != valid)
				fail_msg("%s: valid() %d, the reference %d "
					 "(seed %llx)",
					 sliding[k], !valid, valid,
					 (unsigned long long)seed);
			assert_int_equal(
				p->alg->valid(NULL, p->state_words, state),
				ref_valid(p->state_words, state, 1, 0));
			seen[valid]++;
			if (!valid)
				continue;
			now = at_tick(&seed, p, c + rnd_range(&seed, 0, 1));
			cost = rnd_range(&seed, 0, 3) == 0
				       ? rnd_range(&seed, 0, p->limit + 1)
				       : rnd_range(&seed, 1, 2);
			memset(&d, 0, sizeof(d));
			memset(&rd, 0, sizeof(rd));
			rc = p->alg->check(p, state, now, cost, next, &d);
			rrc = ref_check(p, state, now, cost, rnext, &rd);
			assert_int_equal(rc, rrc);
			if (rc < 0)
				continue;
			seen[2 + (rc == TK__PERSIST)]++;
			assert_same_decision(&d, &rd, sliding[k]);
			if (rc == TK__PERSIST)
				assert_memory_equal(next, rnext,
						    p->state_words * 8);
			memset(&d, 0, sizeof(d));
			memset(&rd, 0, sizeof(rd));
			assert_int_equal(
				p->alg->forecast(p, state, now, cost, &d),
				ref_forecast(p, state, now, cost, &rd));
			assert_same_decision(&d, &rd, sliding[k]);
		}
		tk_policy_free(pol);
	}
	/* Refused states, denials and writes, each in numbers. */
	for (k = 0; k < 4; k++)
		if (seen[k] < 1000)
			fail_msg("case %zu seen %d times", k, seen[k]);
}

/* Random words for @p, and in *@now a time to check them at: mostly one
 * near their writes, where the short cuts apply. */
static void random_state(uint64_t *seed, const struct tk__policy *p,
			 uint64_t *state, uint64_t *now)
{
	uint64_t next[WORDS], c;
	struct tk_decision d;
	uint32_t i;

	if (p->alg->id == TK__ALG_SLIDING_WINDOW) {
		c = some_tick(seed, p);
		some_state(seed, p, c, state);
		*now = rnd_range(seed, 0, 3)
			       ? at_tick(seed, p, c + rnd_range(seed, 0, 1))
			       : rnd_next(seed) >> 1;
		return;
	}
	memset(state, 0, p->state_words * sizeof(*state));
	memset(next, 0, sizeof(next)); /* a log writes only its entries */
	*now = rnd_range(seed, 0, 3) ? rnd_next(seed) >> 1
				     : rnd_range(seed, 0, 1 << 30);
	if (p->alg->check(p, state, *now, 1, next, &d) == TK__PERSIST)
		memcpy(state, next, p->state_words * sizeof(*state));
	i = (uint32_t)rnd_range(seed, 0, p->state_words - 1);
	switch (rnd_range(seed, 0, 5)) {
	case 0:
		state[i] = rnd_next(seed);
		break;
	case 1:
		state[i] += rnd_range(seed, 0, 1) ? 1 : UINT64_C(1) << 24;
		break;
	case 2:
		state[i] -= rnd_range(seed, 0, 1) ? 1 : UINT64_C(1) << 24;
		break;
	default:
		break;
	}
}

static const char *const all_windows[] = {
	"fixed-window:5/1s",
	"fixed-window:3/7ns",
	"fixed-window:16000000/100ms",
	"fixed-window:16777215/1s",
	"fixed-window:16777216/1s",
	"fixed-window:3/4611686018427387904ns",
	"sliding-window:10/1s",
	"sliding-window:5/3ns,buckets=3",
	"sliding-window:1000000000000/1s",
	"gcra:10/s,burst=5",
	"token-bucket:capacity=4,refill=3/s",
	"leaky:10/s,max-queue=1s",
	"sliding-log:4/1s",
	"quota:5/1s",
	"quota:5/day",
};

/*
 * check_unvalidated() is valid() then check(), and a persisted check of
 * an algorithm with expires_at_reset expires at its reset_at.
 */
static void test_short_cuts_are_the_long_way(void **unused)
{
	uint64_t seed = 0x5eed0002, state[WORDS], next[WORDS], next2[WORDS];
	uint64_t now, cost;
	struct tk_decision d, d2;
	const struct tk__policy *p;
	struct tk_policy *pol;
	size_t k;
	int n, rc, rc2, fast = 0, flagged = 0;

	(void)unused;
	for (k = 0; k < ARRAY_SIZE(all_windows); k++) {
		p = open_policy(&pol, all_windows[k]);
		fast += !!p->alg->check_unvalidated;
		flagged += p->alg->expires_at_reset;
		for (n = 0; n < 20000; n++) {
			random_state(&seed, p, state, &now);
			if (rnd_range(&seed, 0, 3) == 0)
				now += rnd_range(&seed, 0, UINT64_C(1) << 40);
			now &= TK__NOW_LIMIT - 1;
			cost = rnd_range(&seed, 1, min_u64(p->limit, 3));
			memset(&d, 0, sizeof(d));
			memset(&d2, 0, sizeof(d2));
			rc2 = p->alg->valid(p, p->state_words, state)
				      ? p->alg->check(p, state, now, cost,
						      next2, &d2)
				      : TK__INVALID;
			if (p->alg->check_unvalidated) {
				rc = p->alg->check_unvalidated(p, state, now,
							       cost, next, &d);
				if (rc != rc2)
					fail_msg("%s: check_unvalidated() %d, "
						 "valid() then check() %d",
						 all_windows[k], rc, rc2);
				if (rc >= 0 && rc != TK__INVALID)
					assert_same_decision(&d, &d2,
							     all_windows[k]);
				if (rc == TK__PERSIST)
					assert_memory_equal(next, next2,
							    p->state_words * 8);
			}
			if (rc2 == TK__PERSIST && p->alg->expires_at_reset)
				assert_int_equal(p->alg->expires(p, next2),
						 d2.reset_at);
		}
		tk_policy_free(pol);
	}
	/* Both windows take the short cuts this test is about. */
	assert_true(fast >= 1);
	assert_true(flagged >= 2);
}

/*
 * @p's check_hot() on @state at @now is check(): where it answers, check()
 * (valid() then check()) answers the same with the same decision, and an
 * admission's next state is @state with the hot word alone changed, to
 * the value check_hot() gives.  The hot word is this tick's count's,
 * whatever the answer.  Returns check_hot()'s answer, *@value its value.
 */
static int hot_is_check(const struct tk__policy *p, const uint64_t *state,
			uint64_t now, uint64_t cost, uint64_t *value,
			struct tk_decision *dh, const char *what)
{
	uint64_t next[WORDS], want[WORDS];
	struct tk_decision d;
	uint32_t word = UINT32_MAX;
	int rc, rc2;

	memset(dh, 0, sizeof(*dh));
	memset(&d, 0, sizeof(d));
	rc = p->alg->check_hot(p, state, now, cost, &word, value, dh);
	if (p->alg == &tk__sliding_window)
		assert_int_equal(word, 2 * (now / p->u.sliding.width %
					    (p->u.sliding.buckets + 1)) +
					       1);
	else /* a fixed window's count, or none where it packs */
		assert_int_equal(word, p->word_is_expiry ? UINT32_MAX : 1);
	if (rc == TK__NOT_HOT)
		return rc;
	rc2 = p->alg->check_unvalidated(p, state, now, cost, next, &d);
	if (rc != rc2)
		fail_msg("%s: check_hot() %d, check() %d", what, rc, rc2);
	if (rc < 0)
		return rc;
	assert_same_decision(dh, &d, what);
	if (rc == TK__PERSIST) {
		memcpy(want, state, p->state_words * sizeof(*want));
		want[word] = *value;
		assert_memory_equal(next, want, p->state_words * sizeof(*want));
	}
	return rc;
}

/*
 * check_hot() and check_memo() are check() (hot_is_check()).  Where
 * memo() makes a memo of a state at a time, check_hot() steps that state
 * in place then, and check_memo() at any time of that tick answers as
 * check_hot() on the state, with the same value, also after admissions
 * in place; at any other tick, or with a memo out of bounds or of
 * another width, it answers TK__NOT_HOT.  A stub that never answers
 * fails the counts.
 */
static void test_in_place_is_check(void **unused)
{
	uint64_t seed = 0x5eed0005, state[WORDS], next[WORDS], memo[4], bad[4];
	uint64_t c, now, cost, value, after, w, s;
	struct tk_decision d, dm, dh;
	const struct tk__policy *p;
	struct tk_policy *pol;
	uint32_t word;
	size_t k;
	int n, j, rc, rm, hot[3] = { 0 }, memos = 0, memo_keeps = 0;

	(void)unused;
	for (k = 0; k < ARRAY_SIZE(sliding); k++) {
		p = open_policy(&pol, sliding[k]);
		w = p->u.sliding.width;
		s = p->u.sliding.buckets;
		for (n = 0; n < 20000; n++) {
			c = some_tick(&seed, p);
			some_state(&seed, p, c, state);
			now = at_tick(&seed, p, c);
			c = now / w; /* clamped */
			/* Mostly after an admission of this tick. */
			memset(&d, 0, sizeof(d));
			if (rnd_range(&seed, 0, 3) &&
			    p->alg->check(p, state, now, 1, next, &d) ==
				    TK__PERSIST)
				memcpy(state, next, p->state_words * 8);
			cost = rnd_range(&seed, 0, 15) ? rnd_range(&seed, 1, 3)
						       : p->limit + 1;
			rc = hot_is_check(p, state, now, cost, &value, &dh,
					  sliding[k]);
			hot[rc == TK__PERSIST ? 0 : rc == TK__KEEP ? 1 : 2]++;
			if (!p->alg->memo(p, state, now, memo))
				continue;
			memos++;
			if (rc == TK__NOT_HOT)
				fail_msg("%s: a memo of a state check_hot() "
					 "does not step",
					 sliding[k]);
			/* Later in the tick, admissions in place between. */
			word = UINT32_MAX;
			for (j = 0; j < 4; j++) {
				now = at_tick(&seed, p, c);
				cost = rnd_range(&seed, 0, 15)
					       ? rnd_range(&seed, 1, 3)
					       : p->limit + 1;
				memset(&dm, 0, sizeof(dm));
				rm = p->alg->check_memo(
					p, memo, state[2 * (c % (s + 1)) + 1],
					now, cost, &word, &after, &dm);
				rc = hot_is_check(p, state, now, cost, &value,
						  &dh, sliding[k]);
				if (rm != rc)
					fail_msg("%s: check_memo() %d, "
						 "check_hot() %d",
						 sliding[k], rm, rc);
				assert_int_equal(word, 2 * (c % (s + 1)) + 1);
				if (rm < 0)
					continue;
				assert_same_decision(&dm, &dh, sliding[k]);
				memo_keeps += rm == TK__KEEP;
				if (rm == TK__PERSIST) {
					assert_int_equal(after, value);
					state[word] = after;
				}
			}
			/* Another tick; a memo out of bounds or of another
			 * width. */
			now = at_tick(&seed, p,
				      rnd_range(&seed, 0, 1) && c > 0 ? c - 1
								      : c + 1);
			if (now / w != c)
				assert_int_equal(
					p->alg->check_memo(p, memo, 0, now, 1,
							   &word, &after, &dm),
					TK__NOT_HOT);
			now = at_tick(&seed, p, c);
			memcpy(bad, memo, sizeof(bad));
			bad[rnd_range(&seed, 1, 3)] =
				rnd_range(&seed, 0, 1) ? w + 1
						       : s * SW_LIMIT_MAX + 1;
			if (bad[1] != w || bad[2] > s * SW_LIMIT_MAX ||
			    bad[3] > SW_LIMIT_MAX)
				assert_int_equal(
					p->alg->check_memo(p, bad, 0, now, 1,
							   &word, &after, &dm),
					TK__NOT_HOT);
			assert_int_equal(
				p->alg->check_memo(p, memo, SW_LIMIT_MAX + 1,
						   now, 1, &word, &after, &dm),
				TK__NOT_HOT);
		}
		tk_policy_free(pol);
	}
	/* Every way taken, many times. */
	assert_true(hot[0] > 10000 && hot[1] > 1000 && hot[2] > 1000);
	assert_true(memos > 10000 && memo_keeps > 1000);
}

/*
 * A fixed window's check_hot() is check() (hot_is_check()): on states of
 * this window, the last, a later one (a step back), counts around the
 * limit, and corrupt ones; a window that packs into its word has none.
 */
static void test_fixed_in_place_is_check(void **unused)
{
	static const char *const fixed[] = {
		"fixed-window:10/10ms", "fixed-window:3/1ns",
		"fixed-window:16777216/1s", "fixed-window:1000/1s", /* packs */
	};
	uint64_t seed = 0x5eed0006, state[2], value, now, w, start, cost;
	struct tk_decision dh;
	const struct tk__policy *p;
	struct tk_policy *pol;
	size_t k;
	int n, rc, hot[4] = { 0 };

	(void)unused;
	for (k = 0; k < ARRAY_SIZE(fixed); k++) {
		p = open_policy(&pol, fixed[k]);
		w = p->u.window.window;
		for (n = 0; n < 20000; n++) {
			now = rnd_range(&seed, 0, TK__NOW_LIMIT - 1);
			start = now - now % w;
			switch (rnd_range(&seed, 0, 5)) {
			case 0: /* the last window */
				start = start >= w ? start - w : start;
				break;
			case 1: /* a later one: the clock stepped back */
				start = start + w < TK__NOW_LIMIT ? start + w
								  : start;
				break;
			case 2: /* not a window's start */
				start += rnd_range(&seed, 1, w - 1 ? w - 1 : 1);
				break;
			default:
				break;
			}
			state[0] = start;
			state[1] = rnd_range(&seed, 0, 3)
					   ? rnd_range(&seed, 0, p->limit)
					   : rnd_next(&seed);
			cost = rnd_range(&seed, 0, 15)
				       ? rnd_range(&seed, 1,
						   min_u64(p->limit, 3))
				       : p->limit + 1;
			rc = hot_is_check(p,
					  p->word_is_expiry ? &state[1] : state,
					  now, cost, &value, &dh, fixed[k]);
			hot[rc == TK__PERSIST	? 0
			    : rc == TK__KEEP	? 1
			    : rc == TK__NOT_HOT ? 2
						: 3]++;
			if (p->word_is_expiry)
				assert_int_equal(rc, TK__NOT_HOT);
		}
		tk_policy_free(pol);
	}
	assert_true(hot[0] > 10000 && hot[1] > 5000 && hot[2] > 20000 &&
		    hot[3] > 1000);
}

/* A limiter of @policy on @store at @clock. */
static struct tk_limiter *limiter_on(const char *policy, struct tk_store *s,
				     struct tk_clock *clock)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l = NULL;

	o.clock = clock;
	o.store = s;
	assert_int_equal(tk_limiter_open(&l, policy, NULL, &o), 0);
	return l;
}

/*
 * Limiter @l's policy made @text's, keeping the tag, so the store key,
 * it has: a policy that reads states no policy of that tag wrote.
 */
static void pose_as(struct tk_limiter *l, const char *text)
{
	struct tk__policy *p =
		(struct tk__policy *)&tk_limiter_policy(l)->dim[0];
	unsigned char tag[TK__TAG_MAX];
	uint32_t tag_len = p->tag_len;
	struct tk_policy *other;

	memcpy(tag, p->tag, sizeof(tag));
	assert_int_equal(tk__policy_parse(&other, text, NULL), 0);
	assert_int_equal(other->dim[0].state_words, p->state_words);
	*p = other->dim[0];
	memcpy(p->tag, tag, sizeof(tag));
	p->tag_len = tag_len;
	tk_policy_free(other);
}

/*
 * Through the limiter's hot path: a state that another policy of the same
 * algorithm and size wrote under the same store key (policies of one tag
 * never do; a corrupt or foreign state does), which this one's valid()
 * refuses (ticks of 100 ms past 2^63 / 1 s; a window start that is no
 * multiple of 7 s), is no state: a cold key's decision, counted corrupt
 * once, then replaced.
 */
static void test_refused_state_is_cold(void **unused)
{
	static const char *const pairs[][2] = {
		{ "sliding-window:10/1s", "sliding-window:10/10s" },
		{ "fixed-window:16777216/1s", "fixed-window:16777216/7s" },
	};
	const uint64_t t0 = UINT64_C(1700000000) * 1000000000;
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *a, *b;
	struct tk_clock *clock;
	struct tk_decision d;
	struct tk_stats st;
	struct tk_store *s;
	size_t k;

	(void)unused;
	for (k = 0; k < ARRAY_SIZE(pairs); k++) {
		assert_int_equal(tk_clock_manual_new(&clock, t0), 0);
		o.clock = clock;
		o.flags = TK_OPT_NO_RECLAIMER;
		assert_int_equal(tk_store_open(&s, "memory", &o), 0);
		a = limiter_on(pairs[k][0], s, clock);
		b = limiter_on(pairs[k][0], s, clock);
		pose_as(b, pairs[k][1]);
		assert_int_equal(tk_limiter_check(a, "k", 1, 3, &d), 0);
		assert_true(d.allowed);
		assert_int_equal(d.remaining, d.limit - 3);
		assert_int_equal(tk_limiter_check(b, "k", 1, 1, &d), 0);
		assert_true(d.allowed);
		assert_int_equal(d.remaining, d.limit - 1);
		assert_int_equal(tk_store_stats(s, &st, sizeof(st)), 0);
		assert_int_equal(st.corrupt, 1);
		/* Replaced by a state of its own. */
		assert_int_equal(tk_limiter_check(b, "k", 1, 1, &d), 0);
		assert_int_equal(d.remaining, d.limit - 2);
		assert_int_equal(tk_store_stats(s, &st, sizeof(st)), 0);
		assert_int_equal(st.corrupt, 1);
		tk_limiter_close(a);
		tk_limiter_close(b);
		tk_store_close(s);
		tk_clock_free(clock);
	}
}

/*
 * Only an algorithm that says so expires at its reset_at: a sliding log's
 * reset_at is when its oldest entry leaves, its state expires when the
 * newest does.  Taken for the expiry, reset_at would drop the key's
 * second entry with the first.
 */
static void test_expiry_is_the_algorithms(void **unused)
{
	const uint64_t t0 = UINT64_C(1700000000) * 1000000000, ms = 1000000;
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_clock *clock;
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_store *s;

	(void)unused;
	assert_int_equal(tk_clock_manual_new(&clock, t0), 0);
	o.clock = clock;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_int_equal(tk_store_open(&s, "memory", &o), 0);
	l = limiter_on("sliding-log:2/1s", s, clock);
	assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_int_equal(tk_clock_set(clock, t0 + 500 * ms), 0);
	assert_int_equal(tk_limiter_check(l, "k", 1, 1, &d), 0);
	assert_int_equal(d.reset_at, t0 + 1000 * ms);
	assert_int_equal(tk_clock_set(clock, t0 + 1200 * ms), 0);
	assert_int_equal(tk_limiter_peek(l, "k", 1, &d), 0);
	assert_int_equal(d.remaining, 1); /* the entry of t0 + 500 ms */
	tk_limiter_close(l);
	tk_store_close(s);
	tk_clock_free(clock);
}

/* tk__div128() is the division wherever the quotient fits in 64 bits. */
static void test_div128(void **unused)
{
	uint64_t seed = 0x5eed0003, d, q;
	unsigned __int128 n;
	int i;

	(void)unused;
	for (i = 0; i < 200000; i++) {
		d = rnd_next(&seed) >> rnd_range(&seed, 0, 63);
		if (d == 0)
			d = 1;
		q = rnd_next(&seed) >> rnd_range(&seed, 0, 63);
		n = (unsigned __int128)q * d + rnd_range(&seed, 0, d - 1);
		assert_true(tk__div128(n, d) == (uint64_t)(n / d));
	}
	n = ((unsigned __int128)UINT64_MAX << 64) / 3;
	assert_true(tk__div128(n, UINT64_MAX) == (uint64_t)(n / UINT64_MAX));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sliding_against_reference),
		cmocka_unit_test(test_short_cuts_are_the_long_way),
		cmocka_unit_test(test_in_place_is_check),
		cmocka_unit_test(test_fixed_in_place_is_check),
		cmocka_unit_test(test_refused_state_is_cold),
		cmocka_unit_test(test_expiry_is_the_algorithms),
		cmocka_unit_test(test_div128),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
