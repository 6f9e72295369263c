/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hot.h - the in-place steps of a block key's check (docs/shm-protocol.md,
 * "In-place updates" and "Memos"; tests/model/blocks.pml -DINPLACE),
 * inline in both places that update a block key: the direct path
 * (direct.c) and update_block() (slots.c), so that they take the same
 * steps.
 */
#ifndef TK_SHM_HOT_H
#define TK_SHM_HOT_H

#include "word.h"

/*
 * Write @v into the hot word @hot read of the block key in MEM slot @s
 * seen as {@w0, @w1}: TK__ZONE_PERSIST; -EAGAIN if it changed since (read
 * again); TK__ZONE_NOT_HOT if it is frozen (a replacer's: this check
 * replaces too, else it would find it so at every look).
 */
static inline __attribute__((always_inline)) int
tkz_put_hot(struct tk__zone *z, struct tkz_slot *s, uint64_t w0, uint64_t w1,
	    const struct tk__blk_hot *hot, uint64_t v)
{
	struct tkz_cell *c = &tk__zone_cells(z)[hot->cell];

	/* The CAS compares the cell's gen and value as read: a freeze or
	 * another in-place update since makes it fail. */
	if (tkz_cas(c->w, hot->gen, hot->value, hot->gen, v)) {
		/* A use, for eviction, as a publish would mark it. */
		if (!(w0 & TKZ_REF))
			tkz_cas_slot(s, w0, w1, w0 | TKZ_REF, w1);
		return TK__ZONE_PERSIST;
	}
	return ck_pr_load_64(&c->w[0]) & TKZ_CELL_FROZEN ? TK__ZONE_NOT_HOT
							 : -EAGAIN;
}

/*
 * The in-place step of a check of the block key in MEM slot @s seen as
 * {@w0, @w1}, its state @have (NULL: none) read with @hot, *@exp its
 * expiry: where @ip finds that the check changes the hot word alone, a
 * CAS of its cell (TK__ZONE_PERSIST or -EAGAIN); a denial confirmed
 * (TK__ZONE_KEEP or -EAGAIN); @ip's error; else TK__ZONE_NOT_HOT for the
 * transition to run, *@exp as it was.  *@mark: the word to mark hot in a
 * block published for this check (0: none).
 */
static inline __attribute__((always_inline)) int
tkz_step_hot(struct tk__zone *z, struct tkz_slot *s, uint64_t w0, uint64_t w1,
	     const uint64_t *have, const struct tk__blk_hot *hot,
	     const struct tk__zone_inplace *ip, void *ctx, uint64_t *exp,
	     uint32_t *mark)
{
	uint64_t was = *exp, v;
	uint32_t i = UINT32_MAX;
	int rc;

	*mark = 0;
	if (!ip)
		return TK__ZONE_NOT_HOT;
	rc = ip->step(ctx, have, &i, &v, exp);
	if (i < TKZ_CELL_HOT_MAX)
		*mark = i + 1;
	/* A denial needs no mark: it writes nothing. */
	if (rc == TK__ZONE_KEEP)
		return tkz_confirm(s, w0, w1, rc);
	/* In place: the check changes the word its writer marked hot
	 * alone, not frozen, and not the expiry. */
	if (rc == TK__ZONE_PERSIST && have && hot->mark == i + 1 &&
	    *exp == was) {
		rc = tkz_put_hot(z, s, w0, w1, hot, v);
		if (rc != TK__ZONE_NOT_HOT)
			return rc;
	}
	*exp = was;
	return rc < 0 ? rc : TK__ZONE_NOT_HOT;
}

/*
 * Read what a memo's check needs of the state slot @s references as {@w0,
 * @w1}: the memo into @memo, *@expires, and the hot word into *@hot, not
 * frozen.  0; -EAGAIN if the slot changed (look again); 1 where the block
 * has no memo of its own or no hot word that may change (read the state).
 * Inline: the hot path of a window's check.
 */
static inline __attribute__((always_inline)) int
tkz_read_memo(struct tk__zone *z, struct tkz_slot *s, uint64_t w0, uint64_t w1,
	      uint64_t *memo, uint64_t *expires, struct tk__blk_hot *hot)
{
	uint64_t cell = tkz_ref_cell(w1), h0, h1, g, t, off, size, r0, r1;
	struct tkz_cell *c;
	uint32_t n, mark;

	if (!tkz_is_ref(w1) || cell >= tk__zone_geo(z)->pages * TKZ_PAGE_CELLS)
		return 1;
	tkz_after_reference();
	c = &tk__zone_cells(z)[cell];
	tkz_read(c->w, &h0, &h1);
	g = h0 & TKZ_BLK_GEN_MASK;
	n = (uint32_t)(h0 >> TKZ_BLK_WORDS_SHIFT) & TKZ_BLK_WORDS_MAX;
	size = tkz_page_size(
		ck_pr_load_64(&tk__zone_pagetable(z)[cell / TKZ_PAGE_CELLS]));
	/* A block of this reference, its memo inside it (as blocks.c's
	 * fits() judges a block). */
	if (!(h0 & TKZ_BLK_USED) ||
	    (g & TKZ_REF_GEN_MASK) != (w1 & TKZ_REF_GEN_MASK) || !size ||
	    (cell & (size - 1)) || n + TKZ_BLK_OVERHEAD + TKZ_BLK_MEMO > size)
		return 1;
	t = ck_pr_load_64(&c[1].w[0]);
	*expires = ck_pr_load_64(&c[1].w[1]);
	mark = (uint32_t)(t >> TKZ_CELL_HOT_SHIFT) & TKZ_CELL_HOT_MAX;
	if ((t & ~((uint64_t)TKZ_CELL_HOT_MAX << TKZ_CELL_HOT_SHIFT)) != g ||
	    mark == 0 || mark > n)
		return 1;
	/* The hot word not frozen (a replacer's: read the state it is
	 * carried into), and every memo word of this gen: one test. */
	hot->value = ck_pr_load_64(&c[1 + mark].w[1]);
	off = ck_pr_load_64(&c[1 + mark].w[0]) ^ g;
	_Static_assert(TKZ_BLK_MEMO == 4, "the memo's four cells");
	c += TKZ_BLK_OVERHEAD + n;
	memo[0] = ck_pr_load_64(&c[0].w[1]);
	memo[1] = ck_pr_load_64(&c[1].w[1]);
	memo[2] = ck_pr_load_64(&c[2].w[1]);
	memo[3] = ck_pr_load_64(&c[3].w[1]);
	off |= (ck_pr_load_64(&c[0].w[0]) ^ g) |
	       (ck_pr_load_64(&c[1].w[0]) ^ g) |
	       (ck_pr_load_64(&c[2].w[0]) ^ g) |
	       (ck_pr_load_64(&c[3].w[0]) ^ g);
	if (off)
		return 1;
	hot->mark = mark;
	hot->cell = cell + 1 + mark;
	hot->gen = g;
	/* The values belong to the reference only if it is still there. */
	ck_pr_fence_load();
	tkz_read(s->w, &r0, &r1);
	return r0 == w0 && r1 == w1 ? 0 : -EAGAIN;
}

/*
 * tkz_step_hot() decided from the block's memo and hot word alone, before
 * the state is read (docs/shm-protocol.md, "Memos"): the same answers,
 * and TK__ZONE_NOT_HOT where the block has no memo of this time, or its
 * hot word is frozen, for the state to be read.  A state expired by @now
 * is no state: its memo is not asked.  @step_memo: a struct
 * tk__zone_inplace's, or NULL (none); a caller that names a function
 * has it inlined.
 */
static inline __attribute__((always_inline)) int
tkz_step_memo(struct tk__zone *z, struct tkz_slot *s, uint64_t w0, uint64_t w1,
	      uint64_t now, tk__zone_memo_fn step_memo, void *ctx)
{
	uint64_t memo[TKZ_BLK_MEMO], exp, was, v;
	struct tk__blk_hot hot;
	uint32_t i = UINT32_MAX;
	int rc;

	if (!step_memo)
		return TK__ZONE_NOT_HOT;
	rc = tkz_read_memo(z, s, w0, w1, memo, &exp, &hot);
	if (rc)
		return rc < 0 ? rc : TK__ZONE_NOT_HOT;
	if (exp <= now)
		return TK__ZONE_NOT_HOT;
	was = exp;
	rc = step_memo(ctx, memo, hot.value, &i, &v, &exp);
	/* The hot word the memo's check means, whatever its answer: else
	 * the block's mark and memo disagree (a corrupt zone), and the state
	 * is read. */
	if (rc >= 0 && hot.mark != i + 1)
		return TK__ZONE_NOT_HOT;
	if (rc == TK__ZONE_KEEP)
		return tkz_confirm(s, w0, w1, rc);
	if (rc == TK__ZONE_PERSIST && exp == was)
		return tkz_put_hot(z, s, w0, w1, &hot, v);
	return rc < 0 ? rc : TK__ZONE_NOT_HOT;
}

/* The memo of @next, a state of @words words, for the block a check
 * publishes: @memo, or NULL (none, or no room for one in its class, where
 * tk__blk_write() would not write it). */
static inline __attribute__((always_inline)) const uint64_t *
tkz_memo_of(const struct tk__zone_inplace *ip, void *ctx, uint32_t words,
	    const uint64_t *next, uint64_t *memo)
{
	int k = tk__blk_class(words);

	if (!ip || !ip->memo || k < 0 ||
	    words + TKZ_BLK_OVERHEAD + TKZ_BLK_MEMO > (uint32_t)TKZ_CLASS_MIN
							      << k)
		return NULL;
	return ip->memo(ctx, next, memo) ? memo : NULL;
}

#endif /* TK_SHM_HOT_H */
