/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * word.h - a key's candidate slots, and the update of a word key in
 * place: the slot protocol's hot path (docs/shm-protocol.md, transition
 * 1), inline for slots.c and for a caller that decides a check itself
 * (the slot store's fast path, lib/store/store-slot.c), which then needs no
 * transition callback.  It handles only the plain case, a MEM slot of the
 * key's own shape; whatever else it meets (no slot, INS or COL of the key, a
 * sweep due) it leaves to tk__zone_apply(), which it never contradicts: it
 * performs the very CAS update_word() performs.
 */
#ifndef TK_SHM_WORD_H
#define TK_SHM_WORD_H

#include "slot.h"

#define TKZ_CANDIDATES (2 * TKZ_WINDOW)

static inline uint64_t tkz_shard_of(struct tk__zone *z,
				    const struct tk__zone_key *k)
{
	return k->pos & tk__zone_geo(z)->shard_mask;
}

/*
 * The two windows of @k: candidate i is tkz_at(c, i), window A then B,
 * each from the key's own slot in it round: a key is inserted in the
 * first free candidate, so a lookup usually finds it in its first
 * probes and its first cache line, not after half a window of others.
 */
struct tkz_cand {
	uint64_t a, b; /* first slot of each window */
	uint64_t turn; /* where in a window the key's candidates start */
};

static inline uint64_t tkz_at(const struct tkz_cand *c, int i)
{
	return (i < TKZ_WINDOW ? c->a : c->b) +
	       (((uint64_t)i + c->turn) & (TKZ_WINDOW - 1));
}

/* @k's window A (tkz_cand's a) and its turn. */
static inline uint64_t tkz_window_a(struct tk__zone *z,
				    const struct tk__zone_key *k)
{
	/* Powers of two all: masks, not divisions, on the hot path. */
	return tkz_shard_of(z, k) * tk__zone_geo(z)->per_shard +
	       ((k->pos >> 8) & tk__zone_geo(z)->window_mask) * TKZ_WINDOW;
}

static inline uint64_t tkz_turn(const struct tk__zone_key *k)
{
	return (k->pos >> 60) & (TKZ_WINDOW - 1);
}

static inline void tkz_candidates(struct tk__zone *z,
				  const struct tk__zone_key *k,
				  struct tkz_cand *c)
{
	uint64_t mask = tk__zone_geo(z)->window_mask;
	uint64_t a = (k->pos >> 8) & mask, b = (k->pos >> 36) & mask;

	if (b == a)
		b = (a + 1) & mask;
	c->a = tkz_window_a(z, k);
	c->b = c->a + (b - a) * TKZ_WINDOW;
	c->turn = tkz_turn(k);
}

/* Start loading @k's first candidate, where it usually is: a hint that
 * cannot fault, whatever became of the zone's file.  @k's candidates in
 * @c, for tk__zone_word_find(). */
static inline void tk__zone_prefetch(struct tk__zone *z,
				     const struct tk__zone_key *k,
				     struct tkz_cand *c)
{
	tkz_candidates(z, k, c);
	__builtin_prefetch(&tk__zone_slots(z)[tkz_at(c, 0)], 1);
}

/* Does MEM {@w0, @w1} hold a state (as opposed to "no state yet")? */
static inline int tkz_has_state(uint64_t w0, uint64_t w1)
{
	return w0 & TKZ_FP_BLOCK ? tkz_is_ref(w1) : w1 != 0;
}

/*
 * w0 after a write over {@w0, @w1}: the ref bit is set by every use but a
 * key's first, so that a flood of keys used once is evicted before the
 * keys in use (scan resistance, as in 2Q or LRU-2): a full table evicts
 * a key used once before one used again (slots.c), a full arena by
 * second chance (blocks.c).
 */
static inline uint64_t tkz_referenced(uint64_t w0, uint64_t w1)
{
	return tkz_has_state(w0, w1) ? w0 | TKZ_REF : w0;
}

/*
 * How cold a live state is, for eviction (docs/shm-protocol.md, "Which
 * key is evicted"): the tier first, coldest first: expired (it counts no
 * more: dropping it gives back nothing), used once, used again
 * (tkz_referenced(); a denial counts as a use).  Uses come before expiry
 * because the expiry of a sliding window or log is its last admission's:
 * a key denied since ranks as cold as that admission, and by expiry
 * alone a flood of keys used once would soon take it, and give it a
 * fresh budget.  Then the rank: the sooner a state expires, the less
 * dropping it gives back (its key would regain as much by then).  A word
 * ranks by itself, below its expiry by less than TKZ_WORD_SLACK: it
 * orders TATs to the ns, and the counts of one packed window (layout.h),
 * where the expiry does not.
 */
enum tkz_tier { TKZ_EXPIRED, TKZ_USED_ONCE, TKZ_USED_AGAIN };

struct tkz_heat {
	enum tkz_tier tier;
	uint64_t rank;
};

/* The heat of state @w1 of slot word @w0, expiring at @exp, at @now. */
static inline struct tkz_heat tkz_heat_of(uint64_t w0, uint64_t w1,
					  uint64_t exp, uint64_t now)
{
	struct tkz_heat h;

	h.tier = exp <= now	? TKZ_EXPIRED
		 : w0 & TKZ_REF ? TKZ_USED_AGAIN
				: TKZ_USED_ONCE;
	h.rank = w0 & TKZ_FP_BLOCK ? exp : w1;
	return h;
}

/* Is a state of heat @a a better victim than one of heat @b? */
static inline int tkz_colder(struct tkz_heat a, struct tkz_heat b)
{
	return a.tier != b.tier ? a.tier < b.tier : a.rank < b.rank;
}

/* A read-only outcome @rc stands only if read from an untorn slot. */
static inline int tkz_confirm(struct tkz_slot *s, uint64_t w0, uint64_t w1,
			      int rc)
{
	uint64_t snap[2];

	tkz_load2(s->w, snap);
	if (snap[0] != w0 || snap[1] != w1)
		return -EAGAIN;
	/* Once per second chance, not once per denial. */
	if (!(snap[0] & TKZ_REF))
		tkz_cas_slot(s, snap[0], snap[1], snap[0] | TKZ_REF, snap[1]);
	return rc;
}

/* A word key's MEM slot as found, for tk__zone_word_put() or _keep(). */
struct tk__zone_word {
	struct tkz_slot *slot;
	uint64_t w0, w1; /* w1: the state word, 0 for "no state yet" */
};

/*
 * Find word key @k's MEM slot, in the plain case only: no sweep of its
 * shard due at @now, and the first slot of its key among the candidates
 * a MEM of @k's own shape.  Returns 1 with @w filled; 0 if
 * tk__zone_apply() must decide instead (then nothing was written).
 * @cand: @k's candidates if known (tk__zone_prefetch()), or NULL.
 */
static inline int tk__zone_word_find(struct tk__zone *z,
				     const struct tk__zone_key *k,
				     const struct tkz_cand *cand, uint64_t now,
				     struct tk__zone_word *w)
{
	struct tkz_slot *slots = tk__zone_slots(z);
	struct tkz_cand c;
	uint64_t w0, at;
	int i;

	/* tk__zone_maybe_sweep() would sweep after the update: its turn. */
	if (now >=
	    ck_pr_load_64(
		    &tk__zone_header(z)->shard[tkz_shard_of(z, k)].next_sweep))
		return 0;
	/* The key is usually in its first candidate (struct tkz_cand):
	 * that one probed before the others are worked out. */
	at = cand ? tkz_at(cand, 0) : tkz_window_a(z, k) + tkz_turn(k);
	w0 = ck_pr_load_64(&slots[at].w[0]);
	if (!tkz_same_key(w0, k->fp)) {
		if (cand)
			c = *cand;
		else
			tkz_candidates(z, k, &c);
		for (i = 1; i < TKZ_CANDIDATES; i++) {
			at = tkz_at(&c, i);
			w0 = ck_pr_load_64(&slots[at].w[0]);
			if (tkz_same_key(w0, k->fp))
				break;
		}
		if (i == TKZ_CANDIDATES)
			return 0; /* EMPTY, or other keys' */
	}
	if (tkz_state(w0) != TKZ_MEM || ((w0 ^ k->fp) & TKZ_FP_SHAPE))
		return 0;
	w->slot = &slots[at];
	w->w0 = w0;
	w->w1 = ck_pr_load_64(&w->slot->w[1]);
	return 1;
}

/* Update (MEM -> MEM) the slot found as @w to state @next: 1, or 0 if the
 * slot changed since (look again). */
static inline int tk__zone_word_put(const struct tk__zone_word *w,
				    uint64_t next)
{
	return tkz_cas_slot(w->slot, w->w0, w->w1, tkz_referenced(w->w0, w->w1),
			    next);
}

/* A denial decided on the slot found as @w stands: 1, or 0 if the slot
 * changed since (look again). */
static inline int tk__zone_word_keep(const struct tk__zone_word *w)
{
	return tkz_confirm(w->slot, w->w0, w->w1, 1) == 1;
}

#endif /* TK_SHM_WORD_H */
