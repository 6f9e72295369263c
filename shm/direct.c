/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * direct.c - the update of a block key found in its slot, for a caller
 * that finds the slot itself (tk__zone_word_find(), word.h) and decides
 * a check itself: the window's fast path (lib/store/store-slot.c).  It
 * takes the steps update_block() in slots.c takes, in the plain case
 * only: a reference to a block of the key's size, or "no state yet".
 * Whatever else it meets (a multi-key update under way, a reference that
 * does not read, a state of another size) it leaves to tk__zone_apply()
 * before writing anything.
 *
 * A check that changes only the state's hot word, the one its writer
 * marked, changes it in place by a CAS of that cell: no claim, no cell
 * copied, no publish (docs/shm-protocol.md, "In-place updates";
 * tests/model/blocks.pml -DINPLACE).  One that a block's memo decides
 * never comes here: the caller asks the memo first (tkz_step_memo()),
 * in its own frame.
 */
#include "hot.h"

#include <errno.h>

/* Most words a state stepped here has: a sliding window's 101 buckets.
 * Larger ones go the apply's way: two buffers of a block's most words
 * (16 KiB) would cost every check a probe of each stack page. */
#define DIRECT_WORDS 202

int tk__zone_block_step(struct tk__zone *z, struct tkz_slot *s, uint64_t w0,
			uint64_t w1, uint64_t now, uint32_t words,
			tk__zone_fn fn, const struct tk__zone_inplace *ip,
			void *ctx, struct tk__blk *held, int *holding)
{
	uint64_t old[DIRECT_WORDS], next[DIRECT_WORDS], exp = 0;
	uint64_t memo[TKZ_BLK_MEMO];
	const uint64_t *have = NULL;
	struct tk__blk_hot hot = { 0 };
	uint32_t mark;
	int rc;

	if (tkz_is_desc(w1) || words > DIRECT_WORDS)
		return TK__ZONE_NOT_PLAIN;
	if (tkz_is_ref(w1)) {
		rc = tk__blk_read(z, s, w0, w1, old, words, &exp, &hot);
		if (rc == -EAGAIN)
			return rc;
		if (rc != (int)words)
			return TK__ZONE_NOT_PLAIN;
		/* An expired state is no state (update_block()). */
		have = exp > now ? old : NULL;
	}
	rc = tkz_step_hot(z, s, w0, w1, have, &hot, ip, ctx, &exp, &mark);
	if (rc != TK__ZONE_NOT_HOT)
		return rc;
	rc = fn(ctx, have, next, &exp);
	if (rc != TK__ZONE_PERSIST)
		return rc < 0 ? rc : tkz_confirm(s, w0, w1, rc);
	/* A claim kept from a lost publish is rebound, as update_block()
	 * rebinds it: the same steps, so the same arena. */
	rc = tk__blk_publish(z, (uint64_t)(s - tk__zone_slots(z)), w0, w1, now,
			     words, next, exp, &hot, mark,
			     tkz_memo_of(ip, ctx, words, next, memo), held,
			     holding);
	if (rc == 0)
		return TK__ZONE_PERSIST;
	/* A full arena (the claim has reclaimed, and evicted if the zone
	 * evicts) is the check's answer, as it is the apply's: handing it
	 * to tk__zone_apply() would claim again, and a second turn over a
	 * class whose first turn freed a block records a "full" verdict
	 * the apply alone does not, so the arenas would part.  A table to
	 * grow is the apply's to handle. */
	return rc == -EAGAIN || rc == -ENOSPC ? rc : TK__ZONE_NOT_PLAIN;
}
