/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * table.c - a private table: the zone's slot table in one process's
 * anonymous memory, for its threads (docs/shm-protocol.md, "Growing a
 * private table"; tests/model/grow.pml).  Here it is made and freed,
 * counted, and the tables its growths retired are freed; grow.c grows
 * and shrinks it.
 *
 * A completed growth retires the old table, and tk__table_reclaim()
 * frees it after two grace periods of the caller's RCU (every operation
 * runs in a read-side section; lib/store/store-memory.c):
 *
 * - Tables are numbered in the order they grew (their index), and the
 *   old table of index g is retired as entry g of retired[], which is a
 *   ring of RING entries (slot g % RING).  A completion stores that
 *   entry, then counts it in n_retired, then moves cur, then clears the
 *   successor's old: each step is one CAS or store that anyone may
 *   repeat, so a completer that stalls holds nobody up, and whatever
 *   leads to the old table (cur, old) is cleared only once retired[]
 *   leads to it.  The counters and a reset's search for a key's source
 *   (source()) never miss it.
 * - A thread may still read a table it loaded before the growth, and
 *   frozen slots send it on; once the successor has lost its old, a new
 *   operation finds the retired table only in retired[].
 * - The first grace period waits for every operation that found the
 *   table as its successor's old: after it, no pull of it is in flight
 *   (so a reset need not mark its frozen slots gone) and its counters are
 *   final.  Its counters are then kept in the table and its entry marked
 *   gone, which unlinks it from the last place a new operation could find
 *   it; the second grace period waits for those that found it before, and
 *   then it is freed.
 * - The entries of freed tables are then folded (fold()): their counters
 *   added to a ledger that readers take instead of those entries, and,
 *   a grace period later, the entries emptied for the tables retired
 *   RING growths later.  Only a shrink lets the growths go on past the
 *   41 a row may have, and the reclaimer starts one only once every
 *   entry is folded: so no more than 42 entries are ever in use, and an
 *   entry is empty when its turn comes round again.
 * - What a pass has unlinked but not freed yet is kept in t->dying[], not
 *   on the reclaiming thread's stack: a fork() child, which has no such
 *   thread, frees it in its own first pass (or at tk__table_free()).  The
 *   frees themselves hold fork() off (pthread_atfork()), so that no child
 *   inherits a table half freed.
 * - Until then, and without a reclaiming caller until tk__table_free(),
 *   retired tables stay allocated: each has half the slots or half the
 *   arena of its successor, and without shrinks (the reclaimer's) they
 *   number 41 at most.
 */
#include "table.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

char tk__table_gone_mark;

/* Held while tables are freed, or a shrink's successor is made and
 * published, and by fork(): a child never inherits a table half freed,
 * nor one made for nothing.  Taken in the child as in the parent, so the
 * child makes it anew. */
static pthread_mutex_t freeing = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t freeing_once = PTHREAD_ONCE_INIT;

void tk__table_freeing_hold(void)
{
	pthread_mutex_lock(&freeing);
}

void tk__table_freeing_release(void)
{
	pthread_mutex_unlock(&freeing);
}

static void freeing_renew(void)
{
	pthread_mutex_init(&freeing, NULL);
}

static void freeing_setup(void)
{
	pthread_atfork(tk__table_freeing_hold, tk__table_freeing_release,
		       freeing_renew);
}

/* A table and what it holds. */
void tk__table_drop(struct tk__zone *z)
{
	ck_pr_sub_64(&head(z)->table->reserved, bytes_of(z));
	free(head(z)->moved);
	tk__zone_detach(z);
}

/*
 * What new keys may take of a successor @z of size @s while the keys it
 * is made for move in from @old (afford()): a slot for each chunk of
 * @old (the pace of a move: a use of @z moves a chunk, and inserts a
 * key), at most a sixteenth of @z's, or more, up to 5/16 of them with
 * those keys (a quarter, as the doubling of a large table leaves, and a
 * sixteenth); and half the cells of the arena pages those keys leave.
 */
static void set_budget(struct tk__zone *z, struct tk__zone *old,
		       const struct tk__table_size *s)
{
	uint64_t pages = tk__zone_geo(z)->pages, slots = s->capacity / 16 * 5;
	uint64_t pace = tk__zone_geo(old)->capacity / MOVE_CHUNK;

	if (pace > s->capacity / 16)
		pace = s->capacity / 16;
	head(z)->budget[0] = slots > s->keys + pace ? slots - s->keys : pace;
	head(z)->budget[1] =
		pages > s->used ? (pages - s->used) * TKZ_PAGE_CELLS / 2 : 0;
}

struct tk__zone *tk__table_make(struct tk__table *t,
				const struct tk__table_size *s,
				struct tk__zone *old)
{
	struct tk__zone_config cfg = t->cfg;
	struct tk__zone *z;

	cfg.capacity = s->capacity;
	if (s->pages)
		cfg.arena = s->pages * PAGE_BYTES;
	if (tk__zone_private(&z, &cfg, t->seed) != 0)
		return NULL;
	head(z)->may_grow_slots = s->capacity < t->max_capacity;
	head(z)->may_grow = tk__zone_geo(z)->pages < t->max_pages;
	head(z)->old = old;
	head(z)->index = old ? head(old)->index + 1 : 0;
	head(z)->table = t;
	ck_pr_add_64(&t->reserved, bytes_of(z));
	if (old) {
		set_budget(z, old, s);
		head(z)->moved =
			calloc(tk__zone_geo(old)->capacity / MOVE_CHUNK, 1);
		if (!head(z)->moved) {
			tk__table_drop(z);
			return NULL;
		}
	}
	return z;
}

int tk__table_new(struct tk__table **out, const struct tk__zone_config *cfg,
		  uint64_t max_capacity, const uint64_t seed[2])
{
	struct tk__table_size first = { cfg->capacity, 0, 0, 0 };
	struct tk__table *t;
	uint64_t capacity = cfg->capacity, most;

	if (capacity < TKZ_CAPACITY_MIN || (capacity & (capacity - 1)) ||
	    max_capacity < capacity || (max_capacity & (max_capacity - 1)) ||
	    max_capacity > TKZ_CAPACITY_MAX)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->cfg = *cfg;
	t->seed[0] = seed[0];
	t->seed[1] = seed[1];
	t->max_capacity = max_capacity;
	t->max_pages = TKZ_PAGES_MAX;
	pthread_once(&freeing_once, freeing_setup);
	t->cur = tk__table_make(t, &first, NULL);
	if (!t->cur) {
		free(t);
		return -ENOMEM;
	}
	/* At most the arena that doubling it with the slots gave: what the
	 * first table has per slot, at the largest size. */
	t->min_pages = tk__zone_geo(t->cur)->pages;
	most = t->min_pages * (max_capacity / capacity);
	t->max_pages = most < TKZ_PAGES_MAX ? most : TKZ_PAGES_MAX;
	head(t->cur)->may_grow = t->min_pages < t->max_pages;
	*out = t;
	return 0;
}

void tk__table_free(struct tk__table *t)
{
	struct tk__zone *z, *next;
	uint64_t i;

	if (!t)
		return;
	/* An entry unlinked and not freed is in dying[] (a fork() child's
	 * of a pass its parent had under way), and, in a pass cut off before
	 * it published GONE, in both.  Those below the base are freed. */
	for (i = ledger_of(t)->base; i < t->n_retired; i++) {
		z = t->retired[ring(i)];
		if (z && z != GONE)
			tk__table_drop(z);
		else if (t->dying[ring(i)])
			tk__table_drop(t->dying[ring(i)]);
	}
	for (z = t->cur; z; z = next) {
		next = tk__zone_next(z);
		tk__table_drop(z);
	}
	free(t);
}

uint64_t tk__table_growths(struct tk__table *t)
{
	return ck_pr_load_64(&t->growths);
}

uint64_t tk__table_shrinks(struct tk__table *t)
{
	return ck_pr_load_64(&t->shrinks);
}

uint64_t tk__table_freed(struct tk__table *t)
{
	return ck_pr_load_64(&t->freed);
}

uint64_t tk__table_reserved(struct tk__table *t)
{
	return ck_pr_load_64(&t->reserved);
}

uint64_t tk__table_live(struct tk__table *t)
{
	struct tk__zone *z = newest(t), *oz = tk__zone_old(z);

	return bytes_of(z) + (oz ? bytes_of(oz) : 0);
}

uint64_t tk__table_retired(struct tk__table *t)
{
	uint64_t r = retired_count(t), i, n = 0;
	struct tk__zone *z;

	for (i = ledger_of(t)->base; i < r; i++) {
		z = entry(t, i);
		n += z && z != GONE;
	}
	return n;
}

/*
 * Every table counts once: those below the ledger's base from its sums,
 * those from there to n_retired from retired[] (live, or kept when it was
 * freed: its entry says which, and its counters no longer change by then,
 * see tk__table_reclaim()), the others from the chain of cur.  cur is
 * read first: it moves to a table only once n_retired counts every table
 * before it (complete()), so the chain from it reaches every table
 * n_retired does not count.  The ledger is read before n_retired, which
 * was at least its base when it was published.  A key counts once across
 * growths (tk__table_carry()), and each counter only grows, so neither
 * does their sum go down.
 */
void tk__table_counters(struct tk__table *t, uint64_t out[TKZ_COUNTERS])
{
	/* Acquire: pairs with the release of complete()'s CAS of cur. */
	struct tk__zone *z = __atomic_load_n(&t->cur, __ATOMIC_ACQUIRE), *r;
	const struct ledger *l = ledger_of(t);
	uint64_t n[TKZ_COUNTERS], count = retired_count(t), i;

	memcpy(out, l->sums, sizeof(l->sums));
	for (i = l->base; i < count; i++) {
		r = entry(t, i);
		if (r == GONE)
			memcpy(n, t->gone[ring(i)], sizeof(n));
		else
			tk__zone_counters(r, n);
		add_counters(out, n);
	}
	for (; z; z = tk__zone_next(z)) {
		if (head(z)->index < count)
			continue;
		tk__zone_counters(z, n);
		add_counters(out, n);
	}
}

/*
 * MEM slots of @z; with @nz, @z's successor, those frozen in @z too
 * whose keys @nz lacks: a pull freezes all its candidates, so keys wait
 * frozen for their own pull or for their chunk's mover.
 */
uint64_t tk__table_count_keys(struct tk__zone *z, struct tk__zone *nz)
{
	struct tkz_slot *slots = tk__zone_slots(z);
	uint64_t i, n = 0, w0, w1, at;
	struct tk__zone_key k;

	for (i = 0; i < tk__zone_geo(z)->capacity; i++) {
		tkz_read_slot(&slots[i], &w0, &w1);
		if (tkz_state(w0) != TKZ_MEM)
			continue;
		if (!tkz_frozen(w0)) {
			n++;
			continue;
		}
		if (!nz || !tkz_has_state(w0, w1))
			continue;
		k.fp = tkz_fp(w0) & ~TKZ_FROZEN;
		k.pos = tk__table_pos(k.fp);
		n += tk__zone_locate(nz, &k, 0, 0, &at, &w0, &w1) == -ENOENT;
	}
	return n;
}

/* One caught between its freeze and its copy may count twice or not at
 * all, which a statistic may do. */
uint64_t tk__table_keys(struct tk__table *t)
{
	struct tk__zone *z = newest(t), *oz = tk__zone_old(z);

	return tk__table_count_keys(z, NULL) +
	       (oz ? tk__table_count_keys(oz, z) : 0);
}

/* The ledger readers take now, read by the reclaimer, its one writer. */
static struct ledger *own(struct tk__table *t)
{
	return &t->ledger[__atomic_load_n(&t->current, __ATOMIC_RELAXED)];
}

/*
 * Empty the entries below the base for the tables retired RING growths
 * later.  The caller has waited for a grace period since the ledger
 * whose base that is was published (fold()): no reader takes one that
 * counts them from retired[] any more.
 */
static void empty(struct tk__table *t)
{
	uint64_t base = own(t)->base, i;

	for (i = t->cleared; i < base; i++) {
		__atomic_store_n(&t->retired[ring(i)], NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&t->unlinked[ring(i)], 0, __ATOMIC_RELAXED);
		memset(t->gone[ring(i)], 0, sizeof(t->gone[0]));
	}
	t->cleared = base;
}

void tk__table_clear(struct tk__table *t, void (*synchronize)(void))
{
	if (t->cleared == own(t)->base)
		return;
	synchronize();
	empty(t);
}

/*
 * Fold the entries of freed tables from the base on into the ledger
 * readers do not take now, and publish it: its counters the freed
 * tables', its base past them.  Only once the last one published has
 * been followed by a grace period (its entries emptied): no reader takes
 * the other ledger since.
 */
static void fold(struct tk__table *t)
{
	uint64_t cur = __atomic_load_n(&t->current, __ATOMIC_RELAXED);
	uint64_t n = retired_count(t), i;
	struct ledger next = t->ledger[cur];

	if (t->cleared != next.base)
		return;
	for (i = next.base; i < n && entry(t, i) == GONE && !t->dying[ring(i)];
	     i++)
		add_counters(next.sums, t->gone[ring(i)]);
	if (i == next.base)
		return;
	next.base = i;
	t->ledger[!cur] = next;
	/* Release: the ledger before its use (pairs with ledger_of()). */
	__atomic_store_n(&t->current, !cur, __ATOMIC_RELEASE);
}

/*
 * Free the retired tables that no operation can find any more but
 * through retired[]: two grace periods, see the top of this file.  The
 * tables retired since the last call wait for the next; those a pass cut
 * off by fork() unlinked without freeing (in dying[]) go with this one.
 * Then fold the entries of the freed (their emptying waits for the next
 * grace period: this call's next, or tk__table_clear()).
 */
uint64_t tk__table_reclaim(struct tk__table *t, void (*synchronize)(void))
{
	uint64_t n = retired_count(t), base = own(t)->base, i, m = 0, k;
	uint64_t freed = 0, at[RING];
	struct tk__zone *z, *found[RING];

	for (i = base; i < n; i++) {
		z = entry(t, i);
		freed += z == GONE && t->dying[ring(i)];
		/* Acquire: pairs with complete()'s release of the mark. */
		if (z == GONE ||
		    !__atomic_load_n(&t->unlinked[ring(i)], __ATOMIC_ACQUIRE))
			continue;
		found[m] = z;
		at[m++] = ring(i);
	}
	if (m + freed == 0) {
		fold(t);
		return 0;
	}
	/* Every operation that found them as an old is over: no pull of
	 * them is in flight, their counters are final. */
	synchronize();
	empty(t);
	for (k = 0; k < m; k++) {
		tk__zone_counters(found[k], t->gone[at[k]]);
		t->dying[at[k]] = found[k];
		/* Release: the counters and dying[] before the mark
		 * (tk__table_counters() reads them after it, acquire). */
		__atomic_store_n(&t->retired[at[k]], GONE, __ATOMIC_RELEASE);
	}
	/* Every operation that found them in retired[] is over. */
	synchronize();
	freed = 0;
	tk__table_freeing_hold();
	for (i = base; i < n; i++) {
		if (!t->dying[ring(i)])
			continue;
		tk__table_drop(t->dying[ring(i)]);
		t->dying[ring(i)] = NULL;
		freed++;
	}
	tk__table_freeing_release();
	ck_pr_add_64(&t->freed, freed);
	fold(t);
	return freed;
}
