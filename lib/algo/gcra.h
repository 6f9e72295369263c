/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gcra.h - the pure steps of GCRA and the token bucket (gcra.c), inline,
 * so that a store's fast path may decide a check in place
 * (lib/store/store-slot.c) with the algorithm's own code rather than through
 * its table: the math stays here, and the store only calls it.
 * The algorithm and its overflow argument are described in gcra.c.
 */
#ifndef TK_GCRA_H
#define TK_GCRA_H

#include "algo/algo.h"

#include <errno.h>

/* gcra.c: the GCRA core that token-bucket shares. */
int tk__gcra_init(struct tk__policy *p, uint64_t limit, uint64_t period,
		  uint64_t burst);

/* Largest burst tolerance a policy may have (ns). */
#define TK__GCRA_TAU_MAX (UINT64_C(1) << 62)

/* Is @p GCRA or the token bucket (one TAT word, these steps)? */
static inline int tk__gcra_family(const struct tk__policy *p)
{
	return p->alg == &tk__gcra || p->alg == &tk__token_bucket;
}

/* Whole units left when the TAT is @tat at @now (tat >= now). */
static inline uint64_t tk__gcra_units_left(const struct tk__policy *p,
					   uint64_t tat, uint64_t now)
{
	uint64_t ahead = tat - now;

	return ahead < p->u.gcra.tau
		       ? tk__udiv(&p->u.gcra.per_t, p->u.gcra.tau - ahead)
		       : 0;
}

static inline uint64_t tk__gcra_current_tat(const uint64_t *state, uint64_t now)
{
	return state[0] > now ? state[0] : now;
}

/* A check's step without its explanation: the TAT it starts from and
 * the one it would write. */
struct tk__gcra_step {
	uint64_t tat, tat_new;
};

/* The step of check(): TK__PERSIST (admitted: write @s->tat_new),
 * TK__KEEP (denied) or -ERANGE.  Apart from tk__gcra_explain() so that a
 * store may write the new TAT before it works out what to report: the
 * division there then falls outside the window in which a rival's write
 * to the slot makes the CAS fail. */
static inline int tk__gcra_step(const struct tk__policy *p,
				const uint64_t *state, uint64_t now,
				uint64_t cost, struct tk__gcra_step *s)
{
	if (cost > p->limit)
		return -ERANGE;
	s->tat = tk__gcra_current_tat(state, now);
	s->tat_new = s->tat + p->u.gcra.t * cost;
	return now + p->u.gcra.tau >= s->tat_new ? TK__PERSIST : TK__KEEP;
}

/* Fills every field of @d that a GCRA decision has, for step @s that
 * returned @rc; the caller zeroes the others. */
static inline void tk__gcra_explain(const struct tk__policy *p,
				    const struct tk__gcra_step *s, int rc,
				    uint64_t now, struct tk_decision *d)
{
	d->limit = p->limit;
	if (rc == TK__PERSIST) {
		d->allowed = true;
		d->remaining = tk__gcra_units_left(p, s->tat_new, now);
		d->reset_at = s->tat_new;
		d->retry_after = 0;
		return;
	}
	d->allowed = false;
	d->remaining = tk__gcra_units_left(p, s->tat, now);
	d->reset_at = s->tat;
	d->retry_after = s->tat_new - p->u.gcra.tau - now;
}

/* check(): see struct tk__algorithm. */
static inline int tk__gcra_check(const struct tk__policy *p,
				 const uint64_t *state, uint64_t now,
				 uint64_t cost, uint64_t *next,
				 struct tk_decision *d)
{
	struct tk__gcra_step s;
	int rc = tk__gcra_step(p, state, now, cost, &s);

	if (rc < 0)
		return rc;
	tk__gcra_explain(p, &s, rc, now, d);
	if (rc == TK__PERSIST)
		next[0] = s.tat_new;
	return rc;
}

/* expires(): from the TAT on, the key is as good as never seen. */
static inline uint64_t tk__gcra_expires(const uint64_t *state)
{
	return state[0];
}

/* valid(): every TAT a check writes is below 2^63 + tau: now < 2^63, and
 * a new TAT is admitted only within tau of now. */
static inline int tk__gcra_valid(const struct tk__policy *p, uint32_t words,
				 const uint64_t *state)
{
	uint64_t tau = p ? p->u.gcra.tau : TK__GCRA_TAU_MAX;

	return words == 1 &&
	       (state[0] < TK__NOW_LIMIT || state[0] - TK__NOW_LIMIT < tau);
}

#endif /* TK_GCRA_H */
