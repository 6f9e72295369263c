/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mcas.c - one atomic step over several keys of a zone: the dimensions of
 * a composite policy (docs/shm-protocol.md, "Multi-key updates").
 *
 * A multi-word CAS over the keys' slots with its descriptor in a block of
 * the arena: the initiator installs a reference to the descriptor in every
 * slot, in slot order, while each holds the value the update was computed
 * from, then decides SUCCEEDED with one CAS on the descriptor's status and
 * puts the new values in.  Anyone else who meets an undecided descriptor
 * aborts it (decides FAILED) and puts the old values back, so a process
 * killed or stopped half-way blocks no one, and the initiator learns its
 * outcome from its own CAS, never from a descriptor that may be gone.
 * Progress is obstruction-free: two updates of the same keys may abort
 * each other, and retry.
 *
 * Slot values never repeat, except that an aborted update puts the old
 * values back; a stopped initiator may then still install its descriptor
 * once it wakes up, and whoever meets it aborts it again.  So a
 * descriptor is kept while any of its slots holds the value it expects
 * (tk__desc_garbage()).
 */
#include "slot.h"

#include <errno.h>
#include <string.h>

#define UNDECIDED 0
#define SUCCEEDED 1
#define FAILED 2
#define ROUNDS_MAX 128

/* Cells: header, status, n, then 4 per entry. */
#define CELL_STATUS 1
#define CELL_N 2
#define CELL_ENTRY(i, f) (3 + 4 * (i) + (f))
#define CELLS(n) (3 + 4 * (n))

struct desc {
	uint64_t ref;  /* as slots hold it */
	uint64_t cell; /* its header */
	uint64_t gen;
	uint64_t n;
	uint64_t slot[TK__ZONE_MULTI_MAX]; /* ascending */
	uint64_t w0[TK__ZONE_MULTI_MAX];   /* expected */
	uint64_t w1[TK__ZONE_MULTI_MAX];
	uint64_t nw1[TK__ZONE_MULTI_MAX]; /* new */
};

/* Read cell @i of @d as gen @g wrote it: -ESTALE if a newer gen owns it. */
static int get(struct tk__zone *z, uint64_t cell, uint64_t g, uint64_t *v)
{
	struct tkz_cell *c = &tk__zone_cells(z)[cell];

	*v = ck_pr_load_64(&c->w[1]);
	ck_pr_fence_load();
	return ck_pr_load_64(&c->w[0]) == g ? 0 : -ESTALE;
}

/* Read descriptor @dref: -ESTALE if it is gone (or not one). */
static int desc_read(struct tk__zone *z, uint64_t dref, struct desc *d)
{
	uint64_t cell = tkz_ref_cell(dref), h0, h1, size, i;
	int bad = 0;

	if (!tkz_is_desc(dref) ||
	    cell + CELLS(1) > tk__zone_geo(z)->pages * TKZ_PAGE_CELLS)
		return -ESTALE;
	tkz_after_reference();
	size = tkz_page_size(
		ck_pr_load_64(&tk__zone_pagetable(z)[cell / TKZ_PAGE_CELLS]));
	tkz_read(tk__zone_cells(z)[cell].w, &h0, &h1);
	if (!(h0 & TKZ_BLK_USED) ||
	    ((h0 >> TKZ_BLK_WORDS_SHIFT) & TKZ_BLK_WORDS_MAX) != TKZ_BLK_DESC ||
	    ((h0 & TKZ_BLK_GEN_MASK) & TKZ_REF_GEN_MASK) !=
		    (dref & TKZ_REF_GEN_MASK) ||
	    size < TKZ_CLASS_MIN || size > TKZ_PAGE_CELLS ||
	    (size & (size - 1)) || cell % size)
		return -ESTALE;
	d->ref = dref;
	d->cell = cell;
	d->gen = h0 & TKZ_BLK_GEN_MASK;
	if (get(z, cell + CELL_N, d->gen, &d->n) || d->n < 1 ||
	    d->n > TK__ZONE_MULTI_MAX || CELLS(d->n) > size)
		return -ESTALE;
	for (i = 0; i < d->n; i++) {
		bad |= get(z, cell + CELL_ENTRY(i, 0), d->gen, &d->slot[i]);
		bad |= get(z, cell + CELL_ENTRY(i, 1), d->gen, &d->w0[i]);
		bad |= get(z, cell + CELL_ENTRY(i, 2), d->gen, &d->w1[i]);
		bad |= get(z, cell + CELL_ENTRY(i, 3), d->gen, &d->nw1[i]);
		bad |= d->slot[i] >= tk__zone_geo(z)->capacity;
	}
	return bad ? -ESTALE : 0;
}

static int status_of(struct tk__zone *z, const struct desc *d)
{
	uint64_t st;

	return get(z, d->cell + CELL_STATUS, d->gen, &st) ? -ESTALE : (int)st;
}

static void decide(struct tk__zone *z, const struct desc *d, uint64_t to)
{
	tkz_cas(tk__zone_cells(z)[d->cell + CELL_STATUS].w, d->gen, UNDECIDED,
		d->gen, to);
}

static int same_key(uint64_t w0, uint64_t e0)
{
	return (w0 & ~TKZ_REF) == (e0 & ~TKZ_REF);
}

/*
 * Install @d in its slots in order, aborting other updates met on the
 * way.  Returns the number installed before a slot that no longer holds
 * what @d expects (n if all were), or -1 if @d was aborted meanwhile.
 * Each slot is tried a bounded number of times: a slot that keeps
 * changing fails this attempt, and the caller's rounds are bounded too.
 */
static int install(struct tk__zone *z, const struct desc *d)
{
	struct tkz_slot *slots = tk__zone_slots(z);
	uint64_t i, w0, w1;
	int tries;

	for (i = 0; i < d->n; i++) {
		for (tries = 0;; tries++) {
			if (tries == ROUNDS_MAX)
				return (int)i;
			tkz_read_slot(&slots[d->slot[i]], &w0, &w1);
			if (w1 == d->ref)
				break;
			if (status_of(z, d) != UNDECIDED)
				return -1;
			if (w1 == d->w1[i] && same_key(w0, d->w0[i])) {
				if (tkz_cas_slot(&slots[d->slot[i]], w0, w1, w0,
						 d->ref))
					break;
				continue;
			}
			/* Another update (or a broken reference, which a
			 * retry replaces): abort it. */
			if (!tkz_slot_desc(w0, w1) ||
			    tk__desc_help(z, w1, d->slot[i]) != 0)
				return (int)i;
		}
	}
	return (int)d->n;
}

/*
 * Put every slot still holding @d to its new or old value.  Until it no
 * longer holds @d: a CAS may fail only because w0 changed (a second-chance
 * pass clears ref bits), and the initiator releases @d once this returns.
 */
static void finish(struct tk__zone *z, const struct desc *d, int ok)
{
	struct tkz_slot *slots = tk__zone_slots(z);
	uint64_t i, w0, w1;

	for (i = 0; i < d->n; i++) {
		do
			tkz_read_slot(&slots[d->slot[i]], &w0, &w1);
		while (w1 == d->ref &&
		       !tkz_cas_slot(&slots[d->slot[i]], w0, w1,
				     ok && tkz_is_ref(d->w1[i]) ? w0 | TKZ_REF
								: w0,
				     ok ? d->nw1[i] : d->w1[i]));
	}
}

/* Abort @d if undecided, then put its slots right.  -ESTALE if it is
 * gone, or its status is not one (a corrupt zone). */
static int complete(struct tk__zone *z, const struct desc *d)
{
	int st;

	decide(z, d, FAILED);
	st = status_of(z, d);
	if (st != SUCCEEDED && st != FAILED)
		return -ESTALE;
	finish(z, d, st == SUCCEEDED);
	return 0;
}

int tk__desc_valid(struct tk__zone *z, uint64_t dref)
{
	struct desc d;

	return desc_read(z, dref, &d) == 0;
}

/*
 * Complete the update @dref met in slot @slot: -ESTALE if it names none,
 * or one that does not list @slot (a corrupt zone: completing it would
 * never take it out of the slot, and the caller would meet it for ever;
 * as a broken reference, the slot's value is replaced).
 */
int tk__desc_help(struct tk__zone *z, uint64_t dref, uint64_t slot)
{
	struct desc d;
	uint64_t i;

	if (desc_read(z, dref, &d) != 0)
		return -ESTALE;
	for (i = 0; i < d.n && d.slot[i] != slot; i++)
		;
	return i < d.n ? complete(z, &d) : -ESTALE;
}

int tk__desc_garbage(struct tk__zone *z, uint64_t cell, uint64_t h0,
		     uint64_t h1)
{
	struct tkz_slot *slots = tk__zone_slots(z);
	uint64_t dref = tkz_ref(cell, h0 & TKZ_BLK_GEN_MASK) | TKZ_DESC, i, w1;
	struct desc d;

	/* Being built: its first install may come while this holds. */
	if (tk__blk_bound(z, h1))
		return 0;
	/* Never finished: no one knows it, and it can no longer be
	 * installed (its first slot moved on). */
	if (desc_read(z, dref, &d) != 0)
		return 1;
	for (i = 0; i < d.n; i++) {
		w1 = ck_pr_load_64(&slots[d.slot[i]].w[1]);
		if (w1 == dref) {
			complete(z, &d); /* abandoned half-way */
			return 0;
		}
		if (tkz_is_desc(w1) || tkz_tag(w1) == tkz_tag(d.w1[i]))
			return 0; /* its initiator may still install it */
	}
	return 1;
}

/* One key of a multi-key update, as located and read. */
struct part {
	int absent;		/* no slot: no state */
	uint64_t idx, w0, w1;	/* its slot */
	const uint64_t *old;	/* its state, or NULL */
	struct tk__blk_hot hot; /* its hot word as read (mark 0: none) */
	struct tk__blk held;	/* the block of its new state */
	int holding;
};

/* Read the state of part @p into @buf; -EAGAIN if it moved. */
static int read_part(struct tk__zone *z, struct part *p, uint64_t *buf,
		     uint32_t words, uint64_t now)
{
	uint64_t exp;
	int rc;

	p->old = NULL;
	p->hot.mark = 0;
	/* A reference to no descriptor is broken: replaced as no state. */
	if (tkz_is_desc(p->w1))
		return tk__desc_help(z, p->w1, p->idx) == 0 ? -EAGAIN : 0;
	if (!tkz_is_ref(p->w1))
		return 0;
	rc = tk__blk_read(z, &tk__zone_slots(z)[p->idx], p->w0, p->w1, buf,
			  words, &exp, &p->hot);
	if (rc == -EAGAIN)
		return rc;
	if (rc >= 0 && rc != (int)words)
		return -EPROTO;
	if (rc < 0)
		p->hot.mark = 0;
	if (rc >= 0 && exp > now)
		p->old = buf;
	return 0;
}

/*
 * Are all parts as read?  A read-only outcome's validation: slot values
 * never repeat, so those unchanged held throughout, and an absent key
 * (its state equivalent to none) may as well have been absent at the
 * end, unless the table has grown since (a private table): then it may
 * be absent only because it moved.
 */
static int unchanged(struct tk__zone *z, const struct tk__zone_key *k,
		     const struct part *p, size_t n, uint64_t now)
{
	uint64_t w0, w1, idx;
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i].absent) {
			if (tk__zone_locate(z, &k[i], now, 0, &idx, &w0, &w1) !=
				    -ENOENT ||
			    tk__zone_next(z))
				return 0;
			continue;
		}
		tkz_read_slot(&tk__zone_slots(z)[p[i].idx], &w0, &w1);
		if (w1 != p[i].w1 || !same_key(w0, p[i].w0))
			return 0;
	}
	return 1;
}

/*
 * Part @p's key holds a one-word state inline, as single checks keep it
 * (a word key): descriptors go only in block keys' slots, so make it one,
 * with the same state, and try again.  A word of other words than the
 * part's is another policy's.
 */
static int to_block(struct tk__zone *z, const struct tk__zone_key *k,
		    const struct part *p, uint32_t words, uint64_t now)
{
	int rc;

	if (words != 1)
		return -EPROTO;
	rc = tk__zone_to_block(z, k, p->idx, p->w0, p->w1, now);
	return rc ? rc : -EAGAIN;
}

/* Write part @i's new state into a block bound to its slot value. */
static int stage(struct tk__zone *z, struct part *p, uint32_t words,
		 const uint64_t *next, uint64_t expires, uint64_t now)
{
	int rc;

	if (p->holding && tk__blk_rebind(z, &p->held, p->idx, p->w1) != 0)
		p->holding = 0;
	if (!p->holding) {
		rc = tk__blk_claim(z, words, p->idx, p->w1, now, &p->held);
		if (rc)
			return rc;
		p->holding = 1;
	}
	if (tk__blk_write(z, &p->held, expires, next, 0, NULL) != 0) {
		p->holding = 0;
		return -EAGAIN;
	}
	return 0;
}

/* Build the descriptor of an update of @n parts (@order: by slot). */
static int build(struct tk__zone *z, struct part *p, const int *persist,
		 const size_t *order, size_t n, uint64_t now, struct tk__blk *b,
		 struct desc *d)
{
	struct tkz_cell *c;
	uint64_t v[4], g;
	size_t i, f, k;
	int rc;

	rc = tk__blk_claim_desc(z, CELLS(n), p[order[0]].idx, p[order[0]].w1,
				now, b);
	if (rc)
		return rc;
	c = &tk__zone_cells(z)[b->cell];
	g = b->h0 & TKZ_BLK_GEN_MASK;
	d->ref = tk__blk_ref(b) | TKZ_DESC;
	d->cell = b->cell;
	d->gen = g;
	d->n = n;
	for (i = 0; i < n; i++) {
		k = order[i];
		v[0] = d->slot[i] = p[k].idx;
		v[1] = d->w0[i] = p[k].w0;
		v[2] = d->w1[i] = p[k].w1;
		v[3] = d->nw1[i] =
			persist[k] ? tk__blk_ref(&p[k].held) : p[k].w1;
		for (f = 0; f < 4; f++)
			if (tk__blk_put(&c[CELL_ENTRY(i, f)], g, v[f]))
				return -EAGAIN;
	}
	if (tk__blk_put(&c[CELL_N], g, n) ||
	    tk__blk_put(&c[CELL_STATUS], g, UNDECIDED))
		return -EAGAIN;
	return 0;
}

/* Slot order: installs in one global order cannot help in a cycle. */
static void sort_parts(const struct part *p, size_t n, size_t *order)
{
	size_t i, j, t;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && p[order[j - 1]].idx > p[order[j]].idx;
		     j--) {
			t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
}

/*
 * One attempt: locate, read, decide and (for a write) commit.  Returns
 * @fn's result, -EAGAIN to try again, or an error.
 */
static int attempt(struct tk__zone *z, size_t n, const struct tk__zone_key *k,
		   const uint32_t *words, uint64_t now, tk__zone_multi_fn fn,
		   void *ctx, struct part *p, uint64_t *oldbuf,
		   uint64_t *newbuf)
{
	const uint64_t *old[TK__ZONE_MULTI_MAX];
	uint64_t *next[TK__ZONE_MULTI_MAX], expires[TK__ZONE_MULTI_MAX];
	int persist[TK__ZONE_MULTI_MAX] = { 0 }, rc, got, ok;
	size_t i, off = 0, order[TK__ZONE_MULTI_MAX];
	struct tk__blk b;
	struct desc d;

	for (i = 0; i < n; i++) {
		rc = tk__zone_locate(z, &k[i], now, 0, &p[i].idx, &p[i].w0,
				     &p[i].w1);
		p[i].absent = rc == -ENOENT;
		p[i].old = NULL;
		p[i].hot.mark = 0;
		if (rc == 0 && !(p[i].w0 & TKZ_FP_BLOCK))
			return to_block(z, &k[i], &p[i], words[i], now);
		if (rc == 0)
			rc = read_part(z, &p[i], oldbuf + off, words[i], now);
		if (rc && !p[i].absent)
			return rc;
		old[i] = p[i].old;
		next[i] = newbuf + off;
		off += words[i];
	}
	/* Grown (a private table): an absent key may have moved there. */
	for (i = 0; i < n; i++)
		if (p[i].absent && tk__zone_next(z))
			return TK__ZONE_MOVED;
	rc = fn(ctx, old, next, persist, expires);
	if (rc != TK__ZONE_PERSIST)
		return rc < 0 || unchanged(z, k, p, n, now) ? rc : -EAGAIN;
	/* A write needs every key in a slot: insert, then look again. */
	for (i = 0, rc = 0; i < n && rc == 0; i++)
		if (p[i].absent)
			rc = tk__zone_locate(z, &k[i], now, 1, &p[i].idx,
					     &p[i].w0, &p[i].w1);
	if (rc)
		return rc;
	for (i = 0; i < n; i++)
		if (p[i].absent)
			return -EAGAIN;
	/* Carried forward (docs/shm-protocol.md, "In-place updates"): the
	 * hot word of each state this writes frozen as read, before anything
	 * computed from it is staged; a part this does not write keeps its
	 * hot word (its slot comes back to the same value). */
	for (i = 0; i < n; i++)
		if (persist[i] && tk__blk_freeze(z, &p[i].hot) != 0)
			return -EAGAIN;
	for (i = 0; i < n; i++) {
		if (persist[i]) {
			rc = stage(z, &p[i], words[i], next[i], expires[i],
				   now);
			if (rc)
				return rc;
		}
	}
	sort_parts(p, n, order);
	rc = build(z, p, persist, order, n, now, &b, &d);
	if (rc == -EAGAIN)
		tk__blk_release(z, &b);
	if (rc)
		return rc;
	tkz_before_publish();
	got = install(z, &d);
	/* The outcome is what this CAS says, not what the descriptor says
	 * later: others may release it once its slots have moved on. */
	ok = got == (int)n && tkz_cas(tk__zone_cells(z)[d.cell + CELL_STATUS].w,
				      d.gen, UNDECIDED, d.gen, SUCCEEDED);
	if (!ok)
		decide(z, &d, FAILED);
	finish(z, &d, ok);
	/* No slot holds it now, and only we install it: no one can reach
	 * it again (those who read it before see its gen change). */
	tk__blk_release(z, &b);
	if (!ok)
		return -EAGAIN;
	for (i = 0; i < n; i++) {
		if (!persist[i])
			continue;
		p[i].holding = 0; /* published */
		tk__blk_release_ref(z, p[i].w1);
	}
	return TK__ZONE_PERSIST;
}

int tk__zone_apply_multi(struct tk__zone *z, size_t n,
			 const struct tk__zone_key *k, const uint32_t *words,
			 uint64_t now, tk__zone_multi_fn fn, void *ctx)
{
	uint64_t oldbuf[TKZ_PAGE_CELLS], newbuf[TKZ_PAGE_CELLS], total = 0;
	struct part p[TK__ZONE_MULTI_MAX];
	int round, rc = -EIO;
	size_t i;

	if (n < 1 || n > TK__ZONE_MULTI_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!(k[i].fp & TKZ_FP_BLOCK) || tk__blk_class(words[i]) < 0)
			return -E2BIG;
		total += words[i];
	}
	if (total > TKZ_PAGE_CELLS)
		return -E2BIG;
	memset(p, 0, sizeof(p));
	for (round = 0; round < ROUNDS_MAX; round++) {
		rc = attempt(z, n, k, words, now, fn, ctx, p, oldbuf, newbuf);
		if (rc != -EAGAIN)
			break;
		tk__zone_backoff(round);
	}
	if (round == ROUNDS_MAX)
		rc = -EIO;
	for (i = 0; i < n; i++)
		if (p[i].holding)
			tk__blk_release(z, &p[i].held);
	return rc;
}
