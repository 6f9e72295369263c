/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * slots.c - the lock-free slot protocol of a zone (docs/shm-protocol.md).
 *
 * A key's candidates are two windows of TKZ_WINDOW slots in its shard,
 * always scanned whole.  Slots change only by a 16-byte CAS of the whole
 * slot, and every transition may be performed by any process, so a process
 * killed at any instruction leaves nothing that others cannot finish or
 * undo: an INS is committed or collided by the next visitor, a COL freed,
 * a committed-but-never-updated MEM aged out by sweeps.
 *
 * A key whose state is larger than one word keeps it in a block of the
 * arena (blocks.c) and its slot references the block; so does a key of
 * one word once a multi-key update has moved its word there (shaped(),
 * tk__zone_to_block()).
 *
 * A full zone evicts the coldest state among the new key's candidates:
 * one expired, else one of a key used once, else any; of those, the one
 * that expires first, since a dropped state gives back what its key
 * would regain by then.  Never a key between its insert and its first
 * write.  A private table at its bound on live keys (max_keys) makes
 * room the same way for every new key, before it takes a free slot.
 */
#include "hot.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#define CANDIDATES TKZ_CANDIDATES
/* Rounds before an operation looks at the clock (go_on()). */
#define ROUNDS_MAX 128
/*
 * insert(): a step was made (a slot freed, an insert of the key committed
 * or helped): look again at once.  Backing off here would hand the step
 * to rivals: on a full zone churned by new keys, a slot freed is another
 * inserter's once the process yields, and then every round does the same.
 */
#define STEPPED (-EINPROGRESS)
/* The sleeps of tk__zone_backoff() (zone.h): 1 us doubling ten times to
 * 512 us, then 1 ms for every round left. */
_Static_assert(TK__ZONE_SLEEP_MAX_NS ==
		       UINT64_C(1000) *
			       (1023 +
				1000 * (ROUNDS_MAX - TK__ZONE_SLEEP_FROM - 10)),
	       "the documented bound of the backoff");
#define SWEEP_CHUNK 64
#define MS UINT64_C(1000000)

/*
 * May an operation in its round @round go on?  Contention is no reason
 * to fail a check: a round lost means a rival's succeeded, and on a
 * loaded machine (more processes than CPUs, a process off its CPU for
 * tens of ms in the middle of a transition) 128 rounds and their 103 ms
 * of sleep were seen to run out under a flood of new keys, failing
 * checks with -EIO.  So the first ROUNDS_MAX rounds cost nothing but
 * their backoff, and from then on the operation goes on until
 * TK__ZONE_GIVE_UP_NS of real time have passed (*@until, 0 until set):
 * only a livelock, which no rival's progress ends, gives -EIO.
 */
static int go_on(int round, uint64_t *until)
{
	struct timespec ts;
	uint64_t now;

	if (round < ROUNDS_MAX)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
	if (!*until)
		*until = now + TK__ZONE_GIVE_UP_NS;
	return now < *until;
}

struct view {
	uint64_t w0[CANDIDATES], w1[CANDIDATES];
	int mem;	     /* first MEM(fp), or -1 */
	int ins[CANDIDATES]; /* INS(fp), in candidate order */
	int n_ins;
	int empty; /* first EMPTY, or -1 */
};

/*
 * Read the candidates.  With @to_mem, stop at the first MEM(fp): a key is
 * MEM in at most one slot, and an update needs nothing else (tentative
 * inserts of the same key are resolved by their inserters, who will see
 * this MEM).  Without it, see everything (settle() needs every INS).
 */
static void scan(struct tk__zone *z, const struct tkz_cand *c, uint64_t fp,
		 int to_mem, struct view *v)
{
	struct tkz_slot *slots = tk__zone_slots(z);
	uint64_t st;
	int i;

	v->mem = v->empty = -1;
	v->n_ins = 0;
	for (i = 0; i < CANDIDATES; i++) {
		/* w0 first: most slots belong to other keys. */
		v->w0[i] = ck_pr_load_64(&slots[tkz_at(c, i)].w[0]);
		st = tkz_state(v->w0[i]);
		if (st != TKZ_EMPTY && !tkz_same_key(v->w0[i], fp))
			continue;
		v->w1[i] = ck_pr_load_64(&slots[tkz_at(c, i)].w[1]);
		if (st == TKZ_EMPTY) {
			if (v->empty < 0 && v->w0[i] == 0 && v->w1[i] == 0)
				v->empty = i;
		} else if (st == TKZ_MEM) {
			if (v->mem < 0)
				v->mem = i;
			if (to_mem)
				return;
		} else if (st == TKZ_INS) {
			v->ins[v->n_ins++] = i;
		} else if (st == TKZ_COL) {
			/* Garbage of a lost insert: anyone frees it. */
			tkz_cas_slot(&slots[tkz_at(c, i)], v->w0[i], v->w1[i],
				     0, 0);
		}
	}
}

/*
 * Does MEM {@w0, ..} of @k's key hold its state in another shape than @k
 * names (then shaped() decides)?  One load of w0 says so, so the answer
 * is as good as any read.
 */
static int other_shape(uint64_t w0, const struct tk__zone_key *k)
{
	return ((w0 ^ k->fp) & TKZ_FP_SHAPE) != 0;
}

/* Was the state in MEM {@w0, ..} of @k's key written by another
 * algorithm: another policy under this key? */
static int other_alg(uint64_t w0, const struct tk__zone_key *k)
{
	return ((w0 ^ k->fp) & TKZ_FP_ALG_MASK) != 0;
}

/* INS -> COL -> EMPTY for the tentative insert seen as (w0, w1). */
static int collide(struct tkz_slot *s, uint64_t w0, uint64_t w1)
{
	uint64_t col = tkz_w0(TKZ_COL, 0, tkz_fp(w0));

	if (!tkz_cas_slot(s, w0, w1, col, w1))
		return 0;
	tkz_cas_slot(s, col, w1, 0, 0);
	return 1;
}

/*
 * Resolve the tentative inserts of @fp: with a MEM(fp) present they are
 * all redundant; otherwise the earliest wins once every later one has been
 * collided.  Anyone may run this for anyone (helping), which is how an
 * insert whose owner died completes.
 *
 * A scan reads slots one after another, so "no other INS(fp) or MEM(fp)"
 * never holds at one instant: a slot read EMPTY early may be claimed and
 * committed before a later slot is read.  So an INS is committed only by a
 * scan that started after it was already there: the caller's own INS
 * (@own, ticket @own_ticket: claimed before this scan), or the earliest
 * INS(fp) of the caller's previous scan @prev, unchanged (same ticket).
 * Otherwise the caller scans again.  Spin found the duplicate a looser
 * rule allows (tests/model/slots.pml, -DAS_DOCUMENTED).
 *
 * In a private table that grows, an INS whose ticket has TKZ_COPY is a
 * copy's (grow.c): it brings over a key a predecessor counted, so it
 * counts no insert, and it stands only while the state it copies is
 * still frozen there (tk__table_copy_stands()).  That is asked here, by
 * whoever commits, before the commit: from this scan to the commit no
 * MEM(fp) comes and goes (a commit of another collides this INS first),
 * and a take of the frozen state follows a state of the key here (a
 * copy that landed, or a reset's pull), so the answer holds at the
 * commit (docs/shm-protocol.md, rule 7, says when it does not).  Once
 * taken, the copy is stale (the key landed by another copy, or was
 * reset): its INS goes, and leaves neither a count nor a key of "no
 * state yet" that nobody writes.
 */
static void settle(struct tk__zone *z, const struct tkz_cand *c, uint64_t fp,
		   const struct view *prev, int own, uint64_t own_ticket)
{
	struct tkz_slot *slots = tk__zone_slots(z);
	struct view v;
	int i, e, confirmed, copy;

	scan(z, c, fp, 0, &v);
	if (v.mem >= 0) {
		for (i = 0; i < v.n_ins; i++)
			collide(&slots[tkz_at(c, v.ins[i])], v.w0[v.ins[i]],
				v.w1[v.ins[i]]);
		return;
	}
	if (v.n_ins == 0)
		return;
	e = v.ins[0];
	confirmed = (e == own && v.w1[e] == own_ticket) ||
		    (prev && prev->n_ins > 0 && prev->ins[0] == e &&
		     prev->w1[e] == v.w1[e]);
	if (!confirmed)
		return;
	copy = (v.w1[e] & TKZ_COPY) && tk__zone_private_table(z);
	if (copy && !tk__table_copy_stands(z, tkz_fp(v.w0[e]))) {
		collide(&slots[tkz_at(c, e)], v.w0[e], v.w1[e]);
		return;
	}
	for (i = 1; i < v.n_ins; i++) {
		/* A later one changed: it may have been committed; look
		 * again. */
		if (!collide(&slots[tkz_at(c, v.ins[i])], v.w0[v.ins[i]],
			     v.w1[v.ins[i]]))
			return;
	}
	/* A growth started: keys are inserted in the successor only (a
	 * commit here could land after the growth moved the key). */
	if (tk__zone_next(z))
		return;
	/* Committed "no state yet" and not referenced: a key earns its
	 * second chance by a second use (see tkz_referenced()).  A block key's
	 * "no state" keeps the unique ticket (claims of blocks are bound to
	 * w1 values that never repeat).  The insert keeps its own shape:
	 * the helper may be reading the key under another one. */
	fp = tkz_fp(v.w0[e]);
	if (!tkz_cas_slot(&slots[tkz_at(c, e)], v.w0[e], v.w1[e],
			  tkz_w0(TKZ_MEM, 0, fp),
			  fp & TKZ_FP_BLOCK
				  ? TKZ_NOSTATE | (v.w1[e] & ~TKZ_COPY)
				  : 0))
		return;
	if (tk__zone_commit_hook)
		tk__zone_commit_hook(z, fp);
	/* Counted by whoever commits: once per key inserted (in a table
	 * that grew, not the keys brought over from its predecessors). */
	if (!copy && !tk__zone_carry(z, fp))
		tkz_count(z, TKZ_INSERTS);
}

void (*tk__zone_commit_hook)(struct tk__zone *z, uint64_t fp);

/*
 * Empty MEM slot @s seen as {@w0, @w1}, with its block if it has one.
 * Returns 1 if it did.
 */
static int drop(struct tk__zone *z, struct tkz_slot *s, uint64_t w0,
		uint64_t w1, enum tkz_counter why)
{
	/* A multi-key update owns the slot until someone completes it
	 * (a reference to none is broken, and goes). */
	if (tkz_slot_desc(w0, w1) &&
	    tk__desc_help(z, w1, (uint64_t)(s - tk__zone_slots(z))) == 0)
		return 0;
	if (!tkz_cas_slot(s, w0, w1, 0, 0))
		return 0;
	if (w0 & TKZ_FP_BLOCK)
		tk__blk_release_ref(z, w1);
	tkz_count(z, why);
	return 1;
}

/* The expiry time of the state of MEM slot @s; UINT64_MAX if it must be
 * looked at again later (it changed), 0 if its block reference is broken
 * (expired at once). */
static uint64_t expiry(struct tk__zone *z, struct tkz_slot *s, uint64_t w0,
		       uint64_t w1)
{
	uint64_t exp;
	int rc;

	if (!(w0 & TKZ_FP_BLOCK))
		return w1 | TKZ_WORD_SLACK;
	rc = tk__blk_read(z, s, w0, w1, NULL, 0, &exp, NULL);
	if (rc == -EBADMSG)
		return 0; /* a broken reference: expired at once */
	return rc < 0 ? UINT64_MAX : exp;
}

/* What tidy() found in a slot. */
enum found {
	FREED,	 /* it freed the slot */
	LIVE,	 /* a MEM of a state that counts, expiring at *exp */
	UNBORN,	 /* an INS, or a MEM of "no state yet": a key being inserted */
	NOTHING, /* EMPTY, frozen, or a multi-key update it completed */
};

/*
 * What every visitor of slot @s, read as {@w0, @w1}, does at @now: free
 * a COL, complete a multi-key update (a reference to none goes), reclaim
 * a state expired for the grace.
 */
static enum found tidy(struct tk__zone *z, struct tkz_slot *s, uint64_t w0,
		       uint64_t w1, uint64_t now, uint64_t *exp)
{
	uint64_t st = tkz_state(w0), grace = tk__zone_geo(z)->grace;

	if (tkz_frozen(w0) || st == TKZ_EMPTY)
		return NOTHING;
	if (st == TKZ_COL)
		return tkz_cas_slot(s, w0, w1, 0, 0) ? FREED : NOTHING;
	if (st == TKZ_INS)
		return UNBORN;
	if (tkz_slot_desc(w0, w1))
		return drop(z, s, w0, w1, TKZ_RECLAIMS) ? FREED : NOTHING;
	if (!tkz_has_state(w0, w1))
		return UNBORN;
	*exp = expiry(z, s, w0, w1);
	if (*exp > UINT64_MAX - grace || *exp + grace > now)
		return LIVE;
	return drop(z, s, w0, w1, TKZ_RECLAIMS) ? FREED : NOTHING;
}

/*
 * Judge one slot for reclamation at @now.  Returns 1 if it freed it.
 * A MEM of a real state goes once it has been expired for the grace; a
 * MEM of "no state yet" or an INS is aged by its ref bit, so that only
 * one abandoned by a dead process (two sweeps apart) is freed.  A private
 * table's threads do not die alone: its MEMs of "no state yet" are left
 * to their inserters, who write them within microseconds (or see them
 * frozen and carried by a growth, or give up on an error, and then a
 * growth carries them); freed under their inserters, they would count an
 * expiration of no state and a second insert of the key.
 */
static int reclaim(struct tk__zone *z, struct tkz_slot *s, uint64_t now)
{
	uint64_t w0, w1, exp;
	enum found f;

	tkz_read_slot(s, &w0, &w1);
	f = tidy(z, s, w0, w1, now, &exp);
	if (f != UNBORN)
		return f == FREED;
	if (w0 & TKZ_REF) {
		tkz_cas_slot(s, w0, w1, w0 & ~TKZ_REF, w1);
		return 0;
	}
	if (tkz_state(w0) == TKZ_INS)
		return collide(s, w0, w1);
	/* A private table's "no state yet" is its inserter's to write:
	 * no process of it can have died. */
	if (tk__zone_private_table(z))
		return 0;
	return drop(z, s, w0, w1, TKZ_RECLAIMS);
}

/* The slot an eviction would take, as read. */
struct victim {
	struct tkz_slot *s; /* NULL: none yet */
	uint64_t w0, w1;
	struct tkz_heat heat;
};

/* Judge slot @s at @now as a victim against @v; what tidy() found. */
static enum found judge(struct tk__zone *z, struct tkz_slot *s, uint64_t now,
			struct victim *v, uint64_t *w0)
{
	struct tkz_heat heat;
	uint64_t w1, exp;
	enum found f;

	/* Most slots of a table at its bound are empty: one load says so
	 * (tidy() does nothing to one). */
	*w0 = ck_pr_load_64(&s->w[0]);
	if (tkz_state(*w0) == TKZ_EMPTY)
		return NOTHING;
	w1 = ck_pr_load_64(&s->w[1]);
	f = tidy(z, s, *w0, w1, now, &exp);
	if (f != LIVE)
		return f;
	heat = tkz_heat_of(*w0, w1, exp, now);
	if (!v->s || tkz_colder(heat, v->heat))
		*v = (struct victim){ s, *w0, w1, heat };
	return f;
}

/* Windows besides its candidates that a new key at the bound on live
 * keys judges (farther()); and up to how many while it has seen only
 * keys used again. */
#define FARTHER 8
#define FARTHER_MAX 64

/* A window of @z to start farther()'s sample at, drawn from the new
 * key's windows @c and the time: as hard to aim as the key's placement
 * (its keyed hash), and the same in two tables of one secret. */
static uint64_t some_window(struct tk__zone *z, const struct tkz_cand *c,
			    uint64_t now)
{
	uint64_t x = tk__zone_mix((c->a << 32 | c->b) ^ now);

	return (x % (tk__zone_geo(z)->capacity / TKZ_WINDOW)) * TKZ_WINDOW;
}

/*
 * A private table at its bound on live keys: a new key's eviction there
 * is one for every key it adds, not only where its candidates are full,
 * so it judges a wider sample than they are: FARTHER windows more, from
 * one drawn (some_window()), going round the table; up to FARTHER_MAX
 * while it has seen only keys used again, so that a key in use goes only
 * where no key used once is near; and on while it has seen no key (a
 * small table's keys may all sit elsewhere).  About 40% full at the
 * bound, the candidates may hold no key used once where most keys are in
 * use; 4 windows more let a key in use go in one run of ten of
 * test_slots_evict's flood under load, 8 in none of 28.  @v has the
 * candidates' victim so far; an expired one ends the search.  1 if a
 * slot was freed on the way (look again), else 0, with @v's victim if
 * any.
 */
static __attribute__((noinline)) int farther(struct tk__zone *z,
					     const struct tkz_cand *c,
					     uint64_t now, struct victim *v)
{
	uint64_t cap = tk__zone_geo(z)->capacity, at = some_window(z, c, now);
	uint64_t w0, n, seen = 0;
	int i, freed = 0;

	for (n = cap / TKZ_WINDOW; n > 0 && !freed; n--) {
		if (v->s &&
		    (v->heat.tier == TKZ_EXPIRED ||
		     (v->heat.tier == TKZ_USED_ONCE && seen >= FARTHER) ||
		     seen >= FARTHER_MAX))
			break;
		if (at != c->a && at != c->b) {
			for (i = 0; i < TKZ_WINDOW; i++)
				freed |= judge(z,
					       &tk__zone_slots(
						       z)[at + (uint64_t)i],
					       now, v, &w0) == FREED;
			seen++;
		}
		at = (at + TKZ_WINDOW) & (cap - 1);
	}
	return freed;
}

/*
 * Both windows of key @fp are full, or (@bound) a private table holds
 * as many live keys as its max_keys: reclaim what has expired for the
 * grace, else (unless the zone refuses) evict the coldest state
 * (tkz_heat_of()) of the candidates, and at the bound of farther()
 * windows too.  Never a key being inserted (an INS, or a MEM
 * of "no state yet", whose inserter is about to write it: sweeps age
 * those), so a key is never taken between its insert and its first
 * write.  Returns 0 if a slot was freed or @fp has a slot now (look
 * again), -EAGAIN if there was nothing to evict or the victim changed
 * before it went.  At the bound a table that may grow evicts all the
 * same: its keys, not its slots, are what the bound counts.
 */
static int make_room(struct tk__zone *z, const struct tkz_cand *c, uint64_t fp,
		     uint64_t now, int bound)
{
	struct victim v = { NULL, 0, 0, { 0, 0 } };
	uint64_t w0;
	int i, freed = 0, own = 0, rc;
	enum found f;

	for (i = 0; i < CANDIDATES; i++) {
		f = judge(z, &tk__zone_slots(z)[tkz_at(c, i)], now, &v, &w0);
		freed |= f == FREED;
		/* A rival inserted the key meanwhile: it needs no room. */
		own |= (f == LIVE || f == UNBORN) && tkz_same_key(w0, fp);
	}
	if (freed || own)
		return 0;
	rc = bound ? 0 : tk__zone_when_slots_full(z);
	if (rc)
		return rc;
	if (tk__zone_geo(z)->flags & TKZ_FLAG_REFUSE_FULL)
		return -ENOSPC;
	if (bound && farther(z, c, now, &v))
		return 0;
	/* The CAS compares the whole slot: a victim used since it was
	 * judged stays. */
	if (!v.s || !drop(z, v.s, v.w0, v.w1, TKZ_EVICTIONS))
		return -EAGAIN;
	return 0;
}

/* Update the word key in slot @s seen as {@w0, @w1}: the hot path, with
 * a small frame.  Returns @fn's result, or -EAGAIN to look again. */
static int update_word(struct tkz_slot *s, uint64_t w0, uint64_t w1,
		       tk__zone_fn fn, void *ctx)
{
	uint64_t old = w1, next[1], exp;
	int rc = fn(ctx, w1 ? &old : NULL, next, &exp);

	if (rc == TK__ZONE_PERSIST)
		return tkz_cas_slot(s, w0, w1, tkz_referenced(w0, w1), next[0])
			       ? rc
			       : -EAGAIN;
	return rc < 0 ? rc : tkz_confirm(s, w0, w1, rc);
}

/*
 * Update the block key in MEM slot @idx seen as {@w0, @w1}.  Its claimed
 * block is kept in @held across rounds (rebound, not re-claimed).  Out of
 * line: its buffers would otherwise sit in every word key's frame.
 */
static __attribute__((noinline)) int
update_block(struct tk__zone *z, uint64_t idx, uint64_t w0, uint64_t w1,
	     uint64_t now, uint32_t words, tk__zone_fn fn,
	     const struct tk__zone_inplace *ip, void *ctx, struct tk__blk *held,
	     int *holding)
{
	struct tkz_slot *s = &tk__zone_slots(z)[idx];
	uint64_t old[TKZ_STATE_WORDS_MAX], next[TKZ_STATE_WORDS_MAX], exp = 0;
	uint64_t memo[TKZ_BLK_MEMO];
	const uint64_t *have = NULL;
	struct tk__blk_hot hot = { 0 };
	uint32_t mark;
	int rc;

	if (tkz_is_desc(w1) && tk__desc_help(z, w1, idx) == 0) {
		return -EAGAIN;
	} else if (tkz_is_ref(w1)) {
		/* The same steps as the direct path's (hot.h). */
		rc = tkz_step_memo(z, s, w0, w1, now, ip ? ip->step_memo : NULL,
				   ctx);
		if (rc != TK__ZONE_NOT_HOT)
			return rc;
		rc = tk__blk_read(z, s, w0, w1, old, words, &exp, &hot);
		if (rc == -EAGAIN)
			return rc;
		/* A state of another shape: another policy under this key. */
		if (rc >= 0 && rc != (int)words)
			return -EPROTO;
		/* An expired state is no state; a broken reference is
		 * replaced. */
		have = rc >= 0 && exp > now ? old : NULL;
	}
	rc = tkz_step_hot(z, s, w0, w1, have, &hot, ip, ctx, &exp, &mark);
	if (rc != TK__ZONE_NOT_HOT)
		return rc;
	rc = fn(ctx, have, next, &exp);
	if (rc != TK__ZONE_PERSIST)
		return rc < 0 ? rc : tkz_confirm(s, w0, w1, rc);
	rc = tk__blk_publish(z, idx, w0, w1, now, words, next, exp, &hot, mark,
			     tkz_memo_of(ip, ctx, words, next, memo), held,
			     holding);
	return rc == 0 ? TK__ZONE_PERSIST : rc;
}

/*
 * Word key @k's MEM slot @idx, seen as {@w0, @w1}, to block shape with
 * the same state (docs/shm-protocol.md, "One state, two shapes"): its
 * word in a 1-word block, expiring as reclaimers judge a word, or "no
 * state yet" (a fresh ticket) for none.  One publish CAS, which changes
 * no decision; a block key is never made a word key again, so the slot
 * values the multi-key step compares never repeat from then on.  0 once
 * done, -EAGAIN if the slot changed, or the claim's error.
 */
int tk__zone_to_block(struct tk__zone *z, const struct tk__zone_key *k,
		      uint64_t idx, uint64_t w0, uint64_t w1, uint64_t now)
{
	struct tkz_slot *s = &tk__zone_slots(z)[idx];
	struct tkz_header *h = tk__zone_header(z);
	struct tk__blk b;
	uint64_t nw1;
	int rc;

	if (w1 == 0) {
		nw1 = TKZ_NOSTATE |
		      (ck_pr_faa_64(&h->shard[tkz_shard_of(z, k)].tickets, 1) +
		       1);
		return tkz_cas_slot(s, w0, w1, w0 | TKZ_FP_BLOCK, nw1)
			       ? 0
			       : -EAGAIN;
	}
	/* Bound to the word: tk__blk_collect() keeps a 1-word block while
	 * its slot holds a word key, whose values may repeat. */
	rc = tk__blk_claim(z, 1, idx, w1, now, &b);
	if (rc)
		return rc;
	if (tk__blk_write(z, &b, w1 | TKZ_WORD_SLACK, &w1, 0, NULL) != 0)
		return -EAGAIN; /* taken from us */
	tkz_before_publish();
	nw1 = tk__blk_ref(&b);
	if (tkz_cas_slot(s, w0, w1, w0 | TKZ_FP_BLOCK, nw1))
		return 0;
	tk__blk_release(z, &b);
	return -EAGAIN;
}

/*
 * The MEM slot @idx of @k's key, seen as {@w0, @w1}, holds its state in
 * another shape than @k names: a block where @k wants a word (a group
 * check wrote it), updated as a 1-word block (a block of other words is
 * another policy's); a word where @k wants a 1-word block, made one
 * first; else another policy's state.  STEPPED or -EAGAIN to look again.
 */
static __attribute__((noinline)) int
shaped(struct tk__zone *z, const struct tk__zone_key *k, uint64_t idx,
       uint64_t w0, uint64_t w1, uint64_t now, uint32_t words, tk__zone_fn fn,
       const struct tk__zone_inplace *ip, void *ctx, struct tk__blk *held,
       int *holding)
{
	int rc;

	if (other_alg(w0, k) || (!(w0 & TKZ_FP_BLOCK) && words != 1))
		return -EPROTO;
	if (w0 & TKZ_FP_BLOCK)
		return update_block(z, idx, w0, w1, now, words, fn, ip, ctx,
				    held, holding);
	rc = tk__zone_to_block(z, k, idx, w0, w1, now);
	return rc == 0 ? STEPPED : rc;
}

/* What @fn says of no state, for a block key (its next state unused). */
static __attribute__((noinline)) int absent_block(tk__zone_fn fn, void *ctx)
{
	uint64_t next[TKZ_STATE_WORDS_MAX], exp;

	return fn(ctx, NULL, next, &exp);
}

void (*tk__zone_insert_hook)(struct tk__zone *z, const struct tk__zone_key *k,
			     int at, int settled);

/*
 * The tentative insert an operation claimed (slot @at among its
 * candidates, ticket @ticket), or none (@at < 0).
 */
struct claim {
	int at;
	uint64_t ticket;
};

/*
 * At the end of an operation: collide its own INS if it still stands
 * (transition 4).  A scan stops at the key's first MEM, so an inserter
 * whose rival's earlier INS was committed meanwhile finds that MEM and
 * never sees its own INS again; left, it would hold a slot until two
 * sweeps age it out.
 */
static __attribute__((noinline)) void unclaim_slow(struct tk__zone *z,
						   const struct tkz_cand *c,
						   uint64_t fp,
						   const struct claim *own)
{
	struct tkz_slot *s = &tk__zone_slots(z)[tkz_at(c, own->at)];
	uint64_t w0, w1;

	tkz_read_slot(s, &w0, &w1);
	if (tkz_state(w0) == TKZ_INS && tkz_same_key(w0, fp) &&
	    w1 == own->ticket)
		collide(s, w0, w1);
}

/* Most operations find their key and claim nothing: one test. */
static inline void unclaim(struct tk__zone *z, const struct tkz_cand *c,
			   uint64_t fp, const struct claim *own)
{
	if (own->at >= 0)
		unclaim_slow(z, c, fp, own);
}

/*
 * No slot holds @k: get it one (@v is the scan that found none), and say
 * in @own which INS this claimed, if any; @mark is TKZ_COPY for a copy's
 * insert (see settle()), else 0.  Returns
 * STEPPED to look again at once (it freed a slot, or committed or helped
 * an insert of @k), -EAGAIN to look again after a backoff (a rival took
 * the empty slot first, or changed the victim first, or every candidate
 * holds a key being inserted), -ENOSPC, or for a private table that grows
 * TK__ZONE_GROW_SLOTS (its windows are full), TK__ZONE_MOVED (it has
 * grown: insert in its successor) and TK__ZONE_MOVE_FIRST (at its
 * max_keys while keys move in: an eviction waits for the move's end).
 * At max_keys a new key first makes room, as a full zone does: live keys
 * stay within the bound (but for inserts in flight together), and the
 * table does not grow past what its keys need.
 */
static int insert(struct tk__zone *z, const struct tkz_cand *c,
		  const struct tk__zone_key *k, uint64_t now,
		  const struct view *v, struct claim *own, uint64_t mark)
{
	struct tkz_header *h = tk__zone_header(z);
	uint64_t ticket;
	int rc, bound;

	if (tk__zone_next(z))
		return TK__ZONE_MOVED;
	if (v->n_ins > 0) {
		settle(z, c, k->fp, v, -1, 0);
		return STEPPED;
	}
	/* A copy brings over a key counted already. */
	bound = !mark && tk__zone_over_keys(z);
	if (bound && tk__zone_old(z))
		return TK__ZONE_MOVE_FIRST;
	if (bound || v->empty < 0) {
		rc = make_room(z, c, k->fp, now, bound);
		return rc ? rc : STEPPED;
	}
	/* A unique ticket per tentative insert: no ABA on INS. */
	ticket = (ck_pr_faa_64(&h->shard[tkz_shard_of(z, k)].tickets, 1) + 1) |
		 mark;
	/* Claimed with ref set, like a commit: a sweep clears it and only
	 * a second sweep may take an abandoned claim. */
	if (!tkz_cas_slot(&tk__zone_slots(z)[tkz_at(c, v->empty)], 0, 0,
			  tkz_w0(TKZ_INS, 1, k->fp), ticket))
		return -EAGAIN;
	/* An earlier claim of this operation is settled by now: the scan
	 * that let this one claim saw no INS of the key. */
	*own = (struct claim){ v->empty, ticket };
	if (tk__zone_insert_hook)
		tk__zone_insert_hook(z, k, v->empty, 0);
	settle(z, c, k->fp, NULL, v->empty, ticket);
	if (tk__zone_insert_hook)
		tk__zone_insert_hook(z, k, v->empty, 1);
	return STEPPED;
}

/* tk__zone_apply(), and with @mark TKZ_COPY tk__zone_copy(): inlined in
 * both, so that the hot path pays nothing for the copy's mark. */
static inline __attribute__((always_inline)) int
apply(struct tk__zone *z, const struct tk__zone_key *k, uint64_t now,
      uint32_t words, tk__zone_fn fn, const struct tk__zone_inplace *ip,
      void *ctx, uint64_t mark)
{
	uint64_t next[1], exp;
	struct tk__blk held;
	struct tkz_cand c;
	struct claim own = { -1, 0 };
	struct view v;
	int round, lost = 0, rc = -EIO, holding = 0;
	int block = !!(k->fp & TKZ_FP_BLOCK);
	uint64_t until = 0;

	if (block ? tk__blk_class(words) < 0 : words != 1)
		return -E2BIG;
	tkz_candidates(z, k, &c);
	for (round = 0;; round++) {
		if (!go_on(round, &until)) {
			rc = -EIO;
			break;
		}
		scan(z, &c, k->fp, 1, &v);
		if (v.mem >= 0 && other_shape(v.w0[v.mem], k)) {
			rc = shaped(z, k, tkz_at(&c, v.mem), v.w0[v.mem],
				    v.w1[v.mem], now, words, fn, ip, ctx, &held,
				    &holding);
		} else if (v.mem >= 0 && !block) {
			rc = update_word(&tk__zone_slots(z)[tkz_at(&c, v.mem)],
					 v.w0[v.mem], v.w1[v.mem], fn, ctx);
		} else if (v.mem >= 0) {
			rc = update_block(z, tkz_at(&c, v.mem), v.w0[v.mem],
					  v.w1[v.mem], now, words, fn, ip, ctx,
					  &held, &holding);
		} else if (tk__zone_next(z)) {
			/* Grown: the key may have moved (a frozen slot
			 * matches no key), and no state here is no answer. */
			rc = TK__ZONE_MOVED;
		} else {
			/* No state: only a write needs a slot. */
			rc = v.n_ins > 0 ? TK__ZONE_PERSIST
			     : block	 ? absent_block(fn, ctx)
					 : fn(ctx, NULL, next, &exp);
			if (rc == TK__ZONE_PERSIST)
				rc = insert(z, &c, k, now, &v, &own, mark);
		}
		if (rc == STEPPED)
			continue;
		if (rc != -EAGAIN)
			break;
		tk__zone_backoff(lost++);
	}
	unclaim(z, &c, k->fp, &own);
	if (holding)
		tk__blk_release(z, &held);
	return rc;
}

int tk__zone_apply(struct tk__zone *z, const struct tk__zone_key *k,
		   uint64_t now, uint32_t words, tk__zone_fn fn, void *ctx)
{
	return apply(z, k, now, words, fn, NULL, ctx, 0);
}

int tk__zone_apply_hot(struct tk__zone *z, const struct tk__zone_key *k,
		       uint64_t now, uint32_t words, tk__zone_fn fn,
		       const struct tk__zone_inplace *ip, void *ctx)
{
	return apply(z, k, now, words, fn, ip, ctx, 0);
}

int tk__zone_copy(struct tk__zone *z, const struct tk__zone_key *k,
		  uint64_t now, uint32_t words, tk__zone_fn fn, void *ctx)
{
	return apply(z, k, now, words, fn, NULL, ctx, TKZ_COPY);
}

int tk__zone_locate(struct tk__zone *z, const struct tk__zone_key *k,
		    uint64_t now, int create, uint64_t *idx, uint64_t *w0,
		    uint64_t *w1)
{
	struct tkz_cand c;
	struct claim own = { -1, 0 };
	struct view v;
	int round, lost = 0, rc = -EIO;
	uint64_t until = 0;

	tkz_candidates(z, k, &c);
	for (round = 0;; round++) {
		if (!go_on(round, &until)) {
			rc = -EIO;
			break;
		}
		scan(z, &c, k->fp, 1, &v);
		/* Either shape: the caller judges it (mcas.c converts). */
		if (v.mem >= 0 && other_alg(v.w0[v.mem], k)) {
			rc = -EPROTO;
			break;
		}
		if (v.mem >= 0) {
			*idx = tkz_at(&c, v.mem);
			*w0 = v.w0[v.mem];
			*w1 = v.w1[v.mem];
			rc = 0;
			break;
		}
		if (!create && v.n_ins == 0) {
			rc = -ENOENT;
			break;
		}
		rc = insert(z, &c, k, now, &v, &own, 0);
		if (rc == STEPPED)
			continue;
		if (rc != -EAGAIN)
			break;
		tk__zone_backoff(lost++);
	}
	unclaim(z, &c, k->fp, &own);
	return rc;
}

int tk__zone_reset(struct tk__zone *z, const struct tk__zone_key *k)
{
	struct tkz_slot *slots = tk__zone_slots(z);
	struct tkz_cand c;
	struct view v;
	uint64_t until = 0;
	int round;

	tkz_candidates(z, k, &c);
	for (round = 0; go_on(round, &until); round++) {
		scan(z, &c, k->fp, 1, &v);
		if (v.mem < 0)
			/* Grown: the key may have moved (a frozen slot matches
			 * no key), and its successor may hold it. */
			return tk__zone_next(z) ? TK__ZONE_MOVED : 0;
		if (drop(z, &slots[tkz_at(&c, v.mem)], v.w0[v.mem], v.w1[v.mem],
			 TKZ_RESETS))
			return 0;
		tk__zone_backoff(round);
	}
	return -EIO;
}

void tk__zone_pause(int lost)
{
	struct timespec ts = { 0, TK__ZONE_SLEEP_MIN_NS };
	int doublings = lost - TK__ZONE_SLEEP_FROM;

	if (lost < TK__ZONE_SLEEP_FROM) {
		sched_yield();
		return;
	}
	while (doublings-- > 0 && ts.tv_nsec < TK__ZONE_SLEEP_CAP_NS)
		ts.tv_nsec *= 2;
	if (ts.tv_nsec > TK__ZONE_SLEEP_CAP_NS)
		ts.tv_nsec = TK__ZONE_SLEEP_CAP_NS;
	/* A signal may cut it short: the round comes sooner, no harm. */
	nanosleep(&ts, NULL);
}

static void sweep_range(struct tk__zone *z, uint64_t from, uint64_t n,
			uint64_t now)
{
	struct tkz_slot *slots = tk__zone_slots(z);
	uint64_t i;

	for (i = 0; i < n; i++)
		reclaim(z, &slots[from + i], now);
}

void tk__zone_maybe_sweep(struct tk__zone *z, const struct tk__zone_key *k,
			  uint64_t now)
{
	struct tkz_header *h = tk__zone_header(z);
	uint64_t shard = tkz_shard_of(z, k), per = tk__zone_geo(z)->per_shard;
	struct tkz_shard *sh = &h->shard[shard];
	uint64_t due = ck_pr_load_64(&sh->next_sweep), interval, cursor;

	if (now < due)
		return;
	/* A whole pass over the shard about once per grace period. */
	interval = tk__zone_geo(z)->grace / (per / SWEEP_CHUNK);
	if (interval < MS)
		interval = MS;
	if (interval > 1000 * MS)
		interval = 1000 * MS;
	if (!ck_pr_cas_64(&sh->next_sweep, due, now + interval))
		return;
	cursor = ck_pr_faa_64(&sh->sweep_cursor, SWEEP_CHUNK) % per;
	sweep_range(z, shard * per + cursor, SWEEP_CHUNK, now);
	/* Blocks leaked by dead processes; rare, so a small share. */
	tk__blk_sweep(z, SWEEP_CHUNK / 4);
}

void tk__zone_sweep_all(struct tk__zone *z, uint64_t now)
{
	uint64_t n = tk__zone_geo(z)->pages * TKZ_PAGE_CELLS / TKZ_CLASS_MIN;

	sweep_range(z, 0, tk__zone_geo(z)->capacity, now);
	while (n) {
		uint64_t step = n < SWEEP_CHUNK ? n : SWEEP_CHUNK;

		tk__blk_sweep(z, step);
		n -= step;
	}
}
