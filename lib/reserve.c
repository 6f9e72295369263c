/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reserve.c - reservations: units taken by a check now and given back by
 * tk_reservation_cancel() if the work did not happen (x/time/rate's
 * Reserve() and Cancel()).
 *
 * - A reservation is a check by the store's general path (apply(), or
 *   apply_multi() for a composite), its transition wrapped so that the
 *   states it read (PRE) and wrote (POST) of each key are kept.
 * - Its cancel is one more transition on the same keys, with the refund
 *   rules of the Redis cross-slot protocol (redis/xslot.c, check.lua's
 *   refund), so that a cancel gives back what a refused cross-slot all()
 *   gives back:
 *   - a key still at POST gets PRE back: exactly as if the check had not
 *     been (no PRE: no state);
 *   - a key written since keeps those writes and loses only this check's
 *     units where that is exact, because counts commute: a fixed window
 *     or quota still in POST's window with the cost or more; a sliding
 *     log's cost stamps of the check's time; a sliding window's bucket
 *     that still holds POST's tick with the cost or more; a state left
 *     counting nothing becomes no state;
 *   - any other state is left as it is (gcra, token-bucket and leaky
 *     states written since, a later window, an expired or reset key):
 *     the consume stays, fewer admitted, never more.
 * - A store that spells states its own way (Redis) keeps them as it
 *   spelled them at the check and runs its own refund (its refund()
 *   op: check.lua's refund script, through redis/xslot.c); every other
 *   store runs give_back() below by apply().
 * - A reservation is cancelled at most once.
 */
#include "algo/algo.h"
#include "clock.h"
#include "error.h"
#include "reserve.h"
#include "step.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tk_reservation {
	struct tk_store *store;
	struct tk_clock *clock;
	struct tk_policy *policy; /* a copy of the limiter's at reserve */
	unsigned char key[TK__MULTI_MAX][TK__STORE_KEY_MAX];
	size_t len[TK__MULTI_MAX];
	uint64_t cost; /* units */
	uint64_t now;  /* ns: the time the check decided at */
	int cancelled;
	int had[TK__MULTI_MAX];	  /* a PRE state */
	int wrote[TK__MULTI_MAX]; /* a POST state */
	uint64_t *pre[TK__MULTI_MAX], *post[TK__MULTI_MAX];
	/* The same states as a store with its own spelling (Redis) spells
	 * them, for its refund(). */
	struct tk__spelling spelling;
	uint64_t words[]; /* PRE and POST, 2 * policy->state_words */
};

/* A packed window word: the coarse end above its count's 24 bits. */
#define PACKED_COUNT ((UINT64_C(1) << 24) - 1)

static size_t words_of(const struct tk_reservation *r, size_t i)
{
	return r->policy->dim[i].state_words;
}

/* Is @a the state @b?  A log's words past its stamps mean nothing. */
static int same(const struct tk__policy *p, const uint64_t *a,
		const uint64_t *b)
{
	if (p->alg->id == TK__ALG_SLIDING_LOG)
		return a[0] == b[0] && a[0] < p->state_words &&
		       !memcmp(a + 1, b + 1, a[0] * sizeof(a[0]));
	return !memcmp(a, b, p->state_words * sizeof(a[0]));
}

/* A window's count less @cost, if @cur is still @post's window. */
static int unwindow(const struct tk__policy *p, const uint64_t *cur,
		    const uint64_t *post, uint64_t cost, uint64_t *next)
{
	uint64_t count;

	if (p->state_words == 1) {
		count = cur[0] & PACKED_COUNT;
		if ((cur[0] & ~PACKED_COUNT) != (post[0] & ~PACKED_COUNT) ||
		    count < cost)
			return 0;
		next[0] = count == cost ? 0 : cur[0] - cost;
		return 1;
	}
	if (cur[0] != post[0] || cur[1] < cost)
		return 0;
	next[0] = cur[1] == cost ? 0 : cur[0];
	next[1] = cur[1] - cost;
	return 1;
}

/* A log less @cost stamps of @at, if it holds that many. */
static int unlog(const struct tk__policy *p, const uint64_t *cur, uint64_t cost,
		 uint64_t at, uint64_t *next)
{
	uint64_t i, n = cur[0], left = cost, out = 0;

	if (n >= p->state_words)
		return 0;
	for (i = 1; i <= n; i++) {
		if (left && cur[i] == at)
			left--;
		else
			next[1 + out++] = cur[i];
	}
	if (left)
		return 0;
	next[0] = out;
	return 1;
}

/* A sliding window less @cost in the bucket of @at, if it still holds
 * @post's tick and that many. */
static int unslide(const struct tk__policy *p, const uint64_t *cur,
		   const uint64_t *post, uint64_t cost, uint64_t at,
		   uint64_t *next)
{
	uint64_t ring = (uint64_t)p->u.sliding.buckets + 1;
	uint64_t i = at / p->u.sliding.width % ring;

	if (cur[2 * i] != post[2 * i] || cur[2 * i + 1] < cost)
		return 0;
	memcpy(next, cur, p->state_words * sizeof(next[0]));
	next[2 * i + 1] -= cost;
	if (next[2 * i + 1] == 0)
		next[2 * i] = 0;
	return 1;
}

/* Does @s count nothing (then it is written as no state)? */
static int empty(const struct tk__policy *p, const uint64_t *s)
{
	uint32_t i;

	for (i = 0; i < p->state_words; i++)
		if (s[i])
			return 0;
	return 1;
}

/*
 * Dimension @i's refund over its state @cur: 1 restored, 2 given back
 * (@next and *@exp written), 0 left as it is.
 */
static int give_back(const struct tk_reservation *r, size_t i,
		     const uint64_t *cur, uint64_t *next, uint64_t *exp)
{
	const struct tk__policy *p = &r->policy->dim[i];
	int done = 0;

	memset(next, 0, p->state_words * sizeof(next[0]));
	if (!cur || !r->wrote[i])
		return 0;
	if (same(p, cur, r->post[i])) {
		if (r->had[i])
			memcpy(next, r->pre[i],
			       p->state_words * sizeof(next[0]));
		done = 1;
	} else if (p->alg->id == TK__ALG_FIXED_WINDOW ||
		   p->alg->id == TK__ALG_QUOTA) {
		done = 2 * unwindow(p, cur, r->post[i], r->cost, next);
	} else if (p->alg->id == TK__ALG_SLIDING_LOG) {
		done = 2 * unlog(p, cur, r->cost, r->now, next);
	} else if (p->alg->id == TK__ALG_SLIDING_WINDOW) {
		done = 2 * unslide(p, cur, r->post[i], r->cost, r->now, next);
	}
	if (p->alg->id == TK__ALG_SLIDING_LOG && next[0] == 0)
		memset(next, 0, p->state_words * sizeof(next[0]));
	/* No state: all-zero words, which expire at once. */
	*exp = empty(p, next) ? 0 : p->alg->expires(p, next);
	return done;
}

/* The check's transitions, keeping what they read and wrote. */
struct capture {
	struct tk_reservation *r;
	const struct tk__transform *t;
	const struct tk__multi *m;
	int done[TK__MULTI_MAX];
};

static void keep(struct tk_reservation *r, size_t i, const uint64_t *old,
		 const uint64_t *next)
{
	size_t n = words_of(r, i);

	r->had[i] = old != NULL;
	r->wrote[i] = next != NULL;
	if (old)
		memcpy(r->pre[i], old, n * sizeof(old[0]));
	if (next)
		memcpy(r->post[i], next, n * sizeof(next[0]));
}

static int capture_one(void *ctx, const uint64_t *old, uint64_t *next,
		       uint64_t *exp)
{
	struct capture *c = ctx;
	int rc = c->t->fn(c->t->ctx, old, next, exp);

	keep(c->r, 0, old, rc == TK__PERSIST ? next : NULL);
	return rc;
}

static int capture_multi(void *ctx, const uint64_t *const *old,
			 uint64_t *const *next, int *persist, uint64_t *exp)
{
	struct capture *c = ctx;
	int rc = c->m->fn(c->m->ctx, old, next, persist, exp);
	size_t i;

	for (i = 0; i < c->m->n; i++)
		keep(c->r, i, old[i],
		     rc == TK__PERSIST && persist[i] ? next[i] : NULL);
	return rc;
}

static int refund_one(void *ctx, const uint64_t *old, uint64_t *next,
		      uint64_t *exp)
{
	struct capture *c = ctx;

	c->done[0] = give_back(c->r, 0, old, next, exp);
	return c->done[0] ? TK__PERSIST : TK__KEEP;
}

static int refund_multi(void *ctx, const uint64_t *const *old,
			uint64_t *const *next, int *persist, uint64_t *exp)
{
	struct capture *c = ctx;
	size_t i;
	int any = 0;

	for (i = 0; i < c->r->policy->n; i++) {
		c->done[i] = give_back(c->r, i, old[i], next[i], &exp[i]);
		persist[i] = c->done[i] != 0;
		any |= persist[i];
	}
	return any ? TK__PERSIST : TK__KEEP;
}

/* The multi-key step over @r's keys, as the limiter's composites run. */
static void multi_of(const struct tk_reservation *r, struct tk__multi *m)
{
	const struct tk_policy *pol = r->policy;
	size_t i;

	m->n = pol->n;
	m->kind = pol->kind;
	for (i = 0; i < pol->n; i++) {
		m->key[i] = r->key[i];
		m->len[i] = r->len[i];
		m->words[i] = pol->dim[i].state_words;
		m->alg[i] = pol->dim[i].alg->id;
		m->policy[i] = &pol->dim[i];
	}
}

/* The check of @r at @now, its states kept: as run() in limiter.c. */
static int check(struct tk_reservation *r, uint64_t now,
		 struct tk_decision *out)
{
	const struct tk__policy *p = &r->policy->dim[0];
	struct capture c = { .r = r };
	struct tk__transform t, wrapped;
	struct tk__multi m, mw;
	struct tk__step s;
	int rc;

	if (r->policy->kind == TK__SINGLE) {
		tk__step_single(&s, TK__OP_CHECK, p,
				tk__step_flags(TK__OP_CHECK, p), now, r->cost,
				&t);
		c.t = &t;
		wrapped = t;
		wrapped.fn = capture_one;
		/* Every state it writes goes through capture_one(). */
		wrapped.inplace = NULL;
		wrapped.ctx = &c;
		wrapped.spelling = &r->spelling;
		rc = r->store->ops->apply(r->store, r->key[0], r->len[0], now,
					  &wrapped);
	} else {
		s = (struct tk__step){ .policy = r->policy,
				       .op = TK__OP_CHECK,
				       .now = now,
				       .cost = r->cost,
				       .n = r->policy->n,
				       .kind = r->policy->kind };
		m = (struct tk__multi){ .fn = tk__composite_fn,
					.ctx = &s,
					.flags = TK__T_CHECK,
					.cost = r->cost,
					.now = &s.now };
		multi_of(r, &m);
		c.m = &m;
		mw = m;
		mw.fn = capture_multi;
		mw.ctx = &c;
		mw.spelling = &r->spelling;
		rc = r->store->ops->apply_multi(r->store, now, &mw);
	}
	r->now = s.now;
	return tk__step_done(r->store, &s, rc, out);
}

TK_API int tk_limiter_reserve(struct tk_limiter *l, const char *key,
			      size_t key_len, uint64_t cost,
			      struct tk_reservation **res,
			      struct tk_decision *out)
{
	struct tk__reserve_keys k;
	struct tk_reservation *r;
	uint64_t now;
	size_t i, at = 0;
	int rc;

	if (!l || !res || !out || cost == 0)
		return -EINVAL;
	*res = NULL;
	rc = tk__limiter_reserve_keys(l, key, key_len, &k);
	if (rc)
		return tk__rc(rc);
	r = calloc(1, sizeof(*r) +
			      2 * k.policy->state_words * sizeof(r->words[0]));
	if (!r) {
		free(k.policy);
		return -ENOMEM;
	}
	r->store = k.store;
	r->clock = k.clock;
	r->policy = k.policy;
	r->cost = cost;
	memcpy(r->key, k.key, sizeof(r->key));
	memcpy(r->len, k.len, sizeof(r->len));
	for (i = 0; i < r->policy->n; i++) {
		r->pre[i] = r->words + at;
		r->post[i] = r->words + k.policy->state_words + at;
		at += words_of(r, i);
	}
	rc = tk__clock_read(k.clock, &now);
	if (rc == 0)
		rc = check(r, now, out);
	if (rc == 0 && out->allowed)
		*res = r;
	else
		tk_reservation_free(r);
	return tk__rc(rc);
}

/* The refund of a store that runs it itself (Redis: check.lua's). */
static int refund_there(struct tk_reservation *r)
{
	const struct tk__policy *pol[TK__MULTI_MAX];
	const unsigned char *key[TK__MULTI_MAX];
	int done[TK__MULTI_MAX], rc, n = 0;
	size_t i;

	for (i = 0; i < r->policy->n; i++) {
		pol[i] = &r->policy->dim[i];
		key[i] = r->key[i];
	}
	rc = r->store->ops->refund(r->store, r->policy->n, key, r->len, pol,
				   &r->spelling, r->cost, done);
	if (rc < 0)
		return tk__rc(rc);
	r->cancelled = 1;
	for (i = 0; i < r->policy->n; i++)
		n += done[i] != 0;
	return n;
}

TK_API int tk_reservation_cancel(struct tk_reservation *r)
{
	const struct tk__policy *p;
	struct capture c = { 0 };
	struct tk__transform t;
	struct tk__multi m = { 0 };
	uint64_t now;
	int rc, n = 0;
	size_t i;

	if (!r)
		return -EINVAL;
	if (r->cancelled)
		return -EALREADY;
	/* The store's refund knows the built-in algorithms only. */
	if (r->store->ops->refund && !tk__policy_has_user(r->policy))
		return refund_there(r);
	/* A state that expired since holds none of the units. */
	rc = tk__clock_read(r->clock, &now);
	if (rc)
		return tk__rc(rc);
	c.r = r;
	p = &r->policy->dim[0];
	if (r->policy->kind == TK__SINGLE) {
		t = (struct tk__transform){
			.fn = refund_one,
			.ctx = &c,
			.words = p->state_words,
			.flags = tk__step_flags(TK__OP_FORECAST, p),
			.alg = p->alg->id,
			.policy = p,
			.cost = r->cost,
			.now = &r->now,
		};
		rc = r->store->ops->apply(r->store, r->key[0], r->len[0], now,
					  &t);
	} else {
		m.fn = refund_multi;
		m.ctx = &c;
		m.cost = r->cost;
		m.now = &r->now;
		multi_of(r, &m);
		rc = r->store->ops->apply_multi(r->store, now, &m);
	}
	if (rc < 0)
		return tk__rc(rc);
	r->cancelled = 1;
	for (i = 0; i < r->policy->n; i++)
		n += c.done[i] != 0;
	return n;
}

TK_API void tk_reservation_free(struct tk_reservation *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < TK__MULTI_MAX; i++) {
		free(r->spelling.pre[i]);
		free(r->spelling.post[i]);
	}
	free(r->policy);
	free(r);
}
