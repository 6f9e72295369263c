/*
 * blocks.c - the arena of state blocks: states of more than one word
 * (docs/shm-protocol.md, "State blocks").
 *
 * An update writes the new state into a freshly claimed block and swings
 * the key's slot to it with the slot's 16-byte CAS, so a state is never
 * changed in place.  The two hazards are a block freed while a slot still
 * references it, and a writer that was stopped for a long time writing
 * into a block that has since been given to someone else.  The first
 * cannot happen: a block is released only after its slot stopped
 * referencing it, and references never repeat.  The second is harmless:
 * every cell is written by a CAS that refuses a cell carrying a newer gen,
 * and a claimer writes all its cells before publishing.
 */
#include "slot.h"

#include <errno.h>

#define VISITS_MAX 4096 /* blocks looked at per allocation, each pass */

static uint64_t arena_cells(const struct tk__zone *z)
{
	return tk__zone_geo(z)->pages * TKZ_PAGE_CELLS;
}

static uint64_t class_cells(int k)
{
	return (uint64_t)TKZ_CLASS_MIN << k;
}

int tk__blk_class(uint32_t words)
{
	int k;

	if (words > TKZ_BLK_WORDS_MAX)
		return -E2BIG;
	for (k = 0; k < TKZ_CLASSES; k++)
		if (words + TKZ_BLK_OVERHEAD <= class_cells(k))
			return k;
	return -E2BIG;
}

/* Size in cells of the blocks of the page holding @cell; 0: none. */
static uint64_t page_class_cells(struct tk__zone *z, uint64_t cell)
{
	uint64_t c =
		ck_pr_load_64(&tk__zone_pagetable(z)[cell / TKZ_PAGE_CELLS]);

	return c >= TKZ_CLASS_MIN && c <= TKZ_PAGE_CELLS && !(c & (c - 1)) ? c
									   : 0;
}

static uint64_t gen_of(uint64_t h0)
{
	return h0 & TKZ_BLK_GEN_MASK;
}

static uint32_t words_of(uint64_t h0)
{
	return (uint32_t)(h0 >> TKZ_BLK_WORDS_SHIFT) & TKZ_BLK_WORDS_MAX;
}

/* Is @cell the header of a block, and does @h0 describe an incarnation
 * of it that fits? */
static int fits(struct tk__zone *z, uint64_t cell, uint64_t h0)
{
	uint64_t size;

	if (cell >= arena_cells(z))
		return 0;
	size = page_class_cells(z, cell);
	return size && cell % size == 0 &&
	       (!(h0 & TKZ_BLK_USED) ||
		words_of(h0) + TKZ_BLK_OVERHEAD <= size);
}

int tk__blk_read(struct tk__zone *z, struct tkz_slot *s, uint64_t w0,
		 uint64_t w1, uint64_t *words, uint32_t max, uint64_t *expires)
{
	struct tkz_cell *cells = tk__zone_cells(z);
	uint64_t cell = tkz_ref_cell(w1), h0, h1, g, r0, r1;
	uint32_t n, i;
	int bad = 0;

	if (!tkz_is_ref(w1) || cell >= arena_cells(z))
		return -EBADMSG;
	tkz_after_reference();
	tkz_read(cells[cell].w, &h0, &h1);
	g = gen_of(h0);
	n = words_of(h0);
	if (!(h0 & TKZ_BLK_USED) ||
	    (g & TKZ_REF_GEN_MASK) != (w1 & TKZ_REF_GEN_MASK) ||
	    !fits(z, cell, h0))
		bad = 1;
	else {
		*expires = ck_pr_load_64(&cells[cell + 1].w[1]);
		bad |= ck_pr_load_64(&cells[cell + 1].w[0]) != g;
		for (i = 0; words && i < n && i < max; i++) {
			words[i] = ck_pr_load_64(&cells[cell + 2 + i].w[1]);
			bad |= ck_pr_load_64(&cells[cell + 2 + i].w[0]) != g;
		}
	}
	/* The values belong to the reference only if it is still there. */
	ck_pr_fence_load();
	tkz_read(s->w, &r0, &r1);
	if (r0 != w0 || r1 != w1)
		return -EAGAIN;
	return bad ? -EBADMSG : (int)n;
}

/* May a claim bound as @h1 still be published, its slot holding @w1? */
static int bound_to(uint64_t w1, uint64_t h1)
{
	/* A multi-key update in progress there may still publish it. */
	return tkz_is_desc(w1) || tkz_tag(w1) == (h1 & UINT64_C(0xffffffff));
}

int tk__blk_bound(struct tk__zone *z, uint64_t h1)
{
	uint64_t slot = h1 >> 32;

	return slot < tk__zone_geo(z)->capacity &&
	       bound_to(ck_pr_load_64(&tk__zone_slots(z)[slot].w[1]), h1);
}

/*
 * Collect the used block at @cell, read as {@h0, @h1}: release it if no
 * slot references it or ever can.  One read of the slot decides both (a
 * publish between two reads would look like neither).  Returns 1 if
 * released.
 */
static int collect(struct tk__zone *z, uint64_t cell, uint64_t h0, uint64_t h1)
{
	uint64_t slot = h1 >> 32, w1;

	ck_pr_fence_load(); /* the header (read by the caller), then the slot */
	if (words_of(h0) == TKZ_BLK_DESC) {
		if (!tk__desc_garbage(z, cell, h0, h1))
			return 0;
	} else if (slot < tk__zone_geo(z)->capacity) {
		w1 = ck_pr_load_64(&tk__zone_slots(z)[slot].w[1]);
		if (w1 == tkz_ref(cell, gen_of(h0)) || bound_to(w1, h1))
			return 0;
	}
	return tkz_cas(tk__zone_cells(z)[cell].w, h0, h1, gen_of(h0), 0);
}

static int try_claim(struct tk__zone *z, uint64_t cell, uint64_t h0,
		     uint64_t h1, uint32_t mark, uint64_t bind,
		     struct tk__blk *b)
{
	uint64_t n0 = TKZ_BLK_USED | (uint64_t)mark << TKZ_BLK_WORDS_SHIFT |
		      ((gen_of(h0) + 1) & TKZ_BLK_GEN_MASK);

	if ((h0 & TKZ_BLK_USED) || h1 != 0 ||
	    !tkz_cas(tk__zone_cells(z)[cell].w, h0, h1, n0, bind))
		return 0;
	b->cell = cell;
	b->h0 = n0;
	b->h1 = bind;
	return 1;
}

/*
 * Press the key whose live block is at @cell: reclaim it if expired; in
 * @pass 1 evict it unless its ref bit spares it, in pass 2 clear that
 * bit (every key was spared), in pass 3 evict it.  Never the key in slot
 * @self, whose update this allocation is for: evicting it would only make
 * that update start again, its state lost.  Returns 1 if the block was
 * released.
 */
static int press(struct tk__zone *z, uint64_t cell, uint64_t h0, uint64_t h1,
		 uint64_t now, int pass, uint64_t self)
{
	uint64_t slot = h1 >> 32, w0, w1, exp;
	struct tkz_slot *s;
	int expired;

	if (slot >= tk__zone_geo(z)->capacity || slot == self)
		return 0;
	s = &tk__zone_slots(z)[slot];
	tkz_read(s->w, &w0, &w1);
	if (tkz_state(w0) != TKZ_MEM || w1 != tkz_ref(cell, gen_of(h0)))
		return 0;
	if (tk__blk_read(z, s, w0, w1, NULL, 0, &exp) < 0)
		return 0;
	expired = exp <= UINT64_MAX - tk__zone_geo(z)->grace &&
		  exp + tk__zone_geo(z)->grace <= now;
	if (!expired && (w0 & TKZ_REF)) {
		if (pass == 2)
			tkz_cas(s->w, w0, w1, w0 & ~TKZ_REF, w1);
		return 0;
	}
	if (!expired &&
	    (pass == 2 || (tk__zone_geo(z)->flags & TKZ_FLAG_REFUSE_FULL)))
		return 0;
	if (!tkz_cas(s->w, w0, w1, 0, 0))
		return 0;
	tkz_count(z, expired ? TKZ_RECLAIMS : TKZ_EVICTIONS);
	return tkz_cas(tk__zone_cells(z)[cell].w, h0, h1, gen_of(h0), 0);
}

/* A page for class @k that nobody uses yet; its first cell, or -1. */
static int64_t new_page(struct tk__zone *z, int k)
{
	uint64_t *pt = tk__zone_pagetable(z), p;

	for (p = 0; p < tk__zone_geo(z)->pages; p++)
		if (ck_pr_load_64(&pt[p]) == 0 &&
		    ck_pr_cas_64(&pt[p], 0, class_cells(k)))
			return (int64_t)(p * TKZ_PAGE_CELLS);
	return -1;
}

/*
 * Visit up to VISITS_MAX blocks of class @k from the class's cursor:
 * claim the first free one, collecting garbage on the way (@pass 0), or
 * pressing live keys (passes 1 to 3, see press()).
 */
static int visit(struct tk__zone *z, int k, uint32_t mark, uint64_t bind,
		 uint64_t now, int pass, struct tk__blk *b)
{
	struct tkz_header *h = tk__zone_header(z);
	struct tkz_cell *cells = tk__zone_cells(z);
	uint64_t size = class_cells(k), total = arena_cells(z);
	uint64_t cell = ck_pr_load_64(&h->alloc[k].v) % total, h0, h1;
	uint64_t visits = 0, steps;

	cell -= cell % size;
	for (steps = 0; steps < total / size && visits < VISITS_MAX; steps++) {
		if (page_class_cells(z, cell) != size) {
			/* Another class's page or a free one: skip it. */
			cell = (cell / TKZ_PAGE_CELLS + 1) * TKZ_PAGE_CELLS;
			steps += TKZ_PAGE_CELLS / size - 1;
			cell %= total;
			continue;
		}
		visits++;
		tkz_read(cells[cell].w, &h0, &h1);
		if ((h0 & TKZ_BLK_USED) &&
		    (pass == 0 ? collect(z, cell, h0, h1)
			       : press(z, cell, h0, h1, now, pass, bind >> 32)))
			tkz_read(cells[cell].w, &h0, &h1);
		if (try_claim(z, cell, h0, h1, mark, bind, b)) {
			ck_pr_store_64(&h->alloc[k].v, (cell + size) % total);
			return 0;
		}
		cell = (cell + size) % total;
	}
	return -ENOSPC;
}

/* Claim a block of class @k whose header says @mark (words or
 * TKZ_BLK_DESC). */
static int claim(struct tk__zone *z, int k, uint32_t mark, uint64_t slot,
		 uint64_t e, uint64_t now, struct tk__blk *b)
{
	uint64_t bind = slot << 32 | tkz_tag(e), h0, h1;
	int pass;
	int64_t cell;

	if (k < 0)
		return k;
	if (visit(z, k, mark, bind, now, 0, b) == 0)
		return 0;
	cell = new_page(z, k);
	if (cell >= 0) {
		tkz_read(tk__zone_cells(z)[cell].w, &h0, &h1);
		if (try_claim(z, (uint64_t)cell, h0, h1, mark, bind, b))
			return 0;
		return visit(z, k, mark, bind, now, 0, b);
	}
	for (pass = 1; pass <= 3; pass++)
		if (visit(z, k, mark, bind, now, pass, b) == 0)
			return 0;
	return -ENOSPC;
}

int tk__blk_claim(struct tk__zone *z, uint32_t words, uint64_t slot, uint64_t e,
		  uint64_t now, struct tk__blk *b)
{
	return claim(z, tk__blk_class(words), words, slot, e, now, b);
}

int tk__blk_claim_desc(struct tk__zone *z, uint32_t cells, uint64_t slot,
		       uint64_t e, uint64_t now, struct tk__blk *b)
{
	return claim(z, tk__blk_class(cells - TKZ_BLK_OVERHEAD), TKZ_BLK_DESC,
		     slot, e, now, b);
}

int tk__blk_rebind(struct tk__zone *z, struct tk__blk *b, uint64_t slot,
		   uint64_t e)
{
	uint64_t bind = slot << 32 | tkz_tag(e);
	uint64_t n0 = (b->h0 & ~TKZ_BLK_GEN_MASK) |
		      ((gen_of(b->h0) + 1) & TKZ_BLK_GEN_MASK);

	/*
	 * A new gen, always: a used header then never comes back, so a
	 * collector that read the old one and judged it garbage fails its
	 * release.  Keeping the gen would let a rebind to a value whose tag
	 * happens to match restore the very header it read (spin finds the
	 * freed live block: tests/model/blocks.pml -DTRUNC_TAG).  The cells
	 * are written again under the new gen.
	 */
	if (!tkz_cas(tk__zone_cells(z)[b->cell].w, b->h0, b->h1, n0, bind))
		return -ESTALE;
	b->h0 = n0;
	b->h1 = bind;
	return 0;
}

int tk__blk_put(struct tkz_cell *c, uint64_t g, uint64_t v)
{
	uint64_t t, x;

	for (;;) {
		tkz_read(c->w, &t, &x);
		if (t > g)
			return -ESTALE;
		if (t == g && x == v)
			return 0;
		if (tkz_cas(c->w, t, x, g, v))
			return 0;
	}
}

int tk__blk_write(struct tk__zone *z, const struct tk__blk *b, uint64_t expires,
		  const uint64_t *words)
{
	struct tkz_cell *c = &tk__zone_cells(z)[b->cell];
	uint64_t g = gen_of(b->h0);
	uint32_t i, n = words_of(b->h0);

	if (tk__blk_put(&c[1], g, expires))
		return -ESTALE;
	for (i = 0; i < n; i++)
		if (tk__blk_put(&c[2 + i], g, words[i]))
			return -ESTALE;
	return 0;
}

uint64_t tk__blk_ref(const struct tk__blk *b)
{
	return tkz_ref(b->cell, gen_of(b->h0));
}

void tk__blk_release(struct tk__zone *z, const struct tk__blk *b)
{
	tkz_cas(tk__zone_cells(z)[b->cell].w, b->h0, b->h1, gen_of(b->h0), 0);
}

void tk__blk_release_ref(struct tk__zone *z, uint64_t w1)
{
	uint64_t cell = tkz_ref_cell(w1), h0, h1;

	if (!tkz_is_ref(w1) || cell >= arena_cells(z))
		return;
	tkz_read(tk__zone_cells(z)[cell].w, &h0, &h1);
	if ((h0 & TKZ_BLK_USED) &&
	    (gen_of(h0) & TKZ_REF_GEN_MASK) == (w1 & TKZ_REF_GEN_MASK))
		tkz_cas(tk__zone_cells(z)[cell].w, h0, h1, gen_of(h0), 0);
}

void tk__blk_sweep(struct tk__zone *z, uint64_t budget)
{
	struct tkz_header *h = tk__zone_header(z);
	struct tkz_cell *cells = tk__zone_cells(z);
	uint64_t total = arena_cells(z), cell, size, h0, h1;

	cell = ck_pr_faa_64(&h->arena_sweep.v, budget * TKZ_CLASS_MIN) % total;
	while (budget--) {
		size = page_class_cells(z, cell);
		if (!size)
			return; /* a page no one uses */
		cell -= cell % size;
		tkz_read(cells[cell].w, &h0, &h1);
		if (h0 & TKZ_BLK_USED)
			collect(z, cell, h0, h1);
		cell += size;
		if (cell % TKZ_PAGE_CELLS == 0 || cell >= total)
			return;
	}
}

void tk__blk_census(struct tk__zone *z, struct tk__zone_census *c)
{
	struct tkz_cell *cells = tk__zone_cells(z);
	struct tkz_slot *slots = tk__zone_slots(z);
	uint64_t total = arena_cells(z), cell, size, h0, h1, w0, w1, exp;

	c->blocks = c->block_bytes = 0;
	for (cell = 0; cell < total; cell += size) {
		size = page_class_cells(z, cell);
		if (!size) {
			size = TKZ_PAGE_CELLS - cell % TKZ_PAGE_CELLS;
			continue;
		}
		tkz_read(cells[cell].w, &h0, &h1);
		if (!(h0 & TKZ_BLK_USED))
			continue;
		c->blocks++;
		c->block_bytes += size * sizeof(struct tkz_cell);
	}
	/* Every block reference of a committed key must be valid. */
	for (cell = 0; cell < tk__zone_geo(z)->capacity; cell++) {
		tkz_read(slots[cell].w, &w0, &w1);
		if (tkz_state(w0) != TKZ_MEM || !(w0 & TKZ_FP_BLOCK))
			continue;
		if (tkz_is_desc(w1) && !tk__desc_valid(z, w1) &&
		    ck_pr_load_64(&slots[cell].w[1]) == w1)
			c->violations++;
		if (!tkz_is_ref(w1))
			continue;
		if (tk__blk_read(z, &slots[cell], w0, w1, NULL, 0, &exp) ==
		    -EBADMSG)
			c->violations++;
		else if (ck_pr_load_64(&cells[tkz_ref_cell(w1)].w[1]) >> 32 !=
				 cell &&
			 ck_pr_load_64(&slots[cell].w[1]) == w1)
			c->violations++;
	}
}
