/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier-lease.c - a key's lease in the host's zone, and its pure
 * transitions (tier.h), which every process of the host runs by the
 * zone's lock-free apply().  The lease lives under two keys:
 *
 * - The credit word, in a word slot (consumed in place, as a GCRA's TAT
 *   is): the lease's expiry in its high bits, rounded down to 2^24 ns
 *   (so that the zone's reclaimers, which judge a word w by
 *   w | TK__WORD_SLACK, keep it as long as the credit counts), then a
 *   mark that a Redis call failed since Redis last answered, the global
 *   remaining last reported as a power of two not above it, and the
 *   credit (units leased from Redis, not yet consumed).  A check that the
 *   credit covers is one CAS on this word.
 * - The block: a cached denial (until when, for checks of how many
 *   units); what Redis last reported (remaining, reset_at); the size of
 *   the last lease, when Redis decided it and its end; the claim of the
 *   one refill in flight (until when, and its owner's token).  Read and
 *   written only by checks that the credit does not cover.
 * - TAKE: credit admits; a cached denial denies; else a refill is
 *   claimed (one per host at a time), or, while another process holds
 *   the claim or a lease would be no larger than the check, the check
 *   goes to Redis for its own cost.
 * - DONE: Redis's answer.  An admitted lease adds its units beyond the
 *   check's to the credit, only for the claim's owner (a claim that timed
 *   out and was taken over drops them: under-admission only), and the
 *   credit is capped at the lease just granted, so a host never holds
 *   more than one lease's credit.  A denial is cached until
 *   its retry_after, for checks of at least its cost.
 * - RELEASE: the claim of a granted lease is held until its credit is
 *   on the word, and a claimant looks at the word again once it holds
 *   the claim: so a check that found the word empty while a lease was
 *   landing uses that lease, where it would claim a second one whose
 *   credit the cap then dropped.
 * - An expired lease's unused credit (a sliding window's or log's,
 *   tk__lease_returns()): the TAKE that finds it on the word, still
 *   held, takes it off, which makes that call the one to give it back;
 *   the block says when Redis decided that lease, if its end is the
 *   word's (store-tier.c gives it back).
 * - COLLECT: the same taking off of an expired lease's credit, for the
 *   process that was granted the lease, which remembers it
 *   (store-tier.c) so that the credit goes back even if the host does
 *   not check the key again.
 * - The size: doubled after a lease used up (hot), halved after one that
 *   expired mostly unused (cold), at most an eighth of the global
 *   remaining last reported, so that it falls toward 1 near the limit.
 */
#include "store/tier.h"

#include <string.h>

enum {
	W_MAGIC,
	W_DENY_UNTIL,  /* ns */
	W_DENY_COST,   /* units: the cached denial's check */
	W_REMAINING,   /* units: Redis's remaining, last reported */
	W_K,	       /* units: the last lease's size */
	W_CLAIM_UNTIL, /* ns */
	W_TOKEN,       /* the claim's owner */
	W_RESET_AT,    /* ns: Redis's reset_at, last reported */
	W_LEASE_AT,    /* ns: when Redis decided the last lease granted;
			* 0 if another ended with it (which one's?) */
	W_LEASE_END,   /* ns: its end, as its credit word holds it */
};
_Static_assert(W_LEASE_END + 1 == TK__LEASE_WORDS, "every word named");

#define MAGIC UINT64_C(0x746b4c6561736533) /* "tkLease3" */

/* The credit word's fields, below its time (expiry & CW_TIME). */
#define CW_TIME (~(uint64_t)TK__WORD_SLACK)
#define CW_FAILED (UINT64_C(1) << 23)
#define CW_R_SHIFT 16 /* 7 bits: 0, or 1 + log2 of the remaining */
#define CW_R_MASK (UINT64_C(0x7f) << CW_R_SHIFT)
_Static_assert(TK__LEASE_CREDIT_MAX == 0xffff && TK__WORD_SLACK == 0xffffff,
	       "credit, remaining and the mark fit under the time");

/* A claim outlives its owner's Redis call (timeouts are shorter). */
#define CLAIM_NS UINT64_C(1000000000)
/* A state without denial or claim is kept this long (its size). */
#define KEEP_NS (UINT64_C(10) * 1000000000)
#define SECOND UINT64_C(1000000000)
/* A lease living less than this goes exact: its word would expire at
 * once, rounded down to 2^24 ns. */
#define SHORTEST (UINT64_C(2) << 24)

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

int tk__lease_returns(const struct tk__policy *p)
{
	return p->alg->id == TK__ALG_SLIDING_WINDOW ||
	       p->alg->id == TK__ALG_SLIDING_LOG;
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

/*
 * Would a lease taken now live less than SHORTEST (a short period or
 * window; the end of a window, as Redis last reported it)?
 */
static int short_lived(const struct tk__lease_call *c, const uint64_t *st)
{
	const struct tk_decision none = { .reset_at = 0 };
	uint64_t end;

	switch (c->p->alg->id) {
	case TK__ALG_FIXED_WINDOW:
	case TK__ALG_QUOTA:
		end = st[W_RESET_AT];
		return end > c->now && end - c->now < SHORTEST;
	default:
		return tk__lease_expiry(c->p, c->now, &none) - c->now <
		       SHORTEST;
	}
}

/* Units to ask Redis for: the next lease's size, @hot or not. */
static uint64_t size(const struct tk__lease_call *c, const uint64_t *st,
		     int hot)
{
	uint64_t k = c->cfg->lease, cap;

	if (short_lived(c, st))
		return c->cost;
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
	if (k > TK__LEASE_CREDIT_MAX + 1)
		k = TK__LEASE_CREDIT_MAX + 1;
	return k < c->cost ? c->cost : k;
}

static uint64_t later(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* The remaining @r as the word holds it: 0, or 1 + log2(r). */
static uint64_t r_code(uint64_t r)
{
	return r ? (uint64_t)(64 - __builtin_clzll(r)) << CW_R_SHIFT : 0;
}

/* What a word's code says: the power of two not above the remaining. */
static uint64_t r_of(uint64_t w)
{
	uint64_t code = (w & CW_R_MASK) >> CW_R_SHIFT;

	return code ? UINT64_C(1) << (code - 1) : 0;
}

/* The lease whose credit the word gave up: the block's last, if it
 * ended then. */
static void when_decided(struct tk__lease_call *c, const uint64_t *st)
{
	c->ret_at =
		c->ret && st[W_LEASE_END] == c->ret_end ? st[W_LEASE_AT] : 0;
}

static int take(struct tk__lease_call *c, uint64_t *st)
{
	uint64_t now = c->now;
	int hot;

	when_decided(c, st);
	if (st[W_DENY_UNTIL] > now && c->cost >= st[W_DENY_COST]) {
		c->way = TK__LEASE_DENY;
		memset(&c->d, 0, sizeof(c->d));
		c->d.limit = c->p->limit;
		c->d.reset_at = st[W_RESET_AT];
		/* Never above what Redis last reported. */
		c->d.remaining = st[W_REMAINING];
		c->d.retry_after = st[W_DENY_UNTIL] - now;
		return TK__KEEP;
	}
	c->way = TK__LEASE_EXACT;
	if (st[W_CLAIM_UNTIL] > now)
		return TK__KEEP;
	/* Cold: a lease that expired with more than half of it unused. */
	hot = !(c->lease_end && now >= c->lease_end && 2 * c->credit > st[W_K]);
	c->k = size(c, st, hot);
	if (c->k == c->cost)
		return TK__KEEP;
	st[W_CLAIM_UNTIL] = now + CLAIM_NS;
	st[W_TOKEN] = c->token;
	c->way = TK__LEASE_CLAIM;
	return TK__PERSIST;
}

/* The claim of @c's token, if it still holds it, released. */
static void release(const struct tk__lease_call *c, uint64_t *st)
{
	if (c->token && st[W_TOKEN] == c->token)
		st[W_CLAIM_UNTIL] = st[W_TOKEN] = 0;
}

static void done(struct tk__lease_call *c, uint64_t *st)
{
	/* A grant keeps the claim until its credit is on the word
	 * (RELEASE): a check that found the word empty just before then
	 * would otherwise claim a second lease, whose credit the cap of
	 * one lease per host would then drop. */
	c->grant = c->token && st[W_TOKEN] == c->token && c->got.allowed &&
		   c->k > c->cost;
	if (!c->grant)
		release(c, st);
	st[W_REMAINING] = c->got.remaining;
	st[W_RESET_AT] = c->got.reset_at;
	if (!c->got.allowed) {
		if (c->got.retry_after) {
			st[W_DENY_UNTIL] = c->now + c->got.retry_after;
			st[W_DENY_COST] = c->cost;
		}
		return;
	}
	if (c->grant) {
		st[W_K] = c->k;
		/* Grants are one claim's at a time, so their ends never
		 * fall; two that end alike leave no time to give back by. */
		st[W_LEASE_AT] =
			(c->expiry & CW_TIME) == st[W_LEASE_END] ? 0 : c->at;
		st[W_LEASE_END] = c->expiry & CW_TIME;
	}
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
	case TK__LEASE_RELEASE:
		release(c, next);
		break;
	case TK__LEASE_COLLECT:
		when_decided(c, next);
		rc = TK__KEEP;
		break;
	}
	if (rc == TK__PERSIST)
		*expires_at =
			later(later(next[W_DENY_UNTIL], next[W_CLAIM_UNTIL]),
			      c->now + KEEP_NS);
	return rc;
}

/* A check the word's credit covers: consumed, decided. */
static int spend(struct tk__lease_call *c, uint64_t w, uint64_t *next)
{
	next[0] = w - c->cost;
	c->way = TK__LEASE_ALLOW;
	memset(&c->d, 0, sizeof(c->d));
	c->d.allowed = 1;
	c->d.limit = c->p->limit;
	c->d.remaining = r_of(w);
	/* The lease's end, rounded up: a window's end, 16.8 ms late at
	 * most, never before it. */
	c->d.reset_at = w | TK__WORD_SLACK;
	c->d.degraded = !!(w & CW_FAILED);
	return TK__PERSIST;
}

/* DONE on the word: the answer's remaining, the mark cleared, and the
 * credit of a lease granted to this claim. */
static int credit_done(struct tk__lease_call *c, const uint64_t *old,
		       uint64_t *next)
{
	uint64_t end = c->expiry & CW_TIME, base = 0;
	int live = old && (old[0] & CW_TIME) > c->now;

	if (c->grant && end > c->now) {
		/* What is left of a lease of the same window joins it
		 * (of a sliding window or log: of another bucket or
		 * time, dropped). */
		if (live && (old[0] & CW_TIME) == end &&
		    !tk__lease_returns(c->p))
			base = old[0] & TK__LEASE_CREDIT_MAX;
		base += c->k - c->cost;
		/* Never more than the lease just granted: a refill claimed
		 * by a process that read the word before another's lease
		 * landed in it adds only what the cap leaves (the rest is
		 * dropped), so a host holds at most one lease's credit. */
		if (base > c->k)
			base = c->k;
		next[0] = end | r_code(c->got.remaining) | base;
	} else if (live) {
		next[0] = (old[0] & (CW_TIME | TK__LEASE_CREDIT_MAX)) |
			  r_code(c->got.remaining);
	} else {
		return TK__KEEP;
	}
	return TK__PERSIST;
}

int tk__credit_fn(void *ctx, const uint64_t *old, uint64_t *next,
		  uint64_t *expires_at)
{
	struct tk__lease_call *c = ctx;
	int live = old && (old[0] & CW_TIME) > c->now, rc = TK__KEEP;

	switch (c->op) {
	case TK__LEASE_TAKE:
	case TK__LEASE_COLLECT:
		c->way = TK__LEASE_EXACT;
		c->credit = old ? old[0] & TK__LEASE_CREDIT_MAX : 0;
		c->lease_end = old ? old[0] & CW_TIME : 0;
		c->ret = 0;
		if (live && c->credit >= c->cost && c->op == TK__LEASE_TAKE) {
			rc = spend(c, old[0], next);
		} else if (!live && c->credit && tk__lease_returns(c->p)) {
			/* Expired, its credit not yet taken: this CAS makes
			 * this call the one that gives it back. */
			c->ret = c->credit;
			c->ret_end = c->lease_end;
			next[0] = old[0] & ~(uint64_t)TK__LEASE_CREDIT_MAX;
			rc = TK__PERSIST;
		}
		break;
	case TK__LEASE_DONE:
		rc = credit_done(c, old, next);
		break;
	case TK__LEASE_FAIL:
		if (live) {
			next[0] = old[0] | CW_FAILED;
			rc = TK__PERSIST;
		}
		break;
	case TK__LEASE_RELEASE:
		break;
	}
	if (rc == TK__PERSIST)
		*expires_at = next[0] | TK__WORD_SLACK;
	return rc;
}
