/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * blocks.h - the arena of state blocks, as blocks.c (claims, collection,
 * eviction) and pages.c (a page's life: open, closed, formatted, in the
 * pool) share it.  Only those two include it.
 */
#ifndef TK_SHM_BLOCKS_H
#define TK_SHM_BLOCKS_H

#include "word.h"

#define TRIES_MAX 64 /* CAS failures on one cell before leaving it */

/* The passes of visit(): besides collecting garbage, what it does to the
 * live blocks it passes (press()). */
enum pass {
	RECLAIM, /* reclaim expired states (another class's: reuse) */
	TURN,	 /* reclaim expired states, note when the others may */
	EVICT,	 /* reclaim expired states, note the coldest of the others */
	SPARE	 /* reclaim expired states, clear the others' ref bits */
};
/* The key an eviction would take: its slot and block, as read. */
struct victim {
	int have;
	uint64_t slot, w0, w1; /* the slot index and its value */
	uint64_t cell, h0, h1; /* the block and its header */
	struct tkz_heat heat;
};

/* What a claim wants, and what its visits learn. */
struct want {
	int k;	       /* the class */
	uint32_t mark; /* words or TKZ_BLK_DESC */
	uint64_t bind; /* slot << 32 | tag */
	uint64_t now;
	uint64_t until;	      /* TURN: the earliest a live state may expire */
	struct victim victim; /* EVICT: the coldest state seen */
	struct tk__blk *b;
};

static inline uint64_t arena_cells(const struct tk__zone *z)
{
	return tk__zone_geo(z)->pages * TKZ_PAGE_CELLS;
}
static inline uint64_t class_cells(int k)
{
	return (uint64_t)TKZ_CLASS_MIN << k;
}
static inline struct tkz_alloc *alloc_of(struct tk__zone *z, int k)
{
	return &tk__zone_header(z)->alloc[k];
}
static inline uint64_t *page_word(struct tk__zone *z, uint64_t cell)
{
	return &tk__zone_pagetable(z)[cell / TKZ_PAGE_CELLS];
}
/* Size in cells of the blocks of the page holding @cell; 0: none. */
static inline uint64_t page_class_cells(struct tk__zone *z, uint64_t cell)
{
	return tkz_page_size(ck_pr_load_64(page_word(z, cell)));
}
/* The class of the page holding @cell, or NULL if it has none. */
static inline struct tkz_alloc *class_at(struct tk__zone *z, uint64_t cell)
{
	uint64_t size = page_class_cells(z, cell);

	return size ? alloc_of(z, __builtin_ctzll(size / TKZ_CLASS_MIN)) : NULL;
}
static inline uint64_t epoch_of(uint64_t pw)
{
	return pw >> TKZ_PAGE_EPOCH_SHIFT;
}
/* The word of a page of @size-cell blocks (0: of the pool) in @epoch. */
static inline uint64_t page_word_of(uint64_t size, uint64_t epoch)
{
	return size | epoch << TKZ_PAGE_EPOCH_SHIFT;
}
static inline int page_open(uint64_t pw)
{
	return tkz_page_size(pw) &&
	       !(pw & (TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT));
}
static inline uint64_t gen_of(uint64_t h0)
{
	return h0 & TKZ_BLK_GEN_MASK;
}

/* blocks.c, for pages.c */
int tk__blk_read_header(struct tk__zone *z, uint64_t cell, uint64_t pw,
			uint64_t *h0, uint64_t *h1);
int tk__blk_collect(struct tk__zone *z, uint64_t cell, uint64_t h0,
		    uint64_t h1);
int tk__blk_press(struct tk__zone *z, uint64_t cell, uint64_t h0, uint64_t h1,
		  enum pass pass, struct want *w);
int tk__blk_try_claim(struct tk__zone *z, uint64_t cell, uint64_t h0,
		      uint64_t h1, const struct want *w);

/* pages.c, for blocks.c */
void tk__blk_help_page(struct tk__zone *z, uint64_t p, uint64_t pw);
int tk__blk_close_page(struct tk__zone *z, uint64_t p, struct want *w);
int tk__blk_new_page(struct tk__zone *z, struct want *w);
int tk__blk_reuse_page(struct tk__zone *z, struct want *w);

#endif /* TK_SHM_BLOCKS_H */
