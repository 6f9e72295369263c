/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier-lease.c - a key's lease state in the host's zone, and its pure
 * transitions (tier.h), which every process of the host runs on it by the
 * zone's lock-free apply().
 *
 * - The state: the host's credit (units leased from Redis, not yet
 *   consumed) and its expiry; a cached denial (until when, for checks of
 *   how many units); what Redis last reported (remaining, reset_at); the
 *   size of the last lease; the claim of the one refill in flight (until
 *   when, and its owner's token); a mark that a Redis call failed since
 *   Redis last answered.
 * - TAKE: credit admits; a cached denial denies; else a refill is
 *   claimed (one per host at a time), or, while another process holds
 *   the claim or a lease would be no larger than the check, the check
 *   goes to Redis for its own cost.
 * - DONE: Redis's answer.  An admitted lease adds its units beyond the
 *   check's to the credit, only for the claim's owner (a claim that timed
 *   out and was taken over drops them: under-admission only), so a host
 *   never holds more than one lease's credit.  A denial is cached until
 *   its retry_after, for checks of at least its cost.
 * - The size: doubled after a lease used up (hot), halved after one that
 *   expired mostly unused (cold), at most an eighth of the global
 *   remaining last reported, so that it falls toward 1 near the limit.
 */
#include "store/tier.h"

#include <string.h>

enum {
	W_MAGIC,
	W_CREDIT,      /* units */
	W_EXPIRY,      /* ns: the credit is void from then on */
	W_DENY_UNTIL,  /* ns */
	W_DENY_COST,   /* units: the cached denial's check */
	W_REMAINING,   /* units: Redis's remaining, last reported */
	W_K,	       /* units: the last lease's size */
	W_CLAIM_UNTIL, /* ns */
	W_TOKEN,       /* the claim's owner */
	W_RESET_AT,    /* ns: Redis's reset_at, last reported */
	W_FLAGS,       /* F_* */
};
_Static_assert(W_FLAGS + 1 == TK__LEASE_WORDS, "every word named");

#define MAGIC UINT64_C(0x746b4c6561736531) /* "tkLease1" */
#define F_FAILED 1			   /* Redis failed since it answered */

/* A claim outlives its owner's Redis call (timeouts are shorter). */
#define CLAIM_NS UINT64_C(1000000000)
/* A state without credit, denial or claim is kept this long (its size). */
#define KEEP_NS (UINT64_C(10) * 1000000000)
#define SECOND UINT64_C(1000000000)

int tk__lease_leasable(const struct tk__policy *p)
{
	switch (p->alg->id) {
	case TK__ALG_GCRA:
	case TK__ALG_TOKEN_BUCKET:
	case TK__ALG_FIXED_WINDOW:
	case TK__ALG_QUOTA:
	case TK__ALG_SLIDING_WINDOW:
	case TK__ALG_SLIDING_LOG:
		return 1;
	default:
		return 0;
	}
}

static uint64_t at_most_a_second(uint64_t ns)
{
	return ns < SECOND ? ns : SECOND;
}

uint64_t tk__lease_expiry(const struct tk__policy *p, uint64_t now,
			  const struct tk_decision *got)
{
	switch (p->alg->id) {
	case TK__ALG_FIXED_WINDOW:
	case TK__ALG_QUOTA:
		/* The end of the window the lease was counted in. */
		return got->reset_at;
	case TK__ALG_SLIDING_WINDOW:
		return now + at_most_a_second(p->u.sliding.window);
	case TK__ALG_SLIDING_LOG:
		return now + at_most_a_second(p->u.window.window);
	default: /* gcra, token bucket */
		return now + at_most_a_second(p->u.gcra.period);
	}
}

/* The cap of an adaptive lease of @p. */
static uint64_t cap_of(const struct tk__lease_call *c)
{
	uint64_t cap = c->cfg->lease_max;

	if (!cap) {
		cap = c->p->limit / 16;
		if (cap > TK__TIER_LEASE_MAX_DEFAULT)
			cap = TK__TIER_LEASE_MAX_DEFAULT;
	}
	return cap;
}

/* Units to ask Redis for: the next lease's size, @hot or not. */
static uint64_t size(const struct tk__lease_call *c, const uint64_t *st,
		     int hot)
{
	uint64_t k = c->cfg->lease, cap;

	if (!k) {
		k = st[W_K] ? st[W_K] : 1;
		k = hot ? (k < UINT64_MAX / 2 ? 2 * k : k) : k / 2;
		cap = cap_of(c);
		if (cap > st[W_REMAINING] / 8)
			cap = st[W_REMAINING] / 8;
		if (k > cap)
			k = cap;
	}
	if (k > c->p->limit)
		k = c->p->limit;
	return k < c->cost ? c->cost : k;
}

static uint64_t later(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t expires(const uint64_t *st, uint64_t now)
{
	return later(later(st[W_EXPIRY], st[W_DENY_UNTIL]),
		     later(st[W_CLAIM_UNTIL], now + KEEP_NS));
}

static void decided(struct tk__lease_call *c, const uint64_t *st, int allowed)
{
	memset(&c->d, 0, sizeof(c->d));
	c->d.allowed = allowed;
	c->d.limit = c->p->limit;
	c->d.reset_at = st[W_RESET_AT];
	/* Never above what Redis last reported. */
	c->d.remaining = st[W_REMAINING];
	if (allowed) {
		c->d.degraded = !!(st[W_FLAGS] & F_FAILED);
	} else {
		c->d.retry_after = st[W_DENY_UNTIL] - c->now;
	}
}

static int take(struct tk__lease_call *c, uint64_t *st)
{
	uint64_t now = c->now;
	int hot;

	if (now < st[W_EXPIRY] && st[W_CREDIT] >= c->cost) {
		st[W_CREDIT] -= c->cost;
		c->way = TK__LEASE_ALLOW;
		decided(c, st, 1);
		return TK__PERSIST;
	}
	if (st[W_DENY_UNTIL] > now && c->cost >= st[W_DENY_COST]) {
		c->way = TK__LEASE_DENY;
		decided(c, st, 0);
		return TK__KEEP;
	}
	c->way = TK__LEASE_EXACT;
	if (st[W_CLAIM_UNTIL] > now)
		return TK__KEEP;
	/* Cold: a lease that expired with more than half of it unused. */
	hot = !(st[W_EXPIRY] && now >= st[W_EXPIRY] &&
		2 * st[W_CREDIT] > st[W_K]);
	c->k = size(c, st, hot);
	if (c->k == c->cost)
		return TK__KEEP;
	if (now >= st[W_EXPIRY])
		st[W_CREDIT] = 0; /* void: dropped, never used */
	st[W_CLAIM_UNTIL] = now + CLAIM_NS;
	st[W_TOKEN] = c->token;
	c->way = TK__LEASE_CLAIM;
	return TK__PERSIST;
}

static void done(struct tk__lease_call *c, uint64_t *st)
{
	int mine = c->token && st[W_TOKEN] == c->token;
	uint64_t keep;

	if (mine)
		st[W_CLAIM_UNTIL] = st[W_TOKEN] = 0;
	st[W_REMAINING] = c->got.remaining;
	st[W_RESET_AT] = c->got.reset_at;
	st[W_FLAGS] &= ~(uint64_t)F_FAILED;
	if (!c->got.allowed) {
		if (c->got.retry_after) {
			st[W_DENY_UNTIL] = c->now + c->got.retry_after;
			st[W_DENY_COST] = c->cost;
		}
		return;
	}
	if (!mine || c->k <= c->cost)
		return;
	/* What is left of a lease of the same window joins the new one. */
	keep = c->now < st[W_EXPIRY] && st[W_EXPIRY] == c->expiry ? st[W_CREDIT]
								  : 0;
	st[W_CREDIT] = keep + (c->k - c->cost);
	st[W_EXPIRY] = c->expiry;
	st[W_K] = c->k;
}

int tk__lease_fn(void *ctx, const uint64_t *old, uint64_t *next,
		 uint64_t *expires_at)
{
	struct tk__lease_call *c = ctx;
	int rc = TK__PERSIST;

	/* Another writer's words under this key (none can be: a lease key
	 * has a bit no store key has) are taken as no state. */
	if (old && old[W_MAGIC] == MAGIC) {
		memcpy(next, old, TK__LEASE_WORDS * sizeof(*next));
	} else {
		memset(next, 0, TK__LEASE_WORDS * sizeof(*next));
		next[W_MAGIC] = MAGIC;
	}
	switch (c->op) {
	case TK__LEASE_TAKE:
		rc = take(c, next);
		break;
	case TK__LEASE_DONE:
		done(c, next);
		break;
	case TK__LEASE_FAIL:
		if (c->token && next[W_TOKEN] == c->token)
			next[W_CLAIM_UNTIL] = next[W_TOKEN] = 0;
		next[W_FLAGS] |= F_FAILED;
		break;
	}
	if (rc == TK__PERSIST)
		*expires_at = expires(next, c->now);
	return rc;
}
