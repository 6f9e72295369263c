/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * step.c - the transitions a limiter hands its store: a policy's
 * algorithms run over a key's state (step.h).
 *
 * - run_op() is the one place a dimension's algorithm meets its state:
 *   a state that does not validate (a corrupt zone; another policy of
 *   this algorithm and size) is taken as no state, so a key never crashes
 *   or wedges its reader; the next write replaces it.
 * - A single policy's step is tk__check_fn() or tk__forecast_fn() (one
 *   body, compiled for each); a composite's or a group's is
 *   tk__composite_fn(), one run_dim() per dimension, combined as all()
 *   or any() says.
 * - A store may run a step several times for one apply (each CAS retry):
 *   only the last run's decision and corrupt mark count, and the limiter
 *   reads them once the store is done (tk__step_done()).
 */
#include "algo/algo.h"
#include "store/store-ops.h"
#include "step.h"
#include "../shm/zone.h"

#include <string.h>

static const uint64_t zeros[TK__STATE_WORDS_MAX];

/*
 * One dimension: its algorithm on its state (NULL: none), the decision
 * into @d, for @op (s->op; a constant where the caller knows it).  A
 * check asks check_unvalidated() where the algorithm has it, so as not to
 * decode its state twice.
 */
static inline __attribute__((always_inline)) int
run_op(struct tk__step *s, enum tk__op op, const struct tk__policy *p,
       const uint64_t *state, uint64_t *next, struct tk_decision *d)
{
	const struct tk__algorithm *a = p->alg;
	int rc;

	memset(d, 0, sizeof(*d));
	if (state && op == TK__OP_CHECK && a->check_unvalidated) {
		rc = a->check_unvalidated(p, state, s->now, s->cost, next, d);
		if (rc != TK__INVALID)
			return rc;
		s->corrupt = 1;
		state = NULL;
	} else if (state && !a->valid(p, p->state_words, state)) {
		s->corrupt = 1;
		state = NULL;
	}
	if (!state)
		state = zeros;
	if (op == TK__OP_CHECK)
		return a->check(p, state, s->now, s->cost, next, d);
	return a->forecast(p, state, s->now, s->cost, d);
}

static int run_dim(struct tk__step *s, const struct tk__policy *p,
		   const uint64_t *state, uint64_t *next, struct tk_decision *d)
{
	return run_op(s, s->op, p, state, next, d);
}

/* The expiry of @next, just written by a check of @cost decided as @d. */
static inline uint64_t expiry(const struct tk__policy *p, const uint64_t *next,
			      uint64_t cost, const struct tk_decision *d)
{
	return p->alg->expires_at_reset && cost > 0 ? d->reset_at
						    : p->alg->expires(p, next);
}

/* A single policy's step, of @op. */
static inline __attribute__((always_inline)) int
single(void *ctx, enum tk__op op, const uint64_t *old, uint64_t *next,
       uint64_t *expires_at)
{
	struct tk__step *s = ctx;
	const struct tk__policy *p = s->p;
	int rc;

	s->corrupt = 0;
	rc = run_op(s, op, p, old, next, &s->d);
	if (rc == TK__PERSIST)
		*expires_at = expiry(p, next, s->cost, &s->d);
	return rc;
}

int tk__check_fn(void *ctx, const uint64_t *old, uint64_t *next,
		 uint64_t *expires_at)
{
	return single(ctx, TK__OP_CHECK, old, next, expires_at);
}

int tk__forecast_fn(void *ctx, const uint64_t *old, uint64_t *next,
		    uint64_t *expires_at)
{
	return single(ctx, TK__OP_FORECAST, old, next, expires_at);
}

static int check_hot(void *ctx, const uint64_t *old, uint32_t *word,
		     uint64_t *value, uint64_t *expires_at)
{
	struct tk__step *s = ctx;
	const struct tk__policy *p = s->p;
	int rc;

	if (!tk__step_in_place(s, p->alg->check_hot != NULL, word))
		return TK__NOT_HOT;
	rc = p->alg->check_hot(p, old, s->now, s->cost, word, value, &s->d);
	if (rc == TK__PERSIST)
		*expires_at = s->d.reset_at;
	return rc;
}

static int memo(void *ctx, const uint64_t *next, uint64_t *memo)
{
	struct tk__step *s = ctx;
	const struct tk__policy *p = s->p;

	return p->alg->memo && s->cost ? p->alg->memo(p, next, s->now, memo)
				       : 0;
}

const struct tk__zone_inplace tk__check_inplace = { check_hot, memo,
						    tk__step_check_memo };

/*
 * The representative decision of a composite (semantics: all() reports
 * the tightest admitting or the longest-waiting denying dimension, any()
 * the loosest admitting or the soonest-ready denying one; ties go to the
 * first dimension).  @usable[i] is 0 for a dimension that failed.  A
 * shaper that admits queues the request whichever dimension reports, so
 * the delay is the longest of the admitting dimensions.
 */
static void represent(enum tk__composite kind, size_t n,
		      const struct tk_decision *dd, const int *usable,
		      int allowed, struct tk_decision *out)
{
	size_t i, best = n;

	for (i = 0; i < n; i++) {
		if (!usable[i] || dd[i].allowed != allowed)
			continue;
		if (best == n) {
			best = i;
		} else if (allowed) {
			if (kind == TK__ALL
				    ? dd[i].remaining < dd[best].remaining
				    : dd[i].remaining > dd[best].remaining)
				best = i;
		} else {
			if (kind == TK__ALL
				    ? dd[i].retry_after > dd[best].retry_after
				    : dd[i].retry_after < dd[best].retry_after)
				best = i;
		}
	}
	*out = dd[best];
	out->dimension = (uint32_t)best;
	for (i = 0; allowed && i < n; i++)
		if (usable[i] && dd[i].allowed && dd[i].delay > out->delay)
			out->delay = dd[i].delay;
}

static const struct tk__policy *dim_of(const struct tk__step *s, size_t i)
{
	return s->group ? s->group[i] : &s->policy->dim[i];
}

/* Dimension @p's decision had it not been charged: a peek. */
static void unconsumed(struct tk__step *s, const struct tk__policy *p,
		       const uint64_t *state, struct tk_decision *d)
{
	struct tk__step peek = *s;

	peek.op = TK__OP_FORECAST;
	peek.cost = 0;
	run_dim(&peek, p, state, NULL, d);
}

/*
 * A composite over one state per dimension.  all() consumes in every
 * dimension or in none; any() only in those that admit.
 */
int tk__composite_fn(void *ctx, const uint64_t *const *old,
		     uint64_t *const *next, int *persist, uint64_t *expires_at)
{
	struct tk__step *s = ctx;
	struct tk_decision dd[TK__MULTI_MAX];
	int rc[TK__MULTI_MAX], usable[TK__MULTI_MAX];
	size_t i, admitted = 0, failed = 0;
	int first_err = 0, allowed;

	s->corrupt = 0;
	for (i = 0; i < s->n; i++) {
		rc[i] = run_dim(s, dim_of(s, i), old[i], next[i], &dd[i]);
		usable[i] = rc[i] >= 0;
		if (rc[i] < 0 && !failed++)
			first_err = rc[i];
		if (rc[i] >= 0 && dd[i].allowed)
			admitted++;
	}
	if ((s->kind == TK__ALL && failed) || failed == s->n)
		return first_err;
	allowed = s->kind == TK__ALL ? admitted == s->n : admitted > 0;
	represent(s->kind, s->n, dd, usable, allowed, &s->d);
	for (i = 0; s->dims && i < s->n && i < s->ndims; i++) {
		/* A refused all() consumed nowhere: report what is left. */
		if (s->op == TK__OP_CHECK && !allowed && usable[i] &&
		    dd[i].allowed)
			unconsumed(s, dim_of(s, i), old[i], &dd[i]);
		s->dims[i] = dd[i];
		s->dims[i].dimension = (uint32_t)i;
	}
	if (s->op != TK__OP_CHECK || !allowed)
		return TK__KEEP;
	for (i = 0; i < s->n; i++) {
		persist[i] = rc[i] == TK__PERSIST;
		if (persist[i])
			expires_at[i] = dim_of(s, i)->alg->expires(dim_of(s, i),
								   next[i]);
	}
	return TK__PERSIST;
}
