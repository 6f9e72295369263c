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
 *
 * A page holds blocks of one size while it is open, and goes back to a
 * common pool once none is in use: its free blocks are marked closed one
 * by one (a block in use aborts), then every cell is set to a gen above
 * any the page had, so no value of an earlier life of a page ever comes
 * back and every CAS prepared in one fails ("Pages" in the protocol).
 */
#include "slot.h"

#include <errno.h>

#define VISITS_MAX 4096 /* blocks looked at per allocation, each pass */
#define TRIES_MAX 64	/* CAS failures on one cell before leaving it */

static uint64_t arena_cells(const struct tk__zone *z)
{
	return tk__zone_geo(z)->pages * TKZ_PAGE_CELLS;
}

static uint64_t class_cells(int k)
{
	return (uint64_t)TKZ_CLASS_MIN << k;
}

/* The smallest k with words + overhead <= 4 << k: no loop over classes. */
int tk__blk_class(uint32_t words)
{
	uint32_t units, k;

	_Static_assert(TKZ_CLASS_MIN == 4, "4 << k cells");
	if (words > TKZ_BLK_WORDS_MAX)
		return -E2BIG;
	units = (words + TKZ_BLK_OVERHEAD + 3) / 4; /* >= 1 */
	k = units > 1 ? 32 - (uint32_t)__builtin_clz(units - 1) : 0;
	return k < TKZ_CLASSES ? (int)k : -E2BIG;
}

static uint64_t *page_word(struct tk__zone *z, uint64_t cell)
{
	return &tk__zone_pagetable(z)[cell / TKZ_PAGE_CELLS];
}

/* Size in cells of the blocks of the page holding @cell; 0: none. */
static uint64_t page_class_cells(struct tk__zone *z, uint64_t cell)
{
	return tkz_page_size(ck_pr_load_64(page_word(z, cell)));
}

static uint64_t epoch_of(uint64_t pw)
{
	return pw >> TKZ_PAGE_EPOCH_SHIFT;
}

/* The word of a page of @size-cell blocks (0: of the pool) in @epoch. */
static uint64_t page_word_of(uint64_t size, uint64_t epoch)
{
	return size | epoch << TKZ_PAGE_EPOCH_SHIFT;
}

static int page_open(uint64_t pw)
{
	return tkz_page_size(pw) &&
	       !(pw & (TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT));
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
	uint64_t cell = tkz_ref_cell(w1), h0, h1, g, r0, r1, off = 0;
	uint32_t n, i, m;
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
		/* Every word's cell must carry the gen: one test at the end. */
		m = words ? (n < max ? n : max) : 0;
		for (i = 0; i < m; i++) {
			words[i] = ck_pr_load_64(&cells[cell + 2 + i].w[1]);
			off |= ck_pr_load_64(&cells[cell + 2 + i].w[0]) ^ g;
		}
		bad |= off != 0;
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

/*
 * Claim the block at @cell, its header read as {@h0, @h1} while its page
 * was open (the caller read the page word before and after): a free
 * block, or one marked closed by a closing since aborted (a mark of this
 * epoch cannot exist while the page is open).  If the page has moved on
 * since, the CAS fails: a page's cells never take a value of an earlier
 * life again (see "State blocks" in docs/shm-protocol.md).
 */
static int try_claim(struct tk__zone *z, uint64_t cell, uint64_t h0,
		     uint64_t h1, uint32_t mark, uint64_t bind,
		     struct tk__blk *b)
{
	uint64_t n0 = TKZ_BLK_USED | (uint64_t)mark << TKZ_BLK_WORDS_SHIFT |
		      ((gen_of(h0) + 1) & TKZ_BLK_GEN_MASK);

	if ((h0 & TKZ_BLK_USED) || (h1 != 0 && !(h1 & TKZ_BLK_CLOSED)) ||
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
	if (tkz_state(w0) != TKZ_MEM || tkz_frozen(w0) ||
	    w1 != tkz_ref(cell, gen_of(h0)))
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

/*
 * Read the header of @cell, in the page whose word was @pw, into {@h0,
 * @h1}.  0 if the page still had that word after the read, so that the
 * header belongs to that life of the page.
 */
static int read_header(struct tk__zone *z, uint64_t cell, uint64_t pw,
		       uint64_t *h0, uint64_t *h1)
{
	tkz_read(tk__zone_cells(z)[cell].w, h0, h1);
	ck_pr_fence_load(); /* the header, then the page word again */
	return ck_pr_load_64(page_word(z, cell)) == pw ? 0 : -1;
}

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
			if (h0 >= f || tkz_cas(cells[cell].w, h0, h1,
					       f & TKZ_BLK_GEN_MASK, 0))
				break;
		}
	}
	ck_pr_cas_64(w, pw, page_word_of(0, epoch_of(pw) + 1));
}

/*
 * Help page @p along, seen as @pw: mark the free blocks of a CLOSING page
 * closed, or reopen it in a new epoch if one is in use (its marks are then
 * stale, and stale marks are free blocks); then format it.  Anyone may do
 * it, and a process killed anywhere here leaves a page the next helper
 * finishes: allocations and sweeps that meet one help it.
 */
static void help_page(struct tk__zone *z, uint64_t p, uint64_t pw)
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
				    read_header(z, cell, pw, &h0, &h1))
					return;
				if (h0 & TKZ_BLK_USED) {
					ck_pr_cas_64(
						w, pw,
						page_word_of(size,
							     epoch_of(pw) + 1));
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
 * those no key can reference any more).  Returns 1 if it is in the pool.
 */
static int close_page(struct tk__zone *z, uint64_t p)
{
	uint64_t *w = &tk__zone_pagetable(z)[p], pw = ck_pr_load_64(w);
	uint64_t size = tkz_page_size(pw), first = p * TKZ_PAGE_CELLS;
	uint64_t cell, h0, h1;

	if (page_open(pw)) {
		for (cell = first; cell < first + TKZ_PAGE_CELLS; cell += size)
			if (read_header(z, cell, pw, &h0, &h1) ||
			    ((h0 & TKZ_BLK_USED) && !collect(z, cell, h0, h1)))
				return 0;
		if (!ck_pr_cas_64(w, pw, pw | TKZ_PAGE_CLOSING))
			return 0;
		pw |= TKZ_PAGE_CLOSING;
	}
	if (pw & (TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT))
		help_page(z, p, pw);
	pw = ck_pr_load_64(w);
	return !(pw &
		 (TKZ_PAGE_SIZE_MASK | TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT));
}

/*
 * Take a page of the pool for class @k and claim its first block: 0, or
 * -ENOSPC if the pool is empty.  Pages being returned are helped on the
 * way, so a page a dead process left half returned is found here.
 */
static int new_page(struct tk__zone *z, int k, uint32_t mark, uint64_t bind,
		    struct tk__blk *b)
{
	uint64_t *pt = tk__zone_pagetable(z), p, pw, open, h0, h1;

	for (p = 0; p < tk__zone_geo(z)->pages; p++) {
		pw = ck_pr_load_64(&pt[p]);
		if (pw & (TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT)) {
			help_page(z, p, pw);
			pw = ck_pr_load_64(&pt[p]);
		}
		if (pw &
		    (TKZ_PAGE_SIZE_MASK | TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT))
			continue;
		open = page_word_of(class_cells(k), epoch_of(pw));
		if (!ck_pr_cas_64(&pt[p], pw, open))
			continue;
		if (read_header(z, p * TKZ_PAGE_CELLS, open, &h0, &h1) == 0 &&
		    try_claim(z, p * TKZ_PAGE_CELLS, h0, h1, mark, bind, b))
			return 0;
		/* Raced for its first block: the class's visit finds the
		 * others. */
		return -EAGAIN;
	}
	return -ENOSPC;
}

/*
 * Return to the pool an empty page of another class than @k, looking at
 * up to VISITS_MAX block headers: a class that needs a page then finds
 * one, whatever class had it before.  Returns 1 if one went.
 */
static int reuse_page(struct tk__zone *z, int k)
{
	uint64_t pages = tk__zone_geo(z)->pages, p, i, pw, size, cost = 0;
	uint64_t start =
		ck_pr_load_64(&tk__zone_header(z)->alloc[k].v) / TKZ_PAGE_CELLS;

	for (i = 0; i < pages && cost < VISITS_MAX; i++) {
		p = (start + i) % pages;
		pw = ck_pr_load_64(&tk__zone_pagetable(z)[p]);
		size = tkz_page_size(pw);
		if (!size || size == class_cells(k))
			continue;
		cost += TKZ_PAGE_CELLS / size;
		if (close_page(z, p))
			return 1;
	}
	return 0;
}

/*
 * Visit up to VISITS_MAX blocks of class @k from the class's cursor:
 * claim the first free one, collecting garbage on the way (@pass 0), or
 * pressing live keys (passes 1 to 3, see press()).  Pages that are not
 * open for the class are skipped (those being returned are helped).
 */
static int visit(struct tk__zone *z, int k, uint32_t mark, uint64_t bind,
		 uint64_t now, int pass, struct tk__blk *b)
{
	struct tkz_header *h = tk__zone_header(z);
	uint64_t size = class_cells(k), total = arena_cells(z);
	uint64_t cell = ck_pr_load_64(&h->alloc[k].v) % total, h0, h1, pw;
	uint64_t visits = 0, steps;

	cell -= cell % size;
	for (steps = 0; steps < total / size && visits < VISITS_MAX; steps++) {
		pw = ck_pr_load_64(page_word(z, cell));
		if (pw & (TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT) &&
		    cell % TKZ_PAGE_CELLS == 0)
			help_page(z, cell / TKZ_PAGE_CELLS, pw);
		if (!page_open(pw) || tkz_page_size(pw) != size) {
			/* Another class's page or a free one: skip it. */
			cell = (cell / TKZ_PAGE_CELLS + 1) * TKZ_PAGE_CELLS;
			steps += TKZ_PAGE_CELLS / size - 1;
			cell %= total;
			continue;
		}
		visits++;
		if (read_header(z, cell, pw, &h0, &h1) == 0 &&
		    (h0 & TKZ_BLK_USED) &&
		    (pass == 0 ? collect(z, cell, h0, h1)
			       : press(z, cell, h0, h1, now, pass, bind >> 32)))
			read_header(z, cell, pw, &h0, &h1);
		if (ck_pr_load_64(page_word(z, cell)) == pw &&
		    try_claim(z, cell, h0, h1, mark, bind, b)) {
			ck_pr_store_64(&h->alloc[k].v, (cell + size) % total);
			return 0;
		}
		cell = (cell + size) % total;
	}
	return -ENOSPC;
}

/* Claim a block of class @k whose header says @mark (words or
 * TKZ_BLK_DESC): a free one; else a page of the pool; else an empty page
 * of another class, returned to the pool; else by eviction (or, in a zone
 * that refuses, by reclaiming expired states only). */
static int claim(struct tk__zone *z, int k, uint32_t mark, uint64_t slot,
		 uint64_t e, uint64_t now, struct tk__blk *b)
{
	uint64_t bind = slot << 32 | tkz_tag(e);
	int pass, rc, round;

	if (k < 0)
		return k;
	/* A table that has grown takes no new state (its arena may be
	 * full, and pressing would evict a key not moved yet). */
	if (tk__zone_next(z))
		return TK__ZONE_MOVED;
	/* Again only if a page was taken from under us. */
	for (round = 0; round < 4; round++) {
		if (visit(z, k, mark, bind, now, 0, b) == 0)
			return 0;
		rc = new_page(z, k, mark, bind, b);
		if (rc == -ENOSPC && reuse_page(z, k))
			rc = new_page(z, k, mark, bind, b);
		if (rc == 0)
			return 0;
		if (rc == -ENOSPC)
			break;
	}
	/* A private table that may grow grows rather than evict, unless
	 * its arena is as large as an arena gets. */
	rc = tk__zone_when_full(z);
	if (rc == TK__ZONE_MOVED ||
	    (rc == TK__ZONE_GROW && tk__zone_geo(z)->pages < TKZ_PAGES_MAX))
		return rc;
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
		if (t >= g) { /* rarely: the cells of a fresh claim are older */
			if (t > g)
				return -ESTALE;
			if (x == v)
				return 0;
		}
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

/*
 * Collect the blocks whose headers lie in the @budget x TKZ_CLASS_MIN
 * cells taken from the sweep cursor, across page ends: sweeps take
 * consecutive ranges, so one full turn of the cursor visits every block,
 * wherever the turn starts.  A sweep that ends a page returns it to the
 * pool if it is empty, and one that meets a page being returned helps it.
 */
void tk__blk_sweep(struct tk__zone *z, uint64_t budget)
{
	struct tkz_header *h = tk__zone_header(z);
	struct tkz_cell *cells = tk__zone_cells(z);
	uint64_t total = arena_cells(z), n = budget * TKZ_CLASS_MIN;
	uint64_t cell, end, next, p, size, h0, h1, pw;

	cell = ck_pr_faa_64(&h->arena_sweep.v, n) % total;
	for (end = cell + (n < total ? n : total); cell < end; cell = next) {
		next = (cell / TKZ_PAGE_CELLS + 1) * TKZ_PAGE_CELLS;
		p = cell % total / TKZ_PAGE_CELLS;
		pw = ck_pr_load_64(&tk__zone_pagetable(z)[p]);
		if (pw & (TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT)) {
			help_page(z, p, pw);
			pw = ck_pr_load_64(&tk__zone_pagetable(z)[p]);
		}
		if (!page_open(pw))
			continue; /* a page of the pool, or still closing */
		size = tkz_page_size(pw);
		/* The blocks whose headers are in the range: each is swept
		 * by the one range that holds its header. */
		for (cell += (size - cell % size) % size;
		     cell < end && cell < next; cell += size) {
			tkz_read(cells[cell % total].w, &h0, &h1);
			if (h0 & TKZ_BLK_USED)
				collect(z, cell % total, h0, h1);
		}
		if (cell >= next)
			close_page(z, p);
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
