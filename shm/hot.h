/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hot.h - the in-place step of a block key's check (docs/shm-protocol.md,
 * "In-place updates"; tests/model/blocks.pml -DINPLACE), inline in both
 * places that update a block key: the direct path (direct.c) and
 * update_block() (slots.c), so that they take the same steps.
 */
#ifndef TK_SHM_HOT_H
#define TK_SHM_HOT_H

#include "word.h"

/*
 * The in-place step of a check of the block key in MEM slot @s seen as
 * {@w0, @w1}, its state @have (NULL: none) read with @hot, *@exp its
 * expiry: where @hot_fn finds that the check changes the hot word alone,
 * a CAS of its cell (TK__ZONE_PERSIST or -EAGAIN); a denial confirmed
 * (TK__ZONE_KEEP or -EAGAIN); @hot_fn's error; else TK__ZONE_NOT_HOT for
 * the transition to run, *@exp as it was.  *@mark: the word to mark hot
 * in a block published for this check (0: none).
 */
static inline __attribute__((always_inline)) int
tkz_step_hot(struct tk__zone *z, struct tkz_slot *s, uint64_t w0, uint64_t w1,
	     const uint64_t *have, const struct tk__blk_hot *hot,
	     tk__zone_hot_fn hot_fn, void *ctx, uint64_t *exp, uint32_t *mark)
{
	uint64_t was = *exp, v;
	struct tkz_cell *c;
	uint32_t i = UINT32_MAX;
	int rc;

	*mark = 0;
	if (!hot_fn)
		return TK__ZONE_NOT_HOT;
	rc = hot_fn(ctx, have, &i, &v, exp);
	if (i < TKZ_CELL_HOT_MAX)
		*mark = i + 1;
	/* A denial needs no mark: it writes nothing. */
	if (rc == TK__ZONE_KEEP)
		return tkz_confirm(s, w0, w1, rc);
	/* In place: the check changes the word its writer marked hot
	 * alone, not frozen, and not the expiry.  The CAS compares the
	 * cell's gen and value as read: a freeze or another in-place
	 * update since makes it fail, and the check reads again. */
	if (rc == TK__ZONE_PERSIST && have && hot->mark == i + 1 &&
	    *exp == was) {
		c = &tk__zone_cells(z)[hot->cell];
		if (tkz_cas(c->w, hot->gen, hot->value, hot->gen, v)) {
			/* A use, for eviction, as a publish would mark it. */
			if (!(w0 & TKZ_REF))
				tkz_cas_slot(s, w0, w1, w0 | TKZ_REF, w1);
			return TK__ZONE_PERSIST;
		}
		/* Frozen: a replacer's, so this check replaces too (else it
		 * would find it so at every look); else read again. */
		if (!(ck_pr_load_64(&c->w[0]) & TKZ_CELL_FROZEN))
			return -EAGAIN;
	}
	*exp = was;
	return rc < 0 ? rc : TK__ZONE_NOT_HOT;
}

#endif /* TK_SHM_HOT_H */
