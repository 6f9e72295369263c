/*
 * memory-reclaim.c - how the memory store gives memory back.
 *
 * Expiry costs O(expired keys): every entry sits in exactly one bucket of
 * a timing wheel (a lock-free LIFO per tick), keyed by the expires_at it
 * had when it was put there.  Processing a past tick examines only that
 * bucket: expired entries are killed, entries whose state moved on are
 * put into the bucket of their new expiry.  The wheel owns every entry's
 * memory: killed entries are freed when the wheel next meets them, after
 * an RCU grace period (synchronize_rcu() on a batch; see rcu.c for why
 * not call_rcu()).
 *
 * max_keys: each entry also holds a slot of a CLOCK ring of max_keys
 * slots; a new key takes a free slot, or the hand sweeps, clearing
 * reference bits and killing the first entry without one (second chance,
 * an O(1)-amortised approximation of LRU).  Keys can never outnumber the
 * slots.  Killed entries wait in the wheel for at most one rotation; when
 * more than max_keys of them wait, the sweeper drains the whole wheel, so
 * memory stays bounded by a small multiple of max_keys.
 *
 * Sweeping is done by a background thread, started lazily by the first
 * apply (never at open, so a preforked master starts none), or, with
 * TK_OPT_NO_RECLAIMER, by appliers in bounded chunks.  After fork() the
 * child notices the new fork generation and starts its own thread.
 */
#include "store-memory.h"
#include "rcu.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

void tk__mem_wheel_push(struct mem_store *s, struct mem_entry *e, uint64_t tick)
{
	tk_atomic_ptr *head = &s->wheel[tick % WHEEL_SLOTS];
	void *old = tk_atomic_load_ptr(head, TK_MO_RELAXED);

	/* release: publishes e->wheel_next; pairs with tk__mem_wheel_take(). */
	do
		e->wheel_next = old;
	while (!tk_atomic_cas_ptr(head, &old, e, TK_MO_RELEASE));
}

struct mem_entry *tk__mem_wheel_take(struct mem_store *s, uint64_t slot)
{
	/* acquire: pairs with the release in tk__mem_wheel_push(). */
	return tk_atomic_xchg_ptr(&s->wheel[slot], NULL, TK_MO_ACQUIRE);
}

static void retire(struct mem_store *s, struct mem_entry *e)
{
	void *old = tk_atomic_load_ptr(&s->retired, TK_MO_RELAXED);

	do
		e->retire_next = old;
	while (!tk_atomic_cas_ptr(&s->retired, &old, e, TK_MO_RELEASE));
	tk_atomic_add_u64(&s->n_retired, 1, TK_MO_RELAXED);
}

void tk__mem_retire_block(struct mem_store *s, struct mem_block *b)
{
	void *old = tk_atomic_load_ptr(&s->retired_blocks, TK_MO_RELAXED);

	do
		b->retire_next = old;
	while (!tk_atomic_cas_ptr(&s->retired_blocks, &old, b, TK_MO_RELEASE));
	tk_atomic_add_u64(&s->n_retired, 1, TK_MO_RELAXED);
}

/* Free what was retired.  Never inside a read-side critical section. */
void tk__mem_free_retired(struct mem_store *s)
{
	struct mem_entry *e, *next;
	struct mem_block *b, *bnext;
	struct mcas *d, *dnext;
	uint64_t n = 0;

	e = tk_atomic_xchg_ptr(&s->retired, NULL, TK_MO_ACQUIRE);
	b = tk_atomic_xchg_ptr(&s->retired_blocks, NULL, TK_MO_ACQUIRE);
	d = tk_atomic_xchg_ptr(&s->retired_mcas, NULL, TK_MO_ACQUIRE);
	if (!e && !b && !d)
		return;
	/* Everything on the lists was unreachable before this grace period. */
	tk__rcu_synchronize();
	for (; e; e = next, n++) {
		next = e->retire_next;
		tk__mem_free_entry(e);
	}
	for (; b; b = bnext, n++) {
		bnext = b->retire_next;
		free(b);
	}
	for (; d; d = dnext, n++) {
		dnext = d->retire_next;
		free(d);
	}
	tk_atomic_sub_u64(&s->n_retired, n, TK_MO_RELAXED);
}

/* Handle one entry taken from the wheel at a tick already past. */
static void sweep_entry(struct mem_store *s, struct mem_entry *e, uint64_t now)
{
	uint64_t cell[2];

	tk_atomic_add_u64(&s->visited, 1, TK_MO_RELAXED);
	tk_cell_read(&e->cell, cell);
	for (;;) {
		if (cell[1] == DEAD) {
			/* Unreachable, and named by no multi-key step. */
			if (tk_atomic_load_u32(&e->unlink_pending,
					       TK_MO_ACQUIRE) == 0 &&
			    tk_atomic_load_u32(&e->pins, TK_MO_SEQ_CST) == 0) {
				tk_atomic_sub_u64(&s->dead_pending, 1,
						  TK_MO_RELAXED);
				retire(s, e);
			} else {
				/* Its killer or a step is mid-way. */
				tk__mem_wheel_push(s, e, tick_of(now) + 1);
			}
			return;
		}
		if (reclaim_at(s, cell[1]) > now) {
			tk__mem_wheel_push(s, e,
					   tick_of(reclaim_at(s, cell[1])));
			return;
		}
		if (tk__mem_kill(s, e, cell)) {
			tk_atomic_add_u64(&s->expirations, 1, TK_MO_RELAXED);
			/* Re-read: the entry is DEAD now; retire it above. */
		}
		tk_cell_read(&e->cell, cell);
	}
}

static int sweeper_try_acquire(struct mem_store *s)
{
	uint64_t gen = tk__fork_generation();
	uint64_t cur = tk_atomic_load_u64(&s->sweeper, TK_MO_RELAXED);

	/* A holder from before a fork() is a thread this child lacks. */
	if (cur != 0 && (cur >> 1) == gen)
		return 0;
	return tk_atomic_cas_u64(&s->sweeper, &cur, (gen << 1) | 1,
				 TK_MO_ACQUIRE);
}

static void sweeper_release(struct mem_store *s)
{
	tk_atomic_store_u64(&s->sweeper, 0, TK_MO_RELEASE);
}

/*
 * Process one wheel slot with at most *@budget entries.  Returns 1 if the
 * slot was emptied, 0 if the budget ran out first.
 */
static int sweep_slot(struct mem_store *s, uint64_t slot, uint64_t now,
		      uint64_t *budget)
{
	struct mem_entry *e = tk__mem_wheel_take(s, slot), *next;

	for (; e && *budget > 0; e = next, (*budget)--) {
		next = e->wheel_next;
		sweep_entry(s, e, now);
	}
	if (!e)
		return 1;
	/* Out of budget: put the rest back where it was. */
	for (; e; e = next) {
		next = e->wheel_next;
		tk__mem_wheel_push(s, e, slot);
	}
	return 0;
}

/*
 * Process the ticks that are over, at most @budget entries.  The caller
 * holds the sweeper flag and an RCU read-side critical section.
 */
static void sweep_locked(struct mem_store *s, uint64_t now, uint64_t budget)
{
	uint64_t cur = tk_atomic_load_u64(&s->cursor, TK_MO_RELAXED);
	uint64_t end = tick_of(now), t, d, i;

	/* A jump past a whole rotation: one pass over every slot is enough. */
	if (end > cur && end - cur > WHEEL_SLOTS)
		cur = end - WHEEL_SLOTS;
	for (t = cur; t < end; t++)
		if (!sweep_slot(s, t % WHEEL_SLOTS, now, &budget))
			break;
	if (t > cur)
		tk_atomic_store_u64(&s->cursor, t, TK_MO_RELAXED);
	/* Too many killed entries waiting in the future: drain the wheel. */
	for (i = 0; i < WHEEL_SLOTS && budget > 0 &&
		    tk_atomic_load_u64(&s->dead_pending, TK_MO_RELAXED) >
			    tk__mem_drain_limit(s);
	     i++) {
		d = tk_atomic_add_u64(&s->drain_cursor, 1, TK_MO_RELAXED);
		sweep_slot(s, d % WHEEL_SLOTS, now, &budget);
	}
}

static void grow_if_needed(struct mem_store *s)
{
	uint64_t keys = tk_atomic_load_u64(&s->keys, TK_MO_RELAXED);

	/* Only the sweeper resizes; a resize runs outside read sections. */
	if (keys > 2 * s->buckets && s->buckets < (UINT64_C(1) << 40)) {
		while (keys > 2 * s->buckets)
			s->buckets *= 2;
		cds_lfht_resize(s->ht, s->buckets);
		tk_atomic_store_u64(&s->grow_at, 2 * s->buckets, TK_MO_RELAXED);
	}
}

void tk__mem_sweep(struct mem_store *s, uint64_t now, uint64_t budget)
{
	if (!sweeper_try_acquire(s))
		return;
	tk__rcu_read_lock();
	sweep_locked(s, now, budget);
	tk__rcu_read_unlock();
	grow_if_needed(s);
	sweeper_release(s);
	if (tk_atomic_load_u64(&s->n_retired, TK_MO_RELAXED) >=
	    (budget == UINT64_MAX ? 1 : tk__mem_drain_limit(s)))
		tk__mem_free_retired(s);
}

/* Claim a ring slot, evicting by second chance if none is free. */
int tk__mem_ring_claim(struct mem_store *s, uint64_t now, uint32_t *slot)
{
	uint64_t i, idx, cell[2];
	struct mem_entry *e;
	void *v, *expect;

	for (i = 0; i < 3 * s->ring_cap + 3; i++) {
		idx = tk_atomic_add_u64(&s->hand, 1, TK_MO_RELAXED) %
		      s->ring_cap;
		v = tk_atomic_load_ptr(&s->ring[idx], TK_MO_ACQUIRE);
		if (v == RESERVED)
			continue;
		if (v != NULL) {
			e = v;
			tk_cell_read(&e->cell, cell);
			if (cell[1] == DEAD)
				continue;
			if (reclaim_at(s, cell[1]) <= now) {
				if (tk__mem_kill(s, e, cell))
					tk_atomic_add_u64(&s->expirations, 1,
							  TK_MO_RELAXED);
			} else if (tk_atomic_load_u32(&e->referenced,
						      TK_MO_RELAXED)) {
				tk_atomic_store_u32(&e->referenced, 0,
						    TK_MO_RELAXED);
				continue;
			} else if (tk__mem_kill(s, e, cell)) {
				tk_atomic_add_u64(&s->evictions, 1,
						  TK_MO_RELAXED);
			}
		}
		expect = NULL;
		if (tk_atomic_cas_ptr(&s->ring[idx], &expect, RESERVED,
				      TK_MO_SEQ_CST)) {
			*slot = (uint32_t)idx;
			return 0;
		}
	}
	return -ENOSPC;
}

void tk__mem_after_apply_work(struct mem_store *s, uint64_t now)
{
	/*
	 * The apply that finds the table twice as full as it has buckets
	 * grows it (amortised O(1) per insert), so lookups never walk long
	 * chains until a sweep comes by.
	 */
	if (tk_atomic_load_u64(&s->keys, TK_MO_RELAXED) >
		    tk_atomic_load_u64(&s->grow_at, TK_MO_RELAXED) &&
	    sweeper_try_acquire(s)) {
		grow_if_needed(s);
		sweeper_release(s);
	}
	/*
	 * A flood of new keys evicts one key per check, faster than sweeps
	 * once per interval free them: memory would follow the flood's
	 * rate, not max_keys.  So the applier that finds too many waiting
	 * sweeps the whole store now, thread or not (a bounded sweep would
	 * keep taking and putting back the same long wheel slot).  It
	 * visits O(max_keys) entries once per max_keys / 4 evictions:
	 * amortised O(1) per check.
	 */
	if (tk_atomic_load_u64(&s->dead_pending, TK_MO_RELAXED) >
	    tk__mem_drain_limit(s))
		tk__mem_sweep(s, now, UINT64_MAX);
	else if (s->use_thread)
		return;
	else if (tick_of(now) > tk_atomic_load_u64(&s->cursor, TK_MO_RELAXED) ||
		 tk_atomic_load_u64(&s->n_retired, TK_MO_RELAXED) >=
			 tk__mem_drain_limit(s))
		tk__mem_sweep(s, now, SWEEP_BUDGET);
}

void tk__mem_retire_mcas(struct mem_store *s, struct mcas *d)
{
	void *old = tk_atomic_load_ptr(&s->retired_mcas, TK_MO_RELAXED);

	do
		d->retire_next = old;
	while (!tk_atomic_cas_ptr(&s->retired_mcas, &old, d, TK_MO_RELEASE));
	tk_atomic_add_u64(&s->n_retired, 1, TK_MO_RELAXED);
}
