/*
 * gcra.h - the pure steps of GCRA and the token bucket (gcra.c), inline,
 * so that a store may decide a check in place (lib/store-shm.c's direct
 * path) with the algorithm's own code rather than through its table.
 * The algorithm and its overflow argument are described in gcra.c.
 */
#ifndef TK_GCRA_H
#define TK_GCRA_H

#include "internal.h"

#include <errno.h>

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

/* check(): see struct tk__algorithm.  Fills every field of @d that a
 * GCRA decision has; the caller zeroes the others. */
static inline int tk__gcra_check(const struct tk__policy *p,
				 const uint64_t *state, uint64_t now,
				 uint64_t cost, uint64_t *next,
				 struct tk_decision *d)
{
	uint64_t tat, tat_new;

	if (cost > p->limit)
		return -ERANGE;
	tat = tk__gcra_current_tat(state, now);
	tat_new = tat + p->u.gcra.t * cost;
	d->limit = p->limit;
	if (now + p->u.gcra.tau >= tat_new) {
		d->allowed = true;
		d->remaining = tk__gcra_units_left(p, tat_new, now);
		d->reset_at = tat_new;
		d->retry_after = 0;
		next[0] = tat_new;
		return TK__PERSIST;
	}
	d->allowed = false;
	d->remaining = tk__gcra_units_left(p, tat, now);
	d->reset_at = tat;
	d->retry_after = tat_new - p->u.gcra.tau - now;
	return TK__KEEP;
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
