/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tier.h - the two-tier store's parts (shm:NAME+redis://...): a key's
 * lease state in the host's zone and its pure transitions (tier-lease.c),
 * which the store (store-tier.c) runs by the zone's apply() around the
 * Redis store's checks.  throttlekit(7), "Two tiers", states the bound.
 */
#ifndef TK_STORE_TIER_H
#define TK_STORE_TIER_H

#include "algo/algo.h"
#include "store/store-ops.h"

/* The spec's options (tk_store_open(3)). */
struct tk__tier_cfg {
	uint64_t lease;	    /* units per lease, fixed; 0: adaptive */
	uint64_t lease_max; /* the adaptive size's cap, units */
};

#define TK__TIER_LEASE_MAX_DEFAULT 1024

/* Words of a lease's block in the zone (tier-lease.c names them). */
#define TK__LEASE_WORDS 10
/* Most units of credit a host holds (the credit word's 16 low bits). */
#define TK__LEASE_CREDIT_MAX 0xffff

enum tk__lease_op {
	TK__LEASE_TAKE, /* a check: local, or what to ask Redis */
	TK__LEASE_DONE, /* Redis answered: credit, remaining, denial */
	TK__LEASE_FAIL, /* Redis failed: the claim released, marked */
	/* A granted lease's credit is on the word, or the word covered the
	 * claimant's check after all: the claim released. */
	TK__LEASE_RELEASE,
	/* A lease this process was granted has ended: its unused credit
	 * taken off the word, if still there, to give back (no check). */
	TK__LEASE_COLLECT,
};

/* What a TAKE decided. */
enum tk__lease_way {
	TK__LEASE_ALLOW, /* from the host's credit: @d */
	TK__LEASE_DENY,	 /* a cached denial: @d */
	TK__LEASE_EXACT, /* ask Redis for the check's own cost */
	TK__LEASE_CLAIM, /* ask Redis for a lease of @k units, claimed */
};

/*
 * One transition's arguments and results (ctx of tk__lease_fn()).  Only
 * the last run of the fn counts, as for every transition.
 */
struct tk__lease_call {
	enum tk__lease_op op;
	const struct tk__policy *p;
	const struct tk__tier_cfg *cfg;
	uint64_t now;	/* ns */
	uint64_t cost;	/* units of the check */
	uint64_t token; /* TAKE: the claim's, if it claims; else ours or 0 */
	/* DONE: what Redis decided for @k units, when (ns: the time its
	 * script decided at), and the lease's expiry. */
	struct tk_decision got;
	uint64_t k;	 /* units asked (DONE) or to ask (TAKE's CLAIM) */
	uint64_t at;	 /* ns */
	uint64_t expiry; /* ns */
	/* TAKE: the credit word's credit and the end of its lease (0:
	 * none), for the block's; DONE: the block found the claim this
	 * call's and Redis admitted a lease, whose credit the word takes. */
	uint64_t credit, lease_end;
	int grant;
	/* TAKE's results. */
	enum tk__lease_way way;
	struct tk_decision d;
	/* TAKE: the unused credit of an expired lease this call took off
	 * the word (0: none), that lease's end as the word held it, and
	 * the time Redis decided it at as the block recorded it (0: not
	 * known for certain): to give back (tk__redis_give_back()). */
	uint64_t ret, ret_end, ret_at;
};

/*
 * The zone's transitions, of struct tk__lease_call: over a lease's
 * credit word (a word slot, TK__T_WORD_IS_EXPIRY), and over its block
 * (TK__LEASE_WORDS words).  A TAKE runs on the word first, and on the
 * block only if the word's credit did not cover it; a DONE on the block
 * first (whose claim it was), then on the word.
 */
int tk__credit_fn(void *ctx, const uint64_t *old, uint64_t *next,
		  uint64_t *expires_at);
int tk__lease_fn(void *ctx, const uint64_t *old, uint64_t *next,
		 uint64_t *expires_at);

/*
 * Does @p's algorithm lease (gcra, token bucket, fixed window, quota,
 * sliding window and log)?  The leaky shaper and user strategies do not:
 * every check of theirs is Redis's.
 */
int tk__lease_leasable(const struct tk__policy *p);

/*
 * Does @p's algorithm give a lease's unused credit back (a sliding window
 * or log: counts of the lease's bucket or stamps, exact while they still
 * count)?  The others drop it: a window's lease lives to the window's
 * end, where its units no longer count; a GCRA's or token bucket's
 * state, written since by other checks, cannot lose them exactly.
 */
int tk__lease_returns(const struct tk__policy *p);

/*
 * When a lease of @p taken at @now, decided as @got by Redis, expires
 * (ns): a window's or quota's end, else at most one period (window) and
 * never more than a second later.
 */
uint64_t tk__lease_expiry(const struct tk__policy *p, uint64_t now,
			  const struct tk_decision *got);

/*
 * store-tier.c: "NAME[?OPTIONS]+redis...", the spec after "shm:"; with
 * @out NULL only parsed (the zone neither opened nor created).  On
 * -EINVAL or -ENOTSUP a sentence in @why (@why_len bytes, may be 0).
 */
int tk__tier_open(struct tk_store **out, const char *spec,
		  const struct tk_options *o, char *why, size_t why_len);
/* Is "shm:..." @spec a two-tier spec? */
int tk__tier_is_spec(const char *spec);

#endif /* TK_STORE_TIER_H */
