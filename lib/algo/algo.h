/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * algo.h - the algorithm contract.
 *
 * An algorithm is a set of pure transitions over a fixed number of 64-bit
 * state words; a store runs one such transition atomically per key
 * (apply, store-ops.h); the limiter reads the clock once and binds the two.
 * No store contains rate-limiting math and no algorithm touches a store
 * or a clock.  Internal non-static symbols are prefixed tk__.
 */
#ifndef TK_ALGO_H
#define TK_ALGO_H

#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include <throttlekit.h>

#include "clock.h" /* TK__NOW_LIMIT */
#include "algo/policy.h"
#include "status.h" /* TK__INVALID */

/* What a transition asks of the store. */
#define TK__KEEP 0    /* leave the state as it was */
#define TK__PERSIST 1 /* write the new state */

/* Most 64-bit state words one key may hold (composites add up). */
#define TK__STATE_WORDS_MAX 1024

struct tk__parser;
struct tk__fmt;

/*
 * An algorithm: pure functions over a fixed number of state words.  A key
 * with no state is handed all-zero words, which every algorithm treats as
 * "never seen"; stale state is harmless too (a past TAT, an old window),
 * so expiry is only ever a memory optimisation.
 */
struct tk__algorithm {
	const char *name;
	/*
	 * TK__ALG_*: every store records it with each state an algorithm
	 * writes, so that a key read under another algorithm is -EPROTO
	 * rather than words misread.
	 */
	unsigned int id;
	/* Parse the text after "NAME:"; fills everything but .alg. */
	int (*parse)(struct tk__policy *p, struct tk__parser *ps);
	void (*format)(const struct tk__policy *p, struct tk__fmt *f);
	/*
	 * check() - consume @cost at @now.  Returns TK__PERSIST (and fills
	 * @next), TK__KEEP (a denial: nothing changes) or -ERANGE.
	 */
	int (*check)(const struct tk__policy *p, const uint64_t *state,
		     uint64_t now, uint64_t cost, uint64_t *next,
		     struct tk_decision *d);
	/*
	 * forecast() - what check() would say, without consuming.  @cost 0
	 * is a peek: about one unit, with remaining = units available now.
	 */
	int (*forecast)(const struct tk__policy *p, const uint64_t *state,
			uint64_t now, uint64_t cost, struct tk_decision *d);
	/* From when on @state is equivalent to no state (ns). */
	uint64_t (*expires)(const struct tk__policy *p, const uint64_t *state);
	/*
	 * 1 if, whenever check() returns TK__PERSIST for a @cost of 1 or
	 * more, expires(@next) equals the decision's reset_at: a caller may
	 * then take that rather than call expires() on the state just made.
	 */
	int expires_at_reset;
	/*
	 * check_unvalidated() - optional: valid(p, p->state_words, @state),
	 * then check() if it holds, without decoding the state twice.
	 * Returns TK__INVALID (@next and @d untouched) where valid()
	 * refuses, else what check() returns.
	 */
	int (*check_unvalidated)(const struct tk__policy *p,
				 const uint64_t *state, uint64_t now,
				 uint64_t cost, uint64_t *next,
				 struct tk_decision *d);
	/*
	 * valid() - could this algorithm have written @state, @words words
	 * long?  Stores hand back whatever bytes they hold (a corrupt zone,
	 * another policy of the same algorithm and size), so every count,
	 * index and size that check(), forecast() and expires() rely on is
	 * bounded here first.  @p is NULL when the policy is unknown
	 * (verify): then only what @words determines is checked.  Returns 1
	 * if valid.
	 */
	int (*valid)(const struct tk__policy *p, uint32_t words,
		     const uint64_t *state);
	/*
	 * layout() - optional: what, besides the algorithm, a state's
	 * meaning depends on (a window's width, a log's length), as bytes
	 * into @buf (TK__LAYOUT_MAX of them): their number.  NULL: nothing.
	 * Policies of one algorithm and one layout read each other's states
	 * as their own; the store key keeps every other pair apart
	 * (tk__policy_tag(), store-key.h), so a changed policy never reads
	 * a state it cannot take.  Whatever valid() and the Redis script
	 * (check.lua) check of a state against its policy is named here.
	 */
	size_t (*layout)(const struct tk__policy *p, unsigned char *buf);
	/*
	 * check_hot() - optional: check() where it changes one word of
	 * @state alone (a window's count in its current bucket), decided
	 * without copying the state: TK__PERSIST with *@value that word's
	 * value after, TK__KEEP, -ERANGE, or TK__NOT_HOT (check() must run:
	 * more would change, there is no state, or valid() must judge it).
	 * *@word is set whatever the answer: the index of the word an
	 * admission at @now changes alone while later ones fall in its
	 * tick.  A store that changes words in place marks that word hot
	 * (docs/shm-protocol.md, "In-place updates").
	 */
	int (*check_hot)(const struct tk__policy *p, const uint64_t *state,
			 uint64_t now, uint64_t cost, uint32_t *word,
			 uint64_t *value, struct tk_decision *d);
	/*
	 * memo() - optional, with check_memo(): what check_hot() needs of
	 * @state at @now's tick beside its hot word, as TK__MEMO_WORDS words
	 * into @memo: 1, or 0 where check_hot() would not step @state in
	 * place at @now.  A store keeps the memo with the state (in a block,
	 * "Memos" in docs/shm-protocol.md); only the hot word changes in
	 * place, so the memo holds while the state does.
	 */
	int (*memo)(const struct tk__policy *p, const uint64_t *state,
		    uint64_t now, uint64_t *memo);
	/*
	 * check_memo() - check_hot() on a state a memo() was made of, its
	 * hot word now @value: the same answers and decision, without the
	 * state; TK__NOT_HOT also where @memo is not of @now's tick or of
	 * this policy, or is out of bounds (a corrupt store).
	 */
	int (*check_memo)(const struct tk__policy *p, const uint64_t *memo,
			  uint64_t value, uint64_t now, uint64_t cost,
			  uint32_t *word, uint64_t *after,
			  struct tk_decision *d);
};

/* Words of a memo (memo()). */
#define TK__MEMO_WORDS 4

/* Most bytes layout() writes. */
#define TK__LAYOUT_MAX 24

/* @v big-endian into @buf[0, 8). */
static inline void tk__layout_u64(unsigned char *buf, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		buf[i] = (unsigned char)v;
}

/* Algorithm ids: 3 bits in a zone slot, so 1..7 (0: none). */
#define TK__ALG_GCRA 1
#define TK__ALG_TOKEN_BUCKET 2
#define TK__ALG_FIXED_WINDOW 3
#define TK__ALG_SLIDING_WINDOW 4
#define TK__ALG_SLIDING_LOG 5
#define TK__ALG_QUOTA 6
#define TK__ALG_LEAKY 7
#define TK__ALG_MAX 7
/*
 * A user-defined strategy (user.c): every one shares this id, and keeps
 * its own identity in its state and its tag.  A zone slot has only the
 * three bits, and records it as TK__ALG_USER & TK__ALG_SLOT_MASK, 0, in
 * a block's slot (a word's slot never holds 0).
 */
#define TK__ALG_USER 8
#define TK__ALG_SLOT_MASK 7
_Static_assert((TK__ALG_USER & TK__ALG_SLOT_MASK) == 0 &&
		       (TK__ALG_MAX & ~TK__ALG_SLOT_MASK) == 0,
	       "a zone slot tells a user strategy from every algorithm");

/* The algorithm of id @id, or NULL. */
const struct tk__algorithm *tk__algorithm_of(unsigned int id);

extern const struct tk__algorithm tk__gcra, tk__token_bucket, tk__fixed_window,
	tk__sliding_window, tk__sliding_log, tk__quota, tk__leaky, tk__user;

/* user.c: the strategy registered as the @len bytes at @name, or NULL;
 * its name. */
struct tk__strategy;
const struct tk__strategy *tk__strategy_find(const char *name, size_t len);
const char *tk__strategy_name(const struct tk__strategy *s);

/* Does a dimension of @p run a user strategy? */
static inline int tk__policy_has_user(const struct tk_policy *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->dim[i].alg == &tk__user)
			return 1;
	return 0;
}

/* The name of @p's algorithm in policy strings. */
static inline const char *tk__policy_name(const struct tk__policy *p)
{
	return p->alg == &tk__user ? tk__strategy_name(p->u.user.s)
				   : p->alg->name;
}

#endif /* TK_ALGO_H */
