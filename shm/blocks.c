/* SPDX-License-Identifier: BSD-2-Clause */
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
 * back and every CAS prepared in one fails ("Pages" in the protocol;
 * pages.c).
 */
#include "blocks.h"

#include <errno.h>

#define VISITS_MAX 4096 /* blocks a visit near the cursor looks at */
/* A class found full is looked at whole again after this at most, so a
 * count a killed process left short (tkz_alloc) is mended in time. */
#define FULL_TTL_NS UINT64_C(1000000000)

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

/*
 * Release the block at @cell, read as {@h0, @h1}: 1 if this did.  The
 * release is counted as begun before the CAS and as ended after it, so
 * that a turn that saw neither count move saw no block freed behind it
 * (full_turn()); the next claims of the class try the block first.
 */
static int release(struct tk__zone *z, uint64_t cell, uint64_t h0, uint64_t h1)
{
	struct tkz_alloc *a = class_at(z, cell);
	uint64_t n = a ? ck_pr_faa_64(&a->started, 1) : 0;
	int ok = tkz_cas(tk__zone_cells(z)[cell].w, h0, h1, gen_of(h0), 0);

	if (!a)
		return ok;
	if (ok)
		ck_pr_store_64(&a->spare[n % TKZ_SPARES], cell + 1);
	ck_pr_inc_64(&a->done);
	return ok;
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
	/* A power of two (tkz_page_size()): a mask, not a division. */
	return size && (cell & (size - 1)) == 0 &&
	       (!(h0 & TKZ_BLK_USED) ||
		words_of(h0) + TKZ_BLK_OVERHEAD <= size);
}

int tk__blk_read(struct tk__zone *z, struct tkz_slot *s, uint64_t w0,
		 uint64_t w1, uint64_t *words, uint32_t max, uint64_t *expires,
		 struct tk__blk_hot *hot)
{
	struct tkz_cell *cells = tk__zone_cells(z), *c;
	uint64_t cell = tkz_ref_cell(w1), h0, h1, g, r0, r1, t, off = 0;
	uint32_t n, i, m, mark = 0;
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
		t = ck_pr_load_64(&cells[cell + 1].w[0]);
		mark = (uint32_t)(t >> TKZ_CELL_HOT_SHIFT) & TKZ_CELL_HOT_MAX;
		bad |= (t & ~((uint64_t)TKZ_CELL_HOT_MAX
			      << TKZ_CELL_HOT_SHIFT)) != g;
		bad |= mark > n;
		/* Every word's cell must carry the gen: one test at the end,
		 * two cells a turn (the loop's own steps were half of it). */
		m = words ? (n < max ? n : max) : 0;
		c = &cells[cell + 2];
		for (i = 0; i + 1 < m; i += 2) {
			words[i] = ck_pr_load_64(&c[i].w[1]);
			words[i + 1] = ck_pr_load_64(&c[i + 1].w[1]);
			off |= (ck_pr_load_64(&c[i].w[0]) ^ g) |
			       (ck_pr_load_64(&c[i + 1].w[0]) ^ g);
		}
		if (i < m) {
			words[i] = ck_pr_load_64(&c[i].w[1]);
			off |= ck_pr_load_64(&c[i].w[0]) ^ g;
		}
		/* Only a hot word's cell is ever frozen. */
		bad |= (off & ~TKZ_CELL_FROZEN) != 0;
		/* A hot word among those read, whose gen was checked: a
		 * caller that read fewer words carries no state forward. */
		if (hot && mark && mark <= m && !bad) {
			hot->cell = cell + 1 + mark;
			hot->gen = g;
			hot->value = words[mark - 1];
		}
	}
	if (hot)
		hot->mark = bad || mark > m ? 0 : mark;
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
 * May a 1-word claim be a conversion's (tk__zone_to_block()) still to be
 * published, its slot holding {@w0, ..}?  A word key's values may repeat
 * (a refund restores one), so while the slot holds a word key, one that
 * differs from the claim's now may be the claim's again later.
 */
static int converting(uint64_t h0, uint64_t w0)
{
	return words_of(h0) == 1 && tkz_state(w0) == TKZ_MEM &&
	       !(w0 & TKZ_FP_BLOCK);
}

/*
 * Collect the used block at @cell, read as {@h0, @h1}: release it if no
 * slot references it or ever can.  One read of the slot decides both (a
 * publish between two reads would look like neither).  Returns 1 if
 * released.
 */
int tk__blk_collect(struct tk__zone *z, uint64_t cell, uint64_t h0, uint64_t h1)
{
	uint64_t slot = h1 >> 32, w[2];

	ck_pr_fence_load(); /* the header (read by the caller), then the slot */
	if (words_of(h0) == TKZ_BLK_DESC) {
		if (!tk__desc_garbage(z, cell, h0, h1))
			return 0;
	} else if (slot < tk__zone_geo(z)->capacity) {
		tkz_load2(tk__zone_slots(z)[slot].w, w);
		if (w[1] == tkz_ref(cell, gen_of(h0)) || bound_to(w[1], h1) ||
		    converting(h0, w[0]))
			return 0;
	}
	return release(z, cell, h0, h1);
}

/*
 * Make the block at @cell, its header read as {@h0, @h1}, @w's: a new
 * gen, bound to @w's slot value.  The CAS fails if the header changed.
 */
static int take(struct tk__zone *z, uint64_t cell, uint64_t h0, uint64_t h1,
		const struct want *w)
{
	uint64_t n0 = TKZ_BLK_USED | (uint64_t)w->mark << TKZ_BLK_WORDS_SHIFT |
		      ((gen_of(h0) + 1) & TKZ_BLK_GEN_MASK);

	if (!tkz_cas(tk__zone_cells(z)[cell].w, h0, h1, n0, w->bind))
		return 0;
	w->b->cell = cell;
	w->b->h0 = n0;
	w->b->h1 = w->bind;
	return 1;
}

/*
 * Claim the block at @cell for @w, its header read as {@h0, @h1} while
 * its page was open (the caller read the page word before and after): a
 * free block, or one marked closed by a closing since aborted (a mark of
 * this epoch cannot exist while the page is open).  If the page has moved
 * on since, the CAS fails: a page's cells never take a value of an
 * earlier life again (see "State blocks" in docs/shm-protocol.md).
 */
int tk__blk_try_claim(struct tk__zone *z, uint64_t cell, uint64_t h0,
		      uint64_t h1, const struct want *w)
{
	if ((h0 & TKZ_BLK_USED) || (h1 != 0 && !(h1 & TKZ_BLK_CLOSED)))
		return 0;
	return take(z, cell, h0, h1, w);
}

/*
 * Press the key whose live block is at @cell: reclaim it if expired; in
 * @pass RECLAIM keep it otherwise, and release a block reclaimed (it is of
 * another class than @w's); in TURN keep it, noting when it may expire;
 * in EVICT keep it, noting it if it is the coldest seen (tkz_heat_of(),
 * as slots are evicted: evict()); in SPARE keep it, clearing its ref
 * bit.  Never the key whose update this
 * allocation is for: evicting it would only make that update start
 * again, its state lost.  A block reclaimed for @w goes straight to it,
 * never free in between: no other claim can take it, and no release is
 * counted.  Returns 1 if @w has it.
 */
int tk__blk_press(struct tk__zone *z, uint64_t cell, uint64_t h0, uint64_t h1,
		  enum pass pass, struct want *w)
{
	uint64_t slot = h1 >> 32, w0, w1, exp, at,
		 grace = tk__zone_geo(z)->grace;
	uint64_t c[2];
	struct tkz_heat heat;
	struct tkz_slot *s;

	if (slot >= tk__zone_geo(z)->capacity || slot == w->bind >> 32)
		return 0;
	/* A live state, by its expiry cell alone (in the header's line):
	 * a cell of the header's gen is of this incarnation (by the gen
	 * alone: a hot mark sits above it). */
	tkz_load2(tk__zone_cells(z)[cell + 1].w, c);
	at = c[1] <= UINT64_MAX - grace ? c[1] + grace : UINT64_MAX;
	if (pass == TURN && (c[0] & TKZ_BLK_GEN_MASK) == gen_of(h0) &&
	    at > w->now) {
		w->until = at < w->until ? at : w->until;
		return 0;
	}
	s = &tk__zone_slots(z)[slot];
	tkz_read(s->w, &w0, &w1);
	if (tkz_state(w0) != TKZ_MEM || tkz_frozen(w0) ||
	    w1 != tkz_ref(cell, gen_of(h0)))
		return 0;
	if (tk__blk_read(z, s, w0, w1, NULL, 0, &exp, NULL) < 0)
		return 0;
	at = exp <= UINT64_MAX - grace ? exp + grace : UINT64_MAX;
	if (at > w->now) {
		if (pass == TURN)
			w->until = at < w->until ? at : w->until;
		if (pass == SPARE && (w0 & TKZ_REF))
			tkz_cas(s->w, w0, w1, w0 & ~TKZ_REF, w1);
		heat = tkz_heat_of(w0, w1, exp, w->now);
		if (pass == EVICT &&
		    (!w->victim.have || tkz_colder(heat, w->victim.heat)))
			w->victim = (struct victim){ 1,	   slot, w0, w1,
						     cell, h0,	 h1, heat };
		return 0;
	}
	if (!tkz_cas(s->w, w0, w1, 0, 0))
		return 0;
	tkz_count(z, TKZ_RECLAIMS);
	return pass == RECLAIM ? release(z, cell, h0, h1)
			       : take(z, cell, h0, h1, w);
}

/*
 * Read the header of @cell, in the page whose word was @pw, into {@h0,
 * @h1}.  0 if the page still had that word after the read, so that the
 * header belongs to that life of the page.
 */
int tk__blk_read_header(struct tk__zone *z, uint64_t cell, uint64_t pw,
			uint64_t *h0, uint64_t *h1)
{
	tkz_read(tk__zone_cells(z)[cell].w, h0, h1);
	ck_pr_fence_load(); /* the header, then the page word again */
	return ck_pr_load_64(page_word(z, cell)) == pw ? 0 : -1;
}

/* Claim a block a release of @w's class offered lately, if one is still
 * free: a key evicted or reset leaves its block where no cursor is. */
static int claim_spare(struct tk__zone *z, struct want *w)
{
	struct tkz_alloc *a = alloc_of(z, w->k);
	uint64_t spare, cell, pw, h0, h1;
	int i;

	for (i = 0; i < TKZ_SPARES; i++) {
		spare = ck_pr_load_64(&a->spare[i]);
		cell = spare - 1;
		if (!spare || cell >= arena_cells(z) ||
		    cell % class_cells(w->k))
			continue;
		pw = ck_pr_load_64(page_word(z, cell));
		if (page_open(pw) && tkz_page_size(pw) == class_cells(w->k) &&
		    tk__blk_read_header(z, cell, pw, &h0, &h1) == 0 &&
		    tk__blk_try_claim(z, cell, h0, h1, w)) {
			ck_pr_cas_64(&a->spare[i], spare, 0);
			return 1;
		}
	}
	return 0;
}

/*
 * Visit up to @max blocks of @w's class from the class's cursor: claim
 * the first free one, treating the blocks on the way as @pass says (see
 * enum pass and tk__blk_press()).  Pages that are not open for the class are
 * skipped (those being returned are helped).  The cursor moves past what
 * was visited, found or not: the next claim looks at other blocks, so
 * claims that fail still go round the class, and nothing makes a claim
 * look at the same used blocks again and again.
 */
static int visit(struct tk__zone *z, struct want *w, enum pass pass,
		 uint64_t max)
{
	struct tkz_alloc *a = alloc_of(z, w->k);
	uint64_t size = class_cells(w->k), total = arena_cells(z);
	uint64_t cell = ck_pr_load_64(&a->v) % total, h0, h1, pw;
	uint64_t visits = 0, steps;
	int got = 0;

	cell -= cell % size;
	for (steps = 0; steps < total / size && visits < max && !got; steps++) {
		pw = ck_pr_load_64(page_word(z, cell));
		if (pw & (TKZ_PAGE_CLOSING | TKZ_PAGE_FORMAT) &&
		    cell % TKZ_PAGE_CELLS == 0)
			tk__blk_help_page(z, cell / TKZ_PAGE_CELLS, pw);
		if (!page_open(pw) || tkz_page_size(pw) != size) {
			/* Another class's page or a free one: skip it. */
			cell = (cell / TKZ_PAGE_CELLS + 1) * TKZ_PAGE_CELLS;
			steps += TKZ_PAGE_CELLS / size - 1;
			cell %= total;
			continue;
		}
		visits++;
		if (tk__blk_read_header(z, cell, pw, &h0, &h1) == 0 &&
		    (h0 & TKZ_BLK_USED)) {
			if (tk__blk_collect(z, cell, h0, h1))
				tk__blk_read_header(z, cell, pw, &h0, &h1);
			else
				got = tk__blk_press(z, cell, h0, h1, pass, w);
		}
		got = got || (ck_pr_load_64(page_word(z, cell)) == pw &&
			      tk__blk_try_claim(z, cell, h0, h1, w));
		cell = (cell + size) % total;
	}
	ck_pr_store_64(&a->v, cell);
	return got ? 0 : -ENOSPC;
}

#define VERDICT_BITS 48 /* of the started count; the rest: in flight */
#define VERDICT_MASK ((UINT64_C(1) << VERDICT_BITS) - 1)

/*
 * The verdict word for the releases of every class now: {begun (48
 * bits), in flight}.  Every class: a page of another class that empties
 * may become this one's.  Begun first, then ended: a release between
 * the reads is one in flight.
 */
static uint64_t verdict(struct tk__zone *z)
{
	uint64_t started = 0, done = 0;
	int k;

	for (k = 0; k < TKZ_CLASSES; k++)
		started += ck_pr_load_64(&alloc_of(z, k)->started);
	for (k = 0; k < TKZ_CLASSES; k++)
		done += ck_pr_load_64(&alloc_of(z, k)->done);
	if (started - done >= UINT64_C(1) << (64 - VERDICT_BITS))
		return 0; /* beyond what a word holds: no verdict */
	return (started & VERDICT_MASK) | (started - done) << VERDICT_BITS;
}

/*
 * Every quick way failed: look at the whole class, reclaiming expired
 * states on the way, and at every page of the other classes for one to
 * empty, before saying it is full (-ENOSPC).  Not again while the verdict
 * of a turn that found it full holds: no release began or ended since
 * that turn began, and no state it saw can have expired.  Then every
 * block free is one whose release is still in flight, as it was when
 * the turn began (tests/model/alloc.pml).  A release a killed process
 * left in flight ends no verdict: its block, if freed, is found when the
 * verdict lapses, FULL_TTL_NS at most after its turn.  A turn during
 * which a release began or ended records no verdict, and looks at the
 * spares once more for a block freed behind it.
 */
static int full_turn(struct tk__zone *z, struct want *w)
{
	struct tkz_alloc *a = alloc_of(z, w->k);
	uint64_t held[2], v;

	tkz_load2(a->full, held);
	v = verdict(z);
	if (v && held[0] == v && w->now < held[1])
		return -ENOSPC;
	w->until = w->now <= UINT64_MAX - FULL_TTL_NS ? w->now + FULL_TTL_NS
						      : UINT64_MAX;
	if (visit(z, w, TURN, UINT64_MAX) == 0 ||
	    (tk__blk_reuse_page(z, w) && tk__blk_new_page(z, w) == 0))
		return 0;
	if (verdict(z) != v || !v)
		return claim_spare(z, w) ? 0 : -ENOSPC;
	tkz_cas(a->full, held[0], held[1], v, w->until);
	return -ENOSPC;
}

/*
 * The class is full and the zone evicts: take the block of the coldest
 * key among those a visit near the cursor passes (reclaiming what
 * expired on the way), as a full slot table evicts (shm/slots.c,
 * make_room()).  If every one was used again since it was last spared,
 * the same blocks are visited again to clear their ref bits, as a clock
 * hand does: a key that is not used again before the next eviction is
 * then used once as far as eviction goes, and goes before those used
 * since.  The slot's CAS compares the whole slot: a victim used since it
 * was judged stays, and the next visit judges again.  The evicted key's
 * block goes straight to @w, never free in between.
 */
static int evict(struct tk__zone *z, struct want *w)
{
	struct victim *v = &w->victim;
	uint64_t *cursor = &alloc_of(z, w->k)->v, from;
	int round, seen = 0;

	for (round = 0; round < 4; round++) {
		v->have = 0;
		from = ck_pr_load_64(cursor);
		if (visit(z, w, EVICT, VISITS_MAX) == 0)
			return 0;
		seen |= v->have;
		if (!v->have)
			continue; /* every block in flight, or this key's */
		if (v->heat.tier == TKZ_USED_AGAIN) {
			ck_pr_store_64(cursor, from);
			if (visit(z, w, SPARE, VISITS_MAX) == 0)
				return 0;
		}
		if (!tkz_cas(tk__zone_slots(z)[v->slot].w, v->w0, v->w1, 0, 0))
			continue;
		tkz_count(z, TKZ_EVICTIONS);
		/* Else a collector freed it first: a spare, or the next
		 * visit finds it. */
		if (take(z, v->cell, v->h0, v->h1, w) || claim_spare(z, w))
			return 0;
	}
	/* Rivals kept changing what it judged: look again after a backoff
	 * (the caller's), as a lost slot update does. */
	return seen ? -EAGAIN : -ENOSPC;
}

/* Claim a block of class @k whose header says @mark (words or
 * TKZ_BLK_DESC), in the order of docs/shm-protocol.md, "Finding a free
 * block": a spare, a block near the cursor, a page of the pool, a whole
 * turn (full_turn()); else, the class full, grow, refuse or evict. */
static int claim(struct tk__zone *z, int k, uint32_t mark, uint64_t slot,
		 uint64_t e, uint64_t now, struct tk__blk *b)
{
	struct want w = { k, mark, slot << 32 | tkz_tag(e), now, 0, { 0 }, b };
	int rc, round;

	if (k < 0)
		return k;
	/* A table that has grown takes no new state (its arena may be
	 * full, and pressing would evict a key not moved yet). */
	if (tk__zone_next(z))
		return TK__ZONE_MOVED;
	/* Again only if a page was taken from under us. */
	for (round = 0; round < 4; round++) {
		if (claim_spare(z, &w) || visit(z, &w, TURN, VISITS_MAX) == 0)
			return 0;
		rc = tk__blk_new_page(z, &w);
		if (rc == 0)
			return 0;
		if (rc == -ENOSPC)
			break;
	}
	if (full_turn(z, &w) == 0)
		return 0;
	/* A private table that may grow grows rather than evict, unless
	 * its arena is as large as an arena gets. */
	rc = tk__zone_when_full(z);
	if (rc == TK__ZONE_MOVED ||
	    (rc == TK__ZONE_GROW && tk__zone_geo(z)->pages < TKZ_PAGES_MAX))
		return rc;
	if (tk__zone_geo(z)->flags & TKZ_FLAG_REFUSE_FULL)
		return -ENOSPC; /* the turn reclaimed what had expired */
	return evict(z, &w);
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

/* tk__blk_put(), inlined where a block's cells are written in a row:
 * cell @c to {@tag, @v}, judged by the gen in @tag's low bits (a mark or
 * a frozen bit above it is no newer gen). */
static inline __attribute__((always_inline)) int put(struct tkz_cell *c,
						     uint64_t tag, uint64_t v)
{
	uint64_t t, x, g = tag & TKZ_BLK_GEN_MASK;

	for (;;) {
		tkz_read(c->w, &t, &x);
		if (__builtin_expect((t & TKZ_BLK_GEN_MASK) >= g, 0)) {
			/* Rarely: the cells of a fresh claim are older. */
			if ((t & TKZ_BLK_GEN_MASK) > g)
				return -ESTALE;
			if (t == tag && x == v)
				return 0;
		}
		if (__builtin_expect(tkz_cas(c->w, t, x, tag, v), 1))
			return 0;
	}
}

int tk__blk_put(struct tkz_cell *c, uint64_t g, uint64_t v)
{
	return put(c, g, v);
}

int tk__blk_write(struct tk__zone *z, const struct tk__blk *b, uint64_t expires,
		  const uint64_t *words, uint32_t mark, const uint64_t *memo)
{
	struct tkz_cell *c = &tk__zone_cells(z)[b->cell];
	uint64_t g = gen_of(b->h0);
	uint32_t i, n = words_of(b->h0);
	int k;

	/* The memo first: written before the words, it is as whole as they
	 * are at the publish, and a reader checks its gens as theirs.  Room
	 * by the class the claim was made in (tk__blk_claim(): the words'),
	 * never the page word: a writer stopped since its claim may find its
	 * page reopened for larger blocks, and must not write past its own. */
	k = tk__blk_class(n);
	if (memo && k >= 0 &&
	    n + TKZ_BLK_OVERHEAD + TKZ_BLK_MEMO <= class_cells(k))
		for (i = 0; i < TKZ_BLK_MEMO; i++)
			if (put(&c[TKZ_BLK_OVERHEAD + n + i], g, memo[i]))
				return -ESTALE;

	if (mark > n || mark > TKZ_CELL_HOT_MAX)
		mark = 0;
	if (put(&c[1], g | (uint64_t)mark << TKZ_CELL_HOT_SHIFT, expires))
		return -ESTALE;
	/* Two cells a turn, as tk__blk_read() reads them. */
	for (i = 0; i + 1 < n; i += 2)
		if (put(&c[2 + i], g, words[i]) ||
		    put(&c[3 + i], g, words[i + 1]))
			return -ESTALE;
	if (i < n && put(&c[2 + i], g, words[i]))
		return -ESTALE;
	return 0;
}

int tk__blk_freeze(struct tk__zone *z, const struct tk__blk_hot *hot)
{
	uint64_t *w, now[2];

	if (!hot || !hot->mark)
		return 0;
	w = tk__zone_cells(z)[hot->cell].w;
	if (tkz_cas(w, hot->gen, hot->value, hot->gen | TKZ_CELL_FROZEN,
		    hot->value))
		return 0;
	/* Frozen already by another with that value: as good. */
	tkz_load2(w, now);
	return now[0] == (hot->gen | TKZ_CELL_FROZEN) && now[1] == hot->value
		       ? 0
		       : -EAGAIN;
}

int tk__blk_read_carried(struct tk__zone *z, struct tkz_slot *s, uint64_t w0,
			 uint64_t w1, uint64_t *words, uint32_t max,
			 uint64_t *expires)
{
	struct tk__blk_hot hot;
	int rc = tk__blk_read(z, s, w0, w1, words, max, expires, &hot);

	if (rc >= 0 && tk__blk_freeze(z, &hot) != 0)
		return -EAGAIN;
	return rc;
}

int tk__blk_publish(struct tk__zone *z, uint64_t idx, uint64_t w0, uint64_t w1,
		    uint64_t now, uint32_t words, const uint64_t *next,
		    uint64_t expires, const struct tk__blk_hot *hot,
		    uint32_t mark, const uint64_t *memo, struct tk__blk *held,
		    int *holding)
{
	struct tkz_slot *s = &tk__zone_slots(z)[idx];

	/* Before anything is computed into a claim's cells is published: no
	 * in-place update of the replaced state lands after it. */
	if (tk__blk_freeze(z, hot) != 0)
		return -EAGAIN;

	if (*holding && tk__blk_rebind(z, held, idx, w1) != 0)
		*holding = 0;
	if (!*holding) {
		int err = tk__blk_claim(z, words, idx, w1, now, held);

		if (err)
			return err;
		*holding = 1;
	}
	if (tk__blk_write(z, held, expires, next, mark, memo) != 0) {
		*holding = 0; /* taken from us: claim another */
		return -EAGAIN;
	}
	tkz_before_publish();
	if (!tkz_cas_slot(s, w0, w1, tkz_referenced(w0, w1), tk__blk_ref(held)))
		return -EAGAIN;
	*holding = 0;
	tk__blk_release_ref(z, w1);
	return 0;
}

uint64_t tk__blk_ref(const struct tk__blk *b)
{
	return tkz_ref(b->cell, gen_of(b->h0));
}

void tk__blk_release(struct tk__zone *z, const struct tk__blk *b)
{
	release(z, b->cell, b->h0, b->h1);
}

void tk__blk_release_ref(struct tk__zone *z, uint64_t w1)
{
	uint64_t cell = tkz_ref_cell(w1), h0, h1;

	if (!tkz_is_ref(w1) || cell >= arena_cells(z))
		return;
	tkz_read(tk__zone_cells(z)[cell].w, &h0, &h1);
	if ((h0 & TKZ_BLK_USED) &&
	    (gen_of(h0) & TKZ_REF_GEN_MASK) == (w1 & TKZ_REF_GEN_MASK))
		release(z, cell, h0, h1);
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
			tk__blk_help_page(z, p, pw);
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
				tk__blk_collect(z, cell % total, h0, h1);
		}
		if (cell >= next)
			tk__blk_close_page(z, p, NULL);
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
		if (tk__blk_read(z, &slots[cell], w0, w1, NULL, 0, &exp,
				 NULL) == -EBADMSG)
			c->violations++;
		else if (ck_pr_load_64(&cells[tkz_ref_cell(w1)].w[1]) >> 32 !=
				 cell &&
			 ck_pr_load_64(&slots[cell].w[1]) == w1)
			c->violations++;
	}
}
