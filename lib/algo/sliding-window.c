/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sliding-window.c - the sliding window, estimated from S sub-buckets.
 *
 * The window W is cut into S buckets of width w = W / S.  At now, with
 * c = floor(now / w) and e = now - c * w, the buckets of ticks
 * c - S + 1 .. c count in full and the bucket of tick c - S counts for
 * the part of it still inside the window, (w - e) / w.  The estimate
 * est = full + old * (w - e) / w is compared exactly, as integers scaled
 * by w (128-bit): (full + cost) * w + old * (w - e) <= L * w.
 *
 * State: a ring of S + 1 buckets {tick, count}, bucket of tick t at index
 * t mod (S + 1).  After a backward clock step a bucket may carry a tick
 * above c: it counts in full (it is "later" than now), and a request that
 * would land in its ring slot is added to it rather than overwrite it, so
 * nothing counted is ever forgotten early.  A write empties the buckets
 * that count nothing at now (ticks below c - S), so that a later step back
 * cannot make them count again.
 *
 * Cost: every division by w or by S + 1 is a multiply by a reciprocal
 * made at parse (udiv.h), and the 128-bit divisions have quotients that
 * fit in 64 bits (tk__div128).  check() reports reset_at as the expiry
 * of the state it writes, so callers need no fourth pass over the ring
 * (expires_at_reset).
 *
 * Overflow: ticks are below 2^63 / w (valid() holds every state to what a
 * check writes), so (tick + 1) * w + W stays below 2^64; every count is at
 * most L (one bucket never holds more than the estimate it was admitted
 * under), so sums of S + 1 of them do not wrap.
 */
#include "algo/algo.h"
#include "clock.h"
#include "parse.h"

#include <errno.h>

#define BUCKETS_MAX 100
#define WINDOW_MAX (UINT64_C(1) << 62)
/* A sum over S + 1 <= 101 buckets of counts up to L stays far below 2^64. */
#define LIMIT_MAX (UINT64_C(1) << 48)

typedef __int128 i128;

/* The ring index of tick @t: t mod (S + 1). */
static uint64_t ring_of(const struct tk__policy *p, uint64_t t)
{
	return t - tk__udiv(&p->u.sliding.per_ring, t) *
			   ((uint64_t)p->u.sliding.buckets + 1);
}

struct view {
	uint64_t c, e; /* current tick, ns into it */
	uint64_t r;    /* its ring index, c mod (S + 1) */
	uint64_t full; /* counted in full */
	uint64_t old;  /* the bucket half out of the window */
	uint64_t top;  /* highest tick with a count, at least c */
};

/* The running sums of look(). */
struct sums {
	uint64_t full, old, top;
	int ok;
};

/* look() on buckets @i .. @end - 1, the tick of c - S .. c at @i being
 * @tick. */
static inline __attribute__((always_inline)) void
look_run(const uint64_t *state, uint64_t *next, uint64_t c, uint64_t s,
	 uint64_t i, uint64_t end, uint64_t tick, struct sums *m, int write,
	 int validate)
{
	uint64_t t, n;

	for (; i < end; i++, tick++) {
		t = state[2 * i];
		n = state[2 * i + 1];
		if (n == 0) {
			/* keeps its tick */
		} else if (t + s - 1 >= c) { /* [c - S + 1, c], or later */
			m->full += n;
			m->top = t > m->top ? t : m->top;
			if (validate)
				m->ok &= (t == tick) & (n <= LIMIT_MAX);
		} else if (t + s == c) {
			m->old += n;
			if (validate)
				m->ok &= (t == tick) & (n <= LIMIT_MAX);
		} else {
			t = n = 0; /* below c - S: emptied */
			m->ok = 0;
		}
		if (write) {
			next[2 * i] = t;
			next[2 * i + 1] = n;
		}
	}
}

/*
 * Sum up @state at @now.  With @write, also copy it into @next with the
 * buckets that count nothing at now (ticks below c - S) emptied: what a
 * write keeps, in the same pass.
 *
 * With @validate, also say whether the state is surely valid: 1 if every
 * bucket with a count has at most 2^48 in it and the tick of c - S .. c
 * its ring index names (a state checked within the last window); 0 if
 * some has not (a later tick after a step back, a stale one, a corrupt
 * state), for valid() to judge.
 */
static inline __attribute__((always_inline)) int
look(const struct tk__policy *p, const uint64_t *state, uint64_t now,
     struct view *v, uint64_t *next, int write, int validate)
{
	uint64_t w = p->u.sliding.width, s = p->u.sliding.buckets;
	uint64_t c = tk__udiv(&p->u.sliding.per_width, now), r = ring_of(p, c);
	struct sums m = { 0, 0, c, 1 };

	/* Ticks c - S .. c must lie in 0 .. 2^63 / w. */
	if (validate)
		m.ok = c >= s && c <= p->u.sliding.tick_max;
	/* Ring indexes 0 .. r: ticks c - r .. c; the rest: c - S onwards. */
	look_run(state, next, c, s, 0, r + 1, c - r, &m, write, validate);
	look_run(state, next, c, s, r + 1, s + 1, c - s, &m, write, validate);
	v->c = c;
	v->e = now - c * w;
	v->r = r;
	v->full = m.full;
	v->old = m.old;
	v->top = m.top;
	return m.ok;
}

/* L*w - (est + cost)*w: the room left, scaled by w. */
static i128 room(const struct tk__policy *p, const struct view *v,
		 uint64_t cost)
{
	uint64_t w = p->u.sliding.width;

	return (i128)p->limit * w - (i128)(v->full + cost) * w -
	       (i128)v->old * (w - v->e);
}

/*
 * t mod (S + 1) == @i, without a divide: t - i is a multiple of
 * d = (S + 1) = d0 * 2^k (d0 odd) iff, times the inverse of d0 modulo 2^64
 * and rotated right by k, it is at most (2^64 - 1) / d (Granlund and
 * Montgomery, section 9; Lemire, Kaser and Kurz, "Faster remainder by
 * direct computation", 2019).
 */
static int in_ring_slot(const struct tk__policy *p, uint64_t t, uint64_t i)
{
	uint64_t x = (t - i) * p->u.sliding.ring_inv;
	unsigned int k = p->u.sliding.ring_rot;

	x = k ? x >> k | x << (64 - k) : x;
	return t >= i && x <= p->u.sliding.ring_lim;
}

/* r / w, at most L: the quotient fits. */
static uint64_t whole_units(const struct tk__policy *p, i128 r)
{
	return r > 0 ? tk__div128((unsigned __int128)r, p->u.sliding.width) : 0;
}

/* ns until @cost more would fit: the exact formula of the contract. */
static uint64_t wait_for(const struct tk__policy *p, const struct view *v,
			 uint64_t now, uint64_t cost)
{
	uint64_t w = p->u.sliding.width, retry;
	i128 dw = -room(p, v, cost); /* D * w, positive here */

	if (v->old > 0 && dw <= (i128)v->old * (w - v->e))
		/* At most w - e + 1: the quotient fits. */
		retry = tk__div128((unsigned __int128)(dw + v->old - 1),
				   v->old);
	else
		retry = (v->c + 1) * w - now;
	return retry > 0 ? retry : 1;
}

static void report(const struct tk__policy *p, const struct view *v,
		   struct tk_decision *d)
{
	d->limit = p->limit;
	d->reset_at = (v->top + 1) * p->u.sliding.width + p->u.sliding.window;
}

/* A denial's decision on the state @v sums up. */
static __attribute__((noinline)) int deny(const struct tk__policy *p,
					  const struct view *v, uint64_t now,
					  uint64_t cost, struct tk_decision *d)
{
	d->allowed = false;
	d->remaining = whole_units(p, room(p, v, 0));
	d->retry_after = wait_for(p, v, now, cost);
	return TK__KEEP;
}

/* The decision of check() on the state @v sums up: TK__PERSIST for an
 * admission, TK__KEEP, or -ERANGE.  Inline: an admission is the hot
 * path's, and its room is worked out once. */
static inline __attribute__((always_inline)) int
verdict(const struct tk__policy *p, const struct view *v, uint64_t now,
	uint64_t cost, struct tk_decision *d)
{
	i128 r;

	if (cost > p->limit)
		return -ERANGE;
	report(p, v, d);
	r = room(p, v, cost);
	if (r < 0)
		return deny(p, v, now, cost, d);
	d->allowed = true;
	d->remaining = whole_units(p, r);
	d->retry_after = 0;
	return TK__PERSIST;
}

/* check() on the state @v sums up, copied into @next by look(). */
static int decide(const struct tk__policy *p, const struct view *v,
		  uint64_t now, uint64_t cost, uint64_t *next,
		  struct tk_decision *d)
{
	uint64_t i;
	int rc = verdict(p, v, now, cost, d);

	if (rc != TK__PERSIST)
		return rc;
	i = 2 * v->r;
	if (next[i] == v->c || (next[i] > v->c && next[i + 1] > 0)) {
		/* This tick's bucket, or a later one in its slot. */
		next[i + 1] += cost;
	} else {
		next[i] = v->c;
		next[i + 1] = cost;
	}
	return TK__PERSIST;
}

static int sw_check(const struct tk__policy *p, const uint64_t *state,
		    uint64_t now, uint64_t cost, uint64_t *next,
		    struct tk_decision *d)
{
	struct view v;

	/* @next is scratch until TK__PERSIST: fill it in the same pass. */
	look(p, state, now, &v, next, 1, 0);
	return decide(p, &v, now, cost, next, d);
}

static int sw_valid(const struct tk__policy *p, uint32_t words,
		    const uint64_t *state);

/*
 * valid() then check(), in one pass over the ring where look() vouches
 * for the state (every key checked within its window); else valid()
 * judges, then check() runs.
 */
static int sw_check_unvalidated(const struct tk__policy *p,
				const uint64_t *state, uint64_t now,
				uint64_t cost, uint64_t *next,
				struct tk_decision *d)
{
	struct view v;

	if (look(p, state, now, &v, next, 1, 1))
		return decide(p, &v, now, cost, next, d);
	if (!sw_valid(p, p->state_words, state))
		return TK__INVALID;
	return sw_check(p, state, now, cost, next, d);
}

/*
 * check() where it changes the count of the current tick's bucket alone:
 * a state look() vouches for (nothing to empty, no later tick) whose
 * bucket at this tick's ring index is this tick's; and a denial of any
 * state look() vouches for.  No copy: the pass only sums.  The hot word,
 * whatever the answer, is that count's.
 */
static int sw_check_hot(const struct tk__policy *p, const uint64_t *state,
			uint64_t now, uint64_t cost, uint32_t *word,
			uint64_t *value, struct tk_decision *d)
{
	struct view v;
	uint64_t i;
	int ok, rc;

	if (!state) {
		*word = (uint32_t)(2 * ring_of(p,
					       tk__udiv(&p->u.sliding.per_width,
							now)) +
				   1);
		return TK__NOT_HOT;
	}
	ok = look(p, state, now, &v, NULL, 0, 1);
	i = 2 * v.r;
	*word = (uint32_t)i + 1;
	if (!ok)
		return TK__NOT_HOT;
	/* A denial changes nothing, whatever the buckets' ticks. */
	rc = verdict(p, &v, now, cost, d);
	if (rc != TK__PERSIST)
		return rc;
	if (state[i] != v.c)
		return TK__NOT_HOT;
	*value = state[i + 1] + cost;
	return rc;
}

/*
 * The memo of @state at @now's tick c (algo.h): c, the width, the counts
 * that count in full but the current bucket's, and the bucket half out
 * of the window; where look() vouches for @state and its current bucket
 * is this tick's, as check_hot() steps it in place.  Within the tick only
 * that bucket's count changes, and a vouched state's latest tick is c.
 */
static int sw_memo(const struct tk__policy *p, const uint64_t *state,
		   uint64_t now, uint64_t *memo)
{
	struct view v;

	if (!look(p, state, now, &v, NULL, 0, 1) || state[2 * v.r] != v.c)
		return 0;
	memo[0] = v.c;
	memo[1] = p->u.sliding.width;
	memo[2] = v.full - state[2 * v.r + 1];
	memo[3] = v.old;
	return 1;
}

static int sw_check_memo(const struct tk__policy *p, const uint64_t *memo,
			 uint64_t value, uint64_t now, uint64_t cost,
			 uint32_t *word, uint64_t *after, struct tk_decision *d)
{
	uint64_t w = p->u.sliding.width, s = p->u.sliding.buckets;
	struct view v;
	int rc;

	v.c = tk__udiv(&p->u.sliding.per_width, now);
	v.r = ring_of(p, v.c);
	*word = (uint32_t)(2 * v.r + 1);
	/* Sums of at most S + 1 counts of at most 2^48, as look() keeps
	 * them: room() stays within 128 bits whatever a store held. */
	if (memo[0] != v.c || memo[1] != w || memo[2] > s * LIMIT_MAX ||
	    memo[3] > LIMIT_MAX || value > LIMIT_MAX)
		return TK__NOT_HOT;
	v.e = now - v.c * w;
	v.full = memo[2] + value;
	v.old = memo[3];
	v.top = v.c;
	rc = verdict(p, &v, now, cost, d);
	*after = value + cost;
	return rc;
}

static int sw_forecast(const struct tk__policy *p, const uint64_t *state,
		       uint64_t now, uint64_t cost, struct tk_decision *d)
{
	struct view v;

	if (cost > p->limit)
		return -ERANGE;
	look(p, state, now, &v, NULL, 0, 0);
	report(p, &v, d);
	d->remaining = whole_units(p, room(p, &v, 0));
	d->allowed = room(p, &v, cost ? cost : 1) >= 0;
	d->retry_after = d->allowed ? 0 : wait_for(p, &v, now, cost ? cost : 1);
	return TK__KEEP;
}

static uint64_t sw_expires(const struct tk__policy *p, const uint64_t *state)
{
	uint64_t i, top = 0, any = 0;

	for (i = 0; i <= p->u.sliding.buckets; i++) {
		if (state[2 * i + 1] == 0)
			continue;
		any = 1;
		if (state[2 * i] > top)
			top = state[2 * i];
	}
	return any ? (top + 1) * p->u.sliding.width + p->u.sliding.window : 0;
}

/*
 * Every bucket with a count sits at its tick's ring index, with a tick a
 * clock reading below 2^63 gives and at most 2^48 in it.  A count above
 * this policy's L is valid: a policy of a higher limit wrote it, and the
 * key is simply over its new limit (the sums stay far from overflow).
 */
static int sw_valid(const struct tk__policy *p, uint32_t words,
		    const uint64_t *state)
{
	uint64_t s = words / 2 - 1, i;

	if (words < 4 || words % 2 || s > BUCKETS_MAX ||
	    (p && words != p->state_words))
		return 0;
	if (p) {
		/* The hot path: the policy's bounds and reciprocal. */
		for (i = 0; i <= s; i++) {
			if (state[2 * i + 1] == 0)
				continue;
			if (state[2 * i + 1] > LIMIT_MAX ||
			    state[2 * i] > p->u.sliding.tick_max ||
			    !in_ring_slot(p, state[2 * i], i))
				return 0;
		}
		return 1;
	}
	for (i = 0; i <= s; i++) {
		if (state[2 * i + 1] == 0)
			continue;
		if (state[2 * i + 1] > LIMIT_MAX ||
		    state[2 * i] % (s + 1) != i ||
		    state[2 * i] > TK__NOW_LIMIT - 1)
			return 0;
	}
	return 1;
}

static void ring_test_init(struct tk__policy *p, uint64_t d)
{
	unsigned int k = (unsigned int)__builtin_ctzll(d);
	uint64_t d0 = d >> k, inv = d0, j;

	for (j = 0; j < 5; j++) /* Newton: each step doubles the bits */
		inv *= 2 - d0 * inv;
	p->u.sliding.ring_inv = inv;
	p->u.sliding.ring_rot = (uint8_t)k;
	p->u.sliding.ring_lim = UINT64_MAX / d;
}

static int sw_parse(struct tk__policy *p, struct tk__parser *ps)
{
	uint64_t limit, window, buckets = 0;
	size_t start = ps->pos, at;
	const char *name;
	size_t len;
	int rc;

	rc = tk__parse_rate(ps, &limit, &window);
	if (rc)
		return rc;
	while ((rc = tk__parse_option(ps, 0, &name, &len)) == 1) {
		at = ps->pos - len - 1;
		if (!tk__option_is(name, len, "buckets") || buckets)
			return tk__parse_fail(ps, at, "one option buckets=S");
		rc = tk__parse_uint(ps, &buckets);
		if (rc)
			return rc;
		if (buckets < 1 || buckets > BUCKETS_MAX)
			return tk__parse_fail(ps, at + len + 1,
					      "1 to 100 buckets");
	}
	if (rc)
		return rc;
	if (!buckets)
		buckets = 10;
	if (limit == 0 || limit > LIMIT_MAX || window == 0 ||
	    window > WINDOW_MAX)
		return tk__parse_fail(ps, start,
				      "a limit of 1 to 2^48 and a window of "
				      "1 ns to 2^62 ns");
	if (window % buckets != 0)
		return tk__parse_fail(ps, start,
				      "a window that is a whole number of ns "
				      "per bucket");
	p->state_words = 2 * ((uint32_t)buckets + 1);
	p->limit = limit;
	p->u.sliding.window = window;
	p->u.sliding.width = window / buckets;
	p->u.sliding.buckets = (uint32_t)buckets;
	p->u.sliding.tick_max = (TK__NOW_LIMIT - 1) / p->u.sliding.width;
	tk__udiv_init(&p->u.sliding.per_width, p->u.sliding.width);
	tk__udiv_init(&p->u.sliding.per_ring, buckets + 1);
	ring_test_init(p, buckets + 1);
	return 0;
}

static void sw_format(const struct tk__policy *p, struct tk__fmt *f)
{
	tk__fmt(f, "sliding-window:%llu/", (unsigned long long)p->limit);
	tk__fmt_duration(f, p->u.sliding.window);
	if (p->u.sliding.buckets != 10)
		tk__fmt(f, ",buckets=%u", p->u.sliding.buckets);
}

/* The ring's size and the buckets' width: what a tick and a slot mean. */
static size_t sw_layout(const struct tk__policy *p, unsigned char *buf)
{
	buf[0] = (unsigned char)p->u.sliding.buckets;
	tk__layout_u64(buf + 1, p->u.sliding.width);
	return 9;
}

const struct tk__algorithm tk__sliding_window = {
	.name = "sliding-window",
	.id = TK__ALG_SLIDING_WINDOW,
	.parse = sw_parse,
	.format = sw_format,
	.check = sw_check,
	.forecast = sw_forecast,
	.expires = sw_expires,
	.valid = sw_valid,
	.expires_at_reset = 1,
	.check_unvalidated = sw_check_unvalidated,
	.layout = sw_layout,
	.check_hot = sw_check_hot,
	.memo = sw_memo,
	.check_memo = sw_check_memo,
};
