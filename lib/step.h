/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * step.h - the transitions a limiter hands its store (step.c): one step
 * of a policy over a key's state, as struct tk__transform runs it for a
 * single policy and struct tk__multi for a composite or a group.  Every
 * route of a check ends in run_op() there, and every corrupt state one
 * meets is counted by tk__step_done().
 */
#ifndef TK_STEP_H
#define TK_STEP_H

#include "algo/algo.h"
#include "store/store-ops.h"
#include "atomic.h"

#include <string.h>

enum tk__op { TK__OP_CHECK, TK__OP_FORECAST };

struct tk__step {
	enum tk__op op;
	uint64_t now;  /* ns */
	uint64_t cost; /* 0 with TK__OP_FORECAST: a peek */
	/* A single policy: its one dimension (tk__check_fn()). */
	const struct tk__policy *p;
	/* A composite or group (tk__composite_fn()): its dimensions (@group,
	 * or NULL for policy->dim[]), their number and how they combine. */
	const struct tk_policy *policy;
	const struct tk__policy *const *group;
	size_t n;
	enum tk__composite kind;
	struct tk_decision *dims; /* NULL, or one decision per dimension */
	size_t ndims;
	/* What the last run decided, and whether it met a state that did not
	 * validate (counted once the store is done: tk__step_done()). */
	struct tk_decision d;
	int corrupt;
};

/* The transitions of struct tk__transform (a single policy's check, and
 * its forecast or peek) and of struct tk__multi, over a struct tk__step
 * as their ctx. */
int tk__check_fn(void *ctx, const uint64_t *old, uint64_t *next,
		 uint64_t *expires_at);
int tk__forecast_fn(void *ctx, const uint64_t *old, uint64_t *next,
		    uint64_t *expires_at);
/* tk__check_fn()'s in-place steps (struct tk__zone_inplace): the
 * algorithm's check_hot(), memo() and check_memo(), else TK__NOT_HOT. */
extern const struct tk__zone_inplace tk__check_inplace;
/*
 * Whether an in-place step (an algorithm's check_hot() or check_memo(),
 * @has_fn if it has it) may decide @s: a charged check of an algorithm
 * whose expiry after is its decision's reset_at (no state to ask).  If
 * so, @s is made ready for the decision.  *@word: none yet.
 */
static inline int tk__step_in_place(struct tk__step *s, int has_fn,
				    uint32_t *word)
{
	*word = UINT32_MAX;
	if (!has_fn || !s->p->alg->expires_at_reset || !s->cost)
		return 0;
	s->corrupt = 0;
	memset(&s->d, 0, sizeof(s->d));
	return 1;
}

/*
 * tk__check_inplace's step_memo (a tk__zone_memo_fn): the algorithm's
 * check_memo() on the step's policy, time and cost.  Inline: the
 * window's direct path hands it to tkz_step_memo() (shm/hot.h) by name.
 */
static inline __attribute__((always_inline)) int
tk__step_check_memo(void *ctx, const uint64_t *memo, uint64_t value,
		    uint32_t *word, uint64_t *after, uint64_t *expires_at)
{
	struct tk__step *s = ctx;
	const struct tk__policy *p = s->p;
	int rc;

	if (!tk__step_in_place(s, p->alg->check_memo != NULL, word))
		return TK__NOT_HOT;
	rc = p->alg->check_memo(p, memo, value, s->now, s->cost, word, after,
				&s->d);
	*expires_at = rc == TK__PERSIST ? s->d.reset_at : *expires_at;
	return rc;
}

int tk__composite_fn(void *ctx, const uint64_t *const *old,
		     uint64_t *const *next, int *persist, uint64_t *expires_at);

/* The TK__T_* flags of a transform of @op by policy @p. */
static inline uint32_t tk__step_flags(enum tk__op op,
				      const struct tk__policy *p)
{
	return (op == TK__OP_CHECK ? TK__T_CHECK : 0) |
	       (p->word_is_expiry ? TK__T_WORD_IS_EXPIRY : 0);
}

/* @s of a single policy's dimension @p, at @now, as its transform, whose
 * flags are tk__step_flags(@op, @p) (@flags: a caller may have them
 * ready). */
static inline __attribute__((always_inline)) void
tk__step_single(struct tk__step *s, enum tk__op op, const struct tk__policy *p,
		uint32_t flags, uint64_t now, uint64_t cost,
		struct tk__transform *t)
{
	s->op = op;
	s->now = now;
	s->cost = cost;
	s->p = p;
	s->corrupt = 0;
	*t = (struct tk__transform){
		.fn = op == TK__OP_CHECK ? tk__check_fn : tk__forecast_fn,
		.inplace = op == TK__OP_CHECK && p->alg->check_hot
				   ? &tk__check_inplace
				   : NULL,
		.ctx = s,
		.words = p->state_words,
		.flags = flags,
		.alg = p->alg->id,
		.policy = p,
		.cost = cost,
		.now = &s->now,
	};
}

/*
 * A step the store has run and answered @rc: a corrupt state it met
 * counted in @st (tk_stats.corrupt; the one place that counts them),
 * then 0 with the decision in *@out, or @rc if negative.
 */
static inline __attribute__((always_inline)) int
tk__step_done(struct tk_store *st, const struct tk__step *s, int rc,
	      struct tk_decision *out)
{
	if (s->corrupt)
		tk_atomic_add_u64(&st->corrupt, 1, TK_MO_RELAXED);
	if (rc < 0)
		return rc;
	*out = s->d;
	return 0;
}

#endif /* TK_STEP_H */
