/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pages.c - a page of the block arena through its life ("Pages" in
 * docs/shm-protocol.md): taken from the pool for one size class, its
 * free blocks claimed, closed once none is in use (a block in use aborts
 * the closing), formatted to a gen above any it had, and back in the
 * pool; any process may help any step, or stop anywhere.
 */
#include "blocks.h"

#include <errno.h>

/*
 * Format page @p, word @pw (FORMAT): set every cell to {f, 0}, f above
 * every gen its blocks ever had.  Anyone may do it, and may stop anywhere:
 * f is computed alike by all (a header is {f, 0} once formatted, or still
 * {g, closed} with g < f), and a cell already at f or beyond is left.  A
 * cell read while the page was FORMAT with a tag below f never takes that
 * value again, so a late CAS fails.
 */
static void format(struct tk__zone *z, uint64_t p, uint64_t pw)
{
	struct tkz_cell *cells = tk__zone_cells(z);
	uint64_t *w = &tk__zone_pagetable(z)[p], size = tkz_page_size(pw);
	uint64_t first = p * TKZ_PAGE_CELLS, cell, h0, h1, f = 0, g;
	int tries;

	for (cell = first; cell < first + TKZ_PAGE_CELLS; cell += size) {
		tkz_read(cells[cell].w, &h0, &h1);
		g = gen_of(h0) + (h1 != 0);
		f = g > f ? g : f;
	}
	ck_pr_fence_load();
	if (ck_pr_load_64(w) != pw)
		return;
	for (cell = first; cell < first + TKZ_PAGE_CELLS; cell++) {
		for (tries = 0;; tries++) {
			if (tries == TRIES_MAX)
				return; /* late writers: others will finish */
			tkz_read(cells[cell].w, &h0, &h1);
			ck_pr_fence_load();
			if (ck_pr_load_64(w) != pw)
				return;
			/* By the gen alone: a data cell's tag may carry a hot
			 * mark or a frozen bit above it (no header here is in
			 * use, so none has its used bit or words). */
			if ((h0 & TKZ_BLK_GEN_MASK) >= f ||
			    tkz_cas(cells[cell].w, h0, h1, f & TKZ_BLK_GEN_MASK,
				    0))
				break;
		}
	}
	ck_pr_cas_64(w, pw, page_word_of(0, epoch_of(pw) + 1));
}

/* Abort the closing of page @p, seen as @pw: its blocks marked closed
 * are free again, a release of each (full_turn()). */
static void reopen(struct tk__zone *z, uint64_t p, uint64_t pw)
{
	uint64_t size = tkz_page_size(pw);
	struct tkz_alloc *a =
		alloc_of(z, __builtin_ctzll(size / TKZ_CLASS_MIN));

	ck_pr_faa_64(&a->started, TKZ_PAGE_CELLS / size);
	ck_pr_cas_64(&tk__zone_pagetable(z)[p], pw,
		     page_word_of(size, epoch_of(pw) + 1));
	ck_pr_faa_64(&a->done, TKZ_PAGE_CELLS / size);
}

/*
 * Help page @p along, seen as @pw: mark the free blocks of a CLOSING page
 * closed, or reopen it in a new epoch if one is in use (its marks are then
 * stale, and stale marks are free blocks); then format it.  Anyone may do
 * it, and a process killed anywhere here leaves a page the next helper
 * finishes: allocations and sweeps that meet one help it.
 */
void tk__blk_help_page(struct tk__zone *z, uint64_t p, uint64_t pw)
{
	struct tkz_cell *cells = tk__zone_cells(z);
	uint64_t *w = &tk__zone_pagetable(z)[p], size = tkz_page_size(pw);
	uint64_t first = p * TKZ_PAGE_CELLS, cell, h0, h1;
	uint64_t closed = TKZ_BLK_CLOSED | epoch_of(pw);
	int tries;

	if (!size || (pw & TKZ_PAGE_CLOSING && pw & TKZ_PAGE_FORMAT))
		return; /* not a state: a corrupt page stays out of use */
	if (pw & TKZ_PAGE_CLOSING) {
		for (cell = first; cell < first + TKZ_PAGE_CELLS; cell += size)
			for (tries = 0;; tries++) {
				if (tries == TRIES_MAX ||
				    tk__blk_read_header(z, cell, pw, &h0, &h1))
					return;
				if (h0 & TKZ_BLK_USED) {
					reopen(z, p, pw);
					return;
				}
				if (h1 == closed ||
				    tkz_cas(cells[cell].w, h0, h1, h0, closed))
					break;
			}
		/* Every block closed, and none can be claimed while the page
		 * is CLOSING in this epoch. */
		if (!ck_pr_cas_64(w, pw,
				  pw ^ TKZ_PAGE_CLOSING ^ TKZ_PAGE_FORMAT))
			return;
		pw ^= TKZ_PAGE_CLOSING ^ TKZ_PAGE_FORMAT;
	}
	if (pw & TKZ_PAGE_FORMAT)
		format(z, p, pw);
}

/*
 * Return page @p to the pool if none of its blocks is in use (collecting
 * those no key can reference any more, and with @w, for whom the page is
 * wanted, reclaiming expired states).  Returns 1 if it is in the pool.
 */
int tk__blk_close_page(struct tk__zone *z, uint64_t p, struct want *w)
{
	uint64_t *word = &tk__zone_pagetable(z)[p], pw = ck_pr_load_64(word);
	uint64_t size = tkz_page_size(pw), first = p * TKZ_PAGE_CELLS;
	uint64_t cell, h0, h1;

	if (page_open(pw)) {
		for (cell = first; cell < first + TKZ_PAGE_CELLS; cell += size)
			if (tk__blk_read_header(z, cell, pw, &h0, &h1) ||
			    ((h0 & TKZ_BLK_USED) &&
			     !tk__blk_collect(z, cell, h0, h1) &&
			     !(w &&
			       tk__blk_press(z, cell, h0, h1, RECLAIM, w))))
				return 0;
		if (!ck_pr_cas_64(word, pw, pw | TKZ_PAGE_CLOSING))
			return 0;
		pw |= TKZ_PAGE_CLOSING;
	}
	if (pw & (TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT))
		tk__blk_help_page(z, p, pw);
	pw = ck_pr_load_64(word);
	return !(pw &
		 (TKZ_PAGE_SIZE_MASK | TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT));
}

/*
 * Take a page of the pool for @w's class and claim its first block: 0,
 * or -ENOSPC if the pool is empty.  Pages being returned are helped on
 * the way, so a page a dead process left half returned is found here.
 * The class's cursor moves to the page: the next claims take its other
 * blocks, not one page each.
 */
int tk__blk_new_page(struct tk__zone *z, struct want *w)
{
	uint64_t *pt = tk__zone_pagetable(z), p, pw, open, h0, h1;
	uint64_t size = class_cells(w->k);
	struct tkz_alloc *a = alloc_of(z, w->k);
	int taken;

	for (p = 0; p < tk__zone_geo(z)->pages; p++) {
		pw = ck_pr_load_64(&pt[p]);
		if (pw & (TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT)) {
			tk__blk_help_page(z, p, pw);
			pw = ck_pr_load_64(&pt[p]);
		}
		if (pw &
		    (TKZ_PAGE_SIZE_MASK | TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT))
			continue;
		open = page_word_of(size, epoch_of(pw));
		/* A release of each of its blocks, as a release is counted. */
		ck_pr_faa_64(&a->started, TKZ_PAGE_CELLS / size);
		taken = ck_pr_cas_64(&pt[p], pw, open);
		ck_pr_faa_64(&a->done, TKZ_PAGE_CELLS / size);
		if (!taken)
			continue;
		ck_pr_store_64(&a->v, p * TKZ_PAGE_CELLS + size);
		if (tk__blk_read_header(z, p * TKZ_PAGE_CELLS, open, &h0,
					&h1) == 0 &&
		    tk__blk_try_claim(z, p * TKZ_PAGE_CELLS, h0, h1, w))
			return 0;
		/* Raced for its first block: the class's visit finds the
		 * others. */
		return -EAGAIN;
	}
	return -ENOSPC;
}

/*
 * Return to the pool a page of another class than @w's that can be
 * emptied (its states expired or garbage), looking at each page once from
 * where the last look stopped: a class that needs a page then finds one,
 * whatever class had it before.  Returns 1 if one went.
 */
int tk__blk_reuse_page(struct tk__zone *z, struct want *w)
{
	uint64_t pages = tk__zone_geo(z)->pages, p, i, pw, size;
	uint64_t *at = &tk__zone_header(z)->reuse.v, start = ck_pr_load_64(at);
	int done = 0;

	for (i = 0; i < pages && !done; i++) {
		p = (start + i) % pages;
		pw = ck_pr_load_64(&tk__zone_pagetable(z)[p]);
		size = tkz_page_size(pw);
		if (!size || size == class_cells(w->k))
			continue;
		done = tk__blk_close_page(z, p, w);
	}
	ck_pr_store_64(at, (start + i) % pages);
	return done;
}
