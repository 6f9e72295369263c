/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * grow.c - a private table that grows, and shrinks (docs/shm-protocol.md,
 * "Growing a private table"; tests/model/grow.pml).
 *
 * The zone's slot table in one process's anonymous memory, for its
 * threads.  When a key's windows are full and nothing there has expired,
 * or its arena has no block for a state, the table grows instead of
 * evicting: a successor is published as the table's next, and from then
 * on keys are inserted in the successor only (slots.c refuses to insert
 * or commit in a table that has a next).  Every key moves on its first
 * use in the successor ("pull"), and the threads that use the successor
 * move the rest, a chunk each, until the old table is empty.  A slot
 * moves by being frozen (TKZ_FROZEN: no one changes it again) and its
 * state copied, so an update of the old slot either lands before the
 * freeze, and moves with it, or fails and goes to the successor.  Nobody
 * waits for anybody.
 *
 * The successor is sized by what was full ("Sizing a successor" in the
 * protocol):
 *
 * - Full windows double the slots; the arena stays, or grows to twice
 *   the pages the blocks hold.  A full arena doubles the pages; the
 *   slots stay, unless more than a quarter of them hold keys.  A growth
 *   never makes either smaller, so growths in a row are at most 26 of
 *   the slots (64 to 2^32) and 15 of the arena (4 pages to the most).
 * - A shrink is a growth into a smaller successor, which the reclaimer
 *   starts (tk__table_shrink()) when fewer than an eighth of the slots
 *   hold keys, or of the pages blocks: a quarter of the slots for those
 *   keys, twice the pages.  It waits for a pass in which no key came in
 *   while they were counted, so the keys it moves are those it counted,
 *   and those of the operations in flight.
 * - A new key inserted in the successor while keys move there takes a
 *   slot and its block from the successor's budget (set_budget()), which
 *   leaves the moved keys the room they were counted for: once it is
 *   spent, a new key first moves every chunk not moved yet.  The move
 *   always finishes: no copy waits for room that new keys took.
 *
 * What the table is, and how it frees the tables a growth retires, is
 * in table.c.
 */
#include "table.h"

#include <stdlib.h>
#include <string.h>

void (*tk__table_freeze_hook)(struct tk__zone *z, uint64_t idx);

/* Freeze slot @idx of @z; its frozen value in @out.  A multi-key update
 * that holds the slot is completed first, so no frozen slot names one.
 * A CAS lost to a rival's update reads the slot again: the update moves
 * with the key. */
static void freeze(struct tk__zone *z, uint64_t idx, uint64_t out[2])
{
	struct tkz_slot *s = &tk__zone_slots(z)[idx];
	uint64_t w0, w1, n0, n1;
	int carry;

	for (;;) {
		/* w1 is read after w0: if w0 is frozen, so is w1. */
		tkz_read_slot(s, &w0, &w1);
		if (tkz_frozen(w0))
			break;
		if (tkz_state(w0) == TKZ_MEM && tkz_slot_desc(w0, w1) &&
		    tk__desc_help(z, w1, idx) == 0)
			continue;
		/* An INS or COL carries no state: an unfinished insert is
		 * dropped, and its inserter goes to the successor. */
		n0 = tkz_state(w0) == TKZ_MEM ? w0 | TKZ_FROZEN : TKZ_FROZEN;
		n1 = tkz_state(w0) == TKZ_MEM ? w1 : 0;
		/* A key committed with no state yet: its insert, counted
		 * here, is carried to its next one (tk__table_carry()).
		 * Counted before the freeze, so that whoever sees the frozen
		 * slot sees the count. */
		carry = tkz_state(w0) == TKZ_MEM && !tkz_has_state(w0, w1);
		if (carry)
			ck_pr_inc_64(&head(z)->carried);
		if (tk__table_freeze_hook)
			tk__table_freeze_hook(z, idx);
		if (tkz_cas_slot(s, w0, w1, n0, n1)) {
			w0 = n0;
			w1 = n1;
			break;
		}
		if (carry)
			ck_pr_dec_64(&head(z)->carried);
	}
	out[0] = w0;
	out[1] = w1;
}

/*
 * The frozen MEM of @k in @oz with a state (@state 1) or with none (0):
 * its slot, and its value in @w; NULL if none.  A key has one MEM at most.
 */
static struct tkz_slot *frozen_of(struct tk__zone *oz,
				  const struct tk__zone_key *k, int state,
				  uint64_t w[2])
{
	struct tkz_slot *slots = tk__zone_slots(oz);
	struct tkz_cand c;
	int i;

	tkz_candidates(oz, k, &c);
	for (i = 0; i < TKZ_CANDIDATES; i++) {
		tkz_read_slot(&slots[tkz_at(&c, i)], &w[0], &w[1]);
		if (tkz_frozen(w[0]) && tkz_state(w[0]) == TKZ_MEM &&
		    !!tkz_has_state(w[0], w[1]) == state &&
		    tkz_same_key(w[0] & ~TKZ_FROZEN, k->fp))
			return &slots[tkz_at(&c, i)];
	}
	return NULL;
}

/* Frozen slot @s seen as @w becomes {FROZEN, 0}, a frozen EMPTY: the
 * only change a frozen slot ever sees.  1 if this made it. */
static int take(struct tkz_slot *s, const uint64_t w[2])
{
	return tkz_cas_slot(s, w[0], w[1], TKZ_FROZEN, 0);
}

/* Take the carried key @k's frozen MEM of no state in @oz, if any: 1 if
 * this did.  A CAS of the frozen value, so one commit takes it. */
static int take_carried(struct tk__zone *oz, const struct tk__zone_key *k)
{
	struct tkz_slot *s;
	uint64_t w[2];

	if (!ck_pr_load_64(&head(oz)->carried))
		return 0;
	s = frozen_of(oz, k, 0, w);
	if (!s || !take(s, w))
		return 0;
	ck_pr_dec_64(&head(oz)->carried);
	return 1;
}

/* Retired table @j, unless freed, unlinked (GONE) or not retired yet;
 * @base the caller's ledger's (see entry()). */
static struct tk__zone *retired_at(struct tk__table *t, uint64_t j,
				   uint64_t base)
{
	struct tk__zone *z = j >= base ? entry(t, j) : NULL;

	return z == GONE ? NULL : z;
}

/*
 * The table @z's keys came from, if any: its old while they move, or
 * else its predecessor among the retired (a pull of it may still be in
 * flight, until a grace period after @z lost its old: then the
 * predecessor is unlinked, and a pull of it is over).  complete() stores
 * retired[] before it clears old (acquire, in tk__zone_old()), so one of
 * the two leads to it.
 */
static struct tk__zone *source(struct tk__table *t, struct tk__zone *z,
			       uint64_t base)
{
	struct tk__zone *oz = tk__zone_old(z);

	if (oz || head(z)->index == 0)
		return oz;
	return retired_at(t, head(z)->index - 1, base);
}

/*
 * Rule 7 of "Growing a private table": a commit in @z that brings over a
 * key counted in a table before @z is no insert of its own.  Two kinds:
 *
 * - The copy of a state frozen in @z's source (import()), whose INS is
 *   marked: it commits only while that state is still frozen there, not
 *   taken, and counts nothing (tk__table_copy_stands(), asked before the
 *   commit).  The state stays there until a copy has landed, which takes
 *   it, so that a later insert of the key counts; a reset takes it too.
 *   Asked after the commit instead, the answer came too late: between the
 *   two, a second copy could write its state over the new MEM and take
 *   the frozen one, and the commit counted the key again.
 * - Any other commit of a key committed with no state yet whose MEM a
 *   table before @z froze before its first write (tk__table_carry(),
 *   after the commit): the commit takes that MEM.  Such a MEM is frozen
 *   only once its table has a next, so it lies in @z's old or among the
 *   retired; the operation that committed it goes on to insert the key
 *   in a successor, and keeps that table from being freed until then
 *   (and so its entry from being folded: the walk ends at the base).
 *
 * Either way the commit is counted once, where it happens, or not at
 * all: the counters never count a key twice, not even for a moment.
 */
int tk__table_copy_stands(struct tk__zone *z, uint64_t fp)
{
	struct tk__zone_key k = { fp, tk__table_pos(fp) };
	/* The copy's operation found the source as @z's old, and keeps it
	 * from being freed while its INS stands. */
	struct tk__table *t = head(z)->table;
	struct tk__zone *oz = source(t, z, ledger_of(t)->base);
	uint64_t w[2];

	return oz && frozen_of(oz, &k, 1, w);
}

int tk__table_carry(struct tk__zone *z, uint64_t fp)
{
	struct tk__table *t = head(z)->table;
	struct tk__zone_key k = { fp, tk__table_pos(fp) };
	uint64_t base = ledger_of(t)->base, i;
	struct tk__zone *oz = source(t, z, base);

	for (i = head(z)->index;; i--) {
		if (oz && take_carried(oz, &k))
			return 1;
		if (i < base + 2)
			return 0;
		oz = retired_at(t, i - 2, base);
	}
}

struct import {
	struct tk__zone *nz; /* where to, and the key */
	const struct tk__zone_key *k;
	const uint64_t *words;
	uint32_t n;
	uint64_t expires;
	struct tkz_slot *from; /* the frozen slot, and its value */
	uint64_t w0, w1;
};

/*
 * A moved state is written where the successor has none, and never over
 * one it has: that one is newer.  Nor once its frozen slot is taken (by
 * a reset, see tk__table_reset(), or by another copy that landed): this
 * runs again before every CAS in the successor, after the read that CAS
 * compares with, so a reset that dropped the key after taking it is
 * never undone.  Where the successor has no slot of the key, the insert
 * this asks for is a copy's, marked (tk__zone_copy()): it asks again at
 * its commit, whoever makes it, since the take may come in between.
 */
void (*tk__table_copy_hook)(struct tk__zone *nz, const struct tk__zone_key *k,
			    int landed);

static int import_fn(void *ctx, const uint64_t *old, uint64_t *next,
		     uint64_t *expires)
{
	const struct import *im = ctx;

	if (old || ck_pr_load_64(&im->from->w[0]) != im->w0)
		return TK__ZONE_KEEP;
	if (tk__table_copy_hook)
		tk__table_copy_hook(im->nz, im->k, 0);
	memcpy(next, im->words, im->n * sizeof(uint64_t));
	*expires = im->expires;
	return TK__ZONE_PERSIST;
}

/* Copy the state of frozen slot @idx of @oz, {@w0, @w1}, to @nz. */
static int import(struct tk__zone *nz, struct tk__zone *oz, uint64_t idx,
		  uint64_t w0, uint64_t w1, uint64_t now)
{
	uint64_t words[TKZ_STATE_WORDS_MAX];
	struct tk__zone_key k;
	struct import im = { nz, &k, words, 1, 0, &tk__zone_slots(oz)[idx],
			     w0, w1 };
	int rc;

	/* The key keeps the shape its state has, whatever the puller's. */
	k.fp = tkz_fp(w0) & ~TKZ_FROZEN;
	k.pos = tk__table_pos(k.fp);
	if (w0 & TKZ_FP_BLOCK) {
		/* The slot is frozen, but an in-place update that read it
		 * before may still land: the hot word is frozen too, as read,
		 * or read again (each such update fails its next look). */
		do
			rc = tk__blk_read_carried(
				oz, &tk__zone_slots(oz)[idx], w0, w1, words,
				TKZ_STATE_WORDS_MAX, &im.expires);
		while (rc == -EAGAIN &&
		       ck_pr_load_64(&tk__zone_slots(oz)[idx].w[1]) == w1 &&
		       ck_pr_load_64(&tk__zone_slots(oz)[idx].w[0]) == w0);
		if (rc <= 0)
			return 0; /* a broken reference: nothing to move */
		im.n = (uint32_t)rc;
	} else {
		words[0] = w1;
	}
	rc = tk__zone_copy(nz, &k, now, im.n, import_fn, &im);
	if (rc >= 0 && tk__table_copy_hook)
		tk__table_copy_hook(nz, &k, 1);
	/* Copied, or a newer state there: the frozen one goes, so that
	 * nothing brings it back, no copy's insert of it commits any more,
	 * and a later insert of the key counts as one
	 * (tk__table_copy_stands()). */
	if (rc >= 0)
		take(im.from, (const uint64_t[2]){ w0, w1 });
	/* No room even by eviction, or the key there already under another
	 * policy's state (a word key of another size: -EPROTO, as a lookup
	 * of it answers): the state is lost, as if evicted.  Failing would
	 * leave its chunk to move for ever. */
	return rc == -ENOSPC || rc == -EPROTO ? 0 : rc < 0 ? rc : 0;
}

/*
 * Before anything touches @k in @nz while its predecessor's keys move:
 * if @nz has no state of @k, freeze every candidate of @k in the
 * predecessor (an insert of @k there that read no next before the growth
 * may still be on its way to a commit: the freeze makes it fail), then
 * copy the state found, if any.  *@fresh: 1 if neither had a state of
 * @k (an insert of it in @nz would be a new key's).
 */
static int pull(struct tk__zone *nz, const struct tk__zone_key *k, uint64_t now,
		int *fresh)
{
	struct tk__zone *oz = tk__zone_old(nz);
	uint64_t idx, w0, w1, v[2], at = 0, fw0 = 0, fw1 = 0;
	struct tkz_cand c;
	int i, rc;

	if (!oz)
		return 0;
	rc = tk__zone_locate(nz, k, now, 0, &idx, &w0, &w1);
	if (rc == -EPROTO)
		return 0; /* here, of another shape: the caller says so */
	if (rc && rc != -ENOENT)
		return rc;
	/* "Here already" only from an untorn read: two loads may pair a
	 * freed slot's w0 with the ticket of a new insert there, which
	 * reads as a state (tests/model/grow.pml, HAS_TORN). */
	if (rc == 0) {
		tkz_load2(tk__zone_slots(nz)[idx].w, v);
		if (v[0] == w0 && v[1] == w1 && tkz_has_state(w0, w1))
			return 0;
	}
	tkz_candidates(oz, k, &c);
	for (i = 0; i < TKZ_CANDIDATES; i++) {
		freeze(oz, tkz_at(&c, i), v);
		if (!fw0 && tkz_state(v[0]) == TKZ_MEM &&
		    tkz_same_key(v[0] & ~TKZ_FROZEN, k->fp)) {
			at = tkz_at(&c, i);
			fw0 = v[0];
			fw1 = v[1];
		}
	}
	*fresh = !fw0 || !tkz_has_state(fw0, fw1);
	if (*fresh)
		return 0;
	return import(nz, oz, at, fw0, fw1, now);
}

void (*tk__table_complete_hook)(struct tk__table *t, int step);

static void complete_hook(struct tk__table *t, int step)
{
	if (tk__table_complete_hook)
		tk__table_complete_hook(t, step);
}

/*
 * The end of a growth, once every chunk is moved: the predecessor @oz
 * becomes retired[g] (g its index) and is counted in n_retired, the
 * successor @nz becomes where lookups start, and only then does @nz lose
 * its old (a growth of it may start then).  Each step is a CAS or store
 * that anyone may make again, and everyone makes them all, in this
 * order: the thread that moved the last chunk may stall anywhere in
 * here, and whoever comes next finishes for it, with nothing that leads
 * to @oz cleared before retired[] does (the counters and source() look
 * there).  n_retired is g until this growth completes: @nz's growth began
 * once @oz had lost its old, after the completion before had counted
 * g.  A completer that says @oz unlinked has moved cur and cleared old
 * itself, so nothing but retired[] leads to @oz then.
 */
static void complete(struct tk__table *t, struct tk__zone *nz,
		     struct tk__zone *oz)
{
	uint64_t chunks = tk__zone_geo(oz)->capacity / MOVE_CHUNK, i;
	uint64_t g = head(oz)->index, count = g;
	struct tk__zone *expect = NULL;

	/* The count lags a mover stalled between marking its chunk and
	 * counting it: then the marks say whether all are done, so that no
	 * one waits for it (an insert that finds the successor full spins
	 * here until the growth completes). */
	if (ck_pr_load_64(&head(nz)->move_done) != chunks)
		for (i = 0; i < chunks; i++)
			if (!ck_pr_load_8(&head(nz)->moved[i]))
				return;
	/* Each CAS releases what came before it, and on failure acquires
	 * the value another completer stored, so that what this one
	 * publishes next carries both (pairs with the acquire loads of
	 * retired[], n_retired and cur).  Failing: stored already, or
	 * GONE, if a stale completer comes after the reclaimer marked it
	 * (never after the reclaimer emptied the entry: that completer
	 * found @oz as @nz's old, and the first grace period of the pass
	 * that freed @oz waited for it). */
	complete_hook(t, 0);
	__atomic_compare_exchange_n(&t->retired[ring(g)], &expect, oz, 0,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	complete_hook(t, 1);
	__atomic_compare_exchange_n(&t->n_retired, &count, g + 1, 0,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	expect = oz;
	complete_hook(t, 2);
	__atomic_compare_exchange_n(&t->cur, &expect, nz, 0, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
	complete_hook(t, 3);
	__atomic_store_n(&head(nz)->old, NULL, __ATOMIC_RELEASE);
	complete_hook(t, 4);
	/* Release: after this thread's clearing of old and move of cur
	 * (pairs with the acquire in tk__table_reclaim()). */
	__atomic_store_n(&t->unlinked[ring(g)], 1, __ATOMIC_RELEASE);
}

/*
 * Move chunk @chunk of @nz's predecessor @oz.  Moving is idempotent (a
 * pulled key is not pulled again, a frozen slot stays as it is), so a
 * chunk whose mover stalls is moved again by whoever needs it done.
 */
static void move_chunk(struct tk__table *t, struct tk__zone *nz,
		       struct tk__zone *oz, uint64_t chunk, uint64_t now)
{
	uint64_t chunks = tk__zone_geo(oz)->capacity / MOVE_CHUNK;
	uint64_t i, w0, w1, v[2];
	struct tk__zone_key k;
	int failed = 0, fresh;

	for (i = chunk * MOVE_CHUNK; i < (chunk + 1) * MOVE_CHUNK; i++) {
		tkz_read_slot(&tk__zone_slots(oz)[i], &w0, &w1);
		if (tkz_state(w0) == TKZ_MEM) {
			k.fp = tkz_fp(w0) & ~TKZ_FROZEN;
			k.pos = tk__table_pos(k.fp);
			/* A state that found no room stays frozen here, and
			 * the chunk is moved again later. */
			failed |= pull(nz, &k, now, &fresh) != 0;
		}
		freeze(oz, i, v);
	}
	if (!failed && ck_pr_cas_8(&head(nz)->moved[chunk], 0, 1) &&
	    ck_pr_faa_64(&head(nz)->move_done, 1) + 1 == chunks)
		complete(t, nz, oz);
}

/*
 * Move the next chunk of @nz's predecessor nobody has taken, or once all
 * are taken, one not done yet (its mover may be stalled): every use of
 * @nz moves a chunk, so a move of C slots ends within about C / 64 uses,
 * each of which inserts a key or a few (the budget, afford(), bounds
 * what they take of @nz before).
 */
static void move_some(struct tk__table *t, struct tk__zone *nz, uint64_t now)
{
	struct tk__zone *oz = tk__zone_old(nz);
	uint64_t chunk, chunks;

	if (!oz)
		return;
	chunks = tk__zone_geo(oz)->capacity / MOVE_CHUNK;
	chunk = ck_pr_faa_64(&head(nz)->move_cursor, 1);
	if (chunk >= chunks)
		for (chunk = chunk % chunks; chunk < chunks; chunk++)
			if (!ck_pr_load_8(&head(nz)->moved[chunk]))
				break;
	if (chunk < chunks)
		move_chunk(t, nz, oz, chunk, now);
	else
		complete(t, nz, oz);
}

/* @nz is full, or its budget spent, while its predecessor's keys move:
 * move what is not done yet, whoever took it, so that the move ends. */
static void move_all(struct tk__table *t, struct tk__zone *nz, uint64_t now)
{
	struct tk__zone *oz = tk__zone_old(nz);
	uint64_t chunk, chunks;

	if (!oz)
		return;
	chunks = tk__zone_geo(oz)->capacity / MOVE_CHUNK;
	for (chunk = 0; chunk < chunks; chunk++)
		if (!ck_pr_load_8(&head(nz)->moved[chunk]))
			move_chunk(t, nz, oz, chunk, now);
	complete(t, nz, oz);
}

/* Pages of @z's arena not in the pool: what its blocks take, with the
 * room they leave between them. */
static uint64_t pages_used(struct tk__zone *z)
{
	const uint64_t *pt = tk__zone_pagetable(z);
	uint64_t p, n = 0;

	for (p = 0; p < tk__zone_geo(z)->pages; p++)
		n += (ck_pr_load_64(&pt[p]) &
		      (TKZ_PAGE_SIZE_MASK | TKZ_PAGE_CLOSING |
		       TKZ_PAGE_FORMAT)) != 0;
	return n;
}

/* Keys counters @n say are held: inserts less those that went. */
static uint64_t held(const uint64_t n[TKZ_COUNTERS])
{
	uint64_t gone = n[TKZ_RECLAIMS] + n[TKZ_EVICTIONS] + n[TKZ_RESETS];

	return n[TKZ_INSERTS] > gone ? n[TKZ_INSERTS] - gone : 0;
}

/* Keys the counters say the tables hold. */
static uint64_t keys_counted(struct tk__table *t)
{
	uint64_t n[TKZ_COUNTERS];

	tk__table_counters(t, n);
	return held(n);
}

uint64_t tk__table_keys_counted(struct tk__zone *z)
{
	uint64_t n[TKZ_COUNTERS];

	/* A private zone without a table (the tests' stages) has only
	 * its own. */
	if (!head(z)->table)
		tk__zone_counters(z, n);
	else
		return keys_counted(head(z)->table);
	return held(n);
}

static uint64_t pages_within(const struct tk__table *t, uint64_t pages)
{
	if (pages < t->min_pages)
		pages = t->min_pages;
	return pages < t->max_pages ? pages : t->max_pages;
}

/* @z's windows are full: twice the slots, and an arena no smaller, of
 * twice the pages its blocks take at least. */
static struct tk__table_size for_slots(struct tk__table *t, struct tk__zone *z)
{
	const struct tkz_geo *g = tk__zone_geo(z);
	struct tk__table_size s = { 2 * g->capacity, g->pages, keys_counted(t),
				    pages_used(z) };

	if (2 * s.used > s.pages)
		s.pages = pages_within(t, 2 * s.used);
	return s;
}

/* @z's arena is full: twice the pages, and the same slots unless more
 * than a quarter of them hold keys (the slots a move fills stay at most
 * half full, as a doubling leaves them). */
static struct tk__table_size for_arena(struct tk__table *t, struct tk__zone *z)
{
	const struct tkz_geo *g = tk__zone_geo(z);
	struct tk__table_size s = { g->capacity, pages_within(t, 2 * g->pages),
				    keys_counted(t), pages_used(z) };

	if (s.keys > g->capacity / 4 && g->capacity < t->max_capacity)
		s.capacity *= 2;
	return s;
}

/* Publish @nz as @z's successor: 1, or 0 (and @nz freed) if another was
 * first. */
static int install(struct tk__table *t, struct tk__zone *z, struct tk__zone *nz)
{
	struct tk__zone *none = NULL;

	/* Published whole (release): its old before its discovery. */
	if (__atomic_compare_exchange_n(&head(z)->next, &none, nz, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		ck_pr_inc_64(&t->growths);
		return 1;
	}
	tk__table_drop(nz);
	return 0;
}

/* @z is full (@why: TK__ZONE_GROW_SLOTS, its windows; TK__ZONE_GROW, its
 * arena): publish a successor sized by what was full (if another thread
 * has not).  0, or -ENOMEM (the caller's apply fails: @z never evicts,
 * see tk__zone_when_full()). */
static int grow(struct tk__table *t, struct tk__zone *z, int why)
{
	struct tk__table_size s =
		why == TK__ZONE_GROW_SLOTS ? for_slots(t, z) : for_arena(t, z);
	struct tk__zone *nz = tk__table_make(t, &s, z);

	if (!nz)
		return -ENOMEM;
	install(t, z, nz);
	return 0;
}

/*
 * May a new key @k of @words words (0: an operation that inserts
 * nothing) be inserted in @z while its predecessor's keys move there?
 * Its slot and block come out of @z's budget (set_budget()): what the
 * keys moving in leave of half its slots, and of its arena.  Charged
 * whether or not the key is written in the end.
 */
static int afford(struct tk__zone *z, const struct tk__zone_key *k,
		  uint32_t words)
{
	int64_t cells = 0;
	int c;

	if (!words)
		return 1;
	c = k->fp & TKZ_FP_BLOCK ? tk__blk_class(words) : -1;
	if (c >= 0)
		cells = (int64_t)TKZ_CLASS_MIN << c;
	/* The values before the charge: enough if still >= it. */
	return (int64_t)ck_pr_faa_64(&head(z)->budget[0], (uint64_t)-1) >= 1 &&
	       (int64_t)ck_pr_faa_64(&head(z)->budget[1], (uint64_t)-cells) >=
		       cells;
}

/* Pull @k into @z (pull()), @words words for a new key that the budget
 * must afford.  Once it no longer does, end the move first, then look
 * again (TK__ZONE_MOVED): every chunk not moved yet is moved. */
static int bring(struct tk__table *t, struct tk__zone *z,
		 const struct tk__zone_key *k, uint32_t words, uint64_t now)
{
	int fresh = 0, rc = pull(z, k, now, &fresh);

	if (rc || !fresh || afford(z, k, words))
		return rc;
	move_all(t, z, now);
	return TK__ZONE_MOVED;
}

/*
 * The table to run an operation of @k (@words words to insert, or 0) on:
 * the newest, with @k moved to it if its predecessor's keys are moving,
 * and a chunk of them moved.
 */
static struct tk__zone *ready(struct tk__table *t, const struct tk__zone_key *k,
			      uint32_t words, uint64_t now, int *rc)
{
	struct tk__zone *z = newest(t);

	*rc = 0;
	if (tk__zone_old(z)) {
		move_some(t, z, now);
		*rc = bring(t, z, k, words, now);
	}
	return z;
}

/* After an operation on @z at @now said *@rc: look again (1), or stop
 * with *@rc (0). */
static int again(struct tk__table *t, struct tk__zone *z, uint64_t now, int *rc)
{
	if (*rc == TK__ZONE_MOVE_FIRST) {
		move_all(t, z, now);
		return 1;
	}
	if (*rc != TK__ZONE_GROW && *rc != TK__ZONE_GROW_SLOTS)
		return *rc == TK__ZONE_MOVED;
	if (tk__zone_old(z)) {
		move_all(t, z, now);
		return 1;
	}
	*rc = grow(t, z, *rc);
	return *rc == 0;
}

int tk__table_apply(struct tk__table *t, const struct tk__zone_key *key,
		    uint64_t now, uint32_t words, tk__zone_fn fn, void *ctx)
{
	return tk__table_apply_hot(t, key, now, words, fn, NULL, ctx);
}

int tk__table_apply_hot(struct tk__table *t, const struct tk__zone_key *key,
			uint64_t now, uint32_t words, tk__zone_fn fn,
			const struct tk__zone_inplace *ip, void *ctx)
{
	struct tk__zone_key k = { key->fp, tk__table_pos(key->fp) };
	struct tk__zone *z;
	int round, rc = -EIO;

	for (round = 0; round < ROUNDS_MAX; round++) {
		z = ready(t, &k, words, now, &rc);
		if (rc == 0)
			rc = tk__zone_apply_hot(z, &k, now, words, fn, ip, ctx);
		if (!again(t, z, now, &rc))
			return rc;
	}
	return -EIO;
}

int tk__table_apply_multi(struct tk__table *t, size_t n,
			  const struct tk__zone_key *key, const uint32_t *words,
			  uint64_t now, tk__zone_multi_fn fn, void *ctx)
{
	struct tk__zone_key k[TK__ZONE_MULTI_MAX];
	struct tk__zone *z;
	int round, rc = -EIO;
	size_t i;

	if (n > TK__ZONE_MULTI_MAX)
		return -E2BIG;
	/* More keys than the bound never fit at once: each insert would
	 * evict another of them until the step gave up (-EIO, a second
	 * later).  The caller's to fix, as a policy the store cannot run. */
	if (t->cfg.max_keys && n > t->cfg.max_keys)
		return -ENOTSUP;
	for (i = 0; i < n; i++) {
		k[i].fp = key[i].fp;
		k[i].pos = tk__table_pos(key[i].fp);
	}
	for (round = 0; round < ROUNDS_MAX; round++) {
		z = ready(t, &k[0], words[0], now, &rc);
		for (i = 1; i < n && rc == 0 && tk__zone_old(z); i++)
			rc = bring(t, z, &k[i], words[i], now);
		if (rc == 0)
			rc = tk__zone_apply_multi(z, n, k, words, now, fn, ctx);
		if (!again(t, z, now, &rc))
			return rc;
	}
	return -EIO;
}

/*
 * A reset marks @k's frozen state in @oz gone (take()), so that no move
 * in flight brings it back after the reset (import_fn()).  One of no
 * state brings nothing back: it stays, carried (tk__table_carry()).
 */
static void forget(struct tk__zone *oz, const struct tk__zone_key *k)
{
	struct tkz_slot *s;
	uint64_t w[2];

	s = frozen_of(oz, k, 1, w);
	if (s)
		take(s, w);
}

int tk__table_reset(struct tk__table *t, const struct tk__zone_key *key,
		    uint64_t now)
{
	struct tk__zone_key k = { key->fp, tk__table_pos(key->fp) };
	struct tk__zone *z, *oz;
	int round, rc = -EIO;

	for (round = 0; round < ROUNDS_MAX; round++) {
		/* Pulled first, then its frozen state marked gone, then
		 * dropped: no move brings the old state back after it. */
		z = ready(t, &k, 0, now, &rc);
		oz = source(t, z, ledger_of(t)->base);
		if (rc == 0 && oz)
			forget(oz, &k);
		if (rc == 0)
			rc = tk__zone_reset(z, &k);
		if (!again(t, z, now, &rc))
			return rc;
	}
	return -EIO;
}

/* Inserts counted in @z itself. */
static uint64_t inserts_in(struct tk__zone *z)
{
	uint64_t n[TKZ_COUNTERS];

	tk__zone_counters(z, n);
	return n[TKZ_INSERTS];
}

/*
 * What @z shrinks to, for @keys keys and the blocks of @came more: a
 * quarter of the slots for them if fewer than an eighth hold one, and
 * twice the pages its blocks take (a page for each key that came, and
 * one for each size class) if fewer than an eighth hold blocks, that
 * halves them, and the keys fill a quarter of the slots at most; not
 * below the first table's size.  The eighth and the
 * quarter keep shrinks and growths apart: the keys must fall by half
 * again for the next shrink, and double for a growth.
 */
static struct tk__table_size for_keys(struct tk__table *t, struct tk__zone *z,
				      uint64_t keys, uint64_t came)
{
	const struct tkz_geo *g = tk__zone_geo(z);
	struct tk__table_size s = { g->capacity, g->pages, keys,
				    pages_used(z) + came };
	uint64_t c = t->cfg.capacity, p;

	if (keys < g->capacity / 8) {
		while (c < 4 * keys)
			c *= 2;
		s.capacity = c < g->capacity ? c : g->capacity;
	}
	/* The keys move too: at a quarter of the slots at most, as ever. */
	p = pages_within(t, 2 * s.used + TKZ_CLASSES);
	if (s.used < g->pages / 8 && 2 * p <= g->pages &&
	    keys <= s.capacity / 4)
		s.pages = p;
	return s;
}

/*
 * The keys counted are those that move, and those that came in while
 * they were counted (counted twice, perhaps): a successor is made for
 * them, and published only if none came in since, so that only the
 * operations in flight then can still add one (or a composite's few),
 * which its headroom holds.
 */
int tk__table_shrink(struct tk__table *t)
{
	struct tk__zone *z = newest(t), *nz;
	const struct tkz_geo *g = tk__zone_geo(z);
	uint64_t before, keys, came;
	struct tk__table_size s;
	int rc;

	/* One move at a time; and every entry of retired[] folded, so that
	 * the growths until the next shrink find theirs empty. */
	if (tk__zone_old(z) || t->cleared != retired_count(t))
		return 0;
	/* A key count scans every slot: not for a table the counters say
	 * holds too many keys, and blocks, to shrink. */
	if (keys_counted(t) >= g->capacity / 8 && pages_used(z) >= g->pages / 8)
		return 0;
	before = inserts_in(z);
	keys = tk__table_count_keys(z, NULL);
	came = inserts_in(z) - before;
	s = for_keys(t, z, keys + came, came);
	if (s.capacity == g->capacity && s.pages == g->pages)
		return 0;
	/* No fork() child inherits a successor made and not published:
	 * it would hold its bytes for good. */
	tk__table_freeing_hold();
	nz = tk__table_make(t, &s, z);
	rc = nz ? 0 : -ENOMEM;
	if (nz && inserts_in(z) != before + came)
		tk__table_drop(nz);
	else if (nz)
		rc = install(t, z, nz);
	tk__table_freeing_release();
	if (rc == 1)
		ck_pr_inc_64(&t->shrinks);
	return rc;
}

int tk__table_move(struct tk__table *t, uint64_t now)
{
	struct tk__zone *z = newest(t);

	move_all(t, z, now);
	return tk__zone_old(z) != NULL;
}
